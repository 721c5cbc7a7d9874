/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The session server's SRQ: a pool of registered buffers, all posted to one
 * SRQ, each posted again as soon as the message it received was delivered.
 */
#include <errno.h>
#include <stdint.h>

#include "base/log.h"
#include "server_srq.h"

int rcci_server_srq_repost(struct server_srq *s, void *buf)
{
	struct rcc_sge sge = rcc_pool_sge(s->bufs, buf, s->buf_size);
	return rcc_srq_post_recv(s->srq, &sge, 1, (uint64_t)(uintptr_t)buf);
}

int rcci_server_srq_open(struct rcc_ctx *ctx, uint32_t depth, uint32_t buf_size,
			 struct server_srq *s)
{
	struct rcc_srq_attr sa = { .max_wr = depth, .max_sge = 1 };
	int rc;

	s->buf_size = buf_size;
	rc = rcc_srq_create(ctx, &sa, &s->srq);
	if (rc)
		return rc;
	rc = rcc_pool_create(ctx, buf_size, depth, RCC_ACCESS_LOCAL_WRITE, &s->bufs);
	if (rc)
		goto err_srq;
	for (uint32_t i = 0; i < depth; i++) {
		rc = rcci_server_srq_repost(s, rcc_pool_piece_at(s->bufs, i));
		if (rc)
			goto err_bufs;
	}
	return 0;

err_bufs:
	/* no endpoint uses the SRQ yet: destroying it first drops what was
	 * posted, so no receive names the buffers any more */
	rcc_srq_destroy(s->srq);
	rcc_pool_destroy(s->bufs);
	s->srq = NULL;
	s->bufs = NULL;
	return rc;
err_srq:
	rcc_srq_destroy(s->srq);
	s->srq = NULL;
	return rc;
}

void *rcci_server_srq_buffer(const struct server_srq *s, const struct rcc_wc *wc)
{
	void *buf = (void *)(uintptr_t)wc->wr_id;

	if (!s->srq || rcc_pool_index(s->bufs, buf) < 0)
		return NULL;
	return buf;
}

void rcci_server_srq_close(struct server_srq *s)
{
	if (!s->srq)
		return;
	if (rcc_srq_destroy(s->srq))
		log_warn("server: the SRQ is still in use at exit");
	if (rcc_pool_destroy(s->bufs))
		log_warn("server: the SRQ's buffers are still in use at exit");
	s->srq = NULL;
	s->bufs = NULL;
}
