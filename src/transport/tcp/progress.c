/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The progress thread: one per context. It moves the bytes of every endpoint
 * the application is not polling, so one-sided operations complete at a
 * target that never calls the library, RNR backoffs expire, and blocked
 * sockets drain. Endpoints whose CQ is being polled or waited on are
 * "parked": their input is left to the application's thread, checked again
 * every tick.
 */
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/env.h"
#include "base/log.h"
#include "base/thread.h"
#include "tcp.h"

#define TICK_NS 1000000ull /* 1 ms: how long a parked endpoint waits at most */

/*
 * Has the application polled a CQ of this endpoint since we last looked? A
 * thread that polls, or sleeps in rcc_cq_wait() between polls, watches the
 * endpoint's socket itself (cq.c); on shared memory it arms the ring before
 * it sleeps, so the peer's doorbell wakes it (docs/shm.md, "Wake-ups"). An
 * FD-mode CQ counts for a shared-memory endpoint only once its application
 * called rcc_cq_arm(): before, it may sleep in its own epoll on rcc_cq_fd()
 * without arming any ring.
 */
static bool user_driving(struct tcp_ep *ep)
{
	struct rcc_cq *cqs[2] = { ep->base.send_cq, ep->base.recv_cq };
	bool driving = false;

	for (int i = 0; i < 2; i++) {
		if (ep->base.on_shm && !rcci_cq_minds_shm(tcq(cqs[i])))
			continue;
		unsigned p = atomic_load_explicit(&tcq(cqs[i])->polls, memory_order_relaxed);
		if (p != ep->seen_polls[i]) {
			ep->seen_polls[i] = p;
			driving = true;
		}
	}
	return driving;
}

static void set_parked(struct tcp_ctx *ctx, struct tcp_ep *ep, bool on)
{
	if (atomic_exchange(&ep->parked, on) == on)
		return;
	atomic_fetch_add(&ctx->parked, on ? 1 : -1);
	rcci_ep_update_events(ep);
}

/* Unpark endpoints nobody polls any more; serve kicks and due timers (on a
 * tick, or at once with timers) and held failures (on a tick); on a
 * heartbeat pass (hb) visit every connected endpoint. */
static void walk(struct tcp_ctx *ctx, bool tick, bool hb, bool timers)
{
	pthread_mutex_lock(&ctx->eps_lock);
	for (struct tcp_ep *ep = ctx->eps; ep; ep = ep->next) {
		/* An endpoint of an overrun CQ must fail even if nothing else moves. */
		bool serving = atomic_load(&ep->base.state) == RCC_EP_CONNECTED;
		bool due = atomic_load(&ep->kick) || (serving && (hb || rcci_cq_overran(ep)));
		if (tick) {
			bool parked = atomic_load(&ep->parked);
			bool driving = parked && user_driving(ep);
			if (parked && !driving) {
				set_parked(ctx, ep, false);
				due = true;
			}
			/* A deferred ack or an RNR backoff of an endpoint the application
			 * is polling is handled by its next poll: no fight over its locks. */
			if (atomic_load(&ep->thread_timer) && !driving)
				due = true;
		}
		if (timers && atomic_load(&ep->thread_timer))
			due = true;
		if (tick && atomic_load(&ep->fail_held))
			rcci_ep_fail_held(ep);
		if (due)
			rcci_ep_progress(ep, false);
	}
	pthread_mutex_unlock(&ctx->eps_lock);
}

/*
 * Endpoints on shared memory have no readiness on their socket while bytes
 * flow (the doorbell rings only for a sleeper): serve every one the
 * application is not polling whose ring has input or room for a blocked
 * transmit. With arm, first announce that this thread is about to sleep (a
 * producer then rings): returns whether one of them was served.
 */
static bool shm_sweep(struct tcp_ctx *ctx, bool arm)
{
	bool moved = false;

	if (atomic_load_explicit(&ctx->nshm, memory_order_relaxed) == 0)
		return false;
	pthread_mutex_lock(&ctx->eps_lock);
	for (struct tcp_ep *ep = ctx->eps; ep; ep = ep->next) {
		if (!ep->base.on_shm || atomic_load(&ep->parked) ||
		    atomic_load_explicit(&ep->link, memory_order_relaxed) == LINK_DOWN)
			continue;
		if (arm ? rcci_shm_stream_arm(ep) : rcci_shm_stream_ready(ep)) {
			rcci_ep_progress(ep, false);
			moved = true;
		}
	}
	pthread_mutex_unlock(&ctx->eps_lock);
	return moved;
}

static void *progress_main(void *arg)
{
	struct tcp_ctx *ctx = arg;
	struct epoll_event evs[64];
	uint64_t next_tick = 0, spin_until = 0, next_hb = 0;
	bool one_cpu = rcci_thread_on_one_cpu(), spin_for_socket = false;

	while (!atomic_load(&ctx->stop)) {
		bool timed = atomic_load(&ctx->parked) > 0 || atomic_load(&ctx->timers) > 0 ||
			     atomic_load(&ctx->held_fails) > 0;
		uint64_t hb_ns = atomic_load_explicit(&ctx->hb_ns, memory_order_relaxed);
		uint64_t before = rcc_now_ns();
		if (hb_ns && (!next_hb || next_hb > before + hb_ns))
			next_hb = before + hb_ns; /* first endpoint, or a shorter period */
		/* Right after moving bytes, look again for a moment before sleeping:
		 * back-to-back requests at a passive target then never pay a wake-up
		 * (a NIC never sleeps at all). */
		int timeout = before < spin_until ? 0 : (timed ? 1 : -1);
		if (timeout && next_hb) {
			uint64_t ms = next_hb > before ? (next_hb - before + 999999) / 1000000 : 0;
			if (timeout < 0 || ms < (uint64_t)timeout)
				timeout = (int)ms;
		}
		bool moved = shm_sweep(ctx, timeout != 0);
		if (moved)
			timeout = 0;
		else if (timeout == 0 && one_cpu && !spin_for_socket)
			/* Spinning after shared-memory work on the one CPU this
			 * process may use: the application's threads there go first
			 * (a thread copying a mapped WRITE while we read its acks:
			 * our spin took a quarter of its CPU). The look comes as
			 * soon as they let go. Not after socket work: there the
			 * look is what moves the kernel's bytes on, and yielding to
			 * a thread that spins on its CQ cost a fifth of tcp's
			 * bandwidth. With a CPU of its own the spin stays a spin. */
			sched_yield();
		int n = epoll_wait(ctx->epfd, evs, 64, timeout);
		bool kicked = false, socket_moved = false;

		for (int i = 0; i < n; i++) {
			struct tcp_ep *ep = evs[i].data.ptr;
			uint32_t e = evs[i].events;
			if (!ep) {
				uint64_t v;
				if (read(ctx->wakefd, &v, sizeof(v)) < 0 && errno != EAGAIN)
					log_debug("progress: wake read: %s", rcc_strerror(-errno));
				kicked = true;
				continue;
			}
			/* Input for an endpoint the application is polling: leave it to them. */
			if ((e & EPOLLIN) && !(e & (EPOLLERR | EPOLLHUP | EPOLLRDHUP)) &&
			    user_driving(ep)) {
				set_parked(ctx, ep, true);
				if (!(e & EPOLLOUT))
					continue;
			}
			rcci_ep_progress(ep, false);
			moved = true;
			if (!ep->base.on_shm)
				socket_moved = true;
		}
		uint64_t now = rcc_now_ns();
		if (moved) {
			spin_until = now + ctx->spin_ns;
			spin_for_socket = socket_moved;
		}
		bool tick = now >= next_tick;
		if (tick) {
			next_tick = now + TICK_NS;
			one_cpu = rcci_thread_on_one_cpu(); /* the mask may change */
		}
		bool hb = next_hb && now >= next_hb;
		if (hb)
			next_hb = now + hb_ns;
		bool timers = atomic_exchange(&ctx->timers_due, false);
		if (kicked || tick || hb || timers)
			walk(ctx, tick, hb, timers);

		pthread_mutex_lock(&ctx->eps_lock);
		ctx->pass_seq++;
		pthread_cond_broadcast(&ctx->pass_cond);
		pthread_mutex_unlock(&ctx->eps_lock);
	}
	return NULL;
}

void rcci_progress_wake(struct tcp_ctx *ctx)
{
	uint64_t one = 1;
	if (write(ctx->wakefd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_debug("progress: wake write: %s", rcc_strerror(-errno));
}

/*
 * How many endpoints' acks this thread deferred (rcci_progress_deferred_ack)
 * since it last went to sleep and has not sent itself since, with a post
 * the ack rode on or a pass that sent it (rcci_progress_ack_sent). Per
 * thread, because the promise behind a deferred ack -- "my next poll sends
 * it" -- is the deferring thread's: another thread's sleep does not break
 * it. Counted rather than a flag: a client thread defers the ack of each
 * reply, and its next request carries it; a flag stayed set past that, so
 * its sleep woke the progress thread whenever some other thread's endpoint
 * owed an ack, which it then sent alone, waking the peer too (kv, 8 client
 * threads on tcp: 0.13-0.17 eventfd writes per operation). An ack another
 * thread sent stays counted here (a wake-up for nothing, as before). The
 * endpoint's mark (tx_lock) names the deferring thread, by the address of
 * its count, and the thread's sleep (epoch) it was counted in: a mark of an
 * earlier epoch was forgotten by a sleep, and counts again.
 */
static RCCI_THREAD_HOT struct {
	unsigned count;
	uint32_t epoch;
} deferred_here;

void rcci_progress_deferred_ack(struct tcp_ep *ep)
{
	if (ep->ack_deferrer == &deferred_here && ep->ack_epoch == deferred_here.epoch)
		return; /* counted already */
	ep->ack_deferrer = &deferred_here;
	ep->ack_epoch = deferred_here.epoch;
	deferred_here.count++;
}

void rcci_progress_ack_sent(struct tcp_ep *ep)
{
	/* A thread's TLS address can be a later thread's: never below zero
	 * (the worst then is an ack left to the tick). */
	if (ep->ack_deferrer == &deferred_here && ep->ack_epoch == deferred_here.epoch &&
	    deferred_here.count)
		deferred_here.count--;
	ep->ack_deferrer = NULL;
}

bool rcci_progress_deferred_here(void) { return deferred_here.count != 0; }

/*
 * An application thread is about to sleep. An ack it deferred -- waiting for
 * the reply it would ride on -- was meant for its next poll of the
 * endpoint's CQ; if it sleeps on another CQ it will not make it, and the
 * peer's send completion must not wait for our next tick. Only the
 * sleeper's own deferrals count: an ack another thread deferred rides on
 * that thread's next post or poll, and waking this thread for it (then
 * sending it alone, waking the peer too) cost one or two wake-ups per
 * operation with several client threads (bench/server-load.sh, 8 clients
 * on tcp: 0.27 eventfd writes per operation, from this call).
 */
void rcci_progress_serve_timers(struct tcp_ctx *ctx)
{
	if (!deferred_here.count)
		return;
	deferred_here.count = 0;
	deferred_here.epoch++;
	if (atomic_load_explicit(&ctx->timers, memory_order_relaxed) == 0)
		return;
	atomic_store(&ctx->timers_due, true);
	rcci_progress_wake(ctx);
}

void rcci_progress_kick(struct tcp_ep *ep)
{
	atomic_store(&ep->kick, true);
	rcci_progress_wake(ep->ctx);
}

void rcci_progress_hb_at_most(struct tcp_ctx *ctx, uint64_t ns)
{
	unsigned long long cur = atomic_load(&ctx->hb_ns);

	while ((cur == 0 || ns < cur) && !atomic_compare_exchange_weak(&ctx->hb_ns, &cur, ns))
		;
	if (cur == 0 || ns < cur)
		rcci_progress_wake(ctx); /* it may be asleep on the old period */
}

void rcci_progress_timer(struct tcp_ep *ep, bool on)
{
	if (atomic_exchange(&ep->thread_timer, on) == on)
		return;
	int before = atomic_fetch_add(&ep->ctx->timers, on ? 1 : -1);
	/* Wake the thread only if it may be sleeping without a tick. */
	if (on && before == 0 && atomic_load(&ep->ctx->parked) == 0)
		rcci_progress_wake(ep->ctx);
}

int rcci_progress_add(struct tcp_ctx *ctx, struct tcp_ep *ep)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP, .data.ptr = ep };

	ep->seen_polls[0] = atomic_load(&tcq(ep->base.send_cq)->polls);
	ep->seen_polls[1] = atomic_load(&tcq(ep->base.recv_cq)->polls);
	pthread_mutex_lock(&ctx->eps_lock);
	ep->prev = NULL;
	ep->next = ctx->eps;
	if (ctx->eps)
		ctx->eps->prev = ep;
	ctx->eps = ep;
	pthread_mutex_unlock(&ctx->eps_lock);

	pthread_mutex_lock(&ep->ev_lock);
	int rc = epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, ep->fd, &ev) ? -errno : 0;
	if (!rc)
		ep->ev_mask = ev.events;
	pthread_mutex_unlock(&ep->ev_lock);
	if (rc)
		rcci_progress_remove(ctx, ep);
	return rc;
}

void rcci_progress_remove(struct tcp_ctx *ctx, struct tcp_ep *ep)
{
	pthread_mutex_lock(&ep->ev_lock);
	ep->removed = true;
	pthread_mutex_unlock(&ep->ev_lock);
	rcci_ep_update_events(ep);

	pthread_mutex_lock(&ctx->eps_lock);
	if (ep->prev)
		ep->prev->next = ep->next;
	else if (ctx->eps == ep)
		ctx->eps = ep->next;
	if (ep->next)
		ep->next->prev = ep->prev;
	ep->next = ep->prev = NULL;
	/* A pass that began before the removal may still hold ep: wait it out. */
	uint64_t seen = ctx->pass_seq;
	pthread_mutex_unlock(&ctx->eps_lock);
	rcci_progress_wake(ctx);
	pthread_mutex_lock(&ctx->eps_lock);
	while (ctx->pass_seq == seen)
		pthread_cond_wait(&ctx->pass_cond, &ctx->eps_lock);
	pthread_mutex_unlock(&ctx->eps_lock);

	if (atomic_exchange(&ep->parked, false))
		atomic_fetch_sub(&ctx->parked, 1);
	rcci_progress_timer(ep, false);
}

int rcci_progress_start(struct tcp_ctx *ctx)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	int rc;

	unsigned long spin_us = TCP_SPIN_US_DEFAULT; /* kept when unset or refused */
	if (rcci_env_ulong("RCC_TCP_SPIN_US", 0, TCP_SPIN_US_MAX, &spin_us) == -EINVAL)
		log_warn("RCC_TCP_SPIN_US=%s is not 0..%d microseconds: using %d",
			 getenv("RCC_TCP_SPIN_US"), TCP_SPIN_US_MAX, TCP_SPIN_US_DEFAULT);
	ctx->spin_ns = spin_us * 1000ull;
	atomic_init(&ctx->stop, false);
	atomic_init(&ctx->parked, 0);
	atomic_init(&ctx->timers, 0);
	atomic_init(&ctx->held_fails, 0);
	atomic_init(&ctx->timers_due, false);
	atomic_init(&ctx->hb_ns, 0);
	atomic_init(&ctx->nshm, 0);
	ctx->eps = NULL;
	ctx->pass_seq = 0;
	ctx->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (ctx->epfd < 0)
		return -errno;
	ctx->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (ctx->wakefd < 0) {
		rc = -errno;
		goto err_epfd;
	}
	if (epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, ctx->wakefd, &ev)) {
		rc = -errno;
		goto err_wakefd;
	}
	pthread_mutex_init(&ctx->eps_lock, NULL);
	pthread_cond_init(&ctx->pass_cond, NULL);
	rc = rcci_thread_create(&ctx->thread, progress_main, ctx);
	if (rc)
		goto err_sync;
	return 0;

err_sync:
	pthread_cond_destroy(&ctx->pass_cond);
	pthread_mutex_destroy(&ctx->eps_lock);
err_wakefd:
	close(ctx->wakefd);
err_epfd:
	close(ctx->epfd);
	return rc;
}

void rcci_progress_stop(struct tcp_ctx *ctx)
{
	atomic_store(&ctx->stop, true);
	rcci_progress_wake(ctx);
	pthread_join(ctx->thread, NULL);
	pthread_cond_destroy(&ctx->pass_cond);
	pthread_mutex_destroy(&ctx->eps_lock);
	close(ctx->wakefd);
	close(ctx->epfd);
}
