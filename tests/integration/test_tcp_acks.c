/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tcp transport's deferred acks (white box, tcp and shm; nothing to do on
 * verbs, where the device acks). A poll that receives a request leaves its
 * ack for the application's next post or poll (it rides on the reply); the
 * endpoint then counts on the progress thread's timer. Two rules keep that
 * from costing wake-ups:
 *  - a thread about to sleep wakes the progress thread to send acks only if
 *    it deferred one itself since it last slept (another thread's ack rides
 *    on that thread's next post);
 *  - an ack that rode on a post ends the endpoint's timer at once.
 * And one rule keeps a deferred ack from waiting for the timer when no reply
 * comes: a poll that finds nothing sends what its endpoint owes, then.
 */
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/sock.h"
#include "pair.h"
#include "transport/tcp/tcp.h"

/* A context with no progress thread: only what serve_timers reads. */
struct fake {
	struct tcp_ctx ctx;
};

static void fake_open(struct fake *f)
{
	memset(f, 0, sizeof(*f));
	f->ctx.wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	CHECK(f->ctx.wakefd >= 0);
	atomic_init(&f->ctx.timers, 1); /* some endpoint owes an ack */
	atomic_init(&f->ctx.timers_due, false);
}

/* Whether serve_timers asked the progress thread for a pass (and reset
 * that): 1 yes, 0 no, -1 half of it (timers due, thread not woken, or the
 * reverse). */
static int woken(struct fake *f)
{
	uint64_t v;
	bool due = atomic_exchange(&f->ctx.timers_due, false);
	bool wrote = read(f->ctx.wakefd, &v, sizeof(v)) == sizeof(v);
	return due != wrote ? -1 : wrote;
}

/* Endpoints whose acks the cases defer: only the deferral mark is used. */
static struct tcp_ep ep_a, ep_b, ep_c;

static void *defer_elsewhere(void *arg)
{
	(void)arg;
	rcci_progress_deferred_ack(&ep_c);
	return NULL;
}

static void sleeper_serves_only_its_own_acks(void)
{
	struct fake f;
	pthread_t th;

	fake_open(&f);
	/* this thread deferred nothing: an endpoint's owed ack is not its to send */
	rcci_progress_serve_timers(&f.ctx);
	CHECK_EQ(woken(&f), 0);
	/* nor one another thread deferred */
	CHECK_EQ(pthread_create(&th, NULL, defer_elsewhere, NULL), 0);
	CHECK_EQ(pthread_join(th, NULL), 0);
	rcci_progress_serve_timers(&f.ctx);
	CHECK_EQ(woken(&f), 0);
	/* its own: served before it sleeps, once */
	rcci_progress_deferred_ack(&ep_a);
	rcci_progress_serve_timers(&f.ctx);
	CHECK_EQ(woken(&f), 1);
	rcci_progress_serve_timers(&f.ctx);
	CHECK_EQ(woken(&f), 0);
	/* deferred again on the same endpoint after that sleep: counts again */
	rcci_progress_deferred_ack(&ep_a);
	rcci_progress_serve_timers(&f.ctx);
	CHECK_EQ(woken(&f), 1);
	/* its ack rode on this thread's post: not owed by it, though some
	 * other endpoint still owes one (timers) */
	rcci_progress_deferred_ack(&ep_a);
	rcci_progress_ack_sent(&ep_a);
	rcci_progress_serve_timers(&f.ctx);
	CHECK_EQ(woken(&f), 0);
	/* two deferred, one of them sent: the other still counts */
	rcci_progress_deferred_ack(&ep_a);
	rcci_progress_deferred_ack(&ep_b);
	rcci_progress_ack_sent(&ep_a);
	rcci_progress_serve_timers(&f.ctx);
	CHECK_EQ(woken(&f), 1);
	/* deferred, but nothing is owed any more (it rode on a post): no wake-up */
	rcci_progress_deferred_ack(&ep_b);
	atomic_store(&f.ctx.timers, 0);
	rcci_progress_serve_timers(&f.ctx);
	CHECK_EQ(woken(&f), 0);
	close(f.ctx.wakefd);
}

enum {
	LEN = 32,     /* one SEND */
	ROUNDS = 200, /* rounds a case runs at most for its race */
};

/* The two cases below: a pair (b on a context of its own) and 2 * LEN bytes
 * registered on each side. */
struct acks_pair {
	struct pair p;
	struct tbuf a, b;
};

static int acks_open(struct acks_pair *c)
{
	struct pair_opts o = { 0 };
	int rc;

	memset(c, 0, sizeof(*c));
	rc = pair_open(&c->p, &o);
	if (!rc)
		rc = tbuf_alloc(&c->a, c->p.ctx, 2 * LEN, RCC_ACCESS_LOCAL_WRITE);
	if (!rc)
		rc = tbuf_alloc(&c->b, c->p.ctx_b, 2 * LEN, RCC_ACCESS_LOCAL_WRITE);
	return rc;
}

static void acks_close(struct acks_pair *c)
{
	tbuf_free(&c->a);
	tbuf_free(&c->b);
	pair_close(&c->p);
}

/* b's thread polls in one SEND from a (b's receive posted first); fails the
 * case (test_failed) if it does not come as a successful RECV. */
static void poll_in_one_send(struct pair *p, const struct rcc_sge *out, const struct rcc_sge *in,
			     uint64_t id)
{
	struct rcc_wc wc;
	int n = 0;

	CHECK_OK(rcc_post_recv(p->b, in, 1, id));
	CHECK_OK(rcc_post_send(p->a, out, 1, id, RCC_SEND_SIGNALED));
	uint64_t end = now_ms() + TEST_TIMEOUT_MS;
	while (n == 0 && now_ms() < end)
		n = rcc_cq_poll(p->cq_b, &wc, 1);
	CHECK_EQ(n, 1);
	CHECK_WC(wc, RCC_WC_SUCCESS);
	CHECK_EQ(wc.opcode, RCC_WC_RECV);
}

/*
 * b's thread polls a SEND in (its ack deferred for the reply), then posts the
 * reply (with reply_flags besides SIGNALED): the ack rides on it and b's
 * timer ends there, not at b's next poll. Whether a given round's SEND was
 * read by the poll (and its ack deferred) or by the progress thread (acked
 * at once) is the threads' race: rounds run until one deferred, and the case
 * skips if none did.
 */
static void ack_rides_on_reply(unsigned reply_flags)
{
	struct acks_pair c;
	int deferred = 0;

	if (test_on_verbs())
		SKIP_CASE("tcp", "acks are the device's on verbs");
	CHECK_OK(acks_open(&c));
	struct rcc_sge a_out = tbuf_sge(&c.a, 0, LEN), a_in = tbuf_sge(&c.a, LEN, LEN);
	struct rcc_sge b_out = tbuf_sge(&c.b, 0, LEN), b_in = tbuf_sge(&c.b, LEN, LEN);
	struct tcp_ep *eb = tep(c.p.b);
	for (uint64_t i = 0; i < ROUNDS && !deferred; i++) {
		struct rcc_wc wc[2];
		CHECK_OK(rcc_post_recv(c.p.a, &a_in, 1, i));
		poll_in_one_send(&c.p, &a_out, &b_in, i);
		if (test_failed)
			return;
		bool owed = atomic_load(&eb->thread_timer);
		/* Deferred by this thread's poll (the progress thread acks at once):
		 * its sleep must have the ack sent, should it not post first. */
		if (owed)
			CHECK(rcci_progress_deferred_here());
		CHECK_OK(rcc_post_send(c.p.b, &b_out, 1, i, RCC_SEND_SIGNALED | reply_flags));
		if (owed) {
			/* The reply carried the ack: nothing is owed, no timer runs. */
			rcci_lock_acquire(&eb->tx_lock);
			bool acked = atomic_load(&eb->rx_expected) == eb->ack_sent;
			bool timer = atomic_load(&eb->thread_timer);
			rcci_lock_release(&eb->tx_lock);
			CHECK(acked);
			CHECK(!timer);
			deferred++;
		}
		/* a: its send's completion and the reply; b: its reply's completion */
		CHECK_EQ(wait_n(c.p.cq_a, wc, 2, TEST_TIMEOUT_MS), 2);
		CHECK(wc[0].status == RCC_WC_SUCCESS && wc[1].status == RCC_WC_SUCCESS);
		EXPECT_STATUS(c.p.cq_b, i, RCC_WC_SUCCESS);
	}
	acks_close(&c);
	if (!deferred)
		SKIP_CASE("tcp", "the progress thread read every SEND first (%d rounds)", ROUNDS);
}

static void ack_on_post_ends_timer(void) { ack_rides_on_reply(0); }

/* The same with an inline reply. Either goes out without the flush's rounds
 * (sent alone: tx.c, send_lone), which must have it carry the ack as they
 * do; the inline one from the copy made at post time. */
static void ack_on_inline_reply_ends_timer(void) { ack_rides_on_reply(RCC_SEND_INLINE); }

/*
 * An empty poll of b's CQ while b owes an ack: whether the ack went. A poll
 * leaves the endpoint to the progress thread when the thread is in it
 * (rx_lock: its 1 ms tick serves an endpoint with a timer running), and the
 * ack is then the thread's pass to send, which may not have reached its
 * transmit side when we look; so a poll that sent nothing is tried once
 * more after the thread has left (bounded), and the answer is what that
 * poll (or the thread's pass) sent. Both send it through the same flush.
 */
static void empty_poll_acks(struct acks_pair *c, struct tcp_ep *eb, bool *acked)
{
	uint64_t deadline = rcci_deadline(TEST_TIMEOUT_MS);
	struct rcc_wc wc[1];

	for (bool endpoint_free = false;; endpoint_free = true) {
		CHECK_EQ(rcc_cq_poll(c->p.cq_b, wc, 1), 0);
		rcci_lock_acquire(&eb->tx_lock);
		*acked = atomic_load(&eb->rx_expected) == eb->ack_sent;
		rcci_lock_release(&eb->tx_lock);
		if (*acked || endpoint_free)
			return;
		while (!rcci_lock_try(&eb->rx_lock))
			CHECK_MSG(rcci_ms_left(deadline) > 0,
				  "the progress thread never left the endpoint");
		rcci_lock_release(&eb->rx_lock);
	}
}

/*
 * b polls a SEND in (its ack deferred for a reply), then polls again and finds
 * nothing: that empty poll sends the ack itself, before it returns -- the
 * peer's send completes now, not at the progress thread's next tick. Rounds
 * run until three deferred (the threads' race, as above); the tick could send
 * an ack in the few microseconds between the polls of one round, not of all
 * three.
 */
static void empty_poll_sends_owed_ack(void)
{
	enum {
		WANT = 3
	};
	struct acks_pair c;
	int deferred = 0;

	if (test_on_verbs())
		SKIP_CASE("tcp", "acks are the device's on verbs");
	CHECK_OK(acks_open(&c));
	struct rcc_sge a_out = tbuf_sge(&c.a, 0, LEN), b_in = tbuf_sge(&c.b, 0, LEN);
	struct tcp_ep *eb = tep(c.p.b);
	for (uint64_t i = 0; i < ROUNDS && deferred < WANT; i++) {
		poll_in_one_send(&c.p, &a_out, &b_in, i);
		if (test_failed)
			return;
		if (atomic_load(&eb->thread_timer)) {
			/* deferred by that poll: the next, empty, sends it */
			bool acked = false;
			empty_poll_acks(&c, eb, &acked);
			if (test_failed)
				return;
			CHECK(acked);
			deferred++;
		}
		EXPECT_STATUS(c.p.cq_a, i, RCC_WC_SUCCESS);
	}
	acks_close(&c);
	if (deferred < WANT)
		SKIP_CASE("tcp",
			  "the progress thread read the SENDs first (%d of %d rounds deferred)",
			  deferred, ROUNDS);
}

TEST_MAIN(TEST(sleeper_serves_only_its_own_acks), TEST(ack_on_post_ends_timer),
	  TEST(ack_on_inline_reply_ends_timer), TEST(empty_poll_sends_owed_ack))
