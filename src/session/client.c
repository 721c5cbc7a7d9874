/* SPDX-License-Identifier: BSD-3-Clause */
/* rcc_client: one endpoint with its own CQ, connected with bounded retry. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "base/last_error.h"
#include "base/log.h"
#include "base/sock.h"
#include "rcc/session.h"
#include "cq_depth.h"

struct rcc_client {
	struct rcc_cq *cq;
	bool own_cq;
	struct rcc_ep *ep;
};

/* Errors that mean "the server is not up yet", worth another attempt. */
static bool retryable(int rc)
{
	return rc == -ECONNREFUSED || rc == -ETIMEDOUT || rc == -EHOSTUNREACH ||
	       rc == -ENETUNREACH || rc == -ECONNRESET || rc == -EADDRNOTAVAIL;
}

int rcc_client_connect(struct rcc_ctx *ctx, const char *addr, const struct rcc_client_attr *attr,
		       struct rcc_client **out)
{
	static const struct rcc_client_attr defaults;
	struct rcc_client *cli;
	int rc;

	rcci_error_clear();
	if (!ctx || !addr || !out)
		return rcci_fail(-EINVAL, "rcc_client_connect: ctx, addr and cli are required");
	if (!attr)
		attr = &defaults;
	if (attr->connect_timeout_ms < 0 || attr->retry_for_ms < 0)
		return rcci_fail(-EINVAL,
				 "connect_timeout_ms and retry_for_ms must not be negative");
	const struct rcc_ep_attr *t = &attr->ep_attr;
	struct rcc_cq_attr ca = {
		.depth = attr->cq_depth ? attr->cq_depth : rcci_ep_cq_depth(t),
		.mode = attr->cq_mode,
	};
	cli = calloc(1, sizeof(*cli));
	if (!cli)
		return -ENOMEM;
	if (attr->cq) {
		cli->cq = attr->cq;
	} else {
		rc = rcc_cq_create(ctx, &ca, &cli->cq);
		if (rc)
			goto err_cli;
		cli->own_cq = true;
	}

	struct rcc_ep_attr ea = *t;
	ea.send_cq = ea.recv_cq = cli->cq;
	int timeout = attr->connect_timeout_ms ? attr->connect_timeout_ms : 5000;
	uint64_t give_up = rcci_deadline(attr->retry_for_ms);
	long backoff_ms = 10;
	for (;;) {
		rc = rcc_connect(ctx, addr, &ea, timeout, &cli->ep);
		int left = rcci_ms_left(give_up);
		if (!rc || !retryable(rc) || left == 0)
			break;
		log_debug("client: %s not ready (%s), retrying", addr, rcc_strerror(rc));
		/* Back off between attempts (not a synchronisation: the peer may be far). */
		long ms = backoff_ms < left ? backoff_ms : left;
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
		nanosleep(&ts, NULL);
		if (backoff_ms < 200)
			backoff_ms *= 2;
	}
	if (rc)
		goto err_cq;
	*out = cli;
	return 0;

err_cq:
	if (cli->own_cq)
		rcc_cq_destroy(cli->cq);
err_cli:
	free(cli);
	return rc;
}

struct rcc_ep *rcc_client_ep(const struct rcc_client *cli) { return cli ? cli->ep : NULL; }

struct rcc_cq *rcc_client_cq(const struct rcc_client *cli) { return cli ? cli->cq : NULL; }

int rcc_client_close(struct rcc_client *cli)
{
	if (!cli)
		return -EINVAL;
	rcc_ep_close(cli->ep);
	int rc = cli->own_cq ? rcc_cq_destroy(cli->cq) : 0;
	free(cli);
	return rc;
}
