/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The send queue's bookkeeping: completing send WQEs from the head, in
 * order, once the peer has acknowledged or answered them, and going back to
 * an RNR-refused request to send it again after the peer's RNR timer.
 * Callers hold tx_lock.
 */
#include <errno.h>

#include "base/log.h"
#include "tcp.h"

static uint64_t rnr_timer_ns(uint8_t code)
{
	/* IB's RNR NAK timer field, in microseconds (code 0 means 655.36 ms). */
	static const uint32_t us[32] = {
		655360, 10,    20,    30,    40,    60,     80,     120,    160,    240,    320,
		480,    640,   960,   1280,  1920,  2560,   3840,   5120,   7680,   10240,  15360,
		20480,  30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
	};
	return (uint64_t)us[code & 31] * 1000ull;
}

static void complete_sq(struct tcp_ep *ep, const struct sq_wqe *w, uint32_t idx,
			enum rcc_wc_status st)
{
	struct rcc_wc wc = {
		.wr_id = w->wr_id,
		.ep = &ep->base,
		.status = st,
		.opcode = sq_wc_opcode(w->opcode),
		.byte_len = w->total,
	};
	rcci_cq_push(tcq(ep->base.send_cq), &wc, FREES_SQ, idx + 1);
}

/*
 * Complete send WQEs from the head, in order, as far as they are done.
 * Returns the status of a failed WQE reached at the head (left at the head
 * for rcci_ep_fail() to complete once the endpoint is out of service); 0 otherwise.
 */
static enum rcc_wc_status sq_advance_locked(struct tcp_ep *ep)
{
	while (ep->sq_head != ep->sq_tail) {
		struct sq_wqe *w = &ep->sq[ep->sq_head & ep->sq_mask];

		if (w->state == WQE_FAILED)
			return w->status;
		if (ep->sq_head == ep->sq_tx)
			break;
		bool done = is_rd_atomic(w->opcode) && !w->mapped ?
				    w->state == WQE_ANSWERED :
				    msn_lt(ep->sq_head, ep->peer_ack);
		if (!done)
			break;
		if (w->cma) {
			/* the peer copied before it acked or answered */
			rcci_shm_cma_release(&ep->shm.cma, w->cma - 1);
			w->cma = 0;
		}
		if (w->flags & RCC_SEND_SIGNALED)
			complete_sq(ep, w, ep->sq_head, RCC_WC_SUCCESS);
		ep->sq_head++;
	}
	return RCC_WC_SUCCESS;
}

void rcci_sq_advance(struct tcp_ep *ep)
{
	enum rcc_wc_status st = sq_advance_locked(ep);
	if (st != RCC_WC_SUCCESS) {
		/* rcci_ep_fail takes tx_lock itself; the caller holds rx_lock. */
		rcci_lock_release(&ep->tx_lock);
		rcci_ep_fail(ep, RCC_EP_ERROR, -EIO, st, RCC_WC_SUCCESS, rcc_wc_status_str(st));
		rcci_lock_acquire(&ep->tx_lock);
	}
}

void rcci_sq_go_back(struct tcp_ep *ep, uint32_t msn, uint8_t timer_code)
{
	struct sq_wqe *w = &ep->sq[msn & ep->sq_mask];

	/* Through sq_tail: the request at sq_tx may be half sent (NAKed at its
	 * first frame); it starts over from its first frame too. */
	for (uint32_t i = msn; i != ep->sq_tail; i++) {
		struct sq_wqe *x = &ep->sq[i & ep->sq_mask];
		if (is_rd_atomic(x->opcode) && !x->mapped && x->state == WQE_SENT)
			ep->rd_outstanding--;
		if (x->state != WQE_FAILED)
			x->state = WQE_QUEUED;
		x->tx_off = 0;
		x->rx_off = 0;
	}
	ep->sq_tx = msn;
	w->rnr_tries++;
	if ((uint32_t)ep->base.attr.rnr_retry != RCC_RETRY_FOREVER &&
	    w->rnr_tries > (uint32_t)ep->base.attr.rnr_retry) {
		log_debug("RNR retries exhausted for msn %u", msn);
		w->state = WQE_FAILED;
		w->status = RCC_WC_RNR_RETRY_EXC_ERR;
		return;
	}
	ep->rnr_wait = true;
	ep->rnr_until_ns = rcc_now_ns() + rnr_timer_ns(timer_code);
	rcci_progress_timer(ep, true);
}
