/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Latency statistics as perftest reports them: samples are kept, sorted once,
 * and summarised (min, max, median as "typical", mean, floating-point stdev,
 * percentiles by nearest rank).
 */
#ifndef RCC_TOOLS_STATS_H
#define RCC_TOOLS_STATS_H

#include <stddef.h>
#include <stdint.h>

struct samples {
	double *v;
	size_t n, cap;
};

int samples_init(struct samples *s, size_t cap_hint);
void samples_free(struct samples *s);
/* Append one value; grows as needed. 0 or -ENOMEM. */
int samples_add(struct samples *s, double x);
void samples_clear(struct samples *s);

struct summary {
	size_t n;
	double min, max, mean, stdev, median, p90, p99, p999;
};

/* Sorts the samples in place. An empty set gives all zeroes. */
void samples_summarise(struct samples *s, struct summary *out);

/* The 1-based nearest rank of percentile p among n values (0 when n is 0). */
uint64_t nearest_rank(double p, uint64_t n);
/* Nearest-rank percentile (0 < p <= 100) of sorted values. */
double percentile_sorted(const double *sorted, size_t n, double p);

/* Nanoseconds from a monotonic clock. */
uint64_t mono_ns(void);

/* Bytes per second as a human string into buf, e.g. "1.23 GB/s" (decimal units). */
const char *fmt_rate(double bytes_per_s, char *buf, size_t len);
/* A byte count, e.g. "4 KiB", "1.5 MiB" (binary units). */
const char *fmt_bytes(uint64_t bytes, char *buf, size_t len);

#endif
