/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A small test harness: each test binary holds several cases, run in order
 * (or those named on the command line). A failed check prints where and why
 * and fails the case; the binary exits non-zero if any case failed.
 *
 * Integration tests read the transport from RCC_TEST_TRANSPORT (tcp by
 * default, verbs inside the Soft-RoCE VM) and the address to use from
 * RCC_TEST_ADDR (127.0.0.1 by default). RCC_TEST_FAIL_FAST=1 (the mutation
 * run sets it) stops a binary at its first failed case.
 */
#ifndef RCC_TEST_HARNESS_H
#define RCC_TEST_HARNESS_H

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rcc/rcc.h"

/* Default bound for any single wait in a test. */
#define TEST_TIMEOUT_MS 10000

struct test_case {
	const char *name;
	void (*fn)(void);
};

extern int test_failed; /* the current case has failed */

int test_main(int argc, char **argv, const struct test_case *cases, size_t n);
#define TEST_MAIN(...)                                                                    \
	int main(int argc, char **argv)                                                   \
	{                                                                                 \
		static const struct test_case cases_[] = { __VA_ARGS__ };                 \
		return test_main(argc, argv, cases_, sizeof(cases_) / sizeof(cases_[0])); \
	}
#define TEST(fn)        \
	{               \
#fn, fn \
	}

void test_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Skips are skips: a case that cannot run in this set-up calls SKIP_CASE with
 * what it needs ("verbs", "tcp", "root", "cm-bringup", ...) and why. It is
 * counted as skipped, never as passed; a binary whose every selected case
 * skipped exits 77 (ctest: SKIP_RETURN_CODE). When the need is listed in
 * RCC_TEST_REQUIRE (comma-separated; the Soft-RoCE suite sets "verbs", the tcp
 * suite "tcp"), the set-up promised it and the skip fails the case instead.
 * A binary where some cases ran and some skipped exits 0 (ctest: passed); its
 * line "skip CASE: needs NEED: WHY" is what scripts/ctest-counts.py (for
 * scripts/test.sh's totals) and tests/rxe/suites/10-integration.sh (the VM
 * suite's skip list) collect, so keep that form.
 */
void test_skip(const char *need, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define SKIP_CASE(need, ...)                  \
	do {                                  \
		test_skip(need, __VA_ARGS__); \
		return;                       \
	} while (0)
/* Whether RCC_TEST_REQUIRE lists need. */
bool test_required(const char *need);
/* For a whole binary that cannot run here (before test_main): prints why and
 * returns the exit status -- 77, or 1 when the need is required. */
int test_skip_all(const char *need, const char *why);

#define CHECK(cond)                                                               \
	do {                                                                      \
		if (!(cond)) {                                                    \
			test_fail(__FILE__, __LINE__, "check failed: %s", #cond); \
			return;                                                   \
		}                                                                 \
	} while (0)

#define CHECK_MSG(cond, ...)                                        \
	do {                                                        \
		if (!(cond)) {                                      \
			test_fail(__FILE__, __LINE__, __VA_ARGS__); \
			return;                                     \
		}                                                   \
	} while (0)

#define CHECK_EQ(a, b)                                                                           \
	do {                                                                                     \
		long long a_ = (long long)(a), b_ = (long long)(b);                              \
		if (a_ != b_) {                                                                  \
			test_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, a_, b_); \
			return;                                                                  \
		}                                                                                \
	} while (0)

/* An rcc call that must succeed (returns >= 0). */
#define CHECK_OK(expr)                                                                         \
	do {                                                                                   \
		int rc_ = (expr);                                                              \
		if (rc_ < 0) {                                                                 \
			test_fail(__FILE__, __LINE__, "%s: %s (%d)", #expr, rcc_strerror(rc_), \
				  rc_);                                                        \
			return;                                                                \
		}                                                                              \
	} while (0)

#define CHECK_WC(wc, want_status)                                                                  \
	do {                                                                                       \
		if ((wc).status != (want_status)) {                                                \
			test_fail(__FILE__, __LINE__, "wr_id %" PRIu64 ": status '%s', want '%s'", \
				  (wc).wr_id, rcc_wc_status_str((wc).status),                      \
				  rcc_wc_status_str(want_status));                                 \
			return;                                                                    \
		}                                                                                  \
	} while (0)

/* Environment of integration tests. RCC_TEST_TRANSPORT: auto, verbs, tcp
 * (the socket: shared memory off) or shm (the tcp transport with shared
 * memory required). */
enum rcc_transport test_transport(void);
enum rcc_shm test_shm(void);
const char *test_transport_name(void); /* "tcp", "shm", "verbs", "auto" */
const char *test_addr(void);           /* host part only */
bool test_on_verbs(void);
/* RCC_TEST_QUICK=1 (set under valgrind): large sizes and counts are scaled down. */
bool test_quick(void);
/* RCC_TEST_BRINGUP=cm|manual (verbs connection bring-up; default cm). */
enum rcc_bringup test_bringup(void);

/* Deterministic fill and byte-for-byte check; returns the first bad offset or -1. */
void fill_pattern(void *buf, size_t len, uint64_t seed);
long check_pattern(const void *buf, size_t len, uint64_t seed);

uint64_t now_ms(void);

#endif
