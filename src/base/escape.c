/* SPDX-License-Identifier: BSD-3-Clause */
/* rcc_text_escape() of rcc/util.h: peer text made safe for a terminal or a log. */
#include <stdbool.h>
#include <stdio.h>

#include "rcc/util.h"

/* Length of the well-formed UTF-8 sequence at p (at most n bytes available),
 * its code point in *cp; 0 when the bytes are not one (overlong, surrogate,
 * beyond U+10FFFF, cut short). */
static size_t utf8_seq(const unsigned char *p, size_t n, uint32_t *cp)
{
	unsigned char c = p[0];
	size_t len;
	uint32_t v, min;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if ((c & 0xe0) == 0xc0) {
		len = 2, v = c & 0x1f, min = 0x80;
	} else if ((c & 0xf0) == 0xe0) {
		len = 3, v = c & 0x0f, min = 0x800;
	} else if ((c & 0xf8) == 0xf0) {
		len = 4, v = c & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (p[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return len;
}

/* Code points that steer a terminal or reorder text rather than show a letter. */
static bool is_control(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e) ||
	       (cp >= 0x2066 && cp <= 0x2069);
}

size_t rcc_text_escape(char *dst, size_t dstlen, const void *src, size_t srclen)
{
	static const char ellipsis[] = "...";
	const unsigned char *s = src;
	size_t i = 0, o = 0, cut = 0;

	if (!dstlen)
		return 0;
	if (!s)
		srclen = 0;
	while (i < srclen && s[i]) {
		char piece[4 * 4 + 1]; /* the longest: four bytes as \xHH each */
		size_t plen = 0;
		uint32_t cp;
		size_t n = utf8_seq(s + i, srclen - i, &cp);

		if (n == 1 && cp == '\\') {
			piece[0] = piece[1] = '\\';
			plen = 2;
		} else if (n && cp && !is_control(cp)) {
			for (size_t k = 0; k < n; k++)
				piece[plen++] = (char)s[i + k];
		} else {
			if (!n)
				n = 1; /* not UTF-8: this byte alone */
			for (size_t k = 0; k < n; k++)
				plen += (size_t)snprintf(piece + plen, sizeof(piece) - plen,
							 "\\x%02x", s[i + k]);
		}
		/* Written while it fits; if a later piece does not, the text is cut
		 * back to the last boundary that leaves room for "..." -- so a cut
		 * never splits a character or an escape, and text that fits
		 * exactly is never cut. */
		if (o + sizeof(ellipsis) <= dstlen)
			cut = o;
		if (o + plen + 1 > dstlen) {
			o = cut;
			for (size_t k = 0; k < sizeof(ellipsis) - 1 && o + 1 < dstlen; k++)
				dst[o++] = ellipsis[k];
			break;
		}
		for (size_t k = 0; k < plen; k++)
			dst[o++] = piece[k];
		i += n;
	}
	dst[o] = 0;
	return o;
}
