/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared receive queues of the tcp transport (struct tcp_srq in tcp.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "tcp.h"

int rcci_tcp_srq_create(struct rcc_srq *base)
{
	struct tcp_srq *srq = tsrq(base);
	uint32_t cap = tcp_pow2_at_least(base->max_wr, 1);

	srq->wqe = calloc(cap, sizeof(*srq->wqe));
	srq->sge = calloc((size_t)cap * base->max_sge, sizeof(*srq->sge));
	if (!srq->wqe || !srq->sge) {
		free(srq->wqe);
		free(srq->sge);
		return -ENOMEM;
	}
	srq->mask = cap - 1;
	rcci_lock_init(&srq->lock);
	atomic_init(&srq->held, 0);
	return 0;
}

void rcci_tcp_srq_destroy(struct rcc_srq *base)
{
	struct tcp_srq *srq = tsrq(base);

	free(srq->wqe);
	free(srq->sge);
}

int rcci_tcp_srq_post_recv(struct rcc_srq *base, const struct rcc_recv_wr *wr, int n, int *posted)
{
	struct tcp_srq *srq = tsrq(base);
	struct tcp_ctx *ctx = tctx(base->ctx);
	int rc = 0, i;

	rcci_lock_acquire(&srq->lock);
	for (i = 0; i < n; i++) {
		/* held >= posted-and-not-taken, so the ring (>= max_wr) has room */
		if (atomic_load_explicit(&srq->held, memory_order_acquire) >= base->max_wr) {
			rc = -ENOMEM;
			break;
		}
		uint32_t slot = srq->tail & srq->mask;
		rcci_rq_wqe_fill(ctx, &srq->wqe[slot], &srq->sge[(size_t)slot * base->max_sge],
				 &wr[i]);
		srq->tail++;
		atomic_fetch_add_explicit(&srq->held, 1, memory_order_relaxed);
	}
	rcci_lock_release(&srq->lock);
	if (posted)
		*posted = i;
	return rc;
}

int rcci_tcp_srq_arm(struct rcc_srq *base, uint32_t limit)
{
	struct tcp_srq *srq = tsrq(base);

	rcci_lock_acquire(&srq->lock);
	srq->limit = limit;
	rcci_lock_release(&srq->lock);
	return 0;
}

bool rcci_srq_take(struct tcp_ep *ep)
{
	struct rcc_srq *base = ep->base.attr.srq;
	struct tcp_srq *srq = tsrq(base);
	bool fire = false;
	uint32_t left;

	rcci_lock_acquire(&srq->lock);
	if (srq->head == srq->tail) {
		rcci_lock_release(&srq->lock);
		return false;
	}
	uint32_t from = srq->head & srq->mask, to = ep->rq_tail & ep->rq_mask;
	ep->rq[to] = srq->wqe[from];
	memcpy(&ep->rq_sge[(size_t)to * ep->base.attr.max_recv_sge],
	       &srq->sge[(size_t)from * base->max_sge],
	       (size_t)srq->wqe[from].num_sge * sizeof(*srq->sge));
	ep->rq_tail++;
	srq->head++;
	/* verbs' srq_limit: one event when what is left falls below it */
	left = srq->tail - srq->head;
	if (srq->limit && left < srq->limit) {
		srq->limit = 0;
		fire = true;
	}
	rcci_lock_release(&srq->lock);
	if (fire) {
		log_debug("tcp: SRQ limit reached (%u receives left)", left);
		rcci_srq_limit_reached(base);
	}
	return true;
}

void rcci_srq_slot_free(struct rcc_srq *base)
{
	atomic_fetch_sub_explicit(&tsrq(base)->held, 1, memory_order_release);
}
