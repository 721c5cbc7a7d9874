/* SPDX-License-Identifier: BSD-3-Clause */
/* "host:port" parsing shared by every transport. */
#include <netinet/in.h>

#include "base/addr.h"
#include "harness.h"

static int split(const char *s, char *h, char *p) { return rcci_addr_split(s, h, 256, p, 8); }

static void forms(void)
{
	char h[256], p[8];
	CHECK_OK(split("10.0.0.1:7000", h, p));
	CHECK(!strcmp(h, "10.0.0.1") && !strcmp(p, "7000"));
	CHECK_OK(split("[fe80::1]:99", h, p));
	CHECK(!strcmp(h, "fe80::1") && !strcmp(p, "99"));
	CHECK_OK(split(":7471", h, p));
	CHECK(!strcmp(h, "") && !strcmp(p, "7471"));
	CHECK_OK(split("7472", h, p));
	CHECK(!strcmp(h, "") && !strcmp(p, "7472"));
	CHECK_OK(split("server.example", h, p));
	CHECK(!strcmp(h, "server.example") && !strcmp(p, "7471"));
	CHECK_OK(split("::1", h, p));
	CHECK(!strcmp(h, "::1") && !strcmp(p, "7471"));
	CHECK_OK(split("[::1]", h, p));
	CHECK(!strcmp(h, "::1") && !strcmp(p, "7471"));
}

static void malformed(void)
{
	char h[256], p[8];
	CHECK_EQ(split("host:", h, p), -EINVAL);
	CHECK_EQ(split("host:70000", h, p), -EINVAL);
	CHECK_EQ(split("host:65536", h, p), -EINVAL); /* one past the largest port */
	CHECK_OK(split("host:65535", h, p));
	CHECK(!strcmp(p, "65535"));
	CHECK_EQ(split("host:12a", h, p), -EINVAL);
	CHECK_EQ(split("[::1", h, p), -EINVAL);
	CHECK_EQ(split("[::1]x", h, p), -EINVAL);
	CHECK_EQ(split("host:-1", h, p), -EINVAL);
	char small[4];
	CHECK_EQ(rcci_addr_split("longhost:1", small, sizeof(small), p, sizeof(p)), -EINVAL);
}

static void resolve_and_format(void)
{
	struct sockaddr_storage ss;
	socklen_t len;
	char buf[64];
	CHECK_OK(rcci_addr_resolve("127.0.0.1:1234", false, &ss, &len));
	CHECK_EQ(ss.ss_family, AF_INET);
	CHECK_EQ(rcci_addr_port((struct sockaddr *)&ss), 1234);
	rcci_addr_format((struct sockaddr *)&ss, buf, sizeof(buf));
	CHECK(!strcmp(buf, "127.0.0.1:1234"));
	CHECK_OK(rcci_addr_resolve(":5", true, &ss, &len));
	rcci_addr_format((struct sockaddr *)&ss, buf, sizeof(buf));
	CHECK(!strcmp(buf, "0.0.0.0:5"));
	CHECK_OK(rcci_addr_resolve("[::1]:6", false, &ss, &len));
	rcci_addr_format((struct sockaddr *)&ss, buf, sizeof(buf));
	CHECK(!strcmp(buf, "[::1]:6"));
	CHECK_EQ(rcci_addr_resolve("no-such-host.invalid", false, &ss, &len), -ENOENT);
}

TEST_MAIN(TEST(forms), TEST(malformed), TEST(resolve_and_format))
