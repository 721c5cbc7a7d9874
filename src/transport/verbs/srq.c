/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared receive queues on verbs: an ibv_srq on the context's PD. The QPs
 * of endpoints that use it are created with it (qp.c); its low-watermark
 * event arrives on the device's async event descriptor (events.c). An SRQ
 * made for datagrams serves UD QPs only: each of its receives gets a GRH
 * slot of its own first (ud.c), from a ring of max_wr slots, so a datagram
 * lands at offset 0 of the application's buffers as on a UD endpoint's own
 * receive queue.
 */
#include <errno.h>
#include <string.h>

#include "base/log.h"
#include "verbs.h"

static int verbs_err(int rc) { return rc > 0 ? -rc : (errno ? -errno : -EINVAL); }

int rcci_vsrq_create(struct rcc_srq *base)
{
	struct verbs_srq *srq = vsrq(base);
	/* a datagram receive has one element more: the GRH's */
	uint32_t sge = base->max_sge + (base->datagram ? 1 : 0);
	struct ibv_srq_init_attr ia = {
		.srq_context = base,
		.attr = { .max_wr = base->max_wr, .max_sge = sge },
	};
	int rc;

	srq->grh = NULL;
	if (base->datagram) {
		rc = rcci_grh_new(vctx(base->ctx), base->max_wr, &srq->grh);
		if (rc)
			return rc;
	}
	errno = 0;
	srq->srq = ibv_create_srq(vctx(base->ctx)->pd, &ia);
	if (!srq->srq) {
		rc = errno ? -errno : -ENOMEM;
		log_error("verbs: ibv_create_srq (max_wr %u, max_sge %u): %s", base->max_wr, sge,
			  rcc_strerror(rc));
		rcci_grh_free(srq->grh);
		srq->grh = NULL;
		return rc;
	}
	return 0;
}

void rcci_vsrq_destroy(struct rcc_srq *base)
{
	struct verbs_srq *srq = vsrq(base);
	int rc = ibv_destroy_srq(srq->srq);

	if (rc)
		log_warn("verbs: ibv_destroy_srq: %s", rcc_strerror(verbs_err(rc)));
	srq->srq = NULL;
	rcci_grh_free(srq->grh); /* after the SRQ: nothing is written to it any more */
	srq->grh = NULL;
}

int rcci_vsrq_post_recv(struct rcc_srq *base, const struct rcc_recv_wr *wr, int n, int *posted)
{
	struct verbs_srq *srq = vsrq(base);

	if (srq->grh)
		return rcci_grh_post(srq->grh, NULL, srq->srq, wr, n, posted);
	return rcci_verbs_post_recv_to(NULL, srq->srq, wr, n, posted);
}

int rcci_vsrq_arm(struct rcc_srq *base, uint32_t limit)
{
	struct ibv_srq_attr a = { .srq_limit = limit };

	struct verbs_ctx *ctx = vctx(base->ctx);

	/* Under eps_lock, which the event thread holds while it reads the SRQ
	 * for the limit event: the kernel orders this arming before that event,
	 * but a thread checker cannot see through the kernel, and this makes
	 * the SRQ's creation and arming visibly come first. */
	pthread_mutex_lock(&ctx->eps_lock);
	errno = 0;
	int rc = ibv_modify_srq(vsrq(base)->srq, &a, IBV_SRQ_LIMIT);
	pthread_mutex_unlock(&ctx->eps_lock);
	if (rc) {
		rc = verbs_err(rc);
		log_info("verbs: arming the SRQ limit at %u: %s", limit, rcc_strerror(rc));
	}
	return rc;
}
