/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Bandwidth, as perftest measures it: keep up to tx depth (-t) messages in
 * flight on every endpoint, post them in lists of -l, ask for a completion on
 * every -Q-th, stamp each post and each completion. Average bandwidth is the
 * timed bytes over first post .. last completion; the peak is perftest's best
 * run of messages (bwcalc.c). A warm-up burst goes first, untimed.
 *
 * Roles: the client sends; the server is the receiver (send) or a passive
 * target (the others). With -b both sides send and the client adds the
 * server's figures to its own, as perftest does.
 *
 * -c UD: datagrams may be lost (a receive not posted in time, a full socket
 * buffer on tcp), so a receiver takes what comes until the sender's count is
 * in and nothing more arrives for a moment, and says how many were lost; the
 * figures are the sender's, as ib_send_bw -c UD gives them. --validate sends
 * SEND_IMM carrying each message's number, so a loss does not shift the
 * pattern expected of the ones that follow.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sess.h"

#define NO_STAMP UINT64_MAX
#define PEAK_MAX_WORK 50000000ull /* pairs the peak search may visit */
/* Duration mode, receiver: turns between looks at the control channel (on verbs
 * an empty look at a completion-channel CQ costs a system call). */
#define CTRL_EVERY 1024u
/* -c UD: once the sender's count is in, silence for this long means the rest was lost. */
#define UD_QUIET_NS (200ull * 1000000ull)

struct bw {
	struct sess *s;
	enum perf_op op;
	uint32_t size;
	uint32_t slots; /* buffer slots per area */
	uint32_t mod;   /* a completion every mod messages: -Q, at most the cap */
	bool validate;
	bool sending;   /* this side posts */
	bool receiving; /* this side takes SENDs or WRITE_IMMs from the peer */
	bool duration;
	bool ud;                 /* -c UD: datagrams, loss possible */
	bool timed;              /* stamping */
	unsigned flags;          /* inline */
	uint64_t end_ns;         /* duration mode: stop posting then */
	struct rcc_send_wr *wrs; /* one post list */
	struct rcc_sge *sges;
	uint64_t *tp, *tc; /* stamps of timed messages, in post order */
	size_t tn, tcap;
	uint64_t t_last;
	struct waiter w;
	unsigned turns;
};

static bool is_atomic(enum perf_op op) { return op == OP_CAS || op == OP_FADD; }

static int bad(const char *what, int ep, uint64_t seq, long off)
{
	perr("--validate: %s of message %llu on endpoint %d is wrong at byte %ld", what,
	     (unsigned long long)seq, ep, off);
	return -EBADMSG;
}

static int grow_stamps(struct bw *b, size_t need)
{
	size_t cap = b->tcap ? b->tcap : 4096;
	uint64_t *tp, *tc;

	while (cap < need)
		cap *= 2;
	tp = realloc(b->tp, cap * sizeof(*tp));
	if (!tp)
		return -ENOMEM;
	b->tp = tp;
	tc = realloc(b->tc, cap * sizeof(*tc));
	if (!tc)
		return -ENOMEM;
	b->tc = tc;
	b->tcap = cap;
	return 0;
}

/* A message the peer will find complete: check what only the initiator can. */
static int check_completed(struct bw *b, struct pep *e, uint64_t seq)
{
	size_t off = (size_t)(seq % b->slots) * b->s->stride;
	long bad_at;

	if (b->op == OP_READ) {
		bad_at = pattern_check(local_at(e, off), b->size, seq % b->slots);
		return bad_at >= 0 ? bad("read data", e->index, seq, bad_at) : 0;
	}
	if (is_atomic(b->op) && *(uint64_t *)local_at(e, off) != seq)
		return bad("returned value", e->index, seq, 0);
	return 0;
}

/* A signalled completion: every message of e up to seq is done. */
static int on_send_done(struct bw *b, struct pep *e, uint64_t seq, uint64_t now)
{
	if (seq < e->completed || seq >= e->posted) {
		perr("completion for message %llu on endpoint %d out of order",
		     (unsigned long long)seq, e->index);
		return -EPROTO;
	}
	for (uint64_t j = e->completed; j <= seq; j++) {
		uint64_t g = e->ring[j & e->ring_mask];
		if (g != NO_STAMP) {
			b->tc[g] = now;
			b->t_last = now;
		}
		if (b->validate) {
			int rc = check_completed(b, e, j);
			if (rc)
				return rc;
		}
	}
	e->completed = seq + 1;
	return 0;
}

static int on_recv(struct bw *b, struct pep *e, const struct rcc_wc *wc)
{
	/* a datagram says which one it is: earlier ones may have been lost */
	uint64_t seq = b->ud ? wc->imm_data : e->rx_seq;

	e->rx_seq++;
	e->rx_posted--;
	if (b->validate) {
		if (wc->opcode == RCC_WC_RECV_WRITE_IMM) {
			if (wc->imm_data != (uint32_t)seq)
				return bad("immediate", e->index, seq, 0);
		} else {
			if (b->ud && !(wc->wc_flags & RCC_WC_WITH_IMM))
				return bad("immediate", e->index, seq, 0);
			if (wc->byte_len != b->size)
				return bad("length", e->index, seq, (long)wc->byte_len);
			long off = pattern_check(recv_buf(b->s, e, wc->wr_id), b->size, seq);
			if (off >= 0)
				return bad("payload", e->index, seq, off);
		}
	}
	return pep_refill(b->s, e);
}

static int reap(struct bw *b, bool *progress)
{
	struct rcc_wc wc[32];
	int n = data_cq_take(b->s, wc, 32), rc;
	uint64_t now;

	*progress = n > 0;
	if (n <= 0) {
		if (n < 0)
			perr("polling the CQ: %s", perf_strerror(n));
		return n;
	}
	now = mono_ns();
	for (int i = 0; i < n; i++) {
		struct pep *e = rcc_ep_context(wc[i].ep);
		if (wc[i].status != RCC_WC_SUCCESS)
			return wc_error(b->s, &wc[i], op_name(b->op));
		rc = (wc[i].wr_id & WR_RECV) ? on_recv(b, e, &wc[i]) :
					       on_send_done(b, e, wc[i].wr_id, now);
		if (rc)
			return rc;
	}
	return 0;
}

/* Messages one endpoint may have in flight. */
static uint64_t in_flight_cap(const struct bw *b)
{
	uint64_t cap = b->s->p.tx_depth;

	/* A buffer in flight must not be refilled or re-read before its completion. */
	if (b->validate && cap > b->slots)
		cap = b->slots;
	return cap;
}

/* How many more messages e may post now. */
static uint64_t room(const struct bw *b, const struct pep *e)
{
	uint64_t out = e->posted - e->completed;
	uint64_t cap = in_flight_cap(b);

	if (out >= cap || e->posted >= e->target)
		return 0;
	cap -= out;
	return cap < e->target - e->posted ? cap : e->target - e->posted;
}

static void build(struct bw *b, struct pep *e, int k, uint64_t seq)
{
	size_t off = (size_t)(seq % b->slots) * b->s->stride;
	struct rcc_send_wr *wr = &b->wrs[k];
	struct rcc_sge *sg = &b->sges[k];

	*sg = (struct rcc_sge){ .addr = (uintptr_t)local_at(e, off),
				.length = b->size,
				.lkey = e->lkey };
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = seq;
	wr->sg_list = sg;
	wr->num_sge = 1;
	wr->flags = b->flags;
	if ((seq + 1) % b->mod == 0 || seq + 1 == e->target)
		wr->flags |= RCC_SEND_SIGNALED;
	wr->rkey = e->remote.rkey;
	wr->remote_addr = remote_target(e, is_atomic(b->op) ? 0 : off);
	wr->ah = e->ah;
	switch (b->op) {
	case OP_SEND:
		wr->opcode = RCC_WR_SEND;
		if (b->ud && b->validate) {
			wr->opcode = RCC_WR_SEND_IMM;
			wr->imm_data = (uint32_t)seq;
		}
		break;
	case OP_WRITE:
		wr->opcode = RCC_WR_WRITE;
		break;
	case OP_WRITE_IMM:
		wr->opcode = RCC_WR_WRITE_IMM;
		wr->imm_data = (uint32_t)seq;
		break;
	case OP_READ:
		wr->opcode = RCC_WR_READ;
		break;
	case OP_CAS:
		wr->opcode = RCC_WR_CAS;
		wr->compare_add = seq;
		wr->swap = seq + 1;
		sg->length = PERF_ATOMIC_SIZE;
		break;
	default:
		wr->opcode = RCC_WR_FADD;
		wr->compare_add = 1;
		sg->length = PERF_ATOMIC_SIZE;
		break;
	}
	if (b->validate) {
		if (b->op == OP_READ)
			memset(local_at(e, off), 0, b->size);
		else if (!is_atomic(b->op))
			pattern_fill(local_at(e, off), b->size, b->ud ? (uint32_t)seq : seq);
	}
}

/* Post as many lists as fit on e. */
static int post_some(struct bw *b, struct pep *e)
{
	uint64_t r;
	int rc;

	/* Lists no longer than what may be in flight at all (--validate lowers that). */
	uint64_t list = b->s->p.post_list;
	if (list > in_flight_cap(b))
		list = in_flight_cap(b);
	while ((r = room(b, e)) > 0) {
		int n = (int)(r < list ? r : list);
		uint64_t left = e->target - e->posted;
		int posted;

		/* Whole lists only, except the tail of the phase. */
		if ((uint64_t)n < list && (uint64_t)n < left)
			return 0;
		if (b->timed && b->tn + (size_t)n > b->tcap && grow_stamps(b, b->tn + (size_t)n))
			return -ENOMEM;
		uint64_t now = b->timed ? mono_ns() : 0;
		for (int k = 0; k < n; k++) {
			uint64_t seq = e->posted + (uint64_t)k;
			build(b, e, k, seq);
			if (b->timed) {
				e->ring[seq & e->ring_mask] = b->tn + (size_t)k;
				b->tp[b->tn + (size_t)k] = now;
			} else {
				e->ring[seq & e->ring_mask] = NO_STAMP;
			}
		}
		rc = rcc_post_send_list(e->ep, b->wrs, n, &posted);
		e->posted += (uint64_t)posted;
		if (b->timed)
			b->tn += (size_t)posted;
		if (rc == -ENOMEM)
			return 0; /* the queue is fuller than we think: wait for completions */
		if (rc) {
			perr("posting %s on endpoint %d: %s", op_name(b->op), e->index,
			     perf_strerror(rc));
			return rc;
		}
	}
	return 0;
}

/* Duration mode: time is up; finish on a signalled message everywhere. */
static void stop_posting(struct bw *b)
{
	unsigned mod = b->mod;

	for (int i = 0; i < b->s->neps; i++) {
		struct pep *e = &b->s->eps[i];
		e->target = (e->posted + mod - 1) / mod * mod;
	}
	b->end_ns = 0;
}

/* Post up to each endpoint's target and wait for all of it to complete. */
static int pump(struct bw *b)
{
	bool progress = true;
	int rc;

	for (;;) {
		bool busy = false;
		if (b->end_ns && mono_ns() >= b->end_ns) {
			stop_posting(b);
			progress = true;
		}
		/* Room appears only with completions: an idle turn just polls again. */
		for (int i = 0; progress && i < b->s->neps; i++) {
			rc = post_some(b, &b->s->eps[i]);
			if (rc)
				return rc;
		}
		for (int i = 0; i < b->s->neps && !busy; i++)
			busy = b->s->eps[i].completed < b->s->eps[i].target;
		if (!busy)
			return 0;
		rc = reap(b, &progress);
		if (!rc)
			rc = waiter_tick(b->s, &b->w, progress);
		if (rc)
			return rc;
	}
}

static bool all_received(struct bw *b)
{
	struct sess *s = b->s;

	if (s->peer.n < s->neps)
		return false;
	for (int i = 0; b->receiving && i < s->neps; i++)
		if (s->eps[i].rx_seq < s->peer.count[i])
			return false;
	return true;
}

/*
 * -c UD: until the peer's DONEs are in and then every datagram is taken or
 * none came for UD_QUIET_NS: what is missing was lost (UD retransmits
 * nothing), which is said, not an error.
 */
static int serve_datagrams(struct bw *b)
{
	struct sess *s = b->s;
	bool blocking = s->p.cq_mode != RCC_CQ_POLL;
	bool progress, heard = false;
	uint64_t last = mono_ns();
	int rc;

	while (!all_received(b)) {
		rc = reap(b, &progress);
		if (rc)
			return rc;
		uint64_t now = mono_ns();
		if (progress)
			last = now;
		if (blocking || !(++b->turns % CTRL_EVERY)) {
			rc = done_poll(s, &s->peer, &heard);
			if (rc)
				return rc;
		}
		if (s->peer.n == s->neps && now - last > UD_QUIET_NS)
			break;
		rc = waiter_tick(s, &b->w, progress || heard);
		if (rc)
			return rc;
	}
	for (int i = 0; i < s->neps; i++) {
		uint64_t got = s->eps[i].rx_seq, sent = s->peer.count[i];
		if (got < sent && !s->cfg->quiet)
			fprintf(s->cfg->text,
				" endpoint %d: %llu of %llu datagrams arrived (%.2f%% lost; UD "
				"does not retransmit)\n",
				i, (unsigned long long)got, (unsigned long long)sent,
				100.0 * (double)(sent - got) / (double)sent);
	}
	return 0;
}

/* Until the peer's DONEs are in and, for send, all its messages taken. */
static int serve_peer(struct bw *b)
{
	struct sess *s = b->s;
	bool blocking = s->p.cq_mode != RCC_CQ_POLL;
	bool progress, heard = false;
	int rc;

	if (!b->receiving)
		return done_wait(s, &s->peer, s->neps);
	if (b->ud)
		return serve_datagrams(b);
	if (!b->duration) {
		/* The count is known: take the messages, then hear the DONEs. */
		const struct perf_params *p = &s->p;
		uint64_t expect = plan_warmup(p, KIND_BW, b->size) +
				  plan_iters(p, KIND_BW, b->size);
		for (;;) {
			bool all = true;
			for (int i = 0; i < s->neps; i++)
				all = all && s->eps[i].rx_seq >= expect;
			if (all)
				break;
			rc = reap(b, &progress);
			if (!rc)
				rc = waiter_tick(s, &b->w, progress);
			if (rc)
				return rc;
		}
		rc = done_wait(s, &s->peer, s->neps);
		if (rc)
			return rc;
	}
	while (!all_received(b)) {
		rc = reap(b, &progress);
		if (rc)
			return rc;
		if (blocking || !(++b->turns % CTRL_EVERY)) {
			rc = done_poll(s, &s->peer, &heard);
			if (rc)
				return rc;
		}
		rc = waiter_tick(s, &b->w, progress || heard);
		if (rc)
			return rc;
	}
	for (int i = 0; b->receiving && i < s->neps; i++) {
		if (s->eps[i].rx_seq != s->peer.count[i]) {
			perr("endpoint %d received %llu messages, the peer sent %llu", i,
			     (unsigned long long)s->eps[i].rx_seq,
			     (unsigned long long)s->peer.count[i]);
			return -EPROTO;
		}
	}
	return 0;
}

/* What the peer's one-sided traffic must have left in our target area. */
static int check_target(struct bw *b)
{
	struct sess *s = b->s;

	if (!b->validate || b->op == OP_SEND || b->op == OP_READ)
		return 0;
	for (int i = 0; i < s->neps; i++) {
		struct pep *e = &s->eps[i];
		uint64_t count = s->peer.count[i];
		if (is_atomic(b->op)) {
			/* peermem.c: written by the transport, no completion here */
			if (count && peer_u64(target_at(e, 0)) != count)
				return bad("final atomic value", i, count, 0);
			continue;
		}
		for (uint64_t slot = 0; slot < b->slots && slot < count; slot++) {
			uint64_t last = slot + (count - 1 - slot) / b->slots * b->slots;
			uint8_t *at = target_at(e, (size_t)slot * s->stride);
			long off = peer_check(at, b->size, last);
			if (off >= 0)
				return bad("written data", i, last, off);
		}
	}
	return 0;
}

/*
 * One DONE per endpoint. With more endpoints than control credits the last
 * ones wait for the peer to read the first, so meanwhile keep taking what
 * the peer may be waiting on: its data (its sends need our receives) and its
 * own DONEs (-b), or each side would wait for the other.
 */
static int send_dones(struct bw *b)
{
	struct sess *s = b->s;
	bool progress = false, heard = false, sent = false;
	int rc;

	for (int i = 0; i < s->neps;) {
		rc = done_send(s, b->op, KIND_BW, b->size, i, s->eps[i].posted, 0);
		if (!rc) {
			i++;
			sent = true;
			continue;
		}
		if (rc != -EAGAIN)
			return rc;
		rc = reap(b, &progress);
		if (!rc)
			rc = done_poll(s, &s->peer, &heard);
		if (!rc)
			rc = waiter_tick(s, &b->w, progress || heard || sent);
		if (rc)
			return rc;
		sent = false;
	}
	return 0;
}

static int send_side(struct bw *b)
{
	const struct perf_params *p = &b->s->p;
	uint64_t iters = plan_iters(p, KIND_BW, b->size);
	uint64_t warmup = plan_warmup(p, KIND_BW, b->size);
	int rc;

	for (int i = 0; i < b->s->neps; i++)
		b->s->eps[i].target = warmup;
	b->timed = false;
	rc = pump(b);
	if (rc)
		return rc;
	b->timed = true;
	if (!b->duration && grow_stamps(b, (size_t)iters * (size_t)b->s->neps))
		return -ENOMEM;
	for (int i = 0; i < b->s->neps; i++)
		b->s->eps[i].target = b->duration ? UINT64_MAX : warmup + iters;
	if (b->duration)
		b->end_ns = mono_ns() + (uint64_t)p->duration_ms * 1000000ull;
	rc = pump(b);
	return rc ? rc : send_dones(b);
}

static int setup(struct bw *b, struct sess *s, enum perf_op op, uint32_t size)
{
	const struct perf_params *p = &s->p;
	bool bidir = p->flags & PF_BIDIR;

	memset(b, 0, sizeof(*b));
	b->s = s;
	b->op = op;
	b->size = size;
	b->slots = (uint32_t)(s->eps[0].area / s->stride);
	b->validate = p->flags & PF_VALIDATE;
	b->duration = p->flags & PF_DURATION;
	b->ud = p->qp_type == RCC_QP_UD;
	/* With fewer messages allowed in flight than -Q, none would ask for a completion. */
	b->mod = p->cq_mod;
	if (b->mod > in_flight_cap(b))
		b->mod = (uint32_t)in_flight_cap(b);
	b->sending = !s->server || bidir;
	/* SEND and WRITE_IMM consume receives: their target must keep posting more. */
	b->receiving = (op == OP_SEND || op == OP_WRITE_IMM) && (s->server || bidir);
	if (op != OP_READ && !is_atomic(op) && size <= s->max_inline)
		b->flags = RCC_SEND_INLINE;
	b->wrs = calloc(p->post_list, sizeof(*b->wrs));
	b->sges = calloc(p->post_list, sizeof(*b->sges));
	if (!b->wrs || !b->sges)
		return -ENOMEM;
	/* A peer that only sleeps on the control channel needs to hear from us. */
	waiter_start(s, &b->w, !s->server && !bidir && op != OP_SEND && op != OP_WRITE_IMM);
	return 0;
}

static void teardown(struct bw *b)
{
	free(b->wrs);
	free(b->sges);
	free(b->tp);
	free(b->tc);
}

/* This side's timed figures: messages, first post .. last completion, peak. */
static void own_figures(struct bw *b, uint64_t *msgs, uint64_t *ns, double *peak)
{
	const struct perf_params *p = &b->s->p;

	*msgs = b->tn;
	*ns = b->tn ? b->t_last - b->tp[0] : 0;
	*peak = 0;
	if (b->tn && !(p->flags & PF_NO_PEAK))
		*peak = bw_peak_ns_per_msg(b->tp, b->tc, b->tn, p->post_list, b->mod,
					   PEAK_MAX_WORK);
}

int run_bw(struct sess *s, enum perf_op op, uint32_t size, struct perf_point *pt)
{
	struct bw b;
	struct ctrl_msg m;
	uint64_t msgs, ns;
	double peak;
	int rc;

	rc = setup(&b, s, op, size);
	if (rc)
		goto out;
	if (b.sending) {
		rc = send_side(&b);
		if (rc)
			goto out;
	}
	if (s->server || (s->p.flags & PF_BIDIR)) {
		rc = serve_peer(&b);
		if (rc)
			goto out;
	}
	own_figures(&b, &msgs, &ns, &peak);
	if (s->server) {
		int verr = check_target(&b);
		rc = result_send(s, op, KIND_BW, size, msgs, ns, peak, verr);
		if (!rc)
			rc = verr;
		goto out;
	}
	rc = ctrl_expect(&s->ctrl, CTRL_RESULT, &m, s->timeout_ms);
	if (!rc && m.d) {
		perr("the server reports an error in this test (%s)", rcc_strerror(-(int)m.d));
		rc = -EIO;
	}
	if (!rc)
		rc = check_target(&b);
	if (rc)
		goto out;

	memset(pt, 0, sizeof(*pt));
	pt->op = op;
	pt->kind = KIND_BW;
	pt->size = size;
	pt->iters = msgs;
	pt->seconds = (double)ns / 1e9;
	bw_figures(msgs, size, ns, peak, &pt->bw);
	if (s->p.flags & PF_BIDIR) {
		struct bw_figures peer;
		double peer_peak;
		memcpy(&peer_peak, &m.c, sizeof(peer_peak));
		bw_figures(m.a, size, m.b, peer_peak, &peer);
		pt->bw.bw_avg_Bps += peer.bw_avg_Bps;
		pt->bw.bw_peak_Bps += peer.bw_peak_Bps;
		pt->bw.msg_rate_Mpps += peer.msg_rate_Mpps;
		pt->iters += m.a;
	}
	pt->bytes = pt->iters * size;
out:
	teardown(&b);
	return rc;
}
