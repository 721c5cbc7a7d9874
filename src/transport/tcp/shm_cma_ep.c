/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Single copy and the endpoints of a context: which endpoints' requests may
 * name slots (ctx->cma_eps), what rcc_mr_dereg() does to them, and what an
 * endpoint leaving service does to its own (shm_cma.h, docs/shm.md).
 */
#include <sys/socket.h>

#include "base/log.h"
#include "tcp.h"

void rcci_cma_ep_start(struct tcp_ep *ep)
{
	struct tcp_ctx *ctx = ep->ctx;

	pthread_mutex_lock(&ctx->cma_lock);
	ep->cma_next = ctx->cma_eps;
	ctx->cma_eps = ep;
	ep->cma_listed = true;
	rcci_map_ep_start(ep);
	pthread_mutex_unlock(&ctx->cma_lock);
}

void rcci_cma_ep_peer_stuck(struct tcp_ep *ep, const char *what)
{
	log_warn("%s: the peer stayed inside %s past its timeout", ep->base.peer, what);
	shutdown(ep->fd, SHUT_RDWR);
}

/* Every region published to ep revoked and the peer's copies waited out;
 * none is published to it any more. Caller holds cma_lock. */
static void withdraw_regions(struct tcp_ep *ep)
{
	if (!rcci_shm_map_withdraw(&ep->shm.mapped))
		rcci_cma_ep_peer_stuck(ep, "a mapped copy");
}

void rcci_cma_ep_quiesce(struct tcp_ep *ep)
{
	if (ep->base.on_shm && !rcci_shm_cma_kill(&ep->shm.cma, ~0u))
		rcci_cma_ep_peer_stuck(ep, "a single-copy slot");
}

bool rcci_cma_ep_withdraw(struct tcp_ep *ep, bool block, bool give_up)
{
	struct tcp_ctx *ctx = ep->ctx;

	if (block)
		pthread_mutex_lock(&ctx->cma_lock);
	else if (pthread_mutex_trylock(&ctx->cma_lock))
		return false;
	if (give_up) {
		ep->shm.cma.wait_ns = 0;
		ep->shm.mapped.wait_ns = 0;
	}
	if (ep->cma_listed)
		withdraw_regions(ep);
	pthread_mutex_unlock(&ctx->cma_lock);
	return true;
}

bool rcci_cma_ep_peer_copying(struct tcp_ep *ep, uint64_t for_ns)
{
	uint64_t deadline = 0;

	for (;;) {
		if (!rcci_shm_map_peer_busy(&ep->shm.mapped) &&
		    !rcci_shm_cma_peer_busy(&ep->shm.cma))
			return false;
		uint64_t now = rcc_now_ns();
		if (!deadline)
			deadline = now + for_ns;
		if (now >= deadline)
			return true;
	}
}

void rcci_cma_ep_stop(struct tcp_ep *ep)
{
	struct tcp_ctx *ctx = ep->ctx;

	if (!ep->cma_listed)
		return;
	pthread_mutex_lock(&ctx->cma_lock);
	/* Every slot dead and waited out while still listed: a deregistration
	 * that no longer finds this endpoint has nothing left to wait for. */
	rcci_cma_ep_quiesce(ep);
	/* Likewise every region published to it (done already if it failed). */
	withdraw_regions(ep);
	for (struct tcp_ep **p = &ctx->cma_eps; *p; p = &(*p)->cma_next) {
		if (*p == ep) {
			*p = ep->cma_next;
			break;
		}
	}
	ep->cma_listed = false;
	pthread_mutex_unlock(&ctx->cma_lock);
}

void rcci_cma_dereg_revoke(struct tcp_ctx *ctx, uint32_t key)
{
	for (struct tcp_ep *ep = ctx->cma_eps; ep; ep = ep->cma_next) {
		ep->cma_dereg_mask = rcci_shm_cma_slots_of(&ep->shm.cma, key);
		rcci_shm_cma_revoke(&ep->shm.cma, ep->cma_dereg_mask);
	}
}

void rcci_cma_dereg_wait(struct tcp_ctx *ctx)
{
	for (struct tcp_ep *ep = ctx->cma_eps; ep; ep = ep->cma_next) {
		if (!rcci_shm_cma_wait(&ep->shm.cma, ep->cma_dereg_mask))
			rcci_cma_ep_peer_stuck(ep, "a single-copy slot");
		ep->cma_dereg_mask = 0;
	}
}
