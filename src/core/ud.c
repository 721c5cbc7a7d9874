/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Datagram (RCC_QP_UD) endpoints and address handles: checks, defaults and
 * lifetimes; the transport does the rest (ud_* and ah_* of its ops).
 */
#include <errno.h>
#include <stdlib.h>

#include "base/last_error.h"
#include "base/log.h"
#include "core/core.h"

static uint8_t ud_kind(const struct rcc_ctx *ctx)
{
	return ctx->transport == RCC_TRANSPORT_VERBS ? RCCI_UD_VERBS : RCCI_UD_TCP;
}

static const char *kind_name(uint8_t kind) { return kind == RCCI_UD_VERBS ? "verbs" : "tcp"; }

int rcc_ud_create(struct rcc_ctx *ctx, const struct rcc_ep_attr *attr, struct rcc_ep **out)
{
	struct rcc_ep *ep;
	int rc;

	rcci_error_clear();
	if (!ctx || !attr || !out)
		return rcci_fail(-EINVAL, "rcc_ud_create: ctx, attr and ep must not be NULL");
	if (!ctx->ops->ud_create)
		return rcci_fail(-EOPNOTSUPP, "the %s transport has no datagram endpoints",
				 ctx->ops->name);
	rc = rcci_ud_prepare(ctx, attr, &ep);
	if (rc)
		return rc;
	rc = ctx->ops->ud_create(ep);
	if (rc) {
		free(ep);
		return rcci_fail(rc, "cannot create a datagram endpoint: %s", rcc_strerror(rc));
	}
	if (ep->attr.num_initial_recv) {
		int posted = 0;
		rc = ctx->ops->ud_post_recv(ep, ep->attr.initial_recv, ep->attr.num_initial_recv,
					    &posted);
		if (rc) {
			ctx->ops->ud_destroy(ep);
			free(ep);
			return rcci_fail(rc,
					 "posting initial receive %d of the datagram endpoint: %s",
					 posted, rcc_strerror(rc));
		}
	}
	rcci_connect_done(ep); /* the initial receives are the caller's again */
	rcci_ep_count_users(ep);
	*out = ep;
	return 0;
}

uint32_t rcc_ud_max_msg(const struct rcc_ep *ep)
{
	return ep && ep->attr.qp_type == RCC_QP_UD ? ep->ud_max_msg : 0;
}

int rcc_ud_addr(const struct rcc_ep *ep, struct rcc_ud_addr *addr)
{
	struct rcci_ud_addr a;

	if (!ep || !addr || ep->attr.qp_type != RCC_QP_UD)
		return -EINVAL;
	ep->ctx->ops->ud_addr(ep, &a);
	rcci_ud_addr_encode(&a, addr);
	return 0;
}

int rcc_ah_create(struct rcc_ep *ep, const struct rcc_ud_addr *addr, struct rcc_ah **out)
{
	struct rcci_ud_addr a;
	const char *why = NULL;
	struct rcc_ah *ah;
	int rc;

	rcci_error_clear();
	if (!ep || !addr || !out)
		return rcci_fail(-EINVAL, "rcc_ah_create: ep, addr and ah must not be NULL");
	if (ep->attr.qp_type != RCC_QP_UD)
		return rcci_fail(-EINVAL, "rcc_ah_create: not a datagram (RCC_QP_UD) endpoint");
	if (rcci_ud_addr_decode(addr, &a, &why))
		return rcci_fail(-EINVAL, "the peer's datagram address is unusable: %s", why);
	if (a.kind != ud_kind(ep->ctx))
		return rcci_fail(-EINVAL, "a %s datagram address, but this endpoint is on %s",
				 kind_name(a.kind), kind_name(ud_kind(ep->ctx)));
	struct rcc_ctx *ctx = ep->ctx;
	ah = calloc(1, ctx->ops->ah_size);
	if (!ah)
		return -ENOMEM;
	ah->ctx = ctx;
	rc = ctx->ops->ah_create(ah, &a);
	if (rc) {
		free(ah);
		return rcci_fail(rc, "cannot create an address handle: %s", rcc_strerror(rc));
	}
	atomic_fetch_add(&ctx->children, 1);
	*out = ah;
	return 0;
}

int rcc_ah_destroy(struct rcc_ah *ah)
{
	if (!ah)
		return -EINVAL;
	struct rcc_ctx *ctx = ah->ctx;
	ctx->ops->ah_destroy(ah);
	atomic_fetch_sub(&ctx->children, 1);
	free(ah);
	return 0;
}
