/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Seats for the threads that busy-poll in an RCC_CQ_HYBRID rcc_cq_wait():
 * at most one per CPU the calling thread may run on (its affinity mask).
 *
 * Why: a spinning thread holds its core for its whole budget. With more
 * spinners than cores, the threads whose work would complete theirs -- a
 * woken sleeper, tcp's progress thread, the peer in this process -- wait for
 * a time slice or a yield, and every spinner's tail latency becomes the
 * other spinners' slices (8 HYBRID clients on one core: p99 11x that of
 * blocking sockets, README). A waiter that finds every seat taken skips its
 * spin and sleeps at once, as RCC_CQ_WAIT does: the spinning is bounded by
 * the cores, however many threads wait.
 *
 * The count is per process (other processes' spinners are not known). The
 * mask is read once per thread and again when 100 ms have passed since (a
 * system call; the mask may change).
 */
#ifndef RCC_BASE_SPIN_SEATS_H
#define RCC_BASE_SPIN_SEATS_H

#include <stdbool.h>
#include <stdint.h>

/* Take a seat; now_ns is rcc_now_ns() (when the mask is due to be read
 * again). True: the caller may spin, and gives the seat back with
 * rcci_spin_seat_give() when it stops. False: every seat is taken (nothing
 * to give back). Thread-safe, never blocks. */
bool rcci_spin_seat_take(uint64_t now_ns);
void rcci_spin_seat_give(void);

/* Seats taken now, in this process (for tests). */
int rcci_spin_seats_taken(void);

#endif
