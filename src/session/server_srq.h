/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The session server's shared receive queue (rcc_server_attr.srq_depth): one
 * SRQ and the registered buffers the server keeps posted to it for all its
 * connections.
 */
#ifndef RCC_SESSION_SERVER_SRQ_H
#define RCC_SESSION_SERVER_SRQ_H

#include <stdbool.h>

#include "rcc/session.h"

struct server_srq {
	struct rcc_srq *srq;
	struct rcc_pool *bufs; /* depth pieces of buf_size bytes, one per receive */
	uint32_t buf_size;
};

/* Create the SRQ and post depth receives of buf_size bytes. 0 or a negative
 * errno (nothing is left behind then). */
int rcci_server_srq_open(struct rcc_ctx *ctx, uint32_t depth, uint32_t buf_size,
			 struct server_srq *s);

/* The buffer a completion's receive used, or NULL when the completion is not
 * one of this SRQ's receives. A receive's wr_id is its buffer's address: no
 * work request of the application can name memory the server owns. */
void *rcci_server_srq_buffer(const struct server_srq *s, const struct rcc_wc *wc);

/* Post buf (from rcci_server_srq_buffer) to the SRQ again. */
int rcci_server_srq_repost(struct server_srq *s, void *buf);

/* Destroy the SRQ (every endpoint using it must be closed) and the buffers. */
void rcci_server_srq_close(struct server_srq *s);

#endif
