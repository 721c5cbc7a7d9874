/* SPDX-License-Identifier: BSD-3-Clause */
/* Threads the library starts for itself. */
#ifndef RCC_CORE_THREAD_H
#define RCC_CORE_THREAD_H

#include <pthread.h>
#include <stdbool.h>

/*
 * pthread_create() with every signal blocked in the new thread: signals
 * belong to the application's threads, and a library thread that took one
 * (SIGINT, SIGALRM, a tool's SIGTERM handler) would run the application's
 * handler at a place it never expected. 0 or a negative errno.
 */
int rcci_thread_create(pthread_t *th, void *(*fn)(void *), void *arg);

/*
 * Whether the calling thread may run on one CPU only (its affinity mask,
 * e.g. a process started under taskset -c N, whose threads inherit it).
 * A library thread there shares that CPU with every application thread of
 * the same mask. One system call; false when the mask cannot be read.
 */
bool rcci_thread_on_one_cpu(void);

/*
 * A small thread-local variable read or written on every poll: the
 * initial-exec model makes each access one instruction off the thread
 * pointer, where a shared library's default (general dynamic) calls
 * __tls_get_addr every time -- 160 of the 7400 user-space instructions of a
 * tcp SEND round trip (bench/overhead.sh). It takes a little of the static
 * TLS space glibc keeps spare for libraries opened later with dlopen(), so
 * only a few bytes use it; anything larger keeps plain _Thread_local.
 */
#define RCCI_THREAD_HOT _Thread_local __attribute__((tls_model("initial-exec")))

#endif
