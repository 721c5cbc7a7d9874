/* SPDX-License-Identifier: BSD-3-Clause */
/* The monotonic clock of rcc/util.h, and the coarse one of base/clock.h. */
#include <time.h>

#include "base/clock.h"
#include "rcc/util.h"

static inline uint64_t ns_of(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t rcc_now_ns(void) { return ns_of(CLOCK_MONOTONIC); }

uint64_t rcci_coarse_now_ns(void) { return ns_of(CLOCK_MONOTONIC_COARSE); }
