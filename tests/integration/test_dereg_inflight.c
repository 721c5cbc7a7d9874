/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Deregistration with operations in flight, on every transport.
 *
 * rcc_mr_dereg() (rcc.h): afterwards the region "can no longer be reached by
 * peers or by work requests that name its keys; they fail with a protection or
 * remote access error". docs/shm.md: once it returns "no copy into the region
 * is running or can start". So an application may free a region the moment
 * rcc_mr_dereg() returned, whatever was still posted against it.
 *
 * Each round posts a stream of WRITEs, READs and FETCH_ADDs (about 1 MiB)
 * from endpoint a to a target region behind endpoint b, waits for the first
 * few completions, then deregisters a region mid-stream: the remote target
 * (its peer's WRITEs, READs and atomics in flight) or the local source, sink
 * and result regions (a's own requests in flight). At once, either
 *  - protected: a snapshot of the region is taken and its pages are made
 *    inaccessible (PROT_NONE). A later copy into them faults (shm: the copy is
 *    the target process's memcpy) or is refused (socket); any byte that
 *    differs from the snapshot afterwards was written after deregistration.
 *    This holds in an optimized build, so the mutation run can see it; or
 *  - freed: the region was malloc'd and is freed at once. A late write is a
 *    write into freed memory, which the ASan build reports; or
 *  - poisoned: the region stays mapped and is overwritten with canaries at
 *    once. A late write changes a canary; a late read (a WRITE's source
 *    pulled by the target, single copy) carries canaries into the target,
 *    which a success then does not match. This is what catches the target
 *    process's process_vm_readv/writev (single copy), which neither a
 *    protected page (the kernel refuses it: an error, not a late copy) nor
 *    ASan (it does not see the kernel's copies) would.
 * Then: every request completes (bounded): successes first, then one
 * protection or access error, then flushes; what a success reported is in the
 * region as it was at deregistration; guard pages and a neighbouring live
 * buffer keep their canaries; the context closes cleanly.
 */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "pair.h"
#include "transport/tcp/tcp.h"

enum {
	SLOT = 32 << 10, /* bytes per WRITE / READ */
	NSLOT = 32,      /* WRITEs per round, one target slot each */
	NREAD = NSLOT / 4,
	NATOM = NSLOT / 4,
	PAGE = 4096,
	ROUNDS = 16,
	CANARY = 0xC5,
};

/* wr_id: kind in the top byte, index below */
enum {
	OP_WRITE = 1,
	OP_READ = 2,
	OP_FADD = 3,
	OP_LATE = 4
};
#define WR(kind, i) (((uint64_t)(kind) << 56) | (uint64_t)(i))
#define WR_KIND(id) ((int)((id) >> 56))
#define WR_INDEX(id) ((int)((id)&0xffffffffu))

enum where {
	REMOTE,
	LOCAL
};
enum after {
	PROTECT,
	FREE,
	POISON
};

/* Bytes per WRITE / READ of the stream: SLOT, or SLOT_CMA to take the
 * shared-memory path's single copy (shm_cma.h: SHM_CMA_MIN and up). */
enum {
	SLOT_CMA = 128 << 10
};
static uint32_t slot_len = SLOT;
/* Poisoned zones come from rcc_mem_alloc(): on shared memory the initiator
 * then copies into and out of the target's zone itself, through its mapping
 * (shm_map.h). */
static bool poison_shared;

/*
 * One region: PROTECT: the middle of an mmap'd block between two guard pages
 * of canaries; FREE: a malloc'd block (ASan knows it) next to a live malloc'd
 * neighbour of canaries. snap: the region as it was at deregistration.
 */
struct zone {
	enum after how;
	struct rcc_ctx *ctx;
	bool shared; /* map is an rcc_mem_alloc() allocation of ctx */
	uint8_t *map, *p, *neighbour, *snap;
	size_t len;
	struct rcc_mr *mr;
	bool gone; /* deregistered (and freed or protected) */
};

static int zone_open(struct zone *z, struct rcc_ctx *ctx, size_t len, enum after how)
{
	memset(z, 0, sizeof(*z));
	z->how = how;
	z->len = len;
	z->ctx = ctx;
	if (how == POISON && poison_shared) {
		void *m;
		int rc = rcc_mem_alloc(ctx, len + 2 * PAGE, &m);
		if (rc)
			return rc;
		z->map = m;
		z->shared = true;
		memset(z->map, CANARY, PAGE);
		memset(z->map + PAGE + len, CANARY, PAGE);
		z->p = z->map + PAGE;
	} else if (how != FREE) {
		z->map = mmap(NULL, len + 2 * PAGE, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (z->map == MAP_FAILED) {
			z->map = NULL;
			return -errno;
		}
		memset(z->map, CANARY, PAGE);
		memset(z->map + PAGE + len, CANARY, PAGE);
		z->p = z->map + PAGE;
	} else {
		z->p = malloc(len);
		z->neighbour = malloc(PAGE);
		if (!z->p || !z->neighbour)
			return -ENOMEM;
		memset(z->neighbour, CANARY, PAGE);
	}
	memset(z->p, 0, len);
	return rcc_mr_reg(ctx, z->p, len, ALL_ACCESS, &z->mr);
}

/* Deregister, then at once snapshot and protect, or free. 0 or -errno. */
static int zone_drop(struct zone *z)
{
	int rc = rcc_mr_dereg(z->mr);
	if (rc)
		return rc;
	z->mr = NULL;
	z->gone = true;
	if (z->how == POISON) {
		memset(z->p, CANARY, z->len);
		return 0;
	}
	if (z->how == FREE) {
		free(z->p);
		z->p = NULL;
		return 0;
	}
	/* read-only first (the sooner a late write faults, the better), then
	 * the snapshot, then not even readable */
	if (mprotect(z->p, z->len, PROT_READ))
		return -errno;
	z->snap = malloc(z->len);
	if (!z->snap)
		return -ENOMEM;
	memcpy(z->snap, z->p, z->len);
	return mprotect(z->p, z->len, PROT_NONE) ? -errno : 0;
}

/* What the region held when it was deregistered (or holds, while live);
 * NULL when it was freed. */
static const uint8_t *zone_view(const struct zone *z) { return z->gone ? z->snap : z->p; }

static long canary_changed(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != CANARY)
			return (long)i;
	return -1;
}

/* Nothing written after deregistration, guards and neighbour untouched. Makes
 * protected pages accessible again first. -1 or the first bad offset. */
static long zone_unchanged(struct zone *z)
{
	if (z->gone && z->how == PROTECT) {
		if (mprotect(z->p, z->len, PROT_READ | PROT_WRITE))
			return 0;
		for (size_t i = 0; i < z->len; i++)
			if (z->p[i] != z->snap[i])
				return (long)i;
	}
	if (z->gone && z->how == POISON) {
		long at = canary_changed(z->p, z->len);
		if (at >= 0)
			return at;
	}
	if (z->how != FREE) {
		long at = canary_changed(z->map, PAGE);
		if (at < 0)
			at = canary_changed(z->map + PAGE + z->len, PAGE);
		return at;
	}
	return canary_changed(z->neighbour, PAGE);
}

static void zone_close(struct zone *z)
{
	if (z->mr)
		TEARDOWN(rcc_mr_dereg(z->mr));
	if (z->shared)
		TEARDOWN(rcc_mem_free(z->ctx, z->map));
	else if (z->map)
		munmap(z->map, z->len + 2 * PAGE);
	else
		free(z->p);
	free(z->neighbour);
	free(z->snap);
	memset(z, 0, sizeof(*z));
}

static uint64_t slot_seed(int round, int i) { return (uint64_t)round * 1000 + (uint64_t)i + 1; }

/* The first error of a stream: what the rules say for the region dropped. */
static bool first_error_ok(enum where w, enum rcc_wc_status st)
{
	if (w == REMOTE)
		return st == RCC_WC_REM_ACCESS_ERR;
	/* Soft-RoCE says "local QP operation error" where hardware says protection
	 * (as in test_errors bad_lkey) */
	return st == RCC_WC_LOC_PROT_ERR || (test_on_verbs() && st == RCC_WC_LOC_QP_OP_ERR);
}

struct round_result {
	int ok, failed;  /* requests of the stream (not the late one) */
	bool cma;        /* a's large requests could go single-copy */
	uint64_t copies; /* single copies b made for a */
	uint64_t mapped; /* copies a made through its mapping of b's memory */
};

static void one_round(enum where w, enum after how, int round, struct round_result *res)
{
	enum {
		MAXOPS = NSLOT + NREAD + NATOM + 1
	};
	const size_t TLEN = (size_t)NSLOT * slot_len + PAGE, ATOM_OFF = (size_t)NSLOT * slot_len;
	struct pair p;
	struct pair_opts o = { .cq_depth = 4 * MAXOPS,
			       .attr_a = { .sq_depth = 2 * MAXOPS },
			       .attr_b = { .sq_depth = 2 * MAXOPS },
			       /* single copy: the copier (b) runs beside a's rcc_mr_dereg(),
				* not behind the same mr_lock */
			       .split = slot_len >= SHM_CMA_MIN };
	struct zone t, s, k, r; /* target (b), source, sink, atomic results (a) */
	struct rcc_wc wc[MAXOPS];
	uint64_t posted[MAXOPS];
	int read_slot[NREAD];
	int n = 0, got = 0;

	memset(&t, 0, sizeof(t));
	memset(&s, 0, sizeof(s));
	memset(&k, 0, sizeof(k));
	memset(&r, 0, sizeof(r));
	CHECK_OK(pair_open(&p, &o));
	enum after tw = w == REMOTE ? how : PROTECT, lw = w == LOCAL ? how : PROTECT;
	CHECK_OK(zone_open(&t, p.ctx_b, TLEN, tw));
	CHECK_OK(zone_open(&s, p.ctx, NSLOT * slot_len, lw));
	CHECK_OK(zone_open(&k, p.ctx, NREAD * slot_len, lw));
	CHECK_OK(zone_open(&r, p.ctx, PAGE, lw));
	for (int i = 0; i < NSLOT; i++)
		fill_pattern(s.p + (size_t)i * slot_len, slot_len, slot_seed(round, i));
	struct rcc_remote_mr rm = rcc_mr_remote(t.mr);

	for (int i = 0; i < NSLOT; i++) {
		struct rcc_sge sg = rcc_mr_sge(s.mr, s.p + (size_t)i * slot_len, slot_len);
		posted[n] = WR(OP_WRITE, i);
		CHECK_OK(rcc_post_write(p.a, &sg, 1, rm.addr + (uint64_t)i * slot_len, rm.rkey,
					posted[n], RCC_SEND_SIGNALED));
		n++;
		if (i % 4 != 3)
			continue;
		int j = i / 4;
		read_slot[j] = i - 2; /* written before on this endpoint: RC order */
		sg = rcc_mr_sge(k.mr, k.p + (size_t)j * slot_len, slot_len);
		posted[n] = WR(OP_READ, j);
		CHECK_OK(rcc_post_read(p.a, &sg, 1, rm.addr + (uint64_t)read_slot[j] * slot_len,
				       rm.rkey, posted[n], RCC_SEND_SIGNALED));
		n++;
		sg = rcc_mr_sge(r.mr, r.p + (size_t)j * 8, 8);
		posted[n] = WR(OP_FADD, j);
		CHECK_OK(rcc_post_fadd(p.a, &sg, rm.addr + ATOM_OFF, rm.rkey, 1, posted[n],
				       RCC_SEND_SIGNALED));
		n++;
	}

	/* Mid-stream: after 0..3 completions, varying with the round. */
	int want = round % 4;
	uint64_t end = now_ms() + TEST_TIMEOUT_MS;
	while (got < want && now_ms() < end) {
		int m = rcc_cq_poll(p.cq_a, wc + got, want - got);
		CHECK(m >= 0);
		got += m;
	}
	CHECK_EQ(got, want);
	uint8_t *s_addr = s.p;
	uint32_t s_lkey = rcc_mr_lkey(s.mr);
	if (w == REMOTE) {
		CHECK_OK(zone_drop(&t));
	} else {
		CHECK_OK(zone_drop(&s));
		CHECK_OK(zone_drop(&k));
		CHECK_OK(zone_drop(&r));
	}

	/* One more request naming the deregistered region (the target's old rkey,
	 * or the source's old address and lkey): refused at once or completed
	 * with an error (the endpoint may be in error already). */
	struct rcc_sge lsg = w == LOCAL ? (struct rcc_sge){ .addr = (uint64_t)(uintptr_t)s_addr,
							    .length = slot_len,
							    .lkey = s_lkey } :
					  rcc_mr_sge(s.mr, s.p, slot_len);
	int lrc = rcc_post_write(p.a, &lsg, 1, rm.addr, rm.rkey, WR(OP_LATE, 0), RCC_SEND_SIGNALED);
	CHECK_MSG(lrc <= 0, "late post: %d", lrc);
	if (lrc == 0)
		posted[n++] = WR(OP_LATE, 0);

	/* Everything completes, bounded: in order, successes, one error, flushes. */
	got += wait_n(p.cq_a, wc + got, n - got, 2 * TEST_TIMEOUT_MS);
	CHECK_MSG(got == n, "%d of %d requests completed", got, n);
	int ok = 0, first_err = -1, stream_ok = 0, stream_err = 0;
	for (int i = 0; i < n; i++) {
		CHECK_MSG(wc[i].wr_id == posted[i],
			  "completion %d: wr_id %" PRIx64 ", want %" PRIx64, i, wc[i].wr_id,
			  posted[i]);
		bool late_op = WR_KIND(posted[i]) == OP_LATE;
		if (wc[i].status == RCC_WC_SUCCESS) {
			CHECK_MSG(first_err < 0, "completion %d succeeded after an error", i);
			CHECK_MSG(!late_op, "a WRITE into a deregistered region succeeded");
			ok++;
			continue;
		}
		if (first_err < 0) {
			first_err = i;
			CHECK_MSG(first_error_ok(w, wc[i].status), "first error (%s %d): %s",
				  WR_KIND(posted[i]) == OP_WRITE ? "WRITE" :
				  WR_KIND(posted[i]) == OP_READ  ? "READ" :
				  WR_KIND(posted[i]) == OP_FADD  ? "FETCH_ADD" :
								   "late WRITE",
				  WR_INDEX(posted[i]), rcc_wc_status_str(wc[i].status));
		} else {
			CHECK_WC(wc[i], RCC_WC_WR_FLUSH_ERR);
		}
		stream_err += !late_op;
	}
	stream_ok = ok;
	CHECK_MSG(first_err >= 0, "nothing failed although a region was deregistered");
	res->ok = stream_ok;
	res->failed = stream_err;

	/* What each success reported is there (as of deregistration). */
	const uint8_t *tv = zone_view(&t), *kv = zone_view(&k), *rv = zone_view(&r);
	uint64_t fadds = 0;
	for (int i = 0; i < ok; i++) {
		int x = WR_INDEX(posted[i]);
		switch (WR_KIND(posted[i])) {
		case OP_WRITE:
			if (tv)
				CHECK_MSG(check_pattern(tv + (size_t)x * slot_len, slot_len,
							slot_seed(round, x)) < 0,
					  "WRITE %d succeeded but its data is not in the target",
					  x);
			break;
		case OP_READ:
			if (kv)
				CHECK_MSG(check_pattern(kv + (size_t)x * slot_len, slot_len,
							slot_seed(round, read_slot[x])) < 0,
					  "READ %d succeeded but its data is not in the sink", x);
			break;
		case OP_FADD:
			fadds++;
			if (rv) {
				uint64_t v;
				memcpy(&v, rv + (size_t)x * 8, 8);
				CHECK_MSG(v < (uint64_t)NATOM, "FETCH_ADD %d fetched %" PRIu64, x,
					  v);
			}
			break;
		}
	}
	if (tv) {
		/* atomic: with only the local regions gone, a FETCH_ADD flushed at
		 * our side may still be executing at the target (the peer's thread) */
		uint64_t word = __atomic_load_n((const uint64_t *)(const void *)(tv + ATOM_OFF),
						__ATOMIC_ACQUIRE);
		/* every FETCH_ADD that succeeded was executed, once; one that was
		 * flushed (or whose result could not be delivered) may have been
		 * executed too, as on a device; never more than were posted */
		CHECK_MSG(word >= fadds && word <= NATOM,
			  "target counter %" PRIu64 ", %" PRIu64 " FETCH_ADDs succeeded", word,
			  fadds);
	}

	/* No byte written after deregistration; guards and neighbours intact. */
	struct zone *zs[] = { &t, &s, &k, &r };
	static const char *names[] = { "target", "source", "sink", "results" };
	for (int i = 0; i < 4; i++) {
		long at = zone_unchanged(zs[i]);
		CHECK_MSG(at < 0, "%s: byte %ld changed after deregistration or outside the region",
			  names[i], at);
	}
	for (int i = 0; i < 4; i++)
		zone_close(zs[i]);
	if (p.a->on_shm) {
		res->cma = shm_cma_peer_pulls(&tep(p.a)->shm.cma);
		res->copies = atomic_load(&tep(p.b)->shm.cma.copies);
		res->mapped = atomic_load(&tep(p.a)->shm.mapped.copies);
	}
	pair_close(&p);
}

static void dereg_rounds(enum where w, enum after how)
{
	int rounds = test_quick() ? 4 : ROUNDS, hits = 0, all_ok = 0, all_failed = 0;
	uint64_t copies = 0, mapped = 0;
	bool cma = false;
	/* A slow build (TSan) may send the whole stream before the deregistration
	 * gets in, round after round (the transmit path holds mr_lock's read side
	 * while it sends): up to 4x the rounds more while none hit the stream.
	 * Not on verbs, where no round ever does (below). */
	int most = test_on_verbs() ? rounds : 5 * rounds, ran = 0;

	for (int i = 0; (i < rounds || (hits == 0 && i < most)) && !test_failed; i++, ran++) {
		struct round_result res = { .ok = 0 };
		one_round(w, how, i, &res);
		copies += res.copies;
		mapped += res.mapped;
		cma |= res.cma;
		hits += res.ok > 0 && res.failed > 0;
		all_ok += res.failed == 0;
		all_failed += res.ok == 0;
	}
	if (test_failed)
		return;
	printf("  %d of %d rounds deregistered between a success and a failure of the stream "
	       "(%d: all of it succeeded first, %d: none of it)\n",
	       hits, ran, all_ok, all_failed);
	if (slot_len >= SHM_CMA_MIN && cma) {
		/* the case is about single copy: it must have been taken */
		printf("  %" PRIu64 " single copies\n", copies);
		CHECK_MSG(copies > 0, "single copy was agreed but never taken");
	}
	if (poison_shared && test_shm() == RCC_SHM_REQUIRE) {
		printf("  %" PRIu64 " mapped copies\n", mapped);
		CHECK_MSG(mapped > 0, "the target's memory was never copied through a mapping");
	}
	/* Else every round deregistered before or after the whole stream ran and
	 * the case proved less than it says. Soft-RoCE runs the whole stream
	 * before ibv_dereg_mr() returns, every time (seen in the VM: 16 of 16
	 * rounds all succeeded, even with dereg right after posting), so there
	 * only what follows the deregistration was checked: a skip, not a pass. */
	if (hits == 0 && test_on_verbs())
		SKIP_CASE("dereg-in-flight",
			  "verbs: the device ran the whole stream before rcc_mr_dereg() returned "
			  "in all %d rounds; only the requests after it were checked",
			  ran);
	/* tcp, shm: the stream was never caught in flight, on a build slow enough
	 * that the sender always won; what each round checked still holds, but
	 * the case did not run what it is for: a skip, counted as one */
	if (hits == 0)
		SKIP_CASE("dereg-in-flight",
			  "the stream always finished before the deregistration got in (%d rounds)",
			  ran);
}

/*
 * A SEND waiting to be retried: the peer has no receive posted, so it is
 * RNR-NAKed and sent again and again (rnr_retry: forever) from its source.
 * The source is deregistered and made inaccessible meanwhile: the next copy
 * must not be read from it, and the SEND fails with a protection error. This
 * holds whatever the timing (sent once before or not at all yet), so it
 * catches a transport that sends from a deregistered source every time.
 */
static void send_source_dereg_during_rnr(void)
{
	struct pair p;
	struct zone s;
	struct rcc_wc wc;

	memset(&s, 0, sizeof(s));
	CHECK_OK(pair_open(&p, NULL));
	CHECK_OK(zone_open(&s, p.ctx, 4 * PAGE, PROTECT));
	fill_pattern(s.p, 4 * PAGE, 7);
	struct rcc_sge sg = rcc_mr_sge(s.mr, s.p, 4 * PAGE);
	CHECK_OK(rcc_post_send(p.a, &sg, 1, 5, RCC_SEND_SIGNALED));
	CHECK_OK(zone_drop(&s));
	CHECK_OK(wait_one(p.cq_a, &wc, TEST_TIMEOUT_MS));
	CHECK_EQ(wc.wr_id, 5);
	CHECK_MSG(first_error_ok(LOCAL, wc.status), "SEND: %s", rcc_wc_status_str(wc.status));
	long at = zone_unchanged(&s);
	CHECK_MSG(at < 0, "source: byte %ld changed", at);
	zone_close(&s);
	pair_close(&p);
}

/*
 * A WRITE half in the socket when its source is deregistered and reused (the
 * tcp transport). A full socket takes a frame only in part; the rest must
 * still go out as it was when posted, although the application may overwrite
 * the region the moment rcc_mr_dereg() returned (the transport copies that
 * rest aside, tx.c save_partial). The peer's context is held -- its progress
 * thread stops at its next pass, as in test_shm -- while 32 KiB WRITEs are
 * posted one by one until the socket is full with a frame half sent; one more
 * WRITE is posted behind it, then the source is deregistered, at once
 * overwritten, and the peer let go. Every WRITE the socket had taken (the
 * half-sent one among them) completes successfully and the target holds its
 * bytes as they were at post time; the next fails with a local protection
 * error and the rest are flushed. On shared memory a frame goes into the
 * ring whole, never half: there the ring fills instead, and the same holds.
 */
enum {
	HS_SLOT = 32 << 10,
	HS_MAX = 512, /* 16 MiB: more than a loopback socket pair holds */
	HS_JUNK = 0x5A,
};

/* Once the transmit settles (bounded by end): false when all that was posted
 * is out, true when the stream is full -- the socket with a frame half sent,
 * or the ring without room for the next frame. *timed_out when neither. */
static bool stream_full(struct tcp_ep *ep, uint64_t end, bool *timed_out)
{
	for (;;) {
		rcci_lock_acquire(&ep->tx_lock);
		bool queued = ep->sq_tx != ep->sq_tail;
		bool half = ep->part_n > ep->part_i;
		bool no_room = ep->base.on_shm && queued && !rcci_shm_ring_tx_room(&ep->shm);
		rcci_lock_release(&ep->tx_lock);
		if (half || no_room)
			return true;
		if (!queued)
			return false;
		if (now_ms() >= end) {
			*timed_out = true;
			return false;
		}
		sched_yield();
	}
}

static uint64_t hs_seed(int round, int i) { return 7000 + (uint64_t)round * 1000 + (uint64_t)i; }

/* One try; *hit: a frame was half sent (shm: the ring was full) at deregistration. */
static void half_sent_round(int round, bool *hit)
{
	/* b is held still meanwhile: neither side may give the other up */
	struct pair_opts o = { .cq_depth = 2 * HS_MAX,
			       .split = true,
			       .attr_a = { .sq_depth = HS_MAX, .peer_timeout_ms = 3600000 },
			       .attr_b = { .peer_timeout_ms = 3600000 } };
	struct pair p;
	struct zone s, t;
	struct rcc_wc wc[HS_MAX];
	int n = 0, post_rc = 0;
	bool full = false, timed_out = false;

	memset(&s, 0, sizeof(s));
	memset(&t, 0, sizeof(t));
	CHECK_OK(pair_open(&p, &o));
	CHECK_OK(zone_open(&s, p.ctx, (size_t)HS_MAX * HS_SLOT, PROTECT));
	CHECK_OK(zone_open(&t, p.ctx_b, (size_t)HS_MAX * HS_SLOT, PROTECT));
	struct rcc_remote_mr rm = rcc_mr_remote(t.mr);
	struct tcp_ep *a = tep(p.a);
	pthread_mutex_t *held = &tctx(p.ctx_b)->eps_lock;

	rcci_lock_acquire(&a->tx_lock);
	uint32_t first = a->sq_tail;
	rcci_lock_release(&a->tx_lock);
	/* No CHECK while b is held: one that returns would leave it held. */
	pthread_mutex_lock(held);
	uint64_t end = now_ms() + TEST_TIMEOUT_MS;
	while (n < HS_MAX && !timed_out) {
		bool behind = full; /* one more, behind the full stream */
		fill_pattern(s.p + (size_t)n * HS_SLOT, HS_SLOT, hs_seed(round, n));
		struct rcc_sge sg = rcc_mr_sge(s.mr, s.p + (size_t)n * HS_SLOT, HS_SLOT);
		post_rc = rcc_post_write(p.a, &sg, 1, rm.addr + (uint64_t)n * HS_SLOT, rm.rkey,
					 (uint64_t)n, RCC_SEND_SIGNALED);
		if (post_rc)
			break;
		n++;
		if (behind)
			break;
		full = stream_full(a, end, &timed_out);
	}
	int dereg_rc = full ? rcc_mr_dereg(s.mr) : 0;
	rcci_lock_acquire(&a->tx_lock);
	uint32_t taken = a->sq_tx - first; /* the WRITEs the stream took, whole */
	bool half = a->part_n > a->part_i;
	size_t rest = 0;
	for (int k = a->part_i; k < a->part_n; k++)
		rest += a->part[k].iov_len;
	bool on_shm = a->base.on_shm;
	rcci_lock_release(&a->tx_lock);
	if (full && !dereg_rc) {
		s.mr = NULL;
		s.gone = true;
		memset(s.p, HS_JUNK, s.len); /* the application reuses the region */
	}
	pthread_mutex_unlock(held);

	CHECK_OK(post_rc);
	CHECK_MSG(!timed_out, "WRITE %d: the transmit neither finished nor stopped in %d ms", n - 1,
		  TEST_TIMEOUT_MS);
	CHECK_MSG(full, "%d WRITEs of %d KiB went out with the peer held: the stream never filled",
		  n, HS_SLOT >> 10);
	CHECK_OK(dereg_rc);
	*hit = on_shm || half;
	const char *how = on_shm ? "the ring full" :
			  half   ? "the last of them half sent" :
				   "none half sent (the socket full at a frame's end)";
	printf("  round %d: %u of %d WRITEs taken at deregistration; %s\n", round, (unsigned)taken,
	       n, how);
	if (half)
		printf("  (%zu bytes of its frame still to go)\n", rest);
	/* The WRITE posted behind the full stream is usually still whole in the
	 * queue, and the deregistration refuses it. A socket that found room
	 * again meanwhile (a slow build: TSan) took it too; then every WRITE,
	 * the half-sent one included, must arrive as posted. */
	if (taken == (uint32_t)n)
		printf("  (the WRITE behind the full stream went out too)\n");

	int got = wait_n(p.cq_a, wc, n, 2 * TEST_TIMEOUT_MS);
	CHECK_MSG(got == n, "%d of %d WRITEs completed", got, n);
	for (int i = 0; i < n; i++) {
		CHECK_EQ(wc[i].wr_id, i);
		if ((uint32_t)i < taken) {
			CHECK_MSG(wc[i].status == RCC_WC_SUCCESS, "WRITE %d (taken): %s", i,
				  rcc_wc_status_str(wc[i].status));
			const uint8_t *slot = t.p + (size_t)i * HS_SLOT;
			long at = check_pattern(slot, HS_SLOT, hs_seed(round, i));
			bool last = (uint32_t)i + 1 == taken && half;
			CHECK_MSG(
				at < 0,
				"WRITE %d%s succeeded, but its byte %ld in the target is 0x%02x%s",
				i, last ? " (half sent at deregistration)" : "", at, slot[at],
				slot[at] == HS_JUNK ?
					", written into the source after deregistration" :
					"");
		} else if ((uint32_t)i == taken) {
			CHECK_MSG(first_error_ok(LOCAL, wc[i].status), "WRITE %d (not taken): %s",
				  i, rcc_wc_status_str(wc[i].status));
		} else {
			CHECK_WC(wc[i], RCC_WC_WR_FLUSH_ERR);
		}
	}
	long at = zone_unchanged(&t);
	CHECK_MSG(at < 0, "target: guard byte %ld changed", at);
	zone_close(&s);
	zone_close(&t);
	pair_close(&p);
}

static void write_half_sent_source_reused(void)
{
	int hits = 0, ran = 0;

	if (test_on_verbs())
		SKIP_CASE("tcp",
			  "holds the peer's progress thread by the tcp transport's own lock");
	/* a frame ends exactly where the socket is full now and then: try again */
	for (; ran < 4 && !hits && !test_failed; ran++) {
		bool hit = false;
		half_sent_round(ran, &hit);
		hits += hit;
	}
	if (!test_failed && !hits)
		SKIP_CASE("dereg-in-flight",
			  "no frame was half sent at deregistration in %d rounds", ran);
}

/* The peer's WRITE/READ/atomic stream into a region deregistered under it. */
static void remote_region_dereg_protected(void) { dereg_rounds(REMOTE, PROTECT); }
static void remote_region_dereg_freed(void) { dereg_rounds(REMOTE, FREE); }
/* The endpoint's own source, sink and result regions deregistered under it. */
static void local_regions_dereg_protected(void) { dereg_rounds(LOCAL, PROTECT); }
static void local_regions_dereg_freed(void) { dereg_rounds(LOCAL, FREE); }

/* The same with requests large enough for single copy on shared memory (the
 * target copies from and into the initiator's buffers itself): the regions
 * poisoned, the initiator's (WRITE sources, READ sinks) and the target's. */
static void cma_rounds(enum where w)
{
	/* single copy is off by default: on for these rounds (on shared memory;
	 * elsewhere the same rounds run over the socket) */
	char *saved = getenv("RCC_SHM_CMA") ? strdup(getenv("RCC_SHM_CMA")) : NULL;

	setenv("RCC_SHM_CMA", "1", 1);
	slot_len = SLOT_CMA;
	dereg_rounds(w, POISON);
	slot_len = SLOT;
	if (saved)
		setenv("RCC_SHM_CMA", saved, 1);
	else
		unsetenv("RCC_SHM_CMA");
	free(saved);
}
/* The target's region on rcc_mem_alloc() memory, requests large enough to
 * be copied by the initiator through its mapping of it (shm_map.h) when on
 * shared memory: once rcc_mr_dereg() returned, no late copy changes a
 * canary, and a success's data was in place before. */
static void remote_region_dereg_poisoned_mapped(void)
{
	poison_shared = true;
	slot_len = SLOT_CMA;
	dereg_rounds(REMOTE, POISON);
	slot_len = SLOT;
	poison_shared = false;
}
static void local_regions_dereg_poisoned_cma(void) { cma_rounds(LOCAL); }
static void remote_region_dereg_poisoned_cma(void) { cma_rounds(REMOTE); }

TEST_MAIN(TEST(remote_region_dereg_protected), TEST(remote_region_dereg_freed),
	  TEST(local_regions_dereg_protected), TEST(local_regions_dereg_freed),
	  TEST(send_source_dereg_during_rnr), TEST(write_half_sent_source_reused),
	  TEST(local_regions_dereg_poisoned_cma), TEST(remote_region_dereg_poisoned_cma),
	  TEST(remote_region_dereg_poisoned_mapped))
