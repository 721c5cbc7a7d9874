/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#include "cm_silent.h"

static unsigned next_qp; /* tests connect from one thread */

struct cm_silent {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
};

/* The next event of the channel is want, within 5 s. */
static int expect(struct rdma_event_channel *ch, enum rdma_cm_event_type want, char *why,
		  size_t whylen)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	if (poll(&p, 1, 5000) != 1 || rdma_get_cm_event(ch, &ev)) {
		snprintf(why, whylen, "no %s within 5 s", rdma_event_str(want));
		return -1;
	}
	enum rdma_cm_event_type got = ev->event;
	rdma_ack_cm_event(ev);
	if (got != want) {
		snprintf(why, whylen, "%s, not %s", rdma_event_str(got), rdma_event_str(want));
		return -1;
	}
	return 0;
}

int cm_silent_open(const char *host, int port, struct cm_silent **out, char *why, size_t whylen)
{
	struct addrinfo *ai, hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct cm_silent *s = calloc(1, sizeof(*s));
	char service[16];

	snprintf(service, sizeof(service), "%d", port);
	if (!s || getaddrinfo(host, service, &hints, &ai)) {
		snprintf(why, whylen, "cannot resolve %s", host);
		free(s);
		return -1;
	}
	s->ch = rdma_create_event_channel();
	if (!s->ch || rdma_create_id(s->ch, &s->id, NULL, RDMA_PS_TCP)) {
		snprintf(why, whylen, "rdma_cm: %s", strerror(errno));
		freeaddrinfo(ai);
		cm_silent_close(s);
		return -1;
	}
	int rc = rdma_resolve_addr(s->id, NULL, ai->ai_addr, 2000);
	freeaddrinfo(ai);
	if (rc || expect(s->ch, RDMA_CM_EVENT_ADDR_RESOLVED, why, whylen) ||
	    rdma_resolve_route(s->id, 2000) ||
	    expect(s->ch, RDMA_CM_EVENT_ROUTE_RESOLVED, why, whylen))
		goto err;
	/* no QP: the REP comes up as CONNECT_RESPONSE and the RTU would be ours
	 * to send (rdma_establish) -- which we never do */
	struct rdma_conn_param cp = {
		.responder_resources = 1,
		.initiator_depth = 1,
		.retry_count = 7,
		.rnr_retry_count = 7,
		/* distinct per connection: the CM rejects a second REQ naming a QP
		 * it already has a connection for as stale */
		.qp_num = ((uint32_t)getpid() * 16u + next_qp++ % 16u) & 0xffffff,
	};
	if (rdma_connect(s->id, &cp) || expect(s->ch, RDMA_CM_EVENT_CONNECT_RESPONSE, why, whylen))
		goto err;
	*out = s;
	return 0;
err:
	if (!why[0])
		snprintf(why, whylen, "rdma_cm: %s", strerror(errno));
	cm_silent_close(s);
	return -1;
}

void cm_silent_close(struct cm_silent *s)
{
	if (!s)
		return;
	if (s->id)
		rdma_destroy_id(s->id);
	if (s->ch)
		rdma_destroy_event_channel(s->ch);
	free(s);
}
