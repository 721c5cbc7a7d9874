/* SPDX-License-Identifier: BSD-3-Clause */
/* Which names a receiver accepts, and the names of its companion files. */
#include <string.h>

#include "harness.h"
#include "names.h"

static void refused(void)
{
	static const char *const bad[] = {
		"",          ".",        "..",      "/etc/passwd", "/",
		"a/b",       "../x",     "x/..",    "a/../b",      "a/",
		"tab\there", "nl\nhere", "del\x7f", ".x.rcc-part", "y.rcc-state",
	};
	char longname[300];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_MSG(name_refusal(bad[i]) != NULL, "accepted '%s'", bad[i]);
	memset(longname, 'a', NAME_LEN_MAX + 1);
	longname[NAME_LEN_MAX + 1] = 0;
	CHECK(name_refusal(longname) != NULL);
	longname[NAME_LEN_MAX] = 0;
	CHECK(name_refusal(longname) == NULL);
}

static void accepted(void)
{
	static const char *const good[] = {
		"a",   "file.txt",   ".hidden", "...",      "..x",
		"x..", "with space", "ünïcødé", "rcc-part", "a.rcc-partial",
	};

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		CHECK_MSG(name_refusal(good[i]) == NULL, "refused '%s'", good[i]);
}

static void companions(void)
{
	char longname[NAME_LEN_MAX + 1], out[COMPANION_MAX];

	CHECK_OK(part_name("f.bin", out, sizeof(out)));
	CHECK(!strcmp(out, ".f.bin.rcc-part"));
	CHECK_OK(state_name("f.bin", out, sizeof(out)));
	CHECK(!strcmp(out, ".f.bin.rcc-state"));
	memset(longname, 'a', NAME_LEN_MAX);
	longname[NAME_LEN_MAX] = 0;
	CHECK_OK(state_name(longname, out, sizeof(out)));
	CHECK(strlen(out) <= 255);
	CHECK_EQ(part_name("f", out, 4), -ENAMETOOLONG);
}

static void basenames(void)
{
	CHECK(!strcmp(path_basename("a/b/c.txt"), "c.txt"));
	CHECK(!strcmp(path_basename("/abs/x"), "x"));
	CHECK(!strcmp(path_basename("plain"), "plain"));
	CHECK(!strcmp(path_basename("dir/"), ""));
}

TEST_MAIN(TEST(refused), TEST(accepted), TEST(companions), TEST(basenames))
