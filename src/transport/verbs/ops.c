/* SPDX-License-Identifier: BSD-3-Clause */
/* The verbs transport's ops table, its context and memory registration. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "verbs.h"

int rcci_verbs_set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

static int verbs_ctx_open(struct rcc_ctx *base, const struct rcc_ctx_attr *attr)
{
	struct verbs_ctx *ctx = vctx(base);
	int rc;

	rc = rcci_verbs_select(ctx, attr);
	if (rc)
		return rc;
	base->conn = attr->bringup == RCC_BRINGUP_MANUAL ? &rcci_man_conn_ops : &rcci_cm_conn_ops;
	ctx->pd = ibv_alloc_pd(ctx->verbs);
	if (!ctx->pd) {
		rc = -errno ? -errno : -ENOMEM;
		log_error("verbs: ibv_alloc_pd: %s", rcc_strerror(rc));
		goto err_devs;
	}
	rc = rcci_events_start(ctx);
	if (rc)
		goto err_pd;
	return 0;

err_pd:
	ibv_dealloc_pd(ctx->pd);
err_devs:
	rdma_free_devices(ctx->devs);
	return rc;
}

static void verbs_ctx_close(struct rcc_ctx *base)
{
	struct verbs_ctx *ctx = vctx(base);

	rcci_events_stop(ctx);
	if (ibv_dealloc_pd(ctx->pd))
		log_warn("verbs: ibv_dealloc_pd: %s", strerror(errno));
	rdma_free_devices(ctx->devs);
}

/* rcc access bits have ibv's values, but say so in code rather than rely on it. */
static int access_flags(unsigned a)
{
	int f = 0;
	if (a & RCC_ACCESS_LOCAL_WRITE)
		f |= IBV_ACCESS_LOCAL_WRITE;
	if (a & RCC_ACCESS_REMOTE_WRITE)
		f |= IBV_ACCESS_REMOTE_WRITE;
	if (a & RCC_ACCESS_REMOTE_READ)
		f |= IBV_ACCESS_REMOTE_READ;
	if (a & RCC_ACCESS_REMOTE_ATOMIC)
		f |= IBV_ACCESS_REMOTE_ATOMIC;
	return f;
}

static int verbs_mr_reg(struct rcc_mr *base)
{
	struct verbs_mr *mr = (struct verbs_mr *)base;
	struct verbs_ctx *ctx = vctx(base->ctx);

	mr->mr = ibv_reg_mr(ctx->pd, base->addr, base->length, access_flags(base->access));
	if (!mr->mr) {
		int rc = -errno ? -errno : -ENOMEM;
		log_debug("verbs: ibv_reg_mr(%zu bytes): %s", base->length, rcc_strerror(rc));
		return rc;
	}
	base->lkey = mr->mr->lkey;
	base->rkey = mr->mr->rkey;
	return 0;
}

static int verbs_mr_dereg(struct rcc_mr *base)
{
	struct verbs_mr *mr = (struct verbs_mr *)base;
	int rc = ibv_dereg_mr(mr->mr);

	if (rc) {
		rc = rc > 0 ? -rc : (-errno ? -errno : -EIO);
		log_warn("verbs: ibv_dereg_mr: %s", rcc_strerror(rc));
	}
	return rc;
}

const struct rcc_transport_ops rcci_verbs_ops = {
	.name = "verbs",
	.ctx_size = sizeof(struct verbs_ctx),
	.mr_size = sizeof(struct verbs_mr),
	.cq_size = sizeof(struct verbs_cq),
	.ep_size = sizeof(struct verbs_ep),
	.listener_size = sizeof(struct verbs_listener),
	.req_size = sizeof(struct verbs_req),
	.srq_size = sizeof(struct verbs_srq),
	.ah_size = sizeof(struct verbs_ah),
	.ctx_open = verbs_ctx_open,
	.ctx_close = verbs_ctx_close,
	.device_list = rcci_verbs_device_list,
	.device_list_free = rcci_verbs_device_list_free,
	.mr_reg = verbs_mr_reg,
	.mr_dereg = verbs_mr_dereg,
	.cq_create = rcci_vcq_create,
	.cq_destroy = rcci_vcq_destroy,
	.cq_poll = rcci_vcq_poll,
	.cq_spin_poll = rcci_vcq_spin_poll,
	.cq_fd = rcci_vcq_fd,
	/* .conn: none of its own; ctx_open picks rdma_cm's or the manual one */
	.post_send = rcci_verbs_post_send,
	.post_recv = rcci_verbs_post_recv,
	.ep_disconnect = rcci_verbs_ep_disconnect,
	.ep_destroy = rcci_verbs_ep_destroy,
	.srq_create = rcci_vsrq_create,
	.srq_destroy = rcci_vsrq_destroy,
	.srq_post_recv = rcci_vsrq_post_recv,
	.srq_arm = rcci_vsrq_arm,
	.ud_create = rcci_verbs_ud_create,
	.ud_addr = rcci_verbs_ud_addr,
	.ud_post_send = rcci_verbs_ud_post_send,
	.ud_post_recv = rcci_verbs_ud_post_recv,
	.ud_disconnect = rcci_verbs_ep_disconnect, /* markers, as a connected QP's */
	.ud_destroy = rcci_verbs_ud_destroy,
	.ah_create = rcci_verbs_ah_create,
	.ah_destroy = rcci_verbs_ah_destroy,
};
