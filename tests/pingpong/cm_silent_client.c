/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A verbs client that never confirms: it sends an rdma_cm CONNECT_REQUEST
 * (no private data, as rdma-core's rdma_client), waits for the server's REP
 * and then never sends the RTU (no QP, no rdma_establish()). It prints
 * "answered" once the REP is in and holds the half-open connection until
 * killed or hold_s seconds have passed. For tests/rxe/suites/20-pingpong.sh:
 * such a peer must not keep other clients out.
 *
 *   pp_cm_silent_client HOST PORT [HOLD_S]
 * Exit: 0 held, 1 no answer (or an error), 2 usage.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

/* The next event of the channel, within ms; NULL on timeout or error. */
static struct rdma_cm_event *next_event(struct rdma_event_channel *ch, int ms)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	if (poll(&p, 1, ms) != 1 || rdma_get_cm_event(ch, &ev))
		return NULL;
	return ev;
}

static int expect(struct rdma_event_channel *ch, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev = next_event(ch, 5000);
	if (!ev) {
		fprintf(stderr, "silent client: no %s in 5 s\n", rdma_event_str(want));
		return -1;
	}
	enum rdma_cm_event_type got = ev->event;
	rdma_ack_cm_event(ev);
	if (got != want) {
		fprintf(stderr, "silent client: %s, not %s\n", rdma_event_str(got),
			rdma_event_str(want));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct addrinfo *ai, hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	int hold_s = argc > 3 ? atoi(argv[3]) : 30;

	if (argc < 3 || hold_s <= 0) {
		fprintf(stderr, "usage: %s HOST PORT [HOLD_S]\n", argv[0]);
		return 2;
	}
	if (getaddrinfo(argv[1], argv[2], &hints, &ai)) {
		fprintf(stderr, "silent client: cannot resolve %s\n", argv[1]);
		return 1;
	}
	ch = rdma_create_event_channel();
	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(id, NULL, ai->ai_addr, 2000) ||
	    expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED) || rdma_resolve_route(id, 2000) ||
	    expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED)) {
		fprintf(stderr, "silent client: resolving %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	freeaddrinfo(ai);
	/* no QP: the REP comes up as CONNECT_RESPONSE and the RTU would be ours
	 * to send (rdma_establish) -- which we never do */
	struct rdma_conn_param cp = {
		.responder_resources = 1,
		.initiator_depth = 1,
		.retry_count = 7,
		.rnr_retry_count = 7,
		/* distinct per process: the CM rejects a second REQ naming a QP it
		 * already has a connection for as stale */
		.qp_num = (uint32_t)getpid() & 0xffffff,
	};
	if (rdma_connect(id, &cp) || expect(ch, RDMA_CM_EVENT_CONNECT_RESPONSE)) {
		fprintf(stderr, "silent client: connect: %s\n", strerror(errno));
		return 1;
	}
	printf("answered\n");
	fflush(stdout);
	sleep((unsigned)hold_s); /* holding, not synchronising: the test kills us */
	return 0;
}
