/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Endpoint lifecycle: start on a connected socket, move bytes, leave service
 * (flushing every outstanding work request), close.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/sock.h"
#include "shm_region.h"
#include "tcp.h"

/* Read at most this much per pass, so one busy endpoint cannot starve others. */
#define RX_BUDGET (4u << 20)
/* Acknowledge at least this often while requests keep streaming in. */
#define ACK_EVERY_MSGS 16u
#define ACK_EVERY_BYTES (256u * 1024u)

static void set_sockopts(struct tcp_ep *ep)
{
	int one = 1;
	unsigned user_timeout = ep->base.attr.peer_timeout_ms;

	setsockopt(ep->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* Bytes the peer's host does not acknowledge within the peer timeout end
	 * the connection too; an idle connection is watched by our heartbeats
	 * (see rcci_ep_progress), which TCP keepalive could not do for a frozen peer. */
	setsockopt(ep->fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, sizeof(user_timeout));
}

uint64_t rcci_ep_hb_period_ns(const struct tcp_ep *ep)
{
	uint64_t t = ep->peer_timeout_ns;
	uint64_t peer = (uint64_t)atomic_load_explicit(&ep->peer_wants_ms, memory_order_relaxed) *
			1000000ull;

	if (peer && peer < t)
		t = peer;
	t /= TCP_HB_PER_TIMEOUT;
	return t < TCP_HB_MIN_NS ? TCP_HB_MIN_NS : t;
}

static void free_queues(struct tcp_ep *ep)
{
	free(ep->sq);
	free(ep->sq_sge);
	free(ep->sq_inline);
	free(ep->resp);
	free(ep->rq);
	free(ep->rq_sge);
	free(ep->rxbuf);
	free(ep->bounce);
	ep->sq = NULL;
	ep->sq_sge = NULL;
	ep->sq_inline = NULL;
	ep->resp = NULL;
	ep->rq = NULL;
	ep->rq_sge = NULL;
	ep->rxbuf = NULL;
	ep->bounce = NULL;
}

static int alloc_queues(struct tcp_ep *ep)
{
	const struct rcc_ep_attr *a = &ep->base.attr;
	uint32_t sq_cap = tcp_pow2_at_least(a->sq_depth, 1);
	uint32_t rq_cap = tcp_pow2_at_least(a->rq_depth, 1);
	uint32_t resp_cap = tcp_pow2_at_least(a->max_rd_atomic + 2, 1);

	ep->sq = calloc(sq_cap, sizeof(*ep->sq));
	ep->sq_sge = calloc((size_t)sq_cap * a->max_send_sge, sizeof(*ep->sq_sge));
	ep->sq_inline = malloc((size_t)sq_cap * ep->base.max_inline + 1);
	ep->resp = calloc(resp_cap, sizeof(*ep->resp));
	ep->rq = calloc(rq_cap, sizeof(*ep->rq));
	ep->rq_sge = calloc((size_t)rq_cap * a->max_recv_sge, sizeof(*ep->rq_sge));
	ep->rxbuf = malloc(TCP_RXBUF_SIZE);
	if (!ep->sq || !ep->sq_sge || !ep->sq_inline || !ep->resp || !ep->rq || !ep->rq_sge ||
	    !ep->rxbuf) {
		free_queues(ep);
		return -ENOMEM;
	}
	ep->sq_mask = sq_cap - 1;
	ep->rq_mask = rq_cap - 1;
	ep->resp_mask = resp_cap - 1;
	return 0;
}

int rcci_tcp_ep_start(struct tcp_ep *ep, int fd, uint32_t peer_rd_max, struct shm_ring *shm)
{
	struct rcc_ep *b = &ep->base;
	int rc;

	ep->ctx = tctx(b->ctx);
	ep->fd = fd;
	b->max_inline = b->attr.max_inline ? b->attr.max_inline : TCP_DEFAULT_INLINE;
	if (b->max_inline > TCP_MAX_INLINE)
		return -EINVAL;
	ep->rd_max = b->attr.max_rd_atomic < peer_rd_max ? b->attr.max_rd_atomic : peer_rd_max;
	rc = alloc_queues(ep);
	if (rc)
		return rc;
	rcci_lock_init(&ep->tx_lock);
	rcci_lock_init(&ep->rx_lock);
	rcci_lock_init(&ep->rq_lock);
	pthread_mutex_init(&ep->ev_lock, NULL);
	atomic_init(&ep->link, LINK_UP);
	atomic_init(&ep->rx_expected, 0);
	atomic_init(&ep->unacked_bytes, 0);
	atomic_init(&ep->parked, false);
	atomic_init(&ep->kick, false);
	atomic_init(&ep->want_out, false);
	atomic_init(&ep->tx_deferred, false);
	atomic_init(&ep->sq_free, 0);
	atomic_init(&ep->rq_free, 0);
	atomic_init(&ep->thread_timer, false);
	atomic_init(&ep->fail_held, false);
	atomic_init(&ep->cq_unwatched, false);
	atomic_init(&ep->user_bell, false);
	ep->peer_timeout_ns = (uint64_t)b->attr.peer_timeout_ms * 1000000ull;
	ep->last_tx_ns = rcci_coarse_now_ns();
	atomic_init(&ep->last_rx_ns, ep->last_tx_ns);
	atomic_init(&ep->peer_wants_ms, 0);
	if (!shm)
		set_sockopts(ep);
	if (shm) {
		ep->shm = *shm;
		/* A copier stuck longer than the peer timeout is dead or lying.
		 * Set before any other thread can see the endpoint: a failure
		 * the progress thread carries out reads them without cma_lock
		 * (the peer's CLOSE may come the moment the socket is watched,
		 * before rcci_cma_ep_start below). */
		ep->shm.cma.wait_ns = ep->peer_timeout_ns;
		ep->shm.mapped.wait_ns = ep->peer_timeout_ns;
		b->on_shm = true;
		/* Nobody watches the ring yet: the first bytes must ring the
		 * doorbell (the progress thread may be asleep already). */
		rcci_shm_ring_arm(&ep->shm);
		atomic_fetch_add(&ep->ctx->nshm, 1);
	}

	/* Receives first: the peer may send the moment it learns we are up. */
	if (b->attr.num_initial_recv) {
		rc = rcci_tcp_post_recv(b, b->attr.initial_recv, b->attr.num_initial_recv, NULL);
		if (rc)
			goto err_locks;
	}
	rc = rcci_cq_attach(tcq(b->send_cq), ep);
	if (rc)
		goto err_locks;
	rc = rcci_cq_attach(tcq(b->recv_cq), ep);
	if (rc)
		goto err_send_cq;
	rcci_progress_hb_at_most(ep->ctx, rcci_ep_hb_period_ns(ep));
	rc = rcci_progress_add(ep->ctx, ep);
	if (rc)
		goto err_recv_cq;
	/* The peer may have written before we watched the ring (its doorbell
	 * then waits in the socket, but the thread may sleep on the old set):
	 * a first pass over it now. */
	if (b->on_shm) {
		rcci_cma_ep_start(ep);
		rcci_progress_kick(ep);
	}
	return 0;

err_recv_cq:
	rcci_cq_detach(tcq(b->recv_cq), ep);
err_send_cq:
	rcci_cq_detach(tcq(b->send_cq), ep);
err_locks:
	if (b->on_shm) {
		atomic_fetch_sub(&ep->ctx->nshm, 1);
		b->on_shm = false;
	}
	pthread_mutex_destroy(&ep->ev_lock);
	free_queues(ep);
	return rc;
}

/* Shut the socket and stop watching it; nothing moves after this. */
static void link_down(struct tcp_ep *ep)
{
	if (atomic_exchange(&ep->link, LINK_DOWN) == LINK_DOWN)
		return;
	shutdown(ep->fd, SHUT_RDWR);
	rcci_ep_update_events(ep);
	rcci_cq_unwatch(ep);
}

/* A live peer leaves a copy within microseconds (a 1 MiB one takes about
 * 100): looking this long tells it from a stopped one before a failure is
 * held -- a bound in time, not in yields, which under load each give away
 * a time slice of the thread that fails it (the progress thread, a poller). */
#define FAIL_HOLD_LOOK_NS 200000u

/* rcci_ep_fail() without holding: may wait for cma_lock and the peer's
 * copies (at most the peer timeout each) unless withdrawn says the regions
 * were withdrawn already. Caller holds rx_lock. */
static void fail_now(struct tcp_ep *ep, const struct ep_failure *f, bool withdrawn)
{
	struct rcc_wc wc = { .ep = &ep->base };
	enum rcc_wc_status send_status = f->send_status, recv_status = f->recv_status;

	/* Mapped transfers: the peer can no longer copy into or out of our
	 * regions once anything below tells the application that the endpoint
	 * is out of service (a NIC takes no RDMA on a QP in error). */
	if (!withdrawn && ep->base.on_shm && atomic_load(&ep->base.state) == RCC_EP_CONNECTED)
		rcci_cma_ep_withdraw(ep, true, false);
	rcci_lock_acquire(&ep->tx_lock);
	if (atomic_load(&ep->base.state) != RCC_EP_CONNECTED) {
		rcci_lock_release(&ep->tx_lock);
		return;
	}
	if (f->st == RCC_EP_ERROR)
		log_info("%s: endpoint failed: %s", ep->base.peer, f->why);
	else
		log_debug("%s: disconnected: %s", ep->base.peer, f->why);
	rcci_ep_left(&ep->base, f->status, f->why, false);
	atomic_store_explicit(&ep->base.state, f->st, memory_order_release);
	rcci_ep_state_changed(&ep->base);

	/* The application may reuse memory once its request completes: a frame
	 * still half in the socket must not send from it any more. */
	if (ep->part_n && rcci_tx_own_partial(ep)) {
		ep->part_n = ep->part_i = 0; /* the stream cannot be finished: stop it */
		ep->tx_err = ENOMEM;
	}
	/* Single copy: once a request completes, the application may free or
	 * reuse its buffer; no copy by the peer may start or still run then. */
	rcci_cma_ep_quiesce(ep);
	/* Send queue: the failing request carries its status, the rest are flushed. */
	for (; ep->sq_head != ep->sq_tail; ep->sq_head++) {
		struct sq_wqe *w = &ep->sq[ep->sq_head & ep->sq_mask];
		if (w->cma) {
			rcci_shm_cma_release(&ep->shm.cma, w->cma - 1);
			w->cma = 0;
		}
		wc.wr_id = w->wr_id;
		wc.opcode = sq_wc_opcode(w->opcode);
		wc.byte_len = 0;
		wc.status = send_status != RCC_WC_SUCCESS ? send_status : RCC_WC_WR_FLUSH_ERR;
		send_status = RCC_WC_SUCCESS;
		rcci_cq_push(tcq(ep->base.send_cq), &wc, FREES_SQ, ep->sq_head + 1);
	}
	ep->sq_tx = ep->sq_tail;
	ep->rd_outstanding = 0;
	if (ep->rnr_wait) {
		ep->rnr_wait = false;
		rcci_progress_timer(ep, false);
	}
	/* What we owe a peer that is gone or that we are leaving is void; after an
	 * error the NAK that explains it still goes out first. */
	if (f->st == RCC_EP_DISCONNECTED)
		ep->resp_head = ep->resp_tail;
	/* (a held failure's caller may have taken the link down already) */
	int up = LINK_UP;
	atomic_compare_exchange_strong(&ep->link, &up, LINK_DRAINING);
	bool broken = ep->tx_err != 0;
	rcci_lock_release(&ep->tx_lock);

	rcci_lock_acquire(&ep->rq_lock);
	wc.opcode = RCC_WC_RECV;
	for (; ep->rq_head != ep->rq_tail; ep->rq_head++) {
		wc.wr_id = ep->rq[ep->rq_head & ep->rq_mask].wr_id;
		wc.status = recv_status != RCC_WC_SUCCESS ? recv_status : RCC_WC_WR_FLUSH_ERR;
		recv_status = RCC_WC_SUCCESS;
		rcci_cq_push(tcq(ep->base.recv_cq), &wc, FREES_RQ, ep->rq_head + 1);
	}
	rcci_lock_release(&ep->rq_lock);

	/* The buffers just completed must not receive another byte. */
	ep->rx_dest = DEST_DISCARD;
	ep->rx_in_msg = false;
	if (ep->rx_eof || broken)
		link_down(ep);
}

static void unhold(struct tcp_ep *ep)
{
	if (atomic_exchange(&ep->fail_held, false)) {
		atomic_fetch_sub(&ep->ctx->held_fails, 1);
		rcci_ep_update_events(ep);
	}
}

void rcci_ep_fail(struct tcp_ep *ep, enum rcc_ep_state st, int status,
		  enum rcc_wc_status send_status, enum rcc_wc_status recv_status, const char *why)
{
	struct ep_failure f = { st, status, send_status, recv_status, why, 0 };

	if (atomic_load(&ep->base.state) != RCC_EP_CONNECTED || atomic_load(&ep->fail_held))
		return; /* failed already, or the held failure comes first */
	if (ep->base.on_shm && (rcci_cma_ep_peer_copying(ep, FAIL_HOLD_LOOK_NS) ||
				!rcci_cma_ep_withdraw(ep, false, false))) {
		/* Stopped inside a copy (a debugger, SIGSTOP, a frozen host
		 * process), or a deregistration holding cma_lock while it waits
		 * for such a peer: whoever called must not wait for it -- the
		 * progress thread serves every other endpoint, a poller holds
		 * its CQ. */
		f.deadline_ns = rcci_coarse_now_ns() + ep->peer_timeout_ns;
		ep->held = f;
		atomic_store(&ep->fail_held, true);
		/* What arrives meanwhile is dropped (ep_serving), and nobody
		 * watches the socket: one left readable (the peer's end) would
		 * keep the progress thread or a waiter spinning. What the
		 * failure sends (a NAK, the CLOSE) goes when it is carried out. */
		rcci_ep_update_events(ep);
		rcci_cq_unwatch(ep);
		atomic_fetch_add(&ep->ctx->held_fails, 1);
		rcci_progress_wake(ep->ctx);
		log_debug("%s: failing (%s) once the peer is out of its copy", ep->base.peer, why);
		return;
	}
	fail_now(ep, &f, true);
}

void rcci_ep_fail_held(struct tcp_ep *ep)
{
	/* Busy: someone else is at it (rcc_ep_disconnect() may be waiting for
	 * the peer's copy with it held): the next tick looks again. */
	if (!rcci_lock_try(&ep->rx_lock))
		return;
	if (atomic_load(&ep->fail_held)) {
		bool late = rcci_coarse_now_ns() >= ep->held.deadline_ns;
		if ((late || !rcci_cma_ep_peer_copying(ep, 0)) &&
		    rcci_cma_ep_withdraw(ep, false, late)) {
			if (late)
				log_warn("%s: the peer stayed inside a copy past its timeout",
					 ep->base.peer);
			unhold(ep);
			fail_now(ep, &ep->held, true);
			/* A pass of the thread sends what the failure owes (a NAK,
			 * the CLOSE): nothing else may come to move it. */
			rcci_progress_kick(ep);
		}
	}
	rcci_lock_release(&ep->rx_lock);
}

void rcci_ep_progress(struct tcp_ep *ep, bool by_user)
{
	long got = 0;

	if (ep->ud) {
		rcci_ud_progress(ep, by_user);
		return;
	}
	if (atomic_load_explicit(&ep->link, memory_order_acquire) == LINK_DOWN)
		return;
	if (by_user) {
		if (!rcci_lock_try(&ep->rx_lock))
			return; /* the progress thread is on it */
	} else {
		rcci_lock_acquire(&ep->rx_lock);
	}
	bool kicked = atomic_exchange_explicit(&ep->kick, false, memory_order_relaxed);
	if (atomic_load(&ep->link) == LINK_DOWN)
		goto out;

	/* A CQ of ours lost a completion: fail as a device fails the QPs of an
	 * overrun CQ (the state says so; what is outstanding is flushed). */
	if (rcci_cq_overran(ep) && atomic_load(&ep->base.state) == RCC_EP_CONNECTED)
		rcci_ep_fail(ep, RCC_EP_ERROR, -EIO, RCC_WC_SUCCESS, RCC_WC_SUCCESS,
			     "its CQ overran");

	if (!ep->rx_eof) {
		/* On shared memory a busy poller never makes a system call: the
		 * socket (doorbells, the peer's end) is the progress thread's, and
		 * a waiter's once it armed the ring before sleeping on it. */
		ep->shm_sock = !by_user ||
			       (ep->base.on_shm && atomic_exchange_explicit(&ep->user_bell, false,
									    memory_order_relaxed));
		got = rcci_rx_process(ep, RX_BUDGET);
		if (got < 0) {
			if (got == -ECONNRESET || got == -EPIPE) {
				ep->rx_eof = true;
				rcci_ep_fail(ep, RCC_EP_DISCONNECTED, -ECONNRESET, RCC_WC_SUCCESS,
					     RCC_WC_SUCCESS, "the peer closed the connection");
			} else if (got == -EPROTO) {
				rcci_ep_fail(ep, RCC_EP_ERROR, -EPROTO, RCC_WC_SUCCESS,
					     RCC_WC_SUCCESS,
					     "malformed or out-of-order frame from the peer");
				link_down(ep);
			} else {
				ep->rx_eof = true;
				/* rcc_strerror's text is the thread's: log it here, keep
				 * a static one */
				log_debug("%s: %s", ep->base.peer, rcc_strerror((int)got));
				rcci_ep_fail(ep, RCC_EP_DISCONNECTED, (int)got,
					     got == -ETIMEDOUT ? RCC_WC_RETRY_EXC_ERR :
								 RCC_WC_SUCCESS,
					     RCC_WC_SUCCESS, "the connection to the peer failed");
			}
			got = 0;
			/* The socket's end stays readable: a sleeper must not see it. */
			rcci_cq_unwatch(ep);
		}
	}

	/* The pass stopped at its budget: what it left may already sit in the
	 * staging buffer, where no readiness check sees it (a ring full of
	 * single-copy requests is read in one go): come back for it. */
	if (got >= (long)RX_BUDGET)
		rcci_progress_kick(ep);
	uint64_t now = 0;
	if (got > 0) {
		now = rcci_coarse_now_ns();
		atomic_store_explicit(&ep->last_rx_ns, now, memory_order_relaxed);
	}
	/* The thread's visits: declare a silent peer dead, or say we are alive. */
	bool hb = false;
	if (!by_user && atomic_load(&ep->base.state) == RCC_EP_CONNECTED) {
		now = now ? now : rcci_coarse_now_ns();
		uint64_t heard = atomic_load_explicit(&ep->last_rx_ns, memory_order_relaxed);
		if (now - heard > ep->peer_timeout_ns) {
			ep->rx_eof = true;
			rcci_ep_fail(ep, RCC_EP_DISCONNECTED, -ETIMEDOUT, RCC_WC_RETRY_EXC_ERR,
				     RCC_WC_SUCCESS,
				     "nothing heard from the peer within the peer timeout");
			link_down(ep);
			goto out;
		}
		hb = true;
	}

	/* The busy-polling fast path: nothing came in and nothing is owed (no ack,
	 * no RNR backoff, no blocked socket): the transmit side has no work. */
	if (by_user && got == 0 && !kicked && !atomic_load(&ep->thread_timer) &&
	    !atomic_load(&ep->want_out) && !atomic_load(&ep->tx_deferred) &&
	    atomic_load(&ep->link) == LINK_UP)
		goto out;

	rcci_lock_acquire(&ep->tx_lock);
	if (ep->rnr_wait && rcc_now_ns() >= ep->rnr_until_ns)
		ep->rnr_wait = false;
	/* When the application drives the endpoint, an ack waits a little for an
	 * outgoing frame to ride on (the reply of a ping-pong); otherwise it goes now. */
	uint32_t unacked = atomic_load(&ep->rx_expected) - ep->ack_sent;
	bool ack_now = !by_user || got == 0 || unacked >= ACK_EVERY_MSGS ||
		       atomic_load_explicit(&ep->unacked_bytes, memory_order_relaxed) >=
			       ACK_EVERY_BYTES;
	if (hb && now - ep->last_tx_ns >= rcci_ep_hb_period_ns(ep))
		ep->hb_due = true;
	rcci_tx_flush(ep, ack_now);
	rcci_sq_advance(ep); /* requests refused at post time */
	int tx_err = ep->tx_err;
	/* A deferred ack or an RNR backoff needs the thread's tick if nobody polls. */
	bool owed = atomic_load(&ep->rx_expected) != ep->ack_sent;
	rcci_progress_timer(ep, atomic_load(&ep->link) != LINK_DOWN && (ep->rnr_wait || owed));
	if (by_user && owed)
		rcci_progress_deferred_ack(ep); /* ours to send: see rcci_progress_serve_timers */
	else if (!owed && ep->ack_deferrer)
		rcci_progress_ack_sent(ep);
	rcci_lock_release(&ep->tx_lock);

	if (tx_err) {
		ep->rx_eof = true;
		rcci_ep_fail(ep, RCC_EP_DISCONNECTED, -ECONNRESET, RCC_WC_SUCCESS, RCC_WC_SUCCESS,
			     "the connection broke");
		link_down(ep);
	} else if (atomic_load(&ep->link) == LINK_DRAINING && ep->close_sent && ep->rx_eof) {
		link_down(ep);
	}
out:
	rcci_lock_release(&ep->rx_lock);
}

void rcci_ep_set_want_out(struct tcp_ep *ep, bool on)
{
	if (atomic_exchange(&ep->want_out, on) != on)
		rcci_ep_update_events(ep);
	/* On shared memory there is no EPOLLOUT: unless the application's
	 * polling comes back for it (parked), a blocked transmit is the
	 * progress thread's. Arm the room for it -- the ring then rings our
	 * doorbell when it drains -- and if there is room already (its rounds
	 * used up), kick the thread. A polling application arms nothing: the
	 * peer rings no doorbell it would never read. */
	if (on && ep->base.on_shm && !atomic_load(&ep->parked) && rcci_shm_ring_arm_tx(&ep->shm))
		rcci_progress_kick(ep);
}

/* Whether the endpoint's CQs are POLL-mode ones: their users never sleep
 * in the library, they poll. */
static bool busy_polled(const struct tcp_ep *ep)
{
	return ep->base.send_cq->mode == RCC_CQ_POLL && ep->base.recv_cq->mode == RCC_CQ_POLL;
}

void rcci_ep_update_events(struct tcp_ep *ep)
{
	uint32_t want = 0;
	struct epoll_event ev = { .data.ptr = ep };

	pthread_mutex_lock(&ep->ev_lock);
	if (atomic_load(&ep->link) != LINK_DOWN && !ep->removed && !atomic_load(&ep->fail_held)) {
		want = EPOLLRDHUP;
		if (!atomic_load_explicit(&ep->parked, memory_order_relaxed))
			want |= EPOLLIN;
		/* On shared memory the socket is always writable: room in the
		 * ring comes with a doorbell (EPOLLIN) instead. A parked
		 * endpoint whose CQs only ever busy-poll leaves a blocked
		 * transmit to those polls too (each one sends what the socket
		 * takes, cq.c drive()): the thread sending it as well only
		 * fought the poller for its core (a 1 MiB WRITE stream, both
		 * threads of the process pinned to one CPU: a third of it went
		 * to the thread). A CQ that may sleep keeps the thread on it: a
		 * sleeping waiter watches input only. The tick unparks an
		 * endpoint whose polls stopped. */
		if (atomic_load(&ep->want_out) && !ep->base.on_shm &&
		    !(atomic_load_explicit(&ep->parked, memory_order_relaxed) && busy_polled(ep)))
			want |= EPOLLOUT;
	}
	if (want != ep->ev_mask) {
		int op = !want ? EPOLL_CTL_DEL : !ep->ev_mask ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
		ev.events = want;
		/* Record only what took effect, so the next update tries again
		 * rather than leave the endpoint silently unwatched. */
		if (epoll_ctl(ep->ctx->epfd, op, ep->fd, want ? &ev : NULL) == 0)
			ep->ev_mask = want;
		else
			log_error("%s: watching the socket failed: %s", ep->base.peer,
				  rcc_strerror(-errno));
	}
	pthread_mutex_unlock(&ep->ev_lock);
}

int rcci_tcp_ep_disconnect(struct rcc_ep *base)
{
	struct tcp_ep *ep = tep(base);

	rcci_lock_acquire(&ep->rx_lock);
	/* Requests posted before the disconnect go out before it, as a NIC
	 * would have started them at once: a post left for the next poll (a
	 * parked endpoint's, post.c) must not be flushed unsent because that
	 * poll never came (a BYE posted just before closing, say). */
	if (atomic_load(&ep->tx_deferred)) {
		rcci_lock_acquire(&ep->tx_lock);
		rcci_tx_flush(ep, false);
		rcci_lock_release(&ep->tx_lock);
	}
	/* The application asked, and waits: a failure held for the peer's copy
	 * is carried out now, waiting for the copy (at most the peer timeout). */
	if (atomic_load(&ep->fail_held)) {
		unhold(ep);
		fail_now(ep, &ep->held, false);
	}
	fail_now(ep,
		 &(struct ep_failure){ RCC_EP_DISCONNECTED, 0, RCC_WC_SUCCESS, RCC_WC_SUCCESS,
				       "local disconnect", 0 },
		 false);
	rcci_lock_acquire(&ep->tx_lock);
	rcci_tx_flush(ep, false); /* say goodbye now if the socket has room */
	rcci_lock_release(&ep->tx_lock);
	rcci_lock_release(&ep->rx_lock);
	/* Flush completions an overrun CQ had no room for are lost: the promise
	 * that everything outstanding is on the CQs cannot be kept (as verbs). */
	return rcci_cq_overran(ep) ? -EIO : 0;
}

void rcci_tcp_ep_destroy(struct rcc_ep *base)
{
	struct tcp_ep *ep = tep(base);

	rcci_cq_detach(tcq(base->send_cq), ep);
	rcci_cq_detach(tcq(base->recv_cq), ep);
	rcci_progress_remove(ep->ctx, ep);
	rcci_lock_acquire(&ep->rx_lock);
	unhold(ep);
	link_down(ep);
	rcci_lock_release(&ep->rx_lock);
	rcci_cq_forget_ep(tcq(base->send_cq), base);
	rcci_cq_forget_ep(tcq(base->recv_cq), base);
	if (base->on_shm)
		rcci_cma_ep_stop(ep); /* before the slots go away with the mapping */
	close(ep->fd);
	if (base->on_shm) {
		rcci_shm_region_unmap(&ep->shm);
		atomic_fetch_sub(&ep->ctx->nshm, 1);
	}
	pthread_mutex_destroy(&ep->ev_lock);
	free_queues(ep);
}
