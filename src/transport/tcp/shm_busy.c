/* SPDX-License-Identifier: BSD-3-Clause */
#include "shm_busy.h"

#include <poll.h>
#include <sched.h>
#include <time.h>

#include "rcc/util.h"

/* One copy of a request takes microseconds: yield this often before napping. */
#define BUSY_WAIT_YIELDS 1000u

/* The peer process exited (its pidfd is readable). */
static bool peer_gone(int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };
	return pidfd >= 0 && poll(&p, 1, 0) == 1;
}

bool rcci_shm_busy_wait(const _Atomic uint32_t *busy, uint64_t deadline_ns, int pidfd)
{
	for (unsigned looks = 0; atomic_load_explicit(busy, memory_order_acquire); looks++) {
		bool yielding = looks < BUSY_WAIT_YIELDS;
		if (!yielding && peer_gone(pidfd))
			return true; /* a dead process copies no more */
		/* A peer busy past its timeout is frozen or lying. */
		if (rcc_now_ns() >= deadline_ns)
			return false;
		if (yielding)
			sched_yield();
		else
			nanosleep(&(struct timespec){ 0, 50000 }, NULL);
	}
	return true;
}
