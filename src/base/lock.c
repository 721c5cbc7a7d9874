/* SPDX-License-Identifier: BSD-3-Clause */
/* The sleeping half of lock.h (entered only when a lock was found held) and
 * the futex(2) calls of both locks. */
#include "lock.h"

#include <linux/futex.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

_Static_assert(sizeof(atomic_uint) == sizeof(uint32_t), "futex(2) waits on 32 bits");

void rcci_futex_wait(atomic_uint *word, unsigned int seen)
{
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
}

void rcci_futex_wake(atomic_uint *word, int n)
{
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

/*
 * Mark the word "held, a sleeper may wait" (2) and sleep while it stays so.
 * Whoever then drops the lock sees 2 and wakes one sleeper; the exchange
 * that finds 0 has taken the lock, leaving the word at 2, which at worst
 * costs its own unlock one spare wake-up.
 */
void rcci_lock_contended(struct rcci_lock *l)
{
	while (atomic_exchange_explicit(&l->word, 2, memory_order_acquire) != 0)
		rcci_futex_wait(&l->word, 2);
}

void rcci_lock_wake(struct rcci_lock *l) { rcci_futex_wake(&l->word, 1); }
