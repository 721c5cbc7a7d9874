/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The receiving side: the session server's callbacks for the connections it
 * accepts (agents.c), one incoming connection per peer, each run by the agent
 * thread that owns it.
 *
 * A connection's receives are consumed in arrival order by WRITE-with-
 * immediate notices, data SENDs and control messages alike, so every receive
 * is large enough for either. Each data message is checked against the
 * pattern of the label we expect next from that sender on that stream; what
 * arrived instead is classified (corrupt, lost messages before it, or a
 * duplicate) from its header, or from the immediate for writes too small to
 * carry one. Credits go back in batches of a quarter window.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mesh.h"
#include "pattern.h"

struct in_conn {
	enum conn_kind kind; /* CONN_IN */
	struct mesh *m;
	struct peer *p;
	struct rcc_ep *ep;
	uint8_t *target; /* the sender's write slots */
	void **rbuf;
	struct rcc_sge *rsge;
	struct rcc_recv_wr *rwr;
	struct ctrl_sender ctrl;
	uint64_t got[2];        /* data messages consumed per stream */
	uint64_t next_label[2]; /* the label we expect next */
	uint64_t credited;      /* got[0] + got[1] when we last sent a credit */
	bool credit_pending;
	bool welcomed;
	bool fin, done;
	struct pair_rx rx;
	unsigned errors_shown;
};

static const char *const stream_name[] = { "write", "send" };

static void give_back(struct in_conn *c)
{
	struct mesh *m = c->m;
	if (c->target)
		rcc_pool_put(m->target_pool, c->target);
	for (uint32_t i = 0; c->rbuf && i < m->nrecv; i++)
		if (c->rbuf[i])
			rcc_pool_put(m->recv_pool, c->rbuf[i]);
	ctrl_sender_fini(m, &c->ctrl);
	free(c->rwr);
	free(c->rsge);
	free(c->rbuf);
	free(c);
}

static void unclaim(struct peer *p)
{
	pthread_mutex_lock(&p->m->lock);
	p->in_claimed = false;
	pthread_mutex_unlock(&p->m->lock);
}

/* ------------------------------------------------------------ requests */

static int check_hello(struct mesh *m, struct rcc_conn_req *req, struct mesh_hello *h)
{
	size_t len;
	const void *pd = rcc_conn_req_private_data(req, &len);
	const char *from = rcc_conn_req_peer(req);

	if (hello_decode(pd, len, h)) {
		complain(m, "turned away %s: not an rcc-mesh node", from);
		return -EPROTO;
	}
	if (!launch_wait_nodes(m))
		return -ECONNREFUSED; /* our exchange failed: we are on our way out */
	/* before anything it says counts: only a rank of this run can take a rank */
	if (m->keyed && !hello_tag_ok(m->hello_key, pd)) {
		complain(m,
			 "turned away %s (says it is rank %u and wants rank %u): its hello "
			 "does not carry the job secret's tag (an impostor, or a rank of "
			 "another run or with another secret)",
			 from, h->src, h->dst);
		return -EACCES;
	}
	if (h->nodes != m->n || h->list_hash != m->list_hash || h->src >= m->n ||
	    h->src == m->rank || h->dst != m->rank) {
		complain(m,
			 "turned away %s (says it is rank %u of %u and wants rank %u): "
			 "its node list differs from ours",
			 from, h->src, h->nodes, h->dst);
		return -EINVAL;
	}
	if (h->size != m->o->size || h->depth != m->o->depth || h->ops != m->o->ops) {
		complain(m,
			 "turned away rank %u: it runs with size %u, depth %u, ops %u; "
			 "we with %u, %u, %u",
			 h->src, h->size, h->depth, h->ops, m->o->size, m->o->depth, m->o->ops);
		return -EINVAL;
	}
	return 0;
}

/* A connection's own receives, posted before it can send (without --srq). */
static int own_receives(struct mesh *m, struct in_conn *c)
{
	int rc;

	c->rbuf = calloc(m->nrecv, sizeof(*c->rbuf));
	c->rsge = calloc(m->nrecv, sizeof(*c->rsge));
	c->rwr = calloc(m->nrecv, sizeof(*c->rwr));
	if (!c->rbuf || !c->rsge || !c->rwr)
		return -ENOMEM;
	for (uint32_t i = 0; i < m->nrecv; i++) {
		if ((rc = rcc_pool_get(m->recv_pool, &c->rbuf[i])))
			return rc;
		c->rsge[i] = rcc_pool_sge(m->recv_pool, c->rbuf[i], m->recv_piece);
		c->rwr[i] = (struct rcc_recv_wr){ .wr_id = WR_ID(WR_RECV, 0, i),
						  .sg_list = &c->rsge[i],
						  .num_sge = 1 };
	}
	return 0;
}

int in_request(struct rcc_conn_req *req, void *arg, void **conn, const struct rcc_recv_wr **recv,
	       int *num_recv)
{
	struct mesh *m = arg;
	struct mesh_hello h;
	struct in_conn *c;
	int rc;

	if ((rc = check_hello(m, req, &h)))
		return rc;
	struct peer *p = &m->peers[h.src];
	pthread_mutex_lock(&m->lock);
	bool taken = p->in_claimed;
	p->in_claimed = true;
	pthread_mutex_unlock(&m->lock);
	if (taken) {
		complain(m, "turned away a second connection from rank %u (%s)", h.src,
			 rcc_conn_req_peer(req));
		return -EEXIST;
	}

	rc = -ENOMEM;
	c = calloc(1, sizeof(*c));
	if (!c)
		goto err_claim;
	c->kind = CONN_IN;
	c->m = m;
	c->p = p;
	/* with --srq the server's SRQ takes every receive */
	if (!m->srq_depth && (rc = own_receives(m, c)))
		goto err_conn;
	if (m->target_pool && (rc = rcc_pool_get(m->target_pool, (void **)&c->target)))
		goto err_conn;
	if ((rc = ctrl_sender_init(m, &c->ctrl, SRV_CTRL_SENDS)))
		goto err_conn;
	*conn = c;
	*recv = c->rwr;
	*num_recv = c->rwr ? (int)m->nrecv : 0;
	return 0;

err_conn:
	complain(m, "cannot take rank %u's connection: %s", h.src, rcc_strerror(rc));
	give_back(c);
err_claim:
	unclaim(p);
	return rc;
}

/* ------------------------------------------------------------ control */

static int post_ctrl(struct in_conn *c, struct ctrl_msg *msg)
{
	return ctrl_post(c->m, c->ep, &c->ctrl, msg);
}

static void send_credit(struct in_conn *c)
{
	struct ctrl_msg msg = { .type = CTRL_CREDIT,
				.u.credit.verified = { c->got[0], c->got[1] } };
	int rc = post_ctrl(c, &msg);
	c->credit_pending = rc == -EAGAIN;
	if (!rc)
		c->credited = c->got[0] + c->got[1];
	else if (rc != -EAGAIN && rc != -ENOTCONN)
		peer_fail(c->p, "cannot send credit to it: %s", rcc_strerror(rc));
}

static void maybe_credit(struct in_conn *c)
{
	uint32_t q = c->m->o->depth;
	uint32_t batch = q / 4 ? q / 4 : 1;
	if (c->got[0] + c->got[1] - c->credited >= batch)
		send_credit(c);
}

static void publish(struct in_conn *c)
{
	pthread_mutex_lock(&c->m->lock);
	c->p->rx = c->rx;
	pthread_mutex_unlock(&c->m->lock);
}

static void data_error(struct in_conn *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void data_error(struct in_conn *c, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	atomic_store(&c->m->data_error, true);
	if (c->errors_shown++ >= MAX_ERRORS_SHOWN)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	complain(c->m, "DATA ERROR from rank %d (%s): %s%s", c->p->rank, c->p->node->addr, msg,
		 c->errors_shown == MAX_ERRORS_SHOWN ?
			 " (further errors of this pair: counted only)" :
			 "");
}

/* The sender's end-of-stream account against what we saw. */
static void on_fin(struct in_conn *c, const struct ctrl_fin *f)
{
	bool ok = true;
	for (int s = 0; s < 2; s++) {
		if (c->next_label[s] < f->next_label[s]) {
			uint64_t n = f->next_label[s] - c->next_label[s];
			c->rx.lost += n;
			data_error(c,
				   "%s stream: the last %llu of its messages never arrived "
				   "(it sent up to #%llu, we saw up to #%llu)",
				   stream_name[s], (unsigned long long)n,
				   (unsigned long long)f->next_label[s] - 1,
				   (unsigned long long)c->next_label[s] - 1);
			ok = false;
		} else if (c->next_label[s] > f->next_label[s]) {
			c->rx.bad++;
			data_error(c,
				   "%s stream: we saw messages up to #%llu, it says it sent "
				   "only up to #%llu",
				   stream_name[s], (unsigned long long)c->next_label[s] - 1,
				   (unsigned long long)f->next_label[s] - 1);
			ok = false;
		} else if (c->got[s] != f->sent[s]) {
			c->rx.bad++;
			data_error(c, "%s stream: %llu messages arrived, it sent %llu",
				   stream_name[s], (unsigned long long)c->got[s],
				   (unsigned long long)f->sent[s]);
			ok = false;
		}
	}
	c->rx.fin = ok && !c->rx.bad && !c->rx.lost && !c->rx.dup;
	c->fin = true;
	pthread_mutex_lock(&c->m->lock);
	c->p->rx = c->rx;
	c->p->fin_rx = true;
	pthread_cond_broadcast(&c->m->cond);
	pthread_mutex_unlock(&c->m->lock);
}

static void on_ctrl(struct in_conn *c, const void *buf, uint32_t len)
{
	struct mesh *m = c->m;
	struct ctrl_msg msg;

	if (ctrl_decode(buf, len, &msg) || msg.from != c->p->rank) {
		peer_fail(c->p, "it sent us a malformed control message");
		return;
	}
	switch (msg.type) {
	case CTRL_READY:
		pthread_mutex_lock(&m->lock);
		c->p->ready_rx = true;
		pthread_cond_broadcast(&m->cond);
		pthread_mutex_unlock(&m->lock);
		return;
	case CTRL_FIN:
		if (!c->fin)
			on_fin(c, &msg.u.fin);
		return;
	case CTRL_ROW_TX:
	case CTRL_ROW_RX:
		if (!is_collector(m) || msg.u.row.src >= m->n || msg.u.row.dst >= m->n)
			break;
		collector_store_row(m, &msg.u.row, msg.type == CTRL_ROW_TX);
		return;
	case CTRL_DONE:
		if (!is_collector(m))
			break;
		c->done = true;
		collector_store_done(m, c->p->rank, &msg.u.done);
		return;
	default:
		break;
	}
	peer_fail(c->p, "it sent us an unexpected %s", ctrl_type_name(msg.type));
}

/* ---------------------------------------------------------------- data */

static void check(struct in_conn *c, int s, const uint8_t *buf, uint32_t len, uint32_t imm)
{
	struct mesh *m = c->m;
	uint32_t size = m->o->size;
	struct pat_id want = { .src = (uint16_t)c->p->rank,
			       .dst = (uint16_t)m->rank,
			       .stream = (uint8_t)s,
			       .label = c->next_label[s] };
	uint8_t exp = 0;

	c->got[s]++;
	if (len != size) {
		c->rx.bad++;
		data_error(c, "%s stream message #%llu is %u bytes, expected %u", stream_name[s],
			   (unsigned long long)want.label, len, size);
		c->next_label[s]++;
		return;
	}
	long off = pattern_check(buf, size, &want, &exp);
	if (off < 0) {
		c->next_label[s]++;
		c->rx.msgs[s]++;
		c->rx.bytes += size;
		return;
	}
	/* Which message is it, if it is an intact one? */
	struct pat_id got = want;
	uint8_t ignored;
	if (!pattern_header(buf, size, &got) && s == STREAM_WRITE)
		got.label = want.label + (uint64_t)(int64_t)(int32_t)(imm - (uint32_t)want.label);
	bool intact = got.label != want.label && got.src == want.src && got.dst == want.dst &&
		      got.stream == want.stream && pattern_check(buf, size, &got, &ignored) < 0;
	if (intact && got.label > want.label) {
		uint64_t n = got.label - want.label;
		c->rx.lost += n;
		c->rx.msgs[s]++;
		c->rx.bytes += size;
		data_error(c, "%s stream: %llu message(s) lost: expected #%llu, got #%llu",
			   stream_name[s], (unsigned long long)n, (unsigned long long)want.label,
			   (unsigned long long)got.label);
		c->next_label[s] = got.label + 1;
	} else if (intact) {
		c->rx.dup++;
		data_error(c, "%s stream: duplicate of message #%llu where #%llu was due",
			   stream_name[s], (unsigned long long)got.label,
			   (unsigned long long)want.label);
	} else {
		c->rx.bad++;
		data_error(c,
			   "%s stream message #%llu: byte %ld of %u differs (expected 0x%02x, "
			   "got 0x%02x)",
			   stream_name[s], (unsigned long long)want.label, off, size, exp,
			   buf[off]);
		c->next_label[s]++;
	}
}

/* One received message of either kind of receive: data to check, or control. */
static void on_message(struct in_conn *c, const struct rcc_wc *wc, const uint8_t *buf)
{
	struct mesh *m = c->m;

	if (wc->opcode == RCC_WC_RECV_WRITE_IMM && m->q[STREAM_WRITE]) {
		uint64_t i = c->got[STREAM_WRITE];
		check(c, STREAM_WRITE, c->target + (i % m->q[STREAM_WRITE]) * m->stride,
		      wc->byte_len, wc->imm_data);
		maybe_credit(c);
	} else if (wc->opcode == RCC_WC_RECV && (wc->wc_flags & RCC_WC_WITH_IMM) &&
		   wc->imm_data == MESH_CTRL_IMM) {
		on_ctrl(c, buf, wc->byte_len);
	} else if (wc->opcode == RCC_WC_RECV && !(wc->wc_flags & RCC_WC_WITH_IMM) &&
		   m->q[STREAM_SEND]) {
		check(c, STREAM_SEND, buf, wc->byte_len, 0);
		maybe_credit(c);
	} else {
		peer_fail(c->p, "it sent us a %s we did not agree on",
			  rcc_wc_opcode_str(wc->opcode));
	}
}

void in_completion(struct rcc_ep *ep, const struct rcc_wc *wc, void *conn)
{
	struct in_conn *c = conn;
	struct mesh *m = c->m;
	unsigned kind = WR_KIND(wc->wr_id);
	uint64_t idx = WR_IDX(wc->wr_id);

	if (wc->status != RCC_WC_SUCCESS) {
		/* Flushes mean the connection is ending: on_disconnect judges whether in order. */
		if (wc->status != RCC_WC_WR_FLUSH_ERR)
			peer_fail(c->p, "our connection from it broke: %s: %s",
				  kind == WR_CSEND ? "control send" : "receive",
				  rcc_wc_status_str(wc->status));
		return;
	}
	uint64_t now = mono_ns();
	atomic_store_explicit(&c->p->in_seen_ns, now, memory_order_relaxed);
	if (kind == WR_CSEND) {
		ctrl_sent(&c->ctrl, idx);
		if (c->credit_pending)
			send_credit(c);
		return;
	}
	if (kind != WR_RECV || idx >= m->nrecv || !c->rbuf)
		return;
	on_message(c, wc, c->rbuf[idx]);
	int rc = rcc_post_recv_list(ep, &c->rwr[idx], 1, NULL);
	if (rc && rc != -ENOTCONN)
		peer_fail(c->p, "cannot repost a receive for it: %s", rcc_strerror(rc));
}

/* --srq: a message in one of the session server's buffers, which it reposts. */
void in_recv(struct rcc_ep *ep, const struct rcc_wc *wc, const void *data, void *conn)
{
	struct in_conn *c = conn;
	(void)ep;
	atomic_store_explicit(&c->p->in_seen_ns, mono_ns(), memory_order_relaxed);
	on_message(c, wc, data);
}

/* -------------------------------------------------------- connect/close */

int in_connect(struct rcc_ep *ep, struct mesh *m, void *conn)
{
	struct in_conn *c = conn;
	struct ctrl_msg w = { .type = CTRL_WELCOME };
	int rc;

	c->ep = ep;
	if (c->target) {
		w.u.welcome.target = rcc_mr_remote(rcc_pool_mr(m->target_pool));
		w.u.welcome.target.addr = (uint64_t)(uintptr_t)c->target;
		w.u.welcome.target.length = (uint64_t)m->stride * m->q[STREAM_WRITE];
		w.u.welcome.stride = m->stride;
		w.u.welcome.slots = m->q[STREAM_WRITE];
	}
	rc = post_ctrl(c, &w);
	if (rc) {
		complain(m, "cannot welcome rank %d: %s", c->p->rank, rcc_strerror(rc));
		return rc;
	}
	c->welcomed = true;
	atomic_store(&c->p->in_seen_ns, mono_ns());
	pthread_mutex_lock(&m->lock);
	c->p->in_up = true;
	pthread_cond_broadcast(&m->cond);
	pthread_mutex_unlock(&m->lock);
	return 0;
}

void in_disconnect(struct rcc_ep *ep, void *conn)
{
	struct in_conn *c = conn;
	struct mesh *m = c->m;
	struct peer *p = c->p;
	bool orderly = c->fin && (!is_collector(m) || c->done);

	if (!ep) { /* it never came up */
		unclaim(p);
		give_back(c);
		return;
	}
	if (!c->fin)
		publish(c); /* partial figures are better than none in the table */
	if (!orderly && atomic_load(&m->phase) != PH_EXIT)
		peer_fail(p, "its connection to us closed %s",
			  !c->welcomed                    ? "during setup" :
			  c->fin                          ? "before it sent its figures" :
			  atomic_load(&m->phase) >= PH_GO ? "during traffic" :
							    "before traffic");
	give_back(c);
}
