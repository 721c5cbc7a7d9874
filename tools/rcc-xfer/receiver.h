/* SPDX-License-Identifier: BSD-3-Clause */
/* The receiving side: a listener and one thread per connection. */
#ifndef XFER_RECEIVER_H
#define XFER_RECEIVER_H

#include "session.h"
#include "store.h"

struct receiver {
	const struct xfer_opts *o;
	struct xfer_key key;
	struct rcc_ctx *ctx;
	int dirfd;
	struct store_opts sopts;
	uint32_t chunk_size;
};

/* Serve one accepted request to the end. Returns its exit status. */
int serve_connection(struct receiver *r, struct rcc_conn_req *req,
		     const uint8_t token[XFER_TOKEN_LEN]);

#endif
