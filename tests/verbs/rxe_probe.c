/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rxe_probe: what the device actually reports for the error cases the tcp
 * transport must imitate. Not a test: it prints statuses, states and times
 * for both sides (summarised in docs/verbs.md). Run in the Soft-RoCE VM:
 *   RCC_TEST_TRANSPORT=verbs RCC_TEST_ADDR=$RXE_IP rxe_probe [case...]
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pair.h"

#define ALL_ACCESS                                                                   \
	(RCC_ACCESS_LOCAL_WRITE | RCC_ACCESS_REMOTE_WRITE | RCC_ACCESS_REMOTE_READ | \
	 RCC_ACCESS_REMOTE_ATOMIC)

static void show(const char *who, struct rcc_cq *cq, int want, int timeout_ms, uint64_t t0)
{
	struct rcc_wc wc[16];
	int got = 0;
	uint64_t end = now_ms() + (uint64_t)timeout_ms;

	while (got < want && now_ms() < end) {
		int n = rcc_cq_wait(cq, wc, 16, 50);
		for (int i = 0; i < n; i++, got++)
			printf("    %-9s wr_id %-4" PRIu64 " %-28s op %-14s len %u  (+%llu ms)\n",
			       who, wc[i].wr_id, rcc_wc_status_str(wc[i].status),
			       rcc_wc_opcode_str(wc[i].opcode), wc[i].byte_len,
			       (unsigned long long)(now_ms() - t0));
	}
	if (got < want)
		printf("    %-9s %d of %d completions within %d ms\n", who, got, want, timeout_ms);
}

static void states(struct pair *p)
{
	uint64_t end = now_ms() + 500;
	/* the background thread acts on events asynchronously: let it */
	while (now_ms() < end &&
	       (rcc_ep_state(p->a) == RCC_EP_CONNECTED || rcc_ep_state(p->b) == RCC_EP_CONNECTED)) {
		struct rcc_wc w;
		(void)rcc_cq_wait(p->cq_a, &w, 1, 5);
	}
	printf("    states: initiator %s, responder %s\n", rcc_ep_state_str(rcc_ep_state(p->a)),
	       rcc_ep_state_str(rcc_ep_state(p->b)));
}

/* One one-sided request the target should refuse; the target has a receive posted. */
static void one_sided(const char *title, enum rcc_wr_opcode op, unsigned access, uint64_t off,
		      uint32_t len, uint32_t rkey_xor)
{
	struct pair p;
	struct tbuf l = { 0 }, t = { 0 }, r = { 0 };

	printf("== %s\n", title);
	if (pair_open(&p, NULL))
		return;
	tbuf_alloc(&l, p.ctx, 4096, RCC_ACCESS_LOCAL_WRITE);
	tbuf_alloc(&t, p.ctx, 4096, access);
	tbuf_alloc(&r, p.ctx, 64, RCC_ACCESS_LOCAL_WRITE);
	struct rcc_remote_mr rm = rcc_mr_remote(t.mr);
	struct rcc_sge rs = tbuf_sge(&r, 0, 64), sg = tbuf_sge(&l, 0, len);
	rcc_post_recv(p.b, &rs, 1, 77);
	struct rcc_send_wr wr = { .wr_id = 1,
				  .sg_list = &sg,
				  .num_sge = 1,
				  .opcode = op,
				  .flags = RCC_SEND_SIGNALED,
				  .remote_addr = rm.addr + off,
				  .rkey = rm.rkey ^ rkey_xor,
				  .compare_add = 1 };
	uint64_t t0 = now_ms();
	int rc = rcc_post_send_list(p.a, &wr, 1, NULL);
	printf("    post: %s\n", rcc_strerror(rc));
	if (rc == 0) {
		show("initiator", p.cq_a, 1, 3000, t0);
		show("responder", p.cq_b, 1, 3000, t0);
		states(&p);
	}
	tbuf_free(&l);
	tbuf_free(&t);
	tbuf_free(&r);
	pair_close(&p);
}

static void bad_rkey(void)
{
	one_sided("(a) RDMA WRITE with a bad rkey", RCC_WR_WRITE, ALL_ACCESS, 0, 64, 0x5a5a0000u);
}

static void write_oob(void)
{
	one_sided("(a') RDMA WRITE past the end of the region", RCC_WR_WRITE, ALL_ACCESS, 4088, 16,
		  0);
}

static void misaligned(void)
{
	one_sided("(e) FADD at a misaligned address", RCC_WR_FADD, ALL_ACCESS, 4, 8, 0);
}

static void read_noperm(void)
{
	one_sided("(f) READ without remote read access", RCC_WR_READ,
		  RCC_ACCESS_LOCAL_WRITE | RCC_ACCESS_REMOTE_WRITE, 0, 64, 0);
}

static void atomic_noperm(void)
{
	one_sided("(f) CAS without remote atomic access", RCC_WR_CAS,
		  RCC_ACCESS_LOCAL_WRITE | RCC_ACCESS_REMOTE_WRITE, 0, 8, 0);
}

static void send_too_big(void)
{
	struct pair p;
	struct tbuf s = { 0 }, r = { 0 };

	printf("== (b) SEND of 64 bytes into a 16-byte receive (a second receive behind it)\n");
	if (pair_open(&p, NULL))
		return;
	tbuf_alloc(&s, p.ctx, 256, RCC_ACCESS_LOCAL_WRITE);
	tbuf_alloc(&r, p.ctx, 256, RCC_ACCESS_LOCAL_WRITE);
	struct rcc_sge rs = tbuf_sge(&r, 0, 16), rs2 = tbuf_sge(&r, 16, 16),
		       ss = tbuf_sge(&s, 0, 64);
	rcc_post_recv(p.b, &rs, 1, 1);
	rcc_post_recv(p.b, &rs2, 1, 2);
	uint64_t t0 = now_ms();
	rcc_post_send(p.a, &ss, 1, 3, RCC_SEND_SIGNALED);
	show("sender", p.cq_a, 1, 3000, t0);
	show("receiver", p.cq_b, 2, 3000, t0);
	states(&p);
	tbuf_free(&s);
	tbuf_free(&r);
	pair_close(&p);
}

static void rnr(void)
{
	printf("== (c) SEND with no receive posted, min_rnr_timer 12 (0.64 ms)\n");
	for (int n = 0; n <= 7; n++) {
		struct pair p;
		struct pair_opts o = { .attr_a = { .rnr_retry = n == 0 ? RCC_NO_RETRY : n } };
		struct tbuf s = { 0 };
		if (pair_open(&p, &o))
			return;
		tbuf_alloc(&s, p.ctx, 64, RCC_ACCESS_LOCAL_WRITE);
		struct rcc_sge ss = tbuf_sge(&s, 0, 64);
		uint64_t t0 = now_ms();
		rcc_post_send(p.a, &ss, 1, (uint64_t)n, RCC_SEND_SIGNALED);
		struct rcc_wc w;
		int rc = rcc_cq_wait(p.cq_a, &w, 1, n == 7 ? 2000 : 30000);
		printf("    rnr_retry %d: %s after %llu ms\n", n,
		       rc == 1 ? rcc_wc_status_str(w.status) : rcc_strerror(rc),
		       (unsigned long long)(now_ms() - t0));
		tbuf_free(&s);
		pair_close(&p);
	}
}

static void bad_lkey(void)
{
	struct pair p;
	struct tbuf s = { 0 }, r = { 0 };

	printf("== SEND from a bad lkey (receiver has a receive posted)\n");
	if (pair_open(&p, NULL))
		return;
	tbuf_alloc(&s, p.ctx, 64, RCC_ACCESS_LOCAL_WRITE);
	tbuf_alloc(&r, p.ctx, 64, RCC_ACCESS_LOCAL_WRITE);
	struct rcc_sge rs = tbuf_sge(&r, 0, 64), bad = tbuf_sge(&s, 0, 64);
	bad.lkey ^= 0x00a5a500u;
	rcc_post_recv(p.b, &rs, 1, 1);
	uint64_t t0 = now_ms();
	rcc_post_send(p.a, &bad, 1, 2, RCC_SEND_SIGNALED);
	show("sender", p.cq_a, 1, 3000, t0);
	show("receiver", p.cq_b, 1, 3000, t0);
	states(&p);
	tbuf_free(&s);
	tbuf_free(&r);
	pair_close(&p);
}

/* (d) Before any other case: a forked child must not inherit verbs state. */
static void killed(void)
{
	int to_parent[2], to_child[2];
	char addr[128];

	printf("== (d) peer process killed (SIGKILL) mid-stream, bring-up %s\n",
	       test_bringup() == RCC_BRINGUP_MANUAL ? "manual" : "cm");
	if (pipe(to_parent) || pipe(to_child))
		return;
	pid_t child = fork();
	if (child == 0) {
		struct rcc_ctx *c;
		struct rcc_cq *cq;
		struct rcc_ep *ep;
		int port;
		if (read(to_child[0], &port, sizeof(port)) != sizeof(port))
			_exit(1);
		snprintf(addr, sizeof(addr), "%s:%d", test_addr(), port);
		if (test_ctx_open(&c) || rcc_cq_create(c, NULL, &cq))
			_exit(2);
		struct rcc_ep_attr a = { .send_cq = cq };
		if (rcc_connect(c, addr, &a, 5000, &ep))
			_exit(3);
		static uint8_t buf[4096];
		struct rcc_mr *mr;
		if (rcc_mr_reg(c, buf, sizeof(buf), RCC_ACCESS_LOCAL_WRITE, &mr))
			_exit(4);
		struct rcc_sge sg = rcc_mr_sge(mr, buf, sizeof(buf));
		if (write(to_parent[1], "x", 1) != 1)
			_exit(5);
		for (;;) {
			struct rcc_wc w;
			if (rcc_post_send(ep, &sg, 1, 0, RCC_SEND_SIGNALED) == 0)
				(void)rcc_cq_wait(cq, &w, 1, 1000);
		}
	}
	struct rcc_ctx *ctx;
	struct rcc_cq *cq;
	struct rcc_listener *lst;
	struct rcc_ep *ep;
	struct tbuf r = { 0 };
	if (test_ctx_open(&ctx) || rcc_cq_create(ctx, NULL, &cq))
		goto out_kill;
	snprintf(addr, sizeof(addr), "%s:0", test_addr());
	if (rcc_listen(ctx, addr, 0, &lst))
		goto out_kill;
	int port = rcc_listener_port(lst);
	if (write(to_child[1], &port, sizeof(port)) != sizeof(port))
		goto out_kill;
	struct rcc_ep_attr a = { .send_cq = cq };
	if (rcc_accept(lst, &a, 5000, &ep))
		goto out_kill;
	char x;
	if (read(to_parent[0], &x, 1) != 1)
		goto out_kill;
	tbuf_alloc(&r, ctx, 8 * 4096, RCC_ACCESS_LOCAL_WRITE);
	for (int i = 0; i < 8; i++) {
		struct rcc_sge rs = tbuf_sge(&r, (size_t)i * 4096, 4096);
		rcc_post_recv(ep, &rs, 1, (uint64_t)i);
	}
	struct rcc_wc w;
	rcc_cq_wait(cq, &w, 1, 5000);
	printf("    stream live (first receive: %s)\n", rcc_wc_status_str(w.status));
	/* drain what is in flight, then post one send towards the peer */
	while (rcc_cq_poll(cq, &w, 1) > 0)
		;
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	uint64_t t0 = now_ms();
	printf("    killed the peer; post_send afterwards: %s\n",
	       rcc_strerror(rcc_post_send(ep, &(struct rcc_sge){ 0 }, 0, 1000, RCC_SEND_SIGNALED)));
	uint64_t state_at = 0;
	int seen = 0;
	while (now_ms() - t0 < 20000 && seen < 8) {
		int n = rcc_cq_wait(cq, &w, 1, 10);
		if (n == 1) {
			printf("    survivor wr_id %-4" PRIu64 " %-26s (+%llu ms)\n", w.wr_id,
			       rcc_wc_status_str(w.status), (unsigned long long)(now_ms() - t0));
			seen++;
		}
		if (!state_at && rcc_ep_state(ep) != RCC_EP_CONNECTED) {
			state_at = now_ms();
			printf("    survivor endpoint %s (+%llu ms)\n",
			       rcc_ep_state_str(rcc_ep_state(ep)),
			       (unsigned long long)(state_at - t0));
		}
	}
	if (!state_at)
		printf("    survivor still CONNECTED after 20 s\n");
	rcc_ep_close(ep);
	tbuf_free(&r);
	rcc_listener_close(lst);
	rcc_cq_destroy(cq);
	rcc_ctx_close(ctx);
	return;
out_kill:
	printf("    setup failed\n");
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
}

TEST_MAIN(TEST(killed), TEST(bad_rkey), TEST(write_oob), TEST(send_too_big), TEST(rnr),
	  TEST(misaligned), TEST(read_noperm), TEST(atomic_noperm), TEST(bad_lkey))
