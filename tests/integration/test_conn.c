/* SPDX-License-Identifier: BSD-3-Clause */
/* Connection management: private data, reject, refusal, timeouts, addresses. */
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pair.h"
#include "raw_listener.h"

struct server_job {
	struct rcc_ctx *ctx;
	struct rcc_listener *lst;
	struct rcc_cq *cq;
	bool reject;
	const void *reply;
	size_t reply_len;
	/* what the server saw */
	uint8_t got[RCC_CONNECT_PRIVATE_DATA_MAX];
	size_t got_len;
	struct rcc_ep *ep;
	int rc;
};

static void *serve_one(void *arg)
{
	struct server_job *j = arg;
	struct rcc_conn_req *req;

	j->rc = rcc_get_request(j->lst, TEST_TIMEOUT_MS, &req);
	if (j->rc)
		return NULL;
	if (rcc_conn_req_ctx(req) != j->ctx) {
		j->rc = -EFAULT; /* the request does not know its context */
		rcc_reject_req(req, NULL, 0);
		return NULL;
	}
	const void *pd = rcc_conn_req_private_data(req, &j->got_len);
	if (j->got_len <= sizeof(j->got) && pd)
		memcpy(j->got, pd, j->got_len);
	if (j->reject) {
		j->rc = rcc_reject_req(req, j->reply, j->reply_len);
	} else {
		/* no RNR retries: a send that found no receive would fail at once */
		struct rcc_ep_attr a = { .send_cq = j->cq,
					 .private_data = j->reply,
					 .private_data_len = (uint32_t)j->reply_len,
					 .rnr_retry = RCC_NO_RETRY };
		j->rc = rcc_accept_req(req, &a, &j->ep);
	}
	return NULL;
}

struct env {
	struct rcc_ctx *ctx;
	struct rcc_cq *cq;
	struct rcc_listener *lst;
	char addr[128];
};

static int env_open(struct env *e)
{
	char any[128];
	int rc = test_ctx_open(&e->ctx);
	if (rc)
		return rc;
	rc = rcc_cq_create(e->ctx, NULL, &e->cq);
	snprintf(any, sizeof(any), "%s:0", test_addr());
	if (!rc)
		rc = rcc_listen(e->ctx, any, 0, &e->lst);
	if (!rc)
		snprintf(e->addr, sizeof(e->addr), "%s:%d", test_addr(), rcc_listener_port(e->lst));
	return rc;
}

static void env_close(struct env *e)
{
	if (e->lst)
		TEARDOWN(rcc_listener_close(e->lst));
	if (e->cq)
		TEARDOWN(rcc_cq_destroy(e->cq));
	if (e->ctx)
		TEARDOWN(rcc_ctx_close(e->ctx));
	memset(e, 0, sizeof(*e));
}

/* The largest private data goes both ways, byte for byte. */
static void private_data_both_ways(void)
{
	struct env e = { 0 };
	uint8_t req[RCC_CONNECT_PRIVATE_DATA_MAX], rep[RCC_ACCEPT_PRIVATE_DATA_MAX];
	pthread_t th;
	struct rcc_ep *ep;

	CHECK_OK(env_open(&e));
	fill_pattern(req, sizeof(req), 1);
	fill_pattern(rep, sizeof(rep), 2);
	struct server_job j = {
		.ctx = e.ctx, .lst = e.lst, .cq = e.cq, .reply = rep, .reply_len = sizeof(rep)
	};
	CHECK(pthread_create(&th, NULL, serve_one, &j) == 0);
	struct rcc_ep_attr a = { .send_cq = e.cq,
				 .private_data = req,
				 .private_data_len = sizeof(req) };
	int rc = rcc_connect(e.ctx, e.addr, &a, TEST_TIMEOUT_MS, &ep);
	pthread_join(th, NULL);
	CHECK_OK(rc);
	CHECK_OK(j.rc);
	CHECK_EQ(j.got_len, sizeof(req));
	CHECK(!memcmp(j.got, req, sizeof(req)));
	size_t len;
	const uint8_t *got = rcc_ep_private_data(ep, &len);
	CHECK_EQ(len, sizeof(rep));
	CHECK(got && !memcmp(got, rep, sizeof(rep)));
	const uint8_t *srv_got = rcc_ep_private_data(j.ep, &len);
	CHECK_EQ(len, sizeof(req));
	CHECK(srv_got && !memcmp(srv_got, req, sizeof(req)));
	CHECK_EQ(rcc_ep_state(ep), RCC_EP_CONNECTED);
	CHECK(strlen(rcc_ep_peer(ep)) > 0);
	rcc_ep_close(ep);
	rcc_ep_close(j.ep);
	env_close(&e);
}

/* No private data at all is fine too, and so is a short one. */
static void private_data_none_and_short(void)
{
	struct env e = { 0 };
	pthread_t th;
	struct rcc_ep *ep;

	CHECK_OK(env_open(&e));
	struct server_job j = {
		.ctx = e.ctx, .lst = e.lst, .cq = e.cq, .reply = "ok", .reply_len = 2
	};
	CHECK(pthread_create(&th, NULL, serve_one, &j) == 0);
	struct rcc_ep_attr a = { .send_cq = e.cq };
	int rc = rcc_connect(e.ctx, e.addr, &a, TEST_TIMEOUT_MS, &ep);
	pthread_join(th, NULL);
	CHECK_OK(rc);
	CHECK_OK(j.rc);
	CHECK_EQ(j.got_len, 0);
	size_t len;
	const char *got = rcc_ep_private_data(ep, &len);
	CHECK_EQ(len, 2);
	CHECK(got && !memcmp(got, "ok", 2));
	rcc_ep_close(ep);
	rcc_ep_close(j.ep);
	env_close(&e);
}

static void reject_with_private_data(void)
{
	struct env e = { 0 };
	pthread_t th;
	struct rcc_ep *ep = NULL;

	CHECK_OK(env_open(&e));
	struct server_job j = { .ctx = e.ctx,
				.lst = e.lst,
				.cq = e.cq,
				.reject = true,
				.reply = "go away",
				.reply_len = 7 };
	CHECK(pthread_create(&th, NULL, serve_one, &j) == 0);
	struct rcc_ep_attr a = { .send_cq = e.cq, .private_data = "hi", .private_data_len = 2 };
	uint8_t why[RCC_REJECT_PRIVATE_DATA_MAX];
	size_t why_len = 999;
	int rc = rcc_connect_ex(e.ctx, e.addr, &a, TEST_TIMEOUT_MS, &ep, why, &why_len);
	pthread_join(th, NULL);
	CHECK_EQ(rc, -ECONNABORTED);
	CHECK(ep == NULL);
	CHECK_OK(j.rc);
	CHECK_EQ(j.got_len, 2);
	CHECK_EQ(why_len, 7);
	CHECK(!memcmp(why, "go away", 7));

	/* the largest reject private data arrives whole */
	uint8_t big[RCC_REJECT_PRIVATE_DATA_MAX];
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(0xa5 ^ i);
	struct server_job jb = { .ctx = e.ctx,
				 .lst = e.lst,
				 .cq = e.cq,
				 .reject = true,
				 .reply = big,
				 .reply_len = sizeof(big) };
	CHECK(pthread_create(&th, NULL, serve_one, &jb) == 0);
	rc = rcc_connect_ex(e.ctx, e.addr, &a, TEST_TIMEOUT_MS, &ep, why, &why_len);
	pthread_join(th, NULL);
	CHECK_EQ(rc, -ECONNABORTED);
	CHECK_OK(jb.rc);
	CHECK_EQ(why_len, sizeof(big));
	CHECK(!memcmp(why, big, sizeof(big)));
	/* a buffer without its length (or the other way round) is a usage error */
	CHECK_EQ(rcc_connect_ex(e.ctx, e.addr, &a, 0, &ep, why, NULL), -EINVAL);
	CHECK_EQ(rcc_connect_ex(e.ctx, e.addr, &a, 0, &ep, NULL, &why_len), -EINVAL);

	/* the listener keeps working after a reject; an accept leaves why_len alone */
	struct server_job j2 = { .ctx = e.ctx, .lst = e.lst, .cq = e.cq };
	CHECK(pthread_create(&th, NULL, serve_one, &j2) == 0);
	why_len = 999;
	rc = rcc_connect_ex(e.ctx, e.addr, &a, TEST_TIMEOUT_MS, &ep, why, &why_len);
	pthread_join(th, NULL);
	CHECK_OK(rc);
	CHECK_OK(j2.rc);
	CHECK_EQ(why_len, 999);
	rcc_ep_close(ep);
	rcc_ep_close(j2.ep);
	env_close(&e);
}

/* Nothing listening: refused at once, not after the timeout. */
static void connect_refused(void)
{
	struct env e = { 0 };
	struct rcc_ep *ep = NULL;
	char addr[128];

	CHECK_OK(env_open(&e));
	int port = rcc_listener_port(e.lst);
	rcc_listener_close(e.lst);
	e.lst = NULL;
	snprintf(addr, sizeof(addr), "%s:%d", test_addr(), port);
	struct rcc_ep_attr a = { .send_cq = e.cq };
	uint64_t t0 = now_ms();
	CHECK_EQ(rcc_connect(e.ctx, addr, &a, TEST_TIMEOUT_MS, &ep), -ECONNREFUSED);
	CHECK(now_ms() - t0 < TEST_TIMEOUT_MS / 2);
	CHECK(ep == NULL);
	CHECK_MSG(strstr(rcc_last_error(), "nothing is listening"), "last error: %s",
		  rcc_last_error());
	env_close(&e);
}

/* A server that accepts the TCP connection but never answers (tcp only):
 * the connect gives up after its timeout. */
static void connect_timeout(void)
{
	struct env e = { 0 };
	struct rcc_ep *ep = NULL;
	char addr[64];

	if (test_transport() != RCC_TRANSPORT_TCP)
		SKIP_CASE("tcp", "a silent TCP listener stands in for the peer");
	int fd = raw_listener(addr, sizeof(addr));
	CHECK(fd >= 0);
	CHECK_OK(test_ctx_open(&e.ctx));
	CHECK_OK(rcc_cq_create(e.ctx, NULL, &e.cq));
	struct rcc_ep_attr a = { .send_cq = e.cq };
	uint64_t t0 = now_ms();
	int rc = rcc_connect(e.ctx, addr, &a, 300, &ep);
	uint64_t took = now_ms() - t0;
	close(fd);
	CHECK_EQ(rc, -ETIMEDOUT);
	/* Not before its 300 ms (less a little for the clocks' rounding), and
	 * well before the library's default of seconds would have ended it:
	 * 5000 ms is over 16x the timeout, room for a loaded 2-core host. */
	CHECK(took >= 250 && took < 5000);
	CHECK_MSG(strstr(rcc_last_error(), "no answer from") &&
			  strstr(rcc_last_error(), "within 300 ms"),
		  "last error: %s", rcc_last_error());
	env_close(&e);
}

static void bad_addresses(void)
{
	struct env e = { 0 };
	struct rcc_ep *ep = NULL;
	struct rcc_listener *l;

	CHECK_OK(test_ctx_open(&e.ctx));
	CHECK_OK(rcc_cq_create(e.ctx, NULL, &e.cq));
	struct rcc_ep_attr a = { .send_cq = e.cq };
	CHECK_EQ(rcc_connect(e.ctx, "no-such-host.invalid:7471", &a, 1000, &ep), -ENOENT);
	CHECK_MSG(strstr(rcc_last_error(), "unknown host 'no-such-host.invalid'"), "last error: %s",
		  rcc_last_error());
	CHECK_EQ(rcc_connect(e.ctx, "127.0.0.1:99999", &a, 1000, &ep), -EINVAL);
	CHECK_MSG(strstr(rcc_last_error(), "'127.0.0.1:99999' is not an address"), "last error: %s",
		  rcc_last_error());
	CHECK_EQ(rcc_connect(e.ctx, "127.0.0.1:7x", &a, 1000, &ep), -EINVAL);
	CHECK_EQ(rcc_connect(e.ctx, "[::1", &a, 1000, &ep), -EINVAL);
	CHECK_EQ(rcc_listen(e.ctx, "127.0.0.1:-3", 0, &l), -EINVAL);
	CHECK_MSG(strstr(rcc_last_error(), "'127.0.0.1:-3'"), "last error: %s", rcc_last_error());
	CHECK(ep == NULL);
	env_close(&e);
}

/* A listener that takes the TCP connection and closes it unanswered is not
 * "nothing listening": -ECONNRESET, and the words say what happened (tcp and
 * the manual bring-up, which shake hands over TCP; rdma_cm has no such case). */
static void closed_before_answer(void)
{
	struct env e = { 0 };
	struct rcc_ep *ep = NULL;
	char addr[64];
	pthread_t th;

	if (test_transport() != RCC_TRANSPORT_TCP)
		SKIP_CASE("tcp", "a raw TCP listener stands in for the peer");
	int fd = raw_listener(addr, sizeof(addr));
	CHECK(fd >= 0);
	CHECK(pthread_create(&th, NULL, raw_accept_and_close, &fd) == 0);
	CHECK_OK(test_ctx_open(&e.ctx));
	CHECK_OK(rcc_cq_create(e.ctx, NULL, &e.cq));
	struct rcc_ep_attr a = { .send_cq = e.cq };
	int rc = rcc_connect(e.ctx, addr, &a, TEST_TIMEOUT_MS, &ep);
	pthread_join(th, NULL);
	close(fd);
	CHECK_EQ(rc, -ECONNRESET);
	CHECK(ep == NULL);
	CHECK_MSG(strstr(rcc_last_error(), "closed the connection before answering"),
		  "last error: %s", rcc_last_error());
	env_close(&e);
}

static void *last_error_of_other_thread(void *arg)
{
	*(const char **)arg = rcc_last_error();
	return NULL;
}

/* Arguments a call refuses are named, per thread; the next set-up call
 * starts from a clean slate. */
static void last_error_names_the_argument(void)
{
	struct env e = { 0 };
	struct rcc_ep *ep = NULL;
	struct rcc_mr *mr = NULL;
	uint8_t pd[RCC_CONNECT_PRIVATE_DATA_MAX + 12] = { 0 }, buf[64];
	const char *other = NULL;
	pthread_t th;

	CHECK_OK(env_open(&e));
	struct rcc_ep_attr a = { .send_cq = e.cq,
				 .private_data = pd,
				 .private_data_len = sizeof(pd) };
	CHECK_EQ(rcc_connect(e.ctx, e.addr, &a, TEST_TIMEOUT_MS, &ep), -EINVAL);
	CHECK_MSG(strstr(rcc_last_error(), "private data of 60 bytes") &&
			  strstr(rcc_last_error(), "at most 48"),
		  "last error: %s", rcc_last_error());
	/* another thread has its own (empty) explanation */
	CHECK(pthread_create(&th, NULL, last_error_of_other_thread, &other) == 0);
	pthread_join(th, NULL);
	CHECK(other && other[0] == '\0');
	CHECK_EQ(rcc_mr_reg(e.ctx, buf, sizeof(buf), RCC_ACCESS_REMOTE_WRITE, &mr), -EINVAL);
	CHECK_MSG(strstr(rcc_last_error(), "need local write"), "last error: %s", rcc_last_error());
	a.retry_cnt = 9;
	a.private_data_len = 0;
	CHECK_EQ(rcc_connect(e.ctx, e.addr, &a, TEST_TIMEOUT_MS, &ep), -EINVAL);
	CHECK_MSG(strstr(rcc_last_error(), "retry_cnt 9"), "last error: %s", rcc_last_error());
	/* a set-up call that succeeds leaves nothing stale behind */
	CHECK_OK(rcc_mr_reg(e.ctx, buf, sizeof(buf), RCC_ACCESS_LOCAL_WRITE, &mr));
	CHECK_EQ(rcc_last_error()[0], '\0');
	CHECK(ep == NULL);
	rcc_mr_dereg(mr);
	env_close(&e);
}

/* Receives named in the attributes are posted before the peer may send:
 * the peer's first message, sent at once and without RNR retries, lands. */
static void initial_receives(void)
{
	struct env e = { 0 };
	pthread_t th;
	struct rcc_ep *ep;
	struct tbuf r = { 0 }, s = { 0 };
	struct rcc_wc wc;

	CHECK_OK(env_open(&e));
	CHECK_OK(tbuf_alloc(&r, e.ctx, 128, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&s, e.ctx, 128, RCC_ACCESS_LOCAL_WRITE));
	struct rcc_sge rs = tbuf_sge(&r, 0, 128);
	struct rcc_recv_wr rw = { .wr_id = 42, .sg_list = &rs, .num_sge = 1 };
	struct server_job j = { .ctx = e.ctx, .lst = e.lst, .cq = e.cq };
	CHECK(pthread_create(&th, NULL, serve_one, &j) == 0);
	struct rcc_ep_attr a = { .send_cq = e.cq, .initial_recv = &rw, .num_initial_recv = 1 };
	int rc = rcc_connect(e.ctx, e.addr, &a, TEST_TIMEOUT_MS, &ep);
	pthread_join(th, NULL);
	CHECK_OK(rc);
	CHECK_OK(j.rc);
	/* the server side sends the moment it is connected, with no RNR retry */
	fill_pattern(s.p, 128, 9);
	struct rcc_sge ss = tbuf_sge(&s, 0, 128);
	CHECK_OK(rcc_post_send(j.ep, &ss, 1, 1, RCC_SEND_SIGNALED));
	int got_recv = 0, got_send = 0;
	for (int i = 0; i < 2; i++) {
		CHECK_OK(wait_one(e.cq, &wc, TEST_TIMEOUT_MS));
		CHECK_WC(wc, RCC_WC_SUCCESS);
		if (wc.opcode == RCC_WC_RECV) {
			CHECK_EQ(wc.wr_id, 42);
			CHECK(wc.ep == ep);
			got_recv++;
		} else {
			got_send++;
		}
	}
	CHECK_EQ(got_recv, 1);
	CHECK_EQ(got_send, 1);
	CHECK_EQ(check_pattern(r.p, 128, 9), -1);
	rcc_ep_close(ep);
	rcc_ep_close(j.ep);
	tbuf_free(&r);
	tbuf_free(&s);
	env_close(&e);
}

/* get_request with a zero timeout answers at once when nobody is there. */
/*
 * No route to the peer: -ENETUNREACH (or -EHOSTUNREACH) at once, not after
 * the timeout, and words that say so, distinct from "nothing listening" and
 * "no answer". This thread moves to a network namespace of its own, where
 * nothing is routable (even loopback is down), and back; the context and its
 * threads are made and closed in there (tcp and shm; rdma_cm needs a device
 * in the namespace).
 */
static void connect_unreachable(void)
{
	struct env e = { 0 };
	struct rcc_ep *ep = NULL;

	if (test_transport() != RCC_TRANSPORT_TCP)
		SKIP_CASE("tcp",
			  "a namespace without routes needs no device of its own only on tcp");
	int home = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	CHECK(home >= 0);
	if (home < 0)
		return;
	if (unshare(CLONE_NEWNET)) {
		close(home);
		SKIP_CASE("root", "a network namespace of its own needs CAP_SYS_ADMIN (%s)",
			  strerror(errno));
	}
	int rc = test_ctx_open(&e.ctx);
	if (!rc)
		rc = rcc_cq_create(e.ctx, NULL, &e.cq);
	struct rcc_ep_attr a = { .send_cq = e.cq };
	uint64_t t0 = now_ms();
	if (!rc)
		rc = rcc_connect(e.ctx, "10.255.0.1:7471", &a, TEST_TIMEOUT_MS, &ep);
	uint64_t took = now_ms() - t0;
	char why[256];
	snprintf(why, sizeof(why), "%s", rcc_last_error());
	env_close(&e);
	CHECK_OK(setns(home, CLONE_NEWNET));
	close(home);
	CHECK_MSG(rc == -ENETUNREACH || rc == -EHOSTUNREACH, "connect: %s (%d)", rcc_strerror(rc),
		  rc);
	CHECK(ep == NULL);
	CHECK_MSG(took < TEST_TIMEOUT_MS / 2, "took %llu ms", (unsigned long long)took);
	CHECK_MSG(strstr(why, "10.255.0.1:7471 cannot be reached from here"), "last error: %s",
		  why);
}

static void get_request_timeout(void)
{
	struct env e = { 0 };
	struct rcc_conn_req *req;

	CHECK_OK(env_open(&e));
	CHECK_EQ(rcc_get_request(e.lst, 0, &req), -ETIMEDOUT);
	uint64_t t0 = now_ms();
	CHECK_EQ(rcc_get_request(e.lst, 100, &req), -ETIMEDOUT);
	CHECK(now_ms() - t0 >= 90);
	CHECK(rcc_listener_fd(e.lst) >= 0);
	env_close(&e);
}

TEST_MAIN(TEST(private_data_both_ways), TEST(private_data_none_and_short),
	  TEST(reject_with_private_data), TEST(connect_refused), TEST(connect_timeout),
	  TEST(bad_addresses), TEST(connect_unreachable), TEST(closed_before_answer),
	  TEST(last_error_names_the_argument), TEST(initial_receives), TEST(get_request_timeout))
