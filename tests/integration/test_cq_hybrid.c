/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RCC_CQ_HYBRID (spin, then sleep) and the yielding spin of RCC_CQ_POLL:
 * a completion that arrives while rcc_cq_wait() spins and one that arrives
 * after it went to sleep are both delivered, with their bytes; the timeout
 * is honoured in either phase; many threads waiting on one CQ get each
 * completion exactly once; more busy-polling threads than cores all finish.
 *
 * Which phase a waiter is in is not observable through the API. The spin
 * case makes the spin budget longer than the whole wait; the sleep case
 * makes it 1 us and posts only once the kernel reports the waiting thread
 * asleep (/proc), so neither needs a sleep to synchronise.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pair.h"

enum {
	MSG = 256,
};

/* ------------------------------------------------------------ attributes */

static void hybrid_attr(void)
{
	struct rcc_ctx *ctx;
	struct rcc_cq *cq;

	CHECK_OK(test_ctx_open(&ctx));
	struct rcc_cq_attr a = { .mode = RCC_CQ_HYBRID, .spin_us = RCC_CQ_SPIN_US_MAX };
	CHECK_OK(rcc_cq_create(ctx, &a, &cq));
	CHECK_EQ(rcc_cq_get_mode(cq), RCC_CQ_HYBRID);
	CHECK_EQ(rcc_cq_fd(cq), -EINVAL); /* FD mode only */
	CHECK_OK(rcc_cq_destroy(cq));
	/* timeout 0: one look, at once, even with a long spin budget (3 s: a
	 * wait that spun it fails in that time, not in the 10 s of the largest) */
	a.spin_us = 3000000;
	CHECK_OK(rcc_cq_create(ctx, &a, &cq));
	struct rcc_wc wc;
	uint64_t t0 = now_ms();
	CHECK_EQ(rcc_cq_wait(cq, &wc, 1, 0), -ETIMEDOUT);
	/* One look takes microseconds; spinning the budget would take 3x this
	 * bound. 1 s leaves a margin of far more than 5x for a descheduled
	 * thread on a loaded host. */
	CHECK(now_ms() - t0 < 1000);
	CHECK_OK(rcc_cq_destroy(cq));

	a.spin_us = RCC_CQ_SPIN_US_MAX + 1;
	CHECK_EQ(rcc_cq_create(ctx, &a, &cq), -EINVAL);
	a.mode = (enum rcc_cq_mode)(RCC_CQ_HYBRID + 1);
	a.spin_us = 0;
	CHECK_EQ(rcc_cq_create(ctx, &a, &cq), -EINVAL);
	/* spin_us means nothing to (and is never read in) the other modes */
	a.mode = RCC_CQ_WAIT;
	a.spin_us = RCC_CQ_SPIN_US_MAX + 1;
	CHECK_OK(rcc_cq_create(ctx, &a, &cq));
	CHECK_OK(rcc_cq_destroy(cq));
	CHECK_OK(rcc_ctx_close(ctx));
}

/* ------------------------------------------------ one waiter in a thread */

struct waiter {
	struct rcc_cq *cq;
	int timeout_ms;
	atomic_int tid; /* kernel thread id once started */
	atomic_bool done;
	struct rcc_wc wc;
	int rc;
};

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;

	atomic_store(&w->tid, (int)syscall(SYS_gettid));
	w->rc = rcc_cq_wait(w->cq, &w->wc, 1, w->timeout_ms);
	atomic_store(&w->done, true);
	return NULL;
}

/* The scheduler state of thread tid ('R' running, 'S' sleeping, ...). */
static char thread_state(int tid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return '?';
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	const char *paren = strrchr(buf, ')'); /* the name may hold spaces */
	return paren && paren[1] == ' ' ? paren[2] : '?';
}

/*
 * One SEND from a to b while a thread waits on b's CQ. asleep: post only once
 * the waiter sleeps in the kernel (or has returned, which fails the case).
 */
static void one_send_to_waiter(struct pair *p, struct tbuf *a, struct tbuf *b, uint64_t seed,
			       bool asleep)
{
	struct waiter w = { .cq = p->cq_b, .timeout_ms = TEST_TIMEOUT_MS };
	pthread_t th;

	atomic_init(&w.tid, 0);
	atomic_init(&w.done, false);
	fill_pattern(a->p, MSG, seed);
	memset(b->p, 0, MSG);
	struct rcc_sge rb = tbuf_sge(b, 0, MSG), sa = tbuf_sge(a, 0, MSG);
	CHECK_OK(rcc_post_recv(p->b, &rb, 1, seed));
	CHECK(pthread_create(&th, NULL, wait_thread, &w) == 0);
	uint64_t end = now_ms() + TEST_TIMEOUT_MS;
	while (!atomic_load(&w.tid) && now_ms() < end)
		sched_yield();
	if (asleep) {
		while (!atomic_load(&w.done) && thread_state(atomic_load(&w.tid)) != 'S' &&
		       now_ms() < end)
			sched_yield();
	}
	int post = rcc_post_send(p->a, &sa, 1, seed, RCC_SEND_SIGNALED);
	pthread_join(th, NULL);
	CHECK_OK(post);
	CHECK_MSG(w.rc == 1, "%s waiter: %s", asleep ? "sleeping" : "spinning", rcc_strerror(w.rc));
	CHECK_WC(w.wc, RCC_WC_SUCCESS);
	CHECK_EQ(w.wc.wr_id, seed);
	CHECK_EQ(w.wc.opcode, RCC_WC_RECV);
	CHECK_EQ(w.wc.byte_len, MSG);
	CHECK_EQ(check_pattern(b->p, MSG, seed), -1);
	EXPECT_STATUS(p->cq_a, seed, RCC_WC_SUCCESS);
}

static void hybrid_sends(uint32_t spin_us, bool asleep)
{
	struct pair p;
	struct pair_opts o = { .mode = RCC_CQ_HYBRID, .spin_us = spin_us };
	struct tbuf a = { 0 }, b = { 0 };

	CHECK_OK(pair_open(&p, &o));
	CHECK_OK(tbuf_alloc(&a, p.ctx, MSG, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&b, p.ctx, MSG, RCC_ACCESS_LOCAL_WRITE));
	for (uint64_t i = 1; i <= 20 && !test_failed; i++)
		one_send_to_waiter(&p, &a, &b, i, asleep);
	tbuf_free(&a);
	tbuf_free(&b);
	pair_close(&p);
}

/* The spin budget outlasts the wait: every completion comes while it spins. */
static void completion_during_spin(void) { hybrid_sends(RCC_CQ_SPIN_US_MAX, false); }

/* 1 us of spin, and the send posted once the waiter sleeps. */
static void completion_after_spin(void) { hybrid_sends(1, true); }

/* ------------------------------------------------------------- timeouts */

static void timeout_in(uint32_t spin_us)
{
	struct pair p;
	struct pair_opts o = { .mode = RCC_CQ_HYBRID, .spin_us = spin_us };
	struct rcc_wc wc;

	CHECK_OK(pair_open(&p, &o));
	uint64_t t0 = now_ms();
	CHECK_EQ(rcc_cq_wait(p.cq_b, &wc, 1, 50), -ETIMEDOUT);
	uint64_t took = now_ms() - t0;
	/* never early (less the clocks' rounding); late is bounded below */
	CHECK_MSG(took >= 45, "returned after %llu ms of a 50 ms timeout",
		  (unsigned long long)took);
	/* The spin budget (10 s) does not extend the timeout: return long
	 * before it ends. 5 s is 100x the timeout (a loaded host) and half the
	 * budget a wrong wait would spin. */
	CHECK_MSG(took < 5000, "a 50 ms timeout took %llu ms", (unsigned long long)took);
	pair_close(&p);
}

/* The timeout ends the spin phase... */
static void timeout_during_spin(void) { timeout_in(RCC_CQ_SPIN_US_MAX); }
/* ...and the sleep phase. */
static void timeout_after_spin(void) { timeout_in(1); }

/* --------------------------------------------- many waiters on one CQ */

enum {
	WAITERS = 4,
	MSGS = 96, /* below the default queue depths */
};

struct shared_cq {
	struct rcc_cq *cq;
	atomic_int got;
	atomic_int seen[MSGS];
	atomic_int bad;
};

static void *drain_thread(void *arg)
{
	struct shared_cq *s = arg;
	uint64_t end = now_ms() + TEST_TIMEOUT_MS;
	struct rcc_wc wc[4];

	while (atomic_load(&s->got) < MSGS && now_ms() < end) {
		/* short waits so every thread notices when the others took the rest */
		int n = rcc_cq_wait(s->cq, wc, 4, 20);
		for (int i = 0; i < n; i++) {
			if (wc[i].status != RCC_WC_SUCCESS || wc[i].wr_id >= MSGS)
				atomic_fetch_add(&s->bad, 1);
			else
				atomic_fetch_add(&s->seen[wc[i].wr_id], 1);
		}
		if (n > 0)
			atomic_fetch_add(&s->got, n);
	}
	return NULL;
}

static void waiters_share_one_cq(uint32_t spin_us)
{
	struct pair p;
	struct pair_opts o = { .mode = RCC_CQ_HYBRID, .spin_us = spin_us };
	struct tbuf a = { 0 }, b = { 0 };
	struct shared_cq s = { 0 };
	pthread_t th[WAITERS];
	int started = 0;

	CHECK_OK(pair_open(&p, &o));
	CHECK_OK(tbuf_alloc(&a, p.ctx, (size_t)MSGS * 64, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&b, p.ctx, (size_t)MSGS * 64, RCC_ACCESS_LOCAL_WRITE));
	s.cq = p.cq_b;
	for (int i = 0; i < MSGS; i++) {
		struct rcc_sge r = tbuf_sge(&b, (size_t)i * 64, 64);
		CHECK_OK(rcc_post_recv(p.b, &r, 1, (uint64_t)i));
		fill_pattern(a.p + (size_t)i * 64, 64, 1000u + (uint64_t)i);
	}
	for (; started < WAITERS; started++)
		if (pthread_create(&th[started], NULL, drain_thread, &s))
			break;
	/* receives complete in posting order: message i lands in slot i */
	for (int i = 0; i < MSGS; i++) {
		struct rcc_sge sa = tbuf_sge(&a, (size_t)i * 64, 64);
		int rc = rcc_post_send(p.a, &sa, 1, (uint64_t)i,
				       i % 8 == 7 ? RCC_SEND_SIGNALED : 0);
		if (rc) {
			atomic_fetch_add(&s.bad, 1);
			break;
		}
		if (i % 8 == 7) {
			struct rcc_wc wc;
			if (wait_one(p.cq_a, &wc, TEST_TIMEOUT_MS) || wc.status != RCC_WC_SUCCESS) {
				atomic_fetch_add(&s.bad, 1);
				break;
			}
		}
	}
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	CHECK_EQ(started, WAITERS);
	CHECK_EQ(atomic_load(&s.bad), 0);
	CHECK_EQ(atomic_load(&s.got), MSGS);
	for (int i = 0; i < MSGS; i++) {
		CHECK_MSG(atomic_load(&s.seen[i]) == 1, "message %d returned %d times", i,
			  atomic_load(&s.seen[i]));
		CHECK_EQ(check_pattern(b.p + (size_t)i * 64, 64, 1000u + (uint64_t)i), -1);
	}
	tbuf_free(&a);
	tbuf_free(&b);
	pair_close(&p);
}

static void many_waiters_default_spin(void) { waiters_share_one_cq(0); }
static void many_waiters_sleeping(void) { waiters_share_one_cq(1); }

/* ------------------------- more busy-polling threads than cores finish */

enum {
	SPINNERS = 8,
	ROUNDS = 50,
};

struct spinner {
	enum rcc_cq_mode mode;
	int failed_round; /* 0: all rounds verified */
};

static void *spinner_thread(void *arg)
{
	struct spinner *sp = arg;
	struct pair p;
	struct pair_opts o = { .mode = sp->mode };
	struct tbuf a = { 0 }, b = { 0 };
	struct rcc_wc wc;

	sp->failed_round = -1;
	if (pair_open(&p, &o))
		return NULL;
	if (tbuf_alloc(&a, p.ctx, 64, RCC_ACCESS_LOCAL_WRITE) ||
	    tbuf_alloc(&b, p.ctx, 64, RCC_ACCESS_LOCAL_WRITE))
		goto out;
	sp->failed_round = 0;
	for (int r = 1; r <= ROUNDS; r++) {
		struct rcc_sge rb = tbuf_sge(&b, 0, 64), sa = tbuf_sge(&a, 0, 64);
		fill_pattern(a.p, 64, (uint64_t)r);
		if (rcc_post_recv(p.b, &rb, 1, (uint64_t)r) ||
		    rcc_post_send(p.a, &sa, 1, (uint64_t)r, RCC_SEND_SIGNALED) ||
		    wait_one(p.cq_b, &wc, TEST_TIMEOUT_MS) || wc.status != RCC_WC_SUCCESS ||
		    wc.wr_id != (uint64_t)r || check_pattern(b.p, 64, (uint64_t)r) != -1 ||
		    wait_one(p.cq_a, &wc, TEST_TIMEOUT_MS) || wc.status != RCC_WC_SUCCESS) {
			sp->failed_round = r;
			break;
		}
	}
out:
	tbuf_free(&a);
	tbuf_free(&b);
	pair_close(&p);
	return NULL;
}

static void spinners_outnumber_cores(enum rcc_cq_mode mode)
{
	struct spinner sp[SPINNERS];
	pthread_t th[SPINNERS];
	int started = 0;

	for (; started < SPINNERS; started++) {
		sp[started].mode = mode;
		if (pthread_create(&th[started], NULL, spinner_thread, &sp[started]))
			break;
	}
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	CHECK_EQ(started, SPINNERS);
	for (int i = 0; i < SPINNERS; i++)
		CHECK_MSG(sp[i].failed_round == 0, "spinner %d failed at round %d", i,
			  sp[i].failed_round);
}

static void poll_spinners_outnumber_cores(void) { spinners_outnumber_cores(RCC_CQ_POLL); }
static void hybrid_spinners_outnumber_cores(void) { spinners_outnumber_cores(RCC_CQ_HYBRID); }

TEST_MAIN(TEST(hybrid_attr), TEST(completion_during_spin), TEST(completion_after_spin),
	  TEST(timeout_during_spin), TEST(timeout_after_spin), TEST(many_waiters_default_spin),
	  TEST(many_waiters_sleeping), TEST(poll_spinners_outnumber_cores),
	  TEST(hybrid_spinners_outnumber_cores))
