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

/* Every completion mode round-trips through its name; nothing else parses. */
static void cq_modes(void)
{
	static const enum rcc_cq_mode all[] = { RCC_CQ_POLL, RCC_CQ_WAIT, RCC_CQ_FD,
						RCC_CQ_HYBRID };
	enum rcc_cq_mode m;

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		m = (enum rcc_cq_mode) - 1;
		CHECK_EQ(parse_cq_mode(cq_mode_name(all[i]), &m), 0);
		CHECK_EQ(m, all[i]);
	}
	CHECK(!strcmp(cq_mode_name(RCC_CQ_HYBRID), "hybrid"));
	CHECK_EQ(parse_cq_mode("spin", &m), -EINVAL);
	CHECK_EQ(parse_cq_mode("", &m), -EINVAL);
}

/* -c: perftest writes RC and UC, rcc rc and uc; both are taken. */
static void qp_types(void)
{
	enum rcc_qp_type t = RCC_QP_RC;

	CHECK_EQ(parse_qp_type("UC", &t), 0);
	CHECK_EQ(t, RCC_QP_UC);
	CHECK_EQ(parse_qp_type("rc", &t), 0);
	CHECK_EQ(t, RCC_QP_RC);
	CHECK_EQ(parse_qp_type("uC", &t), 0);
	CHECK_EQ(t, RCC_QP_UC);
	CHECK(!strcmp(qp_type_name(t), "UC") && !strcmp(qp_type_name(RCC_QP_RC), "RC"));
	CHECK_EQ(parse_qp_type("uD", &t), 0);
	CHECK_EQ(t, RCC_QP_UD);
	CHECK(!strcmp(qp_type_name(t), "UD"));
	CHECK_EQ(parse_qp_type("", &t), -EINVAL);
	CHECK_EQ(parse_qp_type("rcx", &t), -EINVAL);
	CHECK_EQ(parse_qp_type("xrc", &t), -EINVAL);
	CHECK_EQ(t, RCC_QP_UD); /* untouched by a refusal */
}

TEST_MAIN(TEST(peer_forms), TEST(bad_peers), TEST(cq_modes), TEST(qp_types))
