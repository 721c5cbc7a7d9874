/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Transmit side: builds frames from owed responses and queued requests and
 * hands as many as fit to one sendmsg() (or the shared-memory stream). Frames
 * are first built from copies of the cursors; only frames the kernel took
 * (fully or in part) are then committed, so nothing is undone after a short
 * write. What completes the send queue's requests is sq.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/clock.h"
#include "base/log.h"
#include "tcp.h"

#define TX_MAX_FRAMES 32
#define TX_BATCH_BYTES (1u << 20)
#define TX_ROUNDS 8

enum item_kind {
	ITEM_REQ,
	ITEM_RESP,
	ITEM_ACK,
	ITEM_CLOSE
};

struct tx_item {
	uint8_t kind;
	bool ends_unit; /* last frame of its request / response */
	bool read_data; /* payload points into registered memory (READ response) */
	bool cma;       /* a single-copy request: its payload is the descriptor */
	uint32_t idx;   /* SQ index or response-queue index */
	uint32_t len;   /* payload bytes */
	uint32_t bytes; /* header + payload */
	int iov0, niov;
};

struct tx_batch {
	struct tx_item item[TX_MAX_FRAMES];
	uint8_t hdr[TX_MAX_FRAMES][WIRE_HDR_LEN + WIRE_ATOMIC_REQ_LEN];
	uint8_t cma[TX_MAX_FRAMES][SHM_CMA_DESC_MAX]; /* single-copy descriptors */
	struct iovec iov[TX_MAX_IOV];
	int nitems, niov;
	size_t bytes;
	uint32_t ack;
};

/* The most payload one frame carries. On shared memory a whole frame is at
 * most a quarter of the ring: frames are handed to the ring whole (shm_fit),
 * so one must fit while the consumer still drains the others, and the
 * consumer's direct reads free the ring frame by frame. */
static uint32_t frame_max(const struct tcp_ep *ep)
{
	uint32_t shm = ep->shm.cap / 4 - WIRE_HDR_LEN;

	return ep->base.on_shm && shm < WIRE_FRAME_MAX ? shm : WIRE_FRAME_MAX;
}

uint32_t rcci_tx_frame_max(const struct tcp_ep *ep) { return frame_max(ep); }

int rcci_tx_queue_resp(struct tcp_ep *ep, const struct resp_job *job)
{
	if (ep->resp_tail - ep->resp_head > ep->resp_mask)
		return -ENOBUFS;
	ep->resp[ep->resp_tail++ & ep->resp_mask] = *job;
	return 0;
}

/* iov entries for bytes [off, off+len) of a scatter list, and (keys not
 * NULL) the local key of each; -1 if they do not fit. */
static int sge_slice(const struct rcc_sge *sg, int nsge, uint32_t off, uint32_t len,
		     struct iovec *iov, uint32_t *keys, int room)
{
	int n = 0;

	for (int i = 0; i < nsge && len; i++) {
		if (off >= sg[i].length) {
			off -= sg[i].length;
			continue;
		}
		uint32_t take = sg[i].length - off;
		if (take > len)
			take = len;
		if (n == room)
			return -1;
		iov[n].iov_base = (void *)(uintptr_t)(sg[i].addr + off);
		iov[n].iov_len = take;
		if (keys)
			keys[n] = sg[i].lkey;
		n++;
		len -= take;
		off = 0;
	}
	return n;
}

/* Whether bytes [off, off+len) of a scatter list are still registered (the
 * caller holds mr_lock): the region of a request in flight may be
 * deregistered, and then freed, before its bytes go out. */
static bool slice_live(struct tcp_ctx *ctx, const struct rcc_sge *sg, int nsge, uint32_t off,
		       uint32_t len)
{
	struct iovec v[TCP_MAX_SGE];
	uint32_t keys[TCP_MAX_SGE];
	int n = sge_slice(sg, nsge, off, len, v, keys, TCP_MAX_SGE);

	for (int i = 0; i < n; i++)
		if (!rcci_mr_covers_locked(ctx, keys[i], (uint64_t)(uintptr_t)v[i].iov_base,
					   v[i].iov_len, 0))
			return false;
	return n >= 0;
}

static struct tx_item *new_item(struct tx_batch *b, uint8_t kind, uint32_t idx)
{
	struct tx_item *it = &b->item[b->nitems];
	memset(it, 0, sizeof(*it));
	it->kind = kind;
	it->idx = idx;
	it->iov0 = b->niov;
	return it;
}

/* Append the header (plus inline operands) of item as its first iov. */
static void put_hdr(struct tx_batch *b, struct tx_item *it, struct wire_hdr *h,
		    const uint8_t *extra, uint32_t extra_len)
{
	uint8_t *p = b->hdr[b->nitems];

	h->ack = b->ack;
	rcci_wire_hdr_encode(h, p);
	if (extra_len)
		memcpy(p + WIRE_HDR_LEN, extra, extra_len);
	b->iov[b->niov].iov_base = p;
	b->iov[b->niov].iov_len = WIRE_HDR_LEN + extra_len;
	b->niov++;
	it->bytes = WIRE_HDR_LEN + extra_len;
}

static void finish_item(struct tx_batch *b, struct tx_item *it)
{
	it->niov = b->niov - it->iov0;
	it->bytes += it->len;
	b->bytes += it->bytes;
	b->nitems++;
}

static bool room(const struct tx_batch *b, int iovs)
{
	return b->nitems < TX_MAX_FRAMES && b->niov + iovs <= TX_MAX_IOV &&
	       b->bytes < TX_BATCH_BYTES;
}

/* Responses first: they unblock the peer. Caller holds mr_lock for reading. */
static void build_responses(struct tcp_ep *ep, struct tx_batch *b)
{
	uint32_t r = ep->resp_head;
	uint32_t off = r != ep->resp_tail ? ep->resp[r & ep->resp_mask].off : 0;

	while (r != ep->resp_tail && room(b, 2)) {
		struct resp_job *j = &ep->resp[r & ep->resp_mask];
		struct wire_hdr h = { .type = j->type, .msn = j->msn };
		struct tx_item *it = new_item(b, ITEM_RESP, r);

		if (j->type == WIRE_READ_RESP) {
			uint32_t chunk = j->len - off;
			if (chunk > frame_max(ep))
				chunk = frame_max(ep);
			h.flags = (off == 0 ? WIRE_F_FIRST : 0) |
				  (off + chunk == j->len ? WIRE_F_LAST : 0) |
				  (j->cma ? WIRE_F_CMA : 0);
			/* The region may have been deregistered since the request was checked;
			 * then the response ends early with an error (idempotent if rebuilt). */
			if (chunk && !rcci_mr_covers_locked(ep->ctx, j->rkey, j->raddr + off, chunk,
							    RCC_ACCESS_REMOTE_READ)) {
				j->status = WIRE_NAK_REM_ACCESS;
				j->len = off;
			}
			if (j->status) {
				h.flags = (off == 0 ? WIRE_F_FIRST : 0) | WIRE_F_LAST |
					  (j->cma ? WIRE_F_CMA : 0);
				h.status = j->status;
				chunk = 0;
			}
			h.len = chunk;
			put_hdr(b, it, &h, NULL, 0);
			if (chunk) {
				b->iov[b->niov].iov_base = (void *)(uintptr_t)(j->raddr + off);
				b->iov[b->niov].iov_len = chunk;
				b->niov++;
				it->read_data = true;
			}
			it->len = chunk;
			off += chunk;
			it->ends_unit = off == j->len;
		} else if (j->type == WIRE_ATOMIC_RESP) {
			uint8_t v[8];
			rcc_put_le64(v, j->value);
			h.len = WIRE_ATOMIC_RESP_LEN;
			put_hdr(b, it, &h, v, sizeof(v));
			it->bytes -= WIRE_ATOMIC_RESP_LEN; /* counted as payload below */
			it->len = WIRE_ATOMIC_RESP_LEN;
			it->ends_unit = true;
		} else {
			h.status = j->status;
			h.imm = j->imm;
			put_hdr(b, it, &h, NULL, 0);
			it->ends_unit = true;
		}
		finish_item(b, it);
		if (it->ends_unit) {
			r++;
			off = r != ep->resp_tail ? ep->resp[r & ep->resp_mask].off : 0;
		}
	}
}

/* Whether flow control lets request w go out now, rd READ/atomics being on
 * the wire: not past a failed request, not more READ/atomics than the peer
 * serves at once, a fenced request only once those are all answered. */
static bool flow_allows(const struct tcp_ep *ep, const struct sq_wqe *w, uint32_t rd)
{
	if (w->state == WQE_FAILED)
		return false;
	if (is_rd_atomic(w->opcode) && !w->mapped && rd >= ep->rd_max)
		return false;
	if ((w->flags & RCC_SEND_FENCE) && rd > 0)
		return false;
	return true;
}

/* A READ request: a header alone. */
static void put_read_req(struct tx_batch *b, struct tx_item *it, const struct sq_wqe *w,
			 struct wire_hdr *h)
{
	h->type = WIRE_READ_REQ;
	h->raddr = w->raddr;
	h->rkey = w->rkey;
	h->total = w->total;
	put_hdr(b, it, h, NULL, 0);
	it->ends_unit = true;
}

/* An atomic request: a header and its two operands, in one frame. */
static void put_atomic_req(struct tx_batch *b, struct tx_item *it, const struct sq_wqe *w,
			   struct wire_hdr *h)
{
	uint8_t ops[WIRE_ATOMIC_REQ_LEN];
	rcc_put_le64(ops, w->compare_add);
	rcc_put_le64(ops + 8, w->swap);
	h->type = WIRE_ATOMIC_REQ;
	h->flags = w->opcode == RCC_WR_CAS ? WIRE_F_CAS : 0;
	h->raddr = w->raddr;
	h->rkey = w->rkey;
	h->len = WIRE_ATOMIC_REQ_LEN;
	put_hdr(b, it, h, ops, sizeof(ops));
	it->bytes -= WIRE_ATOMIC_REQ_LEN;
	it->len = WIRE_ATOMIC_REQ_LEN;
	it->ends_unit = true;
}

/* The header of the frame carrying bytes [off, off+chunk) of a SEND or WRITE:
 * the immediate and the solicited flag go with the message's last frame. */
static void encode_message_hdr(const struct sq_wqe *w, uint32_t off, uint32_t chunk,
			       struct wire_hdr *h)
{
	bool is_send = w->opcode == RCC_WR_SEND || w->opcode == RCC_WR_SEND_IMM;
	bool has_imm = w->opcode == RCC_WR_SEND_IMM || w->opcode == RCC_WR_WRITE_IMM;
	bool last = off + chunk == w->total;
	h->type = is_send ? WIRE_SEND : WIRE_WRITE;
	h->flags = (off == 0 ? WIRE_F_FIRST : 0) | (last ? WIRE_F_LAST : 0) |
		   (has_imm && last ? WIRE_F_IMM : 0) |
		   ((w->flags & RCC_SEND_SOLICITED) && last ? WIRE_F_SOLICITED : 0);
	h->len = chunk;
	h->total = w->total;
	h->imm = has_imm && last ? w->imm : 0;
	if (!is_send) {
		h->raddr = w->raddr + off;
		h->rkey = w->rkey;
	}
}

/* The payload of that frame as iov entries, straight from where it lies: the
 * inline copy made at post time, or a slice of the request's scatter list. */
static void put_message_payload(struct tcp_ep *ep, struct tx_batch *b, const struct sq_wqe *w,
				uint32_t i, uint32_t off, uint32_t chunk)
{
	int n;

	if (w->flags & RCC_SEND_INLINE) {
		b->iov[b->niov].iov_base = ep->sq_inline +
					   (size_t)(i & ep->sq_mask) * ep->base.max_inline + off;
		b->iov[b->niov].iov_len = chunk;
		n = 1;
	} else {
		n = sge_slice(sq_sges(ep, i), w->num_sge, off, chunk, &b->iov[b->niov], NULL,
			      TX_MAX_IOV - b->niov);
	}
	b->niov += n;
}

/* The next frame of a SEND or WRITE, from byte off: at most frame_max()
 * bytes of it. Returns the payload bytes the frame carries. */
static uint32_t put_message_chunk(struct tcp_ep *ep, struct tx_batch *b, struct tx_item *it,
				  const struct sq_wqe *w, struct wire_hdr *h, uint32_t i,
				  uint32_t off)
{
	uint32_t chunk = w->total - off;
	if (chunk > frame_max(ep))
		chunk = frame_max(ep);
	encode_message_hdr(w, off, chunk, h);
	put_hdr(b, it, h, NULL, 0);
	if (chunk)
		put_message_payload(ep, b, w, i, off, chunk);
	it->len = chunk;
	it->ends_unit = off + chunk == w->total;
	return chunk;
}

/* Whether request w, none of it sent, is of the kind single copy takes: a
 * large WRITE or READ from registered memory, to a peer that copies for us. */
static inline __attribute__((always_inline)) bool single_copy_candidate(const struct tcp_ep *ep,
									const struct sq_wqe *w)
{
	return ep->base.on_shm && shm_cma_peer_pulls(&ep->shm.cma) && w->total >= SHM_CMA_MIN &&
	       !(w->flags & RCC_SEND_INLINE) && !w->tx_off &&
	       (w->opcode == RCC_WR_READ || w->opcode == RCC_WR_WRITE ||
		w->opcode == RCC_WR_WRITE_IMM);
}

/* Whether request w (at index i, none of it sent) goes single-copy: the
 * peer copies for us, it is large, and its buffer is live with the access
 * the copy needs (else the ring path reports what is wrong, as before). A
 * request that has its slot keeps it, and the path, until it completes.
 * Caller holds mr_lock's read side. */
static bool cma_wanted(struct tcp_ep *ep, struct sq_wqe *w, uint32_t i)
{
	struct iovec v[SHM_CMA_MAX_IOV];
	uint32_t keys[SHM_CMA_MAX_IOV];
	bool read = w->opcode == RCC_WR_READ;

	if (w->cma)
		return true;
	if (!single_copy_candidate(ep, w))
		return false;
	int n = sge_slice(sq_sges(ep, i), w->num_sge, 0, w->total, v, keys, SHM_CMA_MAX_IOV);
	if (n <= 0)
		return false;
	for (int k = 0; k < n; k++)
		if (!rcci_mr_covers_locked(ep->ctx, keys[k], (uint64_t)(uintptr_t)v[k].iov_base,
					   v[k].iov_len, read ? RCC_ACCESS_LOCAL_WRITE : 0))
			return false;
	int s = rcci_shm_cma_claim(&ep->shm.cma, keys, n);
	if (s < 0)
		return false; /* every slot taken: this one goes over the ring */
	w->cma = (uint8_t)(s + 1);
	return true;
}

/* A single-copy WRITE or READ: one frame whose payload is the descriptor of
 * the local buffer (shm_cma.h); the target copies the bytes itself. */
static void put_cma_req(struct tcp_ep *ep, struct tx_batch *b, struct tx_item *it,
			const struct sq_wqe *w, struct wire_hdr *h, uint32_t i)
{
	struct iovec v[SHM_CMA_MAX_IOV];
	int n = sge_slice(sq_sges(ep, i), w->num_sge, 0, w->total, v, NULL, SHM_CMA_MAX_IOV);
	uint8_t *desc = b->cma[b->nitems];
	uint32_t len = rcci_shm_cma_desc(&ep->shm.cma, w->cma - 1, v, n, desc);

	if (w->opcode == RCC_WR_READ) {
		h->type = WIRE_READ_REQ;
		h->raddr = w->raddr;
		h->rkey = w->rkey;
		h->total = w->total;
		h->flags = WIRE_F_CMA;
	} else {
		encode_message_hdr(w, 0, w->total, h);
		h->flags |= WIRE_F_CMA;
	}
	h->len = len;
	put_hdr(b, it, h, NULL, 0);
	b->iov[b->niov].iov_base = desc;
	b->iov[b->niov].iov_len = len;
	b->niov++;
	it->len = len;
	it->cma = true;
	it->ends_unit = true;
}

/* A mapped request (shm_map.h), its bytes copied at post time: a
 * zero-length WRITE keeps its msn, and the peer's ack completes it. */
static void put_mapped(struct tx_batch *b, struct tx_item *it, const struct sq_wqe *w,
		       struct wire_hdr *h)
{
	h->type = WIRE_WRITE;
	h->flags = WIRE_F_FIRST | WIRE_F_LAST;
	if (w->opcode == RCC_WR_WRITE_IMM) {
		/* the receiver's completion says how many bytes arrived */
		h->flags |= WIRE_F_IMM | WIRE_F_MAPPED |
			    (w->flags & RCC_SEND_SOLICITED ? WIRE_F_SOLICITED : 0);
		h->imm = w->imm;
		h->total = w->total;
	}
	put_hdr(b, it, h, NULL, 0);
	it->ends_unit = true;
}

/* Our own requests, in order, as far as flow control allows. */
static void build_requests(struct tcp_ep *ep, struct tx_batch *b)
{
	uint32_t i = ep->sq_tx;
	uint32_t rd = ep->rd_outstanding;
	uint32_t off = i != ep->sq_tail ? ep->sq[i & ep->sq_mask].tx_off : 0;
	const uint32_t max_sge = ep->base.attr.max_send_sge;

	if (ep->rnr_wait)
		return;
	while (i != ep->sq_tail && room(b, 1 + (int)max_sge)) {
		struct sq_wqe *w = &ep->sq[i & ep->sq_mask];
		struct wire_hdr h = { .msn = i };
		struct tx_item *it;

		if (!flow_allows(ep, w, rd))
			break;
		if (w->mapped) {
			it = new_item(b, ITEM_REQ, i);
			put_mapped(b, it, w, &h);
			finish_item(b, it);
			i++;
			off = 0;
			continue;
		}
		if (!is_rd_atomic(w->opcode) && !(w->flags & RCC_SEND_INLINE) && off < w->total &&
		    !slice_live(ep->ctx, sq_sges(ep, i), w->num_sge, off,
				w->total - off < frame_max(ep) ? w->total - off : frame_max(ep))) {
			/* deregistered since it was posted: a local protection
			 * error, in order, as at post time (rcci_sq_advance) */
			w->state = WQE_FAILED;
			w->status = RCC_WC_LOC_PROT_ERR;
			break;
		}
		it = new_item(b, ITEM_REQ, i);
		if (cma_wanted(ep, w, i)) {
			put_cma_req(ep, b, it, w, &h, i);
			rd += w->opcode == RCC_WR_READ;
			finish_item(b, it);
			i++;
			off = 0;
			continue;
		}
		switch (w->opcode) {
		case RCC_WR_READ:
			put_read_req(b, it, w, &h);
			rd++;
			break;
		case RCC_WR_CAS:
		case RCC_WR_FADD:
			put_atomic_req(b, it, w, &h);
			rd++;
			break;
		default:
			off += put_message_chunk(ep, b, it, w, &h, i, off);
			break;
		}
		finish_item(b, it);
		if (it->ends_unit) {
			i++;
			off = 0;
		}
	}
}

static void build_control(struct tcp_ep *ep, struct tx_batch *b, uint8_t type)
{
	/* An ACK tells the peer our dead-peer timeout: how often it must speak. */
	struct wire_hdr h = { .type = type,
			      .imm = type == WIRE_ACK ? ep->base.attr.peer_timeout_ms : 0 };
	struct tx_item *it = new_item(b, type == WIRE_ACK ? ITEM_ACK : ITEM_CLOSE, 0);
	put_hdr(b, it, &h, NULL, 0);
	it->ends_unit = true;
	finish_item(b, it);
}

/* (Inlined in both of its callers: the rounds of the flush are its hot path.) */
static inline __attribute__((always_inline)) void commit(struct tcp_ep *ep,
							 const struct tx_item *it)
{
	switch (it->kind) {
	case ITEM_REQ: {
		struct sq_wqe *w = &ep->sq[it->idx & ep->sq_mask];
		/* single copy: the frame carries the descriptor, the target copies
		 * the message (a READ's tx_off stays 0, as on the ring) */
		if (!it->cma)
			w->tx_off += it->len;
		else if (w->opcode != RCC_WR_READ)
			w->tx_off = w->total;
		if (it->ends_unit) {
			if (w->opcode == RCC_WR_CAS || w->opcode == RCC_WR_FADD)
				w->tx_off = w->total; /* the operands are not message bytes */
			w->state = WQE_SENT;
			ep->sq_tx = it->idx + 1;
			if (is_rd_atomic(w->opcode) && !w->mapped)
				ep->rd_outstanding++;
		}
		break;
	}
	case ITEM_RESP: {
		struct resp_job *j = &ep->resp[it->idx & ep->resp_mask];
		j->off += it->len;
		if (it->ends_unit)
			ep->resp_head = it->idx + 1;
		break;
	}
	case ITEM_CLOSE:
		ep->close_sent = true;
		break;
	default:
		break;
	}
}

/* Does p point into memory the endpoint owns (not the application's)? */
static bool part_owned(const struct tcp_ep *ep, const void *p)
{
	const uint8_t *b = p;
	return (b >= ep->part_hdr && b < ep->part_hdr + sizeof(ep->part_hdr)) ||
	       (ep->bounce && b >= ep->bounce && b < ep->bounce + WIRE_FRAME_MAX);
}

int rcci_tx_own_partial(struct tcp_ep *ep)
{
	size_t off = 0;

	for (int k = ep->part_i; k < ep->part_n; k++) {
		struct iovec *v = &ep->part[k];
		if (part_owned(ep, v->iov_base))
			continue;
		if (!ep->bounce && !(ep->bounce = malloc(WIRE_FRAME_MAX)))
			return -ENOMEM;
		memcpy(ep->bounce + off, v->iov_base, v->iov_len);
		v->iov_base = ep->bounce + off;
		off += v->iov_len;
	}
	return 0;
}

/*
 * Keep the unsent rest of a frame so the byte stream stays whole. It is
 * copied now, READ data and request payload alike: the region it lies in may
 * be deregistered (and freed) once mr_lock is dropped, while the rest of
 * the frame must still go out.
 */
static int save_partial(struct tcp_ep *ep, struct tx_batch *b, const struct tx_item *it,
			size_t done)
{
	int n = 0;

	for (int k = it->iov0; k < it->iov0 + it->niov; k++) {
		struct iovec v = b->iov[k];
		if (done >= v.iov_len) {
			done -= v.iov_len;
			continue;
		}
		v.iov_base = (uint8_t *)v.iov_base + done;
		v.iov_len -= done;
		done = 0;
		if (k == it->iov0) {
			/* header bytes live in the batch: move them */
			memcpy(ep->part_hdr, v.iov_base, v.iov_len);
			v.iov_base = ep->part_hdr;
		}
		ep->part[n++] = v;
	}
	ep->part_n = n;
	ep->part_i = 0;
	return rcci_tx_own_partial(ep);
}

/*
 * Shared memory: keep of the batch only the whole frames the ring has room
 * for now, so that a frame is never left half-written (the rest of a frame
 * the stream did not take is copied aside, save_partial: on the ring that
 * would be most of every frame, a third copy of the payload). Frames are at
 * most a quarter of the ring (frame_max). Returns the frames kept: 0
 * when not even the first fits (then the consumer rings when it frees room,
 * rcci_shm_ring_reserve), -1 when the peer broke the ring. The next round
 * builds the frames left out again.
 */
static int shm_fit(struct tcp_ep *ep, struct tx_batch *b)
{
	long room = rcci_shm_ring_reserve(&ep->shm, b->item[0].bytes);
	size_t bytes = 0;
	int k = 0;

	if (room < 0) {
		ep->tx_err = EPROTO;
		return -1;
	}
	while (k < b->nitems && bytes + b->item[k].bytes <= (size_t)room)
		bytes += b->item[k++].bytes;
	if (k < b->nitems) {
		b->nitems = k;
		b->niov = k ? b->item[k - 1].iov0 + b->item[k - 1].niov : 0;
		b->bytes = bytes;
	}
	return k;
}

static ssize_t send_iov(struct tcp_ep *ep, struct iovec *iov, int n)
{
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = (size_t)n };
	ssize_t r;

	if (ep->base.on_shm)
		return rcci_shm_stream_send(ep, iov, n);
	do
		r = sendmsg(ep->fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
	while (r < 0 && errno == EINTR);
	if (r < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		ep->tx_err = errno;
		return -1;
	}
	return r;
}

/* Finish a frame left half-sent earlier. Returns true when it is all out. */
static bool send_partial(struct tcp_ep *ep)
{
	while (ep->part_i < ep->part_n) {
		ssize_t r = send_iov(ep, &ep->part[ep->part_i], ep->part_n - ep->part_i);
		if (r <= 0)
			return false;
		size_t done = (size_t)r;
		while (ep->part_i < ep->part_n && done >= ep->part[ep->part_i].iov_len)
			done -= ep->part[ep->part_i++].iov_len;
		if (ep->part_i < ep->part_n) {
			ep->part[ep->part_i].iov_base = (uint8_t *)ep->part[ep->part_i].iov_base +
							done;
			ep->part[ep->part_i].iov_len -= done;
		}
	}
	ep->part_n = ep->part_i = 0;
	return true;
}

/*
 * Whether the frames to build may read registered memory, which must stay
 * registered while they go out (rcc_mr_dereg waits for mr_lock's write
 * side): owed responses (READ data), or a queued request whose payload is
 * not a copy made at post time. A ping-pong of inline messages takes no
 * lock to send.
 */
static bool reads_registered(const struct tcp_ep *ep, bool serving)
{
	if (ep->resp_head != ep->resp_tail)
		return true;
	for (uint32_t i = ep->sq_tx; serving && i != ep->sq_tail; i++)
		if (!(ep->sq[i & ep->sq_mask].flags & RCC_SEND_INLINE))
			return true;
	return false;
}

/* Whether the rounds below would find nothing to send (link being the
 * endpoint's): what they look at, looked at once. */
static inline __attribute__((always_inline)) bool nothing_to_send(struct tcp_ep *ep, int link,
								  bool ack_now)
{
	return link == LINK_UP && !ep->part_n && !ep->hb_due && ep->resp_head == ep->resp_tail &&
	       ep->sq_tx == ep->sq_tail &&
	       !(ack_now &&
		 atomic_load_explicit(&ep->rx_expected, memory_order_acquire) != ep->ack_sent);
}

/* Bytes of frames built with ack went out: the peer heard from us (no
 * heartbeat due) and holds that ack. */
static inline __attribute__((always_inline)) void bytes_went(struct tcp_ep *ep, uint32_t ack)
{
	ep->last_tx_ns = rcci_coarse_now_ns();
	ep->hb_due = false;
	ep->ack_sent = ack;
	atomic_store_explicit(&ep->unacked_bytes, 0, memory_order_relaxed);
}

enum lone_result {
	LONE_NOT,     /* not the case: the rounds build it */
	LONE_SENT,    /* its frame went out whole */
	LONE_BLOCKED, /* the socket took none or part of it (the rest kept): wait for room */
	LONE_BROKEN,  /* the connection broke (tx_err set) */
};

/*
 * A ping-pong's flush, without the rounds: one request queued -- a SEND or
 * WRITE that goes in one frame, its payload copied at post time (inline) or
 * read from registered memory -- and nothing else owed: no response, no frame
 * half out, no RNR backoff, the endpoint serving. Its frame goes from a
 * header on the stack and the payload where it lies, then is committed as
 * the rounds commit theirs: the same bytes on the wire, without a batch (a
 * fifth of a small inline post on a socket, an eighth on shared memory;
 * callgrind). The same rules as the rounds:
 * flow_allows(); registered memory read under mr_lock and checked live
 * first (a request whose memory was deregistered is left to the rounds,
 * which fail it in order); a request single copy may take is left to them;
 * on shared memory, only when the ring has room for the whole frame (frames
 * are handed to it whole: shm_fit). The caller looked already at what
 * spares every other flush this call: exactly one request queued, not a
 * READ or atomic, the endpoint serving, its link up, no heartbeat due.
 */
static __attribute__((noinline)) enum lone_result send_lone(struct tcp_ep *ep)
{
	uint32_t i = ep->sq_tx;
	struct sq_wqe *w = &ep->sq[i & ep->sq_mask];
	bool from_mr = !(w->flags & RCC_SEND_INLINE);
	bool locked = from_mr; /* reads registered memory: rcc_mr_dereg waits */

	if (w->mapped || w->cma || w->tx_off || w->state != WQE_QUEUED || ep->part_n ||
	    ep->resp_head != ep->resp_tail || ep->rnr_wait || w->total > frame_max(ep) ||
	    !flow_allows(ep, w, ep->rd_outstanding) || (from_mr && single_copy_candidate(ep, w)))
		return LONE_NOT;

	struct tx_batch b; /* only its frame's iov and header, for a short write */
	struct tx_item it = { .kind = ITEM_REQ, .idx = i, .len = w->total, .ends_unit = true };
	struct wire_hdr h = { .msn = i };
	enum lone_result res = LONE_NOT;
	int n = 1;

	it.bytes = WIRE_HDR_LEN + w->total;
	if (ep->base.on_shm && rcci_shm_ring_reserve(&ep->shm, it.bytes) < (long)it.bytes)
		return LONE_NOT; /* the rounds arm the room, or report a broken ring */
	if (locked)
		rcci_rwlock_read(&ep->ctx->mr_lock);
	if (from_mr) {
		if (!slice_live(ep->ctx, sq_sges(ep, i), w->num_sge, 0, w->total))
			goto out;
		n += sge_slice(sq_sges(ep, i), w->num_sge, 0, w->total, &b.iov[1], NULL,
			       TX_MAX_IOV - 1);
	} else if (w->total) {
		b.iov[1] = (struct iovec){
			ep->sq_inline + (size_t)(i & ep->sq_mask) * ep->base.max_inline, w->total
		};
		n = 2;
	}
	encode_message_hdr(w, 0, w->total, &h);
	h.ack = atomic_load_explicit(&ep->rx_expected, memory_order_acquire);
	rcci_wire_hdr_encode(&h, b.hdr[0]);
	b.iov[0] = (struct iovec){ b.hdr[0], WIRE_HDR_LEN };
	ssize_t r = send_iov(ep, b.iov, n);
	res = r < 0 ? LONE_BROKEN : r == 0 ? LONE_BLOCKED : LONE_SENT;
	if (r <= 0)
		goto out;
	bytes_went(ep, h.ack);
	commit(ep, &it);
	if ((size_t)r < it.bytes) {
		/* the rest, copied before mr_lock is dropped (save_partial) */
		it.iov0 = 0;
		it.niov = n;
		if (save_partial(ep, &b, &it, (size_t)r))
			ep->tx_err = ENOMEM;
		res = LONE_BLOCKED;
	}
out:
	if (locked)
		rcci_rwlock_read_end(&ep->ctx->mr_lock);
	return res;
}

void rcci_tx_flush(struct tcp_ep *ep, bool ack_now)
{
	struct tx_batch b;
	bool blocked = false;
	int link = atomic_load(&ep->link);

	if (link == LINK_DOWN || ep->tx_err)
		return;
	atomic_store_explicit(&ep->tx_deferred, false, memory_order_relaxed);
	/* Nothing to send: the usual call after a poll received a request whose
	 * ack waits to ride on the reply. */
	if (nothing_to_send(ep, link, ack_now) &&
	    !atomic_load_explicit(&ep->want_out, memory_order_relaxed))
		return;
	if (ep->part_n && !send_partial(ep)) {
		rcci_ep_set_want_out(ep, !ep->tx_err);
		return;
	}
	bool serving = atomic_load(&ep->base.state) == RCC_EP_CONNECTED;
	/* One SEND or WRITE queued (the looks every other request is spared;
	 * send_lone makes the rest). */
	if (ep->sq_tx + 1 == ep->sq_tail && !is_rd_atomic(ep->sq[ep->sq_tx & ep->sq_mask].opcode) &&
	    serving && link == LINK_UP && !ep->hb_due) {
		enum lone_result lone = send_lone(ep);
		if (lone == LONE_BLOCKED || lone == LONE_BROKEN) {
			blocked = lone == LONE_BLOCKED;
			goto out;
		}
		if (lone == LONE_SENT && nothing_to_send(ep, link, ack_now))
			goto out;
	}
	/* READ data and request payload are sent straight from registered
	 * memory: keep it registered while they go out (rcc_mr_dereg waits). */
	bool locked = reads_registered(ep, serving);
	if (locked)
		rcci_rwlock_read(&ep->ctx->mr_lock);
	for (int round = 0;; round++) {
		if (round == TX_ROUNDS) {
			/* Enough for one call; if more is queued, come back when writable. */
			blocked = true;
			break;
		}
		b.nitems = b.niov = 0;
		b.bytes = 0;
		b.ack = atomic_load_explicit(&ep->rx_expected, memory_order_acquire);
		build_responses(ep, &b);
		if (serving)
			build_requests(ep, &b);
		if (!b.nitems && link == LINK_DRAINING && !ep->close_sent &&
		    ep->resp_head == ep->resp_tail)
			build_control(ep, &b, WIRE_CLOSE);
		if (!b.nitems && ((ack_now && b.ack != ep->ack_sent) || ep->hb_due))
			build_control(ep, &b, WIRE_ACK);
		if (!b.nitems)
			break;
		if (ep->base.on_shm) {
			int kept = shm_fit(ep, &b);
			if (kept <= 0) {
				blocked = kept == 0;
				break;
			}
		}

		ssize_t r = send_iov(ep, b.iov, b.niov);
		if (r < 0)
			break;
		size_t done = (size_t)r;
		if (done > 0)
			bytes_went(ep, b.ack);
		for (int k = 0; k < b.nitems && done > 0; k++) {
			const struct tx_item *it = &b.item[k];
			commit(ep, it);
			if (done >= it->bytes) {
				done -= it->bytes;
				continue;
			}
			if (save_partial(ep, &b, it, done))
				ep->tx_err = ENOMEM;
			done = 0;
			blocked = true;
		}
		if ((size_t)r < b.bytes) {
			blocked = true;
			break;
		}
	}
	if (locked)
		rcci_rwlock_read_end(&ep->ctx->mr_lock);
out:
	if (ep->close_sent && !ep->part_n && !ep->shut_wr) {
		shutdown(ep->fd, SHUT_WR);
		ep->shut_wr = true;
	}
	/* Nothing left, nothing watched (the usual end): no atomic exchange.
	 * Every writer of want_out holds tx_lock. */
	bool want = blocked && !ep->tx_err;
	if (want || atomic_load_explicit(&ep->want_out, memory_order_relaxed))
		rcci_ep_set_want_out(ep, want);
}
