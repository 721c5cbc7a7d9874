/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completion queues: argument checks, then straight to the transport; the
 * waiting of rcc_cq_wait() is here, once for every transport, over the
 * transport's poll and descriptor.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>

#include "last_error.h"
#include "log.h"
#include "sock.h"
#include "transport/transport.h"

#define CQ_DEFAULT_DEPTH 1024u
#define CQ_MAX_DEPTH (1u << 22)

int rcc_cq_create(struct rcc_ctx *ctx, const struct rcc_cq_attr *attr, struct rcc_cq **out)
{
	static const struct rcc_cq_attr defaults;
	struct rcc_cq *cq;
	int rc;

	rcci_error_clear();
	if (!ctx || !out)
		return -EINVAL;
	if (!attr)
		attr = &defaults;
	if (attr->mode < RCC_CQ_POLL || attr->mode > RCC_CQ_FD || attr->depth > CQ_MAX_DEPTH)
		return -EINVAL;
	cq = calloc(1, ctx->ops->cq_size);
	if (!cq)
		return -ENOMEM;
	cq->ctx = ctx;
	cq->mode = attr->mode;
	cq->depth = attr->depth ? attr->depth : CQ_DEFAULT_DEPTH;
	atomic_init(&cq->users, 0);
	rc = ctx->ops->cq_create(cq);
	if (rc) {
		free(cq);
		return rc;
	}
	atomic_fetch_add(&ctx->children, 1);
	*out = cq;
	return 0;
}

int rcc_cq_destroy(struct rcc_cq *cq)
{
	if (!cq)
		return -EINVAL;
	if (atomic_load(&cq->users) > 0) {
		log_warn("rcc_cq_destroy: CQ still used by %d endpoints", atomic_load(&cq->users));
		return -EBUSY;
	}
	struct rcc_ctx *ctx = cq->ctx;
	ctx->ops->cq_destroy(cq);
	atomic_fetch_sub(&ctx->children, 1);
	free(cq);
	return 0;
}

int rcc_cq_poll(struct rcc_cq *cq, struct rcc_wc *wc, int max)
{
	if (__builtin_expect(!cq || !wc || max <= 0, 0))
		return -EINVAL;
	return cq->ctx->ops->cq_poll(cq, wc, max);
}

int rcc_cq_wait(struct rcc_cq *cq, struct rcc_wc *wc, int max, int timeout_ms)
{
	if (!cq || !wc || max <= 0 || timeout_ms < -1)
		return -EINVAL;
	const struct rcc_transport_ops *ops = cq->ctx->ops;
	uint64_t deadline = rcci_deadline(timeout_ms);

	for (;;) {
		int n = ops->cq_poll(cq, wc, max);
		if (n)
			return n;
		if (rcci_ms_left(deadline) == 0)
			return -ETIMEDOUT;
		if (cq->mode == RCC_CQ_POLL)
			continue; /* spin */
		int rc = rcci_wait_fd(ops->cq_fd(cq), POLLIN, deadline);
		if (rc && rc != -ETIMEDOUT)
			return rc; /* a timeout gets one more poll above */
	}
}

int rcc_cq_fd(struct rcc_cq *cq)
{
	if (!cq || cq->mode != RCC_CQ_FD)
		return -EINVAL;
	return cq->ctx->ops->cq_fd(cq);
}

enum rcc_cq_mode rcc_cq_get_mode(const struct rcc_cq *cq) { return cq ? cq->mode : RCC_CQ_POLL; }
