/* SPDX-License-Identifier: BSD-3-Clause */
#include "window.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "proto.h"

int window_create(struct rcc_ctx *ctx, uint32_t chunk, uint32_t count, unsigned access,
		  struct window *w)
{
	int rc;

	memset(w, 0, sizeof(*w));
	w->chunk = chunk;
	w->count = count;
	if (!count)
		return 0;
	w->bytes = (size_t)chunk * count;
	w->mem = mmap(NULL, w->bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (w->mem == MAP_FAILED) {
		w->mem = NULL;
		return -ENOMEM;
	}
	rc = rcc_mr_reg(ctx, w->mem, w->bytes, access, &w->mr);
	if (rc) {
		munmap(w->mem, w->bytes);
		w->mem = NULL;
		return rc;
	}
	return 0;
}

void window_destroy(struct window *w)
{
	if (w->mr)
		rcc_mr_dereg(w->mr);
	if (w->mem)
		munmap(w->mem, w->bytes);
	memset(w, 0, sizeof(*w));
}

void window_shape(uint64_t remaining, uint32_t chunk, uint32_t count, uint32_t *out_chunk,
		  uint32_t *out_count)
{
	uint64_t need;

	if (!remaining) {
		*out_chunk = 0;
		*out_count = 0;
		return;
	}
	if (remaining < chunk) {
		uint64_t c = (remaining + XFER_MIN_CHUNK - 1) / XFER_MIN_CHUNK * XFER_MIN_CHUNK;
		chunk = (uint32_t)c;
	}
	need = (remaining + chunk - 1) / chunk;
	*out_chunk = chunk;
	*out_count = need < count ? (uint32_t)need : count;
}
