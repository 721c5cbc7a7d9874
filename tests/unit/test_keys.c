/* SPDX-License-Identifier: BSD-3-Clause */
/* The tcp transport's memory-key table: random keys, lookups, removal, growth. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "harness.h"
#include "transport/tcp/tcp.h"

static void insert_find_remove(void)
{
	enum {
		N = 5000
	};
	struct key_table t;
	struct tcp_mr *mr = calloc(N, sizeof(*mr));

	CHECK(mr);
	CHECK_OK(rcci_keys_init(&t));
	for (int i = 0; i < N; i++) {
		CHECK_OK(rcci_keys_insert(&t, &mr[i]));
		CHECK(mr[i].base.lkey != 0 && mr[i].base.lkey == mr[i].base.rkey);
	}
	for (int i = 0; i < N; i++)
		CHECK(keys_find(&t, mr[i].base.lkey) == &mr[i]);
	/* remove every other one; the rest stay reachable across tombstones */
	for (int i = 0; i < N; i += 2)
		rcci_keys_remove(&t, mr[i].base.lkey);
	for (int i = 0; i < N; i++)
		CHECK(keys_find(&t, mr[i].base.lkey) == (i % 2 ? &mr[i] : NULL));
	/* reuse the freed slots */
	for (int i = 0; i < N; i += 2)
		CHECK_OK(rcci_keys_insert(&t, &mr[i]));
	for (int i = 0; i < N; i++)
		CHECK(keys_find(&t, mr[i].base.lkey) == &mr[i]);
	CHECK(keys_find(&t, 0) == NULL);
	CHECK(keys_find(&t, 0xffffffffu) == NULL);
	rcci_keys_free(&t);
	free(mr);
}

/* Keys are not sequential: a peer cannot guess the next one. */
static void keys_look_random(void)
{
	struct key_table t;
	struct tcp_mr mr[64];
	int small_steps = 0;

	CHECK_OK(rcci_keys_init(&t));
	for (int i = 0; i < 64; i++)
		CHECK_OK(rcci_keys_insert(&t, &mr[i]));
	for (int i = 1; i < 64; i++) {
		uint32_t d = mr[i].base.lkey - mr[i - 1].base.lkey;
		if (d < 1024 || d > 0xffffffffu - 1024)
			small_steps++;
	}
	CHECK(small_steps < 3);
	rcci_keys_free(&t);
}

struct dereg_job {
	struct rcc_mr *mr;
	atomic_int done;
	int rc;
};

static void *dereg_thread(void *arg)
{
	struct dereg_job *j = arg;
	j->rc = rcc_mr_dereg(j->mr);
	atomic_store(&j->done, 1);
	return NULL;
}

/*
 * rcc_mr_dereg() waits out every copy into or out of the region: each copy
 * (rx.c target_io and rcci_rx_sge_io, tx.c rcci_tx_flush) runs under the read side of
 * mr_lock with the key found live. With the read side held here, as by a copy
 * in progress, dereg must not return and the key must stay live; once it is
 * released, dereg returns and the key is gone. (The integration test
 * test_dereg_inflight checks the same promise from outside, but the window of
 * a single copy is too short for it to catch a dereg that does not wait.)
 */
static void dereg_waits_for_copies(void)
{
	static uint8_t buf[4096];
	struct rcc_ctx_attr a = { .transport = RCC_TRANSPORT_TCP };
	struct dereg_job j = { .rc = 1 };
	struct rcc_ctx *ctx;
	pthread_t th;

	CHECK_OK(rcc_ctx_open(&a, &ctx));
	CHECK_OK(rcc_mr_reg(ctx, buf, sizeof(buf), RCC_ACCESS_LOCAL_WRITE | RCC_ACCESS_REMOTE_WRITE,
			    &j.mr));
	struct tcp_ctx *t = tctx(ctx);
	uint32_t key = rcc_mr_rkey(j.mr);
	uint64_t addr = (uint64_t)(uintptr_t)buf;

	rcci_rwlock_read(&t->mr_lock); /* a copy in progress */
	if (pthread_create(&th, NULL, dereg_thread, &j)) {
		rcci_rwlock_read_end(&t->mr_lock);
		CHECK_MSG(false, "pthread_create failed");
	}
	/* Not a wait for something to happen: 200 ms is how long we watch for
	 * a wrong early return (a correct dereg cannot return at all while the
	 * read side is held, however slow the machine). */
	uint64_t end = now_ms() + 200;
	while (!atomic_load(&j.done) && now_ms() < end)
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	bool returned_early = atomic_load(&j.done);
	bool live = rcci_mr_covers_locked(t, key, addr, 64, RCC_ACCESS_REMOTE_WRITE);
	rcci_rwlock_read_end(&t->mr_lock);
	pthread_join(th, NULL);
	CHECK_MSG(!returned_early, "rcc_mr_dereg returned while a copy held the region");
	CHECK_MSG(live, "the key went away while a copy held the region");
	CHECK_OK(j.rc);
	/* gone from the table, not merely failing its checks: a stale entry
	 * would point at the freed region descriptor */
	rcci_rwlock_read(&t->mr_lock);
	bool stale = keys_find(&t->keys, key) != NULL;
	rcci_rwlock_read_end(&t->mr_lock);
	CHECK_MSG(!stale, "the key table still names the deregistered region");
	CHECK(!rcci_mr_covers(t, key, addr, 64, RCC_ACCESS_REMOTE_WRITE));
	CHECK_OK(rcc_ctx_close(ctx));
}

TEST_MAIN(TEST(insert_find_remove), TEST(keys_look_random), TEST(dereg_waits_for_copies))
