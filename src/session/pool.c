/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rcc_pool: one registered region cut into fixed-size pieces. get/put are a
 * stack of free indices under a mutex; a bitmap catches double puts.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "base/last_error.h"
#include "base/log.h"
#include "rcc/session.h"

#define PIECE_ALIGN 64

struct rcc_pool {
	uint8_t *base;
	size_t region;
	size_t piece;
	size_t stride;
	uint32_t count;
	struct rcc_mr *mr;
	pthread_mutex_t lock;
	uint32_t *free_idx;
	uint32_t nfree;
	uint8_t *is_free;
};

int rcc_pool_create(struct rcc_ctx *ctx, size_t piece_size, uint32_t count, unsigned access,
		    struct rcc_pool **out)
{
	struct rcc_pool *p;
	int rc;

	rcci_error_clear();
	if (!ctx || !out || !piece_size || !count || piece_size > RCC_MAX_MSG_SIZE)
		return rcci_fail(-EINVAL,
				 "a pool of %u pieces of %zu bytes: want both non-zero "
				 "and pieces of at most RCC_MAX_MSG_SIZE",
				 count, piece_size);
	size_t stride = (piece_size + PIECE_ALIGN - 1) & ~(size_t)(PIECE_ALIGN - 1);
	if (stride > SIZE_MAX / count)
		return rcci_fail(-EINVAL, "a pool of %u pieces of %zu bytes is too large", count,
				 piece_size);
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->piece = piece_size;
	p->stride = stride;
	p->count = count;
	p->region = (stride * count + 4095) & ~(size_t)4095;
	p->free_idx = malloc(count * sizeof(*p->free_idx));
	p->is_free = malloc(count);
	if (!p->free_idx || !p->is_free) {
		rc = -ENOMEM;
		goto err_arrays;
	}
	/* mmap: page-aligned, and returned to the system whole on destroy. */
	p->base = mmap(NULL, p->region, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p->base == MAP_FAILED) {
		rc = -errno;
		goto err_arrays;
	}
	rc = rcc_mr_reg(ctx, p->base, p->region, access, &p->mr);
	if (rc)
		goto err_map;
	for (uint32_t i = 0; i < count; i++) {
		p->free_idx[i] = count - 1 - i; /* hand out low indices first */
		p->is_free[i] = 1;
	}
	p->nfree = count;
	pthread_mutex_init(&p->lock, NULL);
	*out = p;
	return 0;

err_map:
	munmap(p->base, p->region);
err_arrays:
	free(p->is_free);
	free(p->free_idx);
	free(p);
	return rc;
}

int rcc_pool_destroy(struct rcc_pool *p)
{
	if (!p)
		return -EINVAL;
	pthread_mutex_lock(&p->lock);
	uint32_t nfree = p->nfree;
	pthread_mutex_unlock(&p->lock);
	if (nfree != p->count) {
		log_warn("pool: destroy with %u pieces still out", p->count - nfree);
		return -EBUSY;
	}
	int rc = rcc_mr_dereg(p->mr);
	if (rc)
		return rc;
	munmap(p->base, p->region);
	pthread_mutex_destroy(&p->lock);
	free(p->is_free);
	free(p->free_idx);
	free(p);
	return 0;
}

int rcc_pool_get(struct rcc_pool *p, void **piece)
{
	if (!p || !piece)
		return -EINVAL;
	pthread_mutex_lock(&p->lock);
	if (!p->nfree) {
		pthread_mutex_unlock(&p->lock);
		return -ENOBUFS;
	}
	uint32_t i = p->free_idx[--p->nfree];
	p->is_free[i] = 0;
	pthread_mutex_unlock(&p->lock);
	*piece = p->base + (size_t)i * p->stride;
	return 0;
}

int rcc_pool_index(const struct rcc_pool *p, const void *piece)
{
	if (!p || !piece)
		return -EINVAL;
	uintptr_t off = (uintptr_t)piece - (uintptr_t)p->base;
	if ((uintptr_t)piece < (uintptr_t)p->base || off % p->stride || off / p->stride >= p->count)
		return -EINVAL;
	return (int)(off / p->stride);
}

int rcc_pool_put(struct rcc_pool *p, void *piece)
{
	int i = rcc_pool_index(p, piece);
	if (i < 0)
		return i;
	pthread_mutex_lock(&p->lock);
	if (p->is_free[i]) {
		pthread_mutex_unlock(&p->lock);
		log_warn("pool: piece %d put back twice", i);
		return -EINVAL;
	}
	p->is_free[i] = 1;
	p->free_idx[p->nfree++] = (uint32_t)i;
	pthread_mutex_unlock(&p->lock);
	return 0;
}

struct rcc_mr *rcc_pool_mr(const struct rcc_pool *p) { return p ? p->mr : NULL; }
size_t rcc_pool_piece_size(const struct rcc_pool *p) { return p ? p->piece : 0; }
uint32_t rcc_pool_count(const struct rcc_pool *p) { return p ? p->count : 0; }

uint32_t rcc_pool_available(const struct rcc_pool *p)
{
	if (!p)
		return 0;
	pthread_mutex_lock((pthread_mutex_t *)&p->lock);
	uint32_t n = p->nfree;
	pthread_mutex_unlock((pthread_mutex_t *)&p->lock);
	return n;
}

void *rcc_pool_piece_at(const struct rcc_pool *p, uint32_t index)
{
	return p && index < p->count ? p->base + (size_t)index * p->stride : NULL;
}

struct rcc_sge rcc_pool_sge(const struct rcc_pool *p, const void *piece, uint32_t len)
{
	return rcc_mr_sge(p ? p->mr : NULL, piece, len);
}
