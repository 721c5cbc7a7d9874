/* SPDX-License-Identifier: BSD-3-Clause */
/* Session layer: a server handing clients to agents in both thread modes,
 * the client helper, and the registered buffer pool. */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "pair.h"
#include "rcc/session.h"
#ifdef RCC_TEST_CM_SILENT
#include "cm_silent.h"
#include "server_start.h"
#endif

/* ------------------------------------------------- an echo server's state */

#define MSG 512
#define SLOTS 4

struct echo_srv {
	struct rcc_ctx *ctx;
	atomic_int connects, disconnects, null_disconnects, requests;
	struct rcc_ep *_Atomic last_ep; /* the latest connection's server endpoint */
	int reject_tag;                 /* reject clients whose private data is this byte */
};

struct echo_conn {
	struct rcc_mr *mr;
	uint8_t buf[SLOTS][MSG];
	struct rcc_sge sge[SLOTS];
	struct rcc_recv_wr rw[SLOTS];
	struct echo_srv *srv;
};

static int echo_request(struct rcc_conn_req *req, void *arg, void **conn,
			const struct rcc_recv_wr **recv, int *num)
{
	struct echo_srv *s = arg;
	size_t len;
	const uint8_t *pd = rcc_conn_req_private_data(req, &len);

	atomic_fetch_add(&s->requests, 1);
	if (len == 1 && pd[0] == s->reject_tag)
		return -EPERM;
	/* each client hears its own tag back, doubled */
	if (len == 1) {
		uint8_t twice[2] = { pd[0], pd[0] };
		if (rcc_server_reply(req, twice, 2))
			return -EIO;
	}
	struct echo_conn *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->srv = s;
	int rc = rcc_mr_reg(s->ctx, c->buf, sizeof(c->buf), RCC_ACCESS_LOCAL_WRITE, &c->mr);
	if (rc) {
		free(c);
		return rc;
	}
	for (int i = 0; i < SLOTS; i++) {
		c->sge[i] = rcc_mr_sge(c->mr, c->buf[i], MSG);
		c->rw[i] = (struct rcc_recv_wr){ .wr_id = (uint64_t)i,
						 .sg_list = &c->sge[i],
						 .num_sge = 1 };
	}
	*conn = c;
	*recv = c->rw;
	*num = SLOTS;
	return 0;
}

static int echo_connect(struct rcc_ep *ep, void *arg, void **conn)
{
	struct echo_srv *s = arg;
	(void)conn;
	atomic_store(&s->last_ep, ep);
	atomic_fetch_add(&s->connects, 1);
	return 0;
}

static void echo_completion(struct rcc_ep *ep, const struct rcc_wc *wc, void *conn)
{
	struct echo_conn *c = conn;
	if (wc->status != RCC_WC_SUCCESS)
		return;
	if (wc->opcode == RCC_WC_RECV) {
		struct rcc_sge s = c->sge[wc->wr_id];
		s.length = wc->byte_len;
		rcc_post_send(ep, &s, 1, 100 + wc->wr_id, RCC_SEND_SIGNALED);
	} else {
		rcc_post_recv_list(ep, &c->rw[wc->wr_id - 100], 1, NULL);
	}
}

static void echo_disconnect(struct rcc_ep *ep, void *conn)
{
	struct echo_conn *c = conn;
	struct echo_srv *s = c->srv;
	atomic_fetch_add(ep ? &s->disconnects : &s->null_disconnects, 1);
	rcc_mr_dereg(c->mr);
	free(c);
}

static const struct rcc_server_ops echo_ops = {
	.on_request = echo_request,
	.on_connect = echo_connect,
	.on_completion = echo_completion,
	.on_disconnect = echo_disconnect,
};

static int start_echo(struct echo_srv *s, enum rcc_thread_mode tm, enum rcc_cq_mode cm, int threads,
		      int max_conn, struct rcc_server **srv, char *addr, size_t len)
{
	struct rcc_server_attr a = {
		.thread_mode = tm,
		.num_threads = threads,
		.cq_mode = cm,
		.ep_attr = { .sq_depth = SLOTS, .rq_depth = SLOTS },
		.max_connections = max_conn,
		.ops = &echo_ops,
		.arg = s,
	};
	return test_server_start(s->ctx, a, srv, addr, len);
}

/* ------------------------------------------------------------- clients */

struct client_job {
	struct rcc_ctx *ctx;
	const char *addr;
	int id;
	int rounds;
	enum rcc_cq_mode mode;
	int rc;
	const char *why;
};

static void *client_main(void *arg)
{
	struct client_job *j = arg;
	struct rcc_client *cli;
	struct tbuf b = { 0 };
	struct rcc_wc wc[2];
	uint8_t tag = (uint8_t)(j->id + 1);

	struct rcc_client_attr ca = {
		.cq_mode = j->mode,
		.ep_attr = { .sq_depth = 4,
			     .rq_depth = 4,
			     .private_data = &tag,
			     .private_data_len = 1 },
		.connect_timeout_ms = TEST_TIMEOUT_MS,
		.retry_for_ms = TEST_TIMEOUT_MS,
	};
	j->rc = rcc_client_connect(j->ctx, j->addr, &ca, &cli);
	if (j->rc) {
		j->why = "connect";
		return NULL;
	}
	struct rcc_ep *ep = rcc_client_ep(cli);
	struct rcc_cq *cq = rcc_client_cq(cli);
	size_t rlen;
	const uint8_t *reply = rcc_ep_private_data(ep, &rlen);
	if (rlen != 2 || !reply || reply[0] != tag || reply[1] != tag) {
		j->rc = -EPROTO;
		j->why = "the server's reply is not this client's own";
		rcc_client_close(cli);
		return NULL;
	}
	j->rc = tbuf_alloc(&b, j->ctx, 2 * MSG, RCC_ACCESS_LOCAL_WRITE);
	for (int r = 0; r < j->rounds && !j->rc; r++) {
		uint64_t seed = (uint64_t)j->id * 100000 + (uint64_t)r;
		fill_pattern(b.p, MSG, seed);
		memset(b.p + MSG, 0, MSG);
		struct rcc_sge s = tbuf_sge(&b, 0, MSG), rr = tbuf_sge(&b, MSG, MSG);
		if ((j->rc = rcc_post_recv(ep, &rr, 1, 1)) ||
		    (j->rc = rcc_post_send(ep, &s, 1, 2, RCC_SEND_SIGNALED))) {
			j->why = "post";
			break;
		}
		if (wait_n(cq, wc, 2, TEST_TIMEOUT_MS) != 2 || wc[0].status || wc[1].status) {
			j->rc = -EIO;
			j->why = "round trip";
			break;
		}
		if (check_pattern(b.p + MSG, MSG, seed) != -1) {
			j->rc = -EIO;
			j->why = "echo differs";
		}
	}
	tbuf_free(&b);
	rcc_client_close(cli);
	return NULL;
}

static void many_clients(enum rcc_thread_mode tm, enum rcc_cq_mode cm, int threads)
{
	enum {
		MAX_CLIENTS = 8
	};
	/* busy-polling agents, one per client, would only fight over two cores;
	 * under valgrind (quick mode) every thread shares one */
	const int CLIENTS = (tm == RCC_THREAD_PER_EP && cm == RCC_CQ_POLL) || test_quick() ?
				    2 :
				    MAX_CLIENTS;
	const int ROUNDS = test_quick() ? 20 : 100;
	struct echo_srv s = { .reject_tag = -1 };
	struct rcc_server *srv;
	struct client_job j[MAX_CLIENTS];
	pthread_t th[MAX_CLIENTS];
	char addr[128];

	CHECK_OK(test_ctx_open(&s.ctx));
	CHECK_OK(start_echo(&s, tm, cm, threads, 0, &srv, addr, sizeof(addr)));
	for (int i = 0; i < CLIENTS; i++) {
		j[i] = (struct client_job){
			.ctx = s.ctx, .addr = addr, .id = i, .rounds = ROUNDS, .mode = RCC_CQ_WAIT
		};
		CHECK(pthread_create(&th[i], NULL, client_main, &j[i]) == 0);
	}
	for (int i = 0; i < CLIENTS; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < CLIENTS; i++)
		CHECK_MSG(j[i].rc == 0, "client %d: %s: %s", i, j[i].why, rcc_strerror(j[i].rc));
	struct rcc_server_stats st;
	rcc_server_stats(srv, &st);
	CHECK_EQ(st.accepted, CLIENTS);
	/* every client has gone: each connection ends exactly once */
	uint64_t end = now_ms() + TEST_TIMEOUT_MS;
	while (atomic_load(&s.disconnects) < CLIENTS && now_ms() < end)
		rcc_server_stats(srv, &st); /* polls; the agents notice the goodbyes */
	CHECK_EQ(atomic_load(&s.disconnects), CLIENTS);
	CHECK_EQ(atomic_load(&s.connects), CLIENTS);
	CHECK_OK(rcc_server_stop(srv));
	CHECK_EQ(atomic_load(&s.disconnects), CLIENTS);
	CHECK_OK(rcc_ctx_close(s.ctx));
}

static void server_per_ep_poll(void) { many_clients(RCC_THREAD_PER_EP, RCC_CQ_POLL, 0); }
static void server_per_ep_wait(void) { many_clients(RCC_THREAD_PER_EP, RCC_CQ_WAIT, 0); }
static void server_shared_one_thread(void) { many_clients(RCC_THREAD_SHARED_CQ, RCC_CQ_WAIT, 1); }
static void server_shared_two_threads(void) { many_clients(RCC_THREAD_SHARED_CQ, RCC_CQ_POLL, 2); }
static void server_shared_hybrid(void) { many_clients(RCC_THREAD_SHARED_CQ, RCC_CQ_HYBRID, 2); }
static void server_per_ep_hybrid(void) { many_clients(RCC_THREAD_PER_EP, RCC_CQ_HYBRID, 0); }

/* The application's on_request can refuse; max_connections turns away the rest. */
static void server_rejects(void)
{
	struct echo_srv s = { .reject_tag = 1 };
	struct rcc_server *srv;
	struct rcc_client *cli, *keep;
	char addr[128];
	uint8_t tag1 = 1, tag2 = 2;

	CHECK_OK(test_ctx_open(&s.ctx));
	CHECK_OK(start_echo(&s, RCC_THREAD_SHARED_CQ, RCC_CQ_WAIT, 1, 1, &srv, addr, sizeof(addr)));
	struct rcc_client_attr ca = { .ep_attr = { .private_data = &tag1, .private_data_len = 1 },
				      .connect_timeout_ms = TEST_TIMEOUT_MS };
	CHECK_EQ(rcc_client_connect(s.ctx, addr, &ca, &cli), -ECONNABORTED);
	ca.ep_attr.private_data = &tag2;
	CHECK_OK(rcc_client_connect(s.ctx, addr, &ca, &keep));
	/* the one allowed connection is taken */
	CHECK_EQ(rcc_client_connect(s.ctx, addr, &ca, &cli), -ECONNABORTED);
	struct rcc_server_stats st;
	rcc_server_stats(srv, &st);
	CHECK_EQ(st.accepted, 1);
	CHECK_EQ(st.rejected, 2);
	CHECK_EQ(st.active, 1);
	/* stopping with a live client: it is disconnected, its state freed */
	CHECK_OK(rcc_server_stop(srv));
	CHECK_EQ(atomic_load(&s.disconnects), 1);
	struct rcc_wc wc;
	uint64_t end = now_ms() + TEST_TIMEOUT_MS;
	while (rcc_ep_state(rcc_client_ep(keep)) == RCC_EP_CONNECTED && now_ms() < end)
		(void)rcc_cq_wait(rcc_client_cq(keep), &wc, 1, 10);
	CHECK_EQ(rcc_ep_state(rcc_client_ep(keep)), RCC_EP_DISCONNECTED);
	CHECK_OK(rcc_client_close(keep));
	CHECK_EQ(atomic_load(&s.requests), 2); /* the full server never asked the application */
	CHECK_OK(rcc_ctx_close(s.ctx));
}

/*
 * Verbs with rdma_cm: three clients get the server's REP and never send the
 * RTU. The listener never waits on them: a real client connecting behind them
 * is served -- everything from the first silent connect to its last echo -- in
 * under 5 s (a server that waited on each RTU, 5 s each, one at a time, would
 * not even answer the second before then; about 1-3 s on Soft-RoCE). Each
 * silent accept then fails within 5 s: counted as rejected, its state released
 * through on_disconnect(NULL), never handed to on_connect.
 */
#define SILENT_BOUND_MS 5000
static void silent_verbs_clients(enum rcc_thread_mode tm)
{
#ifndef RCC_TEST_CM_SILENT
	(void)tm;
	SKIP_CASE("verbs", "built without librdmacm");
#else
	enum {
		SILENT = 3
	};
	struct echo_srv s = { .reject_tag = -1 };
	struct rcc_server *srv;
	struct cm_silent *silent[SILENT] = { 0 };
	struct rcc_server_stats st;
	char addr[128], why[200] = "";

	if (!test_on_verbs())
		SKIP_CASE("verbs", "a silent rdma_cm client needs the verbs transport");
	if (test_bringup() != RCC_BRINGUP_CM)
		SKIP_CASE("cm-bringup", "a silent rdma_cm client needs the cm bring-up");
	CHECK_OK(test_ctx_open(&s.ctx));
	CHECK_OK(start_echo(&s, tm, RCC_CQ_WAIT, 1, 0, &srv, addr, sizeof(addr)));
	uint64_t t0 = now_ms();
	for (int i = 0; i < SILENT; i++)
		CHECK_MSG(!cm_silent_open(test_addr(), rcc_server_port(srv), &silent[i], why,
					  sizeof(why)),
			  "silent client %d was not answered: %s", i, why);
	struct client_job j = {
		.ctx = s.ctx, .addr = addr, .id = 7, .rounds = 3, .mode = RCC_CQ_WAIT
	};
	client_main(&j);
	long took = (long)(now_ms() - t0);
	CHECK_MSG(j.rc == 0, "the real client: %s: %s", j.why, rcc_strerror(j.rc));
	CHECK_MSG(took < SILENT_BOUND_MS, "the real client was served after %ld ms", took);
	uint64_t end = now_ms() + TEST_TIMEOUT_MS;
	do
		rcc_server_stats(srv, &st);
	while ((st.rejected < SILENT || atomic_load(&s.null_disconnects) < SILENT) &&
	       now_ms() < end && !poll(NULL, 0, 20));
	CHECK_EQ(st.rejected, SILENT);
	CHECK_EQ(atomic_load(&s.null_disconnects), SILENT);
	CHECK_EQ(atomic_load(&s.connects), 1); /* the real client only */
	for (int i = 0; i < SILENT; i++)
		cm_silent_close(silent[i]);
	CHECK_OK(rcc_server_stop(srv));
	CHECK_OK(rcc_ctx_close(s.ctx));
#endif
}
static void silent_verbs_clients_per_ep(void) { silent_verbs_clients(RCC_THREAD_PER_EP); }
static void silent_verbs_clients_shared(void) { silent_verbs_clients(RCC_THREAD_SHARED_CQ); }

/* Takes every connection event of a context it can, until told to stop. */
struct event_thief {
	struct rcc_ctx *ctx;
	atomic_bool stop;
	atomic_int taken;
};

static void *thief_main(void *arg)
{
	struct event_thief *t = arg;
	struct rcc_event ev;

	while (!atomic_load(&t->stop))
		if (rcc_ctx_get_event(t->ctx, &ev, 20) == 0 && ev.type == RCC_EVENT_ESTABLISHED)
			atomic_fetch_add(&t->taken, 1); /* an accept's outcome, the server's */
	return NULL;
}

/*
 * The server learns how each accept ended from its context's events; when
 * something else takes them (the application, or a second server on the same
 * context), it still finds the ended accepts by their endpoints' state, within
 * its listener's 1 s pass: every client is served. Clients come one after
 * another until the other taker has won the race for an accept's event
 * (ESTABLISHED: only the server's accepts give it here) twice.
 */
static void events_taken_by_someone_else(void)
{
	enum {
		MAX_CLIENTS = 40
	};
	struct echo_srv s = { .reject_tag = -1 };
	struct event_thief t = { 0 };
	struct rcc_server *srv;
	pthread_t th;
	char addr[128];

	CHECK_OK(test_ctx_open(&s.ctx));
	CHECK_OK(start_echo(&s, RCC_THREAD_SHARED_CQ, RCC_CQ_WAIT, 1, 0, &srv, addr, sizeof(addr)));
	t.ctx = s.ctx;
	CHECK(pthread_create(&th, NULL, thief_main, &t) == 0);
	int failed = 0, clients = 0;
	while (clients < MAX_CLIENTS && atomic_load(&t.taken) < 2) {
		struct client_job j = { .ctx = s.ctx,
					.addr = addr,
					.id = clients++,
					.rounds = 2,
					.mode = RCC_CQ_WAIT };
		client_main(&j);
		failed += j.rc != 0;
	}
	atomic_store(&t.stop, true);
	pthread_join(th, NULL);
	CHECK_EQ(failed, 0);
	CHECK_MSG(atomic_load(&t.taken) >= 2, "the other taker won no accept's event in %d clients",
		  clients);
	CHECK_EQ(atomic_load(&s.connects), clients);
	CHECK_OK(rcc_server_stop(srv));
	CHECK_OK(rcc_ctx_close(s.ctx));
}

/* A client started before its server retries until the server is up. */
static void client_retries_until_server_up(void)
{
	struct echo_srv s = { .reject_tag = -1 };
	struct rcc_server *srv;
	struct rcc_listener *probe;
	char addr[128], any[128];
	pthread_t th;

	CHECK_OK(test_ctx_open(&s.ctx));
	/* find a free port, then leave it unused for a moment */
	snprintf(any, sizeof(any), "%s:0", test_addr());
	CHECK_OK(rcc_listen(s.ctx, any, 0, &probe));
	int port = rcc_listener_port(probe);
	rcc_listener_close(probe);
	snprintf(addr, sizeof(addr), "%s:%d", test_addr(), port);
	struct client_job j = {
		.ctx = s.ctx, .addr = addr, .id = 5, .rounds = 3, .mode = RCC_CQ_POLL
	};
	CHECK(pthread_create(&th, NULL, client_main, &j) == 0);
	char listen_addr[128];
	snprintf(listen_addr, sizeof(listen_addr), "%s:%d", test_addr(), port);
	struct rcc_server_attr a = { .addr = listen_addr,
				     .thread_mode = RCC_THREAD_PER_EP,
				     .ep_attr = { .sq_depth = SLOTS, .rq_depth = SLOTS },
				     .ops = &echo_ops,
				     .arg = &s };
	int rc = rcc_server_start(s.ctx, &a, &srv);
	pthread_join(th, NULL);
	CHECK_OK(rc);
	CHECK_MSG(j.rc == 0, "client: %s: %s", j.why, rcc_strerror(j.rc));
	CHECK_OK(rcc_server_stop(srv));
	CHECK_OK(rcc_ctx_close(s.ctx));
}

/* Another thread ends one live connection; the others keep working. */
static void server_disconnect_from_outside(void)
{
	struct echo_srv s = { .reject_tag = -1 };
	struct rcc_server *srv;
	struct rcc_client *c1, *c2;
	struct rcc_wc wc;
	char addr[128];
	uint8_t t1 = 1, t2 = 2;

	CHECK_OK(test_ctx_open(&s.ctx));
	CHECK_OK(start_echo(&s, RCC_THREAD_SHARED_CQ, RCC_CQ_WAIT, 1, 0, &srv, addr, sizeof(addr)));
	struct rcc_client_attr ca = { .ep_attr = { .private_data = &t1, .private_data_len = 1 },
				      .connect_timeout_ms = TEST_TIMEOUT_MS };
	CHECK_OK(rcc_client_connect(s.ctx, addr, &ca, &c1));
	ca.ep_attr.private_data = &t2;
	CHECK_OK(rcc_client_connect(s.ctx, addr, &ca, &c2));
	/* reply only works inside on_request */
	CHECK_EQ(rcc_server_reply(NULL, "x", 1), -EINVAL);
	CHECK_EQ(rcc_server_disconnect(srv, rcc_client_ep(c1)), -ENOENT); /* a client's, not ours */

	/* find the server side of c1: the endpoint the echo connects with tag 1 */
	uint64_t end = now_ms() + TEST_TIMEOUT_MS;
	while (atomic_load(&s.connects) < 2 && now_ms() < end)
		(void)rcc_cq_wait(rcc_client_cq(c1), &wc, 1, 10);
	CHECK_EQ(atomic_load(&s.connects), 2);
	CHECK_OK(rcc_server_disconnect(srv, atomic_load(&s.last_ep)));
	end = now_ms() + TEST_TIMEOUT_MS;
	while (atomic_load(&s.disconnects) < 1 && now_ms() < end)
		(void)rcc_cq_wait(rcc_client_cq(c1), &wc, 1, 10);
	CHECK_EQ(atomic_load(&s.disconnects), 1);
	CHECK_EQ(rcc_server_disconnect(srv, atomic_load(&s.last_ep)), -ENOENT); /* already gone */
	/* exactly one client lost its connection */
	end = now_ms() + TEST_TIMEOUT_MS;
	int down = 0;
	while (now_ms() < end && !down) {
		(void)rcc_cq_wait(rcc_client_cq(c2), &wc, 1, 10);
		down = (rcc_ep_state(rcc_client_ep(c1)) != RCC_EP_CONNECTED) +
		       (rcc_ep_state(rcc_client_ep(c2)) != RCC_EP_CONNECTED);
	}
	CHECK_EQ(down, 1);
	rcc_client_close(c1);
	rcc_client_close(c2);
	CHECK_OK(rcc_server_stop(srv));
	CHECK_EQ(atomic_load(&s.disconnects), 2);
	CHECK_OK(rcc_ctx_close(s.ctx));
}

/* ---------------------------------------------------------------- pool */

static void pool_get_put(void)
{
	struct rcc_ctx *ctx;
	struct rcc_pool *pool;
	void *piece[8], *extra;

	CHECK_OK(test_ctx_open(&ctx));
	CHECK_EQ(rcc_pool_create(ctx, 0, 8, 0, &pool), -EINVAL);
	CHECK_EQ(rcc_pool_create(ctx, 100, 0, 0, &pool), -EINVAL);
	CHECK_OK(rcc_pool_create(ctx, 100, 8, RCC_ACCESS_LOCAL_WRITE, &pool));
	CHECK_EQ(rcc_pool_count(pool), 8);
	CHECK_EQ(rcc_pool_piece_size(pool), 100);
	for (int i = 0; i < 8; i++) {
		CHECK_OK(rcc_pool_get(pool, &piece[i]));
		CHECK_EQ((uintptr_t)piece[i] % 64, 0);
		CHECK_EQ(rcc_pool_index(pool, piece[i]), i);
		CHECK(rcc_pool_piece_at(pool, (uint32_t)i) == piece[i]);
		memset(piece[i], i, 100); /* the whole piece is usable */
		for (int k = 0; k < i; k++)
			CHECK(piece[k] != piece[i]);
	}
	CHECK_EQ(rcc_pool_available(pool), 0);
	CHECK_EQ(rcc_pool_get(pool, &extra), -ENOBUFS);
	CHECK_EQ(rcc_pool_destroy(pool), -EBUSY);
	for (int i = 0; i < 8; i++)
		CHECK_EQ(((uint8_t *)piece[i])[99], i); /* pieces do not overlap */
	CHECK_OK(rcc_pool_put(pool, piece[3]));
	CHECK_EQ(rcc_pool_put(pool, piece[3]), -EINVAL);                /* twice */
	CHECK_EQ(rcc_pool_put(pool, (uint8_t *)piece[4] + 1), -EINVAL); /* not a piece start */
	int local;
	CHECK_EQ(rcc_pool_put(pool, &local), -EINVAL); /* not ours */
	CHECK_OK(rcc_pool_get(pool, &extra));
	CHECK(extra == piece[3]);
	struct rcc_sge s = rcc_pool_sge(pool, piece[2], 100);
	CHECK_EQ(s.addr, (uintptr_t)piece[2]);
	CHECK_EQ(s.length, 100);
	CHECK_EQ(s.lkey, rcc_mr_lkey(rcc_pool_mr(pool)));
	for (int i = 0; i < 8; i++)
		CHECK_OK(rcc_pool_put(pool, piece[i]));
	CHECK_EQ(rcc_pool_available(pool), 8);
	CHECK_OK(rcc_pool_destroy(pool));
	CHECK_OK(rcc_ctx_close(ctx));
}

/* Pool pieces carry real transfers, both as sources and as remote targets. */
static void pool_pieces_in_transfers(void)
{
	struct pair p;
	struct rcc_pool *pool;
	void *src, *dst;
	struct rcc_wc wc;

	CHECK_OK(pair_open(&p, NULL));
	CHECK_OK(rcc_pool_create(p.ctx, 4096, 4, RCC_ACCESS_LOCAL_WRITE | RCC_ACCESS_REMOTE_WRITE,
				 &pool));
	CHECK_OK(rcc_pool_get(pool, &src));
	CHECK_OK(rcc_pool_get(pool, &dst));
	fill_pattern(src, 4096, 77);
	struct rcc_sge s = rcc_pool_sge(pool, src, 4096);
	struct rcc_remote_mr rm = rcc_mr_remote(rcc_pool_mr(pool));
	CHECK_OK(rcc_post_write(p.a, &s, 1, (uintptr_t)dst, rm.rkey, 1, RCC_SEND_SIGNALED));
	CHECK_OK(wait_one(p.cq_a, &wc, TEST_TIMEOUT_MS));
	CHECK_WC(wc, RCC_WC_SUCCESS);
	CHECK_EQ(check_pattern(dst, 4096, 77), -1);
	CHECK_OK(rcc_pool_put(pool, src));
	CHECK_OK(rcc_pool_put(pool, dst));
	CHECK_OK(rcc_pool_destroy(pool));
	pair_close(&p);
}

TEST_MAIN(TEST(server_per_ep_poll), TEST(server_per_ep_wait), TEST(server_shared_one_thread),
	  TEST(server_shared_two_threads), TEST(server_shared_hybrid), TEST(server_per_ep_hybrid),
	  TEST(server_rejects), TEST(server_disconnect_from_outside),
	  TEST(client_retries_until_server_up), TEST(pool_get_put), TEST(pool_pieces_in_transfers),
	  TEST(silent_verbs_clients_per_ep), TEST(silent_verbs_clients_shared),
	  TEST(events_taken_by_someone_else))
