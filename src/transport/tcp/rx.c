/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receive stream framing: reads the socket (or the shared-memory stream),
 * cuts it into frames, hands each frame's header to the responder (the
 * peer's requests) or the requester (answers to ours) and its payload to the
 * destination they chose. Small frames are read in batches through a staging
 * buffer; a long payload is read directly into its destination.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "base/log.h"
#include "tcp.h"

#define DIRECT_MIN (16u * 1024u)

/* ---------------------------------------- reading and placing payload */

/*
 * Shared memory: how much of the stream to stage. A payload rx_process reads
 * straight into its destination (a frame's of DIRECT_MIN and up) must not
 * be staged too, which would copy it twice (on the socket, reading ahead
 * saves system calls; on the ring there are none to save). So the frames
 * waiting are walked by the lengths their headers announce: small ones are
 * staged together, up to and including the header of the first large one.
 * A peeked length is a hint only: each header is decoded, and checked, once
 * read. Where the bytes there end, no more than one header is read beyond.
 */
static uint32_t shm_fill_room(struct tcp_ep *ep, uint32_t room)
{
	uint32_t have = ep->rx_end - ep->rx_start;
	uint8_t raw[WIRE_HDR_LEN_PREFIX];
	size_t at;

	if (ep->rx_state == RX_HDR && have)
		return have < WIRE_HDR_LEN && WIRE_HDR_LEN - have < room ? WIRE_HDR_LEN - have :
									   room;
	long there = rcci_shm_ring_rx_avail(&ep->shm);
	if (there < 0)
		return room; /* the read reports it */
	/* where the next header is */
	at = ep->rx_state == RX_PAYLOAD ? ep->rx_left : 0;
	/* Too few bytes there for a whole large frame beyond at: the peer
	 * writes whole frames (tx.c, shm_fit), so every frame there is small,
	 * and the walk below would end where the bytes end -- one header
	 * beyond, as it does. Not walked then: a small message's frames cost
	 * no peek. A frame a hostile peer left short is staged instead of read
	 * directly, a copy more and nothing else: each header is still
	 * decoded and checked once read. */
	if ((size_t)there < at + WIRE_HDR_LEN + DIRECT_MIN) {
		size_t end = ((size_t)there > at ? (size_t)there : at) + WIRE_HDR_LEN;
		return end < room ? (uint32_t)end : room;
	}
	while (at + WIRE_HDR_LEN <= room) {
		if (rcci_shm_ring_peek(&ep->shm, (size_t)there, at, raw, sizeof(raw)) < sizeof(raw))
			return (uint32_t)at + WIRE_HDR_LEN;
		uint32_t len = rcci_wire_hdr_len(raw);
		at += WIRE_HDR_LEN;
		if (len >= DIRECT_MIN)
			return (uint32_t)at;
		at += len;
	}
	return room;
}

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
		room = shm_fill_room(ep, room);
		struct iovec v = { .iov_base = ep->rxbuf + ep->rx_end, .iov_len = room };
		long r = rcci_shm_stream_recvv(ep, &v, 1);
		if (r > 0) {
			ep->rx_end += (uint32_t)r;
			*drained = (uint32_t)r < room;
		}
		return r;
	}
	/* Large frames come in runs (a stream of large messages, a ping-pong
	 * of 64 KiB ones): while in one, and after it, a read stops at the next
	 * header. A full read would take the start of the next frame's payload
	 * along, to be copied out of the staging buffer (a quarter of a 256 KiB
	 * frame, all of a 64 KiB message but 40 bytes); stopped there, the
	 * payload is read straight into its destination, in as many system
	 * calls. A small frame after a large one costs one read more. */
	if (ep->rx_large) {
		uint32_t have = ep->rx_end - ep->rx_start;
		uint32_t upto = (ep->rx_state == RX_PAYLOAD ? ep->rx_left : 0) + WIRE_HDR_LEN;
		if (have < upto && upto - have < room)
			room = upto - have;
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
		return rcci_shm_stream_recvv(ep, iov, n);
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
long rcci_rx_sge_io(struct tcp_ep *ep, const struct rcc_sge *sg, int nsge, uint32_t off,
		    uint32_t len, const uint8_t *src)
{
	struct iovec iov[TCP_MAX_SGE];
	int n = 0;
	long r = (long)len;

	rcci_rwlock_read(&ep->ctx->mr_lock);
	for (int i = 0; i < nsge && len; i++) {
		if (off >= sg[i].length) {
			off -= sg[i].length;
			continue;
		}
		uint32_t take = sg[i].length - off;
		if (take > len)
			take = len;
		if (!rcci_mr_covers_locked(ep->ctx, sg[i].lkey, sg[i].addr + off, take,
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
	rcci_rwlock_read_end(&ep->ctx->mr_lock);
	return r;
}

/* The same for the target region of a remote WRITE. */
static long target_io(struct tcp_ep *ep, uint32_t len, const uint8_t *src)
{
	long r = (long)len;

	rcci_rwlock_read(&ep->ctx->mr_lock);
	if (!rcci_mr_covers_locked(ep->ctx, ep->rx_key, ep->rx_addr, len,
				   RCC_ACCESS_REMOTE_WRITE)) {
		r = -EFAULT;
	} else if (src) {
		memcpy((void *)(uintptr_t)ep->rx_addr, src, len);
	} else {
		struct iovec v = { (void *)(uintptr_t)ep->rx_addr, len };
		r = recv_into(ep, &v, 1);
	}
	rcci_rwlock_read_end(&ep->ctx->mr_lock);
	return r;
}

static const struct rcc_sge *rq_sges(struct tcp_ep *ep, uint32_t idx)
{
	return &ep->rq_sge[(size_t)(idx & ep->rq_mask) * ep->base.attr.max_recv_sge];
}

/*
 * Append a frame's bytes to a fixed staging buffer (a descriptor, a small
 * payload): the peer chose len, so a frame longer than the buffer is a
 * protocol error, never an overrun. Staged payloads come from memory only
 * (src), never straight from the socket.
 */
static long append_bounded(uint8_t *buf, size_t cap, uint32_t *used, const uint8_t *src,
			   uint32_t len)
{
	if (!src)
		return -EINVAL;
	if ((size_t)*used + len > cap)
		return -EPROTO;
	memcpy(buf + *used, src, len);
	*used += len;
	return len;
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
		r = rcci_rx_sge_io(ep, rq_sges(ep, ep->rx_rq_idx),
				   ep->rq[ep->rx_rq_idx & ep->rq_mask].num_sge, ep->rx_off, len,
				   src);
		if (r == -EFAULT) {
			ep->rx_bad = WIRE_NAK_REM_OP;
			ep->rx_local_err = RCC_WC_LOC_PROT_ERR;
		}
		break;
	case DEST_READ:
		r = rcci_rx_sge_io(ep, sq_sges(ep, ep->rx_sq_idx),
				   sq_at(ep, ep->rx_sq_idx)->num_sge, ep->rx_off, len, src);
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
	case DEST_CMA:
		return append_bounded(ep->rx_cma, sizeof(ep->rx_cma), &ep->rx_cma_len, src, len);
	case DEST_SMALL:
		return append_bounded(ep->rx_small, sizeof(ep->rx_small), &ep->rx_small_len, src,
				      len);
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

/* ------------------------------------------------------- frame boundaries */

static int frame_begin(struct tcp_ep *ep, const struct wire_hdr *h)
{
	int rc;

	ep->rx_dest = DEST_DISCARD;
	ep->rx_left = h->len;
	ep->rx_small_len = 0;
	ep->rx_cma_len = 0;
	ep->rx_bad = 0;
	ep->rx_local_err = RCC_WC_SUCCESS;
	if (!ep_serving(ep)) {
		/* Out of service: the rest of the stream is read and dropped. */
		return 0;
	}
	rc = requester_take_ack(ep, h->ack);
	if (rc)
		return rc;
	switch (h->type) {
	case WIRE_SEND:
	case WIRE_WRITE:
	case WIRE_READ_REQ:
	case WIRE_ATOMIC_REQ:
		return rcci_responder_frame_begin(ep, h);
	case WIRE_READ_RESP:
	case WIRE_ATOMIC_RESP:
	case WIRE_NAK:
		return rcci_requester_frame_begin(ep, h);
	case WIRE_CLOSE:
		rcci_ep_fail(ep, RCC_EP_DISCONNECTED, -ECONNRESET, RCC_WC_SUCCESS, RCC_WC_SUCCESS,
			     "the peer disconnected");
		return 0;
	default: /* WIRE_ACK */
		/* The peer's timeout (0: an older peer that does not say); bounded
		 * where it is used (rcci_ep_hb_period_ns). */
		if (h->imm != atomic_load_explicit(&ep->peer_wants_ms, memory_order_relaxed)) {
			atomic_store_explicit(&ep->peer_wants_ms, h->imm, memory_order_relaxed);
			rcci_progress_hb_at_most(ep->ctx, rcci_ep_hb_period_ns(ep));
		}
		return 0;
	}
}

static void frame_end(struct tcp_ep *ep)
{
	const struct wire_hdr *h = &ep->rx_hdr;

	if (!ep_serving(ep))
		return;
	switch (h->type) {
	case WIRE_SEND:
	case WIRE_WRITE:
	case WIRE_READ_REQ:
	case WIRE_ATOMIC_REQ:
		rcci_responder_frame_end(ep, h);
		return;
	case WIRE_READ_RESP:
	case WIRE_ATOMIC_RESP:
		rcci_requester_frame_end(ep, h);
		return;
	default:
		return;
	}
}

/* -------------------------------------------------------------- the loop */

long rcci_rx_process(struct tcp_ep *ep, size_t budget)
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
			if (rcci_wire_hdr_decode(ep->rxbuf + ep->rx_start, &ep->rx_hdr)) {
				log_error("%s: malformed frame header", ep->base.peer);
				return -EPROTO;
			}
			ep->rx_start += WIRE_HDR_LEN;
			done += WIRE_HDR_LEN;
			ep->rx_large = ep->rx_hdr.len >= DIRECT_MIN;
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
			ep->rx_staged_bytes += n;
			ep->rx_start += n;
			ep->rx_left -= n;
			done += n;
		} else if (drained) {
			return (long)done;
		} else if (ep->rx_left >= DIRECT_MIN && ep->rx_dest != DEST_DISCARD &&
			   ep->rx_dest != DEST_SMALL && ep->rx_dest != DEST_CMA) {
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
			/* A single-copy request moved its whole message (shm_cma.h)
			 * through a frame of a few bytes: it counts against the
			 * budget as what it moved, so that a pass over a ring full
			 * of them ends, and acks them, after a few MiB copied, not
			 * after thousands of them (the peer would wait idle). */
			if (ep->rx_hdr.flags & WIRE_F_CMA)
				done += ep->rx_hdr.total;
		}
	}
	return (long)done;
}
