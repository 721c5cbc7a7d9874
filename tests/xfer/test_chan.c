/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rcc-xfer's control channel (tools/rcc-xfer/chan.c) between two channels in
 * one process: messages come out of chan_next() in order and intact, and a
 * stop request (SIGINT) ends chan_next() even while the peer keeps events
 * waiting -- a sender fed a steady stream of completions and credits must
 * still act on Ctrl-C at once, not after the whole file.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "auth.h"
#include "chan.h"
#include "pair.h"
#include "stop.h"

#define WAIT_MS 10000

struct chan_pair {
	struct rcc_ctx *ctx;
	struct rcc_listener *lst;
	struct chan *client, *server;
};

struct connect_job {
	struct chan_pair *cp;
	char addr[300];
	char err[256];
	int rc;
};

static void *connect_thread(void *arg)
{
	struct connect_job *j = arg;
	struct chan_opts o = { .cq_mode = RCC_CQ_WAIT };

	j->rc = chan_connect(j->cp->ctx, j->addr, &o, WAIT_MS, &j->cp->client, j->err,
			     sizeof(j->err));
	return NULL;
}

/* The server's side accepted on this thread, the client's connected on another. */
static void chan_pair_open(struct chan_pair *cp)
{
	struct connect_job job = { .cp = cp };
	struct chan_opts o = { .cq_mode = RCC_CQ_WAIT };
	uint8_t token[XFER_TOKEN_LEN];
	struct rcc_conn_req *req;
	char addr[300], err[256];
	const void *pd;
	size_t pd_len;
	pthread_t th;

	memset(cp, 0, sizeof(*cp));
	CHECK_OK(test_ctx_open(&cp->ctx));
	snprintf(addr, sizeof(addr), "%s:0", test_addr());
	CHECK_OK(rcc_listen(cp->ctx, addr, 0, &cp->lst));
	snprintf(job.addr, sizeof(job.addr), "%s:%d", test_addr(), rcc_listener_port(cp->lst));
	CHECK_OK(-pthread_create(&th, NULL, connect_thread, &job));
	int rc = rcc_get_request(cp->lst, WAIT_MS, &req);
	if (rc == 0) {
		pd = rcc_conn_req_private_data(req, &pd_len);
		rc = pdata_decode(pd, pd_len, token);
		if (rc)
			rcc_reject_req(req, NULL, 0);
		else
			rc = chan_accept(cp->ctx, req, token, &o, &cp->server, err, sizeof(err));
	}
	pthread_join(th, NULL);
	CHECK_MSG(job.rc == 0, "connect: %s", job.err);
	CHECK_OK(rc);
}

static void chan_pair_close(struct chan_pair *cp)
{
	chan_close(cp->client);
	chan_close(cp->server);
	TEARDOWN(rcc_listener_close(cp->lst));
	TEARDOWN(rcc_ctx_close(cp->ctx));
}

/* n CREDIT messages from the client, slot i carrying a persisted count only
 * it has; check_credit() knows each one again. */
static void send_credits(struct chan_pair *cp, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		struct xmsg m = { .type = XM_CREDIT };
		m.u.credit.slot = i;
		m.u.credit.persisted = 0x100000000ull + i;
		CHECK_OK(chan_send(cp->client, &m));
	}
}

static void check_credit(const struct chan_ev *ev, uint32_t i)
{
	CHECK_EQ(ev->type, CEV_MSG);
	CHECK_EQ(ev->msg.type, XM_CREDIT);
	CHECK_EQ(ev->msg.u.credit.slot, i);
	CHECK_EQ(ev->msg.u.credit.persisted, 0x100000000ull + i);
}

/* Messages come out one by one, in the order sent, each intact. */
static void messages_in_order(void)
{
	struct chan_pair cp;
	struct chan_ev ev;

	chan_pair_open(&cp);
	send_credits(&cp, 5);
	for (uint32_t i = 0; i < 5; i++) {
		CHECK_OK(chan_next(cp.server, WAIT_MS, WAIT_MS, &ev));
		check_credit(&ev, i);
	}
	/* nothing more: a bounded wait says so */
	CHECK_EQ(chan_next(cp.server, WAIT_MS, 50, &ev), -EAGAIN);
	chan_pair_close(&cp);
}

/* A stop request wins over events that are ready: chan_next() fails with
 * -EINTR although a message waits. Last case: the stop flag stays set. */
static void stop_beats_waiting_events(void)
{
	struct chan_pair cp;
	struct chan_ev ev;

	chan_pair_open(&cp);
	send_credits(&cp, 3);
	CHECK_OK(chan_next(cp.server, WAIT_MS, WAIT_MS, &ev));
	check_credit(&ev, 0);
	CHECK_EQ(chan_wait(cp.server, WAIT_MS), 1); /* the next one is there */
	CHECK_OK(stop_install());
	CHECK_OK(raise(SIGINT));
	CHECK(stop_requested());
	CHECK_EQ(chan_next(cp.server, WAIT_MS, WAIT_MS, &ev), -EINTR);
	CHECK(strstr(chan_why(cp.server), "interrupted") != NULL);
	chan_pair_close(&cp);
}

TEST_MAIN(TEST(messages_in_order), TEST(stop_beats_waiting_events))
