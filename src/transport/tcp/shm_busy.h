/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Waiting for a same-host peer's copy to end. Single copy's slots
 * (shm_cma.h) and mapped transfers (shm_map.h) each have a busy word the
 * copying peer sets around every copy; the side that revoked what it
 * copies waits while it is set (the Dekker handshakes in docs/shm.md).
 */
#ifndef RCC_TCP_SHM_BUSY_H
#define RCC_TCP_SHM_BUSY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Wait while *busy is set: true once it is clear -- or, with a pidfd of
 * the peer (else -1), once the peer process exited, which copies no
 * more -- false once the time is up. A copy takes microseconds: first up
 * to 1000 yields, then naps of 50 us until *end (rcc_now_ns()), which the
 * first nap sets to wait_ns from then when it is 0 (several waits of one
 * revocation share it). Any thread; blocks up to the bound. */
bool rcci_shm_busy_wait(const _Atomic uint32_t *busy, uint64_t wait_ns, uint64_t *end, int pidfd);

#endif
