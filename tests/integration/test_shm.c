/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The same-host shared-memory path of the tcp transport (docs/shm.md): the
 * path is reported, the controls are honoured, a peer that scribbles the
 * shared control words makes the other side fail the connection cleanly, a
 * peer cannot resize the region under us (and a region that could be resized
 * is refused), the region goes only to the peer that shows the handshake's
 * token, and a peer killed while the survivor busy-polls is noticed within
 * the timeout. Runs on the tcp transport only (exit 77 on verbs).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/sock.h"
#include "pair.h"
#include "rcc/util.h"
#include "transport/tcp/shm_region.h"
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
	CHECK_EQ(tctx(ctx)->shm, RCC_SHM_OFF);
	rcc_ctx_close(ctx);
	setenv("RCC_SHM", "0", 1);
	CHECK_OK(ctx_with(RCC_SHM_AUTO, &ctx));
	CHECK_EQ(tctx(ctx)->shm, RCC_SHM_OFF);
	rcc_ctx_close(ctx);
	setenv("RCC_SHM", "1", 1);
	CHECK_OK(ctx_with(RCC_SHM_AUTO, &ctx));
	CHECK_EQ(tctx(ctx)->shm, RCC_SHM_REQUIRE);
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
	/* A doorbell, as a peer would ring: the victim must look now. It may have
	 * looked already: the progress thread sweeps the rings nobody polls
	 * whenever it runs (here: spinning after the connection's set-up), and
	 * under valgrind, which runs one thread at a time, the victim's failure
	 * and our end's shutdown can both fit between our store and this send.
	 * The doorbell is then refused (EPIPE; MSG_NOSIGNAL, or SIGPIPE kills the
	 * test) and the victim has already left. */
	ssize_t rung = send(tep(p.a)->fd, "x", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	CHECK_MSG(rung == 1 || ((errno == EPIPE || errno == ECONNRESET) &&
				rcc_ep_state(p.b) != RCC_EP_CONNECTED),
		  "doorbell: %zd (%s), victim %s", rung, rung < 0 ? strerror(errno) : "sent",
		  rcc_ep_state(p.b) == RCC_EP_CONNECTED ? "still connected" : "gone");
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

/* Run body with single copy off: the ring's own cases, whose large WRITEs
 * would otherwise go around the ring when the suite runs with RCC_SHM_CMA=1. */
static void ring_only(void (*body)(void))
{
	char *saved = getenv("RCC_SHM_CMA") ? strdup(getenv("RCC_SHM_CMA")) : NULL;
	setenv("RCC_SHM_CMA", "0", 1);
	body();
	if (saved)
		setenv("RCC_SHM_CMA", saved, 1);
	else
		unsetenv("RCC_SHM_CMA");
	free(saved);
}

/*
 * The peer moves the head of the ring we produce into to where it can never
 * be (ahead of what we wrote). The producer writes from the head it last saw
 * while that leaves room (shm_ring.h, tx_head_seen), so it meets the lie when
 * it next looks: a WRITE of more than the ring, with the peer's progress
 * thread held so that nothing it reads rewrites the head, uses up the room it
 * remembers, looks, and fails the connection; the request completes in
 * error, and nothing is written outside the ring.
 */
static void hostile_head_ring(void)
{
	struct pair_opts o = { .split = true };
	struct pair p;
	struct tbuf src = { 0 }, dst = { 0 };
	struct rcc_wc wc;
	bool done = false;

	CHECK_OK(pair_open(&p, &o));
	struct shm_ring *victim = &tep(p.a)->shm;
	const size_t n = 3u * (size_t)victim->cap;
	CHECK_OK(tbuf_alloc(&src, p.ctx, n, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&dst, p.ctx_b, n, ALL_ACCESS));
	struct rcc_remote_mr rm = rcc_mr_remote(dst.mr);
	struct rcc_sge ws = tbuf_sge(&src, 0, (uint32_t)n);
	pthread_mutex_t *held = &tctx(p.ctx_b)->eps_lock;

	pthread_mutex_lock(held);
	int rc = rcc_post_write(p.a, &ws, 1, rm.addr, rm.rkey, 9, RCC_SEND_SIGNALED);
	uint64_t end = now_ms() + TEST_TIMEOUT_MS;
	while (!rc && rcc_ep_state(p.a) == RCC_EP_CONNECTED && now_ms() < end) {
		/* written again and again, as a hostile peer would: a pass of
		 * the peer's thread that began before we held it may still
		 * read a ring's worth and store the true head (hence a WRITE
		 * of three rings: the producer runs short of room after it) */
		atomic_store(&victim->tx->head,
			     atomic_load(&victim->tx_tail) + 2u * (uint64_t)victim->cap);
		if (rcc_cq_poll(p.cq_a, &wc, 1) == 1)
			done = true;
	}
	pthread_mutex_unlock(held);
	CHECK(rc == 0 || rc == -ENOTCONN);
	CHECK_MSG(rcc_ep_state(p.a) != RCC_EP_CONNECTED,
		  "a head ahead of what we wrote went unnoticed past the ring's room");
	if (rc == 0) {
		if (!done)
			CHECK_OK(wait_one(p.cq_a, &wc, TEST_TIMEOUT_MS));
		CHECK_EQ(wc.wr_id, 9);
		CHECK(wc.status != RCC_WC_SUCCESS);
	}
	tbuf_free(&src);
	tbuf_free(&dst);
	pair_close(&p);
}

static void hostile_head(void) { ring_only(hostile_head_ring); }

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

/* One more connection between the two contexts of p, on the same CQs. */
static int pair2_more(struct pair2 *p, const struct rcc_ep_attr *ea, struct rcc_ep **a,
		      struct rcc_ep **b)
{
	struct acc acc = { .lst = p->lst, .cq = p->cq_b };
	struct rcc_ep_attr at = *ea;
	char addr[128];
	pthread_t th;
	int rc;

	if ((rc = -pthread_create(&th, NULL, acc_main, &acc)))
		return rc;
	at.send_cq = p->cq_a;
	snprintf(addr, sizeof(addr), "%s:%d", test_addr(), rcc_listener_port(p->lst));
	rc = rcc_connect(p->ctx_a, addr, &at, TEST_TIMEOUT_MS, a);
	pthread_join(th, NULL);
	*b = acc.ep;
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

/* Set or (value NULL) unset the environment variable name; returns what it
 * held, for env_restore(). */
static char *env_swap(const char *name, const char *value)
{
	char *old = getenv(name) ? strdup(getenv(name)) : NULL;

	if (value)
		setenv(name, value, 1);
	else
		unsetenv(name);
	return old;
}

static void env_restore(const char *name, char *old)
{
	if (old)
		setenv(name, old, 1);
	else
		unsetenv(name);
	free(old);
}

/* Milliseconds left until the monotonic time end (now_ms()); 0 once past. */
static int ms_until(uint64_t end)
{
	uint64_t now = now_ms();
	return now < end ? (int)(end - now) : 0;
}

/* A WRITE of n bytes from p's a-side context into a region of its b-side
 * one, then a READ of them back, each completed by end (now_ms() time) and
 * compared byte for byte. */
static void write_then_read_back(struct pair2 *p, size_t n, int seed, uint64_t end)
{
	struct tbuf src = { 0 }, dst = { 0 }, back = { 0 };
	struct rcc_wc wc;

	CHECK_OK(tbuf_alloc(&src, p->ctx_a, n, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&back, p->ctx_a, n, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&dst, p->ctx_b, n, ALL_ACCESS));
	if (!test_failed) {
		fill_pattern(src.p, n, seed);
		struct rcc_remote_mr rm = rcc_mr_remote(dst.mr);
		struct rcc_sge ws = tbuf_sge(&src, 0, (uint32_t)n);
		CHECK_OK(rcc_post_write(p->a, &ws, 1, rm.addr, rm.rkey, 1, RCC_SEND_SIGNALED));
		CHECK_OK(wait_one(p->cq_a, &wc, ms_until(end)));
		CHECK_WC(wc, RCC_WC_SUCCESS);
		CHECK_EQ(check_pattern(dst.p, n, seed), -1);
		struct rcc_sge bs = tbuf_sge(&back, 0, (uint32_t)n);
		CHECK_OK(rcc_post_read(p->a, &bs, 1, rm.addr, rm.rkey, 2, RCC_SEND_SIGNALED));
		CHECK_OK(wait_one(p->cq_a, &wc, ms_until(end)));
		CHECK_WC(wc, RCC_WC_SUCCESS);
		CHECK_EQ(check_pattern(back.p, n, seed), -1);
	}
	tbuf_free(&src);
	tbuf_free(&back);
	tbuf_free(&dst);
}

/*
 * RCC_SHM_RING_KIB: the ring the accepting side offers, and takes the
 * connecting side too. A value that is not a power of two from 4 to 65536
 * KiB makes rcc_ctx_open() fail, saying which variable; a 4 MiB ring carries
 * a WRITE and a READ of several rings, byte-exact, with frames larger than
 * the default ring allows (a quarter of the ring, up to the wire's largest).
 */
static void ring_capacity(void)
{
	static const char *const bad[] = { "abc",    "3",  "0",   "2",   "65537",
					   "131072", "-4", " 64", "64k", "99999999999999999999" };
	struct rcc_ctx *ctx;
	char *old = env_swap("RCC_SHM_RING_KIB", NULL);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("RCC_SHM_RING_KIB", bad[i], 1);
		int rc = ctx_with(RCC_SHM_REQUIRE, &ctx);
		CHECK_MSG(rc == -EINVAL, "RCC_SHM_RING_KIB=%s: %d", bad[i], rc);
		if (!rc)
			rcc_ctx_close(ctx);
		CHECK(strstr(rcc_last_error(), "RCC_SHM_RING_KIB") != NULL);
	}
	unsetenv("RCC_SHM_RING_KIB");
	CHECK_OK(ctx_with(RCC_SHM_REQUIRE, &ctx));
	CHECK_EQ(tctx(ctx)->shm_ring_cap, SHM_RING_DEFAULT);
	rcc_ctx_close(ctx);

	/* both contexts of pair2_open() are made with the variable set: the
	 * accepting one's decides */
	struct pair2 p;
	struct rcc_cq_attr ca = { .mode = RCC_CQ_POLL };
	struct rcc_ep_attr ea = { 0 };
	/* more than the ring, several times outside valgrind's scaled-down runs */
	const size_t n = (test_quick() ? 1 : 3) * 4096 * 1024 + 77;

	setenv("RCC_SHM_RING_KIB", "4096", 1);
	int rc = pair2_open(&p, &ca, &ea);
	unsetenv("RCC_SHM_RING_KIB");
	CHECK_OK(rc);
	if (!rc) {
		CHECK_EQ(tep(p.a)->shm.cap, 4096u * 1024u);
		CHECK_EQ(tep(p.b)->shm.cap, 4096u * 1024u);
		write_then_read_back(&p, n, 31, now_ms() + TEST_TIMEOUT_MS);
	}
	pair2_close(&p);
	env_restore("RCC_SHM_RING_KIB", old);
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
	struct tbuf pa = { 0 }, pb = { 0 };
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
	/* One bound for the whole case: a timer may rescue a lost wake-up now
	 * and then, and waits that each had a full bound stretched such a
	 * failure over minutes. It bounds a hang, not speed: the case takes
	 * 1.3-1.6 s (TSan included), so 20 s, which also keeps the mutation
	 * run's lost wake-ups short. Under valgrind (RCC_TEST_QUICK) it takes
	 * 3-4 s, and 10-20 s niced beside a CPU hog on a loaded 2-core machine,
	 * where 20 s failed it with no step stalled (the longest wait was 7 s,
	 * the READ of 64 rings): 60 s there. */
	uint64_t end = now_ms() + (test_quick() ? 6 : 2) * TEST_TIMEOUT_MS;
	for (int i = 0; i < 100 && !test_failed; i++) {
		bool ab = i % 2 == 0;
		struct tbuf *fb = ab ? &pa : &pb, *tb = ab ? &pb : &pa;
		struct rcc_sge rs = tbuf_sge(tb, 64, 64), ss = tbuf_sge(fb, 0, 64);
		fb->p[0] = (uint8_t)i;
		CHECK_OK(rcc_post_recv(ab ? p.b : p.a, &rs, 1, 100 + (uint64_t)i));
		CHECK_OK(rcc_post_send(ab ? p.a : p.b, &ss, 1, (uint64_t)i, RCC_SEND_SIGNALED));
		CHECK_OK(wait_one(ab ? p.cq_b : p.cq_a, &wc, ms_until(end)));
		CHECK_WC(wc, RCC_WC_SUCCESS);
		CHECK_EQ(tb->p[64], (uint8_t)i);
		CHECK_OK(wait_one(ab ? p.cq_a : p.cq_b, &wc, ms_until(end)));
		CHECK_WC(wc, RCC_WC_SUCCESS);
	}
	write_then_read_back(&p, n, 11, end);
	tbuf_free(&pa);
	tbuf_free(&pb);
	pair2_close(&p);
}

/*
 * A producer that stops because the ring has no room for its next whole
 * frame says so. With the consumer's progress thread held, a WRITE of twice
 * the ring stops with the ring full, and the producer -- an endpoint the
 * application is not polling, so the progress thread must come back to it --
 * has armed the room: space_wait, which the consumer rings on once it frees
 * room (docs/shm.md "Wake-ups"). Let go, the WRITE completes, byte-exact.
 * Without the flag the transfer goes on only when some later timer or pass
 * happens to look: wakeups_without_heartbeats then took 5-15 s instead of
 * 0.3 s, inside its bound, so only the flag shows it.
 */
static void full_ring_producer_armed_ring(void)
{
	struct pair_opts o = { .split = true,
			       .attr_a = { .peer_timeout_ms = 3600000 },
			       .attr_b = { .peer_timeout_ms = 3600000 } };
	const size_t n = 2 * SHM_RING_DEFAULT;
	struct tbuf src = { 0 }, dst = { 0 };
	bool stopped = false, armed = false;
	struct rcc_wc wc;
	struct pair p;

	CHECK_OK(pair_open(&p, &o));
	CHECK_OK(tbuf_alloc(&src, p.ctx, n, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&dst, p.ctx_b, n, ALL_ACCESS));
	fill_pattern(src.p, n, 21);
	struct rcc_remote_mr rm = rcc_mr_remote(dst.mr);
	struct rcc_sge ws = tbuf_sge(&src, 0, (uint32_t)n);
	struct tcp_ep *a = tep(p.a);
	pthread_mutex_t *held = &tctx(p.ctx_b)->eps_lock;

	pthread_mutex_lock(held);
	int rc = rcc_post_write(p.a, &ws, 1, rm.addr, rm.rkey, 1, RCC_SEND_SIGNALED);
	uint64_t end = now_ms() + TEST_TIMEOUT_MS;
	while (!rc && !(stopped && armed) && now_ms() < end) {
		rcci_lock_acquire(&a->tx_lock);
		stopped = a->sq_tx != a->sq_tail && !rcci_shm_ring_tx_room(&a->shm);
		armed = atomic_load(&a->shm.tx->space_wait) != 0;
		rcci_lock_release(&a->tx_lock);
		if (!(stopped && armed))
			sched_yield();
	}
	pthread_mutex_unlock(held);
	CHECK_OK(rc);
	/* armed first: a producer that left room unused since is a lost wake-up too */
	CHECK_MSG(armed, "the producer did not arm its room (%s)",
		  stopped ? "the ring full" : "room left that nobody came back for");
	CHECK_MSG(stopped, "a WRITE of twice the ring never filled it, the consumer held");
	CHECK_OK(wait_one(p.cq_a, &wc, TEST_TIMEOUT_MS));
	CHECK_WC(wc, RCC_WC_SUCCESS);
	CHECK_EQ(check_pattern(dst.p, n, 21), -1);
	tbuf_free(&src);
	tbuf_free(&dst);
	pair_close(&p);
}

static void full_ring_producer_armed(void) { ring_only(full_ring_producer_armed_ring); }

/* How the application waits for a completion. */
enum app_wait_how {
	BY_WAIT,     /* rcc_cq_wait() */
	BY_FD,       /* poll() on rcc_cq_fd() after rcc_cq_poll() found nothing */
	BY_FD_ARMED, /* the same, with rcc_cq_arm() before each sleep */
	BY_POLL,     /* rcc_cq_poll() in a loop: a busy poller */
};

/* Wait for one completion on cq as `how` says, the descriptor's ways as its
 * contract says (rcc.h). */
static int app_wait(struct rcc_cq *cq, enum app_wait_how how, struct rcc_wc *wc)
{
	if (how == BY_WAIT)
		return rcc_cq_wait(cq, wc, 1, TEST_TIMEOUT_MS) == 1 ? 0 : -ETIMEDOUT;
	uint64_t end = now_ms() + TEST_TIMEOUT_MS;
	if (how == BY_POLL) {
		while (now_ms() < end) {
			int n = rcc_cq_poll(cq, wc, 1);
			if (n)
				return n == 1 ? 0 : n;
		}
		return -ETIMEDOUT;
	}
	struct pollfd p = { .fd = rcc_cq_fd(cq), .events = POLLIN };
	while (now_ms() < end) {
		int n = rcc_cq_poll(cq, wc, 1);
		if (n)
			return n == 1 ? 0 : n;
		if (how == BY_FD_ARMED && (n = rcc_cq_arm(cq)) != 0) {
			if (n < 0)
				return n;
			continue; /* poll first */
		}
		if (poll(&p, 1, (int)(end - now_ms())) < 0)
			return -errno;
	}
	return -ETIMEDOUT;
}

/* One round trip: a SENDs i to b, b answers; b waits as its mode says. */
static void shm_round_trip(struct pair2 *p, struct tbuf *ba, struct tbuf *bb, enum app_wait_how how,
			   int i)
{
	struct rcc_sge ra = tbuf_sge(ba, 64, 64), rb = tbuf_sge(bb, 64, 64);
	struct rcc_sge sa = tbuf_sge(ba, 0, 64), sb = tbuf_sge(bb, 0, 64);
	struct rcc_wc wc;

	ba->p[0] = (uint8_t)i;
	CHECK_OK(rcc_post_recv(p->b, &rb, 1, 1));
	CHECK_OK(rcc_post_send(p->a, &sa, 1, 2, RCC_SEND_SIGNALED));
	CHECK_OK(app_wait(p->cq_b, how, &wc));
	CHECK_EQ(wc.wr_id, 1);
	CHECK_WC(wc, RCC_WC_SUCCESS);
	CHECK_EQ(bb->p[64], (uint8_t)i);
	bb->p[0] = (uint8_t)~i;
	CHECK_OK(rcc_post_recv(p->a, &ra, 1, 3));
	CHECK_OK(rcc_post_send(p->b, &sb, 1, 4, RCC_SEND_SIGNALED));
	for (int k = 0; k < 2; k++) { /* the pong and our ping's completion, in either order */
		CHECK_OK(wait_one(p->cq_a, &wc, TEST_TIMEOUT_MS));
		CHECK_WC(wc, RCC_WC_SUCCESS);
		CHECK(wc.wr_id == 2 || wc.wr_id == 3);
	}
	CHECK_EQ(ba->p[64], (uint8_t)~i);
	CHECK_OK(app_wait(p->cq_b, how, &wc));
	CHECK_EQ(wc.wr_id, 4);
	CHECK_WC(wc, RCC_WC_SUCCESS);
}

/*
 * One wake-up on shared memory: a thread sleeping in rcc_cq_wait() (WAIT,
 * FD and HYBRID mode), or in its own poll() on rcc_cq_fd() after
 * rcc_cq_arm(), is woken by the peer's doorbell and reads the ring
 * itself, instead of being woken by the progress thread that read it. Shown
 * with the waiting side's progress thread stuck (the test holds the lock it
 * takes on every pass): every completion still arrives, with one endpoint on
 * the CQ (the waiter sleeps on its doorbell directly) and with two (through
 * the CQ's set, or in FD mode a set of its own). The waiter also reads the
 * doorbell bytes it was rung with, so they do not pile up in its socket (a
 * thread that left them would spin on a readable socket). A busy poller
 * (POLL mode) is rung for nothing and must find its input in the ring
 * itself: its empty polls skip the pass without a lock
 * (rcci_shm_stream_idle), never when the ring holds bytes.
 */
static void waiter_reads_the_ring(void)
{
	static const struct {
		enum rcc_cq_mode mode;
		enum app_wait_how by;
	} how[] = {
		{ RCC_CQ_WAIT, BY_WAIT },   { RCC_CQ_FD, BY_WAIT },   { RCC_CQ_HYBRID, BY_WAIT },
		{ RCC_CQ_FD, BY_FD_ARMED }, { RCC_CQ_POLL, BY_POLL },
	};

	for (size_t h = 0; h < 2 * sizeof(how) / sizeof(how[0]); h++) {
		size_t m = h / 2;
		bool two = h % 2; /* a second connection on the same CQs */
		struct rcc_cq_attr ca = { .mode = how[m].mode, .spin_us = 1 };
		struct rcc_ep_attr ea = { .peer_timeout_ms = 3600000 };
		struct tbuf ba = { 0 }, bb = { 0 };
		struct pair2 p, q;
		int queued = -1;

		CHECK_OK(pair2_open(&p, &ca, &ea));
		q = p;
		if (two)
			CHECK_OK(pair2_more(&p, &ea, &q.a, &q.b));
		CHECK_OK(tbuf_alloc(&ba, p.ctx_a, 128, RCC_ACCESS_LOCAL_WRITE));
		CHECK_OK(tbuf_alloc(&bb, p.ctx_b, 128, RCC_ACCESS_LOCAL_WRITE));
		shm_round_trip(&q, &ba, &bb, how[m].by, 0);
		if (test_failed)
			return;
		pthread_mutex_t *stuck = &tctx(p.ctx_b)->eps_lock;
		/* 20 round trips take milliseconds; the bound is for all of them */
		uint64_t end = now_ms() + TEST_TIMEOUT_MS;
		int i;
		pthread_mutex_lock(stuck);
		for (i = 1; i <= 20 && !test_failed && now_ms() < end; i++)
			shm_round_trip(&q, &ba, &bb, how[m].by, i);
		CHECK(ioctl(tep(q.b)->fd, FIONREAD, &queued) == 0);
		pthread_mutex_unlock(stuck);
		CHECK_MSG(!test_failed && i > 20,
			  "mode %zu, %d endpoints: %d of 20 round trips in %d ms", m, two ? 2 : 1,
			  i - 1, TEST_TIMEOUT_MS);
		CHECK_MSG(queued >= 0 && queued <= 2, "mode %zu: %d doorbell bytes left unread", m,
			  queued);
		tbuf_free(&ba);
		tbuf_free(&bb);
		if (two) {
			rcc_ep_close(q.a);
			rcc_ep_close(q.b);
		}
		pair2_close(&p);
	}
}

/* rcc_cq_wait() in a thread of its own. */
struct sleeper {
	struct rcc_cq *cq;
	struct rcc_wc wc;
	int rc;
};

static void *sleeper_main(void *arg)
{
	struct sleeper *s = arg;
	s->rc = rcc_cq_wait(s->cq, &s->wc, 1, TEST_TIMEOUT_MS);
	return NULL;
}

/*
 * A waiter woken by its doorbell takes that doorbell along with the message
 * it rang for. With b's progress thread held, a thread asleep in
 * rcc_cq_wait() on b is woken by a's SEND and returns its completion, and
 * b's socket then holds no doorbell byte. A byte left there wakes the next
 * sleep for nothing, and when every wake-up finds its message already in
 * the ring the bytes pile up (valgrind's one-thread-at-a-time schedule left
 * 8 in waiter_reads_the_ring so).
 */
static void woken_waiter_takes_its_bell(void)
{
	struct rcc_cq_attr ca = { .mode = RCC_CQ_WAIT };
	struct rcc_ep_attr ea = { .peer_timeout_ms = 3600000 };
	struct tbuf ba = { 0 }, bb = { 0 };
	struct pair2 p;

	CHECK_OK(pair2_open(&p, &ca, &ea));
	CHECK_OK(tbuf_alloc(&ba, p.ctx_a, 128, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&bb, p.ctx_b, 128, RCC_ACCESS_LOCAL_WRITE));
	struct rcc_sge sa = tbuf_sge(&ba, 0, 64), rb = tbuf_sge(&bb, 64, 64);
	_Atomic uint32_t *b_sleeps = &tep(p.b)->shm.rx->sleeping;
	pthread_mutex_t *stuck = &tctx(p.ctx_b)->eps_lock;
	for (int i = 0; i < 5 && !test_failed; i++) {
		struct sleeper s = { .cq = p.cq_b };
		struct rcc_wc wc;
		pthread_t th;
		int queued = -1;

		ba.p[0] = (uint8_t)(i + 1);
		CHECK_OK(rcc_post_recv(p.b, &rb, 1, 1));
		pthread_mutex_lock(stuck);
		/* A flag left set by an earlier look at the ring would ring a
		 * bell before the thread sleeps: clear it, then wait for the
		 * thread to set it as it goes to sleep. */
		atomic_store(b_sleeps, 0);
		CHECK_OK(-pthread_create(&th, NULL, sleeper_main, &s));
		uint64_t end = now_ms() + TEST_TIMEOUT_MS;
		while (!atomic_load(b_sleeps) && now_ms() < end)
			sched_yield();
		CHECK_MSG(atomic_load(b_sleeps), "round %d: the waiter never went to sleep", i);
		CHECK_OK(rcc_post_send(p.a, &sa, 1, 2, RCC_SEND_SIGNALED));
		pthread_join(th, NULL);
		CHECK(ioctl(tep(p.b)->fd, FIONREAD, &queued) == 0);
		pthread_mutex_unlock(stuck);
		CHECK_EQ(s.rc, 1);
		CHECK_EQ(s.wc.wr_id, 1);
		CHECK_WC(s.wc, RCC_WC_SUCCESS);
		CHECK_EQ(bb.p[64], (uint8_t)(i + 1));
		CHECK_MSG(queued == 0, "round %d: %d doorbell bytes left after the wake-up", i,
			  queued);
		CHECK_OK(wait_one(p.cq_a, &wc, TEST_TIMEOUT_MS));
		CHECK_EQ(wc.wr_id, 2);
		CHECK_WC(wc, RCC_WC_SUCCESS);
	}
	tbuf_free(&ba);
	tbuf_free(&bb);
	pair2_close(&p);
}

/*
 * While a thread waits on an endpoint's CQ (and so arms its ring and reads
 * it), the progress thread parks the endpoint: it stops watching the
 * doorbell, so the two do not both wake for one message. In WAIT-mode
 * ping-pongs, and FD-mode ones whose application arms before it sleeps,
 * the endpoint is parked after a few round trips at most.
 */
static void waited_endpoint_parked(void)
{
	static const struct {
		enum rcc_cq_mode mode;
		enum app_wait_how by;
	} how[] = { { RCC_CQ_WAIT, BY_WAIT }, { RCC_CQ_FD, BY_FD_ARMED } };

	for (size_t h = 0; h < sizeof(how) / sizeof(how[0]) && !test_failed; h++) {
		struct rcc_cq_attr ca = { .mode = how[h].mode };
		struct rcc_ep_attr ea = { .peer_timeout_ms = 3600000 };
		struct tbuf ba = { 0 }, bb = { 0 };
		struct pair2 p;
		int i;

		CHECK_OK(pair2_open(&p, &ca, &ea));
		CHECK_OK(tbuf_alloc(&ba, p.ctx_a, 128, RCC_ACCESS_LOCAL_WRITE));
		CHECK_OK(tbuf_alloc(&bb, p.ctx_b, 128, RCC_ACCESS_LOCAL_WRITE));
		for (i = 0; i < 500 && !atomic_load(&tep(p.b)->parked); i++) {
			shm_round_trip(&p, &ba, &bb, how[h].by, i);
			if (test_failed)
				return;
		}
		CHECK_MSG(atomic_load(&tep(p.b)->parked),
			  "mode %zu: not parked after %d round trips", h, i);
		tbuf_free(&ba);
		tbuf_free(&bb);
		pair2_close(&p);
	}
}

/*
 * An application that sleeps in its own epoll on rcc_cq_fd() without
 * rcc_cq_arm() arms no ring,
 * so the progress thread keeps serving its shared-memory endpoints: it is
 * woken as before (through the CQ's eventfd), every round trip completes,
 * and the descriptor does not stay readable on a doorbell nobody reads.
 */
static void fd_sleeper_served(void)
{
	struct rcc_cq_attr ca = { .mode = RCC_CQ_FD };
	struct rcc_ep_attr ea = { .peer_timeout_ms = 3600000 };
	struct tbuf ba = { 0 }, bb = { 0 };
	struct pair2 p;
	struct rcc_wc wc;

	CHECK_OK(pair2_open(&p, &ca, &ea));
	CHECK_OK(tbuf_alloc(&ba, p.ctx_a, 128, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&bb, p.ctx_b, 128, RCC_ACCESS_LOCAL_WRITE));
	for (int i = 0; i < 50 && !test_failed; i++)
		shm_round_trip(&p, &ba, &bb, BY_FD, i);
	if (test_failed)
		return;
	/* nothing is owed now: the descriptor is not readable */
	struct pollfd pf = { .fd = rcc_cq_fd(p.cq_b), .events = POLLIN };
	CHECK_EQ(rcc_cq_poll(p.cq_b, &wc, 1), 0);
	CHECK_EQ(poll(&pf, 1, 0), 0);
	CHECK(!atomic_load(&tep(p.b)->parked));
	tbuf_free(&ba);
	tbuf_free(&bb);
	pair2_close(&p);
}

/*
 * Requests posted just before a disconnect go out before it, as a NIC would
 * have started them: a parked endpoint's post waits for the application's
 * next poll to go out with what follows (post.c), and a disconnect in place
 * of that poll must send it, not flush it unsent (rcc-perf's BYE was lost so
 * once parking came to WAIT-mode endpoints on shared memory). The peer's
 * progress thread is held, so nothing is acknowledged meanwhile.
 */
static void posted_before_disconnect_sent(void)
{
	struct pair p;
	struct tbuf s = { 0 }, r = { 0 };
	struct rcc_wc wc[4];
	int n = 0;

	CHECK_OK(pair_open(&p, NULL));
	CHECK_OK(tbuf_alloc(&s, p.ctx, 4096, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&r, p.ctx, 4096, RCC_ACCESS_LOCAL_WRITE));
	for (int i = 0; i < 2; i++) {
		struct rcc_sge rs = tbuf_sge(&r, (size_t)i * 64, 64);
		CHECK_OK(rcc_post_recv(p.b, &rs, 1, 10 + (uint64_t)i));
	}
	fill_pattern(s.p, 128, 5);
	struct tcp_ctx *ctx = tctx(p.ctx);
	pthread_mutex_lock(&ctx->eps_lock); /* the progress thread stops at its next pass */
	/* as if the application were polling a's CQ: its posts may wait for that poll */
	if (!atomic_exchange(&tep(p.a)->parked, true))
		atomic_fetch_add(&ctx->parked, 1);
	struct rcc_sge s0 = tbuf_sge(&s, 0, 64), s1 = tbuf_sge(&s, 64, 64);
	int rc0 = rcc_post_send(p.a, &s0, 1, 1, 0);
	int rc1 = rcc_post_send(p.a, &s1, 1, 2, 0);
	bool deferred = atomic_load(&tep(p.a)->tx_deferred);
	int rcd = rcc_ep_disconnect(p.a);
	pthread_mutex_unlock(&ctx->eps_lock);
	CHECK_OK(rc0);
	CHECK_OK(rc1);
	CHECK_OK(rcd);
	CHECK_MSG(deferred, "the second send went out at once: nothing was tested");
	uint64_t end = now_ms() + TEST_TIMEOUT_MS;
	while (n < 2 && now_ms() < end) {
		int got = rcc_cq_poll(p.cq_b, wc + n, 2 - n);
		CHECK(got >= 0);
		n += got;
	}
	CHECK_EQ(n, 2);
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(wc[i].wr_id, 10 + (uint64_t)i);
		CHECK_WC(wc[i], RCC_WC_SUCCESS);
	}
	CHECK_EQ(check_pattern(r.p, 128, 5), -1);
	tbuf_free(&s);
	tbuf_free(&r);
	pair_close(&p);
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

/* ---------------------------------------------- the region and its hand-over */

static struct sockaddr_in loopback(int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return sin;
}

/*
 * A client that does the shared-memory handshake by hand, as a hostile peer
 * could: it holds the region's descriptor, maps it, and speaks frames into
 * the ring itself.
 */
struct raw_client {
	int fd;    /* the TCP connection, for the handshake */
	int bell;  /* the Unix connection the region came over: doorbell and liveness */
	int memfd; /* the region, as handed over */
	struct wire_shm_accept a;
	struct shm_ring ring;
};

/* HELLO offering shared memory, the server's ACCEPT, the region fetched. */
static int raw_client_fetch(struct raw_client *r, int port)
{
	uint8_t msg[WIRE_HS_HDR_LEN + WIRE_SHM_HELLO_LEN], ext[WIRE_SHM_ACCEPT_LEN];
	struct wire_hs h = { .version = WIRE_VERSION,
			     .kind = WIRE_HS_HELLO,
			     .flags = WIRE_HS_F_SHM,
			     .max_rd_atomic = 4 };
	struct sockaddr_in sin = loopback(port);
	uint64_t deadline = rcci_deadline(TEST_TIMEOUT_MS);
	struct wire_shm_id me;
	const char *why = NULL;
	int rc;

	memset(r, 0, sizeof(*r));
	r->memfd = r->bell = -1;
	r->fd = rcci_sock_connect((struct sockaddr *)&sin, sizeof(sin), deadline);
	if (r->fd < 0)
		return r->fd;
	if ((rc = rcci_shm_local_id(&me)))
		return rc;
	rcci_wire_hs_encode(&h, msg);
	rcci_wire_shm_id_encode(&me, msg + WIRE_HS_HDR_LEN);
	if ((rc = rcci_send_all(r->fd, msg, sizeof(msg), deadline)) ||
	    (rc = rcci_recv_all(r->fd, msg, WIRE_HS_HDR_LEN, deadline)))
		return rc;
	if (rcci_wire_hs_decode(msg, &h) || h.kind != WIRE_HS_ACCEPT ||
	    !(h.flags & WIRE_HS_F_SHM) || h.pdata_len)
		return -EPROTO;
	if ((rc = rcci_recv_all(r->fd, ext, sizeof(ext), deadline)))
		return rc;
	rcci_wire_shm_accept_decode(ext, &r->a);
	if (r->a.layout != SHM_LAYOUT)
		return -EPROTO;
	r->bell = rcci_shm_offer_fetch(r->a.name, r->a.token, deadline, &r->memfd, &why);
	return r->bell < 0 ? r->bell : 0;
}

static int raw_confirm(int fd, uint32_t v)
{
	uint8_t msg[WIRE_SHM_CONFIRM_LEN];

	memcpy(msg, WIRE_SHM_MAGIC, 4);
	rcc_put_le32(msg + 4, v);
	return rcci_send_all(fd, msg, sizeof(msg), rcci_deadline(TEST_TIMEOUT_MS));
}

/* Everything a peer holding the descriptor could try to change its size or
 * seals fails with EPERM. 0, or the first attempt that did not. */
static int try_resizing(int memfd, size_t len)
{
	if (ftruncate(memfd, 0) != -1 || errno != EPERM)
		return 1;
	if (ftruncate(memfd, (off_t)len / 2) != -1 || errno != EPERM)
		return 2;
	if (ftruncate(memfd, (off_t)len * 2) != -1 || errno != EPERM)
		return 3;
	if (fallocate(memfd, 0, 0, (off_t)len * 2) != -1 || errno != EPERM)
		return 4;
	if (fcntl(memfd, F_ADD_SEALS, F_SEAL_WRITE) != -1 || errno != EPERM)
		return 5;
	return 0;
}

/* One SEND frame of len bytes from the raw client into the server's ring,
 * and a doorbell (always: a spurious one costs a wake-up, nothing else). */
static bool raw_send(struct raw_client *r, uint32_t msn, const uint8_t *p, uint32_t len)
{
	struct wire_hdr h = { .type = WIRE_SEND,
			      .flags = WIRE_F_FIRST | WIRE_F_LAST,
			      .len = len,
			      .msn = msn,
			      .total = len };
	uint8_t hdr[WIRE_HDR_LEN];
	struct iovec v[2] = { { hdr, sizeof(hdr) }, { (void *)p, len } };

	rcci_wire_hdr_encode(&h, hdr);
	return rcci_shm_ring_write(&r->ring, v, 2) == (long)(sizeof(hdr) + len) &&
	       write(r->bell, "x", 1) == 1;
}

/* Exactly n bytes out of the raw client's ring, within the test's bound. */
static bool raw_read(struct raw_client *r, uint8_t *p, size_t n)
{
	uint64_t end = now_ms() + TEST_TIMEOUT_MS;

	while (n && now_ms() < end) {
		struct iovec v = { p, n };
		long got = rcci_shm_ring_readv(&r->ring, &v, 1);
		if (got < 0)
			return false;
		p += got;
		n -= (size_t)got;
	}
	return n == 0;
}

/* The next SEND frame the server put in the raw client's ring (acks and
 * heartbeats skipped): its payload length, or -1. */
static long raw_next_send(struct raw_client *r, uint8_t *p, size_t room)
{
	for (int frames = 0; frames < 100; frames++) {
		uint8_t hdr[WIRE_HDR_LEN];
		struct wire_hdr h;
		if (!raw_read(r, hdr, sizeof(hdr)) || rcci_wire_hdr_decode(hdr, &h) || h.len > room)
			return -1;
		if (!raw_read(r, p, h.len))
			return -1;
		if (h.type == WIRE_SEND)
			return (long)h.len;
	}
	return -1;
}

/*
 * A peer holding the region cannot truncate it, grow it or add a seal (a
 * touch of ours past a truncated end would raise SIGBUS): every attempt
 * fails with EPERM, before and while traffic flows, and the server goes on
 * exchanging messages with it over the region.
 */
static void region_cannot_be_resized(void)
{
	struct rcc_ctx *ctx = NULL;
	struct rcc_cq *cq = NULL;
	struct acc acc = { 0 };
	struct raw_client r;
	struct tbuf in = { 0 }, out = { 0 };
	struct rcc_wc wc;
	pthread_t th;
	uint8_t got[64];
	const char *why = NULL;

	CHECK_OK(ctx_with(RCC_SHM_REQUIRE, &ctx));
	CHECK_OK(rcc_cq_create(ctx, NULL, &cq));
	CHECK_OK(rcc_listen(ctx, "127.0.0.1:0", 0, &acc.lst));
	acc.cq = cq;
	CHECK_OK(-pthread_create(&th, NULL, acc_main, &acc));
	int rc = raw_client_fetch(&r, rcc_listener_port(acc.lst));
	size_t len = shm_region_len(r.a.cap);
	if (!rc)
		rc = try_resizing(r.memfd, len) ? -EINVAL : 0;
	if (!rc)
		rc = rcci_shm_region_map(r.memfd, r.a.cap, r.a.name[0], &r.ring, &why);
	/* the confirmation ends the server's handshake either way */
	raw_confirm(r.fd, rc ? 1 : 0);
	pthread_join(th, NULL);
	CHECK_OK(rc);
	CHECK_OK(acc.rc);
	CHECK(!strcmp(rcc_ep_path(acc.ep), "shm"));
	CHECK_EQ(fcntl(r.memfd, F_GET_SEALS) & SHM_REGION_SEALS, SHM_REGION_SEALS);

	CHECK_OK(tbuf_alloc(&in, ctx, 4096, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&out, ctx, 4096, RCC_ACCESS_LOCAL_WRITE));
	for (uint32_t i = 0; i < 4; i++) {
		struct rcc_sge rs = tbuf_sge(&in, 0, 64), ss = tbuf_sge(&out, 0, 48);
		uint8_t msg[32];
		fill_pattern(msg, sizeof(msg), 100 + i);
		CHECK_OK(rcc_post_recv(acc.ep, &rs, 1, 10 + i));
		CHECK(raw_send(&r, i, msg, sizeof(msg)));
		CHECK_OK(wait_one(cq, &wc, TEST_TIMEOUT_MS));
		CHECK_EQ(wc.wr_id, 10 + i);
		CHECK_WC(wc, RCC_WC_SUCCESS);
		CHECK_EQ(wc.byte_len, sizeof(msg));
		CHECK_EQ(check_pattern(in.p, sizeof(msg), 100 + i), -1);
		/* and the other way: the server's SEND lands in our ring */
		fill_pattern(out.p, 48, 200 + i);
		CHECK_OK(rcc_post_send(acc.ep, &ss, 1, 20 + i, 0));
		CHECK_EQ(raw_next_send(&r, got, sizeof(got)), 48);
		CHECK_EQ(check_pattern(got, 48, 200 + i), -1);
		/* the region stays what it was while it is in use */
		CHECK_EQ(try_resizing(r.memfd, len), 0);
	}
	CHECK_EQ(rcc_ep_state(acc.ep), RCC_EP_CONNECTED);
	rcc_ep_close(acc.ep);
	rcci_shm_region_unmap(&r.ring);
	close(r.memfd);
	close(r.bell);
	close(r.fd);
	tbuf_free(&in);
	tbuf_free(&out);
	rcc_listener_close(acc.lst);
	rcc_cq_destroy(cq);
	CHECK_OK(rcc_ctx_close(ctx));
}

/* A server that offers a region of its own making, sealed as asked. */
struct raw_server {
	int lfd, port;
	int seals;            /* F_SEAL_* to add */
	off_t extra;          /* bytes beyond the size the capacity implies */
	uint32_t layout_step; /* offered as SHM_LAYOUT + this */
	bool handed;          /* rcci_shm_offer_serve handed the region over */
	long confirmed;       /* the client's confirmation (-1: none) */
};

static void *raw_server_main(void *arg)
{
	struct raw_server *s = arg;
	uint64_t deadline = rcci_deadline(TEST_TIMEOUT_MS);
	uint8_t msg[WIRE_HS_HDR_LEN + WIRE_SHM_ACCEPT_LEN];
	struct wire_shm_accept a = { .cap = SHM_RING_DEFAULT,
				     .layout = SHM_LAYOUT + s->layout_step };
	struct wire_hs h = { .version = WIRE_VERSION,
			     .kind = WIRE_HS_ACCEPT,
			     .flags = WIRE_HS_F_SHM,
			     .max_rd_atomic = 4 };
	struct shm_offer o = { .lfd = -1 };
	const char *why;
	int c = -1, memfd = -1;

	s->confirmed = -1;
	if (rcci_wait_fd(s->lfd, POLLIN, deadline) ||
	    (c = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) < 0)
		goto out;
	if (rcci_recv_all(c, msg, WIRE_HS_HDR_LEN + WIRE_SHM_HELLO_LEN, deadline))
		goto out;
	memfd = memfd_create("hostile", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (memfd < 0 || ftruncate(memfd, (off_t)shm_region_len(a.cap) + s->extra) ||
	    (s->seals && fcntl(memfd, F_ADD_SEALS, s->seals)) || rcci_shm_local_id(&a.id) ||
	    rcci_shm_offer_open(&o, &why))
		goto out;
	memcpy(a.name, o.name, sizeof(a.name));
	memcpy(a.token, o.token, sizeof(a.token));
	rcci_wire_hs_encode(&h, msg);
	rcci_wire_shm_accept_encode(&a, msg + WIRE_HS_HDR_LEN);
	if (rcci_send_all(c, msg, sizeof(msg), deadline))
		goto out;
	int bell = rcci_shm_offer_serve(&o, memfd, c, deadline);
	s->handed = bell >= 0;
	if (!rcci_recv_all(c, msg, WIRE_SHM_CONFIRM_LEN, deadline) &&
	    !memcmp(msg, WIRE_SHM_MAGIC, 4))
		s->confirmed = rcc_get_le32(msg + 4);
	if (bell >= 0)
		close(bell);
out:
	rcci_shm_offer_close(&o);
	if (memfd >= 0)
		close(memfd);
	if (c >= 0)
		close(c);
	return NULL;
}

/*
 * Connect to a raw server (s: what it offers) and check where the connection
 * goes on: over "tcp" after the client said it stays on the socket, or over
 * "shm" after it said it mapped the region. what names the offer in messages.
 */
static void offer_answered(struct raw_server *s, const char *what, const char *want_path)
{
	struct sockaddr_in sin = loopback(0);
	struct rcc_ctx *ctx = NULL;
	struct rcc_cq *cq = NULL;
	struct rcc_ep *ep = NULL;
	char addr[64];
	pthread_t th;

	s->lfd = rcci_sock_listen((struct sockaddr *)&sin, sizeof(sin), 1, &s->port);
	CHECK(s->lfd >= 0);
	CHECK_OK(ctx_with(RCC_SHM_AUTO, &ctx));
	CHECK_OK(rcc_cq_create(ctx, NULL, &cq));
	CHECK_OK(-pthread_create(&th, NULL, raw_server_main, s));
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", s->port);
	struct rcc_ep_attr at = { .send_cq = cq };
	int rc = rcc_connect(ctx, addr, &at, TEST_TIMEOUT_MS, &ep);
	pthread_join(th, NULL);
	CHECK_OK(rc);
	CHECK_MSG(!strcmp(rcc_ep_path(ep), want_path), "%s: path %s", what, rcc_ep_path(ep));
	if (!strcmp(want_path, "shm"))
		CHECK_MSG(s->confirmed == 0, "%s: confirmation %ld", what, s->confirmed);
	else
		CHECK_MSG(s->confirmed > 0, "%s: confirmation %ld", what, s->confirmed);
	rcc_ep_close(ep);
	rcc_cq_destroy(cq);
	CHECK_OK(rcc_ctx_close(ctx));
	close(s->lfd);
}

/*
 * A region that could change size under our mapping is refused: the client
 * takes the descriptor, finds seals missing (or the size wrong), tells the
 * server it stays on the socket, and the connection goes on over tcp.
 */
static void unsealed_region_refused(void)
{
	static const struct {
		int seals;
		off_t extra;
	} offers[] = {
		{ 0, 0 },                               /* no seals at all */
		{ F_SEAL_SHRINK, 0 },                   /* it could still grow, or be resealed */
		{ F_SEAL_SHRINK | F_SEAL_GROW, 0 },     /* a seal could still be added */
		{ F_SEAL_GROW | F_SEAL_SEAL, 0 },       /* it could shrink */
		{ SHM_REGION_SEALS, 4096 },             /* sealed, but not the agreed size */
		{ SHM_REGION_SEALS | F_SEAL_WRITE, 0 }, /* cannot be mapped for writing */
	};

	for (size_t i = 0; i < sizeof(offers) / sizeof(offers[0]); i++) {
		struct raw_server s = { .seals = offers[i].seals, .extra = offers[i].extra };
		char what[32];

		snprintf(what, sizeof(what), "offer %zu", i);
		offer_answered(&s, what, "tcp");
		CHECK(s.handed);
	}
}

/*
 * A region laid out by another rcc build (the ACCEPT names a layout that is
 * not ours) is not even fetched: the client confirms that both stay on the
 * socket, and the connection goes on over tcp. The same offer with our
 * layout is taken: sealed and sized as agreed, the layout is what differs.
 */
static void foreign_layout_refused(void)
{
	static const uint32_t steps[] = { 0, 1, UINT32_MAX };

	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		struct raw_server s = { .seals = SHM_REGION_SEALS, .layout_step = steps[i] };
		char what[32];

		snprintf(what, sizeof(what), "layout %+d", (int)steps[i]);
		offer_answered(&s, what, steps[i] ? "tcp" : "shm");
		CHECK_MSG(s.handed == !steps[i], "%s: the region was%s fetched", what,
			  s.handed ? "" : " not");
	}
}

struct serve_arg {
	struct shm_offer *o;
	int memfd, watch_fd, rc;
};

static void *serve_main(void *arg)
{
	struct serve_arg *a = arg;
	a->rc = rcci_shm_offer_serve(a->o, a->memfd, a->watch_fd, rcci_deadline(TEST_TIMEOUT_MS));
	return NULL;
}

/*
 * The offer hands the region to the process that shows the token and runs
 * as our user, and to nobody else: a wrong token and (as root) another user
 * are turned away, and the offer waits past them for the right one.
 */
static void offer_needs_token(void)
{
	struct shm_offer o = { .lfd = -1 };
	struct shm_ring ring = { 0 }, view = { 0 };
	struct serve_arg sa = { .o = &o };
	uint8_t wrong[WIRE_SHM_TOKEN_LEN];
	const char *why = NULL;
	int quiet[2];
	pthread_t th;

	CHECK_OK(rcci_shm_offer_open(&o, &why));
	sa.memfd = rcci_shm_region_create(SHM_RING_MIN, o.name[0], &ring, &why);
	CHECK_MSG(sa.memfd >= 0, "rcci_shm_region_create: %s", why);
	/* what the offer watches for the TCP peer's word: silent here */
	CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, quiet) ? -errno : 0);
	sa.watch_fd = quiet[0];
	CHECK_OK(-pthread_create(&th, NULL, serve_main, &sa));
	memcpy(wrong, o.token, sizeof(wrong));
	wrong[5] ^= 1;
	int memfd = -1;
	int fd = rcci_shm_offer_fetch(o.name, wrong, rcci_deadline(TEST_TIMEOUT_MS), &memfd, &why);
	CHECK(fd < 0);
	if (geteuid() == 0) {
		pid_t pid = fork();
		if (pid == 0) {
			const char *w = NULL;
			if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
				_exit(2);
			int m = -1;
			_exit(rcci_shm_offer_fetch(o.name, o.token, rcci_deadline(TEST_TIMEOUT_MS),
						   &m, &w) < 0 ?
				      0 :
				      1);
		}
		int st = -1;
		CHECK(pid > 0);
		CHECK(waitpid(pid, &st, 0) == pid);
		CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "another user: status %d", st);
	}
	fd = rcci_shm_offer_fetch(o.name, o.token, rcci_deadline(TEST_TIMEOUT_MS), &memfd, &why);
	pthread_join(th, NULL);
	CHECK_MSG(fd >= 0, "fetch: %s", why);
	CHECK_MSG(sa.rc >= 0, "serve: %s", rcc_strerror(sa.rc));
	CHECK_OK(rcci_shm_region_map(memfd, SHM_RING_MIN, o.name[0], &view, &why));
	/* the connection stays, the doorbell of the two: a byte each way */
	uint8_t b = 0;
	CHECK(write(fd, "a", 1) == 1 && rcci_recv_all(sa.rc, &b, 1, rcci_deadline(1000)) == 0);
	CHECK_EQ(b, 'a');
	CHECK(write(sa.rc, "b", 1) == 1 && rcci_recv_all(fd, &b, 1, rcci_deadline(1000)) == 0);
	CHECK_EQ(b, 'b');
	/* the same memory: what one view writes, the other reads */
	((volatile uint8_t *)view.map)[SHM_HDR_SIZE + 7] = 0x5a;
	CHECK_EQ(((volatile uint8_t *)ring.map)[SHM_HDR_SIZE + 7], 0x5a);
	rcci_shm_region_unmap(&view);
	rcci_shm_region_unmap(&ring);
	close(fd);
	close(memfd);
	close(sa.rc);
	close(sa.memfd);
	close(quiet[0]);
	close(quiet[1]);
	rcci_shm_offer_close(&o);
}

static const struct test_case cases[] = {
	{ "controls_and_path", controls_and_path },
	{ "env_var", env_var },
	{ "ring_capacity", ring_capacity },
	{ "hostile_tail", hostile_tail },
	{ "hostile_head", hostile_head },
	{ "peer_killed_while_polled", peer_killed_while_polled },
	{ "wakeups_without_heartbeats", wakeups_without_heartbeats },
	{ "full_ring_producer_armed", full_ring_producer_armed },
	{ "waiter_reads_the_ring", waiter_reads_the_ring },
	{ "woken_waiter_takes_its_bell", woken_waiter_takes_its_bell },
	{ "waited_endpoint_parked", waited_endpoint_parked },
	{ "fd_sleeper_served", fd_sleeper_served },
	{ "posted_before_disconnect_sent", posted_before_disconnect_sent },
	{ "region_cannot_be_resized", region_cannot_be_resized },
	{ "unsealed_region_refused", unsealed_region_refused },
	{ "foreign_layout_refused", foreign_layout_refused },
	{ "offer_needs_token", offer_needs_token },
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
