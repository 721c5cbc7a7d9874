/* Every operation, data verified byte for byte. */
#include <stdlib.h>

#include "pair.h"

#define ALL_ACCESS                                                                                 \
	(RCC_ACCESS_LOCAL_WRITE | RCC_ACCESS_REMOTE_WRITE | RCC_ACCESS_REMOTE_READ |               \
	 RCC_ACCESS_REMOTE_ATOMIC)

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
	CHECK_OK(wait_one(p.cq_a, &wc, TEST_TIMEOUT_MS));
	CHECK_WC(wc, RCC_WC_SUCCESS);
	CHECK_EQ(wc.opcode, RCC_WC_WRITE);
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
	CHECK_OK(wait_one(p.cq_a, &wc, TEST_TIMEOUT_MS));
	CHECK_WC(wc, RCC_WC_SUCCESS);
	CHECK_EQ(*(uint64_t *)local.p, 40);
	CHECK_EQ(*target, 42);
	CHECK_OK(rcc_post_cas(p.a, &res, rm.addr + n, rm.rkey, 42, 7, 4, RCC_SEND_SIGNALED));
	CHECK_OK(wait_one(p.cq_a, &wc, TEST_TIMEOUT_MS));
	CHECK_WC(wc, RCC_WC_SUCCESS);
	CHECK_EQ(*(uint64_t *)local.p, 42);
	CHECK_EQ(*target, 7);
	tbuf_free(&local);
	tbuf_free(&remote);
	pair_close(&p);
}

TEST_MAIN(TEST(send_recv_basic), TEST(write_read_atomics))
