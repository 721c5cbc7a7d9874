/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unreliable-connected endpoints (RCC_QP_UC): SEND and WRITE, with and
 * without immediate data, arrive verified; READ and atomics are refused at
 * post, on every transport, with a reason.
 */
#include "pair.h"

static const struct pair_opts uc = {
	.cq_depth = 64,
	.attr_a = { .qp_type = RCC_QP_UC },
	.attr_b = { .qp_type = RCC_QP_UC },
};

/* Receive buffers are posted before the peer sends: on a NIC a UC SEND that
 * finds none is dropped, not retried. */
static void uc_send_write_verified(void)
{
	enum {
		SZ = 8192
	};
	struct pair p;
	struct tbuf s = { 0 }, r = { 0 }, t = { 0 };
	struct rcc_wc w;

	CHECK_OK(pair_open(&p, &uc));
	CHECK_OK(tbuf_alloc(&s, p.ctx, 4 * SZ, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&r, p.ctx, 2 * SZ, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&t, p.ctx, 2 * SZ, RCC_ACCESS_LOCAL_WRITE | RCC_ACCESS_REMOTE_WRITE));
	for (int i = 0; i < 4; i++)
		fill_pattern(s.p + (size_t)i * SZ, SZ, 300 + (uint64_t)i);
	struct rcc_sge r0 = tbuf_sge(&r, 0, SZ), r1 = tbuf_sge(&r, SZ, SZ);
	struct rcc_sge zero = { 0 };
	CHECK_OK(rcc_post_recv(p.b, &r0, 1, 10));
	CHECK_OK(rcc_post_recv(p.b, &r1, 1, 11));
	CHECK_OK(rcc_post_recv(p.b, &zero, 0, 12)); /* for the WRITE_IMM */
	struct rcc_sge s0 = tbuf_sge(&s, 0, SZ), s1 = tbuf_sge(&s, SZ, SZ),
		       s2 = tbuf_sge(&s, 2 * SZ, SZ), s3 = tbuf_sge(&s, 3 * SZ, SZ);
	uint64_t tgt = (uint64_t)(uintptr_t)t.p;
	uint32_t rkey = rcc_mr_rkey(t.mr);
	CHECK_OK(rcc_post_send(p.a, &s0, 1, 1, RCC_SEND_SIGNALED));
	CHECK_OK(rcc_post_send_imm(p.a, &s1, 1, 0xabcd, 2, RCC_SEND_SIGNALED));
	CHECK_OK(rcc_post_write(p.a, &s2, 1, tgt, rkey, 3, RCC_SEND_SIGNALED));
	CHECK_OK(rcc_post_write_imm(p.a, &s3, 1, tgt + SZ, rkey, 0x1234, 4, RCC_SEND_SIGNALED));
	for (uint64_t id = 1; id <= 4; id++) {
		CHECK_OK(wait_one(p.cq_a, &w, TEST_TIMEOUT_MS));
		CHECK_WC(w, RCC_WC_SUCCESS);
		CHECK_EQ(w.wr_id, id);
		CHECK_EQ(w.opcode, id <= 2 ? RCC_WC_SEND : RCC_WC_WRITE);
	}
	CHECK_OK(wait_one(p.cq_b, &w, TEST_TIMEOUT_MS));
	CHECK_WC(w, RCC_WC_SUCCESS);
	CHECK_EQ(w.wr_id, 10);
	CHECK_EQ(w.opcode, RCC_WC_RECV);
	CHECK_EQ(w.byte_len, SZ);
	CHECK_EQ(w.wc_flags & RCC_WC_WITH_IMM, 0);
	CHECK_OK(wait_one(p.cq_b, &w, TEST_TIMEOUT_MS));
	CHECK_WC(w, RCC_WC_SUCCESS);
	CHECK_EQ(w.wr_id, 11);
	CHECK_EQ(w.opcode, RCC_WC_RECV);
	CHECK(w.wc_flags & RCC_WC_WITH_IMM);
	CHECK_EQ(w.imm_data, 0xabcd);
	CHECK_OK(wait_one(p.cq_b, &w, TEST_TIMEOUT_MS));
	CHECK_WC(w, RCC_WC_SUCCESS);
	CHECK_EQ(w.wr_id, 12);
	CHECK_EQ(w.opcode, RCC_WC_RECV_WRITE_IMM);
	CHECK_EQ(w.imm_data, 0x1234);
	CHECK(w.ep == p.b);
	CHECK_EQ(check_pattern(r.p, SZ, 300), -1);
	CHECK_EQ(check_pattern(r.p + SZ, SZ, 301), -1);
	CHECK_EQ(check_pattern(t.p, SZ, 302), -1);
	CHECK_EQ(check_pattern(t.p + SZ, SZ, 303), -1);
	CHECK_EQ(rcc_ep_state(p.a), RCC_EP_CONNECTED);
	CHECK_EQ(rcc_ep_state(p.b), RCC_EP_CONNECTED);
	tbuf_free(&s);
	tbuf_free(&r);
	tbuf_free(&t);
	pair_close(&p);
}

/* READ, CAS and FADD never leave a UC endpoint: -EINVAL at post, with a
 * reason; a list stops at the first of them, the requests before it posted.
 * The endpoint stays in service. */
static void uc_read_atomic_rejected(void)
{
	struct pair p;
	struct tbuf s = { 0 }, t = { 0 }, r = { 0 };
	struct rcc_wc w;

	CHECK_OK(pair_open(&p, &uc));
	CHECK_OK(tbuf_alloc(&s, p.ctx, 64, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&r, p.ctx, 64, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&t, p.ctx, 64, ALL_ACCESS));
	struct rcc_sge ss = tbuf_sge(&s, 0, 8), rs = tbuf_sge(&r, 0, 64);
	uint64_t tgt = (uint64_t)(uintptr_t)t.p;
	uint32_t rkey = rcc_mr_rkey(t.mr);

	CHECK_EQ(rcc_post_read(p.a, &ss, 1, tgt, rkey, 1, RCC_SEND_SIGNALED), -EINVAL);
	CHECK_MSG(strstr(rcc_last_error(), "READ") && strstr(rcc_last_error(), "RCC_QP_UC"),
		  "last error: '%s'", rcc_last_error());
	CHECK_EQ(rcc_post_cas(p.a, &ss, tgt, rkey, 0, 1, 2, RCC_SEND_SIGNALED), -EINVAL);
	CHECK_MSG(strstr(rcc_last_error(), "CAS"), "last error: '%s'", rcc_last_error());
	CHECK_EQ(rcc_post_fadd(p.a, &ss, tgt, rkey, 1, 3, RCC_SEND_SIGNALED), -EINVAL);
	CHECK_MSG(strstr(rcc_last_error(), "FADD"), "last error: '%s'", rcc_last_error());

	CHECK_OK(rcc_post_recv(p.b, &rs, 1, 20));
	struct rcc_send_wr list[2] = {
		{ .wr_id = 4,
		  .sg_list = &ss,
		  .num_sge = 1,
		  .opcode = RCC_WR_SEND,
		  .flags = RCC_SEND_SIGNALED },
		{ .wr_id = 5,
		  .sg_list = &ss,
		  .num_sge = 1,
		  .opcode = RCC_WR_READ,
		  .flags = RCC_SEND_SIGNALED,
		  .remote_addr = tgt,
		  .rkey = rkey },
	};
	int posted = -1;
	CHECK_EQ(rcc_post_send_list(p.a, list, 2, &posted), -EINVAL);
	CHECK_EQ(posted, 1);
	EXPECT_STATUS(p.cq_a, 4, RCC_WC_SUCCESS);
	EXPECT_STATUS(p.cq_b, 20, RCC_WC_SUCCESS);
	CHECK_EQ(rcc_cq_poll(p.cq_a, &w, 1), 0); /* nothing of the refused ones */
	CHECK_EQ(rcc_ep_state(p.a), RCC_EP_CONNECTED);
	tbuf_free(&s);
	tbuf_free(&r);
	tbuf_free(&t);
	pair_close(&p);
}

/*
 * On a device the QP really is UC: a SEND that finds no receive is dropped
 * (the sender completes, nothing waits for RNR) and the next one, meeting a
 * receive, is delivered. tcp carries UC reliably (rcc.h), so it would wait
 * instead: this case is the device's only.
 */
static void uc_send_without_receive_dropped(void)
{
	struct pair p;
	struct tbuf s = { 0 }, r = { 0 };
	struct rcc_wc w;

	if (!test_on_verbs())
		SKIP_CASE("verbs", "tcp carries UC reliably: a SEND waits for its receive");
	CHECK_OK(pair_open(&p, &uc));
	CHECK_OK(tbuf_alloc(&s, p.ctx, 128, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&r, p.ctx, 64, RCC_ACCESS_LOCAL_WRITE));
	fill_pattern(s.p, 64, 400);
	fill_pattern(s.p + 64, 64, 401);
	struct rcc_sge s0 = tbuf_sge(&s, 0, 64), s1 = tbuf_sge(&s, 64, 64),
		       rs = tbuf_sge(&r, 0, 64);
	CHECK_OK(rcc_post_send(p.a, &s0, 1, 1, RCC_SEND_SIGNALED));
	EXPECT_STATUS(p.cq_a, 1, RCC_WC_SUCCESS); /* RC would wait here (RNR, forever) */
	CHECK_OK(rcc_post_recv(p.b, &rs, 1, 9));
	CHECK_OK(rcc_post_send(p.a, &s1, 1, 2, RCC_SEND_SIGNALED));
	EXPECT_STATUS(p.cq_a, 2, RCC_WC_SUCCESS);
	CHECK_OK(wait_one(p.cq_b, &w, TEST_TIMEOUT_MS));
	CHECK_WC(w, RCC_WC_SUCCESS);
	CHECK_EQ(w.wr_id, 9);
	CHECK_EQ(check_pattern(r.p, 64, 401), -1); /* the second message, not the first */
	tbuf_free(&s);
	tbuf_free(&r);
	pair_close(&p);
}

/* A qp_type that is neither RC nor UC is refused when the endpoint is made. */
static void uc_bad_qp_type(void)
{
	struct rcc_ctx *ctx;
	struct rcc_cq *cq;
	struct rcc_ep *ep = NULL;
	char addr[128];

	CHECK_OK(test_ctx_open(&ctx));
	CHECK_OK(rcc_cq_create(ctx, NULL, &cq));
	struct rcc_ep_attr a = { .send_cq = cq, .qp_type = (enum rcc_qp_type)7 };
	snprintf(addr, sizeof(addr), "%s:1", test_addr());
	CHECK_EQ(rcc_connect(ctx, addr, &a, TEST_TIMEOUT_MS, &ep), -EINVAL);
	CHECK_MSG(strstr(rcc_last_error(), "qp_type"), "last error: '%s'", rcc_last_error());
	CHECK(ep == NULL);
	CHECK_OK(rcc_cq_destroy(cq));
	CHECK_OK(rcc_ctx_close(ctx));
}

TEST_MAIN(TEST(uc_send_write_verified), TEST(uc_read_atomic_rejected),
	  TEST(uc_send_without_receive_dropped), TEST(uc_bad_qp_type))
