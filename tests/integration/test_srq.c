/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared receive queues on the test transport: many endpoints drawing from
 * one SRQ, the low-watermark event, RNR when it is empty, and the calls an
 * SRQ refuses.
 */
#include <pthread.h>
#include <stdlib.h>

#include "harness.h"
#include "pair.h"

/* One context: a listener whose accepted endpoints share srq, and n
 * clients connected to it (client i's server side is srv[i]). */
struct fixture {
	struct rcc_ctx *ctx;
	struct rcc_srq *srq;
	struct rcc_cq *cq_srv, *cq_cli;
	struct rcc_listener *lst;
	struct rcc_ep **srv, **cli;
	int n;
};

struct accept_job {
	struct fixture *f;
	int rc;
};

/* Accepts f->n clients; each says its index in its private data. */
static void *accept_all(void *arg)
{
	struct accept_job *j = arg;
	struct fixture *f = j->f;
	struct rcc_ep_attr a = { .send_cq = f->cq_srv, .srq = f->srq };

	for (int k = 0; k < f->n; k++) {
		struct rcc_conn_req *req;
		struct rcc_ep *ep;
		size_t len;
		j->rc = rcc_get_request(f->lst, TEST_TIMEOUT_MS, &req);
		if (j->rc)
			return NULL;
		const uint8_t *pd = rcc_conn_req_private_data(req, &len);
		int idx = pd && len == 1 ? pd[0] : -1;
		if (idx < 0 || idx >= f->n || f->srv[idx]) {
			rcc_reject_req(req, NULL, 0);
			j->rc = -EPROTO;
			return NULL;
		}
		j->rc = rcc_accept_req(req, &a, &ep);
		if (j->rc)
			return NULL;
		f->srv[idx] = ep;
	}
	return NULL;
}

static void fixture_close(struct fixture *f)
{
	for (int i = 0; i < f->n; i++) {
		if (f->cli && f->cli[i])
			rcc_ep_close(f->cli[i]);
		if (f->srv && f->srv[i])
			rcc_ep_close(f->srv[i]);
	}
	free(f->cli);
	free(f->srv);
	if (f->lst)
		rcc_listener_close(f->lst);
	int rc = f->srq ? rcc_srq_destroy(f->srq) : 0;
	if (rc)
		test_fail(__FILE__, __LINE__, "teardown: rcc_srq_destroy: %s", rcc_strerror(rc));
	if (f->cq_srv)
		rcc_cq_destroy(f->cq_srv);
	if (f->cq_cli)
		rcc_cq_destroy(f->cq_cli);
	rc = f->ctx ? rcc_ctx_close(f->ctx) : 0;
	if (rc)
		test_fail(__FILE__, __LINE__, "teardown: rcc_ctx_close: %s", rcc_strerror(rc));
	memset(f, 0, sizeof(*f));
}

/* 0 or a negative errno; cli_attr's CQ fields are filled in. */
static int fixture_open(struct fixture *f, int n, const struct rcc_srq_attr *sa, uint32_t cq_depth,
			const struct rcc_ep_attr *cli_attr)
{
	struct rcc_cq_attr ca = { .depth = cq_depth };
	struct accept_job job = { .f = f, .rc = 0 };
	struct rcc_ep_attr a = cli_attr ? *cli_attr : (struct rcc_ep_attr){ 0 };
	char addr[128];
	pthread_t th;
	int rc;

	memset(f, 0, sizeof(*f));
	f->n = n;
	f->srv = calloc((size_t)n, sizeof(*f->srv));
	f->cli = calloc((size_t)n, sizeof(*f->cli));
	if (!f->srv || !f->cli)
		return -ENOMEM;
	if ((rc = test_ctx_open(&f->ctx)) || (rc = rcc_srq_create(f->ctx, sa, &f->srq)) ||
	    (rc = rcc_cq_create(f->ctx, &ca, &f->cq_srv)) ||
	    (rc = rcc_cq_create(f->ctx, &ca, &f->cq_cli)))
		return rc;
	snprintf(addr, sizeof(addr), "%s:0", test_addr());
	rc = rcc_listen(f->ctx, addr, n, &f->lst);
	if (rc)
		return rc;
	rc = -pthread_create(&th, NULL, accept_all, &job);
	if (rc)
		return rc;
	snprintf(addr, sizeof(addr), "%s:%d", test_addr(), rcc_listener_port(f->lst));
	a.send_cq = a.recv_cq = f->cq_cli;
	for (int i = 0; i < n && !rc; i++) {
		uint8_t idx = (uint8_t)i;
		a.private_data = &idx;
		a.private_data_len = 1;
		rc = rcc_connect(f->ctx, addr, &a, TEST_TIMEOUT_MS, &f->cli[i]);
	}
	pthread_join(th, NULL);
	if (rc || job.rc)
		fprintf(stderr, "fixture_open: connect %s, accept %s\n", rcc_strerror(rc),
			rcc_strerror(job.rc));
	return rc ? rc : job.rc;
}

/* The index of ep among f->srv, or -1. */
static int srv_index(const struct fixture *f, const struct rcc_ep *ep)
{
	for (int i = 0; i < f->n; i++)
		if (f->srv[i] == ep)
			return i;
	return -1;
}

/* srq_shared_by_64's endpoints, buffers and what arrived where. */
enum {
	S_N = 64,
	S_PER = 3,          /* messages per client */
	S_SZ = 200,         /* message size */
	S_BUF = 256,        /* receive buffer size */
	S_WR = S_N * S_PER, /* receives posted over the case, one per message */
	S_HDR = 4,          /* client index, message number, two marker bytes */
	S_DEPTH = 2 * S_N,  /* the SRQ's max_wr: two rounds' worth */
	QUIET_MS = 200      /* how long an event that must not come is awaited */
};
struct shared64 {
	struct fixture f;
	struct tbuf s, r;
	int posted; /* receives posted so far: buffer k has wr_id 1000 + k */
	bool seen[S_N][S_PER], used[S_WR];
	struct rcc_wc wc[S_N];
};

/* Posts n more receives to the SRQ, each its own S_BUF-byte buffer. */
static int post_more(struct shared64 *t, int n)
{
	for (int k = 0; k < n; k++) {
		struct rcc_sge rs = tbuf_sge(&t->r, (size_t)t->posted * S_BUF, S_BUF);
		int rc = rcc_srq_post_recv(t->f.srq, &rs, 1, 1000 + (uint64_t)t->posted);
		if (rc)
			return rc;
		t->posted++;
	}
	return 0;
}

/* Client i sends its message m: index, number, markers, a pattern. */
static int send_msg(struct shared64 *t, int i, int m)
{
	uint8_t *msg = t->s.p + ((size_t)i * S_PER + (size_t)m) * S_SZ;

	msg[0] = (uint8_t)i;
	msg[1] = (uint8_t)m;
	msg[2] = 0x5a;
	msg[3] = 0xa5;
	fill_pattern(msg + S_HDR, S_SZ - S_HDR, ((uint64_t)i << 8) | (uint64_t)m);
	struct rcc_sge ss = tbuf_sge(&t->s, (size_t)(msg - t->s.p), S_SZ);
	return rcc_post_send(t->f.cli[i], &ss, 1, (uint64_t)m, RCC_SEND_SIGNALED);
}

/* Takes n receive completions and the n send completions behind them: every
 * message whole, byte for byte, in a receive used once, on the server
 * endpoint of the client that sent it, and none twice. */
static void take_msgs(struct shared64 *t, int n)
{
	CHECK(n <= S_N);
	CHECK_EQ(wait_n(t->f.cq_srv, t->wc, n, TEST_TIMEOUT_MS), n);
	for (int k = 0; k < n; k++) {
		const struct rcc_wc *w = &t->wc[k];
		CHECK_WC(*w, RCC_WC_SUCCESS);
		CHECK_EQ(w->opcode, RCC_WC_RECV);
		CHECK_EQ(w->byte_len, S_SZ);
		CHECK(w->wr_id >= 1000 && w->wr_id < 1000 + (uint64_t)t->posted);
		int b = (int)(w->wr_id - 1000);
		CHECK_MSG(!t->used[b], "receive %d completed twice", b);
		t->used[b] = true;
		const uint8_t *msg = t->r.p + (size_t)b * S_BUF;
		int i = msg[0], m = msg[1];
		CHECK(i < S_N && m < S_PER && msg[2] == 0x5a && msg[3] == 0xa5);
		CHECK_MSG(srv_index(&t->f, w->ep) == i,
			  "message of client %d completed on server endpoint %d", i,
			  srv_index(&t->f, w->ep));
		CHECK_MSG(!t->seen[i][m], "message %d of client %d arrived twice", m, i);
		t->seen[i][m] = true;
		CHECK_EQ(check_pattern(msg + S_HDR, S_SZ - S_HDR, ((uint64_t)i << 8) | (uint64_t)m),
			 -1);
	}
	CHECK_EQ(wait_n(t->f.cq_cli, t->wc, n, TEST_TIMEOUT_MS), n);
	for (int k = 0; k < n; k++)
		CHECK_WC(t->wc[k], RCC_WC_SUCCESS);
}

/* Client `only` (or, with -1, every client but `except`) sends its message
 * m, all posted at once; then they are taken as take_msgs() says. */
static void send_round(struct shared64 *t, int m, int only, int except)
{
	int n = 0;

	for (int i = 0; i < S_N; i++) {
		if ((only >= 0 && i != only) || i == except)
			continue;
		CHECK_OK(send_msg(t, i, m));
		n++;
	}
	take_msgs(t, n);
}

/* Exactly `want` (0 or 1) events now: the SRQ's limit event, naming the
 * SRQ and no endpoint. An event that must not come is awaited QUIET_MS. */
static void expect_limit_events(struct shared64 *t, int want, const char *when)
{
	struct rcc_event ev = { 0 };
	int rc;

	if (want) {
		rc = rcc_ctx_get_event(t->f.ctx, &ev, TEST_TIMEOUT_MS);
		CHECK_MSG(rc == 0, "%s: no SRQ limit event (%s)", when, rcc_strerror(rc));
		CHECK_EQ(ev.type, RCC_EVENT_SRQ_LIMIT);
		CHECK(ev.srq == t->f.srq);
		CHECK(ev.ep == NULL);
	}
	rc = rcc_ctx_get_event(t->f.ctx, &ev, QUIET_MS);
	CHECK_MSG(rc == -ETIMEDOUT, "%s: %s event (type %d, %s SRQ) where none is due", when,
		  want ? "a second" : "an", (int)ev.type,
		  ev.srq == t->f.srq ? "our" : "no/another");
}

/* A step of a case that stops at the first failure inside it. */
#define STEP(call)               \
	do {                     \
		call;            \
		if (test_failed) \
			return;  \
	} while (0)

/*
 * 64 endpoints share one SRQ with fewer receives than their traffic, its
 * low-watermark armed: every message lands whole in some posted buffer, its
 * completion names the endpoint it came through, every buffer is used once,
 * and the limit event comes exactly once per arming, at the message that
 * leaves fewer receives posted than the limit, whichever endpoint it came
 * through. The receives are refilled on the event and the limit re-armed
 * (rcc_srq_arm_limit(): one-shot, arm again after posting more).
 */
static void srq_shared_by_64(void)
{
	static struct shared64 t;
	struct fixture *f = &t.f;
	struct rcc_srq_attr sa = { .max_wr = S_DEPTH, .max_sge = 1 };

	memset(&t, 0, sizeof(t));
	CHECK_OK(fixture_open(f, S_N, &sa, 2 * S_WR, NULL));
	CHECK_OK(tbuf_alloc(&t.s, f->ctx, (size_t)S_N * S_PER * S_SZ, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&t.r, f->ctx, (size_t)S_WR * S_BUF, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(post_more(&t, S_DEPTH));
	CHECK_OK(rcc_srq_arm_limit(f->srq, S_N));

	/* round 0, all 64 at once: 128 -> 64 posted, never below the limit */
	STEP(send_round(&t, 0, -1, -1));
	STEP(expect_limit_events(&t, 0, "64 of 128 receives left, limit 64"));
	/* round 1: one message (from the middle) takes it below: 64 -> 63 */
	STEP(send_round(&t, 1, S_N / 2 + 5, -1));
	STEP(expect_limit_events(&t, 1, "63 receives left, limit 64"));
	/* the other 63 drain the SRQ: 63 -> 0, nothing more (one-shot) */
	STEP(send_round(&t, 1, -1, S_N / 2 + 5));
	STEP(expect_limit_events(&t, 0, "SRQ drained after its limit event"));
	/* refilled and re-armed: 64 posted, limit 32; round 2 all at once,
	 * the event once somewhere on the way down to 0 */
	CHECK_OK(post_more(&t, S_N));
	CHECK_OK(rcc_srq_arm_limit(f->srq, S_N / 2));
	STEP(send_round(&t, 2, -1, -1));
	STEP(expect_limit_events(&t, 1, "re-armed at 32, drained from 64"));

	for (int i = 0; i < S_N; i++)
		for (int m = 0; m < S_PER; m++)
			CHECK_MSG(t.seen[i][m], "message %d of client %d never arrived", m, i);
	for (int i = 0; i < S_N; i++) {
		CHECK_EQ(rcc_ep_state(f->srv[i]), RCC_EP_CONNECTED);
		CHECK_EQ(rcc_ep_state(f->cli[i]), RCC_EP_CONNECTED);
	}
	tbuf_free(&t.s);
	tbuf_free(&t.r);
	fixture_close(f);
}

/* Posts n receives of sz bytes each (wr_ids 0..n-1, r sliced in order). */
static int post_n(struct fixture *f, struct tbuf *r, int n, uint32_t sz)
{
	int rc = 0;

	for (int k = 0; k < n && !rc; k++) {
		struct rcc_sge rs = tbuf_sge(r, (size_t)k * sz, sz);
		rc = rcc_srq_post_recv(f->srq, &rs, 1, (uint64_t)k);
	}
	return rc;
}

/* Client ci sends n messages of sz bytes (patterns seed, seed+1, ...); they
 * must take the SRQ's receives posted by post_n() in order, on server
 * endpoint ci, with their bytes. Fails the case otherwise. */
static void send_n_in_order(struct fixture *f, int ci, struct tbuf *s, struct tbuf *r, int n,
			    uint32_t sz, uint64_t seed)
{
	struct rcc_wc wc[16];

	CHECK(n <= 16);
	for (int k = 0; k < n; k++) {
		fill_pattern(s->p + (size_t)k * sz, sz, seed + (uint64_t)k);
		struct rcc_sge ss = tbuf_sge(s, (size_t)k * sz, sz);
		CHECK_OK(rcc_post_send(f->cli[ci], &ss, 1, (uint64_t)k, RCC_SEND_SIGNALED));
	}
	CHECK_EQ(wait_n(f->cq_srv, wc, n, TEST_TIMEOUT_MS), n);
	for (int k = 0; k < n; k++) {
		CHECK_WC(wc[k], RCC_WC_SUCCESS);
		CHECK_EQ(wc[k].wr_id, (uint64_t)k);
		CHECK(wc[k].ep == f->srv[ci]);
		CHECK_EQ(check_pattern(r->p + (size_t)k * sz, sz, seed + (uint64_t)k), -1);
	}
	CHECK_EQ(wait_n(f->cq_cli, wc, n, TEST_TIMEOUT_MS), n);
}

/* On one endpoint, messages take the SRQ's receives oldest first. */
static void srq_fifo(void)
{
	enum {
		K = 8,
		SZ = 64
	};
	struct fixture f;
	struct tbuf s = { 0 }, r = { 0 };

	CHECK_OK(fixture_open(&f, 1, NULL, 64, NULL));
	CHECK_OK(tbuf_alloc(&s, f.ctx, K * SZ, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&r, f.ctx, K * SZ, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(post_n(&f, &r, K, SZ));
	send_n_in_order(&f, 0, &s, &r, K, SZ, 70);
	tbuf_free(&s);
	tbuf_free(&r);
	fixture_close(&f);
}

/* A WRITE_WITH_IMM takes a receive of the SRQ too (its buffer untouched,
 * its data in the target region), interleaved with another endpoint's SEND. */
static void srq_write_imm(void)
{
	enum {
		SZ = 4096
	};
	struct fixture f;
	struct tbuf s = { 0 }, r = { 0 }, t = { 0 };
	struct rcc_wc wc[2];

	CHECK_OK(fixture_open(&f, 2, NULL, 64, NULL));
	CHECK_OK(tbuf_alloc(&s, f.ctx, 2 * SZ, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&r, f.ctx, 2 * SZ, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&t, f.ctx, SZ, RCC_ACCESS_LOCAL_WRITE | RCC_ACCESS_REMOTE_WRITE));
	fill_pattern(s.p, SZ, 500);
	fill_pattern(s.p + SZ, SZ, 501);
	for (int k = 0; k < 2; k++) {
		struct rcc_sge rs = tbuf_sge(&r, (size_t)k * SZ, SZ);
		CHECK_OK(rcc_srq_post_recv(f.srq, &rs, 1, 10 + (uint64_t)k));
	}
	struct rcc_sge s0 = tbuf_sge(&s, 0, SZ), s1 = tbuf_sge(&s, SZ, SZ);
	CHECK_OK(rcc_post_write_imm(f.cli[0], &s0, 1, (uint64_t)(uintptr_t)t.p, rcc_mr_rkey(t.mr),
				    0x77, 1, RCC_SEND_SIGNALED));
	CHECK_OK(rcc_post_send(f.cli[1], &s1, 1, 2, RCC_SEND_SIGNALED));
	CHECK_EQ(wait_n(f.cq_srv, wc, 2, TEST_TIMEOUT_MS), 2);
	for (int k = 0; k < 2; k++) {
		CHECK_WC(wc[k], RCC_WC_SUCCESS);
		CHECK(wc[k].wr_id == 10 || wc[k].wr_id == 11);
		if (wc[k].ep == f.srv[0]) {
			CHECK_EQ(wc[k].opcode, RCC_WC_RECV_WRITE_IMM);
			CHECK_EQ(wc[k].imm_data, 0x77);
		} else {
			CHECK(wc[k].ep == f.srv[1]);
			CHECK_EQ(wc[k].opcode, RCC_WC_RECV);
			CHECK_EQ(wc[k].byte_len, SZ);
			CHECK_EQ(check_pattern(r.p + (wc[k].wr_id - 10) * SZ, SZ, 501), -1);
		}
	}
	CHECK(wc[0].ep != wc[1].ep);
	CHECK_EQ(check_pattern(t.p, SZ, 500), -1);
	CHECK_EQ(wait_n(f.cq_cli, wc, 2, TEST_TIMEOUT_MS), 2);
	tbuf_free(&s);
	tbuf_free(&r);
	tbuf_free(&t);
	fixture_close(&f);
}

/* An endpoint leaving service does not flush the SRQ's receives: they stay
 * posted and the other endpoint's messages take them. */
static void srq_outlives_endpoint(void)
{
	enum {
		K = 4,
		SZ = 64
	};
	struct fixture f;
	struct tbuf s = { 0 }, r = { 0 };
	struct rcc_wc w;

	CHECK_OK(fixture_open(&f, 2, NULL, 64, NULL));
	CHECK_OK(tbuf_alloc(&s, f.ctx, K * SZ, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&r, f.ctx, K * SZ, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(post_n(&f, &r, K, SZ));
	CHECK_OK(rcc_ep_disconnect(f.srv[0]));
	CHECK_EQ(rcc_cq_wait(f.cq_srv, &w, 1, 50), -ETIMEDOUT); /* nothing flushed */
	send_n_in_order(&f, 1, &s, &r, K, SZ, 600);
	tbuf_free(&s);
	tbuf_free(&r);
	fixture_close(&f);
}

/* Sends one message from client 0 and takes its two completions. */
static int send_one(struct fixture *f, struct tbuf *s, uint64_t id)
{
	struct rcc_sge ss = tbuf_sge(s, 0, 16);
	struct rcc_wc w;
	int rc = rcc_post_send(f->cli[0], &ss, 1, id, RCC_SEND_SIGNALED);
	if (!rc)
		rc = wait_one(f->cq_cli, &w, TEST_TIMEOUT_MS);
	if (!rc && w.status != RCC_WC_SUCCESS)
		rc = -EIO;
	if (!rc)
		rc = wait_one(f->cq_srv, &w, TEST_TIMEOUT_MS);
	if (!rc && w.status != RCC_WC_SUCCESS)
		rc = -EIO;
	return rc;
}

/*
 * The limit fires once, when a message leaves fewer receives posted than the
 * limit, and not while there are at least that many. (The quiet checks wait
 * a bounded while for an event that must not come.)
 */
static void srq_limit_event(void)
{
	enum {
		POSTED = 8,
		LIMIT = 4
	};
	struct fixture f;
	struct tbuf s = { 0 }, r = { 0 };
	struct rcc_event ev;

	CHECK_OK(fixture_open(&f, 1, &(struct rcc_srq_attr){ .max_wr = 16 }, 64, NULL));
	CHECK_OK(tbuf_alloc(&s, f.ctx, 16, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&r, f.ctx, POSTED * 16, RCC_ACCESS_LOCAL_WRITE));
	for (int k = 0; k < POSTED; k++) {
		struct rcc_sge rs = tbuf_sge(&r, (size_t)k * 16, 16);
		CHECK_OK(rcc_srq_post_recv(f.srq, &rs, 1, (uint64_t)k));
	}
	CHECK_EQ(rcc_srq_arm_limit(f.srq, 17), -EINVAL); /* above max_wr */
	CHECK_OK(rcc_srq_arm_limit(f.srq, LIMIT));
	/* 8 -> 4 posted: never below the limit */
	for (int k = 0; k < POSTED - LIMIT; k++)
		CHECK_OK(send_one(&f, &s, (uint64_t)k));
	CHECK_EQ(rcc_ctx_get_event(f.ctx, &ev, QUIET_MS), -ETIMEDOUT);
	/* 4 -> 3: below it */
	CHECK_OK(send_one(&f, &s, 10));
	CHECK_OK(rcc_ctx_get_event(f.ctx, &ev, TEST_TIMEOUT_MS));
	CHECK_EQ(ev.type, RCC_EVENT_SRQ_LIMIT);
	CHECK(ev.srq == f.srq);
	CHECK(ev.ep == NULL);
	/* one-shot: 3 -> 2 says nothing more */
	CHECK_OK(send_one(&f, &s, 11));
	CHECK_EQ(rcc_ctx_get_event(f.ctx, &ev, QUIET_MS), -ETIMEDOUT);
	/* re-armed after posting: fires again */
	for (int k = 0; k < 4; k++) {
		struct rcc_sge rs = tbuf_sge(&r, (size_t)k * 16, 16);
		CHECK_OK(rcc_srq_post_recv(f.srq, &rs, 1, 100 + (uint64_t)k));
	}
	CHECK_OK(rcc_srq_arm_limit(f.srq, LIMIT + 2)); /* 6 posted, limit 6 */
	CHECK_OK(send_one(&f, &s, 12));
	CHECK_OK(rcc_ctx_get_event(f.ctx, &ev, TEST_TIMEOUT_MS));
	CHECK_EQ(ev.type, RCC_EVENT_SRQ_LIMIT);
	CHECK(ev.srq == f.srq);
	tbuf_free(&s);
	tbuf_free(&r);
	fixture_close(&f);
}

/* An empty SRQ makes the sender wait (RNR) exactly as an empty receive
 * queue does; a receive posted to the SRQ then lets the message in. Without
 * RNR retries the send fails instead. */
static void srq_rnr_then_post(void)
{
	struct fixture f;
	struct tbuf s = { 0 }, r = { 0 };
	struct rcc_wc w;

	CHECK_OK(fixture_open(&f, 1, NULL, 64, NULL));
	CHECK_OK(tbuf_alloc(&s, f.ctx, 64, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&r, f.ctx, 64, RCC_ACCESS_LOCAL_WRITE));
	fill_pattern(s.p, 64, 90);
	struct rcc_sge ss = tbuf_sge(&s, 0, 64), rs = tbuf_sge(&r, 0, 64);
	CHECK_OK(rcc_post_send(f.cli[0], &ss, 1, 1, RCC_SEND_SIGNALED));
	CHECK_EQ(rcc_cq_wait(f.cq_cli, &w, 1, 50), -ETIMEDOUT); /* waiting, not failed */
	CHECK_EQ(rcc_cq_poll(f.cq_srv, &w, 1), 0);
	CHECK_OK(rcc_srq_post_recv(f.srq, &rs, 1, 7));
	EXPECT_STATUS(f.cq_cli, 1, RCC_WC_SUCCESS);
	CHECK_OK(wait_one(f.cq_srv, &w, TEST_TIMEOUT_MS));
	CHECK_WC(w, RCC_WC_SUCCESS);
	CHECK_EQ(w.wr_id, 7);
	CHECK(w.ep == f.srv[0]);
	CHECK_EQ(w.byte_len, 64);
	CHECK_EQ(check_pattern(r.p, 64, 90), -1);
	tbuf_free(&s);
	tbuf_free(&r);
	fixture_close(&f);

	struct rcc_ep_attr no_retry = { .rnr_retry = RCC_NO_RETRY };
	CHECK_OK(fixture_open(&f, 1, NULL, 64, &no_retry));
	CHECK_OK(tbuf_alloc(&s, f.ctx, 64, RCC_ACCESS_LOCAL_WRITE));
	ss = tbuf_sge(&s, 0, 64);
	CHECK_OK(rcc_post_send(f.cli[0], &ss, 1, 2, RCC_SEND_SIGNALED));
	EXPECT_STATUS(f.cq_cli, 2, RCC_WC_RNR_RETRY_EXC_ERR);
	tbuf_free(&s);
	fixture_close(&f);
}

/* An SRQ in use cannot be destroyed (nor its context closed); once its
 * endpoints are closed it can. */
static void srq_destroy_busy(void)
{
	struct fixture f;

	CHECK_OK(fixture_open(&f, 2, NULL, 64, NULL));
	CHECK_EQ(rcc_srq_destroy(f.srq), -EBUSY);
	CHECK_EQ(rcc_ctx_close(f.ctx), -EBUSY);
	CHECK_OK(rcc_ep_close(f.srv[0]));
	f.srv[0] = NULL;
	CHECK_EQ(rcc_srq_destroy(f.srq), -EBUSY); /* srv[1] still uses it */
	CHECK_OK(rcc_ep_close(f.srv[1]));
	f.srv[1] = NULL;
	CHECK_OK(rcc_srq_destroy(f.srq));
	f.srq = NULL;
	CHECK_EQ(rcc_srq_destroy(NULL), -EINVAL);
	fixture_close(&f);
}

/* An endpoint with an SRQ has no receive queue of its own: posting to it,
 * or giving it initial receives, is refused with an explanation. */
static void srq_endpoint_refuses_own_receives(void)
{
	struct fixture f;
	struct tbuf r = { 0 };

	CHECK_OK(fixture_open(&f, 1, NULL, 64, NULL));
	CHECK_OK(tbuf_alloc(&r, f.ctx, 64, RCC_ACCESS_LOCAL_WRITE));
	struct rcc_sge rs = tbuf_sge(&r, 0, 64);
	struct rcc_recv_wr wr = { .wr_id = 1, .sg_list = &rs, .num_sge = 1 };
	CHECK_EQ(rcc_post_recv(f.srv[0], &rs, 1, 1), -EINVAL);
	CHECK_MSG(strstr(rcc_last_error(), "rcc_srq_post_recv"), "last error: '%s'",
		  rcc_last_error());
	int posted = -1;
	CHECK_EQ(rcc_post_recv_list(f.srv[0], &wr, 1, &posted), -EINVAL);
	CHECK_EQ(posted, 0);
	CHECK_EQ(rcc_ep_state(f.srv[0]), RCC_EP_CONNECTED);

	struct rcc_ep_attr a = {
		.send_cq = f.cq_cli, .srq = f.srq, .initial_recv = &wr, .num_initial_recv = 1
	};
	char addr[128];
	struct rcc_ep *ep = NULL;
	snprintf(addr, sizeof(addr), "%s:%d", test_addr(), rcc_listener_port(f.lst));
	CHECK_EQ(rcc_connect(f.ctx, addr, &a, TEST_TIMEOUT_MS, &ep), -EINVAL);
	CHECK_MSG(strstr(rcc_last_error(), "SRQ"), "last error: '%s'", rcc_last_error());
	CHECK(ep == NULL);

	/* the SRQ's own checks */
	CHECK_EQ(rcc_srq_post_recv(NULL, &rs, 1, 1), -EINVAL);
	CHECK_EQ(rcc_srq_post_recv(f.srq, &rs, 5, 1), -EINVAL); /* max_sge is 4 */
	CHECK_EQ(rcc_srq_arm_limit(NULL, 1), -EINVAL);
	struct rcc_srq *big;
	CHECK_EQ(rcc_srq_create(f.ctx, &(struct rcc_srq_attr){ .max_wr = 1u << 20 }, &big),
		 -EINVAL);
	CHECK_MSG(strstr(rcc_last_error(), "max_wr"), "last error: '%s'", rcc_last_error());
	tbuf_free(&r);
	fixture_close(&f);
}

/* max_wr receives are held at most: the next post is refused. */
static void srq_full_refuses(void)
{
	enum {
		WR = 4
	};
	struct fixture f;
	struct tbuf r = { 0 };
	struct rcc_recv_wr wr[WR + 1];
	struct rcc_sge rs;

	CHECK_OK(fixture_open(&f, 1, &(struct rcc_srq_attr){ .max_wr = WR }, 64, NULL));
	CHECK_OK(tbuf_alloc(&r, f.ctx, 64, RCC_ACCESS_LOCAL_WRITE));
	rs = tbuf_sge(&r, 0, 64);
	for (int k = 0; k <= WR; k++)
		wr[k] = (struct rcc_recv_wr){ .wr_id = (uint64_t)k, .sg_list = &rs, .num_sge = 1 };
	int posted = -1;
	CHECK_OK(rcc_srq_post_recv_list(f.srq, wr, WR, &posted));
	CHECK_EQ(posted, WR);
	/* a device may round max_wr up: fill until refused, within reason */
	int more = 0, rc = 0;
	while (more < 1024 && (rc = rcc_srq_post_recv(f.srq, &rs, 1, 99)) == 0)
		more++;
	CHECK_EQ(rc, -ENOMEM);
	if (!test_on_verbs())
		CHECK_EQ(more, 0);
	tbuf_free(&r);
	fixture_close(&f);
}

TEST_MAIN(TEST(srq_shared_by_64), TEST(srq_fifo), TEST(srq_write_imm), TEST(srq_outlives_endpoint),
	  TEST(srq_limit_event), TEST(srq_rnr_then_post), TEST(srq_destroy_busy),
	  TEST(srq_endpoint_refuses_own_receives), TEST(srq_full_refuses))
