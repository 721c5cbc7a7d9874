/* SPDX-License-Identifier: BSD-3-Clause */
#include "stats.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "rcc/util.h"

int samples_init(struct samples *s, size_t cap_hint)
{
	s->n = 0;
	s->cap = cap_hint ? cap_hint : 1024;
	s->v = malloc(s->cap * sizeof(*s->v));
	return s->v ? 0 : -ENOMEM;
}

void samples_free(struct samples *s)
{
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}

int samples_add(struct samples *s, double x)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1024;
		double *v = realloc(s->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = x;
	return 0;
}

void samples_clear(struct samples *s) { s->n = 0; }

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

uint64_t nearest_rank(double p, uint64_t n)
{
	if (n == 0)
		return 0;
	if (p <= 0)
		return 1;
	/* p/100*n in binary floating point can land just above an integer
	 * (99.9% of 1000 is 999.0000000000001): forgive that much rounding. */
	double r = p / 100.0 * (double)n;
	uint64_t rank = (uint64_t)ceil(r - r * 1e-12);
	if (rank < 1)
		rank = 1;
	return rank > n ? n : rank;
}

double percentile_sorted(const double *sorted, size_t n, double p)
{
	return n ? sorted[nearest_rank(p, n) - 1] : 0;
}

void samples_summarise(struct samples *s, struct summary *out)
{
	struct summary r = { 0 };

	if (s->n) {
		qsort(s->v, s->n, sizeof(*s->v), cmp_double);
		double sum = 0, sq = 0;
		for (size_t i = 0; i < s->n; i++)
			sum += s->v[i];
		r.mean = sum / (double)s->n;
		for (size_t i = 0; i < s->n; i++)
			sq += (s->v[i] - r.mean) * (s->v[i] - r.mean);
		r.n = s->n;
		r.stdev = s->n > 1 ? sqrt(sq / (double)(s->n - 1)) : 0;
		r.min = s->v[0];
		r.max = s->v[s->n - 1];
		/* perftest's t_typical: the middle sample */
		r.median = s->n % 2 ? s->v[s->n / 2] : (s->v[s->n / 2 - 1] + s->v[s->n / 2]) / 2;
		r.p90 = percentile_sorted(s->v, s->n, 90);
		r.p99 = percentile_sorted(s->v, s->n, 99);
		r.p999 = percentile_sorted(s->v, s->n, 99.9);
	}
	*out = r;
}

uint64_t mono_ns(void) { return rcc_now_ns(); }

const char *fmt_rate(double bps, char *buf, size_t len)
{
	static const char *const unit[] = { "B/s", "kB/s", "MB/s", "GB/s", "TB/s" };
	int u = 0;
	while (bps >= 1000 && u < 4) {
		bps /= 1000;
		u++;
	}
	snprintf(buf, len, "%.2f %s", bps, unit[u]);
	return buf;
}

const char *fmt_bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)bytes;
	int u = 0;
	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (v == (double)(uint64_t)v)
		snprintf(buf, len, "%llu %s", (unsigned long long)v, unit[u]);
	else
		snprintf(buf, len, "%.2f %s", v, unit[u]);
	return buf;
}
