/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Latency, as perftest measures it: the client stamps every post, and a
 * sample is the time between two consecutive posts, i.e. one iteration.
 *  - send, write, write_imm: ping-pong; the sample is halved (RTT/2).
 *    write: both sides watch the last byte of the buffer the peer writes
 *    (ib_write_lat's method); write_imm: the peer's immediate completes a
 *    receive instead. Both sides serve the ping-pong.
 *  - read, cas, fadd: the client issues one request at a time and waits for
 *    its completion: a full round trip; the server is a passive target.
 * A ping-pong asks for a send completion only every -Q-th message (100 by
 * default, perftest's default): most iterations then cost the device and the
 * library no completion at all. perftest's own latency tests do not: they run
 * with TX depth 1, which clamps their CQ moderation to 1 (every send signalled
 * and its completion polled; docs/verbs.md, the counted comparison). Only the
 * first data endpoint is used.
 * With -c UD (send only) every send is signalled: the zero-length WRITE that
 * retires unsignalled slots at the end of a point does not exist there.
 */
#include <errno.h>
#include <string.h>

#include "sess.h"

/* Duration mode, server: spins between looks at the control channel (on verbs an
 * empty look at a completion-channel CQ costs a system call). */
#define CTRL_EVERY 4096u

/* --validate of a write: how long a payload that is not yet whole once its
 * marker is seen may take to become so (see wait_peer) before it is wrong. */
#define LANDING_NS 1000000000ull

struct lat {
	struct sess *s;
	struct pep *e;
	enum perf_op op;
	uint32_t size;
	unsigned flags; /* send flags of every post */
	bool validate;
	bool server;
	bool blocking;      /* the data CQ sleeps (wait/fd mode) */
	uint32_t sends_out; /* signalled sends not yet completed */
	uint64_t last;      /* client, iteration mode: the last iteration */
	uint64_t expect;    /* server, iteration mode: iterations the client runs */
	struct waiter w;
	unsigned spins;
};

static bool ping_pong(enum perf_op op)
{
	return op == OP_SEND || op == OP_WRITE || op == OP_WRITE_IMM;
}

/* The byte a write-latency peer watches: never 0, never the previous value. */
static inline uint8_t marker(uint64_t i) { return (uint8_t)(i % 255 + 1); }

static int bad_data(struct lat *l, const char *what, uint64_t i, long off)
{
	perr("--validate: %s of iteration %llu is wrong at byte %ld", what, (unsigned long long)i,
	     off);
	(void)l;
	return -EBADMSG;
}

/* A receive completed (RECV or RECV_WRITE_IMM): check it. Another is posted
 * after our own reply (refill()), off the critical path: the peer cannot send
 * again before it has that reply, and rx depth more receives are waiting. */
static int on_recv(struct lat *l, const struct rcc_wc *wc)
{
	struct pep *e = l->e;
	uint64_t seq = e->rx_seq++;
	long off;

	e->rx_posted--;
	if (l->validate) {
		if (wc->opcode == RCC_WC_RECV_WRITE_IMM) {
			if (wc->imm_data != (uint32_t)seq)
				return bad_data(l, "immediate", seq, 0);
			off = pattern_check(target_at(e, 0), l->size, seq);
		} else {
			if (wc->byte_len != l->size)
				return bad_data(l, "length", seq, (long)wc->byte_len);
			off = pattern_check(recv_buf(l->s, e, wc->wr_id), l->size, seq);
		}
		if (off >= 0)
			return bad_data(l, "payload", seq, off);
	}
	return 0;
}

static int refill(struct lat *l)
{
	return l->e->rx_posted < l->s->rx_want ? pep_refill(l->s, l->e) : 0;
}

/* Take what the CQ has. *progress tells whether anything came. */
static int reap(struct lat *l, bool *progress)
{
	struct rcc_wc wc[16];
	int n = data_cq_take(l->s, wc, 16), rc;

	*progress = n > 0;
	if (n < 0) {
		perr("polling the CQ: %s", perf_strerror(n));
		return n;
	}
	for (int i = 0; i < n; i++) {
		if (wc[i].status != RCC_WC_SUCCESS)
			return wc_error(l->s, &wc[i], op_name(l->op));
		if (wc[i].wr_id & WR_RECV) {
			rc = on_recv(l, &wc[i]);
			if (rc)
				return rc;
		} else {
			l->sends_out--;
		}
	}
	return 0;
}

/* Server only: has the client said it is done after `served` iterations? */
static int look_for_done(struct lat *l, uint64_t served, bool *finished)
{
	struct done_set *d = &l->s->peer;
	bool heard;
	int rc;

	*finished = false;
	rc = d->n ? 0 : done_poll(l->s, d, &heard);
	if (rc || !d->n)
		return rc;
	if (served != d->count[0]) {
		perr("protocol error: client finished after %llu iterations, served %llu",
		     (unsigned long long)d->count[0], (unsigned long long)served);
		return -EPROTO;
	}
	*finished = true;
	return 0;
}

/*
 * Wait for the peer's message of iteration i: its marker byte (write) or one
 * more receive (send, write_imm). A server may instead learn that the client
 * is done (returns 1).
 */
static int wait_peer(struct lat *l, uint64_t i)
{
	struct pep *e = l->e;
	const uint8_t *last = target_at(e, l->size - 1);
	bool progress, finished;
	int rc;

	/* Iteration mode: the count is known, the control channel is only needed now. */
	if (l->server && i == l->expect) {
		rc = done_wait(l->s, &l->s->peer, 1);
		if (!rc)
			rc = look_for_done(l, i, &finished);
		return rc ? rc : 1;
	}
	for (;;) {
		/* The marker is polled with a relaxed atomic load (peermem.c says
		 * why that is the most C11 can say of a transport's writes). */
		if (l->op == OP_WRITE ? peer_byte_is(last, marker(i)) : e->rx_seq > i)
			break;
		rc = reap(l, &progress);
		if (rc)
			return rc;
		/* Blocking modes already slept in reap(): look every time then. */
		if (l->server && l->expect == UINT64_MAX &&
		    (l->blocking ? !progress : !(++l->spins % CTRL_EVERY))) {
			rc = look_for_done(l, i, &finished);
			if (rc)
				return rc;
			if (finished)
				return 1;
		}
		rc = waiter_tick(l->s, &l->w, progress);
		if (rc)
			return rc;
	}
	waiter_tick(l->s, &l->w, true);
	/*
	 * A NIC writes a message in order, so its last byte announces the rest.
	 * rcc's software transports copy with memcpy(), which stores in no order
	 * the C library promises (glibc's vector copies of large sizes store
	 * their first bytes last): there the marker means the copy has reached
	 * its end, not that it is over. Without --validate that costs at most the
	 * copy's remaining nanoseconds, as the reply does not read the payload;
	 * with it, the payload is read again until it is whole (at once on verbs).
	 */
	if (l->op == OP_WRITE && l->validate) {
		uint64_t t0 = mono_ns();
		long off;
		while ((off = peer_check(target_at(e, 0), l->size - 1, i)) >= 0 &&
		       mono_ns() - t0 < LANDING_NS)
			;
		if (off >= 0)
			return bad_data(l, "payload", i, off);
	}
	return 0;
}

/* Wait until every signalled send so far has completed (request-response). */
static int wait_sends(struct lat *l)
{
	bool progress;
	int rc;

	while (l->sends_out) {
		rc = reap(l, &progress);
		if (rc)
			return rc;
		rc = waiter_tick(l->s, &l->w, progress);
		if (rc)
			return rc;
	}
	return 0;
}

static int post(struct lat *l, uint64_t i)
{
	struct pep *e = l->e;
	uint32_t len = l->op == OP_CAS || l->op == OP_FADD ? PERF_ATOMIC_SIZE : l->size;
	struct rcc_sge sge = { .addr = (uintptr_t)local_at(e, 0), .length = len, .lkey = e->lkey };
	uint64_t raddr = remote_target(e, 0);
	uint32_t rkey = e->remote.rkey;
	const struct perf_params *p = &l->s->p;
	unsigned flags = l->flags;
	bool progress;
	int rc;

	/* Every signalled send in flight may stand for cq_mod queue slots. */
	while ((l->sends_out + 1u) * p->cq_mod + e->sq_unsig > p->tx_depth && l->sends_out) {
		rc = reap(l, &progress);
		if (!rc)
			rc = waiter_tick(l->s, &l->w, progress);
		if (rc)
			return rc;
	}
	if (!ping_pong(l->op) || e->sq_unsig + 1u >= p->cq_mod || i == l->last || e->ah)
		flags |= RCC_SEND_SIGNALED;
	if (l->validate) {
		if (l->op == OP_WRITE)
			peer_fill(local_at(e, 0), l->size, i);
		else if (l->op == OP_SEND || l->op == OP_WRITE_IMM)
			pattern_fill(local_at(e, 0), l->size, i);
		else if (l->op == OP_READ)
			memset(local_at(e, 0), 0, l->size);
	}
	switch (l->op) {
	case OP_SEND:
		rc = e->ah ? rcc_post_send_to(e->ep, e->ah, &sge, 1, i, flags) :
			     rcc_post_send(e->ep, &sge, 1, i, flags);
		break;
	case OP_WRITE:
		peer_set(local_at(e, l->size - 1), marker(i));
		rc = rcc_post_write(e->ep, &sge, 1, raddr, rkey, i, flags);
		break;
	case OP_WRITE_IMM:
		rc = rcc_post_write_imm(e->ep, &sge, 1, raddr, rkey, (uint32_t)i, i, flags);
		break;
	case OP_READ:
		rc = rcc_post_read(e->ep, &sge, 1, raddr, rkey, i, flags);
		break;
	case OP_CAS:
		rc = rcc_post_cas(e->ep, &sge, raddr, rkey, i, i + 1, i, flags);
		break;
	default:
		rc = rcc_post_fadd(e->ep, &sge, raddr, rkey, 1, i, flags);
		break;
	}
	if (rc) {
		perr("posting %s: %s", op_name(l->op), perf_strerror(rc));
		return rc;
	}
	if (flags & RCC_SEND_SIGNALED) {
		l->sends_out++;
		e->sq_unsig = 0; /* its completion retires them */
	} else {
		e->sq_unsig++;
	}
	return 0;
}

/*
 * Unsignalled sends hold their queue slots until a later signalled one
 * completes. Leave none behind for the next point: one signalled WRITE of
 * zero bytes (it changes no memory and consumes no receive) retires them.
 */
static int retire_unsignalled(struct lat *l)
{
	struct pep *e = l->e;
	int rc;

	if (e->sq_unsig) {
		rc = rcc_post_write(e->ep, NULL, 0, remote_target(e, 0), e->remote.rkey, 0,
				    RCC_SEND_SIGNALED);
		if (rc) {
			perr("posting a zero-length write: %s", perf_strerror(rc));
			return rc;
		}
		l->sends_out++;
		e->sq_unsig = 0;
	}
	return wait_sends(l);
}

/* Client side of a request-response iteration: the answer is our completion. */
static int check_answer(struct lat *l, uint64_t i)
{
	struct pep *e = l->e;
	long off = -1;

	if (!l->validate)
		return 0;
	if (l->op == OP_READ)
		off = pattern_check(local_at(e, 0), l->size, 0);
	else if (*(uint64_t *)local_at(e, 0) != i)
		return bad_data(l, "returned value", i, 0);
	return off >= 0 ? bad_data(l, "read data", i, off) : 0;
}

static int client(struct lat *l, struct samples *smp, uint64_t *count, uint64_t *elapsed)
{
	const struct perf_params *p = &l->s->p;
	uint64_t warmup = plan_warmup(p, KIND_LAT, l->size);
	uint64_t iters = plan_iters(p, KIND_LAT, l->size);
	bool duration = p->flags & PF_DURATION;
	uint64_t dur_ns = (uint64_t)p->duration_ms * 1000000ull;
	uint64_t prev = 0, start = 0, now = 0, i;
	int rc;

	for (i = 0;; i++) {
		now = mono_ns();
		bool over = duration ? i >= warmup && start && now - start >= dur_ns :
				       i >= warmup + iters;
		if (over)
			break;
		if (i == warmup)
			start = now;
		if (i >= warmup && i > 0) {
			rc = samples_add(smp, (double)(now - prev));
			if (rc)
				return rc;
		}
		prev = now;
		rc = post(l, i);
		if (!rc)
			rc = refill(l);
		if (rc)
			return rc;
		if (ping_pong(l->op)) {
			rc = wait_peer(l, i);
		} else {
			rc = wait_sends(l);
			if (!rc)
				rc = check_answer(l, i);
		}
		if (rc)
			return rc;
	}
	*count = i - warmup;
	*elapsed = now - start;
	return retire_unsignalled(l);
}

static int server(struct lat *l)
{
	for (uint64_t i = 0;; i++) {
		int rc = wait_peer(l, i);
		if (rc == 1)
			return retire_unsignalled(l);
		if (rc)
			return rc;
		rc = post(l, i);
		if (!rc)
			rc = refill(l);
		if (rc)
			return rc;
	}
}

int run_lat(struct sess *s, enum perf_op op, uint32_t size, struct perf_point *pt)
{
	struct lat l = { .s = s, .e = &s->eps[0], .op = op, .size = size, .server = s->server };
	struct samples smp;
	struct ctrl_msg m = { 0 };
	uint64_t count = 0, elapsed = 0;
	int rc;

	l.validate = s->p.flags & PF_VALIDATE;
	l.blocking = s->p.cq_mode != RCC_CQ_POLL;
	l.last = l.expect = UINT64_MAX;
	if (!(s->p.flags & PF_DURATION)) {
		uint64_t n = plan_warmup(&s->p, KIND_LAT, size) + plan_iters(&s->p, KIND_LAT, size);
		if (s->server)
			l.expect = n;
		else
			l.last = n - 1;
	}
	if (ping_pong(op) && size <= s->max_inline)
		l.flags |= RCC_SEND_INLINE;
	waiter_start(s, &l.w, !ping_pong(op));

	if (s->server) {
		rc = ping_pong(op) ? server(&l) : done_wait(s, &s->peer, 1);
		if (rc)
			return rc;
		return result_send(s, op, KIND_LAT, size, 0, 0, 0, 0);
	}

	rc = samples_init(&smp, plan_iters(&s->p, KIND_LAT, size) + 1);
	if (rc)
		return rc;
	rc = client(&l, &smp, &count, &elapsed);
	if (!rc)
		rc = done_send(s, op, KIND_LAT, size, 0, count + plan_warmup(&s->p, KIND_LAT, size),
			       CTRL_SEND_WAIT_MS);
	if (!rc)
		rc = ctrl_expect(&s->ctrl, CTRL_RESULT, &m, s->timeout_ms);
	if (!rc && m.d) {
		perr("the server reports an error in this test (%s)", rcc_strerror(-(int)m.d));
		rc = -EIO;
	}
	if (!rc) {
		memset(pt, 0, sizeof(*pt));
		pt->op = op;
		pt->kind = KIND_LAT;
		pt->size = size;
		pt->iters = count;
		pt->rtt_factor = plan_rtt_factor(op);
		for (size_t k = 0; k < smp.n; k++)
			smp.v[k] /= 1000.0 * pt->rtt_factor;
		samples_summarise(&smp, &pt->lat);
		pt->seconds = (double)elapsed / 1e9;
		pt->bytes = count * size;
	}
	samples_free(&smp);
	return rc;
}
