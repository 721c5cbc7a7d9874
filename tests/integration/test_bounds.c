/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The edges of memory protection, on every transport. Each region used here
 * is registered over the middle of a larger buffer whose guard bytes on both
 * sides hold a known pattern: an operation that fits exactly succeeds, one
 * that starts one byte before or ends one byte after the region is refused
 * with the right status, and in every case the guard bytes are untouched.
 * Also: a SEND one byte longer than the posted receive, atomics whose result
 * buffer is not 8 bytes, and a full receive queue that loses no receive.
 */
#include <stdlib.h>

#include "pair.h"

enum {
	GUARD = 64,  /* bytes before and after a region (a multiple of 8: atomics) */
	REGION = 256 /* bytes in a region */
};

/* A buffer of GUARD + REGION + GUARD bytes; only the middle is registered. */
struct guarded {
	uint8_t *buf;
	struct rcc_mr *mr;
	uint64_t seed;
};

static int guarded_open(struct guarded *g, struct rcc_ctx *ctx, unsigned access, uint64_t seed)
{
	g->buf = aligned_alloc(4096, 4096);
	if (!g->buf)
		return -ENOMEM;
	g->seed = seed;
	fill_pattern(g->buf, 2 * GUARD + REGION, seed);
	int rc = rcc_mr_reg(ctx, g->buf + GUARD, REGION, access, &g->mr);
	if (rc) {
		free(g->buf);
		g->buf = NULL;
	}
	return rc;
}

static void guarded_close(struct guarded *g)
{
	int rc = g->mr ? rcc_mr_dereg(g->mr) : 0;
	if (rc)
		/* still registered: leave the memory to it rather than free it */
		test_fail(__FILE__, __LINE__, "teardown: rcc_mr_dereg: %s", rcc_strerror(rc));
	else
		free(g->buf);
	g->buf = NULL;
	g->mr = NULL;
}

static uint8_t *region(const struct guarded *g) { return g->buf + GUARD; }

/* -1 when the guard bytes on both sides still hold their pattern. */
static long guards_changed(const struct guarded *g)
{
	uint8_t want[2 * GUARD + REGION];
	fill_pattern(want, sizeof(want), g->seed);
	for (size_t i = 0; i < GUARD; i++)
		if (g->buf[i] != want[i])
			return (long)i;
	for (size_t i = GUARD + REGION; i < sizeof(want); i++)
		if (g->buf[i] != want[i])
			return (long)i;
	return -1;
}

/* -1 when the whole buffer, region included, is as it was filled. */
static long anything_changed(const struct guarded *g)
{
	return check_pattern(g->buf, 2 * GUARD + REGION, g->seed);
}

/* An sge over [region + off, +len), possibly reaching past the region. */
static struct rcc_sge gsge(const struct guarded *g, int64_t off, uint32_t len)
{
	return rcc_mr_sge(g->mr, region(g) + off, len);
}

/* ------------------------------------------------------- the target region */

/* A pair, a target region with every access and a local one (local write). */
static int open_both(struct pair *p, struct guarded *t, struct guarded *l)
{
	int rc = pair_open(p, NULL);
	if (rc)
		return rc;
	rc = guarded_open(t, p->ctx, ALL_ACCESS, 11);
	if (!rc)
		rc = guarded_open(l, p->ctx, RCC_ACCESS_LOCAL_WRITE, 12);
	if (rc) {
		guarded_close(t);
		pair_close(p);
	}
	return rc;
}

static void close_both(struct pair *p, struct guarded *t, struct guarded *l)
{
	guarded_close(l);
	guarded_close(t);
	pair_close(p);
}

/*
 * A one-sided op on the target region at [off, off+len): refused with
 * REM_ACCESS_ERR unless it fits, and the bytes outside the region (for a
 * refusal: every byte of the target and of the local buffer) untouched.
 */
static void one_sided_at(enum rcc_wr_opcode op, int64_t off, uint32_t len)
{
	bool fits = off >= 0 && off + len <= REGION;
	struct pair p;
	struct guarded t = { 0 }, l = { 0 };

	CHECK_OK(open_both(&p, &t, &l));
	struct rcc_remote_mr rm = rcc_mr_remote(t.mr);
	struct rcc_sge sg = gsge(&l, 0, len);
	struct rcc_send_wr wr = {
		.wr_id = 1,
		.sg_list = &sg,
		.num_sge = 1,
		.opcode = op,
		.flags = RCC_SEND_SIGNALED,
		.remote_addr = rm.addr + (uint64_t)off,
		.rkey = rm.rkey,
		.compare_add = 1,
	};
	CHECK_OK(rcc_post_send_list(p.a, &wr, 1, NULL));
	if (!fits) {
		EXPECT_STATUS(p.cq_a, 1, RCC_WC_REM_ACCESS_ERR);
		CHECK_EQ(rcc_ep_state(p.a), RCC_EP_ERROR);
		CHECK_EQ(anything_changed(&t), -1);
		CHECK_EQ(anything_changed(&l), -1);
	} else {
		EXPECT_STATUS(p.cq_a, 1, RCC_WC_SUCCESS);
		CHECK_EQ(guards_changed(&t), -1);
		CHECK_EQ(guards_changed(&l), -1);
		if (op == RCC_WR_WRITE)
			CHECK(!memcmp(region(&t) + off, region(&l), len));
		else if (op == RCC_WR_READ)
			CHECK(!memcmp(region(&l), region(&t) + off, len));
	}
	close_both(&p, &t, &l);
}

static void write_fits_exactly(void) { one_sided_at(RCC_WR_WRITE, 0, REGION); }
static void write_one_byte_before(void) { one_sided_at(RCC_WR_WRITE, -1, 16); }
static void write_one_byte_after(void) { one_sided_at(RCC_WR_WRITE, REGION - 15, 16); }
static void read_fits_exactly(void) { one_sided_at(RCC_WR_READ, 0, REGION); }
static void read_one_byte_before(void) { one_sided_at(RCC_WR_READ, -1, 16); }
static void read_one_byte_after(void) { one_sided_at(RCC_WR_READ, REGION - 15, 16); }
static void atomic_first_and_last_word(void)
{
	one_sided_at(RCC_WR_FADD, 0, 8);
	if (!test_failed)
		one_sided_at(RCC_WR_FADD, REGION - 8, 8);
}
static void atomic_word_before(void) { one_sided_at(RCC_WR_FADD, -8, 8); }
static void atomic_word_after(void) { one_sided_at(RCC_WR_CAS, REGION, 8); }

/* ---------------------------------------------------- the local buffers */

/* A local scatter element reaching one byte outside its region: LOC_PROT_ERR
 * at the initiator, nothing written anywhere. */
static void local_at(enum rcc_wr_opcode op, int64_t off, uint32_t len)
{
	struct pair p;
	struct guarded t = { 0 }, l = { 0 };

	CHECK_OK(open_both(&p, &t, &l));
	struct rcc_remote_mr rm = rcc_mr_remote(t.mr);
	struct rcc_sge sg = gsge(&l, off, len);
	int rc = op == RCC_WR_READ ?
			 rcc_post_read(p.a, &sg, 1, rm.addr, rm.rkey, 1, RCC_SEND_SIGNALED) :
			 rcc_post_write(p.a, &sg, 1, rm.addr, rm.rkey, 1, RCC_SEND_SIGNALED);
	CHECK_OK(rc);
	EXPECT_STATUS(p.cq_a, 1, RCC_WC_LOC_PROT_ERR);
	CHECK_EQ(anything_changed(&t), -1);
	CHECK_EQ(anything_changed(&l), -1);
	close_both(&p, &t, &l);
}

static void local_read_one_byte_before(void) { local_at(RCC_WR_READ, -1, 16); }
static void local_read_one_byte_after(void) { local_at(RCC_WR_READ, REGION - 15, 16); }
static void local_write_one_byte_before(void) { local_at(RCC_WR_WRITE, -1, 16); }
static void local_write_one_byte_after(void) { local_at(RCC_WR_WRITE, REGION - 15, 16); }

/* ------------------------------------------------------------ SEND / RECV */

/*
 * A receive of exactly REGION bytes (the whole region); a SEND of len bytes.
 * Fits: delivered, the guards untouched. One byte longer: a length error at
 * the receiver, an invalid request at the sender, and not a byte written
 * outside the region.
 */
static void send_into_receive(uint32_t len)
{
	struct pair p;
	struct guarded r = { 0 };
	struct tbuf s = { 0 };

	CHECK_OK(pair_open(&p, NULL));
	CHECK_OK(guarded_open(&r, p.ctx, RCC_ACCESS_LOCAL_WRITE, 31));
	CHECK_OK(tbuf_alloc(&s, p.ctx, REGION + 1, RCC_ACCESS_LOCAL_WRITE));
	fill_pattern(s.p, REGION + 1, 32);
	struct rcc_sge rs = gsge(&r, 0, REGION), ss = tbuf_sge(&s, 0, len);
	CHECK_OK(rcc_post_recv(p.b, &rs, 1, 1));
	CHECK_OK(rcc_post_send(p.a, &ss, 1, 2, RCC_SEND_SIGNALED));
	struct rcc_wc w;
	CHECK_OK(wait_one(p.cq_b, &w, TEST_TIMEOUT_MS));
	CHECK_EQ(w.wr_id, 1);
	if (len <= REGION) {
		CHECK_WC(w, RCC_WC_SUCCESS);
		CHECK_EQ(w.byte_len, len);
		CHECK(!memcmp(region(&r), s.p, len));
		EXPECT_STATUS(p.cq_a, 2, RCC_WC_SUCCESS);
	} else {
		/* the IB statuses (tcp, mlx5); Soft-RoCE reports a QP operation
		 * error at the receiver and a remote operation error instead */
		CHECK_MSG(w.status == RCC_WC_LOC_LEN_ERR ||
				  (test_on_verbs() && w.status == RCC_WC_LOC_QP_OP_ERR),
			  "receiver: %s", rcc_wc_status_str(w.status));
		CHECK_OK(wait_one(p.cq_a, &w, TEST_TIMEOUT_MS));
		CHECK_EQ(w.wr_id, 2);
		CHECK_MSG(w.status == RCC_WC_REM_INV_REQ_ERR ||
				  (test_on_verbs() && w.status == RCC_WC_REM_OP_ERR),
			  "sender: %s", rcc_wc_status_str(w.status));
	}
	CHECK_EQ(guards_changed(&r), -1);
	tbuf_free(&s);
	guarded_close(&r);
	pair_close(&p);
}

static void send_exactly_the_receive(void) { send_into_receive(REGION); }
static void send_one_byte_longer(void) { send_into_receive(REGION + 1); }

/* A receive whose buffer reaches one byte past its region: the SEND that
 * would fill it fails at the receiver with a protection error. */
static void receive_one_byte_past_region(void)
{
	struct pair p;
	struct guarded r = { 0 };
	struct tbuf s = { 0 };

	CHECK_OK(pair_open(&p, NULL));
	CHECK_OK(guarded_open(&r, p.ctx, RCC_ACCESS_LOCAL_WRITE, 41));
	CHECK_OK(tbuf_alloc(&s, p.ctx, 16, RCC_ACCESS_LOCAL_WRITE));
	struct rcc_sge rs = gsge(&r, REGION - 15, 16), ss = tbuf_sge(&s, 0, 16);
	CHECK_OK(rcc_post_recv(p.b, &rs, 1, 1));
	CHECK_OK(rcc_post_send(p.a, &ss, 1, 2, RCC_SEND_SIGNALED));
	struct rcc_wc w;
	CHECK_OK(wait_one(p.cq_b, &w, TEST_TIMEOUT_MS));
	CHECK_EQ(w.wr_id, 1);
	/* Soft-RoCE says "local QP operation error" where hardware says protection */
	CHECK_MSG(w.status == RCC_WC_LOC_PROT_ERR ||
			  (test_on_verbs() && w.status == RCC_WC_LOC_QP_OP_ERR),
		  "receiver: %s", rcc_wc_status_str(w.status));
	CHECK_OK(wait_one(p.cq_a, &w, TEST_TIMEOUT_MS));
	CHECK_EQ(w.wr_id, 2);
	CHECK(w.status != RCC_WC_SUCCESS);
	CHECK_EQ(anything_changed(&r), -1);
	tbuf_free(&s);
	guarded_close(&r);
	pair_close(&p);
}

/* ----------------------------------------------------------------- atomics */

/* The result buffer of an atomic is exactly 8 bytes: 7 and 16 are refused. */
static void atomic_result_must_be_8_bytes(void)
{
	struct pair p;
	struct tbuf l = { 0 }, t = { 0 };

	CHECK_OK(pair_open(&p, NULL));
	CHECK_OK(tbuf_alloc(&l, p.ctx, 64, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&t, p.ctx, 64, ALL_ACCESS));
	struct rcc_remote_mr rm = rcc_mr_remote(t.mr);
	for (uint32_t len = 0; len <= 16; len++) {
		if (len == 8)
			continue;
		struct rcc_sge sg = tbuf_sge(&l, 0, len);
		CHECK_EQ(rcc_post_fadd(p.a, &sg, rm.addr, rm.rkey, 1, len, RCC_SEND_SIGNALED),
			 -EINVAL);
		CHECK_EQ(rcc_post_cas(p.a, &sg, rm.addr, rm.rkey, 0, 1, len, RCC_SEND_SIGNALED),
			 -EINVAL);
	}
	CHECK_EQ(rcc_ep_state(p.a), RCC_EP_CONNECTED);
	tbuf_free(&l);
	tbuf_free(&t);
	pair_close(&p);
}

/* ------------------------------------------------------------ queue depths */

/*
 * A full receive queue refuses the next receive (a device may round the depth
 * up: it holds at least rq_depth), and every receive it accepted is the one
 * completed, in order, with its own data: none was overwritten by the next.
 */
static void receive_queue_full_loses_nothing(void)
{
	enum {
		DEPTH = 4,
		MAX = 64,
		SZ = 32
	};
	struct pair p;
	struct pair_opts o = { .cq_depth = 256, .attr_b = { .rq_depth = DEPTH } };
	struct tbuf s = { 0 }, r = { 0 };
	struct rcc_wc wc[MAX];
	int accepted = 0, rc;

	CHECK_OK(pair_open(&p, &o));
	CHECK_OK(tbuf_alloc(&s, p.ctx, MAX * SZ, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&r, p.ctx, MAX * SZ, RCC_ACCESS_LOCAL_WRITE));
	for (;;) {
		struct rcc_sge rs = tbuf_sge(&r, (size_t)accepted * SZ, SZ);
		rc = rcc_post_recv(p.b, &rs, 1, 100 + (uint64_t)accepted);
		if (rc || accepted == MAX - 1)
			break;
		accepted++;
	}
	CHECK_EQ(rc, -ENOMEM);
	CHECK(accepted >= DEPTH);
	for (int i = 0; i < accepted; i++) {
		fill_pattern(s.p + i * SZ, SZ, 200 + (uint64_t)i);
		struct rcc_sge ss = tbuf_sge(&s, (size_t)i * SZ, SZ);
		CHECK_OK(rcc_post_send(p.a, &ss, 1, (uint64_t)i, RCC_SEND_SIGNALED));
	}
	CHECK_EQ(wait_n(p.cq_b, wc, accepted, TEST_TIMEOUT_MS), accepted);
	for (int i = 0; i < accepted; i++) {
		CHECK_WC(wc[i], RCC_WC_SUCCESS);
		CHECK_EQ(wc[i].wr_id, 100 + (uint64_t)i);
		CHECK_EQ(check_pattern(r.p + i * SZ, SZ, 200 + (uint64_t)i), -1);
	}
	CHECK_EQ(wait_n(p.cq_a, wc, accepted, TEST_TIMEOUT_MS), accepted);
	tbuf_free(&s);
	tbuf_free(&r);
	pair_close(&p);
}

/* ------------------------------------------------------------ stale keys */

/*
 * The rkey of a deregistered region opens nothing: not its old memory, and
 * not a region registered after it (which may reuse its bookkeeping).
 */
static void stale_rkey_refused(void)
{
	for (int aim_at_new = 0; aim_at_new < 2 && !test_failed; aim_at_new++) {
		struct pair p;
		struct guarded old = { 0 }, fresh = { 0 }, l = { 0 };

		CHECK_OK(pair_open(&p, NULL));
		CHECK_OK(guarded_open(&old, p.ctx, ALL_ACCESS, 51));
		CHECK_OK(guarded_open(&l, p.ctx, RCC_ACCESS_LOCAL_WRITE, 52));
		uint32_t stale = rcc_mr_rkey(old.mr);
		CHECK_OK(rcc_mr_dereg(old.mr));
		old.mr = NULL;
		CHECK_OK(guarded_open(&fresh, p.ctx, ALL_ACCESS, 53));
		uint8_t *aim = aim_at_new ? region(&fresh) : region(&old);
		struct rcc_sge sg = gsge(&l, 0, 16);
		CHECK_OK(rcc_post_write(p.a, &sg, 1, (uint64_t)(uintptr_t)aim, stale, 1,
					RCC_SEND_SIGNALED));
		EXPECT_STATUS(p.cq_a, 1, RCC_WC_REM_ACCESS_ERR);
		CHECK_EQ(anything_changed(&old), -1);
		CHECK_EQ(anything_changed(&fresh), -1);
		guarded_close(&fresh);
		guarded_close(&old);
		close_both(&p, &(struct guarded){ 0 }, &l);
	}
}

TEST_MAIN(TEST(write_fits_exactly), TEST(write_one_byte_before), TEST(write_one_byte_after),
	  TEST(read_fits_exactly), TEST(read_one_byte_before), TEST(read_one_byte_after),
	  TEST(atomic_first_and_last_word), TEST(atomic_word_before), TEST(atomic_word_after),
	  TEST(local_read_one_byte_before), TEST(local_read_one_byte_after),
	  TEST(local_write_one_byte_before), TEST(local_write_one_byte_after),
	  TEST(send_exactly_the_receive), TEST(send_one_byte_longer),
	  TEST(receive_one_byte_past_region), TEST(atomic_result_must_be_8_bytes),
	  TEST(receive_queue_full_loses_nothing), TEST(stale_rkey_refused))
