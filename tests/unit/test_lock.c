/* SPDX-License-Identifier: BSD-3-Clause */
/* base/lock.h and base/rwlock.h: the transport's hot-path locks exclude, and wake their
 * sleepers. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <time.h>

#include "base/lock.h"
#include "base/rwlock.h"
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

/* Start one thread per entry of fns on arg and join them all by one
 * deadline: false (with the reason printed) if one did not start or end. */
static bool run_threads(void *(*const fns[])(void *), int n, void *arg)
{
	pthread_t th[8];
	int started = 0;
	bool joined = true;

	for (; started < n && started < 8; started++)
		if (pthread_create(&th[started], NULL, fns[started], arg))
			break;
	uint64_t deadline = now_ms() + TEST_TIMEOUT_MS;
	for (int t = 0; t < started; t++)
		joined = join_by(th[t], deadline) && joined;
	if (started < n)
		fprintf(stderr, "started %d of %d threads\n", started, n);
	else if (!joined)
		fprintf(stderr, "a thread never got the lock within %d ms\n", TEST_TIMEOUT_MS);
	return started == n && joined;
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
	void *(*const fns[THREADS])(void *) = { increment, increment, increment, increment };

	rcci_lock_init(&s.lock);
	s.counter = 0;
	CHECK(run_threads(fns, THREADS, &s));
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

struct rw_shared {
	struct rcci_rwlock lock;
	volatile unsigned long a, b; /* a writer keeps a == b; readers check it */
	atomic_bool reader_in, reader_out, writer_in, writer_out;
	atomic_int torn;
};

static void *rw_writer(void *arg)
{
	struct rw_shared *s = arg;

	for (int i = 0; i < ROUNDS / 4; i++) {
		rcci_rwlock_write(&s->lock);
		unsigned long v = s->a + 1;
		s->a = v;
		if (i % 64 == 0)
			sched_yield();
		s->b = v;
		rcci_rwlock_write_end(&s->lock);
	}
	return NULL;
}

static void *rw_reader(void *arg)
{
	struct rw_shared *s = arg;

	for (int i = 0; i < ROUNDS; i++) {
		rcci_rwlock_read(&s->lock);
		unsigned long a = s->a;
		if (i % 64 == 0)
			sched_yield();
		if (s->b != a)
			atomic_fetch_add(&s->torn, 1);
		rcci_rwlock_read_end(&s->lock);
	}
	return NULL;
}

/* Two writers and two readers: a reader never sees a writer's half-done
 * update, the writers' increments all land, nobody sleeps for good. */
static void rw_exclusion(void)
{
	static struct rw_shared s;
	void *(*const fns[4])(void *) = { rw_writer, rw_writer, rw_reader, rw_reader };

	rcci_rwlock_init(&s.lock);
	s.a = s.b = 0;
	atomic_store(&s.torn, 0);
	CHECK(run_threads(fns, 4, &s));
	CHECK_EQ(atomic_load(&s.torn), 0);
	CHECK_EQ(s.a, 2UL * (ROUNDS / 4));
	CHECK_EQ(s.b, s.a);
	CHECK_EQ(atomic_load(&s.lock.word), 0);
}

static void *write_once(void *arg)
{
	struct rw_shared *s = arg;

	rcci_rwlock_write(&s->lock);
	atomic_store(&s->writer_in, true);
	rcci_rwlock_write_end(&s->lock);
	atomic_store(&s->writer_out, true);
	return NULL;
}

static void *read_once(void *arg)
{
	struct rw_shared *s = arg;

	rcci_rwlock_read(&s->lock);
	atomic_store(&s->reader_in, true);
	rcci_rwlock_read_end(&s->lock);
	atomic_store(&s->reader_out, true);
	return NULL;
}

/* Wait (bounded) until the lock's word has all of bits set. */
static bool word_reaches(struct rcci_rwlock *l, unsigned int bits)
{
	uint64_t deadline = now_ms() + TEST_TIMEOUT_MS;

	while ((atomic_load(&l->word) & bits) != bits && now_ms() < deadline)
		sched_yield();
	return (atomic_load(&l->word) & bits) == bits;
}

/*
 * The write side waits for the reader inside (as rcc_mr_dereg waits out a
 * copy), and while it waits a new reader is held back (writer preference:
 * a stream of copies cannot starve a deregistration); the reader's end lets
 * the writer in, the writer's end lets the held-back reader in.
 */
static void rw_writer_waits_and_is_preferred(void)
{
	static struct rw_shared s;
	pthread_t w, r;

	rcci_rwlock_init(&s.lock);
	atomic_store(&s.writer_in, false);
	atomic_store(&s.writer_out, false);
	atomic_store(&s.reader_in, false);
	atomic_store(&s.reader_out, false);
	rcci_rwlock_read(&s.lock); /* a copy in progress */
	if (pthread_create(&w, NULL, write_once, &s)) {
		rcci_rwlock_read_end(&s.lock);
		CHECK_MSG(false, "pthread_create failed");
	}
	bool waiting = word_reaches(&s.lock, RCCI_RW_WAITING);
	bool writer_early = atomic_load(&s.writer_in);
	bool reader_started = !pthread_create(&r, NULL, read_once, &s);
	/* the new reader counts itself in, sees the writer waiting and backs
	 * off; it must not get in while the writer waits */
	bool reader_early = false;
	if (reader_started) {
		uint64_t watch = now_ms() + 100; /* how long we watch for a wrong entry */
		while (now_ms() < watch && !atomic_load(&s.reader_in))
			sched_yield();
		reader_early = atomic_load(&s.reader_in);
	}
	rcci_rwlock_read_end(&s.lock);
	uint64_t deadline = now_ms() + TEST_TIMEOUT_MS;
	bool w_joined = join_by(w, deadline);
	bool r_joined = !reader_started || join_by(r, deadline);
	CHECK(reader_started);
	CHECK_MSG(waiting, "the writer never said it waits");
	CHECK_MSG(!writer_early, "the write side was taken while a reader was inside");
	CHECK_MSG(!reader_early, "a new reader got in while a writer waited");
	CHECK_MSG(w_joined, "the writer was not let in when the reader left");
	CHECK_MSG(r_joined, "the held-back reader was not let in when the writer left");
	CHECK(atomic_load(&s.writer_out) && atomic_load(&s.reader_out));
	CHECK_EQ(atomic_load(&s.lock.word), 0);
}

TEST_MAIN(TEST(try_on_free_and_held), TEST(exclusion), TEST(sleeper_is_woken), TEST(rw_exclusion),
	  TEST(rw_writer_waits_and_is_preferred))
