/* SPDX-License-Identifier: BSD-3-Clause */
/* The list of measured points, kept for the JSON/CSV/plot outputs. */
#include <errno.h>
#include <stdlib.h>

#include "perf.h"

int results_add(struct perf_results *r, const struct perf_point *pt)
{
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 32;
		struct perf_point *v = realloc(r->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		r->v = v;
		r->cap = cap;
	}
	r->v[r->n++] = *pt;
	return 0;
}

void results_free(struct perf_results *r)
{
	free(r->v);
	r->v = NULL;
	r->n = r->cap = 0;
}
