/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Latency histogram with bounded memory: per-message samples of a long run
 * at a high message rate would not fit. Log-linear buckets (32 per power of
 * two) keep every percentile within about 3% of the true value.
 */
#ifndef RCC_MESH_HISTOGRAM_H
#define RCC_MESH_HISTOGRAM_H

#include <stdint.h>

#define HIST_SUB_BITS 5
#define HIST_BUCKETS (64 + (64 - 6) * (1 << HIST_SUB_BITS))

struct histogram {
	uint64_t count, max;
	uint64_t bucket[HIST_BUCKETS];
};

void hist_init(struct histogram *h);
void hist_add(struct histogram *h, uint64_t v);
/* Nearest-rank percentile (0 < p <= 100); 0 when empty. */
uint64_t hist_percentile(const struct histogram *h, double p);

#endif
