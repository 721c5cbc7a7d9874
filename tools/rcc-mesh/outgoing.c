/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The sending side of one outgoing connection: opened with rcc_server_connect()
 * and run by the session server's agent that serves it (agents.c). Its
 * completions move it on, and so does on_wake: the main thread wakes the
 * agents when the phase changes (and at the end of the traffic time), and
 * they call it every WAKE_MS anyway.
 *
 * Life of a connection: wait for the peer's WELCOME (where its write slots
 * are), send READY once our mesh is complete, then at GO keep both streams'
 * windows full -- WRITE with immediate into slot (index mod depth), SEND into
 * its receives -- as far as credits from the peer allow. At the end send FIN
 * with what we sent, and, toward the collector, our figures and DONE.
 * Credits count messages the peer has checked, so a write slot is never
 * overwritten before it was verified and a SEND never meets an empty queue.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mesh.h"
#include "opts.h"
#include "pattern.h"

#define POST_BATCH 32
#define CONNECT_ATTEMPT_MS 5000

enum out_state {
	OUT_WAIT_WELCOME = 0,
	OUT_WELCOMED,   /* knows the peer's slots; READY goes out once our mesh is up */
	OUT_READY_SENT, /* waiting for GO */
	OUT_TRAFFIC,
	OUT_FINISHING, /* no more data; FIN goes out when a control buffer is free */
	OUT_FIN_SENT,
	OUT_FIN_DONE, /* toward the collector: waiting until our figures are ready */
	OUT_REPORTING,
	OUT_DONE, /* nothing more to do: a disconnect now is orderly */
	OUT_FAILED,
};

static const char *const state_name[] = {
	"while waiting for its welcome",
	"during setup",
	"at the barrier",
	"during traffic",
	"while finishing",
	"while finishing",
	"after traffic",
	"while reporting",
	"after the end",
	"after failing",
};

struct out_conn {
	enum conn_kind kind; /* CONN_OUT */
	struct mesh *m;
	struct peer *p;
	struct rcc_ep *ep; /* set on the agent, by on_connect */
	enum out_state st;
	struct rcc_remote_mr target;
	uint32_t rstride, rslots;
	void **src[2];       /* depth source pieces per stream */
	uint64_t *t_post[2]; /* when each source's message was posted */
	uint64_t posted[2], completed[2], credit[2];
	int64_t shift[2];  /* label minus index: non-zero only after an injected fault */
	int inject_stream; /* -1: no fault toward this peer */
	uint64_t bytes, t_last;
	void *crecv[CLI_CTRL_RECVS];
	struct rcc_sge rsge[CLI_CTRL_RECVS];
	struct rcc_recv_wr rwr[CLI_CTRL_RECVS];
	struct ctrl_sender ctrl;
	int rows_sent;
	bool done_posted;
	struct histogram lat;
};

static bool finished(const struct out_conn *c) { return c->st == OUT_DONE || c->st == OUT_FAILED; }

static void fail(struct out_conn *c, const char *what, const char *detail)
{
	if (c->st == OUT_FAILED)
		return;
	peer_fail(c->p, "%s %s (%s)", what, state_name[c->st], detail);
	c->st = OUT_FAILED;
	atomic_store(&c->p->out_busy, false);
	rcc_ep_disconnect(c->ep);
}

/* ------------------------------------------------------------ control */

static int post_ctrl(struct out_conn *c, struct ctrl_msg *msg)
{
	int rc = ctrl_post(c->m, c->ep, &c->ctrl, msg);
	if (rc && rc != -EAGAIN)
		fail(c, "cannot send to it", rcc_strerror(rc));
	return rc;
}

static void publish_up(struct out_conn *c)
{
	pthread_mutex_lock(&c->m->lock);
	c->p->out_up = true;
	pthread_cond_broadcast(&c->m->cond);
	pthread_mutex_unlock(&c->m->lock);
}

static void on_ctrl(struct out_conn *c, const void *buf, uint32_t len)
{
	struct mesh *m = c->m;
	struct ctrl_msg msg;
	char why[96];

	if (ctrl_decode(buf, len, &msg) || msg.from != c->p->rank) {
		fail(c, "sent a malformed control message", "protocol error");
		return;
	}
	switch (msg.type) {
	case CTRL_WELCOME: {
		const struct ctrl_welcome *w = &msg.u.welcome;
		if (c->st != OUT_WAIT_WELCOME || w->slots != m->q[STREAM_WRITE] ||
		    (m->q[STREAM_WRITE] && (w->stride < m->o->size ||
					    w->target.length < (uint64_t)w->slots * w->stride))) {
			fail(c, "sent a welcome that does not fit our options", "protocol error");
			return;
		}
		c->target = w->target;
		c->rstride = w->stride;
		c->rslots = w->slots;
		c->st = OUT_WELCOMED;
		publish_up(c);
		break;
	}
	case CTRL_CREDIT:
		for (int s = 0; s < 2; s++) {
			if (msg.u.credit.verified[s] > c->posted[s]) {
				snprintf(why, sizeof(why), "credit for %llu messages, %llu sent",
					 (unsigned long long)msg.u.credit.verified[s],
					 (unsigned long long)c->posted[s]);
				fail(c, "sent an impossible credit", why);
				return;
			}
			if (msg.u.credit.verified[s] > c->credit[s])
				c->credit[s] = msg.u.credit.verified[s];
		}
		break;
	default:
		snprintf(why, sizeof(why), "unexpected %s", ctrl_type_name(msg.type));
		fail(c, "sent a control message meant for the other side", why);
	}
}

/* Our FIN has been delivered: every data message before it has completed too. */
static void fin_delivered(struct out_conn *c)
{
	struct mesh *m = c->m;
	struct pair_tx tx = {
		.msgs = { c->completed[0], c->completed[1] },
		.bytes = c->bytes,
		.ns = c->t_last > m->t_go ? c->t_last - m->t_go : 0,
		.lat_p50 = hist_percentile(&c->lat, 50),
		.lat_p99 = hist_percentile(&c->lat, 99),
		.lat_p999 = hist_percentile(&c->lat, 99.9),
		.lat_max = c->lat.max,
		.path = mesh_path_code(rcc_ep_path(c->ep)),
	};
	bool to_collector = c->p->rank == m->o->collector;

	c->st = to_collector ? OUT_FIN_DONE : OUT_DONE;
	atomic_store(&c->p->out_busy, false);
	pthread_mutex_lock(&m->lock);
	c->p->tx = tx;
	c->p->fin_tx = true;
	c->p->done_tx = !to_collector;
	pthread_cond_broadcast(&m->cond);
	pthread_mutex_unlock(&m->lock);
}

static void report_delivered(struct out_conn *c)
{
	c->st = OUT_DONE;
	atomic_store(&c->p->out_busy, false);
	pthread_mutex_lock(&c->m->lock);
	c->p->done_tx = true;
	pthread_cond_broadcast(&c->m->cond);
	pthread_mutex_unlock(&c->m->lock);
}

/* --------------------------------------------------------------- data */

static bool may_post(const struct out_conn *c, int s)
{
	uint32_t q = c->m->q[s];
	if (!q || c->posted[s] - c->credit[s] >= q || c->posted[s] - c->completed[s] >= q)
		return false;
	return !c->m->o->bytes || (c->posted[0] + c->posted[1]) * c->m->o->size < c->m->o->bytes;
}

static bool traffic_over(const struct out_conn *c, uint64_t now)
{
	const struct mesh_opts *o = c->m->o;
	if (o->bytes)
		return (c->posted[0] + c->posted[1]) * o->size >= o->bytes;
	return now >= c->m->t_stop;
}

static void prepare(struct out_conn *c, int s, uint64_t now, struct rcc_send_wr *wr,
		    struct rcc_sge *sge)
{
	struct mesh *m = c->m;
	uint64_t i = c->posted[s];
	uint32_t slot = (uint32_t)(i % m->q[s]);
	uint8_t *buf = c->src[s][slot];
	bool inject = s == c->inject_stream && i == INJECT_AT;

	if (inject && m->o->inject == INJECT_SKIP)
		c->shift[s]++;
	else if (inject && m->o->inject == INJECT_DUP)
		c->shift[s]--;
	struct pat_id id = {
		.src = (uint16_t)m->rank,
		.dst = (uint16_t)c->p->rank,
		.stream = (uint8_t)s,
		.label = i + (uint64_t)c->shift[s],
	};
	pattern_fill(buf, m->o->size, &id);
	if (inject && m->o->inject == INJECT_CORRUPT)
		buf[m->o->size / 2] ^= 0xff;
	c->t_post[s][slot] = now;
	*sge = rcc_pool_sge(m->src_pool, buf, m->o->size);
	*wr = (struct rcc_send_wr){
		.wr_id = WR_ID(WR_DATA, s, i),
		.sg_list = sge,
		.num_sge = 1,
		.opcode = s == STREAM_WRITE ? RCC_WR_WRITE_IMM : RCC_WR_SEND,
		.flags = RCC_SEND_SIGNALED,
		.imm_data = (uint32_t)id.label,
	};
	if (s == STREAM_WRITE) {
		wr->remote_addr = c->target.addr + (i % c->rslots) * c->rstride;
		wr->rkey = c->target.rkey;
	}
	c->posted[s]++;
}

static int post_data(struct out_conn *c, uint64_t now)
{
	struct rcc_send_wr wr[POST_BATCH];
	struct rcc_sge sge[POST_BATCH];
	int k = 0;

	for (bool more = true; more && k < POST_BATCH;) {
		more = false;
		/* alternate the streams so both stay busy */
		for (int s = 0; s < 2 && k < POST_BATCH; s++) {
			if (!may_post(c, s))
				continue;
			prepare(c, s, now, &wr[k], &sge[k]);
			k++;
			more = true;
		}
	}
	if (k) {
		int rc = rcc_post_send_list(c->ep, wr, k, NULL);
		if (rc)
			fail(c, "cannot send to it", rcc_strerror(rc));
	}
	return k;
}

/* ---------------------------------------------------------- completions */

static void on_wc(struct out_conn *c, const struct rcc_wc *wc, uint64_t now)
{
	unsigned kind = WR_KIND(wc->wr_id), aux = WR_AUX(wc->wr_id);
	uint64_t idx = WR_IDX(wc->wr_id);

	if (c->st == OUT_FAILED)
		return;
	if (wc->status != RCC_WC_SUCCESS) {
		/* once done, the peer may leave: our receives are flushed then */
		if (c->st == OUT_DONE && wc->status == RCC_WC_WR_FLUSH_ERR)
			return;
		char detail[96];
		snprintf(detail, sizeof(detail), "%s: %s",
			 kind == WR_DATA  ? (aux == STREAM_WRITE ? "WRITE" : "SEND") :
			 kind == WR_CRECV ? "control receive" :
					    ctrl_type_name((enum ctrl_type)aux),
			 rcc_wc_status_str(wc->status));
		fail(c, "our connection to it broke", detail);
		return;
	}
	atomic_store_explicit(&c->p->out_seen_ns, now, memory_order_relaxed);
	switch (kind) {
	case WR_DATA:
		hist_add(&c->lat, now - c->t_post[aux][idx % c->m->q[aux]]);
		c->completed[aux]++;
		c->bytes += c->m->o->size;
		c->t_last = now;
		break;
	case WR_CSEND:
		ctrl_sent(&c->ctrl, idx);
		if (aux == CTRL_FIN)
			fin_delivered(c);
		else if (aux == CTRL_DONE)
			report_delivered(c);
		break;
	case WR_CRECV:
		on_ctrl(c, c->crecv[idx], wc->byte_len);
		if (c->st != OUT_FAILED && c->st != OUT_DONE) {
			/*
			 * -ENOTCONN: the peer has left. That is orderly if our FIN's
			 * completion is still behind this one in the queue; out_step
			 * drains it and then judges the closed connection.
			 */
			int rc = rcc_post_recv_list(c->ep, &c->rwr[idx], 1, NULL);
			if (rc && rc != -ENOTCONN)
				fail(c, "cannot receive from it", rcc_strerror(rc));
		}
		break;
	default:
		fail(c, "gave a completion we never asked for", "internal error");
	}
}

/* Post what the phase allows. */
static int advance(struct out_conn *c, uint64_t now)
{
	struct mesh *m = c->m;
	int ph = atomic_load_explicit(&m->phase, memory_order_acquire);
	int work = 0;

	if (ph == PH_EXIT)
		return 0;
	switch (c->st) {
	case OUT_WELCOMED:
		if (ph < PH_READY || post_ctrl(c, &(struct ctrl_msg){ .type = CTRL_READY }))
			return 0;
		c->st = OUT_READY_SENT;
		return 1;
	case OUT_READY_SENT:
		if (ph < PH_GO)
			return 0;
		c->st = OUT_TRAFFIC;
		atomic_store(&c->p->out_seen_ns, now);
		atomic_store(&c->p->out_busy, true);
		/* fall through */
	case OUT_TRAFFIC:
		if (!traffic_over(c, now))
			return post_data(c, now);
		c->st = OUT_FINISHING;
		/* fall through */
	case OUT_FINISHING: {
		struct ctrl_msg fin = { .type = CTRL_FIN };
		for (int s = 0; s < 2; s++) {
			/* --inject tail: as if the stream's last message was lost */
			uint64_t extra = m->o->inject == INJECT_TAIL && s == c->inject_stream;
			fin.u.fin.sent[s] = c->posted[s] + extra;
			fin.u.fin.next_label[s] = c->posted[s] + (uint64_t)c->shift[s] + extra;
		}
		if (post_ctrl(c, &fin))
			return 0;
		c->st = OUT_FIN_SENT;
		return 1;
	}
	case OUT_FIN_DONE:
		if (ph < PH_REPORT)
			return 0;
		c->st = OUT_REPORTING;
		atomic_store(&c->p->out_seen_ns, now); /* its silence counts from now */
		atomic_store(&c->p->out_busy, true);
		/* fall through */
	case OUT_REPORTING:
		while (c->rows_sent < m->my_nrows) {
			struct ctrl_msg row = { .u.row = m->my_rows[c->rows_sent] };
			row.type = c->rows_sent % 2 ? CTRL_ROW_RX : CTRL_ROW_TX;
			if (post_ctrl(c, &row))
				return work;
			c->rows_sent++;
			work++;
		}
		if (!c->done_posted) {
			struct ctrl_msg done = { .type = CTRL_DONE, .u.done = m->my_done };
			if (post_ctrl(c, &done))
				return work;
			c->done_posted = true;
			work++;
		}
		return work;
	default:
		return 0;
	}
}

/* Post what the phase allows, as far as the windows let us. */
static void step(struct out_conn *c, uint64_t now)
{
	if (finished(c))
		return;
	if (atomic_load_explicit(&c->p->failed, memory_order_relaxed)) {
		/* declared dead elsewhere (its incoming side, the watchdog): stop talking to it */
		c->st = OUT_FAILED;
		atomic_store(&c->p->out_busy, false);
		rcc_ep_disconnect(c->ep);
		return;
	}
	while (advance(c, now) > 0)
		;
}

/* ------------------------------------------------- the server's callbacks */

/* The accept's private data says who answered: silently refused here, the
 * connecting thread says why (out_connect()). */
static bool right_server(const struct out_conn *c, struct rcc_ep *ep)
{
	size_t len;
	const void *pd = rcc_ep_private_data(ep, &len);
	uint16_t rank, nodes;

	return !accept_decode(pd, len, &rank, &nodes) && rank == c->p->rank && nodes == c->m->n;
}

int out_connected(struct rcc_ep *ep, void *conn)
{
	struct out_conn *c = conn;

	c->ep = ep;
	if (!right_server(c, ep)) {
		c->st = OUT_FAILED;
		return -EPROTO;
	}
	return 0;
}

void out_completion(struct rcc_ep *ep, const struct rcc_wc *wc, void *conn)
{
	struct out_conn *c = conn;
	uint64_t now = mono_ns();

	(void)ep;
	on_wc(c, wc, now);
	/* a data message done frees a source buffer, which matters only when
	 * they were all in flight: credits (control receives) move us on */
	if (WR_KIND(wc->wr_id) == WR_DATA && wc->status == RCC_WC_SUCCESS) {
		unsigned s = WR_AUX(wc->wr_id);
		if (c->posted[s] - c->completed[s] != c->m->q[s] - 1)
			return;
	}
	step(c, now);
}

/* --srq: a control message in one of the server's SRQ buffers. */
void out_recv(struct rcc_ep *ep, const struct rcc_wc *wc, const void *data, void *conn)
{
	struct out_conn *c = conn;
	uint64_t now = mono_ns();

	(void)ep;
	if (c->st == OUT_FAILED)
		return;
	atomic_store_explicit(&c->p->out_seen_ns, now, memory_order_relaxed);
	if (!data || !(wc->wc_flags & RCC_WC_WITH_IMM) || wc->imm_data != MESH_CTRL_IMM) {
		fail(c, "sent a message we did not agree on", rcc_wc_opcode_str(wc->opcode));
		return;
	}
	on_ctrl(c, data, wc->byte_len);
	step(c, now);
}

void out_wake(struct rcc_ep *ep, void *conn)
{
	(void)ep;
	step(conn, mono_ns());
}

/* Every completion has been delivered: a control message that was in flight
 * decided by itself (delivered, or flushed: rule 4 of rcc.h) whether we end
 * in order. */
void out_disconnect(struct rcc_ep *ep, void *conn)
{
	struct out_conn *c = conn;

	if (ep && !finished(c) && atomic_load(&c->m->phase) != PH_EXIT)
		fail(c, "our connection to it closed", rcc_ep_state_str(rcc_ep_state(ep)));
}

/* ---------------------------------------------------------- lifecycle */

static int take(struct rcc_pool *pool, void **piece, struct out_conn *c)
{
	int rc = rcc_pool_get(pool, piece);
	if (rc)
		complain(c->m, "buffer pool exhausted for rank %d: %s", c->p->rank,
			 rcc_strerror(rc));
	return rc;
}

static void give_back(struct out_conn *c)
{
	struct mesh *m = c->m;
	for (int s = 0; s < 2; s++) {
		for (uint32_t i = 0; c->src[s] && i < m->q[s]; i++)
			if (c->src[s][i])
				rcc_pool_put(m->src_pool, c->src[s][i]);
		free(c->src[s]);
		free(c->t_post[s]);
	}
	for (int i = 0; i < CLI_CTRL_RECVS; i++)
		if (c->crecv[i])
			rcc_pool_put(m->ctrl_pool, c->crecv[i]);
	ctrl_sender_fini(m, &c->ctrl);
	free(c);
}

/* What the server's accept says about it, said as the peer's failure. */
static int check_server(struct out_conn *c, struct rcc_ep *ep)
{
	size_t len;
	const void *pd = rcc_ep_private_data(ep, &len);
	uint16_t rank, nodes;

	if (accept_decode(pd, len, &rank, &nodes)) {
		peer_fail(c->p, "the server at %s is not an rcc-mesh node", c->p->node->addr);
		return -EPROTO;
	}
	if (rank != c->p->rank || nodes != c->m->n) {
		peer_fail(c->p,
			  "the server at %s is rank %u of %u, not rank %d of %d: "
			  "the node lists differ",
			  c->p->node->addr, rank, nodes, c->p->rank, c->m->n);
		return -EPROTO;
	}
	return 0;
}

/* Queue room one connection needs: its sends (data, control, slack). */
uint32_t out_sq_depth(const struct mesh *m) { return m->q[0] + m->q[1] + CLI_CTRL_SENDS + 2; }

int out_create(struct mesh *m, struct peer *p, struct out_conn **out)
{
	struct out_conn *c = calloc(1, sizeof(*c));
	int rc = -ENOMEM;

	if (!c) {
		complain(m, "out of memory");
		return rc;
	}
	c->kind = CONN_OUT;
	c->m = m;
	c->p = p;
	hist_init(&c->lat);
	c->inject_stream = -1;
	if (m->o->inject && m->o->inject != INJECT_IMPOSTOR && p->rank == (m->rank + 1) % m->n)
		c->inject_stream = m->q[STREAM_WRITE] ? STREAM_WRITE : STREAM_SEND;
	for (int s = 0; s < 2; s++) {
		if (!m->q[s])
			continue;
		c->src[s] = calloc(m->q[s], sizeof(*c->src[s]));
		c->t_post[s] = calloc(m->q[s], sizeof(*c->t_post[s]));
		if (!c->src[s] || !c->t_post[s]) {
			complain(m, "out of memory");
			goto err;
		}
		for (uint32_t i = 0; i < m->q[s]; i++)
			if ((rc = take(m->src_pool, &c->src[s][i], c)))
				goto err;
	}
	/* with --srq the server's SRQ takes every receive, ours too */
	for (int i = 0; i < CLI_CTRL_RECVS && !m->srq_depth; i++) {
		if ((rc = take(m->ctrl_pool, &c->crecv[i], c)))
			goto err;
		c->rsge[i] = rcc_pool_sge(m->ctrl_pool, c->crecv[i], CTRL_SIZE);
		c->rwr[i] = (struct rcc_recv_wr){ .wr_id = WR_ID(WR_CRECV, 0, i),
						  .sg_list = &c->rsge[i],
						  .num_sge = 1 };
	}
	if ((rc = ctrl_sender_init(m, &c->ctrl, CLI_CTRL_SENDS))) {
		complain(m, "buffer pool exhausted for rank %d: %s", p->rank, rcc_strerror(rc));
		goto err;
	}
	*out = c;
	return 0;
err:
	give_back(c);
	return rc;
}

/* rcc_server_connect() does not retry: errors that mean "the peer is not up
 * yet" (as rcc_client_connect() retries them) are worth another attempt. */
static bool retryable(int rc)
{
	return rc == -ECONNREFUSED || rc == -ETIMEDOUT || rc == -EHOSTUNREACH ||
	       rc == -ENETUNREACH || rc == -ECONNRESET || rc == -EADDRNOTAVAIL;
}

static void pause_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/*
 * --inject impostor: before our own connection to p, two that claim our rank
 * with a hello it must not trust -- no tag, then a tag under a key that is not
 * the run's -- as anyone who knows the node list but not the job secret could
 * send them. With a secret, p turns both away and then takes ours; if it took
 * one, our own connection is the second one from our rank and is refused, and
 * the run fails (as it does without a secret).
 */
static void connect_impostors(struct mesh *m, struct peer *p, const struct mesh_hello *h)
{
	static const char *const kind[] = { "no tag", "a tag under another key" };
	struct rcc_cq *cq;
	int rc = rcc_cq_create(m->ctx, &(struct rcc_cq_attr){ .depth = 16 }, &cq);

	if (rc) {
		complain(m, "inject impostor: no CQ: %s", rcc_strerror(rc));
		return;
	}
	for (int i = 0; i < 2; i++) {
		uint8_t hello[HELLO_LEN], other[HELLO_KEY_LEN];
		struct rcc_ep *ep;
		for (size_t k = 0; k < sizeof(other); k++)
			other[k] = (uint8_t)(m->hello_key[k] ^ 0x5a);
		if (hello_encode(h, i ? other : NULL, hello))
			continue;
		struct rcc_ep_attr ea = { .send_cq = cq,
					  .sq_depth = 4,
					  .rq_depth = 4,
					  .private_data = hello,
					  .private_data_len = sizeof(hello) };
		rc = rcc_connect(m->ctx, p->node->addr, &ea, CONNECT_ATTEMPT_MS, &ep);
		if (rc == -ECONNABORTED) {
			say(m, "inject impostor: rank %d turned away a hello with %s", p->rank,
			    kind[i]);
			continue;
		}
		if (rc) {
			complain(m, "inject impostor: cannot reach rank %d: %s", p->rank,
				 rcc_strerror(rc));
			continue;
		}
		complain(m, "inject impostor: rank %d took a connection whose hello has %s",
			 p->rank, kind[i]);
		rcc_ep_close(ep);
	}
	rcc_cq_destroy(cq);
}

int out_connect(struct out_conn *c, uint64_t deadline_ns)
{
	struct mesh *m = c->m;
	struct peer *p = c->p;
	uint8_t hello[HELLO_LEN];
	struct rcc_ep *ep;
	long backoff_ms = 10;
	int rc;

	struct mesh_hello h = {
		.src = (uint16_t)m->rank,
		.dst = (uint16_t)p->rank,
		.nodes = (uint16_t)m->n,
		.ops = (uint8_t)m->o->ops,
		.size = m->o->size,
		.depth = m->o->depth,
		.list_hash = m->list_hash,
	};
	if ((rc = hello_encode(&h, m->keyed ? m->hello_key : NULL, hello))) {
		peer_fail(p, "cannot make our hello's tag: %s", rcc_strerror(rc));
		return rc;
	}
	if (m->o->inject == INJECT_IMPOSTOR && p->rank == (m->rank + 1) % m->n)
		connect_impostors(m, p, &h);
	struct rcc_ep_attr ea = {
		.sq_depth = out_sq_depth(m),
		.rq_depth = CLI_CTRL_RECVS,
		.private_data = hello,
		.private_data_len = sizeof(hello),
		.initial_recv = m->srq_depth ? NULL : c->rwr,
		.num_initial_recv = m->srq_depth ? 0 : CLI_CTRL_RECVS,
	};
	uint64_t now = mono_ns();
	int left_ms = deadline_ns > now ? (int)((deadline_ns - now) / 1000000) : 0;
	for (;;) {
		now = mono_ns();
		long left = deadline_ns > now ? (long)((deadline_ns - now) / 1000000) : 0;
		int attempt = left < CONNECT_ATTEMPT_MS ? (left > 0 ? (int)left : 1) :
							  CONNECT_ATTEMPT_MS;
		rc = rcc_server_connect(m->srv, p->node->addr, &ea, attempt, c, &ep);
		if (!rc || !retryable(rc) || left == 0)
			break;
		now = mono_ns();
		left = deadline_ns > now ? (long)((deadline_ns - now) / 1000000) : 0;
		pause_ms(backoff_ms < left ? backoff_ms : left);
		if (backoff_ms < 200)
			backoff_ms *= 2;
	}
	if (rc == -ECONNABORTED) {
		peer_fail(p, "it refused our connection (its messages say why: node lists or "
			     "options differ?)");
		return rc;
	}
	if (rc) {
		peer_fail(p, "cannot connect to it within %d ms: %s", left_ms, explain_status(rc));
		return rc;
	}
	/* its agent refuses it too (out_connected()); the connection is the
	 * server's now, ended there */
	if ((rc = check_server(c, ep)))
		rcc_server_disconnect(m->srv, ep);
	return rc;
}

void out_destroy(struct out_conn *c) { give_back(c); }
