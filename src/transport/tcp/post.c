/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Posting: work requests are checked and copied into the queues; local keys
 * are checked now, but a bad one is reported as an error completion, in
 * order, as a device would. A send is put on the wire before the call returns
 * whenever the socket has room.
 */
#include <errno.h>
#include <string.h>

#include "base/log.h"
#include "tcp.h"

static bool sges_ok(struct tcp_ctx *ctx, const struct rcc_sge *sg, int n, unsigned access)
{
	bool ok = true;

	rcci_rwlock_read(&ctx->mr_lock);
	for (int i = 0; i < n && ok; i++)
		if (sg[i].length)
			ok = rcci_mr_covers_locked(ctx, sg[i].lkey, sg[i].addr, sg[i].length,
						   access);
	rcci_rwlock_read_end(&ctx->mr_lock);
	return ok;
}

uint32_t rcci_sge_sum(const struct rcc_sge *sg, int n)
{
	uint32_t sum = 0;
	for (int i = 0; i < n; i++)
		sum += sg[i].length;
	return sum;
}

/* Whether send slot idx is still held. Room is what polled completions
 * released, not what the peer acknowledged: see sq_free. */
static bool sq_full(struct tcp_ep *ep, uint32_t idx)
{
	uint32_t used = idx - atomic_load_explicit(&ep->sq_free, memory_order_acquire);
	return used >= ep->base.attr.sq_depth;
}

/* The fields of send request r, in its slot w. */
static void sq_wqe_fill(struct tcp_ep *ep, struct sq_wqe *w, const struct rcc_send_wr *r)
{
	memset(w, 0, sizeof(*w));
	w->wr_id = r->wr_id;
	w->opcode = (uint8_t)r->opcode;
	w->flags = (uint8_t)(r->flags | (ep->base.attr.sig_all ? RCC_SEND_SIGNALED : 0));
	w->imm = r->imm_data;
	w->raddr = r->remote_addr;
	w->rkey = r->rkey;
	w->compare_add = r->compare_add;
	w->swap = r->swap;
	w->num_sge = (uint8_t)r->num_sge;
	w->total = rcci_sge_sum(r->sg_list, r->num_sge);
}

/* An inline request's payload, copied into slot idx now. */
static void copy_inline(struct tcp_ep *ep, uint32_t idx, const struct rcc_send_wr *r)
{
	uint8_t *dst = ep->sq_inline + (size_t)(idx & ep->sq_mask) * ep->base.max_inline;
	for (int k = 0; k < r->num_sge; k++) {
		memcpy(dst, (const void *)(uintptr_t)r->sg_list[k].addr, r->sg_list[k].length);
		dst += r->sg_list[k].length;
	}
}

/*
 * Whether request w's keys may be left to the transmit side: a SEND or
 * WRITE from the scatter list that goes out in one frame. Building that
 * frame checks the whole list under mr_lock (slice_live in tx.c, the same
 * access: reading), and fails the request in order exactly as a check here
 * would; so when the flush that follows the post puts it on the wire, a
 * check here would only take mr_lock once more. One the flush leaves queued
 * is checked right after it (check_unsent), still before the post returns.
 * A longer message is checked here: its later frames must not be found bad
 * after its first went out.
 */
static bool keys_checked_by_tx(struct tcp_ep *ep, const struct sq_wqe *w)
{
	return !(w->flags & RCC_SEND_INLINE) && !is_rd_atomic(w->opcode) &&
	       w->total <= rcci_tx_frame_max(ep);
}

/* The keys of request w in slot idx (its list already copied there). A
 * bad one fails the request (it completes in order, as a device would
 * report it): false then. */
static bool check_sges(struct tcp_ep *ep, uint32_t idx, struct sq_wqe *w)
{
	/* READ and atomics write into the local buffer; sends only read it. */
	unsigned need = is_rd_atomic(w->opcode) ? RCC_ACCESS_LOCAL_WRITE : 0;

	if (!sges_ok(ep->ctx, sq_sges(ep, idx), w->num_sge, need)) {
		log_debug("%s: send wr_id %llu names unregistered memory", ep->base.peer,
			  (unsigned long long)w->wr_id);
		w->state = WQE_FAILED;
		w->status = RCC_WC_LOC_PROT_ERR;
		return false;
	}
	return true;
}

/* The scatter list of request r, copied into slot idx; its keys checked
 * now unless the transmit side checks them (keys_checked_by_tx). */
static bool take_sges(struct tcp_ep *ep, uint32_t idx, struct sq_wqe *w,
		      const struct rcc_send_wr *r)
{
	if (r->num_sge)
		memcpy(&ep->sq_sge[(size_t)(idx & ep->sq_mask) * ep->base.attr.max_send_sge],
		       r->sg_list, (size_t)r->num_sge * sizeof(*r->sg_list));
	return keys_checked_by_tx(ep, w) || check_sges(ep, idx, w);
}

/* After the flush: the requests of this post it left queued (from first on,
 * none of their frames sent) whose keys were left to it are checked now, as
 * at post time. Returns whether one failed. */
static bool check_unsent(struct tcp_ep *ep, uint32_t first)
{
	bool failed = false;

	for (uint32_t i = first; i != ep->sq_tail; i++) {
		struct sq_wqe *w = &ep->sq[i & ep->sq_mask];
		if ((int32_t)(i - ep->sq_tx) < 0 || w->state == WQE_FAILED || w->mapped ||
		    !keys_checked_by_tx(ep, w))
			continue;
		if (!check_sges(ep, i, w))
			failed = true;
	}
	return failed;
}

/* After posted requests were queued: with earlier requests still
 * unacknowledged and the application polling this endpoint, its next poll
 * sends these together with whatever follows: one sendmsg for many small
 * posts, at no cost in latency. Otherwise now. */
static void send_now_or_at_next_poll(struct tcp_ep *ep, int posted)
{
	if (posted > 0 && ep->sq_tx != ep->sq_head && !ep->part_n && atomic_load(&ep->parked)) {
		atomic_store(&ep->tx_deferred, true);
		return;
	}
	rcci_tx_flush(ep, false);
	/* The ack a poll deferred for this post rode on it: the endpoint no
	 * longer needs the progress thread's timer (which would otherwise stay
	 * counted until the next poll of it, and a sleeper would wake the
	 * thread for nothing). An RNR backoff keeps it. */
	if (atomic_load_explicit(&ep->thread_timer, memory_order_relaxed) && !ep->rnr_wait &&
	    atomic_load(&ep->rx_expected) == ep->ack_sent)
		rcci_progress_timer(ep, false);
	if (ep->ack_deferrer && atomic_load(&ep->rx_expected) == ep->ack_sent)
		rcci_progress_ack_sent(ep);
}

int rcci_tcp_post_send(struct rcc_ep *base, const struct rcc_send_wr *wr, int n, int *posted)
{
	struct tcp_ep *ep = tep(base);
	bool kick = false;
	int rc = 0, i;

	rcci_lock_acquire(&ep->tx_lock);
	if (atomic_load(&base->state) != RCC_EP_CONNECTED) {
		rc = -ENOTCONN;
		i = 0;
		goto out;
	}
	for (i = 0; i < n; i++) {
		const struct rcc_send_wr *r = &wr[i];
		uint32_t idx = ep->sq_tail;
		struct sq_wqe *w = &ep->sq[idx & ep->sq_mask];

		if (sq_full(ep, idx)) {
			rc = -ENOMEM;
			break;
		}
		sq_wqe_fill(ep, w, r);
		if (r->flags & RCC_SEND_INLINE)
			copy_inline(ep, idx, r);
		else if (!take_sges(ep, idx, w, r))
			kick = true;
		else
			rcci_map_post(ep, idx, w);
		if (!w->mapped)
			ep->map_ring_last = idx + 1;
		ep->sq_tail = idx + 1;
	}
	uint32_t first = ep->sq_tail - (uint32_t)i;
	send_now_or_at_next_poll(ep, i);
	if (check_unsent(ep, first))
		kick = true;
	/* the request it stopped at found its memory deregistered */
	if (ep->tx_err ||
	    (ep->sq_tx != ep->sq_tail && ep->sq[ep->sq_tx & ep->sq_mask].state == WQE_FAILED))
		kick = true;
out:
	rcci_lock_release(&ep->tx_lock);
	if (posted)
		*posted = i;
	/* Failures are completed by the progress engine, which owns the receive side. */
	if (kick)
		rcci_progress_kick(ep);
	return rc;
}

void rcci_rq_wqe_fill(struct tcp_ctx *ctx, struct rq_wqe *q, struct rcc_sge *sge,
		      const struct rcc_recv_wr *wr)
{
	q->wr_id = wr->wr_id;
	q->num_sge = (uint8_t)wr->num_sge;
	q->total = rcci_sge_sum(wr->sg_list, wr->num_sge);
	q->status = sges_ok(ctx, wr->sg_list, wr->num_sge, RCC_ACCESS_LOCAL_WRITE) ?
			    RCC_WC_SUCCESS :
			    RCC_WC_LOC_PROT_ERR;
	if (wr->num_sge)
		memcpy(sge, wr->sg_list, (size_t)wr->num_sge * sizeof(*wr->sg_list));
}

int rcci_tcp_post_recv(struct rcc_ep *base, const struct rcc_recv_wr *wr, int n, int *posted)
{
	struct tcp_ep *ep = tep(base);
	const uint32_t max_sge = base->attr.max_recv_sge;
	int rc = 0, i;

	rcci_lock_acquire(&ep->rq_lock);
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
		rcci_rq_wqe_fill(ep->ctx, q, &ep->rq_sge[(size_t)(idx & ep->rq_mask) * max_sge],
				 &wr[i]);
		ep->rq_tail = idx + 1;
	}
out:
	rcci_lock_release(&ep->rq_lock);
	if (posted)
		*posted = i;
	return rc;
}
