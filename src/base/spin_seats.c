/* SPDX-License-Identifier: BSD-3-Clause */
#include "spin_seats.h"

#include <sched.h>
#include <stdatomic.h>

#define MASK_REREAD_NS 100000000ull /* 100 ms */

static atomic_int taken;

/* The calling thread's CPUs, read again once MASK_REREAD_NS have passed. */
static int seats_for_this_thread(uint64_t now_ns)
{
	static _Thread_local int cpus;
	static _Thread_local uint64_t read_ns;
	cpu_set_t set;

	if (cpus && now_ns - read_ns < MASK_REREAD_NS)
		return cpus;
	/* A mask we cannot read leaves one seat: spinning stays bounded. */
	cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
	if (cpus < 1)
		cpus = 1;
	read_ns = now_ns;
	return cpus;
}

bool rcci_spin_seat_take(uint64_t now_ns)
{
	int seats = seats_for_this_thread(now_ns);

	if (atomic_fetch_add_explicit(&taken, 1, memory_order_relaxed) < seats)
		return true;
	atomic_fetch_sub_explicit(&taken, 1, memory_order_relaxed);
	return false;
}

void rcci_spin_seat_give(void) { atomic_fetch_sub_explicit(&taken, 1, memory_order_relaxed); }

int rcci_spin_seats_taken(void) { return atomic_load_explicit(&taken, memory_order_relaxed); }
