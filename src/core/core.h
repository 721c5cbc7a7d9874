/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the API front's files (src/core/) share among themselves, and with the
 * session layer above them. Not the transports' business: what a transport
 * may call of the core is in transport/transport.h.
 */
#ifndef RCC_CORE_CORE_H
#define RCC_CORE_CORE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "transport/transport.h"

/* mem.c: the allocation [addr, addr+len) lies wholly in, counted as
 * holding one more registered region (rcc_mem_free() is -EBUSY until
 * rcci_mem_release()); NULL when it is no allocation of ctx. */
struct rcci_mem *rcci_mem_hold(struct rcc_ctx *ctx, const void *addr, size_t len);
void rcci_mem_release(struct rcc_ctx *ctx, struct rcci_mem *m);

/* Drop srq's queued event: rcc_srq_destroy() before it frees srq. */
void rcci_events_forget_srq(struct rcc_srq *srq);
/* The first malformed request of wr[0..n) against max_sge (its index), or n. */
int rcci_recv_list_check(const struct rcc_recv_wr *wr, int n, uint32_t max_sge);
/* Undo rcci_ep_count_users(): the endpoint no longer holds its CQs, SRQ and
 * context. */
void rcci_ep_uncount_users(struct rcc_ep *ep);

/* Drop ep's queued event: rcc_ep_close() before it frees ep. */
void rcci_events_forget(struct rcc_ep *ep);
int rcci_events_enable(struct rcc_ctx *ctx);

/* The spin budget of an RCC_CQ_HYBRID wait: asked, else RCC_CQ_SPIN_US,
 * else RCC_CQ_SPIN_US_DEFAULT (core/cq.c; the session server's agents too). */
uint32_t rcci_cq_spin_us(uint32_t asked);

/* rcc_connect_ex() in pieces, shared with rcc_connect_start(): checks,
 * address and a new endpoint; the transport's connect; then what success
 * or failure leave behind. */
int rcci_connect_prepare(struct rcc_ctx *ctx, const char *addr, const struct rcc_ep_attr *attr,
			 struct rcc_ep **ep, struct sockaddr_storage *ss, socklen_t *len);
void rcci_connect_done(struct rcc_ep *ep);
/* rcc_accept_req() before the transport: checks and a new endpoint; on
 * failure the request is rejected and freed. */
int rcci_accept_prepare(struct rcc_conn_req *req, const struct rcc_ep_attr *attr, bool want_ep,
			struct rcc_ep **ep);
void rcci_ep_count_users(struct rcc_ep *ep);
/* rcc_ud_create() before the transport: checks (RCC_QP_UD attributes) and a
 * new endpoint, not yet counted anywhere. */
int rcci_ud_prepare(struct rcc_ctx *ctx, const struct rcc_ep_attr *attr, struct rcc_ep **ep);
void rcci_explain_connect_failure(const struct rcc_ep *ep, int rc, int timeout_ms);

/* A started connect (core/connect_start.c). rcci_connect_wait: wait until
 * the attempt ended (at once for other endpoints); true when the transport
 * holds the endpoint (it connected, or it never was a started connect).
 * rcci_connect_status: 0, or how a started connect failed. */
bool rcci_connect_wait(struct rcc_ep *ep);
int rcci_connect_status(const struct rcc_ep *ep);
void rcci_connector_free(struct rcc_ep *ep);
void rcci_events_init(struct rcci_event_queue *q);
void rcci_events_fini(struct rcci_event_queue *q);

#endif
