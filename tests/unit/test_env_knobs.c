/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The library's numeric environment variables through rcci_env_ulong(): a
 * value that is not a plain decimal number in range is never half-read; the
 * variables that fall back to their default say so in a warning naming the
 * variable. Opens tcp contexts, connects nothing.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "harness.h"
#include "transport/tcp/shm_cma.h"
#include "transport/tcp/tcp.h"

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char last_warning[512];

static void capture(enum rcc_log_level level, const char *msg, void *arg)
{
	(void)arg;
	if (level != RCC_LOG_WARN)
		return;
	pthread_mutex_lock(&log_lock);
	snprintf(last_warning, sizeof(last_warning), "%s", msg);
	pthread_mutex_unlock(&log_lock);
}

/* Sets (NULL: unsets) name, forgets the last warning. */
static void set(const char *name, const char *value)
{
	if (value)
		setenv(name, value, 1);
	else
		unsetenv(name);
	pthread_mutex_lock(&log_lock);
	last_warning[0] = 0;
	pthread_mutex_unlock(&log_lock);
}

/* Whether a warning naming name came since set(). */
static bool warned(const char *name)
{
	pthread_mutex_lock(&log_lock);
	bool yes = strstr(last_warning, name) != NULL;
	pthread_mutex_unlock(&log_lock);
	return yes;
}

static const char *const junk[] = { "abc", "10x", "-1",   " 5",
				    "+5",  "5 ",  "0x10", "99999999999999999999" };

#define NEED_LOG_CAPTURE()                          \
	do {                                        \
		rcc_log_set_handler(capture, NULL); \
		rcc_log_set_level(RCC_LOG_WARN);    \
	} while (0)

static uint64_t tcp_spin_ns(const char *value)
{
	struct rcc_ctx_attr a = { .transport = RCC_TRANSPORT_TCP };
	struct rcc_ctx *ctx;
	uint64_t ns;

	set("RCC_TCP_SPIN_US", value);
	if (rcc_ctx_open(&a, &ctx))
		return UINT64_MAX;
	ns = tctx(ctx)->spin_ns;
	rcc_ctx_close(ctx);
	return ns;
}

/* RCC_TCP_SPIN_US: once taken up to its first non-digit ("abc": no spin at
 * all, "-1": wrapped around to centuries); now refused with a warning. */
static void tcp_spin(void)
{
	NEED_LOG_CAPTURE();
	if (tcp_spin_ns(NULL) == UINT64_MAX)
		SKIP_CASE("tcp", "no tcp context here: %s", rcc_last_error());
	CHECK_EQ(tcp_spin_ns(NULL), TCP_SPIN_US_DEFAULT * 1000ull);
	CHECK(!warned("RCC_TCP_SPIN_US"));
	CHECK_EQ(tcp_spin_ns("0"), 0);
	CHECK_EQ(tcp_spin_ns("7"), 7000);
	CHECK(!warned("RCC_TCP_SPIN_US"));
	CHECK_EQ(tcp_spin_ns("10000000"), 10000000000ull);
	for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++) {
		CHECK_MSG(tcp_spin_ns(junk[i]) == TCP_SPIN_US_DEFAULT * 1000ull,
			  "RCC_TCP_SPIN_US='%s' was taken", junk[i]);
		CHECK_MSG(warned("RCC_TCP_SPIN_US"), "RCC_TCP_SPIN_US='%s': no warning", junk[i]);
	}
	CHECK_EQ(tcp_spin_ns("10000001"), TCP_SPIN_US_DEFAULT * 1000ull);
	CHECK(warned("RCC_TCP_SPIN_US"));
	set("RCC_TCP_SPIN_US", NULL);
}

/* RCC_CQ_SPIN_US: strtoul() used to take " 5" and "+5"; now every bad value
 * gets the warning and the default. */
static void cq_spin(void)
{
	NEED_LOG_CAPTURE();
	set("RCC_CQ_SPIN_US", "9");
	CHECK_EQ(rcci_cq_spin_us(0), 9);
	CHECK_EQ(rcci_cq_spin_us(3), 3); /* the caller's wins */
	CHECK(!warned("RCC_CQ_SPIN_US"));
	for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++) {
		set("RCC_CQ_SPIN_US", junk[i]);
		CHECK_MSG(rcci_cq_spin_us(0) == RCC_CQ_SPIN_US_DEFAULT, "RCC_CQ_SPIN_US='%s' taken",
			  junk[i]);
		CHECK_MSG(warned("RCC_CQ_SPIN_US"), "RCC_CQ_SPIN_US='%s': no warning", junk[i]);
	}
	set("RCC_CQ_SPIN_US", NULL);
	CHECK_EQ(rcci_cq_spin_us(0), RCC_CQ_SPIN_US_DEFAULT);
	CHECK(!warned("RCC_CQ_SPIN_US"));
}

/* RCC_SHM_CMA: only "1" ever switched single copy on, but "yes" or "true"
 * left it off without a word; now they are warned about. */
static void shm_cma_switch(void)
{
	static const char *const bad[] = { "yes", "true", "2", " 1", "on" };

	NEED_LOG_CAPTURE();
	set("RCC_SHM_CMA", NULL);
	CHECK(!rcci_shm_cma_enabled());
	set("RCC_SHM_CMA", "0");
	CHECK(!rcci_shm_cma_enabled());
	set("RCC_SHM_CMA", "1");
	CHECK(rcci_shm_cma_enabled());
	CHECK(!warned("RCC_SHM_CMA"));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		set("RCC_SHM_CMA", bad[i]);
		CHECK_MSG(!rcci_shm_cma_enabled(), "RCC_SHM_CMA='%s' switched it on", bad[i]);
		CHECK_MSG(warned("RCC_SHM_CMA"), "RCC_SHM_CMA='%s': no warning", bad[i]);
	}
	set("RCC_SHM_CMA", NULL);
}

/* RCC_SHM_MAP: on unless "0"; anything else but "1" is warned about and
 * leaves it on. */
static void shm_map_switch(void)
{
	static const char *const bad[] = { "no", "off", "2", " 0" };

	NEED_LOG_CAPTURE();
	set("RCC_SHM_MAP", NULL);
	CHECK(rcci_shm_map_enabled());
	set("RCC_SHM_MAP", "1");
	CHECK(rcci_shm_map_enabled());
	set("RCC_SHM_MAP", "0");
	CHECK(!rcci_shm_map_enabled());
	CHECK(!warned("RCC_SHM_MAP"));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		set("RCC_SHM_MAP", bad[i]);
		CHECK_MSG(rcci_shm_map_enabled(), "RCC_SHM_MAP='%s' switched it off", bad[i]);
		CHECK_MSG(warned("RCC_SHM_MAP"), "RCC_SHM_MAP='%s': no warning", bad[i]);
	}
	set("RCC_SHM_MAP", NULL);
}

TEST_MAIN(TEST(tcp_spin), TEST(cq_spin), TEST(shm_cma_switch), TEST(shm_map_switch))
