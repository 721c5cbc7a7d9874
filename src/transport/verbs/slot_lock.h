/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The send-slot lock of a verbs endpoint (sq_slots.c): every post call and
 * every successful send completion take it, and it is almost never contended
 * (one thread posts, one polls). pthread_mutex_lock and _unlock cost two calls
 * and about 55 instructions together (counted, docs/verbs.md); this is the
 * same mutual exclusion inline, one compare-and-swap to take it and one
 * fetch-sub to give it back, with the futex only when a thread waits: mutex 3
 * of Drepper's "Futexes Are Tricky". A waiter sleeps as on a pthread mutex.
 * States: 0 free, 1 held, 2 held and perhaps waited for.
 */
#ifndef RCC_VERBS_SLOT_LOCK_H
#define RCC_VERBS_SLOT_LOCK_H

#include <stdatomic.h>

/* Contended halves, out of line (sq_slots.c). */
void rcci_slot_lock_wait(atomic_int *l, int seen);
void rcci_slot_lock_wake(atomic_int *l);

static inline void rcci_slot_lock(atomic_int *l)
{
	int c = 0;

	if (__builtin_expect(!atomic_compare_exchange_strong_explicit(
				     l, &c, 1, memory_order_acquire, memory_order_relaxed),
			     0))
		rcci_slot_lock_wait(l, c);
}

/* A holder that finds 2 (someone may sleep) frees the lock and wakes one. */
static inline void rcci_slot_unlock(atomic_int *l)
{
	if (__builtin_expect(atomic_fetch_sub_explicit(l, 1, memory_order_release) != 1, 0))
		rcci_slot_lock_wake(l);
}

#endif
