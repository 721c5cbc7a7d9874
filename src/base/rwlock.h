/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A readers-writer lock for registered memory (the tcp transport's mr_lock):
 * every copy into or out of a registered region, and every key check, holds
 * the read side, two or three times per operation; rcc_mr_reg() and
 * rcc_mr_dereg() take the write side, and the write side's return is what
 * guarantees that no copy touches a deregistered region any more.
 *
 * Why not pthread_rwlock_t: its read lock and unlock are calls through the
 * PLT that cost about 60 instructions a pair, 3-4% of a tcp or
 * shared-memory operation (callgrind); here the uncontended read side is one
 * atomic add to take and one to drop, inlined.
 *
 * Behaviour is the pthread lock it replaces, kind
 * PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP: readers share it; a writer
 * waiting for it holds back new readers (a deregistration must not starve
 * behind a stream of remote writes), so a thread must never take the read
 * side twice; writers exclude each other. Waiters sleep in futex(2). Acquire
 * on every lock, release on every unlock, so the sanitizers see a lock's
 * ordering.
 *
 * The word: readers inside in the low bits, WAITING while a writer waits
 * for them to leave, HELD while a writer holds it.
 */
#ifndef RCC_BASE_RWLOCK_H
#define RCC_BASE_RWLOCK_H

#include <stdatomic.h>

#include "base/lock.h"

#define RCCI_RW_HELD 0x80000000u
#define RCCI_RW_WAITING 0x40000000u
#define RCCI_RW_READERS 0x3fffffffu

struct rcci_rwlock {
	atomic_uint word;
	struct rcci_lock writers; /* one writer at a time in the protocol */
};

/* Slow halves (rwlock.c): a reader that met a writer; the last reader out
 * with a writer waiting. */
void rcci_rwlock_read_wait(struct rcci_rwlock *l);
void rcci_rwlock_wake(struct rcci_rwlock *l);

/* Free. Nothing to destroy: a free lock holds no resource. */
static inline void rcci_rwlock_init(struct rcci_rwlock *l)
{
	atomic_init(&l->word, 0);
	rcci_lock_init(&l->writers);
}

/* Take the read side; blocks while a writer holds or waits for the lock. */
static inline void rcci_rwlock_read(struct rcci_rwlock *l)
{
	unsigned int was = atomic_fetch_add_explicit(&l->word, 1, memory_order_acquire);

	if (__builtin_expect(was & (RCCI_RW_HELD | RCCI_RW_WAITING), 0))
		rcci_rwlock_read_wait(l);
}

/* Drop the read side; the last reader out wakes a waiting writer. */
static inline void rcci_rwlock_read_end(struct rcci_rwlock *l)
{
	unsigned int was = atomic_fetch_sub_explicit(&l->word, 1, memory_order_release);

	if (__builtin_expect((was & (RCCI_RW_READERS | RCCI_RW_WAITING)) == (RCCI_RW_WAITING | 1),
			     0))
		rcci_rwlock_wake(l);
}

/* Take the write side: blocks new readers at once, then waits until the
 * readers inside have left and no other writer holds it. */
void rcci_rwlock_write(struct rcci_rwlock *l);
/* Drop the write side and wake every sleeper. */
void rcci_rwlock_write_end(struct rcci_rwlock *l);

#endif
