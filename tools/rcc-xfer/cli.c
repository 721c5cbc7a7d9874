/* SPDX-License-Identifier: BSD-3-Clause */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmdline.h"
#include "opts.h"
#include "proto.h"

#define PROG "rcc-xfer"

enum {
	OPT_AS = CLI_OPT_TOOL,
	OPT_NO_RESUME,
	OPT_LIMIT_RATE,
	OPT_ID,
	OPT_CONNECT_TIMEOUT,
	OPT_PROGRESS,
	OPT_NO_PROGRESS,
	OPT_READY_FILE,
	OPT_ONCE,
	OPT_NO_CLOBBER,
	OPT_NO_PREALLOCATE,
	OPT_MAX_CONNS,
	OPT_AUTH_TIMEOUT,
	OPT_MAX_UNAUTH,
	OPT_CHUNK_SIZE,
	OPT_WINDOW,
};

/* Its own options; transport, -m, -p, --timeout, --json and --quiet are the
 * common ones (tools/common/cli.c). */
static const struct option long_opts[] = {
	{ "key-file", required_argument, NULL, 'k' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "as", required_argument, NULL, OPT_AS },
	{ "force", no_argument, NULL, 'f' },
	{ "no-resume", no_argument, NULL, OPT_NO_RESUME },
	{ "limit-rate", required_argument, NULL, OPT_LIMIT_RATE },
	{ "id", required_argument, NULL, OPT_ID },
	{ "connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT },
	{ "progress", no_argument, NULL, OPT_PROGRESS },
	{ "no-progress", no_argument, NULL, OPT_NO_PROGRESS },
	{ "dir", required_argument, NULL, 'D' },
	{ "listen", required_argument, NULL, 'l' },
	{ "ready-file", required_argument, NULL, OPT_READY_FILE },
	{ "once", no_argument, NULL, OPT_ONCE },
	{ "no-clobber", no_argument, NULL, OPT_NO_CLOBBER },
	{ "no-preallocate", no_argument, NULL, OPT_NO_PREALLOCATE },
	{ "max-conns", required_argument, NULL, OPT_MAX_CONNS },
	{ "auth-timeout", required_argument, NULL, OPT_AUTH_TIMEOUT },
	{ "max-unauth", required_argument, NULL, OPT_MAX_UNAUTH },
	{ "chunk-size", required_argument, NULL, OPT_CHUNK_SIZE },
	{ "window", required_argument, NULL, OPT_WINDOW },
	{ NULL, 0, NULL, 0 },
};

/* Options that only make sense for one side, to say so instead of ignoring them. */
static bool sender_only(int c)
{
	return c == OPT_AS || c == 'f' || c == OPT_NO_RESUME || c == OPT_LIMIT_RATE ||
	       c == OPT_ID || c == OPT_CONNECT_TIMEOUT || c == OPT_PROGRESS || c == OPT_NO_PROGRESS;
}

static bool receiver_only(int c)
{
	return c == 'D' || c == 'l' || c == OPT_READY_FILE || c == OPT_ONCE ||
	       c == OPT_NO_CLOBBER || c == OPT_NO_PREALLOCATE || c == OPT_MAX_CONNS ||
	       c == OPT_AUTH_TIMEOUT || c == OPT_MAX_UNAUTH || c == OPT_CHUNK_SIZE ||
	       c == OPT_WINDOW;
}

static const char *opt_name(int c)
{
	for (const struct option *p = long_opts; p->name; p++)
		if (p->val == c)
			return p->name;
	return "?";
}

/*
 * "host", "host:port", "[v6]", "[v6]:port", a bare IPv6 address, ":port" or,
 * for listening, a bare port: always returned with an explicit port (port
 * when it has none).
 */
static int normalize_addr(const char *in, const char *any_host, int port, char *out, size_t len)
{
	const char *colon = strchr(in, ':');
	int n;

	if (!*in)
		return -1;
	if (any_host && all_digits(in))
		n = snprintf(out, len, "%s:%s", any_host, in);
	else if (in[0] == '[')
		n = strstr(in, "]:") ? snprintf(out, len, "%s", in) :
				       snprintf(out, len, "%s:%d", in, port);
	else if (colon && strchr(colon + 1, ':'))
		n = snprintf(out, len, "[%s]:%d", in, port);
	else if (colon == in)
		n = snprintf(out, len, "%s%s", any_host ? any_host : "", in);
	else if (colon)
		n = snprintf(out, len, "%s", in);
	else
		n = snprintf(out, len, "%s:%d", in, port);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

static void default_id(char *id, size_t len)
{
	const char *user = getenv("USER");
	char host[128] = "localhost";

	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = 0;
	snprintf(id, len, "%s@%s", user && *user ? user : "user", host);
	for (char *p = id; *p; p++)
		if (*p < 0x21 || *p > 0x7e)
			*p = '_';
}

static bool id_valid(const char *id)
{
	size_t n = strlen(id);

	if (n == 0 || n > XFER_ID_MAX)
		return false;
	for (; *id; id++)
		if (*id < 0x21 || *id > 0x7e)
			return false;
	return true;
}

static void set_defaults(struct xfer_opts *o)
{
	mode_t m;

	memset(o, 0, sizeof(*o));
	o->progress = -1;
	o->connect_timeout_ms = XFER_DEFAULT_CONNECT_TIMEOUT_S * 1000;
	o->dir = ".";
	o->max_conns = XFER_DEFAULT_MAX_CONNS;
	o->auth_timeout_ms = XFER_DEFAULT_AUTH_TIMEOUT_S * 1000;
	o->max_unauth = XFER_DEFAULT_MAX_UNAUTH;
	o->window = XFER_DEFAULT_WINDOW;
	default_id(o->id, sizeof(o->id));
	/* Read once, before any thread exists: umask() is process-wide. */
	m = umask(022);
	umask(m);
	o->umask = m;
}

static void parse_one(struct xfer_opts *o, struct cli *cl, int c, const char *arg, int *verbose,
		      const char **listen)
{
	uint64_t size;
	long v;

	if (o->cmd != CMD_SEND && sender_only(c))
		usage_error(PROG, "--%s is an option of 'send'", opt_name(c));
	if (o->cmd != CMD_RECV && receiver_only(c))
		usage_error(PROG, "--%s is an option of 'recv'", opt_name(c));
	switch (c) {
	case 'k':
		o->key_file = arg;
		break;
	/* the spellings it had before the common grammar */
	case 't':
		cli_apply(cl, CLI_OPT_TIMEOUT, arg);
		break;
	case 'q':
		cli_apply(cl, CLI_OPT_QUIET, arg);
		break;
	case 'j':
		cli_apply(cl, CLI_OPT_JSON, arg);
		break;
	case 'v':
		(*verbose)++;
		break;
	case OPT_AS:
		o->as_name = arg;
		break;
	case 'f':
		o->force = true;
		break;
	case OPT_NO_RESUME:
		o->no_resume = true;
		break;
	case OPT_LIMIT_RATE:
		if (parse_size(arg, &size) || size < 1024)
			usage_error(PROG,
				    "--limit-rate must be a rate in bytes per second of at "
				    "least 1K, e.g. 50M, not '%s'",
				    arg);
		o->limit_rate = size;
		break;
	case OPT_ID:
		if (!id_valid(arg))
			usage_error(PROG, "--id must be 1-%d printable characters without spaces",
				    XFER_ID_MAX);
		snprintf(o->id, sizeof(o->id), "%s", arg);
		break;
	case OPT_CONNECT_TIMEOUT:
		o->connect_timeout_ms = (int)cli_duration(cl, "--connect-timeout", arg, 1, 86400000,
							  false);
		break;
	case OPT_PROGRESS:
		o->progress = 1;
		break;
	case OPT_NO_PROGRESS:
		o->progress = 0;
		break;
	case 'D':
		o->dir = arg;
		break;
	case 'l':
		*listen = arg;
		break;
	case OPT_READY_FILE:
		o->ready_file = arg;
		break;
	case OPT_ONCE:
		o->once = true;
		break;
	case OPT_NO_CLOBBER:
		o->no_clobber = true;
		break;
	case OPT_NO_PREALLOCATE:
		o->no_preallocate = true;
		break;
	case OPT_MAX_CONNS:
		if (parse_int(arg, 1, 64, &v))
			usage_error(PROG, "--max-conns must be 1-64, not '%s'", arg);
		o->max_conns = (int)v;
		break;
	case OPT_AUTH_TIMEOUT:
		o->auth_timeout_ms = (int)cli_duration(cl, "--auth-timeout", arg, 1, 86400000,
						       false);
		break;
	case OPT_MAX_UNAUTH:
		if (parse_int(arg, 1, 256, &v))
			usage_error(PROG, "--max-unauth must be 1-256, not '%s'", arg);
		o->max_unauth = (int)v;
		break;
	case OPT_CHUNK_SIZE:
		if (parse_size(arg, &size) || size < XFER_MIN_CHUNK || size > XFER_MAX_CHUNK ||
		    size % 4096)
			usage_error(PROG,
				    "--chunk-size must be a multiple of 4K from 4K to 64M, "
				    "not '%s'",
				    arg);
		o->chunk_size = (uint32_t)size;
		break;
	case OPT_WINDOW:
		if (parse_int(arg, 1, XFER_MAX_CHUNKS, &v))
			usage_error(PROG, "--window must be 1-%u chunks, not '%s'", XFER_MAX_CHUNKS,
				    arg);
		o->window = (uint32_t)v;
		break;
	}
}

static void check_send_args(struct xfer_opts *o, const struct cli *cl, int argc, char **argv)
{
	char host[256];
	int port = cl->port;

	if (argc < 2)
		usage_error(PROG, "send needs at least one FILE and a HOST[:PORT]");
	cli_peer(cl, "destination", argv[argc - 1], host, sizeof(host), &port);
	if (!port)
		usage_error(PROG, "the destination needs a port, not 0");
	join_host_port(o->target, sizeof(o->target), host, port);
	o->files = argv;
	o->nfiles = argc - 1;
	if (o->as_name && o->nfiles != 1)
		usage_error(PROG, "--as names one file: give exactly one FILE with it");
}

void cli_parse(int argc, char **argv, struct xfer_opts *o)
{
	static char proto_line[32];
	struct cli cl = {
		.prog = PROG,
		.take = CLI_VERBS | CLI_MODE | CLI_PORT | CLI_TIMEOUT | CLI_JSON | CLI_QUIET,
		.shorts = "k:vfD:l:t:qj",
		.longs = long_opts,
		.help = cli_print_help,
		.version_extra = proto_line,
		.timeout_help = "silence from the peer (idle peers send keepalives)",
		.mode = RCC_CQ_WAIT,
		.port = XFER_DEFAULT_PORT,
		.timeout_ms = XFER_DEFAULT_TIMEOUT_S * 1000,
	};
	const char *cmd, *listen = NULL;
	int c, verbose = 0;

	snprintf(proto_line, sizeof(proto_line), "protocol %d", XFER_PROTO_VERSION);
	set_defaults(o);
	cl.ctx = &o->ctx_attr;
	if (argc < 2)
		usage_error(PROG, "missing command: send, recv or keygen");
	cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
		cli_print_help(&cl);
		exit(0);
	}
	if (!strcmp(cmd, "-V") || !strcmp(cmd, "--version")) {
		cli_version(&cl, stdout);
		exit(0);
	}
	if (!strcmp(cmd, "send"))
		o->cmd = CMD_SEND;
	else if (!strcmp(cmd, "recv") || !strcmp(cmd, "receive"))
		o->cmd = CMD_RECV;
	else if (!strcmp(cmd, "keygen"))
		o->cmd = CMD_KEYGEN;
	else
		usage_error(PROG, "unknown command '%s': use send, recv or keygen", cmd);

	argc--;
	argv++;
	optind = 1;
	/* GNU getopt permutes, so options may also follow the operands. */
	while ((c = cli_next(&cl, argc, argv)) != -1)
		parse_one(o, &cl, c, optarg, &verbose, &listen);
	cli_finish(&cl);
	o->cq_mode = cl.mode;
	o->timeout_ms = cl.timeout_ms;
	o->out = cl.json ? OUT_JSON : cl.quiet ? OUT_QUIET : OUT_HUMAN;
	if (o->cmd == CMD_RECV) {
		char port[16];
		snprintf(port, sizeof(port), "%d", cl.port);
		if (normalize_addr(listen ? listen : port, "0.0.0.0", cl.port, o->listen,
				   sizeof(o->listen)))
			usage_error(PROG, "bad --listen address '%s'", listen);
	}
	char **ops = argv + optind;
	int nops = argc - optind;

	if (verbose)
		rcc_log_set_level(verbose == 1 ? RCC_LOG_INFO :
				  verbose == 2 ? RCC_LOG_DEBUG :
						 RCC_LOG_TRACE);
	switch (o->cmd) {
	case CMD_SEND:
		check_send_args(o, &cl, nops, ops);
		break;
	case CMD_RECV:
		if (nops)
			usage_error(PROG, "recv takes no operands (got '%s'); use --dir DIR",
				    ops[0]);
		break;
	case CMD_KEYGEN:
		if (nops != 1)
			usage_error(PROG, "keygen needs exactly one FILE to create");
		o->keygen_path = ops[0];
		break;
	}
}
