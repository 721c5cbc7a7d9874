/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Bringing a run up and down: the control connection carries the plan, then
 * -q data connections each carry their owner's region; each side allocates
 * and registers the same layout, computed from the plan. With -c UD the data
 * endpoints are datagram endpoints instead, paired by an address exchange
 * on the same listener (rcc_ud_resolve / rcc_ud_answer), one per endpoint in
 * order; they need no region of the peer's (SEND only).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <rcc/util.h>

#include "opts.h"
#include "sess.h"

#define ALL_ACCESS                                                                   \
	(RCC_ACCESS_LOCAL_WRITE | RCC_ACCESS_REMOTE_WRITE | RCC_ACCESS_REMOTE_READ | \
	 RCC_ACCESS_REMOTE_ATOMIC)
/* Both areas of all endpoints together stay near this, unless one message is bigger. */
#define AREA_BUDGET (32u << 20)
#define ACCEPT_SLICE_MS 1000

size_t sess_area_bytes(const struct perf_params *p, uint32_t stride)
{
	uint32_t depth = p->tx_depth > p->rx_depth ? p->tx_depth : p->rx_depth;
	size_t want = (size_t)stride * depth;
	size_t budget = AREA_BUDGET / p->qps;

	if (p->flags & PF_ONE_BUFFER)
		want = stride; /* every message at the same place, as perftest and UCX do */

	if (want > budget)
		want = budget;
	if (want < stride)
		want = stride;
	return (want + 4095) & ~(size_t)4095;
}

static void ep_attr_data(struct sess *s, struct rcc_ep_attr *a)
{
	const struct perf_params *p = &s->p;

	memset(a, 0, sizeof(*a));
	a->send_cq = s->cq;
	a->sq_depth = p->tx_depth;
	a->rq_depth = p->rx_depth;
	a->max_send_sge = 1;
	a->max_recv_sge = 1;
	a->max_inline = p->inline_size == PERF_INLINE_AUTO ? 0 : p->inline_size;
	a->max_rd_atomic = p->outs;
	a->qp_type = (enum rcc_qp_type)p->qp_type;
}

/* CQ, epoll set and the registered regions of every data endpoint. */
static int data_alloc(struct sess *s)
{
	const struct perf_params *p = &s->p;
	uint32_t depth = (uint32_t)p->qps * ((uint32_t)p->tx_depth + p->rx_depth) + 16;
	struct rcc_cq_attr ca = { .depth = depth, .mode = p->cq_mode };
	int rc;

	s->max_size = plan_max_size(p);
	s->stride = (s->max_size + 63) & ~63u;
	rc = rcc_cq_create(s->ctx, &ca, &s->cq);
	if (rc) {
		perr("creating a CQ of depth %u: %s", depth, rcc_strerror(rc));
		return rc;
	}
	if (p->cq_mode == RCC_CQ_FD) {
		struct epoll_event ev = { .events = EPOLLIN };
		s->epfd = epoll_create1(EPOLL_CLOEXEC);
		if (s->epfd < 0 || epoll_ctl(s->epfd, EPOLL_CTL_ADD, rcc_cq_fd(s->cq), &ev)) {
			rc = -errno;
			perr("epoll on the CQ: %s", rcc_strerror(rc));
			return rc;
		}
	}
	s->eps = calloc(p->qps, sizeof(*s->eps));
	s->peer.seen = calloc(p->qps, sizeof(*s->peer.seen));
	s->peer.count = calloc(p->qps, sizeof(*s->peer.count));
	if (!s->eps || !s->peer.seen || !s->peer.count)
		return -ENOMEM;
	s->neps = p->qps;
	for (int i = 0; i < s->neps; i++) {
		struct pep *e = &s->eps[i];
		void *mem;
		e->index = i;
		e->area = sess_area_bytes(p, s->stride);
		e->rx_slots = (uint32_t)(e->area / s->stride);
		if (!(p->flags & PF_HEAP_MEM)) {
			/* what a peer on the same host can map (docs/shm.md) */
			rc = rcc_mem_alloc(s->ctx, 2 * e->area, &mem);
			if (rc) {
				perr("rcc_mem_alloc of %zu bytes: %s", 2 * e->area,
				     rcc_strerror(rc));
				return rc;
			}
			e->buf_shared = true;
		} else if (posix_memalign(&mem, 4096, 2 * e->area)) {
			perr("out of memory for %zu bytes of buffers", 2 * e->area);
			return -ENOMEM;
		}
		e->buf = mem;
		memset(e->buf, 0, 2 * e->area);
		rc = rcc_mr_reg(s->ctx, e->buf, 2 * e->area, ALL_ACCESS, &e->mr);
		if (rc) {
			perr("registering %zu bytes: %s", 2 * e->area, rcc_strerror(rc));
			return rc;
		}
		e->lkey = rcc_mr_lkey(e->mr);
		uint32_t ring = 1;
		while (ring < p->tx_depth)
			ring <<= 1;
		e->ring = calloc(ring, sizeof(*e->ring));
		if (!e->ring)
			return -ENOMEM;
		e->ring_mask = ring - 1;
	}
	s->rx_want = sess_rx_want(s);
	return 0;
}

/* The peer's region must have our layout: same plan, same sizes. NULL when it
 * has (e->remote is then set), else why not. */
static const char *peer_hello_mismatch(struct sess *s, struct pep *e, const void *pd, size_t len)
{
	uint32_t cookie;
	uint16_t index;
	struct rcc_remote_mr mr;

	if (data_hello_decode(pd, len, &cookie, &index, &mr))
		return "not an rcc-perf data connection";
	if (cookie != s->p.cookie)
		return "a data connection of another run";
	if (index != e->index || mr.length < 2 * e->area)
		return "a data connection that does not match this run's plan";
	e->remote = mr;
	return NULL;
}

/* Receives posted before the peer can send (initial_recv). */
static int initial_recvs(struct sess *s, struct pep *e, struct rcc_ep_attr *a,
			 struct rcc_recv_wr **wrs, struct rcc_sge **sges)
{
	uint32_t want = s->rx_want;
	int n;

	*wrs = calloc(want ? want : 1, sizeof(**wrs));
	*sges = calloc(want ? want : 1, sizeof(**sges));
	if (!*wrs || !*sges)
		return -ENOMEM;
	n = pep_recv_wrs(s, e, (int)want, *wrs, *sges);
	a->initial_recv = *wrs;
	a->num_initial_recv = n;
	return n;
}

static bool ud(const struct sess *s) { return s->p.qp_type == RCC_QP_UD; }

/* A datagram endpoint for e, its initial receives posted. */
static int ud_endpoint(struct sess *s, struct pep *e)
{
	struct rcc_recv_wr *wrs;
	struct rcc_sge *sges;
	struct rcc_ep_attr a;

	ep_attr_data(s, &a);
	a.context = e;
	int n = initial_recvs(s, e, &a, &wrs, &sges);
	int rc = n < 0 ? n : rcc_ud_create(s->ctx, &a, &e->ep);
	free(wrs);
	free(sges);
	if (rc) {
		perr("datagram endpoint %d: %s", e->index, explain_status(rc));
		return rc;
	}
	e->rx_posted = (uint32_t)n;
	e->rx_post_seq = (uint64_t)n;
	if (plan_max_size(&s->p) > rcc_ud_max_msg(e->ep)) {
		perr("the plan sends datagrams of %u bytes; this side carries at most %u "
		     "(rcc_ud_max_msg: the path MTU)",
		     plan_max_size(&s->p), rcc_ud_max_msg(e->ep));
		return -EMSGSIZE;
	}
	return 0;
}

static int ud_pair(struct pep *e, const struct rcc_ud_addr *peer)
{
	int rc = rcc_ah_create(e->ep, peer, &e->ah);

	if (rc)
		perr("datagram endpoint %d: the peer's address: %s", e->index, rcc_last_error());
	return rc;
}

/*
 * -c UD, client: fit the plan's sizes to one datagram of this side's (the
 * server checks its own against the plan) before the server sees the plan:
 * -a becomes the powers of two up to it, --sizes loses what is larger, a
 * larger -s is refused.
 */
static int ud_fit_plan(struct sess *s)
{
	struct perf_params *p = &s->p;
	struct rcc_cq_attr ca = { .depth = 4 };
	struct rcc_cq *cq = NULL;
	struct rcc_ep *probe = NULL;
	uint32_t max = 0, mask = 0;
	int rc = rcc_cq_create(s->ctx, &ca, &cq);

	if (!rc) {
		struct rcc_ep_attr a = {
			.send_cq = cq, .sq_depth = 1, .rq_depth = 1, .qp_type = RCC_QP_UD
		};
		rc = rcc_ud_create(s->ctx, &a, &probe);
	}
	if (!rc)
		max = rcc_ud_max_msg(probe);
	if (probe)
		rcc_ep_close(probe);
	if (cq)
		rcc_cq_destroy(cq);
	if (rc) {
		perr("a datagram endpoint: %s", explain_status(rc));
		return rc;
	}
	for (uint32_t k = 1; k < 31 && (1u << k) <= max; k++)
		mask |= 1u << k;
	if (p->flags & PF_ALL_SIZES) {
		p->flags = (uint16_t)((p->flags & ~PF_ALL_SIZES) | PF_SIZE_LIST);
		p->size = mask;
	} else if (p->flags & PF_SIZE_LIST) {
		if (!(p->size & (mask | 1u))) {
			perr("--sizes: a datagram carries at most %u bytes here", max);
			return -EMSGSIZE;
		}
		p->size &= mask | 1u;
	} else if (p->size > max) {
		perr("-s %u: a datagram carries at most %u bytes here (the path MTU)", p->size,
		     max);
		return -EMSGSIZE;
	}
	return 0;
}

static void note_inline(struct sess *s)
{
	uint32_t got = rcc_ep_max_inline(s->eps[0].ep);

	if (s->p.inline_size == PERF_INLINE_AUTO)
		s->max_inline = got;
	else
		s->max_inline = s->p.inline_size < got ? s->p.inline_size : got;
}

static const char *connect_error(int rc)
{
	switch (rc) {
	case -ECONNREFUSED:
		return "connection refused (is an rcc-perf server running there?)";
	case -ECONNABORTED:
		return "the server rejected the connection (see its output)";
	case -ETIMEDOUT:
		return "no answer in time";
	default:
		return explain_status(rc);
	}
}

int sess_client_connect(struct sess *s)
{
	const struct perf_config *cfg = s->cfg;
	uint8_t pd[PERF_PARAMS_WIRE_LEN];
	struct rcc_ep_attr a;
	char addr[300];
	int rc;

	s->epfd = -1;
	s->timeout_ms = cfg->timeout_ms;
	rc = rcc_ctx_open(&cfg->ctx, &s->ctx);
	if (rc) {
		perr("opening the %s transport: %s", rcc_transport_name(cfg->ctx.transport),
		     explain_status(rc));
		return rc;
	}
	s->transport = rcc_transport_name(rcc_ctx_transport(s->ctx));
	rc = ctrl_init(&s->ctrl, s->ctx);
	if (rc) {
		perr("control channel: %s", rcc_strerror(rc));
		return rc;
	}
	join_host_port(addr, sizeof(addr), cfg->host, cfg->port);
	if (ud(s)) {
		rc = ud_fit_plan(s);
		if (rc)
			return rc;
	}
	params_encode(&s->p, pd);
	ctrl_fill_attr(&s->ctrl, &a);
	a.private_data = pd;
	a.private_data_len = sizeof(pd);
	uint8_t why[RCC_REJECT_PRIVATE_DATA_MAX];
	size_t why_len = 0;
	rc = rcc_connect_ex(s->ctx, addr, &a, s->timeout_ms, &s->ctrl.ep, why, &why_len);
	if (rc == -ECONNABORTED && why_len) {
		/* the server's words, but a peer's bytes: escaped and bounded */
		char text[4 * RCC_REJECT_PRIVATE_DATA_MAX + 1];
		rcc_text_escape(text, sizeof(text), why, why_len);
		perr("connecting to %s: the server rejected the connection: %s", addr, text);
		return rc;
	}
	if (rc) {
		perr("connecting to %s: %s", addr, connect_error(rc));
		return rc;
	}
	rc = ctrl_bind(&s->ctrl);
	if (rc) {
		perr("control channel: %s", rcc_strerror(rc));
		return rc;
	}
	rc = data_alloc(s);
	if (rc)
		return rc;
	for (int i = 0; i < s->neps; i++) {
		struct pep *e = &s->eps[i];
		struct rcc_recv_wr *wrs;
		struct rcc_sge *sges;
		uint8_t hello[PERF_DATA_HELLO_LEN];
		struct rcc_remote_mr mine = rcc_mr_remote(e->mr);
		const void *peer;
		size_t len;

		if (ud(s)) {
			struct rcc_ud_addr where;
			rc = ud_endpoint(s, e);
			if (!rc) {
				rc = rcc_ud_resolve(e->ep, addr, s->timeout_ms, &where);
				if (rc)
					perr("datagram endpoint %d: exchanging addresses with %s: %s",
					     i, addr, rcc_last_error());
			}
			if (!rc)
				rc = ud_pair(e, &where);
			if (rc)
				return rc;
			continue;
		}
		ep_attr_data(s, &a);
		int n = initial_recvs(s, e, &a, &wrs, &sges);
		data_hello_encode(s->p.cookie, (uint16_t)i, &mine, hello);
		a.private_data = hello;
		a.private_data_len = sizeof(hello);
		a.context = e;
		rc = n < 0 ? n : rcc_connect(s->ctx, addr, &a, s->timeout_ms, &e->ep);
		free(wrs);
		free(sges);
		if (rc) {
			perr("data connection %d to %s: %s", i, addr, connect_error(rc));
			return rc;
		}
		e->rx_posted = (uint32_t)n;
		e->rx_post_seq = (uint64_t)n;
		peer = rcc_ep_private_data(e->ep, &len);
		const char *mismatch = peer_hello_mismatch(s, e, peer, len);
		if (mismatch) {
			perr("data connection %d: the server's hello: %s", i, mismatch);
			return -EPROTO;
		}
	}
	note_inline(s);
	return 0;
}

/* Wait for a connection request in slices (forever if limit_s is 0). */
static int next_request(struct rcc_listener *lst, int limit_s, struct rcc_conn_req **req)
{
	uint64_t end = mono_ns() + (uint64_t)limit_s * 1000000000ull;

	for (;;) {
		int rc = rcc_get_request(lst, ACCEPT_SLICE_MS, req);
		if (rc != -ETIMEDOUT)
			return rc;
		if (perf_stop)
			return -EINTR;
		if (limit_s && mono_ns() >= end)
			return -ETIMEDOUT;
	}
}

/*
 * The request for data connection e, by the set-up deadline end. Anything
 * else that arrives meanwhile (a stray or forged data connection, another
 * client) is turned away with the reason and does not end the session.
 */
static int next_data_request(struct sess *s, struct rcc_listener *lst, struct pep *e, uint64_t end,
			     struct rcc_conn_req **req)
{
	for (;;) {
		uint64_t now = mono_ns();
		if (now >= end)
			return -ETIMEDOUT;
		int rc = rcc_get_request(lst, (int)((end - now + 999999) / 1000000), req);
		if (rc)
			return rc;
		size_t len;
		const void *pd = rcc_conn_req_private_data(*req, &len);
		const char *why = peer_hello_mismatch(s, e, pd, len);
		if (!why)
			return 0;
		if (params_decode(pd, len, &(struct perf_params){ 0 }) == 0)
			why = "busy with another client";
		perr("turning away %s: %s", rcc_conn_req_peer(*req), why);
		rcc_reject_req(*req, why, strlen(why));
		*req = NULL;
	}
}

/* Milliseconds left until the monotonic deadline end (at least 1). */
static int ms_until(uint64_t end)
{
	uint64_t now = mono_ns();
	return now >= end ? 1 : (int)((end - now + 999999) / 1000000);
}

static void setup_failed(const struct sess *s, int i, const char *what, int rc)
{
	if (rc == -ETIMEDOUT)
		perr("the client opened %d of its %d data connections within the set-up "
		     "deadline (--setup-timeout %d ms): dropped",
		     i, s->neps, s->cfg->setup_timeout_ms);
	else
		perr("waiting for %s %d: %s", what, i, rcc_strerror(rc));
}

int sess_server_accept(struct sess *s, struct rcc_listener *lst)
{
	const struct perf_config *cfg = s->cfg;
	struct rcc_conn_req *req;
	struct rcc_ep_attr a;
	const void *pd;
	const char *why;
	size_t len;
	int rc;

	s->epfd = -1;
	s->timeout_ms = cfg->timeout_ms;
	s->transport = rcc_transport_name(rcc_ctx_transport(s->ctx));
	for (;;) {
		rc = next_request(lst, cfg->accept_timeout_s, &req);
		if (rc) {
			if (rc == -ETIMEDOUT)
				perr("no client within %d s", cfg->accept_timeout_s);
			else if (rc == -EINTR)
				perr("interrupted while waiting for a client");
			else
				perr("waiting for a client: %s", rcc_strerror(rc));
			return rc;
		}
		pd = rcc_conn_req_private_data(req, &len);
		rc = params_decode(pd, len, &s->p);
		why = rc == -EPROTONOSUPPORT ? "another rcc-perf version" :
		      rc ? "not an rcc-perf client (or a stray data connection)" :
			   plan_check(&s->p);
		if (!why)
			break;
		perr("rejecting %s: %s", rcc_conn_req_peer(req), why);
		rcc_reject_req(req, why, strlen(why));
	}
	if (!cfg->quiet)
		fprintf(cfg->text, " Client %s connected\n", rcc_conn_req_peer(req));
	rc = ctrl_init(&s->ctrl, s->ctx);
	if (rc) {
		rcc_reject_req(req, NULL, 0);
		perr("control channel: %s", rcc_strerror(rc));
		return rc;
	}
	ctrl_fill_attr(&s->ctrl, &a);
	rc = rcc_accept_req(req, &a, &s->ctrl.ep);
	if (rc) {
		perr("accepting the client: %s", rcc_strerror(rc));
		return rc;
	}
	rc = ctrl_bind(&s->ctrl);
	if (rc) {
		perr("control channel: %s", rcc_strerror(rc));
		return rc;
	}
	rc = data_alloc(s);
	if (rc)
		return rc;
	/* the rest of the set-up has its own short bound: a client that sent a
	 * valid hello and stopped frees the server for others by then */
	uint64_t setup_end = mono_ns() + (uint64_t)cfg->setup_timeout_ms * 1000000ull;
	for (int i = 0; i < s->neps; i++) {
		struct pep *e = &s->eps[i];
		struct rcc_recv_wr *wrs;
		struct rcc_sge *sges;
		uint8_t hello[PERF_DATA_HELLO_LEN];
		struct rcc_remote_mr mine = rcc_mr_remote(e->mr);

		if (ud(s)) {
			struct rcc_ud_addr where;
			rc = ud_endpoint(s, e);
			if (!rc) {
				rc = rcc_ud_answer(lst, e->ep, ms_until(setup_end), &where);
				if (rc)
					setup_failed(s, i, "datagram endpoint", rc);
			}
			if (!rc)
				rc = ud_pair(e, &where);
			if (rc)
				return rc;
			continue;
		}
		rc = next_data_request(s, lst, e, setup_end, &req);
		if (rc) {
			setup_failed(s, i, "data connection", rc);
			return rc;
		}
		ep_attr_data(s, &a);
		int n = initial_recvs(s, e, &a, &wrs, &sges);
		data_hello_encode(s->p.cookie, (uint16_t)i, &mine, hello);
		a.private_data = hello;
		a.private_data_len = sizeof(hello);
		a.context = e;
		rc = n < 0 ? n : rcc_accept_req(req, &a, &e->ep);
		free(wrs);
		free(sges);
		if (rc) {
			perr("accepting data connection %d: %s", i, rcc_strerror(rc));
			return rc;
		}
		e->rx_posted = (uint32_t)n;
		e->rx_post_seq = (uint64_t)n;
	}
	note_inline(s);
	return 0;
}

void sess_close(struct sess *s)
{
	for (int i = 0; i < s->neps; i++) {
		struct pep *e = &s->eps[i];
		if (e->ah)
			rcc_ah_destroy(e->ah);
		if (e->ep)
			rcc_ep_close(e->ep);
		if (e->mr)
			rcc_mr_dereg(e->mr);
		if (e->buf_shared)
			rcc_mem_free(s->ctx, e->buf);
		else
			free(e->buf);
		free(e->ring);
	}
	free(s->eps);
	free(s->peer.seen);
	free(s->peer.count);
	s->eps = NULL;
	s->peer.seen = NULL;
	s->peer.count = NULL;
	s->neps = 0;
	if (s->epfd >= 0)
		close(s->epfd);
	s->epfd = -1;
	if (s->cq)
		rcc_cq_destroy(s->cq);
	s->cq = NULL;
	ctrl_fini(&s->ctrl);
	results_free(&s->results);
}
