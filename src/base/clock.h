/* SPDX-License-Identifier: BSD-3-Clause */
/* Clocks of the library's own bookkeeping (the public one is rcc_now_ns()). */
#ifndef RCC_BASE_CLOCK_H
#define RCC_BASE_CLOCK_H

#include <stdint.h>

/*
 * Nanoseconds on the coarse monotonic clock (CLOCK_MONOTONIC_COARSE): the
 * time of the kernel's last tick, so it lags by up to a tick (1-10 ms), but
 * it is read in about 5 ns where rcc_now_ns() takes about 25 -- which counts
 * on a shared-memory ping-pong whose half round trip is a few hundred. For
 * stamps taken on every transfer that are only ever compared with periods of
 * tens of milliseconds and more (heartbeats, the peer timeout). Compare its
 * values only with each other, never with rcc_now_ns()'s.
 */
uint64_t rcci_coarse_now_ns(void);

#endif
