/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Close during poll: threads poll one CQ while other threads connect
 * endpoints on it, use them, and disconnect or close them with work still
 * in flight, over and over. Every completion is checked as it is polled:
 * it is returned once, names the endpoint its work request was posted on,
 * and never names an endpoint whose close returned before the poll began
 * (rule 6). Work awaited while connected succeeds; after a disconnect every
 * outstanding request has come back (rcc_ep_disconnect's promise).
 *
 * On verbs this is the poll gate's test (src/transport/verbs/cq.c): pollers
 * read the qp_num table without a lock while endpoints attach, drain and
 * detach. Run it under TSan as well: most of what a broken gate does (a
 * poller on a freed endpoint or a table being rehashed) only a race detector
 * sees.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pair.h"

enum {
	DRIVERS = 2,
	POLLERS = 2,
	OPS = 8,   /* per batch; two batches per endpoint */
	RECVS = 4, /* never consumed: flushed by the disconnect or removed by the close */
	WRS = 2 * OPS + RECVS,
	MAX_ROUNDS = 40,
	SLOT = 4096, /* each driver's part of the local and the remote buffer */
};

/* One endpoint's life: the generation `gen` of driver d. */
struct life {
	_Atomic(struct rcc_ep *) ep; /* set before anything is posted */
	atomic_int seen[WRS];
	atomic_int ok, flushed, bad;
	atomic_ulong closed_at; /* 0, or the close ticket once rcc_ep_close() returned */
};

static struct {
	struct rcc_ctx *ctx;
	struct rcc_cq *cq;  /* every client endpoint's: the CQ under test */
	struct rcc_cq *scq; /* the servers' (nothing completes there) */
	struct rcc_listener *lst[DRIVERS];
	struct tbuf local, remote;
	struct life life[DRIVERS][MAX_ROUNDS];
	int rounds;
	atomic_ulong closes; /* close tickets handed out */
	atomic_bool stop;
	atomic_int errors;
	atomic_long polled;
	pthread_mutex_t msg_lock;
	char msg[256]; /* the first error */
} S;

static void error_at(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void error_at(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	pthread_mutex_lock(&S.msg_lock);
	if (atomic_fetch_add(&S.errors, 1) == 0)
		vsnprintf(S.msg, sizeof(S.msg), fmt, ap);
	pthread_mutex_unlock(&S.msg_lock);
	va_end(ap);
}

static uint64_t wr_id_of(int d, int gen, int idx)
{
	return (uint64_t)d << 48 | (uint64_t)gen << 16 | (uint64_t)idx;
}

static void check_wc(const struct rcc_wc *wc, unsigned long ticket)
{
	unsigned long d = (unsigned long)(wc->wr_id >> 48);
	unsigned long gen = (unsigned long)(wc->wr_id >> 16) & 0xffffffffu;
	unsigned long idx = (unsigned long)(wc->wr_id & 0xffff);

	if (d >= DRIVERS || gen >= (unsigned long)S.rounds || idx >= WRS) {
		error_at("completion with a wr_id never posted: %lu/%lu/%lu", d, gen, idx);
		return;
	}
	struct life *l = &S.life[d][gen];
	unsigned long closed = atomic_load(&l->closed_at);
	if (wc->ep != atomic_load_explicit(&l->ep, memory_order_acquire))
		error_at("driver %lu gen %lu wr %lu: completion names another endpoint", d, gen,
			 idx);
	if (closed && closed <= ticket)
		error_at("driver %lu gen %lu wr %lu: polled after its endpoint's close returned", d,
			 gen, idx);
	if (atomic_fetch_add(&l->seen[idx], 1) != 0)
		error_at("driver %lu gen %lu wr %lu: completion returned twice", d, gen, idx);
	if (wc->status == RCC_WC_SUCCESS)
		atomic_fetch_add(&l->ok, 1);
	else if (wc->status == RCC_WC_WR_FLUSH_ERR)
		atomic_fetch_add(&l->flushed, 1);
	else
		atomic_fetch_add(&l->bad, 1);
}

/* Poller 0 polls without waiting, the others wait (the CQ is in WAIT mode):
 * both the plain and the re-arming poll run beside the closes. The drivers
 * poll as well while they await their work (wait_count()). */
static void *poller(void *arg)
{
	bool waits = (intptr_t)arg != 0;
	struct rcc_wc wc[16];
	unsigned empty = 0;

	while (!atomic_load(&S.stop)) {
		unsigned long ticket = atomic_load(&S.closes);
		int n = waits ? rcc_cq_wait(S.cq, wc, 16, 20) : rcc_cq_poll(S.cq, wc, 16);
		if (n == -ETIMEDOUT || n == 0) {
			if (++empty % 64 == 0)
				sched_yield(); /* 2 cores: let the drivers run */
			continue;
		}
		if (n < 0) {
			error_at("poll failed: %s", rcc_strerror(n));
			break;
		}
		atomic_fetch_add(&S.polled, n);
		for (int i = 0; i < n; i++)
			check_wc(&wc[i], ticket);
	}
	return NULL;
}

/* Until l has at least want completions of any status (bounded). The driver
 * polls the CQ too meanwhile, as a program whose threads both poll and close
 * does: a thread's own poll must never hold up its own close. */
static bool wait_count(struct life *l, int want)
{
	uint64_t deadline = now_ms() + TEST_TIMEOUT_MS;
	struct rcc_wc wc[16];

	while (atomic_load(&l->ok) + atomic_load(&l->flushed) + atomic_load(&l->bad) < want) {
		if (now_ms() > deadline || atomic_load(&S.errors))
			return false;
		unsigned long ticket = atomic_load(&S.closes);
		int n = rcc_cq_poll(S.cq, wc, 16);
		if (n < 0) {
			error_at("poll failed: %s", rcc_strerror(n));
			return false;
		}
		atomic_fetch_add(&S.polled, n);
		for (int i = 0; i < n; i++)
			check_wc(&wc[i], ticket);
		if (n == 0)
			sched_yield();
	}
	return true;
}

/* One batch of OPS signalled requests: WRITE, READ and FADD in turn. */
static int post_batch(struct rcc_ep *ep, int d, int gen, int first)
{
	uint8_t *loc = S.local.p + (size_t)d * SLOT;
	uint64_t rem = (uint64_t)(uintptr_t)(S.remote.p + (size_t)d * SLOT);
	uint32_t rkey = rcc_mr_rkey(S.remote.mr);

	for (int i = first; i < first + OPS; i++) {
		uint64_t id = wr_id_of(d, gen, i);
		size_t off = (size_t)i * 64;
		struct rcc_sge sge = tbuf_sge(&S.local, (size_t)(loc - S.local.p) + off, 64);
		int rc;
		switch (i % 3) {
		case 0:
			rc = rcc_post_write(ep, &sge, 1, rem + off, rkey, id, RCC_SEND_SIGNALED);
			break;
		case 1:
			rc = rcc_post_read(ep, &sge, 1, rem + off, rkey, id, RCC_SEND_SIGNALED);
			break;
		default:
			sge.length = 8;
			rc = rcc_post_fadd(ep, &sge, rem + off, rkey, 1, id, RCC_SEND_SIGNALED);
			break;
		}
		if (rc)
			return rc;
	}
	return 0;
}

struct driver {
	int d;
	int rc;
	char why[160];
	/* what it does now, for the watchdog: a call that never returns (a
	 * writer waiting for a poller that never leaves) fails the case */
	_Atomic(const char *) doing;
	atomic_int gen, steps;
};

static void doing(struct driver *dr, int gen, const char *what)
{
	atomic_store(&dr->gen, gen);
	atomic_store(&dr->doing, what);
	atomic_fetch_add(&dr->steps, 1);
}

#define DRIVER_FAIL(dr, ...)                                         \
	do {                                                         \
		snprintf((dr)->why, sizeof((dr)->why), __VA_ARGS__); \
		(dr)->rc = -1;                                       \
		return NULL;                                         \
	} while (0)

static void *driver(void *arg)
{
	struct driver *dr = arg;
	int d = dr->d;

	for (int gen = 0; gen < S.rounds && !atomic_load(&S.errors); gen++) {
		struct life *l = &S.life[d][gen];
		struct rcc_ep_attr aa = { .send_cq = S.cq, .sq_depth = 2 * OPS, .rq_depth = RECVS };
		struct rcc_ep_attr ab = { .send_cq = S.scq, .sq_depth = 4, .rq_depth = 4 };
		struct rcc_ep *a, *b;
		doing(dr, gen, "connect");
		int rc = pair_connect(S.ctx, S.lst[d], &aa, &ab, &a, &b);
		if (rc)
			DRIVER_FAIL(dr, "gen %d: connect: %s", gen, rcc_strerror(rc));
		atomic_store_explicit(&l->ep, a, memory_order_release);

		for (int i = 0; i < RECVS; i++) {
			struct rcc_sge sge = tbuf_sge(&S.local, (size_t)d * SLOT + 2048 + 64 * i,
						      64);
			rc = rcc_post_recv(a, &sge, 1, wr_id_of(d, gen, 2 * OPS + i));
			if (rc)
				DRIVER_FAIL(dr, "gen %d: post_recv: %s", gen, rcc_strerror(rc));
		}
		/* a batch awaited while connected: all of it succeeds */
		doing(dr, gen, "the first batch");
		rc = post_batch(a, d, gen, 0);
		if (rc)
			DRIVER_FAIL(dr, "gen %d: post: %s", gen, rcc_strerror(rc));
		if (!wait_count(l, OPS))
			DRIVER_FAIL(dr, "gen %d: %d of %d completions within %d ms", gen,
				    atomic_load(&l->ok), OPS, TEST_TIMEOUT_MS);
		if (atomic_load(&l->ok) != OPS)
			DRIVER_FAIL(dr, "gen %d: %d of %d succeeded (%d flushed, %d failed)", gen,
				    atomic_load(&l->ok), OPS, atomic_load(&l->flushed),
				    atomic_load(&l->bad));
		/* a batch still in flight when the endpoint leaves */
		doing(dr, gen, "the second batch");
		rc = post_batch(a, d, gen, OPS);
		if (rc)
			DRIVER_FAIL(dr, "gen %d: post: %s", gen, rcc_strerror(rc));
		if (gen % 2 == 0) {
			/* disconnect: every request comes back, the receives flushed */
			doing(dr, gen, "disconnect");
			rc = rcc_ep_disconnect(a);
			if (rc)
				DRIVER_FAIL(dr, "gen %d: disconnect: %s", gen, rcc_strerror(rc));
			if (!wait_count(l, WRS))
				DRIVER_FAIL(dr, "gen %d: %d of %d requests back after disconnect",
					    gen,
					    atomic_load(&l->ok) + atomic_load(&l->flushed) +
						    atomic_load(&l->bad),
					    WRS);
			if (atomic_load(&l->bad) || atomic_load(&l->flushed) < RECVS)
				DRIVER_FAIL(dr, "gen %d: %d failed, %d flushed after disconnect",
					    gen, atomic_load(&l->bad), atomic_load(&l->flushed));
		}
		/* else: closed with the batch in flight, whatever was polled of it */
		doing(dr, gen, "close");
		rc = rcc_ep_close(a);
		atomic_store(&l->closed_at, atomic_fetch_add(&S.closes, 1) + 1);
		if (rc)
			DRIVER_FAIL(dr, "gen %d: close: %s", gen, rcc_strerror(rc));
		doing(dr, gen, "close (server)");
		rc = rcc_ep_close(b);
		if (rc)
			DRIVER_FAIL(dr, "gen %d: close (server): %s", gen, rcc_strerror(rc));
	}
	return NULL;
}

/* Join the drivers; a driver that makes no step for 3 * TEST_TIMEOUT_MS is
 * stuck in a call (every wait of its own is bounded): fail, and exit, since
 * nothing can be closed under a call that never returns. */
static void join_drivers(pthread_t *dt, struct driver *dr)
{
	for (int d = 0; d < DRIVERS; d++) {
		int steps = atomic_load(&dr[d].steps);
		uint64_t since = now_ms();
		for (;;) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 1;
			if (pthread_timedjoin_np(dt[d], NULL, &ts) == 0)
				break;
			if (atomic_load(&dr[d].steps) != steps) {
				steps = atomic_load(&dr[d].steps);
				since = now_ms();
			} else if (now_ms() - since > 3 * TEST_TIMEOUT_MS) {
				printf("FAIL close_during_poll: driver %d stuck in %s of gen %d for "
				       "%d ms\n",
				       d, atomic_load(&dr[d].doing), atomic_load(&dr[d].gen),
				       3 * TEST_TIMEOUT_MS);
				fflush(stdout);
				_exit(1);
			}
		}
	}
}

static void close_during_poll(void)
{
	pthread_t pt[POLLERS], dt[DRIVERS];
	struct driver dr[DRIVERS];
	char addr[128];

	memset(&S, 0, sizeof(S));
	pthread_mutex_init(&S.msg_lock, NULL);
	/* not fewer with RCC_TEST_QUICK: the TSan boot needs every round to
	 * see a broken gate (12 rounds were too few to catch one in the VM) */
	S.rounds = MAX_ROUNDS;
	CHECK_OK(test_ctx_open(&S.ctx));
	CHECK_OK(rcc_cq_create(S.ctx, &(struct rcc_cq_attr){ .depth = 256, .mode = RCC_CQ_WAIT },
			       &S.cq));
	CHECK_OK(rcc_cq_create(S.ctx, &(struct rcc_cq_attr){ .depth = 64 }, &S.scq));
	snprintf(addr, sizeof(addr), "%s:0", test_addr());
	for (int d = 0; d < DRIVERS; d++) /* one each: a driver accepts its own */
		CHECK_OK(rcc_listen(S.ctx, addr, 4, &S.lst[d]));
	CHECK_OK(tbuf_alloc(&S.local, S.ctx, DRIVERS * SLOT, ALL_ACCESS));
	CHECK_OK(tbuf_alloc(&S.remote, S.ctx, DRIVERS * SLOT, ALL_ACCESS));

	for (int i = 0; i < POLLERS; i++)
		CHECK(pthread_create(&pt[i], NULL, poller, (void *)(intptr_t)i) == 0);
	for (int d = 0; d < DRIVERS; d++) {
		dr[d] = (struct driver){ .d = d, .doing = "start" };
		CHECK(pthread_create(&dt[d], NULL, driver, &dr[d]) == 0);
	}
	join_drivers(dt, dr);
	atomic_store(&S.stop, true);
	for (int i = 0; i < POLLERS; i++)
		pthread_join(pt[i], NULL);

	for (int d = 0; d < DRIVERS; d++)
		CHECK_MSG(dr[d].rc == 0, "driver %d: %s", d, dr[d].why);
	CHECK_MSG(atomic_load(&S.errors) == 0, "%d errors; the first: %s", atomic_load(&S.errors),
		  S.msg);
	printf("%d rounds x %d drivers, %ld completions polled by %d threads\n", S.rounds, DRIVERS,
	       (long)atomic_load(&S.polled), POLLERS + DRIVERS);

	/* nothing of a closed endpoint is left behind on the CQ */
	struct rcc_wc wc[4];
	CHECK_EQ(rcc_cq_poll(S.cq, wc, 4), 0);
	tbuf_free(&S.local);
	tbuf_free(&S.remote);
	for (int d = 0; d < DRIVERS; d++)
		rcc_listener_close(S.lst[d]);
	TEARDOWN(rcc_cq_destroy(S.cq));
	TEARDOWN(rcc_cq_destroy(S.scq));
	TEARDOWN(rcc_ctx_close(S.ctx));
	pthread_mutex_destroy(&S.msg_lock);
}

TEST_MAIN(TEST(close_during_poll))
