/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The end of a point: the side that sends tells the other how many messages
 * it put on each endpoint (one DONE per endpoint), so the other knows when
 * everything has arrived, what its memory must hold, and the run stays in step
 * even in duration mode, where nobody knows the count in advance.
 */
#include <errno.h>
#include <string.h>

#include "sess.h"

int done_send(struct sess *s, enum perf_op op, enum perf_kind kind, uint32_t size, int ep,
	      uint64_t count, int timeout_ms)
{
	struct ctrl_msg m = { .type = CTRL_DONE,
			      .op = op,
			      .kind = kind,
			      .size = size,
			      .a = count,
			      .b = (uint64_t)ep };
	int rc = ctrl_send_within(&s->ctrl, &m, timeout_ms);

	if (rc && rc != -EAGAIN)
		perr("control channel: %s", perf_strerror(rc));
	return rc;
}

static int record(struct sess *s, const struct ctrl_msg *m, struct done_set *d)
{
	if (m->type != CTRL_DONE || m->b >= (uint64_t)s->neps || d->seen[m->b]) {
		perr("protocol error: unexpected control message %u from the peer", m->type);
		return -EPROTO;
	}
	d->seen[m->b] = true;
	d->count[m->b] = m->a;
	d->n++;
	return 0;
}

int done_poll(struct sess *s, struct done_set *d, bool *heard)
{
	struct ctrl_msg m;
	int rc;

	*heard = false;
	while ((rc = ctrl_poll(&s->ctrl, &m)) == 1) {
		*heard = true;
		if (m.type == CTRL_HEARTBEAT)
			continue;
		/* The peer may be a step ahead (its RESULT after its DONEs): keep that. */
		if (m.type == CTRL_RESULT && d->n == s->neps) {
			ctrl_unget(&s->ctrl, &m);
			return 0;
		}
		rc = record(s, &m, d);
		if (rc)
			return rc;
	}
	if (rc < 0)
		perr("control channel: %s", perf_strerror(rc));
	return rc;
}

int done_wait(struct sess *s, struct done_set *d, int want)
{
	struct ctrl_msg m;
	struct waiter w;
	bool heard;
	int rc;

	if (!(s->p.flags & PF_TARGET_POLL)) {
		while (d->n < want) {
			rc = ctrl_wait(&s->ctrl, &m, s->timeout_ms);
			if (rc) {
				if (rc == -ETIMEDOUT)
					perr("the client went silent for %d ms", s->timeout_ms);
				else
					perr("control channel: %s", perf_strerror(rc));
				return rc;
			}
			rc = record(s, &m, d);
			if (rc)
				return rc;
		}
		return 0;
	}
	/* --target-poll: keep polling the data CQ, as a busy application would;
	 * on tcp that moves the one-sided traffic from the progress thread here. */
	waiter_start(s, &w, false);
	while (d->n < want) {
		struct rcc_wc wc[16];
		int n = data_cq_take(s, wc, 16);
		if (n < 0) {
			perr("polling the CQ: %s", perf_strerror(n));
			return n;
		}
		for (int i = 0; i < n; i++)
			if (wc[i].status != RCC_WC_SUCCESS)
				return wc_error(s, &wc[i], "serving the peer");
		rc = done_poll(s, d, &heard);
		if (rc)
			return rc;
		rc = waiter_tick(s, &w, heard || n > 0);
		if (rc)
			return rc;
	}
	return 0;
}

int result_send(struct sess *s, enum perf_op op, enum perf_kind kind, uint32_t size, uint64_t msgs,
		uint64_t ns, double peak_ns, int err)
{
	struct ctrl_msg m = { .type = CTRL_RESULT,
			      .op = op,
			      .kind = kind,
			      .size = size,
			      .a = msgs,
			      .b = ns,
			      .d = (uint64_t)(err < 0 ? -err : err) };
	int rc;

	memcpy(&m.c, &peak_ns, sizeof(m.c));
	rc = ctrl_send(&s->ctrl, &m);
	if (rc)
		perr("control channel: %s", perf_strerror(rc));
	return rc;
}

void done_reset(struct sess *s)
{
	for (int i = 0; i < s->neps; i++) {
		s->peer.seen[i] = false;
		s->peer.count[i] = 0;
	}
	s->peer.n = 0;
}
