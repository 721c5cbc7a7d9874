/* SPDX-License-Identifier: BSD-3-Clause */
/* Atomics under contention: two initiators on one 8-byte word. */
#include <pthread.h>
#include <stdlib.h>

#include "pair.h"

#define ATOMIC_ACCESS                                                                 \
	(RCC_ACCESS_LOCAL_WRITE | RCC_ACCESS_REMOTE_ATOMIC | RCC_ACCESS_REMOTE_READ | \
	 RCC_ACCESS_REMOTE_WRITE)

/* Two clients connected to one target context. */
struct duo {
	struct rcc_ctx *ctx;
	struct rcc_cq *cq[2], *tcq;
	struct rcc_listener *lst;
	struct rcc_ep *a[2], *t[2];
	struct tbuf target;
	struct rcc_remote_mr rm;
};

struct accept_two {
	struct duo *d;
	int rc;
};

static void *accept_two(void *arg)
{
	struct accept_two *j = arg;
	struct rcc_ep_attr a = { .send_cq = j->d->tcq };
	for (int i = 0; i < 2 && !j->rc; i++)
		j->rc = rcc_accept(j->d->lst, &a, TEST_TIMEOUT_MS, &j->d->t[i]);
	return NULL;
}

static int duo_open(struct duo *d)
{
	char addr[128];
	pthread_t th;
	int rc;

	memset(d, 0, sizeof(*d));
	rc = test_ctx_open(&d->ctx);
	/* The initiators sleep between completions: two busy pollers would starve
	 * the target's progress on a two-core machine. */
	for (int i = 0; i < 2 && !rc; i++)
		rc = rcc_cq_create(d->ctx, &(struct rcc_cq_attr){ .mode = RCC_CQ_WAIT }, &d->cq[i]);
	if (!rc)
		rc = rcc_cq_create(d->ctx, NULL, &d->tcq);
	snprintf(addr, sizeof(addr), "%s:0", test_addr());
	if (!rc)
		rc = rcc_listen(d->ctx, addr, 0, &d->lst);
	if (!rc)
		rc = tbuf_alloc(&d->target, d->ctx, 4096, ATOMIC_ACCESS);
	if (rc)
		return rc;
	d->rm = rcc_mr_remote(d->target.mr);
	snprintf(addr, sizeof(addr), "%s:%d", test_addr(), rcc_listener_port(d->lst));
	struct accept_two j = { d, 0 };
	if (pthread_create(&th, NULL, accept_two, &j))
		return -EAGAIN;
	for (int i = 0; i < 2 && !rc; i++) {
		struct rcc_ep_attr a = { .send_cq = d->cq[i], .sq_depth = 64 };
		rc = rcc_connect(d->ctx, addr, &a, TEST_TIMEOUT_MS, &d->a[i]);
	}
	pthread_join(th, NULL);
	return rc ? rc : j.rc;
}

static void duo_close(struct duo *d)
{
	for (int i = 0; i < 2; i++) {
		if (d->a[i])
			rcc_ep_close(d->a[i]);
		if (d->t[i])
			rcc_ep_close(d->t[i]);
	}
	tbuf_free(&d->target);
	if (d->lst)
		rcc_listener_close(d->lst);
	for (int i = 0; i < 2; i++)
		if (d->cq[i])
			rcc_cq_destroy(d->cq[i]);
	if (d->tcq)
		rcc_cq_destroy(d->tcq);
	if (d->ctx)
		rcc_ctx_close(d->ctx);
}

/* ---------------------------------------------------------------- FADD */

/* 100 000 each; 5 000 in quick mode (valgrind) */
#define FADDS (test_quick() ? 5000 : 100000)
#define INFLIGHT 16

struct fadd_job {
	struct duo *d;
	int who;
	uint8_t *seen; /* one flag per value the word ever held, shared */
	int rc;
	const char *why;
};

static void *fadd_worker(void *arg)
{
	struct fadd_job *j = arg;
	struct rcc_ep *ep = j->d->a[j->who];
	struct rcc_cq *cq = j->d->cq[j->who];
	struct tbuf res = { 0 };
	struct rcc_wc wc[INFLIGHT];
	long posted = 0, done = 0;

	j->rc = tbuf_alloc(&res, j->d->ctx, INFLIGHT * 8, RCC_ACCESS_LOCAL_WRITE);
	if (j->rc)
		return NULL;
	uint64_t end = now_ms() + 120000;
	while (done < FADDS) {
		while (posted < FADDS && posted - done < INFLIGHT) {
			struct rcc_sge s = tbuf_sge(&res, (size_t)(posted % INFLIGHT) * 8, 8);
			j->rc = rcc_post_fadd(ep, &s, j->d->rm.addr, j->d->rm.rkey, 1,
					      (uint64_t)posted, RCC_SEND_SIGNALED);
			if (j->rc) {
				j->why = "post";
				goto out;
			}
			posted++;
		}
		int n = rcc_cq_wait(cq, wc, INFLIGHT, 1000);
		if (n < 0 && now_ms() > end) {
			j->rc = n;
			j->why = "no completion in time";
			goto out;
		}
		for (int i = 0; i < n; i++) {
			if (wc[i].status != RCC_WC_SUCCESS || wc[i].wr_id != (uint64_t)done) {
				j->rc = -EIO;
				j->why = "bad completion";
				goto out;
			}
			uint64_t old = *(uint64_t *)(res.p + (wc[i].wr_id % INFLIGHT) * 8);
			if (old >= 2 * FADDS ||
			    __atomic_exchange_n(&j->seen[old], 1, __ATOMIC_RELAXED)) {
				j->rc = -EIO;
				j->why = "a value was returned twice or out of range";
				goto out;
			}
			done++;
		}
	}
out:
	tbuf_free(&res);
	return NULL;
}

/* Two initiators doing 100 000 FADDs each end at the exact sum, and every
 * intermediate value is returned exactly once. */
static void fadd_contention(void)
{
	struct duo d;
	pthread_t th[2];
	struct fadd_job j[2];

	CHECK_OK(duo_open(&d));
	uint8_t *seen = calloc(2 * FADDS, 1);
	CHECK(seen);
	*(uint64_t *)d.target.p = 0;
	for (int i = 0; i < 2; i++) {
		j[i] = (struct fadd_job){ .d = &d, .who = i, .seen = seen };
		CHECK(pthread_create(&th[i], NULL, fadd_worker, &j[i]) == 0);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 2; i++)
		CHECK_MSG(j[i].rc == 0, "initiator %d: %s (%s)", i, j[i].why ? j[i].why : "",
			  rcc_strerror(j[i].rc));
	CHECK_EQ(__atomic_load_n((uint64_t *)d.target.p, __ATOMIC_SEQ_CST), 2 * FADDS);
	for (long v = 0; v < 2 * FADDS; v++)
		CHECK_MSG(seen[v], "value %ld never returned", v);
	free(seen);
	duo_close(&d);
}

/* ------------------------------------------------------------ CAS lock */

#define ROUNDS 300

struct lock_job {
	struct duo *d;
	int who;
	int rc;
	const char *why;
	long contended; /* times the lock was found taken */
};

/* Post one request and wait for its completion. */
static int one(struct rcc_ep *ep, struct rcc_cq *cq, struct rcc_send_wr *wr)
{
	struct rcc_wc wc;
	wr->flags |= RCC_SEND_SIGNALED;
	int rc = rcc_post_send_list(ep, wr, 1, NULL);
	if (rc)
		return rc;
	rc = wait_one(cq, &wc, TEST_TIMEOUT_MS);
	if (rc)
		return rc;
	return wc.status == RCC_WC_SUCCESS ? 0 : -EIO;
}

static void *lock_worker(void *arg)
{
	struct lock_job *j = arg;
	struct rcc_ep *ep = j->d->a[j->who];
	struct rcc_cq *cq = j->d->cq[j->who];
	const uint64_t lock = j->d->rm.addr, counter = j->d->rm.addr + 8;
	const uint32_t rkey = j->d->rm.rkey;
	const uint64_t me = (uint64_t)j->who + 1;
	struct tbuf b = { 0 };

	j->rc = tbuf_alloc(&b, j->d->ctx, 64, RCC_ACCESS_LOCAL_WRITE);
	if (j->rc)
		return NULL;
	uint64_t *old = (uint64_t *)b.p, *val = (uint64_t *)(b.p + 8);
	struct rcc_sge so = tbuf_sge(&b, 0, 8), sv = tbuf_sge(&b, 8, 8);
	uint64_t end = now_ms() + 120000;

	for (int r = 0; r < ROUNDS && !j->rc; r++) {
		/* acquire: CAS 0 -> me until it was 0 */
		for (;;) {
			struct rcc_send_wr cas = { .sg_list = &so,
						   .num_sge = 1,
						   .opcode = RCC_WR_CAS,
						   .remote_addr = lock,
						   .rkey = rkey,
						   .compare_add = 0,
						   .swap = me };
			if ((j->rc = one(ep, cq, &cas))) {
				j->why = "CAS acquire";
				break;
			}
			if (*old == 0)
				break;
			if (*old != 3 - me) {
				j->rc = -EIO;
				j->why = "the lock held a value nobody wrote";
				break;
			}
			j->contended++;
			if (now_ms() > end) {
				j->rc = -ETIMEDOUT;
				j->why = "never got the lock";
				break;
			}
		}
		if (j->rc)
			break;
		/* critical section: read, increment, write back (not atomic by itself) */
		struct rcc_send_wr rd = { .sg_list = &sv,
					  .num_sge = 1,
					  .opcode = RCC_WR_READ,
					  .remote_addr = counter,
					  .rkey = rkey };
		struct rcc_send_wr wr = { .sg_list = &sv,
					  .num_sge = 1,
					  .opcode = RCC_WR_WRITE,
					  .remote_addr = counter,
					  .rkey = rkey };
		if ((j->rc = one(ep, cq, &rd))) {
			j->why = "READ";
			break;
		}
		(*val)++;
		if ((j->rc = one(ep, cq, &wr))) {
			j->why = "WRITE";
			break;
		}
		/* release: CAS me -> 0 must find me */
		struct rcc_send_wr rel = { .sg_list = &so,
					   .num_sge = 1,
					   .opcode = RCC_WR_CAS,
					   .remote_addr = lock,
					   .rkey = rkey,
					   .compare_add = me,
					   .swap = 0 };
		if ((j->rc = one(ep, cq, &rel))) {
			j->why = "CAS release";
			break;
		}
		if (*old != me) {
			j->rc = -EIO;
			j->why = "released a lock we did not hold";
		}
	}
	tbuf_free(&b);
	return NULL;
}

/* CAS as a lock: two initiators increment a remote counter by read-modify-
 * write under the lock; no increment is lost. */
static void cas_lock(void)
{
	struct duo d;
	pthread_t th[2];
	struct lock_job j[2];

	CHECK_OK(duo_open(&d));
	memset(d.target.p, 0, 16);
	for (int i = 0; i < 2; i++) {
		j[i] = (struct lock_job){ .d = &d, .who = i };
		CHECK(pthread_create(&th[i], NULL, lock_worker, &j[i]) == 0);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 2; i++)
		CHECK_MSG(j[i].rc == 0, "initiator %d: %s (%s)", i, j[i].why ? j[i].why : "",
			  rcc_strerror(j[i].rc));
	CHECK_EQ(*(uint64_t *)(d.target.p + 8), 2 * ROUNDS);
	CHECK_EQ(*(uint64_t *)d.target.p, 0);
	printf("  lock contended %ld times\n", j[0].contended + j[1].contended);
	duo_close(&d);
}

TEST_MAIN(TEST(fadd_contention), TEST(cas_lock))
