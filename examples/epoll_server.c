/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A multi-client echo server with no thread of its own: one epoll loop
 * watches three descriptors --
 *   the listener's  (rcc_listener_fd):  new connections, accepted without
 *                                       waiting (rcc_accept_start);
 *   the CQ's        (rcc_cq_fd):        completions of every connection;
 *   the context's   (rcc_ctx_event_fd): connections established, and
 *                                       connections that left.
 * Receive buffers come from one registered pool; each connection owns a few
 * pieces for its whole life and gets them back into the pool when it closes.
 * Clients run in threads of this process (a context of their own), each
 * sending ROUNDS messages and checking every echo byte for byte.
 *
 * Usage: example_epoll_server [HOST]   (default 127.0.0.1; on a NIC: its IP)
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <rcc/rcc.h>
#include <rcc/session.h>

#define CLIENTS 4
#define ROUNDS 100
#define MSG 64
#define PIECES 4 /* receives each connection keeps posted */

struct conn {
	struct rcc_ep *ep;
	void *piece[PIECES];
	uint32_t early_len[PIECES]; /* a message that came before ESTABLISHED (0: none) */
	int index;
};

struct server {
	struct rcc_ctx *ctx;
	struct rcc_listener *lst;
	struct rcc_cq *cq;
	struct rcc_pool *pool;
	struct conn conns[CLIENTS];
	int accepted, echoed, left;
};

/* wr_id: which connection, which piece, and whether a send or a receive. */
static uint64_t wr_id(int conn, int piece, int is_send)
{
	return (uint64_t)conn << 16 | (uint64_t)piece << 1 | (uint64_t)is_send;
}

static int post_piece(struct server *s, struct conn *c, int i)
{
	struct rcc_sge sge = rcc_pool_sge(s->pool, c->piece[i], MSG);
	return rcc_post_recv(c->ep, &sge, 1, wr_id(c->index, i, 0));
}

/* The listener's descriptor is readable: accept what is there, without
 * waiting for any client to confirm (a slow one costs nothing). */
static int on_listener(struct server *s)
{
	struct rcc_conn_req *req;

	while (rcc_get_request(s->lst, 0, &req) == 0) {
		if (s->accepted == CLIENTS) {
			rcc_reject_req(req, NULL, 0);
			continue;
		}
		struct conn *c = &s->conns[s->accepted];
		struct rcc_recv_wr recv[PIECES];
		struct rcc_sge sge[PIECES];
		c->index = s->accepted;
		for (int i = 0; i < PIECES; i++) {
			if (rcc_pool_get(s->pool, &c->piece[i]))
				return -ENOBUFS;
			sge[i] = rcc_pool_sge(s->pool, c->piece[i], MSG);
			recv[i] = (struct rcc_recv_wr){ .wr_id = wr_id(c->index, i, 0),
							.sg_list = &sge[i],
							.num_sge = 1 };
		}
		/* receives posted before the client may send: no RNR at start */
		struct rcc_ep_attr a = { .send_cq = s->cq,
					 .initial_recv = recv,
					 .num_initial_recv = PIECES,
					 .context = c };
		int rc = rcc_accept_start(req, &a, &c->ep);
		if (rc) {
			fprintf(stderr, "accept: %s\n", rcc_strerror(rc));
			return rc;
		}
		s->accepted++;
	}
	return 0;
}

static void echo(struct server *s, struct conn *c, int i, uint32_t len)
{
	struct rcc_sge sge = rcc_pool_sge(s->pool, c->piece[i], len);
	if (rcc_post_send(c->ep, &sge, 1, wr_id(c->index, i, 1), RCC_SEND_SIGNALED) == 0)
		s->echoed++;
}

/* Completions: echo each message from the piece it arrived in, and post the
 * piece again as a receive once the echo has gone. */
static int on_cq(struct server *s)
{
	struct rcc_wc wc[16];
	int n;

	while ((n = rcc_cq_poll(s->cq, wc, 16)) > 0) {
		for (int k = 0; k < n; k++) {
			struct conn *c = rcc_ep_context(wc[k].ep);
			int i = (int)(wc[k].wr_id >> 1 & 0x7fff), is_send = (int)(wc[k].wr_id & 1);
			if (wc[k].status != RCC_WC_SUCCESS)
				continue; /* flushed: the connection is leaving */
			if (is_send) {
				post_piece(s, c,
					   i); /* fails only when it left: its event follows */
			} else if (rcc_ep_state(c->ep) == RCC_EP_CONNECTING) {
				/* the client spoke before our accept had finished: the
				 * echo waits for ESTABLISHED, when posting is allowed */
				c->early_len[i] = wc[k].byte_len;
			} else {
				echo(s, c, i, wc[k].byte_len);
			}
		}
	}
	return n;
}

/* Connection events: count the ones that came up, close the ones that left
 * and give their pieces back (after close nothing of theirs is posted). */
static void on_events(struct server *s)
{
	struct rcc_event ev;

	while (rcc_ctx_get_event(s->ctx, &ev, 0) == 0) {
		struct conn *c = ev.context;
		if (ev.type == RCC_EVENT_ESTABLISHED) {
			for (int i = 0; i < PIECES; i++)
				if (c->early_len[i]) {
					echo(s, c, i, c->early_len[i]);
					c->early_len[i] = 0;
				}
			continue;
		}
		if (ev.type == RCC_EVENT_CONNECT_FAILED)
			fprintf(stderr, "a client failed to connect: %s\n",
				rcc_strerror(ev.status));
		rcc_ep_close(c->ep);
		c->ep = NULL;
		for (int i = 0; i < PIECES; i++)
			rcc_pool_put(s->pool, c->piece[i]);
		s->left++;
	}
}

struct client {
	const char *addr;
	int id, rc;
};

static void *client_main(void *arg)
{
	struct client *cl = arg;
	struct rcc_ctx *ctx = NULL;
	struct rcc_client *cli = NULL;
	uint8_t out[MSG], in[MSG];
	uint8_t *buf[2] = { out, in };
	struct rcc_mr *mrs[2] = { NULL, NULL };
	struct rcc_wc wc;

	struct rcc_client_attr ca = { .cq_mode = RCC_CQ_WAIT, .connect_timeout_ms = 5000 };
	if ((cl->rc = rcc_ctx_open(NULL, &ctx)) ||
	    (cl->rc = rcc_client_connect(ctx, cl->addr, &ca, &cli)))
		goto out;
	for (int b = 0; b < 2 && !cl->rc; b++)
		cl->rc = rcc_mr_reg(ctx, buf[b], MSG, RCC_ACCESS_LOCAL_WRITE, &mrs[b]);
	for (int r = 0; r < ROUNDS && !cl->rc; r++) {
		for (int j = 0; j < MSG; j++)
			out[j] = (uint8_t)(cl->id * 31 + r * 7 + j);
		memset(in, 0, MSG);
		struct rcc_sge rs = rcc_mr_sge(mrs[1], in, MSG), ss = rcc_mr_sge(mrs[0], out, MSG);
		struct rcc_ep *ep = rcc_client_ep(cli);
		if ((cl->rc = rcc_post_recv(ep, &rs, 1, 1)) ||
		    (cl->rc = rcc_post_send(ep, &ss, 1, 2, RCC_SEND_SIGNALED)))
			break;
		for (int got = 0; got < 2 && !cl->rc; got++) {
			int n = rcc_cq_wait(rcc_client_cq(cli), &wc, 1, 5000);
			cl->rc = n < 0 ? n : (wc.status != RCC_WC_SUCCESS ? -EIO : 0);
		}
		if (!cl->rc && memcmp(in, out, MSG))
			cl->rc = -EBADMSG; /* the echo is not what was sent */
	}
	if (cli)
		rcc_client_close(cli); /* the server sees it leave */
	for (int b = 0; b < 2; b++)
		if (mrs[b])
			rcc_mr_dereg(mrs[b]);
out:
	if (ctx)
		rcc_ctx_close(ctx);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *host = argc > 1 ? argv[1] : "127.0.0.1";
	struct server s = { 0 };
	struct client cl[CLIENTS];
	pthread_t th[CLIENTS];
	char addr[96];
	int rc, efd;

	snprintf(addr, sizeof(addr), "%s:0", host);
	struct rcc_cq_attr cqa = { .depth = CLIENTS * PIECES * 2 + 64, .mode = RCC_CQ_FD };
	if ((rc = rcc_ctx_open(NULL, &s.ctx)) || (rc = rcc_listen(s.ctx, addr, 0, &s.lst)) ||
	    (rc = rcc_cq_create(s.ctx, &cqa, &s.cq)) ||
	    (rc = rcc_pool_create(s.ctx, MSG, CLIENTS * PIECES, RCC_ACCESS_LOCAL_WRITE, &s.pool))) {
		fprintf(stderr, "setup: %s (%s)\n", rcc_strerror(rc), rcc_last_error());
		return 1;
	}
	efd = epoll_create1(EPOLL_CLOEXEC);
	int fds[3] = { rcc_listener_fd(s.lst), rcc_cq_fd(s.cq), rcc_ctx_event_fd(s.ctx) };
	for (int i = 0; i < 3; i++) {
		struct epoll_event e = { .events = EPOLLIN, .data.u32 = (uint32_t)i };
		if (efd < 0 || fds[i] < 0 || epoll_ctl(efd, EPOLL_CTL_ADD, fds[i], &e)) {
			fprintf(stderr, "epoll set-up failed\n");
			return 1;
		}
	}
	snprintf(addr, sizeof(addr), "%s:%d", host, rcc_listener_port(s.lst));
	for (int i = 0; i < CLIENTS; i++) {
		cl[i] = (struct client){ .addr = addr, .id = i };
		pthread_create(&th[i], NULL, client_main, &cl[i]);
	}

	/* the whole server: until every client has come and gone */
	while (s.left < CLIENTS) {
		struct epoll_event ev[3];
		/* about to sleep: arm the CQ (then a same-host peer's message wakes
		 * this thread directly); 1: completions came since it was drained */
		if (rcc_cq_arm(s.cq) > 0) {
			on_cq(&s);
			on_events(&s);
			continue;
		}
		int n = epoll_wait(efd, ev, 3, 10000);
		if (n <= 0) {
			fprintf(stderr, "the server waited 10 s for nothing\n");
			break;
		}
		for (int i = 0; i < n; i++) {
			if (ev[i].data.u32 == 0 && on_listener(&s))
				s.left = CLIENTS; /* give up */
			else if (ev[i].data.u32 == 1)
				on_cq(&s);
		}
		/* after the completions: an endpoint that left had its last ones handled */
		on_events(&s);
	}
	int failed = 0;
	for (int i = 0; i < CLIENTS; i++) {
		pthread_join(th[i], NULL);
		if (cl[i].rc) {
			fprintf(stderr, "client %d: %s\n", i, rcc_strerror(cl[i].rc));
			failed++;
		}
	}
	/* (not how many ESTABLISHED events came: a client that finished and left
	 * before the loop took its event shows only as one that left) */
	printf("epoll server: %d clients accepted, %d messages echoed, %d left\n", s.accepted,
	       s.echoed, s.left);
	printf("clients: %d of %d verified every echo byte for byte\n", CLIENTS - failed, CLIENTS);
	close(efd);
	rc = rcc_pool_destroy(s.pool); /* -EBUSY if a piece was never given back */
	rcc_cq_destroy(s.cq);
	rcc_listener_close(s.lst);
	rcc_ctx_close(s.ctx);
	return failed || rc || s.echoed != CLIENTS * ROUNDS ? 1 : 0;
}
