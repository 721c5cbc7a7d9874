/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The phases of a run, driven by the main thread:
 *   setup    listen, connect to every peer, wait until every peer's connection
 *            to us is up too ("mesh complete"), then the barrier: READY to
 *            everyone, wait for everyone's READY -- so traffic starts together
 *   traffic  GO: the agents send until the deadline or the byte count, then FIN
 *   end      wait for our FINs to be delivered and every peer's FIN to arrive
 *   report   our figures go to the collector, which waits for everyone's
 * Every wait is bounded and watches for failed peers and for SIGINT/SIGTERM.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "mesh.h"

#define TICK_NS 100000000ull /* how often a wait looks at the watchdog and signals */

static bool interrupted;

/* The outgoing side's work that no completion triggers runs in on_wake. */
static void wake_agents(struct mesh *m)
{
	int rc = m->srv ? rcc_server_wake(m->srv) : 0;
	if (rc)
		complain(m, "cannot wake the server's threads: %s", rcc_strerror(rc));
}

void mesh_set_phase(struct mesh *m, enum phase ph)
{
	atomic_store_explicit(&m->phase, ph, memory_order_release);
	wake_agents(m);
}

static bool signalled(void)
{
	static const struct timespec zero;
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	if (sigtimedwait(&set, NULL, &zero) > 0)
		interrupted = true;
	return interrupted;
}

typedef bool (*pred_fn)(struct mesh *m); /* called under mesh.lock */

/* 0 when done() holds, -ETIMEDOUT at the deadline, -EINTR on a signal. */
static int wait_for(struct mesh *m, pred_fn done, uint64_t deadline)
{
	for (;;) {
		uint64_t now = mono_ns();
		watchdog(m, now);
		if (signalled())
			return -EINTR;
		pthread_mutex_lock(&m->lock);
		bool ok = done(m);
		if (!ok && now < deadline) {
			uint64_t until = deadline - now < TICK_NS ? deadline : now + TICK_NS;
			struct timespec ts = { .tv_sec = (time_t)(until / 1000000000ull),
					       .tv_nsec = (long)(until % 1000000000ull) };
			pthread_cond_timedwait(&m->cond, &m->lock, &ts);
			ok = done(m);
		}
		pthread_mutex_unlock(&m->lock);
		if (ok)
			return 0;
		if (mono_ns() >= deadline)
			return -ETIMEDOUT;
	}
}

#define FOR_PEERS(m, p)                                                 \
	for (struct peer *p = (m)->peers; p < (m)->peers + (m)->n; p++) \
		if (p->rank != (m)->rank)

static bool any_failed(struct mesh *m)
{
	FOR_PEERS(m, p)
	if (peer_failed(p))
		return true;
	return false;
}

static bool mesh_up(struct mesh *m)
{
	FOR_PEERS(m, p)
	if (!peer_failed(p) && !(p->out_up && p->in_up))
		return any_failed(m);
	return true;
}

static bool all_ready(struct mesh *m)
{
	FOR_PEERS(m, p)
	if (!peer_failed(p) && !p->ready_rx)
		return any_failed(m);
	return true;
}

static bool traffic_done(struct mesh *m)
{
	FOR_PEERS(m, p)
	if (!peer_failed(p) && !(p->fin_tx && p->fin_rx))
		return false;
	return true;
}

static bool gathered(struct mesh *m)
{
	FOR_PEERS(m, p)
	if (!peer_failed(p) && !p->done_rx)
		return false;
	return true;
}

static bool report_sent(struct mesh *m)
{
	struct peer *c = &m->peers[m->o->collector];
	return peer_failed(c) || c->done_tx;
}

/* Say which peers kept the mesh from completing in time. */
static void explain_setup(struct mesh *m, const char *stage, uint64_t t0)
{
	pthread_mutex_lock(&m->lock);
	FOR_PEERS(m, p)
	{
		if (peer_failed(p))
			continue;
		const char *what = !p->out_up   ? "we could not complete our connection to it" :
				   !p->in_up    ? "it has not connected to us" :
				   !p->ready_rx ? "it never reached the barrier" :
						  NULL;
		if (what)
			snprintf(p->why, sizeof(p->why), "%s", what);
	}
	pthread_mutex_unlock(&m->lock);
	FOR_PEERS(m, p)
	{
		pthread_mutex_lock(&m->lock);
		bool missing = !peer_failed(p) && (!p->out_up || !p->in_up || !p->ready_rx);
		char why[sizeof(p->why)];
		snprintf(why, sizeof(why), "%s", p->why);
		pthread_mutex_unlock(&m->lock);
		if (missing)
			peer_fail(p, "%s within %.1f s (%s)", why, (double)(mono_ns() - t0) / 1e9,
				  stage);
	}
}

static int local_status(struct mesh *m)
{
	if (atomic_load(&m->data_error))
		return MESH_EXIT_DATA;
	return any_failed(m) ? MESH_EXIT_PEER : MESH_EXIT_OK;
}

static int setup(struct mesh *m, uint64_t t0)
{
	uint64_t deadline = t0 + (uint64_t)m->o->connect_timeout_ms * 1000000ull;
	sigset_t set;
	int rc;

	if ((rc = mesh_listen(m)))
		return MESH_EXIT_FAIL;
	if (m->o->boot) {
		/* the exchange has its own bound; the connections get a full one after it */
		if ((rc = launch_exchange(m)))
			return rc;
		deadline = mono_ns() + (uint64_t)m->o->connect_timeout_ms * 1000000ull;
	}
	/* Until here a signal simply ends us; from now on the waits catch it. */
	rc = mesh_connect_all(m, deadline);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (rc)
		return any_failed(m) ? MESH_EXIT_PEER : MESH_EXIT_FAIL;
	rc = wait_for(m, mesh_up, deadline);
	if (rc == -EINTR)
		return MESH_EXIT_FAIL;
	if (rc || any_failed(m)) {
		explain_setup(m, "mesh incomplete", t0);
		return MESH_EXIT_PEER;
	}
	say(m, "mesh complete: %d connections out, %d in (%.0f ms)", m->n - 1, m->n - 1,
	    (double)(mono_ns() - t0) / 1e6);
	mesh_set_phase(m, PH_READY);
	rc = wait_for(m, all_ready, deadline);
	if (rc == -EINTR)
		return MESH_EXIT_FAIL;
	if (rc || any_failed(m)) {
		explain_setup(m, "barrier", t0);
		return MESH_EXIT_PEER;
	}
	return MESH_EXIT_OK;
}

static int traffic(struct mesh *m)
{
	const struct mesh_opts *o = m->o;
	uint64_t limit = (uint64_t)o->timeout_ms * 1000000ull;
	char what[64];

	m->t_go = mono_ns();
	m->t_stop = m->t_go + (uint64_t)(o->duration_s * 1e9);
	FOR_PEERS(m, p)
	{
		atomic_store(&p->in_seen_ns, m->t_go);
		atomic_store(&p->out_seen_ns, m->t_go);
	}
	mesh_set_phase(m, PH_GO);
	if (o->bytes)
		snprintf(what, sizeof(what), "%llu bytes per pair", (unsigned long long)o->bytes);
	else
		snprintf(what, sizeof(what), "%.2f s", o->duration_s);
	say(m, "traffic started: %s%s%s to %d peers, %s", o->ops & OPS_WRITE ? "WRITE_IMM" : "",
	    o->ops == (OPS_WRITE | OPS_SEND) ? " + " : "", o->ops & OPS_SEND ? "SEND" : "",
	    m->n - 1, what);

	int rc = 0;
	if (!o->bytes) {
		/* connections whose window is full at the end hear of it from us */
		rc = wait_for(m, traffic_done, m->t_stop);
		if (rc == -EINTR)
			return rc;
		wake_agents(m);
	}
	/* With a byte count there is no deadline: the watchdog catches silent peers. */
	rc = wait_for(m, traffic_done, o->bytes ? UINT64_MAX : m->t_stop + limit);
	if (rc == -EINTR)
		return rc;
	if (rc == -ETIMEDOUT) {
		FOR_PEERS(m, p)
		{
			pthread_mutex_lock(&m->lock);
			bool late = !(p->fin_tx && p->fin_rx);
			pthread_mutex_unlock(&m->lock);
			if (late)
				peer_fail(p,
					  "it did not finish within %d ms after the end of traffic",
					  o->timeout_ms);
		}
	}
	return 0;
}

static int gather(struct mesh *m)
{
	uint64_t deadline = mono_ns() + (uint64_t)m->o->timeout_ms * 1000000ull;
	int rc;

	mesh_set_phase(m, PH_REPORT);
	if (is_collector(m)) {
		rc = wait_for(m, gathered, deadline);
		if (rc == -ETIMEDOUT)
			FOR_PEERS(m, p)
			{
				pthread_mutex_lock(&m->lock);
				bool late = !p->done_rx;
				pthread_mutex_unlock(&m->lock);
				if (late)
					peer_fail(p, "its figures did not arrive within %d ms",
						  m->o->timeout_ms);
			}
	} else {
		rc = wait_for(m, report_sent, deadline);
		if (rc == -ETIMEDOUT)
			peer_fail(&m->peers[m->o->collector],
				  "as collector, it did not take our figures within %d ms",
				  m->o->timeout_ms);
	}
	return rc == -EINTR ? rc : 0;
}

int mesh_run(struct mesh *m)
{
	uint64_t t0 = mono_ns();
	char names[1024];
	int status = setup(m, t0);

	if (status == MESH_EXIT_OK && traffic(m) == -EINTR)
		status = MESH_EXIT_FAIL;
	if (status == MESH_EXIT_OK) {
		m->rss_end_kb = rss_kb(&m->threads_end);
		report_build(m, local_status(m));
		if (gather(m) == -EINTR)
			status = MESH_EXIT_FAIL;
		else
			status = report_print(m, local_status(m));
	}
	mesh_set_phase(m, PH_EXIT);

	if (interrupted)
		complain(m, "interrupted");
	failed_ranks(m, names, sizeof(names));
	if (status == MESH_EXIT_DATA)
		complain(m, "FAILED: data errors (see above)%s%s", *names ? "; lost " : "", names);
	else if (*names)
		complain(m, "FAILED: lost %s", names);
	else if (status)
		complain(m, "FAILED");
	if (*names && status == MESH_EXIT_OK)
		status = MESH_EXIT_PEER;
	return status;
}
