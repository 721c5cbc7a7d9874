/* SPDX-License-Identifier: BSD-3-Clause */
/* rcc_text_escape(): peer text made safe to print (rcc/util.h). */
#include <stdlib.h>

#include "harness.h"
#include "rcc/util.h"

/* esc(in, dstlen) into a static buffer */
static const char *esc(const char *in, size_t inlen, size_t dstlen, size_t *n)
{
	static char out[512];
	memset(out, 'Z', sizeof(out));
	*n = rcc_text_escape(out, dstlen, in, inlen);
	return out;
}

#define EXPECT_ESC(in, want)                                                                 \
	do {                                                                                 \
		size_t n_;                                                                   \
		const char *got_ = esc(in, sizeof(in) - 1, 512, &n_);                        \
		CHECK_MSG(!strcmp(got_, want), "'%s' escaped to '%s', want '%s'", #in, got_, \
			  want);                                                             \
		CHECK_EQ(n_, strlen(want));                                                  \
	} while (0)

static void plain_text_unchanged(void)
{
	EXPECT_ESC("report-2024.pdf", "report-2024.pdf");
	EXPECT_ESC("caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80", /* é 日本 😀 */
		   "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80");
	EXPECT_ESC("", "");
}

static void controls_escaped(void)
{
	EXPECT_ESC("a\nb", "a\\x0ab");
	EXPECT_ESC("\x1b[31mred", "\\x1b[31mred");
	EXPECT_ESC("tab\there\r", "tab\\x09here\\x0d");
	EXPECT_ESC("del\x7f", "del\\x7f");
	EXPECT_ESC("back\\slash", "back\\\\slash");
	/* C1 CSI as UTF-8 (U+009B), and the right-to-left override U+202E */
	EXPECT_ESC("x\xc2\x9by", "x\\xc2\\x9by");
	EXPECT_ESC("evil\xe2\x80\xae"
		   "fdp.exe",
		   "evil\\xe2\\x80\\xaefdp.exe");
	EXPECT_ESC("iso\xe2\x81\xa6", "iso\\xe2\\x81\\xa6");
}

static void malformed_utf8_escaped(void)
{
	EXPECT_ESC("\xff\xfe", "\\xff\\xfe");
	EXPECT_ESC("\xc0\xaf", "\\xc0\\xaf");                   /* overlong '/' */
	EXPECT_ESC("\xed\xa0\x80", "\\xed\\xa0\\x80");          /* surrogate */
	EXPECT_ESC("\xe6\x97", "\\xe6\\x97");                   /* cut short */
	EXPECT_ESC("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"); /* beyond U+10FFFF */
}

static void bounded(void)
{
	size_t n;
	const char *out;

	/* srclen bounds the read; a NUL ends it early */
	out = esc("abcdef", 3, 512, &n);
	CHECK(!strcmp(out, "abc") && n == 3);
	out = esc("ab\0cd", 5, 512, &n);
	CHECK(!strcmp(out, "ab") && n == 2);
	/* cut with "..." between whole characters, never inside an escape */
	out = esc("abcdefghij", 10, 8, &n);
	CHECK_MSG(!strcmp(out, "abcd...") && n == 7, "got '%s'", out);
	out = esc("ab\ncdef", 7, 9, &n);
	CHECK_MSG(!strcmp(out, "ab..."), "got '%s'", out); /* "ab\x0a..." needs 10 */
	out = esc("\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5", 9, 8, &n);
	CHECK_MSG(!strcmp(out, "\xe6\x97\xa5..."), "got '%s'", out);
	/* exactly fitting needs no "..." */
	out = esc("abcdefg", 7, 8, &n);
	CHECK(!strcmp(out, "abcdefg") && n == 7);
	/* tiny buffers: always terminated, nothing written past dstlen */
	out = esc("abc", 3, 1, &n);
	CHECK(out[0] == 0 && out[1] == 'Z' && n == 0);
	out = esc("abcdef", 6, 3, &n);
	CHECK(strlen(out) < 3 && out[3] == 'Z');
	CHECK_EQ(rcc_text_escape(NULL, 0, "x", 1), 0);
	char one[4];
	CHECK_EQ(rcc_text_escape(one, sizeof(one), NULL, 5), 0);
	CHECK(one[0] == 0);
}

/* Every output, for any input, is printable: no byte below 0x20, no DEL. */
static void output_never_has_controls(void)
{
	char in[64], out[300];
	uint64_t x = 88172645463325252ull;

	for (int round = 0; round < 20000; round++) {
		for (size_t i = 0; i < sizeof(in); i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			in[i] = (char)(x & 0xff);
		}
		size_t n = rcc_text_escape(out, 1 + (size_t)(x % sizeof(out)), in, sizeof(in));
		CHECK(n == strlen(out));
		for (size_t i = 0; i < n; i++)
			CHECK_MSG((unsigned char)out[i] >= 0x20 && out[i] != 0x7f,
				  "control byte 0x%02x in output", (unsigned char)out[i]);
	}
}

TEST_MAIN(TEST(plain_text_unchanged), TEST(controls_escaped), TEST(malformed_utf8_escaped),
	  TEST(bounded), TEST(output_never_has_controls))
