/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rcc_server_connect(): a connection the server opens itself, served by its
 * agents like an accepted one. The endpoint is made on the agent's CQ with the
 * connection record as its context, before the agent knows it: a shared-CQ
 * agent keeps what completes meanwhile in the record (as for an accept under
 * way) and delivers it after on_connect. A per-endpoint agent's thread starts
 * once the endpoint is up and before the hand-over (so that a thread that
 * cannot start fails the call instead of serving half a connection); it keeps
 * what it polls before the hand-over the same way. Calls under way
 * are counted, so that rcc_server_stop() waits for them before it stops the
 * agents they hand their connections to.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "base/last_error.h"
#include "base/log.h"
#include "rcc/session.h"
#include "server.h"

#define CONNECT_TIMEOUT_DEFAULT_MS 5000

/* One call more under way, unless the server is stopping. */
static int connect_begin(struct rcc_server *srv)
{
	int rc = 0;

	pthread_mutex_lock(&srv->lock);
	if (srv->stopping)
		rc = -ESHUTDOWN;
	else
		srv->connecting++;
	pthread_mutex_unlock(&srv->lock);
	return rc;
}

static void connect_end(struct rcc_server *srv)
{
	pthread_mutex_lock(&srv->lock);
	if (--srv->connecting == 0)
		pthread_cond_broadcast(&srv->connects_done);
	pthread_mutex_unlock(&srv->lock);
}

void rcci_server_connects_stop(struct rcc_server *srv)
{
	pthread_mutex_lock(&srv->lock);
	srv->stopping = true;
	while (srv->connecting)
		pthread_cond_wait(&srv->connects_done, &srv->lock);
	pthread_mutex_unlock(&srv->lock);
}

/* The endpoint's attributes: the caller's or the template (whose private data
 * and initial receives are the accepts'), on the agent's CQ, with the
 * server's SRQ if it has one. */
static struct rcc_ep_attr conn_attr(const struct rcc_server *srv, const struct rcc_ep_attr *ep_attr)
{
	struct rcc_ep_attr ea = ep_attr ? *ep_attr : srv->attr.ep_attr;

	if (!ep_attr) {
		ea.private_data = NULL;
		ea.private_data_len = 0;
		ea.initial_recv = NULL;
		ea.num_initial_recv = 0;
	}
	if (srv->srq.srq) {
		ea.srq = srv->srq.srq;
		ea.initial_recv = NULL;
		ea.num_initial_recv = 0;
	}
	return ea;
}

/* The connect failed: the connection never existed for the application. A
 * shared-CQ agent may have kept completions of it, so the record goes to the
 * agent to be dropped there; a per-endpoint agent never ran. */
static void connect_failed(struct rcc_server *srv, struct conn *c)
{
	atomic_fetch_sub(&srv->active, 1);
	c->user = NULL; /* stays the caller's: no on_disconnect */
	if (c->ag->per_ep) {
		rcci_server_agent_free(c->ag);
		free(c);
		return;
	}
	c->failed = true;
	rcci_server_agent_handover(c->ag, c);
}

int rcc_server_connect(struct rcc_server *srv, const char *addr, const struct rcc_ep_attr *ep_attr,
		       int timeout_ms, void *conn, struct rcc_ep **ep)
{
	struct conn *c;
	struct agent *ag;
	int rc;

	rcci_error_clear();
	if (!srv || !addr || !ep || timeout_ms < 0)
		return rcci_fail(-EINVAL, "rcc_server_connect: srv, addr and ep are required, "
					  "and timeout_ms must not be negative");
	if (connect_begin(srv))
		return rcci_fail(-ESHUTDOWN, "rcc_server_connect: the server is stopping");
	if (!rcci_server_take_slot(srv)) {
		rc = rcci_fail(-EMFILE,
			       "rcc_server_connect: the server serves %d connections "
			       "already (max_connections)",
			       srv->attr.max_connections);
		goto out;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		atomic_fetch_sub(&srv->active, 1);
		rc = -ENOMEM;
		goto out;
	}
	c->user = conn;
	struct rcc_ep_attr ea = conn_attr(srv, ep_attr);
	if (srv->attr.thread_mode == RCC_THREAD_PER_EP) {
		rc = rcci_server_agent_new(srv, true, &ea, &ag);
		if (rc) {
			atomic_fetch_sub(&srv->active, 1);
			free(c);
			goto out;
		}
	} else {
		ag = rcci_server_least_loaded(srv);
	}
	c->ag = ag;
	atomic_fetch_add(&ag->load, 1);
	ea.send_cq = ea.recv_cq = ag->cq;
	ea.context = c;
	rc = rcc_connect(srv->ctx, addr, &ea, timeout_ms ? timeout_ms : CONNECT_TIMEOUT_DEFAULT_MS,
			 &c->ep);
	if (rc) {
		log_info("server: connecting to %s failed: %s", addr, rcc_strerror(rc));
		connect_failed(srv, c);
		goto out;
	}
	if (ag->per_ep) {
		/* before the hand-over: should it fail, the connection is not served */
		rc = rcci_server_agent_start(ag);
		if (rc) {
			rcci_fail(rc, "rcc_server_connect: cannot start an agent thread");
			rcc_ep_close(c->ep);
			c->ep = NULL;
			connect_failed(srv, c);
			goto out;
		}
	}
	*ep = c->ep;
	rcci_server_track_conn(srv, c);
	rcci_server_agent_handover(ag, c);
	log_info("server: connected to %s", addr);
out:
	connect_end(srv);
	return rc;
}
