/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Mapped transfers and the rest of the transport (shm_map.h, docs/shm.md):
 * which regions are published to which endpoints (ctx->map_mrs, published
 * to every endpoint of ctx->cma_eps, all under cma_lock), and which posted
 * requests the initiator copies itself.
 */
#include <sys/socket.h>

#include "base/log.h"
#include "tcp.h"

static bool mappable(const struct tcp_mr *mr)
{
	return mr->base.mem &&
	       (mr->base.access & (RCC_ACCESS_REMOTE_WRITE | RCC_ACCESS_REMOTE_READ));
}

static void offer(struct tcp_ep *ep, const struct tcp_mr *mr)
{
	const struct rcci_mem *mem = mr->base.mem;
	uint64_t off = (uint64_t)((uintptr_t)mr->base.addr - (uintptr_t)mem->addr);

	rcci_shm_map_offer(&ep->shm.mapped, mr->base.rkey, mem->fd, mem->ino, off,
			   (uint64_t)(uintptr_t)mr->base.addr, mr->base.length, mr->base.access);
}

void rcci_map_ep_start(struct tcp_ep *ep)
{
	rcci_shm_map_start(&ep->shm.mapped, ep->fd, ep->base.peer);
	for (struct tcp_mr *mr = ep->ctx->map_mrs; mr; mr = mr->map_next)
		offer(ep, mr);
}

void rcci_map_reg(struct tcp_ctx *ctx, struct tcp_mr *mr)
{
	if (!mappable(mr))
		return;
	mr->map_next = ctx->map_mrs;
	ctx->map_mrs = mr;
	mr->map_listed = true;
	for (struct tcp_ep *ep = ctx->cma_eps; ep; ep = ep->cma_next)
		offer(ep, mr);
}

void rcci_map_dereg(struct tcp_ctx *ctx, struct tcp_mr *mr)
{
	if (!mr->map_listed)
		return;
	for (struct tcp_mr **p = &ctx->map_mrs; *p; p = &(*p)->map_next) {
		if (*p == mr) {
			*p = mr->map_next;
			break;
		}
	}
	mr->map_listed = false;
	for (struct tcp_ep *ep = ctx->cma_eps; ep; ep = ep->cma_next) {
		if (!rcci_shm_map_revoke(&ep->shm.mapped, mr->base.rkey))
			rcci_cma_ep_peer_stuck(ep, "a mapped copy");
	}
}

void rcci_map_post(struct tcp_ep *ep, uint32_t idx, struct sq_wqe *w)
{
	struct tcp_ctx *ctx = ep->ctx;
	struct iovec v[TCP_MAX_SGE];
	bool read = w->opcode == RCC_WR_READ;
	int n = 0, rc = -1;

	if (!ep->base.on_shm || w->total < ep->shm.mapped.min || (w->flags & RCC_SEND_INLINE) ||
	    w->state == WQE_FAILED ||
	    (!read && w->opcode != RCC_WR_WRITE && w->opcode != RCC_WR_WRITE_IMM))
		return;
	/* RC order: every earlier request that is not mapped has completed
	 * (its bytes are where they go, a READ's answer is in), so this copy
	 * cannot overtake one; earlier mapped ones were copied already. */
	if (msn_lt(ep->sq_head, ep->map_ring_last))
		return;
	const struct rcc_sge *sg = sq_sges(ep, idx);
	rcci_rwlock_read(&ctx->mr_lock);
	for (int i = 0; i < w->num_sge; i++) {
		if (!sg[i].length)
			continue;
		if (!rcci_mr_covers_locked(ctx, sg[i].lkey, sg[i].addr, sg[i].length,
					   read ? RCC_ACCESS_LOCAL_WRITE : 0))
			goto out; /* the ring reports it, in order */
		v[n].iov_base = (void *)(uintptr_t)sg[i].addr;
		v[n].iov_len = sg[i].length;
		n++;
	}
	/* Under mr_lock's read side: our own rcc_mr_dereg() of the local
	 * buffer waits for the copy, as for every copy into or out of it. */
	rc = rcci_shm_map_copy(&ep->shm.mapped, w->rkey, w->raddr, v, n, w->total, !read);
out:
	rcci_rwlock_read_end(&ctx->mr_lock);
	if (!rc)
		w->mapped = 1;
}
