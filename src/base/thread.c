/* SPDX-License-Identifier: BSD-3-Clause */
#include "thread.h"

#include <sched.h>
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

bool rcci_thread_on_one_cpu(void)
{
	cpu_set_t set;

	return sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) == 1;
}
