/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The message channel (rcc_chan_*, session.h): messages arrive whole and in
 * order in every CQ mode, credits hold a sender back instead of letting it
 * meet an empty receive queue (the endpoints refuse receiver-not-ready
 * retries here, so one such meeting fails the case), a channel shares an
 * application's CQ and endpoint with one-sided traffic, a peer that leaves
 * or breaks the rules ends the channel after what it sent before.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "pair.h"
#include "rcc/session.h"
#include "server_start.h"

#define MSG_MAX 512
#define CREDITS 8

/* Two endpoints connected in one process, each made from its own attributes. */
struct duo {
	struct rcc_ctx *ctx;
	struct rcc_listener *lst;
	struct rcc_ep *a, *b;
};

static int duo_ctx(struct duo *d)
{
	char addr[128];
	int rc;

	memset(d, 0, sizeof(*d));
	rc = test_ctx_open(&d->ctx);
	if (rc)
		return rc;
	snprintf(addr, sizeof(addr), "%s:0", test_addr());
	rc = rcc_listen(d->ctx, addr, 0, &d->lst);
	if (rc)
		rcc_ctx_close(d->ctx);
	return rc;
}

static int duo_connect(struct duo *d, const struct rcc_ep_attr *aa, const struct rcc_ep_attr *ab)
{
	return pair_connect(d->ctx, d->lst, aa, ab, &d->a, &d->b);
}

/* Endpoint attributes that fail at once on a receiver-not-ready. */
static struct rcc_ep_attr strict_attr(void)
{
	return (struct rcc_ep_attr){ .rnr_retry = RCC_NO_RETRY };
}

/* Two channels a <-> b, each with room for app_depth requests of the
 * application's: on their own CQs of this mode, or (app_cqs) on the
 * application's CQs cq_a and cq_b, which the case polls. */
struct chan_duo {
	struct duo d;
	struct rcc_cq *cq_a, *cq_b; /* NULL: the channels' own */
	struct rcc_chan *a, *b;
	struct tbuf src, dst; /* a case's buffers (chan_duo_bufs()), or none */
};

static int chan_duo_open_ex(struct chan_duo *c, enum rcc_cq_mode mode, uint32_t app_depth,
			    bool app_cqs)
{
	struct rcc_chan_attr ca = {
		.msg_max = MSG_MAX, .credits = CREDITS, .cq_mode = mode, .app_depth = app_depth
	};
	struct rcc_cq_attr cqa = { .depth = 256, .mode = mode };
	struct rcc_ep_attr aa = strict_attr(), ab = strict_attr();
	int rc;

	memset(c, 0, sizeof(*c));
	rc = duo_ctx(&c->d);
	if (rc)
		return rc;
	if (app_cqs && ((rc = rcc_cq_create(c->d.ctx, &cqa, &c->cq_a)) ||
			(rc = rcc_cq_create(c->d.ctx, &cqa, &c->cq_b))))
		goto fail;
	ca.cq = c->cq_a;
	if ((rc = rcc_chan_create(c->d.ctx, &ca, &c->a)))
		goto fail;
	ca.cq = c->cq_b;
	if ((rc = rcc_chan_create(c->d.ctx, &ca, &c->b)) || (rc = rcc_chan_ep_attr(c->a, &aa)) ||
	    (rc = rcc_chan_ep_attr(c->b, &ab)))
		goto fail;
	/* the send queue has room for the channel's requests and the application's */
	if (aa.sq_depth != CREDITS + app_depth) {
		fprintf(stderr, "chan_duo_open: sq_depth %u, want %u\n", aa.sq_depth,
			CREDITS + app_depth);
		rc = -ERANGE;
		goto fail;
	}
	if ((rc = duo_connect(&c->d, &aa, &ab)) || (rc = rcc_chan_bind(c->a, c->d.a)) ||
	    (rc = rcc_chan_bind(c->b, c->d.b)))
		goto fail;
	return 0;

fail:
	fprintf(stderr, "chan_duo_open: %s\n", rcc_strerror(rc));
	if (c->d.a) {
		rcc_ep_close(c->d.a);
		rcc_ep_close(c->d.b);
	}
	rcc_chan_destroy(c->a);
	rcc_chan_destroy(c->b);
	if (c->cq_a)
		rcc_cq_destroy(c->cq_a);
	if (c->cq_b)
		rcc_cq_destroy(c->cq_b);
	rcc_listener_close(c->d.lst);
	rcc_ctx_close(c->d.ctx);
	return rc;
}

static int chan_duo_open(struct chan_duo *c, enum rcc_cq_mode mode)
{
	return chan_duo_open_ex(c, mode, 16, false);
}

/* Two registered buffers for the one-sided requests of a case, src_len and
 * dst_len bytes, every access; chan_duo_close() frees them. */
static int chan_duo_bufs(struct chan_duo *c, size_t src_len, size_t dst_len)
{
	int rc = tbuf_alloc(&c->src, c->d.ctx, src_len, ALL_ACCESS);
	return rc ? rc : tbuf_alloc(&c->dst, c->d.ctx, dst_len, ALL_ACCESS);
}

static void chan_duo_close(struct chan_duo *c)
{
	if (c->d.a)
		TEARDOWN(rcc_ep_close(c->d.a));
	if (c->d.b)
		TEARDOWN(rcc_ep_close(c->d.b));
	/* the endpoints are closed: no request uses the buffers any more */
	tbuf_free(&c->src);
	tbuf_free(&c->dst);
	TEARDOWN(rcc_chan_destroy(c->a));
	TEARDOWN(rcc_chan_destroy(c->b));
	if (c->cq_a)
		TEARDOWN(rcc_cq_destroy(c->cq_a));
	if (c->cq_b)
		TEARDOWN(rcc_cq_destroy(c->cq_b));
	TEARDOWN(rcc_listener_close(c->d.lst));
	TEARDOWN(rcc_ctx_close(c->d.ctx));
}

/* Until ch holds n unread messages (a look without reading: cap 0). */
static int wait_pending(struct rcc_chan *ch, uint32_t n)
{
	uint64_t until = now_ms() + TEST_TIMEOUT_MS;
	uint8_t none[1];

	while (rcc_chan_pending(ch) < n) {
		int rc = rcc_chan_recv(ch, none, 0, NULL, 0);
		if (rc != -EAGAIN && rc != -EMSGSIZE)
			return rc < 0 ? rc : -EPROTO;
		if (now_ms() > until)
			return -ETIMEDOUT;
	}
	return rcc_chan_pending(ch) == n ? 0 : -EPROTO;
}

/* Message i of a stream: its length and pattern follow from i alone. */
static size_t msg_len(uint32_t i) { return 1 + (i * 37u) % MSG_MAX; }

static void roundtrip(enum rcc_cq_mode mode)
{
	struct chan_duo c;
	uint8_t out[MSG_MAX], in[MSG_MAX];

	CHECK_OK(chan_duo_open(&c, mode));
	/* many times the credits, each way, answered one by one */
	for (uint32_t i = 0; i < 20 * CREDITS; i++) {
		size_t len = msg_len(i);
		fill_pattern(out, len, i);
		CHECK_OK(rcc_chan_send(c.a, out, len, TEST_TIMEOUT_MS));
		int n = rcc_chan_recv(c.b, in, sizeof(in), NULL, TEST_TIMEOUT_MS);
		CHECK_EQ(n, len);
		CHECK_EQ(check_pattern(in, len, i), -1);
		fill_pattern(out, len, ~(uint64_t)i);
		CHECK_OK(rcc_chan_send(c.b, out, len, TEST_TIMEOUT_MS));
		n = rcc_chan_recv(c.a, in, sizeof(in), NULL, TEST_TIMEOUT_MS);
		CHECK_EQ(n, len);
		CHECK_EQ(check_pattern(in, len, ~(uint64_t)i), -1);
	}
	CHECK_EQ(rcc_chan_recv(c.a, in, sizeof(in), NULL, 0), -EAGAIN);
	CHECK_EQ(rcc_chan_pending(c.b), 0);
	chan_duo_close(&c);
}

static void chan_roundtrip_poll(void) { roundtrip(RCC_CQ_POLL); }
static void chan_roundtrip_wait(void) { roundtrip(RCC_CQ_WAIT); }
static void chan_roundtrip_fd(void) { roundtrip(RCC_CQ_FD); }
static void chan_roundtrip_hybrid(void) { roundtrip(RCC_CQ_HYBRID); }

struct reader {
	struct rcc_chan *ch;
	uint32_t count, bad, got;
	int rc;
};

/* Read count messages, slowly at first (every eighth read waits for the
 * sender to have filled every credit), checking each. */
static void *reader_main(void *arg)
{
	struct reader *r = arg;
	uint8_t in[MSG_MAX];

	for (r->got = 0; r->got < r->count; r->got++) {
		int n = rcc_chan_recv(r->ch, in, sizeof(in), NULL, TEST_TIMEOUT_MS);
		if (n < 0) {
			r->rc = n;
			return NULL;
		}
		if ((size_t)n != msg_len(r->got) || check_pattern(in, (size_t)n, r->got) != -1)
			r->bad++;
	}
	return NULL;
}

/*
 * A reader that does not read holds its sender back: after credits - 1
 * messages (the last credit is kept for credit messages) a send without
 * waiting says -EAGAIN, never an RNR failure. Once the reader takes them,
 * credit messages bring the sender back, and a long stream arrives whole.
 */
static void chan_credits_hold_sender(void)
{
	struct chan_duo c;
	uint8_t out[MSG_MAX];
	struct reader r = { 0 };
	pthread_t th;
	uint32_t i;

	CHECK_OK(chan_duo_open(&c, RCC_CQ_WAIT));
	for (i = 0; i < CREDITS - 1; i++) {
		fill_pattern(out, msg_len(i), i);
		CHECK_OK(rcc_chan_send(c.a, out, msg_len(i), 0));
	}
	CHECK_EQ(rcc_chan_send(c.a, out, 1, 0), -EAGAIN);
	CHECK_EQ(rcc_chan_send(c.a, out, 1, 50), -ETIMEDOUT);
	/* delivered, though not read: the sends complete */
	CHECK_OK(rcc_chan_flush(c.a, TEST_TIMEOUT_MS));
	/* the messages are there, unread, and the connection is fine */
	CHECK_OK(wait_pending(c.b, CREDITS - 1));
	CHECK_EQ(rcc_ep_state(c.d.a), RCC_EP_CONNECTED);

	r.ch = c.b;
	r.count = 30 * CREDITS;
	CHECK_OK(-pthread_create(&th, NULL, reader_main, &r));
	for (; i < r.count; i++) {
		fill_pattern(out, msg_len(i), i);
		int rc = rcc_chan_send(c.a, out, msg_len(i), TEST_TIMEOUT_MS);
		if (rc) {
			test_fail(__FILE__, __LINE__, "send %u: %s", i, rcc_strerror(rc));
			break;
		}
	}
	pthread_join(th, NULL);
	CHECK_OK(r.rc);
	CHECK_EQ(r.got, r.count);
	CHECK_EQ(r.bad, 0);
	CHECK_EQ(rcc_ep_state(c.d.a), RCC_EP_CONNECTED);
	CHECK_EQ(rcc_ep_state(c.d.b), RCC_EP_CONNECTED);
	chan_duo_close(&c);
}

/* Both sides send and read at once: credits travel on the messages both
 * ways and neither side stops the other. */
struct talker {
	struct rcc_chan *ch;
	uint32_t count;
	uint64_t seed_out, seed_in;
	bool sleep; /* when it can neither send nor read: rcc_chan_wait_any() */
	int rc;
	uint32_t bad;
};

static void *talker_main(void *arg)
{
	struct talker *t = arg;
	uint8_t out[MSG_MAX], in[MSG_MAX];
	uint32_t sent = 0, got = 0;
	uint64_t until = now_ms() + 2 * TEST_TIMEOUT_MS;

	while ((sent < t->count || got < t->count) && now_ms() < until) {
		bool moved = false;
		if (sent < t->count) {
			fill_pattern(out, msg_len(sent), t->seed_out + sent);
			int rc = rcc_chan_send(t->ch, out, msg_len(sent), 0);
			if (rc == 0) {
				sent++;
				moved = true;
			} else if (rc != -EAGAIN) {
				t->rc = rc;
				return NULL;
			}
		}
		int n = rcc_chan_recv(t->ch, in, sizeof(in), NULL,
				      sent < t->count || t->sleep ? 0 : 100);
		if (n > 0) {
			if ((size_t)n != msg_len(got) ||
			    check_pattern(in, (size_t)n, t->seed_in + got) != -1)
				t->bad++;
			got++;
			moved = true;
		} else if (n != -EAGAIN && n != -ETIMEDOUT) {
			t->rc = n;
			return NULL;
		}
		if (t->sleep && !moved && (sent < t->count || got < t->count)) {
			/* a credit coming back must wake it as a message does:
			 * the peer may have nothing more to say */
			unsigned want = RCC_CHAN_CAN_RECV |
					(sent < t->count ? RCC_CHAN_CAN_SEND : 0);
			int rc = rcc_chan_wait_any(t->ch, want, TEST_TIMEOUT_MS);
			if (rc < 0) {
				t->rc = rc;
				return NULL;
			}
		}
	}
	if (sent < t->count || got < t->count)
		t->rc = -ETIMEDOUT;
	return NULL;
}

static void both_ways(enum rcc_cq_mode mode, bool sleep)
{
	struct chan_duo c;
	struct talker ta, tb;
	pthread_t th;

	CHECK_OK(chan_duo_open(&c, mode));
	ta = (struct talker){
		.ch = c.a, .count = 50 * CREDITS, .seed_out = 1000, .seed_in = 9000, .sleep = sleep
	};
	tb = (struct talker){
		.ch = c.b, .count = 50 * CREDITS, .seed_out = 9000, .seed_in = 1000, .sleep = sleep
	};
	CHECK_OK(-pthread_create(&th, NULL, talker_main, &tb));
	talker_main(&ta);
	pthread_join(th, NULL);
	CHECK_OK(ta.rc);
	CHECK_OK(tb.rc);
	CHECK_EQ(ta.bad + tb.bad, 0);
	chan_duo_close(&c);
}

static void chan_both_ways(void) { both_ways(RCC_CQ_POLL, false); }
/* Each side sends a burst larger than the credits while it reads, and
 * sleeps in rcc_chan_wait_any() whenever it can do neither. */
static void chan_both_ways_sleeping(void) { both_ways(RCC_CQ_WAIT, true); }

/*
 * rcc_chan_wait_any(): a sender out of credits sleeps until one comes back
 * -- a credit message, which rcc_chan_wait() alone does not wake for --
 * and the events say what holds.
 */
static void chan_wait_any_credit_wakes(void)
{
	struct chan_duo c;
	uint8_t out[MSG_MAX], in[MSG_MAX];
	const unsigned both = RCC_CHAN_CAN_RECV | RCC_CHAN_CAN_SEND;

	CHECK_OK(chan_duo_open(&c, RCC_CQ_WAIT));
	CHECK_EQ(rcc_chan_wait_any(c.a, both, 0), RCC_CHAN_CAN_SEND);
	for (uint32_t i = 0; i < CREDITS - 1; i++) {
		fill_pattern(out, msg_len(i), i);
		CHECK_OK(rcc_chan_send(c.a, out, msg_len(i), 0));
	}
	CHECK_EQ(rcc_chan_wait_any(c.a, both, 0), -EAGAIN);
	CHECK_EQ(rcc_chan_wait_any(c.a, RCC_CHAN_CAN_SEND, 50), -ETIMEDOUT);
	/* the reader takes them all: its credit message brings a credit back,
	 * and nothing to read with it */
	for (uint32_t i = 0; i < CREDITS - 1; i++) {
		int n = rcc_chan_recv(c.b, in, sizeof(in), NULL, TEST_TIMEOUT_MS);
		CHECK_EQ(n, msg_len(i));
		CHECK_EQ(check_pattern(in, msg_len(i), i), -1);
	}
	CHECK_EQ(rcc_chan_wait_any(c.a, both, TEST_TIMEOUT_MS), RCC_CHAN_CAN_SEND);
	CHECK_EQ(rcc_chan_wait(c.a, 0), -EAGAIN);
	/* a message: both hold */
	fill_pattern(out, 7, 77);
	CHECK_OK(rcc_chan_send(c.b, out, 7, TEST_TIMEOUT_MS));
	CHECK_EQ(rcc_chan_wait_any(c.a, RCC_CHAN_CAN_RECV, TEST_TIMEOUT_MS), RCC_CHAN_CAN_RECV);
	CHECK_EQ(rcc_chan_wait_any(c.a, both, 0), both);
	CHECK_EQ(rcc_chan_recv(c.a, in, sizeof(in), NULL, 0), 7);
	CHECK_EQ(check_pattern(in, 7, 77), -1);
	/* events must name RCC_CHAN_CAN_RECV, RCC_CHAN_CAN_SEND or both */
	CHECK_EQ(rcc_chan_wait_any(c.a, 0, 0), -EINVAL);
	CHECK_EQ(rcc_chan_wait_any(c.a, 4, 0), -EINVAL);
	CHECK_EQ(rcc_chan_wait_any(NULL, both, 0), -EINVAL);
	chan_duo_close(&c);
}

/* Misuse is refused and leaves the channel usable. */
static void chan_refuses_misuse(void)
{
	struct chan_duo c;
	struct rcc_chan *ch;
	struct rcc_chan_attr bad = { .credits = 3 };
	uint8_t out[MSG_MAX + 1] = { 0 }, in[MSG_MAX];
	struct rcc_ep_attr ea = { 0 };

	CHECK_OK(chan_duo_open(&c, RCC_CQ_WAIT));
	CHECK_EQ(rcc_chan_create(c.d.ctx, &bad, &ch), -EINVAL);
	bad = (struct rcc_chan_attr){ .msg_max = RCC_CHAN_MSG_MAX + 1 };
	CHECK_EQ(rcc_chan_create(c.d.ctx, &bad, &ch), -EINVAL);
	bad = (struct rcc_chan_attr){ .credits = RCC_CHAN_CREDITS_MAX + 1 };
	CHECK_EQ(rcc_chan_create(c.d.ctx, &bad, &ch), -EINVAL);
	bad = (struct rcc_chan_attr){ .app_depth = RCC_CHAN_APP_DEPTH_MAX + 1 };
	CHECK_EQ(rcc_chan_create(c.d.ctx, &bad, &ch), -EINVAL);
	CHECK_EQ(rcc_chan_ep_attr(c.a, &ea), -EINVAL); /* bound */
	CHECK_EQ(rcc_chan_bind(c.a, c.d.a), -EINVAL);
	CHECK_EQ(rcc_chan_send(c.a, out, 0, 0), -EMSGSIZE);
	CHECK_EQ(rcc_chan_send(c.a, out, MSG_MAX + 1, 0), -EMSGSIZE);
	CHECK_EQ(rcc_chan_send(c.a, out, 1, -2), -EINVAL);
	CHECK_EQ(rcc_chan_send(NULL, out, 1, 0), -EINVAL);
	/* too small a buffer: the message stays for a larger one */
	fill_pattern(out, MSG_MAX, 7);
	CHECK_OK(rcc_chan_send(c.a, out, MSG_MAX, 0));
	uint64_t until = now_ms() + TEST_TIMEOUT_MS;
	int n;
	while ((n = rcc_chan_recv(c.b, in, MSG_MAX - 1, NULL, 0)) == -EAGAIN && now_ms() < until)
		;
	CHECK_EQ(n, -EMSGSIZE);
	CHECK_EQ(rcc_chan_pending(c.b), 1);
	CHECK_EQ(rcc_chan_recv(c.b, in, sizeof(in), NULL, TEST_TIMEOUT_MS), MSG_MAX);
	CHECK_EQ(check_pattern(in, MSG_MAX, 7), -1);

	/* an unbound channel sends nothing and polls nothing */
	struct rcc_chan_attr ok = { .app_depth = 3 };
	struct rcc_wc wc;
	CHECK_OK(rcc_chan_create(c.d.ctx, &ok, &ch));
	CHECK_EQ(rcc_chan_send(ch, out, 1, 0), -EINVAL);
	CHECK_EQ(rcc_chan_poll_app(ch, &wc, 1), -EINVAL);
	CHECK_EQ(rcc_chan_handle(ch, &wc), -EINVAL);
	ea.sq_depth = 1000;
	CHECK_OK(rcc_chan_ep_attr(ch, &ea));
	CHECK_EQ(ea.rq_depth, RCC_CHAN_CREDITS_DEFAULT);
	CHECK_EQ(ea.num_initial_recv, RCC_CHAN_CREDITS_DEFAULT);
	CHECK_EQ(ea.sq_depth, RCC_CHAN_CREDITS_DEFAULT + 3);
	CHECK(ea.send_cq && ea.send_cq == ea.recv_cq);
	TEARDOWN(rcc_chan_destroy(ch));
	chan_duo_close(&c);
}

/*
 * A channel on the application's CQ, beside the application's own RDMA
 * WRITEs on the same endpoint: completions are told apart, nothing waits.
 */
static void chan_on_app_cq(void)
{
	struct chan_duo c;
	uint8_t out[MSG_MAX], in[MSG_MAX];
	struct rcc_wc wc[8];

	CHECK_OK(chan_duo_open_ex(&c, RCC_CQ_POLL, 16, true));
	CHECK(rcc_chan_cq(c.a) == c.cq_a && rcc_ep_send_cq(c.d.a) == c.cq_a);
	CHECK_OK(chan_duo_bufs(&c, 4096, 4096));
	fill_pattern(c.src.p, 4096, 42);

	CHECK_EQ(rcc_chan_send(c.a, out, 1, 10), -EINVAL); /* never waits here */
	struct rcc_remote_mr rm = rcc_mr_remote(c.dst.mr);
	struct rcc_sge sge = tbuf_sge(&c.src, 0, 4096);
	CHECK_OK(rcc_post_write(c.d.a, &sge, 1, rm.addr, rm.rkey, 77, RCC_SEND_SIGNALED));
	fill_pattern(out, 100, 5);
	CHECK_OK(rcc_chan_send(c.a, out, 100, 0));

	int mine = 0, theirs_a = 0, got = 0;
	uint64_t until = now_ms() + TEST_TIMEOUT_MS;
	while ((mine < 1 || theirs_a < 1 || got < 1) && now_ms() < until) {
		int n = rcc_cq_poll(c.cq_a, wc, 8);
		CHECK_OK(n);
		for (int i = 0; i < n; i++) {
			int h = rcc_chan_handle(c.a, &wc[i]);
			CHECK_OK(h);
			if (h)
				theirs_a++;
			else {
				CHECK_EQ(wc[i].wr_id, 77);
				CHECK_WC(wc[i], RCC_WC_SUCCESS);
				mine++;
			}
		}
		n = rcc_cq_poll(c.cq_b, wc, 8);
		CHECK_OK(n);
		for (int i = 0; i < n; i++)
			CHECK_EQ(rcc_chan_handle(c.b, &wc[i]), 1);
		int len = rcc_chan_recv(c.b, in, sizeof(in), NULL, 0);
		if (len > 0) {
			CHECK_EQ(len, 100);
			CHECK_EQ(check_pattern(in, 100, 5), -1);
			got++;
		} else {
			CHECK_EQ(len, -EAGAIN);
		}
	}
	CHECK_EQ(mine, 1);
	CHECK_EQ(theirs_a, 1);
	CHECK_EQ(got, 1);
	CHECK_EQ(check_pattern(c.dst.p, 4096, 42), -1);
	/* another endpoint's or another tag's completion is not the channel's */
	struct rcc_wc other = { .wr_id = (uint64_t)RCC_CHAN_WR_ID_TAG << 56, .ep = c.d.b };
	CHECK_EQ(rcc_chan_handle(c.a, &other), 0);
	other.ep = c.d.a;
	other.wr_id = 1;
	CHECK_EQ(rcc_chan_handle(c.a, &other), 0);
	chan_duo_close(&c);
}

/*
 * RDMA WRITE_WITH_IMM through the channel: each takes a credit, arrives in
 * order with the messages as a note, its data already in place; the
 * writer's own completions come back through rcc_chan_poll_app(). The
 * window has one chunk per credit: credits alone keep a chunk from being
 * overwritten before its note was read.
 */
#define CHUNK 1024
static void chan_write_imm_notes(void)
{
	struct chan_duo c;
	uint8_t msg[MSG_MAX];
	struct rcc_chan_write_note note;
	struct rcc_wc wc[8];
	const uint32_t rounds = 6 * CREDITS;
	uint32_t done = 0;

	CHECK_OK(chan_duo_open(&c, RCC_CQ_WAIT));
	CHECK_OK(chan_duo_bufs(&c, CHUNK, CREDITS * CHUNK));
	/* the window's address travels as a message, as an application does it */
	struct rcc_remote_mr rm = rcc_mr_remote(c.dst.mr);
	uint8_t wire[RCC_REMOTE_MR_WIRE_SIZE];
	rcc_remote_mr_encode(&rm, wire);
	CHECK_OK(rcc_chan_send(c.b, wire, sizeof(wire), TEST_TIMEOUT_MS));
	CHECK_EQ(rcc_chan_recv(c.a, msg, sizeof(msg), NULL, TEST_TIMEOUT_MS), sizeof(wire));
	CHECK_OK(rcc_remote_mr_decode(msg, sizeof(wire), &rm));

	for (uint32_t i = 0; i < rounds; i++) {
		struct rcc_sge sge = tbuf_sge(&c.src, 0, CHUNK);
		fill_pattern(c.src.p, CHUNK, 500 + i);
		/* src is reused: wait until the previous chunk's WRITE completed */
		CHECK_OK(rcc_chan_write_imm(c.a, &sge, 1, rm.addr + (i % CREDITS) * CHUNK, rm.rkey,
					    0x1000 + i, 9000 + i, RCC_SEND_SIGNALED,
					    TEST_TIMEOUT_MS));
		uint64_t until = now_ms() + TEST_TIMEOUT_MS;
		while (done <= i && now_ms() < until) {
			/* one sleep for either kind of event */
			CHECK_EQ(rcc_chan_wait(c.a, TEST_TIMEOUT_MS), 1);
			int n = rcc_chan_poll_app(c.a, wc, 8);
			CHECK_OK(n);
			for (int k = 0; k < n; k++, done++) {
				CHECK_EQ(wc[k].wr_id, 9000 + done);
				CHECK_WC(wc[k], RCC_WC_SUCCESS);
			}
		}
		CHECK_EQ(done, i + 1);
		fill_pattern(msg, msg_len(i), i);
		CHECK_OK(rcc_chan_send(c.a, msg, msg_len(i), TEST_TIMEOUT_MS));
		/* the reader takes them in order: the note, then the message */
		memset(&note, 0, sizeof(note));
		CHECK_EQ(rcc_chan_recv(c.b, msg, sizeof(msg), &note, TEST_TIMEOUT_MS), 0);
		CHECK_EQ(note.imm, 0x1000 + i);
		CHECK_EQ(note.len, CHUNK);
		CHECK_EQ(check_pattern(c.dst.p + (i % CREDITS) * CHUNK, CHUNK, 500 + i), -1);
		int n = rcc_chan_recv(c.b, msg, sizeof(msg), &note, TEST_TIMEOUT_MS);
		CHECK_EQ(n, msg_len(i));
		CHECK_EQ(check_pattern(msg, (size_t)n, i), -1);
	}
	/* WRITEs hold the writer back like messages do: CREDITS - 1 of them
	 * once the reader's last credit message is in (it may still be on its
	 * way: a look without waiting finds it or not), and not one more */
	struct rcc_sge sge = tbuf_sge(&c.src, 0, 8);
	uint32_t posted = 0;
	uint64_t until = now_ms() + TEST_TIMEOUT_MS;
	while (posted < CREDITS - 1 && now_ms() < until) {
		int rc = rcc_chan_write_imm(c.a, &sge, 1, rm.addr, rm.rkey, 1, 1, 0, 0);
		if (rc == 0)
			posted++;
		else
			CHECK_EQ(rc, -EAGAIN);
	}
	CHECK_EQ(posted, CREDITS - 1);
	CHECK_EQ(rcc_chan_write_imm(c.a, &sge, 1, rm.addr, rm.rkey, 1, 1, 0, 0), -EAGAIN);
	CHECK_EQ(rcc_chan_write_imm(c.a, &sge, 1, rm.addr, rm.rkey, 1,
				    (uint64_t)RCC_CHAN_WR_ID_TAG << 56, 0, 0),
		 -EINVAL);
	/* a reader that does not expect writes is broken by one */
	CHECK_EQ(rcc_chan_recv(c.b, msg, sizeof(msg), NULL, TEST_TIMEOUT_MS), -EPROTO);
	CHECK_EQ(rcc_chan_poll_app(c.b, wc, 0), -EINVAL);
	CHECK_EQ(rcc_chan_wait(c.b, -2), -EINVAL);
	chan_duo_close(&c);
}

/*
 * Channels on a session server's connections (external_cq): on_request
 * names the channel's receives, on_connect binds, on_completion hands every
 * completion over and echoes what arrived. The clients are rcc_clients on
 * their channels' own CQs; several at once, on shared-CQ agents.
 */
struct echo_side {
	atomic_int bad, connects, disconnects;
};

static int echo_request(struct rcc_conn_req *req, void *arg, void **conn,
			const struct rcc_recv_wr **recv, int *num)
{
	struct rcc_chan_attr ca = { .msg_max = MSG_MAX, .credits = CREDITS, .external_cq = true };
	struct rcc_ep_attr ea = { 0 };
	struct rcc_chan *ch;
	(void)arg;

	if (rcc_chan_create(rcc_conn_req_ctx(req), &ca, &ch))
		return -ENOMEM;
	if (rcc_chan_ep_attr(ch, &ea)) {
		rcc_chan_destroy(ch);
		return -EINVAL;
	}
	*recv = ea.initial_recv;
	*num = ea.num_initial_recv;
	*conn = ch;
	return 0;
}

static int echo_connect(struct rcc_ep *ep, void *arg, void **conn)
{
	struct echo_side *e = arg;
	atomic_fetch_add(&e->connects, 1);
	return rcc_chan_bind(*conn, ep);
}

static struct echo_side *echo_of_server; /* the one server of the case */

static void echo_completion(struct rcc_ep *ep, const struct rcc_wc *wc, void *conn)
{
	struct rcc_chan *ch = conn;
	uint8_t buf[MSG_MAX];
	int n;
	(void)ep;

	if (rcc_chan_handle(ch, wc) != 1)
		atomic_fetch_add(&echo_of_server->bad, 1);
	while ((n = rcc_chan_recv(ch, buf, sizeof(buf), NULL, 0)) > 0)
		if (rcc_chan_send(ch, buf, (size_t)n, 0))
			atomic_fetch_add(&echo_of_server->bad, 1);
}

static void echo_disconnect(struct rcc_ep *ep, void *conn)
{
	if (ep)
		atomic_fetch_add(&echo_of_server->disconnects, 1);
	/* every completion of the endpoint has been delivered: its receives
	 * hold nothing of the channel's any more */
	rcc_chan_destroy(conn);
}

static const struct rcc_server_ops echo_ops = {
	.on_request = echo_request,
	.on_connect = echo_connect,
	.on_completion = echo_completion,
	.on_disconnect = echo_disconnect,
};

#define ECHO_CLIENTS 4
static void chan_on_server_agents(void)
{
	struct rcc_ctx *ctx;
	struct rcc_server *srv;
	struct echo_side side = { 0 };
	struct rcc_client *cli[ECHO_CLIENTS] = { 0 };
	struct rcc_chan *ch[ECHO_CLIENTS] = { 0 };
	char addr[128];
	uint8_t out[MSG_MAX], in[MSG_MAX];

	echo_of_server = &side;
	CHECK_OK(test_ctx_open(&ctx));
	struct rcc_server_attr sa = {
		.thread_mode = RCC_THREAD_SHARED_CQ,
		.num_threads = 2,
		.cq_mode = RCC_CQ_WAIT,
		.ep_attr = { .sq_depth = CREDITS, .rq_depth = CREDITS, .rnr_retry = RCC_NO_RETRY },
		.ops = &echo_ops,
		.arg = &side,
	};
	CHECK_OK(test_server_start(ctx, sa, &srv, addr, sizeof(addr)));
	for (int i = 0; i < ECHO_CLIENTS && !test_failed; i++) {
		struct rcc_chan_attr ca = { .msg_max = MSG_MAX,
					    .credits = CREDITS,
					    .cq_mode = RCC_CQ_WAIT };
		struct rcc_client_attr cla = { .ep_attr = strict_attr() };
		CHECK_OK(rcc_chan_create(ctx, &ca, &ch[i]));
		CHECK_OK(rcc_chan_ep_attr(ch[i], &cla.ep_attr));
		cla.cq = cla.ep_attr.send_cq; /* the channel's own CQ */
		CHECK_OK(rcc_client_connect(ctx, addr, &cla, &cli[i]));
		CHECK_OK(rcc_chan_bind(ch[i], rcc_client_ep(cli[i])));
	}
	/* every client many times the credits, interleaved, each echo checked */
	for (uint32_t r = 0; r < 10 * CREDITS && !test_failed; r++) {
		for (int i = 0; i < ECHO_CLIENTS; i++) {
			fill_pattern(out, msg_len(r), (uint64_t)i << 32 | r);
			CHECK_OK(rcc_chan_send(ch[i], out, msg_len(r), TEST_TIMEOUT_MS));
		}
		for (int i = 0; i < ECHO_CLIENTS; i++) {
			int n = rcc_chan_recv(ch[i], in, sizeof(in), NULL, TEST_TIMEOUT_MS);
			CHECK_EQ(n, msg_len(r));
			CHECK_EQ(check_pattern(in, (size_t)n, (uint64_t)i << 32 | r), -1);
		}
	}
	for (int i = 0; i < ECHO_CLIENTS; i++) {
		if (cli[i])
			TEARDOWN(rcc_client_close(cli[i])); /* its CQ is the channel's */
		TEARDOWN(rcc_chan_destroy(ch[i]));
	}
	TEARDOWN(rcc_server_stop(srv));
	CHECK_EQ(atomic_load(&side.connects), ECHO_CLIENTS);
	CHECK_EQ(atomic_load(&side.disconnects), ECHO_CLIENTS);
	CHECK_EQ(atomic_load(&side.bad), 0);
	TEARDOWN(rcc_ctx_close(ctx));
}

/* The peer sends, then leaves: what it sent is read, then -ECONNRESET. */
static void chan_peer_leaves(void)
{
	struct chan_duo c;
	uint8_t out[MSG_MAX], in[MSG_MAX];

	CHECK_OK(chan_duo_open(&c, RCC_CQ_WAIT));
	for (uint32_t i = 0; i < 3; i++) {
		fill_pattern(out, msg_len(i), i);
		CHECK_OK(rcc_chan_send(c.a, out, msg_len(i), TEST_TIMEOUT_MS));
	}
	/* all three delivered before the endpoint goes: the sender knows it */
	CHECK_OK(rcc_chan_flush(c.a, TEST_TIMEOUT_MS));
	CHECK_EQ(rcc_chan_flush(c.a, 0), 0);
	CHECK_OK(wait_pending(c.b, 3));
	TEARDOWN(rcc_ep_close(c.d.a));
	c.d.a = NULL;
	for (uint32_t i = 0; i < 3; i++) {
		int n = rcc_chan_recv(c.b, in, sizeof(in), NULL, TEST_TIMEOUT_MS);
		CHECK_EQ(n, msg_len(i));
		CHECK_EQ(check_pattern(in, (size_t)n, i), -1);
	}
	uint64_t t0 = now_ms();
	CHECK_EQ(rcc_chan_recv(c.b, in, sizeof(in), NULL, 2 * TEST_TIMEOUT_MS), -ECONNRESET);
	CHECK(now_ms() - t0 < TEST_TIMEOUT_MS + 5000);
	CHECK_EQ(rcc_chan_send(c.b, out, 1, TEST_TIMEOUT_MS), -ECONNRESET);
	CHECK_EQ(rcc_chan_flush(c.b, TEST_TIMEOUT_MS), -ECONNRESET);
	CHECK(rcc_chan_cq(c.b) != NULL);
	CHECK(rcc_chan_cq(NULL) == NULL);
	chan_duo_close(&c);
}

/*
 * A peer that breaks the rules: a raw endpoint sends into a channel. One
 * good message first (it is delivered), then each kind of bad one ends the
 * channel with -EPROTO and cuts the peer off.
 */
enum forgery {
	BAD_VERSION,
	BAD_KIND,
	FORGED_CREDITS,
	EMPTY_MSG,
	CREDIT_WITH_PAYLOAD,
	TOO_LONG
};

static void hostile(enum forgery f)
{
	struct duo d;
	struct rcc_cq *raw_cq;
	struct rcc_cq_attr cqa = { .depth = 64 };
	struct rcc_chan *b;
	struct rcc_chan_attr cb = { .msg_max = MSG_MAX,
				    .credits = CREDITS,
				    .cq_mode = RCC_CQ_WAIT };
	struct tbuf buf;
	uint8_t in[MSG_MAX];
	struct rcc_wc wc;

	CHECK_OK(duo_ctx(&d));
	CHECK_OK(rcc_cq_create(d.ctx, &cqa, &raw_cq));
	CHECK_OK(rcc_chan_create(d.ctx, &cb, &b));
	struct rcc_ep_attr aa = { .send_cq = raw_cq }, ab = { 0 };
	CHECK_OK(rcc_chan_ep_attr(b, &ab));
	CHECK_OK(duo_connect(&d, &aa, &ab));
	CHECK_OK(rcc_chan_bind(b, d.b));
	CHECK_OK(tbuf_alloc(&buf, d.ctx, 2 * MSG_MAX, ALL_ACCESS));

	/* a good message: kind 1, version 1, no credits, 4 bytes */
	static const uint8_t good[12] = { 1, 1, 0, 0, 0, 0, 0, 0, 'g', 'o', 'o', 'd' };
	memcpy(buf.p, good, sizeof(good));
	struct rcc_sge sge = tbuf_sge(&buf, 0, sizeof(good));
	CHECK_OK(rcc_post_send(d.a, &sge, 1, 1, RCC_SEND_SIGNALED));
	EXPECT_STATUS(raw_cq, 1, RCC_WC_SUCCESS);

	uint32_t len = 12;
	memcpy(buf.p, good, sizeof(good));
	switch (f) {
	case BAD_VERSION:
		buf.p[1] = 2;
		break;
	case BAD_KIND:
		buf.p[0] = 3;
		break;
	case FORGED_CREDITS:
		buf.p[4] = 1; /* it never had a message of ours to give back */
		break;
	case EMPTY_MSG:
		len = 8;
		break;
	case CREDIT_WITH_PAYLOAD:
		buf.p[0] = 2;
		break;
	case TOO_LONG:
		len = 2 * MSG_MAX; /* more than a receive slot holds */
		break;
	}
	sge = tbuf_sge(&buf, 0, len);
	CHECK_OK(rcc_post_send(d.a, &sge, 1, 2, RCC_SEND_SIGNALED));

	CHECK_EQ(rcc_chan_recv(b, in, sizeof(in), NULL, TEST_TIMEOUT_MS), 4);
	CHECK(!memcmp(in, "good", 4));
	CHECK_EQ(rcc_chan_recv(b, in, sizeof(in), NULL, TEST_TIMEOUT_MS), -EPROTO);
	/* the reason, in words, for the application to show */
	const char *why = f == FORGED_CREDITS ? "more than it had" :
			  f == TOO_LONG       ? "a receive completed with" :
						"malformed message";
	CHECK_MSG(strstr(rcc_last_error(), why), "rcc_last_error() says '%s', wanted '%s'",
		  rcc_last_error(), why);
	CHECK_EQ(rcc_chan_send(b, in, 1, 0), -EPROTO);
	/* cut off: the raw side sees its connection end, bounded */
	CHECK_OK(wait_one(raw_cq, &wc, TEST_TIMEOUT_MS));
	uint64_t until = now_ms() + TEST_TIMEOUT_MS;
	while (rcc_ep_state(d.a) == RCC_EP_CONNECTED && now_ms() < until)
		rcc_cq_wait(raw_cq, &wc, 1, 50);
	CHECK(rcc_ep_state(d.a) != RCC_EP_CONNECTED);

	TEARDOWN(rcc_ep_close(d.a));
	TEARDOWN(rcc_ep_close(d.b));
	tbuf_free(&buf);
	TEARDOWN(rcc_chan_destroy(b));
	TEARDOWN(rcc_cq_destroy(raw_cq));
	TEARDOWN(rcc_listener_close(d.lst));
	TEARDOWN(rcc_ctx_close(d.ctx));
}

static void chan_hostile_bad_version(void) { hostile(BAD_VERSION); }
static void chan_hostile_bad_kind(void) { hostile(BAD_KIND); }
static void chan_hostile_forged_credits(void) { hostile(FORGED_CREDITS); }
static void chan_hostile_empty_message(void) { hostile(EMPTY_MSG); }
static void chan_hostile_credit_with_payload(void) { hostile(CREDIT_WITH_PAYLOAD); }
static void chan_hostile_too_long(void) { hostile(TOO_LONG); }

/*
 * A WRITE_WITH_IMM the peer's memory refuses (a wrong rkey, or past the end
 * of its region): the writer's own completion says so through
 * rcc_chan_poll_app(), and, as any failed request does (rule 4 of rcc.h),
 * it takes the endpoint out of service on both sides, so each channel ends
 * as one whose connection is gone, after what arrived before.
 */
static void write_imm_refused(bool bad_rkey)
{
	struct chan_duo c;
	uint8_t out[MSG_MAX], in[MSG_MAX];
	struct rcc_chan_write_note note;
	struct rcc_wc wc[4];

	CHECK_OK(chan_duo_open(&c, RCC_CQ_WAIT));
	CHECK_OK(chan_duo_bufs(&c, CHUNK, 4096));
	fill_pattern(c.dst.p, 4096, 3);
	struct rcc_remote_mr rm = rcc_mr_remote(c.dst.mr);
	uint64_t raddr = bad_rkey ? rm.addr : rm.addr + rm.length - CHUNK / 2;
	uint32_t rkey = bad_rkey ? rm.rkey ^ 0x5a5a0000u : rm.rkey;
	fill_pattern(out, 5, 1);
	CHECK_OK(rcc_chan_send(c.a, out, 5, TEST_TIMEOUT_MS));
	struct rcc_sge sge = tbuf_sge(&c.src, 0, CHUNK);
	CHECK_OK(rcc_chan_write_imm(c.a, &sge, 1, raddr, rkey, 0x77, 4242, RCC_SEND_SIGNALED,
				    TEST_TIMEOUT_MS));

	/* the writer's channel ends: its receives are flushed */
	CHECK_EQ(rcc_chan_recv(c.a, in, sizeof(in), &note, TEST_TIMEOUT_MS), -ECONNRESET);
	CHECK_MSG(strstr(rcc_last_error(), "message channel to"), "rcc_last_error() says '%s'",
		  rcc_last_error());
	/* ... and why, in the endpoint's words: its flushed receive alone would
	 * not say that the application's own request failed */
	const char *left = rcc_ep_reason(c.d.a, NULL);
	CHECK(left != NULL);
	CHECK_MSG(strstr(rcc_last_error(), left), "rcc_last_error() says '%s', not '%s'",
		  rcc_last_error(), left);
	/* the refusal itself is the application's, whichever queue flushed first */
	int n = 0;
	uint64_t until = now_ms() + TEST_TIMEOUT_MS;
	while (n == 0 && now_ms() < until)
		n = rcc_chan_poll_app(c.a, wc, 4);
	CHECK_EQ(n, 1);
	CHECK_EQ(wc[0].wr_id, 4242);
	CHECK_WC(wc[0], RCC_WC_REM_ACCESS_ERR);
	CHECK_EQ(rcc_ep_state(c.d.a), RCC_EP_ERROR);
	CHECK_EQ(rcc_chan_poll_app(c.a, wc, 4), 0);
	CHECK_EQ(rcc_chan_wait(c.a, 0), -ECONNRESET);
	CHECK_EQ(rcc_chan_send(c.a, out, 1, 0), -ECONNRESET);
	CHECK_EQ(rcc_chan_write_imm(c.a, &sge, 1, rm.addr, rm.rkey, 1, 1, 0, 0), -ECONNRESET);
	CHECK_EQ(rcc_chan_flush(c.a, 0), -ECONNRESET);

	/* the peer: the message sent before, then the end; nothing was written */
	CHECK_EQ(rcc_chan_recv(c.b, in, sizeof(in), &note, TEST_TIMEOUT_MS), 5);
	CHECK_EQ(check_pattern(in, 5, 1), -1);
	/* its receive of the refused WRITE is flushed (Soft-RoCE may complete
	 * it with the refusal instead: -EIO, a request that failed) */
	int rc = rcc_chan_recv(c.b, in, sizeof(in), &note, TEST_TIMEOUT_MS);
	CHECK_MSG(rc == -ECONNRESET || (test_on_verbs() && rc == -EIO), "peer: %s",
		  rcc_strerror(rc));
	CHECK_EQ(check_pattern(c.dst.p, 4096, 3), -1);
	chan_duo_close(&c);
}

static void chan_write_imm_bad_rkey(void) { write_imm_refused(true); }
static void chan_write_imm_out_of_bounds(void) { write_imm_refused(false); }

/*
 * The channel keeps up to app_depth completions of the application's own
 * requests that its calls took from its CQ; one more fails the channel with
 * -EOVERFLOW, and what it kept is still handed out.
 */
static void chan_app_depth_overflow(void)
{
	struct chan_duo c;
	uint8_t out[MSG_MAX], in[MSG_MAX];
	struct rcc_wc wc[4];

	CHECK_OK(chan_duo_open_ex(&c, RCC_CQ_WAIT, 2, false));
	CHECK_OK(chan_duo_bufs(&c, 64, 64));
	struct rcc_remote_mr rm = rcc_mr_remote(c.dst.mr);
	struct rcc_sge sge = tbuf_sge(&c.src, 0, 64);
	fill_pattern(out, 10, 1);
	/* as many WRITEs as app_depth, then a message: once it is flushed (send
	 * completions come in order) the channel has taken both WRITEs' too */
	CHECK_OK(rcc_post_write(c.d.a, &sge, 1, rm.addr, rm.rkey, 1, RCC_SEND_SIGNALED));
	CHECK_OK(rcc_post_write(c.d.a, &sge, 1, rm.addr, rm.rkey, 2, RCC_SEND_SIGNALED));
	CHECK_OK(rcc_chan_send(c.a, out, 10, TEST_TIMEOUT_MS));
	CHECK_OK(rcc_chan_flush(c.a, TEST_TIMEOUT_MS));
	/* one beyond the depth (the message may find it taken already) */
	CHECK_OK(rcc_post_write(c.d.a, &sge, 1, rm.addr, rm.rkey, 3, RCC_SEND_SIGNALED));
	int rc = rcc_chan_send(c.a, out, 10, TEST_TIMEOUT_MS);
	CHECK_MSG(rc == 0 || rc == -EOVERFLOW, "send: %s", rcc_strerror(rc));
	int sent = rc == 0 ? 2 : 1;
	CHECK_EQ(rcc_chan_flush(c.a, TEST_TIMEOUT_MS), -EOVERFLOW);
	CHECK_MSG(strstr(rcc_last_error(), "app_depth"), "rcc_last_error() says '%s'",
		  rcc_last_error());
	CHECK_EQ(rcc_chan_poll_app(c.a, wc, 4), 2);
	CHECK_EQ(wc[0].wr_id, 1);
	CHECK_WC(wc[0], RCC_WC_SUCCESS);
	CHECK_EQ(wc[1].wr_id, 2);
	CHECK_WC(wc[1], RCC_WC_SUCCESS);
	CHECK_EQ(rcc_chan_poll_app(c.a, wc, 4), 0);
	CHECK_EQ(rcc_chan_wait(c.a, 0), -EOVERFLOW);
	CHECK_EQ(rcc_chan_recv(c.a, in, sizeof(in), NULL, 0), -EOVERFLOW);
	CHECK_EQ(rcc_chan_send(c.a, out, 10, 0), -EOVERFLOW);
	/* a failure of this side alone: the peer reads what was sent */
	for (int i = 0; i < sent; i++) {
		CHECK_EQ(rcc_chan_recv(c.b, in, sizeof(in), NULL, TEST_TIMEOUT_MS), 10);
		CHECK_EQ(check_pattern(in, 10, 1), -1);
	}
	chan_duo_close(&c);
}

/*
 * rcc_chan_flush() on the application's CQ only looks (timeout 0): the
 * messages count as outstanding until the application has passed their
 * completions to rcc_chan_handle() -- taken from the CQ is not enough.
 */
static void chan_flush_on_app_cq(void)
{
	struct chan_duo c;
	uint8_t out[MSG_MAX];
	struct rcc_wc wc[4];

	CHECK_OK(chan_duo_open_ex(&c, RCC_CQ_POLL, 0, true));
	CHECK_EQ(rcc_chan_flush(c.a, 0), 0); /* nothing sent yet */
	for (uint32_t i = 0; i < 3; i++) {
		fill_pattern(out, msg_len(i), i);
		CHECK_OK(rcc_chan_send(c.a, out, msg_len(i), 0));
	}
	CHECK_EQ(rcc_chan_flush(c.a, 10), -EINVAL);
	CHECK_EQ(rcc_chan_flush(c.a, -1), -EINVAL);
	CHECK_EQ(rcc_chan_flush(c.a, 0), -EAGAIN);
	/* b sends nothing: a's CQ holds its three send completions alone */
	int n = 0;
	uint64_t until = now_ms() + TEST_TIMEOUT_MS;
	while (n < 3 && now_ms() < until) {
		int k = rcc_cq_poll(c.cq_a, wc + n, 3 - n);
		CHECK_OK(k);
		n += k;
	}
	CHECK_EQ(n, 3);
	CHECK_EQ(rcc_chan_flush(c.a, 0), -EAGAIN);
	for (int i = 0; i < 3; i++) {
		CHECK_WC(wc[i], RCC_WC_SUCCESS);
		CHECK_EQ(rcc_chan_flush(c.a, 0), -EAGAIN);
		CHECK_EQ(rcc_chan_handle(c.a, &wc[i]), 1);
	}
	CHECK_EQ(rcc_chan_flush(c.a, 0), 0);
	chan_duo_close(&c);
}

TEST_MAIN(TEST(chan_roundtrip_poll), TEST(chan_roundtrip_wait), TEST(chan_roundtrip_fd),
	  TEST(chan_roundtrip_hybrid), TEST(chan_credits_hold_sender), TEST(chan_both_ways),
	  TEST(chan_both_ways_sleeping), TEST(chan_wait_any_credit_wakes),
	  TEST(chan_refuses_misuse), TEST(chan_on_app_cq), TEST(chan_write_imm_notes),
	  TEST(chan_on_server_agents), TEST(chan_peer_leaves), TEST(chan_hostile_bad_version),
	  TEST(chan_hostile_bad_kind), TEST(chan_hostile_forged_credits),
	  TEST(chan_hostile_empty_message), TEST(chan_hostile_credit_with_payload),
	  TEST(chan_hostile_too_long), TEST(chan_write_imm_bad_rkey),
	  TEST(chan_write_imm_out_of_bounds), TEST(chan_app_depth_overflow),
	  TEST(chan_flush_on_app_cq))
