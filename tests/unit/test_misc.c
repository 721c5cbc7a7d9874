/* SPDX-License-Identifier: BSD-3-Clause */
/* Small pieces: remote-region encoding, status texts, logging, parsing, and
 * the progress thread's look at its CPU mask. */
#include <sched.h>
#include <stdlib.h>

#include "base/thread.h"
#include "pair.h"

static void remote_mr_wire_form(void)
{
	struct rcc_remote_mr in = { 0x0102030405060708ull, 1ull << 33, 0xcafebabe }, out;
	uint8_t b[RCC_REMOTE_MR_WIRE_SIZE];
	rcc_remote_mr_encode(&in, b);
	CHECK_EQ(b[0], 0x08);
	CHECK_EQ(b[16], 0xbe);
	CHECK_OK(rcc_remote_mr_decode(b, sizeof(b), &out));
	CHECK(in.addr == out.addr && in.length == out.length && in.rkey == out.rkey);
	CHECK_EQ(rcc_remote_mr_decode(b, sizeof(b) - 1, &out), -EINVAL);
	struct rcc_remote_mr wrap = { UINT64_MAX - 10, 100, 1 };
	rcc_remote_mr_encode(&wrap, b);
	CHECK_EQ(rcc_remote_mr_decode(b, sizeof(b), &out), -EINVAL);
}

static void texts(void)
{
	CHECK(!strcmp(rcc_wc_status_str(RCC_WC_REM_ACCESS_ERR), "remote access error"));
	CHECK(!strcmp(rcc_wc_opcode_str(RCC_WC_RECV_WRITE_IMM), "RECV_WRITE_IMM"));
	CHECK(strlen(rcc_wc_status_str((enum rcc_wc_status)1234)) > 0);
	CHECK(strlen(rcc_strerror(-ECONNABORTED)) > 0);
	CHECK(strlen(rcc_strerror(-12345)) > 0);
	CHECK(!strcmp(rcc_ep_state_str(RCC_EP_ERROR), "error"));
	enum rcc_transport t;
	CHECK_OK(rcc_transport_parse("verbs", &t));
	CHECK_EQ(t, RCC_TRANSPORT_VERBS);
	CHECK_EQ(rcc_transport_parse("ib", &t), -EINVAL);
	CHECK(!strcmp(rcc_version(), "0.1.0"));
}

static char captured[600];
static int ncaptured;

static void capture(enum rcc_log_level level, const char *msg, void *arg)
{
	(void)level;
	(void)arg;
	snprintf(captured, sizeof(captured), "%s", msg);
	ncaptured++;
}

/* The library says nothing by default, and goes through the handler when set. */
static void logging(void)
{
	struct rcc_ctx *ctx;
	struct rcc_listener *l;

	rcc_log_set_handler(capture, NULL);
	rcc_log_set_level(RCC_LOG_ERROR);
	CHECK_OK(test_ctx_open(&ctx));
	CHECK_EQ(rcc_listen(ctx, "127.0.0.1:99999", 0, &l), -EINVAL);
	CHECK_EQ(ncaptured, 0); /* a returned status is not an error message */
	rcc_log_set_level(RCC_LOG_INFO);
	CHECK_EQ(rcc_log_get_level(), RCC_LOG_INFO);
	CHECK_EQ(rcc_listen(ctx, "127.0.0.1:99999", 0, &l), -EINVAL);
	CHECK(ncaptured > 0);
	CHECK(strstr(captured, "99999") != NULL);
	rcc_log_set_level(RCC_LOG_ERROR);
	rcc_log_set_handler(NULL, NULL);
	CHECK_OK(rcc_ctx_close(ctx));
}

/* AUTO picks verbs exactly when the device list is not empty, else tcp (the
 * fallback runs on this machine, the verbs choice inside the Soft-RoCE VM). */
static void auto_transport(void)
{
	struct rcc_device_info *devs = NULL;
	struct rcc_ctx *ctx;
	int ndev = 0;

	if (rcc_device_list(&devs, &ndev) < 0)
		ndev = 0; /* no verbs library or no device: the same for AUTO */
	rcc_device_list_free(devs, ndev);
	CHECK_OK(rcc_ctx_open(NULL, &ctx));
	enum rcc_transport t = rcc_ctx_transport(ctx);
	CHECK_OK(rcc_ctx_close(ctx));
	CHECK_MSG(t == (ndev > 0 ? RCC_TRANSPORT_VERBS : RCC_TRANSPORT_TCP),
		  "AUTO chose %s with %d devices", rcc_transport_name(t), ndev);

	/* a named device that does not exist is an error, never a quiet tcp */
	struct rcc_ctx_attr named = { .transport = RCC_TRANSPORT_AUTO, .device = "no-such-dev0" };
	ctx = NULL;
	int rc = rcc_ctx_open(&named, &ctx);
	CHECK_MSG(rc == -ENODEV || rc == -ENOSYS, "AUTO with a missing device: %d (%s)", rc,
		  ctx ? rcc_transport_name(rcc_ctx_transport(ctx)) : "-");
	CHECK(ctx == NULL);
}

/* rcci_thread_on_one_cpu() reads the calling thread's own mask: true under
 * one CPU (the progress thread then yields while it spins), false under
 * two or more, and back again when the mask widens. */
static void one_cpu_mask(void)
{
	cpu_set_t all, one, two;
	int first = -1, second = -1;

	CHECK_OK(sched_getaffinity(0, sizeof(all), &all));
	for (int c = 0; c < CPU_SETSIZE && second < 0; c++) {
		if (!CPU_ISSET(c, &all))
			continue;
		if (first < 0)
			first = c;
		else
			second = c;
	}
	CPU_ZERO(&one);
	CPU_SET(first, &one);
	CHECK_OK(sched_setaffinity(0, sizeof(one), &one));
	CHECK(rcci_thread_on_one_cpu());
	if (second >= 0) {
		two = one;
		CPU_SET(second, &two);
		CHECK_OK(sched_setaffinity(0, sizeof(two), &two));
		CHECK(!rcci_thread_on_one_cpu());
	}
	CHECK_OK(sched_setaffinity(0, sizeof(all), &all));
	CHECK(rcci_thread_on_one_cpu() == (CPU_COUNT(&all) == 1));
}

TEST_MAIN(TEST(remote_mr_wire_form), TEST(texts), TEST(logging), TEST(auto_transport),
	  TEST(one_cpu_mask))
