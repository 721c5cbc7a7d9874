/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A small key-value service in the style of Pilaf and FaRM, built only from
 * the public headers: what a real rcc server looks like.
 *
 *  - The table lives in one registered region on the server. GET is a
 *    one-sided READ of the key's slot: the server's CPU never sees it (on
 *    tcp the context's progress thread serves it, as a NIC would).
 *  - PUT is an RPC: the client SENDs the new value; the server writes the
 *    slot and SENDs a reply. Writes go through the server so that one
 *    thread orders them; reads do not need it.
 *  - The server has ONE completion queue for every connection (send and
 *    receive), and one thread waiting on it: in RCC_CQ_FD mode with poll()
 *    on its descriptor (what an epoll loop does), or with rcc_cq_wait() in
 *    RCC_CQ_HYBRID (the default here: spin briefly, then sleep), WAIT or
 *    POLL mode. A second thread accepts connections.
 *  - Each slot carries a checksum: a READ that races with a PUT of the same
 *    key can see half of each, and the client then reads again.
 *
 * Usage:
 *   example_kv [HOST]             a server and 4 clients in one process; every
 *                                 GET must return the value of the last PUT
 *   example_kv server HOST:PORT [fd|hybrid|wait|poll]
 *                                 serve until SIGINT/SIGTERM; port 0 picks one;
 *                                 prints "listening on port PORT"
 *   example_kv client HOST:PORT CLIENTS OPS [fd|hybrid|wait|poll]
 *                                 CLIENTS threads (one endpoint and CQ each) do
 *                                 OPS operations each (3 GETs per PUT); prints
 *                                 throughput and latency percentiles
 * bench/server-load.sh uses the last two.
 *
 * Both sides are assumed to run on hosts of the same byte order (the
 * messages are C structs); the server still checks every field it is sent.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rcc/rcc.h>
#include <rcc/util.h>

#define NKEYS 4096
#define VALUE_SIZE 64
#define MAX_CONNS 128
#define RQ_DEPTH 4   /* a client has one PUT outstanding; a few spare */
#define SQ_DEPTH 16  /* replies posted, not yet polled */
#define WAIT_MS 5000 /* any single wait of a client */
#define PUT_OK 0
#define PUT_BAD 1
#define PUT_MAGIC 0x6b765055u /* "kvPU" */

struct slot {
	uint64_t key;
	uint64_t version;
	uint8_t value[VALUE_SIZE];
	uint64_t sum; /* checksum of the three above: detects a torn READ */
};

struct put_req {
	uint32_t magic;
	uint32_t key;
	uint64_t version;
	uint8_t value[VALUE_SIZE];
};

struct put_resp {
	uint32_t status;
	uint32_t key;
	uint64_t version;
};

/* What the server tells each client at accept: where the table is. */
#define TABLE_DESC_SIZE (RCC_REMOTE_MR_WIRE_SIZE + 4)

static uint64_t slot_sum(const struct slot *s)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	const uint8_t *p = (const uint8_t *)s;
	for (size_t i = 0; i < offsetof(struct slot, sum); i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

/* The value a PUT of (key, version) stores: clients check GETs against it. */
static void value_of(uint64_t key, uint64_t version, uint8_t *out)
{
	for (int i = 0; i < VALUE_SIZE; i++)
		out[i] = (uint8_t)(key * 31 + version * 7 + (uint64_t)i);
}

static int parse_mode(const char *s, enum rcc_cq_mode *m)
{
	static const char *names[] = { "poll", "wait", "fd", "hybrid" };
	for (int i = 0; i < 4; i++) {
		if (!strcmp(s, names[i])) {
			*m = (enum rcc_cq_mode)i;
			return 0;
		}
	}
	fprintf(stderr, "unknown mode '%s' (fd, hybrid, wait or poll)\n", s);
	return -EINVAL;
}

/* Up to max completions within ms, the way the CQ's mode means; 0 on timeout. */
static int next_completions(struct rcc_cq *cq, struct rcc_wc *wc, int max, int ms)
{
	if (rcc_cq_get_mode(cq) != RCC_CQ_FD) {
		int n = rcc_cq_wait(cq, wc, max, ms);
		return n == -ETIMEDOUT ? 0 : n;
	}
	/* The descriptor contract: poll the CQ until it is empty, arm it
	 * (rcc_cq_arm: 1 means poll again), and only then wait for the
	 * descriptor (an epoll loop would hold many). A
	 * readable descriptor means completions *may* be there: the message
	 * that woke us may have been taken by another thread (tcp's progress
	 * thread), so an empty poll after a wake-up is not the end of the
	 * wait -- wait again for what is left of it. */
	uint64_t deadline = rcc_now_ns() + (uint64_t)ms * 1000000u;
	struct pollfd p = { .fd = rcc_cq_fd(cq), .events = POLLIN };
	for (;;) {
		int n = rcc_cq_poll(cq, wc, max);
		if (n)
			return n;
		uint64_t now = rcc_now_ns();
		if (now >= deadline)
			return 0;
		if (rcc_cq_arm(cq) > 0)
			continue;
		if (poll(&p, 1, (int)((deadline - now + 999999) / 1000000)) < 0 && errno != EINTR)
			return -errno;
	}
}

/* ------------------------------------------------------------------ server */

struct conn {
	struct rcc_ep *ep;
	struct rcc_mr *mr; /* the two arrays below */
	struct put_req req[RQ_DEPTH];
	struct put_resp resp[SQ_DEPTH];
	unsigned next_resp;
	bool closing;
	struct conn *next;
};

struct server {
	struct rcc_ctx *ctx;
	struct rcc_cq *cq; /* every connection's send and receive CQ */
	struct rcc_listener *lst;
	struct slot *table;
	struct rcc_mr *table_mr;
	uint8_t desc[TABLE_DESC_SIZE];
	atomic_bool stop;
	pthread_t acceptor;
	pthread_mutex_t lock; /* conns, nconns */
	struct conn *conns;
	int nconns;
};

static void conn_free(struct conn *c)
{
	if (c->ep)
		rcc_ep_close(c->ep);
	if (c->mr)
		rcc_mr_dereg(c->mr);
	free(c);
}

/* Accept one connection: its receives are posted before the client can send. */
static void accept_one(struct server *s, struct rcc_conn_req *req)
{
	struct rcc_recv_wr rwr[RQ_DEPTH];
	struct rcc_sge sge[RQ_DEPTH];
	struct conn *c = calloc(1, sizeof(*c));
	int rc = c ? rcc_mr_reg(s->ctx, c, sizeof(*c), RCC_ACCESS_LOCAL_WRITE, &c->mr) : -ENOMEM;

	if (rc) {
		rcc_reject_req(req, NULL, 0);
		free(c);
		return;
	}
	for (int i = 0; i < RQ_DEPTH; i++) {
		sge[i] = rcc_mr_sge(c->mr, &c->req[i], sizeof(c->req[i]));
		rwr[i] = (struct rcc_recv_wr){ .wr_id = (uint64_t)i,
					       .sg_list = &sge[i],
					       .num_sge = 1 };
	}
	struct rcc_ep_attr attr = {
		.send_cq = s->cq,
		.sq_depth = SQ_DEPTH,
		.rq_depth = RQ_DEPTH,
		.private_data = s->desc,
		.private_data_len = sizeof(s->desc),
		.context = c, /* every completion leads back to its connection */
		.initial_recv = rwr,
		.num_initial_recv = RQ_DEPTH,
	};
	/* Held across the accept: the serving thread may see this connection's
	 * first completions (even its end) at once, and frees a connection only
	 * under this lock, so never one whose c->ep is not set yet. */
	pthread_mutex_lock(&s->lock);
	if (s->nconns >= MAX_CONNS) {
		rcc_reject_req(req, NULL, 0); /* the shared CQ is sized for MAX_CONNS */
		rc = -EBUSY;
	} else {
		rc = rcc_accept_req(req, &attr, &c->ep);
	}
	if (!rc) {
		c->next = s->conns;
		s->conns = c;
		s->nconns++;
	}
	pthread_mutex_unlock(&s->lock);
	if (rc)
		conn_free(c);
}

static void *acceptor_main(void *arg)
{
	struct server *s = arg;
	struct rcc_conn_req *req;

	while (!atomic_load(&s->stop))
		if (rcc_get_request(s->lst, 100, &req) == 0)
			accept_one(s, req);
	return NULL;
}

/* Apply one PUT and answer it. A malformed one gets PUT_BAD, not a crash. */
static int serve_put(struct conn *c, struct rcc_ep *ep, struct slot *table, const struct put_req *q,
		     uint32_t len)
{
	struct put_resp *r = &c->resp[c->next_resp++ % SQ_DEPTH];

	*r = (struct put_resp){ .status = PUT_BAD, .key = q->key, .version = q->version };
	if (len == sizeof(*q) && q->magic == PUT_MAGIC && q->key < NKEYS) {
		struct slot *s = &table[q->key];
		s->version = q->version;
		memcpy(s->value, q->value, VALUE_SIZE);
		s->sum = slot_sum(s);
		r->status = PUT_OK;
	}
	struct rcc_sge sge = rcc_mr_sge(c->mr, r, sizeof(*r));
	/* Signalled: polling its completion is what frees the send slot. */
	return rcc_post_send(ep, &sge, 1, 0, RCC_SEND_SIGNALED);
}

/* Serve until stop: one thread, one CQ, every connection. */
static void serve(struct server *s)
{
	struct rcc_wc wc[32];
	struct conn *dead[32];

	while (!atomic_load(&s->stop)) {
		int n = next_completions(s->cq, wc, 32, 100), ndead = 0;
		for (int i = 0; i < n; i++) {
			struct conn *c = rcc_ep_context(wc[i].ep);
			if (c->closing)
				continue;
			int rc = 0;
			if (wc[i].status != RCC_WC_SUCCESS) {
				rc = -EIO; /* flushed: the client went away */
			} else if (wc[i].opcode == RCC_WC_RECV) {
				/* wc.ep, not c->ep: the first request may come
				 * before rcc_accept_req() has returned */
				int k = (int)wc[i].wr_id;
				rc = serve_put(c, wc[i].ep, s->table, &c->req[k], wc[i].byte_len);
				struct rcc_sge sge = rcc_mr_sge(c->mr, &c->req[k],
								sizeof(c->req[k]));
				if (!rc)
					rc = rcc_post_recv(wc[i].ep, &sge, 1, (uint64_t)k);
			}
			if (rc) {
				/* Closed only after the batch: later entries of this
				 * batch still name it (rule 6 of rcc.h). */
				c->closing = true;
				dead[ndead++] = c;
			}
		}
		for (int i = 0; i < ndead; i++) {
			pthread_mutex_lock(&s->lock);
			for (struct conn **p = &s->conns; *p; p = &(*p)->next) {
				if (*p == dead[i]) {
					*p = dead[i]->next;
					s->nconns--;
					break;
				}
			}
			pthread_mutex_unlock(&s->lock);
			conn_free(dead[i]);
		}
	}
}

static int server_open(struct server *s, enum rcc_transport t, const char *addr,
		       enum rcc_cq_mode mode)
{
	struct rcc_ctx_attr ca = { .transport = t };
	/* Deep enough for every connection's receives and replies (rule 1). */
	struct rcc_cq_attr qa = { .depth = MAX_CONNS * (RQ_DEPTH + SQ_DEPTH), .mode = mode };
	int rc;

	memset(s, 0, sizeof(*s));
	atomic_init(&s->stop, false);
	pthread_mutex_init(&s->lock, NULL);
	s->table = calloc(NKEYS, sizeof(*s->table));
	if (!s->table)
		return -ENOMEM;
	for (uint64_t k = 0; k < NKEYS; k++) {
		s->table[k].key = k;
		value_of(k, 0, s->table[k].value);
		s->table[k].sum = slot_sum(&s->table[k]);
	}
	if ((rc = rcc_ctx_open(&ca, &s->ctx)) || (rc = rcc_cq_create(s->ctx, &qa, &s->cq)) ||
	    (rc = rcc_mr_reg(s->ctx, s->table, NKEYS * sizeof(*s->table),
			     RCC_ACCESS_LOCAL_WRITE | RCC_ACCESS_REMOTE_READ, &s->table_mr)) ||
	    (rc = rcc_listen(s->ctx, addr, 0, &s->lst)))
		return rc;
	struct rcc_remote_mr rm = rcc_mr_remote(s->table_mr);
	rcc_remote_mr_encode(&rm, s->desc);
	uint32_t nkeys = NKEYS;
	memcpy(s->desc + RCC_REMOTE_MR_WIRE_SIZE, &nkeys, 4);
	rc = -pthread_create(&s->acceptor, NULL, acceptor_main, s);
	if (rc)
		return rc;
	return 0;
}

/* Stop the acceptor, then release everything (safe after a failed open). */
static void server_close(struct server *s, bool started)
{
	atomic_store(&s->stop, true);
	if (started)
		pthread_join(s->acceptor, NULL);
	while (s->conns) {
		struct conn *c = s->conns;
		s->conns = c->next;
		conn_free(c);
	}
	if (s->lst)
		rcc_listener_close(s->lst);
	if (s->table_mr)
		rcc_mr_dereg(s->table_mr);
	if (s->cq)
		rcc_cq_destroy(s->cq);
	if (s->ctx)
		rcc_ctx_close(s->ctx);
	free(s->table);
	pthread_mutex_destroy(&s->lock);
}

/* ------------------------------------------------------------------ client */

struct client {
	struct rcc_ctx *ctx;
	const char *addr;
	enum rcc_cq_mode mode;
	int id, nclients, ops;
	uint64_t nonce;   /* makes this run's versions differ from earlier runs' */
	uint64_t *lat_ns; /* ops entries */
	uint64_t t0, t1;  /* first and last operation */
	int errors, retries;
	char why[160]; /* the first error */
};

struct client_io {
	struct rcc_cq *cq;
	struct rcc_ep *ep;
	struct rcc_mr *mr;
	struct rcc_remote_mr table;
	struct {
		struct put_req req;
		struct put_resp resp;
		struct slot got;
	} buf;
};

static int fail(struct client *c, const char *what, int rc)
{
	if (!c->errors++)
		snprintf(c->why, sizeof(c->why), "client %d: %s: %s", c->id, what,
			 rc ? rcc_strerror(rc) : "wrong value");
	return rc ? rc : -EIO;
}

/* Wait until n completions came, all successful. */
static int wait_all(struct client *c, struct client_io *io, int n)
{
	struct rcc_wc wc[2];

	while (n > 0) {
		int got = next_completions(io->cq, wc, n, WAIT_MS);
		if (got <= 0)
			return fail(c, "wait", got ? got : -ETIMEDOUT);
		for (int i = 0; i < got; i++)
			if (wc[i].status != RCC_WC_SUCCESS)
				return fail(c, rcc_wc_status_str(wc[i].status), -EIO);
		n -= got;
	}
	return 0;
}

static int put(struct client *c, struct client_io *io, uint32_t key, uint64_t version)
{
	struct rcc_sge rs = rcc_mr_sge(io->mr, &io->buf.resp, sizeof(io->buf.resp));
	struct rcc_sge qs = rcc_mr_sge(io->mr, &io->buf.req, sizeof(io->buf.req));
	int rc;

	io->buf.req = (struct put_req){ .magic = PUT_MAGIC, .key = key, .version = version };
	value_of(key, version, io->buf.req.value);
	/* the receive for the reply first: it may come before the send's completion */
	if ((rc = rcc_post_recv(io->ep, &rs, 1, 1)) ||
	    (rc = rcc_post_send(io->ep, &qs, 1, 2, RCC_SEND_SIGNALED)))
		return fail(c, "post", rc);
	if ((rc = wait_all(c, io, 2)))
		return rc;
	if (io->buf.resp.status != PUT_OK || io->buf.resp.key != key ||
	    io->buf.resp.version != version)
		return fail(c, "PUT refused", 0);
	return 0;
}

static int get(struct client *c, struct client_io *io, uint32_t key, uint64_t version)
{
	struct rcc_sge gs = rcc_mr_sge(io->mr, &io->buf.got, sizeof(io->buf.got));
	uint8_t want[VALUE_SIZE];
	int rc;

	for (int attempt = 0; attempt < 100; attempt++) {
		if ((rc = rcc_post_read(io->ep, &gs, 1, io->table.addr + key * sizeof(struct slot),
					io->table.rkey, 3, RCC_SEND_SIGNALED)))
			return fail(c, "post READ", rc);
		if ((rc = wait_all(c, io, 1)))
			return rc;
		if (io->buf.got.sum == slot_sum(&io->buf.got))
			break;
		c->retries++; /* torn by a concurrent PUT: read again */
	}
	value_of(key, version, want);
	if (io->buf.got.key != key || io->buf.got.version != version ||
	    memcmp(io->buf.got.value, want, VALUE_SIZE))
		return fail(c, "GET", 0);
	return 0;
}

static int client_connect(struct client *c, struct client_io *io)
{
	struct rcc_cq_attr qa = { .depth = 16, .mode = c->mode };
	size_t len;
	uint32_t nkeys;
	int rc;

	if ((rc = rcc_cq_create(c->ctx, &qa, &io->cq)) ||
	    (rc = rcc_mr_reg(c->ctx, &io->buf, sizeof(io->buf), RCC_ACCESS_LOCAL_WRITE, &io->mr)))
		return fail(c, "setup", rc);
	struct rcc_ep_attr attr = { .send_cq = io->cq, .sq_depth = 4, .rq_depth = 4 };
	if ((rc = rcc_connect(c->ctx, c->addr, &attr, WAIT_MS, &io->ep)))
		return fail(c, "connect", rc);
	/* The server's description of its table is input like any other. */
	const uint8_t *d = rcc_ep_private_data(io->ep, &len);
	if (len != TABLE_DESC_SIZE ||
	    (rc = rcc_remote_mr_decode(d, RCC_REMOTE_MR_WIRE_SIZE, &io->table)))
		return fail(c, "table description", rc ? rc : -EPROTO);
	memcpy(&nkeys, d + RCC_REMOTE_MR_WIRE_SIZE, 4);
	if (nkeys != NKEYS || io->table.length < (uint64_t)NKEYS * sizeof(struct slot))
		return fail(c, "table size", -EPROTO);
	return 0;
}

static void *client_main(void *arg)
{
	struct client *c = arg;
	struct client_io io = { 0 };
	/* this client's keys: id, id + nclients, ...; nobody else writes them,
	 * so every GET knows the version it must return */
	int nown = (NKEYS - c->id + c->nclients - 1) / c->nclients;
	uint64_t *ver = calloc((size_t)nown, sizeof(*ver));

	if (!ver) {
		fail(c, "memory", -ENOMEM);
		return NULL;
	}
	if (client_connect(c, &io) == 0) {
		c->t0 = rcc_now_ns();
		for (int i = 0; i < c->ops; i++) {
			int k = i % nown;
			uint32_t key = (uint32_t)(c->id + k * c->nclients);
			uint64_t t = rcc_now_ns();
			int rc;
			/* the first visit to a key writes it; then 3 GETs per PUT */
			if (!ver[k] || i % 4 == 0) {
				ver[k] = c->nonce + (uint64_t)i + 1;
				rc = put(c, &io, key, ver[k]);
			} else {
				rc = get(c, &io, key, ver[k]);
			}
			if (rc)
				break;
			c->lat_ns[i] = rcc_now_ns() - t;
		}
		c->t1 = rcc_now_ns();
	}
	if (io.ep)
		rcc_ep_close(io.ep);
	if (io.mr)
		rcc_mr_dereg(io.mr);
	if (io.cq)
		rcc_cq_destroy(io.cq);
	free(ver);
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Run n clients against addr; report when verbose. 0 when every value was right. */
static int run_clients(enum rcc_transport t, const char *addr, int n, int ops,
		       enum rcc_cq_mode mode, bool report)
{
	struct rcc_ctx_attr ca = { .transport = t };
	struct rcc_ctx *ctx;
	struct client *cl = calloc((size_t)n, sizeof(*cl));
	pthread_t *th = calloc((size_t)n, sizeof(*th));
	uint64_t *lat = calloc((size_t)n * (size_t)ops, sizeof(*lat));
	int rc = cl && th && lat ? rcc_ctx_open(&ca, &ctx) : -ENOMEM, started = 0;

	if (rc) {
		fprintf(stderr, "client setup: %s\n", rcc_strerror(rc));
		goto out;
	}
	for (; started < n; started++) {
		cl[started] = (struct client){ .ctx = ctx,
					       .addr = addr,
					       .mode = mode,
					       .id = started,
					       .nclients = n,
					       .ops = ops,
					       .nonce = rcc_now_ns() << 8,
					       .lat_ns = lat + (size_t)started * (size_t)ops };
		if (pthread_create(&th[started], NULL, client_main, &cl[started]))
			break;
	}
	int errors = started < n, retries = 0;
	uint64_t t0 = UINT64_MAX, t1 = 0;
	for (int i = 0; i < started; i++) {
		pthread_join(th[i], NULL);
		if (cl[i].errors && !errors)
			fprintf(stderr, "%s\n", cl[i].why);
		errors += cl[i].errors;
		retries += cl[i].retries;
		t0 = cl[i].t0 && cl[i].t0 < t0 ? cl[i].t0 : t0;
		t1 = cl[i].t1 > t1 ? cl[i].t1 : t1;
	}
	rcc_ctx_close(ctx);
	rc = errors ? -EIO : 0;
	if (report && !rc) {
		size_t total = (size_t)n * (size_t)ops;
		qsort(lat, total, sizeof(*lat), cmp_u64);
		double secs = (double)(t1 - t0) / 1e9;
		printf("clients=%d ops=%zu secs=%.3f ops_per_s=%.0f p50_us=%.1f p99_us=%.1f "
		       "p999_us=%.1f torn_reads=%d\n",
		       n, total, secs, (double)total / secs, (double)lat[total / 2] / 1e3,
		       (double)lat[total * 99 / 100] / 1e3, (double)lat[total * 999 / 1000] / 1e3,
		       retries);
	}
out:
	free(cl);
	free(th);
	free(lat);
	return rc;
}

/* -------------------------------------------------------------------- main */

static volatile sig_atomic_t got_signal;
static void on_signal(int sig) { got_signal = sig; }

static void *serve_main(void *arg)
{
	serve(arg);
	return NULL;
}

static int run_server(const char *addr, enum rcc_cq_mode mode)
{
	struct server s;
	struct sigaction sa = { .sa_handler = on_signal };
	pthread_t th;
	int rc = server_open(&s, RCC_TRANSPORT_AUTO, addr, mode);

	if (rc) {
		fprintf(stderr, "server: %s\n", rcc_strerror(rc));
		server_close(&s, false);
		return 1;
	}
	printf("listening on port %d\n", rcc_listener_port(s.lst));
	fflush(stdout);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* serve in a thread; this one only waits for the signal */
	if (pthread_create(&th, NULL, serve_main, &s)) {
		server_close(&s, true);
		return 1;
	}
	while (!got_signal)
		pause();
	atomic_store(&s.stop, true);
	pthread_join(th, NULL);
	server_close(&s, true);
	return 0;
}

/* A server and 4 clients in one process (the example the tests run). */
static int demo(const char *host)
{
	enum {
		CLIENTS = 4,
		OPS = 200
	};
	struct server s;
	char addr[128];
	pthread_t th;

	snprintf(addr, sizeof(addr), "%s:0", host);
	int rc = server_open(&s, RCC_TRANSPORT_AUTO, addr, RCC_CQ_HYBRID);
	if (rc) {
		fprintf(stderr, "server: %s\n", rcc_strerror(rc));
		server_close(&s, false);
		return 1;
	}
	if (pthread_create(&th, NULL, serve_main, &s)) {
		server_close(&s, true);
		return 1;
	}
	snprintf(addr, sizeof(addr), "%s:%d", host, rcc_listener_port(s.lst));
	rc = run_clients(RCC_TRANSPORT_AUTO, addr, CLIENTS, OPS, RCC_CQ_HYBRID, false);
	atomic_store(&s.stop, true);
	pthread_join(th, NULL);
	server_close(&s, true);
	if (rc)
		return 1;
	printf("%d clients x %d operations (PUT by SEND RPC, GET by one-sided READ): every GET "
	       "returned the last PUT\n",
	       CLIENTS, OPS);
	return 0;
}

int main(int argc, char **argv)
{
	enum rcc_cq_mode mode = RCC_CQ_HYBRID;

	if (argc >= 3 && !strcmp(argv[1], "server")) {
		if (argc > 3 && parse_mode(argv[3], &mode))
			return 2;
		return run_server(argv[2], mode);
	}
	if (argc >= 5 && !strcmp(argv[1], "client")) {
		int n = atoi(argv[3]), ops = atoi(argv[4]);
		if (argc > 5 && parse_mode(argv[5], &mode))
			return 2;
		if (n < 1 || n > MAX_CONNS || ops < 1) {
			fprintf(stderr, "CLIENTS must be 1..%d and OPS positive\n", MAX_CONNS);
			return 2;
		}
		return run_clients(RCC_TRANSPORT_AUTO, argv[2], n, ops, mode, true) ? 1 : 0;
	}
	if (argc > 2 || (argc == 2 && (!strcmp(argv[1], "server") || !strcmp(argv[1], "client")))) {
		fprintf(stderr,
			"usage: %s [HOST] | server HOST:PORT [MODE] | client HOST:PORT "
			"CLIENTS OPS [MODE]\n",
			argv[0]);
		return 2;
	}
	return demo(argc == 2 ? argv[1] : "127.0.0.1");
}
