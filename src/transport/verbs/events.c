/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The context's background thread: it notices that an endpoint must leave
 * service when nobody is calling the library -- the peer disconnected (cm
 * DISCONNECTED, EOF on the manual socket), the device reported a QP error,
 * or the poll path saw an error completion -- and then moves the QP to ERR
 * and tells the peer. One epoll set: an eventfd to wake it, the device's
 * async event fd, per endpoint its cm event channel or manual socket, and
 * the heartbeats' CQ channel and timer (heartbeat.c).
 *
 * Async events come from the device context librdmacm shares process-wide; an
 * event for a QP of another context is not ours to act on and is dropped
 * (error completions and cm events still reach its owner).
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/log.h"
#include "base/thread.h"
#include "verbs.h"

#define KEY_WAKE 0
#define KEY_ASYNC 1 /* 2, 3: heartbeat.c's (verbs.h) */
#define FIRST_SERIAL 16

void rcci_events_wake(struct verbs_ctx *ctx)
{
	uint64_t one = 1;
	ssize_t r = write(ctx->wakefd, &one, sizeof(one));
	(void)r; /* a full counter already wakes the thread */
}

/* Caller holds eps_lock. */
static struct verbs_ep *find_serial(struct verbs_ctx *ctx, uint64_t serial)
{
	for (struct verbs_ep *ep = ctx->eps; ep; ep = ep->next)
		if (ep->serial == serial)
			return ep;
	return NULL;
}

static void cm_events(struct verbs_ep *ep)
{
	struct rdma_cm_event *ev;

	while (rdma_get_cm_event(ep->ch, &ev) == 0) {
		enum rdma_cm_event_type type = ev->event;
		int status = ev->status;
		rdma_ack_cm_event(ev);
		switch (type) {
		case RDMA_CM_EVENT_DISCONNECTED:
			rcci_ep_leave_locked(ep, RCC_EP_DISCONNECTED, -ECONNRESET,
					     "the peer disconnected");
			break;
		case RDMA_CM_EVENT_DEVICE_REMOVAL:
			rcci_ep_leave_locked(ep, RCC_EP_ERROR, -ENODEV, "the device was removed");
			break;
		case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		case RDMA_CM_EVENT_ESTABLISHED:
			break;
		default:
			log_debug("verbs: %s: cm event %s (status %d)", ep->base.peer,
				  rdma_event_str(type), status);
			break;
		}
	}
}

static void sock_events(struct verbs_ctx *ctx, struct verbs_ep *ep)
{
	char buf[64];

	for (;;) {
		ssize_t r = recv(ep->sock, buf, sizeof(buf), MSG_DONTWAIT);
		if (r > 0)
			continue; /* nothing is expected after bring-up; ignore it */
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		/* EOF or a broken connection: the peer is gone. Stop watching a
		 * socket that stays readable forever now. */
		epoll_ctl(ctx->epfd, EPOLL_CTL_DEL, ep->sock, NULL);
		rcci_ep_leave_locked(ep, RCC_EP_DISCONNECTED, -ECONNRESET,
				     r == 0 ? "the peer closed the connection" :
					      "the bring-up connection broke");
		return;
	}
}

static void ep_event(struct verbs_ctx *ctx, uint64_t serial)
{
	pthread_mutex_lock(&ctx->eps_lock);
	struct verbs_ep *ep = find_serial(ctx, serial);
	if (ep) {
		pthread_mutex_lock(&ep->lock);
		if (ep->kind == VEP_CM)
			cm_events(ep);
		else
			sock_events(ctx, ep);
		pthread_mutex_unlock(&ep->lock);
	}
	pthread_mutex_unlock(&ctx->eps_lock);
}

static void failures(struct verbs_ctx *ctx)
{
	pthread_mutex_lock(&ctx->eps_lock);
	for (struct verbs_ep *ep = ctx->eps; ep; ep = ep->next) {
		if (!atomic_exchange(&ep->fail_pending, false))
			continue;
		rcci_ep_leave(ep, RCC_EP_ERROR, -EIO, "a work request completed in error");
	}
	pthread_mutex_unlock(&ctx->eps_lock);
}

static void async_events(struct verbs_ctx *ctx)
{
	struct ibv_async_event ev;

	while (ibv_get_async_event(ctx->verbs, &ev) == 0) {
		enum ibv_event_type t = ev.event_type;
		switch (t) {
		case IBV_EVENT_QP_FATAL:
		case IBV_EVENT_QP_REQ_ERR:
		case IBV_EVENT_QP_ACCESS_ERR: {
			pthread_mutex_lock(&ctx->eps_lock);
			struct verbs_ep *ep = ctx->eps;
			while (ep && ep->qp != ev.element.qp)
				ep = ep->next;
			log_debug("verbs: async %s on QP %u", ibv_event_type_str(t),
				  ev.element.qp->qp_num);
			if (ep) {
				rcci_ep_leave(ep, RCC_EP_ERROR, -EIO, ibv_event_type_str(t));
			} else {
				log_debug("verbs: async %s for a QP of another context",
					  ibv_event_type_str(t));
			}
			pthread_mutex_unlock(&ctx->eps_lock);
			break;
		}
		case IBV_EVENT_CQ_ERR: {
			/* Overrun: the device may have lost completions of every QP on
			 * it. (cq_context is the rcc CQ, also for another context's CQ;
			 * it cannot be destroyed before this event is acknowledged.) */
			struct verbs_cq *vc = ev.element.cq->cq_context;
			if (!atomic_exchange(&vc->overrun, true))
				log_error("verbs: a CQ of depth %u overran (make it deeper): its "
					  "endpoints fail",
					  vc->base.depth);
			pthread_mutex_lock(&ctx->eps_lock);
			for (struct verbs_ep *ep = ctx->eps; ep; ep = ep->next) {
				if (vcq(ep->base.send_cq)->cq != ev.element.cq &&
				    vcq(ep->base.recv_cq)->cq != ev.element.cq)
					continue;
				rcci_ep_leave(ep, RCC_EP_ERROR, -EIO, "CQ overrun");
			}
			pthread_mutex_unlock(&ctx->eps_lock);
			break;
		}
		case IBV_EVENT_DEVICE_FATAL:
			log_error("verbs: device fatal error: every endpoint fails");
			pthread_mutex_lock(&ctx->eps_lock);
			for (struct verbs_ep *ep = ctx->eps; ep; ep = ep->next)
				rcci_ep_leave(ep, RCC_EP_ERROR, -EIO, "device fatal error");
			pthread_mutex_unlock(&ctx->eps_lock);
			break;
		case IBV_EVENT_SRQ_LIMIT_REACHED:
			/* srq_context is the rcc SRQ; ibv_destroy_srq() waits for this
			 * event's ack, so it is still alive here */
			log_debug("verbs: SRQ limit reached");
			/* eps_lock pairs with rcci_vsrq_arm()'s (the core's events lock
			 * is a leaf: taking it under this one is allowed) */
			pthread_mutex_lock(&ctx->eps_lock);
			rcci_srq_limit_reached(ev.element.srq->srq_context);
			pthread_mutex_unlock(&ctx->eps_lock);
			break;
		case IBV_EVENT_SRQ_ERR:
			log_error("verbs: an SRQ failed (%s)", ibv_event_type_str(t));
			break;
		case IBV_EVENT_PORT_ERR:
			log_warn("verbs: port %d is down", ev.element.port_num);
			break;
		default:
			log_debug("verbs: async event %s", ibv_event_type_str(t));
			break;
		}
		ibv_ack_async_event(&ev);
	}
}

static void *thread_main(void *arg)
{
	struct verbs_ctx *ctx = arg;
	struct epoll_event evs[16];

	while (!atomic_load(&ctx->stop)) {
		int n = epoll_wait(ctx->epfd, evs, 16, -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			log_error("verbs: epoll_wait: %s", strerror(errno));
			break;
		}
		for (int i = 0; i < n; i++) {
			uint64_t key = evs[i].data.u64;
			if (key == KEY_WAKE) {
				uint64_t v;
				ssize_t r = read(ctx->wakefd, &v, sizeof(v));
				(void)r;
			} else if (key == KEY_ASYNC) {
				async_events(ctx);
			} else if (key == VERBS_KEY_HB_CQ) {
				rcci_hb_cq_event(ctx);
			} else if (key == VERBS_KEY_HB_TIMER) {
				rcci_hb_timer_event(ctx);
			} else {
				ep_event(ctx, key);
			}
		}
		if (atomic_exchange(&ctx->fail_pending, false))
			failures(ctx);
	}
	return NULL;
}

int rcci_events_start(struct verbs_ctx *ctx)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int rc;

	pthread_mutex_init(&ctx->eps_lock, NULL);
	atomic_init(&ctx->stop, false);
	atomic_init(&ctx->fail_pending, false);
	ctx->next_serial = FIRST_SERIAL;
	ctx->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (ctx->epfd < 0) {
		rc = -errno;
		goto err_lock;
	}
	ctx->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (ctx->wakefd < 0) {
		rc = -errno;
		goto err_ep;
	}
	ev.data.u64 = KEY_WAKE;
	if (epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, ctx->wakefd, &ev)) {
		rc = -errno;
		goto err_wake;
	}
	/* The async fd is shared with anyone else using this device context;
	 * non-blocking so a reader that lost the race does not hang. */
	if (rcci_verbs_set_nonblock(ctx->verbs->async_fd) == 0) {
		ev.data.u64 = KEY_ASYNC;
		if (epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, ctx->verbs->async_fd, &ev))
			log_debug("verbs: not watching async events: %s", strerror(errno));
	}
	rc = rcci_thread_create(&ctx->thread, thread_main, ctx);
	if (rc)
		goto err_wake;
	ctx->thread_started = true;
	return 0;

err_wake:
	close(ctx->wakefd);
err_ep:
	close(ctx->epfd);
err_lock:
	pthread_mutex_destroy(&ctx->eps_lock);
	return rc;
}

void rcci_events_stop(struct verbs_ctx *ctx)
{
	if (ctx->thread_started) {
		atomic_store(&ctx->stop, true);
		rcci_events_wake(ctx);
		pthread_join(ctx->thread, NULL);
		ctx->thread_started = false;
	}
	rcci_hb_destroy(ctx); /* its descriptors are in the epoll set */
	close(ctx->wakefd);
	close(ctx->epfd);
	pthread_mutex_destroy(&ctx->eps_lock);
}

int rcci_events_add(struct verbs_ctx *ctx, struct verbs_ep *ep)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int fd = ep->kind == VEP_CM ? ep->ch->fd : ep->sock;
	int rc = 0;

	if (ep->kind == VEP_MANUAL)
		ev.events |= EPOLLRDHUP;
	pthread_mutex_lock(&ctx->eps_lock);
	ep->serial = ctx->next_serial++;
	ev.data.u64 = ep->serial;
	/* a datagram endpoint has no peer to watch: listed for its failures only */
	if (ep->kind != VEP_UD && epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, fd, &ev)) {
		rc = -errno;
		log_error("verbs: cannot watch endpoint %s: %s", ep->base.peer, strerror(errno));
		goto out;
	}
	ep->next = ctx->eps;
	ep->prev = NULL;
	if (ctx->eps)
		ctx->eps->prev = ep;
	ctx->eps = ep;
	ep->listed = true;
	rcci_hb_ep_listed(ep);
	/* An error completion polled before we were listed. */
	if (atomic_load(&ep->fail_pending)) {
		atomic_store(&ctx->fail_pending, true);
		rcci_events_wake(ctx);
	}
out:
	pthread_mutex_unlock(&ctx->eps_lock);
	return rc;
}

void rcci_events_remove(struct verbs_ctx *ctx, struct verbs_ep *ep)
{
	pthread_mutex_lock(&ctx->eps_lock);
	if (ep->listed) {
		int fd = ep->kind == VEP_CM ? ep->ch->fd : ep->sock;
		if (ep->kind != VEP_UD)
			epoll_ctl(ctx->epfd, EPOLL_CTL_DEL, fd, NULL);
		if (ep->prev)
			ep->prev->next = ep->next;
		else
			ctx->eps = ep->next;
		if (ep->next)
			ep->next->prev = ep->prev;
		ep->listed = false;
		rcci_hb_ep_unlisted(ep);
	}
	pthread_mutex_unlock(&ctx->eps_lock);
}
