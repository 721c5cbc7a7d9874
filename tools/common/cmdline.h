/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The command-line grammar all rcc tools share (docs/cli.md): one table of the
 * common options -- transport, device, device port, GID index, bring-up,
 * completion mode, connection type, service port, timeout, JSON, quiet, help,
 * version -- with the same letter, long name, value syntax and message in
 * every tool. A tool
 * declares which common options it takes and its own options; cli_next()
 * handles the common ones and hands the tool only its own.
 *
 * Usage errors print "prog: why" and "Try 'prog --help'." on stderr and exit
 * with status 2; --help and --version print on stdout and exit 0 (GNU style,
 * so help2man can build the manual pages from them).
 */
#ifndef RCC_TOOLS_CMDLINE_H
#define RCC_TOOLS_CMDLINE_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "rcc/rcc.h"
#include "rcc/session.h"

/* The common options a tool takes (struct cli.take). */
enum {
	CLI_TRANSPORT = 1 << 0, /* -T, --transport auto|verbs|tcp */
	CLI_DEVICE = 1 << 1,    /* -d, --device DEV: implies verbs */
	CLI_IB_PORT = 1 << 2,   /* -i, --ib-port N */
	CLI_GID = 1 << 3,       /* -g, --gid-index N */
	CLI_BRINGUP = 1 << 4,   /* -B, --bringup cm|manual */
	CLI_MODE = 1 << 5,      /* -m, --mode poll|wait|fd|hybrid (also --cq-mode) */
	CLI_PORT = 1 << 6,      /* -p, --port PORT */
	CLI_TIMEOUT = 1 << 7,   /* --timeout DURATION */
	CLI_JSON = 1 << 8,      /* --json */
	CLI_QUIET = 1 << 9,     /* --quiet */
	CLI_QP_TYPE = 1 << 10,  /* -c, --connection rc|uc|ud (perftest's letter; either case) */
	/* everything that opens a transport */
	CLI_VERBS = CLI_TRANSPORT | CLI_DEVICE | CLI_IB_PORT | CLI_GID | CLI_BRINGUP,
};

/* Option codes cli_next() never returns for the common options; a tool's own
 * long-only options use codes from CLI_OPT_TOOL up. */
enum {
	CLI_OPT_TIMEOUT = 0x1000,
	CLI_OPT_JSON,
	CLI_OPT_QUIET,
	CLI_OPT_VERSION,
	CLI_OPT_TOOL = 256,
};

struct cli {
	/* The tool's part, set before the first cli_next(). */
	const char *prog;
	unsigned take;                     /* CLI_* */
	const char *shorts;                /* its own short options, getopt syntax */
	const struct option *longs;        /* its own long options, NULL-terminated; may be NULL */
	void (*help)(const struct cli *c); /* prints --help on stdout */
	const char *version_extra;         /* a second --version line, or NULL */
	const char *timeout_help; /* what --timeout bounds here ("each wait for the peer") */
	bool timeout_legacy_ms;   /* this tool's --timeout took milliseconds before */
	const char *fd_refused;   /* why -m fd cannot be had here, or NULL */
	const char *device_help;  /* what -d means here, when it opens no transport */
	/* Values: the tool sets its defaults, the options overwrite them. */
	struct rcc_ctx_attr *ctx; /* required with any of CLI_VERBS */
	enum rcc_cq_mode mode;
	int port;
	int timeout_ms;
	bool json;
	bool quiet;
	enum rcc_qp_type qp_type; /* -c; RCC_QP_RC unless given */
	/* Private. */
	bool ready;
	char all_shorts[96];
	struct option all_longs[80];
};

/*
 * The next option of the tool's own, for its switch; -1 when the options are
 * over (operands start at optind, permuted to the end as GNU getopt does).
 * Common options, --help and --version are handled here; an unknown option or
 * a missing value is a usage error. Not thread-safe (getopt).
 */
int cli_next(struct cli *c, int argc, char **argv);

/* Apply a common option by its code ('T', 'd', 'm', CLI_OPT_TIMEOUT, ...): for
 * a tool's own alias of one (rcc-perf's -x for -g). */
void cli_apply(struct cli *c, int code, const char *arg);

/*
 * After the options: what only the whole command line can tell. A device with
 * -T tcp is a usage error; a device under "auto" means verbs (so a device that
 * is not there is an error naming it, never a quiet run over tcp).
 */
void cli_finish(struct cli *c);

/*
 * RCC_CLI_CHECK=1 in the environment: check the command line only. Each tool
 * calls cli_check_done() right after its whole command line was parsed and
 * checked; in check mode it prints "PROG: command line ok" and exits 0
 * before anything is opened, connected or written. What the machine has (a
 * named device) is not checked then: it is not part of the command line.
 * The documentation's command lines are tested this way
 * (tests/docs/doc-commands.sh).
 */
bool cli_checking(void);
void cli_check_done(const char *prog);

/*
 * A duration option's value in milliseconds, in [min_ms, max_ms] (parse_duration
 * syntax; bare numbers are seconds). legacy_ms: this option took milliseconds
 * before; a bare number of 100 or more is still read that way, with a warning.
 * Anything else is a usage error naming opt.
 */
uint64_t cli_duration(const struct cli *c, const char *opt, const char *arg, uint64_t min_ms,
		      uint64_t max_ms, bool legacy_ms);

/*
 * A peer operand or option value: HOST, HOST:PORT, [IPV6] or [IPV6]:PORT (a
 * bare IPv6 literal has no port). The host goes to host; *port is set only
 * when the argument has one. Anything else is a usage error naming what.
 */
void cli_peer(const struct cli *c, const char *what, const char *arg, char *host, size_t hostlen,
	      int *port);

/* The common options this tool takes, as --help lines (two-column GNU style). */
void cli_help_common(const struct cli *c, FILE *f);

/* The --version text: "prog (rcc) X.Y.Z" and version_extra. */
void cli_version(const struct cli *c, FILE *f);

#endif
