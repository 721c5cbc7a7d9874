/* SPDX-License-Identifier: BSD-3-Clause */
/* Connection events: which endpoints left service, taken by call or from a
 * descriptor in the application's own epoll loop. */
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "pair.h"

static bool readable(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	return poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN);
}

/* Take n events within the test timeout; fails the case if fewer come. */
static void take_events(struct rcc_ctx *ctx, struct rcc_event *ev, int n)
{
	for (int i = 0; i < n; i++)
		CHECK_OK(rcc_ctx_get_event(ctx, &ev[i], TEST_TIMEOUT_MS));
}

/* The one event among n that names ep (NULL: none); *count says how many did. */
static const struct rcc_event *event_for(const struct rcc_event *ev, int n, const struct rcc_ep *ep,
					 int *count)
{
	const struct rcc_event *found = NULL;
	*count = 0;
	for (int i = 0; i < n; i++) {
		if (ev[i].ep == ep) {
			found = &ev[i];
			(*count)++;
		}
	}
	return found;
}

/* A context with one CQ and a listener on the test address; its
 * "host:port" goes to addr. */
static int open_server(struct rcc_ctx **ctx, struct rcc_cq **cq, struct rcc_listener **lst,
		       char *addr, size_t len)
{
	int rc = test_ctx_open(ctx);
	if (rc)
		return rc;
	snprintf(addr, len, "%s:0", test_addr());
	rc = rcc_cq_create(*ctx, NULL, cq);
	if (!rc)
		rc = rcc_listen(*ctx, addr, 0, lst);
	if (!rc)
		snprintf(addr, len, "%s:%d", test_addr(), rcc_listener_port(*lst));
	return rc;
}

/* A disconnect gives each side one DISCONNECTED event carrying its context;
 * the descriptor is readable exactly while events wait. */
static void disconnect_is_an_event(void)
{
	struct pair p;
	struct rcc_event ev[2];
	int tag_a, tag_b;

	CHECK_OK(pair_open(&p, NULL));
	int fd = rcc_ctx_event_fd(p.ctx);
	CHECK(fd >= 0);
	CHECK_EQ(rcc_ctx_event_fd(p.ctx), fd); /* one descriptor per context */
	CHECK(!readable(fd, 0));
	CHECK_EQ(rcc_ctx_get_event(p.ctx, &ev[0], 0), -ETIMEDOUT);
	rcc_ep_set_context(p.a, &tag_a);
	rcc_ep_set_context(p.b, &tag_b);
	int st = 12345;
	CHECK(rcc_ep_reason(p.a, &st) == NULL); /* still in service */
	CHECK_EQ(st, 12345);

	CHECK_OK(rcc_ep_disconnect(p.b));
	CHECK(readable(fd, TEST_TIMEOUT_MS));
	take_events(p.ctx, ev, 2);
	int na, nb;
	const struct rcc_event *ea = event_for(ev, 2, p.a, &na), *eb = event_for(ev, 2, p.b, &nb);
	CHECK(ea && eb && na == 1 && nb == 1);
	CHECK_EQ(ea->type, RCC_EVENT_DISCONNECTED);
	CHECK_EQ(eb->type, RCC_EVENT_DISCONNECTED);
	CHECK(ea->context == &tag_a && eb->context == &tag_b);
	/* why: b's own disconnect, a's peer left */
	CHECK_EQ(eb->status, 0);
	CHECK_EQ(ea->status, -ECONNRESET);
	const char *why = rcc_ep_reason(p.b, &st);
	CHECK_MSG(why && st == 0, "b: %s (%d)", why ? why : "no reason", st);
	why = rcc_ep_reason(p.a, &st);
	CHECK_MSG(why && st == -ECONNRESET, "a: %s (%d)", why ? why : "no reason", st);
	CHECK(rcc_ep_reason(p.a, NULL) == why);
	CHECK_EQ(rcc_ep_state(p.a), RCC_EP_DISCONNECTED);
	/* nothing more, and the descriptor says so */
	CHECK_EQ(rcc_ctx_get_event(p.ctx, &ev[0], 0), -ETIMEDOUT);
	CHECK(!readable(fd, 0));
	pair_close(&p);
}

/* A failed request makes its endpoint an ERROR event; the peer leaves too. */
static void failed_request_is_an_error_event(void)
{
	struct pair p;
	struct tbuf l = { 0 }, t = { 0 };
	struct rcc_event ev[2];

	CHECK_OK(pair_open(&p, NULL));
	CHECK(rcc_ctx_event_fd(p.ctx) >= 0);
	CHECK_OK(tbuf_alloc(&l, p.ctx, 64, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&t, p.ctx, 64, ALL_ACCESS));
	struct rcc_remote_mr rm = rcc_mr_remote(t.mr);
	struct rcc_sge sg = tbuf_sge(&l, 0, 64);
	CHECK_OK(rcc_post_write(p.a, &sg, 1, rm.addr, rm.rkey ^ 0x5a5a0000u, 1, RCC_SEND_SIGNALED));
	EXPECT_STATUS(p.cq_a, 1, RCC_WC_REM_ACCESS_ERR);
	take_events(p.ctx, ev, 2);
	int na, nb;
	const struct rcc_event *ea = event_for(ev, 2, p.a, &na), *eb = event_for(ev, 2, p.b, &nb);
	CHECK(ea && eb && na == 1 && nb == 1);
	CHECK_EQ(ea->type, RCC_EVENT_ERROR);
	CHECK_EQ(ea->status, -EIO); /* a request failed: its completion says how */
	int st = 0;
	CHECK(rcc_ep_reason(p.a, &st) != NULL && st == -EIO);
	CHECK(eb->status < 0); /* b left because a did, whichever way b heard it */
	CHECK_EQ(rcc_ep_state(p.a), RCC_EP_ERROR);
	CHECK(rcc_ep_state(p.b) != RCC_EP_CONNECTED);
	tbuf_free(&l);
	tbuf_free(&t);
	pair_close(&p);
}

/* Closing an endpoint takes back its queued event: no event names it. */
static void closed_endpoint_is_never_named(void)
{
	struct pair p;
	struct rcc_event ev;

	CHECK_OK(pair_open(&p, NULL));
	CHECK(rcc_ctx_event_fd(p.ctx) >= 0);
	CHECK_OK(rcc_ep_disconnect(p.a)); /* queues a at once, b when the news arrives */
	struct rcc_ep *b = p.b;
	rcc_ep_close(p.a);
	p.a = NULL;
	CHECK_OK(rcc_ctx_get_event(p.ctx, &ev, TEST_TIMEOUT_MS));
	CHECK(ev.ep == b);
	CHECK_EQ(rcc_ctx_get_event(p.ctx, &ev, 0), -ETIMEDOUT);
	pair_close(&p);
}

/* Events are off until asked for: what happened before is not queued. */
static void off_until_asked(void)
{
	struct pair p;
	struct rcc_event ev;

	CHECK_OK(pair_open(&p, NULL));
	CHECK_OK(rcc_ep_disconnect(p.a));
	CHECK_OK(rcc_ep_disconnect(p.b));
	CHECK_EQ(rcc_ctx_get_event(p.ctx, &ev, 0), -ETIMEDOUT);
	uint64_t t0 = now_ms();
	CHECK_EQ(rcc_ctx_get_event(p.ctx, &ev, 100), -ETIMEDOUT); /* the timeout is kept */
	CHECK(now_ms() - t0 >= 90);
	CHECK_EQ(rcc_ctx_get_event(NULL, &ev, 0), -EINVAL);
	CHECK_EQ(rcc_ctx_get_event(p.ctx, &ev, -2), -EINVAL);
	pair_close(&p);
}

/* Accept one request on lst within the test timeout (a thread's job). */
struct acceptor {
	struct rcc_listener *lst;
	struct rcc_cq *cq;
	bool reject;
	struct rcc_ep *ep;
	int rc;
};

static void *accept_one(void *arg)
{
	struct acceptor *a = arg;
	struct rcc_conn_req *req;
	static const char why[] = "full";

	a->rc = rcc_get_request(a->lst, TEST_TIMEOUT_MS, &req);
	if (a->rc)
		return NULL;
	if (a->reject) {
		a->rc = rcc_reject_req(req, why, sizeof(why));
		return NULL;
	}
	struct rcc_ep_attr attr = { .send_cq = a->cq };
	a->rc = rcc_accept_req(req, &attr, &a->ep);
	return NULL;
}

/* A started connect returns at once, cannot post while connecting, and ends
 * with ESTABLISHED; the endpoint then carries data, received byte for byte
 * into the initial receive the start copied. */
static void started_connect_establishes(void)
{
	struct rcc_ctx *ctx;
	struct rcc_cq *cq;
	struct rcc_listener *lst;
	struct tbuf r = { 0 }, s = { 0 };
	struct rcc_event ev;
	struct rcc_wc wc;
	char addr[128];
	pthread_t th;
	int tag;

	CHECK_OK(open_server(&ctx, &cq, &lst, addr, sizeof(addr)));
	CHECK_OK(tbuf_alloc(&r, ctx, 256, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&s, ctx, 256, RCC_ACCESS_LOCAL_WRITE));
	fill_pattern(s.p, 256, 5);

	struct rcc_ep *ep = NULL;
	{
		/* the receive list lives only in this block: the start copies it */
		struct rcc_sge sg = tbuf_sge(&r, 0, 256);
		struct rcc_recv_wr rw = { .wr_id = 77, .sg_list = &sg, .num_sge = 1 };
		struct rcc_ep_attr a = {
			.send_cq = cq, .initial_recv = &rw, .num_initial_recv = 1, .context = &tag
		};
		CHECK_OK(rcc_connect_start(ctx, addr, &a, TEST_TIMEOUT_MS, &ep));
		/* gone as far as the start is concerned (explicit_bzero: a memset
		 * of a dead variable would be optimised away) */
		explicit_bzero(&rw, sizeof(rw));
		explicit_bzero(&sg, sizeof(sg));
	}
	CHECK(ep != NULL);
	/* nobody accepted yet: still connecting, and posts are refused */
	CHECK_EQ(rcc_ep_state(ep), RCC_EP_CONNECTING);
	CHECK_EQ(strcmp(rcc_ep_state_str(RCC_EP_CONNECTING), "connecting"), 0);
	struct rcc_sge ssg = tbuf_sge(&s, 0, 256);
	CHECK_EQ(rcc_post_send(ep, &ssg, 1, 1, RCC_SEND_SIGNALED), -ENOTCONN);
	CHECK_EQ(rcc_ctx_get_event(ctx, &ev, 0), -ETIMEDOUT);

	struct acceptor acc = { .lst = lst, .cq = cq };
	CHECK(pthread_create(&th, NULL, accept_one, &acc) == 0);
	CHECK_OK(rcc_ctx_get_event(ctx, &ev, TEST_TIMEOUT_MS));
	pthread_join(th, NULL);
	CHECK_OK(acc.rc);
	CHECK(ev.ep == ep);
	CHECK_EQ(ev.type, RCC_EVENT_ESTABLISHED);
	CHECK_EQ(ev.status, 0);
	CHECK(ev.context == &tag);
	CHECK_EQ(rcc_ep_state(ep), RCC_EP_CONNECTED);

	/* the server's message lands in the receive posted by the start */
	CHECK_OK(rcc_post_send(acc.ep, &ssg, 1, 2, RCC_SEND_SIGNALED));
	for (int got = 0; got < 2;) {
		CHECK_OK(wait_one(cq, &wc, TEST_TIMEOUT_MS));
		CHECK_WC(wc, RCC_WC_SUCCESS);
		if (wc.opcode == RCC_WC_RECV) {
			CHECK_EQ(wc.wr_id, 77);
			CHECK(wc.ep == ep);
			CHECK_EQ(wc.byte_len, 256);
		}
		got++;
	}
	CHECK_EQ(check_pattern(r.p, 256, 5), -1);
	rcc_ep_close(acc.ep);
	rcc_ep_close(ep);
	/* both closed: whatever they queued went with them */
	CHECK_EQ(rcc_ctx_get_event(ctx, &ev, 0), -ETIMEDOUT);
	tbuf_free(&r);
	tbuf_free(&s);
	rcc_listener_close(lst);
	rcc_cq_destroy(cq);
	rcc_ctx_close(ctx);
}

/* A started connect that fails says how: refused, rejected (with the
 * server's words), or timed out; closing the endpoint is all that is left. */
static void started_connect_fails(void)
{
	struct rcc_ctx *ctx;
	struct rcc_cq *cq;
	struct rcc_listener *lst;
	struct rcc_event ev;
	struct rcc_ep *ep;
	char addr[128];
	pthread_t th;

	CHECK_OK(open_server(&ctx, &cq, &lst, addr, sizeof(addr)));
	struct rcc_ep_attr a = { .send_cq = cq };

	/* rejected */
	struct acceptor acc = { .lst = lst, .cq = cq, .reject = true };
	CHECK(pthread_create(&th, NULL, accept_one, &acc) == 0);
	CHECK_OK(rcc_connect_start(ctx, addr, &a, TEST_TIMEOUT_MS, &ep));
	CHECK_OK(rcc_ctx_get_event(ctx, &ev, TEST_TIMEOUT_MS));
	pthread_join(th, NULL);
	CHECK_OK(acc.rc);
	CHECK(ev.ep == ep);
	CHECK_EQ(ev.type, RCC_EVENT_CONNECT_FAILED);
	CHECK_EQ(ev.status, -ECONNABORTED);
	CHECK_EQ(rcc_ep_state(ep), RCC_EP_DISCONNECTED);
	size_t len;
	const char *why = rcc_ep_private_data(ep, &len);
	CHECK(why && len == 5 && !memcmp(why, "full", 5));
	CHECK_OK(rcc_ep_disconnect(ep)); /* nothing to do, and harmless */
	CHECK_OK(rcc_ep_close(ep));

	/* refused: nothing listens there any more */
	rcc_listener_close(lst);
	CHECK_OK(rcc_connect_start(ctx, addr, &a, TEST_TIMEOUT_MS, &ep));
	CHECK_OK(rcc_ctx_get_event(ctx, &ev, TEST_TIMEOUT_MS));
	CHECK(ev.ep == ep);
	CHECK_EQ(ev.type, RCC_EVENT_CONNECT_FAILED);
	if (test_transport() == RCC_TRANSPORT_TCP)
		CHECK_EQ(ev.status, -ECONNREFUSED);
	else /* rdma_cm may call it a reject, an unreachable port or no answer */
		CHECK(ev.status == -ECONNREFUSED || ev.status == -EHOSTUNREACH ||
		      ev.status == -ETIMEDOUT);
	CHECK_OK(rcc_ep_close(ep));

	/* bad arguments are refused before anything starts */
	CHECK_EQ(rcc_connect_start(ctx, addr, &a, -1, &ep), -EINVAL);
	CHECK_EQ(rcc_connect_start(ctx, "127.0.0.1:99999", &a, 1000, &ep), -EINVAL);
	CHECK_EQ(rcc_ctx_get_event(ctx, &ev, 0), -ETIMEDOUT);
	rcc_cq_destroy(cq);
	rcc_ctx_close(ctx);
}

/* Closing an endpoint while it still connects waits for the attempt, and
 * leaves no event behind. */
static void close_while_connecting(void)
{
	struct rcc_ctx *ctx;
	struct rcc_cq *cq;
	struct rcc_listener *lst;
	struct rcc_event ev;
	struct rcc_ep *ep;
	char addr[128];

	CHECK_OK(open_server(&ctx, &cq, &lst, addr, sizeof(addr)));
	struct rcc_ep_attr a = { .send_cq = cq };
	/* nobody accepts: the attempt ends by its timeout */
	CHECK_OK(rcc_connect_start(ctx, addr, &a, 300, &ep));
	CHECK_EQ(rcc_cq_destroy(cq), -EBUSY); /* the connecting endpoint uses it */
	uint64_t t0 = now_ms();
	CHECK_OK(rcc_ep_close(ep));
	CHECK(now_ms() - t0 < TEST_TIMEOUT_MS);
	CHECK_EQ(rcc_ctx_get_event(ctx, &ev, 0), -ETIMEDOUT);
	rcc_listener_close(lst);
	CHECK_OK(rcc_cq_destroy(cq));
	CHECK_OK(rcc_ctx_close(ctx));
}

struct connector {
	struct rcc_ctx *ctx;
	struct rcc_cq *cq;
	const char *addr;
	struct rcc_ep *ep;
	int rc;
};

static void *connect_one(void *arg)
{
	struct connector *c = arg;
	struct rcc_ep_attr a = { .send_cq = c->cq };
	c->rc = rcc_connect(c->ctx, c->addr, &a, TEST_TIMEOUT_MS, &c->ep);
	return NULL;
}

/* A started accept ends with ESTABLISHED and carries data; one whose
 * attributes are refused turns the client away at once. */
static void started_accept(void)
{
	struct rcc_ctx *ctx, *cctx;
	struct rcc_cq *cq, *ccq;
	struct rcc_listener *lst;
	struct rcc_conn_req *req;
	struct rcc_event ev;
	struct tbuf r = { 0 }, s = { 0 };
	struct rcc_wc wc;
	char addr[128];
	pthread_t th;
	int tag;

	CHECK_OK(open_server(&ctx, &cq, &lst, addr, sizeof(addr)));
	/* the client has a context of its own: its events stay out of ours */
	CHECK_OK(test_ctx_open(&cctx));
	CHECK_OK(rcc_cq_create(cctx, NULL, &ccq));
	CHECK_OK(tbuf_alloc(&r, ctx, 128, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&s, cctx, 128, RCC_ACCESS_LOCAL_WRITE));
	fill_pattern(s.p, 128, 8);

	struct connector c = { .ctx = cctx, .cq = ccq, .addr = addr };
	CHECK(pthread_create(&th, NULL, connect_one, &c) == 0);
	CHECK_OK(rcc_get_request(lst, TEST_TIMEOUT_MS, &req));
	struct rcc_sge sg = tbuf_sge(&r, 0, 128);
	struct rcc_recv_wr rw = { .wr_id = 9, .sg_list = &sg, .num_sge = 1 };
	struct rcc_ep_attr a = {
		.send_cq = cq, .initial_recv = &rw, .num_initial_recv = 1, .context = &tag
	};
	struct rcc_ep *ep;
	CHECK_OK(rcc_accept_start(req, &a, &ep));
	CHECK_OK(rcc_ctx_get_event(ctx, &ev, TEST_TIMEOUT_MS));
	pthread_join(th, NULL);
	CHECK_OK(c.rc);
	CHECK(ev.ep == ep && ev.context == &tag);
	CHECK_EQ(ev.type, RCC_EVENT_ESTABLISHED);
	CHECK_EQ(rcc_ep_state(ep), RCC_EP_CONNECTED);
	struct rcc_sge ssg = tbuf_sge(&s, 0, 128);
	CHECK_OK(rcc_post_send(c.ep, &ssg, 1, 1, RCC_SEND_SIGNALED));
	CHECK_OK(wait_one(ccq, &wc, TEST_TIMEOUT_MS));
	CHECK_WC(wc, RCC_WC_SUCCESS);
	CHECK_OK(wait_one(cq, &wc, TEST_TIMEOUT_MS));
	CHECK_WC(wc, RCC_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 9);
	CHECK_EQ(check_pattern(r.p, 128, 8), -1);
	CHECK_OK(rcc_ep_close(c.ep));
	CHECK_OK(rcc_ep_close(ep));

	/* refused attributes: -EINVAL here, a reject there, no event */
	c.ep = NULL;
	CHECK(pthread_create(&th, NULL, connect_one, &c) == 0);
	CHECK_OK(rcc_get_request(lst, TEST_TIMEOUT_MS, &req));
	a.num_initial_recv = -1;
	CHECK_EQ(rcc_accept_start(req, &a, &ep), -EINVAL);
	pthread_join(th, NULL);
	CHECK_EQ(c.rc, -ECONNABORTED);
	CHECK_EQ(rcc_ctx_get_event(ctx, &ev, 0), -ETIMEDOUT);

	tbuf_free(&r);
	tbuf_free(&s);
	CHECK_OK(rcc_cq_destroy(ccq));
	CHECK_OK(rcc_ctx_close(cctx));
	CHECK_OK(rcc_listener_close(lst));
	CHECK_OK(rcc_cq_destroy(cq));
	CHECK_OK(rcc_ctx_close(ctx));
}

/* Mappings of the process the size of a default thread stack (its guard page
 * aside), or -1: each thread that exited unjoined leaves one behind, and
 * glibc keeps a few freed ones for later threads. */
static int stack_mappings(void)
{
	pthread_attr_t at;
	size_t sz = 0;
	unsigned long lo, hi;
	char perm[8], line[512];
	int n = 0;

	pthread_attr_init(&at);
	pthread_attr_getstacksize(&at, &sz);
	pthread_attr_destroy(&at);
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f || sz == 0) {
		if (f)
			fclose(f);
		return -1;
	}
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perm) == 3 && !strncmp(perm, "rw", 2) &&
		    hi - lo + 65536 >= sz && hi - lo <= sz + 65536)
			n++;
	fclose(f);
	return n;
}

/*
 * Started connects and accepts leave nothing of their threads behind once
 * established: a server keeps its endpoints open for long, and a thread kept
 * for a join at close held its stack (8 MiB of address space) for every
 * connection until then. 2 x 40 started endpoints, established and kept
 * open, leave fewer than 20 stacks mapped (glibc keeps up to 40 MiB of freed
 * ones; a join at close kept all 80).
 */
static void started_endpoints_keep_no_thread(void)
{
	enum {
		N = 40
	};
	static struct rcc_ep *cl[N], *sv[N];
	struct rcc_ctx *ctx, *cctx;
	struct rcc_cq *cq, *ccq;
	struct rcc_listener *lst;
	struct rcc_conn_req *req;
	struct rcc_event ev;
	char addr[128];
	int up = 0;

	CHECK_OK(open_server(&ctx, &cq, &lst, addr, sizeof(addr)));
	CHECK_OK(test_ctx_open(&cctx));
	CHECK_OK(rcc_cq_create(cctx, NULL, &ccq));
	struct rcc_ep_attr ca = { .send_cq = ccq }, sa = { .send_cq = cq };

	int before = stack_mappings();
	for (int i = 0; i < N && !test_failed; i++) {
		CHECK_OK(rcc_connect_start(cctx, addr, &ca, TEST_TIMEOUT_MS, &cl[i]));
		CHECK_OK(rcc_get_request(lst, TEST_TIMEOUT_MS, &req));
		CHECK_OK(rcc_accept_start(req, &sa, &sv[i]));
	}
	for (int i = 0; i < N && !test_failed; i++) {
		CHECK_OK(rcc_ctx_get_event(cctx, &ev, TEST_TIMEOUT_MS));
		up += ev.type == RCC_EVENT_ESTABLISHED;
		CHECK_OK(rcc_ctx_get_event(ctx, &ev, TEST_TIMEOUT_MS));
		up += ev.type == RCC_EVENT_ESTABLISHED;
	}
	/* a thread signals its outcome just before it exits: let the last go */
	uint64_t end = now_ms() + TEST_TIMEOUT_MS;
	int stacks = stack_mappings() - before;
	while (stacks >= N / 2 && now_ms() < end) {
		poll(NULL, 0, 10);
		stacks = stack_mappings() - before;
	}
	printf("%d started endpoints up: %d more thread stacks mapped\n", up, stacks);
	CHECK_EQ(up, 2 * N);
	CHECK_MSG(before >= 0 && stacks < N / 2,
		  "%d more thread stacks mapped with %d started endpoints open", stacks, 2 * N);
	for (int i = 0; i < N; i++) {
		if (cl[i])
			CHECK_OK(rcc_ep_close(cl[i]));
		if (sv[i])
			CHECK_OK(rcc_ep_close(sv[i]));
	}
	CHECK_OK(rcc_cq_destroy(ccq));
	CHECK_OK(rcc_ctx_close(cctx));
	CHECK_OK(rcc_listener_close(lst));
	CHECK_OK(rcc_cq_destroy(cq));
	CHECK_OK(rcc_ctx_close(ctx));
}

#define CLIENTS 8

struct clients {
	const char *addr;
	int rc;
};

/* Connect CLIENTS endpoints from a context of their own, then close them. */
static void *run_clients(void *arg)
{
	struct clients *c = arg;
	struct rcc_ctx *ctx = NULL;
	struct rcc_cq *cq = NULL;
	struct rcc_ep *ep[CLIENTS] = { 0 };

	c->rc = test_ctx_open(&ctx);
	if (!c->rc)
		c->rc = rcc_cq_create(ctx, NULL, &cq);
	struct rcc_ep_attr a = { .send_cq = cq };
	for (int i = 0; i < CLIENTS && !c->rc; i++)
		c->rc = rcc_connect(ctx, c->addr, &a, TEST_TIMEOUT_MS, &ep[i]);
	for (int i = 0; i < CLIENTS; i++)
		if (ep[i])
			rcc_ep_close(ep[i]);
	if (cq)
		rcc_cq_destroy(cq);
	if (ctx)
		rcc_ctx_close(ctx);
	return NULL;
}

/* A server with no thread besides its loop: accepts from the listener's
 * descriptor and closes each connection on its event, in one epoll set. */
static void one_loop_server(void)
{
	struct rcc_ctx *ctx;
	struct rcc_cq *cq;
	struct rcc_listener *lst;
	struct rcc_ep *eps[CLIENTS] = { 0 };
	char addr[128];
	pthread_t th;
	int accepted = 0, closed = 0;

	CHECK_OK(open_server(&ctx, &cq, &lst, addr, sizeof(addr)));
	int efd = epoll_create1(EPOLL_CLOEXEC);
	CHECK(efd >= 0);
	struct epoll_event e1 = { .events = EPOLLIN, .data.u32 = 1 };
	struct epoll_event e2 = { .events = EPOLLIN, .data.u32 = 2 };
	CHECK(epoll_ctl(efd, EPOLL_CTL_ADD, rcc_listener_fd(lst), &e1) == 0);
	CHECK(epoll_ctl(efd, EPOLL_CTL_ADD, rcc_ctx_event_fd(ctx), &e2) == 0);
	struct clients c = { .addr = addr, .rc = -EINPROGRESS };
	CHECK(pthread_create(&th, NULL, run_clients, &c) == 0);

	uint64_t give_up = now_ms() + 2 * TEST_TIMEOUT_MS;
	while (closed < CLIENTS && now_ms() < give_up) {
		struct epoll_event got[2];
		int n = epoll_wait(efd, got, 2, 1000);
		for (int i = 0; i < n; i++) {
			if (got[i].data.u32 == 1) {
				struct rcc_conn_req *req;
				struct rcc_ep_attr a = { .send_cq = cq };
				if (rcc_get_request(lst, 0, &req) == 0) {
					CHECK(accepted < CLIENTS);
					CHECK_OK(rcc_accept_req(req, &a, &eps[accepted]));
					rcc_ep_set_context(eps[accepted], &eps[accepted]);
					accepted++;
				}
				continue;
			}
			struct rcc_event ev;
			while (rcc_ctx_get_event(ctx, &ev, 0) == 0) {
				struct rcc_ep **slot = ev.context;
				CHECK(slot && *slot == ev.ep); /* names a live endpoint of ours */
				CHECK_EQ(ev.type, RCC_EVENT_DISCONNECTED);
				rcc_ep_close(ev.ep);
				*slot = NULL;
				closed++;
			}
		}
	}
	pthread_join(th, NULL);
	CHECK_OK(c.rc);
	CHECK_EQ(accepted, CLIENTS);
	CHECK_EQ(closed, CLIENTS);
	close(efd);
	rcc_listener_close(lst);
	rcc_cq_destroy(cq);
	rcc_ctx_close(ctx);
}

TEST_MAIN(TEST(disconnect_is_an_event), TEST(failed_request_is_an_error_event),
	  TEST(closed_endpoint_is_never_named), TEST(off_until_asked), TEST(one_loop_server),
	  TEST(started_connect_establishes), TEST(started_connect_fails),
	  TEST(close_while_connecting), TEST(started_accept),
	  TEST(started_endpoints_keep_no_thread))
