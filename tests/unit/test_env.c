/* SPDX-License-Identifier: BSD-3-Clause */
/* rcci_env_ulong(): the one parser of numeric environment variables (base/env.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/env.h"
#include "harness.h"

#define VAR "RCC_TEST_ENV_ULONG"
#define UNTOUCHED 4242ul

/* rcci_env_ulong(VAR, min, max) with VAR set to value (NULL: unset); *got
 * keeps UNTOUCHED unless the call set it. */
static int parse(const char *value, unsigned long min, unsigned long max, unsigned long *got)
{
	*got = UNTOUCHED;
	if (value ? setenv(VAR, value, 1) : unsetenv(VAR))
		return INT_MIN; /* no environment to test with: every expectation fails */
	return rcci_env_ulong(VAR, min, max, got);
}

static const char *shown(const char *value) { return value ? value : "(unset)"; }

/* Each case first: a process whose environment cannot be changed skips (77). */
#define NEED_SETENV()                                                                   \
	do {                                                                            \
		if (setenv(VAR, "0", 1))                                                \
			SKIP_CASE("setenv", "cannot set %s: %s", VAR, strerror(errno)); \
	} while (0)

#define EXPECT_OK(value, min, max, want)                                                    \
	do {                                                                                \
		unsigned long got_;                                                         \
		int rc_ = parse(value, min, max, &got_);                                    \
		CHECK_MSG(rc_ == 0 && got_ == (want), "'%s' in [%lu, %lu]: %d, %lu", value, \
			  (unsigned long)(min), (unsigned long)(max), rc_, got_);           \
	} while (0)

#define EXPECT_ERR(value, min, max, want_rc)                                                    \
	do {                                                                                    \
		unsigned long got_;                                                             \
		int rc_ = parse(value, min, max, &got_);                                        \
		CHECK_MSG(rc_ == (want_rc) && got_ == UNTOUCHED, "'%s' in [%lu, %lu]: %d, %lu", \
			  shown(value), (unsigned long)(min), (unsigned long)(max), rc_, got_); \
	} while (0)

static void unset_or_empty(void)
{
	NEED_SETENV();
	EXPECT_ERR(NULL, 0, 10, -ENOENT);
	EXPECT_ERR("", 0, 10, -ENOENT);
}

static void plain_numbers(void)
{
	NEED_SETENV();
	EXPECT_OK("0", 0, 10, 0ul);
	EXPECT_OK("7", 0, 10, 7ul);
	EXPECT_OK("65536", 0, 1ul << 20, 65536ul);
	EXPECT_OK("010", 0, 100, 10ul); /* decimal, not octal */
}

static void not_a_number(void)
{
	NEED_SETENV();
	EXPECT_ERR("abc", 0, 100, -EINVAL);
	EXPECT_ERR("x1", 0, 100, -EINVAL);
	EXPECT_ERR("12abc", 0, 100, -EINVAL);
	EXPECT_ERR("12 ", 0, 100, -EINVAL);
	EXPECT_ERR("64k", 0, 100, -EINVAL);
	EXPECT_ERR("1.5", 0, 100, -EINVAL);
	EXPECT_ERR("0x10", 0, 100, -EINVAL); /* never hex */
	EXPECT_ERR(" 12", 0, 100, -EINVAL);
	EXPECT_ERR("\t12", 0, 100, -EINVAL);
	EXPECT_ERR(" ", 0, 100, -EINVAL);
}

static void signs(void)
{
	NEED_SETENV();
	EXPECT_ERR("-1", 0, ULONG_MAX, -EINVAL); /* strtoul() makes it ULONG_MAX */
	EXPECT_ERR("-0", 0, 100, -EINVAL);
	EXPECT_ERR("+5", 0, 100, -EINVAL);
	EXPECT_ERR(" -1", 0, ULONG_MAX, -EINVAL);
}

static void overflow(void)
{
	char buf[32];

	NEED_SETENV();
	snprintf(buf, sizeof(buf), "%lu", ULONG_MAX);
	EXPECT_OK(buf, 0, ULONG_MAX, ULONG_MAX);
	snprintf(buf, sizeof(buf), "%lu", ULONG_MAX / 10);
	size_t n = strlen(buf); /* ULONG_MAX / 10 * 10 + its last digit + 1 */
	snprintf(buf + n, sizeof(buf) - n, "%lu", ULONG_MAX % 10 + 1);
	EXPECT_ERR(buf, 0, ULONG_MAX, -EINVAL);
	EXPECT_ERR("99999999999999999999", 0, ULONG_MAX, -EINVAL);
	EXPECT_ERR("184467440737095516160", 0, ULONG_MAX, -EINVAL); /* 2^64 * 10 wraps to 0 */
	EXPECT_ERR("18446744073709551617000000000000", 0, ULONG_MAX, -EINVAL);
}

static void range_edges(void)
{
	NEED_SETENV();
	EXPECT_ERR("3", 4, 65536, -EINVAL);
	EXPECT_OK("4", 4, 65536, 4ul);
	EXPECT_OK("65536", 4, 65536, 65536ul);
	EXPECT_ERR("65537", 4, 65536, -EINVAL);
	EXPECT_OK("5", 5, 5, 5ul);
	EXPECT_ERR("0", 1, 1, -EINVAL);
	EXPECT_ERR("2", 0, 1, -EINVAL);
}

TEST_MAIN(TEST(unset_or_empty), TEST(plain_numbers), TEST(not_a_number), TEST(signs),
	  TEST(overflow), TEST(range_edges))
