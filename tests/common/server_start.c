/* SPDX-License-Identifier: BSD-3-Clause */
#include "server_start.h"

#include <stdio.h>

#include "harness.h"

int test_server_start(struct rcc_ctx *ctx, struct rcc_server_attr attr, struct rcc_server **srv,
		      char *addr, size_t len)
{
	char listen_addr[128];

	snprintf(listen_addr, sizeof(listen_addr), "%s:0", test_addr());
	attr.addr = listen_addr; /* read only during the call */
	int rc = rcc_server_start(ctx, &attr, srv);
	if (!rc && addr)
		snprintf(addr, len, "%s:%d", test_addr(), rcc_server_port(*srv));
	return rc;
}
