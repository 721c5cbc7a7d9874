/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control channel: rcc-perf's messages over the session layer's message
 * channel (rcc_chan, session.h) on an endpoint of its own. The channel's CQ
 * is in WAIT mode, so a side with nothing to do sleeps instead of competing
 * for the CPU with a peer on the same host.
 */
#include <errno.h>
#include <string.h>

#include "sess.h"

#define SLICE_MS 200

int ctrl_init(struct ctrl *c, struct rcc_ctx *ctx)
{
	struct rcc_chan_attr ca = { .msg_max = PERF_CTRL_MSG_LEN,
				    .credits = CTRL_SLOTS,
				    .cq_mode = RCC_CQ_WAIT };

	memset(c, 0, sizeof(*c));
	c->last_heard_ns = mono_ns();
	return rcc_chan_create(ctx, &ca, &c->ch);
}

void ctrl_fill_attr(struct ctrl *c, struct rcc_ep_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	/* cannot fail: the channel exists and is not bound yet */
	rcc_chan_ep_attr(c->ch, attr);
}

int ctrl_bind(struct ctrl *c) { return rcc_chan_bind(c->ch, c->ep); }

void ctrl_fini(struct ctrl *c)
{
	if (c->ep)
		rcc_ep_close(c->ep);
	rcc_chan_destroy(c->ch);
	memset(c, 0, sizeof(*c));
}

/* The next message within ms (0: only look): 1, 0 if none, or why not. */
static int take(struct ctrl *c, struct ctrl_msg *m, int ms)
{
	uint8_t buf[PERF_CTRL_MSG_LEN];

	if (c->have_back) {
		c->have_back = false;
		*m = c->back;
		return 1;
	}
	if (c->err)
		return c->err;
	int n = rcc_chan_recv(c->ch, buf, sizeof(buf), NULL, ms);
	if (n == -EAGAIN || n == -ETIMEDOUT)
		return 0;
	if (n < 0)
		return n;
	if (ctrl_decode(buf, (size_t)n, m)) {
		perr("malformed control message from the peer");
		return c->err = -EPROTO;
	}
	c->last_heard_ns = mono_ns();
	return 1;
}

void ctrl_unget(struct ctrl *c, const struct ctrl_msg *m)
{
	/* Room is guaranteed: the message was just taken. */
	c->back = *m;
	c->have_back = true;
}

int ctrl_poll(struct ctrl *c, struct ctrl_msg *m) { return take(c, m, 0); }

int ctrl_send_within(struct ctrl *c, const struct ctrl_msg *m, int timeout_ms)
{
	uint8_t buf[PERF_CTRL_MSG_LEN];

	if (c->err)
		return c->err;
	ctrl_encode(m, buf);
	return rcc_chan_send(c->ch, buf, sizeof(buf), timeout_ms);
}

int ctrl_send(struct ctrl *c, const struct ctrl_msg *m)
{
	return ctrl_send_within(c, m, CTRL_SEND_WAIT_MS);
}

int ctrl_wait(struct ctrl *c, struct ctrl_msg *m, int timeout_ms)
{
	uint64_t quiet_since = mono_ns();

	for (;;) {
		int rc = take(c, m, SLICE_MS);
		if (rc < 0)
			return rc;
		if (rc && m->type != CTRL_HEARTBEAT)
			return 0;
		if (perf_stop)
			return -EINTR;
		/* Heartbeats and other messages restart the silence timer. */
		uint64_t since = c->last_heard_ns > quiet_since ? c->last_heard_ns : quiet_since;
		if (mono_ns() - since > (uint64_t)timeout_ms * 1000000ull)
			return -ETIMEDOUT;
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
