/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Endpoint lifecycle shared by both bring-ups: CQ attachment, leaving
 * service, the synchronous disconnect and destruction.
 *
 * Disconnect must leave every outstanding work request completed on the
 * endpoint's CQs when it returns. The QP goes to ERR, which flushes
 * asynchronously; behind everything we post one marker receive and one marker
 * send (wr_ids are the addresses of ep->mark_recv/mark_send, never returned
 * to the user) and pull completions out of the CQs into their backlogs until
 * both markers have shown up (whoever polls them notes them).
 */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "verbs.h"

void rcci_ep_init(struct verbs_ep *ep)
{
	ep->ctx = vctx(ep->base.ctx);
	ep->sock = -1;
	pthread_mutex_init(&ep->lock, NULL);
	atomic_init(&ep->draining, false);
	atomic_init(&ep->markers, 0);
	atomic_init(&ep->fail_pending, false);
	atomic_init(&ep->rq_used, 0);
}

int rcci_ep_attach(struct verbs_ep *ep)
{
	struct verbs_cq *scq = vcq(ep->base.send_cq), *rcq = vcq(ep->base.recv_cq);
	int rc = rcci_vcq_attach(scq, ep);

	if (rc)
		return rc;
	if (rcq != scq) {
		rc = rcci_vcq_attach(rcq, ep);
		if (rc) {
			rcci_vcq_detach(scq, ep);
			return rc;
		}
	}
	ep->attached = true;
	return 0;
}

/* Take every completion the QP produced out of the device and out of the
 * backlog, then forget the QP number (the device may reuse it). The QP is
 * destroyed already, so nothing new can arrive. */
static void retire_cq(struct verbs_cq *cq, struct verbs_ep *ep)
{
	rcci_vcq_drain(cq);
	rcci_vcq_detach(cq, ep);
	rcci_vcq_forget(cq, ep);
}

void rcci_ep_detach(struct verbs_ep *ep)
{
	struct verbs_cq *scq = vcq(ep->base.send_cq), *rcq = vcq(ep->base.recv_cq);

	if (!ep->attached)
		return;
	retire_cq(scq, ep);
	if (rcq != scq)
		retire_cq(rcq, ep);
	ep->attached = false;
}

int rcci_ep_start(struct verbs_ep *ep) { return rcci_events_add(ep->ctx, ep); }

void rcci_ep_leave_locked(struct verbs_ep *ep, enum rcc_ep_state st, int status, const char *why)
{
	int cur = RCC_EP_CONNECTED;

	/* the first reason stays: a later leave of a gone endpoint changes nothing */
	if (atomic_load(&ep->base.state) == RCC_EP_CONNECTED)
		rcci_ep_left(&ep->base, status, why, false);
	if (atomic_compare_exchange_strong(&ep->base.state, &cur, (int)st)) {
		if (st == RCC_EP_ERROR)
			log_info("verbs: %s: endpoint failed: %s", ep->base.peer, why);
		else
			log_debug("verbs: %s: disconnected: %s", ep->base.peer, why);
		rcci_ep_state_changed(&ep->base);
	}
	if (ep->left)
		return;
	ep->left = true;
	if (ep->qp) {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
		rcci_qp_modify(ep, &a, IBV_QP_STATE, "ERR");
	}
	if (ep->id) {
		/* Fails harmlessly when the peer's DREQ came first. */
		if (rdma_disconnect(ep->id))
			log_debug("verbs: rdma_disconnect: %s", strerror(errno));
	}
	if (ep->sock >= 0)
		shutdown(ep->sock, SHUT_RDWR); /* the peer reads EOF */
}

void rcci_ep_leave(struct verbs_ep *ep, enum rcc_ep_state st, int status, const char *why)
{
	pthread_mutex_lock(&ep->lock);
	rcci_ep_leave_locked(ep, st, status, why);
	pthread_mutex_unlock(&ep->lock);
}

void rcci_ep_error_seen(struct verbs_ep *ep, bool flush)
{
	int cur = RCC_EP_CONNECTED;
	static const char why[] = "a work request completed in error";

	if (atomic_load(&ep->base.state) == RCC_EP_CONNECTED)
		rcci_ep_left(&ep->base, -EIO, why, false);
	if (atomic_compare_exchange_strong(&ep->base.state, &cur, RCC_EP_ERROR)) {
		rcci_ep_state_changed(&ep->base);
		atomic_store(&ep->fail_pending, true);
		atomic_store(&ep->ctx->fail_pending, true);
		rcci_events_wake(ep->ctx);
		return;
	}
	/* The peer's disconnect (caused by this very failure: it saw its side of
	 * it first) may be processed before we poll our error. A request that
	 * failed still makes this endpoint failed, whatever arrived first. */
	cur = RCC_EP_DISCONNECTED;
	if (!flush && !atomic_load(&ep->draining) &&
	    atomic_compare_exchange_strong(&ep->base.state, &cur, RCC_EP_ERROR)) {
		rcci_ep_left(&ep->base, -EIO, why, true);
		rcci_ep_state_changed(&ep->base);
	}
}

static void post_markers(struct verbs_ep *ep)
{
	struct ibv_recv_wr rw = { .wr_id = (uintptr_t)&ep->mark_recv }, *rbad;
	struct ibv_send_wr sw = {
		.wr_id = (uintptr_t)&ep->mark_send,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	}, *sbad;
	int rc;

	if (ep->kind == VEP_UD)
		rcci_ud_marker_dest(ep, &sw); /* a UD send needs somewhere to go */
	atomic_store(&ep->draining, true);
	/* With an SRQ the QP has no receive queue to mark: the SRQ's receives
	 * stay posted for other QPs, and the one this QP was filling (if any)
	 * is flushed by the move to ERR without anything to wait for (the
	 * device's IBV_EVENT_QP_LAST_WQE_REACHED would say when; rxe on
	 * Debian's 6.1 never sends it), so its flush may come after we return. */
	if (ep->base.attr.srq) {
		atomic_fetch_or(&ep->markers, MARK_RECV);
	} else if ((rc = ibv_post_recv(ep->qp, &rw, &rbad)) != 0) {
		log_debug("verbs: QP %u: marker receive not posted (%d)", ep->qpn, rc);
		atomic_fetch_or(&ep->markers, MARK_RECV);
	}
	rc = ibv_post_send(ep->qp, &sw, &sbad);
	if (rc) {
		log_debug("verbs: QP %u: marker send not posted (%d)", ep->qpn, rc);
		atomic_fetch_or(&ep->markers, MARK_SEND);
	}
	/* Posting a receive to a QP already in ERR may never reach the device
	 * (rxe's receive queue lives in user memory and is flushed only when the
	 * kernel looks at the QP); ERR -> ERR makes it look. */
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	ibv_modify_qp(ep->qp, &a, IBV_QP_STATE);
}

/* Until both markers were seen (by us or by a concurrent poller). */
static int wait_markers(struct verbs_ep *ep)
{
	struct verbs_cq *scq = vcq(ep->base.send_cq), *rcq = vcq(ep->base.recv_cq);
	uint64_t deadline = rcci_deadline(VERBS_DRAIN_MS);
	const int all = MARK_SEND | MARK_RECV;
	unsigned spins = 0;

	while ((atomic_load(&ep->markers) & all) != all) {
		rcci_vcq_drain(scq);
		if (rcq != scq)
			rcci_vcq_drain(rcq);
		if ((atomic_load(&ep->markers) & all) == all)
			break;
		if (atomic_load(&scq->overrun) || atomic_load(&rcq->overrun)) {
			log_debug("verbs: QP %u: its CQ overran; not waiting for the flush",
				  ep->qpn);
			return -EIO;
		}
		if (rcci_ms_left(deadline) == 0) {
			log_warn("verbs: QP %u: flushed work did not complete within %d ms "
				 "(markers seen: %d)",
				 ep->qpn, VERBS_DRAIN_MS, atomic_load(&ep->markers));
			return -ETIMEDOUT;
		}
		/* The flush is the device's work: give it the CPU between looks. */
		if (++spins < 64) {
			sched_yield();
		} else {
			struct timespec ts = { 0, 100000 };
			nanosleep(&ts, NULL);
		}
	}
	return 0;
}

int rcci_verbs_ep_disconnect(struct rcc_ep *base)
{
	struct verbs_ep *ep = vep(base);
	int rc;

	pthread_mutex_lock(&ep->lock);
	if (ep->drained) {
		pthread_mutex_unlock(&ep->lock);
		return 0;
	}
	rcci_ep_leave_locked(ep, RCC_EP_DISCONNECTED, 0, "local disconnect");
	if (!atomic_load(&ep->draining))
		post_markers(ep);
	pthread_mutex_unlock(&ep->lock);

	rc = wait_markers(ep);

	pthread_mutex_lock(&ep->lock);
	ep->drained = true;
	pthread_mutex_unlock(&ep->lock);
	return rc;
}

void rcci_ep_release(struct verbs_ep *ep)
{
	rcci_qp_destroy(ep);
	rcci_ep_detach(ep);
	if (ep->id) {
		if (rdma_destroy_id(ep->id))
			log_warn("verbs: rdma_destroy_id: %s", strerror(errno));
		ep->id = NULL;
	}
	if (ep->ch) {
		rdma_destroy_event_channel(ep->ch);
		ep->ch = NULL;
	}
	if (ep->sock >= 0) {
		close(ep->sock);
		ep->sock = -1;
	}
	rcci_sq_slots_fini(&ep->sq); /* after the detach: its drain frees slots */
	pthread_mutex_destroy(&ep->lock);
}

void rcci_verbs_ep_destroy(struct rcc_ep *base)
{
	struct verbs_ep *ep = vep(base);

	rcci_events_remove(ep->ctx, ep);
	rcci_ep_release(ep);
}
