/* SPDX-License-Identifier: BSD-3-Clause */
/* Every operation of the API, with the data verified byte for byte. */
#include <stdlib.h>

#include "pair.h"

/* 64 MiB; 4 MiB in quick mode (valgrind) */
#define BIG (test_quick() ? 4u << 20 : 64u << 20)

/* One completion on cq that must be a success with this wr_id and opcode. */
#define EXPECT_WC(cq, id, op)                                   \
	do {                                                    \
		struct rcc_wc w_;                               \
		CHECK_OK(wait_one((cq), &w_, TEST_TIMEOUT_MS)); \
		CHECK_WC(w_, RCC_WC_SUCCESS);                   \
		CHECK_EQ(w_.wr_id, (id));                       \
		CHECK_EQ(w_.opcode, (op));                      \
	} while (0)

static void send_recv_basic(void)
{
	struct pair p;
	struct tbuf s = { 0 }, r = { 0 };
	struct rcc_wc wc;

	CHECK_OK(pair_open(&p, NULL));
	CHECK_OK(tbuf_alloc(&s, p.ctx, 4096, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&r, p.ctx, 4096, RCC_ACCESS_LOCAL_WRITE));
	fill_pattern(s.p, 4096, 1);
	struct rcc_sge rs = tbuf_sge(&r, 0, 4096), ss = tbuf_sge(&s, 0, 4096);
	CHECK_OK(rcc_post_recv(p.b, &rs, 1, 7));
	CHECK_OK(rcc_post_send(p.a, &ss, 1, 8, RCC_SEND_SIGNALED));
	CHECK_OK(wait_one(p.cq_b, &wc, TEST_TIMEOUT_MS));
	CHECK_WC(wc, RCC_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 7);
	CHECK_EQ(wc.opcode, RCC_WC_RECV);
	CHECK_EQ(wc.byte_len, 4096);
	CHECK_EQ(wc.wc_flags & RCC_WC_WITH_IMM, 0);
	CHECK(wc.ep == p.b);
	CHECK_OK(wait_one(p.cq_a, &wc, TEST_TIMEOUT_MS));
	CHECK_WC(wc, RCC_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 8);
	CHECK_EQ(wc.opcode, RCC_WC_SEND);
	CHECK(wc.ep == p.a);
	CHECK_EQ(check_pattern(r.p, 4096, 1), -1);
	tbuf_free(&s);
	tbuf_free(&r);
	pair_close(&p);
}

/* Receives match sends in posting order (FIFO), both directions at once. */
static void send_recv_fifo_both_ways(void)
{
	enum {
		N = 32,
		SZ = 256
	};
	struct pair p;
	struct tbuf ba = { 0 }, bb = { 0 };

	CHECK_OK(pair_open(&p, NULL));
	CHECK_OK(tbuf_alloc(&ba, p.ctx, 2 * N * SZ, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&bb, p.ctx, 2 * N * SZ, RCC_ACCESS_LOCAL_WRITE));
	for (int i = 0; i < N; i++) {
		struct rcc_sge ra = tbuf_sge(&ba, (size_t)(N + i) * SZ, SZ);
		struct rcc_sge rb = tbuf_sge(&bb, (size_t)(N + i) * SZ, SZ);
		CHECK_OK(rcc_post_recv(p.a, &ra, 1, 100 + (uint64_t)i));
		CHECK_OK(rcc_post_recv(p.b, &rb, 1, 200 + (uint64_t)i));
	}
	for (int i = 0; i < N; i++) {
		fill_pattern(ba.p + (size_t)i * SZ, SZ, 1000 + (uint64_t)i);
		fill_pattern(bb.p + (size_t)i * SZ, SZ, 2000 + (uint64_t)i);
		struct rcc_sge sa = tbuf_sge(&ba, (size_t)i * SZ, SZ);
		struct rcc_sge sb = tbuf_sge(&bb, (size_t)i * SZ, SZ);
		CHECK_OK(rcc_post_send(p.a, &sa, 1, (uint64_t)i, RCC_SEND_SIGNALED));
		CHECK_OK(rcc_post_send(p.b, &sb, 1, (uint64_t)i, RCC_SEND_SIGNALED));
	}
	/* Each CQ sees N send completions and N receive completions, each kind in order. */
	struct rcc_wc wc[2 * N];
	struct pair_side {
		struct rcc_cq *cq;
		struct tbuf *buf;
		uint64_t rbase, seed;
	} sides[2] = { { p.cq_a, &ba, 100, 2000 }, { p.cq_b, &bb, 200, 1000 } };
	for (int s = 0; s < 2; s++) {
		CHECK_EQ(wait_n(sides[s].cq, wc, 2 * N, TEST_TIMEOUT_MS), 2 * N);
		uint64_t next_send = 0, next_recv = sides[s].rbase;
		for (int i = 0; i < 2 * N; i++) {
			CHECK_WC(wc[i], RCC_WC_SUCCESS);
			if (wc[i].opcode == RCC_WC_RECV)
				CHECK_EQ(wc[i].wr_id, next_recv++);
			else
				CHECK_EQ(wc[i].wr_id, next_send++);
		}
		for (int i = 0; i < N; i++)
			CHECK_EQ(check_pattern(sides[s].buf->p + (size_t)(N + i) * SZ, SZ,
					       sides[s].seed + (uint64_t)i),
				 -1);
	}
	tbuf_free(&ba);
	tbuf_free(&bb);
	pair_close(&p);
}

/* Four-element gather on the sender, four-element scatter on the receiver,
 * with boundaries that do not line up. */
static void multi_sge(void)
{
	static const uint32_t gather[4] = { 1, 1000, 7, 3088 };   /* 4096 */
	static const uint32_t scatter[4] = { 2048, 3, 45, 2000 }; /* 4096 */
	struct pair p;
	struct tbuf s = { 0 }, r = { 0 }, t = { 0 };
	struct rcc_sge sg[4], rg[4];
	size_t off;

	CHECK_OK(pair_open(&p, NULL));
	CHECK_OK(tbuf_alloc(&s, p.ctx, 8192, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&r, p.ctx, 8192, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&t, p.ctx, 8192, ALL_ACCESS));
	/* the gathered pieces are not adjacent: every other 64 bytes is a gap */
	uint8_t expect[4096];
	fill_pattern(expect, sizeof(expect), 3);
	off = 0;
	size_t pos = 0;
	for (int i = 0; i < 4; i++) {
		memcpy(s.p + pos, expect + off, gather[i]);
		sg[i] = tbuf_sge(&s, pos, gather[i]);
		off += gather[i];
		pos += gather[i] + 64;
	}
	pos = 0;
	for (int i = 0; i < 4; i++) {
		rg[i] = tbuf_sge(&r, pos, scatter[i]);
		pos += scatter[i] + 64;
	}
	CHECK_OK(rcc_post_recv(p.b, rg, 4, 1));
	CHECK_OK(rcc_post_send(p.a, sg, 4, 2, RCC_SEND_SIGNALED));
	EXPECT_WC(p.cq_b, 1, RCC_WC_RECV);
	EXPECT_WC(p.cq_a, 2, RCC_WC_SEND);
	off = 0;
	for (int i = 0; i < 4; i++) {
		CHECK(!memcmp(r.p + (rg[i].addr - (uintptr_t)r.p), expect + off, scatter[i]));
		off += scatter[i];
	}

	/* The same gather as a WRITE, then a READ scattering it back. */
	struct rcc_remote_mr rm = rcc_mr_remote(t.mr);
	CHECK_OK(rcc_post_write(p.a, sg, 4, rm.addr + 100, rm.rkey, 3, RCC_SEND_SIGNALED));
	EXPECT_WC(p.cq_a, 3, RCC_WC_WRITE);
	CHECK(!memcmp(t.p + 100, expect, 4096));
	memset(r.p, 0, 8192);
	CHECK_OK(rcc_post_read(p.a, rg, 4, rm.addr + 100, rm.rkey, 4, RCC_SEND_SIGNALED));
	EXPECT_WC(p.cq_a, 4, RCC_WC_READ);
	off = 0;
	for (int i = 0; i < 4; i++) {
		CHECK(!memcmp(r.p + (rg[i].addr - (uintptr_t)r.p), expect + off, scatter[i]));
		off += scatter[i];
	}
	tbuf_free(&s);
	tbuf_free(&r);
	tbuf_free(&t);
	pair_close(&p);
}

/* Zero-byte SEND (with and without SGEs), WRITE, WRITE_IMM and READ. */
static void zero_bytes(void)
{
	struct pair p;
	struct tbuf b = { 0 }, t = { 0 };
	struct rcc_wc wc;

	CHECK_OK(pair_open(&p, NULL));
	CHECK_OK(tbuf_alloc(&b, p.ctx, 4096, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&t, p.ctx, 4096, ALL_ACCESS));
	struct rcc_remote_mr rm = rcc_mr_remote(t.mr);
	struct rcc_sge r = tbuf_sge(&b, 0, 64), z = tbuf_sge(&b, 0, 0);

	CHECK_OK(rcc_post_recv(p.b, &r, 1, 1));
	CHECK_OK(rcc_post_send(p.a, NULL, 0, 2, RCC_SEND_SIGNALED));
	CHECK_OK(wait_one(p.cq_b, &wc, TEST_TIMEOUT_MS));
	CHECK_WC(wc, RCC_WC_SUCCESS);
	CHECK_EQ(wc.byte_len, 0);
	EXPECT_WC(p.cq_a, 2, RCC_WC_SEND);

	CHECK_OK(rcc_post_recv(p.b, &r, 1, 3));
	CHECK_OK(rcc_post_send(p.a, &z, 1, 4, RCC_SEND_SIGNALED));
	CHECK_OK(wait_one(p.cq_b, &wc, TEST_TIMEOUT_MS));
	CHECK_EQ(wc.byte_len, 0);
	EXPECT_WC(p.cq_a, 4, RCC_WC_SEND);

	CHECK_OK(rcc_post_write(p.a, &z, 1, rm.addr, rm.rkey, 5, RCC_SEND_SIGNALED));
	EXPECT_WC(p.cq_a, 5, RCC_WC_WRITE);

	CHECK_OK(rcc_post_recv(p.b, &r, 1, 6));
	CHECK_OK(rcc_post_write_imm(p.a, NULL, 0, rm.addr, rm.rkey, 0xabcdef01, 7,
				    RCC_SEND_SIGNALED));
	CHECK_OK(wait_one(p.cq_b, &wc, TEST_TIMEOUT_MS));
	CHECK_WC(wc, RCC_WC_SUCCESS);
	CHECK_EQ(wc.opcode, RCC_WC_RECV_WRITE_IMM);
	CHECK_EQ(wc.byte_len, 0);
	CHECK_EQ(wc.imm_data, 0xabcdef01);
	EXPECT_WC(p.cq_a, 7, RCC_WC_WRITE);

	CHECK_OK(rcc_post_read(p.a, &z, 1, rm.addr, rm.rkey, 8, RCC_SEND_SIGNALED));
	EXPECT_WC(p.cq_a, 8, RCC_WC_READ);
	for (size_t i = 0; i < 4096; i++)
		CHECK_EQ(t.p[i], 0);
	tbuf_free(&b);
	tbuf_free(&t);
	pair_close(&p);
}

/* 64 MiB by SEND, WRITE and READ, verified byte for byte. */
static void big_transfers(void)
{
	struct pair p;
	struct tbuf s = { 0 }, d = { 0 };
	struct rcc_wc wc;

	CHECK_OK(pair_open(&p, NULL));
	CHECK_OK(tbuf_alloc(&s, p.ctx, BIG, ALL_ACCESS));
	CHECK_OK(tbuf_alloc(&d, p.ctx, BIG, ALL_ACCESS));
	struct rcc_sge ss = tbuf_sge(&s, 0, BIG), ds = tbuf_sge(&d, 0, BIG);

	fill_pattern(s.p, BIG, 11);
	CHECK_OK(rcc_post_recv(p.b, &ds, 1, 1));
	CHECK_OK(rcc_post_send(p.a, &ss, 1, 2, RCC_SEND_SIGNALED));
	CHECK_OK(wait_one(p.cq_b, &wc, 60000));
	CHECK_WC(wc, RCC_WC_SUCCESS);
	CHECK_EQ(wc.byte_len, BIG);
	EXPECT_WC(p.cq_a, 2, RCC_WC_SEND);
	CHECK_EQ(check_pattern(d.p, BIG, 11), -1);

	struct rcc_remote_mr rm = rcc_mr_remote(d.mr);
	fill_pattern(s.p, BIG, 12);
	CHECK_OK(rcc_post_write(p.a, &ss, 1, rm.addr, rm.rkey, 3, RCC_SEND_SIGNALED));
	CHECK_OK(wait_one(p.cq_a, &wc, 60000));
	CHECK_WC(wc, RCC_WC_SUCCESS);
	CHECK_EQ(check_pattern(d.p, BIG, 12), -1);

	fill_pattern(d.p, BIG, 13);
	memset(s.p, 0, BIG);
	CHECK_OK(rcc_post_read(p.a, &ss, 1, rm.addr, rm.rkey, 4, RCC_SEND_SIGNALED));
	CHECK_OK(wait_one(p.cq_a, &wc, 60000));
	CHECK_WC(wc, RCC_WC_SUCCESS);
	CHECK_EQ(wc.byte_len, BIG);
	CHECK_EQ(check_pattern(s.p, BIG, 13), -1);
	tbuf_free(&s);
	tbuf_free(&d);
	pair_close(&p);
}

/* Immediate data arrives intact with SEND_IMM and WRITE_IMM; WRITE_IMM's
 * payload lands in the target region and consumes a receive without using
 * its buffer. */
static void immediates(void)
{
	struct pair p;
	struct tbuf s = { 0 }, r = { 0 }, t = { 0 };
	struct rcc_wc wc;

	CHECK_OK(pair_open(&p, NULL));
	CHECK_OK(tbuf_alloc(&s, p.ctx, 4096, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&r, p.ctx, 4096, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&t, p.ctx, 4096, ALL_ACCESS));
	struct rcc_remote_mr rm = rcc_mr_remote(t.mr);
	fill_pattern(s.p, 4096, 21);
	struct rcc_sge ss = tbuf_sge(&s, 0, 1000), rs = tbuf_sge(&r, 0, 4096);

	CHECK_OK(rcc_post_recv(p.b, &rs, 1, 1));
	CHECK_OK(rcc_post_send_imm(p.a, &ss, 1, 0x01020304, 2, RCC_SEND_SIGNALED));
	CHECK_OK(wait_one(p.cq_b, &wc, TEST_TIMEOUT_MS));
	CHECK_WC(wc, RCC_WC_SUCCESS);
	CHECK_EQ(wc.opcode, RCC_WC_RECV);
	CHECK(wc.wc_flags & RCC_WC_WITH_IMM);
	CHECK_EQ(wc.imm_data, 0x01020304);
	CHECK_EQ(wc.byte_len, 1000);
	CHECK(!memcmp(r.p, s.p, 1000));
	EXPECT_WC(p.cq_a, 2, RCC_WC_SEND);

	memset(r.p, 0x5a, 4096);
	CHECK_OK(rcc_post_recv(p.b, &rs, 1, 3));
	CHECK_OK(rcc_post_write_imm(p.a, &ss, 1, rm.addr + 8, rm.rkey, 0xfffffffe, 4,
				    RCC_SEND_SIGNALED));
	CHECK_OK(wait_one(p.cq_b, &wc, TEST_TIMEOUT_MS));
	CHECK_WC(wc, RCC_WC_SUCCESS);
	CHECK_EQ(wc.opcode, RCC_WC_RECV_WRITE_IMM);
	CHECK(wc.wc_flags & RCC_WC_WITH_IMM);
	CHECK_EQ(wc.imm_data, 0xfffffffe);
	CHECK_EQ(wc.byte_len, 1000);
	CHECK(!memcmp(t.p + 8, s.p, 1000));
	for (int i = 0; i < 4096; i++)
		CHECK_EQ(r.p[i], 0x5a); /* the receive buffer is untouched */
	EXPECT_WC(p.cq_a, 4, RCC_WC_WRITE);
	tbuf_free(&s);
	tbuf_free(&r);
	tbuf_free(&t);
	pair_close(&p);
}

/* Inline sends need no registered memory, and the buffer may be reused as
 * soon as the post returns. */
static void inline_sends(void)
{
	struct pair p;
	struct tbuf r = { 0 }, t = { 0 };
	struct rcc_wc wc;
	uint8_t scratch[64];

	CHECK_OK(pair_open(&p, NULL));
	uint32_t max = rcc_ep_max_inline(p.a);
	CHECK(max >= 32);
	uint32_t len = max < sizeof(scratch) ? max : sizeof(scratch);
	CHECK_OK(tbuf_alloc(&r, p.ctx, 4096, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&t, p.ctx, 4096, ALL_ACCESS));
	struct rcc_remote_mr rm = rcc_mr_remote(t.mr);
	struct rcc_sge rs = tbuf_sge(&r, 0, 4096);
	struct rcc_sge in = { (uintptr_t)scratch, len, 0 }; /* no key: not registered */

	fill_pattern(scratch, len, 31);
	CHECK_OK(rcc_post_recv(p.b, &rs, 1, 1));
	CHECK_OK(rcc_post_send(p.a, &in, 1, 2, RCC_SEND_SIGNALED | RCC_SEND_INLINE));
	memset(scratch, 0xee, sizeof(scratch)); /* reuse at once */
	CHECK_OK(wait_one(p.cq_b, &wc, TEST_TIMEOUT_MS));
	CHECK_WC(wc, RCC_WC_SUCCESS);
	CHECK_EQ(wc.byte_len, len);
	CHECK_EQ(check_pattern(r.p, len, 31), -1);
	EXPECT_WC(p.cq_a, 2, RCC_WC_SEND);

	fill_pattern(scratch, len, 32);
	CHECK_OK(rcc_post_write(p.a, &in, 1, rm.addr, rm.rkey, 3,
				RCC_SEND_SIGNALED | RCC_SEND_INLINE));
	memset(scratch, 0xee, sizeof(scratch));
	EXPECT_WC(p.cq_a, 3, RCC_WC_WRITE);
	CHECK_EQ(check_pattern(t.p, len, 32), -1);

	/* more than the endpoint's inline limit is refused at post time */
	uint8_t *too_big = calloc(1, max + 1);
	CHECK(too_big);
	struct rcc_sge big = { (uintptr_t)too_big, max + 1, 0 };
	int rc = rcc_post_send(p.a, &big, 1, 4, RCC_SEND_SIGNALED | RCC_SEND_INLINE);
	free(too_big);
	CHECK_EQ(rc, -EINVAL);
	tbuf_free(&r);
	tbuf_free(&t);
	pair_close(&p);
}

/* A post list: many requests in one call, mixed opcodes, selective signaling. */
static void post_list_selective_signaling(void)
{
	enum {
		N = 16,
		SZ = 512
	};
	struct pair p;
	struct tbuf s = { 0 }, t = { 0 }, r = { 0 };
	struct rcc_send_wr wr[N];
	struct rcc_sge sg[N];
	struct rcc_wc wc[N];

	CHECK_OK(pair_open(&p, NULL));
	CHECK_OK(tbuf_alloc(&s, p.ctx, N * SZ, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&t, p.ctx, N * SZ, ALL_ACCESS));
	CHECK_OK(tbuf_alloc(&r, p.ctx, N * SZ, RCC_ACCESS_LOCAL_WRITE));
	struct rcc_remote_mr rm = rcc_mr_remote(t.mr);
	struct rcc_recv_wr rw[N];
	struct rcc_sge rsg[N];
	for (int i = 0; i < N; i++) {
		rsg[i] = tbuf_sge(&r, (size_t)i * SZ, SZ);
		rw[i] = (struct rcc_recv_wr){ .wr_id = 500 + (uint64_t)i,
					      .sg_list = &rsg[i],
					      .num_sge = 1 };
	}
	int posted = -1;
	CHECK_OK(rcc_post_recv_list(p.b, rw, N, &posted));
	CHECK_EQ(posted, N);
	fill_pattern(s.p, N * SZ, 41);
	for (int i = 0; i < N; i++) {
		sg[i] = tbuf_sge(&s, (size_t)i * SZ, SZ);
		wr[i] = (struct rcc_send_wr){
			.wr_id = (uint64_t)i,
			.sg_list = &sg[i],
			.num_sge = 1,
			.opcode = i % 2 ? RCC_WR_SEND : RCC_WR_WRITE,
			.remote_addr = rm.addr + (uint64_t)i * SZ,
			.rkey = rm.rkey,
			/* only every fourth one and the last report success */
			.flags = (i % 4 == 3 || i == N - 1) ? RCC_SEND_SIGNALED : 0,
		};
	}
	CHECK_OK(rcc_post_send_list(p.a, wr, N, &posted));
	CHECK_EQ(posted, N);
	CHECK_EQ(wait_n(p.cq_a, wc, 4, TEST_TIMEOUT_MS), 4);
	for (int k = 0; k < 4; k++) {
		CHECK_WC(wc[k], RCC_WC_SUCCESS);
		CHECK_EQ(wc[k].wr_id, (uint64_t)(4 * k + 3));
	}
	CHECK_EQ(rcc_cq_wait(p.cq_a, wc, 1, 50), -ETIMEDOUT); /* nothing else */
	CHECK_EQ(wait_n(p.cq_b, wc, N / 2, TEST_TIMEOUT_MS), N / 2);
	for (int i = 0; i < N; i++) {
		const uint8_t *got = i % 2 ? r.p + (size_t)(i / 2) * SZ : t.p + (size_t)i * SZ;
		CHECK(!memcmp(got, s.p + (size_t)i * SZ, SZ));
	}
	tbuf_free(&s);
	tbuf_free(&t);
	tbuf_free(&r);
	pair_close(&p);
}

/* sig_all: every send request completes, even without RCC_SEND_SIGNALED. */
static void signal_all(void)
{
	struct pair p;
	struct pair_opts o = { .attr_a = { .sig_all = true } };
	struct tbuf t = { 0 }, s = { 0 };

	CHECK_OK(pair_open(&p, &o));
	CHECK_OK(tbuf_alloc(&s, p.ctx, 64, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&t, p.ctx, 64, ALL_ACCESS));
	struct rcc_remote_mr rm = rcc_mr_remote(t.mr);
	struct rcc_sge sg = tbuf_sge(&s, 0, 64);
	for (int i = 0; i < 3; i++)
		CHECK_OK(rcc_post_write(p.a, &sg, 1, rm.addr, rm.rkey, (uint64_t)i, 0));
	for (int i = 0; i < 3; i++)
		EXPECT_WC(p.cq_a, (uint64_t)i, RCC_WC_WRITE);
	tbuf_free(&s);
	tbuf_free(&t);
	pair_close(&p);
}

static void write_read_atomics(void)
{
	struct pair p;
	struct tbuf local = { 0 }, remote = { 0 };
	struct rcc_wc wc;
	const size_t n = 1 << 20;

	CHECK_OK(pair_open(&p, NULL));
	CHECK_OK(tbuf_alloc(&local, p.ctx, 2 * n, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&remote, p.ctx, n + 64, ALL_ACCESS));
	struct rcc_remote_mr rm = rcc_mr_remote(remote.mr);
	fill_pattern(local.p, n, 2);

	struct rcc_sge sg = tbuf_sge(&local, 0, (uint32_t)n);
	CHECK_OK(rcc_post_write(p.a, &sg, 1, rm.addr, rm.rkey, 1, RCC_SEND_SIGNALED));
	EXPECT_WC(p.cq_a, 1, RCC_WC_WRITE);
	CHECK_EQ(check_pattern(remote.p, n, 2), -1);

	struct rcc_sge rd = tbuf_sge(&local, n, (uint32_t)n);
	CHECK_OK(rcc_post_read(p.a, &rd, 1, rm.addr, rm.rkey, 2, RCC_SEND_SIGNALED));
	CHECK_OK(wait_one(p.cq_a, &wc, TEST_TIMEOUT_MS));
	CHECK_WC(wc, RCC_WC_SUCCESS);
	CHECK_EQ(wc.opcode, RCC_WC_READ);
	CHECK_EQ(wc.byte_len, n);
	CHECK_EQ(check_pattern(local.p + n, n, 2), -1);

	uint64_t *target = (uint64_t *)(remote.p + n);
	*target = 40;
	struct rcc_sge res = tbuf_sge(&local, 0, 8);
	CHECK_OK(rcc_post_fadd(p.a, &res, rm.addr + n, rm.rkey, 2, 3, RCC_SEND_SIGNALED));
	EXPECT_WC(p.cq_a, 3, RCC_WC_FADD);
	CHECK_EQ(*(uint64_t *)local.p, 40);
	CHECK_EQ(*target, 42);
	/* a CAS that matches swaps; one that does not leaves memory alone */
	CHECK_OK(rcc_post_cas(p.a, &res, rm.addr + n, rm.rkey, 42, 7, 4, RCC_SEND_SIGNALED));
	EXPECT_WC(p.cq_a, 4, RCC_WC_CAS);
	CHECK_EQ(*(uint64_t *)local.p, 42);
	CHECK_EQ(*target, 7);
	CHECK_OK(rcc_post_cas(p.a, &res, rm.addr + n, rm.rkey, 42, 9, 5, RCC_SEND_SIGNALED));
	EXPECT_WC(p.cq_a, 5, RCC_WC_CAS);
	CHECK_EQ(*(uint64_t *)local.p, 7);
	CHECK_EQ(*target, 7);
	tbuf_free(&local);
	tbuf_free(&remote);
	pair_close(&p);
}

/* A fenced WRITE waits for the READ before it, so the READ sees old data. */
static void fence_orders_after_read(void)
{
	struct pair p;
	struct tbuf l = { 0 }, t = { 0 };

	CHECK_OK(pair_open(&p, NULL));
	CHECK_OK(tbuf_alloc(&l, p.ctx, 8192, ALL_ACCESS));
	CHECK_OK(tbuf_alloc(&t, p.ctx, 4096, ALL_ACCESS));
	struct rcc_remote_mr rm = rcc_mr_remote(t.mr);
	fill_pattern(t.p, 4096, 51);
	fill_pattern(l.p, 4096, 52);
	struct rcc_sge rd = tbuf_sge(&l, 4096, 4096), wr = tbuf_sge(&l, 0, 4096);
	struct rcc_send_wr w[2] = {
		{ .wr_id = 1,
		  .sg_list = &rd,
		  .num_sge = 1,
		  .opcode = RCC_WR_READ,
		  .remote_addr = rm.addr,
		  .rkey = rm.rkey,
		  .flags = RCC_SEND_SIGNALED },
		{ .wr_id = 2,
		  .sg_list = &wr,
		  .num_sge = 1,
		  .opcode = RCC_WR_WRITE,
		  .remote_addr = rm.addr,
		  .rkey = rm.rkey,
		  .flags = RCC_SEND_SIGNALED | RCC_SEND_FENCE },
	};
	CHECK_OK(rcc_post_send_list(p.a, w, 2, NULL));
	EXPECT_WC(p.cq_a, 1, RCC_WC_READ);
	EXPECT_WC(p.cq_a, 2, RCC_WC_WRITE);
	CHECK_EQ(check_pattern(l.p + 4096, 4096, 51), -1);
	CHECK_EQ(check_pattern(t.p, 4096, 52), -1);
	tbuf_free(&l);
	tbuf_free(&t);
	pair_close(&p);
}

/* Many requests in flight, identified by wr_id, completing in order. */
static void many_outstanding(void)
{
	enum {
		N = 2000,
		DEPTH = 64,
		SZ = 64
	};
	struct pair p;
	struct pair_opts o = { .cq_depth = 4096, .attr_a = { .sq_depth = DEPTH } };
	struct tbuf s = { 0 }, t = { 0 };
	struct rcc_wc wc[DEPTH];
	uint64_t next_done = 0, posted = 0;

	CHECK_OK(pair_open(&p, &o));
	CHECK_OK(tbuf_alloc(&s, p.ctx, DEPTH * SZ, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&t, p.ctx, (size_t)N * SZ, ALL_ACCESS));
	struct rcc_remote_mr rm = rcc_mr_remote(t.mr);
	uint64_t end = now_ms() + 30000;
	while (next_done < N) {
		CHECK(now_ms() < end);
		while (posted < N && posted - next_done < DEPTH) {
			uint8_t *src = s.p + (posted % DEPTH) * SZ;
			fill_pattern(src, SZ, 1000 + posted);
			struct rcc_sge sg = tbuf_sge(&s, (posted % DEPTH) * SZ, SZ);
			CHECK_OK(rcc_post_write(p.a, &sg, 1, rm.addr + posted * SZ, rm.rkey, posted,
						RCC_SEND_SIGNALED));
			posted++;
		}
		int n = rcc_cq_wait(p.cq_a, wc, DEPTH, TEST_TIMEOUT_MS);
		CHECK(n > 0);
		for (int i = 0; i < n; i++) {
			CHECK_WC(wc[i], RCC_WC_SUCCESS);
			CHECK_EQ(wc[i].wr_id, next_done);
			next_done++;
		}
	}
	for (uint64_t i = 0; i < N; i++)
		CHECK_MSG(check_pattern(t.p + i * SZ, SZ, 1000 + i) == -1,
			  "slot %llu differs at byte %ld", (unsigned long long)i,
			  check_pattern(t.p + i * SZ, SZ, 1000 + i));
	tbuf_free(&s);
	tbuf_free(&t);
	pair_close(&p);
}

TEST_MAIN(TEST(send_recv_basic), TEST(send_recv_fifo_both_ways), TEST(multi_sge), TEST(zero_bytes),
	  TEST(big_transfers), TEST(immediates), TEST(inline_sends),
	  TEST(post_list_selective_signaling), TEST(signal_all), TEST(write_read_atomics),
	  TEST(fence_orders_after_read), TEST(many_outstanding))
