/* SPDX-License-Identifier: BSD-3-Clause */
/* Command line of rcc-mesh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmdline.h"
#include "mesh.h"
#include "opts.h"

static void help(const struct cli *c)
{
	printf("Usage: rcc-mesh --nodes HOST:PORT,HOST:PORT,... --rank K [OPTION]...\n"
	       "  or:  rcc-mesh --hostfile FILE --rank K [OPTION]...\n"
	       "  or:  LAUNCHER rcc-mesh [OPTION]...   (mpirun, srun, torchrun-style)\n"
	       "A full mesh of N nodes over rcc, every byte verified.\n"
	       "\n"
	       "Three ways to start a job (docs/launch.md):\n"
	       "  by hand      one rcc-mesh per node, each with the same node list and its\n"
	       "               own rank (its position in the list, from 0); every node\n"
	       "               listens on its own entry\n"
	       "  mpirun/srun  with no --nodes and no --rank: rank and size come from the\n"
	       "               launcher (PMIx), e.g. 'mpirun -np 4 rcc-mesh -D 5s' or\n"
	       "               'srun --mpi=pmix -n 4 rcc-mesh'\n"
	       "  environment  RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (or RCC_RANK, ...)\n"
	       "               as torchrun and Kubernetes operators set them; rank 0 serves\n"
	       "               a rendezvous on MASTER_ADDR:MASTER_PORT\n"
	       "Under a launcher every rank listens on a free port (of --bind ADDR, or of\n"
	       "every address) and the ranks exchange their addresses through it.\n"
	       "\n"
	       "Every node connects to every other node (retrying while peers come up,\n"
	       "so the start order does not matter) and waits until its mesh is\n"
	       "complete: N-1 connections out and N-1 in. A barrier follows, then all\n"
	       "nodes send to all others at once, each on its outgoing connections: RDMA\n"
	       "WRITE with immediate into the peer's slots and SEND into its receives,\n"
	       "both windows -q deep and credit-controlled, for -D seconds or --bytes per\n"
	       "pair.\n"
	       "\n"
	       "Every payload is a pattern computed from sender rank, receiver rank, stream\n"
	       "and sequence number; receivers check every byte and report any mismatch,\n"
	       "loss or duplicate with the pair, the message and the byte offset. At the\n"
	       "end each sender announces how many messages it sent, so lost tails show.\n"
	       "Then every rank sends its figures to the collector (rank 0), which prints\n"
	       "one table: per pair and aggregate bandwidth, message rate and completion\n"
	       "latency percentiles (post to completion of each message, which includes\n"
	       "waiting for credit).\n"
	       "\n"
	       "A rank that dies or stops responding is reported by every survivor by rank\n"
	       "and address; survivors finish with the rest and exit with status 4. Every\n"
	       "phase is bounded: setup by --connect-timeout, silence from a peer and each\n"
	       "end phase by --timeout.\n"
	       "\n"
	       "Progress lines on standard output (line-buffered), which scripts may wait\n"
	       "for:\n"
	       "  rcc-mesh: rank K: listening on ADDR\n"
	       "  rcc-mesh: rank K: mesh complete ...\n"
	       "  rcc-mesh: rank K: traffic started ...\n"
	       "\n"
	       "Nodes:\n"
	       "  -N, --nodes LIST         comma-separated HOST:PORT entries ([IPV6]:PORT)\n"
	       "  -f, --hostfile FILE      one HOST:PORT per line; '#' comments, blank lines\n"
	       "  -r, --rank K             this node's position in the list (required)\n"
	       "  -b, --bind ADDR          listen on ADDR:PORT instead of our own entry\n"
	       "                           (e.g. 0.0.0.0); under a launcher, listen on\n"
	       "                           ADDR and publish it\n"
	       "      --bootstrap NAME     under a launcher: auto (PMIx when present, else\n"
	       "                           the environment), pmix or env\n"
	       "\n"
	       "Traffic:\n"
	       "  -D, --duration TIME      traffic phase length (2s)\n"
	       "  -n, --bytes BYTES        instead: move BYTES per directed pair, e.g. 64M\n"
	       "  -s, --size BYTES         message size, e.g. 64, 4K, 1M (4096)\n"
	       "  -q, --depth N            messages in flight per stream and peer (16)\n"
	       "  -o, --ops LIST           write, send or write,send (write,send)\n"
	       "\n"
	       "Threads:\n"
	       "  -t, --thread-mode MODE   per-ep: a thread per connection, incoming or\n"
	       "                           outgoing; shared: all connections, both sides,\n"
	       "                           share the progress threads, one CQ each (per-ep)\n"
	       "      --threads N          progress threads in shared mode, for both sides\n"
	       "                           together (1)\n"
	       "\n"
	       "Receives:\n"
	       "      --srq                the connections take their receives from one\n"
	       "                           shared receive queue as deep as one incoming\n"
	       "                           connection's receives, not a queue each\n"
	       "\n"
	       "Bounds:\n"
	       "      --connect-timeout TIME  bound on setup: all connections and the\n"
	       "                           barrier (30s)\n"
	       "\n"
	       "Report:\n"
	       "      --collector K        the rank that gathers and prints the table (0)\n"
	       "      --brief              collector: aggregate line only, no per-pair rows\n"
	       "\n"
	       "Testing:\n"
	       "      --inject KIND        falsify our stream to rank+1 once, to prove the\n"
	       "                           checks: corrupt (flip a byte), skip (lose a\n"
	       "                           sequence number), dup (repeat one), tail\n"
	       "                           (lose the last: the FIN counts one more);\n"
	       "                           or impostor: first connect to rank+1 as our\n"
	       "                           rank with hellos that lack the job secret's\n"
	       "                           tag (with a secret, it must turn them away)\n"
	       "\n"
	       "Common options:\n");
	cli_help_common(c, stdout);
	printf("\n"
	       "With --json the collector prints one JSON object on stdout (docs/json.md)\n"
	       "and the progress lines go to standard error.\n"
	       "\n"
	       "Environment:\n"
	       "  RCC_LOG=error|warn|info|debug|trace   the library's log level\n"
	       "  RCC_RANK, RCC_WORLD_SIZE    rank and size (else RANK/WORLD_SIZE,\n"
	       "                              OMPI_COMM_WORLD_*, PMI_*, SLURM_PROCID/NTASKS)\n"
	       "  RCC_MASTER_ADDR, RCC_MASTER_PORT   rank 0's rendezvous (else MASTER_ADDR,\n"
	       "                              MASTER_PORT); rank 0 may take port 0 and\n"
	       "                              prints the port it got\n"
	       "  RCC_JOB_SECRET, RCC_JOB_SECRET_FILE   a secret of 16 bytes or more that\n"
	       "                              every rank must prove to the rendezvous\n"
	       "  RCC_BOOTSTRAP=pmix|env      force a bootstrap\n"
	       "\n"
	       "Exit status:\n"
	       "  0  the mesh completed and every message of every pair was verified\n"
	       "  1  failure: transport, listen or connect error, setup timeout, interrupted,\n"
	       "     or the rendezvous refused our job secret\n"
	       "  2  usage error\n"
	       "  3  data error: a message was corrupt, lost or duplicated (the collector\n"
	       "     also reports data errors other ranks found)\n"
	       "  4  a peer failed: it died, refused us, or stopped responding, or (under a\n"
	       "     launcher) never joined the address exchange (named on standard error)\n"
	       "Data errors take precedence over peer failures, which take precedence over\n"
	       "other failures.\n"
	       "\n"
	       "Examples:\n"
	       "  for k in 0 1 2 3; do\n"
	       "      rcc-mesh -N 127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103,127.0.0.1:7104 \\\n"
	       "               -r $k -T tcp -D 2s -s 4K > mesh.$k.log &\n"
	       "  done; wait\n"
	       "  mpirun -np 4 rcc-mesh -T tcp -D 2s\n"
	       "  srun --mpi=pmix -n 4 rcc-mesh -D 2s\n"
	       "  RANK=$k WORLD_SIZE=4 MASTER_ADDR=10.0.0.1 MASTER_PORT=29500 rcc-mesh\n");
}

enum {
	OPT_THREADS = CLI_OPT_TOOL,
	OPT_CONNECT_TIMEOUT,
	OPT_COLLECTOR,
	OPT_BRIEF,
	OPT_INJECT,
	OPT_SRQ,
	OPT_BOOTSTRAP,
};

static const char *prog = "rcc-mesh";

static unsigned parse_ops(const char *s)
{
	char buf[64];
	unsigned ops = 0;
	char *save = NULL;

	if (strlen(s) >= sizeof(buf))
		return 0;
	strcpy(buf, s);
	for (char *t = strtok_r(buf, ",+", &save); t; t = strtok_r(NULL, ",+", &save)) {
		if (!strcmp(t, "write"))
			ops |= OPS_WRITE;
		else if (!strcmp(t, "send"))
			ops |= OPS_SEND;
		else
			return 0;
	}
	return ops;
}

static void set_nodes(struct mesh_opts *o, const char *src, bool file)
{
	char err[400];
	if (o->nodes)
		usage_error(prog, "give the nodes once: --nodes or --hostfile");
	int rc = file ? nodes_from_file(src, &o->nodes, &o->nnodes, err, sizeof(err)) :
			nodes_from_list(src, &o->nodes, &o->nnodes, err, sizeof(err));
	if (rc) {
		free(o->nodes);
		o->nodes = NULL;
		usage_error(prog, "%s", err);
	}
}

int mesh_parse(int argc, char **argv, struct mesh_opts *o)
{
	static const struct option longs[] = {
		{ "nodes", required_argument, NULL, 'N' },
		{ "hostfile", required_argument, NULL, 'f' },
		{ "rank", required_argument, NULL, 'r' },
		{ "bind", required_argument, NULL, 'b' },
		{ "duration", required_argument, NULL, 'D' },
		{ "bytes", required_argument, NULL, 'n' },
		{ "size", required_argument, NULL, 's' },
		{ "depth", required_argument, NULL, 'q' },
		{ "ops", required_argument, NULL, 'o' },
		{ "thread-mode", required_argument, NULL, 't' },
		{ "threads", required_argument, NULL, OPT_THREADS },
		{ "connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT },
		{ "collector", required_argument, NULL, OPT_COLLECTOR },
		{ "brief", no_argument, NULL, OPT_BRIEF },
		{ "srq", no_argument, NULL, OPT_SRQ },
		{ "inject", required_argument, NULL, OPT_INJECT },
		{ "bootstrap", required_argument, NULL, OPT_BOOTSTRAP },
		{ NULL, 0, NULL, 0 },
	};
	struct cli c = {
		.prog = prog,
		.take = CLI_VERBS | CLI_MODE | CLI_TIMEOUT | CLI_JSON | CLI_QUIET,
		.shorts = "N:f:r:b:D:n:s:q:o:t:",
		.longs = longs,
		.help = help,
		.timeout_help = "silence from a peer that owes us something, and on each end "
				"phase",
		.timeout_legacy_ms = true,
		.ctx = &o->ctx,
		.mode = RCC_CQ_WAIT,
		.timeout_ms = 10000,
	};
	uint64_t v64;
	long v;
	int r;

	memset(o, 0, sizeof(*o));
	o->rank = -1;
	o->size = 4096;
	o->depth = 16;
	o->ops = OPS_WRITE | OPS_SEND;
	o->duration_s = 2;
	o->threads = 1;
	o->connect_timeout_ms = 30000;
	while ((r = cli_next(&c, argc, argv)) != -1) {
		switch (r) {
		case 'N':
			set_nodes(o, optarg, false);
			break;
		case 'f':
			set_nodes(o, optarg, true);
			break;
		case 'r':
			if (parse_int(optarg, 0, MESH_MAX_NODES - 1, &v))
				usage_error(prog, "bad rank '%s'", optarg);
			o->rank = (int)v;
			break;
		case 'b':
			o->bind = optarg;
			break;
		case 'D':
			o->duration_s = (double)cli_duration(&c, "--duration", optarg, 1, 86400000,
							     false) /
					1000;
			break;
		case 'n':
			if (parse_size(optarg, &v64) || !v64)
				usage_error(prog, "bad byte count '%s'", optarg);
			o->bytes = v64;
			break;
		case 's':
			if (parse_size(optarg, &v64) || !v64 || v64 > (64u << 20))
				usage_error(prog, "bad size '%s' (1 byte to 64 MiB)", optarg);
			o->size = (uint32_t)v64;
			break;
		case 'q':
			if (parse_int(optarg, 1, 1024, &v))
				usage_error(prog, "bad depth '%s' (1..1024)", optarg);
			o->depth = (uint32_t)v;
			break;
		case 'o':
			if (!(o->ops = parse_ops(optarg)))
				usage_error(prog, "operations must be write, send or write,send");
			break;
		case 't':
			if (parse_thread_mode(optarg, &o->thread_mode))
				usage_error(prog, "thread mode must be per-ep or shared, not '%s'",
					    optarg);
			break;
		case OPT_THREADS:
			if (parse_int(optarg, 1, 64, &v))
				usage_error(prog, "bad thread count '%s' (1..64)", optarg);
			o->threads = (int)v;
			break;
		case OPT_CONNECT_TIMEOUT:
			o->connect_timeout_ms = (int)cli_duration(&c, "--connect-timeout", optarg,
								  100, 3600000, true);
			break;
		case OPT_COLLECTOR:
			if (parse_int(optarg, 0, MESH_MAX_NODES - 1, &v))
				usage_error(prog, "bad collector rank '%s'", optarg);
			o->collector = (int)v;
			break;
		case OPT_BRIEF:
			o->brief = true;
			break;
		case OPT_SRQ:
			o->srq = true;
			break;
		case OPT_INJECT:
			if (!strcmp(optarg, "corrupt"))
				o->inject = INJECT_CORRUPT;
			else if (!strcmp(optarg, "skip"))
				o->inject = INJECT_SKIP;
			else if (!strcmp(optarg, "dup"))
				o->inject = INJECT_DUP;
			else if (!strcmp(optarg, "tail"))
				o->inject = INJECT_TAIL;
			else if (!strcmp(optarg, "impostor"))
				o->inject = INJECT_IMPOSTOR;
			else
				usage_error(prog,
					    "fault to inject must be corrupt, skip, dup, tail "
					    "or impostor");
			break;
		case OPT_BOOTSTRAP:
			if (!strcmp(optarg, "auto"))
				o->bootstrap = RCC_BOOTSTRAP_AUTO;
			else if (!strcmp(optarg, "pmix"))
				o->bootstrap = RCC_BOOTSTRAP_PMIX;
			else if (!strcmp(optarg, "env"))
				o->bootstrap = RCC_BOOTSTRAP_ENV;
			else
				usage_error(prog, "--bootstrap must be auto, pmix or env");
			break;
		}
	}
	cli_finish(&c);
	o->cq_mode = c.mode;
	o->timeout_ms = c.timeout_ms;
	o->json = c.json;
	o->quiet = c.quiet;
	if (o->timeout_ms < 100)
		usage_error(prog, "--timeout must be 100ms or more");
	if (optind < argc)
		usage_error(prog, "unexpected argument '%s'", argv[optind]);
	if (o->bootstrap != RCC_BOOTSTRAP_AUTO && (o->nodes || o->rank >= 0))
		usage_error(prog, "--bootstrap is for runs without --nodes and --rank");
	if (!o->nodes && o->rank < 0)
		launch_open(o); /* under a launcher: rank, size and nodes from it */
	if (!o->nodes)
		usage_error(prog, "no nodes: give --nodes or --hostfile");
	if (o->nnodes < 2)
		usage_error(prog, "a mesh needs at least 2 nodes");
	if (o->rank < 0)
		usage_error(prog, "--rank is required");
	if (o->rank >= o->nnodes)
		usage_error(prog, "rank %d is not in a list of %d nodes", o->rank, o->nnodes);
	if (o->collector >= o->nnodes)
		usage_error(prog, "collector %d is not in a list of %d nodes", o->collector,
			    o->nnodes);
	if (o->inject == INJECT_CORRUPT && o->size < 2)
		usage_error(prog, "--inject corrupt needs messages of 2 bytes or more");
	return 0;
}

void mesh_opts_free(struct mesh_opts *o)
{
	rcc_bootstrap_close(o->boot);
	o->boot = NULL;
	free(o->nodes);
	o->nodes = NULL;
}
