/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Bring-up and teardown: the context, the registered pools, the server, and
 * its connection to each peer. Pools are sized for the whole mesh up front, so no
 * registration happens while traffic runs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mesh.h"
#include "opts.h"

#define ACC_LOCAL RCC_ACCESS_LOCAL_WRITE
#define ACC_TARGET (RCC_ACCESS_LOCAL_WRITE | RCC_ACCESS_REMOTE_WRITE)
#define SHARED_CQ_MIN 16384u /* the session server's own shared CQ depth */

static int pool(struct mesh *m, const char *what, size_t piece, uint32_t count, unsigned access,
		struct rcc_pool **out)
{
	int rc = rcc_pool_create(m->ctx, piece, count, access, out);
	if (rc)
		complain(m, "cannot register the %s pool (%u x %zu bytes): %s", what, count, piece,
			 explain_status(rc));
	return rc;
}

static void pools_destroy(struct mesh *m)
{
	struct rcc_pool **all[] = { &m->ctrl_pool, &m->recv_pool, &m->target_pool, &m->src_pool };
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		if (*all[i] && rcc_pool_destroy(*all[i]))
			complain(m, "a buffer pool still had pieces out at exit");
		*all[i] = NULL;
	}
}

static int pools_create(struct mesh *m)
{
	uint32_t peers = (uint32_t)m->n - 1, q = m->q[0] + m->q[1];
	int rc;

	if ((rc = pool(m, "source", m->o->size, peers * q, ACC_LOCAL, &m->src_pool)))
		return rc;
	if (m->q[STREAM_WRITE] &&
	    (rc = pool(m, "write target", (size_t)m->stride * m->q[STREAM_WRITE], peers, ACC_TARGET,
		       &m->target_pool)))
		goto err;
	/* with --srq the session server owns the receive buffers */
	if (!m->srq_depth &&
	    (rc = pool(m, "receive", m->recv_piece, peers * m->nrecv, ACC_LOCAL, &m->recv_pool)))
		goto err;
	if ((rc = pool(m, "control", CTRL_SIZE,
		       peers * (SRV_CTRL_SENDS + CLI_CTRL_RECVS + CLI_CTRL_SENDS), ACC_LOCAL,
		       &m->ctrl_pool)))
		goto err;
	return 0;
err:
	pools_destroy(m);
	return rc;
}

int mesh_open(struct mesh *m, const struct mesh_opts *o)
{
	const char *addrs[MESH_MAX_NODES];
	int rc;

	memset(m, 0, sizeof(*m));
	m->o = o;
	m->n = o->nnodes;
	m->rank = o->rank;
	m->q[STREAM_WRITE] = o->ops & OPS_WRITE ? o->depth : 0;
	m->q[STREAM_SEND] = o->ops & OPS_SEND ? o->depth : 0;
	m->stride = (o->size + 63u) & ~63u;
	/* Receives are consumed in arrival order by data and control alike. */
	m->recv_piece = o->size > CTRL_SIZE ? o->size : CTRL_SIZE;
	m->nrecv = m->q[0] + m->q[1] + SRV_CTRL_RECVS;
	/* One connection's worth of receives for all of them: receive memory no
	 * longer grows with the peers; senders that find it empty wait (RNR). */
	m->srq_depth = o->srq ? m->nrecv : 0;
	for (int i = 0; i < m->n; i++)
		addrs[i] = o->nodes[i].addr;
	m->list_hash = list_hash(addrs, m->n);
	m->nodes_state = o->boot ? NODES_PENDING : NODES_KNOWN;
	accept_encode((uint16_t)m->rank, (uint16_t)m->n, m->accept_pd);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* deadlines are monotonic */
	pthread_mutex_init(&m->lock, NULL);
	pthread_cond_init(&m->cond, &ca);
	pthread_condattr_destroy(&ca);
	atomic_init(&m->phase, PH_SETUP);
	atomic_init(&m->data_error, false);

	m->peers = calloc((size_t)m->n, sizeof(*m->peers));
	if (is_collector(m)) {
		m->pairs = calloc((size_t)m->n * (size_t)m->n, sizeof(*m->pairs));
		m->ranks = calloc((size_t)m->n, sizeof(*m->ranks));
	}
	if (!m->peers || (is_collector(m) && (!m->pairs || !m->ranks))) {
		complain(m, "out of memory");
		rc = -ENOMEM;
		goto err_mem;
	}
	for (int i = 0; i < m->n; i++) {
		struct peer *p = &m->peers[i];
		p->rank = i;
		p->m = m;
		p->node = &o->nodes[i];
		atomic_init(&p->failed, false);
		atomic_init(&p->out_busy, false);
		atomic_init(&p->in_seen_ns, 0);
		atomic_init(&p->out_seen_ns, 0);
	}

	rc = rcc_ctx_open(&o->ctx, &m->ctx);
	if (rc) {
		complain(m, "cannot open the %s transport: %s",
			 rcc_transport_name(o->ctx.transport), explain_status(rc));
		goto err_mem;
	}
	/* The baseline for memory per connection: the context, no pools or peers yet. */
	m->rss_base_kb = rss_kb(NULL);
	rc = pools_create(m);
	if (rc)
		goto err_ctx;
	return 0;

err_ctx:
	rcc_ctx_close(m->ctx);
	m->ctx = NULL;
err_mem:
	free(m->ranks);
	free(m->pairs);
	free(m->peers);
	pthread_cond_destroy(&m->cond);
	pthread_mutex_destroy(&m->lock);
	return rc;
}

/*
 * Shared mode: each agent's CQ takes the completions of its share of both
 * sides' connections (the server deals them out evenly, a few more for the
 * ones placed at the same moment), each at most its queues' depth, plus the
 * SRQ's receives, which may all complete on one CQ. Never less than the
 * server's own default. Per-ep mode: the server sizes each CQ for its one
 * endpoint (0).
 */
static uint32_t shared_cq_depth(const struct mesh *m)
{
	int threads = m->o->threads > 0 ? m->o->threads : 1;
	uint32_t in = SRV_CTRL_SENDS + 2 + (m->srq_depth ? 0 : m->nrecv);
	uint32_t out = out_sq_depth(m) + (m->srq_depth ? 0 : CLI_CTRL_RECVS);
	uint32_t per = (uint32_t)((2 * (m->n - 1) + threads - 1) / threads) + 2;
	uint32_t need = per * (in > out ? in : out);

	if (m->o->thread_mode != RCC_THREAD_SHARED_CQ)
		return 0;
	return (need > SHARED_CQ_MIN ? need : SHARED_CQ_MIN) + m->srq_depth;
}

int mesh_listen(struct mesh *m)
{
	const struct node *me = &m->o->nodes[m->rank];
	char addr[300];
	int rc;

	if (m->o->boot)
		launch_listen_addr(m, addr, sizeof(addr));
	else if (m->o->bind)
		join_host_port(addr, sizeof(addr), m->o->bind, me->port);
	else
		snprintf(addr, sizeof(addr), "%s", me->addr);
	struct rcc_server_attr attr = {
		.addr = addr,
		.thread_mode = m->o->thread_mode,
		.num_threads = m->o->threads,
		.cq_mode = m->o->cq_mode,
		.cq_depth = shared_cq_depth(m),
		.ep_attr = {
			.sq_depth = SRV_CTRL_SENDS + 2,
			.rq_depth = m->nrecv,
			.private_data = m->accept_pd,
			.private_data_len = ACCEPT_LEN,
		},
		/* ours out and in, and room for a stray connection to be told off */
		.max_connections = 2 * m->n,
		.ops = &mesh_ops,
		.arg = m,
		.srq_depth = m->srq_depth,
		.srq_buf_size = m->recv_piece,
		.wake_ms = WAKE_MS,
	};
	rc = rcc_server_start(m->ctx, &attr, &m->srv);
	if (rc) {
		complain(m, "cannot listen on %s: %s", addr, explain_status(rc));
		return rc;
	}
	if (m->o->boot) /* the port the system chose */
		join_host_port(addr, sizeof(addr), m->o->bind ? m->o->bind : "0.0.0.0",
			       rcc_server_port(m->srv));
	say(m, "listening on %s (transport %s, %s threads, cq %s%s)", addr,
	    rcc_transport_name(rcc_ctx_transport(m->ctx)), thread_mode_name(m->o->thread_mode),
	    cq_mode_name(m->o->cq_mode), m->srq_depth ? ", one SRQ" : "");
	return 0;
}

/*
 * One peer after the other: each connect is retried while its peer is not up
 * yet, and our server accepts meanwhile, so no start order can deadlock.
 */
int mesh_connect_all(struct mesh *m, uint64_t deadline_ns)
{
	for (int k = 1; k < m->n; k++) {
		/* start with the next rank so the nodes do not all queue at rank 0 */
		struct peer *p = &m->peers[(m->rank + k) % m->n];
		int rc = out_create(m, p, &p->out);
		if (!rc)
			rc = out_connect(p->out, deadline_ns);
		if (rc)
			return rc;
		if (atomic_load(&m->phase) == PH_EXIT)
			return -EINTR;
	}
	return 0;
}

void mesh_close(struct mesh *m)
{
	if (m->srv)
		rcc_server_stop(m->srv); /* every connection, both sides, ends first */
	m->srv = NULL;
	for (int i = 0; i < m->n; i++) {
		if (m->peers[i].out)
			out_destroy(m->peers[i].out);
		m->peers[i].out = NULL;
	}
	pools_destroy(m);
	if (m->ctx && rcc_ctx_close(m->ctx))
		complain(m, "the context still had objects open at exit");
	free(m->my_rows);
	free(m->ranks);
	free(m->pairs);
	free(m->peers);
	pthread_cond_destroy(&m->cond);
	pthread_mutex_destroy(&m->lock);
}
