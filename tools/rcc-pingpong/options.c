/* SPDX-License-Identifier: BSD-3-Clause */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opts.h"
#include "pingpong.h"

static const char usage[] =
	"Usage: rcc-pingpong [OPTIONS]          run a server: each client is served by an agent\n"
	"       rcc-pingpong [OPTIONS] SERVER   run a client against SERVER\n"
	"                                       (HOST, HOST:PORT or [IPV6]:PORT)\n"
	"\n"
	"A SEND/RECV ping-pong. The client times each round trip, checks every pong\n"
	"byte for byte, and prints min, median, average, p99 and max of the half\n"
	"round trip in microseconds and the message rate.\n"
	"\n"
	"  -p, --port PORT          service port (7471, as rdma-core's rdma_server)\n"
	"  -b, --bind ADDR          server: address to listen on (0.0.0.0)\n"
	"  -n, --iters N            client: timed round trips (1000)\n"
	"  -w, --warmup N           client: untimed round trips first (min(100, N/10))\n"
	"  -S, --size BYTES         message size, e.g. 16, 4K, 64K (16)\n"
	"  -T, --transport T        auto | verbs | tcp (auto: verbs if a device exists)\n"
	"  -m, --cq-mode M          poll | wait | fd: busy polling, blocking, or epoll (poll)\n"
	"  -t, --threads MODE       server: per-ep (a thread per client) | shared (one CQ)\n"
	"      --shared-threads N   server: progress threads in shared mode (1)\n"
	"  -d, --device DEV         verbs device (first active)\n"
	"  -i, --ib-port N          verbs port (first active)\n"
	"  -g, --gid-index N        verbs GID index (RoCE v2 IPv4 GID)\n"
	"  -B, --bringup cm|manual  verbs connection set-up: rdma_cm, or QP info over TCP (cm)\n"
	"      --no-verify          client: do not check pong contents (for a peer that does\n"
	"                           not echo, such as rdma-core's rdma_server)\n"
	"      --once               server: exit after the first client leaves\n"
	"      --timeout MS         client: give up on any single wait after MS (10000)\n"
	"      --json               client: print the result as one JSON object\n"
	"  -q, --quiet              fewer messages\n"
	"  -h, --help               this text\n"
	"      --version            the version of rcc-pingpong and the library\n"
	"\n"
	"Environment: RCC_LOG=error|warn|info|debug|trace sets the library's log level.\n"
	"Exit status: 0 success, 1 failure (connection, transfer), 2 usage, 3 pong mismatch.\n";

enum {
	OPT_NO_VERIFY = 256,
	OPT_ONCE,
	OPT_JSON,
	OPT_TIMEOUT,
	OPT_SHARED_THREADS,
	OPT_VERSION
};

int pp_parse(int argc, char **argv, struct pp_opts *o)
{
	static const struct option longs[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "bind", required_argument, NULL, 'b' },
		{ "iters", required_argument, NULL, 'n' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "size", required_argument, NULL, 'S' },
		{ "transport", required_argument, NULL, 'T' },
		{ "cq-mode", required_argument, NULL, 'm' },
		{ "threads", required_argument, NULL, 't' },
		{ "shared-threads", required_argument, NULL, OPT_SHARED_THREADS },
		{ "device", required_argument, NULL, 'd' },
		{ "ib-port", required_argument, NULL, 'i' },
		{ "gid-index", required_argument, NULL, 'g' },
		{ "bringup", required_argument, NULL, 'B' },
		{ "no-verify", no_argument, NULL, OPT_NO_VERIFY },
		{ "once", no_argument, NULL, OPT_ONCE },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	const char *prog = "rcc-pingpong";
	uint64_t size;
	long v;
	int c;

	memset(o, 0, sizeof(*o));
	o->port = RCC_DEFAULT_PORT;
	o->bind = "0.0.0.0";
	o->iters = 1000;
	o->warmup = -1;
	o->size = 16;
	o->verify = true;
	o->timeout_ms = 10000;
	o->threads = 1;
	while ((c = getopt_long(argc, argv, "p:b:n:w:S:T:m:t:d:i:g:B:qh", longs, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (parse_int(optarg, 0, 65535, &v))
				usage_error(prog, "bad port '%s'", optarg);
			o->port = (int)v;
			break;
		case 'b':
			o->bind = optarg;
			break;
		case 'n':
			if (parse_int(optarg, 1, 1000000000L, &v))
				usage_error(prog, "bad iteration count '%s'", optarg);
			o->iters = v;
			break;
		case 'w':
			if (parse_int(optarg, 0, 1000000000L, &v))
				usage_error(prog, "bad warm-up count '%s'", optarg);
			o->warmup = v;
			break;
		case 'S':
			if (parse_size(optarg, &size) || size > PP_MAX_SIZE)
				usage_error(prog, "bad size '%s' (at most 64 MiB)", optarg);
			o->size = (uint32_t)size;
			break;
		case 'T':
			opt_transport(prog, optarg, &o->ctx);
			break;
		case 'm':
			if (parse_cq_mode(optarg, &o->cq_mode))
				usage_error(prog, "completion mode must be poll, wait or fd");
			break;
		case 't':
			if (parse_thread_mode(optarg, &o->thread_mode))
				usage_error(prog, "thread mode must be per-ep or shared");
			break;
		case OPT_SHARED_THREADS:
			if (parse_int(optarg, 1, 64, &v))
				usage_error(prog, "bad thread count '%s'", optarg);
			o->threads = (int)v;
			break;
		case 'd':
			o->ctx.device = optarg;
			break;
		case 'i':
			opt_ib_port(prog, optarg, &o->ctx);
			break;
		case 'g':
			opt_gid_index(prog, optarg, &o->ctx);
			break;
		case 'B':
			opt_bringup(prog, optarg, &o->ctx);
			break;
		case OPT_NO_VERIFY:
			o->verify = false;
			break;
		case OPT_ONCE:
			o->once = true;
			break;
		case OPT_TIMEOUT:
			if (parse_int(optarg, 1, 3600000, &v))
				usage_error(prog, "bad timeout '%s'", optarg);
			o->timeout_ms = (int)v;
			break;
		case OPT_JSON:
			o->json = true;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'h':
			fputs(usage, stdout);
			exit(0);
		case OPT_VERSION:
			version_exit(prog);
		default:
			fprintf(stderr, "Try 'rcc-pingpong --help'.\n");
			exit(2);
		}
	}
	if (optind < argc - 1)
		usage_error(prog, "one SERVER at most");
	o->server = optind == argc;
	/* SERVER may carry its port (host:port, [v6]:port): it wins over -p */
	if (!o->server && split_host_port(argv[optind], o->host_buf, sizeof(o->host_buf), &o->port))
		usage_error(prog, "bad SERVER '%s' (HOST, HOST:PORT or [IPV6]:PORT)", argv[optind]);
	o->host = o->server ? NULL : o->host_buf;
	if (o->warmup < 0)
		o->warmup = o->iters / 10 < 100 ? o->iters / 10 : 100;
	return 0;
}
