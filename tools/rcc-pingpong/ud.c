/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * -c ud: datagram endpoints. The server has one: a thread answers address
 * exchanges on the listener (rcc_ud_answer), another echoes every ping to
 * the source its receive completion names, through an address handle per
 * source (made from wc.src the first time it appears). Pings are copied
 * into pong buffers and the receive is posted again at once: a datagram
 * that meets no receive is dropped (no RNR on UD). A client learns the
 * server's address with rcc_ud_resolve, pings through an address handle
 * (client.c does the pinging), and ends with a goodbye datagram: SEND_IMM of
 * no bytes with PP_UD_BYE, sent twice because a datagram may be lost.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "opts.h"
#include "pingpong.h"

#define RECVS 64          /* receives kept posted */
#define PONGS (2 * RECVS) /* pong buffers, each until its send completed */
#define SEND_ID (1ull << 32)
#define SLICE_MS 100 /* how long a wait of the server's threads may take */
#define BYES 2

/* --------------------------------------------------------------- client */

int pp_ud_client_open(const struct pp_opts *o, struct rcc_ctx *ctx, const char *addr,
		      struct pp_ud_client *u)
{
	struct rcc_cq_attr ca = { .depth = 16, .mode = o->cq_mode };
	struct rcc_ud_addr peer;
	int rc;

	memset(u, 0, sizeof(*u));
	rc = rcc_cq_create(ctx, &ca, &u->cq);
	if (!rc) {
		struct rcc_ep_attr a = {
			.send_cq = u->cq, .sq_depth = 4, .rq_depth = 4, .qp_type = RCC_QP_UD
		};
		rc = rcc_ud_create(ctx, &a, &u->ep);
	}
	if (rc) {
		fprintf(stderr, "rcc-pingpong: cannot make a datagram endpoint: %s\n",
			explain_status(rc));
		goto err;
	}
	if (o->size > rcc_ud_max_msg(u->ep)) {
		fprintf(stderr,
			"rcc-pingpong: -c ud carries at most %u bytes per datagram here (the "
			"path MTU), not %u: lower -S\n",
			rcc_ud_max_msg(u->ep), o->size);
		goto err;
	}
	rc = rcc_ud_resolve(u->ep, addr, o->timeout_ms, &peer);
	if (rc) {
		fprintf(stderr, "rcc-pingpong: cannot exchange addresses with %s: %s\n", addr,
			explain_status(rc));
		goto err;
	}
	rc = rcc_ah_create(u->ep, &peer, &u->ah);
	if (rc) {
		fprintf(stderr, "rcc-pingpong: the server's address is unusable: %s\n",
			explain_status(rc));
		goto err;
	}
	return 0;
err:
	pp_ud_client_close(u);
	return -1;
}

void pp_ud_client_close(struct pp_ud_client *u)
{
	if (u->ah) {
		struct rcc_wc wc[BYES];
		int sent = 0, done = 0;
		for (int i = 0; i < BYES; i++)
			sent += rcc_post_send_to_imm(u->ep, u->ah, NULL, 0, PP_UD_BYE, 0,
						     RCC_SEND_SIGNALED) == 0;
		/* the slots are the endpoint's until polled; a second is plenty */
		while (done < sent) {
			int n = rcc_cq_wait(u->cq, wc, BYES, 1000);
			if (n <= 0)
				break;
			done += n;
		}
		rcc_ah_destroy(u->ah);
	}
	if (u->ep)
		rcc_ep_close(u->ep);
	if (u->cq)
		rcc_cq_destroy(u->cq);
	memset(u, 0, sizeof(*u));
}

/* --------------------------------------------------------------- server */

struct peer {
	struct rcc_ud_addr src;
	struct rcc_ah *ah;
	uint64_t pongs;
	bool left;
};

struct ud_server {
	const struct pp_opts *o;
	struct rcc_ctx *ctx;
	struct rcc_cq *cq;
	struct rcc_ep *ep;
	struct rcc_listener *lst;
	int epfd; /* FD mode */
	int donefd;
	uint32_t slot; /* bytes per buffer: the largest datagram */
	uint8_t *buf;  /* RECVS receive buffers, then PONGS pong buffers */
	struct rcc_mr *mr;
	struct peer *peers;
	int npeers, cap;
	unsigned pong_next, pongs_out;
	struct rcc_wc stash[RECVS]; /* receives polled while waiting for a pong buffer */
	int nstash;
	atomic_bool stop;
	atomic_ullong answered;
	int err;
};

static struct rcc_sge buf_sge(const struct ud_server *s, unsigned i, uint32_t len)
{
	return rcc_mr_sge(s->mr, s->buf + (size_t)i * s->slot, len);
}

static int repost(struct ud_server *s, uint64_t i)
{
	struct rcc_sge sge = buf_sge(s, (unsigned)i, s->slot);
	int rc = rcc_post_recv(s->ep, &sge, 1, i);

	if (rc)
		fprintf(stderr, "rcc-pingpong: posting a receive: %s\n", rcc_strerror(rc));
	return rc;
}

/* The client a completion came from; a new address handle the first time. */
static struct peer *peer_of(struct ud_server *s, const struct rcc_ud_addr *src)
{
	for (int i = 0; i < s->npeers; i++)
		if (!memcmp(&s->peers[i].src, src, sizeof(*src)))
			return &s->peers[i];
	if (s->npeers == s->cap) {
		int cap = s->cap ? 2 * s->cap : 16;
		struct peer *p = realloc(s->peers, (size_t)cap * sizeof(*p));
		if (!p)
			return NULL;
		s->peers = p;
		s->cap = cap;
	}
	struct peer *p = &s->peers[s->npeers];
	memset(p, 0, sizeof(*p));
	p->src = *src;
	int rc = rcc_ah_create(s->ep, src, &p->ah);
	if (rc) {
		char text[128];
		rcc_ud_addr_str(src, text, sizeof(text));
		fprintf(stderr, "rcc-pingpong: cannot answer %s: %s\n", text, rcc_last_error());
		return NULL;
	}
	s->npeers++;
	return p;
}

static int take(struct ud_server *s, struct rcc_wc *wc, int max)
{
	int n;

	switch (s->o->cq_mode) {
	case RCC_CQ_WAIT:
	case RCC_CQ_HYBRID:
		n = rcc_cq_wait(s->cq, wc, max, SLICE_MS);
		return n == -ETIMEDOUT ? 0 : n;
	case RCC_CQ_FD:
		n = rcc_cq_poll(s->cq, wc, max);
		if (n == 0 && rcc_cq_arm(s->cq) == 0) {
			struct epoll_event ev;
			if (epoll_wait(s->epfd, &ev, 1, SLICE_MS) < 0 && errno != EINTR)
				return -errno;
		}
		return n;
	default:
		return rcc_cq_poll(s->cq, wc, max);
	}
}

/* Every pong buffer is in flight: take send completions until one is free,
 * keeping the receives that come meanwhile for later. */
static int wait_for_pong_buffer(struct ud_server *s)
{
	struct rcc_wc wc;

	while (s->pongs_out == PONGS && !atomic_load(&s->stop)) {
		int n = take(s, &wc, 1);
		if (n < 0)
			return n;
		if (n == 0)
			continue;
		if (wc.wr_id & SEND_ID)
			s->pongs_out--;
		else if (s->nstash < RECVS)
			s->stash[s->nstash++] = wc;
	}
	return 0;
}

static void on_recv(struct ud_server *s, const struct rcc_wc *wc)
{
	struct peer *p = peer_of(s, &wc->src);
	uint64_t i = wc->wr_id;

	if (p && (wc->wc_flags & RCC_WC_WITH_IMM) && wc->imm_data == PP_UD_BYE && !wc->byte_len) {
		if (!p->left && !s->o->quiet) {
			char text[128];
			rcc_ud_addr_str(&p->src, text, sizeof(text));
			printf("rcc-pingpong: client %s left after %llu pongs\n", text,
			       (unsigned long long)p->pongs);
		}
		if (!p->left && s->o->once) {
			uint64_t one = 1;
			if (write(s->donefd, &one, sizeof(one)) < 0)
				perror("rcc-pingpong: eventfd");
		}
		p->left = true;
	} else if (p && !wait_for_pong_buffer(s)) {
		unsigned k = RECVS + s->pong_next++ % PONGS;
		memcpy(s->buf + (size_t)k * s->slot, s->buf + i * s->slot, wc->byte_len);
		struct rcc_sge sge = buf_sge(s, k, wc->byte_len);
		unsigned flags = RCC_SEND_SIGNALED |
				 (wc->byte_len <= rcc_ep_max_inline(s->ep) ? RCC_SEND_INLINE : 0);
		int rc = rcc_post_send_to(s->ep, p->ah, &sge, 1, SEND_ID | k, flags);
		if (rc)
			fprintf(stderr, "rcc-pingpong: a pong was not sent: %s\n",
				rcc_strerror(rc));
		else
			s->pongs_out++;
		p->pongs++;
		p->left = false; /* back again */
	}
	if (repost(s, i))
		s->err = -EIO;
}

static void *echo_thread(void *arg)
{
	struct ud_server *s = arg;
	struct rcc_wc wc[16];

	while (!atomic_load(&s->stop) && !s->err) {
		while (s->nstash && !s->err)
			on_recv(s, &s->stash[--s->nstash]);
		int n = take(s, wc, 16);
		if (n < 0) {
			fprintf(stderr, "rcc-pingpong: polling: %s\n", rcc_strerror(n));
			s->err = n;
			break;
		}
		for (int i = 0; i < n; i++) {
			if (wc[i].wr_id & SEND_ID) {
				s->pongs_out--;
				if (wc[i].status != RCC_WC_SUCCESS)
					fprintf(stderr, "rcc-pingpong: a pong failed: %s\n",
						rcc_wc_status_str(wc[i].status));
			} else if (wc[i].status != RCC_WC_SUCCESS) {
				if (wc[i].status != RCC_WC_WR_FLUSH_ERR)
					fprintf(stderr, "rcc-pingpong: a receive failed: %s\n",
						rcc_wc_status_str(wc[i].status));
				s->err = -EIO;
			} else {
				on_recv(s, &wc[i]);
			}
		}
	}
	if (s->err) {
		uint64_t one = 1;
		if (write(s->donefd, &one, sizeof(one)) < 0)
			perror("rcc-pingpong: eventfd");
	}
	return NULL;
}

static void *answer_thread(void *arg)
{
	struct ud_server *s = arg;
	struct rcc_ud_addr peer;

	while (!atomic_load(&s->stop)) {
		int rc = rcc_ud_answer(s->lst, s->ep, SLICE_MS, &peer);
		if (rc == -ETIMEDOUT)
			continue;
		if (rc) {
			fprintf(stderr, "rcc-pingpong: the listener failed: %s\n",
				rcc_strerror(rc));
			break;
		}
		atomic_fetch_add(&s->answered, 1);
		if (!s->o->quiet) {
			char text[128];
			rcc_ud_addr_str(&peer, text, sizeof(text));
			printf("rcc-pingpong: client %s, datagrams of up to %u bytes\n", text,
			       s->slot);
		}
	}
	return NULL;
}

static bool anyone_answered(void *arg)
{
	return atomic_load(&((struct ud_server *)arg)->answered) > 0;
}

static int setup(struct ud_server *s)
{
	const struct pp_opts *o = s->o;
	struct rcc_cq_attr ca = { .depth = RECVS + PONGS + 16, .mode = o->cq_mode };
	char addr[300];
	int rc;

	rc = rcc_cq_create(s->ctx, &ca, &s->cq);
	if (rc)
		goto err;
	struct rcc_ep_attr a = {
		.send_cq = s->cq, .sq_depth = PONGS, .rq_depth = RECVS, .qp_type = RCC_QP_UD
	};
	rc = rcc_ud_create(s->ctx, &a, &s->ep);
	if (rc)
		goto err;
	s->slot = rcc_ud_max_msg(s->ep);
	size_t bytes = (size_t)(RECVS + PONGS) * s->slot;
	s->buf = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
	if (!s->buf) {
		rc = -ENOMEM;
		goto err;
	}
	rc = rcc_mr_reg(s->ctx, s->buf, bytes, RCC_ACCESS_LOCAL_WRITE, &s->mr);
	for (unsigned i = 0; !rc && i < RECVS; i++)
		rc = repost(s, i);
	if (rc)
		goto err;
	if (o->cq_mode == RCC_CQ_FD) {
		struct epoll_event ev = { .events = EPOLLIN };
		s->epfd = epoll_create1(EPOLL_CLOEXEC);
		if (s->epfd < 0 || epoll_ctl(s->epfd, EPOLL_CTL_ADD, rcc_cq_fd(s->cq), &ev)) {
			rc = -errno;
			goto err;
		}
	}
	join_host_port(addr, sizeof(addr), o->bind, o->port);
	rc = rcc_listen(s->ctx, addr, 0, &s->lst);
	if (rc) {
		fprintf(stderr, "rcc-pingpong: cannot listen on %s: %s\n", addr,
			explain_status(rc));
		return rc;
	}
	return 0;
err:
	fprintf(stderr, "rcc-pingpong: setting up the datagram endpoint: %s\n", explain_status(rc));
	return rc;
}

static void teardown(struct ud_server *s)
{
	if (s->lst)
		rcc_listener_close(s->lst);
	for (int i = 0; i < s->npeers; i++)
		rcc_ah_destroy(s->peers[i].ah);
	free(s->peers);
	if (s->ep)
		rcc_ep_close(s->ep);
	if (s->mr)
		rcc_mr_dereg(s->mr);
	free(s->buf);
	if (s->epfd >= 0)
		close(s->epfd);
	if (s->cq)
		rcc_cq_destroy(s->cq);
}

int pp_ud_server(const struct pp_opts *o)
{
	struct ud_server s = { .o = o, .epfd = -1, .donefd = -1 };
	pthread_t echo, answer;
	sigset_t set;
	int rc, status = 1;

	/* Block the signals first so every thread created later inherits the mask. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	atomic_init(&s.stop, false);
	atomic_init(&s.answered, 0);

	rc = rcc_ctx_open(&o->ctx, &s.ctx);
	if (rc) {
		fprintf(stderr, "rcc-pingpong: cannot open the %s transport: %s\n",
			rcc_transport_name(o->ctx.transport), explain_status(rc));
		return 1;
	}
	s.donefd = eventfd(0, EFD_CLOEXEC);
	if (s.donefd < 0 || setup(&s))
		goto out;
	printf("rcc-pingpong: listening on %s:%d (transport %s, one datagram endpoint, cq %s, "
	       "UD)\n",
	       o->bind, rcc_listener_port(s.lst), rcc_transport_name(rcc_ctx_transport(s.ctx)),
	       cq_mode_name(o->cq_mode));
	fflush(stdout);
	if (o->boot && pp_launch_publish(o, rcc_listener_port(s.lst)))
		goto out;
	if (pthread_create(&echo, NULL, echo_thread, &s))
		goto out;
	if (pthread_create(&answer, NULL, answer_thread, &s)) {
		atomic_store(&s.stop, true);
		pthread_join(echo, NULL);
		goto out;
	}
	rc = pp_wait_for_end(s.donefd, o->boot ? o->timeout_ms : -1, anyone_answered, &s);
	atomic_store(&s.stop, true);
	pthread_join(answer, NULL);
	pthread_join(echo, NULL);
	if (rc) {
		fprintf(stderr, "rcc-pingpong: rank 0: rank 1 did not connect within %d ms\n",
			o->timeout_ms);
	} else if (!s.err) {
		unsigned long long n = atomic_load(&s.answered);
		if (!o->quiet)
			printf("rcc-pingpong: served %llu client%s (0 turned away)\n", n,
			       n == 1 ? "" : "s");
		status = 0;
	}
out:
	teardown(&s);
	if (s.donefd >= 0)
		close(s.donefd);
	rcc_ctx_close(s.ctx);
	return status;
}
