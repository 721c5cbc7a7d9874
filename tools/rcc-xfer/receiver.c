/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The listener: accepts connections and serves each on its own thread (or,
 * with --once, the first one on the main thread), up to --max-conns at once.
 * Requests that are not rcc-xfer of this version are turned away before any
 * resources are spent on them.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exitcode.h"
#include "opts.h"
#include "output.h"
#include "receiver.h"
#include "stop.h"

#define ACCEPT_SLICE_MS 200
#define CHECKPOINT_BYTES (64ull << 20)

struct worker {
	struct receiver *r;
	struct rcc_conn_req *req;
	uint8_t token[XFER_TOKEN_LEN];
	pthread_t thread;
	bool used;
	atomic_bool finished;
	struct conn_ctl ctl;
	uint64_t seq;  /* accept order: the smallest is the oldest */
	char peer[64]; /* for messages: req is the thread's, and consumed there */
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	serve_connection(w->r, w->req, w->token, &w->ctl);
	atomic_store(&w->finished, true);
	return NULL;
}

static int reap(struct worker *ws, int n, bool all)
{
	int active = 0;

	for (int i = 0; i < n; i++) {
		if (!ws[i].used)
			continue;
		if (all || atomic_load(&ws[i].finished)) {
			pthread_join(ws[i].thread, NULL);
			ws[i].used = false;
		} else {
			active++;
		}
	}
	return active;
}

static int spawn(struct receiver *r, struct worker *ws, int n, struct rcc_conn_req *req,
		 const uint8_t token[XFER_TOKEN_LEN], uint64_t seq)
{
	for (int i = 0; i < n; i++) {
		if (ws[i].used)
			continue;
		ws[i].r = r;
		ws[i].req = req;
		ws[i].seq = seq;
		snprintf(ws[i].peer, sizeof(ws[i].peer), "%s", rcc_conn_req_peer(req));
		memcpy(ws[i].token, token, XFER_TOKEN_LEN);
		atomic_store(&ws[i].finished, false);
		atomic_store(&ws[i].ctl.authenticated, false);
		atomic_store(&ws[i].ctl.evict, false);
		int rc = pthread_create(&ws[i].thread, NULL, worker_main, &ws[i]);
		if (rc)
			return -rc;
		ws[i].used = true;
		return 0;
	}
	return -EBUSY;
}

/* The port, written where a script waits for it; atomic by rename. */
static int write_ready_file(const char *path, int port)
{
	char tmp[4096];
	FILE *f;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	fprintf(f, "%d\n", port);
	if (fclose(f) != 0 || rename(tmp, path) != 0) {
		int rc = -errno;
		unlink(tmp);
		return rc;
	}
	return 0;
}

static int announce(struct receiver *r, struct rcc_listener *lst)
{
	const struct xfer_opts *o = r->o;
	int port = rcc_listener_port(lst);
	char host[300], jh[400], jd[4200];
	char *colon;

	snprintf(host, sizeof(host), "%s", o->listen);
	colon = strrchr(host, ':');
	if (colon)
		*colon = 0;
	out_info("listening on %s:%d (%s), storing into %s", host, port,
		 rcc_transport_name(rcc_ctx_transport(r->ctx)), o->dir);
	out_json("{\"event\":\"listening\",\"addr\":%s,\"port\":%d,\"transport\":\"%s\","
		 "\"dir\":%s}",
		 json_str(host, jh, sizeof(jh)), port,
		 rcc_transport_name(rcc_ctx_transport(r->ctx)), json_str(o->dir, jd, sizeof(jd)));
	if (o->ready_file) {
		int rc = write_ready_file(o->ready_file, port);
		if (rc) {
			out_error("cannot write %s: %s", o->ready_file, strerror(-rc));
			return rc;
		}
	}
	return 0;
}

/* Refuse a connection and tell the sender why (the reject's private data). */
static void turn_away(struct rcc_conn_req *req, const char *why)
{
	size_t len = strlen(why);

	out_error("turned away %s: %s", rcc_conn_req_peer(req), why);
	rcc_reject_req(req, why,
		       len < RCC_REJECT_PRIVATE_DATA_MAX ? len : RCC_REJECT_PRIVATE_DATA_MAX);
}

/* Connections not yet authenticated (and not already told to go); when they
 * are at the bound, the oldest is told to go -- it gives up within a slice --
 * so a flood of them can never keep an authenticated sender out. */
static void bound_unauthenticated(struct worker *ws, int n, int max_unauth)
{
	struct worker *oldest = NULL;
	int count = 0;

	for (int i = 0; i < n; i++) {
		struct worker *w = &ws[i];
		if (!w->used || atomic_load(&w->finished) || atomic_load(&w->ctl.authenticated) ||
		    atomic_load(&w->ctl.evict))
			continue;
		count++;
		if (!oldest || w->seq < oldest->seq)
			oldest = w;
	}
	if (count >= max_unauth && oldest) {
		out_error("dropping %s: %d connections have not authenticated yet (--max-unauth)",
			  oldest->peer, count);
		atomic_store(&oldest->ctl.evict, true);
	}
}

static int served_now(struct receiver *r)
{
	pthread_mutex_lock(&r->lock);
	int n = r->served;
	pthread_mutex_unlock(&r->lock);
	return n;
}

static int accept_loop(struct receiver *r, struct rcc_listener *lst)
{
	const struct xfer_opts *o = r->o;
	/* served + not yet authenticated + told to go but not yet gone: a
	 * connection told to go leaves within a channel slice (200 ms), so
	 * 3 * max_unauth of those absorb a flood of 15 * max_unauth per second */
	int nworkers = o->max_conns + 4 * o->max_unauth;
	struct worker *ws = calloc((size_t)nworkers, sizeof(*ws));
	uint64_t seq = 0;
	uint8_t token[XFER_TOKEN_LEN];
	struct rcc_conn_req *req;
	size_t pdlen;
	int rc, status = 0;

	if (!ws)
		return XEXIT_LOCAL;
	while (!stop_requested()) {
		reap(ws, nworkers, false);
		rc = rcc_get_request(lst, ACCEPT_SLICE_MS, &req);
		if (rc == -ETIMEDOUT || rc == -EINTR)
			continue;
		if (rc) {
			out_error("waiting for connections: %s", rcc_strerror(rc));
			status = XEXIT_CONN;
			break;
		}
		const void *pd = rcc_conn_req_private_data(req, &pdlen);
		rc = pdata_decode(pd, pdlen, token);
		if (rc) {
			turn_away(req, rc == -EPROTONOSUPPORT ? "other rcc-xfer protocol version" :
								"not an rcc-xfer sender");
			continue;
		}
		if (o->once) {
			status = serve_connection(r, req, token, NULL);
			break;
		}
		/* Only authenticated connections count against --max-conns. */
		int served = served_now(r);
		if (served >= o->max_conns) {
			char why[64];
			snprintf(why, sizeof(why), "already serving %d connections (--max-conns)",
				 served);
			turn_away(req, why);
			continue;
		}
		bound_unauthenticated(ws, nworkers, o->max_unauth);
		rc = spawn(r, ws, nworkers, req, token, seq);
		/* every slot busy: those told to go leave within a slice */
		for (int tries = 0; rc == -EBUSY && tries < 25; tries++) {
			usleep(20000);
			reap(ws, nworkers, false);
			rc = spawn(r, ws, nworkers, req, token, seq);
		}
		seq++;
		if (rc == -EBUSY) {
			turn_away(req, "too many connections still authenticating");
			continue;
		}
		if (rc) {
			out_error("cannot start a thread for %s: %s", rcc_conn_req_peer(req),
				  strerror(-rc));
			rcc_reject_req(req, NULL, 0);
		}
	}
	/* Workers see the stop flag within a slice and abort cleanly. */
	reap(ws, nworkers, true);
	free(ws);
	if (stop_requested() && o->once && !status)
		status = XEXIT_INTERRUPTED;
	return status;
}

int xfer_recv(const struct xfer_opts *o)
{
	struct receiver r;
	struct rcc_listener *lst;
	char err[256];
	int warn, rc, status = XEXIT_LOCAL;

	memset(&r, 0, sizeof(r));
	pthread_mutex_init(&r.lock, NULL);
	r.o = o;
	r.sopts.no_clobber = o->no_clobber;
	r.sopts.no_preallocate = o->no_preallocate;
	r.sopts.checkpoint_bytes = CHECKPOINT_BYTES;
	r.sopts.umask = o->umask;
	if (key_load(o->key_file, &r.key, &warn, err, sizeof(err))) {
		out_error("%s", err);
		return XEXIT_USAGE;
	}
	if (warn)
		out_warn("key file %s is readable by others; chmod 600 it", o->key_file);
	r.dirfd = open(o->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (r.dirfd < 0) {
		out_error("cannot open folder %s: %s", o->dir, strerror(errno));
		goto out_key;
	}
	if (faccessat(r.dirfd, ".", W_OK | X_OK, 0) < 0) {
		out_error("cannot write into %s: %s", o->dir, strerror(errno));
		goto out_dir;
	}
	rc = rcc_ctx_open(&o->ctx_attr, &r.ctx);
	if (rc) {
		out_error("cannot open the %s transport: %s",
			  rcc_transport_name(o->ctx_attr.transport), explain_status(rc));
		goto out_dir;
	}
	r.chunk_size = o->chunk_size                                   ? o->chunk_size :
		       rcc_ctx_transport(r.ctx) == RCC_TRANSPORT_VERBS ? XFER_DEFAULT_CHUNK_VERBS :
									 XFER_DEFAULT_CHUNK_TCP;
	rc = rcc_listen(r.ctx, o->listen, 0, &lst);
	if (rc) {
		out_error("cannot listen on %s: %s", o->listen, explain_status(rc));
		status = XEXIT_CONN;
		goto out_ctx;
	}
	if (announce(&r, lst) == 0)
		status = accept_loop(&r, lst);
	rcc_listener_close(lst);
out_ctx:
	rcc_ctx_close(r.ctx);
out_dir:
	close(r.dirfd);
out_key:
	key_wipe(&r.key);
	return status;
}
