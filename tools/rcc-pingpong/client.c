/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The client: post a receive for the pong, send the ping, wait for both
 * completions, check the pong byte for byte; the half round trip of each
 * timed iteration is one sample. With -c ud the endpoint is a datagram one
 * (ud.c) and the ping goes to the server's address handle; the rest is the
 * same.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "json.h"
#include "opts.h"
#include "pingpong.h"
#include "stats.h"

struct waiter {
	struct rcc_cq *cq;
	enum rcc_cq_mode mode;
	int epfd;
};

/* Note what completed; -EIO (after saying why) if something failed. */
static int take(const struct rcc_wc *wc, int n, bool *got_send, bool *got_recv, uint32_t *len)
{
	for (int i = 0; i < n; i++) {
		if (wc[i].status != RCC_WC_SUCCESS) {
			fprintf(stderr, "rcc-pingpong: %s failed: %s\n",
				wc[i].wr_id ? "pong receive" : "ping send",
				rcc_wc_status_str(wc[i].status));
			return -EIO;
		}
		if (wc[i].opcode == RCC_WC_RECV) {
			*got_recv = true;
			*len = wc[i].byte_len;
		} else {
			*got_send = true;
		}
	}
	return 0;
}

/* Wait (bounded) for the completions of one ping and its pong. */
static int wait_pair(struct waiter *w, int timeout_ms, bool *got_send, bool *got_recv,
		     uint32_t *len)
{
	uint64_t deadline = mono_ns() + (uint64_t)timeout_ms * 1000000ull;
	struct rcc_wc wc[2];
	unsigned spins = 0;

	while (!*got_send || !*got_recv) {
		int n = rcc_cq_poll(w->cq, wc, 2);
		if (n < 0)
			return n;
		if (n) {
			if (take(wc, n, got_send, got_recv, len))
				return -EIO;
			continue;
		}
		/* busy polling looks at the clock now and then only: it is the hot loop */
		if (w->mode == RCC_CQ_POLL && ++spins % 1024)
			continue;
		uint64_t now = mono_ns();
		if (now >= deadline)
			return -ETIMEDOUT;
		int ms = (int)((deadline - now) / 1000000) + 1;
		if (w->mode == RCC_CQ_WAIT || w->mode == RCC_CQ_HYBRID) {
			n = rcc_cq_wait(w->cq, wc, 2, ms);
			if (n == -ETIMEDOUT)
				continue; /* the deadline check above decides */
			if (n < 0)
				return n;
			if (take(wc, n, got_send, got_recv, len))
				return -EIO;
		} else if (w->mode == RCC_CQ_FD) {
			struct epoll_event ev;
			if (rcc_cq_arm(w->cq) > 0)
				continue; /* something came since the poll: poll first */
			if (epoll_wait(w->epfd, &ev, 1, ms) < 0 && errno != EINTR)
				return -errno;
		}
	}
	return 0;
}

static void stamp(uint8_t *buf, uint32_t size, uint64_t seq)
{
	/* The sequence number makes a stale or misdirected pong fail the check. */
	for (uint32_t i = 0; i < 8 && i < size; i++)
		buf[i] = (uint8_t)(seq >> (8 * i));
}

static void report(const struct pp_opts *o, struct samples *s, double secs, const char *peer,
		   enum rcc_transport t, const char *path)
{
	struct summary m;
	samples_summarise(s, &m);
	double rt_per_s = secs > 0 ? (double)m.n / secs : 0;

	if (o->json) {
		char jb[300];
		printf("{\"tool\":\"rcc-pingpong\",\"transport\":\"%s\",\"path\":\"%s\","
		       "\"server\":%s,"
		       "\"size\":%u,\"iters\":%zu,\"cq_mode\":\"%s\",\"connection\":\"%s\","
		       "\"half_rtt_us\":{\"min\":%.3f,\"median\":%.3f,\"avg\":%.3f,"
		       "\"p99\":%.3f,\"max\":%.3f,\"stdev\":%.3f},"
		       "\"round_trips_per_s\":%.1f,\"msgs_per_s\":%.1f,\"verified\":%s,"
		       "\"schema\":%d}\n",
		       rcc_transport_name(t), path, json_str(peer, jb, sizeof(jb)), o->size, m.n,
		       cq_mode_name(o->cq_mode), qp_type_name(o->qp_type), m.min, m.median, m.mean,
		       m.p99, m.max, m.stdev, rt_per_s, 2 * rt_per_s, o->verify ? "true" : "false",
		       PP_JSON_SCHEMA);
		return;
	}
	printf("rcc-pingpong: %zu round trips of %u bytes with %s over %s (cq %s, %s), all pongs "
	       "%s\n",
	       m.n, o->size, peer, rcc_transport_name(t), cq_mode_name(o->cq_mode),
	       qp_type_name(o->qp_type), o->verify ? "verified" : "unchecked");
	printf("  path: %s\n", path);
	printf("  half round trip (us): min %.2f  median %.2f  avg %.2f  p99 %.2f  max %.2f\n",
	       m.min, m.median, m.mean, m.p99, m.max);
	printf("  rate: %.0f round trips/s, %.0f messages/s\n", rt_per_s, 2 * rt_per_s);
}

/* One client run: the connection, its buffers and the samples. */
struct pp_run {
	struct rcc_ctx *ctx;
	struct rcc_client *cli;
	struct pp_ud_client ud;
	struct rcc_ep *ep;
	struct waiter w;
	struct rcc_mr *smr, *rmr;
	uint8_t *sbuf, *rbuf;
	struct samples s;
	char addr[300];
};

/* Connect (an RC/UC client of the session layer, or a datagram endpoint),
 * and in FD mode the epoll set the waits sleep in. 0, or 1 after saying why. */
static int run_connect(const struct pp_opts *o, struct pp_run *r)
{
	uint8_t hello[PP_HELLO_LEN];
	int rc;

	join_host_port(r->addr, sizeof(r->addr), o->host, o->port);
	if (o->qp_type == RCC_QP_UD) {
		if (pp_ud_client_open(o, r->ctx, r->addr, &r->ud))
			return 1;
		r->w.cq = r->ud.cq;
		r->ep = r->ud.ep;
	} else {
		pp_hello_encode(o->size, o->qp_type, hello);
		struct rcc_client_attr ca = {
			.cq_mode = o->cq_mode,
			.ep_attr = { .sq_depth = 4,
				     .rq_depth = 4,
				     .private_data = hello,
				     .private_data_len = sizeof(hello),
				     .qp_type = o->qp_type },
			.connect_timeout_ms = o->timeout_ms,
		};
		rc = rcc_client_connect(r->ctx, r->addr, &ca, &r->cli);
		if (rc) {
			fprintf(stderr, "rcc-pingpong: cannot connect to %s: %s\n", r->addr,
				explain_status(rc));
			return 1;
		}
		r->w.cq = rcc_client_cq(r->cli);
		r->ep = rcc_client_ep(r->cli);
	}
	if (o->cq_mode == RCC_CQ_FD) {
		struct epoll_event ev = { .events = EPOLLIN };
		r->w.epfd = epoll_create1(EPOLL_CLOEXEC);
		if (r->w.epfd < 0 || epoll_ctl(r->w.epfd, EPOLL_CTL_ADD, rcc_cq_fd(r->w.cq), &ev)) {
			perror("rcc-pingpong: epoll");
			return 1;
		}
	}
	return 0;
}

/* The ping and pong buffers, registered, and room for the samples. */
static int run_buffers(const struct pp_opts *o, struct pp_run *r)
{
	size_t slot = o->size ? o->size : 1;
	int rc;

	r->sbuf = aligned_alloc(64, (slot + 63) & ~(size_t)63);
	r->rbuf = aligned_alloc(64, (slot + 63) & ~(size_t)63);
	if (!r->sbuf || !r->rbuf || samples_init(&r->s, (size_t)o->iters)) {
		fprintf(stderr, "rcc-pingpong: out of memory\n");
		return 1;
	}
	for (uint32_t i = 0; i < o->size; i++)
		r->sbuf[i] = (uint8_t)(i * 7 + 1);
	if ((rc = rcc_mr_reg(r->ctx, r->sbuf, slot, RCC_ACCESS_LOCAL_WRITE, &r->smr)) ||
	    (rc = rcc_mr_reg(r->ctx, r->rbuf, slot, RCC_ACCESS_LOCAL_WRITE, &r->rmr))) {
		fprintf(stderr, "rcc-pingpong: memory registration failed: %s\n", rcc_strerror(rc));
		return 1;
	}
	return 0;
}

/* The pong of iteration it must be its ping, byte for byte: 0, or 3 after
 * saying where they differ. */
static int check_pong(const struct pp_opts *o, const struct pp_run *r, long it, uint32_t len)
{
	if (len == o->size && !memcmp(r->rbuf, r->sbuf, o->size))
		return 0;
	uint32_t at = 0;
	while (at < o->size && at < len && r->rbuf[at] == r->sbuf[at])
		at++;
	fprintf(stderr,
		"rcc-pingpong: pong %ld differs from its ping (%u of %u bytes, first difference at "
		"byte %u)\n",
		it, len, o->size, at);
	return 3;
}

/* Warm-up and timed iterations, then the report: 0, 1 (a failure, said) or
 * 3 (a pong that differs from its ping). */
static int run_pings(const struct pp_opts *o, struct pp_run *r)
{
	struct rcc_sge ssge = rcc_mr_sge(r->smr, r->sbuf, o->size);
	struct rcc_sge rsge = rcc_mr_sge(r->rmr, r->rbuf, o->size);
	unsigned sflags = RCC_SEND_SIGNALED |
			  (o->size <= rcc_ep_max_inline(r->ep) ? RCC_SEND_INLINE : 0);
	uint64_t t_start = 0;
	int rc;

	for (long it = 0; it < o->warmup + o->iters; it++) {
		bool got_send = false, got_recv = false;
		uint32_t len = 0;

		stamp(r->sbuf, o->size, (uint64_t)it);
		if (it == o->warmup)
			t_start = mono_ns();
		uint64_t t0 = mono_ns();
		if ((rc = rcc_post_recv(r->ep, &rsge, 1, 1)) ||
		    (rc = r->ud.ah ? rcc_post_send_to(r->ep, r->ud.ah, &ssge, 1, 0, sflags) :
				     rcc_post_send(r->ep, &ssge, 1, 0, sflags))) {
			fprintf(stderr, "rcc-pingpong: post failed at iteration %ld: %s\n", it,
				rcc_strerror(rc));
			return 1;
		}
		rc = wait_pair(&r->w, o->timeout_ms, &got_send, &got_recv, &len);
		uint64_t t1 = mono_ns();
		if (rc) {
			fprintf(stderr, "rcc-pingpong: iteration %ld: %s\n", it,
				rc == -ETIMEDOUT ? "no pong in time (peer gone?)" :
						   rcc_strerror(rc));
			return 1;
		}
		if (o->verify) {
			if ((rc = check_pong(o, r, it, len)))
				return rc;
			memset(r->rbuf, 0, o->size);
		}
		if (it >= o->warmup && samples_add(&r->s, (double)(t1 - t0) / 2000.0)) {
			fprintf(stderr, "rcc-pingpong: out of memory\n");
			return 1;
		}
	}
	report(o, &r->s, (double)(mono_ns() - t_start) / 1e9, r->addr, rcc_ctx_transport(r->ctx),
	       rcc_ep_path(r->ep));
	return 0;
}

/* What run_connect and run_buffers set up, in reverse order. */
static void run_close(struct pp_run *r)
{
	if (r->rmr)
		rcc_mr_dereg(r->rmr);
	if (r->smr)
		rcc_mr_dereg(r->smr);
	free(r->rbuf);
	free(r->sbuf);
	samples_free(&r->s);
	if (r->w.epfd >= 0)
		close(r->w.epfd);
	if (r->cli)
		rcc_client_close(r->cli);
	else
		pp_ud_client_close(&r->ud);
	rcc_ctx_close(r->ctx);
}

int pp_client(const struct pp_opts *o)
{
	struct pp_run r = { .w = { .mode = o->cq_mode, .epfd = -1 } };
	int rc = rcc_ctx_open(&o->ctx, &r.ctx);

	if (rc) {
		fprintf(stderr, "rcc-pingpong: cannot open the %s transport: %s\n",
			rcc_transport_name(o->ctx.transport), explain_status(rc));
		return 1;
	}
	int status = run_connect(o, &r);
	if (!status)
		status = run_buffers(o, &r);
	if (!status)
		status = run_pings(o, &r);
	run_close(&r);
	return status;
}
