/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rcc_server_connect(): a server (A) connects to another (B) and serves the
 * connection with its own agents, as if it had accepted it. B greets each
 * connection from its on_connect, so the greeting may reach A before A's
 * agent has been handed the connection; A's callbacks check that they run on
 * the connection's one agent thread, with the caller's conn, on_connect first
 * and on_disconnect exactly once. Then both sides exchange messages checked
 * byte for byte.
 */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "pair.h"
#include "raw_listener.h"
#include "rcc/session.h"
#include "server_start.h"

#define MSG 256
#define SLOTS 4
#define CONNS 2
#define MAGIC 0x5c0ec7
#define SEND_ID 1000

/* Each message's pattern: who sent it, on which connection, which one. */
static uint64_t seed_a(int tag, int n) { return ((uint64_t)tag << 20) | (1u << 16) | (unsigned)n; }
static uint64_t seed_b(int tag, int n) { return ((uint64_t)tag << 20) | (2u << 16) | (unsigned)n; }
static uint64_t seed_greet(int tag) { return ((uint64_t)tag << 20) | (3u << 16); }

static int rounds(void) { return test_quick() ? 5 : 20; }

/* Wait (bounded) until *v reaches want; polls, the agents do the work. */
static bool wait_for(atomic_int *v, int want)
{
	uint64_t end = now_ms() + TEST_TIMEOUT_MS;
	while (atomic_load(v) < want && now_ms() < end)
		(void)poll(NULL, 0, 5);
	return atomic_load(v) >= want;
}

/* Receive buffers posted as an endpoint's initial receives, and one send buffer. */
struct bufs {
	struct rcc_mr *mr;
	uint8_t rbuf[SLOTS][MSG];
	uint8_t sbuf[MSG];
	struct rcc_sge rsge[SLOTS];
	struct rcc_recv_wr rw[SLOTS];
};

static int bufs_init(struct bufs *b, struct rcc_ctx *ctx)
{
	int rc = rcc_mr_reg(ctx, b, sizeof(*b), RCC_ACCESS_LOCAL_WRITE, &b->mr);
	if (rc)
		return rc;
	for (int i = 0; i < SLOTS; i++) {
		b->rsge[i] = rcc_mr_sge(b->mr, b->rbuf[i], MSG);
		b->rw[i] = (struct rcc_recv_wr){ .wr_id = (uint64_t)i,
						 .sg_list = &b->rsge[i],
						 .num_sge = 1 };
	}
	return 0;
}

static int send_pattern(struct rcc_ep *ep, struct bufs *b, uint64_t seed)
{
	fill_pattern(b->sbuf, MSG, seed);
	struct rcc_sge s = rcc_mr_sge(b->mr, b->sbuf, MSG);
	return rcc_post_send(ep, &s, 1, SEND_ID, RCC_SEND_SIGNALED);
}

/* ------------------------------------------------------ B: the peer server */

struct b_side {
	struct rcc_ctx *ctx;
	struct rcc_server *srv;
	struct rcc_ep *_Atomic eps[CONNS]; /* by A's tag */
	atomic_int connects, disconnects, bad, got, send_errors;
};

struct b_conn {
	struct bufs b;
	struct b_side *side;
	int tag, nrecv;
};

static int b_request(struct rcc_conn_req *req, void *arg, void **conn,
		     const struct rcc_recv_wr **recv, int *num)
{
	struct b_side *s = arg;
	size_t len;
	const uint8_t *pd = rcc_conn_req_private_data(req, &len);

	if (len != 1 || pd[0] >= CONNS)
		return -EPROTO;
	struct b_conn *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	int rc = bufs_init(&c->b, s->ctx);
	if (rc) {
		free(c);
		return rc;
	}
	c->side = s;
	c->tag = pd[0];
	*conn = c;
	*recv = c->b.rw;
	*num = SLOTS;
	return 0;
}

/* Greets at once: A may get this before its agent knows the connection. */
static int b_connect(struct rcc_ep *ep, void *arg, void **conn)
{
	struct b_side *s = arg;
	struct b_conn *c = *conn;

	atomic_store(&s->eps[c->tag], ep);
	atomic_fetch_add(&s->connects, 1);
	if (send_pattern(ep, &c->b, seed_greet(c->tag)))
		atomic_fetch_add(&s->send_errors, 1);
	return 0;
}

/* Checks each message of A and answers it with one of its own. */
static void b_completion(struct rcc_ep *ep, const struct rcc_wc *wc, void *conn)
{
	struct b_conn *c = conn;
	struct b_side *s = c->side;

	if (wc->status != RCC_WC_SUCCESS || wc->opcode != RCC_WC_RECV)
		return;
	int n = c->nrecv++;
	if (wc->byte_len != MSG ||
	    check_pattern(c->b.rbuf[wc->wr_id], MSG, seed_a(c->tag, n)) != -1)
		atomic_fetch_add(&s->bad, 1);
	atomic_fetch_add(&s->got, 1);
	if (rcc_post_recv_list(ep, &c->b.rw[wc->wr_id], 1, NULL) ||
	    send_pattern(ep, &c->b, seed_b(c->tag, n)))
		atomic_fetch_add(&s->send_errors, 1);
}

static void b_disconnect(struct rcc_ep *ep, void *conn)
{
	struct b_conn *c = conn;
	(void)ep;
	atomic_fetch_add(&c->side->disconnects, 1);
	rcc_mr_dereg(c->b.mr);
	free(c);
}

static const struct rcc_server_ops b_ops = {
	.on_request = b_request,
	.on_connect = b_connect,
	.on_completion = b_completion,
	.on_disconnect = b_disconnect,
};

/* ------------------------------------------- A: the server that connects */

struct a_conn;

struct a_side {
	struct rcc_server *srv;
	pthread_t main_thread;
	const char *peer_addr; /* for a connect from on_disconnect */
	atomic_int accepted_connects, wrong_conn;
	atomic_int connect_in_disconnect; /* its status; 1: not tried */
	bool srq;                         /* receives come from the server's SRQ */
	/* called on the agent when a connection's exchange is over */
	void (*on_done)(struct a_conn *c);
	void *env;
};

/* A conn pointer that is not one of the test's (on_completion has no arg). */
static atomic_int stray_conn;

struct a_conn {
	int magic;
	int tag;
	struct a_side *side;
	struct bufs b;
	struct rcc_ep *ep; /* rcc_server_connect()'s */
	/* set on the agent */
	pthread_t agent;
	int nrecv;
	atomic_int connects, disconnects, before_connect, wrong_thread, wrong_ep, bad, replies,
		send_errors, on_main;
	atomic_bool done;
	struct rcc_ep *_Atomic connect_ep, *_Atomic disconnect_ep;
};

static bool is_a_conn(const void *conn)
{
	return conn && ((const struct a_conn *)conn)->magic == MAGIC;
}

static int a_connect(struct rcc_ep *ep, void *arg, void **conn)
{
	struct a_side *s = arg;

	if (!*conn) { /* accepted: the max_connections case's client */
		atomic_fetch_add(&s->accepted_connects, 1);
		return 0;
	}
	if (!is_a_conn(*conn)) {
		atomic_fetch_add(&s->wrong_conn, 1);
		return 0;
	}
	struct a_conn *c = *conn;
	c->agent = pthread_self();
	if (pthread_equal(c->agent, s->main_thread))
		atomic_fetch_add(&c->on_main, 1);
	atomic_store(&c->connect_ep, ep);
	atomic_fetch_add(&c->connects, 1);
	return 0;
}

/* A callback of conn: one of the test's, on the agent that ran on_connect,
 * after it. NULL when it is not one of the test's. */
static struct a_conn *a_check(struct rcc_ep *ep, void *conn)
{
	if (!conn)
		return NULL; /* an accepted connection */
	if (!is_a_conn(conn)) {
		atomic_fetch_add(&stray_conn, 1);
		return NULL;
	}
	struct a_conn *c = conn;
	if (!atomic_load(&c->connects))
		atomic_fetch_add(&c->before_connect, 1);
	else if (!pthread_equal(pthread_self(), c->agent))
		atomic_fetch_add(&c->wrong_thread, 1);
	if (ep != atomic_load(&c->connect_ep))
		atomic_fetch_add(&c->wrong_ep, 1);
	return c;
}

/* A message of B: the greeting first, then B's answer to each of ours. */
static void a_got(struct rcc_ep *ep, struct a_conn *c, const void *data, uint32_t len)
{
	int n = c->nrecv++;
	uint64_t seed = n ? seed_b(c->tag, n - 1) : seed_greet(c->tag);
	if (len != MSG || check_pattern(data, MSG, seed) != -1)
		atomic_fetch_add(&c->bad, 1);
	if (n)
		atomic_fetch_add(&c->replies, 1);
	if (n < rounds()) {
		if (send_pattern(ep, &c->b, seed_a(c->tag, n)))
			atomic_fetch_add(&c->send_errors, 1);
		return;
	}
	atomic_store(&c->done, true);
	if (c->side->on_done)
		c->side->on_done(c);
}

static void a_completion(struct rcc_ep *ep, const struct rcc_wc *wc, void *conn)
{
	struct a_conn *c = a_check(ep, conn);

	if (!c || wc->status != RCC_WC_SUCCESS || wc->opcode != RCC_WC_RECV)
		return;
	if (c->side->srq) { /* with the server's SRQ, every receive goes to on_recv */
		atomic_fetch_add(&c->bad, 1);
		return;
	}
	if (rcc_post_recv_list(ep, &c->b.rw[wc->wr_id], 1, NULL))
		atomic_fetch_add(&c->send_errors, 1);
	a_got(ep, c, c->b.rbuf[wc->wr_id], wc->byte_len);
}

static void a_recv(struct rcc_ep *ep, const struct rcc_wc *wc, const void *data, void *conn)
{
	struct a_conn *c = a_check(ep, conn);

	if (!c || !c->side->srq || !data) {
		if (c)
			atomic_fetch_add(&c->bad, 1);
		return;
	}
	a_got(ep, c, data, wc->byte_len);
}

static void a_disconnect(struct rcc_ep *ep, void *conn)
{
	if (!is_a_conn(conn)) {
		if (conn) /* NULL: an accepted connection */
			atomic_fetch_add(&stray_conn, 1);
		return;
	}
	struct a_conn *c = conn;
	struct a_side *s = c->side;
	if (!pthread_equal(pthread_self(), c->agent))
		atomic_fetch_add(&c->wrong_thread, 1);
	atomic_store(&c->disconnect_ep, ep);
	atomic_fetch_add(&c->disconnects, 1);
	/* while A stops, a new connection is refused */
	if (atomic_load(&s->connect_in_disconnect) == 1) {
		struct rcc_ep *other = NULL;
		atomic_store(&s->connect_in_disconnect,
			     rcc_server_connect(s->srv, s->peer_addr, NULL, TEST_TIMEOUT_MS, NULL,
						&other));
	}
}

static const struct rcc_server_ops a_ops = {
	.on_connect = a_connect,
	.on_completion = a_completion,
	.on_disconnect = a_disconnect,
	.on_recv = a_recv,
};

/* --------------------------------------------------------------- set-up */

struct env {
	struct rcc_ctx *ctx_a, *ctx_b;
	struct a_side a;
	struct b_side b;
	char b_addr[128];
	struct a_conn conn[CONNS];
	atomic_int chain_rc; /* rcc_server_connect() from a callback; 1: not yet */
};

static int start_server(struct rcc_ctx *ctx, enum rcc_thread_mode tm, int threads, int max_conn,
			uint32_t srq_depth, const struct rcc_server_ops *ops, void *arg,
			struct rcc_server **srv)
{
	struct rcc_server_attr a = {
		.thread_mode = tm,
		.num_threads = threads,
		.cq_mode = RCC_CQ_WAIT,
		.ep_attr = { .sq_depth = SLOTS, .rq_depth = SLOTS },
		.max_connections = max_conn,
		.srq_depth = srq_depth,
		.ops = ops,
		.arg = arg,
	};
	return test_server_start(ctx, a, srv, NULL, 0);
}

/* A (thread mode tm, threads, srq_depth) and B (one shared-CQ agent), each on
 * a context of its own: a server takes every connection event of its context. */
static int env_open(struct env *e, enum rcc_thread_mode tm, int threads, int max_conn,
		    uint32_t srq_depth)
{
	int rc;

	memset(e, 0, sizeof(*e));
	e->a.main_thread = pthread_self();
	e->a.srq = srq_depth != 0;
	e->a.env = e;
	atomic_init(&e->a.connect_in_disconnect, 0);
	atomic_init(&e->chain_rc, 1);
	atomic_store(&stray_conn, 0);
	if ((rc = test_ctx_open(&e->ctx_a)) || (rc = test_ctx_open(&e->ctx_b)))
		return rc;
	e->b.ctx = e->ctx_b;
	rc = start_server(e->ctx_b, RCC_THREAD_SHARED_CQ, 1, 0, 0, &b_ops, &e->b, &e->b.srv);
	if (rc)
		return rc;
	snprintf(e->b_addr, sizeof(e->b_addr), "%s:%d", test_addr(), rcc_server_port(e->b.srv));
	e->a.peer_addr = e->b_addr;
	rc = start_server(e->ctx_a, tm, threads, max_conn, srq_depth, &a_ops, &e->a, &e->a.srv);
	if (rc)
		return rc;
	for (int i = 0; i < CONNS; i++) {
		e->conn[i].magic = MAGIC;
		e->conn[i].tag = i;
		e->conn[i].side = &e->a;
		rc = bufs_init(&e->conn[i].b, e->ctx_a);
		if (rc)
			return rc;
	}
	return 0;
}

/* Servers first (their endpoints use the regions), then regions, contexts. */
static void env_close(struct env *e)
{
	if (e->a.srv)
		TEARDOWN(rcc_server_stop(e->a.srv));
	if (e->b.srv)
		TEARDOWN(rcc_server_stop(e->b.srv));
	for (int i = 0; i < CONNS; i++)
		if (e->conn[i].b.mr)
			TEARDOWN(rcc_mr_dereg(e->conn[i].b.mr));
	if (e->ctx_a)
		TEARDOWN(rcc_ctx_close(e->ctx_a));
	if (e->ctx_b)
		TEARDOWN(rcc_ctx_close(e->ctx_b));
}

/* Stop a server of the env now (env_close() then leaves it alone). */
static int stop_server(struct rcc_server **srv)
{
	int rc = rcc_server_stop(*srv);
	*srv = NULL;
	return rc;
}

/* A connects conn i to B with its receives as the initial ones, and the tag
 * that tells B which one it is. */
static int connect_one(struct env *e, int i)
{
	struct a_conn *c = &e->conn[i];
	uint8_t tag = (uint8_t)i;
	struct rcc_ep_attr ea = { .sq_depth = SLOTS,
				  .rq_depth = SLOTS,
				  .initial_recv = c->b.rw,
				  .num_initial_recv = SLOTS,
				  .private_data = &tag,
				  .private_data_len = 1 };
	return rcc_server_connect(e->a.srv, e->b_addr, &ea, TEST_TIMEOUT_MS, c, &c->ep);
}

/* Everything A's callbacks saw of conn c was right. */
#define CHECK_A_CONN(c)                                         \
	do {                                                    \
		CHECK_EQ(atomic_load(&(c)->before_connect), 0); \
		CHECK_EQ(atomic_load(&(c)->wrong_thread), 0);   \
		CHECK_EQ(atomic_load(&(c)->wrong_ep), 0);       \
		CHECK_EQ(atomic_load(&(c)->on_main), 0);        \
		CHECK_EQ(atomic_load(&(c)->bad), 0);            \
		CHECK_EQ(atomic_load(&(c)->send_errors), 0);    \
		CHECK_EQ(atomic_load(&(c)->connects), 1);       \
	} while (0)

/* Every conn was served right and ended exactly once, its own ep named. */
#define CHECK_ENDED_ONCE(e)                                                                   \
	do {                                                                                  \
		CHECK_EQ(atomic_load(&stray_conn), 0);                                        \
		for (int i_ = 0; i_ < CONNS; i_++) {                                          \
			CHECK_A_CONN(&(e)->conn[i_]);                                         \
			CHECK_EQ(atomic_load(&(e)->conn[i_].disconnects), 1);                 \
			CHECK(atomic_load(&(e)->conn[i_].disconnect_ep) == (e)->conn[i_].ep); \
		}                                                                             \
	} while (0)

/* A connection that never came up for the application. */
#define CHECK_NEVER_SERVED(c)                                \
	do {                                                 \
		CHECK_EQ(atomic_load(&(c)->connects), 0);    \
		CHECK_EQ(atomic_load(&(c)->disconnects), 0); \
	} while (0)

/* Connect every conn, let each finish its exchange, check both sides. */
static void connect_and_exchange(struct env *e)
{
	struct rcc_server_stats st;

	for (int i = 0; i < CONNS; i++) {
		CHECK_OK(connect_one(e, i));
		CHECK(e->conn[i].ep != NULL);
	}
	/* until both are done, or A's on_connect got something else than conn */
	uint64_t end = now_ms() + TEST_TIMEOUT_MS;
	for (int i = 0; i < CONNS; i++)
		while (!atomic_load(&e->conn[i].done) && !atomic_load(&e->a.accepted_connects) &&
		       !atomic_load(&e->a.wrong_conn) && now_ms() < end)
			(void)poll(NULL, 0, 5);
	CHECK_MSG(!atomic_load(&e->a.accepted_connects) && !atomic_load(&e->a.wrong_conn),
		  "A's on_connect was not given the caller's conn (NULL %d times, another %d)",
		  atomic_load(&e->a.accepted_connects), atomic_load(&e->a.wrong_conn));
	for (int i = 0; i < CONNS; i++) {
		struct a_conn *c = &e->conn[i];
		CHECK_MSG(atomic_load(&c->done), "conn %d: %d of %d replies", i,
			  atomic_load(&c->replies), rounds());
		CHECK_A_CONN(c);
		CHECK_EQ(atomic_load(&c->replies), rounds());
		CHECK(atomic_load(&c->connect_ep) == c->ep);
		CHECK_EQ(atomic_load(&c->disconnects), 0);
	}
	CHECK_EQ(atomic_load(&e->a.wrong_conn), 0);
	CHECK_EQ(atomic_load(&stray_conn), 0);
	/* two connections, two agents: each per-endpoint, or the least loaded */
	CHECK(!pthread_equal(e->conn[0].agent, e->conn[1].agent));
	CHECK_EQ(atomic_load(&e->b.bad), 0);
	CHECK_EQ(atomic_load(&e->b.send_errors), 0);
	CHECK_EQ(atomic_load(&e->b.got), CONNS * rounds());
	rcc_server_stats(e->a.srv, &st);
	CHECK_EQ(st.active, CONNS);
	CHECK_EQ(st.accepted, 0);
	CHECK_EQ(st.rejected, 0);
}

/* env_open(), then connect_and_exchange(); false when a check failed. */
static bool open_and_exchange(struct env *e, enum rcc_thread_mode tm, int threads,
			      uint32_t srq_depth)
{
	int rc = env_open(e, tm, threads, 0, srq_depth);
	if (rc)
		test_fail(__FILE__, __LINE__, "env_open: %s", rcc_strerror(rc));
	else
		connect_and_exchange(e);
	return !test_failed;
}

/* ---------------------------------------------------------------- cases */

/* B ends its side: conn 0 with rcc_server_disconnect(), conn 1 by stopping.
 * A hears of each exactly once, on the connection's agent. */
static void peer_ends(enum rcc_thread_mode tm, int threads)
{
	struct env e;
	struct rcc_server_stats st;

	if (!open_and_exchange(&e, tm, threads, 0))
		goto out;
	CHECK(wait_for(&e.b.connects, CONNS));
	CHECK_OK(rcc_server_disconnect(e.b.srv, atomic_load(&e.b.eps[0])));
	CHECK(wait_for(&e.conn[0].disconnects, 1));
	CHECK(atomic_load(&e.conn[0].disconnect_ep) == e.conn[0].ep);
	CHECK_EQ(atomic_load(&e.conn[1].disconnects), 0);
	uint64_t end = now_ms() + TEST_TIMEOUT_MS;
	do
		rcc_server_stats(e.a.srv, &st);
	while (st.active != CONNS - 1 && now_ms() < end && !poll(NULL, 0, 5));
	CHECK_EQ(st.active, CONNS - 1);
	CHECK_OK(stop_server(&e.b.srv));
	CHECK(wait_for(&e.conn[1].disconnects, 1));
	CHECK(atomic_load(&e.conn[1].disconnect_ep) == e.conn[1].ep);
	CHECK_OK(stop_server(&e.a.srv));
	CHECK_ENDED_ONCE(&e);
out:
	env_close(&e);
}

/* A ends them: conn 0 with rcc_server_disconnect(), conn 1 by stopping; a
 * connect tried from on_disconnect while A stops is refused. */
static void self_ends(enum rcc_thread_mode tm, int threads)
{
	struct env e;

	if (!open_and_exchange(&e, tm, threads, 0))
		goto out;
	CHECK_OK(rcc_server_disconnect(e.a.srv, e.conn[0].ep));
	CHECK(wait_for(&e.conn[0].disconnects, 1));
	CHECK(wait_for(&e.b.disconnects, 1)); /* B saw it leave */
	CHECK_EQ(rcc_server_disconnect(e.a.srv, e.conn[0].ep), -ENOENT);
	atomic_store(&e.a.connect_in_disconnect, 1);
	CHECK_OK(stop_server(&e.a.srv));
	CHECK_EQ(atomic_load(&e.a.connect_in_disconnect), -ESHUTDOWN);
	CHECK_ENDED_ONCE(&e);
	CHECK(wait_for(&e.b.disconnects, CONNS));
out:
	env_close(&e);
}

static void per_ep_peer_ends(void) { peer_ends(RCC_THREAD_PER_EP, 0); }
static void shared_peer_ends(void) { peer_ends(RCC_THREAD_SHARED_CQ, 2); }
static void per_ep_self_ends(void) { self_ends(RCC_THREAD_PER_EP, 0); }
static void shared_self_ends(void) { self_ends(RCC_THREAD_SHARED_CQ, 2); }

/* After connects of conn 0 that failed: no slot held, nothing counted as
 * rejected, conn 0 never reached a callback, and the server goes on (conn 1
 * is served and ended once). Closes the env. */
static void after_failed_connects(struct env *e)
{
	struct rcc_server_stats st;

	rcc_server_stats(e->a.srv, &st);
	CHECK_EQ(st.active, 0);
	CHECK_EQ(st.rejected, 0);
	CHECK_OK(connect_one(e, 1));
	CHECK(wait_for(&e->conn[1].connects, 1));
	CHECK_OK(stop_server(&e->a.srv));
	CHECK_NEVER_SERVED(&e->conn[0]);
	CHECK_EQ(atomic_load(&e->conn[1].disconnects), 1);
	env_close(e);
}

/* Nothing listens: the status comes back, the connection never existed for
 * the application (no callback, *ep untouched, no slot held). Bad
 * arguments are refused before anything happens. */
static void refused(enum rcc_thread_mode tm, int threads)
{
	struct env e;
	struct rcc_listener *probe;
	struct rcc_ep *ep = (struct rcc_ep *)&e; /* must stay as it is */
	char any[128], addr[128];

	CHECK_OK(env_open(&e, tm, threads, 0, 0));
	snprintf(any, sizeof(any), "%s:0", test_addr());
	CHECK_OK(rcc_listen(e.ctx_b, any, 0, &probe));
	snprintf(addr, sizeof(addr), "%s:%d", test_addr(), rcc_listener_port(probe));
	rcc_listener_close(probe);
	for (int k = 0; k < 3; k++) /* a shared-CQ server tries both agents */
		CHECK_EQ(rcc_server_connect(e.a.srv, addr, NULL, TEST_TIMEOUT_MS, &e.conn[0], &ep),
			 -ECONNREFUSED);
	CHECK_MSG(strstr(rcc_last_error(), "nothing is listening"), "last error: %s",
		  rcc_last_error());
	CHECK(ep == (struct rcc_ep *)&e);
	CHECK_EQ(rcc_server_connect(NULL, addr, NULL, 0, NULL, &ep), -EINVAL);
	CHECK_EQ(rcc_server_connect(e.a.srv, NULL, NULL, 0, NULL, &ep), -EINVAL);
	CHECK_EQ(rcc_server_connect(e.a.srv, addr, NULL, 0, NULL, NULL), -EINVAL);
	CHECK_EQ(rcc_server_connect(e.a.srv, addr, NULL, -1, NULL, &ep), -EINVAL);
	CHECK(ep == (struct rcc_ep *)&e);
	after_failed_connects(&e);
}

static void per_ep_refused(void) { refused(RCC_THREAD_PER_EP, 0); }
static void shared_refused(void) { refused(RCC_THREAD_SHARED_CQ, 2); }

/* The peer takes the TCP connection and then never answers, or closes it
 * unanswered (tcp only: a plain listener stands in for a hostile peer). The
 * connect fails within its timeout with what happened, the connection never
 * reaches the application and holds no slot, and the server goes on. */
static void hostile_peer(enum rcc_thread_mode tm, int threads)
{
	struct env e;
	struct rcc_ep *ep = (struct rcc_ep *)&e; /* must stay as it is */
	char addr[64];
	pthread_t th;

	if (test_transport() != RCC_TRANSPORT_TCP)
		SKIP_CASE("tcp", "a plain TCP listener stands in for the peer");
	CHECK_OK(env_open(&e, tm, threads, 1, 0));
	int fd = raw_listener(addr, sizeof(addr));
	CHECK(fd >= 0);
	/* silent: the backlog takes the connection, nobody answers; the caller's
	 * 300 ms hold, not the 5 s default (16x, room for a loaded host) */
	uint64_t t0 = now_ms();
	CHECK_EQ(rcc_server_connect(e.a.srv, addr, NULL, 300, &e.conn[0], &ep), -ETIMEDOUT);
	CHECK(now_ms() - t0 < 5000);
	CHECK_MSG(strstr(rcc_last_error(), "no answer from"), "last error: %s", rcc_last_error());
	close(fd);
	/* closed unanswered (a listener of its own: the silent one's backlog
	 * still holds the connection given up on) */
	fd = raw_listener(addr, sizeof(addr));
	CHECK(fd >= 0);
	CHECK(pthread_create(&th, NULL, raw_accept_and_close, &fd) == 0);
	int rc = rcc_server_connect(e.a.srv, addr, NULL, TEST_TIMEOUT_MS, &e.conn[0], &ep);
	pthread_join(th, NULL);
	close(fd);
	CHECK_EQ(rc, -ECONNRESET);
	CHECK(ep == (struct rcc_ep *)&e);
	/* with max_connections 1, a slot either failure kept refuses conn 1 */
	after_failed_connects(&e);
}

static void per_ep_hostile_peer(void) { hostile_peer(RCC_THREAD_PER_EP, 0); }
static void shared_hostile_peer(void) { hostile_peer(RCC_THREAD_SHARED_CQ, 2); }

/* max_connections counts connections A opens and those it accepts alike. */
static void max_connections_shared(enum rcc_thread_mode tm, int threads)
{
	struct env e;
	struct rcc_server_stats st;
	struct rcc_client *cli;
	struct rcc_ep *ep = NULL;
	char a_addr[128];

	CHECK_OK(env_open(&e, tm, threads, 1, 0));
	snprintf(a_addr, sizeof(a_addr), "%s:%d", test_addr(), rcc_server_port(e.a.srv));
	CHECK_OK(connect_one(&e, 0));
	CHECK_EQ(connect_one(&e, 1), -EMFILE);
	CHECK(e.conn[1].ep == NULL);
	rcc_server_stats(e.a.srv, &st);
	CHECK_EQ(st.active, 1);
	/* the one slot is taken: a client of A is turned away */
	struct rcc_client_attr ca = { .connect_timeout_ms = TEST_TIMEOUT_MS };
	CHECK_EQ(rcc_client_connect(e.ctx_b, a_addr, &ca, &cli), -ECONNABORTED);
	rcc_server_stats(e.a.srv, &st);
	CHECK_EQ(st.rejected, 1);
	CHECK_EQ(st.active, 1);
	/* freed: now the client gets it, and A's own connect is the one refused */
	CHECK_OK(rcc_server_disconnect(e.a.srv, e.conn[0].ep));
	CHECK(wait_for(&e.conn[0].disconnects, 1));
	uint64_t end = now_ms() + TEST_TIMEOUT_MS;
	do
		rcc_server_stats(e.a.srv, &st);
	while (st.active && now_ms() < end && !poll(NULL, 0, 5));
	CHECK_EQ(st.active, 0);
	CHECK_OK(rcc_client_connect(e.ctx_b, a_addr, &ca, &cli));
	CHECK(wait_for(&e.a.accepted_connects, 1));
	CHECK_EQ(rcc_server_connect(e.a.srv, e.b_addr, NULL, TEST_TIMEOUT_MS, &e.conn[1], &ep),
		 -EMFILE);
	CHECK(ep == NULL);
	rcc_server_stats(e.a.srv, &st);
	CHECK_EQ(st.active, 1);
	CHECK_EQ(st.accepted, 1);
	CHECK_OK(rcc_client_close(cli));
	CHECK_OK(stop_server(&e.a.srv));
	CHECK_EQ(atomic_load(&e.conn[0].disconnects), 1);
	CHECK_NEVER_SERVED(&e.conn[1]);
	env_close(&e);
}

static void per_ep_max_connections(void) { max_connections_shared(RCC_THREAD_PER_EP, 0); }
static void shared_max_connections(void) { max_connections_shared(RCC_THREAD_SHARED_CQ, 2); }

/* With the server's SRQ: A's receives are the server's, B's messages reach
 * on_recv (the greeting, too, after on_connect); ep_attr's receives are not
 * posted. */
static void srq(enum rcc_thread_mode tm, int threads)
{
	struct env e;

	if (!open_and_exchange(&e, tm, threads, 32))
		goto out;
	CHECK_OK(stop_server(&e.a.srv));
	CHECK_ENDED_ONCE(&e);
out:
	env_close(&e);
}

static void per_ep_srq(void) { srq(RCC_THREAD_PER_EP, 0); }
static void shared_srq(void) { srq(RCC_THREAD_SHARED_CQ, 2); }

/* conn 0's exchange is over: its agent connects the next one, from the callback. */
static void connect_next(struct a_conn *c)
{
	struct env *e = c->side->env;
	if (c->tag + 1 < CONNS)
		atomic_store(&e->chain_rc, connect_one(e, c->tag + 1));
}

/* rcc_server_connect() from a callback: with one shared agent, the agent
 * that blocks in the call is the one that serves the new connection. */
static void from_callback(enum rcc_thread_mode tm, int threads)
{
	struct env e;

	CHECK_OK(env_open(&e, tm, threads, 0, 0));
	e.a.on_done = connect_next;
	CHECK_OK(connect_one(&e, 0));
	uint64_t end = now_ms() + TEST_TIMEOUT_MS;
	while (!atomic_load(&e.conn[CONNS - 1].done) && atomic_load(&e.chain_rc) >= 0 &&
	       now_ms() < end)
		(void)poll(NULL, 0, 5);
	CHECK_OK(atomic_load(&e.chain_rc));
	for (int i = 0; i < CONNS; i++) {
		CHECK_MSG(atomic_load(&e.conn[i].done), "conn %d: %d of %d replies", i,
			  atomic_load(&e.conn[i].replies), rounds());
		CHECK_A_CONN(&e.conn[i]);
	}
	if (tm == RCC_THREAD_SHARED_CQ && threads == 1)
		CHECK(pthread_equal(e.conn[0].agent, e.conn[1].agent));
	else
		CHECK(!pthread_equal(e.conn[0].agent, e.conn[1].agent));
	CHECK_OK(stop_server(&e.a.srv));
	for (int i = 0; i < CONNS; i++)
		CHECK_EQ(atomic_load(&e.conn[i].disconnects), 1);
	env_close(&e);
}

static void per_ep_from_callback(void) { from_callback(RCC_THREAD_PER_EP, 0); }
static void shared_one_thread_from_callback(void) { from_callback(RCC_THREAD_SHARED_CQ, 1); }

TEST_MAIN(TEST(per_ep_peer_ends), TEST(shared_peer_ends), TEST(per_ep_self_ends),
	  TEST(shared_self_ends), TEST(per_ep_refused), TEST(shared_refused),
	  TEST(per_ep_hostile_peer), TEST(shared_hostile_peer), TEST(per_ep_max_connections),
	  TEST(shared_max_connections), TEST(per_ep_srq), TEST(shared_srq),
	  TEST(per_ep_from_callback), TEST(shared_one_thread_from_callback))
