/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A hostile or broken peer on the tcp transport: garbage in the handshake,
 * malformed or out-of-order frames, a frame cut short. The endpoint leaves
 * service with its work flushed; the listener carries on; nothing crashes.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "pair.h"
#include "transport/tcp/wire.h"

struct env {
	struct rcc_ctx *ctx;
	struct rcc_cq *cq;
	struct rcc_listener *lst;
	int port;
	struct tbuf buf;
};

static int env_open(struct env *e)
{
	memset(e, 0, sizeof(*e));
	int rc = test_ctx_open(&e->ctx);
	if (!rc)
		rc = rcc_cq_create(e->ctx, NULL, &e->cq);
	if (!rc)
		rc = rcc_listen(e->ctx, "127.0.0.1:0", 0, &e->lst);
	if (!rc)
		rc = tbuf_alloc(&e->buf, e->ctx, 4096,
				RCC_ACCESS_LOCAL_WRITE | RCC_ACCESS_REMOTE_WRITE |
					RCC_ACCESS_REMOTE_READ);
	if (!rc)
		e->port = rcc_listener_port(e->lst);
	return rc;
}

static void env_close(struct env *e)
{
	tbuf_free(&e->buf);
	if (e->lst)
		TEARDOWN(rcc_listener_close(e->lst));
	if (e->cq)
		TEARDOWN(rcc_cq_destroy(e->cq));
	if (e->ctx)
		TEARDOWN(rcc_ctx_close(e->ctx));
}

static int raw_connect(int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sin, sizeof(sin))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static bool send_all(int fd, const void *p, size_t n)
{
	return send(fd, p, n, MSG_NOSIGNAL) == (ssize_t)n;
}

/* A raw client that completes the handshake; returns its socket. */
struct raw_hello {
	int port;
	int fd;
	bool accepted;
};

static void *raw_hello_thread(void *arg)
{
	struct raw_hello *r = arg;
	uint8_t h[WIRE_HS_HDR_LEN];
	struct wire_hs hs = { .version = WIRE_VERSION, .kind = WIRE_HS_HELLO, .max_rd_atomic = 16 };
	r->fd = raw_connect(r->port);
	if (r->fd < 0)
		return NULL;
	rcci_wire_hs_encode(&hs, h);
	if (!send_all(r->fd, h, sizeof(h)))
		return NULL;
	struct pollfd p = { .fd = r->fd, .events = POLLIN };
	if (poll(&p, 1, TEST_TIMEOUT_MS) == 1 &&
	    recv(r->fd, h, sizeof(h), MSG_WAITALL) == sizeof(h) &&
	    rcci_wire_hs_decode(h, &hs) == 0 && hs.kind == WIRE_HS_ACCEPT)
		r->accepted = true;
	return NULL;
}

/* Accept a raw client with attr a (its send_cq set here); ep gets one posted
 * receive (wr_id 7). */
static int accept_raw_attr(struct env *e, struct raw_hello *r, struct rcc_ep_attr a,
			   struct rcc_ep **ep)
{
	pthread_t th;
	r->port = e->port;
	r->fd = -1;
	if (pthread_create(&th, NULL, raw_hello_thread, r))
		return -EAGAIN;
	a.send_cq = e->cq;
	int rc = rcc_accept(e->lst, &a, TEST_TIMEOUT_MS, ep);
	pthread_join(th, NULL);
	if (!rc && !r->accepted)
		rc = -EPROTO;
	/* every read of the raw peer is bounded */
	struct timeval tv = { .tv_sec = TEST_TIMEOUT_MS / 1000 };
	if (!rc && setsockopt(r->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)))
		rc = -errno;
	if (!rc) {
		struct rcc_sge s = tbuf_sge(&e->buf, 0, 256);
		rc = rcc_post_recv(*ep, &s, 1, 7);
	}
	return rc;
}

static int accept_raw(struct env *e, struct raw_hello *r, struct rcc_ep **ep)
{
	return accept_raw_attr(e, r, (struct rcc_ep_attr){ 0 }, ep);
}

/* The next frame the endpoint sent to a raw peer, its payload skipped; false
 * at the end of the stream or on a malformed header. */
static bool next_frame(int fd, struct wire_hdr *h)
{
	static uint8_t skip[1 << 16];
	uint8_t b[WIRE_HDR_LEN];

	if (recv(fd, b, sizeof(b), MSG_WAITALL) != sizeof(b) || rcci_wire_hdr_decode(b, h))
		return false;
	for (uint32_t left = h->len; left;) {
		uint32_t n = left < sizeof(skip) ? left : (uint32_t)sizeof(skip);
		if (recv(fd, skip, n, MSG_WAITALL) != (ssize_t)n)
			return false;
		left -= n;
	}
	return true;
}

/* Did a NAK with this status for request msn reach the raw peer? */
static bool nak_arrives(int fd, uint16_t status, uint32_t msn)
{
	struct wire_hdr h;
	while (next_frame(fd, &h))
		if (h.type == WIRE_NAK && h.status == status && h.msn == msn)
			return true;
	return false;
}

/* The endpoint leaves service with want, its receive is flushed, and
 * rcc_ep_reason() gives want_status (rcc.h: -EPROTO for a broken protocol,
 * -EIO for a request that failed, -ECONNRESET for the peer's end). */
static int expect_out_of_service(struct env *e, struct rcc_ep *ep, enum rcc_ep_state want,
				 int want_status)
{
	struct rcc_wc wc;
	int st = 1;
	int rc = wait_one(e->cq, &wc, TEST_TIMEOUT_MS);
	if (rc)
		return rc;
	if (wc.wr_id != 7 || wc.status != RCC_WC_WR_FLUSH_ERR)
		return -EIO;
	if (rcc_ep_state(ep) != want)
		return -EIO;
	const char *why = rcc_ep_reason(ep, &st);
	if (!why || st != want_status) {
		printf("reason: %s, status %d (want %d)\n", why ? why : "(none)", st, want_status);
		return -EIO;
	}
	return 0;
}

/* Garbage instead of a hello is dropped; the next real client gets in. */
static void handshake_garbage(void)
{
	struct env e;
	struct rcc_conn_req *req;

	CHECK_OK(env_open(&e));
	int fd = raw_connect(e.port);
	CHECK(fd >= 0);
	CHECK(send_all(fd, "GET / HTTP/1.1\r\n\r\n", 18));
	/* the listener drops it and keeps waiting */
	CHECK_EQ(rcc_get_request(e.lst, 200, &req), -ETIMEDOUT);
	char x;
	CHECK(recv(fd, &x, 1, 0) <= 0); /* closed on us (a reset if bytes were left unread) */
	close(fd);
	struct raw_hello r;
	struct rcc_ep *ep;
	CHECK_OK(accept_raw(&e, &r, &ep));
	close(r.fd);
	rcc_ep_close(ep);
	env_close(&e);
}

static void frame_garbage(void)
{
	struct env e;
	struct raw_hello r;
	struct rcc_ep *ep;
	uint8_t junk[WIRE_HDR_LEN];

	CHECK_OK(env_open(&e));
	CHECK_OK(accept_raw(&e, &r, &ep));
	fill_pattern(junk, sizeof(junk), 99);
	junk[0] = 0xee; /* no such frame type */
	CHECK(send_all(r.fd, junk, sizeof(junk)));
	CHECK_OK(expect_out_of_service(&e, ep, RCC_EP_ERROR, -EPROTO));
	close(r.fd);
	rcc_ep_close(ep);
	env_close(&e);
}

/* A well-formed SEND with the wrong message number. */
static void frame_out_of_order(void)
{
	struct env e;
	struct raw_hello r;
	struct rcc_ep *ep;
	uint8_t f[WIRE_HDR_LEN + 4];

	CHECK_OK(env_open(&e));
	CHECK_OK(accept_raw(&e, &r, &ep));
	struct wire_hdr h = { .type = WIRE_SEND,
			      .flags = WIRE_F_FIRST | WIRE_F_LAST,
			      .len = 4,
			      .total = 4,
			      .msn = 5 /* 0 expected */ };
	rcci_wire_hdr_encode(&h, f);
	memcpy(f + WIRE_HDR_LEN, "abcd", 4);
	CHECK(send_all(r.fd, f, sizeof(f)));
	CHECK_OK(expect_out_of_service(&e, ep, RCC_EP_ERROR, -EPROTO));
	close(r.fd);
	rcc_ep_close(ep);
	env_close(&e);
}

/* A response to a request we never made, and an ack for one we never sent. */
static void unsolicited_response_and_ack(void)
{
	for (int variant = 0; variant < 2; variant++) {
		struct env e;
		struct raw_hello r;
		struct rcc_ep *ep;
		uint8_t f[WIRE_HDR_LEN + WIRE_ATOMIC_RESP_LEN] = { 0 };

		CHECK_OK(env_open(&e));
		CHECK_OK(accept_raw(&e, &r, &ep));
		struct wire_hdr h = { .type = WIRE_ATOMIC_RESP, .len = WIRE_ATOMIC_RESP_LEN };
		if (variant) {
			h = (struct wire_hdr){ .type = WIRE_ACK, .ack = 3 };
		}
		rcci_wire_hdr_encode(&h, f);
		CHECK(send_all(r.fd, f, WIRE_HDR_LEN + h.len));
		CHECK_OK(expect_out_of_service(&e, ep, RCC_EP_ERROR, -EPROTO));
		close(r.fd);
		rcc_ep_close(ep);
		env_close(&e);
	}
}

/* A frame cut short by the peer's exit: disconnected, flushed, no hang. */
static void frame_cut_short(void)
{
	struct env e;
	struct raw_hello r;
	struct rcc_ep *ep;
	uint8_t f[WIRE_HDR_LEN + 10];

	CHECK_OK(env_open(&e));
	CHECK_OK(accept_raw(&e, &r, &ep));
	struct wire_hdr h = {
		.type = WIRE_SEND, .flags = WIRE_F_FIRST | WIRE_F_LAST, .len = 200, .total = 200
	};
	rcci_wire_hdr_encode(&h, f);
	memset(f + WIRE_HDR_LEN, 1, 10);
	CHECK(send_all(r.fd, f, sizeof(f)));
	close(r.fd);
	/* the half-filled receive is flushed with the rest */
	CHECK_OK(expect_out_of_service(&e, ep, RCC_EP_DISCONNECTED, -ECONNRESET));
	rcc_ep_close(ep);
	env_close(&e);
}

/* A remote WRITE aimed at memory that was never registered. */
static void write_to_unregistered_memory(void)
{
	struct env e;
	struct raw_hello r;
	struct rcc_ep *ep;
	uint8_t f[WIRE_HDR_LEN + 8];
	static uint64_t secret = 0x1122334455667788ull;

	CHECK_OK(env_open(&e));
	CHECK_OK(accept_raw(&e, &r, &ep));
	struct wire_hdr h = { .type = WIRE_WRITE,
			      .flags = WIRE_F_FIRST | WIRE_F_LAST,
			      .len = 8,
			      .total = 8,
			      .raddr = (uintptr_t)&secret,
			      .rkey = rcc_mr_rkey(e.buf.mr) };
	rcci_wire_hdr_encode(&h, f);
	memset(f + WIRE_HDR_LEN, 0, 8);
	CHECK(send_all(r.fd, f, sizeof(f)));
	CHECK_OK(expect_out_of_service(&e, ep, RCC_EP_ERROR, -EIO));
	CHECK_EQ(secret, 0x1122334455667788ull);
	/* the peer was told why: a NAK for request 0 */
	CHECK(nak_arrives(r.fd, WIRE_NAK_REM_ACCESS, 0));
	close(r.fd);
	rcc_ep_close(ep);
	env_close(&e);
}

/* rnr_retry = N: the SEND goes out once and is retried exactly N times, then
 * completes with RNR_RETRY_EXC_ERR. A raw peer answers each copy with an RNR
 * NAK (the shortest timer) and counts them: the API alone cannot tell N
 * retries from N + 1 except by timing. */
static void rnr_retries_counted(void)
{
	enum {
		RETRIES = 3
	};
	struct env e;
	struct raw_hello r;
	struct rcc_ep *ep;
	struct rcc_wc wc = { 0 };
	int sends = 0;
	bool done = false;

	CHECK_OK(env_open(&e));
	CHECK_OK(accept_raw_attr(&e, &r, (struct rcc_ep_attr){ .rnr_retry = RETRIES }, &ep));
	struct rcc_sge s = tbuf_sge(&e.buf, 256, 64);
	CHECK_OK(rcc_post_send(ep, &s, 1, 9, RCC_SEND_SIGNALED));
	uint64_t end = now_ms() + TEST_TIMEOUT_MS;
	while (!done && now_ms() < end) {
		struct pollfd pf = { .fd = r.fd, .events = POLLIN };
		if (poll(&pf, 1, 20) == 1) {
			struct wire_hdr h;
			CHECK(next_frame(r.fd, &h));
			if (h.type == WIRE_SEND) {
				CHECK_EQ(h.msn, 0);
				sends++;
				uint8_t f[WIRE_HDR_LEN];
				struct wire_hdr nak = { .type = WIRE_NAK,
							.status = WIRE_NAK_RNR,
							.msn = h.msn,
							.imm = 1 };
				rcci_wire_hdr_encode(&nak, f);
				CHECK(send_all(r.fd, f, sizeof(f)));
			}
		}
		/* the receive (wr_id 7) is flushed once the send failed */
		while (!done && rcc_cq_poll(e.cq, &wc, 1) == 1)
			done = wc.wr_id == 9;
	}
	CHECK_MSG(done, "the SEND did not complete (%d copies seen)", sends);
	CHECK_WC(wc, RCC_WC_RNR_RETRY_EXC_ERR);
	CHECK_EQ(sends, 1 + RETRIES);
	close(r.fd);
	TEARDOWN(rcc_ep_close(ep));
	env_close(&e);
}

/* A FETCH_ADD on an address that is not 8-byte aligned, inside a region with
 * remote-atomic access (an rcc initiator refuses it at post; a hostile peer
 * sends it anyway): an invalid request, NAKed, the memory untouched. */
static void atomic_unaligned(void)
{
	struct env e;
	struct raw_hello r;
	struct rcc_ep *ep;
	struct tbuf t = { 0 };
	uint8_t f[WIRE_HDR_LEN + WIRE_ATOMIC_REQ_LEN] = { 0 };

	CHECK_OK(env_open(&e));
	CHECK_OK(tbuf_alloc(&t, e.ctx, 64, RCC_ACCESS_LOCAL_WRITE | RCC_ACCESS_REMOTE_ATOMIC));
	fill_pattern(t.p, 64, 17);
	CHECK_OK(accept_raw(&e, &r, &ep));
	struct wire_hdr h = { .type = WIRE_ATOMIC_REQ,
			      .len = WIRE_ATOMIC_REQ_LEN,
			      .raddr = (uintptr_t)t.p + 4,
			      .rkey = rcc_mr_rkey(t.mr) };
	rcci_wire_hdr_encode(&h, f);
	f[WIRE_HDR_LEN] = 1; /* add 1 (little-endian operand) */
	CHECK(send_all(r.fd, f, sizeof(f)));
	CHECK_OK(expect_out_of_service(&e, ep, RCC_EP_ERROR, -EIO));
	CHECK_EQ(check_pattern(t.p, 64, 17), -1);
	CHECK(nak_arrives(r.fd, WIRE_NAK_REM_INV_REQ, 0));
	close(r.fd);
	rcc_ep_close(ep);
	tbuf_free(&t);
	env_close(&e);
}

/* A peer with more READs outstanding than the target agreed to serve
 * (max_rd_atomic 1): the first READ, too large to leave the socket while the
 * peer does not read, is still being answered when the second arrives, which
 * is NAKed as an invalid request; the target leaves service. */
static void reads_beyond_max_rd_atomic(void)
{
	enum {
		BIG = 16 << 20
	}; /* more than the kernel buffers hold */
	struct env e;
	struct raw_hello r;
	struct rcc_ep *ep;
	struct tbuf t = { 0 };
	uint8_t f[2 * WIRE_HDR_LEN];

	CHECK_OK(env_open(&e));
	CHECK_OK(tbuf_alloc(&t, e.ctx, BIG, RCC_ACCESS_LOCAL_WRITE | RCC_ACCESS_REMOTE_READ));
	CHECK_OK(accept_raw_attr(&e, &r, (struct rcc_ep_attr){ .max_rd_atomic = 1 }, &ep));
	for (uint32_t i = 0; i < 2; i++) {
		struct wire_hdr h = { .type = WIRE_READ_REQ,
				      .msn = i,
				      .total = i ? 8 : BIG,
				      .raddr = (uintptr_t)t.p,
				      .rkey = rcc_mr_rkey(t.mr) };
		rcci_wire_hdr_encode(&h, f + i * WIRE_HDR_LEN);
	}
	CHECK(send_all(r.fd, f, sizeof(f)));
	/* the first READ's data, then the NAK of the second */
	struct wire_hdr got;
	bool nak = false;
	while (!nak && next_frame(r.fd, &got)) {
		CHECK_MSG(got.type != WIRE_READ_RESP || got.msn == 0,
			  "READ %u served beyond max_rd_atomic", got.msn);
		nak = got.type == WIRE_NAK && got.status == WIRE_NAK_REM_INV_REQ && got.msn == 1;
	}
	CHECK(nak);
	CHECK_OK(expect_out_of_service(&e, ep, RCC_EP_ERROR, -EIO));
	close(r.fd);
	rcc_ep_close(ep);
	tbuf_free(&t);
	env_close(&e);
}

/*
 * A peer that reads slowly: SENDs posted one at a time fill the socket, and
 * the one the socket takes only part of keeps its rest for later (a frame
 * alone goes out without the transmit side's rounds: tx.c, send_lone). Once
 * the peer reads, every frame arrives whole and in order, byte for byte.
 * With flags RCC_SEND_INLINE from one buffer rewritten for each post (the
 * copy made at post time goes out), else each from its own slice of a
 * registered buffer (read where it lies; the rest of a frame cut short is
 * copied aside before the post returns).
 */
static void slow_reader_gets_whole_frames(unsigned flags)
{
	enum {
		N = 4000,  /* 16 MB: more than the loopback socket pair holds */
		LEN = 4000 /* several frames per socket buffer; inline allows 4096 */
	};
	struct env e;
	struct raw_hello r;
	struct rcc_ep *ep;
	struct tbuf src = { 0 };
	static uint8_t got[LEN];

	CHECK_OK(env_open(&e));
	/* room for the flush of every request (and of the receive) at the end */
	CHECK_OK(rcc_cq_destroy(e.cq));
	e.cq = NULL;
	CHECK_OK(rcc_cq_create(e.ctx, &(struct rcc_cq_attr){ .depth = N + 16 }, &e.cq));
	CHECK_OK(tbuf_alloc(&src, e.ctx, (size_t)N * LEN, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(accept_raw_attr(&e, &r, (struct rcc_ep_attr){ .sq_depth = N, .max_inline = LEN },
				 &ep));
	for (int i = 0; i < N; i++) {
		size_t at = flags & RCC_SEND_INLINE ? 0 : (size_t)i * LEN;
		fill_pattern(src.p + at, LEN, 1000 + (uint64_t)i);
		struct rcc_sge s = tbuf_sge(&src, at, LEN);
		CHECK_OK(rcc_post_send(ep, &s, 1, (uint64_t)i, flags));
	}
	for (uint32_t i = 0; i < N;) {
		uint8_t b[WIRE_HDR_LEN];
		struct wire_hdr h;
		CHECK_EQ(recv(r.fd, b, sizeof(b), MSG_WAITALL), (ssize_t)sizeof(b));
		CHECK_OK(rcci_wire_hdr_decode(b, &h));
		if (h.type == WIRE_ACK) /* a heartbeat */
			continue;
		CHECK_EQ(h.type, WIRE_SEND);
		CHECK_EQ(h.msn, i);
		CHECK_EQ(h.len, LEN);
		CHECK_EQ(recv(r.fd, got, LEN, MSG_WAITALL), (ssize_t)LEN);
		CHECK_EQ(check_pattern(got, LEN, 1000 + (uint64_t)i), -1);
		if (test_failed)
			break;
		i++;
	}
	close(r.fd);
	rcc_ep_close(ep);
	tbuf_free(&src);
	env_close(&e);
}

static void slow_reader_inline(void) { slow_reader_gets_whole_frames(RCC_SEND_INLINE); }
static void slow_reader_registered(void) { slow_reader_gets_whole_frames(0); }

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		TEST(handshake_garbage),     TEST(frame_garbage),
		TEST(frame_out_of_order),    TEST(unsolicited_response_and_ack),
		TEST(frame_cut_short),       TEST(write_to_unregistered_memory),
		TEST(atomic_unaligned),      TEST(reads_beyond_max_rd_atomic),
		TEST(rnr_retries_counted),   TEST(slow_reader_inline),
		TEST(slow_reader_registered)
	};

	/* It speaks the tcp transport's own wire format. */
	if (test_transport() != RCC_TRANSPORT_TCP)
		return test_skip_all("tcp",
				     "only the tcp transport has an rcc wire format to abuse");
	return test_main(argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}
