/* SPDX-License-Identifier: BSD-3-Clause */
/* Command line: perftest's option names where perftest has one. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opts.h"
#include "perf.h"

static const char usage[] =
	"Usage: rcc-perf [OPTIONS]          server: serves one client, then exits\n"
	"       rcc-perf [OPTIONS] HOST     client: runs the tests against HOST\n"
	"\n"
	"Latency and bandwidth of SEND, WRITE, WRITE_IMM, READ and atomics, measured as\n"
	"perftest does (ib_*_lat: half round trip for send/write, full round trip for\n"
	"read/atomics; ib_*_bw: peak/average bandwidth and message rate). The client\n"
	"chooses the tests and sends its parameters to the server, which needs only the\n"
	"transport options. Results go to the terminal (perftest's columns), and on the\n"
	"client optionally to JSON, CSV and PNG charts.\n"
	"\n"
	"Tests (client):\n"
	"      --test LIST          send,write,write_imm,read,cas,fadd,atomic,all (all)\n"
	"      --lat, --bw          latency tests only / bandwidth tests only (both)\n"
	"  -s, --size BYTES         message size, e.g. 64, 4K, 1M (2; atomics: 8)\n"
	"  -a, --all                every power of two from 2 B to 8 MiB\n"
	"      --sizes LIST         these sizes (powers of two), e.g. 8,4K,64K,1M\n"
	"  -n, --iters N            timed iterations per size (lat 1000, bw 5000 per\n"
	"                           endpoint; without -n, sizes above 64 KiB get fewer)\n"
	"  -D, --duration SEC       run each size for SEC seconds instead of -n\n"
	"      --warmup N           untimed iterations first (a tenth of -n, 1..100)\n"
	"  -q, --qp N               data endpoints, bandwidth tests (1)\n"
	"  -l, --post_list N        post lists of N work requests (1)\n"
	"  -Q, --cq-mod N           bandwidth: a completion every N messages (min(100, -t))\n"
	"  -I, --inline_size N      inline up to N bytes; 0: never (transport default)\n"
	"  -t, --tx-depth N         messages in flight per endpoint (128)\n"
	"  -r, --rx-depth N         receives posted per endpoint (512)\n"
	"  -o, --outs N             outstanding READ/atomics per endpoint (16)\n"
	"  -e, --events             sleep on a completion channel instead of polling\n"
	"      --cq-mode M          poll | wait (-e) | fd (epoll on the CQ's descriptor)\n"
	"  -b, --bidirectional      bandwidth both ways at once (figures are summed)\n"
	"      --validate           check every payload byte (slower; for correctness)\n"
	"      --target-poll        the passive side of READ/WRITE/atomics busy-polls its CQ\n"
	"                           (on tcp: moves the work from the progress thread)\n"
	"  -N, --no_peak            skip the peak bandwidth search\n"
	"\n"
	"Transport (both sides):\n"
	"  -T, --transport T        auto | verbs | tcp (auto: verbs if a device exists)\n"
	"  -d, --ib-dev DEV         verbs device (the first active one)\n"
	"  -i, --ib-port N          device port (the first active one)\n"
	"  -x, --gid-index N        GID index (RoCE v2 IPv4 GID)\n"
	"  -R, --rdma_cm            connect with rdma_cm (the default; see --bringup)\n"
	"      --bringup cm|manual  verbs bring-up: rdma_cm, or QP data over TCP\n"
	"  -p, --port PORT          service port (18515, as perftest); server: 0 picks a\n"
	"                           free one and prints it\n"
	"      --bind ADDR          server: address to listen on (all)\n"
	"  -F, --CPU-freq           accepted and ignored (perftest compatibility)\n"
	"\n"
	"Run and output:\n"
	"      --timeout SEC        give up after SEC without progress (15)\n"
	"      --accept-timeout SEC server: wait at most SEC for a client (forever)\n"
	"      --persistent         server: serve clients one after another\n"
	"      --report_gbits       bandwidth in Gb/s instead of MB/s (2^20 B/s)\n"
	"      --json FILE          client: every figure and parameter as JSON\n"
	"      --csv FILE           client: the same as CSV, one row per point\n"
	"      --plot DIR           client: PNG charts in DIR (needs gnuplot)\n"
	"      --quiet              no banners\n"
	"  -h, --help               this text\n"
	"  -V, --version            versions of rcc-perf and the library\n"
	"\n"
	"Environment: RCC_LOG=error|warn|info|debug|trace sets the library's log level.\n"
	"Exit status: 0 success, 1 failure (connection, transfer, validation), 2 usage.\n";

enum {
	OPT_TEST = 256,
	OPT_LAT,
	OPT_BW,
	OPT_WARMUP,
	OPT_CQ_MODE,
	OPT_VALIDATE,
	OPT_TARGET_POLL,
	OPT_BRINGUP,
	OPT_BIND,
	OPT_TIMEOUT,
	OPT_ACCEPT_TIMEOUT,
	OPT_PERSISTENT,
	OPT_GBITS,
	OPT_JSON,
	OPT_CSV,
	OPT_PLOT,
	OPT_QUIET,
	OPT_SIZES,
};

static const struct option longs[] = {
	{ "test", required_argument, NULL, OPT_TEST },
	{ "lat", no_argument, NULL, OPT_LAT },
	{ "bw", no_argument, NULL, OPT_BW },
	{ "size", required_argument, NULL, 's' },
	{ "all", no_argument, NULL, 'a' },
	{ "sizes", required_argument, NULL, OPT_SIZES },
	{ "iters", required_argument, NULL, 'n' },
	{ "duration", required_argument, NULL, 'D' },
	{ "warmup", required_argument, NULL, OPT_WARMUP },
	{ "qp", required_argument, NULL, 'q' },
	{ "post_list", required_argument, NULL, 'l' },
	{ "cq-mod", required_argument, NULL, 'Q' },
	{ "inline_size", required_argument, NULL, 'I' },
	{ "tx-depth", required_argument, NULL, 't' },
	{ "rx-depth", required_argument, NULL, 'r' },
	{ "outs", required_argument, NULL, 'o' },
	{ "events", no_argument, NULL, 'e' },
	{ "cq-mode", required_argument, NULL, OPT_CQ_MODE },
	{ "bidirectional", no_argument, NULL, 'b' },
	{ "validate", no_argument, NULL, OPT_VALIDATE },
	{ "target-poll", no_argument, NULL, OPT_TARGET_POLL },
	{ "no_peak", no_argument, NULL, 'N' },
	{ "transport", required_argument, NULL, 'T' },
	{ "ib-dev", required_argument, NULL, 'd' },
	{ "ib-port", required_argument, NULL, 'i' },
	{ "gid-index", required_argument, NULL, 'x' },
	{ "rdma_cm", no_argument, NULL, 'R' },
	{ "bringup", required_argument, NULL, OPT_BRINGUP },
	{ "port", required_argument, NULL, 'p' },
	{ "bind", required_argument, NULL, OPT_BIND },
	{ "CPU-freq", no_argument, NULL, 'F' },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "accept-timeout", required_argument, NULL, OPT_ACCEPT_TIMEOUT },
	{ "persistent", no_argument, NULL, OPT_PERSISTENT },
	{ "report_gbits", no_argument, NULL, OPT_GBITS },
	{ "json", required_argument, NULL, OPT_JSON },
	{ "csv", required_argument, NULL, OPT_CSV },
	{ "plot", required_argument, NULL, OPT_PLOT },
	{ "quiet", no_argument, NULL, OPT_QUIET },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

static uint16_t get_u16(const char *prog, const char *what, const char *arg, long min, long max)
{
	long v;

	if (parse_int(arg, min, max, &v))
		usage_error(prog, "bad %s '%s' (%ld..%ld)", what, arg, min, max);
	return (uint16_t)v;
}

static uint32_t get_u32(const char *prog, const char *what, const char *arg, long min, long max)
{
	long v;

	if (parse_int(arg, min, max, &v))
		usage_error(prog, "bad %s '%s' (%ld..%ld)", what, arg, min, max);
	return (uint32_t)v;
}

static double get_seconds(const char *prog, const char *what, const char *arg, double max)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || *end || !(v > 0) || v > max)
		usage_error(prog, "bad %s '%s' (seconds, > 0, at most %g)", what, arg, max);
	return v;
}

static void defaults(struct perf_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->prog = "rcc-perf";
	cfg->port = 18515;
	cfg->timeout_ms = 15000;
	cfg->p.ops = OPS_ALL;
	cfg->p.kinds = KINDS_ALL;
	cfg->p.size = 2;
	cfg->p.qps = 1;
	cfg->p.post_list = 1;
	cfg->p.tx_depth = 128;
	cfg->p.rx_depth = 512;
	cfg->p.outs = 16;
	cfg->p.inline_size = PERF_INLINE_AUTO;
	cfg->p.cq_mode = RCC_CQ_POLL;
}

void perf_parse(int argc, char **argv, struct perf_config *cfg)
{
	const char *prog = "rcc-perf";
	bool cq_mod_set = false, size_set = false;
	uint8_t kinds = 0;
	enum rcc_cq_mode mode;
	uint64_t size;
	uint32_t mask = 0;
	int c;

	defaults(cfg);
	while ((c = getopt_long(argc, argv, "s:an:D:q:l:Q:I:t:r:o:ebNT:d:i:x:Rp:FhV", longs,
				NULL)) != -1) {
		switch (c) {
		case OPT_TEST:
			if (parse_ops(optarg, &cfg->p.ops))
				usage_error(prog, "bad test list '%s'", optarg);
			break;
		case OPT_LAT:
			kinds |= 1u << KIND_LAT;
			break;
		case OPT_BW:
			kinds |= 1u << KIND_BW;
			break;
		case 's':
			if (parse_size(optarg, &size) || size < 1 || size > PERF_MAX_SIZE)
				usage_error(prog, "bad size '%s' (1 B .. 1 GiB)", optarg);
			cfg->p.size = (uint32_t)size;
			size_set = true;
			break;
		case 'a':
			cfg->p.flags |= PF_ALL_SIZES;
			break;
		case OPT_SIZES:
			if (parse_size_list(optarg, &mask))
				usage_error(prog, "bad size list '%s' (powers of two up to 1G)",
					    optarg);
			cfg->p.flags |= PF_SIZE_LIST;
			break;
		case 'n':
			cfg->p.iters = get_u32(prog, "iteration count", optarg, 2, 1000000000L);
			cfg->p.flags |= PF_ITERS_SET;
			break;
		case 'D':
			cfg->p.duration_ms =
				(uint32_t)(get_seconds(prog, "duration", optarg, 3600) * 1000);
			if (!cfg->p.duration_ms)
				cfg->p.duration_ms = 1;
			cfg->p.flags |= PF_DURATION;
			break;
		case OPT_WARMUP:
			cfg->p.warmup = get_u32(prog, "warm-up count", optarg, 0, 100000000L);
			cfg->p.flags |= PF_WARMUP_SET;
			break;
		case 'q':
			cfg->p.qps = get_u16(prog, "endpoint count", optarg, 1, 1024);
			break;
		case 'l':
			cfg->p.post_list = get_u16(prog, "post list length", optarg, 1, 4096);
			break;
		case 'Q':
			cfg->p.cq_mod = get_u16(prog, "CQ moderation", optarg, 1, 4096);
			cq_mod_set = true;
			break;
		case 'I':
			cfg->p.inline_size = get_u16(prog, "inline size", optarg, 0, 4096);
			break;
		case 't':
			cfg->p.tx_depth = get_u16(prog, "tx depth", optarg, 1, 16384);
			break;
		case 'r':
			cfg->p.rx_depth = get_u16(prog, "rx depth", optarg, 1, 16384);
			break;
		case 'o':
			cfg->p.outs = get_u16(prog, "outstanding READ/atomics", optarg, 1, 256);
			break;
		case 'e':
			cfg->p.cq_mode = RCC_CQ_WAIT;
			break;
		case OPT_CQ_MODE:
			if (parse_cq_mode(optarg, &mode))
				usage_error(prog, "bad completion mode '%s' (poll, wait, fd)",
					    optarg);
			cfg->p.cq_mode = (uint8_t)mode;
			break;
		case 'b':
			cfg->p.flags |= PF_BIDIR;
			break;
		case OPT_VALIDATE:
			cfg->p.flags |= PF_VALIDATE;
			break;
		case OPT_TARGET_POLL:
			cfg->p.flags |= PF_TARGET_POLL;
			break;
		case 'N':
			cfg->p.flags |= PF_NO_PEAK;
			break;
		case 'T':
			opt_transport(prog, optarg, &cfg->ctx);
			break;
		case 'd':
			cfg->ctx.device = optarg;
			break;
		case 'i':
			opt_ib_port(prog, optarg, &cfg->ctx);
			break;
		case 'x':
			opt_gid_index(prog, optarg, &cfg->ctx);
			break;
		case 'R':
			cfg->ctx.bringup = RCC_BRINGUP_CM;
			break;
		case OPT_BRINGUP:
			opt_bringup(prog, optarg, &cfg->ctx);
			break;
		case 'p':
			cfg->port = get_u16(prog, "port", optarg, 0, 65535);
			break;
		case OPT_BIND:
			cfg->bind = optarg;
			break;
		case 'F':
			break;
		case OPT_TIMEOUT:
			cfg->timeout_ms = (int)(get_seconds(prog, "timeout", optarg, 86400) * 1000);
			if (cfg->timeout_ms < 1)
				cfg->timeout_ms = 1;
			break;
		case OPT_ACCEPT_TIMEOUT:
			cfg->accept_timeout_s = (int)get_u32(prog, "accept timeout", optarg, 1,
							     86400);
			break;
		case OPT_PERSISTENT:
			cfg->persistent = true;
			break;
		case OPT_GBITS:
			cfg->report_gbits = true;
			break;
		case OPT_JSON:
			cfg->json_path = optarg;
			break;
		case OPT_CSV:
			cfg->csv_path = optarg;
			break;
		case OPT_PLOT:
			cfg->plot_dir = optarg;
			break;
		case OPT_QUIET:
			cfg->quiet = true;
			break;
		case 'h':
			fputs(usage, stdout);
			exit(0);
		case 'V':
			printf("rcc-perf (rcc %s), wire version %d\n", rcc_version(),
			       PERF_WIRE_VERSION);
			exit(0);
		default:
			fprintf(stderr, "Try '%s --help'.\n", prog);
			exit(2);
		}
	}
	if (optind < argc)
		cfg->host = argv[optind++];
	if (optind < argc)
		usage_error(prog, "unexpected argument '%s'", argv[optind]);
	if (kinds)
		cfg->p.kinds = kinds;
	if (!cq_mod_set)
		cfg->p.cq_mod = cfg->p.tx_depth < 100 ? cfg->p.tx_depth : 100;
	if (!!(cfg->p.flags & PF_ALL_SIZES) + !!(cfg->p.flags & PF_SIZE_LIST) + size_set > 1)
		usage_error(prog, "-a, -s and --sizes exclude each other");
	if (cfg->p.flags & PF_SIZE_LIST)
		cfg->p.size = mask;
	if ((cfg->p.flags & PF_DURATION) && (cfg->p.flags & PF_ITERS_SET))
		usage_error(prog, "-D and -n exclude each other");
	if (!cfg->p.iters)
		cfg->p.iters = 1000;
	if (!cfg->host && (cfg->json_path || cfg->csv_path || cfg->plot_dir))
		usage_error(prog, "--json, --csv and --plot belong to the client");
	if (cfg->host && (cfg->persistent || cfg->bind || cfg->accept_timeout_s))
		usage_error(prog, "--persistent, --bind and --accept-timeout belong to the server");
	if (cfg->host && !cfg->port)
		usage_error(prog, "the client needs the server's port (-p)");
	if (cfg->host) {
		const char *why = plan_check(&cfg->p);
		if (why)
			usage_error(prog, "%s", why);
	}
}
