/* SPDX-License-Identifier: BSD-3-Clause */
/* A plain TCP listener, standing in for a peer that is not rcc. */
#ifndef RCC_TEST_RAW_LISTENER_H
#define RCC_TEST_RAW_LISTENER_H

#include <stddef.h>

/* Listen on loopback on a port the system picks; "127.0.0.1:port" goes to
 * addr. The descriptor (the caller closes it), or -1. */
int raw_listener(char *addr, size_t len);

/* A thread's body: accept one connection on the listener *(int *)arg and
 * close it unanswered. Returns NULL. */
void *raw_accept_and_close(void *arg);

#endif
