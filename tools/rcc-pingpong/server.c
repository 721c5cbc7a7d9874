/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The server: an rcc_server whose agents echo each ping. Every connection
 * owns two receive buffers, so one is always posted while the other's
 * contents go back as the pong; a buffer is posted again once its pong has
 * completed. Copy mode, with --srq or -c uc: each ping is copied into one of
 * two pong buffers of the connection's (the one not in flight) and echoed
 * from there. With --srq the pings land in the session server's shared
 * receive queue and it reposts them; with UC the receive is reposted at once,
 * because a UC ping that meets no receive is dropped (no RNR retry), and a
 * repost that waited for its pong's send completion can come too late (most
 * likely why a UC run on Soft-RoCE once stalled after 197 pongs).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "opts.h"
#include "pingpong.h"

#define PP_RECVS 2 /* receive buffers, then as many pong buffers for copy mode */
#define PP_SLOTS (2 * PP_RECVS)
#define SEND_ID 16

struct pp_server {
	const struct pp_opts *o;
	struct rcc_ctx *ctx;
	int donefd; /* --once: the first client has left */
};

struct pp_conn {
	struct pp_server *srv;
	uint32_t size;
	uint8_t *buf;
	struct rcc_mr *mr;
	struct rcc_sge sge[PP_SLOTS];
	struct rcc_recv_wr rwr[PP_RECVS];
	uint64_t pongs;
	unsigned next; /* copy mode: the pong buffer to fill next */
};

static void conn_free(struct pp_conn *c)
{
	if (c->mr)
		rcc_mr_dereg(c->mr);
	free(c->buf);
	free(c);
}

static int on_request(struct rcc_conn_req *req, void *arg, void **conn,
		      const struct rcc_recv_wr **recv, int *num_recv)
{
	struct pp_server *srv = arg;
	size_t len;
	const void *pd = rcc_conn_req_private_data(req, &len);
	uint32_t size;
	enum rcc_qp_type type;
	int rc;

	/* rdma-core's rdma_client sends no hello: serve it at our own -S size */
	if (pp_hello_decode(pd, len, &size, &type)) {
		size = srv->o->size;
		type = srv->o->qp_type;
	}
	if (srv->o->srq_depth && size > srv->o->size) {
		fprintf(stderr,
			"rcc-pingpong: client %s turned away: its %u-byte pings do not fit "
			"the SRQ's %u-byte buffers (-S)\n",
			rcc_conn_req_peer(req), size, srv->o->size);
		return -EMSGSIZE;
	}
	if (type != srv->o->qp_type) {
		/* endpoints of two types cannot talk: say so rather than hang */
		fprintf(stderr,
			"rcc-pingpong: client %s turned away: it asks for %s, this server "
			"serves %s (-c)\n",
			rcc_conn_req_peer(req), qp_type_name(type), qp_type_name(srv->o->qp_type));
		return -EPROTO;
	}
	struct pp_conn *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->srv = srv;
	c->size = size;
	size_t slot = size ? size : 1;
	c->buf = aligned_alloc(64, ((slot * PP_SLOTS) + 63) & ~(size_t)63);
	if (!c->buf) {
		free(c);
		return -ENOMEM;
	}
	rc = rcc_mr_reg(srv->ctx, c->buf, slot * PP_SLOTS, RCC_ACCESS_LOCAL_WRITE, &c->mr);
	if (rc) {
		conn_free(c);
		return rc;
	}
	for (int i = 0; i < PP_SLOTS; i++)
		c->sge[i] = rcc_mr_sge(c->mr, c->buf + (size_t)i * slot, size);
	for (int i = 0; i < PP_RECVS; i++)
		c->rwr[i] = (struct rcc_recv_wr){ .wr_id = (uint64_t)i,
						  .sg_list = &c->sge[i],
						  .num_sge = 1 };
	if (!srv->o->quiet)
		printf("rcc-pingpong: client %s, %u-byte messages\n", rcc_conn_req_peer(req), size);
	*conn = c;
	*recv = c->rwr;
	*num_recv = srv->o->srq_depth ? 0 : PP_RECVS;
	return 0;
}

static void echo(struct rcc_ep *ep, struct pp_conn *c, int i, uint32_t len)
{
	struct rcc_sge s = c->sge[i];
	unsigned flags = RCC_SEND_SIGNALED;
	int rc;

	s.length = len;
	if (len <= rcc_ep_max_inline(ep))
		flags |= RCC_SEND_INLINE;
	rc = rcc_post_send(ep, &s, 1, SEND_ID + (uint64_t)i, flags);
	if (rc && rc != -ENOTCONN) {
		fprintf(stderr, "rcc-pingpong: %s: post failed: %s\n", rcc_ep_peer(ep),
			rcc_strerror(rc));
		rcc_ep_disconnect(ep);
	}
}

static bool copy_mode(const struct pp_server *srv)
{
	return srv->o->srq_depth || srv->o->qp_type == RCC_QP_UC;
}

/* Copy mode: the ping into the pong buffer not in flight, and echo that. */
static void echo_copy(struct rcc_ep *ep, struct pp_conn *c, const void *data, uint32_t len)
{
	int i = PP_RECVS + (int)(c->next++ % PP_RECVS);

	memcpy(c->buf + (size_t)i * (c->size ? c->size : 1), data, len);
	echo(ep, c, i, len);
}

/* --srq: a ping in one of the server's buffers, valid during the call only. */
static void on_recv(struct rcc_ep *ep, const struct rcc_wc *wc, const void *data, void *conn)
{
	if (!data || wc->byte_len > ((struct pp_conn *)conn)->size)
		return; /* not a ping: a client that sent more than its hello said fails */
	echo_copy(ep, conn, data, wc->byte_len);
}

static void on_completion(struct rcc_ep *ep, const struct rcc_wc *wc, void *conn)
{
	struct pp_conn *c = conn;
	int rc;

	if (wc->status != RCC_WC_SUCCESS) {
		if (wc->status != RCC_WC_WR_FLUSH_ERR)
			fprintf(stderr, "rcc-pingpong: %s: %s\n", rcc_ep_peer(ep),
				rcc_wc_status_str(wc->status));
		return;
	}
	uint64_t i = wc->wr_id;
	if (wc->opcode == RCC_WC_RECV && !copy_mode(c->srv)) {
		echo(ep, c, (int)i, wc->byte_len);
		return;
	}
	if (wc->opcode == RCC_WC_RECV) {
		echo_copy(ep, c, c->buf + i * (c->size ? c->size : 1), wc->byte_len);
	} else {
		c->pongs++;
		i -= SEND_ID;
		if (i >= PP_RECVS)
			return; /* a pong buffer: free again, nothing to repost */
	}
	rc = rcc_post_recv_list(ep, &c->rwr[i], 1, NULL);
	if (rc && rc != -ENOTCONN) {
		fprintf(stderr, "rcc-pingpong: %s: post failed: %s\n", rcc_ep_peer(ep),
			rcc_strerror(rc));
		rcc_ep_disconnect(ep);
	}
}

static void on_disconnect(struct rcc_ep *ep, void *conn)
{
	struct pp_conn *c = conn;
	struct pp_server *srv = c->srv;

	if (ep && !srv->o->quiet)
		printf("rcc-pingpong: client %s left after %llu pongs\n", rcc_ep_peer(ep),
		       (unsigned long long)c->pongs);
	conn_free(c);
	if (ep && srv->o->once) {
		uint64_t one = 1;
		if (write(srv->donefd, &one, sizeof(one)) < 0)
			perror("rcc-pingpong: eventfd");
	}
}

static const struct rcc_server_ops pp_ops = {
	.on_request = on_request,
	.on_completion = on_completion,
	.on_disconnect = on_disconnect,
	.on_recv = on_recv,
};

int pp_wait_for_end(int donefd, int first_ms, bool (*anyone_came)(void *), void *arg)
{
	struct pollfd p[2];
	sigset_t set;
	int r, rc = 0;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	p[0].fd = signalfd(-1, &set, SFD_CLOEXEC);
	p[0].events = POLLIN;
	p[1].fd = donefd;
	p[1].events = POLLIN;
	for (;;) {
		r = poll(p, 2, first_ms);
		if (r > 0 || (r < 0 && errno != EINTR))
			break;
		if (r == 0) {
			if (!anyone_came(arg)) {
				rc = -ETIMEDOUT;
				break;
			}
			first_ms = -1; /* it came: wait for it to leave */
		}
	}
	if (p[0].fd >= 0)
		close(p[0].fd);
	return rc;
}

static bool session_accepted(void *arg)
{
	struct rcc_server_stats st;

	rcc_server_stats(arg, &st);
	return st.accepted > 0;
}

int pp_server(const struct pp_opts *o)
{
	struct pp_server srv = { .o = o, .donefd = -1 };
	struct rcc_server *s;
	struct rcc_server_stats st;
	char addr[300];
	sigset_t set;
	int rc, status = 1;

	if (o->qp_type == RCC_QP_UD)
		return pp_ud_server(o);
	/* Block the signals first so every thread created later inherits the mask. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	rc = rcc_ctx_open(&o->ctx, &srv.ctx);
	if (rc) {
		fprintf(stderr, "rcc-pingpong: cannot open the %s transport: %s\n",
			rcc_transport_name(o->ctx.transport), explain_status(rc));
		return 1;
	}
	srv.donefd = eventfd(0, EFD_CLOEXEC);
	if (srv.donefd < 0) {
		perror("rcc-pingpong: eventfd");
		goto out_ctx;
	}
	join_host_port(addr, sizeof(addr), o->bind, o->port);
	struct rcc_server_attr attr = {
		.addr = addr,
		.thread_mode = o->thread_mode,
		.num_threads = o->threads,
		.cq_mode = o->cq_mode,
		.ep_attr = { .sq_depth = 8, .rq_depth = 8, .qp_type = o->qp_type },
		.ops = &pp_ops,
		.arg = &srv,
		.srq_depth = o->srq_depth,
		.srq_buf_size = o->size ? o->size : 1,
	};
	rc = rcc_server_start(srv.ctx, &attr, &s);
	if (rc) {
		fprintf(stderr, "rcc-pingpong: cannot listen on %s: %s\n", addr,
			explain_status(rc));
		goto out_fd;
	}
	printf("rcc-pingpong: listening on %s:%d (transport %s, %s threads, cq %s, %s)\n", o->bind,
	       rcc_server_port(s), rcc_transport_name(rcc_ctx_transport(srv.ctx)),
	       thread_mode_name(o->thread_mode), cq_mode_name(o->cq_mode),
	       qp_type_name(o->qp_type));
	fflush(stdout);
	if (o->boot && pp_launch_publish(o, rcc_server_port(s))) {
		rcc_server_stop(s);
		goto out_fd;
	}
	if (pp_wait_for_end(srv.donefd, o->boot ? o->timeout_ms : -1, session_accepted, s)) {
		fprintf(stderr, "rcc-pingpong: rank 0: rank 1 did not connect within %d ms\n",
			o->timeout_ms);
		rcc_server_stop(s);
		goto out_fd;
	}
	rcc_server_stats(s, &st);
	rcc_server_stop(s);
	if (!o->quiet)
		printf("rcc-pingpong: served %llu client%s (%llu turned away)\n",
		       (unsigned long long)st.accepted, st.accepted == 1 ? "" : "s",
		       (unsigned long long)st.rejected);
	status = 0;
out_fd:
	close(srv.donefd);
out_ctx:
	rcc_ctx_close(srv.ctx);
	return status;
}
