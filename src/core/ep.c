/* SPDX-License-Identifier: BSD-3-Clause */
/* Endpoints and connection management: attribute defaults, then the transport. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/addr.h"
#include "base/env.h"
#include "base/last_error.h"
#include "base/log.h"
#include "core/core.h"

#define MAX_RD_ATOMIC 128u

/* Dead-peer timeouts above a day are surely a mistake. */

/* RCC_PEER_TIMEOUT_MS, or the built-in default when unset or unusable. */
static uint32_t env_peer_timeout_ms(void)
{
	unsigned long ms;
	int rc = rcci_env_ulong("RCC_PEER_TIMEOUT_MS", RCC_MIN_PEER_TIMEOUT_MS,
				RCCI_MAX_PEER_TIMEOUT_MS, &ms);

	if (rc == -ENOENT)
		return RCC_DEFAULT_PEER_TIMEOUT_MS;
	if (rc) {
		log_warn("RCC_PEER_TIMEOUT_MS: want %u..%u ms; using %u", RCC_MIN_PEER_TIMEOUT_MS,
			 RCCI_MAX_PEER_TIMEOUT_MS, RCC_DEFAULT_PEER_TIMEOUT_MS);
		return RCC_DEFAULT_PEER_TIMEOUT_MS;
	}
	return (uint32_t)ms;
}

/* A listener's handshake deadline above an hour is surely a mistake. */
#define MAX_HANDSHAKE_TIMEOUT_MS (3600 * 1000)

/* RCC_HANDSHAKE_TIMEOUT_MS, or the built-in default when unset or unusable. */
static int env_handshake_timeout_ms(void)
{
	unsigned long ms;
	int rc = rcci_env_ulong("RCC_HANDSHAKE_TIMEOUT_MS", 1, MAX_HANDSHAKE_TIMEOUT_MS, &ms);

	if (rc == -ENOENT)
		return RCC_DEFAULT_HANDSHAKE_TIMEOUT_MS;
	if (rc) {
		log_warn("RCC_HANDSHAKE_TIMEOUT_MS: want 1..%d ms; using %d",
			 MAX_HANDSHAKE_TIMEOUT_MS, RCC_DEFAULT_HANDSHAKE_TIMEOUT_MS);
		return RCC_DEFAULT_HANDSHAKE_TIMEOUT_MS;
	}
	return (int)ms;
}

static int resolve_initial_recv(const struct rcc_ep_attr *out)
{
	if (out->num_initial_recv < 0 || (uint32_t)out->num_initial_recv > out->rq_depth ||
	    (out->num_initial_recv && !out->initial_recv))
		return rcci_fail(-EINVAL, "num_initial_recv %d: want 0..rq_depth (%u) with a list",
				 out->num_initial_recv, out->rq_depth);
	for (int i = 0; i < out->num_initial_recv; i++) {
		const struct rcc_recv_wr *w = &out->initial_recv[i];
		if (w->num_sge < 0 || (uint32_t)w->num_sge > out->max_recv_sge ||
		    (w->num_sge && !w->sg_list))
			return rcci_fail(-EINVAL, "initial receive %d: num_sge %d, max_recv_sge %u",
					 i, w->num_sge, out->max_recv_sge);
	}
	return 0;
}

/* What only a datagram endpoint has (rcc_ud_create), and what it must not. */
static int resolve_ud(struct rcc_ep_attr *out)
{
	if (out->qp_type != RCC_QP_UD)
		return rcci_fail(
			-EINVAL,
			"rcc_ud_create() makes RCC_QP_UD endpoints: qp_type %d is not that",
			(int)out->qp_type);
	if (out->srq && !out->srq->datagram)
		return rcci_fail(-EINVAL, "a UD endpoint takes only an SRQ made for datagrams "
					  "(rcc_srq_attr.for_datagrams); this one serves RC/UC "
					  "endpoints");
	if (out->private_data_len)
		return rcci_fail(-EINVAL, "a UD endpoint carries no private data (%u bytes given)",
				 out->private_data_len);
	if (!out->qkey)
		out->qkey = RCC_UD_DEFAULT_QKEY;
	if (out->qkey & 0x80000000u)
		return rcci_fail(-EINVAL, "qkey 0x%x: bit 31 is reserved (controlled Q_Keys)",
				 out->qkey);
	return 0;
}

/*
 * Fill defaults into a copy of attr and check it. Retry counts come out as the
 * real number of retries (RCC_NO_RETRY becomes 0). ud: for rcc_ud_create(),
 * which takes RCC_QP_UD only (and connect/accept refuse it).
 */
static int resolve_attr(struct rcc_ctx *ctx, const struct rcc_ep_attr *in, uint32_t pdata_max,
			bool ud, struct rcc_ep_attr *out)
{
	if (!in || !in->send_cq)
		return rcci_fail(-EINVAL, "endpoint attributes without a send_cq");
	*out = *in;
	if (!out->recv_cq)
		out->recv_cq = out->send_cq;
	if (out->send_cq->ctx != ctx || out->recv_cq->ctx != ctx)
		return rcci_fail(-EINVAL, "the endpoint's CQs belong to another context");
	if (!ud && out->qp_type == RCC_QP_UD)
		return rcci_fail(-EINVAL, "an RCC_QP_UD endpoint is never connected: make it "
					  "with rcc_ud_create()");
	if (!ud && out->qp_type != RCC_QP_RC && out->qp_type != RCC_QP_UC)
		return rcci_fail(-EINVAL, "qp_type %d: want RCC_QP_RC or RCC_QP_UC",
				 (int)out->qp_type);
	if (!ud && out->srq && out->srq->datagram)
		return rcci_fail(-EINVAL, "this SRQ was made for datagrams "
					  "(rcc_srq_attr.for_datagrams): it serves RCC_QP_UD "
					  "endpoints only, not RC/UC ones");
	if (ud) {
		int rc = resolve_ud(out);
		if (rc)
			return rc;
	}
	if (out->srq) {
		if (out->srq->ctx != ctx)
			return rcci_fail(-EINVAL, "the endpoint's SRQ belongs to another context");
		if (out->num_initial_recv)
			return rcci_fail(-EINVAL,
					 "%d initial receives with an SRQ: an endpoint with an SRQ "
					 "takes its receives from it (post them there first)",
					 out->num_initial_recv);
		/* The transport holds the one receive a message is filling. */
		out->rq_depth = 1;
		out->max_recv_sge = out->srq->max_sge;
	}
	if (!out->sq_depth)
		out->sq_depth = RCC_DEFAULT_QUEUE_DEPTH;
	if (!out->rq_depth)
		out->rq_depth = RCC_DEFAULT_QUEUE_DEPTH;
	if (!out->max_send_sge)
		out->max_send_sge = 4;
	if (!out->max_recv_sge)
		out->max_recv_sge = 4;
	if (!out->max_rd_atomic)
		out->max_rd_atomic = 16;
	if (out->sq_depth > RCCI_MAX_QUEUE_DEPTH || out->rq_depth > RCCI_MAX_QUEUE_DEPTH)
		return rcci_fail(-EINVAL, "queue depths %u/%u: at most %u", out->sq_depth,
				 out->rq_depth, RCCI_MAX_QUEUE_DEPTH);
	if (out->max_send_sge > RCCI_MAX_SGE || out->max_recv_sge > RCCI_MAX_SGE)
		return rcci_fail(-EINVAL, "scatter/gather limits %u/%u: at most %u",
				 out->max_send_sge, out->max_recv_sge, RCCI_MAX_SGE);
	if (ud)
		return resolve_initial_recv(out); /* the rest is about connections */
	if (out->max_rd_atomic > MAX_RD_ATOMIC)
		return rcci_fail(-EINVAL, "max_rd_atomic %u: at most %u", out->max_rd_atomic,
				 MAX_RD_ATOMIC);

	int *counts[] = { &out->retry_cnt, &out->rnr_retry };
	for (size_t i = 0; i < 2; i++) {
		int v = *counts[i];
		if (v < RCC_NO_RETRY || v > 7)
			return rcci_fail(-EINVAL, "%s %d: want 1..7 or RCC_NO_RETRY",
					 i ? "rnr_retry" : "retry_cnt", v);
		*counts[i] = v == 0 ? 7 : (v == RCC_NO_RETRY ? 0 : v);
	}
	if (!out->min_rnr_timer)
		out->min_rnr_timer = 12;
	if (!out->timeout)
		out->timeout = 14;
	if (out->min_rnr_timer > 31 || out->timeout > 31)
		return rcci_fail(-EINVAL, "min_rnr_timer %u or timeout %u: at most 31",
				 out->min_rnr_timer, out->timeout);
	if (!out->peer_timeout_ms)
		out->peer_timeout_ms = env_peer_timeout_ms();
	if (out->peer_timeout_ms < RCC_MIN_PEER_TIMEOUT_MS ||
	    out->peer_timeout_ms > RCCI_MAX_PEER_TIMEOUT_MS)
		return rcci_fail(-EINVAL, "peer_timeout_ms %u: want %u..%u", out->peer_timeout_ms,
				 RCC_MIN_PEER_TIMEOUT_MS, RCCI_MAX_PEER_TIMEOUT_MS);
	if (out->private_data_len > pdata_max)
		return rcci_fail(-EINVAL, "private data of %u bytes; %s carries at most %u",
				 out->private_data_len,
				 pdata_max == RCC_CONNECT_PRIVATE_DATA_MAX ? "a connect" :
									     "an accept",
				 pdata_max);
	if (out->private_data_len && !out->private_data)
		return rcci_fail(-EINVAL, "private_data_len %u with private_data NULL",
				 out->private_data_len);
	return resolve_initial_recv(out);
}

static struct rcc_ep *ep_alloc(struct rcc_ctx *ctx, const struct rcc_ep_attr *attr)
{
	struct rcc_ep *ep = calloc(1, ctx->ops->ep_size);

	if (!ep)
		return NULL;
	ep->ctx = ctx;
	ep->attr = *attr;
	ep->send_cq = attr->send_cq;
	ep->recv_cq = attr->recv_cq;
	ep->own_pdata_len = attr->private_data_len;
	if (attr->private_data_len)
		memcpy(ep->own_pdata, attr->private_data, attr->private_data_len);
	ep->attr.private_data = NULL;
	ep->attr.private_data_len = 0;
	atomic_init(&ep->state, RCC_EP_CONNECTED);
	atomic_init(&ep->context, attr->context);
	return ep;
}

static void ep_attach(struct rcc_ep *ep)
{
	atomic_fetch_add(&ep->send_cq->users, 1);
	atomic_fetch_add(&ep->recv_cq->users, 1);
	if (ep->attr.srq)
		atomic_fetch_add(&ep->attr.srq->users, 1);
	atomic_fetch_add(&ep->ctx->children, 1);
}

void rcci_ep_uncount_users(struct rcc_ep *ep)
{
	atomic_fetch_sub(&ep->send_cq->users, 1);
	atomic_fetch_sub(&ep->recv_cq->users, 1);
	if (ep->attr.srq)
		atomic_fetch_sub(&ep->attr.srq->users, 1);
	atomic_fetch_sub(&ep->ctx->children, 1);
}

int rcc_listen_ex(struct rcc_ctx *ctx, const char *addr, const struct rcc_listener_attr *attr,
		  struct rcc_listener **out)
{
	struct rcc_listener_attr a = attr ? *attr : (struct rcc_listener_attr){ 0 };
	struct sockaddr_storage ss;
	socklen_t len;
	struct rcc_listener *lst;
	int rc;

	rcci_error_clear();
	if (!ctx || !addr || !out)
		return rcci_fail(-EINVAL, "rcc_listen: ctx, addr and lst must not be NULL");
	if (a.backlog < 0 || a.max_pending < 0 || a.handshake_timeout_ms < 0)
		return rcci_fail(-EINVAL, "listener attributes must not be negative");
	rc = rcci_addr_resolve(addr, true, &ss, &len);
	if (rc) {
		log_info("listen: cannot resolve '%s': %s", addr, rcc_strerror(rc));
		return rc;
	}
	lst = calloc(1, ctx->ops->listener_size);
	if (!lst)
		return -ENOMEM;
	lst->ctx = ctx;
	lst->max_pending = a.max_pending ? a.max_pending : RCC_DEFAULT_MAX_PENDING;
	lst->handshake_ms = a.handshake_timeout_ms ? a.handshake_timeout_ms :
						     env_handshake_timeout_ms();
	rc = ctx->conn->listen(lst, (struct sockaddr *)&ss, len, a.backlog ? a.backlog : 128);
	if (rc) {
		log_info("listen on '%s' failed: %s", addr, rcc_strerror(rc));
		free(lst);
		if (rc == -EADDRINUSE)
			return rcci_fail(rc, "%s is in use already", addr);
		if (rc == -EADDRNOTAVAIL)
			return rcci_fail(rc, "%s is not an address of this host", addr);
		return rcci_fail(rc, "cannot listen on %s: %s", addr, rcc_strerror(rc));
	}
	atomic_fetch_add(&ctx->children, 1);
	*out = lst;
	return 0;
}

int rcc_listen(struct rcc_ctx *ctx, const char *addr, int backlog, struct rcc_listener **out)
{
	struct rcc_listener_attr a = { .backlog = backlog };

	return rcc_listen_ex(ctx, addr, &a, out);
}

int rcc_listener_close(struct rcc_listener *lst)
{
	if (!lst)
		return -EINVAL;
	struct rcc_ctx *ctx = lst->ctx;
	ctx->conn->listener_close(lst);
	atomic_fetch_sub(&ctx->children, 1);
	free(lst);
	return 0;
}

int rcc_listener_port(const struct rcc_listener *lst) { return lst ? lst->port : -EINVAL; }

int rcc_listener_fd(const struct rcc_listener *lst)
{
	return lst ? lst->ctx->conn->listener_fd(lst) : -EINVAL;
}

int rcc_get_request(struct rcc_listener *lst, int timeout_ms, struct rcc_conn_req **out)
{
	struct rcc_conn_req *req;
	int rc;

	rcci_error_clear();
	if (!lst || !out || timeout_ms < -1)
		return -EINVAL;
	req = calloc(1, lst->ctx->ops->req_size);
	if (!req)
		return -ENOMEM;
	req->lst = lst;
	rc = lst->ctx->conn->get_request(lst, timeout_ms, req);
	if (rc) {
		free(req);
		return rc;
	}
	*out = req;
	return 0;
}

const void *rcc_conn_req_private_data(const struct rcc_conn_req *req, size_t *len)
{
	if (len)
		*len = req ? req->pdata_len : 0;
	return req && req->pdata_len ? req->pdata : NULL;
}

const char *rcc_conn_req_peer(const struct rcc_conn_req *req) { return req ? req->peer : ""; }

struct rcc_ctx *rcc_conn_req_ctx(const struct rcc_conn_req *req)
{
	return req ? req->lst->ctx : NULL;
}

int rcci_accept_prepare(struct rcc_conn_req *req, const struct rcc_ep_attr *attr, bool want_ep,
			struct rcc_ep **out)
{
	struct rcc_ctx *ctx = req->lst->ctx;
	struct rcc_ep_attr ra;
	struct rcc_ep *ep;
	int rc;

	rc = want_ep ? resolve_attr(ctx, attr, RCC_ACCEPT_PRIVATE_DATA_MAX, false, &ra) : -EINVAL;
	if (rc) {
		/* The request is consumed either way, so turn the peer away. */
		ctx->conn->reject(req, NULL, 0);
		free(req);
		return rc;
	}
	ep = ep_alloc(ctx, &ra);
	if (!ep) {
		ctx->conn->reject(req, NULL, 0);
		free(req);
		return -ENOMEM;
	}
	memcpy(ep->peer, req->peer, sizeof(ep->peer));
	*out = ep;
	return 0;
}

int rcc_accept_req(struct rcc_conn_req *req, const struct rcc_ep_attr *attr, struct rcc_ep **out)
{
	struct rcc_ep *ep = NULL;
	int rc;

	rcci_error_clear();
	if (!req)
		return -EINVAL;
	rc = rcci_accept_prepare(req, attr, out != NULL, &ep);
	if (rc)
		return rc;
	rc = req->lst->ctx->conn->accept(req, ep);
	if (rc) {
		log_info("accept from %s failed: %s", req->peer, rcc_strerror(rc));
		rcci_fail(rc, "accepting %s failed: %s", req->peer, rcc_strerror(rc));
		free(ep);
		free(req);
		return rc;
	}
	rcci_connect_done(ep);
	ep_attach(ep);
	*out = ep;
	free(req);
	return 0;
}

int rcc_reject_req(struct rcc_conn_req *req, const void *private_data, size_t len)
{
	int rc;

	if (!req)
		return -EINVAL;
	if (len > RCC_REJECT_PRIVATE_DATA_MAX || (len && !private_data)) {
		private_data = NULL;
		len = 0;
		rc = -EINVAL;
		req->lst->ctx->conn->reject(req, NULL, 0);
	} else {
		rc = req->lst->ctx->conn->reject(req, private_data, len);
	}
	free(req);
	return rc;
}

int rcc_accept(struct rcc_listener *lst, const struct rcc_ep_attr *attr, int timeout_ms,
	       struct rcc_ep **ep)
{
	struct rcc_conn_req *req;
	int rc;

	if (!lst || !attr || !ep)
		return -EINVAL;
	rc = rcc_get_request(lst, timeout_ms, &req);
	if (rc)
		return rc;
	return rcc_accept_req(req, attr, ep);
}

/* Words for the statuses a connect attempt ends with, unless the transport
 * already said something more precise. */
static void explain_connect_failure(int rc, const char *peer, size_t reject_len, int timeout_ms)
{
	switch (rc) {
	case -ECONNREFUSED:
		rcci_fail(rc, "nothing is listening at %s", peer);
		break;
	case -ECONNRESET:
		rcci_fail(rc,
			  "%s closed the connection before answering (a server at its limit of "
			  "pending handshakes, or not an rcc server)",
			  peer);
		break;
	case -ECONNABORTED:
		rcci_fail(rc, "%s rejected the connection (%zu bytes of reject data)", peer,
			  reject_len);
		break;
	case -ETIMEDOUT:
		rcci_fail(rc, "no answer from %s within %d ms", peer, timeout_ms);
		break;
	case -EHOSTUNREACH:
	case -ENETUNREACH:
		rcci_fail(rc, "%s cannot be reached from here", peer);
		break;
	case -EPROTO:
		rcci_fail(rc, "%s answered with something that is not an rcc handshake", peer);
		break;
	case -EPROTONOSUPPORT:
		rcci_fail(rc,
			  "shared memory is required (RCC_SHM=1 or the context attribute) but "
			  "%s is not on this host, does not offer it, or its region cannot be "
			  "opened here (see the log)",
			  peer);
		break;
	default:
		rcci_fail(rc, "connecting to %s failed: %s", peer, rcc_strerror(rc));
	}
}

int rcc_connect(struct rcc_ctx *ctx, const char *addr, const struct rcc_ep_attr *attr,
		int timeout_ms, struct rcc_ep **out)
{
	return rcc_connect_ex(ctx, addr, attr, timeout_ms, out, NULL, NULL);
}

int rcci_connect_prepare(struct rcc_ctx *ctx, const char *addr, const struct rcc_ep_attr *attr,
			 struct rcc_ep **out, struct sockaddr_storage *ss, socklen_t *len)
{
	struct rcc_ep_attr ra;
	struct rcc_ep *ep;
	int rc;

	rc = resolve_attr(ctx, attr, RCC_CONNECT_PRIVATE_DATA_MAX, false, &ra);
	if (rc)
		return rc;
	rc = rcci_addr_resolve(addr, false, ss, len);
	if (rc) {
		log_info("connect: cannot resolve '%s': %s", addr, rcc_strerror(rc));
		return rc;
	}
	ep = ep_alloc(ctx, &ra);
	if (!ep)
		return -ENOMEM;
	rcci_addr_format((struct sockaddr *)ss, ep->peer, sizeof(ep->peer));
	/* a rejecting transport leaves the reject's private data in peer_pdata */
	ep->peer_pdata_len = 0;
	*out = ep;
	return 0;
}

void rcci_connect_done(struct rcc_ep *ep)
{
	ep->attr.initial_recv = NULL;
	ep->attr.num_initial_recv = 0;
}

void rcci_ep_count_users(struct rcc_ep *ep) { ep_attach(ep); }

int rcci_ud_prepare(struct rcc_ctx *ctx, const struct rcc_ep_attr *attr, struct rcc_ep **out)
{
	struct rcc_ep_attr ra;
	int rc = resolve_attr(ctx, attr, 0, true, &ra);

	if (rc)
		return rc;
	*out = ep_alloc(ctx, &ra);
	return *out ? 0 : -ENOMEM;
}

void rcci_explain_connect_failure(const struct rcc_ep *ep, int rc, int timeout_ms)
{
	explain_connect_failure(rc, ep->peer, ep->peer_pdata_len, timeout_ms);
}

int rcc_connect_ex(struct rcc_ctx *ctx, const char *addr, const struct rcc_ep_attr *attr,
		   int timeout_ms, struct rcc_ep **out, void *reject_data, size_t *reject_len)
{
	struct sockaddr_storage ss;
	socklen_t len;
	struct rcc_ep *ep;
	int rc;

	rcci_error_clear();
	if (!ctx || !addr || !out || timeout_ms < -1 || (!reject_data != !reject_len))
		return rcci_fail(-EINVAL, "rcc_connect: a NULL argument, timeout below -1, or "
					  "only one of reject_data and reject_len");
	rc = rcci_connect_prepare(ctx, addr, attr, &ep, &ss, &len);
	if (rc)
		return rc;
	rc = ctx->conn->connect(ep, (struct sockaddr *)&ss, len, timeout_ms);
	if (rc) {
		log_debug("connect to %s failed: %s", addr, rcc_strerror(rc));
		if (rc == -ECONNABORTED && reject_data) {
			memcpy(reject_data, ep->peer_pdata, ep->peer_pdata_len);
			*reject_len = ep->peer_pdata_len;
		}
		rcci_explain_connect_failure(ep, rc, timeout_ms);
		free(ep);
		return rc;
	}
	rcci_connect_done(ep);
	ep_attach(ep);
	*out = ep;
	return 0;
}

int rcc_ep_disconnect(struct rcc_ep *ep)
{
	if (!ep)
		return -EINVAL;
	if (ep->attr.qp_type == RCC_QP_UD)
		return ep->ctx->ops->ud_disconnect(ep);
	if (!rcci_connect_wait(ep))
		return 0; /* a started connect that failed: nothing was ever up */
	return ep->ctx->ops->ep_disconnect(ep);
}

int rcc_ep_close(struct rcc_ep *ep)
{
	if (!ep)
		return -EINVAL;
	struct rcc_ctx *ctx = ep->ctx;
	if (ep->attr.qp_type == RCC_QP_UD) {
		int rc = ctx->ops->ud_disconnect(ep);
		if (rc)
			log_debug("close: disconnect reported %s", rcc_strerror(rc));
		ctx->ops->ud_destroy(ep);
	} else if (rcci_connect_wait(ep)) {
		int rc = ctx->ops->ep_disconnect(ep);
		if (rc)
			log_debug("close: disconnect reported %s", rcc_strerror(rc));
		ctx->ops->ep_destroy(ep);
	}
	rcci_events_forget(ep); /* after the transport let go: nothing queues it again */
	rcci_connector_free(ep);
	rcci_ep_uncount_users(ep);
	free(ep);
	return 0;
}

const char *rcc_ep_path(const struct rcc_ep *ep)
{
	if (!ep)
		return "none";
	if (ep->ctx->transport == RCC_TRANSPORT_VERBS)
		return "verbs";
	if (ep->attr.qp_type == RCC_QP_UD)
		return "udp";
	if (atomic_load_explicit(&ep->connecting, memory_order_acquire))
		return "tcp";
	return ep->on_shm ? "shm" : "tcp";
}

enum rcc_ep_state rcc_ep_state(const struct rcc_ep *ep)
{
	if (!ep)
		return RCC_EP_DISCONNECTED;
	if (atomic_load_explicit(&ep->connecting, memory_order_acquire))
		return RCC_EP_CONNECTING;
	return (enum rcc_ep_state)atomic_load_explicit(&ep->state, memory_order_acquire);
}

void *rcc_ep_context(const struct rcc_ep *ep)
{
	return ep ? atomic_load_explicit(&ep->context, memory_order_acquire) : NULL;
}

void rcc_ep_set_context(struct rcc_ep *ep, void *context)
{
	if (ep)
		atomic_store_explicit(&ep->context, context, memory_order_release);
}

const void *rcc_ep_private_data(const struct rcc_ep *ep, size_t *len)
{
	if (len)
		*len = ep ? ep->peer_pdata_len : 0;
	return ep && ep->peer_pdata_len ? ep->peer_pdata : NULL;
}

uint32_t rcc_ep_max_inline(const struct rcc_ep *ep) { return ep ? ep->max_inline : 0; }
const char *rcc_ep_peer(const struct rcc_ep *ep) { return ep ? ep->peer : ""; }
struct rcc_cq *rcc_ep_send_cq(const struct rcc_ep *ep) { return ep ? ep->send_cq : NULL; }
struct rcc_cq *rcc_ep_recv_cq(const struct rcc_ep *ep) { return ep ? ep->recv_cq : NULL; }
struct rcc_ctx *rcc_ep_ctx(const struct rcc_ep *ep) { return ep ? ep->ctx : NULL; }
