/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Not a test by itself: cases with a known outcome, run by harness.sh to check
 * what the harness reports for them (exit status 0 / 1 / 77).
 */
#include "harness.h"

static void passes(void) { CHECK_EQ(1 + 1, 2); }

static void fails(void) { CHECK_EQ(1 + 1, 3); }

static void skips(void)
{
	SKIP_CASE("probe-need", "the probe never has it");
	CHECK_MSG(0, "ran past its skip");
}

static void fails_then_skips(void)
{
	test_fail(__FILE__, __LINE__, "failed first");
	SKIP_CASE("probe-need", "a skip after a failure is still a failure");
}

TEST_MAIN(TEST(passes), TEST(fails), TEST(skips), TEST(fails_then_skips))
