/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Posting: work requests are copied into the queues; local keys are checked
 * now, but a bad one is reported as an error completion, in order, as a
 * device would. A send is put on the wire before the call returns whenever
 * the socket has room.
 */
#include <errno.h>
#include <string.h>

#include "base/log.h"
#include "tcp.h"

bool mr_covers_locked(struct tcp_ctx *ctx, uint32_t key, uint64_t addr, uint64_t len,
		      unsigned access)
{
	const struct tcp_mr *mr = keys_find(&ctx->keys, key);
	if (!mr || (mr->base.access & access) != access)
		return false;
	uint64_t start = (uint64_t)(uintptr_t)mr->base.addr;
	return addr >= start && addr + len >= addr && addr + len <= start + mr->base.length;
}

bool mr_covers(struct tcp_ctx *ctx, uint32_t key, uint64_t addr, uint64_t len, unsigned access)
{
	pthread_rwlock_rdlock(&ctx->mr_lock);
	bool ok = mr_covers_locked(ctx, key, addr, len, access);
	pthread_rwlock_unlock(&ctx->mr_lock);
	return ok;
}

static bool sges_ok(struct tcp_ctx *ctx, const struct rcc_sge *sg, int n, unsigned access)
{
	bool ok = true;

	pthread_rwlock_rdlock(&ctx->mr_lock);
	for (int i = 0; i < n && ok; i++)
		if (sg[i].length)
			ok = mr_covers_locked(ctx, sg[i].lkey, sg[i].addr, sg[i].length, access);
	pthread_rwlock_unlock(&ctx->mr_lock);
	return ok;
}

uint32_t sge_sum(const struct rcc_sge *sg, int n)
{
	uint32_t sum = 0;
	for (int i = 0; i < n; i++)
		sum += sg[i].length;
	return sum;
}

int tcp_post_send(struct rcc_ep *base, const struct rcc_send_wr *wr, int n, int *posted)
{
	struct tcp_ep *ep = tep(base);
	const uint32_t max_sge = base->attr.max_send_sge;
	bool kick = false;
	int rc = 0, i;

	pthread_mutex_lock(&ep->tx_lock);
	if (atomic_load(&base->state) != RCC_EP_CONNECTED) {
		rc = -ENOTCONN;
		i = 0;
		goto out;
	}
	for (i = 0; i < n; i++) {
		const struct rcc_send_wr *r = &wr[i];
		uint32_t idx = ep->sq_tail;
		struct sq_wqe *w = &ep->sq[idx & ep->sq_mask];

		/* Room is what polled completions released, not what the peer
		 * acknowledged: see sq_free. */
		uint32_t used = idx - atomic_load_explicit(&ep->sq_free, memory_order_acquire);
		if (used >= base->attr.sq_depth) {
			rc = -ENOMEM;
			break;
		}
		memset(w, 0, sizeof(*w));
		w->wr_id = r->wr_id;
		w->opcode = (uint8_t)r->opcode;
		w->flags = (uint8_t)(r->flags | (base->attr.sig_all ? RCC_SEND_SIGNALED : 0));
		w->imm = r->imm_data;
		w->raddr = r->remote_addr;
		w->rkey = r->rkey;
		w->compare_add = r->compare_add;
		w->swap = r->swap;
		w->num_sge = (uint8_t)r->num_sge;
		w->total = sge_sum(r->sg_list, r->num_sge);
		if (r->flags & RCC_SEND_INLINE) {
			uint8_t *dst = ep->sq_inline +
				       (size_t)(idx & ep->sq_mask) * base->max_inline;
			for (int k = 0; k < r->num_sge; k++) {
				memcpy(dst, (const void *)(uintptr_t)r->sg_list[k].addr,
				       r->sg_list[k].length);
				dst += r->sg_list[k].length;
			}
		} else {
			/* READ and atomics write into the local buffer; sends only read it. */
			unsigned need = (r->opcode == RCC_WR_READ || r->opcode == RCC_WR_CAS ||
					 r->opcode == RCC_WR_FADD) ?
						RCC_ACCESS_LOCAL_WRITE :
						0;
			if (r->num_sge)
				memcpy(&ep->sq_sge[(size_t)(idx & ep->sq_mask) * max_sge],
				       r->sg_list, (size_t)r->num_sge * sizeof(*r->sg_list));
			if (!sges_ok(ep->ctx, r->sg_list, r->num_sge, need)) {
				log_debug("%s: send wr_id %llu names unregistered memory",
					  base->peer, (unsigned long long)r->wr_id);
				w->state = WQE_FAILED;
				w->status = RCC_WC_LOC_PROT_ERR;
				kick = true;
			}
		}
		ep->sq_tail = idx + 1;
	}
	/* With earlier requests still unacknowledged and the application polling
	 * this endpoint, its next poll sends these together with whatever follows:
	 * one sendmsg for many small posts, at no cost in latency. Otherwise now. */
	if (i > 0 && ep->sq_tx != ep->sq_head && !ep->part_n && atomic_load(&ep->parked))
		atomic_store(&ep->tx_deferred, true);
	else
		tx_flush(ep, false);
	if (ep->tx_err)
		kick = true;
out:
	pthread_mutex_unlock(&ep->tx_lock);
	if (posted)
		*posted = i;
	/* Failures are completed by the progress engine, which owns the receive side. */
	if (kick)
		progress_kick(ep);
	return rc;
}

void rq_wqe_fill(struct tcp_ctx *ctx, struct rq_wqe *q, struct rcc_sge *sge,
		 const struct rcc_recv_wr *wr)
{
	q->wr_id = wr->wr_id;
	q->num_sge = (uint8_t)wr->num_sge;
	q->total = sge_sum(wr->sg_list, wr->num_sge);
	q->status = sges_ok(ctx, wr->sg_list, wr->num_sge, RCC_ACCESS_LOCAL_WRITE) ?
			    RCC_WC_SUCCESS :
			    RCC_WC_LOC_PROT_ERR;
	if (wr->num_sge)
		memcpy(sge, wr->sg_list, (size_t)wr->num_sge * sizeof(*wr->sg_list));
}

int tcp_post_recv(struct rcc_ep *base, const struct rcc_recv_wr *wr, int n, int *posted)
{
	struct tcp_ep *ep = tep(base);
	const uint32_t max_sge = base->attr.max_recv_sge;
	int rc = 0, i;

	pthread_mutex_lock(&ep->rq_lock);
	if (atomic_load(&base->state) != RCC_EP_CONNECTED) {
		rc = -ENOTCONN;
		i = 0;
		goto out;
	}
	for (i = 0; i < n; i++) {
		uint32_t idx = ep->rq_tail;
		struct rq_wqe *q = &ep->rq[idx & ep->rq_mask];

		uint32_t used = idx - atomic_load_explicit(&ep->rq_free, memory_order_acquire);
		if (used >= base->attr.rq_depth) {
			rc = -ENOMEM;
			break;
		}
		rq_wqe_fill(ep->ctx, q, &ep->rq_sge[(size_t)(idx & ep->rq_mask) * max_sge], &wr[i]);
		ep->rq_tail = idx + 1;
	}
out:
	pthread_mutex_unlock(&ep->rq_lock);
	if (posted)
		*posted = i;
	return rc;
}
