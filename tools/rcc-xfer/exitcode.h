/* SPDX-License-Identifier: BSD-3-Clause */
/* Exit statuses of rcc-xfer (documented in --help and docs/rcc-xfer.md). */
#ifndef XFER_EXITCODE_H
#define XFER_EXITCODE_H

#include <stdint.h>

enum xfer_exit {
	XEXIT_OK = 0,
	XEXIT_LOCAL = 1,     /* local error */
	XEXIT_USAGE = 2,     /* usage error or no usable key */
	XEXIT_AUTH = 3,      /* authentication failed */
	XEXIT_REFUSED = 4,   /* the receiver refused a file */
	XEXIT_INTEGRITY = 5, /* hash or receipt mismatch, source changed */
	XEXIT_CONN = 6,      /* connection failed, lost or silent */
	XEXIT_PROTO = 7,     /* the peer broke the protocol */
	XEXIT_INTERRUPTED = 130,
};

/* The exit status for a failure the peer reported with this code. */
int exit_for_peer_error(uint32_t code);
/* The exit status for a channel failure (-ECONNRESET, -EBADMSG, ...). */
int exit_for_chan_error(int rc);
/* Short stable token for JSON ("exists", "no-space", ...). */
const char *xfer_err_token(uint32_t code);

#endif
