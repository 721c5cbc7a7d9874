/* SPDX-License-Identifier: BSD-3-Clause */
/* The sleeping half of lock.h: entered only when a lock was found held. */
#include "lock.h"

#include <linux/futex.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

_Static_assert(sizeof(atomic_uint) == sizeof(uint32_t), "futex(2) waits on 32 bits");

static void futex(struct rcci_lock *l, int op, unsigned int val)
{
	/* EINTR, or EAGAIN when the word already moved: the caller looks again */
	syscall(SYS_futex, (uint32_t *)&l->word, op, val, NULL, NULL, 0);
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
		futex(l, FUTEX_WAIT_PRIVATE, 2);
}

void rcci_lock_wake(struct rcci_lock *l) { futex(l, FUTEX_WAKE_PRIVATE, 1); }
