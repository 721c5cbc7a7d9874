/* SPDX-License-Identifier: BSD-3-Clause */
/* Threads the library starts for itself. */
#ifndef RCC_CORE_THREAD_H
#define RCC_CORE_THREAD_H

#include <pthread.h>

/*
 * pthread_create() with every signal blocked in the new thread: signals
 * belong to the application's threads, and a library thread that took one
 * (SIGINT, SIGALRM, a tool's SIGTERM handler) would run the application's
 * handler at a place it never expected. 0 or a negative errno.
 */
int rcci_thread_create(pthread_t *th, void *(*fn)(void *), void *arg);

#endif
