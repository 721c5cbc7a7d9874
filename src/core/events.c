/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Connection events: which endpoints left service, for an application that
 * runs accept, completions and disconnects from one epoll loop.
 *
 * An endpoint is queued, not an event object: a state change marks the
 * endpoint and appends it once; the event is read from its state when the
 * application takes it. Nothing is allocated on the way, so however many
 * times peers connect and leave, the queue never holds more than the open
 * endpoints; and closing an endpoint unlinks it, so no event ever names a
 * closed one.
 */
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/last_error.h"
#include "base/log.h"
#include "base/sock.h"
#include "core/core.h"

void rcci_events_init(struct rcci_event_queue *q)
{
	pthread_mutex_init(&q->lock, NULL);
	q->head = q->tail = NULL;
	q->fd = -1;
}

void rcci_events_fini(struct rcci_event_queue *q)
{
	if (q->fd >= 0)
		close(q->fd);
	pthread_mutex_destroy(&q->lock);
}

/* The descriptor says "readable" while the queue is not empty. */
static void signal_fd(int fd)
{
	uint64_t one = 1;
	if (write(fd, &one, sizeof(one)) < 0) {
		/* the counter is far from overflowing: it is drained when the queue empties */
	}
}

static void drain_fd(int fd)
{
	uint64_t n;
	if (read(fd, &n, sizeof(n)) < 0) {
		/* EAGAIN: nothing was signalled */
	}
}

/* Append n unless it is queued already or events are off. */
static void enqueue(struct rcci_event_queue *q, struct rcci_event_node *n)
{
	pthread_mutex_lock(&q->lock);
	if (q->fd >= 0 && !n->queued) {
		n->queued = true;
		n->next = NULL;
		if (q->tail)
			q->tail->next = n;
		else
			q->head = n;
		q->tail = n;
		signal_fd(q->fd);
	}
	pthread_mutex_unlock(&q->lock);
}

/* Unlink n (queued) from q; q->lock held. */
static void unlink_locked(struct rcci_event_queue *q, struct rcci_event_node *n)
{
	struct rcci_event_node *prev = NULL;

	for (struct rcci_event_node *e = q->head; e; prev = e, e = e->next) {
		if (e != n)
			continue;
		if (prev)
			prev->next = e->next;
		else
			q->head = e->next;
		if (q->tail == e)
			q->tail = prev;
		break;
	}
	n->queued = false;
	n->next = NULL;
	if (!q->head && q->fd >= 0)
		drain_fd(q->fd);
}

static void forget(struct rcci_event_queue *q, struct rcci_event_node *n)
{
	pthread_mutex_lock(&q->lock);
	if (n->queued)
		unlink_locked(q, n);
	pthread_mutex_unlock(&q->lock);
}

void rcci_ep_state_changed(struct rcc_ep *ep) { enqueue(&ep->ctx->events, &ep->event); }

void rcci_ep_left(struct rcc_ep *ep, int status, const char *why, bool replace)
{
	struct rcci_event_queue *q = &ep->ctx->events;

	pthread_mutex_lock(&q->lock);
	if (replace || !ep->left_why) {
		ep->left_status = status;
		ep->left_why = why;
	}
	pthread_mutex_unlock(&q->lock);
}

const char *rcc_ep_reason(const struct rcc_ep *ep, int *status)
{
	if (!ep)
		return NULL;
	struct rcci_event_queue *q = &ep->ctx->events;
	pthread_mutex_lock(&q->lock);
	const char *why = ep->left_why;
	if (why && status)
		*status = ep->left_status;
	pthread_mutex_unlock(&q->lock);
	return why;
}

void rcci_srq_limit_reached(struct rcc_srq *srq) { enqueue(&srq->ctx->events, &srq->event); }

void rcci_events_forget(struct rcc_ep *ep) { forget(&ep->ctx->events, &ep->event); }

void rcci_events_forget_srq(struct rcc_srq *srq) { forget(&srq->ctx->events, &srq->event); }

/* Turn events on (idempotent); q->lock held. */
static int enable_locked(struct rcci_event_queue *q)
{
	if (q->fd >= 0)
		return 0;
	q->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (q->fd < 0)
		return rcci_fail(-errno, "cannot create the event descriptor");
	return 0;
}

int rcci_events_enable(struct rcc_ctx *ctx)
{
	pthread_mutex_lock(&ctx->events.lock);
	int rc = enable_locked(&ctx->events);
	pthread_mutex_unlock(&ctx->events.lock);
	return rc;
}

int rcc_ctx_event_fd(struct rcc_ctx *ctx)
{
	if (!ctx)
		return -EINVAL;
	struct rcci_event_queue *q = &ctx->events;
	pthread_mutex_lock(&q->lock);
	int rc = enable_locked(q);
	int fd = q->fd;
	pthread_mutex_unlock(&q->lock);
	return rc ? rc : fd;
}

/* Take the oldest event; -EAGAIN when there is none. q->lock held. */
static int take_locked(struct rcci_event_queue *q, struct rcc_event *ev)
{
	struct rcci_event_node *n = q->head;

	if (!n)
		return -EAGAIN;
	unlink_locked(q, n);
	if (n->is_srq) {
		struct rcc_srq *srq = (struct rcc_srq *)(void *)((char *)n -
								 offsetof(struct rcc_srq, event));
		*ev = (struct rcc_event){ .type = RCC_EVENT_SRQ_LIMIT, .srq = srq };
		return 0;
	}
	struct rcc_ep *ep = (struct rcc_ep *)(void *)((char *)n - offsetof(struct rcc_ep, event));
	enum rcc_ep_state st = rcc_ep_state(ep);
	int status = rcci_connect_status(ep);
	enum rcc_event_type type = st == RCC_EP_CONNECTED ? RCC_EVENT_ESTABLISHED :
				   status                 ? RCC_EVENT_CONNECT_FAILED :
				   st == RCC_EP_ERROR     ? RCC_EVENT_ERROR :
							    RCC_EVENT_DISCONNECTED;
	/* out of service: why, as the transport said (q->lock guards it) */
	if (type == RCC_EVENT_ERROR || type == RCC_EVENT_DISCONNECTED)
		status = ep->left_why ? ep->left_status : (type == RCC_EVENT_ERROR ? -EIO : 0);
	*ev = (struct rcc_event){
		.type = type,
		.ep = ep,
		.context = rcc_ep_context(ep),
		.status = status,
	};
	return 0;
}

int rcc_ctx_get_event(struct rcc_ctx *ctx, struct rcc_event *ev, int timeout_ms)
{
	if (!ctx || !ev || timeout_ms < -1)
		return -EINVAL;
	struct rcci_event_queue *q = &ctx->events;
	uint64_t deadline = rcci_deadline(timeout_ms);
	int rc;

	for (;;) {
		pthread_mutex_lock(&q->lock);
		rc = enable_locked(q);
		if (!rc)
			rc = take_locked(q, ev);
		int fd = q->fd;
		pthread_mutex_unlock(&q->lock);
		if (rc != -EAGAIN)
			return rc;
		int left = rcci_ms_left(deadline);
		if (left == 0)
			return -ETIMEDOUT;
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		if (poll(&pfd, 1, left) < 0 && errno != EINTR)
			return -errno;
	}
}
