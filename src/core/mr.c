/* SPDX-License-Identifier: BSD-3-Clause */
/* Memory registration: checks and the wire form of a remote region. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/last_error.h"
#include "base/log.h"
#include "core/core.h"
#include "rcc/util.h"

#define ACCESS_ALL                                                                   \
	(RCC_ACCESS_LOCAL_WRITE | RCC_ACCESS_REMOTE_WRITE | RCC_ACCESS_REMOTE_READ | \
	 RCC_ACCESS_REMOTE_ATOMIC)

int rcc_mr_reg(struct rcc_ctx *ctx, void *addr, size_t length, unsigned access, struct rcc_mr **out)
{
	struct rcc_mr *mr;
	int rc;

	rcci_error_clear();
	if (!ctx || !addr || !out)
		return rcci_fail(-EINVAL, "rcc_mr_reg: ctx, addr and mr must not be NULL");
	if (length == 0)
		return rcci_fail(-EINVAL, "a region of length 0");
	if (access & ~ACCESS_ALL)
		return rcci_fail(-EINVAL, "unknown access bits 0x%x", access & ~ACCESS_ALL);
	if ((uintptr_t)addr + length < (uintptr_t)addr)
		return rcci_fail(-EINVAL, "a region of %zu bytes at %p wraps around", length, addr);
	/* Verbs refuses remote write/atomic without local write; so do we everywhere. */
	if ((access & (RCC_ACCESS_REMOTE_WRITE | RCC_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & RCC_ACCESS_LOCAL_WRITE))
		return rcci_fail(-EINVAL,
				 "remote write and remote atomic access need local write as well");
	mr = calloc(1, ctx->ops->mr_size);
	if (!mr)
		return -ENOMEM;
	mr->ctx = ctx;
	mr->addr = addr;
	mr->length = length;
	mr->access = access;
	mr->mem = rcci_mem_hold(ctx, addr, length);
	rc = ctx->ops->mr_reg(mr);
	if (rc) {
		rcci_mem_release(ctx, mr->mem);
		free(mr);
		return rcci_fail(rc, "registering %zu bytes failed: %s", length, rcc_strerror(rc));
	}
	atomic_fetch_add(&ctx->children, 1);
	*out = mr;
	return 0;
}

int rcc_mr_dereg(struct rcc_mr *mr)
{
	int rc;

	if (!mr)
		return -EINVAL;
	struct rcc_ctx *ctx = mr->ctx;
	rc = ctx->ops->mr_dereg(mr);
	if (rc)
		return rc;
	rcci_mem_release(ctx, mr->mem);
	atomic_fetch_sub(&ctx->children, 1);
	free(mr);
	return 0;
}

void *rcc_mr_addr(const struct rcc_mr *mr) { return mr ? mr->addr : NULL; }
size_t rcc_mr_length(const struct rcc_mr *mr) { return mr ? mr->length : 0; }
uint32_t rcc_mr_lkey(const struct rcc_mr *mr) { return mr ? mr->lkey : 0; }
uint32_t rcc_mr_rkey(const struct rcc_mr *mr) { return mr ? mr->rkey : 0; }
unsigned rcc_mr_access(const struct rcc_mr *mr) { return mr ? mr->access : 0; }

struct rcc_remote_mr rcc_mr_remote(const struct rcc_mr *mr)
{
	struct rcc_remote_mr r = { 0, 0, 0 };
	if (mr) {
		r.addr = (uint64_t)(uintptr_t)mr->addr;
		r.length = mr->length;
		r.rkey = mr->rkey;
	}
	return r;
}

struct rcc_sge rcc_mr_sge(const struct rcc_mr *mr, const void *addr, uint32_t length)
{
	struct rcc_sge s = { (uint64_t)(uintptr_t)addr, length, mr ? mr->lkey : 0 };
	return s;
}

void rcc_remote_mr_encode(const struct rcc_remote_mr *r, uint8_t out[RCC_REMOTE_MR_WIRE_SIZE])
{
	rcc_put_le64(out, r->addr);
	rcc_put_le64(out + 8, r->length);
	rcc_put_le32(out + 16, r->rkey);
}

int rcc_remote_mr_decode(const void *in, size_t len, struct rcc_remote_mr *r)
{
	const uint8_t *p = in;
	struct rcc_remote_mr tmp;

	if (!in || !r || len < RCC_REMOTE_MR_WIRE_SIZE)
		return -EINVAL;
	/* padding too: a caller may compare or hash descriptors whole */
	memset(&tmp, 0, sizeof(tmp));
	tmp.addr = rcc_get_le64(p);
	tmp.length = rcc_get_le64(p + 8);
	tmp.rkey = rcc_get_le32(p + 16);
	if (tmp.addr + tmp.length < tmp.addr)
		return -EINVAL;
	*r = tmp;
	return 0;
}
