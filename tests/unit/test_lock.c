/* SPDX-License-Identifier: BSD-3-Clause */
/* base/lock.h: the transport's hot-path mutex excludes, and wakes its sleepers. */
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include "base/lock.h"
#include "harness.h"

enum {
	THREADS = 4,
	ROUNDS = 20000
};

struct shared {
	struct rcci_lock lock;
	volatile unsigned long counter; /* only ever touched under lock */
	atomic_bool acquired;
};

/* A join that gives up at the deadline: a lost wake-up fails, never hangs. */
static bool join_by(pthread_t th, uint64_t deadline_ms)
{
	uint64_t left = deadline_ms > now_ms() ? deadline_ms - now_ms() : 0;
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += (time_t)(left / 1000);
	until.tv_nsec += (long)(left % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	return pthread_timedjoin_np(th, NULL, &until) == 0;
}

static void try_on_free_and_held(void)
{
	struct rcci_lock l;

	rcci_lock_init(&l);
	CHECK(rcci_lock_try(&l));
	CHECK(!rcci_lock_try(&l)); /* held: try never blocks, never takes it twice */
	rcci_lock_release(&l);
	CHECK(rcci_lock_try(&l));
	rcci_lock_release(&l);
	rcci_lock_acquire(&l);
	CHECK(!rcci_lock_try(&l));
	rcci_lock_release(&l);
}

/* Read, yield now and then inside the section, write back: any second
 * thread let in at the same time loses an increment. */
static void *increment(void *arg)
{
	struct shared *s = arg;

	for (int i = 0; i < ROUNDS; i++) {
		rcci_lock_acquire(&s->lock);
		unsigned long v = s->counter;
		if (i % 64 == 0)
			sched_yield();
		s->counter = v + 1;
		rcci_lock_release(&s->lock);
	}
	return NULL;
}

static void exclusion(void)
{
	static struct shared s;
	pthread_t th[THREADS];
	int started = 0;

	rcci_lock_init(&s.lock);
	s.counter = 0;
	for (; started < THREADS; started++)
		if (pthread_create(&th[started], NULL, increment, &s))
			break;
	uint64_t deadline = now_ms() + TEST_TIMEOUT_MS;
	bool joined = true;
	for (int t = 0; t < started; t++)
		joined = join_by(th[t], deadline) && joined;
	CHECK_EQ(started, THREADS);
	CHECK_MSG(joined, "a thread never got the lock within %d ms", TEST_TIMEOUT_MS);
	CHECK_EQ(s.counter, (unsigned long)THREADS * ROUNDS);
}

static void *take_once(void *arg)
{
	struct shared *s = arg;

	rcci_lock_acquire(&s->lock);
	atomic_store(&s->acquired, true);
	rcci_lock_release(&s->lock);
	return NULL;
}

/*
 * A thread that finds the lock held marks the word (2) before it sleeps; the
 * holder's unlock must wake it. Seeing the mark means the waiter is at, or
 * about to enter, its futex wait: the unlock races with that, as in use.
 */
static void sleeper_is_woken(void)
{
	static struct shared s;
	pthread_t th;

	rcci_lock_init(&s.lock);
	atomic_store(&s.acquired, false);
	rcci_lock_acquire(&s.lock);
	if (pthread_create(&th, NULL, take_once, &s)) {
		rcci_lock_release(&s.lock);
		CHECK_MSG(false, "pthread_create failed");
	}
	uint64_t deadline = now_ms() + TEST_TIMEOUT_MS;
	while (atomic_load(&s.lock.word) != 2 && now_ms() < deadline)
		sched_yield();
	bool marked = atomic_load(&s.lock.word) == 2;
	CHECK(!atomic_load(&s.acquired)); /* held: it cannot have got in */
	rcci_lock_release(&s.lock);
	bool joined = join_by(th, now_ms() + TEST_TIMEOUT_MS);
	CHECK_MSG(marked, "the waiter never marked the lock contended");
	CHECK_MSG(joined, "the waiter was not woken by the unlock within %d ms", TEST_TIMEOUT_MS);
	CHECK(atomic_load(&s.acquired));
	CHECK_EQ(atomic_load(&s.lock.word), 0); /* its own unlock freed it */
}

TEST_MAIN(TEST(try_on_free_and_held), TEST(exclusion), TEST(sleeper_is_woken))
