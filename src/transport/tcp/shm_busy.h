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
 * more -- false once rcc_now_ns() reached deadline_ns (several waits of
 * one revocation share one). A copy takes microseconds: up to 1000 yields
 * first, then naps of 50 us; the deadline bounds the yields too -- on a
 * loaded CPU each one can give away a whole time slice, and a wait that
 * must not wait (a deadline already past: a held failure carried out
 * late) looks once. Any thread; blocks until the deadline at most. */
bool rcci_shm_busy_wait(const _Atomic uint32_t *busy, uint64_t deadline_ns, int pidfd);

#endif
