/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control channel on the session layer's message channel (rcc_chan_*,
 * session.h): it keeps the receives posted, the send buffers, the credits
 * and the completions of our WRITEs; here are only the frames (encoding,
 * sealing, checking), keepalives, deadlines and the reasons for failures.
 */
#include "chan.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opts.h"
#include "rcc/session.h"
#include "stats.h"
#include "stop.h"

#define SLICE_MS 200
#define SEND_WAIT_MS 30000 /* for a credit: the peer reads none of our messages */
#define KEEPALIVE_NS (3ull * 1000000000ull)

struct chan {
	struct rcc_chan *ch;
	struct rcc_ep *ep;
	struct rcc_wc held; /* a completion of ours taken, not yet handed out */
	bool have_held;
	bool fd_mode; /* -m fd: sleep in poll(2) on the channel CQ's descriptor */
	bool is_client;
	uint8_t token_local[XFER_TOKEN_LEN], token_peer[XFER_TOKEN_LEN];
	bool sealed;
	uint8_t dir_tx, dir_rx;
	uint8_t skey[XFER_MAC_LEN];
	uint64_t seq_tx, seq_rx;
	uint64_t last_tx_ns;
	uint64_t last_rx_ns;      /* last arrival or completion: the peer is alive */
	int dead;                 /* first fatal status, 0 while alive */
	const atomic_bool *abort; /* chan_set_abort() */
	char why[160];
	uint8_t rx[XFER_FRAME_MAX];
};

static int fail(struct chan *c, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct chan *c, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
	/* A bad frame leaves the link usable, so the peer can still be told. */
	if (rc != -ETIMEDOUT && rc != -EINTR && rc != -EBADMSG && !c->dead)
		c->dead = rc;
	return rc;
}

/* A failure of the message channel, as chan.h's statuses. */
static int chan_error(struct chan *c, int rc, const char *what)
{
	switch (rc) {
	case -ECONNRESET:
		return fail(c, -ECONNRESET, "connection lost (peer closed or vanished)");
	case -EPROTO:
		/* the channel's words say which rule (escaped: peer-controlled) */
		return fail(c, -EBADMSG, "%s broke the message channel's rules (%s)", chan_peer(c),
			    rcc_last_error());
	case -ETIMEDOUT:
		return fail(c, -ETIMEDOUT, "sends to %s do not complete", chan_peer(c));
	case -EOVERFLOW:
		return fail(c, -EIO, "more RDMA writes outstanding than the channel allows");
	default:
		return fail(c, -EIO, "%s: %s (%s)", what, rcc_strerror(rc), rcc_last_error());
	}
}

/* Both ends must agree on msg_max (the largest frame) and the credits
 * (proto.h); the sender's WRITEs (write_depth) are the channel's app_depth. */
static int chan_new(const struct chan_opts *o, struct rcc_ctx *ctx, struct chan **out)
{
	struct rcc_chan_attr ca = { .msg_max = XFER_FRAME_MAX,
				    .credits = XFER_CHAN_CREDITS,
				    .cq_mode = o->cq_mode,
				    .app_depth = o->write_depth };
	struct chan *c = calloc(1, sizeof(*c));
	int rc;

	if (!c)
		return -ENOMEM;
	rc = rcc_chan_create(ctx, &ca, &c->ch);
	if (rc) {
		free(c);
		return rc;
	}
	c->fd_mode = o->cq_mode == RCC_CQ_FD;
	*out = c;
	return 0;
}

void chan_disconnect(struct chan *c)
{
	if (c && c->ep)
		rcc_ep_disconnect(c->ep);
}

void chan_set_abort(struct chan *c, const atomic_bool *flag) { c->abort = flag; }

void chan_close(struct chan *c)
{
	if (!c)
		return;
	if (c->ep)
		rcc_ep_close(c->ep);
	rcc_chan_destroy(c->ch);
	memset(c->skey, 0, sizeof(c->skey));
	free(c);
}

/* A reason worth showing: printable ASCII only (it comes from the peer). */
static bool printable(const uint8_t *s, size_t n)
{
	if (!n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return false;
	return true;
}

int chan_connect(struct rcc_ctx *ctx, const char *addr, const struct chan_opts *o, int timeout_ms,
		 struct chan **out, char *err, size_t errlen)
{
	uint8_t pdata[XFER_PDATA_LEN];
	struct rcc_ep_attr a = { .private_data = pdata, .private_data_len = XFER_PDATA_LEN };
	const void *peer_pd;
	size_t peer_len, why_len = 0;
	uint8_t why[RCC_REJECT_PRIVATE_DATA_MAX];
	struct chan *c;
	int rc;

	rc = chan_new(o, ctx, &c);
	if (rc) {
		snprintf(err, errlen, "cannot set up buffers: %s", rcc_strerror(rc));
		return rc;
	}
	c->is_client = true;
	rc = random_bytes(c->token_local, XFER_TOKEN_LEN);
	if (rc) {
		snprintf(err, errlen, "no random numbers available");
		goto err_chan;
	}
	pdata_encode(c->token_local, pdata);
	rc = rcc_chan_ep_attr(c->ch, &a);
	if (!rc)
		rc = rcc_connect_ex(ctx, addr, &a, timeout_ms, &c->ep, why, &why_len);
	if (rc) {
		if (rc == -ECONNABORTED && printable(why, why_len))
			snprintf(err, errlen, "the receiver turned the connection away: %.*s",
				 (int)why_len, (const char *)why);
		else if (rc == -ECONNABORTED)
			snprintf(err, errlen,
				 "the receiver turned the connection away (busy, or "
				 "not an rcc-xfer receiver of this version)");
		else
			snprintf(err, errlen, "%s", explain_status(rc));
		goto err_chan;
	}
	rcc_chan_bind(c->ch, c->ep);
	peer_pd = rcc_ep_private_data(c->ep, &peer_len);
	rc = pdata_decode(peer_pd, peer_len, c->token_peer);
	if (rc) {
		snprintf(err, errlen, "%s is not an rcc-xfer receiver of protocol version %d", addr,
			 XFER_PROTO_VERSION);
		rc = -EPROTO;
		goto err_chan;
	}
	c->last_tx_ns = c->last_rx_ns = mono_ns();
	*out = c;
	return 0;

err_chan:
	chan_close(c);
	return rc;
}

int chan_accept(struct rcc_ctx *ctx, struct rcc_conn_req *req,
		const uint8_t peer_token[XFER_TOKEN_LEN], const struct chan_opts *o,
		struct chan **out, char *err, size_t errlen)
{
	uint8_t pdata[XFER_PDATA_LEN];
	struct rcc_ep_attr a = { .private_data = pdata, .private_data_len = XFER_PDATA_LEN };
	struct chan *c;
	int rc;

	rc = chan_new(o, ctx, &c);
	if (rc) {
		snprintf(err, errlen, "cannot set up buffers: %s", rcc_strerror(rc));
		rcc_reject_req(req, NULL, 0);
		return rc;
	}
	memcpy(c->token_peer, peer_token, XFER_TOKEN_LEN);
	rc = random_bytes(c->token_local, XFER_TOKEN_LEN);
	if (!rc)
		rc = rcc_chan_ep_attr(c->ch, &a);
	if (rc) {
		snprintf(err, errlen, "cannot prepare the connection: %s", rcc_strerror(rc));
		rcc_reject_req(req, NULL, 0);
		goto err_chan;
	}
	pdata_encode(c->token_local, pdata);
	rc = rcc_accept_req(req, &a, &c->ep);
	if (rc) {
		snprintf(err, errlen, "accept failed: %s", rcc_strerror(rc));
		goto err_chan;
	}
	rcc_chan_bind(c->ch, c->ep);
	c->last_tx_ns = c->last_rx_ns = mono_ns();
	*out = c;
	return 0;

err_chan:
	chan_close(c);
	return rc;
}

const char *chan_peer(const struct chan *c) { return c->ep ? rcc_ep_peer(c->ep) : "the peer"; }

void chan_tokens(const struct chan *c, uint8_t token_s[XFER_TOKEN_LEN],
		 uint8_t token_r[XFER_TOKEN_LEN])
{
	memcpy(token_s, c->is_client ? c->token_local : c->token_peer, XFER_TOKEN_LEN);
	memcpy(token_r, c->is_client ? c->token_peer : c->token_local, XFER_TOKEN_LEN);
}

const char *chan_why(const struct chan *c) { return c->why; }

void chan_seal(struct chan *c, enum auth_role role, const uint8_t skey[XFER_MAC_LEN])
{
	memcpy(c->skey, skey, XFER_MAC_LEN);
	c->dir_tx = (uint8_t)role;
	c->dir_rx = role == AUTH_SENDER ? AUTH_RECEIVER : AUTH_SENDER;
	c->seq_tx = c->seq_rx = 0;
	c->sealed = true;
}

/* A received frame: check it, authenticate it once sealed, decode it. */
static int open_frame(struct chan *c, const uint8_t *f, uint32_t len, struct xmsg *m)
{
	uint8_t tag[XFER_TAG_LEN];
	const char *why = "";
	struct xhdr h;

	if (xhdr_parse(f, len, &h, &why))
		return fail(c, -EBADMSG, "malformed frame from %s: %s", chan_peer(c), why);
	bool is_sealed = h.flags & XFER_FLAG_SEALED;
	if (c->sealed && !is_sealed) {
		/* The one unsealed message allowed after sealing: a refusal
		 * sent by a peer that never reached the sealed state. */
		if (!(h.type == XM_ERROR && c->seq_rx == 0))
			return fail(c, -EBADMSG, "unauthenticated %s frame from %s",
				    xmsg_type_name(h.type), chan_peer(c));
	} else if (!c->sealed && is_sealed) {
		return fail(c, -EBADMSG, "sealed frame from %s before authentication",
			    chan_peer(c));
	} else if (is_sealed) {
		size_t flen = len - XFER_TAG_LEN;
		if (auth_frame_tag(c->skey, c->dir_rx, c->seq_rx, f, flen, tag))
			return fail(c, -EIO, "cannot compute a message tag");
		if (!auth_equal(tag, f + flen, XFER_TAG_LEN))
			return fail(c, -EBADMSG, "%s frame from %s failed authentication",
				    xmsg_type_name(h.type), chan_peer(c));
		c->seq_rx++;
	}
	if (xmsg_decode_body(&h, f + XFER_HDR_LEN, m, &why))
		return fail(c, -EBADMSG, "malformed %s from %s: %s", xmsg_type_name(h.type),
			    chan_peer(c), why);
	return 0;
}

/* 1: an event for the caller; 0: nothing yet; < 0: fatal. Our WRITEs'
 * completions come first, except a failed one: what the peer said before the
 * connection failed is handed out before that. */
static int take(struct chan *c, struct chan_ev *ev)
{
	struct rcc_chan_write_note note;
	int n;

	if (!c->have_held) {
		n = rcc_chan_poll_app(c->ch, &c->held, 1);
		if (n < 0)
			return fail(c, -EIO, "completion queue: %s", rcc_strerror(n));
		c->have_held = n == 1;
	}
	if (c->have_held && c->held.status == RCC_WC_SUCCESS) {
		c->have_held = false;
		c->last_rx_ns = mono_ns();
		ev->type = CEV_WRITE_DONE;
		ev->id = (uint32_t)c->held.wr_id;
		return 1;
	}
	while ((n = rcc_chan_recv(c->ch, c->rx, sizeof(c->rx), &note, 0)) >= 0) {
		c->last_rx_ns = mono_ns();
		if (n == 0) {
			ev->type = CEV_CHUNK;
			ev->imm = note.imm;
			ev->len = note.len;
			return 1;
		}
		int rc = open_frame(c, c->rx, (uint32_t)n, &ev->msg);
		if (rc)
			return rc;
		if (ev->msg.type != XM_KEEPALIVE) {
			ev->type = CEV_MSG;
			return 1;
		}
	}
	if (c->have_held) {
		c->have_held = false;
		if (c->held.status == RCC_WC_WR_FLUSH_ERR)
			return fail(c, -ECONNRESET, "connection lost (peer closed or vanished)");
		return fail(c, -EIO, "RDMA write failed: %s", rcc_wc_status_str(c->held.status));
	}
	return n == -EAGAIN ? 0 : chan_error(c, n, "receive");
}

/* With -m fd it sleeps as a program that watches many descriptors would,
 * in poll(2) on the CQ's descriptor, once the channel has drained it. */
int chan_wait(struct chan *c, int ms)
{
	if (!c->fd_mode)
		return rcc_chan_wait(c->ch, ms);
	struct rcc_cq *cq = rcc_chan_cq(c->ch);
	int rc;
	/* Arm before sleeping (rcc.h); 1: something came, look again. A few
	 * times at most: an error, or input another thread is reading right
	 * now, leaves the wake-up to the library's thread, which is only slower. */
	for (int tries = 0;; tries++) {
		rc = rcc_chan_wait(c->ch, 0);
		if (rc != -EAGAIN)
			return rc;
		if (tries == 8 || rcc_cq_arm(cq) <= 0)
			break;
	}
	struct pollfd pfd = { .fd = rcc_cq_fd(cq), .events = POLLIN };
	if (poll(&pfd, 1, ms) <= 0)
		return -ETIMEDOUT;
	rc = rcc_chan_wait(c->ch, 0);
	return rc == -EAGAIN ? -ETIMEDOUT : rc;
}

int chan_next(struct chan *c, int idle_timeout_ms, int max_wait_ms, struct chan_ev *ev)
{
	uint64_t wait_until = max_wait_ms < 0 ? UINT64_MAX :
						mono_ns() + (uint64_t)max_wait_ms * 1000000ull;
	uint64_t idle_ns = (uint64_t)idle_timeout_ms * 1000000ull;
	int rc;

	if (c->dead)
		return c->dead;
	for (;;) {
		/* Before taking: a peer that keeps the channel busy (a stream of
		 * completions and credits) must not keep a stop from being seen */
		if (stop_requested())
			return fail(c, -EINTR, "interrupted");
		rc = take(c, ev);
		if (rc)
			return rc > 0 ? 0 : rc;
		if (c->abort && atomic_load(c->abort))
			return fail(c, -ECANCELED,
				    "dropped before authenticating (too many such connections)");
		rc = chan_tick(c);
		if (rc)
			return rc;
		/* Deadlines are checked only after a look at the channel, so that
		 * time spent on local work is not mistaken for a silent peer. */
		uint64_t now = mono_ns();
		uint64_t idle_end = c->last_rx_ns + idle_ns;
		uint64_t end = idle_end < wait_until ? idle_end : wait_until;
		uint64_t left_ms = end > now ? (end - now + 999999) / 1000000 : 0;
		if (left_ms) {
			rc = chan_wait(c, left_ms < SLICE_MS ? (int)left_ms : SLICE_MS);
			if (rc == 1)
				continue;
			if (rc != -ETIMEDOUT)
				return chan_error(c, rc, "wait");
		}
		now = mono_ns();
		if (now >= c->last_rx_ns + idle_ns)
			return fail(c, -ETIMEDOUT, "%s was silent for %d s", chan_peer(c),
				    idle_timeout_ms / 1000);
		if (now >= wait_until)
			return -EAGAIN;
	}
}

/* A post that finds the connection gone: not dead yet, as what the peer
 * sent before it left is still queued and chan_next() hands it out first. */
static int post_failed(struct chan *c, int rc, const char *what)
{
	if (rc != -ECONNRESET)
		return chan_error(c, rc, what);
	snprintf(c->why, sizeof(c->why), "connection lost (peer closed or vanished)");
	return -ECONNRESET;
}

int chan_send(struct chan *c, const struct xmsg *m)
{
	uint8_t f[XFER_FRAME_MAX];
	int len, rc;

	if (c->dead)
		return c->dead;
	len = xmsg_encode(m, f, XFER_FRAME_MAX - XFER_TAG_LEN);
	if (len < 0)
		return fail(c, -EIO, "cannot encode %s: %s", xmsg_type_name(m->type),
			    rcc_strerror(len));
	if (c->sealed) {
		f[5] |= XFER_FLAG_SEALED;
		if (auth_frame_tag(c->skey, c->dir_tx, c->seq_tx, f, (size_t)len, f + len))
			return fail(c, -EIO, "cannot compute a message tag");
		c->seq_tx++;
		len += XFER_TAG_LEN;
	}
	rc = rcc_chan_send(c->ch, f, (size_t)len, SEND_WAIT_MS);
	if (rc)
		return post_failed(c, rc, "cannot post a send");
	c->last_tx_ns = mono_ns();
	return 0;
}

int chan_write_imm(struct chan *c, const struct rcc_sge *sge, uint64_t raddr, uint32_t rkey,
		   uint32_t imm, uint32_t id)
{
	int rc;

	if (c->dead)
		return c->dead;
	rc = rcc_chan_write_imm(c->ch, sge, 1, raddr, rkey, imm, id, RCC_SEND_SIGNALED,
				SEND_WAIT_MS);
	if (rc)
		return post_failed(c, rc, "cannot post an RDMA write");
	c->last_tx_ns = mono_ns();
	return 0;
}

int chan_tick(struct chan *c)
{
	struct xmsg m = { .type = XM_KEEPALIVE };

	if (c->dead)
		return c->dead;
	if (!c->sealed || mono_ns() - c->last_tx_ns < KEEPALIVE_NS)
		return 0;
	return chan_send(c, &m);
}

/*
 * What we sent last (an ERROR, a BYE) must reach the peer's reader, not only
 * its receive queue: a peer blocked in a send waits for credits that only
 * our reading gives back, and would meet the closed connection before it
 * read our last word. So read (and drop) what it says until it leaves, or
 * the bound passes.
 */
int chan_drain(struct chan *c, int timeout_ms)
{
	uint64_t deadline = mono_ns() + (uint64_t)timeout_ms * 1000000ull;
	struct rcc_chan_write_note note;
	int rc;

	for (;;) {
		uint64_t now = mono_ns();
		if (now >= deadline)
			return -ETIMEDOUT;
		uint64_t left_ms = (deadline - now + 999999) / 1000000;
		rc = rcc_chan_recv(c->ch, c->rx, sizeof(c->rx), &note,
				   left_ms < SLICE_MS ? (int)left_ms : SLICE_MS);
		if (rc < 0 && rc != -ETIMEDOUT)
			return rc == -ECONNRESET ? 0 : rc;
	}
}
