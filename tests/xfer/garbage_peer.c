/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A hostile rcc-xfer sender, written directly on the rcc API: each case opens
 * a connection to the receiver named by XFER_TEST_ADDR ("host:port") and
 * misbehaves in one way -- malformed frames, lies about lengths, forged
 * proofs and tags, replays, chunks out of order or out of bounds, a DONE too
 * early or with the wrong hash. The receiver must refuse each one cleanly
 * (an ERROR and/or closing the connection, within a bounded time) and keep
 * serving; x-garbage.sh checks that it does and that nothing was stored.
 *
 * Frames travel as messages of rcc's message channel (rcc_chan_*), whose
 * 8-byte header is written here by hand, as a second implementation of it
 * would: kind (1 a message, 2 credits only), version 1, two zero bytes, and
 * the receives posted again since the last header (u32 little endian).
 */
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "hash.h"
#include "pair.h"
#include "proto.h"
#include "window.h"
#include "cursor.h"

#define NRX ((int)XFER_CHAN_CREDITS) /* the receives the receiver's channel counts on */
#define CHAN_HDR 8
#define SLOT (CHAN_HDR + XFER_FRAME_MAX)
#define WAIT_MS 10000

struct raw {
	struct rcc_ctx *ctx;
	struct rcc_cq *cq;
	struct rcc_ep *ep;
	struct tbuf rx, tx, data;
	struct auth_transcript t;
	uint8_t skey[XFER_MAC_LEN];
	uint64_t seq_tx;
	uint32_t to_return;          /* receives posted again, not yet told to the receiver */
	struct rcc_remote_mr window; /* from the last ACCEPT */
	uint32_t chunk, count;
};

enum {
	EV_MSG = 1,
	EV_CLOSED,
	EV_TIMEOUT,
	EV_WRITE_ERR
};

static const char *target(void)
{
	const char *a = getenv("XFER_TEST_ADDR");
	return a ? a : "127.0.0.1:7472";
}

static void raw_close(struct raw *r)
{
	if (r->ep)
		rcc_ep_close(r->ep);
	tbuf_free(&r->data);
	tbuf_free(&r->tx);
	tbuf_free(&r->rx);
	if (r->cq)
		rcc_cq_destroy(r->cq);
	if (r->ctx)
		rcc_ctx_close(r->ctx);
	memset(r, 0, sizeof(*r));
}

/* Connect with the given private data (NULL: none). Returns rcc_connect's status. */
static int raw_connect(struct raw *r, const void *pdata, uint32_t len)
{
	struct rcc_cq_attr ca = { .depth = 256, .mode = RCC_CQ_WAIT };
	struct rcc_recv_wr wr[NRX];
	struct rcc_sge sge[NRX];
	struct rcc_ep_attr a = { 0 };
	int rc;

	memset(r, 0, sizeof(*r));
	if ((rc = test_ctx_open(&r->ctx)) || (rc = rcc_cq_create(r->ctx, &ca, &r->cq)) ||
	    (rc = tbuf_alloc(&r->rx, r->ctx, NRX * SLOT, RCC_ACCESS_LOCAL_WRITE)) ||
	    (rc = tbuf_alloc(&r->tx, r->ctx, 4 * SLOT, RCC_ACCESS_LOCAL_WRITE)) ||
	    (rc = tbuf_alloc(&r->data, r->ctx, 1 << 20, RCC_ACCESS_LOCAL_WRITE)))
		return rc;
	for (int i = 0; i < NRX; i++) {
		sge[i] = tbuf_sge(&r->rx, (size_t)i * SLOT, SLOT);
		wr[i] = (struct rcc_recv_wr){ .wr_id = (uint64_t)i,
					      .sg_list = &sge[i],
					      .num_sge = 1 };
	}
	a.send_cq = r->cq;
	a.sq_depth = 64;
	a.rq_depth = NRX;
	a.private_data = pdata;
	a.private_data_len = len;
	a.initial_recv = wr;
	a.num_initial_recv = NRX;
	return rcc_connect(r->ctx, target(), &a, WAIT_MS, &r->ep);
}

static int raw_connect_ok(struct raw *r)
{
	uint8_t pd[XFER_PDATA_LEN];

	random_bytes(r->t.token_s, XFER_TOKEN_LEN);
	pdata_encode(r->t.token_s, pd);
	uint8_t keep[XFER_TOKEN_LEN];
	memcpy(keep, r->t.token_s, XFER_TOKEN_LEN);
	int rc = raw_connect(r, pd, sizeof(pd));
	memcpy(r->t.token_s, keep, XFER_TOKEN_LEN);
	if (rc)
		return rc;
	size_t n;
	const void *peer = rcc_ep_private_data(r->ep, &n);
	return pdata_decode(peer, n, r->t.token_r);
}

/* Post bytes as one SEND, behind a channel header unless bare; 0 once
 * posted (the peer may drop us at any time). */
static int raw_post(struct raw *r, const void *p, size_t len, bool bare)
{
	static unsigned next;
	uint8_t *slot = r->tx.p + (size_t)(next++ % 4) * SLOT;
	size_t hdr = bare ? 0 : CHAN_HDR;
	struct rcc_sge sge;

	if (!bare) {
		struct wcur w;
		w_init(&w, slot, CHAN_HDR);
		w_u8(&w, 1);
		w_u8(&w, 1);
		w_u16(&w, 0);
		w_u32(&w, r->to_return);
		r->to_return = 0;
	}
	memcpy(slot + hdr, p, len);
	sge = tbuf_sge(&r->tx, (size_t)(slot - r->tx.p), (uint32_t)(hdr + len));
	return rcc_post_send(r->ep, &sge, 1, 1000, RCC_SEND_SIGNALED);
}

static int raw_send_bytes(struct raw *r, const void *p, size_t len)
{
	return raw_post(r, p, len, false);
}

/* Encode m, optionally sealed (with a spoiled tag, or an old sequence number). */
static int raw_send_msg(struct raw *r, const struct xmsg *m, bool seal, bool spoil, bool replay)
{
	uint8_t f[XFER_FRAME_MAX];
	int len = xmsg_encode(m, f, sizeof(f) - XFER_TAG_LEN);

	if (len < 0)
		return len;
	if (seal) {
		uint64_t seq = replay && r->seq_tx ? r->seq_tx - 1 : r->seq_tx;
		f[5] |= XFER_FLAG_SEALED;
		auth_frame_tag(r->skey, AUTH_SENDER, seq, f, (size_t)len, f + len);
		if (!replay)
			r->seq_tx++;
		if (spoil)
			f[len + 3] ^= 0x40;
		len += XFER_TAG_LEN;
	}
	return raw_send_bytes(r, f, (size_t)len);
}

/* The receiver's next message (tags are not checked here), or that it closed. */
static int raw_next(struct raw *r, struct xmsg *m)
{
	uint64_t end = now_ms() + WAIT_MS;
	struct rcc_wc wc;

	while (now_ms() < end) {
		int n = rcc_cq_wait(r->cq, &wc, 1, 100);
		if (n == -ETIMEDOUT)
			continue;
		if (n < 0)
			return EV_CLOSED;
		if (wc.status == RCC_WC_WR_FLUSH_ERR)
			return EV_CLOSED;
		if (wc.status != RCC_WC_SUCCESS)
			return wc.opcode == RCC_WC_RECV ? EV_CLOSED : EV_WRITE_ERR;
		if (wc.wr_id >= NRX)
			continue; /* our own send or write completed */
		const uint8_t *f = r->rx.p + wc.wr_id * SLOT;
		struct xhdr h;
		const char *why;
		struct rcc_sge sge = tbuf_sge(&r->rx, wc.wr_id * SLOT, SLOT);
		if (wc.byte_len < CHAN_HDR || (f[0] != 1 && f[0] != 2))
			return EV_CLOSED;
		bool credits_only = f[0] == 2;
		uint32_t len = wc.byte_len - CHAN_HDR;
		f += CHAN_HDR;
		if (!credits_only && (xhdr_parse(f, len, &h, &why) ||
				      xmsg_decode_body(&h, f + XFER_HDR_LEN, m, &why)))
			return EV_CLOSED;
		if (rcc_post_recv(r->ep, &sge, 1, wc.wr_id) == 0)
			r->to_return++;
		if (credits_only || m->type == XM_KEEPALIVE || m->type == XM_CREDIT)
			continue;
		return EV_MSG;
	}
	return EV_TIMEOUT;
}

/* Read until the receiver closes; *code gets the last ERROR code seen (0: none). */
static int expect_closed(struct raw *r, uint32_t *code)
{
	struct xmsg m;
	int ev;

	*code = 0;
	while ((ev = raw_next(r, &m)) == EV_MSG || ev == EV_WRITE_ERR)
		if (ev == EV_MSG && m.type == XM_ERROR)
			*code = m.u.error.code;
	return ev;
}

static int raw_auth(struct raw *r)
{
	struct xfer_key k;
	struct xmsg m = { .type = XM_HELLO };
	int warn;
	char err[200];

	if (key_load(NULL, &k, &warn, err, sizeof(err)))
		return -1;
	snprintf(r->t.id, sizeof(r->t.id), "garbage-peer");
	random_bytes(r->t.nonce_s, XFER_NONCE_LEN);
	m.u.hello.version = XFER_PROTO_VERSION;
	memcpy(m.u.hello.nonce, r->t.nonce_s, XFER_NONCE_LEN);
	snprintf(m.u.hello.id, sizeof(m.u.hello.id), "%s", r->t.id);
	if (raw_send_msg(r, &m, false, false, false) || raw_next(r, &m) != EV_MSG ||
	    m.type != XM_CHALLENGE)
		return -1;
	memcpy(r->t.nonce_r, m.u.challenge.nonce, XFER_NONCE_LEN);
	memset(&m, 0, sizeof(m));
	m.type = XM_AUTH;
	auth_proof(&k, AUTH_SENDER, &r->t, m.u.auth.mac);
	auth_session_key(&k, &r->t, r->skey);
	key_wipe(&k);
	if (raw_send_msg(r, &m, false, false, false) || raw_next(r, &m) != EV_MSG ||
	    m.type != XM_AUTH_OK)
		return -1;
	return 0;
}

static int raw_meta(struct raw *r, const char *name, uint64_t size, struct xmsg *reply)
{
	struct xmsg m = { .type = XM_META };

	m.u.meta.size = size;
	m.u.meta.mode = 0644;
	snprintf(m.u.meta.name, sizeof(m.u.meta.name), "%s", name);
	if (raw_send_msg(r, &m, true, false, false) || raw_next(r, reply) != EV_MSG)
		return -1;
	if (reply->type == XM_ACCEPT) {
		r->window = reply->u.accept.window;
		r->chunk = reply->u.accept.chunk_size;
		r->count = reply->u.accept.chunk_count;
	}
	return 0;
}

/* ------------------------------------------------------------------ cases */

static void rejected_private_data(void)
{
	struct raw r;
	uint8_t junk[XFER_PDATA_LEN];

	random_bytes(junk, sizeof(junk));
	CHECK_EQ(raw_connect(&r, junk, sizeof(junk)), -ECONNABORTED);
	raw_close(&r);
	CHECK_EQ(raw_connect(&r, NULL, 0), -ECONNABORTED);
	raw_close(&r);
}

static void random_bytes_frame(void)
{
	struct raw r;
	uint8_t junk[100];
	uint32_t code;

	/* as a frame in a well-formed channel message, and bare */
	for (int bare = 0; bare < 2; bare++) {
		CHECK_OK(raw_connect_ok(&r));
		random_bytes(junk, sizeof(junk));
		CHECK_OK(raw_post(&r, junk, sizeof(junk), bare));
		CHECK_EQ(expect_closed(&r, &code), EV_CLOSED);
		raw_close(&r);
	}
}

static void lying_lengths(void)
{
	struct raw r;
	uint8_t f[64];
	struct wcur w;
	uint32_t code;

	/* A header that claims a 100000-byte body. */
	CHECK_OK(raw_connect_ok(&r));
	w_init(&w, f, sizeof(f));
	w_u32(&w, XFER_MAGIC);
	w_u8(&w, XM_HELLO);
	w_u8(&w, 0);
	w_u16(&w, 0);
	w_u32(&w, 100000);
	CHECK_OK(raw_send_bytes(&r, f, w.len));
	CHECK_EQ(expect_closed(&r, &code), EV_CLOSED);
	raw_close(&r);

	/* A HELLO cut short, an empty frame, and an empty SEND (not even a
	 * channel header). */
	struct xmsg m = { .type = XM_HELLO };
	m.u.hello.version = XFER_PROTO_VERSION;
	snprintf(m.u.hello.id, sizeof(m.u.hello.id), "x");
	int len = xmsg_encode(&m, f, sizeof(f));
	CHECK(len > 5);
	CHECK_OK(raw_connect_ok(&r));
	CHECK_OK(raw_send_bytes(&r, f, (size_t)len - 5));
	CHECK_EQ(expect_closed(&r, &code), EV_CLOSED);
	raw_close(&r);
	for (int bare = 0; bare < 2; bare++) {
		CHECK_OK(raw_connect_ok(&r));
		CHECK_OK(raw_post(&r, f, 0, bare));
		CHECK_EQ(expect_closed(&r, &code), EV_CLOSED);
		raw_close(&r);
	}
}

static void bad_hello(void)
{
	struct raw r;
	struct xmsg m = { .type = XM_HELLO };
	uint8_t f[XFER_FRAME_MAX];
	uint32_t code;

	CHECK_OK(raw_connect_ok(&r));
	m.u.hello.version = 99;
	snprintf(m.u.hello.id, sizeof(m.u.hello.id), "future");
	CHECK_OK(raw_send_msg(&r, &m, false, false, false));
	CHECK_EQ(expect_closed(&r, &code), EV_CLOSED);
	CHECK_EQ(code, XE_VERSION);
	raw_close(&r);

	/* An id with a space in it (the encoder refuses nothing here). */
	CHECK_OK(raw_connect_ok(&r));
	m.u.hello.version = XFER_PROTO_VERSION;
	snprintf(m.u.hello.id, sizeof(m.u.hello.id), "bad id");
	int len = xmsg_encode(&m, f, sizeof(f));
	CHECK(len > 0);
	CHECK_OK(raw_send_bytes(&r, f, (size_t)len));
	CHECK_EQ(expect_closed(&r, &code), EV_CLOSED);
	raw_close(&r);

	/* A "sealed" HELLO before any key was agreed. */
	CHECK_OK(raw_connect_ok(&r));
	snprintf(m.u.hello.id, sizeof(m.u.hello.id), "early-seal");
	CHECK_OK(raw_send_msg(&r, &m, true, false, false));
	CHECK_EQ(expect_closed(&r, &code), EV_CLOSED);
	raw_close(&r);
}

static void meta_before_auth(void)
{
	struct raw r;
	struct xmsg m = { .type = XM_META };
	uint32_t code;

	CHECK_OK(raw_connect_ok(&r));
	m.u.meta.size = 10;
	snprintf(m.u.meta.name, sizeof(m.u.meta.name), "g-early.bin");
	CHECK_OK(raw_send_msg(&r, &m, false, false, false));
	CHECK_EQ(expect_closed(&r, &code), EV_CLOSED);
	CHECK_EQ(code, XE_PROTO);
	raw_close(&r);
}

static void forged_proof(void)
{
	struct raw r;
	struct xmsg m = { .type = XM_HELLO };
	uint32_t code;

	CHECK_OK(raw_connect_ok(&r));
	m.u.hello.version = XFER_PROTO_VERSION;
	snprintf(m.u.hello.id, sizeof(m.u.hello.id), "forger");
	CHECK_OK(raw_send_msg(&r, &m, false, false, false));
	CHECK_EQ(raw_next(&r, &m), EV_MSG);
	CHECK_EQ(m.type, XM_CHALLENGE);
	memset(&m, 0, sizeof(m));
	m.type = XM_AUTH;
	random_bytes(m.u.auth.mac, XFER_MAC_LEN);
	CHECK_OK(raw_send_msg(&r, &m, false, false, false));
	CHECK_EQ(expect_closed(&r, &code), EV_CLOSED);
	CHECK_EQ(code, XE_AUTH);
	raw_close(&r);
}

static void forged_frames_after_auth(void)
{
	struct raw r;
	struct xmsg ka = { .type = XM_KEEPALIVE }, meta = { .type = XM_META }, m;
	int ev;

	meta.u.meta.size = 10;
	meta.u.meta.mode = 0644;
	snprintf(meta.u.meta.name, sizeof(meta.u.meta.name), "g-forged.bin");
	/* Unsealed, spoiled tag, replayed sequence number: each ends the session,
	 * and the forged request (a META, which a receiver that believed it
	 * would answer with ACCEPT) is not acted on: nothing but an ERROR comes
	 * back before the close. */
	for (int i = 0; i < 3; i++) {
		CHECK_OK(raw_connect_ok(&r));
		CHECK_OK(raw_auth(&r));
		if (i == 2)
			CHECK_OK(raw_send_msg(&r, &ka, true, false, false));
		CHECK_OK(raw_send_msg(&r, &meta, i != 0, i == 1, i == 2));
		while ((ev = raw_next(&r, &m)) == EV_MSG || ev == EV_WRITE_ERR)
			CHECK_MSG(ev != EV_MSG || m.type == XM_ERROR,
				  "forged frame %d answered with %s", i, xmsg_type_name(m.type));
		CHECK_EQ(ev, EV_CLOSED);
		raw_close(&r);
	}
}

static void bad_names_and_sizes(void)
{
	static const char *const names[] = { "../g-up", "/tmp/g-abs", "d/g", "..", "" };
	struct raw r;
	struct xmsg m;
	uint8_t f[XFER_FRAME_MAX];
	uint32_t code;

	CHECK_OK(raw_connect_ok(&r));
	CHECK_OK(raw_auth(&r));
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		CHECK_OK(raw_meta(&r, names[i], 10, &m));
		CHECK_EQ(m.type, XM_ERROR);
		CHECK_EQ(m.u.error.code, XE_BADNAME);
	}
	/* A size no file can have: the decoder refuses it, the session ends. */
	memset(&m, 0, sizeof(m));
	m.type = XM_META;
	m.u.meta.size = UINT64_MAX;
	snprintf(m.u.meta.name, sizeof(m.u.meta.name), "g-huge.bin");
	int len = xmsg_encode(&m, f, sizeof(f) - XFER_TAG_LEN);
	CHECK(len > 0);
	f[5] |= XFER_FLAG_SEALED;
	auth_frame_tag(r.skey, AUTH_SENDER, r.seq_tx++, f, (size_t)len, f + len);
	CHECK_OK(raw_send_bytes(&r, f, (size_t)len + XFER_TAG_LEN));
	CHECK_EQ(expect_closed(&r, &code), EV_CLOSED);
	raw_close(&r);
}

/* Write len bytes of the staging buffer with WRITE_WITH_IMM. */
static int raw_write(struct raw *r, uint64_t raddr, uint32_t len, uint32_t imm)
{
	struct rcc_sge sge = tbuf_sge(&r->data, 0, len);
	return rcc_post_write_imm(r->ep, &sge, 1, raddr, r->window.rkey, imm, 2000,
				  RCC_SEND_SIGNALED);
}

static void chunks_out_of_line(void)
{
	struct raw r;
	struct xmsg m;
	uint32_t code;

	/* The right slot, the wrong sequence number. */
	CHECK_OK(raw_connect_ok(&r));
	CHECK_OK(raw_auth(&r));
	CHECK_OK(raw_meta(&r, "g-order.bin", 4 << 20, &m));
	CHECK_EQ(m.type, XM_ACCEPT);
	CHECK(r.count > 0 && r.chunk >= 4096);
	CHECK_OK(raw_write(&r, r.window.addr, 4096 < r.chunk ? 4096 : r.chunk, imm_encode(0, 5)));
	CHECK_EQ(expect_closed(&r, &code), EV_CLOSED);
	CHECK_EQ(code, XE_PROTO);
	raw_close(&r);

	/* A slot beyond the window, then a short chunk. */
	CHECK_OK(raw_connect_ok(&r));
	CHECK_OK(raw_auth(&r));
	CHECK_OK(raw_meta(&r, "g-order.bin", 4 << 20, &m));
	CHECK_EQ(m.type, XM_ACCEPT);
	CHECK_OK(raw_write(&r, r.window.addr, 4096, imm_encode(200, 0)));
	CHECK_EQ(expect_closed(&r, &code), EV_CLOSED);
	CHECK_EQ(code, XE_PROTO);
	raw_close(&r);
	CHECK_OK(raw_connect_ok(&r));
	CHECK_OK(raw_auth(&r));
	CHECK_OK(raw_meta(&r, "g-order.bin", 4 << 20, &m));
	CHECK_OK(raw_write(&r, r.window.addr, 4096, imm_encode(0, 0)));
	CHECK_EQ(expect_closed(&r, &code), EV_CLOSED);
	CHECK_EQ(code, XE_PROTO);
	raw_close(&r);
}

static void writes_outside_the_window(void)
{
	struct raw r;
	struct xmsg m;
	uint32_t code;

	/* Past the end of the advertised window: refused by the transport. */
	CHECK_OK(raw_connect_ok(&r));
	CHECK_OK(raw_auth(&r));
	CHECK_OK(raw_meta(&r, "g-bounds.bin", 1 << 20, &m));
	CHECK_EQ(m.type, XM_ACCEPT);
	CHECK_OK(raw_write(&r, r.window.addr + r.window.length - 100, 4096, imm_encode(0, 0)));
	CHECK_EQ(expect_closed(&r, &code), EV_CLOSED);
	raw_close(&r);

	/* A guessed key before any window exists. */
	CHECK_OK(raw_connect_ok(&r));
	CHECK_OK(raw_auth(&r));
	r.window.rkey = 0x12345678;
	CHECK_OK(raw_write(&r, 0x10000, 4096, 0));
	CHECK_EQ(expect_closed(&r, &code), EV_CLOSED);
	raw_close(&r);
}

static void done_early_or_wrong(void)
{
	struct raw r;
	struct xmsg m;
	uint32_t code;

	CHECK_OK(raw_connect_ok(&r));
	CHECK_OK(raw_auth(&r));
	CHECK_OK(raw_meta(&r, "g-early-done.bin", 1 << 20, &m));
	CHECK_EQ(m.type, XM_ACCEPT);
	memset(&m, 0, sizeof(m));
	m.type = XM_DONE;
	m.u.done.size = 1 << 20;
	CHECK_OK(raw_send_msg(&r, &m, true, false, false));
	CHECK_EQ(expect_closed(&r, &code), EV_CLOSED);
	CHECK_EQ(code, XE_PROTO);
	raw_close(&r);

	/* All data, then a DONE whose hash is not the data's: BAD, session goes on. */
	CHECK_OK(raw_connect_ok(&r));
	CHECK_OK(raw_auth(&r));
	CHECK_OK(raw_meta(&r, "g-bad-hash.bin", 5000, &m));
	CHECK_EQ(m.type, XM_ACCEPT);
	fill_pattern(r.data.p, 5000, 7);
	CHECK_OK(raw_write(&r, r.window.addr, 5000, imm_encode(0, 0)));
	memset(&m, 0, sizeof(m));
	m.type = XM_DONE;
	m.u.done.size = 5000;
	memset(m.u.done.sha, 0xab, sizeof(m.u.done.sha));
	CHECK_OK(raw_send_msg(&r, &m, true, false, false));
	CHECK_EQ(raw_next(&r, &m), EV_MSG);
	CHECK_EQ(m.type, XM_ERROR);
	CHECK_EQ(m.u.error.code, XE_INTEGRITY);
	memset(&m, 0, sizeof(m));
	m.type = XM_BYE;
	CHECK_OK(raw_send_msg(&r, &m, true, false, false));
	CHECK_EQ(expect_closed(&r, &code), EV_CLOSED);
	raw_close(&r);
}

static void receiver_messages_from_a_sender(void)
{
	struct raw r;
	struct xmsg m = { .type = XM_CREDIT };
	uint32_t code;

	CHECK_OK(raw_connect_ok(&r));
	CHECK_OK(raw_auth(&r));
	CHECK_OK(raw_send_msg(&r, &m, true, false, false));
	CHECK_EQ(expect_closed(&r, &code), EV_CLOSED);
	CHECK_EQ(code, XE_PROTO);
	raw_close(&r);
}

/* Authenticated, a file offered, then nothing: the receiver's wait is bounded
 * (x-garbage.sh starts it with -t 3) and it lets go of the connection. */
static void goes_silent(void)
{
	struct raw r;
	struct xmsg m;
	uint32_t code;
	uint64_t t0;

	CHECK_OK(raw_connect_ok(&r));
	CHECK_OK(raw_auth(&r));
	CHECK_OK(raw_meta(&r, "g-silent.bin", 1 << 20, &m));
	CHECK_EQ(m.type, XM_ACCEPT);
	t0 = now_ms();
	CHECK_EQ(expect_closed(&r, &code), EV_CLOSED);
	CHECK_MSG(now_ms() - t0 >= 2000, "closed after %llu ms, before the timeout",
		  (unsigned long long)(now_ms() - t0));
	raw_close(&r);
}

TEST_MAIN(TEST(rejected_private_data), TEST(random_bytes_frame), TEST(lying_lengths),
	  TEST(bad_hello), TEST(meta_before_auth), TEST(forged_proof),
	  TEST(forged_frames_after_auth), TEST(bad_names_and_sizes), TEST(chunks_out_of_line),
	  TEST(writes_outside_the_window), TEST(done_early_or_wrong),
	  TEST(receiver_messages_from_a_sender), TEST(goes_silent))
