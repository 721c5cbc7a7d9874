/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A mutex for the locks every operation takes: on tcp and shared memory an
 * endpoint's send, receive and receive-queue locks, a CQ's ring and endpoint
 * list, an SRQ; on verbs the send-slot lock of rule 2 (sq_slots.h).
 *
 * Why not pthread_mutex_t: a tcp or shared-memory SEND takes and drops about
 * fifteen of them, and glibc's lock, trylock and unlock are calls through
 * the PLT that check the mutex's type, owner and robustness before their one
 * atomic instruction: 55 user-space instructions a pair, a fifth of all the
 * instructions of the operation (callgrind, bench/overhead.sh). Here the
 * uncontended lock is one compare-and-swap and the unlock one exchange,
 * inlined; only a waiter enters the kernel.
 *
 * Behaviour is glibc's default mutex: no spinning, a contended lock sleeps
 * in futex(2) until the holder drops it; not recursive, not robust, no
 * priority inheritance, no condition variables (none of these locks is
 * waited on). The word: 0 free, 1 held, 2 held and a thread may sleep on
 * it. Acquire on lock, release on unlock, as pthread's, so the sanitizers
 * see the same ordering.
 */
#ifndef RCC_BASE_LOCK_H
#define RCC_BASE_LOCK_H

#include <stdatomic.h>
#include <stdbool.h>

struct rcci_lock {
	atomic_uint word;
};

/* futex(2) on a lock's word, for this lock and base/rwlock.h (lock.c):
 * sleep while *word still reads seen (returns at once otherwise, or on a
 * signal: callers look again); wake up to n sleepers. */
void rcci_futex_wait(atomic_uint *word, unsigned int seen);
void rcci_futex_wake(atomic_uint *word, int n);

/* Sleep until the lock is free and take it (lock.c). */
void rcci_lock_contended(struct rcci_lock *l);
/* Wake one sleeper (lock.c). */
void rcci_lock_wake(struct rcci_lock *l);

/* Free, unlocked. Nothing to destroy: a free lock holds no resource. */
static inline void rcci_lock_init(struct rcci_lock *l) { atomic_init(&l->word, 0); }

/* Take the lock if it is free; true when taken. Never blocks. */
static inline bool rcci_lock_try(struct rcci_lock *l)
{
	unsigned int free_word = 0;

	return atomic_compare_exchange_strong_explicit(&l->word, &free_word, 1,
						       memory_order_acquire, memory_order_relaxed);
}

/* Take the lock; blocks while another thread holds it. */
static inline void rcci_lock_acquire(struct rcci_lock *l)
{
	if (__builtin_expect(!rcci_lock_try(l), 0))
		rcci_lock_contended(l);
}

/* Drop a lock the calling thread holds, waking one sleeper if any may sleep. */
static inline void rcci_lock_release(struct rcci_lock *l)
{
	if (__builtin_expect(atomic_exchange_explicit(&l->word, 0, memory_order_release) == 2, 0))
		rcci_lock_wake(l);
}

#endif
