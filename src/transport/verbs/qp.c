/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The RC queue pair behind an endpoint: creation with the endpoint's
 * capabilities, the initial receives, and the RTR/RTS attributes rcc sets
 * itself whichever bring-up is used.
 */
#include <errno.h>
#include <string.h>

#include "base/log.h"
#include "verbs.h"

static uint8_t min_u8(uint32_t a, uint32_t b)
{
	uint32_t m = a < b ? a : b;
	return (uint8_t)(m > 255 ? 255 : m);
}

static bool is_uc(const struct verbs_ep *ep) { return ep->base.attr.qp_type == RCC_QP_UC; }
static bool is_ud(const struct verbs_ep *ep) { return ep->base.attr.qp_type == RCC_QP_UD; }

static enum ibv_qp_type qp_type(const struct verbs_ep *ep)
{
	return is_ud(ep) ? IBV_QPT_UD : is_uc(ep) ? IBV_QPT_UC : IBV_QPT_RC;
}

/* UC has no READ or atomics: no depth to offer or ask for. */
uint8_t rcci_rd_atomic_responder(struct verbs_ep *ep)
{
	if (is_uc(ep))
		return 0;
	return min_u8(ep->base.attr.max_rd_atomic, (uint32_t)ep->ctx->dev_attr.max_qp_rd_atom);
}

uint8_t rcci_rd_atomic_initiator(struct verbs_ep *ep)
{
	if (is_uc(ep))
		return 0;
	return min_u8(ep->base.attr.max_rd_atomic, (uint32_t)ep->ctx->dev_attr.max_qp_init_rd_atom);
}

int rcci_qp_create(struct verbs_ep *ep)
{
	const struct rcc_ep_attr *a = &ep->base.attr;
	struct verbs_ctx *ctx = ep->ctx;
	/* Ask for what the caller named; when left to us, step down until the
	 * device agrees (devices differ widely in inline capacity). */
	static const uint32_t fallback[] = { VERBS_DEFAULT_INLINE, 128, 64, 0 };
	uint32_t want = a->max_inline;
	size_t i = 0;

	for (;;) {
		struct ibv_qp_init_attr ia = {
			.send_cq = vcq(a->send_cq)->cq,
			.recv_cq = vcq(a->recv_cq)->cq,
			.srq = a->srq ? vsrq(a->srq)->srq : NULL,
			.qp_type = qp_type(ep),
			.sq_sig_all = a->sig_all,
			.cap = {
				/* +1: the disconnect marker always finds room. With
				 * an SRQ the QP has no receive queue at all. A UD
				 * receive has one element more: the GRH's (ud.c). */
				.max_send_wr = a->sq_depth + 1,
				.max_recv_wr = a->srq ? 0 : a->rq_depth + 1,
				.max_send_sge = a->max_send_sge,
				.max_recv_sge = a->srq ? 0 : a->max_recv_sge + (is_ud(ep) ? 1 : 0),
				.max_inline_data = a->max_inline ? a->max_inline : fallback[i],
			},
		};
		ep->qp = ibv_create_qp(ctx->pd, &ia);
		if (ep->qp) {
			ep->qpn = ep->qp->qp_num;
			ep->base.max_inline = ia.cap.max_inline_data;
			int rc = rcci_sq_slots_init(&ep->sq, a->sq_depth);
			if (rc)
				rcci_qp_destroy(ep);
			return rc;
		}
		int rc = -errno ? -errno : -ENOMEM;
		if (want || rc != -EINVAL || ++i == sizeof(fallback) / sizeof(fallback[0])) {
			log_error("verbs: ibv_create_qp (sq %u, rq %u, sge %u/%u, inline %u): %s",
				  a->sq_depth, a->rq_depth, a->max_send_sge, a->max_recv_sge,
				  ia.cap.max_inline_data, rcc_strerror(rc));
			return rc;
		}
	}
}

void rcci_qp_destroy(struct verbs_ep *ep)
{
	if (ep->qp && ibv_destroy_qp(ep->qp))
		log_warn("verbs: ibv_destroy_qp(%u) failed: %s", ep->qpn, strerror(errno));
	ep->qp = NULL;
}

int rcci_qp_post_initial(struct verbs_ep *ep)
{
	int n = ep->base.attr.num_initial_recv;
	int posted = 0;

	if (!n)
		return 0;
	int rc = rcci_verbs_post_recv(&ep->base, ep->base.attr.initial_recv, n, &posted);
	if (rc)
		log_error("verbs: posting %d initial receives: %s (%d posted)", n, rcc_strerror(rc),
			  posted);
	return rc;
}

static int modify(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask, const char *what)
{
	int rc = ibv_modify_qp(qp, attr, mask);

	if (rc) {
		rc = rc > 0 ? -rc : (-errno ? -errno : -EINVAL);
		log_error("verbs: QP %u to %s: %s", qp->qp_num, what, rcc_strerror(rc));
	}
	return rc;
}

int rcci_qp_modify(struct verbs_ep *ep, struct ibv_qp_attr *attr, int mask, const char *what)
{
	return modify(ep->qp, attr, mask, what);
}

int rcci_qp_ud_ready(struct ibv_qp *qp, uint8_t port, uint32_t qkey)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = port,
		.qkey = qkey,
	};
	int rc = modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY,
			"INIT");
	if (rc)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	rc = modify(qp, &a, IBV_QP_STATE, "RTR");
	if (rc)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	return modify(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN, "RTS");
}

int rcci_qp_access(const struct verbs_ep *ep)
{
	return IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
	       (is_uc(ep) ? 0 : IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
}

/*
 * A UC QP has no responder resources, RNR timer, ACK timeout or retries:
 * modify_qp refuses those attributes (and rdma_cm, whose RDMA_PS_TCP ids are
 * RC to the kernel, fills them in), so they are taken out of the mask.
 */
void rcci_qp_rtr_overrides(struct verbs_ep *ep, struct ibv_qp_attr *a, int *mask,
			   uint8_t max_dest_rd_atomic)
{
	if (is_uc(ep)) {
		*mask &= ~(IBV_QP_MIN_RNR_TIMER | IBV_QP_MAX_DEST_RD_ATOMIC);
		return;
	}
	a->min_rnr_timer = ep->base.attr.min_rnr_timer;
	a->max_dest_rd_atomic = max_dest_rd_atomic;
	*mask |= IBV_QP_MIN_RNR_TIMER | IBV_QP_MAX_DEST_RD_ATOMIC;
}

void rcci_qp_rts_overrides(struct verbs_ep *ep, struct ibv_qp_attr *a, int *mask,
			   uint8_t max_rd_atomic)
{
	const struct rcc_ep_attr *at = &ep->base.attr;

	if (is_uc(ep)) {
		*mask &= ~(IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			   IBV_QP_MAX_QP_RD_ATOMIC);
		return;
	}
	a->timeout = at->timeout;
	a->retry_cnt = (uint8_t)at->retry_cnt;
	a->rnr_retry = (uint8_t)at->rnr_retry;
	a->max_rd_atomic = max_rd_atomic;
	*mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
}
