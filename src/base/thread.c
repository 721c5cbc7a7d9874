/* SPDX-License-Identifier: BSD-3-Clause */
#include "thread.h"

#include <signal.h>

int rcci_thread_create(pthread_t *th, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = -pthread_create(th, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}
