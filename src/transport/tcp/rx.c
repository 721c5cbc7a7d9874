/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receive side: parses frames and executes them. Requests from the peer are
 * checked (order, keys, access, bounds) and carried out in msn order; their
 * payload goes straight into the receive buffer or the target region. Small
 * frames are read in batches through a staging buffer; a long payload is read
 * directly into its destination.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "base/log.h"
#include "rcc/util.h"
#include "tcp.h"

#define DIRECT_MIN (16u * 1024u)

/* ---------------------------------------------------------------- helpers */

/* Read what the socket has into the staging buffer: >0 bytes, 0 nothing yet,
 * -ECONNRESET at end of stream, other negative errno on failure. *drained
 * tells whether the read came back short of the room offered. */
static long fill(struct tcp_ep *ep, bool *drained)
{
	ssize_t n;

	if (ep->rx_start == ep->rx_end) {
		ep->rx_start = ep->rx_end = 0;
	} else if (ep->rx_start > 0 && TCP_RXBUF_SIZE - ep->rx_end < WIRE_HDR_LEN * 4) {
		memmove(ep->rxbuf, ep->rxbuf + ep->rx_start, ep->rx_end - ep->rx_start);
		ep->rx_end -= ep->rx_start;
		ep->rx_start = 0;
	}
	uint32_t room = TCP_RXBUF_SIZE - ep->rx_end;
	if (ep->base.on_shm) {
		struct iovec v = { .iov_base = ep->rxbuf + ep->rx_end, .iov_len = room };
		long r = shm_stream_recvv(ep, &v, 1);
		if (r > 0) {
			ep->rx_end += (uint32_t)r;
			*drained = (uint32_t)r < room;
		}
		return r;
	}
	do
		n = recv(ep->fd, ep->rxbuf + ep->rx_end, room, MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n > 0) {
		ep->rx_end += (uint32_t)n;
		*drained = (uint32_t)n < room;
		return n;
	}
	if (n == 0)
		return -ECONNRESET;
	if (errno == EAGAIN || errno == EWOULDBLOCK)
		return 0;
	return -errno;
}

static long recv_into(struct tcp_ep *ep, struct iovec *iov, int n)
{
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = (size_t)n };
	ssize_t r;

	if (ep->base.on_shm)
		return shm_stream_recvv(ep, iov, n);
	do
		r = recvmsg(ep->fd, &m, MSG_DONTWAIT);
	while (r < 0 && errno == EINTR);
	if (r > 0)
		return r;
	if (r == 0)
		return -ECONNRESET;
	return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
}

/*
 * Bytes [off, off+len) of a local scatter list: copy src there, or (src NULL)
 * read them from the socket. Every element touched must still be registered
 * with local write access: -EFAULT otherwise.
 */
static long sge_io(struct tcp_ep *ep, const struct rcc_sge *sg, int nsge, uint32_t off,
		   uint32_t len, const uint8_t *src)
{
	struct iovec iov[TCP_MAX_SGE];
	int n = 0;
	long r = (long)len;

	pthread_rwlock_rdlock(&ep->ctx->mr_lock);
	for (int i = 0; i < nsge && len; i++) {
		if (off >= sg[i].length) {
			off -= sg[i].length;
			continue;
		}
		uint32_t take = sg[i].length - off;
		if (take > len)
			take = len;
		if (!mr_covers_locked(ep->ctx, sg[i].lkey, sg[i].addr + off, take,
				      RCC_ACCESS_LOCAL_WRITE)) {
			r = -EFAULT;
			goto out;
		}
		iov[n].iov_base = (void *)(uintptr_t)(sg[i].addr + off);
		iov[n].iov_len = take;
		n++;
		len -= take;
		off = 0;
	}
	if (src) {
		for (int i = 0; i < n; i++) {
			memcpy(iov[i].iov_base, src, iov[i].iov_len);
			src += iov[i].iov_len;
		}
	} else {
		r = recv_into(ep, iov, n);
	}
out:
	pthread_rwlock_unlock(&ep->ctx->mr_lock);
	return r;
}

/* The same for the target region of a remote WRITE. */
static long target_io(struct tcp_ep *ep, uint32_t len, const uint8_t *src)
{
	long r = (long)len;

	pthread_rwlock_rdlock(&ep->ctx->mr_lock);
	if (!mr_covers_locked(ep->ctx, ep->rx_key, ep->rx_addr, len, RCC_ACCESS_REMOTE_WRITE)) {
		r = -EFAULT;
	} else if (src) {
		memcpy((void *)(uintptr_t)ep->rx_addr, src, len);
	} else {
		struct iovec v = { (void *)(uintptr_t)ep->rx_addr, len };
		r = recv_into(ep, &v, 1);
	}
	pthread_rwlock_unlock(&ep->ctx->mr_lock);
	return r;
}

static struct sq_wqe *sq_at(struct tcp_ep *ep, uint32_t idx) { return &ep->sq[idx & ep->sq_mask]; }

static const struct rcc_sge *sq_sges(struct tcp_ep *ep, uint32_t idx)
{
	return &ep->sq_sge[(size_t)(idx & ep->sq_mask) * ep->base.attr.max_send_sge];
}

static const struct rcc_sge *rq_sges(struct tcp_ep *ep, uint32_t idx)
{
	return &ep->rq_sge[(size_t)(idx & ep->rq_mask) * ep->base.attr.max_recv_sge];
}

/*
 * Put payload bytes into the current destination: copied from src, or read
 * from the socket when src is NULL. A destination that went bad (region
 * deregistered) turns the rest of the frame into discard and is reported at
 * the frame's end.
 */
static long dest_io(struct tcp_ep *ep, const uint8_t *src, uint32_t len)
{
	long r;

	switch (ep->rx_dest) {
	case DEST_RECV:
		r = sge_io(ep, rq_sges(ep, ep->rx_rq_idx),
			   ep->rq[ep->rx_rq_idx & ep->rq_mask].num_sge, ep->rx_off, len, src);
		if (r == -EFAULT) {
			ep->rx_bad = WIRE_NAK_REM_OP;
			ep->rx_local_err = RCC_WC_LOC_PROT_ERR;
		}
		break;
	case DEST_READ:
		r = sge_io(ep, sq_sges(ep, ep->rx_sq_idx), sq_at(ep, ep->rx_sq_idx)->num_sge,
			   ep->rx_off, len, src);
		if (r == -EFAULT)
			ep->rx_local_err = RCC_WC_LOC_PROT_ERR;
		break;
	case DEST_TARGET:
		r = target_io(ep, len, src);
		if (r == -EFAULT)
			ep->rx_bad = WIRE_NAK_REM_ACCESS;
		if (r > 0)
			ep->rx_addr += (uint64_t)r;
		break;
	case DEST_SMALL:
		if (!src)
			return -EINVAL;
		if (ep->rx_small_len + len > sizeof(ep->rx_small))
			return -EPROTO;
		memcpy(ep->rx_small + ep->rx_small_len, src, len);
		ep->rx_small_len += len;
		return len;
	default:
		return src ? (long)len : -EINVAL;
	}
	if (r == -EFAULT) {
		ep->rx_dest = DEST_DISCARD;
		return src ? (long)len : 0;
	}
	if (r > 0)
		ep->rx_off += (uint32_t)r;
	return r;
}

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

	pthread_mutex_lock(&ep->rq_lock);
	wc.wr_id = ep->rq[ep->rq_head & ep->rq_mask].wr_id;
	uint32_t next = ++ep->rq_head;
	pthread_mutex_unlock(&ep->rq_lock);
	if (h && (h->flags & WIRE_F_IMM)) {
		wc.imm_data = h->imm;
		wc.wc_flags = RCC_WC_WITH_IMM;
	}
	cq_push(tcq(ep->base.recv_cq), &wc, FREES_RQ, next);
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
	pthread_mutex_lock(&ep->tx_lock);
	if (tx_queue_resp(ep, &j))
		log_warn("%s: no room for a NAK", ep->base.peer);
	pthread_mutex_unlock(&ep->tx_lock);
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
	/* the receive being filled is the oldest: ep_fail completes it with recv_status */
	ep_fail(ep, RCC_EP_ERROR, RCC_WC_SUCCESS, recv_status, why);
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
	return ep->rq_head != ep->rq_tail || (ep->base.attr.srq && srq_take(ep));
}

static bool rq_empty(struct tcp_ep *ep)
{
	pthread_mutex_lock(&ep->rq_lock);
	bool empty = !rq_ready_locked(ep);
	pthread_mutex_unlock(&ep->rq_lock);
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
		pthread_mutex_lock(&ep->rq_lock);
		bool empty = !rq_ready_locked(ep);
		if (!empty)
			r = ep->rq[ep->rq_head & ep->rq_mask];
		pthread_mutex_unlock(&ep->rq_lock);
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

static int on_write(struct tcp_ep *ep, const struct wire_hdr *h)
{
	if (h->flags & WIRE_F_FIRST) {
		if (h->total &&
		    !mr_covers(ep->ctx, h->rkey, h->raddr, h->total, RCC_ACCESS_REMOTE_WRITE)) {
			responder_error(
				ep, WIRE_NAK_REM_ACCESS, RCC_WC_SUCCESS,
				"remote write: bad rkey, no remote-write access or out of bounds");
			return 0;
		}
		ep->rx_in_msg = true;
		ep->rx_msg_type = WIRE_WRITE;
		ep->rx_msg_total = h->total;
		ep->rx_msg_done = 0;
		ep->rx_key = h->rkey;
		ep->rx_addr = h->raddr;
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

	if (h->total && !mr_covers(ep->ctx, h->rkey, h->raddr, h->total, RCC_ACCESS_REMOTE_READ)) {
		responder_error(ep, WIRE_NAK_REM_ACCESS, RCC_WC_SUCCESS,
				"remote read: bad rkey, no remote-read access or out of bounds");
		return 0;
	}
	pthread_mutex_lock(&ep->tx_lock);
	rc = ep->resp_tail - ep->resp_head >= ep->base.attr.max_rd_atomic ? -ENOBUFS :
									    tx_queue_resp(ep, &j);
	pthread_mutex_unlock(&ep->tx_lock);
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
	pthread_mutex_lock(&ep->tx_lock);
	full = ep->resp_tail - ep->resp_head >= ep->base.attr.max_rd_atomic;
	pthread_mutex_unlock(&ep->tx_lock);
	if (full) {
		responder_error(ep, WIRE_NAK_REM_INV_REQ, RCC_WC_SUCCESS,
				"more READ/atomic requests outstanding than agreed");
		return;
	}
	pthread_rwlock_rdlock(&ep->ctx->mr_lock);
	if (!mr_covers_locked(ep->ctx, h->rkey, h->raddr, 8, RCC_ACCESS_REMOTE_ATOMIC)) {
		pthread_rwlock_unlock(&ep->ctx->mr_lock);
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
	pthread_rwlock_unlock(&ep->ctx->mr_lock);
	j.value = old;
	pthread_mutex_lock(&ep->tx_lock);
	tx_queue_resp(ep, &j);
	pthread_mutex_unlock(&ep->tx_lock);
	request_done(ep, 0);
}

static int on_request(struct tcp_ep *ep, const struct wire_hdr *h)
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

/* ---------------------------------------------------------- the responses */

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
	if (is_rd_atomic(w->opcode) && w->state == WQE_SENT)
		ep->rd_outstanding--;
	w->state = WQE_FAILED;
	w->status = st;
}

static int on_response(struct tcp_ep *ep, const struct wire_hdr *h)
{
	int rc = 0;

	pthread_mutex_lock(&ep->tx_lock);
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
		if (w->opcode != RCC_WR_READ || w->state != WQE_SENT ||
		    !!(h->flags & WIRE_F_FIRST) != (w->rx_off == 0)) {
			rc = -EPROTO;
			break;
		}
		if (h->status) {
			fail_wqe(ep, w, nak_status(h->status));
			sq_advance(ep);
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
			sq_go_back(ep, h->msn, (uint8_t)h->imm);
		else
			fail_wqe(ep, w, nak_status(h->status));
		sq_advance(ep);
		break;
	}
out:
	pthread_mutex_unlock(&ep->tx_lock);
	return rc;
}

/* ------------------------------------------------------- frame boundaries */

/* Every frame acknowledges our requests up to h->ack. */
static int take_ack(struct tcp_ep *ep, uint32_t ack)
{
	int rc = 0;

	/* peer_ack has no writer but this path, which holds rx_lock: comparing
	 * needs no other lock, and most frames repeat the last ack. */
	if (ack == ep->peer_ack)
		return 0;
	pthread_mutex_lock(&ep->tx_lock);
	if (msn_lt(ack, ep->peer_ack) || msn_lt(ep->sq_tx, ack)) {
		rc = -EPROTO;
	} else {
		ep->peer_ack = ack;
		sq_advance(ep);
	}
	pthread_mutex_unlock(&ep->tx_lock);
	return rc;
}

static int frame_begin(struct tcp_ep *ep, const struct wire_hdr *h)
{
	int rc;

	ep->rx_dest = DEST_DISCARD;
	ep->rx_left = h->len;
	ep->rx_small_len = 0;
	ep->rx_bad = 0;
	ep->rx_local_err = RCC_WC_SUCCESS;
	if (atomic_load(&ep->base.state) != RCC_EP_CONNECTED) {
		/* Out of service: the rest of the stream is read and dropped. */
		return 0;
	}
	rc = take_ack(ep, h->ack);
	if (rc)
		return rc;
	switch (h->type) {
	case WIRE_SEND:
	case WIRE_WRITE:
	case WIRE_READ_REQ:
	case WIRE_ATOMIC_REQ:
		return on_request(ep, h);
	case WIRE_READ_RESP:
	case WIRE_ATOMIC_RESP:
	case WIRE_NAK:
		return on_response(ep, h);
	case WIRE_CLOSE:
		ep_fail(ep, RCC_EP_DISCONNECTED, RCC_WC_SUCCESS, RCC_WC_SUCCESS,
			"the peer disconnected");
		return 0;
	default: /* WIRE_ACK */
		/* The peer's timeout (0: an older peer that does not say); bounded
		 * where it is used (ep_hb_period_ns). */
		if (h->imm != atomic_load_explicit(&ep->peer_wants_ms, memory_order_relaxed)) {
			atomic_store_explicit(&ep->peer_wants_ms, h->imm, memory_order_relaxed);
			progress_hb_at_most(ep->ctx, ep_hb_period_ns(ep));
		}
		return 0;
	}
}

static void frame_end(struct tcp_ep *ep)
{
	const struct wire_hdr *h = &ep->rx_hdr;

	if (atomic_load(&ep->base.state) != RCC_EP_CONNECTED)
		return;
	switch (h->type) {
	case WIRE_SEND:
	case WIRE_WRITE:
		if (ep->rx_discard || !ep->rx_in_msg)
			return; /* refused or dropped */
		if (ep->rx_bad) {
			responder_error(ep, ep->rx_bad, ep->rx_local_err,
					h->type == WIRE_SEND ? "receive buffer deregistered" :
							       "target region deregistered");
			return;
		}
		ep->rx_msg_done += h->len;
		if (!(h->flags & WIRE_F_LAST))
			return;
		if (h->type == WIRE_SEND)
			complete_recv(ep, RCC_WC_SUCCESS, RCC_WC_RECV, ep->rx_msg_total, h);
		else if (h->flags & WIRE_F_IMM)
			complete_recv(ep, RCC_WC_SUCCESS, RCC_WC_RECV_WRITE_IMM, ep->rx_msg_total,
				      h);
		request_done(ep, ep->rx_msg_total);
		return;
	case WIRE_ATOMIC_REQ:
		if (!ep->rx_discard)
			do_atomic(ep, h);
		return;
	case WIRE_READ_RESP:
	case WIRE_ATOMIC_RESP: {
		if (ep->rx_dest == DEST_DISCARD && ep->rx_local_err == RCC_WC_SUCCESS)
			return; /* an error response, already handled */
		pthread_mutex_lock(&ep->tx_lock);
		struct sq_wqe *w = sq_at(ep, ep->rx_sq_idx);
		if (w->state != WQE_SENT) {
			pthread_mutex_unlock(&ep->tx_lock);
			return;
		}
		if (h->type == WIRE_ATOMIC_RESP && ep->rx_local_err == RCC_WC_SUCCESS &&
		    sge_io(ep, sq_sges(ep, ep->rx_sq_idx), w->num_sge, 0, 8, ep->rx_small) < 0)
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
		sq_advance(ep);
		pthread_mutex_unlock(&ep->tx_lock);
		return;
	}
	default:
		return;
	}
}

/* -------------------------------------------------------------- the loop */

long rx_process(struct tcp_ep *ep, size_t budget)
{
	size_t done = 0;
	bool drained = false; /* a read came back short: the socket is empty for now */
	long r;

	while (done < budget) {
		uint32_t avail = ep->rx_end - ep->rx_start;

		if (ep->rx_state == RX_HDR) {
			if (avail < WIRE_HDR_LEN) {
				/* Asking again only to hear EAGAIN would put a syscall on
				 * every message's path; the next pass will look. */
				if (drained)
					return (long)done;
				r = fill(ep, &drained);
				if (r <= 0)
					return r < 0 ? r : (long)done;
				continue;
			}
			if (wire_hdr_decode(ep->rxbuf + ep->rx_start, &ep->rx_hdr)) {
				log_error("%s: malformed frame header", ep->base.peer);
				return -EPROTO;
			}
			ep->rx_start += WIRE_HDR_LEN;
			done += WIRE_HDR_LEN;
			r = frame_begin(ep, &ep->rx_hdr);
			if (r < 0) {
				log_error("%s: frame of type %u out of order or inconsistent",
					  ep->base.peer, ep->rx_hdr.type);
				return r;
			}
			if (ep->rx_left)
				ep->rx_state = RX_PAYLOAD;
			else
				frame_end(ep);
			if (atomic_load(&ep->link) == LINK_DOWN)
				return (long)done;
			continue;
		}

		if (avail) {
			uint32_t n = avail < ep->rx_left ? avail : ep->rx_left;
			r = dest_io(ep, ep->rxbuf + ep->rx_start, n);
			if (r < 0)
				return r;
			ep->rx_start += n;
			ep->rx_left -= n;
			done += n;
		} else if (drained) {
			return (long)done;
		} else if (ep->rx_left >= DIRECT_MIN && ep->rx_dest != DEST_DISCARD &&
			   ep->rx_dest != DEST_SMALL) {
			uint32_t want = ep->rx_left;
			r = dest_io(ep, NULL, want);
			if (r < 0)
				return r;
			if (r == 0 && ep->rx_dest != DEST_DISCARD)
				return (long)done; /* nothing more for now */
			drained = (uint32_t)r < want;
			ep->rx_left -= (uint32_t)r;
			done += (size_t)r;
		} else {
			r = fill(ep, &drained);
			if (r <= 0)
				return r < 0 ? r : (long)done;
			continue;
		}
		if (ep->rx_left == 0) {
			ep->rx_state = RX_HDR;
			frame_end(ep);
			if (atomic_load(&ep->link) == LINK_DOWN)
				return (long)done;
		}
	}
	return (long)done;
}
