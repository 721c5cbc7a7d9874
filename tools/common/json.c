/* SPDX-License-Identifier: BSD-3-Clause */
/* JSON string literals for the programs' machine-readable output. */
#include "json.h"

#include <stdbool.h>
#include <stdio.h>

/* Well-formed UTF-8 (no overlongs, no surrogates) passes through JSON as is. */
static bool utf8_valid(const unsigned char *s)
{
	while (*s) {
		unsigned char c = *s;
		int n = c < 0x80           ? 0 :
			(c & 0xe0) == 0xc0 ? 1 :
			(c & 0xf0) == 0xe0 ? 2 :
			(c & 0xf8) == 0xf0 ? 3 :
					     -1;
		if (n < 0 || (n == 1 && c < 0xc2) || (c == 0xe0 && (s[1] & 0xe0) == 0x80) ||
		    (c == 0xed && s[1] >= 0xa0) || (c == 0xf0 && s[1] < 0x90) || c > 0xf4 ||
		    (c == 0xf4 && s[1] >= 0x90))
			return false;
		for (int i = 1; i <= n; i++)
			if ((s[i] & 0xc0) != 0x80)
				return false;
		s += n + 1;
	}
	return true;
}

const char *json_str(const char *s, char *buf, size_t len)
{
	bool raw_high = utf8_valid((const unsigned char *)s);
	size_t o = 0;

	if (len < 3) {
		if (len)
			buf[0] = 0;
		return buf;
	}
	buf[o++] = '"';
	for (; *s && o + 8 < len; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') {
			buf[o++] = '\\';
			buf[o++] = (char)c;
		} else if (c < 0x20 || c == 0x7f || (c >= 0x80 && !raw_high)) {
			o += (size_t)snprintf(buf + o, len - o, "\\u%04x", c);
		} else {
			buf[o++] = (char)c;
		}
	}
	buf[o++] = '"';
	buf[o] = 0;
	return buf;
}
