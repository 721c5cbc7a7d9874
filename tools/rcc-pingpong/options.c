/* SPDX-License-Identifier: BSD-3-Clause */
/* Command line of rcc-pingpong: its own options; the common ones are tools/common/cmdline.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmdline.h"
#include "opts.h"
#include "pingpong.h"

static void help(const struct cli *c)
{
	printf("Usage: rcc-pingpong [OPTION]... [HOST[:PORT]]\n"
	       "  or:  LAUNCHER rcc-pingpong [OPTION]...   (e.g. mpirun -np 2)\n"
	       "A SEND/RECV ping-pong over rcc: a server without HOST, a client with it.\n"
	       "Under a launcher (mpirun, srun, or RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT;\n"
	       "docs/launch.md), 2 ranks without HOST: rank 0 serves on a free port, rank\n"
	       "1 gets its address through the launcher and measures.\n"
	       "\n"
	       "The server hands each client to an agent and echoes its pings. The client\n"
	       "times each round trip, checks every pong byte for byte, and prints min,\n"
	       "median, average, p99 and max of the half round trip in microseconds and the\n"
	       "message rate. With -c ud the server answers every client through one\n"
	       "datagram endpoint, each pong sent to its ping's source; a ping is then one\n"
	       "datagram (-S at most the path MTU; 4096 on tcp).\n"
	       "\n"
	       "Options:\n"
	       "  -n, --iters N            client: timed round trips (1000)\n"
	       "  -w, --warmup N           client: untimed round trips first (min(100, N/10))\n"
	       "  -s, --size BYTES         message size, e.g. 16, 4K, 64K (16); also -S\n"
	       "      --no-verify          client: do not check pong contents (for a peer that\n"
	       "                           does not echo, such as rdma-core's rdma_server)\n"
	       "  -b, --bind ADDR          server: address to listen on (0.0.0.0)\n"
	       "  -t, --thread-mode MODE   server: per-ep (a thread per client) or shared (one\n"
	       "                           CQ for all clients) (per-ep)\n"
	       "      --threads N          server: progress threads in shared mode (1)\n"
	       "      --once               server: exit after the first client leaves\n"
	       "      --srq N              server: every client's pings land in one shared\n"
	       "                           receive queue of N buffers of -S bytes (larger\n"
	       "                           clients are turned away), not two receives each\n"
	       "  -q                       the same as --quiet\n"
	       "\n"
	       "Common options:\n");
	cli_help_common(c, stdout);
	printf("\n"
	       "The port is 7471, as rdma-core's rdma_server; a PORT in HOST:PORT wins over\n"
	       "-p. The server prints a line per client as it comes and goes (line-buffered,\n"
	       "also into a pipe or a file).\n"
	       "\n"
	       "Environment:\n"
	       "  RCC_LOG=error|warn|info|debug|trace   the library's log level\n"
	       "\n"
	       "Exit status:\n"
	       "  0  success\n"
	       "  1  failure (connection, transfer)\n"
	       "  2  usage error\n"
	       "  3  a pong did not match its ping\n");
}

enum {
	OPT_NO_VERIFY = CLI_OPT_TOOL,
	OPT_ONCE,
	OPT_THREADS,
	OPT_SRQ,
};

static const struct option longs[] = {
	{ "bind", required_argument, NULL, 'b' },
	{ "iters", required_argument, NULL, 'n' },
	{ "warmup", required_argument, NULL, 'w' },
	{ "size", required_argument, NULL, 's' },
	{ "thread-mode", required_argument, NULL, 't' },
	{ "threads", required_argument, NULL, OPT_THREADS },
	{ "shared-threads", required_argument, NULL, OPT_THREADS }, /* its old name */
	{ "no-verify", no_argument, NULL, OPT_NO_VERIFY },
	{ "once", no_argument, NULL, OPT_ONCE },
	{ "srq", required_argument, NULL, OPT_SRQ },
	{ NULL, 0, NULL, 0 },
};

int pp_parse(int argc, char **argv, struct pp_opts *o)
{
	struct cli c = {
		.prog = "rcc-pingpong",
		.take = CLI_VERBS | CLI_MODE | CLI_QP_TYPE | CLI_PORT | CLI_TIMEOUT | CLI_JSON |
			CLI_QUIET,
		.shorts = "b:n:w:s:S:t:q",
		.longs = longs,
		.help = help,
		.timeout_help = "each wait of the client",
		.timeout_legacy_ms = true,
		.ctx = &o->ctx,
		.mode = RCC_CQ_POLL,
		.port = RCC_DEFAULT_PORT,
		.timeout_ms = 10000,
	};
	const char *prog = c.prog;
	uint64_t size;
	long v;
	int r;

	memset(o, 0, sizeof(*o));
	o->bind = "0.0.0.0";
	o->iters = 1000;
	o->warmup = -1;
	o->size = 16;
	o->verify = true;
	o->threads = 1;
	while ((r = cli_next(&c, argc, argv)) != -1) {
		switch (r) {
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
		case 's':
		case 'S':
			if (parse_size(optarg, &size) || size > PP_MAX_SIZE)
				usage_error(prog, "bad size '%s' (at most 64 MiB)", optarg);
			o->size = (uint32_t)size;
			break;
		case 't':
			if (parse_thread_mode(optarg, &o->thread_mode))
				usage_error(prog, "thread mode must be per-ep or shared, not '%s'",
					    optarg);
			break;
		case OPT_THREADS:
			/* --threads MODE was the thread mode's name before --thread-mode */
			if (!parse_thread_mode(optarg, &o->thread_mode))
				break;
			if (parse_int(optarg, 1, 64, &v))
				usage_error(prog, "bad thread count '%s' (1..64)", optarg);
			o->threads = (int)v;
			break;
		case OPT_NO_VERIFY:
			o->verify = false;
			break;
		case OPT_ONCE:
			o->once = true;
			break;
		case OPT_SRQ:
			if (parse_int(optarg, 1, RCC_SERVER_SRQ_MAX, &v))
				usage_error(prog, "bad SRQ depth '%s' (1..%u)", optarg,
					    RCC_SERVER_SRQ_MAX);
			o->srq_depth = (uint32_t)v;
			break;
		case 'q':
			cli_apply(&c, CLI_OPT_QUIET, NULL);
			break;
		}
	}
	cli_finish(&c);
	o->cq_mode = c.mode;
	o->qp_type = c.qp_type;
	o->port = c.port;
	o->timeout_ms = c.timeout_ms;
	o->json = c.json;
	o->quiet = c.quiet;
	if (optind < argc - 1)
		usage_error(prog, "one HOST at most, not '%s' too", argv[optind + 1]);
	o->server = optind == argc;
	if (o->server)
		pp_launch_open(o); /* rank 1 of a launched pair becomes the client */
	/* HOST may carry its port (host:port, [v6]:port): it wins over -p */
	if (!o->server && !o->boot)
		cli_peer(&c, "HOST", argv[optind], o->host_buf, sizeof(o->host_buf), &o->port);
	if (!o->server && o->srq_depth)
		usage_error(prog, "--srq belongs to the server");
	if (o->qp_type == RCC_QP_UD && o->srq_depth)
		usage_error(prog, "--srq does not go with -c ud: a datagram endpoint keeps its "
				  "own receives");
	if (o->server && o->json)
		usage_error(prog, "--json belongs to the client: the server prints no figures");
	if (!o->server && !o->port && !o->boot)
		usage_error(prog, "the client needs the server's port, not 0");
	o->host = o->server ? NULL : o->host_buf;
	if (o->warmup < 0)
		o->warmup = o->iters / 10 < 100 ? o->iters / 10 : 100;
	return 0;
}
