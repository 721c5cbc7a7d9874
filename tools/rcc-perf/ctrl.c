/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control channel: small SEND/RECV messages on an endpoint of its own.
 * Its CQ is in WAIT mode, so a side with nothing to do sleeps instead of
 * competing for the CPU with a peer on the same host.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sess.h"

#define SLICE_MS 200

int ctrl_init(struct ctrl *c, struct rcc_ctx *ctx)
{
	size_t len = 2 * CTRL_SLOTS * CTRL_SLOT_LEN;
	struct rcc_cq_attr ca = { .depth = 4 * CTRL_SLOTS, .mode = RCC_CQ_WAIT };
	int rc;

	memset(c, 0, sizeof(*c));
	c->buf = calloc(1, len);
	if (!c->buf)
		return -ENOMEM;
	rc = rcc_mr_reg(ctx, c->buf, len, RCC_ACCESS_LOCAL_WRITE, &c->mr);
	if (rc)
		goto err_buf;
	rc = rcc_cq_create(ctx, &ca, &c->cq);
	if (rc)
		goto err_mr;
	for (int i = 0; i < CTRL_SLOTS; i++) {
		c->rsge[i] = rcc_mr_sge(c->mr, c->buf + i * CTRL_SLOT_LEN, CTRL_SLOT_LEN);
		c->initial[i] = (struct rcc_recv_wr){ .wr_id = WR_RECV | (uint64_t)i,
						      .sg_list = &c->rsge[i],
						      .num_sge = 1 };
	}
	c->last_heard_ns = mono_ns();
	return 0;

err_mr:
	rcc_mr_dereg(c->mr);
err_buf:
	free(c->buf);
	c->buf = NULL;
	return rc;
}

void ctrl_fill_attr(struct ctrl *c, struct rcc_ep_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->send_cq = c->cq;
	attr->sq_depth = CTRL_SLOTS;
	attr->rq_depth = CTRL_SLOTS;
	attr->max_send_sge = 1;
	attr->max_recv_sge = 1;
	attr->initial_recv = c->initial;
	attr->num_initial_recv = CTRL_SLOTS;
}

void ctrl_fini(struct ctrl *c)
{
	if (c->ep)
		rcc_ep_close(c->ep);
	if (c->cq)
		rcc_cq_destroy(c->cq);
	if (c->mr)
		rcc_mr_dereg(c->mr);
	free(c->buf);
	memset(c, 0, sizeof(*c));
}

/*
 * Handle completions: queue messages, repost their slots, count finished
 * sends. A failed completion is remembered, not returned at once: messages
 * that arrived before the connection went down (a BYE, say) are still read.
 */
static void process(struct ctrl *c, const struct rcc_wc *wc, int n)
{
	for (int i = 0; i < n; i++) {
		if (wc[i].status != RCC_WC_SUCCESS) {
			/* A flush means the peer left or the link broke. */
			if (!c->err)
				c->err = wc[i].status == RCC_WC_WR_FLUSH_ERR ? -ECONNRESET : -EIO;
			continue;
		}
		if (!(wc[i].wr_id & WR_RECV)) {
			c->sends_out--;
			continue;
		}
		int slot = (int)(wc[i].wr_id & ~WR_RECV);
		struct ctrl_msg m;
		if (slot >= CTRL_SLOTS ||
		    ctrl_decode(c->buf + slot * CTRL_SLOT_LEN, wc[i].byte_len, &m)) {
			perr("malformed control message from the peer");
			c->err = -EPROTO;
			continue;
		}
		if (c->qn == CTRL_QUEUE) {
			c->err = -EOVERFLOW;
			continue;
		}
		c->queue[(c->qhead + c->qn++) % CTRL_QUEUE] = m;
		c->last_heard_ns = mono_ns();
		int rc = rcc_post_recv(c->ep, &c->rsge[slot], 1, wc[i].wr_id);
		if (rc && !c->err)
			c->err = rc;
	}
}

static int take(struct ctrl *c, struct ctrl_msg *m)
{
	if (!c->qn)
		return 0;
	*m = c->queue[c->qhead];
	c->qhead = (c->qhead + 1) % CTRL_QUEUE;
	c->qn--;
	return 1;
}

void ctrl_unget(struct ctrl *c, const struct ctrl_msg *m)
{
	/* Room is guaranteed: the message was just taken from the queue. */
	c->qhead = (c->qhead + CTRL_QUEUE - 1) % CTRL_QUEUE;
	c->queue[c->qhead] = *m;
	c->qn++;
}

static int link_ok(struct ctrl *c)
{
	if (c->err)
		return c->err;
	return rcc_ep_state(c->ep) == RCC_EP_CONNECTED ? 0 : -ECONNRESET;
}

int ctrl_poll(struct ctrl *c, struct ctrl_msg *m)
{
	struct rcc_wc wc[8];
	int n, rc;

	if (take(c, m))
		return 1;
	n = rcc_cq_poll(c->cq, wc, 8);
	if (n < 0)
		return n;
	process(c, wc, n);
	if (take(c, m))
		return 1;
	rc = link_ok(c);
	return rc ? rc : 0;
}

int ctrl_send(struct ctrl *c, const struct ctrl_msg *m)
{
	struct rcc_wc wc[8];
	uint64_t deadline = mono_ns() + 10ull * 1000000000ull;
	int rc;

	if (c->err)
		return c->err;
	/* Only a dead or stuck peer leaves every slot busy: wait, bounded. */
	while (c->sends_out >= CTRL_SLOTS) {
		int n = rcc_cq_wait(c->cq, wc, 8, SLICE_MS);
		if (n == -ETIMEDOUT) {
			if (mono_ns() > deadline)
				return -ETIMEDOUT;
			rc = link_ok(c);
			if (rc)
				return rc;
			continue;
		}
		if (n < 0)
			return n;
		process(c, wc, n);
		if (c->err)
			return c->err;
	}
	unsigned slot = CTRL_SLOTS + c->send_next++ % CTRL_SLOTS;
	uint8_t *p = c->buf + slot * CTRL_SLOT_LEN;
	ctrl_encode(m, p);
	struct rcc_sge sge = rcc_mr_sge(c->mr, p, PERF_CTRL_MSG_LEN);
	rc = rcc_post_send(c->ep, &sge, 1, slot, RCC_SEND_SIGNALED);
	if (rc)
		return rc;
	c->sends_out++;
	return 0;
}

int ctrl_wait(struct ctrl *c, struct ctrl_msg *m, int timeout_ms)
{
	struct rcc_wc wc[8];
	uint64_t quiet_since = mono_ns();
	int rc;

	for (;;) {
		while (take(c, m)) {
			if (m->type != CTRL_HEARTBEAT)
				return 0;
		}
		int n = rcc_cq_wait(c->cq, wc, 8, SLICE_MS);
		if (perf_stop)
			return -EINTR;
		if (n == -ETIMEDOUT) {
			rc = link_ok(c);
			if (rc)
				return rc;
			/* Heartbeats and other messages restart the silence timer. */
			uint64_t since = c->last_heard_ns > quiet_since ? c->last_heard_ns :
									  quiet_since;
			if (mono_ns() - since > (uint64_t)timeout_ms * 1000000ull)
				return -ETIMEDOUT;
			continue;
		}
		if (n < 0)
			return n;
		process(c, wc, n);
		if (!c->qn && c->err)
			return c->err;
	}
}

int ctrl_expect(struct ctrl *c, uint8_t type, struct ctrl_msg *m, int timeout_ms)
{
	static const char *const names[] = { "?", "READY", "DONE", "RESULT", "HEARTBEAT", "BYE" };
	int rc = ctrl_wait(c, m, timeout_ms);

	if (rc)
		return rc;
	if (m->type != type) {
		perr("protocol error: peer sent %s, expected %s", names[m->type], names[type]);
		return -EPROTO;
	}
	return 0;
}
