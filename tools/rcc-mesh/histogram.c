/* SPDX-License-Identifier: BSD-3-Clause */
#include "histogram.h"

#include <string.h>

#include "stats.h"

static unsigned bucket_of(uint64_t v)
{
	if (v < 64)
		return (unsigned)v;
	unsigned e = 63u - (unsigned)__builtin_clzll(v); /* >= 6 */
	unsigned sub = (unsigned)(v >> (e - HIST_SUB_BITS)) & ((1u << HIST_SUB_BITS) - 1);
	return 64 + (e - 6) * (1u << HIST_SUB_BITS) + sub;
}

/* The largest value that falls into bucket b: percentiles err on the high side. */
static uint64_t bucket_top(unsigned b)
{
	if (b < 64)
		return b;
	unsigned e = (b - 64) / (1u << HIST_SUB_BITS) + 6;
	uint64_t sub = (b - 64) % (1u << HIST_SUB_BITS);
	uint64_t lo = (1ull << e) + (sub << (e - HIST_SUB_BITS));
	return lo + (1ull << (e - HIST_SUB_BITS)) - 1;
}

void hist_init(struct histogram *h) { memset(h, 0, sizeof(*h)); }

void hist_add(struct histogram *h, uint64_t v)
{
	h->bucket[bucket_of(v)]++;
	h->count++;
	if (v > h->max)
		h->max = v;
}

uint64_t hist_percentile(const struct histogram *h, double p)
{
	if (!h->count)
		return 0;
	uint64_t rank = nearest_rank(p, h->count), seen = 0;
	for (unsigned i = 0; i < HIST_BUCKETS; i++) {
		seen += h->bucket[i];
		if (seen >= rank) {
			uint64_t top = bucket_top(i);
			return top < h->max ? top : h->max;
		}
	}
	return h->max;
}
