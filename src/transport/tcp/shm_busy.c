/* SPDX-License-Identifier: BSD-3-Clause */
#include "shm_busy.h"

#include <poll.h>
#include <sched.h>
#include <time.h>

#include "rcc/util.h"

/* The peer process exited (its pidfd is readable). */
static bool peer_gone(int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };
	return pidfd >= 0 && poll(&p, 1, 0) == 1;
}

bool rcci_shm_busy_wait(const _Atomic uint32_t *busy, uint64_t wait_ns, uint64_t *end, int pidfd)
{
	for (unsigned spins = 0; atomic_load_explicit(busy, memory_order_acquire); spins++) {
		/* One copy of a request: microseconds. A peer busy longer than
		 * the peer timeout is frozen or lying. */
		if (spins < 1000) {
			sched_yield();
			continue;
		}
		if (peer_gone(pidfd))
			return true; /* a dead process copies no more */
		if (!*end)
			*end = rcc_now_ns() + wait_ns;
		if (rcc_now_ns() > *end)
			return false;
		nanosleep(&(struct timespec){ 0, 50000 }, NULL);
	}
	return true;
}
