/* SPDX-License-Identifier: BSD-3-Clause */
#include "chan.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "opts.h"
#include "stats.h"
#include "stop.h"

/* wr_id layout: kind in the top byte, index below. */
#define WR_RX (1ull << 56)
#define WR_TX (2ull << 56)
#define WR_WRITE (3ull << 56)
#define WR_KIND(id) ((id) & (0xffull << 56))
#define WR_INDEX(id) ((uint32_t)((id)&0xffffffffu))

#define SLICE_MS 200
#define KEEPALIVE_NS (3ull * 1000000000ull)

struct chan {
	struct rcc_ctx *ctx;
	struct rcc_cq *cq;
	struct rcc_ep *ep;
	uint8_t *rx_mem, *tx_mem;
	size_t rx_bytes, tx_bytes;
	struct rcc_mr *rx_mr, *tx_mr;
	uint32_t nrx, ntx;
	uint32_t *tx_free;
	uint32_t ntx_free;
	struct rcc_wc *stash; /* completions pulled but not yet handed out */
	uint32_t stash_cap, stash_head, stash_count;
	bool is_client;
	uint8_t token_local[XFER_TOKEN_LEN], token_peer[XFER_TOKEN_LEN];
	bool sealed;
	uint8_t dir_tx, dir_rx;
	uint8_t skey[XFER_MAC_LEN];
	uint64_t seq_tx, seq_rx;
	uint64_t last_tx_ns;
	uint64_t last_rx_ns;      /* last completion of any kind: the peer is alive */
	int dead;                 /* first fatal status, 0 while alive */
	const atomic_bool *abort; /* chan_set_abort() */
	char why[160];
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

static void *map_zero(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static struct rcc_sge rx_sge(const struct chan *c, uint32_t i)
{
	return rcc_mr_sge(c->rx_mr, c->rx_mem + (size_t)i * XFER_FRAME_MAX, XFER_FRAME_MAX);
}

/* Everything but the endpoint, in the order chan_close() undoes it. */
static int chan_alloc(struct rcc_ctx *ctx, const struct chan_opts *o, struct chan **out)
{
	struct chan *c = calloc(1, sizeof(*c));
	struct rcc_cq_attr ca = { 0 };
	int rc = -ENOMEM;

	if (!c)
		return -ENOMEM;
	c->ctx = ctx;
	c->nrx = o->rx_count;
	c->ntx = o->tx_count;
	c->stash_cap = o->rx_count + o->tx_count + o->write_depth;
	ca.depth = c->stash_cap;
	ca.mode = o->cq_mode;
	rc = rcc_cq_create(ctx, &ca, &c->cq);
	if (rc)
		goto err_free;
	rc = -ENOMEM;
	c->rx_bytes = (size_t)c->nrx * XFER_FRAME_MAX;
	c->tx_bytes = (size_t)c->ntx * XFER_FRAME_MAX;
	c->rx_mem = map_zero(c->rx_bytes);
	c->tx_mem = map_zero(c->tx_bytes);
	c->tx_free = calloc(c->ntx, sizeof(*c->tx_free));
	c->stash = calloc(c->stash_cap, sizeof(*c->stash));
	if (!c->rx_mem || !c->tx_mem || !c->tx_free || !c->stash)
		goto err_mem;
	rc = rcc_mr_reg(ctx, c->rx_mem, c->rx_bytes, RCC_ACCESS_LOCAL_WRITE, &c->rx_mr);
	if (rc)
		goto err_mem;
	rc = rcc_mr_reg(ctx, c->tx_mem, c->tx_bytes, RCC_ACCESS_LOCAL_WRITE, &c->tx_mr);
	if (rc)
		goto err_rx_mr;
	for (uint32_t i = 0; i < c->ntx; i++)
		c->tx_free[i] = c->ntx - 1 - i;
	c->ntx_free = c->ntx;
	*out = c;
	return 0;

err_rx_mr:
	rcc_mr_dereg(c->rx_mr);
err_mem:
	free(c->stash);
	free(c->tx_free);
	if (c->tx_mem)
		munmap(c->tx_mem, c->tx_bytes);
	if (c->rx_mem)
		munmap(c->rx_mem, c->rx_bytes);
	rcc_cq_destroy(c->cq);
err_free:
	free(c);
	return rc;
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
	rcc_mr_dereg(c->tx_mr);
	rcc_mr_dereg(c->rx_mr);
	free(c->stash);
	free(c->tx_free);
	munmap(c->tx_mem, c->tx_bytes);
	munmap(c->rx_mem, c->rx_bytes);
	rcc_cq_destroy(c->cq);
	memset(c->skey, 0, sizeof(c->skey));
	free(c);
}

/* Endpoint attributes with every receive buffer posted up front. */
static int ep_attr_for(struct chan *c, const struct chan_opts *o, const uint8_t *pdata,
		       struct rcc_ep_attr *a, struct rcc_recv_wr **wrs, struct rcc_sge **sges)
{
	*wrs = calloc(c->nrx, sizeof(**wrs));
	*sges = calloc(c->nrx, sizeof(**sges));
	if (!*wrs || !*sges) {
		free(*wrs);
		free(*sges);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < c->nrx; i++) {
		(*sges)[i] = rx_sge(c, i);
		(*wrs)[i] = (struct rcc_recv_wr){ .wr_id = WR_RX | i,
						  .sg_list = &(*sges)[i],
						  .num_sge = 1 };
	}
	memset(a, 0, sizeof(*a));
	a->send_cq = c->cq;
	a->sq_depth = c->ntx + o->write_depth;
	a->rq_depth = c->nrx;
	a->max_send_sge = 1;
	a->max_recv_sge = 1;
	a->private_data = pdata;
	a->private_data_len = XFER_PDATA_LEN;
	a->initial_recv = *wrs;
	a->num_initial_recv = (int)c->nrx;
	return 0;
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
	struct rcc_ep_attr a;
	struct rcc_recv_wr *wrs;
	struct rcc_sge *sges;
	const void *peer_pd;
	size_t peer_len, why_len = 0;
	uint8_t why[RCC_REJECT_PRIVATE_DATA_MAX];
	struct chan *c;
	int rc;

	rc = chan_alloc(ctx, o, &c);
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
	rc = ep_attr_for(c, o, pdata, &a, &wrs, &sges);
	if (rc) {
		snprintf(err, errlen, "out of memory");
		goto err_chan;
	}
	rc = rcc_connect_ex(ctx, addr, &a, timeout_ms, &c->ep, why, &why_len);
	free(wrs);
	free(sges);
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
	struct rcc_ep_attr a;
	struct rcc_recv_wr *wrs;
	struct rcc_sge *sges;
	struct chan *c;
	int rc;

	rc = chan_alloc(ctx, o, &c);
	if (rc) {
		snprintf(err, errlen, "cannot set up buffers: %s", rcc_strerror(rc));
		rcc_reject_req(req, NULL, 0);
		return rc;
	}
	memcpy(c->token_peer, peer_token, XFER_TOKEN_LEN);
	rc = random_bytes(c->token_local, XFER_TOKEN_LEN);
	if (!rc)
		rc = ep_attr_for(c, o, pdata, &a, &wrs, &sges);
	if (rc) {
		snprintf(err, errlen, "cannot prepare the connection: %s", rcc_strerror(rc));
		rcc_reject_req(req, NULL, 0);
		goto err_chan;
	}
	pdata_encode(c->token_local, pdata);
	rc = rcc_accept_req(req, &a, &c->ep);
	free(wrs);
	free(sges);
	if (rc) {
		snprintf(err, errlen, "accept failed: %s", rcc_strerror(rc));
		goto err_chan;
	}
	c->last_tx_ns = c->last_rx_ns = mono_ns();
	*out = c;
	return 0;

err_chan:
	chan_close(c);
	return rc;
}

const char *chan_peer(const struct chan *c) { return rcc_ep_peer(c->ep); }

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

static int status_error(struct chan *c, const struct rcc_wc *wc)
{
	const char *what = WR_KIND(wc->wr_id) == WR_RX ? "receive" :
			   WR_KIND(wc->wr_id) == WR_TX ? "send" :
							 "RDMA write";

	if (wc->status == RCC_WC_WR_FLUSH_ERR)
		return fail(c, -ECONNRESET, "connection lost (peer closed or vanished)");
	return fail(c, -EIO, "%s failed: %s", what, rcc_wc_status_str(wc->status));
}

/* Wait up to ms for completions. Finished sends are recycled at once; the
 * rest is stashed in arrival order for chan_next(). */
static int pull(struct chan *c, int ms)
{
	struct rcc_wc wc[16];
	int n;

	if (ms > 0 && rcc_cq_get_mode(c->cq) == RCC_CQ_FD) {
		/* -m fd: sleep in poll(2) on the CQ's descriptor, as a program that
		 * watches many descriptors would, once the CQ is drained */
		n = rcc_cq_poll(c->cq, wc, 16);
		if (n == 0) {
			struct pollfd pfd = { .fd = rcc_cq_fd(c->cq), .events = POLLIN };
			if (poll(&pfd, 1, ms) > 0)
				n = rcc_cq_poll(c->cq, wc, 16);
		}
	} else {
		n = ms > 0 ? rcc_cq_wait(c->cq, wc, 16, ms) : rcc_cq_poll(c->cq, wc, 16);
	}
	if (n == -ETIMEDOUT || n == 0)
		return 0;
	if (n < 0)
		return fail(c, -EIO, "completion queue: %s", rcc_strerror(n));
	c->last_rx_ns = mono_ns();
	for (int i = 0; i < n; i++) {
		if (WR_KIND(wc[i].wr_id) == WR_TX && wc[i].status == RCC_WC_SUCCESS) {
			c->tx_free[c->ntx_free++] = WR_INDEX(wc[i].wr_id);
			continue;
		}
		if (c->stash_count == c->stash_cap)
			return fail(c, -EIO, "completion stash overflow");
		c->stash[(c->stash_head + c->stash_count++) % c->stash_cap] = wc[i];
	}
	return n;
}

static int repost(struct chan *c, uint32_t idx)
{
	struct rcc_sge sge = rx_sge(c, idx);
	int rc = rcc_post_recv(c->ep, &sge, 1, WR_RX | idx);

	/* Disconnected: the message in hand is still good, and the flushed
	 * receives queued behind it report the loss in order. */
	if (rc == -ENOTCONN)
		return 0;
	if (rc)
		return fail(c, -EIO, "cannot post a receive: %s", rcc_strerror(rc));
	return 0;
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

/* 1: an event for the caller; 0: consumed here; < 0: fatal. */
static int handle(struct chan *c, const struct rcc_wc *wc, struct chan_ev *ev)
{
	uint32_t idx = WR_INDEX(wc->wr_id);
	int rc;

	if (wc->status != RCC_WC_SUCCESS)
		return status_error(c, wc);
	switch (WR_KIND(wc->wr_id)) {
	case WR_RX:
		if (idx >= c->nrx)
			return fail(c, -EIO, "completion for an unknown receive");
		if (wc->opcode == RCC_WC_RECV_WRITE_IMM) {
			ev->type = CEV_CHUNK;
			ev->imm = wc->imm_data;
			ev->len = wc->byte_len;
			return repost(c, idx) ? c->dead : 1;
		}
		rc = open_frame(c, c->rx_mem + (size_t)idx * XFER_FRAME_MAX, wc->byte_len,
				&ev->msg);
		if (rc)
			return rc;
		if (repost(c, idx))
			return c->dead;
		if (ev->msg.type == XM_KEEPALIVE)
			return 0;
		ev->type = CEV_MSG;
		return 1;
	case WR_WRITE:
		ev->type = CEV_WRITE_DONE;
		ev->id = idx;
		return 1;
	default:
		return fail(c, -EIO, "completion with an unknown work request id");
	}
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
		while (c->stash_count) {
			struct rcc_wc wc = c->stash[c->stash_head];
			c->stash_head = (c->stash_head + 1) % c->stash_cap;
			c->stash_count--;
			rc = handle(c, &wc, ev);
			if (rc)
				return rc > 0 ? 0 : rc;
		}
		if (stop_requested())
			return fail(c, -EINTR, "interrupted");
		if (c->abort && atomic_load(c->abort))
			return fail(c, -ECANCELED,
				    "dropped before authenticating (too many such connections)");
		rc = chan_tick(c);
		if (rc)
			return rc;
		/* Deadlines are checked only after a look at the CQ, so that time
		 * spent on local work is not mistaken for a silent peer. */
		uint64_t now = mono_ns();
		uint64_t idle_end = c->last_rx_ns + idle_ns;
		uint64_t end = idle_end < wait_until ? idle_end : wait_until;
		uint64_t left_ms = end > now ? (end - now + 999999) / 1000000 : 0;
		rc = pull(c, left_ms < SLICE_MS ? (int)left_ms : SLICE_MS);
		if (rc < 0)
			return rc;
		if (rc > 0)
			continue;
		now = mono_ns();
		if (now >= c->last_rx_ns + idle_ns)
			return fail(c, -ETIMEDOUT, "%s was silent for %d s", chan_peer(c),
				    idle_timeout_ms / 1000);
		if (now >= wait_until)
			return -EAGAIN;
	}
}

int chan_send(struct chan *c, const struct xmsg *m)
{
	uint64_t deadline = mono_ns() + 30ull * 1000000000ull;
	uint32_t idx;
	uint8_t *f;
	int len, rc;

	if (c->dead)
		return c->dead;
	while (!c->ntx_free) {
		if (mono_ns() > deadline)
			return fail(c, -ETIMEDOUT, "sends to %s do not complete", chan_peer(c));
		rc = pull(c, SLICE_MS);
		if (rc < 0)
			return rc;
	}
	idx = c->tx_free[c->ntx_free - 1];
	f = c->tx_mem + (size_t)idx * XFER_FRAME_MAX;
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
	struct rcc_sge sge = rcc_mr_sge(c->tx_mr, f, (uint32_t)len);
	rc = rcc_post_send(c->ep, &sge, 1, WR_TX | idx, RCC_SEND_SIGNALED);
	if (rc == -ENOTCONN) {
		/* Not dead yet: what the peer sent before it left is still
		 * queued, and chan_next() hands it out before the loss. */
		snprintf(c->why, sizeof(c->why), "connection lost (peer closed or vanished)");
		return -ECONNRESET;
	}
	if (rc)
		return fail(c, -EIO, "cannot post a send: %s", rcc_strerror(rc));
	c->ntx_free--;
	c->last_tx_ns = mono_ns();
	return 0;
}

int chan_write_imm(struct chan *c, const struct rcc_sge *sge, uint64_t raddr, uint32_t rkey,
		   uint32_t imm, uint32_t id)
{
	int rc;

	if (c->dead)
		return c->dead;
	rc = rcc_post_write_imm(c->ep, sge, 1, raddr, rkey, imm, WR_WRITE | id, RCC_SEND_SIGNALED);
	if (rc == -ENOTCONN) {
		/* As in chan_send(): what the peer said before leaving comes first. */
		snprintf(c->why, sizeof(c->why), "connection lost (peer closed or vanished)");
		return -ECONNRESET;
	}
	if (rc)
		return fail(c, -EIO, "cannot post an RDMA write: %s", rcc_strerror(rc));
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

int chan_drain(struct chan *c, int timeout_ms)
{
	uint64_t deadline = mono_ns() + (uint64_t)timeout_ms * 1000000ull;
	int rc;

	while (c->ntx_free < c->ntx && !c->dead) {
		if (mono_ns() >= deadline)
			return fail(c, -ETIMEDOUT, "sends to %s do not complete", chan_peer(c));
		rc = pull(c, SLICE_MS);
		if (rc < 0)
			return rc;
		/* A failed send is stashed, not recycled: look for it. */
		for (uint32_t i = 0; i < c->stash_count; i++) {
			const struct rcc_wc *wc = &c->stash[(c->stash_head + i) % c->stash_cap];
			if (wc->status != RCC_WC_SUCCESS)
				return status_error(c, wc);
		}
	}
	return c->dead;
}
