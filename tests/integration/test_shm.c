/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The same-host shared-memory path of the tcp transport (docs/shm.md): the
 * path is reported, the controls are honoured, a peer that scribbles the
 * shared control words makes the other side fail the connection cleanly,
 * and a peer killed while the survivor busy-polls is noticed within the
 * timeout. Runs on the tcp transport only (exit 77 on verbs).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pair.h"
#include "transport/tcp/tcp.h"

static const char *self_path = "test_shm"; /* argv[0] */

static int ctx_with(enum rcc_shm shm, struct rcc_ctx **ctx)
{
	struct rcc_ctx_attr a = { .transport = RCC_TRANSPORT_TCP, .shm = shm };
	return rcc_ctx_open(&a, ctx);
}

/* Connect a client context to a listener of a server context; the accept
 * runs in a child thread. Returns the connect status; *accept_rc the other. */
struct acc {
	struct rcc_listener *lst;
	struct rcc_cq *cq;
	struct rcc_ep *ep;
	int rc;
};

static void *acc_main(void *arg)
{
	struct acc *a = arg;
	struct rcc_ep_attr at = { .send_cq = a->cq };
	a->rc = rcc_accept(a->lst, &at, TEST_TIMEOUT_MS, &a->ep);
	return NULL;
}

/* Two contexts with the given modes: connect, report both results and the
 * endpoints' paths (closing them). */
static void try_modes(enum rcc_shm client, enum rcc_shm server, int *crc, int *arc, char *cpath,
		      char *apath, char *why, size_t why_len)
{
	struct rcc_ctx *cc = NULL, *sc = NULL;
	struct rcc_cq *ccq = NULL, *scq = NULL;
	struct acc a = { 0 };
	struct rcc_ep *ep = NULL;
	pthread_t th;
	char addr[128];

	*crc = *arc = -1;
	if (ctx_with(client, &cc) || ctx_with(server, &sc) || rcc_cq_create(cc, NULL, &ccq) ||
	    rcc_cq_create(sc, NULL, &scq))
		goto out;
	snprintf(addr, sizeof(addr), "%s:0", test_addr());
	if (rcc_listen(sc, addr, 0, &a.lst))
		goto out;
	a.cq = scq;
	if (pthread_create(&th, NULL, acc_main, &a))
		goto out;
	snprintf(addr, sizeof(addr), "%s:%d", test_addr(), rcc_listener_port(a.lst));
	struct rcc_ep_attr at = { .send_cq = ccq };
	*crc = rcc_connect(cc, addr, &at, TEST_TIMEOUT_MS, &ep);
	snprintf(why, why_len, "%s", *crc ? rcc_last_error() : "");
	pthread_join(th, NULL);
	*arc = a.rc;
	snprintf(cpath, 8, "%s", *crc ? "-" : rcc_ep_path(ep));
	snprintf(apath, 8, "%s", a.rc ? "-" : rcc_ep_path(a.ep));
	if (!*crc)
		rcc_ep_close(ep);
	if (!a.rc)
		rcc_ep_close(a.ep);
out:
	if (a.lst)
		rcc_listener_close(a.lst);
	if (ccq)
		rcc_cq_destroy(ccq);
	if (scq)
		rcc_cq_destroy(scq);
	if (cc)
		rcc_ctx_close(cc);
	if (sc)
		rcc_ctx_close(sc);
}

/* Auto on both ends of one host: shared memory; off on either end: tcp;
 * required against a peer that will not: the connect fails and says why. */
static void controls_and_path(void)
{
	int crc, arc;
	char cp[8], ap[8], why[512];

	try_modes(RCC_SHM_AUTO, RCC_SHM_AUTO, &crc, &arc, cp, ap, why, sizeof(why));
	CHECK_OK(crc);
	CHECK_OK(arc);
	CHECK(!strcmp(cp, "shm") && !strcmp(ap, "shm"));

	try_modes(RCC_SHM_AUTO, RCC_SHM_OFF, &crc, &arc, cp, ap, why, sizeof(why));
	CHECK_OK(crc);
	CHECK_OK(arc);
	CHECK(!strcmp(cp, "tcp") && !strcmp(ap, "tcp"));

	try_modes(RCC_SHM_OFF, RCC_SHM_AUTO, &crc, &arc, cp, ap, why, sizeof(why));
	CHECK_OK(crc);
	CHECK(!strcmp(cp, "tcp") && !strcmp(ap, "tcp"));

	try_modes(RCC_SHM_REQUIRE, RCC_SHM_OFF, &crc, &arc, cp, ap, why, sizeof(why));
	CHECK_EQ(crc, -EPROTONOSUPPORT);
	CHECK_MSG(strstr(why, "shared memory") != NULL, "last error: %s", why);

	/* the server requires it, the client will not: the client is rejected */
	try_modes(RCC_SHM_OFF, RCC_SHM_REQUIRE, &crc, &arc, cp, ap, why, sizeof(why));
	CHECK_EQ(crc, -ECONNABORTED);
	CHECK_EQ(arc, -EPROTONOSUPPORT);

	CHECK(!strcmp(rcc_ep_path(NULL), "none"));
}

/* RCC_SHM decides when the attribute is left at auto; nonsense is refused. */
static void env_var(void)
{
	struct rcc_ctx *ctx;
	const char *old = getenv("RCC_SHM");
	char keep[32] = "";

	if (old)
		snprintf(keep, sizeof(keep), "%s", old);
	setenv("RCC_SHM", "maybe", 1);
	CHECK_EQ(ctx_with(RCC_SHM_AUTO, &ctx), -EINVAL);
	CHECK(strstr(rcc_last_error(), "RCC_SHM") != NULL);
	/* the attribute wins over the environment */
	CHECK_OK(ctx_with(RCC_SHM_OFF, &ctx));
	CHECK_EQ(ctx->shm, RCC_SHM_OFF);
	rcc_ctx_close(ctx);
	setenv("RCC_SHM", "0", 1);
	CHECK_OK(ctx_with(RCC_SHM_AUTO, &ctx));
	CHECK_EQ(ctx->shm, RCC_SHM_OFF);
	rcc_ctx_close(ctx);
	setenv("RCC_SHM", "1", 1);
	CHECK_OK(ctx_with(RCC_SHM_AUTO, &ctx));
	CHECK_EQ(ctx->shm, RCC_SHM_REQUIRE);
	rcc_ctx_close(ctx);
	if (old)
		setenv("RCC_SHM", keep, 1);
	else
		unsetenv("RCC_SHM");
}

/* Wait until ep leaves RCC_EP_CONNECTED (polling cq to drive it). */
static bool left_service(struct rcc_ep *ep, struct rcc_cq *cq, struct rcc_wc *wc, int *n)
{
	uint64_t end = now_ms() + TEST_TIMEOUT_MS;
	while (now_ms() < end) {
		int got = rcc_cq_poll(cq, wc + *n, 8 - *n);
		if (got > 0)
			*n += got;
		if (rcc_ep_state(ep) != RCC_EP_CONNECTED)
			return true;
	}
	return false;
}

/*
 * The peer writes an impossible tail into the ring we consume (more than the
 * capacity ahead of what we read): we fail the connection as for a malformed
 * frame -- error state, our receive flushed -- without reading a byte
 * outside the ring, and without hanging.
 */
static void hostile_tail(void)
{
	struct pair p;
	struct tbuf r = { 0 };
	struct rcc_wc wc[8];
	int n = 0;

	CHECK_OK(pair_open(&p, NULL));
	CHECK_OK(tbuf_alloc(&r, p.ctx, 4096, RCC_ACCESS_LOCAL_WRITE));
	struct rcc_sge rs = tbuf_sge(&r, 0, 4096);
	CHECK_OK(rcc_post_recv(p.b, &rs, 1, 7));
	struct shm_ring *victim = &tep(p.b)->shm;
	atomic_store(&victim->rx->tail, victim->rx_head + victim->cap + 4096);
	/* a doorbell, as a peer would ring: the victim must look now */
	CHECK(write(tep(p.a)->fd, "x", 1) == 1);
	CHECK(left_service(p.b, p.cq_b, wc, &n));
	CHECK_EQ(rcc_ep_state(p.b), RCC_EP_ERROR);
	if (n == 0)
		n = wait_n(p.cq_b, wc, 1, TEST_TIMEOUT_MS);
	CHECK_EQ(n, 1);
	CHECK_EQ(wc[0].wr_id, 7);
	CHECK_WC(wc[0], RCC_WC_WR_FLUSH_ERR);
	tbuf_free(&r);
	pair_close(&p);
}

/*
 * The peer moves the head of the ring we produce into backwards (more than
 * the capacity behind what we wrote): our next send fails the connection and
 * the request completes in error; nothing is written outside the ring.
 */
static void hostile_head(void)
{
	struct pair p;
	struct tbuf s = { 0 };
	struct rcc_wc wc;

	CHECK_OK(pair_open(&p, NULL));
	CHECK_OK(tbuf_alloc(&s, p.ctx, 4096, RCC_ACCESS_LOCAL_WRITE));
	struct shm_ring *victim = &tep(p.a)->shm;
	atomic_store(&victim->tx->head, victim->tx_tail + 1);
	struct rcc_sge ss = tbuf_sge(&s, 0, 4096);
	int rc = rcc_post_send(p.a, &ss, 1, 9, RCC_SEND_SIGNALED);
	CHECK(rc == 0 || rc == -ENOTCONN);
	if (rc == 0) {
		CHECK_OK(wait_one(p.cq_a, &wc, TEST_TIMEOUT_MS));
		CHECK_EQ(wc.wr_id, 9);
		CHECK(wc.status != RCC_WC_SUCCESS);
	}
	uint64_t end = now_ms() + TEST_TIMEOUT_MS;
	while (rcc_ep_state(p.a) == RCC_EP_CONNECTED && now_ms() < end)
		(void)rcc_cq_poll(p.cq_a, &wc, 1);
	CHECK(rcc_ep_state(p.a) != RCC_EP_CONNECTED);
	tbuf_free(&s);
	pair_close(&p);
}

/* Two contexts (two progress threads, as two processes have) joined by one
 * shared-memory connection: a (client, ctx_a) and b (server, ctx_b). */
struct pair2 {
	struct rcc_ctx *ctx_a, *ctx_b;
	struct rcc_cq *cq_a, *cq_b;
	struct rcc_ep *a, *b;
	struct rcc_listener *lst;
};

static int pair2_open(struct pair2 *p, const struct rcc_cq_attr *ca, const struct rcc_ep_attr *ea)
{
	struct acc acc = { 0 };
	pthread_t th;
	char addr[128];
	int rc;

	memset(p, 0, sizeof(*p));
	if ((rc = ctx_with(RCC_SHM_REQUIRE, &p->ctx_a)) ||
	    (rc = ctx_with(RCC_SHM_REQUIRE, &p->ctx_b)) ||
	    (rc = rcc_cq_create(p->ctx_a, ca, &p->cq_a)) ||
	    (rc = rcc_cq_create(p->ctx_b, ca, &p->cq_b)))
		return rc;
	snprintf(addr, sizeof(addr), "%s:0", test_addr());
	if ((rc = rcc_listen(p->ctx_b, addr, 0, &p->lst)))
		return rc;
	acc.lst = p->lst;
	acc.cq = p->cq_b;
	if ((rc = -pthread_create(&th, NULL, acc_main, &acc)))
		return rc;
	struct rcc_ep_attr at = *ea;
	at.send_cq = p->cq_a;
	snprintf(addr, sizeof(addr), "%s:%d", test_addr(), rcc_listener_port(p->lst));
	rc = rcc_connect(p->ctx_a, addr, &at, TEST_TIMEOUT_MS, &p->a);
	pthread_join(th, NULL);
	p->b = acc.ep;
	return rc ? rc : acc.rc;
}

static void pair2_close(struct pair2 *p)
{
	if (p->a)
		rcc_ep_close(p->a);
	if (p->b)
		rcc_ep_close(p->b);
	if (p->lst)
		rcc_listener_close(p->lst);
	if (p->cq_a)
		rcc_cq_destroy(p->cq_a);
	if (p->cq_b)
		rcc_cq_destroy(p->cq_b);
	if (p->ctx_a)
		CHECK_OK(rcc_ctx_close(p->ctx_a));
	if (p->ctx_b)
		CHECK_OK(rcc_ctx_close(p->ctx_b));
}

/*
 * Sleeping sides are woken by the doorbell, not by a timer: with heartbeats
 * an hour apart and progress threads that sleep at once after a pass, WAIT-
 * mode ping-pongs (the consumer asleep every time) and a WRITE and a READ
 * many times the ring's size with a passive target (the producer waiting for
 * room again and again) all complete, byte-exact, within the test's bound.
 * Two contexts, so that each side has its own progress thread as two
 * processes would. A lost wake-up hangs here until the timeout.
 */
static void wakeups_without_heartbeats(void)
{
	struct pair2 p;
	struct rcc_cq_attr ca = { .mode = RCC_CQ_WAIT };
	struct rcc_ep_attr ea = { .peer_timeout_ms = 3600000 };
	struct tbuf src = { 0 }, dst = { 0 }, back = { 0 }, pa = { 0 }, pb = { 0 };
	const size_t n = 64 * SHM_RING_DEFAULT + 123;
	struct rcc_wc wc;

	/* A spinning progress thread would find the room or the bytes by
	 * itself and hide a lost wake-up: no spinning after a pass. */
	setenv("RCC_TCP_SPIN_US", "0", 1);
	int rc = pair2_open(&p, &ca, &ea);
	unsetenv("RCC_TCP_SPIN_US");
	CHECK_OK(rc);
	CHECK_OK(tbuf_alloc(&pa, p.ctx_a, 128, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&pb, p.ctx_b, 128, RCC_ACCESS_LOCAL_WRITE));
	for (int i = 0; i < 100; i++) {
		bool ab = i % 2 == 0;
		struct tbuf *fb = ab ? &pa : &pb, *tb = ab ? &pb : &pa;
		struct rcc_sge rs = tbuf_sge(tb, 64, 64), ss = tbuf_sge(fb, 0, 64);
		fb->p[0] = (uint8_t)i;
		CHECK_OK(rcc_post_recv(ab ? p.b : p.a, &rs, 1, 100 + (uint64_t)i));
		CHECK_OK(rcc_post_send(ab ? p.a : p.b, &ss, 1, (uint64_t)i, RCC_SEND_SIGNALED));
		CHECK_OK(wait_one(ab ? p.cq_b : p.cq_a, &wc, TEST_TIMEOUT_MS));
		CHECK_WC(wc, RCC_WC_SUCCESS);
		CHECK_EQ(tb->p[64], (uint8_t)i);
		CHECK_OK(wait_one(ab ? p.cq_a : p.cq_b, &wc, TEST_TIMEOUT_MS));
		CHECK_WC(wc, RCC_WC_SUCCESS);
	}
	CHECK_OK(tbuf_alloc(&src, p.ctx_a, n, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&back, p.ctx_a, n, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&dst, p.ctx_b, n, ALL_ACCESS));
	fill_pattern(src.p, n, 11);
	struct rcc_remote_mr rm = rcc_mr_remote(dst.mr);
	struct rcc_sge ws = tbuf_sge(&src, 0, (uint32_t)n);
	CHECK_OK(rcc_post_write(p.a, &ws, 1, rm.addr, rm.rkey, 1, RCC_SEND_SIGNALED));
	CHECK_OK(wait_one(p.cq_a, &wc, TEST_TIMEOUT_MS));
	CHECK_WC(wc, RCC_WC_SUCCESS);
	CHECK_EQ(check_pattern(dst.p, n, 11), -1);
	struct rcc_sge bs = tbuf_sge(&back, 0, (uint32_t)n);
	CHECK_OK(rcc_post_read(p.a, &bs, 1, rm.addr, rm.rkey, 2, RCC_SEND_SIGNALED));
	CHECK_OK(wait_one(p.cq_a, &wc, TEST_TIMEOUT_MS));
	CHECK_WC(wc, RCC_WC_SUCCESS);
	CHECK_EQ(check_pattern(back.p, n, 11), -1);
	tbuf_free(&pa);
	tbuf_free(&pb);
	tbuf_free(&src);
	tbuf_free(&back);
	tbuf_free(&dst);
	pair2_close(&p);
}

/* The peer of peer_killed_while_polled, in its own process: connect over
 * shared memory, say so, then wait to be killed. */
static int peer_child(int port, int notify_fd)
{
	struct rcc_ctx *c;
	struct rcc_cq *ccq;
	struct rcc_ep *cep;
	char addr[128];

	snprintf(addr, sizeof(addr), "%s:%d", test_addr(), port);
	if (ctx_with(RCC_SHM_REQUIRE, &c) || rcc_cq_create(c, NULL, &ccq))
		return 2;
	struct rcc_ep_attr ca = { .send_cq = ccq };
	if (rcc_connect(c, addr, &ca, TEST_TIMEOUT_MS, &cep))
		return 3;
	if (write(notify_fd, "x", 1) != 1)
		return 4;
	for (;;)
		pause();
}

/*
 * kill -9 of the peer while the survivor busy-polls a POLL-mode CQ (its
 * socket then read by nobody but the progress thread's end-of-stream watch):
 * every outstanding receive is flushed and the endpoint disconnected within
 * the timeout.
 */
static void peer_killed_while_polled(void)
{
	struct rcc_ctx *ctx = NULL;
	struct rcc_cq *cq = NULL;
	struct rcc_listener *lst = NULL;
	struct rcc_ep *ep = NULL;
	struct tbuf r = { 0 };
	struct peer_proc child;
	char addr[128];

	CHECK_OK(peer_spawn(&child, self_path));
	struct rcc_cq_attr cqa = { .mode = RCC_CQ_POLL };
	int rc = ctx_with(RCC_SHM_REQUIRE, &ctx);
	if (!rc)
		rc = rcc_cq_create(ctx, &cqa, &cq);
	snprintf(addr, sizeof(addr), "%s:0", test_addr());
	if (!rc)
		rc = rcc_listen(ctx, addr, 0, &lst);
	int port = rc ? 0 : rcc_listener_port(lst);
	peer_go(&child, port);
	struct rcc_ep_attr a = { .send_cq = cq };
	if (!rc)
		rc = rcc_accept(lst, &a, TEST_TIMEOUT_MS, &ep);
	bool child_ready = peer_connected(&child);
	if (rc || !child_ready) {
		peer_kill(&child);
		CHECK_OK(rc);
		CHECK(child_ready);
	}
	CHECK(!strcmp(rcc_ep_path(ep), "shm"));
	CHECK_OK(tbuf_alloc(&r, ctx, 4 * 4096, RCC_ACCESS_LOCAL_WRITE));
	for (int i = 0; i < 4; i++) {
		struct rcc_sge rs = tbuf_sge(&r, (size_t)i * 4096, 4096);
		CHECK_OK(rcc_post_recv(ep, &rs, 1, (uint64_t)i));
	}
	struct rcc_wc wc[8];
	/* busy-poll for a while first, so the progress thread parks the endpoint */
	for (int i = 0; i < 20000; i++)
		CHECK_EQ(rcc_cq_poll(cq, wc, 8), 0);
	peer_kill(&child);
	uint64_t end = now_ms() + TEST_TIMEOUT_MS;
	int done = 0;
	while (done < 4 && now_ms() < end) {
		int n = rcc_cq_poll(cq, wc, 8);
		CHECK(n >= 0);
		for (int i = 0; i < n; i++, done++) {
			CHECK_EQ(wc[i].wr_id, (uint64_t)done);
			CHECK_WC(wc[i], RCC_WC_WR_FLUSH_ERR);
		}
	}
	CHECK_EQ(done, 4);
	CHECK_EQ(rcc_ep_state(ep), RCC_EP_DISCONNECTED);
	rcc_ep_close(ep);
	tbuf_free(&r);
	rcc_listener_close(lst);
	rcc_cq_destroy(cq);
	CHECK_OK(rcc_ctx_close(ctx));
}

static const struct test_case cases[] = {
	{ "controls_and_path", controls_and_path },
	{ "env_var", env_var },
	{ "hostile_tail", hostile_tail },
	{ "hostile_head", hostile_head },
	{ "peer_killed_while_polled", peer_killed_while_polled },
	{ "wakeups_without_heartbeats", wakeups_without_heartbeats },
};

int main(int argc, char **argv)
{
	self_path = argv[0];
	if (argc == 4 && !strcmp(argv[1], "--peer-child"))
		return peer_child(atoi(argv[2]), atoi(argv[3]));
	if (test_on_verbs() || test_shm() != RCC_SHM_REQUIRE) {
		printf("test_shm runs with RCC_TEST_TRANSPORT=shm only\n");
		return 77;
	}
	return test_main(argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}
