/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Every error path gives an error completion or an error status, never a
 * crash or a hang, and the same status on every transport. A failed
 * endpoint flushes what is outstanding, refuses new work, and takes its peer
 * out of service too.
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pair.h"
#include "rcc/util.h"

/*
 * A one-sided request the target must refuse: the initiator sees want, its
 * later work is flushed and refused, and the target leaves service with its
 * posted receive flushed.
 */
static void refused_one_sided(enum rcc_wr_opcode op, unsigned access, int64_t offset, uint32_t len,
			      bool deregister, enum rcc_wc_status want)
{
	struct pair p;
	struct tbuf l = { 0 }, t = { 0 }, r = { 0 };

	CHECK_OK(pair_open(&p, NULL));
	CHECK_OK(tbuf_alloc(&l, p.ctx, 4096, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&t, p.ctx, 4096, access));
	CHECK_OK(tbuf_alloc(&r, p.ctx, 64, RCC_ACCESS_LOCAL_WRITE));
	struct rcc_remote_mr rm = rcc_mr_remote(t.mr);
	struct rcc_sge rs = tbuf_sge(&r, 0, 64);
	CHECK_OK(rcc_post_recv(p.b, &rs, 1, 77));
	if (deregister) {
		CHECK_OK(rcc_mr_dereg(t.mr));
		t.mr = NULL;
	}
	fill_pattern(t.p, 4096, 5);
	struct rcc_sge sg = tbuf_sge(&l, 0, len);
	/* one list, so the second request is queued before the first can fail */
	struct rcc_sge ok = tbuf_sge(&l, 0, 8);
	struct rcc_send_wr wr[2] = {
		{ .wr_id = 1,
		  .sg_list = &sg,
		  .num_sge = 1,
		  .opcode = op,
		  .flags = RCC_SEND_SIGNALED,
		  .remote_addr = rm.addr + (uint64_t)offset,
		  .rkey = rm.rkey,
		  .compare_add = 1 },
		/* work behind the failing request is flushed, not executed */
		{ .wr_id = 2,
		  .sg_list = &ok,
		  .num_sge = 1,
		  .opcode = RCC_WR_WRITE,
		  .flags = RCC_SEND_SIGNALED,
		  .remote_addr = rm.addr,
		  .rkey = rm.rkey },
	};
	CHECK_OK(rcc_post_send_list(p.a, wr, 2, NULL));
	EXPECT_STATUS(p.cq_a, 1, want);
	EXPECT_STATUS(p.cq_a, 2, RCC_WC_WR_FLUSH_ERR);
	CHECK_EQ(rcc_ep_state(p.a), RCC_EP_ERROR);
	CHECK_EQ(rcc_post_write(p.a, &ok, 1, rm.addr, rm.rkey, 3, RCC_SEND_SIGNALED), -ENOTCONN);
	CHECK_EQ(rcc_post_recv(p.a, &rs, 1, 4), -ENOTCONN);
	/* the target is out of service too: its receive is flushed */
	EXPECT_STATUS(p.cq_b, 77, RCC_WC_WR_FLUSH_ERR);
	CHECK(rcc_ep_state(p.b) != RCC_EP_CONNECTED);
	if (!deregister)
		CHECK_EQ(check_pattern(t.p, 4096, 5), -1); /* nothing was written */
	tbuf_free(&l);
	tbuf_free(&t);
	tbuf_free(&r);
	pair_close(&p);
}

/* A WRITE of len bytes with a wrong rkey. */
static void write_bad_rkey(size_t len)
{
	struct pair p;
	struct tbuf l = { 0 }, t = { 0 };

	CHECK_OK(pair_open(&p, NULL));
	CHECK_OK(tbuf_alloc(&l, p.ctx, len, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&t, p.ctx, 64, ALL_ACCESS));
	struct rcc_remote_mr rm = rcc_mr_remote(t.mr);
	struct rcc_sge sg = tbuf_sge(&l, 0, len);
	CHECK_OK(rcc_post_write(p.a, &sg, 1, rm.addr, rm.rkey ^ 0x5a5a0000u, 1, RCC_SEND_SIGNALED));
	EXPECT_STATUS(p.cq_a, 1, RCC_WC_REM_ACCESS_ERR);
	CHECK_EQ(rcc_ep_state(p.a), RCC_EP_ERROR);
	tbuf_free(&l);
	tbuf_free(&t);
	pair_close(&p);
}

static void bad_rkey(void) { write_bad_rkey(64); }

static void write_out_of_bounds(void)
{
	refused_one_sided(RCC_WR_WRITE, ALL_ACCESS, 4096 - 8, 16, false, RCC_WC_REM_ACCESS_ERR);
}

static void read_out_of_bounds(void)
{
	refused_one_sided(RCC_WR_READ, ALL_ACCESS, 1, 4096, false, RCC_WC_REM_ACCESS_ERR);
}

static void atomic_out_of_bounds(void)
{
	refused_one_sided(RCC_WR_FADD, ALL_ACCESS, 4096, 8, false, RCC_WC_REM_ACCESS_ERR);
}

static void write_without_permission(void)
{
	refused_one_sided(RCC_WR_WRITE, RCC_ACCESS_LOCAL_WRITE | RCC_ACCESS_REMOTE_READ, 0, 64,
			  false, RCC_WC_REM_ACCESS_ERR);
}

static void read_without_permission(void)
{
	refused_one_sided(RCC_WR_READ, RCC_ACCESS_LOCAL_WRITE | RCC_ACCESS_REMOTE_WRITE, 0, 64,
			  false, RCC_WC_REM_ACCESS_ERR);
}

static void atomic_without_permission(void)
{
	refused_one_sided(RCC_WR_CAS, RCC_ACCESS_LOCAL_WRITE | RCC_ACCESS_REMOTE_WRITE, 0, 8, false,
			  RCC_WC_REM_ACCESS_ERR);
}

static void deregistered_region(void)
{
	refused_one_sided(RCC_WR_WRITE, ALL_ACCESS, 0, 64, true, RCC_WC_REM_ACCESS_ERR);
}

/* A SEND longer than the posted receive: a length error at the receiver, an
 * invalid request at the sender, both out of service. */
static void receive_buffer_too_small(void)
{
	struct pair p;
	struct tbuf s = { 0 }, r = { 0 };

	CHECK_OK(pair_open(&p, NULL));
	CHECK_OK(tbuf_alloc(&s, p.ctx, 256, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&r, p.ctx, 256, RCC_ACCESS_LOCAL_WRITE));
	struct rcc_sge rs = tbuf_sge(&r, 0, 16), rs2 = tbuf_sge(&r, 16, 16);
	struct rcc_sge ss = tbuf_sge(&s, 0, 64);
	CHECK_OK(rcc_post_recv(p.b, &rs, 1, 1));
	CHECK_OK(rcc_post_recv(p.b, &rs2, 1, 2));
	CHECK_OK(rcc_post_send(p.a, &ss, 1, 3, RCC_SEND_SIGNALED));
	/* The IB statuses (what tcp and hardware such as mlx5 report); Soft-RoCE
	 * reports a local QP operation error and a remote operation error instead. */
	struct rcc_wc w;
	CHECK_OK(wait_one(p.cq_b, &w, TEST_TIMEOUT_MS));
	CHECK_EQ(w.wr_id, 1);
	CHECK_MSG(w.status == RCC_WC_LOC_LEN_ERR ||
			  (test_on_verbs() && w.status == RCC_WC_LOC_QP_OP_ERR),
		  "receiver: %s", rcc_wc_status_str(w.status));
	EXPECT_STATUS(p.cq_b, 2, RCC_WC_WR_FLUSH_ERR);
	CHECK_OK(wait_one(p.cq_a, &w, TEST_TIMEOUT_MS));
	CHECK_EQ(w.wr_id, 3);
	CHECK_MSG(w.status == RCC_WC_REM_INV_REQ_ERR ||
			  (test_on_verbs() && w.status == RCC_WC_REM_OP_ERR),
		  "sender: %s", rcc_wc_status_str(w.status));
	CHECK_EQ(rcc_ep_state(p.a), RCC_EP_ERROR);
	CHECK(rcc_ep_state(p.b) != RCC_EP_CONNECTED);
	tbuf_free(&s);
	tbuf_free(&r);
	pair_close(&p);
}

/* No receive posted and no RNR retries allowed: RNR retry exceeded. */
static void rnr_no_retry(void)
{
	struct pair p;
	struct pair_opts o = { .attr_a = { .rnr_retry = RCC_NO_RETRY } };
	struct tbuf s = { 0 };

	CHECK_OK(pair_open(&p, &o));
	CHECK_OK(tbuf_alloc(&s, p.ctx, 64, RCC_ACCESS_LOCAL_WRITE));
	struct rcc_sge ss = tbuf_sge(&s, 0, 64);
	CHECK_OK(rcc_post_send(p.a, &ss, 1, 1, RCC_SEND_SIGNALED));
	EXPECT_STATUS(p.cq_a, 1, RCC_WC_RNR_RETRY_EXC_ERR);
	CHECK_EQ(rcc_ep_state(p.a), RCC_EP_ERROR);
	tbuf_free(&s);
	pair_close(&p);
}

/* A few RNR retries, then give up. */
static void rnr_retries_exhausted(void)
{
	struct pair p;
	struct pair_opts o = { .attr_a = { .rnr_retry = 2 } };
	struct tbuf s = { 0 };

	CHECK_OK(pair_open(&p, &o));
	CHECK_OK(tbuf_alloc(&s, p.ctx, 64, RCC_ACCESS_LOCAL_WRITE));
	struct rcc_sge ss = tbuf_sge(&s, 0, 64);
	CHECK_OK(rcc_post_send(p.a, &ss, 1, 1, RCC_SEND_SIGNALED));
	CHECK_OK(rcc_post_send(p.a, &ss, 1, 2, RCC_SEND_SIGNALED));
	EXPECT_STATUS(p.cq_a, 1, RCC_WC_RNR_RETRY_EXC_ERR);
	EXPECT_STATUS(p.cq_a, 2, RCC_WC_WR_FLUSH_ERR);
	tbuf_free(&s);
	pair_close(&p);
}

/*
 * Each RNR retry waits the receiver's RNR timer (its min_rnr_timer, carried
 * by the NAK): two retries of 20.48 ms (IB code 22) end in RNR retry exceeded
 * no sooner than 40.96 ms after the post -- a lower bound, which a loaded
 * host only makes easier to meet. Sent alone, the request goes out without
 * the transmit side's rounds (tcp: send_lone), which must respect the
 * backoff as they do -- its payload copied at post time (inline) or read
 * from registered memory.
 */
static void rnr_retry_waits_timer(unsigned flags)
{
	enum {
		TIMER_CODE = 22, /* 20.48 ms */
		TIMER_US = 20480,
		RETRIES = 2
	};
	struct pair p;
	struct pair_opts o = { .attr_a = { .rnr_retry = RETRIES },
			       .attr_b = { .min_rnr_timer = TIMER_CODE } };
	struct tbuf s = { 0 };

	if (test_on_verbs())
		SKIP_CASE("tcp", "on verbs the RNR timer is the device's, not the library's");
	CHECK_OK(pair_open(&p, &o));
	CHECK_OK(tbuf_alloc(&s, p.ctx, 64, RCC_ACCESS_LOCAL_WRITE));
	fill_pattern(s.p, 64, 9);
	struct rcc_sge ss = tbuf_sge(&s, 0, 64);
	uint64_t t0 = rcc_now_ns();
	CHECK_OK(rcc_post_send(p.a, &ss, 1, 1, RCC_SEND_SIGNALED | flags));
	EXPECT_STATUS(p.cq_a, 1, RCC_WC_RNR_RETRY_EXC_ERR);
	uint64_t took_us = (rcc_now_ns() - t0) / 1000;
	CHECK_MSG(took_us >= (uint64_t)RETRIES * TIMER_US, "%d retries took %llu us", RETRIES,
		  (unsigned long long)took_us);
	tbuf_free(&s);
	pair_close(&p);
}

static void rnr_retry_waits_timer_inline(void) { rnr_retry_waits_timer(RCC_SEND_INLINE); }
static void rnr_retry_waits_timer_registered(void) { rnr_retry_waits_timer(0); }

/*
 * Sends that meet an empty receive queue wait (RNR retry forever) without
 * losing their order; a full send queue refuses the next post; once the
 * receiver posts, everything arrives in order.
 */
static void rnr_wait_then_deliver_in_order(void)
{
	enum {
		DEPTH = 4,
		SZ = 128,
		MAX_QUEUED = 64
	};
	struct pair p;
	struct pair_opts o = { .cq_depth = 256,
			       .attr_a = { .sq_depth = DEPTH },
			       .attr_b = { .rq_depth = MAX_QUEUED } };
	struct tbuf s = { 0 }, r = { 0 };
	struct rcc_wc wc[MAX_QUEUED];

	CHECK_OK(pair_open(&p, &o));
	CHECK_OK(tbuf_alloc(&s, p.ctx, DEPTH * SZ, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&r, p.ctx, (DEPTH + 1) * SZ, RCC_ACCESS_LOCAL_WRITE));
	for (int i = 0; i < DEPTH; i++) {
		fill_pattern(s.p + i * SZ, SZ, 60 + (uint64_t)i);
		struct rcc_sge ss = tbuf_sge(&s, (size_t)i * SZ, SZ);
		CHECK_OK(rcc_post_send(p.a, &ss, 1, (uint64_t)i, RCC_SEND_SIGNALED));
	}
	/* The queue holds at least DEPTH (a device may round up); once full, the
	 * next post is refused. Nothing completes meanwhile: no receive is posted. */
	int queued = DEPTH, rc = 0;
	while (queued < MAX_QUEUED &&
	       (rc = rcc_post_send(p.a, &(struct rcc_sge){ 0 }, 0, (uint64_t)queued,
				   RCC_SEND_SIGNALED)) == 0)
		queued++;
	CHECK_EQ(rc, -ENOMEM);
	CHECK_EQ(rcc_cq_wait(p.cq_a, wc, 1, 20), -ETIMEDOUT); /* still waiting, not failed */
	for (int i = 0; i < queued; i++) {
		struct rcc_sge rs = tbuf_sge(&r, (size_t)(i < DEPTH ? i : DEPTH) * SZ, SZ);
		CHECK_OK(rcc_post_recv(p.b, &rs, 1, 100 + (uint64_t)i));
	}
	CHECK_EQ(wait_n(p.cq_b, wc, queued, TEST_TIMEOUT_MS), queued);
	for (int i = 0; i < queued; i++) {
		CHECK_WC(wc[i], RCC_WC_SUCCESS);
		CHECK_EQ(wc[i].wr_id, 100 + (uint64_t)i);
		CHECK_EQ(wc[i].byte_len, i < DEPTH ? SZ : 0);
	}
	for (int i = 0; i < DEPTH; i++)
		CHECK_EQ(check_pattern(r.p + i * SZ, SZ, 60 + (uint64_t)i), -1);
	CHECK_EQ(wait_n(p.cq_a, wc, queued, TEST_TIMEOUT_MS), queued);
	for (int i = 0; i < queued; i++) {
		CHECK_WC(wc[i], RCC_WC_SUCCESS);
		CHECK_EQ(wc[i].wr_id, (uint64_t)i);
	}
	CHECK_EQ(rcc_ep_state(p.a), RCC_EP_CONNECTED);
	tbuf_free(&s);
	tbuf_free(&r);
	pair_close(&p);
}

/*
 * Long messages: the target refuses them at their first frame while the
 * initiator is still sending the rest, which must neither break the
 * connection nor resend from the middle.
 */
static size_t long_msg(void) { return test_quick() ? (size_t)4 << 20 : (size_t)64 << 20; }

static void long_send_rnr_exhausted(void)
{
	struct pair p;
	struct pair_opts o = { .attr_a = { .rnr_retry = 2 } };
	struct tbuf s = { 0 };

	CHECK_OK(pair_open(&p, &o));
	CHECK_OK(tbuf_alloc(&s, p.ctx, long_msg(), RCC_ACCESS_LOCAL_WRITE));
	struct rcc_sge ss = tbuf_sge(&s, 0, long_msg());
	CHECK_OK(rcc_post_send(p.a, &ss, 1, 1, RCC_SEND_SIGNALED));
	EXPECT_STATUS(p.cq_a, 1, RCC_WC_RNR_RETRY_EXC_ERR);
	tbuf_free(&s);
	pair_close(&p);
}

/* A short and a long send find no receive (RNR, retried forever); receives
 * posted later take both, whole and in order. */
static void long_send_waits_for_receive(void)
{
	struct pair p;
	struct pair_opts o = { .attr_a = { .rnr_retry = RCC_RETRY_FOREVER } };
	struct tbuf s = { 0 }, r = { 0 };
	struct rcc_wc wc[2];
	size_t n = long_msg();

	CHECK_OK(pair_open(&p, &o));
	CHECK_OK(tbuf_alloc(&s, p.ctx, n, RCC_ACCESS_LOCAL_WRITE));
	fill_pattern(s.p, n, 71);
	struct rcc_sge s0 = tbuf_sge(&s, 0, 64), s1 = tbuf_sge(&s, 0, n);
	struct rcc_send_wr wr[2] = {
		{ .wr_id = 1,
		  .sg_list = &s0,
		  .num_sge = 1,
		  .opcode = RCC_WR_SEND,
		  .flags = RCC_SEND_SIGNALED },
		{ .wr_id = 2,
		  .sg_list = &s1,
		  .num_sge = 1,
		  .opcode = RCC_WR_SEND,
		  .flags = RCC_SEND_SIGNALED },
	};
	CHECK_OK(rcc_post_send_list(p.a, wr, 2, NULL));
	/* the receive side gets its memory only now, while the sends are refused */
	CHECK_OK(tbuf_alloc(&r, p.ctx, 64 + n, RCC_ACCESS_LOCAL_WRITE));
	struct rcc_sge r0 = tbuf_sge(&r, 0, 64), r1 = tbuf_sge(&r, 64, n);
	CHECK_OK(rcc_post_recv(p.b, &r0, 1, 10));
	CHECK_OK(rcc_post_recv(p.b, &r1, 1, 11));
	CHECK_EQ(wait_n(p.cq_b, wc, 2, TEST_TIMEOUT_MS), 2);
	CHECK_WC(wc[0], RCC_WC_SUCCESS);
	CHECK_EQ(wc[0].wr_id, 10);
	CHECK_EQ(wc[0].byte_len, 64);
	CHECK_WC(wc[1], RCC_WC_SUCCESS);
	CHECK_EQ(wc[1].wr_id, 11);
	CHECK_EQ(wc[1].byte_len, n);
	CHECK_EQ(check_pattern(r.p, 64, 71), -1);
	CHECK_EQ(check_pattern(r.p + 64, n, 71), -1);
	CHECK_EQ(wait_n(p.cq_a, wc, 2, TEST_TIMEOUT_MS), 2);
	CHECK_WC(wc[0], RCC_WC_SUCCESS);
	CHECK_WC(wc[1], RCC_WC_SUCCESS);
	CHECK_EQ(rcc_ep_state(p.a), RCC_EP_CONNECTED);
	tbuf_free(&s);
	tbuf_free(&r);
	pair_close(&p);
}

static void long_write_bad_rkey(void) { write_bad_rkey(long_msg()); }

/* Request wr_id's completion on cq is a bad local key's: a protection error
 * (Soft-RoCE says "local QP operation error" where hardware says protection). */
static void expect_bad_lkey(struct rcc_cq *cq, uint64_t wr_id)
{
	struct rcc_wc w;

	CHECK_OK(wait_one(cq, &w, TEST_TIMEOUT_MS));
	CHECK_EQ(w.wr_id, wr_id);
	CHECK_MSG(w.status == RCC_WC_LOC_PROT_ERR ||
			  (test_on_verbs() && w.status == RCC_WC_LOC_QP_OP_ERR),
		  "%s", rcc_wc_status_str(w.status));
}

/* A send from memory that is not registered: a local protection error. */
static void bad_lkey(void)
{
	struct pair p;
	struct tbuf s = { 0 }, r = { 0 };

	CHECK_OK(pair_open(&p, NULL));
	CHECK_OK(tbuf_alloc(&s, p.ctx, 64, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&r, p.ctx, 64, RCC_ACCESS_LOCAL_WRITE));
	struct rcc_sge rs = tbuf_sge(&r, 0, 64);
	CHECK_OK(rcc_post_recv(p.b, &rs, 1, 1));
	struct rcc_sge bad = tbuf_sge(&s, 0, 64);
	bad.lkey ^= 0x00a5a500u;
	CHECK_OK(rcc_post_send(p.a, &bad, 1, 2, RCC_SEND_SIGNALED));
	expect_bad_lkey(p.cq_a, 2);
	CHECK_EQ(rcc_ep_state(p.a), RCC_EP_ERROR);
	tbuf_free(&s);
	tbuf_free(&r);
	pair_close(&p);
}

/*
 * A message of several frames whose last scatter element has a bad local key
 * fails before any of it is sent: on tcp the keys of a message longer than a
 * frame are checked when it is posted (post.c), not frame by frame as it
 * goes out (the receiver would get its first frames). A device may fail it
 * later, so on verbs only the status is checked.
 */
static void bad_lkey_long_send_never_sent(void)
{
	enum {
		LONG = 300 * 1024
	}; /* more than a frame on the socket and on shm */
	struct pair p;
	struct tbuf s = { 0 }, s2 = { 0 }, r = { 0 };

	CHECK_OK(pair_open(&p, NULL));
	CHECK_OK(tbuf_alloc(&s, p.ctx, LONG, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&s2, p.ctx, 64, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&r, p.ctx, LONG + 64, RCC_ACCESS_LOCAL_WRITE));
	memset(s.p, 0x5a, LONG);
	struct rcc_sge rs = tbuf_sge(&r, 0, LONG + 64);
	CHECK_OK(rcc_post_recv(p.b, &rs, 1, 1));
	struct rcc_sge sg[2] = { tbuf_sge(&s, 0, LONG), tbuf_sge(&s2, 0, 64) };
	sg[1].lkey ^= 0x00a5a500u;
	CHECK_OK(rcc_post_send(p.a, sg, 2, 2, RCC_SEND_SIGNALED));
	expect_bad_lkey(p.cq_a, 2);
	if (!test_on_verbs()) {
		usleep(100 * 1000); /* a first frame, had it gone, would be placed by now */
		size_t k = 0;
		while (k < LONG + 64 && r.p[k] == 0)
			k++;
		CHECK_MSG(k == LONG + 64, "the receiver got byte %zu of a failed send", k);
	}
	tbuf_free(&s);
	tbuf_free(&s2);
	tbuf_free(&r);
	pair_close(&p);
}

/*
 * An atomic whose result buffer has a bad local key fails with a local
 * protection error. tcp checks local keys when the request is posted
 * (src/transport/tcp/post.c), so the atomic is never sent and the target is
 * untouched; a device may check them only when the response arrives, after
 * the responder executed it, so on verbs only the status is checked.
 */
static void bad_lkey_atomic_never_sent(void)
{
	struct pair p;
	struct tbuf res = { 0 }, t = { 0 };

	CHECK_OK(pair_open(&p, NULL));
	CHECK_OK(tbuf_alloc(&res, p.ctx, 64, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&t, p.ctx, 64, ALL_ACCESS));
	struct rcc_remote_mr rm = rcc_mr_remote(t.mr);
	struct rcc_sge bad = tbuf_sge(&res, 0, 8);
	bad.lkey ^= 0x00a5a500u;
	CHECK_OK(rcc_post_fadd(p.a, &bad, rm.addr, rm.rkey, 1, 3, RCC_SEND_SIGNALED));
	expect_bad_lkey(p.cq_a, 3);
	if (!test_on_verbs()) {
		uint64_t v;
		memcpy(&v, t.p, 8);
		CHECK_EQ(v, 0);
	}
	tbuf_free(&res);
	tbuf_free(&t);
	pair_close(&p);
}

/* Disconnect flushes every outstanding request of the endpoint before it
 * returns, and the peer is flushed within the timeout. */
static void disconnect_flushes_both_sides(void)
{
	enum {
		N = 8
	};
	struct pair p;
	struct tbuf r = { 0 };
	struct rcc_wc wc[N];

	CHECK_OK(pair_open(&p, NULL));
	CHECK_OK(tbuf_alloc(&r, p.ctx, 2 * N * 64, RCC_ACCESS_LOCAL_WRITE));
	for (int i = 0; i < N; i++) {
		struct rcc_sge a = tbuf_sge(&r, (size_t)i * 64, 64);
		struct rcc_sge b = tbuf_sge(&r, (size_t)(N + i) * 64, 64);
		CHECK_OK(rcc_post_recv(p.a, &a, 1, (uint64_t)i));
		CHECK_OK(rcc_post_recv(p.b, &b, 1, 100 + (uint64_t)i));
	}
	CHECK_OK(rcc_ep_disconnect(p.b));
	CHECK_EQ(rcc_ep_state(p.b), RCC_EP_DISCONNECTED);
	/* already on the CQ: a non-blocking poll finds all of them, in order */
	int got = 0;
	for (int tries = 0; got < N && tries < 1000; tries++)
		got += rcc_cq_poll(p.cq_b, wc + got, N - got);
	CHECK_EQ(got, N);
	for (int i = 0; i < N; i++) {
		CHECK_WC(wc[i], RCC_WC_WR_FLUSH_ERR);
		CHECK_EQ(wc[i].wr_id, 100 + (uint64_t)i);
		CHECK(wc[i].ep == p.b);
	}
	struct rcc_sge s = tbuf_sge(&r, 0, 8);
	CHECK_EQ(rcc_post_send(p.b, &s, 1, 1, 0), -ENOTCONN);
	CHECK_EQ(wait_n(p.cq_a, wc, N, TEST_TIMEOUT_MS), N);
	for (int i = 0; i < N; i++) {
		CHECK_WC(wc[i], RCC_WC_WR_FLUSH_ERR);
		CHECK_EQ(wc[i].wr_id, (uint64_t)i);
	}
	CHECK_EQ(rcc_ep_state(p.a), RCC_EP_DISCONNECTED);
	CHECK_OK(rcc_ep_disconnect(p.b)); /* idempotent */
	tbuf_free(&r);
	pair_close(&p);
}

/* Closing an endpoint removes its completions: none names it afterwards. */
static void close_forgets_completions(void)
{
	struct pair p;
	struct tbuf r = { 0 };
	struct rcc_wc wc[8];

	CHECK_OK(pair_open(&p, NULL));
	CHECK_OK(tbuf_alloc(&r, p.ctx, 64, RCC_ACCESS_LOCAL_WRITE));
	struct rcc_sge a = tbuf_sge(&r, 0, 64);
	for (int i = 0; i < 4; i++)
		CHECK_OK(rcc_post_recv(p.b, &a, 1, (uint64_t)i));
	struct rcc_ep *gone = p.b;
	CHECK_OK(rcc_ep_close(p.b));
	p.b = NULL;
	CHECK_EQ(rcc_cq_poll(p.cq_b, wc, 8), 0);
	(void)gone;
	tbuf_free(&r);
	pair_close(&p);
}

static const char *self_path = "test_errors"; /* argv[0] */

/* The peer of peer_killed_mid_stream, in its own process: connect, report,
 * then stream data until killed. */
static int peer_child(int port, int notify_fd)
{
	struct rcc_ctx *c;
	struct rcc_cq *ccq;
	struct rcc_ep *cep;
	struct rcc_mr *mr;
	static uint8_t buf[65536];
	char addr[128];

	snprintf(addr, sizeof(addr), "%s:%d", test_addr(), port);
	if (test_ctx_open(&c) || rcc_cq_create(c, NULL, &ccq))
		return 2;
	struct rcc_ep_attr ca = { .send_cq = ccq };
	if (rcc_connect(c, addr, &ca, TEST_TIMEOUT_MS, &cep))
		return 3;
	if (write(notify_fd, "x", 1) != 1)
		return 4;
	if (rcc_mr_reg(c, buf, sizeof(buf), RCC_ACCESS_LOCAL_WRITE, &mr))
		return 5;
	struct rcc_sge sg = rcc_mr_sge(mr, buf, sizeof(buf));
	for (;;) {
		struct rcc_wc w;
		if (rcc_post_send(cep, &sg, 1, 0, RCC_SEND_SIGNALED) == 0)
			(void)rcc_cq_wait(ccq, &w, 1, 1000);
		else
			(void)rcc_cq_wait(ccq, &w, 1, 100);
	}
}

/*
 * The peer process is killed mid-stream: the survivor's outstanding work is
 * flushed within the timeout and the endpoint is disconnected; nothing hangs.
 */
static void peer_killed_mid_stream(void)
{
	struct rcc_ctx *ctx = NULL;
	struct rcc_cq *cq = NULL;
	struct rcc_listener *lst = NULL;
	struct rcc_ep *ep = NULL;
	struct tbuf r = { 0 }, s = { 0 };
	struct peer_proc child;
	char addr[128];

	CHECK_OK(peer_spawn(&child, self_path));
	int rc = test_ctx_open(&ctx);
	if (!rc)
		rc = rcc_cq_create(ctx, NULL, &cq);
	snprintf(addr, sizeof(addr), "%s:0", test_addr());
	if (!rc)
		rc = rcc_listen(ctx, addr, 0, &lst);
	int port = rc ? 0 : rcc_listener_port(lst);
	peer_go(&child, port);
	struct rcc_ep_attr a = { .send_cq = cq };
	if (!rc)
		rc = rcc_accept(lst, &a, TEST_TIMEOUT_MS, &ep);
	bool child_ready = peer_connected(&child);
	if (rc || !child_ready) {
		peer_kill(&child);
		CHECK_OK(rc);
		CHECK(child_ready);
	}
	CHECK_OK(tbuf_alloc(&r, ctx, 8 * 65536, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&s, ctx, 4096, RCC_ACCESS_LOCAL_WRITE));
	for (int i = 0; i < 8; i++) {
		struct rcc_sge rs = tbuf_sge(&r, (size_t)i * 65536, 65536);
		CHECK_OK(rcc_post_recv(ep, &rs, 1, (uint64_t)i));
	}
	/* one message arrives, proving the stream is live, then the peer dies */
	struct rcc_wc wc[16];
	CHECK_OK(wait_one(cq, wc, TEST_TIMEOUT_MS));
	CHECK_WC(wc[0], RCC_WC_SUCCESS);
	peer_kill(&child);
	/* our own send towards the dead peer is flushed too */
	struct rcc_sge ss = tbuf_sge(&s, 0, 4096);
	rc = rcc_post_send(ep, &ss, 1, 1000, RCC_SEND_SIGNALED);
	CHECK(rc == 0 || rc == -ENOTCONN);
	/* every outstanding request completes: received data that was already on
	 * its way, or a flush; nothing is left hanging */
	uint64_t end = now_ms() + TEST_TIMEOUT_MS;
	int done = 0, want = 7 + (rc == 0);
	while (done < want && now_ms() < end) {
		int n = rcc_cq_wait(cq, wc, 16, 100);
		for (int i = 0; i < n; i++, done++)
			CHECK((wc[i].status == RCC_WC_SUCCESS && wc[i].opcode == RCC_WC_RECV) ||
			      wc[i].status == RCC_WC_WR_FLUSH_ERR ||
			      wc[i].status == RCC_WC_RETRY_EXC_ERR);
	}
	CHECK_EQ(done, want);
	while (rcc_ep_state(ep) == RCC_EP_CONNECTED && now_ms() < end)
		(void)rcc_cq_wait(cq, wc, 1, 10);
	CHECK(rcc_ep_state(ep) != RCC_EP_CONNECTED);
	rcc_ep_close(ep);
	tbuf_free(&r);
	tbuf_free(&s);
	rcc_listener_close(lst);
	rcc_cq_destroy(cq);
	CHECK_OK(rcc_ctx_close(ctx));
}

/* The peers of idle_peer_killed, in a process of their own: a client that
 * connects to PORT, says so, and idles; or (--server-child, PORT unused) a
 * server that says its port, accepts one client, says so, and idles. Both
 * wait to be killed. */
static int idle_child(bool server, int port, int notify_fd)
{
	struct peer_child pc;
	int st = peer_child_open(server, port, notify_fd, NULL, (struct rcc_ep_attr){ 0 }, &pc);

	if (st)
		return st;
	if (write(notify_fd, "x", 1) != 1)
		return 5;
	for (;;)
		pause();
}

/*
 * An idle peer's process is killed -- the client, then the server -- while
 * the survivor is idle too: it polls nothing and waits only for connection
 * events. The end of the peer's process ends the connection (tcp and shm:
 * its socket closes; rdma_cm: the kernel disconnects its cm_id), so the
 * survivor's DISCONNECTED event comes within the bound, saying -ECONNRESET,
 * long before any peer timeout.
 */
static void idle_peer_killed(void)
{
	for (int server_dies = 0; server_dies < 2 && !test_failed; server_dies++) {
		struct rcc_ctx *ctx = NULL;
		struct rcc_cq *cq = NULL;
		struct rcc_listener *lst = NULL;
		struct rcc_ep *ep = NULL;
		struct rcc_event ev = { 0 };
		struct peer_proc child;
		char addr[128];
		int st = 1;

		CHECK_OK(peer_spawn_as(&child, self_path,
				       server_dies ? "--server-child" : "--idle-child"));
		int rc = test_ctx_open(&ctx);
		if (!rc)
			rc = rcc_cq_create(ctx, NULL, &cq);
		struct rcc_ep_attr a = { .send_cq = cq, .peer_timeout_ms = 3600000 };
		if (server_dies) {
			peer_go(&child, 1);
			int port = peer_port(&child);
			snprintf(addr, sizeof(addr), "%s:%d", test_addr(), port);
			if (!rc)
				rc = port ? rcc_connect(ctx, addr, &a, TEST_TIMEOUT_MS, &ep) : -EIO;
		} else {
			snprintf(addr, sizeof(addr), "%s:0", test_addr());
			if (!rc)
				rc = rcc_listen(ctx, addr, 0, &lst);
			peer_go(&child, rc ? 0 : rcc_listener_port(lst));
			if (!rc)
				rc = rcc_accept(lst, &a, TEST_TIMEOUT_MS, &ep);
		}
		bool child_ready = peer_connected(&child);
		if (!rc)
			rc = rcc_ctx_event_fd(ctx) < 0 ? -EIO : 0; /* events on, before the end */
		peer_kill(&child);
		CHECK_OK(rc);
		CHECK(child_ready);
		if (!rc && child_ready) {
			uint64_t t0 = now_ms();
			CHECK_OK(rcc_ctx_get_event(ctx, &ev, TEST_TIMEOUT_MS));
			CHECK_MSG(ev.ep == ep && ev.type == RCC_EVENT_DISCONNECTED,
				  "%s died: event %d for %s", server_dies ? "server" : "client",
				  (int)ev.type, ev.ep == ep ? "our endpoint" : "another");
			CHECK_EQ(ev.status, -ECONNRESET);
			CHECK(rcc_ep_reason(ep, &st) != NULL && st == -ECONNRESET);
			CHECK_MSG(now_ms() - t0 < TEST_TIMEOUT_MS / 2, "noticed after %llu ms",
				  (unsigned long long)(now_ms() - t0));
		}
		if (ep)
			rcc_ep_close(ep);
		if (lst)
			rcc_listener_close(lst);
		if (cq)
			rcc_cq_destroy(cq);
		if (ctx)
			CHECK_OK(rcc_ctx_close(ctx));
	}
}

/* Malformed requests are refused at post time with -EINVAL, nothing queued. */
static void malformed_posts(void)
{
	struct pair p;
	struct tbuf b = { 0 };

	struct tbuf t = { 0 };
	CHECK_OK(pair_open(&p, NULL));
	CHECK_OK(tbuf_alloc(&b, p.ctx, 4096, ALL_ACCESS));
	CHECK_OK(tbuf_alloc(&t, p.ctx, 4096, ALL_ACCESS));
	struct rcc_remote_mr rm = rcc_mr_remote(t.mr);
	struct rcc_sge sg[17];
	for (int i = 0; i < 17; i++)
		sg[i] = tbuf_sge(&b, 0, 8);
	CHECK_EQ(rcc_post_send(p.a, sg, 5, 1, 0), -EINVAL); /* more SGEs than max_send_sge */
	CHECK_EQ(rcc_post_recv(p.a, sg, 5, 1), -EINVAL);
	CHECK_EQ(rcc_post_send(p.a, NULL, 1, 1, 0), -EINVAL);
	CHECK_EQ(rcc_post_recv(p.a, NULL, 1, 1), -EINVAL);
	CHECK_EQ(rcc_post_recv(p.a, sg, -1, 1), -EINVAL);
	struct rcc_sge seven = tbuf_sge(&b, 0, 7);
	CHECK_EQ(rcc_post_fadd(p.a, &seven, rm.addr, rm.rkey, 1, 1, 0), -EINVAL);
	CHECK_EQ(rcc_post_read(p.a, sg, 1, rm.addr, rm.rkey, 1, RCC_SEND_INLINE), -EINVAL);
	struct rcc_sge eight = tbuf_sge(&b, 0, 8);
	CHECK_EQ(rcc_post_fadd(p.a, &eight, rm.addr + 4, rm.rkey, 1, 1, 0),
		 -EINVAL); /* misaligned */
	CHECK_EQ(rcc_post_cas(p.a, &eight, rm.addr + 1, rm.rkey, 0, 1, 1, 0), -EINVAL);
	struct rcc_send_wr bad_op = { .opcode = (enum rcc_wr_opcode)99 };
	CHECK_EQ(rcc_post_send_list(p.a, &bad_op, 1, NULL), -EINVAL);
	struct rcc_send_wr bad_flag = { .opcode = RCC_WR_SEND, .flags = 1u << 9 };
	CHECK_EQ(rcc_post_send_list(p.a, &bad_flag, 1, NULL), -EINVAL);
	/* a list with a bad request in the middle posts the good prefix */
	struct rcc_send_wr list[3] = {
		{ .wr_id = 1,
		  .opcode = RCC_WR_WRITE,
		  .sg_list = sg,
		  .num_sge = 1,
		  .remote_addr = rm.addr,
		  .rkey = rm.rkey,
		  .flags = RCC_SEND_SIGNALED },
		{ .wr_id = 2, .opcode = RCC_WR_FADD, .sg_list = &seven, .num_sge = 1 },
		{ .wr_id = 3,
		  .opcode = RCC_WR_WRITE,
		  .sg_list = sg,
		  .num_sge = 1,
		  .remote_addr = rm.addr,
		  .rkey = rm.rkey,
		  .flags = RCC_SEND_SIGNALED },
	};
	int posted = -1;
	CHECK_EQ(rcc_post_send_list(p.a, list, 3, &posted), -EINVAL);
	CHECK_EQ(posted, 1);
	EXPECT_STATUS(p.cq_a, 1, RCC_WC_SUCCESS);
	CHECK_EQ(rcc_ep_state(p.a), RCC_EP_CONNECTED);
	tbuf_free(&b);
	tbuf_free(&t);
	pair_close(&p);
}

/* Bad arguments to object calls: clean statuses, nothing created. */
static void bad_arguments(void)
{
	struct rcc_ctx *ctx;
	struct rcc_cq *cq;
	struct rcc_mr *mr;
	struct rcc_ep *ep;
	static uint8_t buf[64];

	CHECK_OK(test_ctx_open(&ctx));
	CHECK_EQ(rcc_mr_reg(ctx, buf, 0, RCC_ACCESS_LOCAL_WRITE, &mr), -EINVAL);
	CHECK_EQ(rcc_mr_reg(ctx, NULL, 64, 0, &mr), -EINVAL);
	CHECK_EQ(rcc_mr_reg(ctx, buf, 64, RCC_ACCESS_REMOTE_WRITE, &mr), -EINVAL);
	CHECK_EQ(rcc_mr_reg(ctx, buf, 64, 1u << 7, &mr), -EINVAL);
	CHECK_EQ(rcc_cq_create(ctx, &(struct rcc_cq_attr){ .mode = (enum rcc_cq_mode)9 }, &cq),
		 -EINVAL);
	CHECK_OK(rcc_cq_create(ctx, NULL, &cq));
	CHECK_EQ(rcc_cq_fd(cq), -EINVAL); /* POLL mode has no descriptor */
	struct rcc_wc wc;
	CHECK_EQ(rcc_cq_poll(cq, &wc, 0), -EINVAL);
	CHECK_EQ(rcc_cq_wait(cq, &wc, 1, -5), -EINVAL);
	CHECK_EQ(rcc_cq_wait(cq, &wc, 1, 10), -ETIMEDOUT);
	struct rcc_ep_attr no_cq = { 0 };
	CHECK_EQ(rcc_connect(ctx, "127.0.0.1:1", &no_cq, 100, &ep), -EINVAL);
	uint8_t big[RCC_CONNECT_PRIVATE_DATA_MAX + 1] = { 0 };
	struct rcc_ep_attr too_much = { .send_cq = cq,
					.private_data = big,
					.private_data_len = sizeof(big) };
	CHECK_EQ(rcc_connect(ctx, "127.0.0.1:1", &too_much, 100, &ep), -EINVAL);
	struct rcc_ep_attr bad_retry = { .send_cq = cq, .rnr_retry = 8 };
	CHECK_EQ(rcc_connect(ctx, "127.0.0.1:1", &bad_retry, 100, &ep), -EINVAL);
	CHECK_OK(rcc_mr_reg(ctx, buf, 64, RCC_ACCESS_LOCAL_WRITE, &mr));
	CHECK_EQ(rcc_ctx_close(ctx), -EBUSY); /* objects still open */
	CHECK_OK(rcc_mr_dereg(mr));
	CHECK_OK(rcc_cq_destroy(cq));
	CHECK_OK(rcc_ctx_close(ctx));
	struct rcc_ctx_attr bad = { .transport = (enum rcc_transport)7 };
	CHECK_EQ(rcc_ctx_open(&bad, &ctx), -EINVAL);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = { TEST(bad_rkey),
						  TEST(write_out_of_bounds),
						  TEST(read_out_of_bounds),
						  TEST(atomic_out_of_bounds),
						  TEST(write_without_permission),
						  TEST(read_without_permission),
						  TEST(atomic_without_permission),
						  TEST(deregistered_region),
						  TEST(receive_buffer_too_small),
						  TEST(rnr_no_retry),
						  TEST(rnr_retries_exhausted),
						  TEST(rnr_retry_waits_timer_inline),
						  TEST(rnr_retry_waits_timer_registered),
						  TEST(rnr_wait_then_deliver_in_order),
						  TEST(long_send_rnr_exhausted),
						  TEST(long_send_waits_for_receive),
						  TEST(long_write_bad_rkey),
						  TEST(bad_lkey),
						  TEST(bad_lkey_atomic_never_sent),
						  TEST(bad_lkey_long_send_never_sent),
						  TEST(disconnect_flushes_both_sides),
						  TEST(close_forgets_completions),
						  TEST(peer_killed_mid_stream),
						  TEST(idle_peer_killed),
						  TEST(malformed_posts),
						  TEST(bad_arguments) };

	self_path = argv[0];
	if (argc == 4 && !strcmp(argv[1], "--peer-child"))
		return peer_child(atoi(argv[2]), atoi(argv[3]));
	if (argc == 4 && (!strcmp(argv[1], "--idle-child") || !strcmp(argv[1], "--server-child")))
		return idle_child(argv[1][2] == 's', atoi(argv[2]), atoi(argv[3]));
	return test_main(argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}
