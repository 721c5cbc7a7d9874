/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Single-copy transfers on the shared-memory path (shm_cma.h, docs/shm.md):
 * which requests take it and when it is switched off; a peer that keeps a
 * slot busy cannot hold rcc_mr_dereg() past the peer timeout; an endpoint
 * that leaves service leaves no copy into its buffers behind; and the
 * copier's checks of everything the peer controls (slot, generation,
 * descriptor, the peer's pid), driven directly over a region in memory.
 * Both ends run in this process, which may always read and write itself:
 * the probe succeeds here once RCC_SHM_CMA=1 (ctest sets it).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pair.h"
#include "rcc/util.h"
#include "transport/tcp/shm_region.h"
#include "transport/tcp/tcp.h"

enum {
	BIG = 256 << 10,
	SMALL = 4 << 10,
	CANARY = 0xA7,
};

static bool cma_switched_on(void)
{
	const char *e = getenv("RCC_SHM_CMA");
	return e && strcmp(e, "1") == 0;
}

/* Why this process cannot use cross-memory attach on itself (NULL: it can):
 * a seccomp filter, or a tool that does not know the calls (valgrind:
 * pidfd_open is ENOSYS there). Then the library keeps the ring, rightly, and
 * the cases about single copy have no subject. */
static const char *cma_unavailable(void)
{
	static char why[96];
	uint64_t a = 1, b = 0;
	struct iovec l = { &b, sizeof(b) }, r = { &a, sizeof(a) };
	int fd = (int)syscall(SYS_pidfd_open, getpid(), 0);

	if (fd < 0) {
		snprintf(why, sizeof(why), "pidfd_open: %s", strerror(errno));
		return why;
	}
	close(fd);
	if (process_vm_readv(getpid(), &l, 1, &r, 1, 0) != (ssize_t)sizeof(b) || b != 1) {
		snprintf(why, sizeof(why), "process_vm_readv: %s", strerror(errno));
		return why;
	}
	return NULL;
}

/* The cases that drive the copier need the calls; those whose subject is
 * single copy between a pair also need it switched on. */
#define SKIP_UNLESS_CMA_CALLS()                                       \
	do {                                                          \
		const char *why_ = cma_unavailable();                 \
		if (why_)                                             \
			SKIP_CASE("cross-memory attach", "%s", why_); \
	} while (0)
#define SKIP_UNLESS_SINGLE_COPY()                                         \
	do {                                                              \
		if (!cma_switched_on())                                   \
			SKIP_CASE("single copy", "RCC_SHM_CMA is not 1"); \
		SKIP_UNLESS_CMA_CALLS();                                  \
	} while (0)

/* Large WRITE and READ go single-copy (unless switched off), small ones over
 * the ring; either way every byte arrives. */
static void large_requests_single_copy(void)
{
	struct pair_opts o = { .split = true };
	struct tbuf src = { 0 }, dst = { 0 }, back = { 0 };
	struct rcc_wc wc;
	struct pair p;

	CHECK_OK(pair_open(&p, &o));
	CHECK_OK(tbuf_alloc(&src, p.ctx, BIG, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&back, p.ctx, BIG, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&dst, p.ctx_b, BIG, ALL_ACCESS));
	struct tcp_ep *a = tep(p.a), *b = tep(p.b);
	bool on = cma_switched_on() && !cma_unavailable(); /* else the ring, rightly */
	CHECK_EQ(shm_cma_peer_pulls(&a->shm.cma), on);
	struct rcc_remote_mr rm = rcc_mr_remote(dst.mr);

	fill_pattern(src.p, SMALL, 3);
	struct rcc_sge s = tbuf_sge(&src, 0, SMALL);
	CHECK_OK(rcc_post_write(p.a, &s, 1, rm.addr, rm.rkey, 1, RCC_SEND_SIGNALED));
	EXPECT_STATUS(p.cq_a, 1, RCC_WC_SUCCESS);
	CHECK_EQ(check_pattern(dst.p, SMALL, 3), -1);
	CHECK_EQ(atomic_load(&b->shm.cma.copies), 0); /* below SHM_CMA_MIN: the ring */

	fill_pattern(src.p, BIG, 5);
	s = tbuf_sge(&src, 0, BIG);
	CHECK_OK(rcc_post_write(p.a, &s, 1, rm.addr, rm.rkey, 2, RCC_SEND_SIGNALED));
	EXPECT_STATUS(p.cq_a, 2, RCC_WC_SUCCESS);
	CHECK_EQ(check_pattern(dst.p, BIG, 5), -1);
	struct rcc_sge bs = tbuf_sge(&back, 0, BIG);
	CHECK_OK(rcc_post_read(p.a, &bs, 1, rm.addr, rm.rkey, 3, RCC_SEND_SIGNALED));
	EXPECT_STATUS(p.cq_a, 3, RCC_WC_SUCCESS);
	CHECK_EQ(check_pattern(back.p, BIG, 5), -1);
	/* a READ into a scattered sink: one descriptor of several pieces */
	memset(back.p, 0, BIG);
	struct rcc_sge two[2] = { tbuf_sge(&back, 0, BIG / 2 + 8),
				  tbuf_sge(&back, BIG / 2 + 8, BIG / 2 - 8) };
	CHECK_OK(rcc_post_read(p.a, two, 2, rm.addr, rm.rkey, 4, RCC_SEND_SIGNALED));
	EXPECT_STATUS(p.cq_a, 4, RCC_WC_SUCCESS);
	CHECK_EQ(check_pattern(back.p, BIG, 5), -1);
	CHECK_EQ(atomic_load(&b->shm.cma.copies), on ? 3 : 0);
	/* more than there are slots, one after another: a slot is free again
	 * once its request completed */
	for (int i = 0; i < 2 * SHM_CMA_SLOTS; i++) {
		CHECK_OK(rcc_post_write(p.a, &s, 1, rm.addr, rm.rkey, 10, RCC_SEND_SIGNALED));
		EXPECT_STATUS(p.cq_a, 10, RCC_WC_SUCCESS);
	}
	CHECK_EQ(atomic_load(&b->shm.cma.copies), on ? 3 + 2 * SHM_CMA_SLOTS : 0);
	(void)wc;
	tbuf_free(&src);
	tbuf_free(&back);
	tbuf_free(&dst);
	pair_close(&p);
}

/* With b's rx_lock held (nobody reads for b), wait until a has put
 * everything posted on the wire: a's slots are claimed, and nobody copies for
 * them until b is let go. */
static bool all_sent(struct tcp_ep *a, struct rcc_cq *cq)
{
	uint64_t end = now_ms() + TEST_TIMEOUT_MS;
	bool sent = false;
	while (!sent && now_ms() < end) {
		rcci_lock_acquire(&a->tx_lock);
		sent = a->sq_tx == a->sq_tail;
		rcci_lock_release(&a->tx_lock);
		if (sent)
			break;
		/* posts may wait for the next poll to go out together; nothing
		 * completes while b reads nothing */
		struct rcc_wc w;
		if (rcc_cq_poll(cq, &w, 1) != 0)
			return false;
	}
	return sent;
}

/*
 * A target with many single-copy WRITEs waiting takes them a few MiB per
 * pass, acking as it goes: each counts against the pass's budget as the
 * bytes it moved, not as the few bytes of its frame (else the initiator
 * would sit idle for the whole queue, then post its next window while the
 * target sits idle). And a pass that stops at its budget comes back for what
 * it left: the frames it read ahead sit in its staging buffer, where no
 * doorbell or readiness check shows them (heartbeats an hour apart here, so
 * nothing else would).
 */
static void many_single_copies(bool one_pass_here)
{
	enum {
		N = SHM_CMA_SLOTS, /* all of them single-copy */
		LEN = 1 << 20
	};
	struct pair_opts o = { .split = true,
			       .cq_depth = 2 * N,
			       .attr_a = { .sq_depth = 2 * N, .peer_timeout_ms = 3600000 },
			       .attr_b = { .sq_depth = 2 * N, .peer_timeout_ms = 3600000 } };
	struct tbuf src = { 0 }, dst = { 0 };
	struct pair p;
	int rc = 0;

	SKIP_UNLESS_SINGLE_COPY();
	CHECK_OK(pair_open(&p, &o));
	CHECK_OK(tbuf_alloc(&src, p.ctx, LEN, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&dst, p.ctx_b, LEN, ALL_ACCESS));
	fill_pattern(src.p, LEN, 8);
	struct tcp_ep *a = tep(p.a), *b = tep(p.b);
	struct rcc_remote_mr rm = rcc_mr_remote(dst.mr);
	struct rcc_sge sg = tbuf_sge(&src, 0, LEN);

	rcci_lock_acquire(&b->rx_lock);
	for (int i = 0; i < N && !rc; i++)
		rc = rcc_post_write(p.a, &sg, 1, rm.addr, rm.rkey, (uint64_t)i, RCC_SEND_SIGNALED);
	bool sent = !rc && all_sent(a, p.cq_a);
	/* one pass of b's receive side, as its progress thread makes them */
	long got = sent && one_pass_here ? rcci_rx_process(b, 2u << 20) : 0;
	uint64_t copied = atomic_load(&b->shm.cma.copies);
	rcci_lock_release(&b->rx_lock);
	CHECK_OK(rc);
	CHECK_MSG(sent, "the WRITEs never went out");
	if (one_pass_here) {
		CHECK_MSG(got >= (2 << 20), "the pass moved %ld bytes", got);
		CHECK_MSG(copied >= 1 && copied < N,
			  "one pass of a 2 MiB budget copied %" PRIu64 " MiB", copied);
	}
	struct rcc_wc wc[N];
	CHECK_EQ(wait_n(p.cq_a, wc, N, TEST_TIMEOUT_MS), N);
	for (int i = 0; i < N; i++)
		CHECK_WC(wc[i], RCC_WC_SUCCESS);
	CHECK_EQ(check_pattern(dst.p, LEN, 8), -1);
	tbuf_free(&src);
	tbuf_free(&dst);
	pair_close(&p);
}

static void passes_bounded_by_bytes_copied(void) { many_single_copies(true); }
/* b's progress thread alone: it must come back after each pass */
static void budget_stop_resumed(void) { many_single_copies(false); }

/* Without RCC_SHM_CMA=1 (unset: the default; or 0): nobody copies for
 * anybody, the ring does. */
static void not_switched_on(const char *value)
{
	struct tbuf src = { 0 }, dst = { 0 };
	char *saved = getenv("RCC_SHM_CMA") ? strdup(getenv("RCC_SHM_CMA")) : NULL;
	struct pair_opts o = { .split = true };
	struct pair p;

	if (value)
		setenv("RCC_SHM_CMA", value, 1);
	else
		unsetenv("RCC_SHM_CMA");
	int rc = pair_open(&p, &o);
	if (saved)
		setenv("RCC_SHM_CMA", saved, 1);
	else
		unsetenv("RCC_SHM_CMA");
	free(saved);
	CHECK_OK(rc);
	struct tcp_ep *a = tep(p.a), *b = tep(p.b);
	CHECK(!shm_cma_peer_pulls(&a->shm.cma) && !shm_cma_peer_pulls(&b->shm.cma));
	CHECK_OK(tbuf_alloc(&src, p.ctx, BIG, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&dst, p.ctx_b, BIG, ALL_ACCESS));
	fill_pattern(src.p, BIG, 4);
	struct rcc_remote_mr rm = rcc_mr_remote(dst.mr);
	struct rcc_sge sg = tbuf_sge(&src, 0, BIG);
	CHECK_OK(rcc_post_write(p.a, &sg, 1, rm.addr, rm.rkey, 1, RCC_SEND_SIGNALED));
	EXPECT_STATUS(p.cq_a, 1, RCC_WC_SUCCESS);
	CHECK_EQ(check_pattern(dst.p, BIG, 4), -1);
	CHECK_EQ(atomic_load(&b->shm.cma.copies), 0);
	tbuf_free(&src);
	tbuf_free(&dst);
	pair_close(&p);
}
static void off_by_default(void) { not_switched_on(NULL); }
static void switched_off(void) { not_switched_on("0"); }

/*
 * A copier that keeps its slot busy (a peer frozen inside its copy, or lying)
 * holds rcc_mr_dereg() of the region no longer than the peer timeout; then the
 * connection fails. Without the wait, the deregistration would return while
 * the peer may still copy.
 */
static void busy_copier_bounded(void)
{
	enum {
		TMO = 400
	};
	struct pair_opts o = { .split = true,
			       .attr_a = { .peer_timeout_ms = TMO },
			       .attr_b = { .peer_timeout_ms = 3600000 } };
	struct tbuf src = { 0 }, dst = { 0 };
	struct pair p;

	SKIP_UNLESS_SINGLE_COPY();
	CHECK_OK(pair_open(&p, &o));
	CHECK_OK(tbuf_alloc(&src, p.ctx, BIG, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&dst, p.ctx_b, BIG, ALL_ACCESS));
	struct tcp_ep *a = tep(p.a);
	struct rcc_remote_mr rm = rcc_mr_remote(dst.mr);
	struct rcc_sge s = tbuf_sge(&src, 0, BIG);
	struct rcci_lock *held = &tep(p.b)->rx_lock; /* b reads nothing */

	rcci_lock_acquire(held);
	int rc = rcc_post_write(p.a, &s, 1, rm.addr, rm.rkey, 1, RCC_SEND_SIGNALED);
	bool sent = !rc && all_sent(a, p.cq_a);
	uint32_t used = a->shm.cma.used;
	/* the hostile copier: every slot of a busy */
	for (int i = 0; i < SHM_CMA_SLOTS; i++)
		atomic_store(&a->shm.cma.mine->slot[i].busy, 1);
	uint64_t t0 = now_ms();
	int drc = rcc_mr_dereg(src.mr);
	uint64_t took = now_ms() - t0;
	src.mr = NULL;
	for (int i = 0; i < SHM_CMA_SLOTS; i++)
		atomic_store(&a->shm.cma.mine->slot[i].busy, 0);
	rcci_lock_release(held);
	CHECK_OK(rc);
	CHECK_MSG(sent, "the WRITE never went out");
	CHECK_MSG(used != 0, "the WRITE took no single-copy slot");
	CHECK_OK(drc);
	CHECK_MSG(took + 50 >= TMO, "rcc_mr_dereg() returned after %" PRIu64 " ms, a copier busy",
		  took);
	CHECK_MSG(took < 10 * TMO, "rcc_mr_dereg() took %" PRIu64 " ms", took);
	/* the connection fails: the WRITE does not succeed */
	struct rcc_wc wc;
	CHECK_OK(wait_one(p.cq_a, &wc, TEST_TIMEOUT_MS));
	CHECK_MSG(wc.status != RCC_WC_SUCCESS, "the WRITE succeeded from a deregistered source");
	CHECK_MSG(rcc_ep_state(p.a) != RCC_EP_CONNECTED, "the endpoint stayed up");
	tbuf_free(&src);
	tbuf_free(&dst);
	pair_close(&p);
}

/* A copier inside a's slots (as the peer's thread would be, mid-copy) that
 * leaves them after a while; cleared says it has. */
struct slow_copier {
	struct shm_cma *c;
	atomic_bool cleared;
};

static void *slow_copier_main(void *arg)
{
	struct slow_copier *sc = arg;
	/* the copy's duration, not a synchronisation: the endpoint must wait
	 * out whatever it takes */
	usleep(300 * 1000);
	atomic_store(&sc->cleared, true);
	for (int i = 0; i < SHM_CMA_SLOTS; i++)
		atomic_store(&sc->c->mine->slot[i].busy, 0);
	return NULL;
}

/*
 * Single-copy READs on the wire when their endpoint leaves service, the
 * peer's copier inside their slots: their flush waits until it is out. Then
 * the application takes its buffers back (canaries), and the peer, let go
 * only then, must not push a byte into them.
 */
static void flushed_reads_not_written(void)
{
	enum {
		N = 4
	};
	struct pair_opts o = { .split = true };
	struct tbuf sink = { 0 }, dst = { 0 };
	struct pair p;

	SKIP_UNLESS_SINGLE_COPY();
	CHECK_OK(pair_open(&p, &o));
	CHECK_OK(tbuf_alloc(&sink, p.ctx, (size_t)N * BIG, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&dst, p.ctx_b, BIG, ALL_ACCESS));
	fill_pattern(dst.p, BIG, 9);
	struct tcp_ep *a = tep(p.a), *b = tep(p.b);
	struct rcc_remote_mr rm = rcc_mr_remote(dst.mr);
	struct rcci_lock *held = &tep(p.b)->rx_lock; /* b reads nothing */
	int rc = 0;

	rcci_lock_acquire(held);
	for (int i = 0; i < N && !rc; i++) {
		struct rcc_sge s = tbuf_sge(&sink, (size_t)i * BIG, BIG);
		rc = rcc_post_read(p.a, &s, 1, rm.addr, rm.rkey, (uint64_t)i, RCC_SEND_SIGNALED);
	}
	bool sent = !rc && all_sent(a, p.cq_a);
	uint32_t used = a->shm.cma.used;
	struct slow_copier sc = { .c = &a->shm.cma };
	pthread_t th;
	for (int i = 0; i < SHM_CMA_SLOTS; i++)
		atomic_store(&a->shm.cma.mine->slot[i].busy, 1);
	CHECK_OK(-pthread_create(&th, NULL, slow_copier_main, &sc));
	int drc = rcc_ep_disconnect(p.a);
	struct rcc_wc wc[N];
	int got = rc ? 0 : wait_n(p.cq_a, wc, N, TEST_TIMEOUT_MS);
	bool waited = atomic_load(&sc.cleared);
	pthread_join(th, NULL);
	/* the application has its buffers back: they are its own again */
	memset(sink.p, CANARY, (size_t)N * BIG);
	rcci_lock_release(held);
	CHECK_OK(rc);
	CHECK_MSG(sent, "the READs never went out");
	CHECK_MSG(used != 0, "the READs took no single-copy slot");
	CHECK_OK(drc);
	CHECK_EQ(got, N);
	CHECK_MSG(waited, "the READs were flushed while the peer's copier was inside their slots");
	for (int i = 0; i < got; i++)
		CHECK_WC(wc[i], RCC_WC_WR_FLUSH_ERR);
	/* b reads the requests, then the end of the stream */
	uint64_t end = now_ms() + TEST_TIMEOUT_MS;
	while (rcc_ep_state(p.b) == RCC_EP_CONNECTED && now_ms() < end) {
		struct rcc_wc w;
		rcc_cq_poll(p.cq_b, &w, 1);
	}
	CHECK_MSG(rcc_ep_state(p.b) != RCC_EP_CONNECTED, "the peer never saw the end");
	for (size_t i = 0; i < (size_t)N * BIG; i++)
		if (sink.p[i] != CANARY)
			CHECK_MSG(false, "byte %zu of a flushed READ's sink written afterwards", i);
	(void)b;
	tbuf_free(&sink);
	tbuf_free(&dst);
	pair_close(&p);
}

/* ---- the copier's checks, over a region of our own (no endpoint) ---- */

struct two_sides {
	uint8_t *map;
	struct shm_cma a, b; /* a: the initiator (accepter), b: the copier */
};

static int sides_open(struct two_sides *t)
{
	t->map = aligned_alloc(4096, SHM_HDR_SIZE);
	if (!t->map)
		return -ENOMEM;
	memset(t->map, 0, SHM_HDR_SIZE);
	rcci_shm_cma_init(&t->a, t->map, true);
	rcci_shm_cma_init(&t->b, t->map, false);
	t->b.pull = true;
	t->b.pid = getpid();
	t->b.pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
	t->a.wait_ns = 200000000ull;
	return t->b.pidfd < 0 ? -errno : 0;
}

static void sides_close(struct two_sides *t)
{
	rcci_shm_cma_close(&t->b);
	free(t->map);
}

static uint32_t desc_of(struct two_sides *t, int slot, void *p, size_t len, uint8_t *d)
{
	struct iovec v = { p, len };
	return rcci_shm_cma_desc(&t->a, slot, &v, 1, d);
}

/* Every field of a descriptor and of the slot table is the peer's: each
 * lie is refused, and the copier never stays busy. */
static void copier_checks_peer_input(void)
{
	struct two_sides t;
	uint8_t src[512], dst[512], d[SHM_CMA_DESC_MAX];
	uint32_t key = 7;

	SKIP_UNLESS_CMA_CALLS();
	CHECK_OK(sides_open(&t));
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 13 + 1);
	int s = rcci_shm_cma_claim(&t.a, &key, 1);
	CHECK(s >= 0);
	uint32_t n = desc_of(&t, s, src, sizeof(src), d);
	CHECK_OK(rcci_shm_cma_copy(&t.b, d, n, dst, sizeof(dst), false));
	CHECK(!memcmp(src, dst, sizeof(dst)));
	/* the length the request announces is not what the descriptor covers */
	CHECK_EQ(rcci_shm_cma_copy(&t.b, d, n, dst, sizeof(dst) - 1, false), -EPROTO);
	CHECK_EQ(rcci_shm_cma_copy(&t.b, d, n - 1, dst, sizeof(dst), false), -EPROTO);
	uint8_t half[SHM_CMA_DESC_MAX];
	uint32_t hn = desc_of(&t, s, src, sizeof(src) / 2, half); /* covers less than asked */
	CHECK_EQ(rcci_shm_cma_copy(&t.b, half, hn, dst, sizeof(dst), false), -EPROTO);
	uint8_t bad[SHM_CMA_DESC_MAX];
	memcpy(bad, d, n);
	rcc_put_le32(bad, SHM_CMA_SLOTS); /* no such slot */
	CHECK_EQ(rcci_shm_cma_copy(&t.b, bad, n, dst, sizeof(dst), false), -EPROTO);
	memcpy(bad, d, n);
	rcc_put_le32(bad + 8, SHM_CMA_MAX_IOV + 1);
	CHECK_EQ(rcci_shm_cma_copy(&t.b, bad, n, dst, sizeof(dst), false), -EPROTO);
	memcpy(bad, d, n);
	rcc_put_le32(bad + 12, 1);
	CHECK_EQ(rcci_shm_cma_copy(&t.b, bad, n, dst, sizeof(dst), false), -EPROTO);
	memcpy(bad, d, n);
	rcc_put_le64(bad + SHM_CMA_DESC_HDR + 8, ~0ull); /* a length that wraps */
	CHECK_EQ(rcci_shm_cma_copy(&t.b, bad, n, dst, sizeof(dst), false), -EPROTO);
	memcpy(bad, d, n);
	rcc_put_le32(bad + 4, t.a.gen[s] + 1); /* another generation of the slot */
	CHECK_EQ(rcci_shm_cma_copy(&t.b, bad, n, dst, sizeof(dst), false), -EACCES);
	memcpy(bad, d, n);
	rcc_put_le64(bad + SHM_CMA_DESC_HDR, 8); /* an address nobody mapped */
	CHECK_EQ(rcci_shm_cma_copy(&t.b, bad, n, dst, sizeof(dst), false), -EFAULT);
	/* deregistered: the slot killed (no copier inside, so no wait) */
	CHECK(rcci_shm_cma_kill(&t.a, rcci_shm_cma_slots_of(&t.a, key)));
	CHECK_EQ(rcci_shm_cma_copy(&t.b, d, n, dst, sizeof(dst), false), -EACCES);
	CHECK_EQ(rcci_shm_cma_slots_of(&t.a, key + 1), 0);
	/* released and claimed again: the old descriptor names a dead generation */
	rcci_shm_cma_release(&t.a, s);
	int s2 = rcci_shm_cma_claim(&t.a, &key, 1);
	CHECK_EQ(s2, s);
	CHECK_EQ(rcci_shm_cma_copy(&t.b, d, n, dst, sizeof(dst), false), -EACCES);
	for (int i = 0; i < SHM_CMA_SLOTS; i++)
		CHECK_EQ(atomic_load(&t.a.mine->slot[i].busy), 0);
	/* a copier that never clears busy: the wait ends, and says so */
	atomic_store(&t.a.mine->slot[s2].busy, 1);
	uint64_t t0 = now_ms();
	CHECK(!rcci_shm_cma_kill(&t.a, 1u << s2));
	CHECK(now_ms() - t0 < 5000);
	/* scribbled slot words never let a copy through without its generation */
	atomic_store(&t.a.mine->slot[s2].busy, 0);
	atomic_store(&t.a.mine->slot[s2].ctl, ~0ull);
	n = desc_of(&t, s2, src, sizeof(src), d);
	CHECK_EQ(rcci_shm_cma_copy(&t.b, d, n, dst, sizeof(dst), false), -EACCES);
	/* no probe, no copy: a peer that asks all the same is refused */
	t.b.pull = false;
	CHECK_EQ(rcci_shm_cma_copy(&t.b, d, n, dst, sizeof(dst), false), -EPROTO);
	t.b.pull = true;
	sides_close(&t);
}

/* The pid behind the pidfd exited: its pid may name another process by now,
 * so nothing is copied from or to it. */
static void copier_checks_peer_alive(void)
{
	struct two_sides t;
	uint8_t buf[64] = { 0 }, d[SHM_CMA_DESC_MAX];
	uint32_t key = 9;
	int st;

	SKIP_UNLESS_CMA_CALLS();
	CHECK_OK(sides_open(&t));
	pid_t child = fork();
	if (child == 0)
		_exit(0);
	CHECK(child > 0);
	int fd = (int)syscall(SYS_pidfd_open, child, 0);
	CHECK(fd >= 0);
	CHECK_EQ(waitpid(child, &st, 0), child);
	close(t.b.pidfd);
	t.b.pidfd = fd;
	t.b.pid = child;
	int s = rcci_shm_cma_claim(&t.a, &key, 1);
	uint32_t n = desc_of(&t, s, buf, sizeof(buf), d);
	CHECK_EQ(rcci_shm_cma_copy(&t.b, d, n, buf, sizeof(buf), false), -ESRCH);
	CHECK_EQ(rcci_shm_cma_copy(&t.b, d, n, buf, sizeof(buf), true), -ESRCH);
	sides_close(&t);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		TEST(large_requests_single_copy),
		TEST(off_by_default),
		TEST(switched_off),
		TEST(passes_bounded_by_bytes_copied),
		TEST(budget_stop_resumed),
		TEST(busy_copier_bounded),
		TEST(flushed_reads_not_written),
		TEST(copier_checks_peer_input),
		TEST(copier_checks_peer_alive),
	};
	if (test_on_verbs() || test_shm() != RCC_SHM_REQUIRE) {
		printf("test_shm_cma runs with RCC_TEST_TRANSPORT=shm only\n");
		return 77;
	}
	return test_main(argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}
