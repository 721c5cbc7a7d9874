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

int pp_client(const struct pp_opts *o)
{
	struct rcc_ctx *ctx;
	struct rcc_client *cli = NULL;
	struct pp_ud_client ud = { 0 };
	struct rcc_ep *ep;
	struct rcc_mr *smr = NULL, *rmr = NULL;
	uint8_t *sbuf = NULL, *rbuf = NULL;
	struct waiter w = { .mode = o->cq_mode, .epfd = -1 };
	struct samples s = { 0 };
	uint8_t hello[PP_HELLO_LEN];
	char addr[300];
	int rc, status = 1;

	rc = rcc_ctx_open(&o->ctx, &ctx);
	if (rc) {
		fprintf(stderr, "rcc-pingpong: cannot open the %s transport: %s\n",
			rcc_transport_name(o->ctx.transport), explain_status(rc));
		return 1;
	}
	join_host_port(addr, sizeof(addr), o->host, o->port);
	if (o->qp_type == RCC_QP_UD) {
		if (pp_ud_client_open(o, ctx, addr, &ud))
			goto out_ctx;
		w.cq = ud.cq;
		ep = ud.ep;
		goto ready;
	}
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
	rc = rcc_client_connect(ctx, addr, &ca, &cli);
	if (rc) {
		fprintf(stderr, "rcc-pingpong: cannot connect to %s: %s\n", addr,
			explain_status(rc));
		goto out_ctx;
	}
	w.cq = rcc_client_cq(cli);
	ep = rcc_client_ep(cli);
ready:
	if (o->cq_mode == RCC_CQ_FD) {
		struct epoll_event ev = { .events = EPOLLIN };
		w.epfd = epoll_create1(EPOLL_CLOEXEC);
		if (w.epfd < 0 || epoll_ctl(w.epfd, EPOLL_CTL_ADD, rcc_cq_fd(w.cq), &ev)) {
			perror("rcc-pingpong: epoll");
			goto out_cli;
		}
	}

	size_t slot = o->size ? o->size : 1;
	sbuf = aligned_alloc(64, (slot + 63) & ~(size_t)63);
	rbuf = aligned_alloc(64, (slot + 63) & ~(size_t)63);
	if (!sbuf || !rbuf || samples_init(&s, (size_t)o->iters)) {
		fprintf(stderr, "rcc-pingpong: out of memory\n");
		goto out_buf;
	}
	for (uint32_t i = 0; i < o->size; i++)
		sbuf[i] = (uint8_t)(i * 7 + 1);
	if ((rc = rcc_mr_reg(ctx, sbuf, slot, RCC_ACCESS_LOCAL_WRITE, &smr)) ||
	    (rc = rcc_mr_reg(ctx, rbuf, slot, RCC_ACCESS_LOCAL_WRITE, &rmr))) {
		fprintf(stderr, "rcc-pingpong: memory registration failed: %s\n", rcc_strerror(rc));
		goto out_buf;
	}
	struct rcc_sge ssge = rcc_mr_sge(smr, sbuf, o->size);
	struct rcc_sge rsge = rcc_mr_sge(rmr, rbuf, o->size);
	unsigned sflags = RCC_SEND_SIGNALED |
			  (o->size <= rcc_ep_max_inline(ep) ? RCC_SEND_INLINE : 0);
	uint64_t t_start = 0;

	for (long it = 0; it < o->warmup + o->iters; it++) {
		bool got_send = false, got_recv = false;
		uint32_t len = 0;

		stamp(sbuf, o->size, (uint64_t)it);
		if (it == o->warmup)
			t_start = mono_ns();
		uint64_t t0 = mono_ns();
		if ((rc = rcc_post_recv(ep, &rsge, 1, 1)) ||
		    (rc = ud.ah ? rcc_post_send_to(ep, ud.ah, &ssge, 1, 0, sflags) :
				  rcc_post_send(ep, &ssge, 1, 0, sflags))) {
			fprintf(stderr, "rcc-pingpong: post failed at iteration %ld: %s\n", it,
				rcc_strerror(rc));
			goto out_buf;
		}
		rc = wait_pair(&w, o->timeout_ms, &got_send, &got_recv, &len);
		uint64_t t1 = mono_ns();
		if (rc) {
			fprintf(stderr, "rcc-pingpong: iteration %ld: %s\n", it,
				rc == -ETIMEDOUT ? "no pong in time (peer gone?)" :
						   rcc_strerror(rc));
			goto out_buf;
		}
		if (o->verify) {
			if (len != o->size || memcmp(rbuf, sbuf, o->size)) {
				uint32_t at = 0;
				while (at < o->size && at < len && rbuf[at] == sbuf[at])
					at++;
				fprintf(stderr,
					"rcc-pingpong: pong %ld differs from its ping (%u of %u bytes, "
					"first difference at byte %u)\n",
					it, len, o->size, at);
				status = 3;
				goto out_buf;
			}
			memset(rbuf, 0, o->size);
		}
		if (it >= o->warmup && samples_add(&s, (double)(t1 - t0) / 2000.0)) {
			fprintf(stderr, "rcc-pingpong: out of memory\n");
			goto out_buf;
		}
	}
	report(o, &s, (double)(mono_ns() - t_start) / 1e9, addr, rcc_ctx_transport(ctx),
	       rcc_ep_path(ep));
	status = 0;

out_buf:
	if (rmr)
		rcc_mr_dereg(rmr);
	if (smr)
		rcc_mr_dereg(smr);
	free(rbuf);
	free(sbuf);
	samples_free(&s);
	if (w.epfd >= 0)
		close(w.epfd);
out_cli:
	if (cli)
		rcc_client_close(cli);
	else
		pp_ud_client_close(&ud);
out_ctx:
	rcc_ctx_close(ctx);
	return status;
}
