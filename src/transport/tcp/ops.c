/* SPDX-License-Identifier: BSD-3-Clause */
/* The tcp transport's ops table, its context and memory registration. */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "base/last_error.h"
#include "base/log.h"
#include "tcp.h"
#include "ud.h"

static int tcp_ctx_open(struct rcc_ctx *base, const struct rcc_ctx_attr *attr)
{
	struct tcp_ctx *ctx = tctx(base);
	int rc;

	if (rcci_shm_ring_cap_env(&ctx->shm_ring_cap))
		return rcci_fail(-EINVAL,
				 "RCC_SHM_RING_KIB must be a power of two from 4 to 65536");
	/* Writer-preferring: deregistration must not starve behind a stream of
	 * remote writes (base/rwlock.h). */
	rcci_rwlock_init(&ctx->mr_lock);
	rc = rcci_keys_init(&ctx->keys);
	if (rc)
		return rc;
	pthread_mutex_init(&ctx->cma_lock, NULL);
	ctx->cma_eps = NULL;
	ctx->map_mrs = NULL;
	rc = rcci_progress_start(ctx);
	if (rc)
		goto err_keys;
	ctx->shm = attr->shm;
	log_debug("tcp: context open");
	return 0;

err_keys:
	pthread_mutex_destroy(&ctx->cma_lock);
	rcci_keys_free(&ctx->keys);
	return rc;
}

static void tcp_ctx_close(struct rcc_ctx *base)
{
	struct tcp_ctx *ctx = tctx(base);

	rcci_progress_stop(ctx);
	pthread_mutex_destroy(&ctx->cma_lock);
	rcci_keys_free(&ctx->keys);
}

static int tcp_mr_reg(struct rcc_mr *base)
{
	struct tcp_ctx *ctx = tctx(base->ctx);
	int rc;

	pthread_mutex_lock(&ctx->cma_lock);
	rcci_rwlock_write(&ctx->mr_lock);
	rc = rcci_keys_insert(&ctx->keys, (struct tcp_mr *)base);
	rcci_rwlock_write_end(&ctx->mr_lock);
	/* Published once the key is live: a peer's copy needs no key lookup. */
	if (!rc)
		rcci_map_reg(ctx, (struct tcp_mr *)base);
	pthread_mutex_unlock(&ctx->cma_lock);
	return rc;
}

static int tcp_mr_dereg(struct rcc_mr *base)
{
	struct tcp_ctx *ctx = tctx(base->ctx);

	/* Killing the single-copy slots that name the region waits out every
	 * copy by a peer (docs/shm.md, "Deregistration guarantee"). */
	pthread_mutex_lock(&ctx->cma_lock);
	/* Taking the write side waits out every copy into or out of the region
	 * by this process. */
	rcci_rwlock_write(&ctx->mr_lock);
	rcci_keys_remove(&ctx->keys, base->lkey);
	rcci_cma_dereg_revoke(ctx, base->lkey);
	rcci_rwlock_write_end(&ctx->mr_lock);
	/* The peers' copies are waited for without mr_lock: a peer stopped
	 * inside one holds only this call (at most its timeout), not every
	 * endpoint's copies. Nothing can name the region any more. */
	rcci_cma_dereg_wait(ctx);
	rcci_map_dereg(ctx, (struct tcp_mr *)base);
	pthread_mutex_unlock(&ctx->cma_lock);
	return 0;
}

const struct rcc_transport_ops rcci_tcp_ops = {
	.name = "tcp",
	.ctx_size = sizeof(struct tcp_ctx),
	.mr_size = sizeof(struct tcp_mr),
	.cq_size = sizeof(struct tcp_cq),
	.ep_size = sizeof(struct tcp_ep),
	.listener_size = sizeof(struct tcp_listener),
	.req_size = sizeof(struct tcp_req),
	.srq_size = sizeof(struct tcp_srq),
	.ah_size = sizeof(struct tcp_ah),
	.ctx_open = tcp_ctx_open,
	.ctx_close = tcp_ctx_close,
	.mr_reg = tcp_mr_reg,
	.mr_dereg = tcp_mr_dereg,
	.cq_create = rcci_tcp_cq_create,
	.cq_destroy = rcci_tcp_cq_destroy,
	.cq_poll = rcci_tcp_cq_poll,
	.cq_fd = rcci_tcp_cq_fd,
	.cq_sleep = rcci_tcp_cq_sleep,
	.cq_arm = rcci_tcp_cq_arm,
	.cq_poll_before_sleep = rcci_tcp_cq_poll_before_sleep,
	.conn = {
		.listen = rcci_tcp_listen,
		.listener_close = rcci_tcp_listener_close,
		.listener_fd = rcci_tcp_listener_fd,
		.get_request = rcci_tcp_get_request,
		.accept = rcci_tcp_accept,
		.reject = rcci_tcp_reject,
		.connect = rcci_tcp_connect,
	},
	.post_send = rcci_tcp_post_send,
	.post_recv = rcci_tcp_post_recv,
	.ep_disconnect = rcci_tcp_ep_disconnect,
	.ep_destroy = rcci_tcp_ep_destroy,
	.srq_create = rcci_tcp_srq_create,
	.srq_destroy = rcci_tcp_srq_destroy,
	.srq_post_recv = rcci_tcp_srq_post_recv,
	.srq_arm = rcci_tcp_srq_arm,
	.ud_create = rcci_tcp_ud_create,
	.ud_addr = rcci_tcp_ud_addr,
	.ud_post_send = rcci_tcp_ud_post_send,
	.ud_post_recv = rcci_tcp_post_recv, /* the connected endpoints' receive queue */
	.ud_disconnect = rcci_tcp_ud_disconnect,
	.ud_destroy = rcci_tcp_ud_destroy,
	.ah_create = rcci_tcp_ah_create,
	.ah_destroy = rcci_tcp_ah_destroy,
};
