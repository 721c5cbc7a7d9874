/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completion queues: a ring of exactly the requested depth under a mutex. In
 * every mode but POLL an eventfd is readable exactly while the ring holds
 * completions.
 *
 * Polling a CQ, in any mode, also moves the bytes of the endpoints that use
 * it, and a CQ that is being polled (or waited on) has its endpoints "parked"
 * by the progress thread, which then leaves their input alone. A thread that
 * sleeps in rcc_cq_wait() -- or an application's epoll on rcc_cq_fd() --
 * sleeps on `pepfd`, one epoll set holding the eventfd and the sockets of the
 * CQ's endpoints: the message that completes its work wakes it directly, and
 * it reads the socket itself, as a thread blocked in recv() would. One
 * wake-up per completion instead of two (progress thread, then the waiter).
 * A shared-memory endpoint's socket carries its doorbell: a thread that
 * sleeps in rcc_cq_wait() arms the ring first (so the peer rings), and its
 * next poll reads the doorbell and the ring itself (docs/shm.md, "Wake-ups").
 * An application's own epoll on an FD-mode CQ arms the rings only if it
 * calls rcc_cq_arm() before it sleeps: until its first call those
 * endpoints stay with the progress thread, their doorbells out of the set.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/log.h"
#include "base/sock.h"
#include "base/thread.h"
#include "tcp.h"

int rcci_tcp_cq_create(struct rcc_cq *base)
{
	struct tcp_cq *cq = tcq(base);
	int rc;

	cq->cap = tcp_pow2_at_least(base->depth, 16);
	cq->ring = calloc(cq->cap, sizeof(*cq->ring));
	if (!cq->ring)
		return -ENOMEM;
	cq->efd = -1;
	cq->pepfd = epoll_create1(EPOLL_CLOEXEC);
	if (cq->pepfd < 0) {
		rc = -errno;
		goto err_ring;
	}
	if (base->mode != RCC_CQ_POLL) {
		/* In the sleeping set as a NULL entry: completions queued by others. */
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
		cq->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (cq->efd < 0) {
			rc = -errno;
			goto err_pepfd;
		}
		if (epoll_ctl(cq->pepfd, EPOLL_CTL_ADD, cq->efd, &ev)) {
			rc = -errno;
			goto err_efd;
		}
	}
	rcci_lock_init(&cq->lock);
	rcci_lock_init(&cq->eps_lock);
	atomic_init(&cq->nready, 0);
	atomic_init(&cq->overrun, false);
	atomic_init(&cq->polls, 0);
	atomic_init(&cq->app_arms, false);
	return 0;

err_efd:
	close(cq->efd);
err_pepfd:
	close(cq->pepfd);
err_ring:
	free(cq->ring);
	return rc;
}

void rcci_tcp_cq_destroy(struct rcc_cq *base)
{
	struct tcp_cq *cq = tcq(base);

	close(cq->pepfd);
	if (cq->efd >= 0)
		close(cq->efd);
	free(cq->eps);
	free(cq->ring);
}

/*
 * The CQ whose poll this thread is inside (drive()), if any. A completion that
 * poll itself queues needs no eventfd write: the poller takes it on its way
 * out, and rcci_tcp_cq_poll() sets the eventfd only for what it leaves behind.
 * That saves a write and a read per completion when a waiter reads its own
 * socket.
 */
static RCCI_THREAD_HOT struct tcp_cq *driving_cq;

static void efd_set(struct tcp_cq *cq)
{
	uint64_t one = 1;
	if (cq->efd >= 0 && !cq->efd_set && write(cq->efd, &one, sizeof(one)) == sizeof(one))
		cq->efd_set = true;
}

static void efd_clear(struct tcp_cq *cq)
{
	uint64_t v;
	if (cq->efd_set && read(cq->efd, &v, sizeof(v)) == sizeof(v))
		cq->efd_set = false;
}

/*
 * The ring holds exactly base.depth completions. One more is lost, as a
 * device loses it, and the CQ is marked overrun: the progress thread then
 * fails every endpoint using it, so a program that lets its CQ overflow fails
 * here as it would on a NIC instead of passing on tcp only.
 */
void rcci_cq_push(struct tcp_cq *cq, const struct rcc_wc *wc, enum cqe_frees frees, uint32_t next)
{
	rcci_lock_acquire(&cq->lock);
	if (cq->count >= cq->base.depth) {
		if (!atomic_exchange(&cq->overrun, true))
			log_error("a CQ of depth %u overran (make it deeper): completions are "
				  "lost and its endpoints fail",
				  cq->base.depth);
		rcci_lock_release(&cq->lock);
		rcci_progress_wake(tctx(cq->base.ctx));
		return;
	}
	struct tcp_cqe *e = &cq->ring[(cq->head + cq->count) & (cq->cap - 1)];
	e->wc = *wc;
	e->frees = (uint8_t)frees;
	e->next = next;
	cq->count++;
	atomic_store_explicit(&cq->nready, cq->count, memory_order_release);
	if (driving_cq != cq)
		efd_set(cq);
	rcci_lock_release(&cq->lock);
}

bool rcci_cq_overran(const struct tcp_ep *ep)
{
	return atomic_load_explicit(&tcq(ep->base.send_cq)->overrun, memory_order_relaxed) ||
	       atomic_load_explicit(&tcq(ep->base.recv_cq)->overrun, memory_order_relaxed);
}

static int cq_pop(struct tcp_cq *cq, struct rcc_wc *wc, int max)
{
	uint32_t n;

	if (atomic_load_explicit(&cq->nready, memory_order_acquire) == 0)
		return 0;
	rcci_lock_acquire(&cq->lock);
	n = cq->count < (uint32_t)max ? cq->count : (uint32_t)max;
	for (uint32_t i = 0; i < n; i++) {
		const struct tcp_cqe *e = &cq->ring[(cq->head + i) & (cq->cap - 1)];
		wc[i] = e->wc;
		/* The endpoint is alive: close removes its entries under this lock. */
		struct tcp_ep *ep = tep(e->wc.ep);
		atomic_store_explicit(e->frees == FREES_SQ ? &ep->sq_free : &ep->rq_free, e->next,
				      memory_order_release);
		if (e->frees == FREES_RQ && ep->base.attr.srq)
			rcci_srq_slot_free(ep->base.attr.srq);
	}
	cq->head = (cq->head + n) & (cq->cap - 1);
	cq->count -= n;
	atomic_store_explicit(&cq->nready, cq->count, memory_order_release);
	if (cq->count == 0)
		efd_clear(cq);
	rcci_lock_release(&cq->lock);
	return (int)n;
}

void rcci_cq_forget_ep(struct tcp_cq *cq, struct rcc_ep *ep)
{
	uint32_t kept = 0;

	rcci_lock_acquire(&cq->lock);
	for (uint32_t i = 0; i < cq->count; i++) {
		struct tcp_cqe *w = &cq->ring[(cq->head + i) & (cq->cap - 1)];
		if (w->wc.ep != ep)
			cq->ring[(cq->head + kept++) & (cq->cap - 1)] = *w;
		else if (w->frees == FREES_RQ && ep->attr.srq)
			rcci_srq_slot_free(ep->attr.srq); /* never to be polled: its slot is free */
	}
	cq->count = kept;
	atomic_store_explicit(&cq->nready, cq->count, memory_order_release);
	if (cq->count == 0)
		efd_clear(cq);
	rcci_lock_release(&cq->lock);
}

/*
 * Watch ep's socket in cq's set. A shared-memory endpoint's socket carries
 * its doorbell, which wakes a sleeper that armed the ring (drive() finds its
 * input by looking at the ring); not in FD mode before rcc_cq_arm(), whose
 * set is also the application's rcc_cq_fd(): an application that does not
 * arm would not read a doorbell there either, which would keep the
 * descriptor readable (the progress thread reads it). Caller holds eps_lock.
 */
static int pep_add(struct tcp_cq *cq, struct tcp_ep *ep)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = ep };

	if (ep->base.on_shm && !rcci_cq_minds_shm(cq))
		return 0;
	if (epoll_ctl(cq->pepfd, EPOLL_CTL_ADD, ep->fd, &ev))
		return -errno;
	return 0;
}

/* ep's socket reached its end (or was shut down): it would stay readable for
 * ever, so it leaves the sets of its CQs (a sleeper would spin on it).
 * Idempotent; any thread. */
void rcci_cq_unwatch(struct tcp_ep *ep)
{
	if (atomic_exchange(&ep->cq_unwatched, true))
		return;
	epoll_ctl(tcq(ep->base.send_cq)->pepfd, EPOLL_CTL_DEL, ep->fd, NULL);
	if (ep->base.recv_cq != ep->base.send_cq)
		epoll_ctl(tcq(ep->base.recv_cq)->pepfd, EPOLL_CTL_DEL, ep->fd, NULL);
}

int rcci_cq_attach(struct tcp_cq *cq, struct tcp_ep *ep)
{
	int rc = 0;

	rcci_lock_acquire(&cq->eps_lock);
	for (int i = 0; i < cq->neps; i++)
		if (cq->eps[i] == ep)
			goto out; /* send CQ == recv CQ */
	if (cq->neps == cq->eps_cap) {
		int cap = cq->eps_cap ? cq->eps_cap * 2 : 4;
		struct tcp_ep **eps = realloc(cq->eps, (size_t)cap * sizeof(*eps));
		if (!eps) {
			rc = -ENOMEM;
			goto out;
		}
		cq->eps = eps;
		cq->eps_cap = cap;
	}
	rc = pep_add(cq, ep);
	if (rc)
		goto out;
	cq->eps[cq->neps++] = ep;
out:
	rcci_lock_release(&cq->eps_lock);
	return rc;
}

void rcci_cq_detach(struct tcp_cq *cq, struct tcp_ep *ep)
{
	rcci_lock_acquire(&cq->eps_lock);
	for (int i = 0; i < cq->neps; i++) {
		if (cq->eps[i] != ep)
			continue;
		epoll_ctl(cq->pepfd, EPOLL_CTL_DEL, ep->fd, NULL); /* ENOENT: unwatched */
		cq->eps[i] = cq->eps[--cq->neps];
		break;
	}
	rcci_lock_release(&cq->eps_lock);
}

/* Move the bytes of this CQ's endpoints from the polling thread. */
static void drive(struct tcp_cq *cq)
{
	struct epoll_event evs[32];

	if (!rcci_lock_try(&cq->eps_lock))
		return; /* another thread is driving this CQ right now */
	driving_cq = cq;
	if (cq->neps == 1) {
		/* A busy poller's empty poll on shared memory: no lock, no copy. */
		if (!cq->eps[0]->base.on_shm || !rcci_shm_stream_idle(cq->eps[0]))
			rcci_ep_progress(cq->eps[0], true);
	} else if (cq->neps > 1) {
		int n = epoll_wait(cq->pepfd, evs, 32, 0);
		bool bells_in_set = rcci_cq_minds_shm(cq);
		for (int i = 0; i < n; i++) {
			struct tcp_ep *ep = evs[i].data.ptr; /* NULL: the eventfd */
			if (!ep)
				continue;
			/* A shared-memory socket in the set is readable: a doorbell
			 * (or the peer's end) for this pass to read. */
			if (ep->base.on_shm)
				atomic_store_explicit(&ep->user_bell, true, memory_order_relaxed);
			rcci_ep_progress(ep, true);
		}
		/* Work that waits for a poll rather than for input (posts left to
		 * be sent together, an ack owed, an RNR backoff, a socket
		 * transmit that blocked: a parked endpoint of a POLL-mode CQ is
		 * not watched for room, ep.c) has no readiness to report: look
		 * for it. A few relaxed loads per endpoint. One just
		 * progressed above is left alone: the ack it owes for what it just
		 * received should ride on the application's reply, not go alone.
		 * On shared memory: input in the ring; and, when the doorbells are
		 * outside the set (an FD-mode CQ never armed by the application:
		 * its rcc_cq_wait() sleeps on them apart), a doorbell a sleeper of
		 * ours armed: read it, or the next sleep would wake at once on it,
		 * again and again. In the set, the epoll above named the rung ones:
		 * reading every armed endpoint's socket instead cost a server of
		 * 64 connections 64 empty recv() calls after each sleep. */
		for (int i = 0; i < cq->neps; i++) {
			struct tcp_ep *ep = cq->eps[i];
			if (!atomic_load_explicit(&ep->tx_deferred, memory_order_relaxed) &&
			    !atomic_load_explicit(&ep->thread_timer, memory_order_relaxed) &&
			    !(!ep->base.on_shm &&
			      atomic_load_explicit(&ep->want_out, memory_order_relaxed)) &&
			    !(ep->base.on_shm &&
			      (rcci_shm_stream_ready(ep) ||
			       (!bells_in_set &&
				atomic_load_explicit(&ep->user_bell, memory_order_relaxed)))))
				continue;
			bool just_done = false;
			for (int k = 0; k < n && !just_done; k++)
				just_done = evs[k].data.ptr == ep;
			if (!just_done)
				rcci_ep_progress(ep, true);
		}
	}
	driving_cq = NULL;
	rcci_lock_release(&cq->eps_lock);
}

/* Doorbells an FD-mode waiter watches itself, beyond the CQ's set. */
#define SLEEP_SHM_MAX 32

/*
 * rcc_cq_wait() or rcc_cq_arm() is about to sleep on this CQ: on the ring
 * of each shared-memory endpoint, say that its consumer sleeps -- the peer's
 * next write then rings the doorbell -- and have the next poll read that
 * doorbell. Dekker (shm_ring.c): the flag, a full fence, then a look at the
 * ring; bytes that were there already rang no bell. What we sleep on must
 * hold the doorbell: the CQ's set does once it minds its shared-memory
 * endpoints; before that (an FD-mode CQ never armed by the application) the
 * sockets are added to p from *np on, as many as fit (one that does not is
 * left unarmed, to the progress thread, which serves those endpoints
 * anyway). Returns whether some endpoint has work now (input, or room for a
 * blocked transmit): then do not sleep. Caller holds eps_lock, so each
 * endpoint is still attached.
 */
static bool arm_shm_eps(struct tcp_cq *cq, struct pollfd *p, int *np)
{
	bool ready = false;

	for (int i = 0; i < cq->neps; i++) {
		struct tcp_ep *ep = cq->eps[i];
		if (!ep->base.on_shm ||
		    atomic_load_explicit(&ep->cq_unwatched, memory_order_relaxed))
			continue;
		if (!rcci_cq_minds_shm(cq)) {
			if (*np > SLEEP_SHM_MAX)
				continue;
			p[(*np)++] = (struct pollfd){ .fd = ep->fd, .events = POLLIN };
		}
		atomic_store_explicit(&ep->user_bell, true, memory_order_relaxed);
		if (rcci_shm_stream_arm(ep))
			ready = true;
	}
	return ready;
}

/*
 * Tell the progress thread this CQ's endpoints are being looked after (it
 * parks them while the count moves; see progress.c). It only asks "has it
 * changed": no read-modify-write. Counted before the CQ is looked at: a
 * poller whose every poll found a completion the thread had queued would
 * otherwise never show, and leave its endpoint to the thread for good -- a
 * hand-over between threads per message.
 */
static inline void note_poll(struct tcp_cq *cq)
{
	atomic_store_explicit(&cq->polls,
			      atomic_load_explicit(&cq->polls, memory_order_relaxed) + 1,
			      memory_order_relaxed);
}

int rcci_tcp_cq_poll(struct rcc_cq *base, struct rcc_wc *wc, int max)
{
	struct tcp_cq *cq = tcq(base);

	note_poll(cq);
	int n = cq_pop(cq, wc, max);

	if (n)
		return n;
	drive(cq);
	n = cq_pop(cq, wc, max);
	/* What drive() queued without the eventfd and this poll leaves behind
	 * must wake another waiter (or the application's epoll). */
	if (cq->efd >= 0 && atomic_load_explicit(&cq->nready, memory_order_acquire)) {
		rcci_lock_acquire(&cq->lock);
		if (cq->count)
			efd_set(cq);
		rcci_lock_release(&cq->lock);
	}
	return n;
}

/*
 * rcc_cq_wait()'s look before it sleeps: the completions queued, and
 * nothing read from a socket. A socket with input makes the sleep's poll()
 * return at once and the poll after it reads it; reading it here as well
 * cost a waiter an empty recv() per wait (the message it waits for is
 * seldom there the moment it starts waiting: it usually just posted the
 * request). Work that waits for a poll rather than for input (a post left
 * for the next poll, an ack or RNR timer) or input already in a ring makes
 * it a whole poll, as does another thread driving the CQ right now.
 */
int rcci_tcp_cq_poll_before_sleep(struct rcc_cq *base, struct rcc_wc *wc, int max)
{
	struct tcp_cq *cq = tcq(base);
	bool owed = false;

	note_poll(cq);
	int n = cq_pop(cq, wc, max);
	if (n)
		return n;
	if (!rcci_lock_try(&cq->eps_lock))
		return rcci_tcp_cq_poll(base, wc, max);
	for (int i = 0; i < cq->neps && !owed; i++) {
		struct tcp_ep *ep = cq->eps[i];
		owed = atomic_load_explicit(&ep->tx_deferred, memory_order_relaxed) ||
		       atomic_load_explicit(&ep->thread_timer, memory_order_relaxed) ||
		       (ep->base.on_shm && rcci_shm_stream_ready(ep));
	}
	rcci_lock_release(&cq->eps_lock);
	return owed ? rcci_tcp_cq_poll(base, wc, max) : 0;
}

/*
 * rcc_cq_wait()'s sleep. With one endpoint (the usual client) it sleeps on
 * the socket and the eventfd directly: a wake-up through the epoll set costs
 * the kernel a second, nested wake-up. The descriptor is read under eps_lock,
 * so it is the endpoint's while we look; should the endpoint close while we
 * sleep, poll() reports that descriptor (POLLNVAL) and we wake. Rings of
 * shared-memory endpoints are armed first; one with work already returns at
 * once (the caller polls again).
 */
int rcci_tcp_cq_sleep(struct rcc_cq *base, uint64_t deadline)
{
	struct tcp_cq *cq = tcq(base);
	struct pollfd p[1 + SLEEP_SHM_MAX] = { { .fd = cq->pepfd, .events = POLLIN } };
	int np = 1;

	rcci_lock_acquire(&cq->eps_lock);
	bool ready = atomic_load_explicit(&tctx(base->ctx)->nshm, memory_order_relaxed) &&
		     arm_shm_eps(cq, p, &np);
	if (cq->neps == 1 &&
	    !atomic_load_explicit(&cq->eps[0]->cq_unwatched, memory_order_relaxed)) {
		p[0].fd = cq->efd;
		p[1] = (struct pollfd){ .fd = cq->eps[0]->fd, .events = POLLIN };
		np = 2;
	}
	rcci_lock_release(&cq->eps_lock);
	if (ready)
		return 0;
	rcci_progress_serve_timers(tctx(base->ctx));
	return rcci_poll_until(p, (unsigned)np, deadline);
}

/*
 * The application's first rcc_cq_arm(): from now on it arms before it sleeps
 * on pepfd, so the doorbells of the shared-memory endpoints join the set
 * (pep_add adds those attached later) and the CQ counts for parking them.
 * All or nothing: a failure takes out the ones this call added.
 */
static int mind_shm(struct tcp_cq *cq)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int i, rc = 0;

	for (i = 0; i < cq->neps; i++) {
		struct tcp_ep *ep = cq->eps[i];
		if (!ep->base.on_shm)
			continue;
		ev.data.ptr = ep;
		/* An unwatched socket stays out: it is at its end, readable for ever. */
		if (atomic_load_explicit(&ep->cq_unwatched, memory_order_relaxed))
			continue;
		if (epoll_ctl(cq->pepfd, EPOLL_CTL_ADD, ep->fd, &ev)) {
			rc = -errno;
			break;
		}
		/* rcci_cq_unwatch() may have run between the look and the add
		 * (its flag, then its delete): look again, or the end stays in. */
		if (atomic_load(&ep->cq_unwatched))
			epoll_ctl(cq->pepfd, EPOLL_CTL_DEL, ep->fd, NULL);
	}
	if (rc) {
		while (i-- > 0)
			if (cq->eps[i]->base.on_shm)
				epoll_ctl(cq->pepfd, EPOLL_CTL_DEL, cq->eps[i]->fd, NULL);
		return rc;
	}
	atomic_store_explicit(&cq->app_arms, true, memory_order_relaxed);
	return 0;
}

/*
 * rcc_cq_arm(): what rcci_tcp_cq_sleep does before it sleeps, for a thread
 * that sleeps in its own epoll on pepfd. Completions already queued, or
 * input a ring already holds, mean "poll first". A completion queued after
 * the first look sets the eventfd (rcci_cq_push: this thread is not inside
 * a poll), which is in the set.
 */
int rcci_tcp_cq_arm(struct rcc_cq *base)
{
	struct tcp_cq *cq = tcq(base);
	int rc = 0;

	if (atomic_load_explicit(&cq->nready, memory_order_acquire))
		return 1;
	rcci_lock_acquire(&cq->eps_lock);
	if (!atomic_load_explicit(&cq->app_arms, memory_order_relaxed))
		rc = mind_shm(cq);
	bool ready = !rc && atomic_load_explicit(&tctx(base->ctx)->nshm, memory_order_relaxed) &&
		     arm_shm_eps(cq, NULL, NULL);
	rcci_lock_release(&cq->eps_lock);
	if (rc)
		return rc;
	if (ready)
		return 1;
	rcci_progress_serve_timers(tctx(base->ctx));
	return 0;
}

/* What rcc_cq_wait() sleeps on and rcc_cq_fd() returns: the set of the
 * eventfd and the endpoints' sockets (see the top of this file). */
int rcci_tcp_cq_fd(struct rcc_cq *base)
{
	return base->mode == RCC_CQ_POLL ? -EINVAL : tcq(base)->pepfd;
}
