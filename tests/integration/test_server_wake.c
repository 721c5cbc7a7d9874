/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rcc_server_wake() and ops->on_wake: per-connection work that no completion
 * triggers. Server A serves two connections, one it accepted (a client of
 * context B) and one it opened itself (rcc_server_connect() to server B).
 * After each rcc_server_wake() every one of them gets an on_wake on its own
 * agent thread that sees what the waking thread wrote before the call --
 * with agents that spin (POLL) and agents that sleep (WAIT), per endpoint
 * and on shared CQs. With wake_ms the calls come by themselves; none comes
 * after on_disconnect, and rcc_server_stop() ends it all.
 */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "pair.h"
#include "rcc/session.h"
#include "server_start.h"

#define NCONN 2 /* [0]: accepted, [1]: rcc_server_connect()'s */
#define ROUNDS 5

struct wconn {
	pthread_t agent;
	atomic_bool up, gone;
	atomic_int wakes, seen_gen, wrong_thread, after_gone, disconnects;
};

struct env {
	struct rcc_ctx *ctx_a, *ctx_b;
	struct rcc_server *a, *b;
	struct rcc_client *cli;
	struct rcc_ep *out_ep;
	struct wconn conn[NCONN];
	atomic_int gen; /* written before each rcc_server_wake() */
	atomic_int stray;
};

static bool wait_until(bool (*done)(struct env *), struct env *e)
{
	uint64_t end = now_ms() + TEST_TIMEOUT_MS;
	while (!done(e) && now_ms() < end)
		(void)poll(NULL, 0, 2);
	return done(e);
}

static int a_request(struct rcc_conn_req *req, void *arg, void **conn,
		     const struct rcc_recv_wr **recv, int *num)
{
	struct env *e = arg;
	(void)req;
	(void)recv;
	(void)num;
	*conn = &e->conn[0];
	return 0;
}

static int a_connect(struct rcc_ep *ep, void *arg, void **conn)
{
	struct env *e = arg;
	struct wconn *c = *conn;
	(void)ep;
	if (c != &e->conn[0] && c != &e->conn[1]) {
		atomic_fetch_add(&e->stray, 1);
		return -EINVAL;
	}
	c->agent = pthread_self();
	atomic_store(&c->up, true);
	return 0;
}

static void a_completion(struct rcc_ep *ep, const struct rcc_wc *wc, void *conn)
{
	(void)ep;
	(void)wc;
	(void)conn;
}

static struct env *the_env; /* on_wake has no arg */

static void a_wake(struct rcc_ep *ep, void *conn)
{
	struct wconn *c = conn;
	(void)ep;
	if (c != &the_env->conn[0] && c != &the_env->conn[1]) {
		atomic_fetch_add(&the_env->stray, 1);
		return;
	}
	if (atomic_load(&c->gone))
		atomic_fetch_add(&c->after_gone, 1);
	if (!pthread_equal(c->agent, pthread_self()))
		atomic_fetch_add(&c->wrong_thread, 1);
	atomic_store(&c->seen_gen, atomic_load(&the_env->gen));
	atomic_fetch_add(&c->wakes, 1);
}

static void a_disconnect(struct rcc_ep *ep, void *conn)
{
	struct wconn *c = conn;
	(void)ep;
	atomic_store(&c->gone, true);
	atomic_fetch_add(&c->disconnects, 1);
}

static const struct rcc_server_ops a_ops = {
	.on_request = a_request,
	.on_connect = a_connect,
	.on_completion = a_completion,
	.on_disconnect = a_disconnect,
	.on_wake = a_wake,
};

static const struct rcc_server_ops b_ops = { .on_completion = a_completion };

static int start(struct rcc_ctx *ctx, enum rcc_thread_mode tm, int threads, enum rcc_cq_mode cm,
		 int wake_ms, const struct rcc_server_ops *ops, void *arg, struct rcc_server **srv)
{
	struct rcc_server_attr a = {
		.thread_mode = tm,
		.num_threads = threads,
		.cq_mode = cm,
		.ep_attr = { .sq_depth = 4, .rq_depth = 4 },
		.ops = ops,
		.arg = arg,
		.wake_ms = wake_ms,
	};
	return test_server_start(ctx, a, srv, NULL, 0);
}

static bool both_up(struct env *e)
{
	return atomic_load(&e->conn[0].up) && atomic_load(&e->conn[1].up);
}

/* A with two connections: one accepted from B's context, one it opened. */
static int env_open(struct env *e, enum rcc_thread_mode tm, int threads, enum rcc_cq_mode cm,
		    int wake_ms)
{
	char addr[128];
	int rc;

	memset(e, 0, sizeof(*e));
	the_env = e;
	if ((rc = test_ctx_open(&e->ctx_a)) || (rc = test_ctx_open(&e->ctx_b)))
		return rc;
	if ((rc = start(e->ctx_b, RCC_THREAD_SHARED_CQ, 1, RCC_CQ_WAIT, 0, &b_ops, NULL, &e->b)) ||
	    (rc = start(e->ctx_a, tm, threads, cm, wake_ms, &a_ops, e, &e->a)))
		return rc;
	snprintf(addr, sizeof(addr), "%s:%d", test_addr(), rcc_server_port(e->a));
	struct rcc_client_attr ca = { .connect_timeout_ms = TEST_TIMEOUT_MS };
	if ((rc = rcc_client_connect(e->ctx_b, addr, &ca, &e->cli)))
		return rc;
	snprintf(addr, sizeof(addr), "%s:%d", test_addr(), rcc_server_port(e->b));
	if ((rc = rcc_server_connect(e->a, addr, NULL, TEST_TIMEOUT_MS, &e->conn[1], &e->out_ep)))
		return rc;
	return wait_until(both_up, e) ? 0 : -ETIMEDOUT;
}

static void env_close(struct env *e)
{
	if (e->a)
		TEARDOWN(rcc_server_stop(e->a));
	if (e->cli)
		TEARDOWN(rcc_client_close(e->cli));
	if (e->b)
		TEARDOWN(rcc_server_stop(e->b));
	if (e->ctx_a)
		TEARDOWN(rcc_ctx_close(e->ctx_a));
	if (e->ctx_b)
		TEARDOWN(rcc_ctx_close(e->ctx_b));
}

static bool all_seen(struct env *e)
{
	int g = atomic_load(&e->gen);
	return atomic_load(&e->conn[0].seen_gen) == g && atomic_load(&e->conn[1].seen_gen) == g;
}

static bool stopped(struct env *e)
{
	return atomic_load(&e->conn[0].disconnects) == 1 &&
	       atomic_load(&e->conn[1].disconnects) == 1;
}

#define CHECK_CONN(c)                                         \
	do {                                                  \
		CHECK_EQ(atomic_load(&(c)->wrong_thread), 0); \
		CHECK_EQ(atomic_load(&(c)->after_gone), 0);   \
		CHECK_EQ(atomic_load(&(c)->disconnects), 1);  \
	} while (0)

/* Each wake brings an on_wake for both connections that sees the new gen;
 * without wake_ms nothing else calls it. */
static void woken(enum rcc_thread_mode tm, int threads, enum rcc_cq_mode cm)
{
	struct env e;

	CHECK_OK(env_open(&e, tm, threads, cm, 0));
	/* a sleeping agent wakes every 100 ms anyway: no on_wake for that */
	(void)poll(NULL, 0, 250);
	CHECK_EQ(atomic_load(&e.conn[0].wakes), 0);
	CHECK_EQ(atomic_load(&e.conn[1].wakes), 0);
	for (int r = 1; r <= ROUNDS; r++) {
		atomic_store(&e.gen, r);
		CHECK_OK(rcc_server_wake(e.a));
		CHECK_MSG(wait_until(all_seen, &e), "round %d: seen %d and %d", r,
			  atomic_load(&e.conn[0].seen_gen), atomic_load(&e.conn[1].seen_gen));
	}
	/* the accepted one's peer leaves: no on_wake for it after on_disconnect */
	CHECK_OK(rcc_client_close(e.cli));
	e.cli = NULL;
	uint64_t end = now_ms() + TEST_TIMEOUT_MS;
	while (!atomic_load(&e.conn[0].gone) && now_ms() < end)
		(void)poll(NULL, 0, 2);
	CHECK(atomic_load(&e.conn[0].gone));
	int before = atomic_load(&e.conn[0].wakes);
	atomic_store(&e.gen, ROUNDS + 1);
	CHECK_OK(rcc_server_wake(e.a));
	end = now_ms() + TEST_TIMEOUT_MS;
	while (atomic_load(&e.conn[1].seen_gen) != ROUNDS + 1 && now_ms() < end)
		(void)poll(NULL, 0, 2);
	CHECK_EQ(atomic_load(&e.conn[1].seen_gen), ROUNDS + 1);
	CHECK_EQ(atomic_load(&e.conn[0].wakes), before);
	CHECK_OK(rcc_server_stop(e.a));
	e.a = NULL;
	CHECK(stopped(&e));
	CHECK_CONN(&e.conn[0]);
	CHECK_CONN(&e.conn[1]);
	CHECK_EQ(atomic_load(&e.stray), 0);
	env_close(&e);
}

static void per_ep_poll(void) { woken(RCC_THREAD_PER_EP, 0, RCC_CQ_POLL); }
static void per_ep_wait(void) { woken(RCC_THREAD_PER_EP, 0, RCC_CQ_WAIT); }
static void shared_poll(void) { woken(RCC_THREAD_SHARED_CQ, 2, RCC_CQ_POLL); }
static void shared_wait(void) { woken(RCC_THREAD_SHARED_CQ, 2, RCC_CQ_WAIT); }
static void shared_one_hybrid(void) { woken(RCC_THREAD_SHARED_CQ, 1, RCC_CQ_HYBRID); }

#define TICKS 40

static bool ticked(struct env *e)
{
	return atomic_load(&e->conn[0].wakes) >= TICKS && atomic_load(&e->conn[1].wakes) >= TICKS;
}

/* wake_ms: on_wake comes by itself, more often than a sleeping agent's own
 * 100 ms look-around would bring it. */
static void periodic(enum rcc_thread_mode tm, int threads, enum rcc_cq_mode cm)
{
	struct env e;

	CHECK_OK(env_open(&e, tm, threads, cm, 5));
	uint64_t t0 = now_ms();
	CHECK(wait_until(ticked, &e));
	uint64_t ms = now_ms() - t0;
	/* 40 calls take 200 ms every 5 ms, 4 s at a sleeping agent's own 100 ms */
	CHECK_MSG(ms < 3000, "%d and %d calls in %llu ms", atomic_load(&e.conn[0].wakes),
		  atomic_load(&e.conn[1].wakes), (unsigned long long)ms);
	CHECK_OK(rcc_server_stop(e.a));
	e.a = NULL;
	CHECK(stopped(&e));
	CHECK_CONN(&e.conn[0]);
	CHECK_CONN(&e.conn[1]);
	env_close(&e);
}

static void periodic_per_ep_wait(void) { periodic(RCC_THREAD_PER_EP, 0, RCC_CQ_WAIT); }
static void periodic_shared_wait(void) { periodic(RCC_THREAD_SHARED_CQ, 2, RCC_CQ_WAIT); }
static void periodic_shared_poll(void) { periodic(RCC_THREAD_SHARED_CQ, 1, RCC_CQ_POLL); }

static void bad_args(void)
{
	struct rcc_ctx *ctx;
	struct rcc_server *srv = NULL;

	CHECK_EQ(rcc_server_wake(NULL), -EINVAL);
	CHECK_OK(test_ctx_open(&ctx));
	CHECK_EQ(start(ctx, RCC_THREAD_SHARED_CQ, 1, RCC_CQ_WAIT, -1, &a_ops, NULL, &srv), -EINVAL);
	CHECK_EQ(start(ctx, RCC_THREAD_SHARED_CQ, 1, RCC_CQ_WAIT, 60001, &a_ops, NULL, &srv),
		 -EINVAL);
	CHECK(srv == NULL);
	/* no on_wake: nothing to wake for */
	CHECK_OK(start(ctx, RCC_THREAD_SHARED_CQ, 1, RCC_CQ_WAIT, 0, &b_ops, NULL, &srv));
	CHECK_EQ(rcc_server_wake(srv), -EINVAL);
	CHECK_OK(rcc_server_stop(srv));
	TEARDOWN(rcc_ctx_close(ctx));
}

TEST_MAIN(TEST(per_ep_poll), TEST(per_ep_wait), TEST(shared_poll), TEST(shared_wait),
	  TEST(shared_one_hybrid), TEST(periodic_per_ep_wait), TEST(periodic_shared_wait),
	  TEST(periodic_shared_poll), TEST(bad_args))
