/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Datagram endpoints (RCC_QP_UD): one server endpoint answers 16 client
 * endpoints, every reply routed by its completion's source and verified
 * byte for byte; SEND_IMM carries its immediate and the payload lands at
 * offset 0; a datagram over rcc_ud_max_msg() is refused at post and nothing
 * leaves; WRITE, READ and atomics are refused, and so is UD in rcc_connect();
 * a bad address blob is refused; a datagram with the wrong Q_Key is dropped;
 * the address exchange through a listener; lifetimes and disconnect;
 * several endpoints on one datagram SRQ (oldest receive first, drops, the
 * limit event, the GRH kept out of its receives on verbs), and an SRQ of
 * one kind refused to endpoints of the other.
 */
#include <pthread.h>
#include <stdlib.h>

#include "pair.h"
#include "transport/transport.h"

/* How long a test waits to see that something does NOT arrive. */
#define ABSENT_MS 300

struct ud_side {
	struct rcc_ctx *ctx;
	struct rcc_cq *cq;
	struct rcc_ep *ep;
};

static int side_open(struct ud_side *s, struct rcc_ctx *ctx, uint32_t depth, uint32_t qkey)
{
	struct rcc_cq_attr ca = { .depth = 4 * depth + 16 };
	int rc;

	memset(s, 0, sizeof(*s));
	s->ctx = ctx;
	rc = rcc_cq_create(ctx, &ca, &s->cq);
	if (rc)
		return rc;
	struct rcc_ep_attr a = {
		.send_cq = s->cq,
		.sq_depth = depth,
		.rq_depth = depth,
		.qp_type = RCC_QP_UD,
		.qkey = qkey,
	};
	rc = rcc_ud_create(ctx, &a, &s->ep);
	if (rc) {
		fprintf(stderr, "rcc_ud_create: %s (%s)\n", rcc_strerror(rc), rcc_last_error());
		rcc_cq_destroy(s->cq);
	}
	return rc;
}

static void side_close(struct ud_side *s)
{
	if (s->ep)
		rcc_ep_close(s->ep);
	if (s->cq)
		rcc_cq_destroy(s->cq);
	s->ep = NULL;
	s->cq = NULL;
}

/* An address handle on from's endpoint for to's address. */
static int ah_to(struct ud_side *from, const struct ud_side *to, struct rcc_ah **ah)
{
	struct rcc_ud_addr a;
	int rc = rcc_ud_addr(to->ep, &a);
	return rc ? rc : rcc_ah_create(from->ep, &a, ah);
}

/* Nothing arrives on cq within ABSENT_MS. */
static bool stays_empty(struct rcc_cq *cq)
{
	struct rcc_wc w;
	return rcc_cq_wait(cq, &w, 1, ABSENT_MS) == -ETIMEDOUT;
}

/* ------------------------------------------------------------- ping-pong */

enum {
	CLIENTS = 16,
	ROUNDS = 20,
	SRV_RECVS = 64,
	SLOT = 4096,
};

/* The key that tells endpoints apart in an address: the QP number / id
 * with the port (tcp: each endpoint's own UDP port; verbs: the LID). */
static uint64_t addr_key(const struct rcc_ud_addr *a)
{
	struct rcci_ud_addr d;
	if (rcci_ud_addr_decode(a, &d, NULL))
		return UINT64_MAX; /* names nobody */
	return (uint64_t)d.qpn << 16 | d.port;
}

static uint32_t ping_len(int c, int round, uint32_t max)
{
	return 1 + (uint32_t)(c * 61 + round * 29) % max;
}

static uint64_t ping_seed(int c, int round) { return (uint64_t)(c * 1000 + round); }

/* Sixteen client endpoints on one CQ of their context, as a real client
 * would have them; client c pings srv[c]: ping_len(c, round) bytes of
 * pattern ping_seed(c, round), with a receive posted for its pong. */
struct ud_clients {
	struct rcc_cq *cq;
	struct rcc_ep *ep[CLIENTS];
	struct rcc_ah *to_srv[CLIENTS];
	struct rcc_ep *srv[CLIENTS]; /* the server endpoint client c pings */
	uint64_t srv_key[CLIENTS];   /* its address key */
	uint64_t key[CLIENTS];       /* client c's own */
	struct tbuf buf;             /* 2 SLOTs per client: ping, pong */
	uint32_t max;
};

/* Client c pings srv[c % nsrv]. */
static void clients_open(struct ud_clients *cl, struct rcc_ctx *ctx, struct rcc_ep *const *srv,
			 int nsrv)
{
	struct rcc_cq_attr ca = { .depth = 4 * CLIENTS };

	memset(cl, 0, sizeof(*cl));
	cl->max = rcc_ud_max_msg(srv[0]);
	CHECK(cl->max >= 256 && cl->max <= SLOT);
	CHECK_OK(tbuf_alloc(&cl->buf, ctx, (size_t)2 * CLIENTS * SLOT, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(rcc_cq_create(ctx, &ca, &cl->cq));
	for (int c = 0; c < CLIENTS; c++) {
		struct rcc_ep_attr a = {
			.send_cq = cl->cq, .sq_depth = 2, .rq_depth = 2, .qp_type = RCC_QP_UD
		};
		struct rcc_ud_addr sa, own;
		CHECK_OK(rcc_ud_create(ctx, &a, &cl->ep[c]));
		rcc_ep_set_context(cl->ep[c], (void *)(uintptr_t)(c + 1));
		CHECK_OK(rcc_ud_addr(cl->ep[c], &own));
		cl->key[c] = addr_key(&own);
		cl->srv[c] = srv[c % nsrv];
		CHECK_OK(rcc_ud_addr(cl->srv[c], &sa));
		cl->srv_key[c] = addr_key(&sa);
		CHECK_OK(rcc_ah_create(cl->ep[c], &sa, &cl->to_srv[c]));
	}
}

static void clients_close(struct ud_clients *cl)
{
	for (int c = 0; c < CLIENTS; c++) {
		if (cl->to_srv[c])
			rcc_ah_destroy(cl->to_srv[c]);
		if (cl->ep[c])
			rcc_ep_close(cl->ep[c]);
	}
	if (cl->cq)
		rcc_cq_destroy(cl->cq);
	tbuf_free(&cl->buf);
}

/* Every client pings at once. */
static void clients_ping(struct ud_clients *cl, int round)
{
	for (int c = 0; c < CLIENTS; c++) {
		uint32_t len = ping_len(c, round, cl->max);
		fill_pattern(cl->buf.p + (size_t)(2 * c) * SLOT, len, ping_seed(c, round));
		memset(cl->buf.p + (size_t)(2 * c + 1) * SLOT, 0, SLOT);
		struct rcc_sge r = tbuf_sge(&cl->buf, (size_t)(2 * c + 1) * SLOT, cl->max);
		struct rcc_sge s = tbuf_sge(&cl->buf, (size_t)(2 * c) * SLOT, len);
		CHECK_OK(rcc_post_recv(cl->ep[c], &r, 1, 500 + (uint64_t)c));
		CHECK_OK(rcc_post_send_to(cl->ep[c], cl->to_srv[c], &s, 1, 100 + (uint64_t)c,
					  RCC_SEND_SIGNALED));
	}
}

/* The clients' completions that are there, *got counting them and *pongs
 * the pongs: each whole (SEND_IMM of round, the ping's bytes and length),
 * to the client that pinged, from the server it pinged. */
static void clients_poll(struct ud_clients *cl, int round, int *got, int *pongs)
{
	struct rcc_wc w[8];
	int n = rcc_cq_poll(cl->cq, w, 8);

	CHECK(n >= 0);
	for (int i = 0; i < n; i++) {
		CHECK_WC(w[i], RCC_WC_SUCCESS);
		int c = (int)(uintptr_t)rcc_ep_context(w[i].ep) - 1;
		CHECK(c >= 0 && c < CLIENTS);
		(*got)++;
		if (w[i].opcode == RCC_WC_SEND) {
			CHECK_EQ(w[i].wr_id, 100 + (uint64_t)c);
			continue;
		}
		uint32_t len = ping_len(c, round, cl->max);
		uint8_t *in = cl->buf.p + (size_t)(2 * c + 1) * SLOT;
		CHECK_EQ(w[i].opcode, RCC_WC_RECV);
		CHECK_EQ(w[i].wr_id, 500 + (uint64_t)c);
		CHECK_EQ(w[i].byte_len, len);
		CHECK(w[i].wc_flags & RCC_WC_WITH_IMM);
		CHECK_EQ(w[i].imm_data, (uint32_t)round);
		CHECK_EQ(addr_key(&w[i].src), cl->srv_key[c]);
		CHECK_MSG(check_pattern(in, len, ping_seed(c, round)) == -1,
			  "client %d round %d: pong differs at byte %ld", c, round,
			  check_pattern(in, len, ping_seed(c, round)));
		(*pongs)++;
	}
}

/*
 * The server's side of one ping, received into slot w->wr_id of sbuf
 * (receives at slot * SLOT, filled with 0xee beforehand; pongs at
 * (SRV_RECVS + slot) * SLOT): wc.src names the client, w->ep the server
 * endpoint it pinged; the payload is at offset 0, byte_len exact, nothing
 * after it written. The pong goes back through w->ep to wc.src (back[c],
 * made from it once) as SEND_IMM of round. The caller posts the receive
 * again.
 */
static void serve_ping(const struct ud_clients *cl, struct tbuf *sbuf, const struct rcc_wc *w,
		       int round, struct rcc_ah **back)
{
	CHECK_WC(*w, RCC_WC_SUCCESS);
	CHECK_EQ(w->opcode, RCC_WC_RECV);
	uint64_t slot = w->wr_id, key = addr_key(&w->src);
	int c = 0;
	while (c < CLIENTS && cl->key[c] != key)
		c++;
	CHECK_MSG(slot < SRV_RECVS && c < CLIENTS, "slot %llu, wc.src names no client",
		  (unsigned long long)slot);
	CHECK(w->ep == cl->srv[c]);
	uint32_t len = ping_len(c, round, cl->max);
	uint8_t *ping = sbuf->p + slot * SLOT;
	CHECK_EQ(w->byte_len, len);
	CHECK_MSG(check_pattern(ping, len, ping_seed(c, round)) == -1,
		  "server: client %d round %d: ping differs at byte %ld", c, round,
		  check_pattern(ping, len, ping_seed(c, round)));
	CHECK_MSG(len == cl->max || ping[len] == 0xee, "byte %u after the payload was written",
		  len);
	if (!back[c])
		CHECK_OK(rcc_ah_create(w->ep, &w->src, &back[c]));
	memcpy(sbuf->p + (SRV_RECVS + slot) * SLOT, ping, len);
	memset(ping, 0xee, SLOT);
	struct rcc_sge s = tbuf_sge(sbuf, (SRV_RECVS + slot) * SLOT, len);
	CHECK_OK(rcc_post_send_to_imm(w->ep, back[c], &s, 1, (uint32_t)round, 1000 + slot,
				      RCC_SEND_SIGNALED));
}

/*
 * ROUNDS of every client pinging at once, the server answering each ping
 * (serve_ping) from its CQs scq[0..ncq) and posting the receive again: to
 * srq, or to the endpoint that received it when srq is NULL. Each round
 * ends when every client has its pong and every ping was answered.
 */
static void pingpong_rounds(struct ud_clients *cl, struct tbuf *sbuf, struct rcc_cq *const *scq,
			    int ncq, struct rcc_srq *srq)
{
	struct rcc_ah *back[CLIENTS] = { NULL };
	int pongs = 0;

	for (int round = 0; round < ROUNDS && !test_failed; round++) {
		clients_ping(cl, round);
		int want = 2 * CLIENTS, got = 0, echoed = 0;
		uint64_t deadline = now_ms() + TEST_TIMEOUT_MS;
		while (!test_failed && (got < want || echoed < CLIENTS) && now_ms() < deadline) {
			for (int q = 0; q < ncq; q++) {
				struct rcc_wc w[8];
				int n = rcc_cq_poll(scq[q], w, 8);
				CHECK(n >= 0);
				for (int i = 0; i < n && !test_failed; i++) {
					if (w[i].status == RCC_WC_SUCCESS &&
					    w[i].opcode == RCC_WC_SEND)
						continue; /* a pong left */
					serve_ping(cl, sbuf, &w[i], round, back);
					struct rcc_sge r = tbuf_sge(sbuf, w[i].wr_id * SLOT,
								    cl->max);
					CHECK_OK(srq ? rcc_srq_post_recv(srq, &r, 1, w[i].wr_id) :
						       rcc_post_recv(w[i].ep, &r, 1, w[i].wr_id));
					echoed++;
				}
			}
			clients_poll(cl, round, &got, &pongs);
		}
		CHECK_MSG(test_failed || (got == want && echoed == CLIENTS),
			  "round %d: %d of %d client completions, %d of %d pings echoed", round,
			  got, want, echoed, CLIENTS);
	}
	CHECK(!test_failed);
	CHECK_EQ(pongs, CLIENTS * ROUNDS);
	for (int c = 0; c < CLIENTS; c++) { /* every client a source of its own */
		CHECK(back[c] != NULL);
		CHECK_OK(rcc_ah_destroy(back[c]));
	}
}

/* One server endpoint, 16 clients: each ping carries its client's pattern
 * and size; the server answers every ping to its completion's source (an
 * address handle per source, made from wc.src) with SEND_IMM echoing the
 * bytes; each client checks the pong came to it, whole. */
static void ud_pingpong_16_clients(void)
{
	struct rcc_ctx *sctx, *cctx;
	struct ud_side srv;
	struct ud_clients cl;
	struct tbuf sbuf = { 0 };

	CHECK_OK(test_ctx_open(&sctx));
	CHECK_OK(test_ctx_open(&cctx));
	CHECK_OK(side_open(&srv, sctx, SRV_RECVS, 0));
	clients_open(&cl, cctx, &srv.ep, 1);
	CHECK(!test_failed);
	CHECK_OK(tbuf_alloc(&sbuf, sctx, (size_t)2 * SRV_RECVS * SLOT, RCC_ACCESS_LOCAL_WRITE));
	memset(sbuf.p, 0xee, (size_t)SRV_RECVS * SLOT);
	for (int i = 0; i < SRV_RECVS; i++) {
		struct rcc_sge r = tbuf_sge(&sbuf, (size_t)i * SLOT, cl.max);
		CHECK_OK(rcc_post_recv(srv.ep, &r, 1, (uint64_t)i));
	}

	pingpong_rounds(&cl, &sbuf, &srv.cq, 1, NULL);
	CHECK(!test_failed);
	clients_close(&cl);
	side_close(&srv);
	tbuf_free(&sbuf);
	CHECK_OK(rcc_ctx_close(cctx));
	CHECK_OK(rcc_ctx_close(sctx));
}

/* ------------------------------------------------- what a datagram carries */

/* SEND_IMM: the immediate arrives; the payload is at offset 0 of the
 * receive's buffers (scattered over two of them), nothing after byte_len is
 * touched; wc.src is an address the receiver can answer. */
static void ud_send_imm_offset0(void)
{
	struct rcc_ctx *ctx;
	struct ud_side a, b;
	struct tbuf s = { 0 }, r = { 0 };
	struct rcc_ah *ah = NULL, *back = NULL;
	struct rcc_wc w;
	enum {
		LEN = 200,
		FIRST = 64
	};

	CHECK_OK(test_ctx_open(&ctx));
	CHECK_OK(side_open(&a, ctx, 8, 0));
	CHECK_OK(side_open(&b, ctx, 8, 0));
	CHECK_OK(tbuf_alloc(&s, ctx, 4096, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&r, ctx, 4096, RCC_ACCESS_LOCAL_WRITE));
	memset(r.p, 0xee, r.len);
	fill_pattern(s.p, LEN, 77);
	struct rcc_sge rs[2] = { tbuf_sge(&r, 0, FIRST), tbuf_sge(&r, 1024, 1024) };
	struct rcc_recv_wr rw = { .wr_id = 42, .sg_list = rs, .num_sge = 2 };
	CHECK_OK(rcc_post_recv_list(b.ep, &rw, 1, NULL));
	CHECK_OK(ah_to(&a, &b, &ah));
	struct rcc_sge ss = tbuf_sge(&s, 0, LEN);
	CHECK_OK(rcc_post_send_to_imm(a.ep, ah, &ss, 1, 0xfeedbeef, 7, RCC_SEND_SIGNALED));
	EXPECT_STATUS(a.cq, 7, RCC_WC_SUCCESS);
	CHECK_OK(wait_one(b.cq, &w, TEST_TIMEOUT_MS));
	CHECK_WC(w, RCC_WC_SUCCESS);
	CHECK_EQ(w.wr_id, 42);
	CHECK_EQ(w.opcode, RCC_WC_RECV);
	CHECK_EQ(w.byte_len, LEN);
	CHECK(w.wc_flags & RCC_WC_WITH_IMM);
	CHECK_EQ(w.imm_data, 0xfeedbeef);
	CHECK(w.ep == b.ep);
	/* offset 0: the first FIRST bytes in the first buffer, the rest at the
	 * start of the second, and nothing beyond */
	uint8_t want[LEN];
	fill_pattern(want, LEN, 77);
	CHECK(memcmp(r.p, want, FIRST) == 0);
	CHECK(memcmp(r.p + 1024, want + FIRST, LEN - FIRST) == 0);
	for (size_t i = 1024 + LEN - FIRST; i < 2048; i++)
		CHECK_MSG(r.p[i] == 0xee, "byte %zu after the payload was written", i);
	for (size_t i = FIRST; i < 1024; i++)
		CHECK_MSG(r.p[i] == 0xee, "byte %zu between the buffers was written", i);
	/* the source answers: a reply to wc.src reaches a */
	char text[160];
	CHECK(rcc_ud_addr_str(&w.src, text, sizeof(text)) > 0);
	CHECK_OK(rcc_ah_create(b.ep, &w.src, &back));
	struct rcc_sge r2 = tbuf_sge(&r, 2048, 1024);
	CHECK_OK(rcc_post_recv(a.ep, &r2, 1, 43));
	CHECK_OK(rcc_post_send_to(b.ep, back, &ss, 1, 8, RCC_SEND_SIGNALED));
	EXPECT_STATUS(b.cq, 8, RCC_WC_SUCCESS);
	CHECK_OK(wait_one(a.cq, &w, TEST_TIMEOUT_MS));
	CHECK_WC(w, RCC_WC_SUCCESS);
	CHECK_EQ(w.wr_id, 43);
	CHECK_EQ(w.byte_len, LEN);
	CHECK_EQ(w.wc_flags & RCC_WC_WITH_IMM, 0);
	CHECK_EQ(check_pattern(r.p + 2048, LEN, 77), -1);
	CHECK_OK(rcc_ah_destroy(back));
	CHECK_OK(rcc_ah_destroy(ah));
	tbuf_free(&s);
	tbuf_free(&r);
	side_close(&a);
	side_close(&b);
	CHECK_OK(rcc_ctx_close(ctx));
}

/* A datagram one byte over rcc_ud_max_msg() is refused at post (-EMSGSIZE,
 * with words) and nothing leaves; one of exactly the maximum arrives. */
static void ud_too_long_refused(void)
{
	struct rcc_ctx *ctx;
	struct ud_side a, b;
	struct tbuf s = { 0 }, r = { 0 };
	struct rcc_ah *ah = NULL;
	struct rcc_wc w;

	CHECK_OK(test_ctx_open(&ctx));
	CHECK_OK(side_open(&a, ctx, 4, 0));
	CHECK_OK(side_open(&b, ctx, 4, 0));
	uint32_t max = rcc_ud_max_msg(a.ep);
	CHECK(max >= 256 && max <= 4096);
	CHECK_OK(tbuf_alloc(&s, ctx, 2 * 8192, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&r, ctx, 8192, RCC_ACCESS_LOCAL_WRITE));
	fill_pattern(s.p, max + 1, 5);
	struct rcc_sge rs = tbuf_sge(&r, 0, 8192);
	CHECK_OK(rcc_post_recv(b.ep, &rs, 1, 1));
	CHECK_OK(ah_to(&a, &b, &ah));
	struct rcc_sge big = tbuf_sge(&s, 0, max + 1);
	CHECK_EQ(rcc_post_send_to(a.ep, ah, &big, 1, 1, RCC_SEND_SIGNALED), -EMSGSIZE);
	CHECK_MSG(strstr(rcc_last_error(), "rcc_ud_max_msg"), "last error: '%s'", rcc_last_error());
	/* split over two elements it is the same datagram */
	struct rcc_sge two[2] = { tbuf_sge(&s, 0, max), tbuf_sge(&s, 8192, 1) };
	CHECK_EQ(rcc_post_send_to(a.ep, ah, two, 2, 2, RCC_SEND_SIGNALED), -EMSGSIZE);
	CHECK(stays_empty(a.cq));
	CHECK(stays_empty(b.cq)); /* nothing left */
	struct rcc_sge exact = tbuf_sge(&s, 0, max);
	CHECK_OK(rcc_post_send_to(a.ep, ah, &exact, 1, 3, RCC_SEND_SIGNALED));
	EXPECT_STATUS(a.cq, 3, RCC_WC_SUCCESS);
	CHECK_OK(wait_one(b.cq, &w, TEST_TIMEOUT_MS));
	CHECK_WC(w, RCC_WC_SUCCESS);
	CHECK_EQ(w.byte_len, max);
	CHECK_EQ(check_pattern(r.p, max, 5), -1);
	CHECK_EQ(rcc_ep_state(a.ep), RCC_EP_CONNECTED);
	CHECK_OK(rcc_ah_destroy(ah));
	tbuf_free(&s);
	tbuf_free(&r);
	side_close(&a);
	side_close(&b);
	CHECK_OK(rcc_ctx_close(ctx));
}

/* What a datagram endpoint cannot do, each refused with a reason. */
static void ud_refusals(void)
{
	struct rcc_ctx *ctx;
	struct ud_side a, b;
	struct tbuf s = { 0 };
	struct rcc_ah *ah = NULL;
	struct rcc_ep *ep = NULL;
	char addr[128];

	CHECK_OK(test_ctx_open(&ctx));
	CHECK_OK(side_open(&a, ctx, 4, 0));
	CHECK_OK(side_open(&b, ctx, 4, 0));
	CHECK_OK(tbuf_alloc(&s, ctx, 64, ALL_ACCESS));
	CHECK_OK(ah_to(&a, &b, &ah));
	struct rcc_sge ss = tbuf_sge(&s, 0, 8);
	uint64_t tgt = (uint64_t)(uintptr_t)s.p;
	static const struct {
		enum rcc_wr_opcode op;
		const char *word;
	} bad[] = {
		{ RCC_WR_WRITE, "WRITE" }, { RCC_WR_WRITE_IMM, "WRITE_IMM" },
		{ RCC_WR_READ, "READ" },   { RCC_WR_CAS, "CAS" },
		{ RCC_WR_FADD, "FADD" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct rcc_send_wr wr = { .wr_id = i,
					  .sg_list = &ss,
					  .num_sge = 1,
					  .opcode = bad[i].op,
					  .flags = RCC_SEND_SIGNALED,
					  .remote_addr = tgt,
					  .rkey = rcc_mr_rkey(s.mr),
					  .ah = ah };
		CHECK_EQ(rcc_post_send_list(a.ep, &wr, 1, NULL), -EINVAL);
		CHECK_MSG(strstr(rcc_last_error(), bad[i].word) &&
				  strstr(rcc_last_error(), "RCC_QP_UD"),
			  "%s: last error '%s'", bad[i].word, rcc_last_error());
	}
	/* a datagram needs somewhere to go */
	CHECK_EQ(rcc_post_send(a.ep, &ss, 1, 9, RCC_SEND_SIGNALED), -EINVAL);
	CHECK_MSG(strstr(rcc_last_error(), "address handle"), "last error '%s'", rcc_last_error());
	CHECK(stays_empty(a.cq));
	CHECK_EQ(rcc_ep_state(a.ep), RCC_EP_CONNECTED);

	/* UD is never connected, and rcc_ud_create() makes nothing else */
	struct rcc_ep_attr at = { .send_cq = a.cq, .qp_type = RCC_QP_UD };
	snprintf(addr, sizeof(addr), "%s:1", test_addr());
	CHECK_EQ(rcc_connect(ctx, addr, &at, TEST_TIMEOUT_MS, &ep), -EINVAL);
	CHECK_MSG(strstr(rcc_last_error(), "rcc_ud_create"), "last error '%s'", rcc_last_error());
	CHECK(ep == NULL);
	at.qp_type = RCC_QP_RC;
	CHECK_EQ(rcc_ud_create(ctx, &at, &ep), -EINVAL);
	CHECK_MSG(strstr(rcc_last_error(), "RCC_QP_UD"), "last error '%s'", rcc_last_error());
	at.qp_type = RCC_QP_UD;
	at.qkey = 0x80000001u;
	CHECK_EQ(rcc_ud_create(ctx, &at, &ep), -EINVAL);
	CHECK_MSG(strstr(rcc_last_error(), "bit 31"), "last error '%s'", rcc_last_error());
	at.qkey = 0;
	at.private_data = "x";
	at.private_data_len = 1;
	CHECK_EQ(rcc_ud_create(ctx, &at, &ep), -EINVAL);
	at.private_data = NULL;
	at.private_data_len = 0;
	/* and a connected endpoint has no datagram address */
	struct rcc_ud_addr ua;
	CHECK_EQ(rcc_ud_addr(NULL, &ua), -EINVAL);
	CHECK_EQ(rcc_ud_max_msg(NULL), 0);
	CHECK_OK(rcc_ah_destroy(ah));
	tbuf_free(&s);
	side_close(&a);
	side_close(&b);
	CHECK_OK(rcc_ctx_close(ctx));
}

/* An address is checked, never trusted: garbage, a damaged copy, another
 * transport's, another version's: all -EINVAL with words, no handle. */
static void ud_bad_address_refused(void)
{
	struct rcc_ctx *ctx;
	struct ud_side a;
	struct rcc_ud_addr good, bad;
	struct rcci_ud_addr d;
	struct rcc_ah *ah = NULL;
	char text[160];

	CHECK_OK(test_ctx_open(&ctx));
	CHECK_OK(side_open(&a, ctx, 4, 0));
	CHECK_OK(rcc_ud_addr(a.ep, &good));
	CHECK(rcc_ud_addr_str(&good, text, sizeof(text)) > 0);
	CHECK_OK(rcc_ah_create(a.ep, &good, &ah)); /* itself: a fine address */
	CHECK_OK(rcc_ah_destroy(ah));
	ah = NULL;

	memset(&bad, 0, sizeof(bad));
	CHECK_EQ(rcc_ah_create(a.ep, &bad, &ah), -EINVAL);
	CHECK_MSG(strstr(rcc_last_error(), "not an rcc datagram address"), "last error '%s'",
		  rcc_last_error());
	uint64_t seed = 12345;
	for (int k = 0; k < 1000; k++) {
		for (size_t i = 0; i < sizeof(bad.bytes); i++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			bad.bytes[i] = (uint8_t)(seed >> 56);
		}
		CHECK_EQ(rcc_ah_create(a.ep, &bad, &ah), -EINVAL);
	}
	/* every single flipped bit of a good address is caught */
	for (size_t bit = 0; bit < 8 * sizeof(good.bytes); bit++) {
		bad = good;
		bad.bytes[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		CHECK_MSG(rcc_ah_create(a.ep, &bad, &ah) == -EINVAL, "bit %zu flipped: accepted",
			  bit);
		CHECK_EQ(rcc_ud_addr_str(&bad, text, sizeof(text)), -EINVAL);
		CHECK_EQ(text[0], '\0');
	}
	/* a well-formed address of the other transport */
	CHECK_OK(rcci_ud_addr_decode(&good, &d, NULL));
	bool verbs = d.kind == RCCI_UD_VERBS;
	memset(&d, 0, sizeof(d));
	d.kind = verbs ? RCCI_UD_TCP : RCCI_UD_VERBS;
	d.qkey = RCC_UD_DEFAULT_QKEY;
	d.qpn = 0x1234;
	d.gid[10] = d.gid[11] = 0xff;
	d.gid[12] = 10;
	d.gid[15] = 1;
	d.port = 4791;
	d.global = true;
	rcci_ud_addr_encode(&d, &bad);
	CHECK(rcc_ud_addr_str(&bad, text, sizeof(text)) > 0); /* well-formed */
	CHECK_EQ(rcc_ah_create(a.ep, &bad, &ah), -EINVAL);
	CHECK_MSG(strstr(rcc_last_error(),
			 verbs ? "a tcp datagram address" : "a verbs datagram address"),
		  "last error '%s'", rcc_last_error());
	/* another version */
	bad = good;
	bad.bytes[2] = 2;
	CHECK_EQ(rcc_ah_create(a.ep, &bad, &ah), -EINVAL);
	CHECK(ah == NULL);
	CHECK_EQ(rcc_ah_create(NULL, &good, &ah), -EINVAL);
	CHECK_EQ(rcc_ah_destroy(NULL), -EINVAL);
	side_close(&a);
	CHECK_OK(rcc_ctx_close(ctx));
}

/* A datagram whose Q_Key is not the receiver's is dropped -- no completion
 * within a bounded wait -- and the next one, with the right Q_Key, takes
 * the receive. */
static void ud_wrong_qkey_dropped(void)
{
	struct rcc_ctx *ctx;
	struct ud_side a, b;
	struct tbuf s = { 0 }, r = { 0 };
	struct rcc_ud_addr ba, forged;
	struct rcci_ud_addr d;
	struct rcc_ah *wrong = NULL, *right = NULL;
	struct rcc_wc w;

	CHECK_OK(test_ctx_open(&ctx));
	CHECK_OK(side_open(&a, ctx, 4, 0));
	CHECK_OK(side_open(&b, ctx, 4, 0x1234567));
	CHECK_OK(tbuf_alloc(&s, ctx, 256, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&r, ctx, 256, RCC_ACCESS_LOCAL_WRITE));
	fill_pattern(s.p, 64, 1);
	fill_pattern(s.p + 64, 64, 2);
	CHECK_OK(rcc_ud_addr(b.ep, &ba));
	CHECK_OK(rcci_ud_addr_decode(&ba, &d, NULL));
	CHECK_EQ(d.qkey, 0x1234567);
	d.qkey = 0x1234568;
	rcci_ud_addr_encode(&d, &forged);
	CHECK_OK(rcc_ah_create(a.ep, &forged, &wrong));
	CHECK_OK(rcc_ah_create(a.ep, &ba, &right));
	struct rcc_sge rs = tbuf_sge(&r, 0, 256);
	CHECK_OK(rcc_post_recv(b.ep, &rs, 1, 1));
	struct rcc_sge s1 = tbuf_sge(&s, 0, 64), s2 = tbuf_sge(&s, 64, 64);
	CHECK_OK(rcc_post_send_to(a.ep, wrong, &s1, 1, 1, RCC_SEND_SIGNALED));
	EXPECT_STATUS(a.cq, 1, RCC_WC_SUCCESS); /* it left: UD says no more */
	CHECK(stays_empty(b.cq));
	CHECK_OK(rcc_post_send_to(a.ep, right, &s2, 1, 2, RCC_SEND_SIGNALED));
	EXPECT_STATUS(a.cq, 2, RCC_WC_SUCCESS);
	CHECK_OK(wait_one(b.cq, &w, TEST_TIMEOUT_MS));
	CHECK_WC(w, RCC_WC_SUCCESS);
	CHECK_EQ(w.wr_id, 1);
	CHECK_EQ(w.byte_len, 64);
	CHECK_EQ(check_pattern(r.p, 64, 2), -1); /* the second datagram, not the first */
	CHECK(stays_empty(b.cq));
	CHECK_OK(rcc_ah_destroy(wrong));
	CHECK_OK(rcc_ah_destroy(right));
	tbuf_free(&s);
	tbuf_free(&r);
	side_close(&a);
	side_close(&b);
	CHECK_OK(rcc_ctx_close(ctx));
}

/* A datagram one byte longer than the receive it meets is not delivered:
 * that receive completes in error, the endpoint leaves service, the next
 * receive is flushed and posts fail (rules U1, U3; what Soft-RoCE does, with
 * its own status); one that fits exactly had been delivered before. */
static void ud_longer_than_receive_fails(void)
{
	struct rcc_ctx *ctx;
	struct ud_side a, b;
	struct tbuf s = { 0 }, r = { 0 };
	struct rcc_ah *ah = NULL;
	struct rcc_wc w;

	CHECK_OK(test_ctx_open(&ctx));
	CHECK_OK(side_open(&a, ctx, 4, 0));
	CHECK_OK(side_open(&b, ctx, 4, 0));
	CHECK_OK(tbuf_alloc(&s, ctx, 512, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&r, ctx, 512, RCC_ACCESS_LOCAL_WRITE));
	fill_pattern(s.p, 101, 3);
	CHECK_OK(ah_to(&a, &b, &ah));
	struct rcc_sge r0 = tbuf_sge(&r, 0, 100), r1 = tbuf_sge(&r, 128, 100),
		       r2 = tbuf_sge(&r, 256, 100);
	CHECK_OK(rcc_post_recv(b.ep, &r0, 1, 8));
	struct rcc_sge fits = tbuf_sge(&s, 0, 100), over = tbuf_sge(&s, 0, 101);
	CHECK_OK(rcc_post_send_to(a.ep, ah, &fits, 1, 1, RCC_SEND_SIGNALED));
	CHECK_OK(wait_one(b.cq, &w, TEST_TIMEOUT_MS));
	CHECK_WC(w, RCC_WC_SUCCESS);
	CHECK_EQ(w.wr_id, 8);
	CHECK_EQ(w.byte_len, 100);
	CHECK_EQ(check_pattern(r.p, 100, 3), -1);
	CHECK_OK(rcc_post_recv(b.ep, &r1, 1, 9));
	CHECK_OK(rcc_post_recv(b.ep, &r2, 1, 10));
	CHECK_OK(rcc_post_send_to(a.ep, ah, &over, 1, 2, RCC_SEND_SIGNALED));
	CHECK_OK(wait_one(b.cq, &w, TEST_TIMEOUT_MS));
	CHECK_EQ(w.wr_id, 9);
	CHECK_MSG(w.status == RCC_WC_LOC_LEN_ERR || w.status == RCC_WC_LOC_QP_OP_ERR,
		  "the receive completed '%s'", rcc_wc_status_str(w.status));
	CHECK_EQ(rcc_ep_state(b.ep), RCC_EP_ERROR);
	EXPECT_STATUS(b.cq, 10, RCC_WC_WR_FLUSH_ERR);
	CHECK_EQ(rcc_post_recv(b.ep, &r1, 1, 11), -ENOTCONN);
	CHECK_EQ(rcc_ep_state(a.ep), RCC_EP_CONNECTED); /* the sender knows nothing of it */
	CHECK_OK(rcc_ah_destroy(ah));
	tbuf_free(&s);
	tbuf_free(&r);
	side_close(&a);
	side_close(&b);
	CHECK_OK(rcc_ctx_close(ctx));
}

/* Lifetimes: the context stays open while an address handle exists;
 * disconnect flushes the posted receives (their wr_ids, in order) and
 * later posts fail; the path and the limits are reported. */
static void ud_lifecycle(void)
{
	struct rcc_ctx *ctx;
	struct ud_side a;
	struct tbuf r = { 0 };
	struct rcc_ah *ah = NULL;
	struct rcc_ud_addr self;
	struct rcc_wc w;

	CHECK_OK(test_ctx_open(&ctx));
	CHECK_OK(side_open(&a, ctx, 4, 0));
	CHECK_EQ(rcc_ep_state(a.ep), RCC_EP_CONNECTED);
	CHECK(strcmp(rcc_ep_path(a.ep), test_on_verbs() ? "verbs" : "udp") == 0);
	CHECK_EQ(strlen(rcc_ep_peer(a.ep)), 0);
	CHECK_OK(rcc_ud_addr(a.ep, &self));
	CHECK_OK(rcc_ah_create(a.ep, &self, &ah));
	CHECK_OK(tbuf_alloc(&r, ctx, 256, RCC_ACCESS_LOCAL_WRITE));
	for (int i = 0; i < 3; i++) {
		struct rcc_sge rs = tbuf_sge(&r, (size_t)i * 64, 64);
		CHECK_OK(rcc_post_recv(a.ep, &rs, 1, 20 + (uint64_t)i));
	}
	struct rcc_sge rs = tbuf_sge(&r, 192, 64);
	CHECK_OK(rcc_post_recv(a.ep, &rs, 1, 23));
	CHECK_EQ(rcc_post_recv(a.ep, &rs, 1, 24), -ENOMEM); /* rq_depth 4 */
	CHECK_OK(rcc_ep_disconnect(a.ep));
	CHECK_EQ(rcc_ep_state(a.ep), RCC_EP_DISCONNECTED);
	for (uint64_t id = 20; id < 24; id++) {
		CHECK_OK(wait_one(a.cq, &w, TEST_TIMEOUT_MS));
		CHECK_EQ(w.wr_id, id);
		CHECK_WC(w, RCC_WC_WR_FLUSH_ERR);
	}
	CHECK_EQ(rcc_post_recv(a.ep, &rs, 1, 25), -ENOTCONN);
	CHECK_EQ(rcc_post_send_to(a.ep, ah, &rs, 1, 26, RCC_SEND_SIGNALED), -ENOTCONN);
	CHECK_OK(rcc_ep_disconnect(a.ep)); /* again: nothing more */
	CHECK_EQ(rcc_cq_poll(a.cq, &w, 1), 0);
	side_close(&a);
	CHECK_EQ(rcc_ctx_close(ctx), -EBUSY); /* the handle is the context's */
	CHECK_OK(rcc_ah_destroy(ah));
	tbuf_free(&r);
	CHECK_OK(rcc_ctx_close(ctx));
}

/* ------------------------------------------------- the address exchange */

struct answer_job {
	struct rcc_listener *lst;
	struct rcc_ep *ep;
	struct rcc_ud_addr peer;
	int rc;
};

static void *answer_thread(void *arg)
{
	struct answer_job *j = arg;
	j->rc = rcc_ud_answer(j->lst, j->ep, TEST_TIMEOUT_MS, &j->peer);
	return NULL;
}

/* A client learns the server's address and the server the client's, with
 * nothing left connected; an RC client and one with a garbage address that
 * come first are turned away (with words) and do not stop the answer; a
 * datagram each way then proves both addresses. */
static void ud_resolve_answer(void)
{
	struct rcc_ctx *ctx;
	struct ud_side srv, cli;
	struct rcc_listener *lst;
	struct answer_job job = { 0 };
	struct rcc_ud_addr peer;
	struct rcc_ah *to_srv = NULL, *to_cli = NULL;
	struct tbuf b = { 0 };
	struct rcc_wc w;
	pthread_t th;
	char addr[128];

	CHECK_OK(test_ctx_open(&ctx));
	CHECK_OK(side_open(&srv, ctx, 4, 0));
	CHECK_OK(side_open(&cli, ctx, 4, 0));
	snprintf(addr, sizeof(addr), "%s:0", test_addr());
	CHECK_OK(rcc_listen(ctx, addr, 0, &lst));
	snprintf(addr, sizeof(addr), "%s:%d", test_addr(), rcc_listener_port(lst));
	job.lst = lst;
	job.ep = srv.ep;
	CHECK_OK(-pthread_create(&th, NULL, answer_thread, &job));

	/* an RC client: refused, told why */
	struct rcc_ep *rc_ep = NULL;
	struct rcc_ep_attr ra = { .send_cq = cli.cq };
	uint8_t why[RCC_REJECT_PRIVATE_DATA_MAX];
	size_t why_len = 0;
	int st = rcc_connect_ex(ctx, addr, &ra, TEST_TIMEOUT_MS, &rc_ep, why, &why_len);
	CHECK_EQ(st, -ECONNABORTED);
	CHECK(why_len > 0 && memmem(why, why_len, "RCC_QP_UD", 9));
	/* a client whose private data looks like an address but is not one */
	uint8_t junk[RCC_UD_ADDR_SIZE];
	memset(junk, 'R', sizeof(junk));
	ra.private_data = junk;
	ra.private_data_len = sizeof(junk);
	CHECK_EQ(rcc_connect(ctx, addr, &ra, TEST_TIMEOUT_MS, &rc_ep), -ECONNABORTED);
	CHECK(rc_ep == NULL);

	CHECK_OK(rcc_ud_resolve(cli.ep, addr, TEST_TIMEOUT_MS, &peer));
	pthread_join(th, NULL);
	CHECK_OK(job.rc);

	/* both addresses work: one datagram each way */
	CHECK_OK(tbuf_alloc(&b, ctx, 1024, RCC_ACCESS_LOCAL_WRITE));
	fill_pattern(b.p, 100, 8);
	fill_pattern(b.p + 128, 100, 9);
	struct rcc_sge r1 = tbuf_sge(&b, 512, 256), r2 = tbuf_sge(&b, 768, 256);
	CHECK_OK(rcc_post_recv(srv.ep, &r1, 1, 1));
	CHECK_OK(rcc_post_recv(cli.ep, &r2, 1, 2));
	CHECK_OK(rcc_ah_create(cli.ep, &peer, &to_srv));
	CHECK_OK(rcc_ah_create(srv.ep, &job.peer, &to_cli));
	struct rcc_sge s1 = tbuf_sge(&b, 0, 100), s2 = tbuf_sge(&b, 128, 100);
	CHECK_OK(rcc_post_send_to(cli.ep, to_srv, &s1, 1, 3, 0));
	CHECK_OK(wait_one(srv.cq, &w, TEST_TIMEOUT_MS));
	CHECK_WC(w, RCC_WC_SUCCESS);
	CHECK_EQ(w.wr_id, 1);
	CHECK_EQ(check_pattern(b.p + 512, 100, 8), -1);
	CHECK_OK(rcc_post_send_to(srv.ep, to_cli, &s2, 1, 4, 0));
	CHECK_OK(wait_one(cli.cq, &w, TEST_TIMEOUT_MS));
	CHECK_WC(w, RCC_WC_SUCCESS);
	CHECK_EQ(w.wr_id, 2);
	CHECK_EQ(check_pattern(b.p + 768, 100, 9), -1);

	CHECK_OK(rcc_ah_destroy(to_srv));
	CHECK_OK(rcc_ah_destroy(to_cli));
	tbuf_free(&b);
	CHECK_OK(rcc_listener_close(lst));
	side_close(&srv);
	side_close(&cli);
	CHECK_OK(rcc_ctx_close(ctx));
}

struct reject_job {
	struct rcc_listener *lst;
	int rc;
};

static void *reject_thread(void *arg)
{
	struct reject_job *j = arg;
	struct rcc_conn_req *req;

	j->rc = rcc_get_request(j->lst, TEST_TIMEOUT_MS, &req);
	if (!j->rc)
		j->rc = rcc_reject_req(req, "no\nway", 6);
	return NULL;
}

/* A listener that is not an address exchange: rcc_ud_resolve() says so and
 * quotes the reject data, escaped. */
static void ud_resolve_not_ud_server(void)
{
	struct rcc_ctx *ctx;
	struct ud_side cli;
	struct rcc_listener *lst;
	struct reject_job job = { 0 };
	struct rcc_ud_addr peer;
	pthread_t th;
	char addr[128];

	CHECK_OK(test_ctx_open(&ctx));
	CHECK_OK(side_open(&cli, ctx, 4, 0));
	snprintf(addr, sizeof(addr), "%s:0", test_addr());
	CHECK_OK(rcc_listen(ctx, addr, 0, &lst));
	snprintf(addr, sizeof(addr), "%s:%d", test_addr(), rcc_listener_port(lst));
	job.lst = lst;
	CHECK_OK(-pthread_create(&th, NULL, reject_thread, &job));
	CHECK_EQ(rcc_ud_resolve(cli.ep, addr, TEST_TIMEOUT_MS, &peer), -ECONNABORTED);
	pthread_join(th, NULL);
	CHECK_OK(job.rc);
	CHECK_MSG(strstr(rcc_last_error(), "without a datagram address") &&
			  strstr(rcc_last_error(), "no\\x0away"),
		  "last error '%s'", rcc_last_error());
	CHECK_EQ(rcc_ud_resolve(NULL, addr, TEST_TIMEOUT_MS, &peer), -EINVAL);
	CHECK_OK(rcc_listener_close(lst));
	side_close(&cli);
	CHECK_OK(rcc_ctx_close(ctx));
}

struct accept_ud_job {
	struct rcc_listener *lst;
	struct rcc_cq *cq;
	int rc;
	char why[256];
};

static void *accept_ud_thread(void *arg)
{
	struct accept_ud_job *j = arg;
	struct rcc_conn_req *req;
	struct rcc_ep *ep = NULL;
	struct rcc_ep_attr a = { .send_cq = j->cq, .qp_type = RCC_QP_UD };

	j->rc = rcc_get_request(j->lst, TEST_TIMEOUT_MS, &req);
	if (!j->rc)
		j->rc = rcc_accept_req(req, &a, &ep);
	snprintf(j->why, sizeof(j->why), "%s", rcc_last_error());
	if (ep)
		rcc_ep_close(ep);
	return NULL;
}

/* An accept with RCC_QP_UD attributes is refused with words, and the client
 * is turned away rather than left waiting. */
static void ud_accept_refused(void)
{
	struct rcc_ctx *ctx;
	struct rcc_cq *cq;
	struct rcc_listener *lst;
	struct rcc_ep *ep = NULL;
	struct accept_ud_job job = { 0 };
	pthread_t th;
	char addr[128];

	CHECK_OK(test_ctx_open(&ctx));
	CHECK_OK(rcc_cq_create(ctx, NULL, &cq));
	snprintf(addr, sizeof(addr), "%s:0", test_addr());
	CHECK_OK(rcc_listen(ctx, addr, 0, &lst));
	snprintf(addr, sizeof(addr), "%s:%d", test_addr(), rcc_listener_port(lst));
	job.lst = lst;
	job.cq = cq;
	CHECK_OK(-pthread_create(&th, NULL, accept_ud_thread, &job));
	struct rcc_ep_attr a = { .send_cq = cq };
	int rc = rcc_connect(ctx, addr, &a, TEST_TIMEOUT_MS, &ep);
	pthread_join(th, NULL);
	CHECK_EQ(job.rc, -EINVAL);
	CHECK_MSG(strstr(job.why, "rcc_ud_create"), "last error '%s'", job.why);
	CHECK(rc < 0 && ep == NULL);
	CHECK_OK(rcc_listener_close(lst));
	CHECK_OK(rcc_cq_destroy(cq));
	CHECK_OK(rcc_ctx_close(ctx));
}

/* ------------------------------------------------ datagram SRQs */

static int dgram_srq(struct rcc_ctx *ctx, uint32_t max_wr, struct rcc_srq **srq)
{
	struct rcc_srq_attr sa = { .max_wr = max_wr, .max_sge = 2, .for_datagrams = true };
	int rc = rcc_srq_create(ctx, &sa, srq);
	if (rc)
		fprintf(stderr, "rcc_srq_create (for_datagrams): %s (%s)\n", rcc_strerror(rc),
			rcc_last_error());
	return rc;
}

/* A UD endpoint on srq, its receives and sends completing on cq. */
static int srq_ud_ep(struct rcc_ctx *ctx, struct rcc_cq *cq, struct rcc_srq *srq,
		     struct rcc_ep **ep)
{
	struct rcc_ep_attr a = { .send_cq = cq, .sq_depth = 64, .qp_type = RCC_QP_UD, .srq = srq };
	int rc = rcc_ud_create(ctx, &a, ep);
	if (rc)
		fprintf(stderr, "rcc_ud_create with an SRQ: %s (%s)\n", rcc_strerror(rc),
			rcc_last_error());
	return rc;
}

enum {
	SRQ_SERVERS = 4,
	SRQ_CQS = 2,
};

/* Four server endpoints draw their receives from one datagram SRQ (two
 * server CQs, so completions free the SRQ's slots out of posting order),
 * sixteen clients ping them (client c the server c % 4): every receive
 * names the endpoint the ping was sent to and the client it came from, the
 * payload is at offset 0 with byte_len exact and nothing after it written,
 * and every reply goes back through the receiving endpoint to wc.src. */
static void ud_srq_4_servers_16_clients(void)
{
	struct rcc_ctx *sctx, *cctx;
	struct rcc_cq *scq[SRQ_CQS];
	struct rcc_ep *srv[SRQ_SERVERS];
	struct ud_clients cl;
	struct tbuf sbuf = { 0 };
	struct rcc_srq *srq;

	CHECK_OK(test_ctx_open(&sctx));
	CHECK_OK(test_ctx_open(&cctx));
	CHECK_OK(dgram_srq(sctx, SRV_RECVS, &srq));
	for (int q = 0; q < SRQ_CQS; q++) {
		struct rcc_cq_attr ca = { .depth = 4 * SRV_RECVS };
		CHECK_OK(rcc_cq_create(sctx, &ca, &scq[q]));
	}
	for (int k = 0; k < SRQ_SERVERS; k++) {
		CHECK_OK(srq_ud_ep(sctx, scq[k % SRQ_CQS], srq, &srv[k]));
		/* the endpoint has no receive queue of its own */
		struct rcc_sge none = { 0 };
		CHECK_EQ(rcc_post_recv(srv[k], &none, 0, 1), -EINVAL);
		CHECK_MSG(strstr(rcc_last_error(), "rcc_srq_post_recv"), "last error '%s'",
			  rcc_last_error());
	}
	CHECK_EQ(rcc_srq_destroy(srq), -EBUSY); /* endpoints use it */
	clients_open(&cl, cctx, srv, SRQ_SERVERS);
	CHECK(!test_failed);
	CHECK_OK(tbuf_alloc(&sbuf, sctx, (size_t)2 * SRV_RECVS * SLOT, RCC_ACCESS_LOCAL_WRITE));
	memset(sbuf.p, 0xee, (size_t)SRV_RECVS * SLOT);
	for (int i = 0; i < SRV_RECVS; i++) {
		struct rcc_sge r = tbuf_sge(&sbuf, (size_t)i * SLOT, cl.max);
		CHECK_OK(rcc_srq_post_recv(srq, &r, 1, (uint64_t)i));
	}

	pingpong_rounds(&cl, &sbuf, scq, SRQ_CQS, srq);
	CHECK(!test_failed);
	/* every receive is posted again: the SRQ is full, whatever the device
	 * rounded max_wr up to */
	struct rcc_sge extra = tbuf_sge(&sbuf, 0, cl.max);
	CHECK_EQ(rcc_srq_post_recv(srq, &extra, 1, 999), -ENOMEM);
	clients_close(&cl);
	/* the SRQ's receives outlive its endpoints; it goes once they are closed */
	for (int k = 0; k < SRQ_SERVERS; k++) {
		CHECK(strcmp(rcc_ep_path(srv[k]), test_on_verbs() ? "verbs" : "udp") == 0);
		CHECK_OK(rcc_ep_close(srv[k]));
	}
	CHECK_OK(rcc_srq_destroy(srq));
	for (int q = 0; q < SRQ_CQS; q++)
		CHECK_OK(rcc_cq_destroy(scq[q]));
	tbuf_free(&sbuf);
	CHECK_OK(rcc_ctx_close(cctx));
	CHECK_OK(rcc_ctx_close(sctx));
}

/* An SRQ serves one kind of endpoint: a UD endpoint is refused a default
 * (RC/UC) SRQ, an RC or UC endpoint a datagram SRQ, each with words; a UD
 * endpoint on an SRQ takes no initial receives. */
static void ud_srq_kind_refused(void)
{
	struct rcc_ctx *ctx;
	struct rcc_cq *cq;
	struct rcc_srq *rc_srq, *dg_srq;
	struct rcc_ep *ep = NULL;
	char addr[128];

	CHECK_OK(test_ctx_open(&ctx));
	CHECK_OK(rcc_cq_create(ctx, NULL, &cq));
	CHECK_OK(rcc_srq_create(ctx, NULL, &rc_srq));
	CHECK_OK(dgram_srq(ctx, 8, &dg_srq));
	struct rcc_ep_attr at = { .send_cq = cq, .qp_type = RCC_QP_UD, .srq = rc_srq };
	CHECK_EQ(rcc_ud_create(ctx, &at, &ep), -EINVAL);
	CHECK_MSG(strstr(rcc_last_error(), "for_datagrams"), "last error '%s'", rcc_last_error());
	CHECK(ep == NULL);
	/* a listener, so that only the SRQ can be the reason (nobody accepts:
	 * a connect that got past the check would time out) */
	struct rcc_listener *lst;
	snprintf(addr, sizeof(addr), "%s:0", test_addr());
	CHECK_OK(rcc_listen(ctx, addr, 0, &lst));
	snprintf(addr, sizeof(addr), "%s:%d", test_addr(), rcc_listener_port(lst));
	enum rcc_qp_type kinds[] = { RCC_QP_RC, RCC_QP_UC };
	for (size_t i = 0; i < 2; i++) {
		struct rcc_ep_attr ra = { .send_cq = cq, .qp_type = kinds[i], .srq = dg_srq };
		CHECK_EQ(rcc_connect(ctx, addr, &ra, ABSENT_MS, &ep), -EINVAL);
		CHECK_MSG(strstr(rcc_last_error(), "for_datagrams") &&
				  strstr(rcc_last_error(), "RCC_QP_UD"),
			  "last error '%s'", rcc_last_error());
		CHECK(ep == NULL);
	}
	CHECK_OK(rcc_listener_close(lst));
	struct tbuf r = { 0 };
	CHECK_OK(tbuf_alloc(&r, ctx, 64, RCC_ACCESS_LOCAL_WRITE));
	struct rcc_sge rs = tbuf_sge(&r, 0, 64);
	struct rcc_recv_wr iw = { .wr_id = 1, .sg_list = &rs, .num_sge = 1 };
	at.srq = dg_srq;
	at.initial_recv = &iw;
	at.num_initial_recv = 1;
	CHECK_EQ(rcc_ud_create(ctx, &at, &ep), -EINVAL);
	CHECK(ep == NULL);
	/* nothing was attached: both go at once */
	CHECK_OK(rcc_srq_destroy(dg_srq));
	CHECK_OK(rcc_srq_destroy(rc_srq));
	tbuf_free(&r);
	CHECK_OK(rcc_cq_destroy(cq));
	CHECK_OK(rcc_ctx_close(ctx));
}

/* Two UD endpoints on one datagram SRQ of max_wr receives, one CQ for both,
 * and a sender in the same context with an address handle to each. */
struct srq_two {
	struct rcc_ctx *ctx;
	struct rcc_cq *cq;
	struct rcc_srq *srq;
	struct rcc_ep *ep[2];
	struct ud_side snd;
	struct rcc_ah *ah[2];
	struct tbuf s, r; /* send and receive buffers of len bytes each */
};

static void srq_two_open(struct srq_two *f, uint32_t max_wr, size_t len)
{
	struct rcc_cq_attr ca = { .depth = 64 };

	memset(f, 0, sizeof(*f));
	CHECK_OK(test_ctx_open(&f->ctx));
	CHECK_OK(rcc_cq_create(f->ctx, &ca, &f->cq));
	CHECK_OK(dgram_srq(f->ctx, max_wr, &f->srq));
	CHECK_OK(srq_ud_ep(f->ctx, f->cq, f->srq, &f->ep[0]));
	CHECK_OK(srq_ud_ep(f->ctx, f->cq, f->srq, &f->ep[1]));
	CHECK_OK(side_open(&f->snd, f->ctx, 8, 0));
	for (int k = 0; k < 2; k++) {
		struct rcc_ud_addr ua;
		CHECK_OK(rcc_ud_addr(f->ep[k], &ua));
		CHECK_OK(rcc_ah_create(f->snd.ep, &ua, &f->ah[k]));
	}
	CHECK_OK(tbuf_alloc(&f->s, f->ctx, len, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&f->r, f->ctx, len, RCC_ACCESS_LOCAL_WRITE));
}

static void srq_two_close(struct srq_two *f)
{
	for (int k = 0; k < 2; k++) {
		if (f->ah[k])
			CHECK_OK(rcc_ah_destroy(f->ah[k]));
	}
	side_close(&f->snd);
	for (int k = 0; k < 2; k++) {
		if (f->ep[k])
			CHECK_OK(rcc_ep_close(f->ep[k]));
	}
	if (f->srq)
		CHECK_OK(rcc_srq_destroy(f->srq));
	if (f->cq)
		CHECK_OK(rcc_cq_destroy(f->cq));
	tbuf_free(&f->s);
	tbuf_free(&f->r);
	if (f->ctx)
		CHECK_OK(rcc_ctx_close(f->ctx));
}

/* Send one datagram from a to ah and see its send complete. */
static void send_dgram(struct ud_side *a, struct rcc_ah *ah, struct rcc_sge *s, uint64_t id)
{
	CHECK_OK(rcc_post_send_to(a->ep, ah, s, 1, id, RCC_SEND_SIGNALED));
	EXPECT_STATUS(a->cq, id, RCC_WC_SUCCESS);
}

/* The receives of a datagram SRQ go oldest first across its endpoints; a
 * datagram dropped on arrival (wrong Q_Key) leaves the oldest receive for
 * the next one; with the SRQ empty a datagram is dropped (no RNR on UD) and
 * not delivered later; the limit event fires once the receives left fall
 * below the armed limit, and not before. */
static void ud_srq_fifo_drop_limit(void)
{
	enum {
		POSTED = 8,
		LIMIT = 3,
		QUIET_MS = 200
	};
	struct srq_two f;
	struct rcc_ah *wrong = NULL;
	struct rcc_ud_addr ua;
	struct rcci_ud_addr d;
	struct rcc_event ev;
	struct rcc_wc w;

	srq_two_open(&f, POSTED, 16 * 64);
	CHECK(!test_failed);
	CHECK_OK(rcc_ud_addr(f.ep[1], &ua));
	CHECK_OK(rcci_ud_addr_decode(&ua, &d, NULL));
	d.qkey ^= 1;
	rcci_ud_addr_encode(&d, &ua);
	CHECK_OK(rcc_ah_create(f.snd.ep, &ua, &wrong)); /* ep[1] with a wrong Q_Key */
	for (int k = 0; k < 16; k++)
		fill_pattern(f.s.p + k * 64, 40 + k, (uint64_t)k);

	/* empty SRQ: dropped, and not kept for a receive posted later */
	struct rcc_sge s0 = tbuf_sge(&f.s, 0, 40);
	send_dgram(&f.snd, f.ah[0], &s0, 1);
	CHECK(stays_empty(f.cq));
	for (int k = 0; k < POSTED; k++) {
		struct rcc_sge rs = tbuf_sge(&f.r, (size_t)k * 64, 64);
		CHECK_OK(rcc_srq_post_recv(f.srq, &rs, 1, (uint64_t)k));
	}
	CHECK(stays_empty(f.cq));
	CHECK_OK(rcc_srq_arm_limit(f.srq, LIMIT));

	/* dropped on ep[1]: receive 0 is still the oldest, and ep[0] gets it */
	struct rcc_sge s1 = tbuf_sge(&f.s, 64, 41);
	send_dgram(&f.snd, wrong, &s1, 2);
	CHECK(stays_empty(f.cq));
	/* then alternately on both: receives 0, 1, 2, ... in order */
	for (int k = 0; k < POSTED - LIMIT; k++) {
		struct rcc_sge sk = tbuf_sge(&f.s, (size_t)(2 + k) * 64, 42 + (uint32_t)k);
		send_dgram(&f.snd, f.ah[k % 2], &sk, 10 + (uint64_t)k);
		CHECK_OK(wait_one(f.cq, &w, TEST_TIMEOUT_MS));
		CHECK_WC(w, RCC_WC_SUCCESS);
		CHECK_EQ(w.opcode, RCC_WC_RECV);
		CHECK(w.ep == f.ep[k % 2]);
		CHECK_MSG(w.wr_id == (uint64_t)k, "datagram %d took receive %llu, not the oldest",
			  k, (unsigned long long)w.wr_id);
		CHECK_EQ(w.byte_len, 42 + (uint32_t)k);
		CHECK_EQ(check_pattern(f.r.p + (size_t)k * 64, 42 + (uint32_t)k, (uint64_t)(2 + k)),
			 -1);
	}
	/* POSTED - LIMIT taken: LIMIT left, not below the limit */
	CHECK_EQ(rcc_ctx_get_event(f.ctx, &ev, QUIET_MS), -ETIMEDOUT);
	struct rcc_sge sl = tbuf_sge(&f.s, 15 * 64, 55);
	send_dgram(&f.snd, f.ah[1], &sl, 30);
	CHECK_OK(wait_one(f.cq, &w, TEST_TIMEOUT_MS));
	CHECK_WC(w, RCC_WC_SUCCESS);
	CHECK_EQ(w.wr_id, POSTED - LIMIT);
	CHECK_EQ(w.byte_len, 55);
	CHECK_OK(rcc_ctx_get_event(f.ctx, &ev, TEST_TIMEOUT_MS));
	CHECK_EQ(ev.type, RCC_EVENT_SRQ_LIMIT);
	CHECK(ev.srq == f.srq);
	CHECK(ev.ep == NULL);
	CHECK_EQ(rcc_ep_state(f.ep[0]), RCC_EP_CONNECTED);
	CHECK_EQ(rcc_ep_state(f.ep[1]), RCC_EP_CONNECTED);

	CHECK_OK(rcc_ah_destroy(wrong));
	srq_two_close(&f);
}

/* A datagram longer than the SRQ receive it meets fails that receive and
 * its endpoint (rule U3); the SRQ's other receives stay posted, and the
 * other endpoint on the SRQ goes on receiving into them. */
static void ud_srq_longer_than_receive(void)
{
	struct srq_two f;
	struct rcc_wc w;

	srq_two_open(&f, 4, 512);
	CHECK(!test_failed);
	fill_pattern(f.s.p, 101, 6);
	for (int k = 0; k < 3; k++) {
		struct rcc_sge rs = tbuf_sge(&f.r, (size_t)k * 128, 100);
		CHECK_OK(rcc_srq_post_recv(f.srq, &rs, 1, 20 + (uint64_t)k));
	}
	struct rcc_sge over = tbuf_sge(&f.s, 0, 101), fits = tbuf_sge(&f.s, 0, 100);
	send_dgram(&f.snd, f.ah[0], &over, 1);
	CHECK_OK(wait_one(f.cq, &w, TEST_TIMEOUT_MS));
	CHECK(w.ep == f.ep[0]);
	CHECK_EQ(w.wr_id, 20);
	CHECK_MSG(w.status == RCC_WC_LOC_LEN_ERR || w.status == RCC_WC_LOC_QP_OP_ERR,
		  "the receive completed '%s'", rcc_wc_status_str(w.status));
	CHECK_EQ(rcc_ep_state(f.ep[0]), RCC_EP_ERROR);
	CHECK(stays_empty(f.cq)); /* the SRQ's other receives are not flushed */
	send_dgram(&f.snd, f.ah[1], &fits, 2);
	CHECK_OK(wait_one(f.cq, &w, TEST_TIMEOUT_MS));
	CHECK_WC(w, RCC_WC_SUCCESS);
	CHECK(w.ep == f.ep[1]);
	CHECK_EQ(w.wr_id, 21);
	CHECK_EQ(w.byte_len, 100);
	CHECK_EQ(check_pattern(f.r.p + 128, 100, 6), -1);
	CHECK_EQ(rcc_ep_state(f.ep[1]), RCC_EP_CONNECTED);
	srq_two_close(&f);
}

TEST_MAIN(TEST(ud_pingpong_16_clients), TEST(ud_send_imm_offset0), TEST(ud_too_long_refused),
	  TEST(ud_refusals), TEST(ud_bad_address_refused), TEST(ud_wrong_qkey_dropped),
	  TEST(ud_longer_than_receive_fails), TEST(ud_lifecycle), TEST(ud_resolve_answer),
	  TEST(ud_resolve_not_ud_server), TEST(ud_accept_refused),
	  TEST(ud_srq_4_servers_16_clients), TEST(ud_srq_kind_refused),
	  TEST(ud_srq_fifo_drop_limit), TEST(ud_srq_longer_than_receive))
