/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The responder: carries out the peer's requests. Each is checked (msn order,
 * keys, access, bounds, a posted receive) and executed in msn order: a SEND
 * fills the oldest receive, a WRITE its target region, a READ or atomic is
 * answered through the response queue. A request that cannot be served is
 * refused with a NAK (RNR: retried by the peer; others end the connection).
 */
#include <errno.h>
#include <string.h>

#include "base/log.h"
#include "rcc/util.h"
#include "tcp.h"

/* ------------------------------------------------------------ completions */

static void complete_recv(struct tcp_ep *ep, enum rcc_wc_status st, enum rcc_wc_opcode op,
			  uint32_t len, const struct wire_hdr *h)
{
	struct rcc_wc wc = {
		.ep = &ep->base,
		.status = st,
		.opcode = op,
		.byte_len = len,
	};

	/* No rq_lock: rq_head is the receive side's (we hold rx_lock), and
	 * the slot, seen posted under rq_lock when the message began, is not
	 * reused before the completion pushed below is polled. */
	wc.wr_id = ep->rq[ep->rq_head & ep->rq_mask].wr_id;
	uint32_t next = ++ep->rq_head;
	if (h && (h->flags & WIRE_F_IMM)) {
		wc.imm_data = h->imm;
		wc.wc_flags = RCC_WC_WITH_IMM;
	}
	rcci_cq_push(tcq(ep->base.recv_cq), &wc, FREES_RQ, next);
}

/* A request of the peer is done: it is what our ack reports. */
static void request_done(struct tcp_ep *ep, uint32_t bytes)
{
	uint32_t next = atomic_load_explicit(&ep->rx_expected, memory_order_relaxed) + 1;
	atomic_store_explicit(&ep->rx_expected, next, memory_order_release);
	atomic_fetch_add_explicit(&ep->unacked_bytes, bytes, memory_order_relaxed);
	ep->rx_in_msg = false;
}

static void queue_nak(struct tcp_ep *ep, uint16_t code, uint32_t imm)
{
	struct resp_job j = {
		.type = WIRE_NAK,
		.status = code,
		.msn = atomic_load_explicit(&ep->rx_expected, memory_order_relaxed),
		.imm = imm,
	};
	rcci_lock_acquire(&ep->tx_lock);
	if (rcci_tx_queue_resp(ep, &j))
		log_warn("%s: no room for a NAK", ep->base.peer);
	rcci_lock_release(&ep->tx_lock);
}

/*
 * The peer's request cannot be carried out: tell it (NAK) and, as a
 * responder on an RC QP does for access and length violations, leave service.
 */
static void responder_error(struct tcp_ep *ep, uint16_t nak, enum rcc_wc_status recv_status,
			    const char *why)
{
	log_info("%s: refusing request %u: %s", ep->base.peer,
		 atomic_load_explicit(&ep->rx_expected, memory_order_relaxed), why);
	queue_nak(ep, nak, 0);
	ep->rx_in_msg = false;
	ep->rx_dest = DEST_DISCARD;
	/* the receive being filled is the oldest: rcci_ep_fail completes it with recv_status */
	rcci_ep_fail(ep, RCC_EP_ERROR, -EIO, RCC_WC_SUCCESS, recv_status, why);
}

/* No receive posted: refuse with an RNR NAK and drop requests until the
 * initiator comes back to this one. */
static void refuse_rnr(struct tcp_ep *ep, uint32_t msn)
{
	log_debug("%s: RNR on request %u", ep->base.peer, msn);
	queue_nak(ep, WIRE_NAK_RNR, ep->base.attr.min_rnr_timer);
	ep->rx_discard = true;
	ep->rx_discard_msn = msn;
	ep->rx_in_msg = false;
	ep->rx_dest = DEST_DISCARD;
}

/* Whether a receive is there for the message arriving now (rq_lock held):
 * an endpoint with an SRQ takes the SRQ's oldest when it holds none. */
static bool rq_ready_locked(struct tcp_ep *ep)
{
	return ep->rq_head != ep->rq_tail || (ep->base.attr.srq && rcci_srq_take(ep));
}

static bool rq_empty(struct tcp_ep *ep)
{
	rcci_lock_acquire(&ep->rq_lock);
	bool empty = !rq_ready_locked(ep);
	rcci_lock_release(&ep->rq_lock);
	return empty;
}

/* ----------------------------------------------------------- the requests */

static int chunk_in_order(struct tcp_ep *ep, const struct wire_hdr *h)
{
	bool last = ep->rx_msg_done + h->len == ep->rx_msg_total;
	if (ep->rx_msg_done + h->len > ep->rx_msg_total || last != !!(h->flags & WIRE_F_LAST))
		return -EPROTO;
	return 0;
}

static int on_send(struct tcp_ep *ep, const struct wire_hdr *h)
{
	if (h->flags & WIRE_F_FIRST) {
		struct rq_wqe r;
		rcci_lock_acquire(&ep->rq_lock);
		bool empty = !rq_ready_locked(ep);
		if (!empty)
			r = ep->rq[ep->rq_head & ep->rq_mask];
		rcci_lock_release(&ep->rq_lock);
		if (empty) {
			refuse_rnr(ep, h->msn);
			return 0;
		}
		if (r.status) {
			responder_error(ep, WIRE_NAK_REM_OP, r.status,
					"receive buffer is not registered memory");
			return 0;
		}
		if (h->total > r.total) {
			responder_error(ep, WIRE_NAK_REM_INV_REQ, RCC_WC_LOC_LEN_ERR,
					"message longer than the posted receive buffer");
			return 0;
		}
		ep->rx_in_msg = true;
		ep->rx_msg_type = WIRE_SEND;
		ep->rx_msg_total = h->total;
		ep->rx_msg_done = 0;
		ep->rx_rq_idx = ep->rq_head;
		ep->rx_off = 0;
	}
	if (chunk_in_order(ep, h))
		return -EPROTO;
	ep->rx_dest = DEST_RECV;
	return 0;
}

/* Single copy (shm_cma.h): a request whose frame carries the descriptor of
 * the initiator's buffer. Only if we offered to copy; the descriptor is read
 * into rx_cma and the copy made at the frame's end. 0, or -EPROTO. */
static int cma_begin(struct tcp_ep *ep, const struct wire_hdr *h)
{
	if (!h->len || h->len > SHM_CMA_DESC_MAX || !h->total)
		return -EPROTO;
	if (!ep->base.on_shm || !ep->shm.cma.pull) {
		responder_error(ep, WIRE_NAK_REM_INV_REQ, RCC_WC_SUCCESS,
				"a single-copy request, but we never offered single copy");
		return 1;
	}
	ep->rx_dest = DEST_CMA;
	return 0;
}

/* Carry out a single-copy request between our region (key, addr, len, with
 * access) and the initiator's buffer, under mr_lock as every copy into or
 * out of registered memory. 0, or the NAK that refuses it. */
static uint16_t cma_copy(struct tcp_ep *ep, uint32_t key, uint64_t addr, uint64_t len,
			 unsigned access, bool push, const char **why)
{
	int rc;

	rcci_rwlock_read(&ep->ctx->mr_lock);
	if (!rcci_mr_covers_locked(ep->ctx, key, addr, len, access))
		rc = -ENOKEY;
	else
		rc = rcci_shm_cma_copy(&ep->shm.cma, ep->rx_cma, ep->rx_cma_len,
				       (void *)(uintptr_t)addr, len, push);
	rcci_rwlock_read_end(&ep->ctx->mr_lock);
	switch (rc) {
	case 0:
		return 0;
	case -ENOKEY:
		*why = "target region deregistered";
		return WIRE_NAK_REM_ACCESS;
	case -EPROTO:
		*why = "malformed single-copy descriptor";
		return WIRE_NAK_REM_INV_REQ;
	case -ESRCH:
		*why = "the peer process is gone";
		return WIRE_NAK_REM_OP;
	default:
		*why = "the initiator's buffer was deregistered or cannot be reached";
		return WIRE_NAK_REM_ACCESS;
	}
}

/* A WRITE's target covered by its rkey for remote writes; else a NAK (false). */
static bool write_target_covered(struct tcp_ep *ep, const struct wire_hdr *h)
{
	if (rcci_mr_covers(ep->ctx, h->rkey, h->raddr, h->total, RCC_ACCESS_REMOTE_WRITE))
		return true;
	responder_error(ep, WIRE_NAK_REM_ACCESS, RCC_WC_SUCCESS,
			"remote write: bad rkey, no remote-write access or out of bounds");
	return false;
}

/* A WRITE's first frame accepted: the message under way. */
static void write_begin(struct tcp_ep *ep, const struct wire_hdr *h)
{
	ep->rx_in_msg = true;
	ep->rx_msg_type = WIRE_WRITE;
	ep->rx_msg_total = h->total;
	ep->rx_msg_done = 0;
	ep->rx_key = h->rkey;
	ep->rx_addr = h->raddr;
}

static int on_write(struct tcp_ep *ep, const struct wire_hdr *h)
{
	if (h->flags & WIRE_F_MAPPED) {
		/* the initiator copied the bytes through its mapping of our
		 * memory (shm_map.h): only the receive is left to complete */
		if (!ep->base.on_shm || !ep->shm.mapped.on)
			return -EPROTO; /* we never published anything to map */
		if (rq_empty(ep)) {
			refuse_rnr(ep, h->msn);
			return 0;
		}
		write_begin(ep, h);
		return 0;
	}
	if (h->flags & WIRE_F_CMA) {
		/* the whole message at once: FIRST and LAST (wire.c) */
		int rc = cma_begin(ep, h);
		if (rc)
			return rc < 0 ? rc : 0;
		if (!write_target_covered(ep, h))
			return 0;
		if ((h->flags & WIRE_F_IMM) && rq_empty(ep)) {
			refuse_rnr(ep, h->msn);
			return 0;
		}
		write_begin(ep, h);
		return 0;
	}
	if (h->flags & WIRE_F_FIRST) {
		if (h->total && !write_target_covered(ep, h))
			return 0;
		write_begin(ep, h);
	} else if (h->rkey != ep->rx_key || h->raddr != ep->rx_addr) {
		return -EPROTO;
	}
	if (chunk_in_order(ep, h))
		return -EPROTO;
	/* WRITE with immediate consumes a receive, checked when the last chunk arrives. */
	if ((h->flags & WIRE_F_IMM) && rq_empty(ep)) {
		refuse_rnr(ep, h->msn);
		return 0;
	}
	ep->rx_dest = DEST_TARGET;
	return 0;
}

static int on_read_req(struct tcp_ep *ep, const struct wire_hdr *h)
{
	struct resp_job j = {
		.type = WIRE_READ_RESP,
		.msn = h->msn,
		.rkey = h->rkey,
		.raddr = h->raddr,
		.len = h->total,
	};
	int rc;

	if (h->flags & WIRE_F_CMA) {
		rc = cma_begin(ep, h);
		if (rc)
			return rc < 0 ? rc : 0;
	}
	if (h->total &&
	    !rcci_mr_covers(ep->ctx, h->rkey, h->raddr, h->total, RCC_ACCESS_REMOTE_READ)) {
		responder_error(ep, WIRE_NAK_REM_ACCESS, RCC_WC_SUCCESS,
				"remote read: bad rkey, no remote-read access or out of bounds");
		return 0;
	}
	if (h->flags & WIRE_F_CMA) {
		bool full;
		rcci_lock_acquire(&ep->tx_lock);
		full = ep->resp_tail - ep->resp_head >= ep->base.attr.max_rd_atomic;
		rcci_lock_release(&ep->tx_lock);
		if (full)
			responder_error(ep, WIRE_NAK_REM_INV_REQ, RCC_WC_SUCCESS,
					"more READ/atomic requests outstanding than agreed");
		return 0; /* pushed and answered at the frame's end (cma_read) */
	}
	rcci_lock_acquire(&ep->tx_lock);
	rc = ep->resp_tail - ep->resp_head >= ep->base.attr.max_rd_atomic ?
		     -ENOBUFS :
		     rcci_tx_queue_resp(ep, &j);
	rcci_lock_release(&ep->tx_lock);
	if (rc) {
		responder_error(ep, WIRE_NAK_REM_INV_REQ, RCC_WC_SUCCESS,
				"more READ/atomic requests outstanding than agreed");
		return 0;
	}
	request_done(ep, 0);
	return 0;
}

static void do_atomic(struct tcp_ep *ep, const struct wire_hdr *h)
{
	uint64_t operand = rcc_get_le64(ep->rx_small), swap = rcc_get_le64(ep->rx_small + 8), old;
	struct resp_job j = { .type = WIRE_ATOMIC_RESP, .msn = h->msn };
	bool full;

	if (h->raddr & 7) {
		responder_error(ep, WIRE_NAK_REM_INV_REQ, RCC_WC_SUCCESS,
				"atomic on an address that is not 8-byte aligned");
		return;
	}
	rcci_lock_acquire(&ep->tx_lock);
	full = ep->resp_tail - ep->resp_head >= ep->base.attr.max_rd_atomic;
	rcci_lock_release(&ep->tx_lock);
	if (full) {
		responder_error(ep, WIRE_NAK_REM_INV_REQ, RCC_WC_SUCCESS,
				"more READ/atomic requests outstanding than agreed");
		return;
	}
	rcci_rwlock_read(&ep->ctx->mr_lock);
	if (!rcci_mr_covers_locked(ep->ctx, h->rkey, h->raddr, 8, RCC_ACCESS_REMOTE_ATOMIC)) {
		rcci_rwlock_read_end(&ep->ctx->mr_lock);
		responder_error(ep, WIRE_NAK_REM_ACCESS, RCC_WC_SUCCESS,
				"atomic: bad rkey, no remote-atomic access or out of bounds");
		return;
	}
	uint64_t *p = (uint64_t *)(uintptr_t)h->raddr;
	if (h->flags & WIRE_F_CAS) {
		old = operand;
		__atomic_compare_exchange_n(p, &old, swap, false, __ATOMIC_SEQ_CST,
					    __ATOMIC_SEQ_CST);
	} else {
		old = __atomic_fetch_add(p, operand, __ATOMIC_SEQ_CST);
	}
	rcci_rwlock_read_end(&ep->ctx->mr_lock);
	j.value = old;
	rcci_lock_acquire(&ep->tx_lock);
	rcci_tx_queue_resp(ep, &j);
	rcci_lock_release(&ep->tx_lock);
	request_done(ep, 0);
}

/* A single-copy READ, its descriptor in: push the data into the
 * initiator's buffer, then answer without data (the answer travels behind
 * the copy). */
static void cma_read(struct tcp_ep *ep, const struct wire_hdr *h)
{
	struct resp_job j = { .type = WIRE_READ_RESP, .msn = h->msn, .cma = true };
	const char *why = NULL;
	uint16_t nak = cma_copy(ep, h->rkey, h->raddr, h->total, RCC_ACCESS_REMOTE_READ, true,
				&why);

	if (nak) {
		responder_error(ep, nak, RCC_WC_SUCCESS, why);
		return;
	}
	rcci_lock_acquire(&ep->tx_lock);
	rcci_tx_queue_resp(ep, &j); /* room checked at the frame's beginning */
	rcci_lock_release(&ep->tx_lock);
	request_done(ep, 0);
}

int rcci_responder_frame_begin(struct tcp_ep *ep, const struct wire_hdr *h)
{
	uint32_t expect = atomic_load_explicit(&ep->rx_expected, memory_order_relaxed);
	bool chunked = h->type == WIRE_SEND || h->type == WIRE_WRITE;

	if (ep->rx_discard) {
		/* Requests sent before the initiator saw our RNR NAK are dropped. */
		if (h->msn != ep->rx_discard_msn || (chunked && !(h->flags & WIRE_F_FIRST)))
			return 0;
		ep->rx_discard = false;
	}
	if (h->msn != expect)
		return -EPROTO;
	if (ep->rx_in_msg) {
		if (h->type != ep->rx_msg_type || (h->flags & WIRE_F_FIRST))
			return -EPROTO;
	} else if (chunked && !(h->flags & WIRE_F_FIRST)) {
		return -EPROTO;
	}
	switch (h->type) {
	case WIRE_SEND:
		return on_send(ep, h);
	case WIRE_WRITE:
		return on_write(ep, h);
	case WIRE_READ_REQ:
		return on_read_req(ep, h);
	default: /* WIRE_ATOMIC_REQ: operands first, executed at the frame's end */
		ep->rx_dest = DEST_SMALL;
		return 0;
	}
}

/* The end of a request frame: a SEND or WRITE chunk is counted and, at the
 * message's last, completed; an atomic, its operands in, is carried out. */
void rcci_responder_frame_end(struct tcp_ep *ep, const struct wire_hdr *h)
{
	if (h->type == WIRE_ATOMIC_REQ) {
		if (!ep->rx_discard)
			do_atomic(ep, h);
		return;
	}
	if (h->type == WIRE_READ_REQ) {
		if (ep->rx_dest == DEST_CMA && !ep->rx_discard)
			cma_read(ep, h);
		return;
	}
	if (ep->rx_discard || !ep->rx_in_msg)
		return; /* refused or dropped */
	if (ep->rx_bad) {
		responder_error(ep, ep->rx_bad, ep->rx_local_err,
				h->type == WIRE_SEND ? "receive buffer deregistered" :
						       "target region deregistered");
		return;
	}
	if (h->flags & WIRE_F_MAPPED) {
		ep->rx_msg_done = ep->rx_msg_total;
		complete_recv(ep, RCC_WC_SUCCESS, RCC_WC_RECV_WRITE_IMM, ep->rx_msg_total, h);
		request_done(ep, 0);
		return;
	}
	if (h->flags & WIRE_F_CMA) {
		/* a single-copy WRITE, its descriptor in: pull the payload */
		const char *why = NULL;
		uint16_t nak = cma_copy(ep, ep->rx_key, ep->rx_addr, ep->rx_msg_total,
					RCC_ACCESS_REMOTE_WRITE, false, &why);
		if (nak) {
			responder_error(ep, nak, RCC_WC_SUCCESS, why);
			return;
		}
		ep->rx_msg_done = ep->rx_msg_total;
		if (h->flags & WIRE_F_IMM)
			complete_recv(ep, RCC_WC_SUCCESS, RCC_WC_RECV_WRITE_IMM, ep->rx_msg_total,
				      h);
		request_done(ep, ep->rx_msg_total);
		return;
	}
	ep->rx_msg_done += h->len;
	if (!(h->flags & WIRE_F_LAST))
		return;
	if (h->type == WIRE_SEND)
		complete_recv(ep, RCC_WC_SUCCESS, RCC_WC_RECV, ep->rx_msg_total, h);
	else if (h->flags & WIRE_F_IMM)
		complete_recv(ep, RCC_WC_SUCCESS, RCC_WC_RECV_WRITE_IMM, ep->rx_msg_total, h);
	request_done(ep, ep->rx_msg_total);
}
