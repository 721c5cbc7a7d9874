/* SPDX-License-Identifier: BSD-3-Clause */
/* The receiving side: a listener and one thread per connection. */
#ifndef XFER_RECEIVER_H
#define XFER_RECEIVER_H

#include "session.h"
#include "store.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

struct receiver {
	const struct xfer_opts *o;
	struct xfer_key key;
	struct rcc_ctx *ctx;
	int dirfd;
	struct store_opts sopts;
	uint32_t chunk_size;
	pthread_mutex_t lock;
	int served; /* authenticated connections being served (<= --max-conns) */
};

/* One connection's standing, shared between its thread and the accept loop. */
struct conn_ctl {
	atomic_bool authenticated; /* set by the connection's thread */
	atomic_bool evict;         /* set by the accept loop: give up, not yet authenticated */
};

/* Serve one accepted request to the end. Authentication has
 * --auth-timeout and gives up as soon as ctl->evict is set; after it the
 * connection takes one of the --max-conns served slots, or is refused when
 * none is free. ctl may be NULL (--once). Returns its exit status. */
int serve_connection(struct receiver *r, struct rcc_conn_req *req,
		     const uint8_t token[XFER_TOKEN_LEN], struct conn_ctl *ctl);

#endif
