/* SPDX-License-Identifier: BSD-3-Clause */
/* Command line: perftest's option names where perftest has one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmdline.h"
#include "launch.h"
#include "opts.h"
#include "perf.h"

static void help(const struct cli *c)
{
	printf("Usage: rcc-perf [OPTION]... [HOST[:PORT]]\n"
	       "  or:  LAUNCHER rcc-perf [OPTION]...   (e.g. mpirun -np 2)\n"
	       "Latency and bandwidth of SEND, WRITE, WRITE_IMM, READ and atomics over rcc.\n"
	       "\n"
	       "Without HOST, rcc-perf is the server: it serves one client (--persistent:\n"
	       "one after another) and exits. With HOST, it is the client and runs the\n"
	       "tests against the server on HOST. Under a launcher (mpirun, srun, or\n"
	       "RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT; docs/launch.md), 2 ranks without\n"
	       "HOST: rank 0 serves on a free port, rank 1 gets its address through the\n"
	       "launcher and runs the tests, so any two nodes are measured by one command.\n"
	       "\n"
	       "Measured as perftest does (ib_*_lat: half round trip for send/write, full\n"
	       "round trip for read/atomics; ib_*_bw: peak and average bandwidth and message\n"
	       "rate). The client chooses the tests and sends its parameters to the server,\n"
	       "which needs only the transport options. Results go to the terminal as\n"
	       "aligned tables with the unit of every column in its header, and on the client\n"
	       "optionally to JSON, CSV and PNG charts.\n"
	       "\n"
	       "Bandwidth: BW_avg is all timed payload over the whole timed phase (first\n"
	       "post to last completion). BW_peak is perftest's peak: the best rate over any\n"
	       "stretch of consecutive messages, from a post to a later completion. Short\n"
	       "stretches between two completions that arrive together look very fast, so\n"
	       "the peak is often well above the average (twice it on a busy loopback); the\n"
	       "average is the figure to compare. -N skips the peak.\n"
	       "\n"
	       "Tests (client):\n"
	       "      --test LIST          send,write,write_imm,read,cas,fadd,atomic,all (all;\n"
	       "                           with -c UC: send,write,write_imm)\n"
	       "      --lat, --bw          latency tests only / bandwidth tests only (both)\n"
	       "  -s, --size BYTES         message size, e.g. 64, 4K, 1M (2; atomics: 8)\n"
	       "  -a, --all                every power of two from 2 B to 8 MiB\n"
	       "      --sizes LIST         these sizes (powers of two), e.g. 8,4K,64K,1M\n"
	       "  -n, --iters N            timed iterations per size (lat 1000, bw 5000 per\n"
	       "                           endpoint; without -n, sizes above 64 KiB get fewer)\n"
	       "  -D, --duration TIME      run each size for TIME (e.g. 2s) instead of -n\n"
	       "      --warmup N           untimed iterations first (a tenth of -n, 1..100)\n"
	       "  -q, --qp N               data endpoints, bandwidth tests (1)\n"
	       "  -l, --post_list N        post lists of N work requests (1)\n"
	       "  -Q, --cq-mod N           bandwidth: a completion every N messages\n"
	       "                           (min(100, -t))\n"
	       "  -I, --inline_size N      inline up to N bytes; 0: never (transport default)\n"
	       "  -t, --tx-depth N         messages in flight per endpoint (128)\n"
	       "  -r, --rx-depth N         receives posted per endpoint (512)\n"
	       "  -o, --outs N             outstanding READ/atomics per endpoint (16)\n"
	       "  -b, --bidirectional      bandwidth both ways at once (figures are summed)\n"
	       "      --validate           check every payload byte (slower; for correctness)\n"
	       "      --target-poll        the passive side of READ/WRITE/atomics busy-polls\n"
	       "                           its CQ (on tcp: moves the work from the progress\n"
	       "                           thread)\n"
	       "      --heap               both sides' buffers from the heap (default: from\n"
	       "                           rcc_mem_alloc(), which a same-host peer maps: a\n"
	       "                           large WRITE/READ over shared memory is one copy)\n"
	       "      --one-buffer         every message to and from one buffer per side\n"
	       "                           (default: a slot per message in flight, up to\n"
	       "                           32 MiB: copies then miss the caches)\n"
	       "  -N, --no_peak            skip the peak bandwidth search\n"
	       "\n"
	       "Run and output:\n"
	       "      --bind ADDR          server: address to listen on (all)\n"
	       "      --accept-timeout TIME  server: wait at most TIME for a client (forever)\n"
	       "      --persistent         server: serve clients one after another\n"
	       "      --setup-timeout TIME server: an accepted client has TIME to open all\n"
	       "                           its data connections, or it is dropped and the\n"
	       "                           server free for others (5s)\n"
	       "      --report_gbits       bandwidth in Gbit/s instead of MiB/s\n"
	       "      --json[=FILE]        client: every figure and parameter as JSON\n"
	       "                           (docs/json.md) on stdout, the tables then going to\n"
	       "                           stderr; or into FILE\n"
	       "      --csv FILE           client: the same as CSV, one row per point\n"
	       "      --plot DIR           client: PNG charts in DIR (needs gnuplot)\n"
	       "\n"
	       "perftest's spellings, also accepted:\n"
	       "  -x N, --ib-dev DEV       for -g N, --device DEV\n"
	       "  -e, --events             for -m wait\n"
	       "  -R, --rdma_cm            for -B cm (the default)\n"
	       "  -F, --CPU-freq           ignored\n"
	       "\n"
	       "Common options (the server needs only these; -c is the client's, whose plan\n"
	       "the server follows):\n");
	cli_help_common(c, stdout);
	printf("\n"
	       "The port is 18515, as perftest's; a server given -p 0 picks a free one and\n"
	       "prints it. MiB/s is 2^20 bytes per second (perftest's MB/sec), Gbit/s 10^9\n"
	       "bits per second.\n"
	       "\n"
	       "Environment:\n"
	       "  RCC_LOG=error|warn|info|debug|trace   the library's log level\n"
	       "\n"
	       "Exit status:\n"
	       "  0  success\n"
	       "  1  failure (connection, transfer, validation) or interrupted\n"
	       "  2  usage error\n");
}

enum {
	OPT_TEST = CLI_OPT_TOOL,
	OPT_LAT,
	OPT_BW,
	OPT_WARMUP,
	OPT_VALIDATE,
	OPT_TARGET_POLL,
	OPT_HEAP,
	OPT_ONE_BUFFER,
	OPT_BIND,
	OPT_ACCEPT_TIMEOUT,
	OPT_SETUP_TIMEOUT,
	OPT_PERSISTENT,
	OPT_GBITS,
	OPT_JSON,
	OPT_CSV,
	OPT_PLOT,
	OPT_SIZES,
	OPT_IB_DEV,
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
	{ "bidirectional", no_argument, NULL, 'b' },
	{ "validate", no_argument, NULL, OPT_VALIDATE },
	{ "target-poll", no_argument, NULL, OPT_TARGET_POLL },
	{ "heap", no_argument, NULL, OPT_HEAP },
	{ "one-buffer", no_argument, NULL, OPT_ONE_BUFFER },
	{ "no_peak", no_argument, NULL, 'N' },
	{ "ib-dev", required_argument, NULL, OPT_IB_DEV },
	{ "rdma_cm", no_argument, NULL, 'R' },
	{ "bind", required_argument, NULL, OPT_BIND },
	{ "CPU-freq", no_argument, NULL, 'F' },
	{ "accept-timeout", required_argument, NULL, OPT_ACCEPT_TIMEOUT },
	{ "setup-timeout", required_argument, NULL, OPT_SETUP_TIMEOUT },
	{ "persistent", no_argument, NULL, OPT_PERSISTENT },
	{ "report_gbits", no_argument, NULL, OPT_GBITS },
	{ "json", optional_argument, NULL, OPT_JSON },
	{ "csv", required_argument, NULL, OPT_CSV },
	{ "plot", required_argument, NULL, OPT_PLOT },
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

static void defaults(struct perf_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->prog = "rcc-perf";
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

/*
 * Without HOST under a launcher ('mpirun -np 2 rcc-perf ...'): one command
 * line for both ranks. Rank 0 serves this one client on a free port, and
 * gives up if it has not come within --timeout; the client's options (tests,
 * --json, --csv, --plot) are rank 1's. Rank 1's HOST comes from the
 * bootstrap (main). Started by nothing, a run without HOST is the server.
 */
static void launch(struct perf_config *cfg)
{
	launch_pair_open(cfg->prog, &cfg->boot);
	if (!cfg->boot)
		return;
	if (rcc_bootstrap_rank(cfg->boot) == 0) {
		cfg->port = 0;
		cfg->persistent = false;
		cfg->json_path = cfg->csv_path = cfg->plot_dir = NULL;
		if (!cfg->accept_timeout_s)
			cfg->accept_timeout_s = cfg->timeout_ms < 1000 ? 1 : cfg->timeout_ms / 1000;
	} else {
		cfg->host = cfg->host_buf; /* filled in by launch_pair_find() */
		cfg->bind = NULL;          /* the server's */
		cfg->accept_timeout_s = 0;
	}
}

void perf_parse(int argc, char **argv, struct perf_config *cfg)
{
	const char *prog = "rcc-perf";
	struct cli c = {
		.prog = prog,
		.take = CLI_VERBS | CLI_MODE | CLI_QP_TYPE | CLI_PORT | CLI_TIMEOUT | CLI_QUIET,
		.shorts = "s:an:D:q:l:Q:I:t:r:o:ebNx:RF",
		.longs = longs,
		.help = help,
		.version_extra = "wire protocol " PERF_WIRE_STR,
		.timeout_help = "silence from the peer",
		.ctx = &cfg->ctx,
		.mode = RCC_CQ_POLL,
		.port = 18515,
		.timeout_ms = 15000,
	};
	bool cq_mod_set = false, size_set = false, ops_set = false;
	const char *json_next = NULL; /* the word after a bare --json */
	uint8_t kinds = 0;
	uint64_t size;
	uint32_t mask = 0;
	int r;

	defaults(cfg);
	while ((r = cli_next(&c, argc, argv)) != -1) {
		switch (r) {
		case OPT_TEST:
			if (parse_ops(optarg, &cfg->p.ops))
				usage_error(prog, "bad test list '%s'", optarg);
			ops_set = true;
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
			cfg->p.duration_ms = (uint32_t)cli_duration(&c, "--duration", optarg, 1,
								    3600000, false);
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
			cli_apply(&c, 'm', "wait");
			break;
		case 'b':
			cfg->p.flags |= PF_BIDIR;
			break;
		case OPT_VALIDATE:
			cfg->p.flags |= PF_VALIDATE;
			break;
		case OPT_HEAP:
			cfg->p.flags |= PF_HEAP_MEM;
			break;
		case OPT_ONE_BUFFER:
			cfg->p.flags |= PF_ONE_BUFFER;
			break;
		case OPT_TARGET_POLL:
			cfg->p.flags |= PF_TARGET_POLL;
			break;
		case 'N':
			cfg->p.flags |= PF_NO_PEAK;
			break;
		case 'x':
			cli_apply(&c, 'g', optarg);
			break;
		case OPT_IB_DEV:
			cli_apply(&c, 'd', optarg);
			break;
		case 'R':
			cli_apply(&c, 'B', "cm");
			break;
		case OPT_BIND:
			cfg->bind = optarg;
			break;
		case 'F':
			break;
		case OPT_ACCEPT_TIMEOUT:
			cfg->accept_timeout_s = (int)((cli_duration(&c, "--accept-timeout", optarg,
								    1000, 86400000, false) +
						       999) /
						      1000);
			break;
		case OPT_SETUP_TIMEOUT:
			cfg->setup_timeout_ms = (int)cli_duration(&c, "--setup-timeout", optarg,
								  100, 3600000, false);
			break;
		case OPT_PERSISTENT:
			cfg->persistent = true;
			break;
		case OPT_GBITS:
			cfg->report_gbits = true;
			break;
		case OPT_JSON:
			cfg->json_path = optarg ? optarg : "-";
			json_next = !optarg && optind < argc ? argv[optind] : NULL;
			break;
		case OPT_CSV:
			cfg->csv_path = optarg;
			break;
		case OPT_PLOT:
			cfg->plot_dir = optarg;
			break;
		}
	}
	cli_finish(&c);
	cfg->p.cq_mode = (uint8_t)c.mode;
	cfg->p.qp_type = (uint8_t)c.qp_type;
	/* -c UC/UD alone: every test it can run; a named other one is refused below */
	if (c.qp_type == RCC_QP_UC && !ops_set)
		cfg->p.ops &= OPS_UC;
	if (c.qp_type == RCC_QP_UD && !ops_set)
		cfg->p.ops &= OPS_UD;
	cfg->port = c.port;
	cfg->timeout_ms = c.timeout_ms;
	cfg->quiet = c.quiet;
	/* The old spelling "--json FILE" with a HOST: two operands, and one of them
	 * followed the bare --json (getopt has moved the operands, not the words). */
	if (json_next && argc - optind == 2) {
		int k = argv[optind] == json_next     ? optind :
			argv[optind + 1] == json_next ? optind + 1 :
							-1;
		if (k >= 0) {
			cfg->json_path = argv[k];
			argv[k] = argv[optind];
			optind++;
		}
	}
	if (optind < argc) {
		cfg->host = argv[optind++];
		cli_peer(&c, "HOST", cfg->host, cfg->host_buf, sizeof(cfg->host_buf), &cfg->port);
		cfg->host = cfg->host_buf;
	}
	if (optind < argc)
		usage_error(prog, "unexpected argument '%s'", argv[optind]);
	if (!cfg->host)
		launch(cfg);
	/* JSON on stdout: the tables move to stderr, so stdout parses as one object */
	cfg->text = cfg->json_path && !strcmp(cfg->json_path, "-") ? stderr : stdout;
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
	if (cfg->host &&
	    (cfg->persistent || cfg->bind || cfg->accept_timeout_s || cfg->setup_timeout_ms))
		usage_error(prog, "--persistent, --bind, --accept-timeout and --setup-timeout "
				  "belong to the server");
	if (!cfg->setup_timeout_ms)
		cfg->setup_timeout_ms = PERF_SETUP_TIMEOUT_MS;
	if (cfg->host && !cfg->port && !cfg->boot)
		usage_error(prog, "the client needs the server's port (-p)");
	if (cfg->host) {
		const char *why = plan_check(&cfg->p);
		if (why)
			usage_error(prog, "%s", why);
	}
}
