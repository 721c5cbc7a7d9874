/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Payload patterns for --validate: every message gets contents derived from
 * its sequence number, so a lost, repeated, reordered or torn message shows.
 */
#include <string.h>

#include "perf.h"

uint8_t pattern_byte(uint64_t seq, size_t i)
{
	uint64_t x = seq * 0x9E3779B97F4A7C15ull + (i >> 3) * 0xBF58476D1CE4E5B9ull;
	return (uint8_t)((x >> 29) ^ (x >> 47) ^ (uint8_t)(i * 131));
}

void pattern_fill(void *buf, size_t len, uint64_t seq)
{
	uint8_t *p = buf;
	for (size_t i = 0; i < len; i++)
		p[i] = pattern_byte(seq, i);
}

long pattern_check(const void *buf, size_t len, uint64_t seq)
{
	const uint8_t *p = buf;
	for (size_t i = 0; i < len; i++)
		if (p[i] != pattern_byte(seq, i))
			return (long)i;
	return -1;
}
