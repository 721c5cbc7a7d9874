/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared receive queues: defaults, checks and lifetime; the transport does the rest. */
#include <errno.h>
#include <stdlib.h>

#include "base/last_error.h"
#include "base/log.h"
#include "core/core.h"

int rcc_srq_create(struct rcc_ctx *ctx, const struct rcc_srq_attr *attr, struct rcc_srq **out)
{
	struct rcc_srq_attr a = attr ? *attr : (struct rcc_srq_attr){ 0 };
	struct rcc_srq *srq;
	int rc;

	rcci_error_clear();
	if (!ctx || !out)
		return rcci_fail(-EINVAL, "rcc_srq_create: ctx and srq must not be NULL");
	if (!a.max_wr)
		a.max_wr = RCC_DEFAULT_QUEUE_DEPTH;
	if (!a.max_sge)
		a.max_sge = 4;
	if (a.max_wr > RCCI_MAX_QUEUE_DEPTH || a.max_sge > RCCI_MAX_SGE)
		return rcci_fail(-EINVAL, "SRQ max_wr %u / max_sge %u: at most %u / %u", a.max_wr,
				 a.max_sge, RCCI_MAX_QUEUE_DEPTH, RCCI_MAX_SGE);
	srq = calloc(1, ctx->ops->srq_size);
	if (!srq)
		return -ENOMEM;
	srq->ctx = ctx;
	srq->max_wr = a.max_wr;
	srq->max_sge = a.max_sge;
	srq->datagram = a.for_datagrams;
	atomic_init(&srq->users, 0);
	srq->event.is_srq = true;
	rc = ctx->ops->srq_create(srq);
	if (rc) {
		free(srq);
		return rcci_fail(rc, "cannot create a shared receive queue of %u receives%s: %s",
				 a.max_wr, a.for_datagrams ? " for datagrams" : "",
				 rcc_strerror(rc));
	}
	atomic_fetch_add(&ctx->children, 1);
	*out = srq;
	return 0;
}

int rcc_srq_destroy(struct rcc_srq *srq)
{
	if (!srq)
		return -EINVAL;
	if (atomic_load(&srq->users) > 0) {
		log_warn("rcc_srq_destroy: SRQ still used by %d endpoints",
			 atomic_load(&srq->users));
		return -EBUSY;
	}
	struct rcc_ctx *ctx = srq->ctx;
	ctx->ops->srq_destroy(srq);
	rcci_events_forget_srq(srq); /* after the transport let go: nothing queues it again */
	atomic_fetch_sub(&ctx->children, 1);
	free(srq);
	return 0;
}

int rcc_srq_post_recv_list(struct rcc_srq *srq, const struct rcc_recv_wr *wr, int n, int *posted)
{
	if (posted)
		*posted = 0;
	if (!srq || !wr || n <= 0)
		return -EINVAL;
	int good = rcci_recv_list_check(wr, n, srq->max_sge);
	/* the good prefix is posted, as verbs' bad_wr would have it */
	int rc = good ? srq->ctx->ops->srq_post_recv(srq, wr, good, posted) : 0;
	return rc ? rc : (good < n ? -EINVAL : 0);
}

int rcc_srq_post_recv(struct rcc_srq *srq, const struct rcc_sge *sge, int num_sge, uint64_t wr_id)
{
	struct rcc_recv_wr wr = { .wr_id = wr_id, .sg_list = sge, .num_sge = num_sge };
	return rcc_srq_post_recv_list(srq, &wr, 1, NULL);
}

int rcc_srq_arm_limit(struct rcc_srq *srq, uint32_t limit)
{
	if (!srq || limit > srq->max_wr)
		return -EINVAL;
	/* the event must find a reader's queue switched on */
	int rc = rcci_events_enable(srq->ctx);
	if (rc)
		return rc;
	return srq->ctx->ops->srq_arm(srq, limit);
}
