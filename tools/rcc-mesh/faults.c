/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fault detection. A peer has failed when any side of either connection to it
 * says so (an error completion, a disconnect before the protocol ended, a
 * malformed message), or when the watchdog finds it silent for longer than
 * --timeout while it owes us something. The first reason is kept and printed
 * once; from then on nobody waits for that peer.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "mesh.h"

void peer_fail(struct peer *p, const char *fmt, ...)
{
	struct mesh *m = p->m;
	char why[sizeof(p->why)];
	va_list ap;
	bool first;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&m->lock);
	first = !atomic_load(&p->failed);
	if (first) {
		snprintf(p->why, sizeof(p->why), "%s", why);
		atomic_store(&p->failed, true);
	}
	pthread_cond_broadcast(&m->cond);
	pthread_mutex_unlock(&m->lock);
	if (first)
		complain(m, "rank %d (%s) failed: %s", p->rank, p->node->addr, why);
}

bool peer_failed(const struct peer *p) { return atomic_load(&p->failed); }

void watchdog(struct mesh *m, uint64_t now)
{
	int ph = atomic_load(&m->phase);
	uint64_t limit = (uint64_t)m->o->timeout_ms * 1000000ull;

	if (ph < PH_GO || ph == PH_EXIT)
		return;
	for (int i = 0; i < m->n; i++) {
		struct peer *p = &m->peers[i];
		if (i == m->rank || peer_failed(p))
			continue;
		uint64_t seen = atomic_load(&p->out_seen_ns);
		if (atomic_load(&p->out_busy) && now > seen && now - seen > limit) {
			peer_fail(p,
				  "it stopped responding: nothing we sent it completed for %d ms",
				  m->o->timeout_ms);
			continue;
		}
		pthread_mutex_lock(&m->lock);
		bool owes_data = !p->fin_rx;
		pthread_mutex_unlock(&m->lock);
		seen = atomic_load(&p->in_seen_ns);
		if (ph == PH_GO && owes_data && now > seen && now - seen > limit)
			peer_fail(p, "it stopped sending: nothing arrived from it for %d ms",
				  m->o->timeout_ms);
	}
}

void failed_ranks(struct mesh *m, char *buf, size_t len)
{
	size_t off = 0;
	buf[0] = 0;
	for (int i = 0; i < m->n && off < len; i++) {
		if (i == m->rank || !peer_failed(&m->peers[i]))
			continue;
		int k = snprintf(buf + off, len - off, "%srank %d (%s)", off ? ", " : "", i,
				 m->peers[i].node->addr);
		if (k < 0)
			break;
		off += (size_t)k;
	}
}
