/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rcc_connect_start() and rcc_accept_start(): a connect or an accept that
 * returns at once and ends with a connection event.
 *
 * The attempt is the same as rcc_connect()'s or rcc_accept_req()'s, run on a
 * thread of its own:
 * the transports' connect paths block on sockets and on rdma_cm with
 * deadlines, and running them elsewhere keeps one code path (and one set of
 * rules) for both calls. While it runs, the transport sees an endpoint in
 * RCC_EP_CONNECTED -- as during rcc_connect() -- and the application sees
 * RCC_EP_CONNECTING and cannot post. Disconnect and close wait for the
 * attempt to end: at most its timeout. The thread is detached and says it is
 * done as its last act: a server keeps its accepted endpoints open for long,
 * and a thread joined only at close kept its stack (8 MiB of address space,
 * two mappings) for every connection until then.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/last_error.h"
#include "base/log.h"
#include "base/thread.h"
#include "core/core.h"

struct rcci_connector {
	pthread_mutex_t lock; /* done, under it */
	pthread_cond_t ended; /* signalled once done */
	pthread_t thread;
	bool done; /* the attempt ended: the thread touches nothing of ours any more */
	bool up;   /* the transport set the endpoint up */
	int status;
	int timeout_ms;
	struct rcc_conn_req *req; /* accepting this; NULL: connecting to ss */
	struct sockaddr_storage ss;
	socklen_t len;
	/* the caller's initial receives, copied: the attempt outlives the call */
	struct rcc_recv_wr *recv;
	struct rcc_sge *sge;
};

static void *connect_main(void *arg)
{
	struct rcc_ep *ep = arg;
	struct rcci_connector *c = ep->connector;

	bool accepting = c->req != NULL;
	int rc = accepting ? ep->ctx->conn->accept(c->req, ep) :
			     ep->ctx->conn->connect(ep, (struct sockaddr *)&c->ss, c->len,
						    c->timeout_ms);
	free(c->req); /* consumed either way, as by rcc_accept_req() */
	c->req = NULL;
	if (rc) {
		log_debug("%s %s failed: %s", accepting ? "accept from" : "connect to", ep->peer,
			  rcc_strerror(rc));
		c->status = rc;
		rcci_ep_left(ep, rc, "the connection could not be set up", false);
		atomic_store_explicit(&ep->state, RCC_EP_DISCONNECTED, memory_order_release);
	} else {
		rcci_connect_done(ep);
		c->up = true;
	}
	/* published last: whoever sees "not connecting" sees the outcome too */
	atomic_store_explicit(&ep->connecting, false, memory_order_release);
	rcci_ep_state_changed(ep);
	/* the last touch: close may free c and ep as soon as it sees done */
	pthread_mutex_lock(&c->lock);
	c->done = true;
	pthread_cond_broadcast(&c->ended);
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* Copy the initial receives (and their scatter lists) the attempt posts. */
static int copy_initial_recv(struct rcci_connector *c, struct rcc_ep_attr *a)
{
	int n = a->num_initial_recv, nsge = 0;

	if (n <= 0)
		return 0;
	for (int i = 0; i < n; i++)
		nsge += a->initial_recv[i].num_sge;
	c->recv = calloc((size_t)n, sizeof(*c->recv));
	c->sge = calloc(nsge ? (size_t)nsge : 1, sizeof(*c->sge));
	if (!c->recv || !c->sge)
		return -ENOMEM;
	for (int i = 0, k = 0; i < n; i++) {
		c->recv[i] = a->initial_recv[i];
		c->recv[i].sg_list = &c->sge[k];
		memcpy(&c->sge[k], a->initial_recv[i].sg_list,
		       (size_t)a->initial_recv[i].num_sge * sizeof(*c->sge));
		k += a->initial_recv[i].num_sge;
	}
	a->initial_recv = c->recv;
	return 0;
}

static void connector_release(struct rcci_connector *c)
{
	free(c->recv);
	free(c->sge);
	pthread_cond_destroy(&c->ended);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/* Hand ep to a thread of its own; on failure ep is freed (and an accept's
 * request rejected and freed). */
static int launch(struct rcci_connector *c, struct rcc_ep *ep)
{
	int rc = copy_initial_recv(c, &ep->attr);
	if (rc)
		goto err_ep;
	ep->connector = c;
	atomic_store(&ep->connecting, true);
	/* counted from now: its CQs and context cannot go while it comes up */
	rcci_ep_count_users(ep);
	rc = rcci_thread_create(&c->thread, connect_main, ep);
	if (rc) {
		rcci_fail(rc, "cannot start a thread to bring the connection up: %s",
			  rcc_strerror(rc));
		rcci_ep_uncount_users(ep);
		goto err_ep;
	}
	pthread_detach(c->thread); /* waited for by done, not by a join */
	return 0;

err_ep:
	if (c->req) {
		ep->ctx->conn->reject(c->req, NULL, 0);
		free(c->req);
	}
	free(ep);
	return rc;
}

int rcc_connect_start(struct rcc_ctx *ctx, const char *addr, const struct rcc_ep_attr *attr,
		      int timeout_ms, struct rcc_ep **out)
{
	struct rcci_connector *c;
	struct rcc_ep *ep;
	int rc;

	rcci_error_clear();
	if (!ctx || !addr || !out || timeout_ms < 0)
		return rcci_fail(-EINVAL, "rcc_connect_start: a NULL argument or a negative "
					  "timeout (a started connect needs a bound)");
	rc = rcci_events_enable(ctx); /* the outcome arrives as an event */
	if (rc)
		return rc;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->ended, NULL);
	c->timeout_ms = timeout_ms;
	rc = rcci_connect_prepare(ctx, addr, attr, &ep, &c->ss, &c->len);
	if (rc)
		goto err_c;
	rc = launch(c, ep);
	if (rc)
		goto err_c;
	*out = ep;
	return 0;

err_c:
	connector_release(c);
	return rc;
}

int rcc_accept_start(struct rcc_conn_req *req, const struct rcc_ep_attr *attr, struct rcc_ep **out)
{
	struct rcci_connector *c;
	struct rcc_ep *ep;
	int rc;

	rcci_error_clear();
	if (!req)
		return -EINVAL;
	rc = rcci_events_enable(req->lst->ctx);
	c = rc ? NULL : calloc(1, sizeof(*c));
	if (!c) {
		/* the request is consumed either way */
		rc = rc ? rc : -ENOMEM;
		req->lst->ctx->conn->reject(req, NULL, 0);
		free(req);
		return rc;
	}
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->ended, NULL);
	rc = rcci_accept_prepare(req, attr, out != NULL, &ep);
	if (rc)
		goto err_c;
	c->req = req;
	rc = launch(c, ep);
	if (rc) {
		c->req = NULL; /* launch rejected and freed it */
		goto err_c;
	}
	*out = ep;
	return 0;

err_c:
	connector_release(c);
	return rc;
}

bool rcci_connect_wait(struct rcc_ep *ep)
{
	struct rcci_connector *c = ep->connector;

	if (!c)
		return true;
	pthread_mutex_lock(&c->lock);
	while (!c->done)
		pthread_cond_wait(&c->ended, &c->lock);
	pthread_mutex_unlock(&c->lock);
	return c->up;
}

int rcci_connect_status(const struct rcc_ep *ep)
{
	const struct rcci_connector *c = ep->connector;

	if (!c || atomic_load_explicit(&ep->connecting, memory_order_acquire))
		return 0;
	return c->status;
}

void rcci_connector_free(struct rcc_ep *ep)
{
	if (ep->connector)
		connector_release(ep->connector);
	ep->connector = NULL;
}
