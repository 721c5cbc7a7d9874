/* SPDX-License-Identifier: BSD-3-Clause */
#include "pattern.h"

#include <string.h>

#include <rcc/util.h>

#define HDR_MARK 0xa5

static inline uint64_t mix(uint64_t z)
{
	/* splitmix64's finaliser: cheap, and every input bit reaches every output bit */
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t seed_of(const struct pat_id *id)
{
	return mix(((uint64_t)id->src << 48) ^ ((uint64_t)id->dst << 32) ^
		   ((uint64_t)id->stream << 24) ^ mix(id->label + 0x9e3779b97f4a7c15ull));
}

static inline uint64_t word_at(uint64_t seed, uint64_t i)
{
	return mix(seed + i * 0x9e3779b97f4a7c15ull);
}

static void header_bytes(const struct pat_id *id, uint8_t h[PAT_HDR_LEN])
{
	rcc_put_le64(h, id->label);
	rcc_put_le16(h + 8, id->src);
	rcc_put_le16(h + 10, id->dst);
	h[12] = id->stream;
	h[13] = HDR_MARK;
	h[14] = h[15] = 0;
}

static size_t body_start(size_t len) { return len >= PAT_HDR_LEN ? PAT_HDR_LEN : 0; }

void pattern_fill(void *buf, size_t len, const struct pat_id *id)
{
	uint8_t *p = buf;
	uint64_t seed = seed_of(id);
	size_t off = body_start(len), i = 0;

	if (off)
		header_bytes(id, p);
	for (; off + 8 <= len; off += 8, i++) {
		uint64_t w = word_at(seed, i);
		memcpy(p + off, &w, 8); /* host order: sender and receiver compute alike */
	}
	if (off < len) {
		uint64_t w = word_at(seed, i);
		memcpy(p + off, &w, len - off);
	}
}

long pattern_check(const void *buf, size_t len, const struct pat_id *id, uint8_t *want)
{
	const uint8_t *p = buf;
	uint64_t seed = seed_of(id);
	size_t off = body_start(len), i = 0;
	uint8_t exp[8];

	if (off) {
		uint8_t h[PAT_HDR_LEN];
		header_bytes(id, h);
		for (size_t k = 0; k < PAT_HDR_LEN; k++)
			if (p[k] != h[k]) {
				*want = h[k];
				return (long)k;
			}
	}
	for (; off < len; off += 8, i++) {
		uint64_t w = word_at(seed, i);
		size_t n = len - off < 8 ? len - off : 8;
		if (memcmp(p + off, &w, n) == 0)
			continue;
		memcpy(exp, &w, 8);
		for (size_t k = 0; k < n; k++)
			if (p[off + k] != exp[k]) {
				*want = exp[k];
				return (long)(off + k);
			}
	}
	return -1;
}

bool pattern_header(const void *buf, size_t len, struct pat_id *claimed)
{
	const uint8_t *p = buf;
	if (len < PAT_HDR_LEN || p[13] != HDR_MARK)
		return false;
	claimed->label = rcc_get_le64(p);
	claimed->src = rcc_get_le16(p + 8);
	claimed->dst = rcc_get_le16(p + 10);
	claimed->stream = p[12];
	return true;
}
