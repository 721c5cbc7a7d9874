/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The requester's receive side: what the peer says about our own requests.
 * The cumulative ack every frame carries, READ and atomic responses (their
 * data goes into the request's local buffer) and NAKs (an RNR rewinds the
 * send queue for a retry, others fail the request) move the send queue on.
 */
#include <errno.h>

#include "tcp.h"

/* A frame acknowledges more of our requests than the last one did. */
int rcci_requester_ack_moved(struct tcp_ep *ep, uint32_t ack)
{
	int rc = 0;

	rcci_lock_acquire(&ep->tx_lock);
	if (msn_lt(ack, ep->peer_ack) || msn_lt(ep->sq_tx, ack)) {
		rc = -EPROTO;
	} else {
		ep->peer_ack = ack;
		rcci_sq_advance(ep);
	}
	rcci_lock_release(&ep->tx_lock);
	return rc;
}

static enum rcc_wc_status nak_status(uint16_t code)
{
	switch (code) {
	case WIRE_NAK_REM_ACCESS:
		return RCC_WC_REM_ACCESS_ERR;
	case WIRE_NAK_REM_INV_REQ:
		return RCC_WC_REM_INV_REQ_ERR;
	default:
		return RCC_WC_REM_OP_ERR;
	}
}

/* Mark our request failed (it completes in order) and drop its read slot. */
static void fail_wqe(struct tcp_ep *ep, struct sq_wqe *w, enum rcc_wc_status st)
{
	/* A single-copy request whose buffer we deregistered: the target found
	 * its slot dead and refused. What failed is our buffer, as on the ring. */
	if (w->cma && (atomic_load(&ep->shm.cma.killed) & (1u << (w->cma - 1))))
		st = RCC_WC_LOC_PROT_ERR;
	if (is_rd_atomic(w->opcode) && !w->mapped && w->state == WQE_SENT)
		ep->rd_outstanding--;
	w->state = WQE_FAILED;
	w->status = st;
}

int rcci_requester_frame_begin(struct tcp_ep *ep, const struct wire_hdr *h)
{
	int rc = 0;

	rcci_lock_acquire(&ep->tx_lock);
	struct sq_wqe *w = sq_at(ep, h->msn);
	/* The target NAKs a long message at its first frame, while we may still
	 * be sending the rest of it: that one is not behind sq_tx yet. */
	bool nak_in_flight = h->type == WIRE_NAK && h->msn == ep->sq_tx &&
			     ep->sq_tx != ep->sq_tail && w->tx_off > 0;
	if (msn_lt(h->msn, ep->sq_head) || (!msn_lt(h->msn, ep->sq_tx) && !nak_in_flight)) {
		rc = -EPROTO;
		goto out;
	}
	switch (h->type) {
	case WIRE_READ_RESP:
		if (w->opcode != RCC_WR_READ || w->state != WQE_SENT || w->mapped ||
		    !!(h->flags & WIRE_F_FIRST) != (w->rx_off == 0)) {
			rc = -EPROTO;
			break;
		}
		/* single copy: both ends agreed on the path when it was sent */
		if (!!(h->flags & WIRE_F_CMA) != !!w->cma) {
			rc = -EPROTO;
			break;
		}
		if (h->status) {
			fail_wqe(ep, w, nak_status(h->status));
			rcci_sq_advance(ep);
			break;
		}
		if (w->cma) {
			/* the target wrote the data into place before it answered */
			ep->rx_dest = DEST_READ;
			ep->rx_sq_idx = h->msn;
			ep->rx_off = w->total;
			break;
		}
		if (w->rx_off + h->len > w->total ||
		    !!(h->flags & WIRE_F_LAST) != (w->rx_off + h->len == w->total)) {
			rc = -EPROTO;
			break;
		}
		ep->rx_dest = DEST_READ;
		ep->rx_sq_idx = h->msn;
		ep->rx_off = w->rx_off;
		break;
	case WIRE_ATOMIC_RESP:
		if ((w->opcode != RCC_WR_CAS && w->opcode != RCC_WR_FADD) || w->state != WQE_SENT) {
			rc = -EPROTO;
			break;
		}
		ep->rx_dest = DEST_SMALL;
		ep->rx_sq_idx = h->msn;
		break;
	default: /* WIRE_NAK */
		if (h->status == WIRE_NAK_RNR)
			rcci_sq_go_back(ep, h->msn, (uint8_t)h->imm);
		else
			fail_wqe(ep, w, nak_status(h->status));
		rcci_sq_advance(ep);
		break;
	}
out:
	rcci_lock_release(&ep->tx_lock);
	return rc;
}

/* The end of a READ or atomic response frame: the data is in (an atomic's
 * result is written to the local buffer now); the request is answered at its
 * last frame, or failed if its local buffer went bad. */
void rcci_requester_frame_end(struct tcp_ep *ep, const struct wire_hdr *h)
{
	if (ep->rx_dest == DEST_DISCARD && ep->rx_local_err == RCC_WC_SUCCESS)
		return; /* an error response, already handled */
	rcci_lock_acquire(&ep->tx_lock);
	struct sq_wqe *w = sq_at(ep, ep->rx_sq_idx);
	if (w->state != WQE_SENT) {
		rcci_lock_release(&ep->tx_lock);
		return;
	}
	if (h->type == WIRE_ATOMIC_RESP && ep->rx_local_err == RCC_WC_SUCCESS &&
	    rcci_rx_sge_io(ep, sq_sges(ep, ep->rx_sq_idx), w->num_sge, 0, 8, ep->rx_small) < 0)
		ep->rx_local_err = RCC_WC_LOC_PROT_ERR;
	if (ep->rx_local_err != RCC_WC_SUCCESS) {
		fail_wqe(ep, w, ep->rx_local_err);
	} else if (h->type == WIRE_ATOMIC_RESP || (h->flags & WIRE_F_LAST)) {
		w->rx_off = ep->rx_off;
		w->state = WQE_ANSWERED;
		ep->rd_outstanding--;
	} else {
		w->rx_off = ep->rx_off;
	}
	rcci_sq_advance(ep);
	rcci_lock_release(&ep->tx_lock);
}
