/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completion queues: argument checks, then straight to the transport; the
 * waiting of rcc_cq_wait() is here, once for every transport, over the
 * transport's poll and descriptor.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>

#include "base/env.h"
#include "base/last_error.h"
#include "base/log.h"
#include "rcc/util.h"
#include "base/sock.h"
#include "core/core.h"

#define CQ_DEFAULT_DEPTH 1024u
#define CQ_MAX_DEPTH (1u << 22)
/* Empty polls of a spinning waiter between two sched_yield()s (rcc.h). */
#define SPIN_POLLS_PER_YIELD 64u

/* spin_us of a HYBRID CQ: the caller's, else RCC_CQ_SPIN_US, else the default. */
uint32_t rcci_cq_spin_us(uint32_t asked)
{
	unsigned long v;
	int rc;

	if (asked)
		return asked;
	rc = rcci_env_ulong("RCC_CQ_SPIN_US", 0, RCC_CQ_SPIN_US_MAX, &v);
	if (rc == -ENOENT)
		return RCC_CQ_SPIN_US_DEFAULT;
	if (rc) {
		log_warn("RCC_CQ_SPIN_US=%s is not 0..%d microseconds: using %d",
			 getenv("RCC_CQ_SPIN_US"), RCC_CQ_SPIN_US_MAX, RCC_CQ_SPIN_US_DEFAULT);
		return RCC_CQ_SPIN_US_DEFAULT;
	}
	return (uint32_t)v;
}

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
	if (attr->mode < RCC_CQ_POLL || attr->mode > RCC_CQ_HYBRID || attr->depth > CQ_MAX_DEPTH)
		return -EINVAL;
	/* spin_us is read in HYBRID mode only: a caller built before the field
	 * existed passes a shorter struct, and cannot ask for HYBRID. */
	if (attr->mode == RCC_CQ_HYBRID && attr->spin_us > RCC_CQ_SPIN_US_MAX)
		return -EINVAL;
	cq = calloc(1, ctx->ops->cq_size);
	if (!cq)
		return -ENOMEM;
	cq->ctx = ctx;
	cq->mode = attr->mode;
	cq->depth = attr->depth ? attr->depth : CQ_DEFAULT_DEPTH;
	if (attr->mode == RCC_CQ_HYBRID)
		cq->spin_ns = rcci_cq_spin_us(attr->spin_us) * 1000ull;
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

/*
 * Poll until a completion comes or the monotonic clock reaches until_ns
 * (checked after every empty poll, so a zero budget still polls once).
 * Every SPIN_POLLS_PER_YIELD empty polls the thread yields: with more
 * spinners than cores, the thread whose work would complete ours (a peer in
 * this process, tcp's progress thread) gets the core instead of waiting for
 * our time slice to end. Returns completions (> 0) or 0.
 */
static int spin(struct rcc_cq *cq, struct rcc_wc *wc, int max, uint64_t until_ns)
{
	const struct rcc_transport_ops *ops = cq->ctx->ops;
	int (*poll_fn)(struct rcc_cq *, struct rcc_wc *,
		       int) = ops->cq_spin_poll ? ops->cq_spin_poll : ops->cq_poll;

	for (unsigned empty = 1;; empty++) {
		int n = poll_fn(cq, wc, max);
		if (n)
			return n;
		if (rcc_now_ns() >= until_ns)
			return 0;
		if (empty % SPIN_POLLS_PER_YIELD == 0)
			sched_yield();
	}
}

int rcc_cq_wait(struct rcc_cq *cq, struct rcc_wc *wc, int max, int timeout_ms)
{
	if (!cq || !wc || max <= 0 || timeout_ms < -1)
		return -EINVAL;
	const struct rcc_transport_ops *ops = cq->ctx->ops;
	uint64_t deadline = rcci_deadline(timeout_ms);
	int n;

	if (cq->mode == RCC_CQ_POLL || cq->mode == RCC_CQ_HYBRID) {
		uint64_t now = rcc_now_ns();
		uint64_t until = timeout_ms < 0 ? UINT64_MAX :
						  now + (uint64_t)timeout_ms * 1000000u;
		if (cq->mode == RCC_CQ_HYBRID && now + cq->spin_ns < until)
			until = now + cq->spin_ns;
		n = spin(cq, wc, max, until);
		if (n)
			return n;
		if (cq->mode == RCC_CQ_POLL)
			return -ETIMEDOUT;
	}
	/* Sleep phase (WAIT, FD, and HYBRID once its spin is over): the
	 * transport's poll re-arms what must be armed before it reports empty.
	 * The first look may be the transport's lighter one (what is queued,
	 * not the sockets: the sleep reports those at once), except for a
	 * zero timeout, which polls once and never sleeps. */
	bool light = timeout_ms != 0 && ops->cq_poll_before_sleep;
	for (bool first = true;; first = false) {
		n = first && light ? ops->cq_poll_before_sleep(cq, wc, max) :
				     ops->cq_poll(cq, wc, max);
		if (n)
			return n;
		if (rcci_ms_left(deadline) == 0)
			return -ETIMEDOUT;
		int rc = ops->cq_sleep ? ops->cq_sleep(cq, deadline) :
					 rcci_wait_fd(ops->cq_fd(cq), POLLIN, deadline);
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

int rcc_cq_arm(struct rcc_cq *cq)
{
	if (!cq || cq->mode != RCC_CQ_FD)
		return -EINVAL;
	return cq->ctx->ops->cq_arm ? cq->ctx->ops->cq_arm(cq) : 0;
}

enum rcc_cq_mode rcc_cq_get_mode(const struct rcc_cq *cq) { return cq ? cq->mode : RCC_CQ_POLL; }
