/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Dead-peer detection on verbs (rcc_ep_attr.peer_timeout_ms), the rule tcp
 * keeps: nothing heard from the peer for its timeout ends the connection.
 *
 * Why datagrams of our own. A QP's retries notice a dead peer only while work
 * is outstanding, an idle rdma_cm connection to a crashed host is never
 * noticed, and the NIC (rxe: the kernel) acknowledges for a frozen process.
 * So the background threads of the two contexts send each other heartbeats:
 * one 16-byte UD datagram per connected endpoint (hb_wire.h) every eighth of
 * the shorter of the two timeouts, from one UD QP per context, made with the
 * first connected endpoint. Only a heartbeat counts as hearing from the peer:
 * what the NIC answers says nothing of the process.
 *
 * Addresses. Each side needs the other's heartbeat QP number. Manual bring-up
 * carries it in HELLO and ACCEPT. With rdma_cm the client's rides in the
 * REQ's private data (4 bytes are left after the application's 48), but the
 * REP has no byte to spare: the server says only that it takes part, sends
 * first, and the client takes the number from the source QP of that first
 * heartbeat. A peer that does not take part (a raw rdma_cm program) is not
 * timed. The path is the RC QP's own (its address vector).
 *
 * A heartbeat is believed when it names one of our connected RC QPs and that
 * QP's peer, from the peer's heartbeat QP once known. Anyone on the fabric
 * who knows the Q_Key and both QP numbers can forge one, as they can forge
 * RC traffic itself (docs/security.md).
 *
 * Everything here runs on the background thread under ctx->eps_lock, except
 * making the QP (rcci_hb_qpn, any thread, under the same lock).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "base/log.h"
#include "hb_wire.h"
#include "verbs.h"

#define HB_QKEY 0x52434842u /* "RCHB"; bit 31 clear (not a privileged Q_Key) */
#define HB_RECVS 32u
#define HB_SENDS 32u
#define HB_SEND_BIT (1ull << 32) /* wr_id: a send slot, else a receive slot */

struct verbs_hb {
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;        /* HB_RECVS receive slots, then HB_SENDS send slots */
	size_t recv_slot;    /* GRH + the largest datagram the port carries */
	uint32_t free_sends; /* bit i: send slot i is free */
	int timerfd;
	bool broken;  /* the QP failed: nobody is timed any more (logged once) */
	bool starved; /* a heartbeat was due with no send slot free */
	/* the endpoints with heartbeats, by their RC QP number: a heartbeat
	 * names the QP it is for, and finding it must not walk every endpoint */
	struct rcci_u32map by_qpn;
};

static uint8_t *send_slot(struct verbs_hb *hb, unsigned i)
{
	return hb->buf + HB_RECVS * hb->recv_slot + i * HB_WIRE_SIZE;
}

static int post_recv(struct verbs_hb *hb, unsigned i)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(hb->buf + i * hb->recv_slot),
			       .length = (uint32_t)hb->recv_slot,
			       .lkey = hb->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(hb->qp, &wr, &bad);
}

static void hb_free(struct verbs_ctx *ctx, struct verbs_hb *hb)
{
	if (hb->timerfd >= 0) {
		epoll_ctl(ctx->epfd, EPOLL_CTL_DEL, hb->timerfd, NULL);
		close(hb->timerfd);
	}
	if (hb->qp && ibv_destroy_qp(hb->qp))
		log_warn("verbs: heartbeats: ibv_destroy_qp: %s", strerror(errno));
	if (hb->mr && ibv_dereg_mr(hb->mr))
		log_warn("verbs: heartbeats: ibv_dereg_mr: %s", strerror(errno));
	free(hb->buf);
	rcci_u32map_fini(&hb->by_qpn);
	if (hb->ch)
		epoll_ctl(ctx->epfd, EPOLL_CTL_DEL, hb->ch->fd, NULL);
	if (hb->cq && ibv_destroy_cq(hb->cq))
		log_warn("verbs: heartbeats: ibv_destroy_cq: %s", strerror(errno));
	if (hb->ch && ibv_destroy_comp_channel(hb->ch))
		log_warn("verbs: heartbeats: ibv_destroy_comp_channel: %s", strerror(errno));
	free(hb);
}

static int watch(struct verbs_ctx *ctx, int fd, uint64_t key)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = key };
	return epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

/* The context's heartbeat QP at RTS with every receive posted. */
static int hb_new(struct verbs_ctx *ctx, struct verbs_hb **out)
{
	struct verbs_hb *hb = calloc(1, sizeof(*hb));
	int rc = -ENOMEM;

	if (!hb)
		return -ENOMEM;
	hb->timerfd = -1;
	if (rcci_u32map_init(&hb->by_qpn, 16)) {
		free(hb);
		return -ENOMEM;
	}
	hb->free_sends = HB_SENDS == 32 ? UINT32_MAX : (1u << HB_SENDS) - 1;
	hb->recv_slot = VERBS_GRH_LEN + (size_t)rcci_verbs_mtu_bytes(ctx->mtu);
	size_t bytes = HB_RECVS * hb->recv_slot + HB_SENDS * HB_WIRE_SIZE;
	hb->buf = calloc(1, bytes);
	if (!hb->buf)
		goto err;
	hb->ch = ibv_create_comp_channel(ctx->verbs);
	if (!hb->ch)
		goto err_errno;
	rc = rcci_verbs_set_nonblock(hb->ch->fd);
	if (rc)
		goto err;
	hb->cq = ibv_create_cq(ctx->verbs, (int)(HB_RECVS + HB_SENDS), hb, hb->ch, 0);
	if (!hb->cq)
		goto err_errno;
	hb->mr = ibv_reg_mr(ctx->pd, hb->buf, bytes, IBV_ACCESS_LOCAL_WRITE);
	if (!hb->mr)
		goto err_errno;
	struct ibv_qp_init_attr qa = {
		.send_cq = hb->cq,
		.recv_cq = hb->cq,
		.cap = { .max_send_wr = HB_SENDS,
			 .max_recv_wr = HB_RECVS,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_UD,
	};
	hb->qp = ibv_create_qp(ctx->pd, &qa);
	if (!hb->qp)
		goto err_errno;
	rc = rcci_qp_ud_ready(hb->qp, ctx->port, HB_QKEY);
	if (rc)
		goto err;
	for (unsigned i = 0; i < HB_RECVS; i++) {
		rc = post_recv(hb, i);
		if (rc) {
			rc = -rc;
			goto err;
		}
	}
	if (ibv_req_notify_cq(hb->cq, 0))
		goto err_errno;
	hb->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (hb->timerfd < 0)
		goto err_errno;
	rc = watch(ctx, hb->ch->fd, VERBS_KEY_HB_CQ);
	if (rc)
		goto err;
	rc = watch(ctx, hb->timerfd, VERBS_KEY_HB_TIMER);
	if (rc)
		goto err;
	*out = hb;
	return 0;

err_errno:
	rc = errno ? -errno : -ENOMEM;
err:
	hb_free(ctx, hb);
	return rc;
}

uint32_t rcci_hb_qpn(struct verbs_ctx *ctx)
{
	uint32_t qpn = 0;
	int rc = 0;

	pthread_mutex_lock(&ctx->eps_lock);
	if (!ctx->hb && !ctx->hb_unavailable) {
		rc = hb_new(ctx, &ctx->hb);
		/* once: a device without UD (iWARP) would refuse every time */
		if (rc) {
			ctx->hb_unavailable = true;
			log_warn("verbs: no heartbeat QP (%s): this context's connections go "
				 "without dead-peer detection",
				 rcc_strerror(rc));
		}
	}
	if (ctx->hb && !ctx->hb->broken)
		qpn = ctx->hb->qp->qp_num;
	pthread_mutex_unlock(&ctx->eps_lock);
	return qpn;
}

void rcci_hb_destroy(struct verbs_ctx *ctx)
{
	if (ctx->hb) {
		hb_free(ctx, ctx->hb);
		ctx->hb = NULL;
	}
}

/* Fire at ns (CLOCK_MONOTONIC, as rcc_now_ns); 0: never. */
static void arm(struct verbs_hb *hb, uint64_t ns)
{
	struct itimerspec t = { 0 };

	if (ns) {
		t.it_value.tv_sec = (time_t)(ns / 1000000000ull);
		t.it_value.tv_nsec = (long)(ns % 1000000000ull);
	}
	if (timerfd_settime(hb->timerfd, TFD_TIMER_ABSTIME, &t, NULL))
		log_warn("verbs: heartbeats: timerfd_settime: %s", strerror(errno));
}

void rcci_hb_ep_listed(struct verbs_ep *ep)
{
	struct verbs_ctx *ctx = ep->ctx;
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr init;

	if (!ep->hb_on)
		return;
	ep->hb_on = false;
	if (!ctx->hb || ctx->hb->broken)
		return;
	if (ibv_query_qp(ep->qp, &a, IBV_QP_AV | IBV_QP_DEST_QPN, &init)) {
		log_warn("verbs: %s: no heartbeats (ibv_query_qp: %s)", ep->base.peer,
			 strerror(errno));
		return;
	}
	ep->hb_ah = ibv_create_ah(ctx->pd, &a.ah_attr);
	if (!ep->hb_ah) {
		log_warn("verbs: %s: no heartbeats (ibv_create_ah: %s)", ep->base.peer,
			 strerror(errno));
		return;
	}
	if (rcci_u32map_put(&ctx->hb->by_qpn, ep->qpn, ep)) {
		log_warn("verbs: %s: no heartbeats (out of memory)", ep->base.peer);
		if (ibv_destroy_ah(ep->hb_ah))
			log_warn("verbs: ibv_destroy_ah: %s", strerror(errno));
		ep->hb_ah = NULL;
		return;
	}
	ep->hb_peer_rc_qpn = a.dest_qp_num;
	ep->hb_on = true;
	ep->hb_heard_ns = ep->hb_next_ns = rcc_now_ns();
	arm(ctx->hb, ep->hb_next_ns); /* the first heartbeat now: the peer may be waiting for it */
}

void rcci_hb_ep_unlisted(struct verbs_ep *ep)
{
	ep->hb_on = false;
	if (ep->hb_ah) {
		/* listed with heartbeats: in the map since (hb exists until the ctx goes) */
		rcci_u32map_remove(&ep->ctx->hb->by_qpn, ep->qpn);
		if (ibv_destroy_ah(ep->hb_ah))
			log_warn("verbs: ibv_destroy_ah: %s", strerror(errno));
		ep->hb_ah = NULL;
	}
}

static uint64_t timeout_ns(const struct verbs_ep *ep)
{
	return (uint64_t)ep->base.attr.peer_timeout_ms * 1000000ull;
}

static uint64_t period_ns(const struct verbs_ep *ep)
{
	uint64_t t = timeout_ns(ep), peer = (uint64_t)ep->hb_peer_wants_ms * 1000000ull;

	if (peer && peer < t)
		t = peer;
	t /= RCCI_HB_PER_TIMEOUT;
	return t < RCCI_HB_MIN_NS ? RCCI_HB_MIN_NS : t;
}

/* One heartbeat to ep's peer; false when no send slot is free. */
static bool send_one(struct verbs_hb *hb, struct verbs_ep *ep)
{
	if (!hb->free_sends)
		return false;
	unsigned i = (unsigned)__builtin_ctz(hb->free_sends);
	struct hb_msg m = { .to_qpn = ep->hb_peer_rc_qpn,
			    .from_qpn = ep->qpn,
			    .timeout_ms = ep->base.attr.peer_timeout_ms };
	hb_encode(&m, send_slot(hb, i));
	struct ibv_sge sge = { .addr = (uintptr_t)send_slot(hb, i),
			       .length = HB_WIRE_SIZE,
			       .lkey = hb->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = HB_SEND_BIT | i,
				  .sg_list = &sge,
				  .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED },
			   *bad;
	wr.wr.ud.ah = ep->hb_ah;
	wr.wr.ud.remote_qpn = ep->hb_peer_qpn;
	wr.wr.ud.remote_qkey = HB_QKEY;
	int rc = ibv_post_send(hb->qp, &wr, &bad);
	if (rc) {
		log_debug("verbs: heartbeat to %s not sent: %s", ep->base.peer, strerror(rc));
		return true; /* the next one will try again */
	}
	hb->free_sends &= ~(1u << i);
	return true;
}

static void broken(struct verbs_hb *hb, const char *why)
{
	if (hb->broken)
		return;
	hb->broken = true;
	log_error("verbs: the heartbeat QP failed (%s): dead peers go unnoticed from now on", why);
}

/* Send what is due, end the connections that went silent, set the timer
 * for the next of either. Caller holds eps_lock. */
static void tick(struct verbs_ctx *ctx)
{
	struct verbs_hb *hb = ctx->hb;
	uint64_t now = rcc_now_ns(), next = 0;

	hb->starved = false;
	if (hb->broken)
		return;
	for (struct verbs_ep *ep = ctx->eps; ep; ep = ep->next) {
		if (!ep->hb_on || atomic_load(&ep->base.state) != RCC_EP_CONNECTED)
			continue;
		if (now - ep->hb_heard_ns > timeout_ns(ep)) {
			rcci_ep_leave(ep, RCC_EP_DISCONNECTED, -ETIMEDOUT,
				      "nothing heard from the peer within the peer timeout");
			continue;
		}
		uint64_t due = ep->hb_heard_ns + timeout_ns(ep) + 1;
		if (ep->hb_peer_qpn) {
			if (now >= ep->hb_next_ns) {
				if (send_one(hb, ep))
					ep->hb_next_ns = now + period_ns(ep);
				else
					hb->starved = true; /* retried as send slots come back */
			}
			if (ep->hb_next_ns < due)
				due = ep->hb_next_ns;
		}
		if (!next || due < next)
			next = due;
	}
	arm(hb, next);
}

void rcci_hb_timer_event(struct verbs_ctx *ctx)
{
	uint64_t n;

	/* ctx->hb was set by another thread, under this lock */
	pthread_mutex_lock(&ctx->eps_lock);
	if (read(ctx->hb->timerfd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		log_debug("verbs: heartbeats: timerfd: %s", strerror(errno));
	tick(ctx);
	pthread_mutex_unlock(&ctx->eps_lock);
}

/* A heartbeat arrived from heartbeat QP src_qp. Caller holds eps_lock. */
static void heard(struct verbs_ctx *ctx, const uint8_t *payload, uint32_t len, uint32_t src_qp)
{
	struct hb_msg m;
	struct verbs_ep *ep;

	if (hb_decode(payload, len, &m))
		return;
	ep = rcci_u32map_find(&ctx->hb->by_qpn, m.to_qpn);
	if (!ep || !ep->hb_on || ep->hb_peer_rc_qpn != m.from_qpn ||
	    (ep->hb_peer_qpn && ep->hb_peer_qpn != src_qp))
		return; /* not for a connection of ours, or not from its peer */
	uint64_t now = rcc_now_ns(), before = period_ns(ep);
	bool learned = !ep->hb_peer_qpn;
	ep->hb_heard_ns = now;
	ep->hb_peer_qpn = src_qp;
	ep->hb_peer_wants_ms = m.timeout_ms;
	/* The peer must hear from us at least an eighth of its timeout often:
	 * at once when we could not send before, or it asked for more. */
	if (learned || period_ns(ep) < before)
		ep->hb_next_ns = now;
	if (ep->hb_next_ns <= now)
		tick(ctx);
}

void rcci_hb_cq_event(struct verbs_ctx *ctx)
{
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	struct ibv_wc wc[16];
	unsigned events = 0;
	int n;

	/* ctx->hb was set by another thread, under this lock */
	pthread_mutex_lock(&ctx->eps_lock);
	struct verbs_hb *hb = ctx->hb;
	while (ibv_get_cq_event(hb->ch, &ev_cq, &ev_ctx) == 0)
		events++;
	if (events)
		ibv_ack_cq_events(hb->cq, events);
	if (ibv_req_notify_cq(hb->cq, 0))
		log_warn("verbs: heartbeats: ibv_req_notify_cq failed");
	while ((n = ibv_poll_cq(hb->cq, 16, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			if (wc[i].wr_id & HB_SEND_BIT) {
				hb->free_sends |= 1u << (unsigned)(wc[i].wr_id & 31u);
				if (wc[i].status != IBV_WC_SUCCESS)
					broken(hb, ibv_wc_status_str(wc[i].status));
				continue;
			}
			unsigned slot = (unsigned)wc[i].wr_id;
			if (wc[i].status == IBV_WC_WR_FLUSH_ERR) {
				broken(hb, "its receives were flushed");
				continue;
			}
			if (wc[i].status == IBV_WC_SUCCESS && wc[i].byte_len >= VERBS_GRH_LEN)
				heard(ctx, hb->buf + slot * hb->recv_slot + VERBS_GRH_LEN,
				      wc[i].byte_len - VERBS_GRH_LEN, wc[i].src_qp);
			if (post_recv(hb, slot))
				broken(hb, "a receive could not be posted again");
		}
	}
	if (n < 0)
		broken(hb, "ibv_poll_cq failed");
	if (hb->starved)
		tick(ctx);
	pthread_mutex_unlock(&ctx->eps_lock);
}
