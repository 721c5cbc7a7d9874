/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Verbs-only behaviour: device listing and choice, the per-CQ backlog when
 * endpoints share a CQ, the private data of a peer that is not rcc, the
 * manual bring-up listener against garbage and a client that never confirms,
 * inline capacity. Runs in the
 * Soft-RoCE VM (RCC_TEST_TRANSPORT=verbs); elsewhere every case is skipped.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pair.h"

#define SKIP_UNLESS_VERBS()                                                    \
	do {                                                                   \
		if (!test_on_verbs())                                          \
			SKIP_CASE("verbs", "RCC_TEST_TRANSPORT is not verbs"); \
	} while (0)

static void device_list(void)
{
	struct rcc_device_info *d;
	int n = -1;
	bool active = false, v2 = false;

	SKIP_UNLESS_VERBS();
	CHECK_EQ(rcc_device_list(NULL, &n), -EINVAL);
	CHECK_OK(rcc_device_list(&d, &n));
	CHECK(n >= 1);
	for (int i = 0; i < n; i++) {
		CHECK(d[i].name[0] != '\0');
		CHECK(d[i].num_ports >= 1);
		CHECK(d[i].max_qp > 0 && d[i].max_cqe > 0);
		for (int p = 0; p < d[i].num_ports; p++) {
			const struct rcc_port_info *pi = &d[i].ports[p];
			active |= !strcmp(pi->state, "ACTIVE");
			CHECK(pi->active_mtu >= 256 && pi->active_mtu <= pi->max_mtu);
			for (int g = 0; g < pi->num_gids; g++)
				v2 |= !strcmp(pi->gids[g].type, "RoCE v2") ||
				      !strcmp(pi->gids[g].type, "IB");
		}
	}
	rcc_device_list_free(d, n);
	CHECK(active);
	CHECK(v2);
}

static void context_choices(void)
{
	struct rcc_device_info *d;
	struct rcc_ctx *ctx;
	int n;

	SKIP_UNLESS_VERBS();
	CHECK_OK(rcc_device_list(&d, &n));
	CHECK(n >= 1);
	struct rcc_ctx_attr a = { .transport = RCC_TRANSPORT_VERBS, .device = d[0].name };
	CHECK_OK(rcc_ctx_open(&a, &ctx));
	CHECK_EQ(rcc_ctx_transport(ctx), RCC_TRANSPORT_VERBS);
	CHECK_OK(rcc_ctx_close(ctx));
	a.gid_index = RCC_GID_INDEX_ZERO;
	CHECK_OK(rcc_ctx_open(&a, &ctx));
	CHECK_OK(rcc_ctx_close(ctx));
	a.gid_index = 100000; /* beyond any GID table */
	CHECK_EQ(rcc_ctx_open(&a, &ctx), -EINVAL);
	a.gid_index = 0;
	a.port = d[0].num_ports + 1;
	CHECK_EQ(rcc_ctx_open(&a, &ctx), -ENODEV);
	a.port = 0;
	a.device = "no-such-device";
	CHECK_EQ(rcc_ctx_open(&a, &ctx), -ENODEV);
	/* auto with a named device: that device or an error, never a quiet tcp */
	a.transport = RCC_TRANSPORT_AUTO;
	CHECK_EQ(rcc_ctx_open(&a, &ctx), -ENODEV);
	/* auto without a name takes the device there is */
	a.device = NULL;
	CHECK_OK(rcc_ctx_open(&a, &ctx));
	CHECK_EQ(rcc_ctx_transport(ctx), RCC_TRANSPORT_VERBS);
	CHECK_OK(rcc_ctx_close(ctx));
	rcc_device_list_free(d, n);
}

struct connect_job {
	struct rcc_ctx *ctx;
	char addr[128];
	struct rcc_ep_attr attr;
	struct rcc_ep *ep;
	int rc;
};

static void *connect_main(void *arg)
{
	struct connect_job *j = arg;
	j->rc = rcc_connect(j->ctx, j->addr, &j->attr, TEST_TIMEOUT_MS, &j->ep);
	return NULL;
}

/* Two endpoints on one CQ: closing one removes its completions (in the device
 * CQ or pulled into the backlog by the close) and keeps the other's, in order. */
static void shared_cq_close_isolation(void)
{
	struct pair p;
	struct tbuf b = { 0 };
	struct rcc_wc wc[16];
	struct connect_job j;
	struct rcc_ep *b2;
	pthread_t th;

	SKIP_UNLESS_VERBS();
	CHECK_OK(pair_open(&p, NULL));
	CHECK_OK(tbuf_alloc(&b, p.ctx, 16 * 64, RCC_ACCESS_LOCAL_WRITE));
	memset(&j, 0, sizeof(j));
	j.ctx = p.ctx;
	j.attr.send_cq = p.cq_a;
	snprintf(j.addr, sizeof(j.addr), "%s:%d", test_addr(), rcc_listener_port(p.lst));
	CHECK(pthread_create(&th, NULL, connect_main, &j) == 0);
	struct rcc_ep_attr sa = { .send_cq = p.cq_b };
	int rc = rcc_accept(p.lst, &sa, TEST_TIMEOUT_MS, &b2);
	pthread_join(th, NULL);
	CHECK_OK(rc);
	CHECK_OK(j.rc);

	for (int i = 0; i < 4; i++) {
		struct rcc_sge r1 = tbuf_sge(&b, (size_t)i * 64, 64);
		struct rcc_sge r2 = tbuf_sge(&b, (size_t)(4 + i) * 64, 64);
		CHECK_OK(rcc_post_recv(p.b, &r1, 1, 100 + (uint64_t)i));
		CHECK_OK(rcc_post_recv(b2, &r2, 1, 200 + (uint64_t)i));
	}
	struct rcc_sge s = tbuf_sge(&b, 8 * 64, 64);
	CHECK_OK(rcc_post_send(p.a, &s, 1, 1, RCC_SEND_SIGNALED));
	CHECK_OK(rcc_post_send(p.a, &s, 1, 2, RCC_SEND_SIGNALED));
	CHECK_EQ(wait_n(p.cq_a, wc, 2, TEST_TIMEOUT_MS), 2);
	/* both receives have completed on the device; nobody polled them yet */
	CHECK_OK(rcc_ep_close(b2));
	CHECK_OK(rcc_ep_close(j.ep));
	int got = 0;
	for (int tries = 0; tries < 100 && got < 2; tries++)
		got += rcc_cq_poll(p.cq_b, wc + got, 16 - got);
	CHECK_EQ(got, 2);
	for (int i = 0; i < 2; i++) {
		CHECK(wc[i].ep == p.b);
		CHECK_WC(wc[i], RCC_WC_SUCCESS);
		CHECK_EQ(wc[i].wr_id, 100 + (uint64_t)i);
	}
	CHECK_EQ(rcc_cq_poll(p.cq_b, wc, 16), 0);
	CHECK_EQ(rcc_ep_state(p.b), RCC_EP_CONNECTED);
	tbuf_free(&b);
	pair_close(&p);
}

/* A context (and a CQ, when cq is not NULL) listening on the test address,
 * port chosen by the kernel; *sin is where to connect. 0 or a negative errno
 * (nothing left open then). */
static int listen_on_test_addr(struct rcc_ctx **ctx, struct rcc_cq **cq, struct rcc_listener **lst,
			       struct sockaddr_in *sin)
{
	char addr[128];
	int rc = test_ctx_open(ctx);

	if (rc)
		return rc;
	if (cq && (rc = rcc_cq_create(*ctx, NULL, cq)))
		goto err_ctx;
	snprintf(addr, sizeof(addr), "%s:0", test_addr());
	rc = rcc_listen(*ctx, addr, 0, lst);
	if (rc)
		goto err_cq;
	*sin = (struct sockaddr_in){ .sin_family = AF_INET,
				     .sin_port = htons((uint16_t)rcc_listener_port(*lst)) };
	if (inet_pton(AF_INET, test_addr(), &sin->sin_addr) == 1)
		return 0;
	rc = -EINVAL;
	rcc_listener_close(*lst);
err_cq:
	if (cq)
		rcc_cq_destroy(*cq);
err_ctx:
	rcc_ctx_close(*ctx);
	return rc;
}

/* A peer that is not rcc (plain rdma_cm, no rcc header): its private data is
 * passed through as received, cut to rcc's limit. */
static void raw_peer_private_data(void)
{
	struct rcc_ctx *ctx;
	struct rcc_listener *lst;
	struct rcc_conn_req *req;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct rdma_cm_event *ev;
	struct sockaddr_in sin;

	SKIP_UNLESS_VERBS();
	if (test_bringup() != RCC_BRINGUP_CM)
		SKIP_CASE("cm-bringup", "rdma_cm bring-up only");
	CHECK_OK(listen_on_test_addr(&ctx, NULL, &lst, &sin));
	CHECK((ch = rdma_create_event_channel()) != NULL);
	CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0);
	CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin, 2000) == 0);
	CHECK(rdma_get_cm_event(ch, &ev) == 0 && ev->event == RDMA_CM_EVENT_ADDR_RESOLVED);
	rdma_ack_cm_event(ev);
	CHECK(rdma_resolve_route(id, 2000) == 0);
	CHECK(rdma_get_cm_event(ch, &ev) == 0 && ev->event == RDMA_CM_EVENT_ROUTE_RESOLVED);
	rdma_ack_cm_event(ev);
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 }
	};
	CHECK(rdma_create_qp(id, NULL, &qa) == 0);
	static const char hello[] = "hello";
	struct rdma_conn_param cp = { .private_data = hello,
				      .private_data_len = 5,
				      .responder_resources = 1,
				      .initiator_depth = 1,
				      .retry_count = 7,
				      .rnr_retry_count = 7 };
	CHECK(rdma_connect(id, &cp) == 0);
	CHECK_OK(rcc_get_request(lst, TEST_TIMEOUT_MS, &req));
	size_t len;
	const uint8_t *pd = rcc_conn_req_private_data(req, &len);
	/* rdma_cm pads to its fixed size: all of it (up to rcc's limit) comes through */
	CHECK(len >= 5 && len <= RCC_CONNECT_PRIVATE_DATA_MAX);
	CHECK(!memcmp(pd, hello, 5));
	CHECK_OK(rcc_reject_req(req, NULL, 0));
	CHECK(rdma_get_cm_event(ch, &ev) == 0);
	CHECK_EQ(ev->event, RDMA_CM_EVENT_REJECTED);
	rdma_ack_cm_event(ev);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	CHECK_OK(rcc_listener_close(lst));
	CHECK_OK(rcc_ctx_close(ctx));
}

/* The listener still serves a real client (connected, accepted, closed);
 * then the listener, the CQ and the context are closed. */
static void serve_real_client_and_close(struct rcc_ctx *ctx, struct rcc_cq *cq,
					struct rcc_listener *lst)
{
	struct connect_job j = { .ctx = ctx };
	j.attr.send_cq = cq;
	snprintf(j.addr, sizeof(j.addr), "%s:%d", test_addr(), rcc_listener_port(lst));
	pthread_t th;
	CHECK(pthread_create(&th, NULL, connect_main, &j) == 0);
	struct rcc_ep *ep;
	struct rcc_ep_attr a = { .send_cq = cq };
	int rc = rcc_accept(lst, &a, TEST_TIMEOUT_MS, &ep);
	pthread_join(th, NULL);
	CHECK_OK(rc);
	CHECK_OK(j.rc);
	CHECK_OK(rcc_ep_close(ep));
	CHECK_OK(rcc_ep_close(j.ep));
	CHECK_OK(rcc_listener_close(lst));
	CHECK_OK(rcc_cq_destroy(cq));
	CHECK_OK(rcc_ctx_close(ctx));
}

/* Manual bring-up: garbage, a silent client and a truncated HELLO do not stop
 * the listener; a real client still connects afterwards. */
static void manual_listener_survives_garbage(void)
{
	struct rcc_ctx *ctx;
	struct rcc_cq *cq;
	struct rcc_listener *lst;
	struct rcc_conn_req *req;
	struct sockaddr_in sin;

	SKIP_UNLESS_VERBS();
	if (test_bringup() != RCC_BRINGUP_MANUAL) {
		SKIP_CASE("manual-bringup", "manual bring-up only");
	}
	CHECK_OK(listen_on_test_addr(&ctx, &cq, &lst, &sin));
	static const char *junk[] = { "GET / HTTP/1.0\r\n\r\n0123456789012345678901234567890123",
				      "RCCM" };
	for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		CHECK(fd >= 0);
		CHECK(connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0);
		CHECK(write(fd, junk[i], strlen(junk[i])) == (ssize_t)strlen(junk[i]));
		shutdown(fd, SHUT_WR);
		CHECK_EQ(rcc_get_request(lst, 1000, &req), -ETIMEDOUT);
		close(fd);
	}
	serve_real_client_and_close(ctx, cq, lst);
}

/* A manual bring-up HELLO from a raw socket: a plausible QP (any number
 * will do for the server's RTR; the GID is the test address's, v4-mapped),
 * no private data, no heartbeat. */
static int manual_raw_hello(const struct sockaddr_in *sin)
{
	uint8_t m[40] = { 'R', 'C', 'C', 'M', 1, 1 /* HELLO */ };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0)
		return -1;
	m[8] = 0x34; /* QP number 0x1234, little-endian */
	m[9] = 0x12;
	m[12] = 1;    /* first PSN */
	m[18] = 3;    /* IBV_MTU_1024 */
	m[19] = 1;    /* one READ in flight */
	m[30] = 0xff; /* GID ::ffff:a.b.c.d */
	m[31] = 0xff;
	memcpy(m + 32, &sin->sin_addr, 4);
	struct timeval tv = { .tv_sec = 15 }; /* reads below are bounded */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (const struct sockaddr *)sin, sizeof(*sin)) ||
	    write(fd, m, sizeof(m)) != (ssize_t)sizeof(m)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Reads the server's answer: its kind (2 ACCEPT, 3 REJECT), or -1. */
static int manual_raw_answer(int fd)
{
	uint8_t m[40 + RCC_ACCEPT_PRIVATE_DATA_MAX];
	size_t got = 0;

	while (got < 40) {
		ssize_t r = read(fd, m + got, 40 - got);
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return memcmp(m, "RCCM", 4) ? -1 : m[5];
}

/* Whether the server closed its end (EOF, or a reset) within the bound. */
static bool manual_raw_closed(int fd)
{
	uint8_t b[256];
	ssize_t r;

	while ((r = read(fd, b, sizeof(b))) > 0)
		;
	return r == 0 || errno == ECONNRESET;
}

/*
 * Manual bring-up: a client that sends HELLO, takes the ACCEPT and never
 * confirms with READY. The blocking accept gives up within its 5 s bound
 * (the endpoint released, the socket closed), a started accept reports
 * RCC_EVENT_CONNECT_FAILED, and the listener still serves a real client.
 */
static void manual_hello_without_ready(void)
{
	struct rcc_ctx *ctx;
	struct rcc_cq *cq;
	struct rcc_listener *lst;
	struct rcc_conn_req *req;
	struct rcc_ep *ep = NULL;
	struct rcc_event ev;
	struct sockaddr_in sin;

	SKIP_UNLESS_VERBS();
	if (test_bringup() != RCC_BRINGUP_MANUAL)
		SKIP_CASE("manual-bringup", "manual bring-up only");
	CHECK_OK(listen_on_test_addr(&ctx, &cq, &lst, &sin));
	struct rcc_ep_attr a = { .send_cq = cq };

	/* a started accept, then a blocking one: both wait out the same 5 s */
	int fd2 = manual_raw_hello(&sin);
	CHECK(fd2 >= 0);
	CHECK_OK(rcc_get_request(lst, TEST_TIMEOUT_MS, &req));
	struct rcc_ep *started;
	CHECK_OK(rcc_accept_start(req, &a, &started));
	CHECK_EQ(manual_raw_answer(fd2), 2); /* it accepted: the wait is for READY */
	int fd = manual_raw_hello(&sin);
	CHECK(fd >= 0);
	CHECK_OK(rcc_get_request(lst, TEST_TIMEOUT_MS, &req));
	uint64_t t0 = now_ms();
	int rc = rcc_accept_req(req, &a, &ep);
	uint64_t took = now_ms() - t0;
	CHECK_MSG(rc == -ETIMEDOUT, "accept without READY returned %d", rc);
	CHECK(ep == NULL);
	CHECK_MSG(took < 10000, "accept waited %llu ms for a READY", (unsigned long long)took);
	CHECK_EQ(manual_raw_answer(fd), 2);
	CHECK(manual_raw_closed(fd));
	close(fd);
	CHECK_OK(rcc_ctx_get_event(ctx, &ev, 10000));
	CHECK(ev.ep == started);
	CHECK_EQ(ev.type, RCC_EVENT_CONNECT_FAILED);
	CHECK_MSG(ev.status == -ETIMEDOUT, "status %d", ev.status);
	CHECK(manual_raw_closed(fd2));
	close(fd2);
	CHECK_OK(rcc_ep_close(started));

	serve_real_client_and_close(ctx, cq, lst);
}

/* The inline capacity the endpoint reports can be used, byte for byte. */
static void inline_capacity(void)
{
	struct pair p;
	struct tbuf r = { 0 };
	struct rcc_wc wc;

	SKIP_UNLESS_VERBS();
	CHECK_OK(pair_open(&p, NULL));
	uint32_t n = rcc_ep_max_inline(p.a);
	CHECK(n >= 64);
	CHECK_OK(tbuf_alloc(&r, p.ctx, n, RCC_ACCESS_LOCAL_WRITE));
	uint8_t *src = malloc(n); /* not registered: inline needs no key */
	CHECK(src != NULL);
	fill_pattern(src, n, 9);
	struct rcc_sge rs = tbuf_sge(&r, 0, n);
	struct rcc_sge ss = { (uint64_t)(uintptr_t)src, n, 0 };
	CHECK_OK(rcc_post_recv(p.b, &rs, 1, 1));
	CHECK_OK(rcc_post_send(p.a, &ss, 1, 2, RCC_SEND_SIGNALED | RCC_SEND_INLINE));
	memset(src, 0, n); /* copied at post time */
	CHECK_OK(wait_one(p.cq_b, &wc, TEST_TIMEOUT_MS));
	CHECK_WC(wc, RCC_WC_SUCCESS);
	CHECK_EQ(wc.byte_len, n);
	CHECK_EQ(check_pattern(r.p, n, 9), -1);
	free(src);
	tbuf_free(&r);
	pair_close(&p);
}

TEST_MAIN(TEST(device_list), TEST(context_choices), TEST(shared_cq_close_isolation),
	  TEST(raw_peer_private_data), TEST(manual_listener_survives_garbage),
	  TEST(manual_hello_without_ready), TEST(inline_capacity))
