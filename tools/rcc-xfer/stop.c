/* SPDX-License-Identifier: BSD-3-Clause */
#include "stop.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

static atomic_int stop_sig;

static void on_signal(int sig) { atomic_store(&stop_sig, sig); }

int stop_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGINT, &sa, NULL) < 0 || sigaction(SIGTERM, &sa, NULL) < 0)
		return -errno;
	sa.sa_handler = SIG_IGN;
	if (sigaction(SIGPIPE, &sa, NULL) < 0)
		return -errno;
	return 0;
}

bool stop_requested(void) { return atomic_load(&stop_sig) != 0; }
