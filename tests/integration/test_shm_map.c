/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Mapped transfers on the shared-memory path (shm_map.h, docs/shm.md): a
 * WRITE or READ of 1 KiB and more to a region on rcc_mem_alloc() memory is
 * one memcpy by the initiator; smaller ones, other memory and requests that
 * would overtake an unfinished one take the ring; the initiator's own
 * bounds and access checks; no byte lands after rcc_mr_dereg() returned
 * while the peer writes in a loop; a peer that keeps its busy flag set
 * cannot hold a deregistration past the timeout; a target that lies in its
 * table (bad descriptor number, bad length, a file that is no memfd, a
 * memfd without seals) only sends its peer's requests over the ring;
 * rcc_mem_free() and -EBUSY; an endpoint that left service takes no
 * copy any more, and one whose peer stopped inside a copy (or that meets
 * a deregistration waiting for such a peer) holds its failure, not a
 * thread; and the ring when the kernel refuses
 * pidfd_getfd (a seccomp filter). Both ends run in this process, which may
 * always take its own descriptors.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pair.h"
#include "transport/tcp/tcp.h"

#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

enum {
	BIG = 256 << 10,
	SMALL = 512, /* below the mapped path's threshold */
};

static uint64_t copies(struct rcc_ep *ep) { return atomic_load(&tep(ep)->shm.mapped.copies); }

/* Why this process cannot take its own descriptors (NULL: it can). */
static const char *getfd_unavailable(void)
{
	static char why[96];
	int pfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
	int fd = pfd < 0 ? -1 : (int)syscall(SYS_pidfd_getfd, pfd, 0, 0);

	if (fd < 0)
		snprintf(why, sizeof(why), "pidfd_open/pidfd_getfd: %s", strerror(errno));
	if (fd >= 0)
		close(fd);
	if (pfd >= 0)
		close(pfd);
	return fd < 0 ? why : NULL;
}

#define SKIP_UNLESS_GETFD()                                                  \
	do {                                                                 \
		const char *why_ = getfd_unavailable();                      \
		if (why_)                                                    \
			SKIP_CASE("pidfd_getfd", "%s", why_);                \
		const char *e_ = getenv("RCC_SHM_MAP");                      \
		if (e_ && strcmp(e_, "1"))                                   \
			SKIP_CASE("mapped transfers", "RCC_SHM_MAP=%s", e_); \
	} while (0)

/* A region on shared memory of ctx: len bytes registered at off of an
 * allocation of alloc bytes. */
struct mbuf {
	struct rcc_ctx *ctx;
	uint8_t *p; /* the allocation */
	size_t alloc;
	struct rcc_mr *mr;
};

static int mbuf_open(struct mbuf *m, struct rcc_ctx *ctx, size_t alloc, size_t off, size_t len,
		     unsigned access)
{
	void *p;
	int rc = rcc_mem_alloc(ctx, alloc, &p);
	if (rc)
		return rc;
	m->ctx = ctx;
	m->p = p;
	m->alloc = alloc;
	rc = rcc_mr_reg(ctx, m->p + off, len, access, &m->mr);
	if (rc)
		rcc_mem_free(ctx, p);
	return rc;
}

static void mbuf_close(struct mbuf *m)
{
	if (m->mr)
		TEARDOWN(rcc_mr_dereg(m->mr));
	m->mr = NULL;
	if (m->p)
		TEARDOWN(rcc_mem_free(m->ctx, m->p));
	m->p = NULL;
}

/* A split pair, a's BIG source filled with pattern seed, and b's BIG
 * region on shared memory (published to a): one mapped WRITE's worth. */
static int big_write_open(struct pair *p, struct tbuf *src, struct mbuf *dst, uint64_t seed)
{
	struct pair_opts o = { .split = true };
	int rc = pair_open(p, &o);

	if (rc || (rc = tbuf_alloc(src, p->ctx, BIG, RCC_ACCESS_LOCAL_WRITE)) ||
	    (rc = mbuf_open(dst, p->ctx_b, BIG, 0, BIG, ALL_ACCESS)))
		return rc;
	fill_pattern(src->p, BIG, seed);
	return 0;
}

/* Close both endpoints (checked, as every teardown) before the regions the
 * case registered go: a peer's mapping of them ends with its endpoint. */
static void close_eps(struct pair *p)
{
	TEARDOWN(rcc_ep_close(p->a));
	TEARDOWN(rcc_ep_close(p->b));
	p->a = p->b = NULL;
}

/* WRITE and READ through the mapping, byte for byte; small ones, and ones
 * that would overtake an unfinished ring request, over the ring; bounds
 * and access checked by the initiator (the ring then refuses them). */
static void mapped_write_read(void)
{
	struct pair_opts o = { .split = true };
	struct tbuf src = { 0 }, back = { 0 };
	struct mbuf dst = { 0 }, ro = { 0 };
	struct pair p;

	SKIP_UNLESS_GETFD();
	CHECK_OK(pair_open(&p, &o));
	CHECK_OK(tbuf_alloc(&src, p.ctx, 2 * BIG, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&back, p.ctx, 2 * BIG, RCC_ACCESS_LOCAL_WRITE));
	/* the region is the middle of its allocation: bytes around it stay */
	CHECK_OK(mbuf_open(&dst, p.ctx_b, 3 * BIG, BIG, BIG, ALL_ACCESS));
	struct rcc_remote_mr rm = rcc_mr_remote(dst.mr);

	fill_pattern(src.p, SMALL, 3);
	struct rcc_sge s = tbuf_sge(&src, 0, SMALL);
	CHECK_OK(rcc_post_write(p.a, &s, 1, rm.addr, rm.rkey, 1, RCC_SEND_SIGNALED));
	EXPECT_STATUS(p.cq_a, 1, RCC_WC_SUCCESS);
	CHECK_EQ(check_pattern(dst.p + BIG, SMALL, 3), -1);
	CHECK_EQ(copies(p.a), 0); /* below the threshold: the ring */

	fill_pattern(src.p, BIG, 5);
	s = tbuf_sge(&src, 0, BIG);
	CHECK_OK(rcc_post_write(p.a, &s, 1, rm.addr, rm.rkey, 2, RCC_SEND_SIGNALED));
	EXPECT_STATUS(p.cq_a, 2, RCC_WC_SUCCESS);
	CHECK_EQ(check_pattern(dst.p + BIG, BIG, 5), -1);
	CHECK_EQ(copies(p.a), 1);
	struct rcc_sge bs = tbuf_sge(&back, 0, BIG);
	CHECK_OK(rcc_post_read(p.a, &bs, 1, rm.addr, rm.rkey, 3, RCC_SEND_SIGNALED));
	EXPECT_STATUS(p.cq_a, 3, RCC_WC_SUCCESS);
	CHECK_EQ(check_pattern(back.p, BIG, 5), -1);
	CHECK_EQ(copies(p.a), 2);
	/* a READ into a scattered sink, at an offset of the region */
	memset(back.p, 0, BIG);
	struct rcc_sge two[2] = { tbuf_sge(&back, 0, BIG / 4 + 8),
				  tbuf_sge(&back, BIG / 4 + 8, BIG / 4 - 8) };
	CHECK_OK(rcc_post_read(p.a, two, 2, rm.addr + BIG / 2, rm.rkey, 4, RCC_SEND_SIGNALED));
	EXPECT_STATUS(p.cq_a, 4, RCC_WC_SUCCESS);
	CHECK_EQ(memcmp(back.p, src.p + BIG / 2, BIG / 2), 0);
	CHECK_EQ(copies(p.a), 3);
	/* a window of them, unsignalled but the last: every one mapped */
	for (int i = 0; i < 16; i++) {
		fill_pattern(src.p, BIG, 100 + (uint64_t)i);
		CHECK_OK(rcc_post_write(p.a, &s, 1, rm.addr, rm.rkey, 5,
					i == 15 ? RCC_SEND_SIGNALED : 0));
		CHECK_EQ(check_pattern(dst.p + BIG, BIG, 100 + (uint64_t)i), -1);
	}
	EXPECT_STATUS(p.cq_a, 5, RCC_WC_SUCCESS);
	CHECK_EQ(copies(p.a), 19);
	/* WRITE with immediate: copied, and the receiver's completion says
	 * how many bytes, with the immediate */
	struct rcc_wc rw;
	CHECK_OK(rcc_post_recv(p.b, NULL, 0, 77));
	fill_pattern(src.p, BIG, 11);
	CHECK_OK(rcc_post_write_imm(p.a, &s, 1, rm.addr, rm.rkey, 0xabcd, 9, RCC_SEND_SIGNALED));
	EXPECT_STATUS(p.cq_a, 9, RCC_WC_SUCCESS);
	CHECK_OK(wait_one(p.cq_b, &rw, TEST_TIMEOUT_MS));
	CHECK_WC(rw, RCC_WC_SUCCESS);
	CHECK_EQ(rw.wr_id, 77);
	CHECK_EQ(rw.opcode, RCC_WC_RECV_WRITE_IMM);
	CHECK_EQ(rw.byte_len, BIG);
	CHECK_EQ(rw.imm_data, 0xabcd);
	CHECK(rw.wc_flags & RCC_WC_WITH_IMM);
	CHECK_EQ(check_pattern(dst.p + BIG, BIG, 11), -1);
	CHECK_EQ(copies(p.a), 20);
	/* RC order: a small WRITE over the ring, then a large one to the same
	 * bytes: the large one must not overtake it (it takes the ring too, or
	 * copies once the small one completed) */
	fill_pattern(src.p + BIG, SMALL, 7);
	fill_pattern(src.p, BIG, 8);
	struct rcc_sge ss = tbuf_sge(&src, BIG, SMALL);
	struct rcci_lock *held = &tep(p.b)->rx_lock; /* b applies nothing yet */
	rcci_lock_acquire(held);
	int rc6 = rcc_post_write(p.a, &ss, 1, rm.addr, rm.rkey, 6, 0);
	int rc7 = rcc_post_write(p.a, &s, 1, rm.addr, rm.rkey, 7, RCC_SEND_SIGNALED);
	rcci_lock_release(held);
	CHECK_OK(rc6);
	CHECK_OK(rc7);
	EXPECT_STATUS(p.cq_a, 7, RCC_WC_SUCCESS);
	CHECK_EQ(check_pattern(dst.p + BIG, BIG, 8), -1);
	/* nothing around the region was touched */
	for (size_t i = 0; i < BIG; i++)
		CHECK(dst.p[i] == 0 && dst.p[2 * BIG + i] == 0);
	uint64_t before = copies(p.a);
	/* past the region's end, inside the allocation: refused (the ring) */
	s = tbuf_sge(&src, 0, BIG);
	CHECK_OK(rcc_post_write(p.a, &s, 1, rm.addr + BIG / 2, rm.rkey, 8, RCC_SEND_SIGNALED));
	EXPECT_STATUS(p.cq_a, 8, RCC_WC_REM_ACCESS_ERR);
	close_eps(&p);
	CHECK(before == 20 || before == 21); /* the ordered large WRITE: either path */
	for (size_t i = 0; i < BIG; i++)
		CHECK(dst.p[2 * BIG + i] == 0);
	(void)ro;
	tbuf_free(&src);
	tbuf_free(&back);
	mbuf_close(&dst);
	pair_close(&p);
}

/* A region without remote read: a READ of it is refused (the ring); one
 * with it on a fresh pair maps. */
static void access_checked(void)
{
	struct pair_opts o = { .split = true };
	struct tbuf back = { 0 };
	struct mbuf wo = { 0 };
	struct pair p;

	SKIP_UNLESS_GETFD();
	CHECK_OK(pair_open(&p, &o));
	CHECK_OK(tbuf_alloc(&back, p.ctx, BIG, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(mbuf_open(&wo, p.ctx_b, BIG, 0, BIG,
			   RCC_ACCESS_LOCAL_WRITE | RCC_ACCESS_REMOTE_WRITE));
	struct rcc_remote_mr rm = rcc_mr_remote(wo.mr);
	struct rcc_sge bs = tbuf_sge(&back, 0, BIG);
	CHECK_OK(rcc_post_read(p.a, &bs, 1, rm.addr, rm.rkey, 1, RCC_SEND_SIGNALED));
	EXPECT_STATUS(p.cq_a, 1, RCC_WC_REM_ACCESS_ERR);
	CHECK_EQ(copies(p.a), 0);
	close_eps(&p);
	tbuf_free(&back);
	mbuf_close(&wo);
	pair_close(&p);
}

/* A mapped WRITE with immediate that meets an empty receive queue is
 * refused (RNR) and its frame sent again until a receive is posted: copied
 * once, completed once, with the whole length. */
static void mapped_imm_waits_for_receive(void)
{
	struct tbuf src = { 0 };
	struct mbuf dst = { 0 };
	struct rcc_wc wc;
	struct pair p;

	SKIP_UNLESS_GETFD();
	CHECK_OK(big_write_open(&p, &src, &dst, 21));
	struct rcc_remote_mr rm = rcc_mr_remote(dst.mr);
	struct rcc_sge s = tbuf_sge(&src, 0, BIG);
	CHECK_OK(rcc_post_write_imm(p.a, &s, 1, rm.addr, rm.rkey, 0x1234, 1, RCC_SEND_SIGNALED));
	CHECK_EQ(copies(p.a), 1);
	CHECK_EQ(rcc_cq_wait(p.cq_a, &wc, 1, 20), -ETIMEDOUT); /* still waiting, not failed */
	CHECK_OK(rcc_post_recv(p.b, NULL, 0, 5));
	EXPECT_STATUS(p.cq_a, 1, RCC_WC_SUCCESS);
	CHECK_OK(wait_one(p.cq_b, &wc, TEST_TIMEOUT_MS));
	CHECK_WC(wc, RCC_WC_SUCCESS);
	CHECK_EQ(wc.opcode, RCC_WC_RECV_WRITE_IMM);
	CHECK_EQ(wc.byte_len, BIG);
	CHECK_EQ(wc.imm_data, 0x1234);
	CHECK_EQ(check_pattern(dst.p, BIG, 21), -1);
	CHECK_EQ(copies(p.a), 1);
	CHECK_EQ(rcc_cq_poll(p.cq_b, &wc, 1), 0); /* one completion, not one per try */
	close_eps(&p);
	tbuf_free(&src);
	mbuf_close(&dst);
	pair_close(&p);
}

struct writer {
	struct pair *p;
	struct tbuf *src;
	struct rcc_remote_mr rm;
	atomic_bool stop;
	int ok, failed, timeouts;
};

/* WRITE, wait, again, each with a new pattern, until stopped or refused. */
static void *write_loop(void *arg)
{
	struct writer *w = arg;
	struct rcc_sge s = tbuf_sge(w->src, 0, BIG);

	for (uint64_t i = 0; !atomic_load(&w->stop); i++) {
		struct rcc_wc wc;
		memset(w->src->p, (int)(i % 250) + 1, BIG);
		if (rcc_post_write(w->p->a, &s, 1, w->rm.addr, w->rm.rkey, i, RCC_SEND_SIGNALED))
			break;
		if (wait_one(w->p->cq_a, &wc, TEST_TIMEOUT_MS)) {
			w->timeouts++;
			break;
		}
		if (wc.status != RCC_WC_SUCCESS) {
			w->failed++;
			break;
		}
		w->ok++;
	}
	return NULL;
}

/* The peer writes in a loop; once rcc_mr_dereg() returned, not one byte of
 * the region changes, and the peer's next WRITE is refused. */
static void dereg_while_writing(void)
{
	struct pair_opts o = { .split = true };
	struct tbuf src = { 0 };
	struct mbuf dst = { 0 };
	struct pair p;
	pthread_t t;
	int rounds = test_quick() ? 3 : 10;

	SKIP_UNLESS_GETFD();
	CHECK_OK(pair_open(&p, &o));
	CHECK_OK(tbuf_alloc(&src, p.ctx, BIG, RCC_ACCESS_LOCAL_WRITE));
	uint8_t *snap = malloc(BIG);
	CHECK(snap != NULL);
	for (int r = 0; r < rounds; r++) {
		CHECK_OK(mbuf_open(&dst, p.ctx_b, BIG, 0, BIG, ALL_ACCESS));
		struct writer w = { .p = &p, .src = &src, .rm = rcc_mr_remote(dst.mr) };
		uint64_t c0 = copies(p.a);
		CHECK_OK(pthread_create(&t, NULL, write_loop, &w));
		uint64_t end = now_ms() + TEST_TIMEOUT_MS;
		while (copies(p.a) < c0 + 3 + (uint64_t)r && now_ms() < end)
			sched_yield();
		CHECK_OK(rcc_mr_dereg(dst.mr));
		dst.mr = NULL;
		memcpy(snap, dst.p, BIG);
		/* let the peer try for a while longer, then stop it */
		end = now_ms() + 20;
		while (now_ms() < end && !atomic_load(&w.stop))
			sched_yield();
		atomic_store(&w.stop, true);
		pthread_join(t, NULL);
		CHECK_EQ(w.timeouts, 0);
		CHECK_MSG(copies(p.a) >= c0 + 3, "the writes never took the mapping");
		CHECK_MSG(memcmp(snap, dst.p, BIG) == 0,
			  "round %d: bytes landed after rcc_mr_dereg() returned", r);
		if (!w.failed) {
			/* the loop was stopped before its next WRITE: that one is
			 * refused now */
			struct rcc_sge s = tbuf_sge(&src, 0, BIG);
			CHECK_OK(rcc_post_write(p.a, &s, 1, w.rm.addr, w.rm.rkey, 99,
						RCC_SEND_SIGNALED));
			EXPECT_STATUS(p.cq_a, 99, RCC_WC_REM_ACCESS_ERR);
		}
		CHECK(memcmp(snap, dst.p, BIG) == 0);
		/* a refused request fails the endpoint: a fresh pair */
		close_eps(&p);
		tbuf_free(&src);
		mbuf_close(&dst);
		pair_close(&p);
		CHECK_OK(pair_open(&p, &o));
		CHECK_OK(tbuf_alloc(&src, p.ctx, BIG, RCC_ACCESS_LOCAL_WRITE));
	}
	free(snap);
	tbuf_free(&src);
	pair_close(&p);
}

/* The initiator's busy flag, set and left (a frozen or lying peer), holds
 * rcc_mr_dereg() for the peer timeout, not longer. */
static void busy_peer_bounded(void)
{
	enum {
		TMO = 400
	};
	struct pair_opts o = { .split = true,
			       .attr_a = { .peer_timeout_ms = 3600000 },
			       .attr_b = { .peer_timeout_ms = TMO } };
	struct mbuf dst = { 0 };
	struct pair p;

	SKIP_UNLESS_GETFD();
	CHECK_OK(pair_open(&p, &o));
	CHECK_OK(mbuf_open(&dst, p.ctx_b, BIG, 0, BIG, ALL_ACCESS));
	struct tcp_ep *a = tep(p.a);
	atomic_store(&a->shm.mapped.mine->busy, 1);
	uint64_t t0 = now_ms();
	int rc = rcc_mr_dereg(dst.mr);
	uint64_t took = now_ms() - t0;
	dst.mr = NULL;
	atomic_store(&a->shm.mapped.mine->busy, 0);
	CHECK_OK(rc);
	CHECK_MSG(took + 50 >= TMO, "rcc_mr_dereg() returned after %" PRIu64 " ms, the peer busy",
		  took);
	CHECK_MSG(took < 10 * TMO, "rcc_mr_dereg() took %" PRIu64 " ms", took);
	close_eps(&p);
	mbuf_close(&dst);
	pair_close(&p);
}

/* The peer's copy through the mapping it holds, as rcc_post_write() makes
 * it (the peer may not have read our close yet): 0 or -ENOENT. */
static int peer_copy(struct pair *p, struct tbuf *src, struct rcc_remote_mr rm)
{
	struct tcp_ep *a = tep(p->a);
	struct iovec v = { src->p, BIG };

	rcci_lock_acquire(&a->tx_lock);
	rcci_rwlock_read(&tctx(p->ctx)->mr_lock);
	int rc = rcci_shm_map_copy(&a->shm.mapped, rm.rkey, rm.addr, &v, 1, BIG, true);
	rcci_rwlock_read_end(&tctx(p->ctx)->mr_lock);
	rcci_lock_release(&a->tx_lock);
	return rc;
}

/* Once an endpoint has left service (here its side disconnected; an error
 * or a peer declared dead take the same path, rcci_ep_fail), its peer can
 * no longer copy through the mapping it holds -- neither into a region
 * that stays registered and that the application now reuses, nor into one
 * registered afterwards -- as a NIC takes no RDMA on a QP in error. */
static void left_service_withdraws(void)
{
	struct tbuf src = { 0 };
	struct mbuf dst = { 0 }, later = { 0 };
	struct pair p;
	struct rcc_wc wc;

	SKIP_UNLESS_GETFD();
	CHECK_OK(big_write_open(&p, &src, &dst, 7));
	struct rcc_remote_mr rm = rcc_mr_remote(dst.mr);
	struct rcc_sge s = tbuf_sge(&src, 0, BIG);
	CHECK_OK(rcc_post_write(p.a, &s, 1, rm.addr, rm.rkey, 1, RCC_SEND_SIGNALED));
	EXPECT_STATUS(p.cq_a, 1, RCC_WC_SUCCESS);
	CHECK_EQ(copies(p.a), 1); /* the peer holds the mapping */
	CHECK(memcmp(dst.p, src.p, BIG) == 0);

	CHECK_OK(rcc_ep_disconnect(p.b));
	memset(dst.p, 0x5a, BIG); /* reused, still registered */
	CHECK_OK(mbuf_open(&later, p.ctx_b, BIG, 0, BIG, ALL_ACCESS));
	memset(later.p, 0x5a, BIG);
	struct rcc_remote_mr lrm = rcc_mr_remote(later.mr);
	CHECK_EQ(peer_copy(&p, &src, rm), -ENOENT);
	CHECK_EQ(peer_copy(&p, &src, lrm), -ENOENT);
	/* and through the API, whether the peer saw the close yet or not */
	if (!rcc_post_write(p.a, &s, 1, rm.addr, rm.rkey, 2, RCC_SEND_SIGNALED))
		CHECK_OK(wait_one(p.cq_a, &wc, TEST_TIMEOUT_MS));
	CHECK_EQ(copies(p.a), 1);
	for (size_t i = 0; i < BIG; i++) {
		CHECK_MSG(dst.p[i] == 0x5a && later.p[i] == 0x5a,
			  "byte %zu changed after the endpoint left service", i);
	}
	close_eps(&p);
	tbuf_free(&src);
	mbuf_close(&later);
	mbuf_close(&dst);
	pair_close(&p);
}

/* What can keep the end of b (the pair's server side) from being carried
 * out at once: a, its peer, stopped inside a copy for b -- a mapped one
 * into b's memory, or a single copy for one of b's requests: its busy flag
 * left set, as a debugger's stop or SIGSTOP leaves it -- or another thread
 * holding b's context's cma_lock (a deregistration waiting for such a
 * peer of another connection). */
enum stall {
	STALL_MAPPED_COPY,
	STALL_SINGLE_COPY,
	STALL_DEREG
};

static void stall(struct pair *p, enum stall s, bool on)
{
	switch (s) {
	case STALL_MAPPED_COPY:
		atomic_store(&tep(p->a)->shm.mapped.mine->busy, on);
		break;
	case STALL_SINGLE_COPY:
		atomic_store(&tep(p->b)->shm.cma.mine->slot[3].busy, on);
		break;
	case STALL_DEREG:
		if (on)
			pthread_mutex_lock(&tctx(p->ctx_b)->cma_lock);
		else
			pthread_mutex_unlock(&tctx(p->ctx_b)->cma_lock);
		break;
	}
}

/* a's endpoint ends (it disconnects) while s stalls b: b's end must be
 * held (connected, its link down) until s ends. Returns whether it was;
 * if not, s is ended (a thread of b's may be waiting for it). */
static bool end_while_stalled(struct pair *p, enum stall s)
{
	struct tcp_ep *b = tep(p->b);

	stall(p, s, true);
	if (rcc_ep_disconnect(p->a) == 0) {
		uint64_t end = now_ms() + TEST_TIMEOUT_MS;
		while (!atomic_load(&b->fail_held) && rcc_ep_state(p->b) == RCC_EP_CONNECTED &&
		       now_ms() < end)
			sched_yield();
	}
	if (atomic_load(&b->fail_held))
		return true;
	stall(p, s, false);
	return false;
}

/* Wait (bounded) until ep has left RCC_EP_CONNECTED. */
static enum rcc_ep_state state_after_connected(struct rcc_ep *ep)
{
	uint64_t end = now_ms() + TEST_TIMEOUT_MS;
	while (rcc_ep_state(ep) == RCC_EP_CONNECTED && now_ms() < end)
		sched_yield();
	return rcc_ep_state(ep);
}

/* The pair (b's peer timeout an hour: b never declares a dead by itself), a
 * region of b published to a, and a second connection a2 -> b2 on the same
 * contexts with a small region far on b's side and near on a's: what
 * another client of b's context does while a stalls b. */
struct two_conns {
	struct pair p;
	struct rcc_ep *a2, *b2;
	struct tbuf far, near;
	struct mbuf pub;
};

static int two_conns_open(struct two_conns *c)
{
	struct pair_opts o = { .split = true, .attr_b = { .peer_timeout_ms = 3600000 } };
	struct rcc_ep_attr aa = { 0 }, ab = { 0 };
	int rc;

	memset(c, 0, sizeof(*c));
	if ((rc = pair_open(&c->p, &o)))
		return rc;
	aa.send_cq = aa.recv_cq = c->p.cq_a;
	ab.send_cq = ab.recv_cq = c->p.cq_b;
	if ((rc = mbuf_open(&c->pub, c->p.ctx_b, BIG, 0, BIG, ALL_ACCESS)) ||
	    (rc = pair_connect(c->p.ctx, c->p.lst, &aa, &ab, &c->a2, &c->b2)) ||
	    (rc = tbuf_alloc(&c->far, c->p.ctx_b, SMALL, ALL_ACCESS)))
		return rc;
	return tbuf_alloc(&c->near, c->p.ctx, SMALL, RCC_ACCESS_LOCAL_WRITE);
}

static void two_conns_close(struct two_conns *c)
{
	TEARDOWN(rcc_ep_close(c->a2));
	TEARDOWN(rcc_ep_close(c->b2));
	close_eps(&c->p);
	tbuf_free(&c->near);
	tbuf_free(&c->far);
	mbuf_close(&c->pub);
	pair_close(&c->p);
}

/* a2 -> b2: a READ (far into near) or a WRITE (near into far) of SMALL
 * bytes and its completion (bounded). 0 or a negative errno. */
static int other_conn_op(struct two_conns *c, bool read, uint64_t id, struct rcc_wc *wc)
{
	struct rcc_remote_mr rm = rcc_mr_remote(c->far.mr);
	struct rcc_sge sg = tbuf_sge(&c->near, 0, SMALL);
	int rc = read ? rcc_post_read(c->a2, &sg, 1, rm.addr, rm.rkey, id, RCC_SEND_SIGNALED) :
			rcc_post_write(c->a2, &sg, 1, rm.addr, rm.rkey, id, RCC_SEND_SIGNALED);
	return rc ? rc : wait_one(c->p.cq_a, wc, TEST_TIMEOUT_MS);
}

/* b's end, stalled by s, waits -- b stays connected, so its application
 * is not told it may reuse a region a's copy still writes -- but no thread
 * waits with it: the progress thread answers a READ on another connection
 * of b's context meanwhile. Once s ends, the failure is carried out. */
static void held_failure_serves_others(enum stall s)
{
	struct rcc_wc wc = { .status = RCC_WC_GENERAL_ERR };
	struct two_conns c;

	SKIP_UNLESS_GETFD();
	CHECK_OK(two_conns_open(&c));
	fill_pattern(c.far.p, SMALL, 9);
	CHECK_MSG(end_while_stalled(&c.p, s), "b's end was not held (state %d)",
		  (int)rcc_ep_state(c.p.b));
	int rc = other_conn_op(&c, true, 5, &wc);
	bool connected = rcc_ep_state(c.p.b) == RCC_EP_CONNECTED;
	stall(&c.p, s, false);
	CHECK_OK(rc);
	CHECK_EQ(wc.wr_id, 5);
	CHECK_WC(wc, RCC_WC_SUCCESS);
	CHECK(memcmp(c.near.p, c.far.p, SMALL) == 0);
	CHECK(connected);
	CHECK_EQ(state_after_connected(c.p.b), RCC_EP_DISCONNECTED);
	CHECK(!atomic_load(&tep(c.p.b)->fail_held));
	CHECK_EQ(rcc_ep_state(c.b2), RCC_EP_CONNECTED);
	two_conns_close(&c);
}

static void stopped_copier_holds_no_thread(void) { held_failure_serves_others(STALL_MAPPED_COPY); }
static void dereg_wait_holds_no_thread(void) { held_failure_serves_others(STALL_DEREG); }

struct dereg_job {
	struct rcc_mr *mr;
	atomic_int rc; /* -EINPROGRESS until rcc_mr_dereg() returned */
};

static void *dereg_main(void *arg)
{
	struct dereg_job *j = arg;
	atomic_store(&j->rc, rcc_mr_dereg(j->mr));
	return NULL;
}

/* Whether every entry b publishes is revoked (as a sees them). */
static bool b_publishes_nothing(struct pair *p)
{
	const struct shm_map_side *b = tep(p->a)->shm.mapped.peer;
	for (int e = 0; e < SHM_MAP_ENTS; e++)
		if (atomic_load(&b->ent[e].ctl) & 1)
			return false;
	return true;
}

/* rcc_mr_dereg() of a region a stopped inside a copy of waits for it (up to
 * b's peer timeout), but holds up no other endpoint's copies meanwhile: a
 * WRITE on another connection lands in b's memory (which takes mr_lock,
 * the registered memory's lock) before a's copy ends. */
static void dereg_wait_lets_others_copy(void)
{
	struct rcc_wc wc = { .status = RCC_WC_GENERAL_ERR };
	struct two_conns c;
	pthread_t t;

	SKIP_UNLESS_GETFD();
	CHECK_OK(two_conns_open(&c));
	fill_pattern(c.near.p, SMALL, 11);
	stall(&c.p, STALL_MAPPED_COPY, true);
	struct dereg_job job = { .mr = c.pub.mr, .rc = -EINPROGRESS };
	c.pub.mr = NULL;
	CHECK_OK(pthread_create(&t, NULL, dereg_main, &job));
	uint64_t end = now_ms() + TEST_TIMEOUT_MS;
	while (!b_publishes_nothing(&c.p) && now_ms() < end)
		sched_yield();
	bool revoked = b_publishes_nothing(&c.p);
	int rc = other_conn_op(&c, false, 6, &wc);
	bool waiting = atomic_load(&job.rc) == -EINPROGRESS;
	stall(&c.p, STALL_MAPPED_COPY, false);
	pthread_join(t, NULL);
	CHECK_MSG(revoked, "rcc_mr_dereg() never revoked the region");
	CHECK_OK(rc);
	CHECK_EQ(wc.wr_id, 6);
	CHECK_WC(wc, RCC_WC_SUCCESS);
	CHECK(memcmp(c.far.p, c.near.p, SMALL) == 0);
	CHECK_MSG(waiting, "rcc_mr_dereg() returned while the peer was inside its copy");
	CHECK_OK(atomic_load(&job.rc));
	two_conns_close(&c);
}

/* A failure held (here by a deregistration's cma_lock) is the same failure
 * once carried out: a WRITE b refuses (a bad key) still gets its access
 * NAK, so a's request says why, not merely that it was flushed. */
static void held_error_still_naks(void)
{
	struct pair_opts o = { .split = true };
	struct tbuf src = { 0 };
	struct rcc_wc wc = { .status = RCC_WC_GENERAL_ERR };
	struct pair p;

	SKIP_UNLESS_GETFD();
	CHECK_OK(pair_open(&p, &o));
	CHECK_OK(tbuf_alloc(&src, p.ctx, SMALL, RCC_ACCESS_LOCAL_WRITE));
	struct rcc_sge sg = tbuf_sge(&src, 0, SMALL);
	stall(&p, STALL_DEREG, true);
	int rc = rcc_post_write(p.a, &sg, 1, 4096, 0x5eed, 7, RCC_SEND_SIGNALED);
	uint64_t end = now_ms() + TEST_TIMEOUT_MS;
	while (!rc && !atomic_load(&tep(p.b)->fail_held) && now_ms() < end)
		sched_yield();
	bool held = atomic_load(&tep(p.b)->fail_held);
	stall(&p, STALL_DEREG, false);
	CHECK_OK(rc);
	CHECK_MSG(held, "b's failure was not held");
	CHECK_OK(wait_one(p.cq_a, &wc, TEST_TIMEOUT_MS));
	CHECK_EQ(wc.wr_id, 7);
	CHECK_WC(wc, RCC_WC_REM_ACCESS_ERR);
	CHECK_EQ(state_after_connected(p.b), RCC_EP_ERROR);
	close_eps(&p);
	tbuf_free(&src);
	pair_close(&p);
}

/* A stop inside a single copy, never resumed: the failure is carried out
 * at the peer timeout all the same. */
static void stopped_copier_deadline(void)
{
	struct pair_opts o = { .split = true, .attr_b = { .peer_timeout_ms = 300 } };
	struct pair p;

	SKIP_UNLESS_GETFD();
	CHECK_OK(pair_open(&p, &o));
	CHECK(end_while_stalled(&p, STALL_SINGLE_COPY));
	CHECK_EQ(state_after_connected(p.b), RCC_EP_DISCONNECTED);
	stall(&p, STALL_SINGLE_COPY, false);
	close_eps(&p);
	pair_close(&p);
}

/* Rewrite the target's entry of key as a liar would, under a new live
 * generation. */
static void lie(struct shm_map *t, uint32_t key, int fd, uint64_t ino, uint64_t len)
{
	for (int e = 0; e < SHM_MAP_ENTS; e++) {
		struct shm_map_ent *x = &t->mine->ent[e];
		if (t->keys[e] != key)
			continue;
		uint64_t ctl = atomic_load(&x->ctl);
		atomic_store(&x->ctl, ctl & ~(uint64_t)1);
		atomic_store(&x->fd, fd);
		atomic_store(&x->ino, ino);
		atomic_store(&x->len, len);
		atomic_store(&x->off, 0);
		atomic_store(&x->ctl, ctl + 2); /* the next generation, live */
	}
}

/* Each lie sends the initiator's WRITE over the ring, where it succeeds:
 * only the liar's peer's requests change path, nothing faults. */
static void lying_target(void)
{
	struct pair_opts o = { .split = true };
	struct tbuf src = { 0 };
	struct mbuf dst = { 0 };
	struct pair p;
	char tmpl[] = "/tmp/rcc-map-XXXXXX";

	SKIP_UNLESS_GETFD();
	CHECK_OK(pair_open(&p, &o));
	CHECK_OK(tbuf_alloc(&src, p.ctx, BIG, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(mbuf_open(&dst, p.ctx_b, BIG, 0, BIG, ALL_ACCESS));
	struct rcc_remote_mr rm = rcc_mr_remote(dst.mr);
	struct shm_map *t = &tep(p.b)->shm.mapped;
	struct rcc_sge s = tbuf_sge(&src, 0, BIG);
	struct stat st;
	int ffd = mkstemp(tmpl);
	CHECK(ffd >= 0);
	unlink(tmpl);
	CHECK_OK(ftruncate(ffd, BIG));
	int ufd = memfd_create("unsealed", MFD_CLOEXEC); /* right size, no seals */
	CHECK(ufd >= 0);
	CHECK_OK(ftruncate(ufd, BIG));
	struct {
		const char *what;
		int fd;
		bool real_len;
	} lies[] = {
		{ "a descriptor number not open", 100000, true },
		{ "a length beyond the memfd", -1, false },
		{ "a file that is no memfd", ffd, true },
		{ "a memfd without seals", ufd, true },
	};
	const struct rcci_mem *mem = dst.mr->mem;
	for (size_t i = 0; i < sizeof(lies) / sizeof(lies[0]); i++) {
		int fd = lies[i].fd < 0 ? mem->fd : lies[i].fd;
		uint64_t ino = mem->ino;
		if (fd != mem->fd && fd < 100000) {
			CHECK_OK(fstat(fd, &st));
			ino = (uint64_t)st.st_ino; /* the lie is consistent */
		}
		lie(t, rm.rkey, fd, ino, lies[i].real_len ? BIG : 64 * (uint64_t)BIG);
		uint64_t c0 = copies(p.a);
		fill_pattern(src.p, BIG, 40 + i);
		CHECK_OK(rcc_post_write(p.a, &s, 1, rm.addr, rm.rkey, i, RCC_SEND_SIGNALED));
		EXPECT_STATUS(p.cq_a, i, RCC_WC_SUCCESS);
		CHECK_MSG(copies(p.a) == c0, "%s: mapped anyway", lies[i].what);
		CHECK_EQ(check_pattern(dst.p, BIG, 40 + i), -1);
	}
	close(ffd);
	close(ufd);
	close_eps(&p);
	tbuf_free(&src);
	mbuf_close(&dst);
	pair_close(&p);
}

/* rcc_mem_free(): -EBUSY while a region lies on it, -EINVAL for what it
 * did not allocate; the context stays open while allocations do. */
static void mem_free_rules(void)
{
	struct rcc_ctx *ctx;
	struct rcc_mr *mr;
	void *p;

	CHECK_OK(test_ctx_open(&ctx));
	CHECK_EQ(rcc_mem_alloc(ctx, 0, &p), -EINVAL);
	CHECK_EQ(rcc_mem_alloc(NULL, 1, &p), -EINVAL);
	CHECK_OK(rcc_mem_alloc(ctx, 100, &p));
	CHECK_EQ((uintptr_t)p % 4096, 0);
	memset(p, 0x5a, 4096); /* whole pages */
	CHECK_OK(rcc_mr_reg(ctx, (uint8_t *)p + 8, 64, ALL_ACCESS, &mr));
	CHECK_EQ(rcc_mem_free(ctx, p), -EBUSY);
	CHECK_EQ(rcc_ctx_close(ctx), -EBUSY);
	CHECK_OK(rcc_mr_dereg(mr));
	CHECK_EQ(rcc_mem_free(ctx, (uint8_t *)p + 8), -EINVAL);
	CHECK_EQ(rcc_ctx_close(ctx), -EBUSY);
	CHECK_OK(rcc_mem_free(ctx, p));
	CHECK_EQ(rcc_mem_free(ctx, p), -EINVAL);
	CHECK_OK(rcc_ctx_close(ctx));
}

/* pidfd_getfd refused (a seccomp filter, as some containers have): the
 * ring carries every request, and they all succeed. In a child: the filter
 * stays with the process. */
static void refused_takes_ring(void)
{
	SKIP_UNLESS_GETFD();
	pid_t child = fork();
	CHECK(child >= 0);
	if (child == 0) {
		struct sock_filter f[] = {
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_pidfd_getfd, 0, 1),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		};
		struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
		    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
			_exit(77);
		struct pair_opts o = { .split = true };
		struct tbuf src = { 0 }, back = { 0 };
		struct mbuf dst = { 0 };
		struct pair p;
		struct rcc_wc wc;
		if (pair_open(&p, &o) || tbuf_alloc(&src, p.ctx, BIG, RCC_ACCESS_LOCAL_WRITE) ||
		    tbuf_alloc(&back, p.ctx, BIG, RCC_ACCESS_LOCAL_WRITE) ||
		    mbuf_open(&dst, p.ctx_b, BIG, 0, BIG, ALL_ACCESS))
			_exit(2);
		struct rcc_remote_mr rm = rcc_mr_remote(dst.mr);
		struct rcc_sge s = tbuf_sge(&src, 0, BIG), bs = tbuf_sge(&back, 0, BIG);
		fill_pattern(src.p, BIG, 9);
		if (rcc_post_write(p.a, &s, 1, rm.addr, rm.rkey, 1, RCC_SEND_SIGNALED) ||
		    wait_one(p.cq_a, &wc, TEST_TIMEOUT_MS) || wc.status != RCC_WC_SUCCESS ||
		    rcc_post_read(p.a, &bs, 1, rm.addr, rm.rkey, 2, RCC_SEND_SIGNALED) ||
		    wait_one(p.cq_a, &wc, TEST_TIMEOUT_MS) || wc.status != RCC_WC_SUCCESS)
			_exit(3);
		if (check_pattern(dst.p, BIG, 9) != -1 || check_pattern(back.p, BIG, 9) != -1)
			_exit(4);
		if (copies(p.a) != 0 || !tep(p.a)->shm.mapped.refused)
			_exit(5);
		_exit(0);
	}
	int status = 0;
	CHECK(waitpid(child, &status, 0) == child);
	CHECK(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		SKIP_CASE("seccomp", "cannot install a filter");
	CHECK_EQ(WEXITSTATUS(status), 0);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		TEST(mapped_write_read),
		TEST(access_checked),
		TEST(dereg_while_writing),
		TEST(busy_peer_bounded),
		TEST(lying_target),
		TEST(mem_free_rules),
		TEST(refused_takes_ring),
		TEST(mapped_imm_waits_for_receive),
		TEST(left_service_withdraws),
		TEST(stopped_copier_holds_no_thread),
		TEST(dereg_wait_holds_no_thread),
		TEST(dereg_wait_lets_others_copy),
		TEST(held_error_still_naks),
		TEST(stopped_copier_deadline),
	};
	if (test_on_verbs() || test_shm() != RCC_SHM_REQUIRE) {
		printf("test_shm_map runs with RCC_TEST_TRANSPORT=shm only\n");
		return 77;
	}
	return test_main(argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}
