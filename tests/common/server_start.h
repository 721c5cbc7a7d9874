/* SPDX-License-Identifier: BSD-3-Clause */
/* A session server for a test, on the test address. */
#ifndef RCC_TEST_SERVER_START_H
#define RCC_TEST_SERVER_START_H

#include <stddef.h>

#include "rcc/session.h"

/* rcc_server_start() with attr as given but listening on the test address
 * with a port the system picks (attr.addr is ignored). When addr is not
 * NULL, the "host:port" a client connects to is written there on success.
 * Returns rcc_server_start()'s status. */
int test_server_start(struct rcc_ctx *ctx, struct rcc_server_attr attr, struct rcc_server **srv,
		      char *addr, size_t len);

#endif
