/* SPDX-License-Identifier: BSD-3-Clause */
/* Completion queues: the three modes, epoll over many CQs, one CQ shared by
 * 64 endpoints. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>

#include "pair.h"

/* One message each way in the given mode, waiting the way the mode means. */
static void round_trip_in_mode(enum rcc_cq_mode mode)
{
	struct pair p;
	struct pair_opts o = { .mode = mode };
	struct tbuf a = { 0 }, b = { 0 };
	struct rcc_wc wc[2];

	CHECK_OK(pair_open(&p, &o));
	CHECK_EQ(rcc_cq_get_mode(p.cq_a), mode);
	CHECK_OK(tbuf_alloc(&a, p.ctx, 256, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&b, p.ctx, 256, RCC_ACCESS_LOCAL_WRITE));
	/* nothing there yet: a bounded wait times out, a poll returns 0 */
	CHECK_EQ(rcc_cq_poll(p.cq_b, wc, 2), 0);
	uint64_t t0 = now_ms();
	CHECK_EQ(rcc_cq_wait(p.cq_b, wc, 2, 50), -ETIMEDOUT);
	CHECK(now_ms() - t0 >= 45);

	struct rcc_sge rb = tbuf_sge(&b, 0, 128), sa = tbuf_sge(&a, 0, 128);
	fill_pattern(a.p, 128, (uint64_t)mode);
	CHECK_OK(rcc_post_recv(p.b, &rb, 1, 1));
	CHECK_OK(rcc_post_send(p.a, &sa, 1, 2, RCC_SEND_SIGNALED));
	if (mode == RCC_CQ_FD) {
		/* the descriptor becomes readable; then poll until empty */
		int efd = epoll_create1(0);
		struct epoll_event ev = { .events = EPOLLIN };
		CHECK(efd >= 0);
		CHECK(epoll_ctl(efd, EPOLL_CTL_ADD, rcc_cq_fd(p.cq_b), &ev) == 0);
		int got = 0;
		uint64_t end = now_ms() + TEST_TIMEOUT_MS;
		while (!got && now_ms() < end) {
			if (epoll_wait(efd, &ev, 1, 100) <= 0)
				continue;
			got = rcc_cq_poll(p.cq_b, wc, 2);
		}
		CHECK_EQ(got, 1);
		CHECK_EQ(rcc_cq_poll(p.cq_b, wc + 1, 1), 0);
		/* drained: not readable any more */
		CHECK_EQ(epoll_wait(efd, &ev, 1, 20), 0);
		close(efd);
	} else {
		CHECK_OK(wait_one(p.cq_b, wc, TEST_TIMEOUT_MS));
	}
	CHECK_WC(wc[0], RCC_WC_SUCCESS);
	CHECK_EQ(wc[0].wr_id, 1);
	CHECK_EQ(check_pattern(b.p, 128, (uint64_t)mode), -1);
	CHECK_OK(wait_one(p.cq_a, wc, TEST_TIMEOUT_MS));
	CHECK_WC(wc[0], RCC_WC_SUCCESS);
	CHECK_EQ(wc[0].wr_id, 2);
	tbuf_free(&a);
	tbuf_free(&b);
	pair_close(&p);
}

static void mode_poll(void) { round_trip_in_mode(RCC_CQ_POLL); }
static void mode_wait(void) { round_trip_in_mode(RCC_CQ_WAIT); }
static void mode_fd(void) { round_trip_in_mode(RCC_CQ_FD); }

/*
 * Take n completions from an FD-mode CQ the way rcc.h tells an application
 * with its own epoll to: poll until empty, rcc_cq_arm(), sleep on the
 * descriptor only when it says 0. Bounded by timeout_ms. Returns n, or
 * what went wrong.
 */
static int take_by_own_epoll(struct rcc_cq *cq, struct rcc_wc *wc, int n, int timeout_ms)
{
	struct epoll_event ev = { .events = EPOLLIN };
	uint64_t end = now_ms() + (uint64_t)timeout_ms;
	int efd = epoll_create1(EPOLL_CLOEXEC), got = 0, rc = -ETIMEDOUT;

	if (efd < 0 || epoll_ctl(efd, EPOLL_CTL_ADD, rcc_cq_fd(cq), &ev)) {
		rc = -errno;
		goto out;
	}
	while (got < n && now_ms() < end) {
		int k = rcc_cq_poll(cq, wc + got, n - got);
		if (k < 0) {
			rc = k;
			goto out;
		}
		got += k;
		if (k || got == n)
			continue;
		k = rcc_cq_arm(cq);
		if (k < 0) {
			rc = k;
			goto out;
		}
		if (k == 0)
			epoll_wait(efd, &ev, 1, (int)(end - now_ms()));
	}
	rc = got == n ? n : -ETIMEDOUT;
out:
	if (efd >= 0)
		close(efd);
	return rc;
}

/*
 * A steady ping-pong, every message verified, waiting the mode's way (and in
 * FD mode, with own_epoll, in the application's epoll after rcc_cq_arm()):
 * once a CQ is being waited on, the progress thread leaves its endpoints'
 * input to the waiter (docs/tcp-transport.md), so a waiter that stopped
 * reading its sockets would stall here rather than pass slowly.
 */
static void ping_pong_waiting(enum rcc_cq_mode mode, bool own_epoll)
{
	enum {
		ROUNDS = 2000,
		LEN = 64
	};
	struct pair p;
	struct pair_opts o = { .mode = mode, .spin_us = 1 };
	struct tbuf a = { 0 }, b = { 0 };

	CHECK_OK(pair_open(&p, &o));
	CHECK_OK(tbuf_alloc(&a, p.ctx, 2 * LEN, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&b, p.ctx, 2 * LEN, RCC_ACCESS_LOCAL_WRITE));
	struct rcc_sge a_out = tbuf_sge(&a, 0, LEN), a_in = tbuf_sge(&a, LEN, LEN);
	struct rcc_sge b_out = tbuf_sge(&b, 0, LEN), b_in = tbuf_sge(&b, LEN, LEN);
	for (uint64_t i = 0; i < ROUNDS; i++) {
		CHECK_OK(rcc_post_recv(p.b, &b_in, 1, i));
		CHECK_OK(rcc_post_recv(p.a, &a_in, 1, i));
		fill_pattern(a.p, LEN, i);
		CHECK_OK(rcc_post_send(p.a, &a_out, 1, i, RCC_SEND_SIGNALED));
		/* b: the ping; then the echo and its send completion */
		struct rcc_wc wc[2];
		if (own_epoll)
			CHECK_EQ(take_by_own_epoll(p.cq_b, wc, 1, TEST_TIMEOUT_MS), 1);
		else
			CHECK_OK(wait_one(p.cq_b, wc, TEST_TIMEOUT_MS));
		CHECK_WC(wc[0], RCC_WC_SUCCESS);
		CHECK_EQ(wc[0].opcode, RCC_WC_RECV);
		CHECK_EQ(check_pattern(b.p + LEN, LEN, i), -1);
		memcpy(b.p, b.p + LEN, LEN);
		CHECK_OK(rcc_post_send(p.b, &b_out, 1, i, RCC_SEND_SIGNALED));
		/* a: its send's completion and the echo, in either order (rule 5) */
		if (own_epoll)
			CHECK_EQ(take_by_own_epoll(p.cq_a, wc, 2, TEST_TIMEOUT_MS), 2);
		else
			CHECK_EQ(wait_n(p.cq_a, wc, 2, TEST_TIMEOUT_MS), 2);
		CHECK_WC(wc[0], RCC_WC_SUCCESS);
		CHECK_WC(wc[1], RCC_WC_SUCCESS);
		CHECK_EQ(wc[0].opcode + wc[1].opcode, RCC_WC_SEND + RCC_WC_RECV);
		CHECK_EQ(check_pattern(a.p + LEN, LEN, i), -1);
		if (own_epoll)
			CHECK_EQ(take_by_own_epoll(p.cq_b, wc, 1, TEST_TIMEOUT_MS), 1);
		else
			CHECK_OK(wait_one(p.cq_b, wc, TEST_TIMEOUT_MS));
		CHECK_WC(wc[0], RCC_WC_SUCCESS);
		CHECK_EQ(wc[0].opcode, RCC_WC_SEND);
		if (test_failed)
			break;
	}
	tbuf_free(&a);
	tbuf_free(&b);
	pair_close(&p);
}

static void wait_ping_pong(void) { ping_pong_waiting(RCC_CQ_WAIT, false); }
static void fd_ping_pong(void) { ping_pong_waiting(RCC_CQ_FD, false); }
static void hybrid_ping_pong(void) { ping_pong_waiting(RCC_CQ_HYBRID, false); }
static void fd_armed_ping_pong(void) { ping_pong_waiting(RCC_CQ_FD, true); }

/*
 * rcc_cq_arm()'s contract on every transport: FD mode only; with nothing
 * outstanding, 0 and a descriptor that stays quiet; with a completion that
 * came after the last poll, "poll first" (1) or a readable descriptor --
 * never 0 with the completion unannounced.
 */
static void arm_contract(void)
{
	static const enum rcc_cq_mode others[] = { RCC_CQ_POLL, RCC_CQ_WAIT, RCC_CQ_HYBRID };
	struct pair_opts o = { .mode = RCC_CQ_FD };
	struct tbuf a = { 0 }, b = { 0 };
	struct rcc_wc wc;
	struct pair p;

	CHECK_EQ(rcc_cq_arm(NULL), -EINVAL);
	CHECK_OK(pair_open(&p, &o));
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		struct rcc_cq_attr ca = { .mode = others[i] };
		struct rcc_cq *cq;
		CHECK_OK(rcc_cq_create(p.ctx, &ca, &cq));
		CHECK_EQ(rcc_cq_arm(cq), -EINVAL);
		CHECK_OK(rcc_cq_destroy(cq));
	}
	CHECK_OK(tbuf_alloc(&a, p.ctx, 64, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&b, p.ctx, 64, RCC_ACCESS_LOCAL_WRITE));
	struct pollfd pf = { .fd = rcc_cq_fd(p.cq_b), .events = POLLIN };
	CHECK_EQ(rcc_cq_poll(p.cq_b, &wc, 1), 0);
	CHECK_EQ(rcc_cq_arm(p.cq_b), 0);
	CHECK_EQ(poll(&pf, 1, 20), 0);

	struct rcc_sge rb = tbuf_sge(&b, 0, 64), sa = tbuf_sge(&a, 0, 64);
	fill_pattern(a.p, 64, 61);
	CHECK_OK(rcc_post_recv(p.b, &rb, 1, 7));
	CHECK_OK(rcc_post_send(p.a, &sa, 1, 8, RCC_SEND_SIGNALED));
	CHECK_OK(wait_one(p.cq_a, &wc, TEST_TIMEOUT_MS)); /* the receive has landed too */
	CHECK_EQ(wc.wr_id, 8);
	int armed = rcc_cq_arm(p.cq_b);
	CHECK_MSG(armed == 1 || (armed == 0 && poll(&pf, 1, TEST_TIMEOUT_MS) == 1),
		  "a completion after the last poll: rcc_cq_arm() %d and the descriptor quiet",
		  armed);
	CHECK_EQ(take_by_own_epoll(p.cq_b, &wc, 1, TEST_TIMEOUT_MS), 1);
	CHECK_WC(wc, RCC_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 7);
	CHECK_EQ(check_pattern(b.p, 64, 61), -1);
	tbuf_free(&a);
	tbuf_free(&b);
	pair_close(&p);
}

static uint64_t thread_cpu_ms(void)
{
	struct rusage u;
	getrusage(RUSAGE_THREAD, &u);
	return (uint64_t)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1000u +
	       (uint64_t)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1000u;
}

/*
 * A waiter sleeps on its endpoints' sockets as well as on the CQ (tcp reads
 * them itself, docs/tcp-transport.md). Once the peer has gone, a socket's end
 * stays readable for ever: the CQ's descriptor must not say "readable" for it,
 * and rcc_cq_wait() must sleep out its timeout instead of spinning.
 */
static void idle_after_peer_left(enum rcc_cq_mode mode)
{
	struct pair p;
	struct pair_opts o = { .mode = mode };
	struct rcc_wc wc[4];

	CHECK_OK(pair_open(&p, &o));
	CHECK_OK(rcc_ep_close(p.a));
	p.a = NULL;
	uint64_t end = now_ms() + TEST_TIMEOUT_MS;
	while (rcc_ep_state(p.b) == RCC_EP_CONNECTED && now_ms() < end)
		(void)rcc_cq_wait(p.cq_b, wc, 4, 50);
	CHECK_EQ(rcc_ep_state(p.b), RCC_EP_DISCONNECTED);
	while (rcc_cq_poll(p.cq_b, wc, 4) > 0)
		;
	if (mode == RCC_CQ_FD) {
		int efd = epoll_create1(0);
		struct epoll_event ev = { .events = EPOLLIN };
		CHECK(efd >= 0);
		CHECK(epoll_ctl(efd, EPOLL_CTL_ADD, rcc_cq_fd(p.cq_b), &ev) == 0);
		CHECK_EQ(epoll_wait(efd, &ev, 1, 300), 0);
		close(efd);
	}
	/* Sleeping costs next to no CPU; a waiter woken again and again by the
	 * socket's end would use all it gets of the 500 ms. 25 ms is five times
	 * what a sleeper was seen to use on a loaded 2-core host. */
	uint64_t cpu0 = thread_cpu_ms(), t0 = now_ms();
	CHECK_EQ(rcc_cq_wait(p.cq_b, wc, 4, 500), -ETIMEDOUT);
	CHECK(now_ms() - t0 >= 450);
	uint64_t cpu = thread_cpu_ms() - cpu0;
	if (cpu >= 25)
		printf("waiter used %llu ms of CPU in a 500 ms wait\n", (unsigned long long)cpu);
	CHECK(cpu < 25);
	pair_close(&p);
}

static void wait_idle_after_peer_left(void) { idle_after_peer_left(RCC_CQ_WAIT); }
static void fd_idle_after_peer_left(void) { idle_after_peer_left(RCC_CQ_FD); }
static void hybrid_idle_after_peer_left(void) { idle_after_peer_left(RCC_CQ_HYBRID); }

/* A blocked rcc_cq_wait wakes up for a completion made by another thread. */
struct later_send {
	struct rcc_ep *ep;
	struct rcc_sge sge;
	int rc;
};

static void *send_later(void *arg)
{
	struct later_send *l = arg;
	l->rc = rcc_post_send(l->ep, &l->sge, 1, 5, RCC_SEND_SIGNALED);
	return NULL;
}

static void wait_wakes_up(void)
{
	struct pair p;
	struct pair_opts o = { .mode = RCC_CQ_WAIT };
	struct tbuf a = { 0 }, b = { 0 };
	struct rcc_wc wc;
	pthread_t th;

	CHECK_OK(pair_open(&p, &o));
	CHECK_OK(tbuf_alloc(&a, p.ctx, 64, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&b, p.ctx, 64, RCC_ACCESS_LOCAL_WRITE));
	struct rcc_sge rb = tbuf_sge(&b, 0, 64);
	CHECK_OK(rcc_post_recv(p.b, &rb, 1, 1));
	struct later_send l = { .ep = p.a, .sge = tbuf_sge(&a, 0, 64) };
	CHECK(pthread_create(&th, NULL, send_later, &l) == 0);
	int rc = wait_one(p.cq_b, &wc, TEST_TIMEOUT_MS);
	pthread_join(th, NULL);
	CHECK_OK(l.rc);
	CHECK_OK(rc);
	CHECK_WC(wc, RCC_WC_SUCCESS);
	CHECK_OK(wait_one(p.cq_a, &wc, TEST_TIMEOUT_MS));
	tbuf_free(&a);
	tbuf_free(&b);
	pair_close(&p);
}

/* One epoll set over 8 CQs: it names exactly the CQs that have completions,
 * and times out when none has. */
static void epoll_over_8_cqs(void)
{
	enum {
		N = 8
	};
	struct pair p[N];
	struct pair_opts o = { .mode = RCC_CQ_FD };
	struct tbuf buf[N];
	struct epoll_event ev[N];
	struct rcc_wc wc;

	memset(p, 0, sizeof(p));
	memset(buf, 0, sizeof(buf));
	int efd = epoll_create1(0);
	CHECK(efd >= 0);
	for (int i = 0; i < N; i++) {
		CHECK_OK(pair_open(&p[i], &o));
		CHECK_OK(tbuf_alloc(&buf[i], p[i].ctx, 128, RCC_ACCESS_LOCAL_WRITE));
		struct epoll_event e = { .events = EPOLLIN, .data.u32 = (uint32_t)i };
		CHECK(epoll_ctl(efd, EPOLL_CTL_ADD, rcc_cq_fd(p[i].cq_b), &e) == 0);
		struct rcc_sge r = tbuf_sge(&buf[i], 64, 64);
		CHECK_OK(rcc_post_recv(p[i].b, &r, 1, (uint64_t)i));
	}
	uint64_t t0 = now_ms();
	CHECK_EQ(epoll_wait(efd, ev, N, 50), 0);
	CHECK(now_ms() - t0 >= 45);

	/* messages to CQs 1, 4 and 6 only */
	const int pick[3] = { 1, 4, 6 };
	for (int k = 0; k < 3; k++) {
		int i = pick[k];
		struct rcc_sge s = tbuf_sge(&buf[i], 0, 64);
		CHECK_OK(rcc_post_send(p[i].a, &s, 1, 0, 0));
	}
	bool seen[N] = { false };
	int nseen = 0;
	uint64_t end = now_ms() + TEST_TIMEOUT_MS;
	while (nseen < 3 && now_ms() < end) {
		int n = epoll_wait(efd, ev, N, 100);
		for (int k = 0; k < n; k++) {
			int i = (int)ev[k].data.u32;
			while (rcc_cq_poll(p[i].cq_b, &wc, 1) == 1) {
				CHECK_WC(wc, RCC_WC_SUCCESS);
				CHECK_EQ(wc.wr_id, (uint64_t)i);
				CHECK(wc.ep == p[i].b);
				CHECK(!seen[i]);
				seen[i] = true;
				nseen++;
			}
		}
	}
	CHECK_EQ(nseen, 3);
	for (int k = 0; k < 3; k++)
		CHECK(seen[pick[k]]);
	CHECK_EQ(epoll_wait(efd, ev, N, 20), 0);
	close(efd);
	for (int i = 0; i < N; i++) {
		tbuf_free(&buf[i]);
		pair_close(&p[i]);
	}
}

/* Connects n clients one after another; client i sends its index as private data. */
struct connector {
	struct rcc_ctx *ctx;
	const char *addr;
	struct rcc_ep_attr attr;
	struct rcc_ep **eps;
	int n;
	int rc;
};

static void *connect_n(void *arg)
{
	struct connector *c = arg;
	for (int i = 0; i < c->n; i++) {
		uint8_t idx = (uint8_t)i;
		struct rcc_ep_attr a = c->attr;
		a.private_data = &idx;
		a.private_data_len = 1;
		c->rc = rcc_connect(c->ctx, c->addr, &a, TEST_TIMEOUT_MS, &c->eps[i]);
		if (c->rc)
			break;
	}
	return NULL;
}

/* 64 endpoints on one shared CQ: every completion names its endpoint. */
static void shared_cq_64_endpoints(void)
{
	enum {
		N = 64,
		SZ = 256
	};
	struct rcc_ctx *ctx;
	struct rcc_cq *shared, *ccq;
	struct rcc_listener *lst;
	struct rcc_ep *srv[N], *cli[N];
	struct tbuf r = { 0 }, s = { 0 };
	char addr[128];

	CHECK_OK(test_ctx_open(&ctx));
	CHECK_OK(rcc_cq_create(ctx, &(struct rcc_cq_attr){ .depth = 4 * N }, &shared));
	CHECK_OK(rcc_cq_create(ctx, &(struct rcc_cq_attr){ .depth = 4 * N }, &ccq));
	snprintf(addr, sizeof(addr), "%s:0", test_addr());
	CHECK_OK(rcc_listen(ctx, addr, N, &lst));
	snprintf(addr, sizeof(addr), "%s:%d", test_addr(), rcc_listener_port(lst));
	CHECK_OK(tbuf_alloc(&r, ctx, N * SZ, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&s, ctx, N * SZ, RCC_ACCESS_LOCAL_WRITE));

	/* each server endpoint gets its receive before its client can send */
	struct rcc_sge rs[N];
	struct rcc_recv_wr rw[N];
	for (int i = 0; i < N; i++) {
		rs[i] = tbuf_sge(&r, (size_t)i * SZ, SZ);
		rw[i] = (struct rcc_recv_wr){ .wr_id = 1000 + (uint64_t)i,
					      .sg_list = &rs[i],
					      .num_sge = 1 };
	}
	/* connects happen on their own thread while this one accepts */
	struct connector c = {
		.ctx = ctx,
		.addr = addr,
		.eps = cli,
		.n = N,
		.attr = { .send_cq = ccq, .sq_depth = 4, .rq_depth = 4 },
	};
	pthread_t th;
	CHECK(pthread_create(&th, NULL, connect_n, &c) == 0);
	int accepted = 0;
	for (int i = 0; i < N; i++) {
		struct rcc_conn_req *req;
		int rc = rcc_get_request(lst, TEST_TIMEOUT_MS, &req);
		if (rc)
			break;
		/* the client's index travels as private data */
		size_t len;
		const uint8_t *pd = rcc_conn_req_private_data(req, &len);
		int idx = len == 1 ? pd[0] : -1;
		if (idx < 0 || idx >= N) {
			rcc_reject_req(req, NULL, 0);
			break;
		}
		struct rcc_ep_attr sa = { .send_cq = shared,
					  .sq_depth = 4,
					  .rq_depth = 4,
					  .initial_recv = &rw[idx],
					  .num_initial_recv = 1 };
		if (rcc_accept_req(req, &sa, &srv[idx]))
			break;
		accepted++;
	}
	pthread_join(th, NULL);
	CHECK_OK(c.rc);
	CHECK_EQ(accepted, N);

	for (int i = 0; i < N; i++) {
		fill_pattern(s.p + (size_t)i * SZ, SZ, 7000 + (uint64_t)i);
		struct rcc_sge ss = tbuf_sge(&s, (size_t)i * SZ, SZ);
		CHECK_OK(rcc_post_send(cli[i], &ss, 1, (uint64_t)i, 0));
	}
	struct rcc_wc wc[N];
	CHECK_EQ(wait_n(shared, wc, N, TEST_TIMEOUT_MS), N);
	bool seen[N] = { false };
	for (int k = 0; k < N; k++) {
		CHECK_WC(wc[k], RCC_WC_SUCCESS);
		int i = (int)(wc[k].wr_id - 1000);
		CHECK(i >= 0 && i < N && !seen[i]);
		seen[i] = true;
		CHECK(wc[k].ep == srv[i]);
		CHECK_EQ(check_pattern(r.p + (size_t)i * SZ, SZ, 7000 + (uint64_t)i), -1);
	}
	CHECK_EQ(rcc_cq_destroy(shared), -EBUSY);
	for (int i = 0; i < N; i++) {
		rcc_ep_close(cli[i]);
		rcc_ep_close(srv[i]);
	}
	tbuf_free(&r);
	tbuf_free(&s);
	rcc_listener_close(lst);
	CHECK_OK(rcc_cq_destroy(shared));
	CHECK_OK(rcc_cq_destroy(ccq));
	CHECK_OK(rcc_ctx_close(ctx));
}

/* Several endpoints streaming on one polled CQ each side, requests always in
 * flight: none may stall (posts queued behind unacknowledged requests and
 * owed acks need a poll, not input, to move). */
static void shared_cq_streams(void)
{
	enum {
		N = 3,
		MSGS = 300,
		WINDOW = 8,
		SZ = 512
	};
	struct rcc_ctx *ctx;
	struct rcc_cq *scq, *ccq;
	struct rcc_listener *lst;
	struct rcc_ep *srv[N], *cli[N];
	struct tbuf r = { 0 }, s = { 0 };
	char addr[128];

	CHECK_OK(test_ctx_open(&ctx));
	CHECK_OK(rcc_cq_create(ctx, &(struct rcc_cq_attr){ .depth = 4096 }, &scq));
	CHECK_OK(rcc_cq_create(ctx, &(struct rcc_cq_attr){ .depth = 4096 }, &ccq));
	snprintf(addr, sizeof(addr), "%s:0", test_addr());
	CHECK_OK(rcc_listen(ctx, addr, N, &lst));
	snprintf(addr, sizeof(addr), "%s:%d", test_addr(), rcc_listener_port(lst));
	CHECK_OK(tbuf_alloc(&r, ctx, (size_t)N * MSGS * SZ, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&s, ctx, SZ, RCC_ACCESS_LOCAL_WRITE));
	struct connector c = { .ctx = ctx,
			       .addr = addr,
			       .eps = cli,
			       .n = N,
			       .attr = { .send_cq = ccq, .sq_depth = WINDOW } };
	pthread_t th;
	CHECK(pthread_create(&th, NULL, connect_n, &c) == 0);
	int accepted = 0;
	for (int i = 0; i < N; i++) {
		struct rcc_conn_req *req;
		if (rcc_get_request(lst, TEST_TIMEOUT_MS, &req))
			break;
		size_t len;
		const uint8_t *pd = rcc_conn_req_private_data(req, &len);
		int idx = len == 1 ? pd[0] : 0;
		struct rcc_ep_attr sa = { .send_cq = scq, .rq_depth = MSGS };
		if (rcc_accept_req(req, &sa, &srv[idx]))
			break;
		accepted++;
	}
	pthread_join(th, NULL);
	CHECK_OK(c.rc);
	CHECK_EQ(accepted, N);
	for (int i = 0; i < N; i++)
		for (int m = 0; m < MSGS; m++) {
			struct rcc_sge rs = tbuf_sge(&r, ((size_t)i * MSGS + m) * SZ, SZ);
			CHECK_OK(rcc_post_recv(srv[i], &rs, 1, (uint64_t)(i * MSGS + m)));
		}
	fill_pattern(s.p, SZ, 88);
	struct rcc_sge ss = tbuf_sge(&s, 0, SZ);
	int sent[N] = { 0 }, done[N] = { 0 }, received = 0, all_done = 0;
	struct rcc_wc wc[32];
	uint64_t end = now_ms() + 30000;
	while ((all_done < N * MSGS || received < N * MSGS) && now_ms() < end) {
		for (int i = 0; i < N; i++)
			while (sent[i] < MSGS && sent[i] - done[i] < WINDOW) {
				CHECK_OK(rcc_post_send(cli[i], &ss, 1, (uint64_t)i,
						       RCC_SEND_SIGNALED));
				sent[i]++;
			}
		int n = rcc_cq_poll(ccq, wc, 32);
		for (int k = 0; k < n; k++) {
			CHECK_WC(wc[k], RCC_WC_SUCCESS);
			done[wc[k].wr_id]++;
			all_done++;
		}
		n = rcc_cq_poll(scq, wc, 32);
		for (int k = 0; k < n; k++)
			CHECK_WC(wc[k], RCC_WC_SUCCESS);
		received += n > 0 ? n : 0;
	}
	CHECK_EQ(all_done, N * MSGS);
	CHECK_EQ(received, N * MSGS);
	for (int i = 0; i < N * MSGS; i++)
		CHECK_EQ(check_pattern(r.p + (size_t)i * SZ, SZ, 88), -1);
	for (int i = 0; i < N; i++) {
		rcc_ep_close(cli[i]);
		rcc_ep_close(srv[i]);
	}
	tbuf_free(&r);
	tbuf_free(&s);
	rcc_listener_close(lst);
	rcc_cq_destroy(scq);
	rcc_cq_destroy(ccq);
	CHECK_OK(rcc_ctx_close(ctx));
}

TEST_MAIN(TEST(mode_poll), TEST(mode_wait), TEST(mode_fd), TEST(wait_wakes_up),
	  TEST(wait_ping_pong), TEST(fd_ping_pong), TEST(hybrid_ping_pong),
	  TEST(fd_armed_ping_pong), TEST(arm_contract), TEST(wait_idle_after_peer_left),
	  TEST(fd_idle_after_peer_left), TEST(hybrid_idle_after_peer_left), TEST(epoll_over_8_cqs),
	  TEST(shared_cq_64_endpoints), TEST(shared_cq_streams))
