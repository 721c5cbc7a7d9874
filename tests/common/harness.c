/* SPDX-License-Identifier: BSD-3-Clause */
#include "harness.h"

#include <stdarg.h>
#include <stdlib.h>
#include <time.h>

int test_failed;
static int test_skipped; /* the current case skipped (and was allowed to) */
static const char *current;

void test_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "FAIL %s (%s:%d): ", current ? current : "?", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	test_failed = 1;
}

bool test_required(const char *need)
{
	const char *list = getenv("RCC_TEST_REQUIRE");
	size_t n = strlen(need);

	for (const char *p = list; p && *p;) {
		size_t len = strcspn(p, ", ");
		if (len == n && !strncmp(p, need, n))
			return true;
		p += len;
		p += strspn(p, ", ");
	}
	return false;
}

void test_skip(const char *need, const char *fmt, ...)
{
	va_list ap;
	bool required = test_required(need);

	printf("%s %s: needs %s: ", required ? "FAIL (required)" : "skip", current ? current : "?",
	       need);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (required)
		test_failed = 1;
	else
		test_skipped = 1;
}

int test_skip_all(const char *need, const char *why)
{
	if (test_required(need)) {
		printf("FAIL: needs %s, which RCC_TEST_REQUIRE promises: %s\n", need, why);
		return 1;
	}
	printf("skipped: needs %s: %s\n", need, why);
	return 77;
}

uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static bool selected(int argc, char **argv, const char *name)
{
	if (argc < 2)
		return true;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], name))
			return true;
	return false;
}

/* Exit status: 1 if a case failed or none was selected; 77 if every selected
 * case skipped; else 0. */
int test_main(int argc, char **argv, const struct test_case *cases, size_t n)
{
	int failures = 0, ran = 0, skipped = 0;
	/* The mutation run only asks "does it fail": the first failed case
	 * answers that, and the cases after it would each wait out their own
	 * bound against the same fault. */
	const char *ff = getenv("RCC_TEST_FAIL_FAST");
	bool fail_fast = ff && *ff && strcmp(ff, "0") != 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (size_t i = 0; i < n && !(fail_fast && failures); i++) {
		if (!selected(argc, argv, cases[i].name))
			continue;
		current = cases[i].name;
		test_failed = 0;
		test_skipped = 0;
		uint64_t t0 = now_ms();
		cases[i].fn();
		ran++;
		/* a case that failed before or after its skip is a failure */
		if (test_failed)
			test_skipped = 0;
		printf("%s %s (%llu ms)\n",
		       test_failed  ? "FAIL" :
		       test_skipped ? "skip" :
				      "ok  ",
		       cases[i].name, (unsigned long long)(now_ms() - t0));
		failures += test_failed;
		skipped += test_skipped;
	}
	printf("%d of %d cases passed, %d skipped (transport %s)\n", ran - failures - skipped, ran,
	       skipped, test_transport_name());
	if (failures || ran == 0)
		return 1;
	return skipped == ran ? 77 : 0;
}

/* "shm": the tcp transport with shared memory required, so that a test can
 * never pass by falling back to the socket. */
static bool test_on_shm(void)
{
	const char *s = getenv("RCC_TEST_TRANSPORT");
	return s && !strcmp(s, "shm");
}

enum rcc_transport test_transport(void)
{
	const char *s = getenv("RCC_TEST_TRANSPORT");
	enum rcc_transport t = RCC_TRANSPORT_TCP;
	if (s && *s && !test_on_shm() && rcc_transport_parse(s, &t)) {
		fprintf(stderr, "RCC_TEST_TRANSPORT=%s is not auto, verbs, tcp or shm\n", s);
		exit(2);
	}
	return t;
}

enum rcc_shm test_shm(void) { return test_on_shm() ? RCC_SHM_REQUIRE : RCC_SHM_OFF; }

const char *test_transport_name(void)
{
	return test_on_shm() ? "shm" : rcc_transport_name(test_transport());
}

bool test_on_verbs(void) { return test_transport() == RCC_TRANSPORT_VERBS; }

bool test_quick(void)
{
	const char *s = getenv("RCC_TEST_QUICK");
	return s && *s && strcmp(s, "0");
}

enum rcc_bringup test_bringup(void)
{
	const char *s = getenv("RCC_TEST_BRINGUP");
	if (!s || !*s || !strcmp(s, "cm"))
		return RCC_BRINGUP_CM;
	if (!strcmp(s, "manual"))
		return RCC_BRINGUP_MANUAL;
	fprintf(stderr, "RCC_TEST_BRINGUP=%s is not cm or manual\n", s);
	exit(2);
}

const char *test_addr(void)
{
	const char *s = getenv("RCC_TEST_ADDR");
	return s && *s ? s : "127.0.0.1";
}

static uint8_t pattern_byte(size_t i, uint64_t seed)
{
	uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed * 0xBF58476D1CE4E5B9ull;
	x ^= x >> 29;
	return (uint8_t)(x ^ (x >> 17));
}

void fill_pattern(void *buf, size_t len, uint64_t seed)
{
	uint8_t *p = buf;
	for (size_t i = 0; i < len; i++)
		p[i] = pattern_byte(i, seed);
}

long check_pattern(const void *buf, size_t len, uint64_t seed)
{
	const uint8_t *p = buf;
	for (size_t i = 0; i < len; i++)
		if (p[i] != pattern_byte(i, seed))
			return (long)i;
	return -1;
}
