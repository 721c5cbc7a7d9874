/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rcc_server: a listener thread that hands each new connection to an agent.
 * An agent is a thread with one CQ; it serves one connection (per-endpoint
 * mode) or many (shared-CQ mode) and calls the application's callbacks.
 * Endpoints owned by a server carry the session's connection record as their
 * context; applications keep their own state in the conn pointer.
 *
 * Accepting never waits on a client: the listener starts each accept
 * (rcc_accept_start()) and keeps the connection pending until the context's
 * connection event says how it ended -- RCC_EVENT_ESTABLISHED hands it to its
 * agent, RCC_EVENT_CONNECT_FAILED drops it (a verbs client that never
 * confirms costs the server nothing but its slot, for at most 5 s). A
 * shared-CQ agent may see a pending connection's initial receives complete
 * before that: it keeps them for the connection and delivers them after
 * on_connect. Connections the server opens itself (rcc_server_connect(),
 * server_connect.c) reach their agents the same way.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/last_error.h"
#include "base/log.h"
#include "base/thread.h"
#include "core/core.h"
#include "rcc/util.h"
#include "rcc/session.h"
#include "cq_depth.h"
#include "server.h"

/* How often an idle agent looks for connections that ended without a completion. */
#define STATE_CHECK_MS 100
/* Busy-polling agents look at their mailbox every this many empty polls. */
#define POLL_CHECK_EVERY 1024
#define SHARED_CQ_DEPTH 16384u
/* rcc_server_stop() waits this long for accepts under way (each ends in 5 s). */
#define PENDING_STOP_MS 6000

/* on_request's rcc_server_reply() lands here: requests are handled one at a
 * time on the listener thread. */
struct reply {
	const struct rcc_conn_req *req;
	uint8_t data[RCC_ACCEPT_PRIVATE_DATA_MAX];
	size_t len;
	bool set;
};
static _Thread_local struct reply *current_reply;

void rcci_server_wake(int fd)
{
	uint64_t one = 1;
	if (write(fd, &one, sizeof(one)) < 0)
		log_debug("server: wake: %s", rcc_strerror(-errno));
}

static void drain_fd(int fd)
{
	uint64_t v;
	while (read(fd, &v, sizeof(v)) > 0)
		;
}

/* ---------------------------------------------------------------- agents */

/* One of the server's SRQ receives completed: the message goes to on_recv and
 * the buffer straight back to the SRQ; a flushed receive only goes back. */
static void deliver_srq_recv(struct rcc_server *srv, const struct rcc_wc *wc, void *buf)
{
	struct conn *c = rcc_ep_context(wc->ep);
	int rc;

	if (c && wc->status == RCC_WC_SUCCESS)
		srv->ops.on_recv(wc->ep, wc, wc->opcode == RCC_WC_RECV ? buf : NULL, c->user);
	rc = rcci_server_srq_repost(&srv->srq, buf);
	if (rc)
		log_warn("server: reposting an SRQ receive failed, %u bytes less: %s",
			 srv->srq.buf_size, rcc_strerror(rc));
}

/* A completion of a connection whose accept has not ended yet (its initial
 * receives, filled by a client that sends as soon as it is connected): kept
 * until the connection is handed over. At most its receives' count. */
static void hold_early(struct agent *ag, struct conn *c, const struct rcc_wc *wc)
{
	if (c->nearly == c->early_cap) {
		int cap = c->early_cap ? 2 * c->early_cap : 8;
		struct rcc_wc *e = realloc(c->early, (size_t)cap * sizeof(*e));
		if (!e) {
			void *buf = rcci_server_srq_buffer(&ag->srv->srq, wc);
			log_error("server: out of memory: a completion of %s before its "
				  "accept ended is lost",
				  rcc_ep_peer(wc->ep));
			if (buf)
				rcci_server_srq_repost(&ag->srv->srq, buf);
			return;
		}
		c->early = e;
		c->early_cap = cap;
	}
	c->early[c->nearly++] = *wc;
}

static void dispatch(struct agent *ag, const struct rcc_wc *wc)
{
	struct conn *c = rcc_ep_context(wc->ep);
	void *buf;

	if (c && !c->live) {
		hold_early(ag, c, wc);
		return;
	}
	buf = rcci_server_srq_buffer(&ag->srv->srq, wc);
	if (buf)
		deliver_srq_recv(ag->srv, wc, buf);
	else if (c)
		ag->srv->ops.on_completion(wc->ep, wc, c->user);
}

/* Deliver everything the CQ holds (other connections' completions included). */
static void drain_cq(struct agent *ag)
{
	struct rcc_wc wc[32];
	int n;
	while ((n = rcc_cq_poll(ag->cq, wc, 32)) > 0)
		for (int i = 0; i < n; i++)
			dispatch(ag, &wc[i]);
}

static void all_unlink(struct rcc_server *srv, struct conn *c)
{
	pthread_mutex_lock(&srv->lock);
	if (c->all_prev)
		c->all_prev->all_next = c->all_next;
	else if (srv->all == c)
		srv->all = c->all_next;
	if (c->all_next)
		c->all_next->all_prev = c->all_prev;
	c->all_prev = c->all_next = NULL;
	pthread_mutex_unlock(&srv->lock);
}

static void end_conn(struct agent *ag, struct conn *c)
{
	struct rcc_server *srv = ag->srv;

	all_unlink(srv, c);       /* from now on nobody else can reach it */
	rcc_ep_disconnect(c->ep); /* every outstanding request is now on the CQ */
	drain_cq(ag);
	if (srv->ops.on_disconnect)
		srv->ops.on_disconnect(c->ep, c->user);
	for (struct conn **pp = &ag->conns; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	rcc_ep_close(c->ep);
	free(c);
	atomic_fetch_sub(&ag->load, 1);
	atomic_fetch_sub(&srv->active, 1);
}

static void free_early(struct conn *c)
{
	free(c->early);
	c->early = NULL;
	c->nearly = c->early_cap = 0;
}

/* A connection whose accept failed (or was abandoned at stop): it never came
 * up, so the application hears of it only through on_disconnect(NULL). Held
 * SRQ receives go back to the SRQ; closing removes the rest of its
 * completions. Runs on the agent's thread, or instead of it when the agent
 * never started. */
static void fail_conn(struct agent *ag, struct conn *c)
{
	struct rcc_server *srv = ag->srv;

	for (int i = 0; i < c->nearly; i++) {
		void *buf = rcci_server_srq_buffer(&srv->srq, &c->early[i]);
		if (buf)
			rcci_server_srq_repost(&srv->srq, buf);
	}
	free_early(c);
	if (c->ep) /* NULL: an rcc_server_connect() that failed */
		rcc_ep_close(c->ep);
	if (c->user && srv->ops.on_disconnect)
		srv->ops.on_disconnect(NULL, c->user);
	free(c);
	atomic_fetch_sub(&ag->load, 1);
}

/* The connection is up: on_connect, then what arrived before it. */
static void go_live(struct agent *ag, struct conn *c)
{
	int rc = 0;

	c->next = ag->conns;
	ag->conns = c;
	c->live = true;
	if (ag->srv->ops.on_connect)
		rc = ag->srv->ops.on_connect(c->ep, ag->srv->attr.arg, &c->user);
	for (int i = 0; i < c->nearly; i++)
		dispatch(ag, &c->early[i]);
	free_early(c);
	if (rc < 0) {
		log_info("server: on_connect refused %s", rcc_ep_peer(c->ep));
		end_conn(ag, c);
	}
}

static void take_incoming(struct agent *ag)
{
	struct conn *in;

	if (!atomic_load_explicit(&ag->has_incoming, memory_order_acquire))
		return;
	pthread_mutex_lock(&ag->lock);
	in = ag->incoming;
	ag->incoming = NULL;
	atomic_store(&ag->has_incoming, false);
	pthread_mutex_unlock(&ag->lock);
	while (in) {
		struct conn *c = in;
		in = in->next;
		if (c->failed)
			fail_conn(ag, c);
		else
			go_live(ag, c);
	}
}

static void reap_ended(struct agent *ag)
{
	struct conn *c = ag->conns;
	while (c) {
		struct conn *next = c->next;
		if (rcc_ep_state(c->ep) != RCC_EP_CONNECTED || atomic_load(&c->want_close))
			end_conn(ag, c);
		c = next;
	}
}

/* How long a sleeping agent may wait: until its next on_wake round at most. */
static int sleep_ms(const struct agent *ag)
{
	const struct rcc_server *srv = ag->srv;

	if (!srv->ops.on_wake || !srv->attr.wake_ms)
		return STATE_CHECK_MS;
	uint64_t now = rcc_now_ns();
	if (ag->next_wake_ns <= now)
		return 0;
	uint64_t ms = (ag->next_wake_ns - now) / 1000000u + 1;
	return ms < STATE_CHECK_MS ? (int)ms : STATE_CHECK_MS;
}

/* A round of on_wake is due: rcc_server_wake() asked, or wake_ms passed. */
static bool wake_due(struct agent *ag)
{
	const struct rcc_server *srv = ag->srv;
	bool due = false;

	if (!srv->ops.on_wake)
		return false;
	if (atomic_load_explicit(&ag->wake, memory_order_relaxed))
		due = atomic_exchange(&ag->wake, false); /* a wake from now on: another round */
	if (srv->attr.wake_ms) {
		uint64_t now = rcc_now_ns();
		if (now >= ag->next_wake_ns) {
			due = true;
			ag->next_wake_ns = now + (uint64_t)srv->attr.wake_ms * 1000000u;
		}
	}
	return due;
}

static void wake_conns(struct agent *ag)
{
	if (!wake_due(ag))
		return;
	for (struct conn *c = ag->conns; c; c = c->next)
		ag->srv->ops.on_wake(c->ep, c->user);
}

/* Completions, or 0 after a while with nothing to do. */
static int next_completions(struct agent *ag, struct rcc_wc *wc, int max)
{
	if (ag->srv->attr.cq_mode == RCC_CQ_POLL) {
		for (int i = 0; i < POLL_CHECK_EVERY; i++) {
			int n = rcc_cq_poll(ag->cq, wc, max);
			if (n)
				return n;
			if (atomic_load_explicit(&ag->wake, memory_order_relaxed))
				return 0;
		}
		/* Idle for a while: let other runnable threads in. With more busy
		 * agents than cores, never yielding starves the very peers they wait for. */
		sched_yield();
		return 0;
	}
	int n = rcc_cq_poll(ag->cq, wc, max);
	if (n)
		return n;
	if (ag->srv->attr.cq_mode == RCC_CQ_HYBRID) {
		/* spin a while before sleeping: a reply that comes back within
		 * the budget costs no wake-up; yield now and then, as rcc_cq_wait
		 * does, so that spinning agents do not starve the peers they serve */
		uint64_t until = rcc_now_ns() + ag->srv->spin_ns;
		for (unsigned i = 1; rcc_now_ns() < until; i++) {
			n = rcc_cq_poll(ag->cq, wc, max);
			if (n)
				return n;
			if (atomic_load_explicit(&ag->wake, memory_order_relaxed))
				return 0;
			if (i % 64 == 0)
				sched_yield();
		}
	}
	/* About to sleep: arming lets a shared-memory peer ring our descriptor
	 * itself, and the next poll read its message (one wake-up instead of two,
	 * rcc.h). 1: something came meanwhile. An error leaves the wake-up to
	 * the context's thread: still correct, so sleep anyway. */
	if (rcc_cq_arm(ag->cq) > 0)
		return rcc_cq_poll(ag->cq, wc, max);
	struct epoll_event ev[2];
	int k = epoll_wait(ag->epfd, ev, 2, sleep_ms(ag));
	for (int i = 0; i < k; i++)
		if (ev[i].data.fd == ag->wakefd)
			drain_fd(ag->wakefd);
	return rcc_cq_poll(ag->cq, wc, max);
}

static void *agent_main(void *arg)
{
	struct agent *ag = arg;
	struct rcc_wc wc[32];
	bool served = false;

	for (;;) {
		take_incoming(ag);
		served |= ag->conns != NULL;
		if (atomic_load_explicit(&ag->stop, memory_order_acquire))
			break;
		int n = next_completions(ag, wc, 32);
		if (n < 0) {
			log_error("server: polling the CQ failed: %s", rcc_strerror(n));
			break;
		}
		for (int i = 0; i < n; i++)
			dispatch(ag, &wc[i]);
		reap_ended(ag);
		wake_conns(ag);
		if (ag->per_ep && served && !ag->conns)
			break; /* its one connection is over */
	}
	while (ag->conns)
		end_conn(ag, ag->conns);
	take_incoming(ag); /* handed over while we were stopping */
	while (ag->conns)
		end_conn(ag, ag->conns);
	atomic_store(&ag->done, true); /* the listener joins and frees us */
	return NULL;
}

void rcci_server_agent_free(struct agent *ag)
{
	if (ag->cq && rcc_cq_destroy(ag->cq))
		log_warn("server: agent CQ still in use at exit");
	if (ag->epfd >= 0)
		close(ag->epfd);
	if (ag->wakefd >= 0)
		close(ag->wakefd);
	pthread_mutex_destroy(&ag->lock);
	free(ag);
}

static uint32_t cq_depth_for(const struct rcc_server *srv, bool per_ep,
			     const struct rcc_ep_attr *ep_attr)
{
	struct rcc_ep_attr ea = *ep_attr;

	if (srv->attr.cq_depth)
		return srv->attr.cq_depth;
	/* every SRQ receive may complete on any one connection's CQ */
	if (srv->attr.srq_depth)
		ea.rq_depth = srv->attr.srq_depth;
	return per_ep ? rcci_ep_cq_depth(&ea) : SHARED_CQ_DEPTH + srv->attr.srq_depth;
}

int rcci_server_agent_new(struct rcc_server *srv, bool per_ep, const struct rcc_ep_attr *ep_attr,
			  struct agent **out)
{
	struct rcc_cq_attr ca = {
		.depth = cq_depth_for(srv, per_ep, ep_attr),
		/* WAIT is served with the CQ's fd so the agent can also be woken. */
		.mode = srv->attr.cq_mode == RCC_CQ_POLL ? RCC_CQ_POLL : RCC_CQ_FD,
	};
	struct agent *ag = calloc(1, sizeof(*ag));
	int rc;

	if (!ag)
		return -ENOMEM;
	ag->srv = srv;
	ag->per_ep = per_ep;
	ag->epfd = -1;
	pthread_mutex_init(&ag->lock, NULL);
	ag->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (ag->wakefd < 0) {
		rc = -errno;
		goto err;
	}
	rc = rcc_cq_create(srv->ctx, &ca, &ag->cq);
	if (rc)
		goto err;
	if (ca.mode == RCC_CQ_FD) {
		struct epoll_event e1 = { .events = EPOLLIN, .data.fd = rcc_cq_fd(ag->cq) };
		struct epoll_event e2 = { .events = EPOLLIN, .data.fd = ag->wakefd };
		ag->epfd = epoll_create1(EPOLL_CLOEXEC);
		if (ag->epfd < 0 || epoll_ctl(ag->epfd, EPOLL_CTL_ADD, e1.data.fd, &e1) ||
		    epoll_ctl(ag->epfd, EPOLL_CTL_ADD, ag->wakefd, &e2)) {
			rc = -errno;
			goto err;
		}
	}
	*out = ag;
	return 0;
err:
	rcci_server_agent_free(ag);
	return rc;
}

int rcci_server_agent_start(struct agent *ag)
{
	int rc;

	rc = rcci_thread_create(&ag->thread, agent_main, ag);
	if (rc)
		return rc;
	ag->started = true;
	pthread_mutex_lock(&ag->srv->lock);
	ag->next = ag->srv->agents;
	ag->srv->agents = ag;
	pthread_mutex_unlock(&ag->srv->lock);
	return 0;
}

void rcci_server_agent_handover(struct agent *ag, struct conn *c)
{
	pthread_mutex_lock(&ag->lock);
	c->next = ag->incoming;
	ag->incoming = c;
	atomic_store_explicit(&ag->has_incoming, true, memory_order_release);
	pthread_mutex_unlock(&ag->lock);
	rcci_server_wake(ag->wakefd);
}

/* Join and free per-endpoint agents whose connection is over. */
static void reap_agents(struct rcc_server *srv)
{
	pthread_mutex_lock(&srv->lock);
	for (struct agent **pp = &srv->agents; *pp;) {
		struct agent *ag = *pp;
		if (ag->per_ep && atomic_load(&ag->done)) {
			*pp = ag->next;
			pthread_join(ag->thread, NULL);
			rcci_server_agent_free(ag);
		} else {
			pp = &ag->next;
		}
	}
	pthread_mutex_unlock(&srv->lock);
}

/* -------------------------------------------------------------- listener */

struct agent *rcci_server_least_loaded(struct rcc_server *srv)
{
	struct agent *best = srv->shared[0];
	for (int i = 1; i < srv->nshared; i++)
		if (atomic_load(&srv->shared[i]->load) < atomic_load(&best->load))
			best = srv->shared[i];
	return best;
}

bool rcci_server_take_slot(struct rcc_server *srv)
{
	uint_fast64_t n = atomic_load(&srv->active);

	do {
		if (n >= (uint_fast64_t)srv->attr.max_connections)
			return false;
	} while (!atomic_compare_exchange_weak(&srv->active, &n, n + 1));
	return true;
}

/* Refuse a request: counted before the answer leaves, so the client never sees
 * stale stats. */
static void turn_away(struct rcc_server *srv, struct rcc_conn_req *req)
{
	atomic_fetch_add(&srv->rejected, 1);
	rcc_reject_req(req, NULL, 0);
}

/* The server's list of every connection (for stop and stats). */
void rcci_server_track_conn(struct rcc_server *srv, struct conn *c)
{
	pthread_mutex_lock(&srv->lock);
	c->all_next = srv->all;
	if (srv->all)
		srv->all->all_prev = c;
	srv->all = c;
	pthread_mutex_unlock(&srv->lock);
}

/* A per-endpoint agent's thread, started for its one connection. When it cannot
 * start nobody will run it: the connection ends here, as its agent would
 * (flushes delivered, then on_disconnect). */
static void start_own_agent(struct rcc_server *srv, struct agent *ag, struct conn *c)
{
	int rc = rcci_server_agent_start(ag);
	if (!rc)
		return;
	log_error("server: cannot start an agent thread: %s", rcc_strerror(rc));
	ag->incoming = NULL;
	atomic_store(&ag->has_incoming, false);
	c->next = NULL;
	c->live = true; /* its completions (nobody polled them yet) go to end_conn's drain */
	ag->conns = c;
	atomic_fetch_sub(&srv->accepted, 1);
	end_conn(ag, c);
	rcci_server_agent_free(ag);
}

static void handle_request(struct rcc_server *srv, struct rcc_conn_req *req)
{
	const struct rcc_recv_wr *recv = NULL;
	int nrecv = 0, rc;
	struct agent *ag = NULL;
	struct conn *c;
	char peer[64];

	snprintf(peer, sizeof(peer), "%s", rcc_conn_req_peer(req));
	if ((int)atomic_load(&srv->active) >= srv->attr.max_connections) {
		log_warn("server: %s turned away: %d connections already", peer,
			 srv->attr.max_connections);
		turn_away(srv, req);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		turn_away(srv, req);
		return;
	}
	struct reply reply = { .req = req };
	if (srv->ops.on_request) {
		current_reply = &reply;
		rc = srv->ops.on_request(req, srv->attr.arg, &c->user, &recv, &nrecv);
		current_reply = NULL;
		if (rc < 0) {
			log_info("server: %s rejected by the application: %s", peer,
				 rcc_strerror(rc));
			turn_away(srv, req);
			goto err_user;
		}
	}
	if (srv->srq.srq && nrecv) {
		log_warn("server: %s turned away: on_request named receives, but the "
			 "server's SRQ takes every receive",
			 peer);
		turn_away(srv, req);
		goto err_user;
	}
	if (srv->attr.thread_mode == RCC_THREAD_PER_EP) {
		rc = rcci_server_agent_new(srv, true, &srv->attr.ep_attr, &ag);
		if (rc) {
			turn_away(srv, req);
			goto err_user;
		}
	} else {
		ag = rcci_server_least_loaded(srv);
	}

	struct rcc_ep_attr ea = srv->attr.ep_attr;
	ea.send_cq = ea.recv_cq = ag->cq;
	ea.initial_recv = recv;
	ea.num_initial_recv = nrecv;
	if (srv->srq.srq)
		ea.srq = srv->srq.srq;
	ea.context = c;
	if (reply.set) {
		ea.private_data = reply.data;
		ea.private_data_len = (uint32_t)reply.len;
	}
	c->ag = ag;
	if (!rcci_server_take_slot(srv)) {
		/* the last one went meanwhile to rcc_server_connect() */
		log_warn("server: %s turned away: %d connections already", peer,
			 srv->attr.max_connections);
		turn_away(srv, req);
		goto err_agent;
	}
	atomic_fetch_add(&srv->accepted, 1);
	/* never waits for the client: its confirmation is a connection event */
	rc = rcc_accept_start(req, &ea, &c->ep);
	if (rc) {
		atomic_fetch_sub(&srv->active, 1);
		atomic_fetch_sub(&srv->accepted, 1);
		log_warn("server: accepting %s failed: %s", peer, rcc_strerror(rc));
		goto err_agent;
	}
	atomic_fetch_add(&ag->load, 1);
	c->pend_next = srv->pending;
	srv->pending = c;
	return;

err_agent:
	if (ag && ag->per_ep)
		rcci_server_agent_free(ag);
err_user:
	if (c->user && srv->ops.on_disconnect)
		srv->ops.on_disconnect(NULL, c->user);
	free(c);
}

/* The accept of c is over: its agent gets it (after a failure, only to drop
 * it: a shared-CQ agent may hold completions of it). */
static void accept_ended(struct rcc_server *srv, struct conn *c, bool up)
{
	struct agent *ag = c->ag;

	if (up) {
		rcci_server_track_conn(srv, c);
		rcci_server_agent_handover(ag, c);
		if (ag->per_ep)
			start_own_agent(srv, ag, c);
		return;
	}
	atomic_fetch_sub(&srv->accepted, 1);
	atomic_fetch_add(&srv->rejected, 1);
	atomic_fetch_sub(&srv->active, 1);
	if (ag->per_ep) {
		fail_conn(ag, c); /* its agent never ran */
		rcci_server_agent_free(ag);
		return;
	}
	c->failed = true;
	rcci_server_agent_handover(ag, c);
}

/* Connection events of the server's context: those of pending accepts end
 * them; the rest (served connections leaving, which their agents notice by
 * themselves) are dropped. */
static void take_event(struct rcc_server *srv, const struct rcc_event *ev)
{
	struct conn **pp = &srv->pending;

	while (*pp && (*pp)->ep != ev->ep)
		pp = &(*pp)->pend_next;
	if (!*pp)
		return;
	struct conn *c = *pp;
	*pp = c->pend_next;
	if (ev->type == RCC_EVENT_CONNECT_FAILED) {
		log_info("server: %s never completed its connection: %s", rcc_ep_peer(c->ep),
			 rcc_strerror(ev->status));
		accept_ended(srv, c, false);
	} else {
		/* established, perhaps already gone again: its agent sees to it */
		accept_ended(srv, c, true);
	}
}

/* Accepts that ended without our seeing their event: another taker of the
 * context's events (a second server on it, or the application) got it. Their
 * endpoint's state tells; found within one listener pass (at most 1 s). */
static void scan_pending(struct rcc_server *srv)
{
	for (struct conn **pp = &srv->pending; *pp;) {
		struct conn *c = *pp;
		enum rcc_ep_state st = rcc_ep_state(c->ep);
		if (st == RCC_EP_CONNECTING) {
			pp = &c->pend_next;
			continue;
		}
		*pp = c->pend_next;
		if (st != RCC_EP_CONNECTED)
			log_info("server: %s never completed its connection", rcc_ep_peer(c->ep));
		accept_ended(srv, c, st == RCC_EP_CONNECTED);
	}
}

static void take_events(struct rcc_server *srv)
{
	struct rcc_event ev;

	while (rcc_ctx_get_event(srv->ctx, &ev, 0) == 0)
		take_event(srv, &ev);
	scan_pending(srv);
}

/* At stop: let the accepts under way end (each within its 5 s), so that a
 * connection that came up is served and ended like any other. */
static void finish_pending(struct rcc_server *srv)
{
	uint64_t until = rcc_now_ns() + (uint64_t)PENDING_STOP_MS * 1000000u;
	struct rcc_event ev;

	while (srv->pending) {
		uint64_t now = rcc_now_ns();
		if (now >= until ||
		    rcc_ctx_get_event(srv->ctx, &ev, (int)((until - now) / 1000000u) + 1))
			break;
		take_event(srv, &ev);
	}
	while (srv->pending) {
		struct conn *c = srv->pending;
		srv->pending = c->pend_next;
		accept_ended(srv, c, false);
	}
}

static void *listener_main(void *arg)
{
	struct rcc_server *srv = arg;
	struct pollfd p[3] = {
		{ .fd = rcc_listener_fd(srv->lst), .events = POLLIN },
		{ .fd = srv->stopfd, .events = POLLIN },
		{ .fd = srv->evfd, .events = POLLIN },
	};

	for (;;) {
		int r = poll(p, 3, 1000);
		if (r < 0 && errno != EINTR) {
			log_error("server: poll: %s", rcc_strerror(-errno));
			break;
		}
		if (p[1].revents)
			break;
		reap_agents(srv);
		if (r > 0 && p[2].revents)
			take_events(srv);
		else if (srv->pending)
			scan_pending(srv);
		if (r <= 0 || !p[0].revents)
			continue;
		struct rcc_conn_req *req;
		int rc = rcc_get_request(srv->lst, 0, &req);
		if (rc == -ETIMEDOUT || rc == -EAGAIN)
			continue;
		if (rc) {
			log_warn("server: bad connection request: %s", rcc_strerror(rc));
			continue;
		}
		handle_request(srv, req);
	}
	return NULL;
}

/* Tell every agent to stop, then join and free them. Only when no listener
 * thread runs: nobody else touches the list then. */
static void stop_agents(struct rcc_server *srv)
{
	pthread_mutex_lock(&srv->lock);
	for (struct agent *ag = srv->agents; ag; ag = ag->next) {
		atomic_store(&ag->stop, true);
		rcci_server_wake(ag->wakefd);
	}
	pthread_mutex_unlock(&srv->lock);
	while (srv->agents) {
		struct agent *ag = srv->agents;
		srv->agents = ag->next;
		pthread_join(ag->thread, NULL);
		rcci_server_agent_free(ag);
	}
}

/* ------------------------------------------------------------------ API */

int rcc_server_start(struct rcc_ctx *ctx, const struct rcc_server_attr *attr,
		     struct rcc_server **out)
{
	struct rcc_server *srv;
	int rc;

	rcci_error_clear();
	if (!ctx || !attr || !out || !attr->addr || !attr->ops || !attr->ops->on_completion)
		return rcci_fail(-EINVAL, "rcc_server_start: ctx, attr, its addr, ops and "
					  "ops->on_completion, and srv are required");
	if (attr->thread_mode < RCC_THREAD_PER_EP || attr->thread_mode > RCC_THREAD_SHARED_CQ ||
	    attr->cq_mode < RCC_CQ_POLL || attr->cq_mode > RCC_CQ_HYBRID || attr->num_threads < 0 ||
	    attr->num_threads > 256 || attr->max_connections < 0 || attr->wake_ms < 0 ||
	    attr->wake_ms > 60000)
		return rcci_fail(-EINVAL, "rcc_server_start: unknown thread or CQ mode, threads "
					  "not in 0..256, negative max_connections, or wake_ms "
					  "not in 0..60000");
	if (attr->srq_depth &&
	    (!attr->ops->on_recv || attr->ep_attr.srq || attr->srq_depth > RCC_SERVER_SRQ_MAX ||
	     attr->srq_buf_size > RCC_MAX_MSG_SIZE))
		return rcci_fail(-EINVAL, "rcc_server_start: srq_depth needs ops->on_recv, no "
					  "ep_attr.srq, a depth up to RCC_SERVER_SRQ_MAX and "
					  "srq_buf_size up to RCC_MAX_MSG_SIZE");
	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return -ENOMEM;
	srv->ctx = ctx;
	srv->attr = *attr;
	srv->attr.addr = NULL; /* the caller's string: read here, by rcc_listen(), only */
	srv->spin_ns = (uint64_t)rcci_cq_spin_us(0) * 1000;
	srv->ops = *attr->ops;
	srv->attr.ops = &srv->ops;
	if (!srv->attr.max_connections)
		srv->attr.max_connections = 1024;
	if (attr->srq_depth && !attr->srq_buf_size)
		srv->attr.srq_buf_size = RCC_SERVER_SRQ_BUF_DEFAULT;
	srv->stopfd = -1;
	pthread_mutex_init(&srv->lock, NULL);
	pthread_cond_init(&srv->connects_done, NULL);

	srv->stopfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (srv->stopfd < 0) {
		rc = -errno;
		goto err_srv;
	}
	if (attr->srq_depth) {
		rc = rcci_server_srq_open(ctx, attr->srq_depth, srv->attr.srq_buf_size, &srv->srq);
		if (rc)
			goto err_stopfd;
	}
	/* the outcome of every accept comes as a connection event */
	srv->evfd = rcc_ctx_event_fd(ctx);
	if (srv->evfd < 0) {
		rc = srv->evfd;
		goto err_srq;
	}
	rc = rcc_listen(ctx, attr->addr, 0, &srv->lst);
	if (rc)
		goto err_srq;
	if (attr->thread_mode == RCC_THREAD_SHARED_CQ) {
		srv->nshared = attr->num_threads ? attr->num_threads : 1;
		srv->shared = calloc((size_t)srv->nshared, sizeof(*srv->shared));
		if (!srv->shared) {
			rc = -ENOMEM;
			goto err_lst;
		}
		for (int i = 0; i < srv->nshared; i++) {
			rc = rcci_server_agent_new(srv, false, &srv->attr.ep_attr, &srv->shared[i]);
			if (!rc) {
				rc = rcci_server_agent_start(srv->shared[i]);
				if (rc)
					rcci_server_agent_free(srv->shared[i]);
			}
			if (rc) {
				srv->shared[i] = NULL;
				goto err_agents;
			}
		}
	}
	rc = rcci_thread_create(&srv->listener, listener_main, srv);
	if (rc)
		goto err_agents;
	log_info("server: listening on %s, port %d, %s threads", attr->addr,
		 rcc_listener_port(srv->lst),
		 attr->thread_mode == RCC_THREAD_PER_EP ? "per-endpoint" : "shared-CQ");
	*out = srv;
	return 0;

err_agents:
	stop_agents(srv);
	free(srv->shared);
err_lst:
	rcc_listener_close(srv->lst);
err_srq:
	rcci_server_srq_close(&srv->srq);
err_stopfd:
	close(srv->stopfd);
err_srv:
	pthread_cond_destroy(&srv->connects_done);
	pthread_mutex_destroy(&srv->lock);
	free(srv);
	return rc;
}

int rcc_server_reply(struct rcc_conn_req *req, const void *data, size_t len)
{
	struct reply *r = current_reply;

	if (!r || r->req != req || len > sizeof(r->data) || (len && !data))
		return -EINVAL;
	if (len)
		memcpy(r->data, data, len);
	r->len = len;
	r->set = true;
	return 0;
}

int rcc_server_disconnect(struct rcc_server *srv, struct rcc_ep *ep)
{
	int rc = -ENOENT;

	if (!srv || !ep)
		return -EINVAL;
	pthread_mutex_lock(&srv->lock);
	for (struct conn *c = srv->all; c; c = c->all_next) {
		if (c->ep == ep) {
			/* the agent owns the endpoint: it does the closing */
			atomic_store(&c->want_close, true);
			rcci_server_wake(c->ag->wakefd);
			rc = 0;
			break;
		}
	}
	pthread_mutex_unlock(&srv->lock);
	return rc;
}

int rcc_server_wake(struct rcc_server *srv)
{
	if (!srv || !srv->ops.on_wake)
		return -EINVAL;
	pthread_mutex_lock(&srv->lock);
	for (struct agent *ag = srv->agents; ag; ag = ag->next) {
		atomic_store(&ag->wake, true);
		if (srv->attr.cq_mode != RCC_CQ_POLL) /* a polling agent sees the flag */
			rcci_server_wake(ag->wakefd);
	}
	pthread_mutex_unlock(&srv->lock);
	return 0;
}

int rcc_server_port(const struct rcc_server *srv)
{
	return srv ? rcc_listener_port(srv->lst) : -EINVAL;
}

void rcc_server_stats(const struct rcc_server *srv, struct rcc_server_stats *st)
{
	if (!srv || !st)
		return;
	st->accepted = atomic_load(&srv->accepted);
	st->rejected = atomic_load(&srv->rejected);
	st->active = atomic_load(&srv->active);
}

int rcc_server_stop(struct rcc_server *srv)
{
	if (!srv)
		return -EINVAL;
	/* connections made from now on would reach stopped agents */
	rcci_server_connects_stop(srv);
	rcci_server_wake(srv->stopfd);
	pthread_join(srv->listener, NULL);
	finish_pending(srv);
	rcc_listener_close(srv->lst);

	stop_agents(srv);
	rcci_server_srq_close(&srv->srq); /* after every endpoint using it */
	free(srv->shared);
	close(srv->stopfd);
	pthread_cond_destroy(&srv->connects_done);
	pthread_mutex_destroy(&srv->lock);
	free(srv);
	return 0;
}
