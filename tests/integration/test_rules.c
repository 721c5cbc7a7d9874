/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Conformance: one case per rule of "Rules every transport keeps" in
 * include/rcc/rcc.h. The same binary runs on tcp (ctest) and on verbs (the
 * Soft-RoCE suite 10-integration), so a program tested on one transport
 * meets the same answers on the other. Where a device cannot be made to
 * enforce a rule the case says so and checks the portable part only.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pair.h"

/*
 * Rule 1, CQ overrun: more completions than the CQ holds lose completions and
 * put every endpoint using that CQ in RCC_EP_ERROR; posts are then refused.
 */
static void cq_overrun_fails_endpoints(void)
{
	enum {
		N = 256
	};
	struct pair p;
	struct pair_opts o = { .cq_depth = 1,
			       .attr_a = { .sq_depth = N },
			       .attr_b = { .rq_depth = N } };
	struct rcc_recv_wr rw[N];
	struct rcc_send_wr sw[N];

	CHECK_OK(pair_open(&p, &o));
	for (int i = 0; i < N; i++) {
		rw[i] = (struct rcc_recv_wr){ .wr_id = (uint64_t)i };
		sw[i] = (struct rcc_send_wr){ .wr_id = (uint64_t)i, .opcode = RCC_WR_SEND };
	}
	CHECK_OK(rcc_post_recv_list(p.b, rw, N, NULL));
	/* Unsignalled: the receiver's CQ (depth 1) is the one that overruns. */
	CHECK_OK(rcc_post_send_list(p.a, sw, N, NULL));
	/* Nobody polls the receiver's CQ: it fills, then overruns. */
	uint64_t end = now_ms() + TEST_TIMEOUT_MS;
	while (rcc_ep_state(p.b) == RCC_EP_CONNECTED && now_ms() < end) {
		struct rcc_wc w;
		(void)rcc_cq_wait(p.cq_a, &w, 1, 10); /* drives the sender */
	}
	CHECK_EQ(rcc_ep_state(p.b), RCC_EP_ERROR);
	CHECK_EQ(rcc_post_recv(p.b, NULL, 0, 1), -ENOTCONN);
	CHECK_EQ(rcc_post_send(p.b, NULL, 0, 1, RCC_SEND_SIGNALED), -ENOTCONN);
	/* Fewer completions than requests reach the CQ: some were lost. */
	struct rcc_wc w[N];
	int got = rcc_cq_poll(p.cq_b, w, N);
	CHECK(got >= 0 && got < N);
	pair_close(&p);
}

/*
 * Rule 2, send-queue slots: a slot is free again only once a signalled
 * completion at or after it has been polled. Signalling the last of every
 * sq_depth requests works everywhere; never signalling fills the queue for
 * good (-ENOMEM) on every transport (verbs: rcc counts the slots, as NICs
 * that free them at poll time do, although Soft-RoCE would not).
 */
static void sq_slots_freed_by_polled_signalled_completion(void)
{
	enum {
		DEPTH = 8,
		ROUNDS = 4
	};
	struct pair p;
	struct pair_opts o = { .attr_a = { .sq_depth = DEPTH }, .attr_b = { .rq_depth = DEPTH } };
	struct tbuf src = { 0 }, dst = { 0 };
	struct rcc_wc wc;

	CHECK_OK(pair_open(&p, &o));
	CHECK_OK(tbuf_alloc(&src, p.ctx, 64 * DEPTH, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&dst, p.ctx, 64 * DEPTH, ALL_ACCESS));
	struct rcc_remote_mr rm = rcc_mr_remote(dst.mr);

	/* Portable: the last request of each full queue is signalled. */
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < DEPTH; i++) {
			fill_pattern(src.p + 64 * i, 64, (uint64_t)(r * DEPTH + i));
			struct rcc_sge sg = tbuf_sge(&src, 64 * (size_t)i, 64);
			unsigned fl = i == DEPTH - 1 ? RCC_SEND_SIGNALED : 0;
			CHECK_OK(rcc_post_write(p.a, &sg, 1, rm.addr + 64 * (uint64_t)i, rm.rkey,
						(uint64_t)i, fl));
		}
		CHECK_OK(wait_one(p.cq_a, &wc, TEST_TIMEOUT_MS));
		CHECK_WC(wc, RCC_WC_SUCCESS);
		CHECK_EQ(wc.wr_id, DEPTH - 1);
		/* RC order: every earlier WRITE is in place when the last completes. */
		for (int i = 0; i < DEPTH; i++)
			CHECK_EQ(check_pattern(dst.p + 64 * i, 64, (uint64_t)(r * DEPTH + i)), -1);
	}

	/* Never signalled: WRITE_IMMs, so the receiver proves they all executed. */
	struct rcc_recv_wr rw[DEPTH];
	for (int i = 0; i < DEPTH; i++)
		rw[i] = (struct rcc_recv_wr){ .wr_id = (uint64_t)i };
	CHECK_OK(rcc_post_recv_list(p.b, rw, DEPTH, NULL));
	struct rcc_sge sg = tbuf_sge(&src, 0, 8);
	for (int i = 0; i < DEPTH; i++)
		CHECK_OK(
			rcc_post_write_imm(p.a, &sg, 1, rm.addr, rm.rkey, (uint32_t)i, 100 + i, 0));
	struct rcc_wc rwc[DEPTH];
	CHECK_EQ(wait_n(p.cq_b, rwc, DEPTH, TEST_TIMEOUT_MS), DEPTH);
	/* Executed and acknowledged by the peer, yet the slots stay taken (on
	 * verbs rcc counts them: Soft-RoCE would free them by itself). */
	for (int i = 0; i < 100; i++) {
		CHECK_EQ(rcc_cq_poll(p.cq_a, &wc, 1), 0);
		CHECK_EQ(rcc_post_write(p.a, &sg, 1, rm.addr, rm.rkey, 999, RCC_SEND_SIGNALED),
			 -ENOMEM);
	}
	tbuf_free(&dst);
	tbuf_free(&src);
	pair_close(&p);
}

/*
 * Rule 2 with several posting threads: requests posted onto one endpoint by
 * four threads at once, their completions polled meanwhile by a fifth, give
 * every slot back (verbs counts them under the endpoint's slot lock, which
 * posters and the poller contend for): afterwards exactly DEPTH requests fit.
 */
struct slot_poster {
	struct pair *p;
	struct rcc_sge sg;
	uint64_t addr;
	uint32_t rkey;
	int who;
	atomic_int *failed;
};

static void *slot_poster_main(void *arg)
{
	struct slot_poster *sp = arg;

	for (int i = 0; i < 100 && !atomic_load(sp->failed); i++) {
		int rc;
		while ((rc = rcc_post_write(sp->p->a, &sp->sg, 1, sp->addr, sp->rkey,
					    (uint64_t)(sp->who * 1000 + i), RCC_SEND_SIGNALED)) ==
			       -ENOMEM &&
		       !atomic_load(sp->failed))
			sched_yield(); /* full: the poller frees slots */
		if (rc == -ENOMEM)
			break; /* the poller gave up */
		if (rc) {
			atomic_store(sp->failed, rc);
			break;
		}
	}
	return NULL;
}

/* The fifth thread: polls until every request completed or the deadline. */
struct slot_poller {
	struct pair *p;
	uint64_t end;
	int want, got, bad;
	atomic_int *failed;
};

static void *slot_poller_main(void *arg)
{
	struct slot_poller *sl = arg;
	struct rcc_wc wc[8];

	while (sl->got < sl->want && !atomic_load(sl->failed) && now_ms() < sl->end) {
		int n = rcc_cq_poll(sl->p->cq_a, wc, 8);
		for (int i = 0; i < n; i++)
			sl->bad += wc[i].status != RCC_WC_SUCCESS;
		sl->got += n > 0 ? n : 0;
	}
	if (sl->got < sl->want) /* let the posters end (they stop on a failure) */
		atomic_store(sl->failed, -ETIMEDOUT);
	return NULL;
}

static void sq_slots_shared_by_posting_threads(void)
{
	enum {
		DEPTH = 8,
		THREADS = 4,
		N = THREADS * 100
	};
	struct pair p;
	struct pair_opts o = { .cq_depth = 2 * DEPTH, .attr_a = { .sq_depth = DEPTH } };
	struct tbuf src = { 0 }, dst = { 0 };
	struct slot_poster sp[THREADS];
	pthread_t th[THREADS];
	atomic_int failed;
	struct rcc_wc wc[DEPTH];
	int got = 0, bad = 0;

	atomic_init(&failed, 0);
	CHECK_OK(pair_open(&p, &o));
	CHECK_OK(tbuf_alloc(&src, p.ctx, 64, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&dst, p.ctx, 64 * THREADS, ALL_ACCESS));
	struct rcc_remote_mr rm = rcc_mr_remote(dst.mr);
	for (int t = 0; t < THREADS; t++) {
		sp[t] = (struct slot_poster){ .p = &p,
					      .sg = tbuf_sge(&src, 0, 64),
					      .addr = rm.addr + 64 * (uint64_t)t,
					      .rkey = rm.rkey,
					      .who = t,
					      .failed = &failed };
		CHECK_EQ(pthread_create(&th[t], NULL, slot_poster_main, &sp[t]), 0);
	}
	struct slot_poller sl = {
		.p = &p, .end = now_ms() + TEST_TIMEOUT_MS, .want = N, .failed = &failed
	};
	pthread_t pth;
	CHECK_EQ(pthread_create(&pth, NULL, slot_poller_main, &sl), 0);
	/* Every thread is waited for with a bound: one asleep for good in the
	 * slot lock (a lost wake-up) cannot be stopped, so the binary reports it
	 * and ends at once instead of hanging until ctest's timeout. */
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += TEST_TIMEOUT_MS / 1000 + 5;
	for (int t = 0; t <= THREADS; t++) {
		if (pthread_timedjoin_np(t < THREADS ? th[t] : pth, NULL, &until)) {
			test_fail(__FILE__, __LINE__,
				  "%s thread never came back (asleep in the slot lock?)",
				  t < THREADS ? "a posting" : "the polling");
			fflush(stdout);
			fflush(stderr);
			_exit(1);
		}
	}
	got = sl.got;
	bad = sl.bad;
	CHECK_EQ(atomic_load(&failed), 0);
	CHECK_EQ(got, N);
	CHECK_EQ(bad, 0);
	/* Every slot is free again: DEPTH requests fit, one more does not. */
	struct rcc_sge sg = tbuf_sge(&src, 0, 64);
	for (int i = 0; i < DEPTH; i++)
		CHECK_OK(rcc_post_write(p.a, &sg, 1, rm.addr, rm.rkey, (uint64_t)i,
					RCC_SEND_SIGNALED));
	CHECK_EQ(rcc_post_write(p.a, &sg, 1, rm.addr, rm.rkey, 99, RCC_SEND_SIGNALED), -ENOMEM);
	CHECK_EQ(wait_n(p.cq_a, wc, DEPTH, TEST_TIMEOUT_MS), DEPTH);
	tbuf_free(&dst);
	tbuf_free(&src);
	pair_close(&p);
}

/* Rule 2, receive slots: a receive's slot is free once its completion is polled. */
static void rq_slot_freed_by_polled_completion(void)
{
	enum {
		DEPTH = 8
	};
	struct pair p;
	struct pair_opts o = { .attr_b = { .rq_depth = DEPTH } };
	struct tbuf s = { 0 }, r = { 0 };
	struct rcc_wc wc[DEPTH];

	CHECK_OK(pair_open(&p, &o));
	CHECK_OK(tbuf_alloc(&s, p.ctx, 64, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&r, p.ctx, 64 * (DEPTH + 1), RCC_ACCESS_LOCAL_WRITE));
	/* half in lists, half one by one: the transports post a single
	 * receive on a path of its own, and both count */
	struct rcc_sge rs[DEPTH];
	struct rcc_recv_wr rw[DEPTH / 2];
	for (int i = 0; i < DEPTH; i++)
		rs[i] = tbuf_sge(&r, 64 * (size_t)i, 64);
	for (int i = 0; i < DEPTH / 2; i++)
		rw[i] = (struct rcc_recv_wr){ .wr_id = (uint64_t)i,
					      .sg_list = &rs[i],
					      .num_sge = 1 };
	CHECK_OK(rcc_post_recv_list(p.b, rw, DEPTH / 2, NULL));
	for (int i = DEPTH / 2; i < DEPTH; i++)
		CHECK_OK(rcc_post_recv(p.b, &rs[i], 1, (uint64_t)i));
	struct rcc_sge sg = tbuf_sge(&s, 0, 64);
	for (int i = 0; i < DEPTH; i++)
		CHECK_OK(rcc_post_send(p.a, &sg, 1, (uint64_t)i, RCC_SEND_SIGNALED));
	/* every SEND completed: every receive is consumed, none polled yet */
	CHECK_EQ(wait_n(p.cq_a, wc, DEPTH, TEST_TIMEOUT_MS), DEPTH);
	struct rcc_sge extra = tbuf_sge(&r, 64 * DEPTH, 64);
	/* (on verbs rcc counts: Soft-RoCE would free a consumed receive itself) */
	CHECK_EQ(rcc_post_recv(p.b, &extra, 1, 99), -ENOMEM);
	CHECK_OK(wait_one(p.cq_b, &wc[0], TEST_TIMEOUT_MS));
	CHECK_WC(wc[0], RCC_WC_SUCCESS);
	CHECK_EQ(wc[0].wr_id, 0);
	CHECK_OK(rcc_post_recv(p.b, &extra, 1, 99)); /* the polled one made room */
	tbuf_free(&r);
	tbuf_free(&s);
	pair_close(&p);
}

/*
 * Rule 3, RCC_SEND_SOLICITED: accepted on every transport and carried to a
 * verbs peer; an rcc receiver is woken by every completion, solicited or not.
 */
static void solicited_flag_changes_nothing_at_rcc_receiver(void)
{
	struct pair p;
	struct pair_opts o = { .mode = RCC_CQ_WAIT };
	struct tbuf s = { 0 }, r = { 0 };
	struct rcc_wc wc;

	CHECK_OK(pair_open(&p, &o));
	CHECK_OK(tbuf_alloc(&s, p.ctx, 64, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&r, p.ctx, 128, RCC_ACCESS_LOCAL_WRITE));
	for (int i = 0; i < 2; i++) {
		struct rcc_sge rs = tbuf_sge(&r, 64 * (size_t)i, 64);
		CHECK_OK(rcc_post_recv(p.b, &rs, 1, (uint64_t)i));
	}
	unsigned flags[2] = { 0, RCC_SEND_SOLICITED };
	for (int i = 0; i < 2; i++) {
		fill_pattern(s.p, 64, (uint64_t)i);
		struct rcc_sge sg = tbuf_sge(&s, 0, 64);
		CHECK_OK(
			rcc_post_send(p.a, &sg, 1, 10 + (uint64_t)i, RCC_SEND_SIGNALED | flags[i]));
		CHECK_OK(wait_one(p.cq_a, &wc, TEST_TIMEOUT_MS));
		CHECK_WC(wc, RCC_WC_SUCCESS);
		/* the blocking wait wakes for the unsolicited message as well */
		CHECK_OK(wait_one(p.cq_b, &wc, TEST_TIMEOUT_MS));
		CHECK_WC(wc, RCC_WC_SUCCESS);
		CHECK_EQ(wc.wr_id, i);
		CHECK_EQ(wc.opcode, RCC_WC_RECV);
		CHECK_EQ(check_pattern(r.p + 64 * i, 64, (uint64_t)i), -1);
	}
	tbuf_free(&r);
	tbuf_free(&s);
	pair_close(&p);
}

/*
 * Rule 4, after an endpoint error: the failing request completes with its
 * status, every later one (signalled or not) with RCC_WC_WR_FLUSH_ERR, posts
 * are refused with -ENOTCONN, and the peer leaves service too.
 */
static void error_flushes_everything_and_refuses_posts(void)
{
	struct pair p;
	struct tbuf l = { 0 }, t = { 0 }, r = { 0 };
	struct rcc_wc wc;

	CHECK_OK(pair_open(&p, NULL));
	CHECK_OK(tbuf_alloc(&l, p.ctx, 64, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&t, p.ctx, 64, RCC_ACCESS_LOCAL_WRITE | RCC_ACCESS_REMOTE_READ));
	CHECK_OK(tbuf_alloc(&r, p.ctx, 64, RCC_ACCESS_LOCAL_WRITE));
	struct rcc_sge rs = tbuf_sge(&r, 0, 64);
	CHECK_OK(rcc_post_recv(p.a, &rs, 1, 50));
	CHECK_OK(rcc_post_recv(p.b, &rs, 1, 60));
	struct rcc_sge sg = tbuf_sge(&l, 0, 8);
	struct rcc_remote_mr rm = rcc_mr_remote(t.mr);
	struct rcc_send_wr wr[3] = {
		/* no remote write access: the target refuses */
		{ .wr_id = 1,
		  .sg_list = &sg,
		  .num_sge = 1,
		  .opcode = RCC_WR_WRITE,
		  .flags = RCC_SEND_SIGNALED,
		  .remote_addr = rm.addr,
		  .rkey = rm.rkey },
		{ .wr_id = 2, .sg_list = &sg, .num_sge = 1, .opcode = RCC_WR_SEND },
		{ .wr_id = 3,
		  .sg_list = &sg,
		  .num_sge = 1,
		  .opcode = RCC_WR_SEND,
		  .flags = RCC_SEND_SIGNALED },
	};
	CHECK_OK(rcc_post_send_list(p.a, wr, 3, NULL));
	CHECK_OK(wait_one(p.cq_a, &wc, TEST_TIMEOUT_MS));
	CHECK_EQ(wc.wr_id, 1);
	CHECK_WC(wc, RCC_WC_REM_ACCESS_ERR);
	CHECK_EQ(rcc_ep_state(p.a), RCC_EP_ERROR);
	/* the rest, unsignalled included, and the receive: flushed (any order
	 * between the two queues, each queue in order) */
	uint64_t want_sq = 2;
	bool recv_seen = false;
	for (int k = 0; k < 3; k++) {
		CHECK_OK(wait_one(p.cq_a, &wc, TEST_TIMEOUT_MS));
		CHECK_WC(wc, RCC_WC_WR_FLUSH_ERR);
		CHECK(wc.ep == p.a);
		if (wc.wr_id == 50) {
			CHECK(!recv_seen);
			recv_seen = true;
		} else {
			CHECK_EQ(wc.wr_id, want_sq);
			want_sq++;
		}
	}
	CHECK(recv_seen && want_sq == 4);
	CHECK_EQ(rcc_post_send(p.a, &sg, 1, 4, RCC_SEND_SIGNALED), -ENOTCONN);
	CHECK_EQ(rcc_post_recv(p.a, &rs, 1, 5), -ENOTCONN);
	/* the target leaves service: its receive is flushed */
	CHECK_OK(wait_one(p.cq_b, &wc, TEST_TIMEOUT_MS));
	CHECK_EQ(wc.wr_id, 60);
	CHECK_WC(wc, RCC_WC_WR_FLUSH_ERR);
	CHECK(rcc_ep_state(p.b) != RCC_EP_CONNECTED);
	CHECK_EQ(rcc_post_send(p.b, &sg, 1, 6, RCC_SEND_SIGNALED), -ENOTCONN);
	tbuf_free(&r);
	tbuf_free(&t);
	tbuf_free(&l);
	pair_close(&p);
}

/*
 * Rule 5, ordering: SEND, SEND_IMM and WRITE_IMM consume receives in the
 * order they were posted and complete there in that order; the data of any
 * earlier WRITE is in place when a later one's receive completion is polled;
 * the sender's completions come in posting order.
 */
static void send_and_write_imm_complete_in_order(void)
{
	enum {
		K = 16,
		SZ = 256
	};
	struct pair p;
	struct tbuf s = { 0 }, r = { 0 }, t = { 0 };
	struct rcc_wc wc[3 * K];

	CHECK_OK(pair_open(&p, NULL));
	CHECK_OK(tbuf_alloc(&s, p.ctx, 3 * K * SZ, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&r, p.ctx, 2 * K * SZ, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&t, p.ctx, 2 * K * SZ, ALL_ACCESS));
	struct rcc_remote_mr rm = rcc_mr_remote(t.mr);
	for (int i = 0; i < 2 * K; i++) {
		struct rcc_sge rs = tbuf_sge(&r, (size_t)i * SZ, SZ);
		CHECK_OK(rcc_post_recv(p.b, &rs, 1, (uint64_t)i));
	}
	for (int i = 0; i < K; i++) {
		/* a plain WRITE, a SEND, a WRITE_IMM: the same order at the target */
		struct rcc_sge w = tbuf_sge(&s, (size_t)(3 * i) * SZ, SZ);
		struct rcc_sge m = tbuf_sge(&s, (size_t)(3 * i + 1) * SZ, SZ);
		struct rcc_sge wi = tbuf_sge(&s, (size_t)(3 * i + 2) * SZ, SZ);
		fill_pattern(s.p + (size_t)(3 * i) * SZ, SZ, 1000 + (uint64_t)i);
		fill_pattern(s.p + (size_t)(3 * i + 1) * SZ, SZ, 2000 + (uint64_t)i);
		fill_pattern(s.p + (size_t)(3 * i + 2) * SZ, SZ, 3000 + (uint64_t)i);
		struct rcc_send_wr wr[3] = {
			{ .wr_id = 3 * (uint64_t)i,
			  .sg_list = &w,
			  .num_sge = 1,
			  .opcode = RCC_WR_WRITE,
			  .flags = RCC_SEND_SIGNALED,
			  .remote_addr = rm.addr + (uint64_t)(2 * i) * SZ,
			  .rkey = rm.rkey },
			{ .wr_id = 3 * (uint64_t)i + 1,
			  .sg_list = &m,
			  .num_sge = 1,
			  .opcode = RCC_WR_SEND,
			  .flags = RCC_SEND_SIGNALED },
			{ .wr_id = 3 * (uint64_t)i + 2,
			  .sg_list = &wi,
			  .num_sge = 1,
			  .opcode = RCC_WR_WRITE_IMM,
			  .flags = RCC_SEND_SIGNALED,
			  .imm_data = (uint32_t)i,
			  .remote_addr = rm.addr + (uint64_t)(2 * i + 1) * SZ,
			  .rkey = rm.rkey },
		};
		CHECK_OK(rcc_post_send_list(p.a, wr, 3, NULL));
	}
	/* receiver: strictly alternating, each receive consumed in order */
	for (int i = 0; i < 2 * K; i++) {
		struct rcc_wc x;
		int k = i / 2;
		CHECK_OK(wait_one(p.cq_b, &x, TEST_TIMEOUT_MS));
		CHECK_WC(x, RCC_WC_SUCCESS);
		CHECK_EQ(x.wr_id, i);
		/* the WRITE posted before this message is visible now */
		CHECK_EQ(check_pattern(t.p + (size_t)(2 * k) * SZ, SZ, 1000 + (uint64_t)k), -1);
		if (i % 2 == 0) {
			CHECK_EQ(x.opcode, RCC_WC_RECV);
			CHECK_EQ(x.byte_len, SZ);
			CHECK_EQ(check_pattern(r.p + (size_t)i * SZ, SZ, 2000 + (uint64_t)k), -1);
		} else {
			CHECK_EQ(x.opcode, RCC_WC_RECV_WRITE_IMM);
			CHECK(x.wc_flags & RCC_WC_WITH_IMM);
			CHECK_EQ(x.imm_data, k);
			CHECK_EQ(check_pattern(t.p + (size_t)(2 * k + 1) * SZ, SZ,
					       3000 + (uint64_t)k),
				 -1);
		}
	}
	/* sender: posting order */
	CHECK_EQ(wait_n(p.cq_a, wc, 3 * K, TEST_TIMEOUT_MS), 3 * K);
	for (int i = 0; i < 3 * K; i++) {
		CHECK_WC(wc[i], RCC_WC_SUCCESS);
		CHECK_EQ(wc[i].wr_id, i);
		CHECK_EQ(wc[i].opcode, i % 3 == 1 ? RCC_WC_SEND : RCC_WC_WRITE);
	}
	tbuf_free(&t);
	tbuf_free(&r);
	tbuf_free(&s);
	pair_close(&p);
}

struct accept_job {
	struct rcc_listener *lst;
	struct rcc_cq *cq;
	struct rcc_ep *ep;
	int rc;
};

static void *accept_main(void *arg)
{
	struct accept_job *j = arg;
	struct rcc_ep_attr a = { .send_cq = j->cq };
	j->rc = rcc_accept(j->lst, &a, TEST_TIMEOUT_MS, &j->ep);
	return NULL;
}

/*
 * Rule 6, completions of a closed endpoint: once rcc_ep_close() returned, no
 * poll returns a completion naming it; the other endpoints of the shared CQ
 * lose nothing.
 */
static void closed_endpoint_never_named_again(void)
{
	enum {
		N = 16
	};
	struct pair p;
	struct accept_job job = { 0 };
	struct rcc_ep *c = NULL;
	struct tbuf s = { 0 }, r = { 0 };
	pthread_t th;
	char addr[128];

	CHECK_OK(pair_open(&p, NULL));
	CHECK_OK(tbuf_alloc(&s, p.ctx, 64, RCC_ACCESS_LOCAL_WRITE));
	/* one slice per receiving endpoint: endpoints progress on different
	 * threads, so a shared target would be a data race of the test's own */
	CHECK_OK(tbuf_alloc(&r, p.ctx, 3 * 64, RCC_ACCESS_LOCAL_WRITE));
	/* a second connection whose client side shares cq_a with p.a */
	job.lst = p.lst;
	job.cq = p.cq_b;
	CHECK_EQ(pthread_create(&th, NULL, accept_main, &job), 0);
	struct rcc_ep_attr ca = { .send_cq = p.cq_a };
	snprintf(addr, sizeof(addr), "%s:%d", test_addr(), rcc_listener_port(p.lst));
	int rc = rcc_connect(p.ctx, addr, &ca, TEST_TIMEOUT_MS, &c);
	pthread_join(th, NULL);
	CHECK_OK(rc);
	CHECK_OK(job.rc);

	struct rcc_sge rs_b = tbuf_sge(&r, 0, 64), rs_job = tbuf_sge(&r, 64, 64),
		       rs_c = tbuf_sge(&r, 128, 64), sg = tbuf_sge(&s, 0, 64);
	for (int i = 0; i < N; i++) {
		CHECK_OK(rcc_post_recv(p.b, &rs_b, 1, (uint64_t)i));
		CHECK_OK(rcc_post_recv(job.ep, &rs_job, 1, 100 + (uint64_t)i));
	}
	for (int i = 0; i < N; i++) {
		CHECK_OK(rcc_post_send(p.a, &sg, 1, (uint64_t)i, RCC_SEND_SIGNALED));
		CHECK_OK(rcc_post_send(c, &sg, 1, 100 + (uint64_t)i, RCC_SEND_SIGNALED));
		/* and one receive that only the close can complete */
		CHECK_OK(rcc_post_recv(c, &rs_c, 1, 200 + (uint64_t)i));
	}
	struct rcc_wc w[2 * N];
	CHECK_EQ(wait_n(p.cq_b, w, 2 * N, TEST_TIMEOUT_MS), 2 * N);
	/* c's completions are in cq_a or on their way: close it now */
	const struct rcc_ep *gone = c;
	CHECK_OK(rcc_ep_close(c));
	c = NULL;
	int seen_a = 0;
	uint64_t end = now_ms() + TEST_TIMEOUT_MS;
	while (seen_a < N && now_ms() < end) {
		int n = rcc_cq_wait(p.cq_a, w, 2 * N, 10);
		for (int i = 0; i < n; i++) {
			/* compared, never dereferenced: it is freed */
			CHECK(w[i].ep != (const void *)gone);
			CHECK(w[i].ep == p.a);
			CHECK_WC(w[i], RCC_WC_SUCCESS);
			CHECK_EQ(w[i].wr_id, seen_a);
			seen_a++;
		}
	}
	CHECK_EQ(seen_a, N);
	CHECK_EQ(rcc_cq_poll(p.cq_a, w, 2 * N), 0);
	rcc_ep_close(job.ep);
	tbuf_free(&r);
	tbuf_free(&s);
	pair_close(&p);
}

/*
 * Rule 6 under fire: a thread polls a shared CQ without pause while the main
 * thread keeps connecting endpoints to it, posting WRITEs and closing each
 * endpoint with its completions still coming. No poll that began after a
 * close returned may name the closed endpoint (each completion's wr_id
 * carries its endpoint's generation; the poller reads how many closes have
 * returned before every poll), nothing crashes, and TSan sees no race
 * between close and poll.
 */
struct close_poll {
	struct rcc_cq *cq;
	atomic_bool stop;
	atomic_uint closed; /* generations whose close has returned: 1..closed */
	atomic_uint seen;   /* completions polled so far */
	unsigned violations;
};

static void *close_poll_poller(void *arg)
{
	struct close_poll *cp = arg;
	struct rcc_wc wc[16];

	while (!atomic_load(&cp->stop)) {
		unsigned closed_before = atomic_load(&cp->closed);
		int n = rcc_cq_poll(cp->cq, wc, 16);
		for (int i = 0; i < n; i++) {
			unsigned gen = (unsigned)(wc[i].wr_id >> 32);
			cp->violations += gen <= closed_before;
			atomic_fetch_add(&cp->seen, 1);
		}
		if (n < 0)
			cp->violations++;
	}
	return NULL;
}

static void close_during_poll(void)
{
	const unsigned K = test_quick() ? 8 : 40, M = 16;
	struct pair p;
	struct tbuf src = { 0 }, dst = { 0 };
	struct close_poll cp = { 0 };
	pthread_t poller;
	char addr[128];

	CHECK_OK(pair_open(&p, NULL));
	CHECK_OK(tbuf_alloc(&src, p.ctx, 4096, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&dst, p.ctx, 4096, RCC_ACCESS_LOCAL_WRITE | RCC_ACCESS_REMOTE_WRITE));
	struct rcc_cq_attr qa = { .depth = 4 * M };
	CHECK_OK(rcc_cq_create(p.ctx, &qa, &cp.cq));
	atomic_init(&cp.stop, false);
	atomic_init(&cp.closed, 0);
	atomic_init(&cp.seen, 0);
	snprintf(addr, sizeof(addr), "%s:%d", test_addr(), rcc_listener_port(p.lst));
	CHECK_EQ(pthread_create(&poller, NULL, close_poll_poller, &cp), 0);
	struct rcc_sge sg = tbuf_sge(&src, 0, 64);
	struct rcc_remote_mr rm = rcc_mr_remote(dst.mr);
	for (unsigned gen = 1; gen <= K; gen++) {
		struct accept_job job = { .lst = p.lst, .cq = p.cq_b };
		struct rcc_ep *c = NULL;
		pthread_t th;
		CHECK_EQ(pthread_create(&th, NULL, accept_main, &job), 0);
		struct rcc_ep_attr ca = { .send_cq = cp.cq, .sq_depth = M };
		int rc = rcc_connect(p.ctx, addr, &ca, TEST_TIMEOUT_MS, &c);
		pthread_join(th, NULL);
		if (rc || job.rc) {
			CHECK_OK(rc);
			CHECK_OK(job.rc);
			break;
		}
		unsigned before = atomic_load(&cp.seen);
		for (unsigned j = 0; j < M; j++)
			CHECK_OK(rcc_post_write(c, &sg, 1, rm.addr + 64 * j, rm.rkey,
						(uint64_t)gen << 32 | j, RCC_SEND_SIGNALED));
		/* every other endpoint: let the poller take some of its completions
		 * first, so that the close meets them being polled (bounded wait) */
		uint64_t until = now_ms() + TEST_TIMEOUT_MS;
		while (gen % 2 && atomic_load(&cp.seen) - before < M / 4 && now_ms() < until)
			sched_yield();
		/* close with the completions in flight, in the CQ, or being polled */
		CHECK_OK(rcc_ep_close(c));
		atomic_store(&cp.closed, gen);
		CHECK_OK(rcc_ep_close(job.ep));
	}
	atomic_store(&cp.stop, true);
	pthread_join(poller, NULL);
	CHECK_EQ(cp.violations, 0);
	/* the poller met them: half the endpoints had some polled before close */
	CHECK(atomic_load(&cp.seen) >= K / 2 * (M / 4));
	CHECK(atomic_load(&cp.seen) <= K * M);
	CHECK_OK(rcc_cq_destroy(cp.cq));
	tbuf_free(&dst);
	tbuf_free(&src);
	pair_close(&p);
}

/*
 * Dead-peer detection (rcc_ep_attr.peer_timeout_ms): an idle, live peer keeps
 * the connection up well past the timeout; a frozen one (SIGSTOP) is declared
 * dead, outstanding work flushed; resumed, it finds its side gone too. On
 * every transport, with the frozen peer as client and as server: tcp's and
 * verbs' heartbeats come from the library's thread, which SIGSTOP stops with
 * the process (its kernel still answers TCP; its NIC, or rxe, still
 * acknowledges RC). With rdma_cm the two sides learn each other's heartbeat
 * address differently (src/transport/verbs/heartbeat.c), so both directions
 * matter.
 */
#define FROZEN_TIMEOUT_MS 1000u

/* The peer of the frozen-peer cases, in a process of its own (exec'd:
 * rdma-core state must not cross a fork): a client that connects to PORT, or
 * (--frozen-server, PORT unused) a server that writes its port to NOTIFY_FD
 * and accepts; then idle until disconnected. Exit 0 when it saw its endpoint
 * leave service after being resumed. */
static int frozen_child(bool serves, int port, int notify_fd)
{
	struct rcc_wc wc;
	struct peer_child pc;
	int st = peer_child_open(serves, port, notify_fd,
				 &(struct rcc_cq_attr){ .mode = RCC_CQ_WAIT },
				 (struct rcc_ep_attr){ .peer_timeout_ms = FROZEN_TIMEOUT_MS }, &pc);

	if (st)
		return st;
	/* Alive and idle; frozen by the parent; then, resumed, it must find the
	 * connection gone (bounded: the parent waits for this exit). */
	uint64_t end = now_ms() + 6 * TEST_TIMEOUT_MS;
	while (rcc_ep_state(pc.ep) == RCC_EP_CONNECTED && now_ms() < end)
		(void)rcc_cq_wait(pc.cq, &wc, 1, 100);
	st = rcc_ep_state(pc.ep) == RCC_EP_CONNECTED ? 5 : 0;
	/* everything closed: the sanitizers' leak check runs at this exit */
	if (rcc_ep_close(pc.ep) || (pc.lst && rcc_listener_close(pc.lst)) ||
	    rcc_cq_destroy(pc.cq) || rcc_ctx_close(pc.ctx))
		st = st ? st : 6;
	return st;
}

static void frozen_peer_parent(struct peer_proc *child, bool serves, bool *reaped)
{
	struct rcc_ctx *ctx = NULL;
	struct rcc_cq *cq = NULL;
	struct rcc_listener *lst = NULL;
	struct rcc_ep *ep = NULL;
	struct tbuf r = { 0 };
	struct rcc_wc wc;
	int status = -1;
	char addr[128];

	CHECK_OK(test_ctx_open(&ctx));
	CHECK_OK(rcc_cq_create(ctx, &(struct rcc_cq_attr){ .mode = RCC_CQ_WAIT }, &cq));
	struct rcc_ep_attr a = { .send_cq = cq, .peer_timeout_ms = FROZEN_TIMEOUT_MS };
	if (serves) {
		snprintf(addr, sizeof(addr), "%s:0", test_addr());
		CHECK_OK(rcc_listen(ctx, addr, 0, &lst));
		peer_go(child, rcc_listener_port(lst));
		CHECK_OK(rcc_accept(lst, &a, TEST_TIMEOUT_MS, &ep));
	} else {
		peer_go(child, 1);           /* (the port it is given is unused) */
		int port = peer_port(child); /* bounded: the child's own bounds end it */
		CHECK(port > 0);
		snprintf(addr, sizeof(addr), "%s:%d", test_addr(), port);
		CHECK_OK(rcc_connect(ctx, addr, &a, TEST_TIMEOUT_MS, &ep));
	}
	CHECK_OK(tbuf_alloc(&r, ctx, 64, RCC_ACCESS_LOCAL_WRITE));
	struct rcc_sge rs = tbuf_sge(&r, 0, 64);
	CHECK_OK(rcc_post_recv(ep, &rs, 1, 7));

	/* Three timeouts of silence from the application: heartbeats keep it up.
	 * They come every eighth of the timeout (RCCI_HB_PER_TIMEOUT), so a false
	 * death here needs a heartbeat sender stalled for 7/8 s: a margin of 8x
	 * the heartbeat period on a loaded host. */
	uint64_t end = now_ms() + 3 * FROZEN_TIMEOUT_MS;
	while (now_ms() < end) {
		CHECK_EQ(rcc_cq_wait(cq, &wc, 1, 100), -ETIMEDOUT);
		CHECK_EQ(rcc_ep_state(ep), RCC_EP_CONNECTED);
	}

	CHECK_EQ(kill(child->pid, SIGSTOP), 0);
	CHECK_OK(wait_one(cq, &wc, TEST_TIMEOUT_MS)); /* bounded: the timeout is 1 s */
	CHECK_EQ(wc.wr_id, 7);
	CHECK_WC(wc, RCC_WC_WR_FLUSH_ERR);
	CHECK_EQ(rcc_ep_state(ep), RCC_EP_DISCONNECTED);
	int why_st = 0;
	const char *why = rcc_ep_reason(ep, &why_st);
	CHECK_MSG(why && why_st == -ETIMEDOUT, "left because: %s (%d)", why ? why : "no reason",
		  why_st);
	CHECK_EQ(rcc_post_recv(ep, &rs, 1, 8), -ENOTCONN);

	/* the frozen side, resumed, notices as well (its exit status says so) */
	CHECK_EQ(kill(child->pid, SIGCONT), 0);
	end = now_ms() + 2 * TEST_TIMEOUT_MS;
	while (waitpid(child->pid, &status, WNOHANG) == 0 && now_ms() < end)
		(void)rcc_cq_wait(cq, &wc, 1, 50);
	CHECK_MSG(WIFEXITED(status), "the resumed peer did not finish");
	*reaped = true;
	CHECK_EQ(WEXITSTATUS(status), 0);
	TEARDOWN(rcc_ep_close(ep));
	tbuf_free(&r);
	if (lst)
		TEARDOWN(rcc_listener_close(lst));
	TEARDOWN(rcc_cq_destroy(cq));
	TEARDOWN(rcc_ctx_close(ctx));
}

static const char *self_path = "test_rules"; /* argv[0] */

static void frozen_peer(bool parent_serves)
{
	struct peer_proc child;
	bool reaped = false;

	CHECK_OK(peer_spawn_as(&child, self_path,
			       parent_serves ? "--frozen-client" : "--frozen-server"));
	frozen_peer_parent(&child, parent_serves, &reaped);
	if (child.to_child >= 0)
		close(child.to_child);
	if (child.from_child >= 0)
		close(child.from_child);
	if (!reaped) /* a failed check left the child running or stopped */
		peer_kill(&child);
}

/* The client frozen, the server notices; then the server frozen. */
static void frozen_peer_detected(void) { frozen_peer(true); }
static void frozen_server_detected(void) { frozen_peer(false); }

/* An unusable timeout is refused before anything is created. */
static void peer_timeout_bounds(void)
{
	struct pair p;
	struct rcc_ep *ep = NULL;

	CHECK_OK(pair_open(&p, NULL));
	struct rcc_ep_attr a = { .send_cq = p.cq_a,
				 .peer_timeout_ms = RCC_MIN_PEER_TIMEOUT_MS - 1 };
	char addr[128];
	snprintf(addr, sizeof(addr), "%s:%d", test_addr(), rcc_listener_port(p.lst));
	CHECK_EQ(rcc_connect(p.ctx, addr, &a, TEST_TIMEOUT_MS, &ep), -EINVAL);
	CHECK(ep == NULL);
	pair_close(&p);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		TEST(cq_overrun_fails_endpoints),
		TEST(sq_slots_freed_by_polled_signalled_completion),
		TEST(sq_slots_shared_by_posting_threads),
		TEST(rq_slot_freed_by_polled_completion),
		TEST(solicited_flag_changes_nothing_at_rcc_receiver),
		TEST(error_flushes_everything_and_refuses_posts),
		TEST(send_and_write_imm_complete_in_order),
		TEST(closed_endpoint_never_named_again),
		TEST(close_during_poll),
		TEST(frozen_peer_detected),
		TEST(frozen_server_detected),
		TEST(peer_timeout_bounds),
	};

	self_path = argv[0];
	if (argc == 4 &&
	    (!strcmp(argv[1], "--frozen-client") || !strcmp(argv[1], "--frozen-server")))
		return frozen_child(argv[1][9] == 's', atoi(argv[2]), atoi(argv[3]));
	return test_main(argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}
