/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rcc_chan: small messages over SEND/RECV with credits (session.h).
 *
 * One registered region holds `credits` receive slots and `credits` send
 * slots of CHAN_HDR_LEN + msg_max bytes each. Receives complete in the order
 * they were posted and sends in the order they were posted (RC), so both
 * sides are rings: a message waits in its receive slot until
 * rcc_chan_recv() copies it out, and only then is the slot posted again and
 * its credit given back. That is where the back-pressure comes from: a
 * reader that falls behind keeps its slots, and its sender runs out of
 * credits instead of meeting an empty receive queue.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/last_error.h"
#include "base/log.h"
#include "base/sock.h"
#include "rcc/session.h"
#include "session/chan_wire.h"

#define WR_TAG ((uint64_t)RCC_CHAN_WR_ID_TAG << 56)
#define WR_TAG_MASK (0xffull << 56)
#define WR_RECV (1ull << 48)
#define WR_SEND (2ull << 48)
#define WR_KIND_MASK (0xffull << 48)
#define WR_SLOT(id) ((uint32_t)((id)&0xffffffffu))

/* How long one wait on the channel's own CQ lasts before the endpoint's
 * state is looked at again: a peer that left while every receive of ours
 * holds an unread message produces no completion at all. */
#define WAIT_SLICE_MS 100

struct rcc_chan {
	struct rcc_cq *cq;
	bool own_cq;
	struct rcc_ep *ep;
	uint32_t msg_max, credits, slot_len;
	uint8_t *mem; /* credits receive slots, then credits send slots */
	size_t mem_len;
	struct rcc_mr *mr;
	struct rcc_sge *rsge;
	struct rcc_recv_wr *rwr; /* the initial receives, one per receive slot */
	/* sending */
	uint32_t tx_credits;         /* receives we know to be free at the peer */
	uint64_t tx_posted, tx_done; /* sends posted, and completed in any way */
	uint32_t to_return;          /* receives posted again, not yet told to the peer */
	uint32_t rx_posted;          /* receives posted and not completed */
	/* receiving: what arrived, oldest first */
	struct arrival {
		uint32_t slot;
		uint32_t len;
		uint32_t imm;
		bool write; /* a WRITE_WITH_IMM: nothing in the slot */
	} * arrived;
	uint32_t arrived_head, arrived_n;
	/* own CQ: completions of the application's requests, kept in order */
	struct rcc_wc *app_wc;
	uint32_t app_cap, app_head, app_n;
	int err;       /* why the channel failed; messages that arrived still count */
	char why[192]; /* ... in words, for rcc_last_error() */
};

static uint8_t *recv_slot(const struct rcc_chan *ch, uint32_t i)
{
	return ch->mem + (size_t)i * ch->slot_len;
}

static uint8_t *send_slot(const struct rcc_chan *ch, uint32_t i)
{
	return ch->mem + (size_t)(ch->credits + i) * ch->slot_len;
}

/* The channel's own allocations (not its region, registration or CQ). */
static void free_chan(struct rcc_chan *ch)
{
	free(ch->app_wc);
	free(ch->arrived);
	free(ch->rwr);
	free(ch->rsge);
	free(ch);
}

int rcc_chan_create(struct rcc_ctx *ctx, const struct rcc_chan_attr *attr, struct rcc_chan **out)
{
	struct rcc_chan *ch;
	int rc;

	rcci_error_clear();
	if (!ctx || !attr || !out)
		return rcci_fail(-EINVAL, "rcc_chan_create: NULL argument");
	uint32_t msg_max = attr->msg_max ? attr->msg_max : RCC_CHAN_MSG_DEFAULT;
	uint32_t credits = attr->credits ? attr->credits : RCC_CHAN_CREDITS_DEFAULT;
	if (msg_max > RCC_CHAN_MSG_MAX || credits < 4 || credits > RCC_CHAN_CREDITS_MAX ||
	    attr->app_depth > RCC_CHAN_APP_DEPTH_MAX ||
	    (!attr->cq && !attr->external_cq &&
	     (attr->cq_mode < RCC_CQ_POLL || attr->cq_mode > RCC_CQ_HYBRID)))
		return rcci_fail(-EINVAL,
				 "rcc_chan_create: msg_max %u (at most %u), credits %u (4..%u), "
				 "app_depth %u (at most %u) or an unknown CQ mode",
				 msg_max, RCC_CHAN_MSG_MAX, credits, RCC_CHAN_CREDITS_MAX,
				 attr->app_depth, RCC_CHAN_APP_DEPTH_MAX);
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return -ENOMEM;
	ch->msg_max = msg_max;
	ch->credits = credits;
	ch->slot_len = (CHAN_HDR_LEN + msg_max + 63) & ~63u;
	ch->mem_len = ((size_t)2 * credits * ch->slot_len + 4095) & ~(size_t)4095;
	ch->rsge = calloc(credits, sizeof(*ch->rsge));
	ch->rwr = calloc(credits, sizeof(*ch->rwr));
	ch->arrived = calloc(credits, sizeof(*ch->arrived));
	ch->app_cap = attr->app_depth;
	/* with its own CQ the channel keeps the application's completions until
	 * rcc_chan_poll_app(): at most one per request of app_depth */
	bool own_cq = !attr->cq && !attr->external_cq;
	if (own_cq && ch->app_cap)
		ch->app_wc = calloc(ch->app_cap, sizeof(*ch->app_wc));
	if (!ch->rsge || !ch->rwr || !ch->arrived || (own_cq && ch->app_cap && !ch->app_wc)) {
		rc = -ENOMEM;
		goto err_arrays;
	}
	ch->mem = mmap(NULL, ch->mem_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		       0);
	if (ch->mem == MAP_FAILED) {
		ch->mem = NULL;
		rc = -ENOMEM;
		goto err_arrays;
	}
	rc = rcc_mr_reg(ctx, ch->mem, ch->mem_len, RCC_ACCESS_LOCAL_WRITE, &ch->mr);
	if (rc)
		goto err_mem;
	if (attr->cq || attr->external_cq) {
		ch->cq = attr->cq;
	} else {
		struct rcc_cq_attr ca = { .depth = 2 * credits + attr->app_depth,
					  .mode = attr->cq_mode };
		rc = rcc_cq_create(ctx, &ca, &ch->cq);
		if (rc)
			goto err_mr;
		ch->own_cq = true;
	}
	for (uint32_t i = 0; i < credits; i++) {
		ch->rsge[i] = rcc_mr_sge(ch->mr, recv_slot(ch, i), ch->slot_len);
		ch->rwr[i] = (struct rcc_recv_wr){ .wr_id = WR_TAG | WR_RECV | i,
						   .sg_list = &ch->rsge[i],
						   .num_sge = 1 };
	}
	ch->tx_credits = credits;
	ch->rx_posted = credits; /* once the endpoint is made with them */
	*out = ch;
	return 0;

err_mr:
	rcc_mr_dereg(ch->mr);
err_mem:
	munmap(ch->mem, ch->mem_len);
err_arrays:
	free_chan(ch);
	return rc;
}

int rcc_chan_ep_attr(const struct rcc_chan *ch, struct rcc_ep_attr *a)
{
	if (!ch || !a || ch->ep)
		return rcci_fail(-EINVAL, "rcc_chan_ep_attr: NULL argument or a bound channel");
	a->send_cq = ch->cq;
	a->recv_cq = ch->cq;
	a->sq_depth = ch->credits + ch->app_cap;
	a->rq_depth = ch->credits;
	if (!a->max_send_sge)
		a->max_send_sge = 1;
	if (!a->max_recv_sge)
		a->max_recv_sge = 1;
	a->initial_recv = ch->rwr;
	a->num_initial_recv = (int)ch->credits;
	return 0;
}

int rcc_chan_bind(struct rcc_chan *ch, struct rcc_ep *ep)
{
	if (!ch || !ep || ch->ep)
		return rcci_fail(-EINVAL, "rcc_chan_bind: NULL argument or a bound channel");
	ch->ep = ep;
	return 0;
}

/* The channel fails: the first reason stays. A peer that broke the rules
 * is cut off, so it cannot go on sending into our receive queue. */
static void chan_fail(struct rcc_chan *ch, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void chan_fail(struct rcc_chan *ch, int status, const char *fmt, ...)
{
	va_list ap;

	if (ch->err)
		return;
	ch->err = status;
	va_start(ap, fmt);
	int n = vsnprintf(ch->why, sizeof(ch->why), fmt, ap);
	va_end(ap);
	/* A flushed request says only that the connection is gone; the
	 * endpoint knows why (set before any flush): a request of the
	 * application's that failed, the peer leaving, a timeout. */
	const char *left = status == -ECONNRESET ? rcc_ep_reason(ch->ep, NULL) : NULL;
	if (left && n >= 0 && (size_t)n < sizeof(ch->why))
		snprintf(ch->why + n, sizeof(ch->why) - (size_t)n, " (%s)", left);
	if (status == -EPROTO) {
		log_warn("message channel to %s: %s; cut off", rcc_ep_peer(ch->ep), ch->why);
		rcc_ep_disconnect(ch->ep);
	}
}

/* The failure, returned by a call, with its reason for rcc_last_error(). */
static int failed(const struct rcc_chan *ch)
{
	return rcci_fail(ch->err, "message channel to %s: %s", rcc_ep_peer(ch->ep), ch->why);
}

static int post_one(struct rcc_chan *ch, enum chan_kind kind, const void *buf, uint32_t len)
{
	uint32_t slot = (uint32_t)(ch->tx_posted % ch->credits);
	uint8_t *p = send_slot(ch, slot);

	chan_hdr_encode(kind, ch->to_return, p);
	if (len)
		memcpy(p + CHAN_HDR_LEN, buf, len);
	struct rcc_sge sge = rcc_mr_sge(ch->mr, p, CHAN_HDR_LEN + len);
	int rc = rcc_post_send(ch->ep, &sge, 1, WR_TAG | WR_SEND | slot, RCC_SEND_SIGNALED);
	if (rc == -ENOTCONN) {
		chan_fail(ch, -ECONNRESET, "the connection is gone");
		return failed(ch);
	}
	if (rc)
		return rc;
	ch->tx_posted++;
	ch->tx_credits--;
	ch->to_return = 0;
	return 0;
}

/* Give credits back on their own once half of them wait, with the credit
 * kept for that when no message is going out. */
static void return_credits(struct rcc_chan *ch)
{
	if (ch->err || !ch->ep || ch->to_return < ch->credits / 2 || !ch->tx_credits ||
	    ch->tx_posted - ch->tx_done >= ch->credits)
		return;
	int rc = post_one(ch, CHAN_CREDIT, NULL, 0);
	if (rc)
		log_info("message channel to %s: credits not given back: %s", rcc_ep_peer(ch->ep),
			 rcc_strerror(rc));
}

/* Post receive slot again; its credit goes back with the next header. */
static void repost(struct rcc_chan *ch, uint32_t slot)
{
	int rc = rcc_post_recv(ch->ep, &ch->rsge[slot], 1, WR_TAG | WR_RECV | slot);

	if (!rc) {
		ch->rx_posted++;
		ch->to_return++;
	} else if (rc != -ENOTCONN) {
		chan_fail(ch, rc, "cannot post a receive again: %s", rcc_strerror(rc));
	}
}

/* Room is certain: each arrival holds one of the credits receives. */
static void push_arrival(struct rcc_chan *ch, struct arrival a)
{
	ch->arrived[(ch->arrived_head + ch->arrived_n) % ch->credits] = a;
	ch->arrived_n++;
}

static void took_message(struct rcc_chan *ch, uint32_t slot, const struct rcc_wc *wc)
{
	struct chan_hdr h;

	if (wc->opcode == RCC_WC_RECV_WRITE_IMM) {
		push_arrival(ch, (struct arrival){ .slot = slot,
						   .len = wc->byte_len,
						   .imm = wc->imm_data,
						   .write = true });
		return;
	}
	if (chan_hdr_decode(recv_slot(ch, slot), wc->byte_len, ch->msg_max, &h) ||
	    (wc->wc_flags & RCC_WC_WITH_IMM)) {
		chan_fail(ch, -EPROTO, "the peer sent a malformed message (%u bytes)",
			  wc->byte_len);
		return;
	}
	if (h.credits > ch->credits - ch->tx_credits) {
		chan_fail(ch, -EPROTO, "the peer gave back %u credits, more than it had",
			  h.credits);
		return;
	}
	ch->tx_credits += h.credits;
	if (h.kind == CHAN_CREDIT) {
		repost(ch, slot);
		return;
	}
	push_arrival(ch, (struct arrival){ .slot = slot, .len = h.payload_len });
}

static int wc_status_errno(const struct rcc_wc *wc, bool recv)
{
	/* A receive the peer overfilled: more than a slot holds (Soft-RoCE
	 * reports it as a local QP operation error). */
	if (recv && (wc->status == RCC_WC_LOC_LEN_ERR || wc->status == RCC_WC_LOC_QP_OP_ERR))
		return -EPROTO;
	switch (wc->status) {
	case RCC_WC_WR_FLUSH_ERR:
	case RCC_WC_RETRY_EXC_ERR:
	case RCC_WC_RNR_RETRY_EXC_ERR:
		return -ECONNRESET;
	default:
		return -EIO;
	}
}

int rcc_chan_handle(struct rcc_chan *ch, const struct rcc_wc *wc)
{
	if (!ch || !wc || !ch->ep)
		return -EINVAL;
	if ((wc->wr_id & WR_TAG_MASK) != WR_TAG || (wc->ep && wc->ep != ch->ep))
		return 0;
	uint64_t kind = wc->wr_id & WR_KIND_MASK;
	uint32_t slot = WR_SLOT(wc->wr_id);
	if ((kind != WR_RECV && kind != WR_SEND) || slot >= ch->credits)
		return 0;
	if (kind == WR_SEND)
		ch->tx_done++;
	else
		ch->rx_posted--;
	if (wc->status != RCC_WC_SUCCESS) {
		chan_fail(ch, wc_status_errno(wc, kind == WR_RECV), "a %s completed with '%s'",
			  kind == WR_RECV ? "receive" : "send", rcc_wc_status_str(wc->status));
		return 1;
	}
	/* A message that arrived before the connection failed still counts;
	 * none after the peer broke the rules does. */
	if (kind == WR_RECV && ch->err != -EPROTO)
		took_message(ch, slot, wc);
	return_credits(ch);
	return 1;
}

/* Take what the channel's own CQ holds, waiting up to ms for the first. */
static int pump(struct rcc_chan *ch, int ms)
{
	struct rcc_wc wc[16];
	int n;

	if (!ch->own_cq)
		return 0;
	n = ms ? rcc_cq_wait(ch->cq, wc, 16, ms) : rcc_cq_poll(ch->cq, wc, 16);
	if (n == -ETIMEDOUT)
		return 0;
	if (n < 0) {
		chan_fail(ch, n, "its CQ failed: %s", rcc_strerror(n));
		return n;
	}
	for (int i = 0; i < n; i++) {
		if (rcc_chan_handle(ch, &wc[i]))
			continue;
		if (ch->app_n == ch->app_cap) {
			/* more requests than the depth asked for: do not lose it silently */
			log_warn("message channel to %s: an application completion beyond "
				 "app_depth (%u)",
				 rcc_ep_peer(ch->ep), ch->app_cap);
			chan_fail(ch, -EOVERFLOW, "more application completions than app_depth");
			continue;
		}
		ch->app_wc[(ch->app_head + ch->app_n++) % ch->app_cap] = wc[i];
	}
	return n;
}

/*
 * Nothing more can come: the endpoint left service and every request of
 * the channel has completed (rule 4 of rcc.h: each one does, flushed if not
 * done), so the first failure among those completions -- a receive too
 * long, the peer's rules broken -- has been seen in the order it happened,
 * and only a plain loss is left to report.
 */
static bool gone(struct rcc_chan *ch)
{
	if (rcc_ep_state(ch->ep) == RCC_EP_CONNECTED || ch->rx_posted ||
	    ch->tx_posted != ch->tx_done)
		return false;
	chan_fail(ch, -ECONNRESET, "the connection is gone");
	return true;
}

/* One turn of a bounded wait: 0 to look again, or why to stop. */
static int wait_turn(struct rcc_chan *ch, uint64_t deadline, int timeout_ms)
{
	if (timeout_ms == 0)
		return -EAGAIN;
	int left = rcci_ms_left(deadline);
	if (left == 0)
		return -ETIMEDOUT;
	int rc = pump(ch, left < 0 || left > WAIT_SLICE_MS ? WAIT_SLICE_MS : left);
	return rc < 0 ? rc : 0;
}

static int check_call(const struct rcc_chan *ch, const void *buf, int timeout_ms, const char *what)
{
	if (!ch || !buf || !ch->ep || timeout_ms < -1 || (!ch->own_cq && timeout_ms))
		return rcci_fail(-EINVAL,
				 "%s: NULL argument, an unbound channel, a timeout below -1, "
				 "or a wait on an application's CQ",
				 what);
	return 0;
}

/* What a blocking call of the channel waits for: a set of these bits. */
enum chan_want {
	WANT_ARRIVAL = RCC_CHAN_CAN_RECV,    /* something for rcc_chan_recv() or _poll_app() */
	WANT_MSG_CREDIT = RCC_CHAN_CAN_SEND, /* a credit a message may take, and a send slot */
	WANT_WRITE_CREDIT = 4u,              /* a credit a WRITE_WITH_IMM may take */
	WANT_FLUSHED = 8u,                   /* every send of the channel completed */
};

static bool have(const struct rcc_chan *ch, enum chan_want w)
{
	switch (w) {
	case WANT_MSG_CREDIT:
		if (ch->tx_posted - ch->tx_done >= ch->credits)
			return false;
		/* fall through */
	case WANT_WRITE_CREDIT:
		/* the last credit is kept for giving credits back */
		return !ch->err && ch->tx_credits >= 2;
	case WANT_ARRIVAL:
		return ch->arrived_n || ch->app_n; /* what came before a failure first */
	case WANT_FLUSHED:
		return !ch->err && ch->tx_posted == ch->tx_done;
	}
	return false;
}

/* Which of wants hold now. */
static unsigned have_any(const struct rcc_chan *ch, unsigned wants)
{
	unsigned got = 0;

	/* only the bits asked for: a send (one bit, every message) looks once */
	for (unsigned left = wants; left; left &= left - 1) {
		unsigned bit = left & -left;
		if (have(ch, (enum chan_want)bit))
			got |= bit;
	}
	return got;
}

/* Up to timeout_ms until one of wants holds: which ones (> 0); the
 * channel's failure; -EAGAIN (timeout 0) or -ETIMEDOUT. */
static int wait_for(struct rcc_chan *ch, unsigned wants, int timeout_ms)
{
	uint64_t deadline = rcci_deadline(timeout_ms);

	for (;;) {
		pump(ch, 0);
		unsigned got = have_any(ch, wants);
		if (got)
			return (int)got;
		if (ch->err || gone(ch))
			return failed(ch);
		int rc = wait_turn(ch, deadline, timeout_ms);
		if (rc)
			return rc;
	}
}

int rcc_chan_send(struct rcc_chan *ch, const void *buf, size_t len, int timeout_ms)
{
	int rc = check_call(ch, buf, timeout_ms, "rcc_chan_send");

	if (rc)
		return rc;
	if (!len || len > ch->msg_max)
		return rcci_fail(-EMSGSIZE, "rcc_chan_send: %zu bytes, want 1..%u", len,
				 ch->msg_max);
	rc = wait_for(ch, WANT_MSG_CREDIT, timeout_ms);
	return rc < 0 ? rc : post_one(ch, CHAN_MSG, buf, (uint32_t)len);
}

int rcc_chan_write_imm(struct rcc_chan *ch, const struct rcc_sge *sge, int num_sge,
		       uint64_t remote_addr, uint32_t rkey, uint32_t imm, uint64_t wr_id,
		       unsigned flags, int timeout_ms)
{
	int rc = check_call(ch, sge, timeout_ms, "rcc_chan_write_imm");

	if (rc)
		return rc;
	if ((wr_id & WR_TAG_MASK) == WR_TAG)
		return rcci_fail(-EINVAL, "rcc_chan_write_imm: wr_id carries the channel's tag");
	rc = wait_for(ch, WANT_WRITE_CREDIT, timeout_ms);
	if (rc < 0)
		return rc;
	rc = rcc_post_write_imm(ch->ep, sge, num_sge, remote_addr, rkey, imm, wr_id, flags);
	if (rc == -ENOTCONN) {
		chan_fail(ch, -ECONNRESET, "the connection is gone");
		return failed(ch);
	}
	if (!rc)
		ch->tx_credits--;
	return rc;
}

int rcc_chan_recv(struct rcc_chan *ch, void *buf, size_t cap, struct rcc_chan_write_note *note,
		  int timeout_ms)
{
	int rc = check_call(ch, cap ? buf : ch, timeout_ms, "rcc_chan_recv");

	if (rc)
		return rc;
	uint64_t deadline = rcci_deadline(timeout_ms);
	for (;;) {
		pump(ch, 0);
		if (ch->arrived_n) {
			struct arrival a = ch->arrived[ch->arrived_head];
			if (a.write && !note) {
				chan_fail(ch, -EPROTO,
					  "the peer wrote with immediate data, which this "
					  "reader did not ask for");
				return failed(ch);
			}
			if (!a.write && cap < a.len)
				return rcci_fail(
					-EMSGSIZE,
					"rcc_chan_recv: a message of %u bytes, room for %zu", a.len,
					cap);
			if (a.write)
				*note = (struct rcc_chan_write_note){ .imm = a.imm, .len = a.len };
			else
				memcpy(buf, recv_slot(ch, a.slot) + CHAN_HDR_LEN, a.len);
			ch->arrived_head = (ch->arrived_head + 1) % ch->credits;
			ch->arrived_n--;
			if (!ch->err) {
				repost(ch, a.slot);
				return_credits(ch);
			}
			return a.write ? 0 : (int)a.len;
		}
		if (ch->err)
			return failed(ch);
		if (gone(ch)) {
			if (ch->arrived_n)
				continue;
			return failed(ch);
		}
		rc = wait_turn(ch, deadline, timeout_ms);
		if (rc)
			return rc;
	}
}

int rcc_chan_wait(struct rcc_chan *ch, int timeout_ms)
{
	return rcc_chan_wait_any(ch, RCC_CHAN_CAN_RECV, timeout_ms);
}

int rcc_chan_wait_any(struct rcc_chan *ch, unsigned events, int timeout_ms)
{
	int rc = check_call(ch, ch, timeout_ms, "rcc_chan_wait");

	if (rc)
		return rc;
	if (!events || (events & ~(RCC_CHAN_CAN_RECV | RCC_CHAN_CAN_SEND)))
		return rcci_fail(-EINVAL,
				 "rcc_chan_wait_any: events 0x%x, want RCC_CHAN_CAN_RECV, "
				 "RCC_CHAN_CAN_SEND or both",
				 events);
	return wait_for(ch, events, timeout_ms);
}

int rcc_chan_flush(struct rcc_chan *ch, int timeout_ms)
{
	int rc = check_call(ch, ch, timeout_ms, "rcc_chan_flush");

	if (rc)
		return rc;
	rc = wait_for(ch, WANT_FLUSHED, timeout_ms);
	return rc < 0 ? rc : 0;
}

struct rcc_cq *rcc_chan_cq(const struct rcc_chan *ch) { return ch ? ch->cq : NULL; }

uint32_t rcc_chan_pending(const struct rcc_chan *ch) { return ch ? ch->arrived_n : 0; }

int rcc_chan_poll_app(struct rcc_chan *ch, struct rcc_wc *wc, int max)
{
	int n = 0;

	if (!ch || !wc || max <= 0 || !ch->own_cq || !ch->ep)
		return rcci_fail(-EINVAL, "rcc_chan_poll_app: NULL argument, max <= 0, an "
					  "unbound channel or one on an application's CQ");
	if (!ch->app_n) {
		int rc = pump(ch, 0);
		if (rc < 0)
			return rc;
	}
	while (n < max && ch->app_n) {
		wc[n++] = ch->app_wc[ch->app_head];
		ch->app_head = (ch->app_head + 1) % ch->app_cap;
		ch->app_n--;
	}
	return n;
}

int rcc_chan_destroy(struct rcc_chan *ch)
{
	int rc = 0, r;

	if (!ch)
		return 0;
	if (ch->own_cq) {
		r = rcc_cq_destroy(ch->cq);
		if (r && !rc)
			rc = r;
	}
	r = rcc_mr_dereg(ch->mr);
	if (r && !rc)
		rc = r;
	munmap(ch->mem, ch->mem_len);
	free_chan(ch);
	return rc;
}
