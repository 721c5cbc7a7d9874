/* SPDX-License-Identifier: BSD-3-Clause */
/* The monotonic clock of rcc/util.h. */
#include <time.h>

#include "rcc/util.h"

uint64_t rcc_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
