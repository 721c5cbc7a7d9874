/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma_cm bring-up. Each endpoint gets its own event channel, so connect and
 * accept can wait for their events synchronously and the background thread
 * later watches that channel alone (a request id is moved off the listener's
 * channel with rdma_migrate_id as soon as it is handed out).
 *
 * The cm_id carries no QP: rcc creates the QP and drives INIT/RTR/RTS with
 * rdma_init_qp_attr() plus its own values for timeout, retry_cnt, rnr_retry,
 * min_rnr_timer and the READ/atomic depths. The passive side reaches RTS
 * before rdma_accept(); the active side gets CONNECT_RESPONSE, moves its QP
 * and sends the RTU with rdma_establish(). So every endpoint attribute holds
 * for the endpoint it was given to, whichever side it is on.
 *
 * Private data. On IB/RoCE rdma_cm hands the receiver the whole fixed-size
 * area (56 bytes in a REQ, 196 in a REP, 148 in a REJ), so rcc puts a 4-byte
 * header in front: 0xC5, version 1, the exact length (le16). Data without the
 * header (a peer that is not rcc, such as rdma-core's rdma_client) is passed
 * through as it came, cut to rcc's limit, or as empty when it is all zeros.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <string.h>

#include "base/addr.h"
#include "base/log.h"
#include "rcc/util.h"
#include "verbs.h"

/*
 * rcc's header in front of the application's private data: magic, version,
 * the application's length (le16). Version 2 says the sender takes part in
 * heartbeats (heartbeat.c); a version 2 REQ carries the client's heartbeat
 * QP number (le32) after the application's bytes: 4 + 48 + 4 is all of a
 * REQ's 56. A peer's bytes without this header (a raw rdma_cm program) are
 * all the application's.
 */
#define PD_MAGIC 0xC5
#define PD_VERSION 1
#define PD_VERSION_HB 2
#define PD_HDR 4
#define PD_HB_QPN 4
/* The IB CM reject reason a consumer reject carries. */
#define REJ_CONSUMER_DEFINED 28

struct cm_ev {
	enum rdma_cm_event_type type;
	int status;
	uint8_t pdata[256];
	uint8_t pdata_len;
	uint8_t responder_resources;
	uint8_t initiator_depth;
};

/* What rcc's header says beyond the application's bytes. */
struct pd_extra {
	bool hb;         /* the sender sends heartbeats */
	uint32_t hb_qpn; /* its heartbeat QP (a REQ's); 0: none */
};

static size_t pd_encode(uint8_t *out, const void *pdata, size_t len, const struct pd_extra *x)
{
	size_t n = PD_HDR + len;

	out[0] = PD_MAGIC;
	out[1] = x && x->hb ? PD_VERSION_HB : PD_VERSION;
	rcc_put_le16(out + 2, (uint16_t)len);
	if (len)
		memcpy(out + PD_HDR, pdata, len);
	if (x && x->hb && x->hb_qpn) {
		rcc_put_le32(out + n, x->hb_qpn);
		n += PD_HB_QPN;
	}
	return n;
}

/* The application's bytes into out (at most max); *x (when not NULL) what
 * else the header said: nothing for a raw peer or a malformed extra. */
static uint32_t pd_decode(const uint8_t *in, size_t len, uint8_t *out, size_t max,
			  struct pd_extra *x)
{
	if (x)
		*x = (struct pd_extra){ 0 };
	if (!in)
		return 0;
	if (len >= PD_HDR && in[0] == PD_MAGIC && (in[1] == PD_VERSION || in[1] == PD_VERSION_HB)) {
		size_t n = rcc_get_le16(in + 2);
		if (n <= len - PD_HDR && n <= max) {
			memcpy(out, in + PD_HDR, n);
			if (x && in[1] == PD_VERSION_HB) {
				x->hb = true;
				if (len - PD_HDR - n >= PD_HB_QPN) {
					uint32_t q = rcc_get_le32(in + PD_HDR + n);
					x->hb_qpn = q <= 0xffffffu ? q : 0;
				}
			}
			return (uint32_t)n;
		}
	}
	size_t i = 0;
	while (i < len && in[i] == 0)
		i++;
	if (i == len)
		return 0;
	len = len < max ? len : max;
	memcpy(out, in, len);
	return (uint32_t)len;
}

static void copy_event(const struct rdma_cm_event *ev, struct cm_ev *out)
{
	out->type = ev->event;
	out->status = ev->status;
	out->pdata_len = 0;
	out->responder_resources = ev->param.conn.responder_resources;
	out->initiator_depth = ev->param.conn.initiator_depth;
	if (ev->param.conn.private_data && ev->param.conn.private_data_len) {
		out->pdata_len = ev->param.conn.private_data_len;
		memcpy(out->pdata, ev->param.conn.private_data, out->pdata_len);
	}
}

/* Next event of a private channel (non-blocking fd), by deadline. */
static int next_event(struct rdma_event_channel *ch, uint64_t deadline, struct cm_ev *out)
{
	struct rdma_cm_event *ev;

	for (;;) {
		if (rdma_get_cm_event(ch, &ev) == 0) {
			copy_event(ev, out);
			rdma_ack_cm_event(ev);
			return 0;
		}
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		int rc = rcci_wait_fd(ch->fd, POLLIN, deadline);
		if (rc)
			return rc;
	}
}

static struct rdma_event_channel *new_channel(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();

	if (!ch)
		return NULL;
	if (rcci_verbs_set_nonblock(ch->fd)) {
		rdma_destroy_event_channel(ch);
		return NULL;
	}
	return ch;
}

static int cm_err(const char *what)
{
	int rc = errno ? -errno : -EIO;
	log_error("verbs: %s: %s", what, rcc_strerror(rc));
	return rc;
}

/* Move the QP to st with rdma_cm's path attributes and rcc's own values. */
static int qp_to(struct verbs_ep *ep, enum ibv_qp_state st, uint8_t rd)
{
	struct ibv_qp_attr a;
	int mask = 0;

	memset(&a, 0, sizeof(a));
	a.qp_state = st;
	if (rdma_init_qp_attr(ep->id, &a, &mask))
		return cm_err("rdma_init_qp_attr");
	switch (st) {
	case IBV_QPS_INIT:
		a.qp_access_flags = (unsigned)rcci_qp_access(ep);
		mask |= IBV_QP_ACCESS_FLAGS;
		return rcci_qp_modify(ep, &a, mask, "INIT");
	case IBV_QPS_RTR:
		rcci_qp_rtr_overrides(ep, &a, &mask, rd);
		return rcci_qp_modify(ep, &a, mask, "RTR");
	default:
		rcci_qp_rts_overrides(ep, &a, &mask, rd);
		return rcci_qp_modify(ep, &a, mask, "RTS");
	}
}

/* QP for an id whose device is known: create, attach, INIT, initial receives. */
static int setup_qp(struct verbs_ep *ep)
{
	int rc;

	if (ep->id->verbs != ep->ctx->verbs) {
		log_error("verbs: %s is reached through %s, not this context's %s", ep->base.peer,
			  ep->id->verbs ? ibv_get_device_name(ep->id->verbs->device) :
					  "no RDMA device",
			  ibv_get_device_name(ep->ctx->verbs->device));
		return -EHOSTUNREACH;
	}
	rc = rcci_qp_create(ep);
	if (rc)
		return rc;
	rc = rcci_ep_attach(ep);
	if (rc)
		return rc;
	rc = qp_to(ep, IBV_QPS_INIT, 0);
	if (rc)
		return rc;
	return rcci_qp_post_initial(ep);
}

static uint8_t min3(uint8_t a, uint8_t b, uint8_t c)
{
	uint8_t m = a < b ? a : b;
	return m < c ? m : c;
}

/* ---------------------------------------------------------------- active */

static int wait_for(struct verbs_ep *ep, enum rdma_cm_event_type want, uint64_t deadline,
		    struct cm_ev *ev)
{
	int rc = next_event(ep->ch, deadline, ev);

	if (rc)
		return rc;
	if (ev->type == want)
		return 0;
	switch (ev->type) {
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
		log_info("verbs: %s: %s (%d)", ep->base.peer, rdma_event_str(ev->type), ev->status);
		return -EHOSTUNREACH;
	case RDMA_CM_EVENT_UNREACHABLE:
		log_info("verbs: %s: unreachable (%d)", ep->base.peer, ev->status);
		return ev->status == -ETIMEDOUT ? -ETIMEDOUT : -EHOSTUNREACH;
	case RDMA_CM_EVENT_REJECTED:
		if (ev->status == REJ_CONSUMER_DEFINED) {
			log_info("verbs: connection to %s rejected by the server", ep->base.peer);
			ep->base.peer_pdata_len = pd_decode(ev->pdata, ev->pdata_len,
							    ep->base.peer_pdata,
							    RCC_REJECT_PRIVATE_DATA_MAX, NULL);
			return -ECONNABORTED;
		}
		log_debug("verbs: %s: rejected with reason %d", ep->base.peer, ev->status);
		return -ECONNREFUSED;
	case RDMA_CM_EVENT_CONNECT_ERROR:
		return -ECONNREFUSED;
	default:
		log_warn("verbs: %s: unexpected cm event %s while waiting for %s", ep->base.peer,
			 rdma_event_str(ev->type), rdma_event_str(want));
		return -EPROTO;
	}
}

static int cm_connect(struct rcc_ep *base, const struct sockaddr *sa, socklen_t salen,
		      int timeout_ms)
{
	struct verbs_ep *ep = vep(base);
	uint64_t deadline = rcci_deadline(timeout_ms);
	uint8_t pd[PD_HDR + RCC_CONNECT_PRIVATE_DATA_MAX + PD_HB_QPN];
	struct rdma_conn_param cp;
	struct pd_extra mine = { 0 }, theirs;
	struct cm_ev ev;
	int rc, ms;

	(void)salen;
	rcci_ep_init(ep);
	ep->kind = VEP_CM;
	ep->ch = new_channel();
	if (!ep->ch) {
		rc = cm_err("rdma_create_event_channel");
		goto err;
	}
	if (rdma_create_id(ep->ch, &ep->id, ep, RDMA_PS_TCP)) {
		rc = cm_err("rdma_create_id");
		goto err;
	}
	/* rdma_cm wants its own bound for resolution; ours is the overall one. */
	ms = rcci_ms_left(deadline);
	if (rdma_resolve_addr(ep->id, NULL, (struct sockaddr *)sa,
			      ms < 0 || ms > 5000 ? 5000 : ms)) {
		rc = errno == ENODEV || errno == EADDRNOTAVAIL || errno == ENETUNREACH ?
			     -EHOSTUNREACH :
			     cm_err("rdma_resolve_addr");
		goto err;
	}
	rc = wait_for(ep, RDMA_CM_EVENT_ADDR_RESOLVED, deadline, &ev);
	if (rc)
		goto err;
	ms = rcci_ms_left(deadline);
	if (rdma_resolve_route(ep->id, ms < 0 || ms > 5000 ? 5000 : ms)) {
		rc = cm_err("rdma_resolve_route");
		goto err;
	}
	rc = wait_for(ep, RDMA_CM_EVENT_ROUTE_RESOLVED, deadline, &ev);
	if (rc)
		goto err;
	rc = setup_qp(ep);
	if (rc)
		goto err;

	mine.hb_qpn = rcci_hb_qpn(ep->ctx);
	mine.hb = mine.hb_qpn != 0;
	memset(&cp, 0, sizeof(cp));
	cp.private_data = pd;
	cp.private_data_len = (uint8_t)pd_encode(pd, base->own_pdata, base->own_pdata_len, &mine);
	cp.responder_resources = rcci_rd_atomic_responder(ep);
	cp.initiator_depth = rcci_rd_atomic_initiator(ep);
	cp.flow_control = 1;
	cp.retry_count = (uint8_t)base->attr.retry_cnt;
	cp.rnr_retry_count = (uint8_t)base->attr.rnr_retry;
	cp.qp_num = ep->qpn;
	cp.srq = base->attr.srq != NULL; /* the QP is ours, not the cm_id's: say so */
	if (rdma_connect(ep->id, &cp)) {
		rc = cm_err("rdma_connect");
		goto err;
	}
	rc = wait_for(ep, RDMA_CM_EVENT_CONNECT_RESPONSE, deadline, &ev);
	if (rc)
		goto err;
	base->peer_pdata_len = pd_decode(ev.pdata, ev.pdata_len, base->peer_pdata,
					 RCC_ACCEPT_PRIVATE_DATA_MAX, &theirs);
	/* the server's heartbeat QP: from its first heartbeat (heartbeat.c) */
	ep->hb_on = mine.hb && theirs.hb;
	rc = qp_to(ep, IBV_QPS_RTR, rcci_rd_atomic_responder(ep));
	if (rc)
		goto err_reject;
	rc = qp_to(ep, IBV_QPS_RTS,
		   min3(rcci_rd_atomic_initiator(ep), ev.responder_resources, 255));
	if (rc)
		goto err_reject;
	if (rdma_establish(ep->id)) {
		rc = cm_err("rdma_establish");
		goto err;
	}
	rc = rcci_ep_start(ep);
	if (rc)
		goto err;
	log_debug("verbs: connected to %s (QP %u)", base->peer, ep->qpn);
	return 0;

err_reject:
	rdma_reject(ep->id, NULL, 0);
err:
	rcci_ep_release(ep);
	return rc;
}

/* --------------------------------------------------------------- passive */

static int cm_listen(struct rcc_listener *base, const struct sockaddr *sa, socklen_t salen,
		     int backlog)
{
	struct verbs_listener *lst = (struct verbs_listener *)base;
	struct verbs_ctx *ctx = vctx(base->ctx);
	int one = 1, rc;

	(void)salen;
	lst->ch = new_channel();
	if (!lst->ch)
		return cm_err("rdma_create_event_channel");
	if (rdma_create_id(lst->ch, &lst->id, lst, RDMA_PS_TCP)) {
		rc = cm_err("rdma_create_id");
		goto err_ch;
	}
	/* A restarted server may take its port back at once. */
	rdma_set_option(lst->id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one, sizeof(one));
	if (rdma_bind_addr(lst->id, (struct sockaddr *)sa)) {
		rc = errno ? -errno : -EADDRNOTAVAIL;
		goto err_id;
	}
	if (lst->id->verbs && lst->id->verbs != ctx->verbs) {
		log_error("verbs: that address belongs to %s, not this context's %s",
			  ibv_get_device_name(lst->id->verbs->device),
			  ibv_get_device_name(ctx->verbs->device));
		rc = -EADDRNOTAVAIL;
		goto err_id;
	}
	if (rdma_listen(lst->id, backlog)) {
		rc = errno ? -errno : -EIO;
		goto err_id;
	}
	base->port = ntohs(rdma_get_src_port(lst->id));
	return 0;

err_id:
	rdma_destroy_id(lst->id);
err_ch:
	rdma_destroy_event_channel(lst->ch);
	return rc;
}

static void cm_listener_close(struct rcc_listener *base)
{
	struct verbs_listener *lst = (struct verbs_listener *)base;
	struct rdma_cm_event *ev;

	/* Requests nobody fetched: turn them away so their ids can go. */
	while (rdma_get_cm_event(lst->ch, &ev) == 0) {
		struct rdma_cm_id *id = ev->event == RDMA_CM_EVENT_CONNECT_REQUEST ? ev->id : NULL;
		rdma_ack_cm_event(ev);
		if (id) {
			rdma_reject(id, NULL, 0);
			rdma_destroy_id(id);
		}
	}
	if (rdma_destroy_id(lst->id))
		log_warn("verbs: rdma_destroy_id(listener): %s", strerror(errno));
	rdma_destroy_event_channel(lst->ch);
}

static int cm_get_request(struct rcc_listener *base, int timeout_ms, struct rcc_conn_req *rbase)
{
	struct verbs_listener *lst = (struct verbs_listener *)base;
	struct verbs_req *req = (struct verbs_req *)rbase;
	struct verbs_ctx *ctx = vctx(base->ctx);
	uint64_t deadline = rcci_deadline(timeout_ms);
	struct rdma_cm_event *ev;

	for (;;) {
		if (rdma_get_cm_event(lst->ch, &ev)) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				return cm_err("rdma_get_cm_event");
			int rc = rcci_wait_fd(lst->ch->fd, POLLIN, deadline);
			if (rc)
				return rc;
			continue;
		}
		if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
			log_debug("verbs: listener: cm event %s", rdma_event_str(ev->event));
			rdma_ack_cm_event(ev);
			continue;
		}
		struct rdma_cm_id *id = ev->id;
		struct pd_extra x;
		rbase->pdata_len = pd_decode(ev->param.conn.private_data,
					     ev->param.conn.private_data_len, rbase->pdata,
					     RCC_CONNECT_PRIVATE_DATA_MAX, &x);
		req->peer_hb_qpn = x.hb ? x.hb_qpn : 0;
		req->peer_responder = ev->param.conn.responder_resources;
		req->peer_initiator = ev->param.conn.initiator_depth;
		rdma_ack_cm_event(ev);
		rcci_addr_format(rdma_get_peer_addr(id), rbase->peer, sizeof(rbase->peer));

		if (id->verbs != ctx->verbs) {
			log_warn("verbs: request from %s arrived on another device; rejected",
				 rbase->peer);
			rdma_reject(id, NULL, 0);
			rdma_destroy_id(id);
			continue;
		}
		req->ch = new_channel();
		if (!req->ch || rdma_migrate_id(id, req->ch)) {
			int rc = cm_err("moving a request to its own channel");
			if (req->ch)
				rdma_destroy_event_channel(req->ch);
			rdma_reject(id, NULL, 0);
			rdma_destroy_id(id);
			return rc;
		}
		req->id = id;
		log_debug("verbs: connection request from %s (%u bytes of private data)",
			  rbase->peer, rbase->pdata_len);
		return 0;
	}
}

static int cm_accept(struct rcc_conn_req *rbase, struct rcc_ep *base)
{
	struct verbs_req *req = (struct verbs_req *)rbase;
	struct verbs_ep *ep = vep(base);
	uint8_t pd[PD_HDR + RCC_ACCEPT_PRIVATE_DATA_MAX];
	struct rdma_conn_param cp;
	struct pd_extra mine = { 0 };
	struct cm_ev ev;
	uint8_t resp, init;
	int rc;

	rcci_ep_init(ep);
	ep->kind = VEP_CM;
	ep->id = req->id;
	ep->ch = req->ch;
	req->id = NULL;
	req->ch = NULL;
	ep->id->context = ep;
	memcpy(base->peer_pdata, rbase->pdata, rbase->pdata_len);
	base->peer_pdata_len = rbase->pdata_len;

	rc = setup_qp(ep);
	if (rc)
		goto err_reject;
	resp = rcci_rd_atomic_responder(ep);
	init = min3(rcci_rd_atomic_initiator(ep), req->peer_responder, 255);
	rc = qp_to(ep, IBV_QPS_RTR, resp);
	if (rc)
		goto err_reject;
	rc = qp_to(ep, IBV_QPS_RTS, init);
	if (rc)
		goto err_reject;

	/* heartbeats only with a client that takes part and said where to */
	mine.hb = req->peer_hb_qpn && rcci_hb_qpn(ep->ctx);
	ep->hb_on = mine.hb;
	ep->hb_peer_qpn = req->peer_hb_qpn;
	memset(&cp, 0, sizeof(cp));
	cp.private_data = pd;
	cp.private_data_len = (uint8_t)pd_encode(pd, base->own_pdata, base->own_pdata_len, &mine);
	cp.responder_resources = min3(resp, req->peer_initiator, 255);
	cp.initiator_depth = init;
	cp.flow_control = 1;
	cp.rnr_retry_count = (uint8_t)base->attr.rnr_retry;
	cp.qp_num = ep->qpn;
	cp.srq = base->attr.srq != NULL; /* the QP is ours, not the cm_id's: say so */
	if (rdma_accept(ep->id, &cp)) {
		rc = cm_err("rdma_accept");
		goto err;
	}
	rc = next_event(ep->ch, rcci_deadline(VERBS_HANDSHAKE_MS), &ev);
	if (rc == 0 && ev.type != RDMA_CM_EVENT_ESTABLISHED) {
		log_info("verbs: %s: %s instead of ESTABLISHED", base->peer,
			 rdma_event_str(ev.type));
		rc = -ECONNABORTED;
	}
	if (rc)
		goto err;
	rc = rcci_ep_start(ep);
	if (rc)
		goto err;
	log_debug("verbs: accepted %s (QP %u)", base->peer, ep->qpn);
	return 0;

err_reject:
	rdma_reject(ep->id, NULL, 0);
err:
	rcci_ep_release(ep);
	return rc;
}

static int cm_reject(struct rcc_conn_req *rbase, const void *pdata, size_t len)
{
	struct verbs_req *req = (struct verbs_req *)rbase;
	uint8_t pd[PD_HDR + RCC_REJECT_PRIVATE_DATA_MAX];
	int rc = 0;

	if (rdma_reject(req->id, pd, (uint8_t)pd_encode(pd, pdata, len, NULL)))
		rc = cm_err("rdma_reject");
	rdma_destroy_id(req->id);
	rdma_destroy_event_channel(req->ch);
	return rc;
}

static int cm_listener_fd(const struct rcc_listener *base)
{
	return ((const struct verbs_listener *)base)->ch->fd;
}

const struct rcc_conn_ops rcci_cm_conn_ops = {
	.listen = cm_listen,
	.listener_close = cm_listener_close,
	.listener_fd = cm_listener_fd,
	.get_request = cm_get_request,
	.accept = cm_accept,
	.reject = cm_reject,
	.connect = cm_connect,
};
