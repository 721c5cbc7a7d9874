/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Waiting on the data path without ever waiting forever: completions in the
 * CQ's mode, a silence timer, link checks, heartbeats for a passive peer, and
 * keeping receives posted.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/epoll.h>

#include "sess.h"

#define SLICE_MS 50
#define CHECK_EVERY 1024u /* busy-poll turns between clock checks */
#define HEARTBEAT_NS 1000000000ull

void perr(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("rcc-perf: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

const char *perf_strerror(int rc)
{
	switch (rc) {
	case -ENOTCONN:
	case -ECONNRESET:
	case -EPIPE:
		return "connection to the peer lost";
	case -ETIMEDOUT:
		return "no answer in time";
	default:
		return rcc_strerror(rc);
	}
}

int data_cq_take(struct sess *s, struct rcc_wc *wc, int max)
{
	struct epoll_event ev;
	int n;

	switch (s->p.cq_mode) {
	case RCC_CQ_WAIT:
	case RCC_CQ_HYBRID:
		n = rcc_cq_wait(s->cq, wc, max, SLICE_MS);
		return n == -ETIMEDOUT ? 0 : n;
	case RCC_CQ_FD:
		n = rcc_cq_poll(s->cq, wc, max);
		if (n)
			return n;
		/* arm before sleeping (rcc.h): 1 means poll first; an error only
		 * costs a wake-up, so sleep anyway */
		if (rcc_cq_arm(s->cq) > 0)
			return rcc_cq_poll(s->cq, wc, max);
		n = epoll_wait(s->epfd, &ev, 1, SLICE_MS);
		if (n < 0 && errno != EINTR)
			return -errno;
		return rcc_cq_poll(s->cq, wc, max);
	default:
		return rcc_cq_poll(s->cq, wc, max);
	}
}

void waiter_start(struct sess *s, struct waiter *w, bool passive_peer)
{
	w->deadline_ns = mono_ns() + (uint64_t)s->timeout_ms * 1000000ull;
	w->calls = 0;
	w->progressed = false;
	w->passive_peer = passive_peer;
}

int sess_check_links(struct sess *s)
{
	if (rcc_ep_state(s->ctrl.ep) != RCC_EP_CONNECTED) {
		perr("control connection to the peer lost (%s)",
		     rcc_ep_state_str(rcc_ep_state(s->ctrl.ep)));
		return -ECONNRESET;
	}
	for (int i = 0; i < s->neps; i++) {
		enum rcc_ep_state st = rcc_ep_state(s->eps[i].ep);
		if (st != RCC_EP_CONNECTED) {
			perr("data connection %d to the peer lost (%s)", i, rcc_ep_state_str(st));
			return -ECONNRESET;
		}
	}
	return 0;
}

int waiter_tick(struct sess *s, struct waiter *w, bool progress)
{
	bool blocking = s->p.cq_mode != RCC_CQ_POLL;
	uint64_t now;
	int rc;

	if (progress)
		w->progressed = true;
	if ((++w->calls % CHECK_EVERY) && !(blocking && !progress))
		return 0;
	if (perf_stop) {
		perr("interrupted");
		return -EINTR;
	}
	now = mono_ns();
	if (w->progressed) {
		w->progressed = false;
		w->deadline_ns = now + (uint64_t)s->timeout_ms * 1000000ull;
	} else if (now > w->deadline_ns) {
		perr("no progress for %d ms: giving up (is the peer alive?)", s->timeout_ms);
		return -ETIMEDOUT;
	}
	rc = sess_check_links(s);
	if (rc)
		return rc;
	if (w->passive_peer && now - s->last_hb_ns > HEARTBEAT_NS) {
		struct ctrl_msg hb = { .type = CTRL_HEARTBEAT };
		s->last_hb_ns = now;
		rc = ctrl_send(&s->ctrl, &hb);
		if (rc) {
			perr("control channel: %s", perf_strerror(rc));
			return rc;
		}
	}
	return 0;
}

int wc_error(struct sess *s, const struct rcc_wc *wc, const char *what)
{
	(void)s;
	if (wc->status == RCC_WC_WR_FLUSH_ERR) {
		perr("%s: connection to the peer lost (work request flushed)", what);
		return -ECONNRESET;
	}
	perr("%s: completion error '%s' (wr_id %llu, vendor error %u)", what,
	     rcc_wc_status_str(wc->status), (unsigned long long)wc->wr_id, wc->vendor_err);
	return -EIO;
}

uint32_t sess_rx_want(const struct sess *s)
{
	const struct perf_params *p = &s->p;
	uint32_t want;

	if (!(p->ops & (1u << OP_SEND | 1u << OP_WRITE_IMM)))
		return 0;
	want = p->rx_depth;
	/* Validation reads a buffer after its completion: no two receives share one. */
	if ((p->flags & PF_VALIDATE) && s->eps && want > s->eps[0].rx_slots)
		want = s->eps[0].rx_slots;
	return want;
}

int pep_recv_wrs(struct sess *s, struct pep *e, int max, struct rcc_recv_wr *wrs,
		 struct rcc_sge *sges)
{
	int n = 0;

	while (n < max && e->rx_posted + (uint32_t)n < s->rx_want) {
		uint32_t slot = (uint32_t)((e->rx_post_seq + (uint64_t)n) % e->rx_slots);
		uint8_t *buf = target_at(e, (size_t)slot * s->stride);
		sges[n] = (struct rcc_sge){ .addr = (uintptr_t)buf,
					    .length = s->stride,
					    .lkey = e->lkey };
		wrs[n] = (struct rcc_recv_wr){ .wr_id = WR_RECV | slot,
					       .sg_list = &sges[n],
					       .num_sge = 1 };
		n++;
	}
	return n;
}

int pep_refill(struct sess *s, struct pep *e)
{
	struct rcc_recv_wr wrs[32];
	struct rcc_sge sges[32];
	int n, posted, rc;

	/* The ping-pong's case, one receive back: keep it short. */
	if (e->rx_posted + 1 == s->rx_want) {
		uint32_t slot = (uint32_t)(e->rx_post_seq % e->rx_slots);
		struct rcc_sge sge = { .addr = (uintptr_t)target_at(e, (size_t)slot * s->stride),
				       .length = s->stride,
				       .lkey = e->lkey };
		rc = rcc_post_recv(e->ep, &sge, 1, WR_RECV | slot);
		if (rc) {
			perr("posting a receive: %s", perf_strerror(rc));
			return rc;
		}
		e->rx_posted++;
		e->rx_post_seq++;
		return 0;
	}
	while ((n = pep_recv_wrs(s, e, 32, wrs, sges)) > 0) {
		rc = rcc_post_recv_list(e->ep, wrs, n, &posted);
		e->rx_posted += (uint32_t)posted;
		e->rx_post_seq += (uint64_t)posted;
		if (rc) {
			perr("posting receives: %s", perf_strerror(rc));
			return rc;
		}
	}
	return 0;
}
