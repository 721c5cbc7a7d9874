/* SPDX-License-Identifier: BSD-3-Clause */
/* The session server's shared receive queue (rcc_server_attr.srq_depth): many
 * clients draw on a few server-owned receives, every message reaches on_recv
 * intact and in its connection's order, and the server keeps reposting. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "pair.h"
#include "rcc/session.h"
#include "server_start.h"

#define MSG 256
/* far fewer receives than messages in flight: without reposting, or with a
 * repost that never happens, the clients stall on receiver-not-ready */
#define SRQ_DEPTH 8
#define MAX_CLIENTS 16
#define IN_FLIGHT 4

struct srq_srv {
	struct rcc_ctx *ctx;
	atomic_int received, bad, connects, disconnects;
};

struct srq_conn {
	struct srq_srv *srv;
	int id;
	int next; /* the round expected next from this client */
};

static uint64_t seed_of(int id, int round) { return (uint64_t)id * 100000 + (uint64_t)round; }

static int srq_request(struct rcc_conn_req *req, void *arg, void **conn,
		       const struct rcc_recv_wr **recv, int *num)
{
	size_t len;
	const uint8_t *pd = rcc_conn_req_private_data(req, &len);
	struct srq_conn *c;

	(void)recv;
	(void)num;
	if (len != 1 || !(c = calloc(1, sizeof(*c))))
		return -EPROTO;
	c->srv = arg;
	c->id = pd[0];
	*conn = c;
	return 0;
}

static int srq_connect(struct rcc_ep *ep, void *arg, void **conn)
{
	struct srq_srv *s = arg;
	(void)ep;
	(void)conn;
	atomic_fetch_add(&s->connects, 1);
	return 0;
}

static void srq_completion(struct rcc_ep *ep, const struct rcc_wc *wc, void *conn)
{
	struct srq_conn *c = conn;
	(void)ep;
	/* the server posts nothing of its own: receives all go to on_recv */
	if (wc->status == RCC_WC_SUCCESS)
		atomic_fetch_add(&c->srv->bad, 1);
}

static void srq_recv(struct rcc_ep *ep, const struct rcc_wc *wc, const void *data, void *conn)
{
	struct srq_conn *c = conn;
	(void)ep;
	if (wc->opcode != RCC_WC_RECV || wc->byte_len != MSG || !data ||
	    check_pattern(data, MSG, seed_of(c->id, c->next)) != -1)
		atomic_fetch_add(&c->srv->bad, 1);
	c->next++;
	atomic_fetch_add(&c->srv->received, 1);
}

static void srq_disconnect(struct rcc_ep *ep, void *conn)
{
	struct srq_conn *c = conn;
	if (ep)
		atomic_fetch_add(&c->srv->disconnects, 1);
	free(c);
}

static const struct rcc_server_ops srq_ops = {
	.on_request = srq_request,
	.on_connect = srq_connect,
	.on_completion = srq_completion,
	.on_disconnect = srq_disconnect,
	.on_recv = srq_recv,
};

struct sender {
	struct rcc_ctx *ctx;
	const char *addr;
	uint8_t id;
	int rounds;
	int rc;
	const char *why;
};

/* Send rounds messages, IN_FLIGHT at a time, each with its own pattern. */
static void *sender_main(void *arg)
{
	struct sender *j = arg;
	struct rcc_client *cli;
	struct tbuf b = { 0 };
	struct rcc_wc wc[IN_FLIGHT];
	struct rcc_client_attr ca = {
		.cq_mode = RCC_CQ_WAIT,
		.ep_attr = { .sq_depth = IN_FLIGHT,
			     .rq_depth = 1,
			     .private_data = &j->id,
			     .private_data_len = 1 },
		.connect_timeout_ms = TEST_TIMEOUT_MS,
		.retry_for_ms = TEST_TIMEOUT_MS,
	};

	j->rc = rcc_client_connect(j->ctx, j->addr, &ca, &cli);
	if (j->rc) {
		j->why = "connect";
		return NULL;
	}
	j->rc = tbuf_alloc(&b, j->ctx, IN_FLIGHT * MSG, RCC_ACCESS_LOCAL_WRITE);
	for (int r = 0; r < j->rounds && !j->rc; r += IN_FLIGHT) {
		for (int k = 0; k < IN_FLIGHT && !j->rc; k++) {
			struct rcc_sge s = tbuf_sge(&b, (size_t)k * MSG, MSG);
			fill_pattern(b.p + (size_t)k * MSG, MSG, seed_of(j->id, r + k));
			j->rc = rcc_post_send(rcc_client_ep(cli), &s, 1, (uint64_t)k,
					      RCC_SEND_SIGNALED);
		}
		if (j->rc) {
			j->why = "post";
			break;
		}
		if (wait_n(rcc_client_cq(cli), wc, IN_FLIGHT, TEST_TIMEOUT_MS) != IN_FLIGHT) {
			j->rc = -ETIMEDOUT;
			j->why = "sends never completed (the server's SRQ ran dry?)";
			break;
		}
		for (int k = 0; k < IN_FLIGHT; k++)
			if (wc[k].status != RCC_WC_SUCCESS) {
				j->rc = -EIO;
				j->why = rcc_wc_status_str(wc[k].status);
			}
	}
	tbuf_free(&b);
	rcc_client_close(cli);
	return NULL;
}

static int start_srq_server(struct srq_srv *s, enum rcc_thread_mode tm, int threads,
			    struct rcc_server **srv, char *addr, size_t len)
{
	struct rcc_server_attr a = {
		.thread_mode = tm,
		.num_threads = threads,
		.cq_mode = RCC_CQ_WAIT,
		.ep_attr = { .sq_depth = 4 },
		.ops = &srq_ops,
		.arg = s,
		.srq_depth = SRQ_DEPTH,
		.srq_buf_size = MSG,
	};
	return test_server_start(s->ctx, a, srv, addr, len);
}

static void srq_many_clients(enum rcc_thread_mode tm, int threads)
{
	const int clients = test_quick() ? 4 : MAX_CLIENTS;
	const int rounds = test_quick() ? 16 : 64;
	struct srq_srv s = { 0 };
	struct rcc_server *srv;
	struct sender j[MAX_CLIENTS];
	pthread_t th[MAX_CLIENTS];
	char addr[128];

	CHECK_OK(test_ctx_open(&s.ctx));
	CHECK_OK(start_srq_server(&s, tm, threads, &srv, addr, sizeof(addr)));
	for (int i = 0; i < clients; i++) {
		j[i] = (struct sender){
			.ctx = s.ctx, .addr = addr, .id = (uint8_t)i, .rounds = rounds
		};
		CHECK(pthread_create(&th[i], NULL, sender_main, &j[i]) == 0);
	}
	for (int i = 0; i < clients; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < clients; i++)
		CHECK_MSG(j[i].rc == 0, "client %d: %s: %s", i, j[i].why, rcc_strerror(j[i].rc));
	/* a send completes once the server's SRQ took it; on_recv may trail */
	uint64_t end = now_ms() + TEST_TIMEOUT_MS;
	while (atomic_load(&s.received) < clients * rounds && now_ms() < end)
		sched_yield();
	CHECK_EQ(atomic_load(&s.received), clients * rounds);
	CHECK_EQ(atomic_load(&s.bad), 0);
	CHECK_EQ(atomic_load(&s.connects), clients);
	CHECK_OK(rcc_server_stop(srv));
	CHECK_EQ(atomic_load(&s.disconnects), clients);
	CHECK_OK(rcc_ctx_close(s.ctx));
}

static void srq_per_ep(void) { srq_many_clients(RCC_THREAD_PER_EP, 0); }
static void srq_shared_two_threads(void) { srq_many_clients(RCC_THREAD_SHARED_CQ, 2); }

/* The SRQ needs on_recv and excludes a template SRQ of the application's;
 * an on_request that names receives is turned away. */
static int request_with_recv(struct rcc_conn_req *req, void *arg, void **conn,
			     const struct rcc_recv_wr **recv, int *num)
{
	static const struct rcc_recv_wr none = { 0 };
	(void)req;
	(void)arg;
	(void)conn;
	*recv = &none;
	*num = 1;
	return 0;
}

static void srq_misuse(void)
{
	struct srq_srv s = { 0 };
	struct rcc_server *srv;
	struct rcc_client *cli;
	struct rcc_srq *own;
	char listen_addr[128], addr[128];
	struct rcc_server_ops ops = srq_ops;

	CHECK_OK(test_ctx_open(&s.ctx));
	snprintf(listen_addr, sizeof(listen_addr), "%s:0", test_addr());
	ops.on_recv = NULL;
	struct rcc_server_attr a = { .addr = listen_addr, .ops = &ops, .arg = &s, .srq_depth = 4 };
	CHECK_EQ(rcc_server_start(s.ctx, &a, &srv), -EINVAL);
	ops.on_recv = srq_recv;
	a.srq_depth = RCC_SERVER_SRQ_MAX + 1;
	CHECK_EQ(rcc_server_start(s.ctx, &a, &srv), -EINVAL);
	a.srq_depth = 4;
	CHECK_OK(rcc_srq_create(s.ctx, NULL, &own));
	a.ep_attr.srq = own;
	CHECK_EQ(rcc_server_start(s.ctx, &a, &srv), -EINVAL);
	a.ep_attr.srq = NULL;
	CHECK_OK(rcc_srq_destroy(own));

	ops.on_request = request_with_recv;
	CHECK_OK(rcc_server_start(s.ctx, &a, &srv));
	snprintf(addr, sizeof(addr), "%s:%d", test_addr(), rcc_server_port(srv));
	struct rcc_client_attr ca = { .connect_timeout_ms = TEST_TIMEOUT_MS };
	CHECK_EQ(rcc_client_connect(s.ctx, addr, &ca, &cli), -ECONNABORTED);
	struct rcc_server_stats st;
	rcc_server_stats(srv, &st);
	CHECK_EQ(st.rejected, 1);
	CHECK_EQ(st.accepted, 0);
	CHECK_OK(rcc_server_stop(srv));
	CHECK_OK(rcc_ctx_close(s.ctx));
}

TEST_MAIN(TEST(srq_per_ep), TEST(srq_shared_two_threads), TEST(srq_misuse))
