/* SPDX-License-Identifier: BSD-3-Clause */
/* Command line of rcc-xfer: subcommand, options, defaults, help text. */
#ifndef XFER_CLI_H
#define XFER_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "output.h"
#include "rcc/rcc.h"

#define XFER_DEFAULT_PORT 7472
/* Chunk sizes by transport: the tcp transport does best with 1 MiB messages,
 * RDMA devices (Soft-RoCE measured) with fewer, larger ones. */
#define XFER_DEFAULT_CHUNK_TCP (1u << 20)
#define XFER_DEFAULT_CHUNK_VERBS (4u << 20)
#define XFER_DEFAULT_WINDOW 8u
#define XFER_DEFAULT_TIMEOUT_S 30
#define XFER_DEFAULT_CONNECT_TIMEOUT_S 10
#define XFER_DEFAULT_MAX_CONNS 4
/* Before a sender has proved the key it gets this long, and this many such
 * connections are held at once (the oldest goes first): an unauthenticated
 * peer never holds one of the --max-conns served slots. */
#define XFER_DEFAULT_AUTH_TIMEOUT_S 5
#define XFER_DEFAULT_MAX_UNAUTH 16
#define XFER_SENDER_WINDOW_MAX (256ull << 20) /* what a sender stages at most */

enum xfer_cmd {
	CMD_SEND = 1,
	CMD_RECV,
	CMD_KEYGEN
};

struct xfer_opts {
	enum xfer_cmd cmd;
	/* transport */
	struct rcc_ctx_attr ctx_attr;
	enum rcc_cq_mode cq_mode;
	/* authentication */
	const char *key_file;
	char id[65];
	/* output */
	enum out_mode out;
	int progress; /* -1 auto (terminal), 0 never, 1 always */
	/* time limits */
	int timeout_ms;
	int connect_timeout_ms;
	/* send */
	char **files;
	int nfiles;
	char target[300]; /* "host:port" */
	const char *as_name;
	bool force;
	bool no_resume;
	uint64_t limit_rate; /* bytes per second, 0: none */
	/* recv */
	const char *dir;
	char listen[300];
	const char *ready_file;
	bool once;
	bool no_clobber;
	bool no_preallocate;
	int max_conns;
	int auth_timeout_ms; /* receiver: the sender must authenticate by then */
	int max_unauth;      /* receiver: connections held before authentication */
	uint32_t chunk_size; /* 0: by transport (XFER_DEFAULT_CHUNK_*) */
	uint32_t window;
	mode_t umask;
	/* keygen */
	const char *keygen_path;
};

/* Parse argv into o. Usage errors print and exit with status 2; --help and
 * --version print and exit 0. */
void cli_parse(int argc, char **argv, struct xfer_opts *o);

/* The manual page, as --help prints it (the common options from c). */
struct cli;
void cli_print_help(const struct cli *c);

#endif
