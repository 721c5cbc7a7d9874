/* SPDX-License-Identifier: BSD-3-Clause */
/* The sleeping halves of rwlock.h and its write side (rare: registration). */
#include "rwlock.h"

#include <limits.h>

void rcci_rwlock_wake(struct rcci_rwlock *l) { rcci_futex_wake(&l->word, INT_MAX); }

/*
 * A reader whose add found a writer holding or waiting: it takes its count
 * back out (as an unlock, so a writer waiting for the readers to leave
 * still sees the last one go), sleeps until no writer holds or waits, and
 * adds itself again. futex(2) sleeps only if the word still reads what was
 * looked at, and the writer's end wakes every sleeper, so a reader cannot
 * sleep through it.
 */
void rcci_rwlock_read_wait(struct rcci_rwlock *l)
{
	unsigned int was;

	do {
		rcci_rwlock_read_end(l);
		for (unsigned int w = atomic_load_explicit(&l->word, memory_order_relaxed);
		     w & (RCCI_RW_HELD | RCCI_RW_WAITING);
		     w = atomic_load_explicit(&l->word, memory_order_relaxed))
			rcci_futex_wait(&l->word, w);
		was = atomic_fetch_add_explicit(&l->word, 1, memory_order_acquire);
	} while (was & (RCCI_RW_HELD | RCCI_RW_WAITING));
}

/*
 * Say a writer waits (new readers back off from here on), then take HELD
 * when no reader is inside. The readers' adds and this writer's bits are
 * changes of one word, so each reader either got in before WAITING (and is
 * counted: the writer waits for it) or saw WAITING (and backs off).
 */
void rcci_rwlock_write(struct rcci_rwlock *l)
{
	rcci_lock_acquire(&l->writers);
	unsigned int w = atomic_fetch_or_explicit(&l->word, RCCI_RW_WAITING, memory_order_relaxed) |
			 RCCI_RW_WAITING;
	for (;;) {
		if (!(w & RCCI_RW_READERS)) {
			if (atomic_compare_exchange_weak_explicit(
				    &l->word, &w, (w & ~RCCI_RW_WAITING) | RCCI_RW_HELD,
				    memory_order_acquire, memory_order_relaxed))
				return;
			continue; /* w reloaded by the failed exchange */
		}
		rcci_futex_wait(&l->word, w);
		w = atomic_load_explicit(&l->word, memory_order_relaxed);
	}
}

void rcci_rwlock_write_end(struct rcci_rwlock *l)
{
	atomic_fetch_and_explicit(&l->word, ~RCCI_RW_HELD, memory_order_release);
	rcci_rwlock_wake(l); /* readers backing off; rare enough to wake always */
	rcci_lock_release(&l->writers);
}
