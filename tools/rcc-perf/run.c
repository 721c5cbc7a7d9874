/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The two roles walk the same plan: for every family (latency, then
 * bandwidth), test and size, both prepare their memory, meet at a barrier on
 * the control channel, run their side of the point and finish together.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launch.h"
#include "opts.h"
#include "sess.h"

/* Memory and receives for a point, before the barrier lets the peer in. */
static int prepare(struct sess *s, enum perf_op op, enum perf_kind kind, uint32_t size)
{
	bool validate = s->p.flags & PF_VALIDATE;

	done_reset(s);
	for (int i = 0; i < s->neps; i++) {
		struct pep *e = &s->eps[i];
		uint32_t slots = (uint32_t)(e->area / s->stride);
		e->posted = e->completed = e->target = 0;
		e->rx_seq = 0;
		/* peermem.c: the transport may still touch these for the peer */
		if (op == OP_WRITE && kind == KIND_LAT)
			peer_clear(target_at(e, 0), size);
		if (op == OP_CAS || op == OP_FADD)
			peer_clear(target_at(e, 0), PERF_ATOMIC_SIZE);
		if (op == OP_READ && validate)
			for (uint32_t k = 0; k < slots; k++)
				peer_fill(target_at(e, (size_t)k * s->stride), size, k);
		int rc = pep_refill(s, e);
		if (rc)
			return rc;
	}
	return 0;
}

static int barrier(struct sess *s, enum perf_op op, enum perf_kind kind, uint32_t size)
{
	struct ctrl_msg m = { .type = CTRL_READY, .op = op, .kind = kind, .size = size };
	int rc = ctrl_send(&s->ctrl, &m);

	if (!rc)
		rc = ctrl_expect(&s->ctrl, CTRL_READY, &m, s->timeout_ms);
	if (rc) {
		if (rc != -EPROTO)
			perr("waiting for the peer before %s %s, %u B: %s", op_name(op),
			     kind_name(kind), size, perf_strerror(rc));
		return rc;
	}
	if (m.op != op || m.kind != kind || m.size != size) {
		perr("protocol error: the peer is at %s %s %u B, we are at %s %s %u B",
		     op_name(m.op), kind_name(m.kind), m.size, op_name(op), kind_name(kind), size);
		return -EPROTO;
	}
	return 0;
}

/* Run the plan; the client prints and keeps every point. */
static int walk(struct sess *s)
{
	const struct perf_config *cfg = s->cfg;
	int rc;

	for (int kind = 0; kind < KIND_COUNT; kind++) {
		for (int op = 0; op < OP_COUNT; op++) {
			uint32_t sizes[32];
			const char *why;
			int n;

			if (!plan_runs(&s->p, op, kind, &why)) {
				if ((s->p.ops & (1u << op)) && (s->p.kinds & (1u << kind)) &&
				    !s->server && !cfg->quiet)
					fprintf(cfg->text, "\n Skipping %s %s: %s\n", op_name(op),
						kind_name(kind), why);
				continue;
			}
			s->path = rcc_ep_path(s->neps ? s->eps[0].ep : s->ctrl.ep);
			report_banner(cfg, &s->p, op, kind, s->transport, s->path, s->max_inline,
				      s->server);
			if (!s->server)
				report_header(cfg, kind);
			fflush(cfg->text); /* a pipe reader sees the test start */
			plan_sizes(&s->p, op, sizes, &n);
			for (int i = 0; i < n; i++) {
				struct perf_point pt;
				rc = prepare(s, op, kind, sizes[i]);
				if (!rc)
					rc = barrier(s, op, kind, sizes[i]);
				if (!rc)
					rc = kind == KIND_LAT ? run_lat(s, op, sizes[i], &pt) :
								run_bw(s, op, sizes[i], &pt);
				if (rc)
					return rc;
				if (s->server)
					continue;
				report_point(cfg, &pt);
				rc = results_add(&s->results, &pt);
				if (rc)
					return rc;
			}
			if (!cfg->quiet)
				report_footer(cfg);
		}
	}
	return 0;
}

/* The plan is over: both sides say so, so neither tears down under the other. */
static int goodbye(struct sess *s)
{
	struct ctrl_msg m = { .type = CTRL_BYE };
	int rc = ctrl_send(&s->ctrl, &m);

	if (!rc)
		rc = ctrl_expect(&s->ctrl, CTRL_BYE, &m, s->timeout_ms);
	if (rc && rc != -EPROTO)
		perr("closing: %s", perf_strerror(rc));
	return rc;
}

static uint32_t random_cookie(void)
{
	uint32_t v = 0;
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		if (read(fd, &v, sizeof(v)) != sizeof(v))
			v = 0;
		close(fd);
	}
	return v ? v : (uint32_t)mono_ns() | 1;
}

static int write_outputs(struct sess *s)
{
	const struct perf_config *cfg = s->cfg;
	struct run_info ri = { .transport = s->transport,
			       .path = s->path ? s->path : rcc_ep_path(s->ctrl.ep),
			       .max_inline = s->max_inline,
			       .peer = cfg->host };
	int rc = 0;

	if (cfg->json_path && export_json(cfg->json_path, cfg, &s->p, &ri, &s->results))
		rc = -EIO;
	if (cfg->csv_path && export_csv(cfg->csv_path, cfg, &s->p, &ri, &s->results))
		rc = -EIO;
	if (cfg->plot_dir && s->results.n &&
	    plot_results(cfg->plot_dir, cfg, &s->p, &ri, &s->results))
		rc = -EIO;
	return rc;
}

int perf_client(const struct perf_config *cfg)
{
	struct sess s = { .cfg = cfg, .p = cfg->p, .epfd = -1 };
	int rc, out;

	s.p.cookie = random_cookie();
	rc = sess_client_connect(&s);
	if (!rc)
		rc = walk(&s);
	if (!rc)
		rc = goodbye(&s);
	/* Whatever was measured before a failure is still worth keeping. */
	out = s.ctx ? write_outputs(&s) : 0;
	sess_close(&s);
	if (s.ctx)
		rcc_ctx_close(s.ctx);
	return rc || out ? 1 : 0;
}

int perf_server(const struct perf_config *cfg)
{
	struct rcc_ctx *ctx;
	struct rcc_listener *lst;
	char addr[300];
	int rc, status = 0;

	rc = rcc_ctx_open(&cfg->ctx, &ctx);
	if (rc) {
		perr("opening the %s transport: %s", rcc_transport_name(cfg->ctx.transport),
		     explain_status(rc));
		return 1;
	}
	join_host_port(addr, sizeof(addr), cfg->bind ? cfg->bind : "", cfg->port);
	rc = rcc_listen(ctx, addr, 0, &lst);
	if (rc) {
		perr("listening on %s: %s", addr, explain_status(rc));
		rcc_ctx_close(ctx);
		return 1;
	}
	/* The line tells scripts and tests that the server is ready (and its port). */
	if (!cfg->quiet || !cfg->port) {
		fprintf(cfg->text,
			" rcc-perf server on port %d (%s transport), waiting for a client\n",
			rcc_listener_port(lst), rcc_transport_name(rcc_ctx_transport(ctx)));
		fflush(cfg->text);
	}
	if (cfg->boot && launch_pair_publish(cfg->prog, cfg->boot, cfg->bind,
					     rcc_listener_port(lst), cfg->timeout_ms, cfg->quiet)) {
		rcc_listener_close(lst);
		rcc_ctx_close(ctx);
		return 1;
	}
	do {
		struct sess s = { .cfg = cfg, .server = true, .ctx = ctx, .epfd = -1 };
		rc = sess_server_accept(&s, lst);
		if (!rc)
			rc = walk(&s);
		if (!rc)
			rc = goodbye(&s);
		if (!rc && !cfg->quiet)
			fprintf(cfg->text, " Client done\n");
		sess_close(&s);
		if (rc) {
			status = 1;
			/* A client that failed is no reason to stop serving others. */
			if (cfg->persistent && rc != -ETIMEDOUT)
				perr("client failed; waiting for the next one");
		}
		fflush(cfg->text);
	} while (cfg->persistent && !perf_stop && !(rc == -ETIMEDOUT && cfg->accept_timeout_s));
	rcc_listener_close(lst);
	rcc_ctx_close(ctx);
	return status;
}
