/* SPDX-License-Identifier: BSD-3-Clause */
/* The tools' shared command-line pieces (tools/common/opts.c). */
#include "harness.h"
#include "opts.h"

static void peer_forms(void)
{
	char host[64];
	int port = 7;

	CHECK_EQ(split_host_port("server", host, sizeof(host), &port), 0);
	CHECK(!strcmp(host, "server") && port == 7); /* no port: unchanged */
	CHECK_EQ(split_host_port("10.0.0.1:7471", host, sizeof(host), &port), 0);
	CHECK(!strcmp(host, "10.0.0.1") && port == 7471);
	CHECK_EQ(split_host_port("[fe80::1%eth0]:9", host, sizeof(host), &port), 0);
	CHECK(!strcmp(host, "fe80::1%eth0") && port == 9);
	port = 7;
	CHECK_EQ(split_host_port("[::1]", host, sizeof(host), &port), 0);
	CHECK(!strcmp(host, "::1") && port == 7);
	CHECK_EQ(split_host_port("::1", host, sizeof(host), &port), 0);
	CHECK(!strcmp(host, "::1") && port == 7);
	CHECK_EQ(split_host_port("h:65535", host, sizeof(host), &port), 0);
	CHECK_EQ(port, 65535);
}

static void bad_peers(void)
{
	char host[8];
	int port = 7;
	static const char *bad[] = { "",      ":7471", "h:",     "h:0",  "h:65536",
				     "h:12x", "[::1",  "[::1]x", "[]:5", "toolonghostname:1" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_MSG(split_host_port(bad[i], host, sizeof(host), &port) == -EINVAL,
			  "'%s' accepted", bad[i]);
	CHECK_EQ(port, 7); /* outputs untouched on failure */
}

TEST_MAIN(TEST(peer_forms), TEST(bad_peers))
