/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tcp transport's waiters read their own input (white box, tcp and shm;
 * verbs has no progress thread). With the receiving context's progress
 * thread stuck -- the test holds the lock its every pass takes -- nothing
 * but the application's own calls can move a message, so each case shows
 * that the call it names reads the socket (or the ring) itself:
 *  - rcc_cq_wait() with a zero timeout: one whole poll, never the lighter
 *    look rcc_cq_wait() takes before it sleeps (which leaves a socket's
 *    input to the sleep's wake-up);
 *  - rcc_cq_wait() that sleeps: woken by the peer's message, it reads it.
 */
#include <pthread.h>

#include "pair.h"
#include "transport/tcp/tcp.h"

/* n SENDs from a to b, each taken on b by `take`, with b's progress thread
 * held; every one verified. */
static void sends_taken_with_progress_stuck(enum rcc_cq_mode mode, int timeout_ms)
{
	struct pair p;
	struct pair_opts o = { .mode = mode, .split = true };
	struct tbuf a = { 0 }, b = { 0 };
	struct rcc_wc wc;

	if (test_on_verbs())
		SKIP_CASE("tcp", "white box of the tcp transport's waits");
	CHECK_OK(pair_open(&p, &o));
	CHECK_OK(tbuf_alloc(&a, p.ctx, 64, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&b, p.ctx_b, 64, RCC_ACCESS_LOCAL_WRITE));
	struct rcc_sge rb = tbuf_sge(&b, 0, 64), sa = tbuf_sge(&a, 0, 64);
	pthread_mutex_t *stuck = &tctx(p.ctx_b)->eps_lock;
	for (uint64_t i = 0; i < 20 && !test_failed; i++) {
		fill_pattern(a.p, 64, i);
		CHECK_OK(rcc_post_recv(p.b, &rb, 1, i));
		pthread_mutex_lock(stuck);
		CHECK_OK(rcc_post_send(p.a, &sa, 1, i, RCC_SEND_SIGNALED));
		int n = 0;
		uint64_t end = now_ms() + TEST_TIMEOUT_MS;
		while (n != 1 && now_ms() < end)
			n = rcc_cq_wait(p.cq_b, &wc, 1, timeout_ms);
		pthread_mutex_unlock(stuck);
		CHECK_MSG(n == 1, "message %llu: rcc_cq_wait(%d ms) found nothing in %d ms",
			  (unsigned long long)i, timeout_ms, TEST_TIMEOUT_MS);
		CHECK_WC(wc, RCC_WC_SUCCESS);
		CHECK_EQ(wc.wr_id, i);
		CHECK_EQ(check_pattern(b.p, 64, i), -1);
		CHECK_OK(wait_one(p.cq_a, &wc, TEST_TIMEOUT_MS));
		CHECK_EQ(wc.wr_id, i);
	}
	tbuf_free(&a);
	tbuf_free(&b);
	pair_close(&p);
}

static void zero_timeout_wait_reads(void) { sends_taken_with_progress_stuck(RCC_CQ_WAIT, 0); }
static void sleeping_wait_reads(void) { sends_taken_with_progress_stuck(RCC_CQ_WAIT, 1000); }
static void sleeping_fd_wait_reads(void) { sends_taken_with_progress_stuck(RCC_CQ_FD, 1000); }

TEST_MAIN(TEST(zero_timeout_wait_reads), TEST(sleeping_wait_reads), TEST(sleeping_fd_wait_reads))
