/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Figures: each rank's rows (what it sent to each peer, what it received from
 * each), the collector's table of the whole mesh, and JSON. Per-pair rates
 * are the sender's: bytes whose completion it saw, over the time from GO to
 * its last completion. Latency is per message, post to completion, which
 * includes the wait for the receiver's check and credit.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rcc/util.h>

#include "mesh.h"
#include "opts.h"

/* One line of ours, made safe as a whole with the one escaper
 * (rcc_text_escape): what it quotes of peers -- addresses other ranks
 * published, hello fields, reasons -- cannot move the cursor or forge a line.
 * Our own words are printable ASCII and come out unchanged. */
__attribute__((format(printf, 3, 0))) static void put_line(FILE *out, const struct mesh *m,
							   const char *fmt, va_list ap)
{
	char line[512], safe[1024];

	vsnprintf(line, sizeof(line), fmt, ap);
	rcc_text_escape(safe, sizeof(safe), line, sizeof(line));
	fprintf(out, "rcc-mesh: rank %d: %s\n", m->rank, safe); /* one write per line */
	fflush(out);
}

void say(const struct mesh *m, const char *fmt, ...)
{
	va_list ap;
	FILE *out = m->o->json ? stderr : stdout; /* keep stdout pure JSON */

	if (m->o->quiet)
		return;
	va_start(ap, fmt);
	put_line(out, m, fmt, ap);
	va_end(ap);
}

void complain(const struct mesh *m, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	put_line(stderr, m, fmt, ap);
	va_end(ap);
}

uint64_t rss_kb(int *threads)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	unsigned long long kb = 0;
	int t;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "VmRSS: %llu kB", &kb) == 1)
			continue;
		if (threads && sscanf(line, "Threads: %d", &t) == 1)
			*threads = t;
	}
	fclose(f);
	return kb;
}

static int severity(int status)
{
	return status == MESH_EXIT_DATA ? 3 : status == MESH_EXIT_PEER ? 2 : status ? 1 : 0;
}

static int worse(int a, int b) { return severity(a) >= severity(b) ? a : b; }

/* ---------------------------------------------------------- gathering */

void collector_store_row(struct mesh *m, const struct ctrl_row *r, bool tx)
{
	pthread_mutex_lock(&m->lock);
	struct gathered_pair *g = &m->pairs[(size_t)r->src * (size_t)m->n + r->dst];
	if (tx) {
		g->have_tx = true;
		g->tx = r->tx;
	} else {
		g->have_rx = true;
		g->rx = r->rx;
	}
	pthread_mutex_unlock(&m->lock);
}

void collector_store_done(struct mesh *m, int from, const struct ctrl_done *d)
{
	pthread_mutex_lock(&m->lock);
	m->ranks[from].reported = true;
	m->ranks[from].done = *d;
	m->peers[from].done_rx = true;
	pthread_cond_broadcast(&m->cond);
	pthread_mutex_unlock(&m->lock);
}

void report_build(struct mesh *m, int status)
{
	int k = 0;

	m->my_rows = calloc(2 * (size_t)(m->n - 1), sizeof(*m->my_rows));
	if (!m->my_rows) {
		complain(m, "out of memory: our figures stay local");
		return;
	}
	memset(&m->my_done, 0, sizeof(m->my_done));
	pthread_mutex_lock(&m->lock);
	for (int i = 0; i < m->n; i++) {
		struct peer *p = &m->peers[i];
		if (i == m->rank)
			continue;
		/* even rows: what we sent; odd rows: what we received (the order outgoing.c sends) */
		m->my_rows[k++] = (struct ctrl_row){ .src = (uint16_t)m->rank,
						     .dst = (uint16_t)i,
						     .tx = p->tx };
		m->my_rows[k++] = (struct ctrl_row){ .src = (uint16_t)i,
						     .dst = (uint16_t)m->rank,
						     .rx = p->rx };
		if (peer_failed(p))
			m->my_done.failed[i / 8] |= (uint8_t)(1u << (i % 8));
	}
	pthread_mutex_unlock(&m->lock);
	m->my_nrows = k;
	m->my_done.rows = (uint16_t)k;
	m->my_done.rss_base_kb = m->rss_base_kb;
	m->my_done.rss_end_kb = m->rss_end_kb;
	m->my_done.threads = (uint16_t)m->threads_end;
	m->my_done.status = (uint8_t)status;
	if (is_collector(m)) {
		for (int i = 0; i < k; i++)
			collector_store_row(m, &m->my_rows[i], i % 2 == 0);
		pthread_mutex_lock(&m->lock);
		m->ranks[m->rank].reported = true;
		m->ranks[m->rank].done = m->my_done;
		pthread_mutex_unlock(&m->lock);
	}
}

/* ------------------------------------------------------------ summary */

struct totals {
	double mbps, msgps;
	uint64_t p50, p99, p999, max; /* worst pair */
	uint64_t msgs, bytes, bad, lost, dup;
	int pairs, verified, unverified;
	double kb_per_conn;
	double rss_mib_per_rank, threads_per_rank;
	int mem_ranks;
	const char *path; /* every finished pair's, "mixed" if they differ, "-" if none */
};

static double pair_secs(const struct pair_tx *t) { return t->ns ? (double)t->ns / 1e9 : 0; }

static bool pair_ok(const struct gathered_pair *g)
{
	return g->have_rx && g->rx.fin && !g->rx.bad && !g->rx.lost && !g->rx.dup;
}

static void pair_check(const struct gathered_pair *g, bool src_dead, bool dst_dead, char *buf,
		       size_t len)
{
	if (pair_ok(g))
		snprintf(buf, len, "ok");
	else if (g->have_rx && (g->rx.bad || g->rx.lost || g->rx.dup))
		snprintf(buf, len, "ERROR: %llu corrupt, %llu lost, %llu dup",
			 (unsigned long long)g->rx.bad, (unsigned long long)g->rx.lost,
			 (unsigned long long)g->rx.dup);
	else if (src_dead || dst_dead)
		snprintf(buf, len, "rank %s failed",
			 src_dead && dst_dead ? "src+dst" :
			 src_dead             ? "src" :
						"dst");
	else if (!g->have_rx)
		snprintf(buf, len, "not reported");
	else
		snprintf(buf, len, "no end of stream");
}

static void sum_up(struct mesh *m, const bool *dead, struct totals *t)
{
	memset(t, 0, sizeof(*t));
	t->path = "-";
	for (int s = 0; s < m->n; s++)
		for (int d = 0; d < m->n; d++) {
			const struct gathered_pair *g = &m->pairs[(size_t)s * (size_t)m->n + d];
			if (s == d)
				continue;
			t->pairs++;
			if (pair_ok(g))
				t->verified++;
			else if (!dead[s] && !dead[d])
				t->unverified++;
			if (g->have_rx) {
				t->bad += g->rx.bad;
				t->lost += g->rx.lost;
				t->dup += g->rx.dup;
			}
			if (!g->have_tx || !g->tx.ns)
				continue;
			const char *path = mesh_path_name(g->tx.path);
			t->path = !strcmp(t->path, "-") || !strcmp(t->path, path) ? path : "mixed";
			double secs = pair_secs(&g->tx);
			t->mbps += (double)g->tx.bytes / secs / 1e6;
			t->msgps += (double)(g->tx.msgs[0] + g->tx.msgs[1]) / secs;
			t->msgs += g->tx.msgs[0] + g->tx.msgs[1];
			t->bytes += g->tx.bytes;
			if (g->tx.lat_p50 > t->p50)
				t->p50 = g->tx.lat_p50;
			if (g->tx.lat_p99 > t->p99)
				t->p99 = g->tx.lat_p99;
			if (g->tx.lat_p999 > t->p999)
				t->p999 = g->tx.lat_p999;
			if (g->tx.lat_max > t->max)
				t->max = g->tx.lat_max;
		}
	double kb = 0;
	for (int r = 0; r < m->n; r++) {
		const struct ctrl_done *d = &m->ranks[r].done;
		if (!m->ranks[r].reported || d->rss_end_kb < d->rss_base_kb)
			continue;
		kb += (double)(d->rss_end_kb - d->rss_base_kb) / (2.0 * (m->n - 1));
		t->rss_mib_per_rank += (double)d->rss_end_kb / 1024;
		t->threads_per_rank += d->threads;
		t->mem_ranks++;
	}
	if (t->mem_ranks) {
		t->kb_per_conn = kb / t->mem_ranks;
		t->rss_mib_per_rank /= t->mem_ranks;
		t->threads_per_rank /= t->mem_ranks;
	}
}

static const char *ops_name(unsigned ops)
{
	return ops == (OPS_WRITE | OPS_SEND) ? "write+send" : ops == OPS_WRITE ? "write" : "send";
}

/* Receive buffers per incoming connection, from our own set-up (every rank
 * runs with the same options): a queue of its own each, or its share of the
 * server's SRQ (--srq). Write targets are not counted: --srq leaves them. */
static double recv_kib_per_conn(const struct mesh *m)
{
	if (!m->srq_depth)
		return (double)m->nrecv * m->recv_piece / 1024;
	return (double)m->srq_depth * m->recv_piece / (m->n > 1 ? m->n - 1 : 1) / 1024;
}

static void print_table(struct mesh *m, const bool *dead, const struct totals *t, int status)
{
	const struct mesh_opts *o = m->o;
	char check[96], dur[64];

	if (o->bytes)
		snprintf(dur, sizeof(dur), "%llu bytes per pair", (unsigned long long)o->bytes);
	else
		snprintf(dur, sizeof(dur), "%.2f s", o->duration_s);
	printf("rcc-mesh: %d nodes over %s, %u-byte messages, depth %u, %s, %s threads (%d), "
	       "cq %s, %s\n",
	       m->n, rcc_transport_name(rcc_ctx_transport(m->ctx)), o->size, o->depth,
	       ops_name(o->ops), thread_mode_name(o->thread_mode),
	       o->thread_mode == RCC_THREAD_PER_EP ? 2 * (m->n - 1) : o->threads,
	       cq_mode_name(o->cq_mode), dur);
	/* one word per header, with its unit: MB is 10^6 bytes, latency in microseconds */
	printf("%5s %4s %5s %10s %11s %9s %9s %9s %9s %10s  %s\n", "src", "dst", "path", "MB/s",
	       "msg/s", "p50[us]", "p99[us]", "p99.9[us]", "max[us]", "received", "check");
	for (int s = 0; s < m->n && !o->brief; s++)
		for (int d = 0; d < m->n; d++) {
			const struct gathered_pair *g = &m->pairs[(size_t)s * (size_t)m->n + d];
			if (s == d)
				continue;
			double secs = pair_secs(&g->tx);
			pair_check(g, dead[s], dead[d], check, sizeof(check));
			if (g->have_tx && secs > 0)
				printf("%5d %4d %5s %10.2f %11.0f %9.1f %9.1f %9.1f %9.1f %10llu  %s\n",
				       s, d, mesh_path_name(g->tx.path),
				       (double)g->tx.bytes / secs / 1e6,
				       (double)(g->tx.msgs[0] + g->tx.msgs[1]) / secs,
				       (double)g->tx.lat_p50 / 1e3, (double)g->tx.lat_p99 / 1e3,
				       (double)g->tx.lat_p999 / 1e3, (double)g->tx.lat_max / 1e3,
				       (unsigned long long)(g->rx.msgs[0] + g->rx.msgs[1]), check);
			else
				printf("%5d %4d %5s %10s %11s %9s %9s %9s %9s %10llu  %s\n", s, d,
				       "-", "-", "-", "-", "-", "-", "-",
				       (unsigned long long)(g->rx.msgs[0] + g->rx.msgs[1]), check);
		}
	printf("%5s %4d %5s %10.2f %11.0f %9.1f %9.1f %9.1f %9.1f %10llu  %d/%d pairs "
	       "verified%s\n",
	       "mesh", t->pairs, t->path, t->mbps, t->msgps, (double)t->p50 / 1e3,
	       (double)t->p99 / 1e3, (double)t->p999 / 1e3, (double)t->max / 1e3,
	       (unsigned long long)t->msgs, t->verified, t->pairs, status ? " -- FAILED" : "");
	printf("  (mesh row: sums of the pairs' rates; latency columns show the worst pair;\n"
	       "   MB/s is 10^6 bytes per second; received counts messages; path: shm, tcp or\n"
	       "   verbs as rcc_ep_path() of the sender's endpoint, mixed if the pairs differ)\n");
	if (t->mem_ranks)
		printf("  memory: %.0f KiB per connection (RSS growth from setup to the end of "
		       "traffic over %d connections, mean of %d ranks); per rank %.1f MiB RSS, "
		       "%.0f threads\n",
		       t->kb_per_conn, 2 * (m->n - 1), t->mem_ranks, t->rss_mib_per_rank,
		       t->threads_per_rank);
	if (m->srq_depth)
		printf("  receive buffers: %.1f KiB per incoming connection (--srq: one shared "
		       "receive queue of %u x %u B for %d connections)\n",
		       recv_kib_per_conn(m), m->srq_depth, m->recv_piece, m->n - 1);
	else
		printf("  receive buffers: %.1f KiB per incoming connection (%u receives of %u B "
		       "each; --srq shares one queue of as many among all)\n",
		       recv_kib_per_conn(m), m->nrecv, m->recv_piece);
	fflush(stdout);
}

static void print_json(struct mesh *m, const bool *dead, const struct totals *t, int status)
{
	const struct mesh_opts *o = m->o;
	char check[96];
	bool first = true;

	printf("{\"tool\":\"rcc-mesh\",\"nodes\":%d,\"transport\":\"%s\",\"size\":%u,\"depth\":%u,"
	       "\"ops\":\"%s\",\"thread_mode\":\"%s\",\"threads\":%d,\"cq_mode\":\"%s\","
	       "\"duration_s\":%.3f,\"bytes_per_pair\":%llu,\"pairs\":[",
	       m->n, rcc_transport_name(rcc_ctx_transport(m->ctx)), o->size, o->depth,
	       ops_name(o->ops), thread_mode_name(o->thread_mode), o->threads,
	       cq_mode_name(o->cq_mode), o->bytes ? 0.0 : o->duration_s,
	       (unsigned long long)o->bytes);
	for (int s = 0; s < m->n && !o->brief; s++)
		for (int d = 0; d < m->n; d++) {
			const struct gathered_pair *g = &m->pairs[(size_t)s * (size_t)m->n + d];
			if (s == d)
				continue;
			double secs = pair_secs(&g->tx);
			pair_check(g, dead[s], dead[d], check, sizeof(check));
			printf("%s{\"src\":%d,\"dst\":%d,\"path\":\"%s\",\"msgs\":%llu,\"bytes\":%llu,\"secs\":%.6f,"
			       "\"mb_per_s\":%.3f,\"msgs_per_s\":%.1f,\"lat_us\":{\"p50\":%.2f,"
			       "\"p99\":%.2f,\"p999\":%.2f,\"max\":%.2f},\"received\":%llu,\"corrupt\":%llu,"
			       "\"lost\":%llu,\"dup\":%llu,\"verified\":%s,\"check\":\"%s\"}",
			       first ? "" : ",", s, d, mesh_path_name(g->tx.path),
			       (unsigned long long)(g->tx.msgs[0] + g->tx.msgs[1]),
			       (unsigned long long)g->tx.bytes, secs,
			       secs > 0 ? (double)g->tx.bytes / secs / 1e6 : 0,
			       secs > 0 ? (double)(g->tx.msgs[0] + g->tx.msgs[1]) / secs : 0,
			       (double)g->tx.lat_p50 / 1e3, (double)g->tx.lat_p99 / 1e3,
			       (double)g->tx.lat_p999 / 1e3, (double)g->tx.lat_max / 1e3,
			       (unsigned long long)(g->rx.msgs[0] + g->rx.msgs[1]),
			       (unsigned long long)g->rx.bad, (unsigned long long)g->rx.lost,
			       (unsigned long long)g->rx.dup, pair_ok(g) ? "true" : "false", check);
			first = false;
		}
	printf("],\"aggregate\":{\"pairs\":%d,\"verified_pairs\":%d,\"path\":\"%s\","
	       "\"mb_per_s\":%.3f,"
	       "\"msgs_per_s\":%.1f,\"worst_pair_lat_us\":{\"p50\":%.2f,\"p99\":%.2f,\"p999\":%.2f,"
	       "\"max\":%.2f},\"corrupt\":%llu,\"lost\":%llu,\"dup\":%llu,"
	       "\"rss_kib_per_connection\":%.1f,\"rss_mib_per_rank\":%.2f,"
	       "\"threads_per_rank\":%.1f,\"recv_kib_per_connection\":%.1f,\"srq_depth\":%u},"
	       "\"failed_ranks\":[",
	       t->pairs, t->verified, t->path, t->mbps, t->msgps, (double)t->p50 / 1e3,
	       (double)t->p99 / 1e3, (double)t->p999 / 1e3, (double)t->max / 1e3,
	       (unsigned long long)t->bad, (unsigned long long)t->lost, (unsigned long long)t->dup,
	       t->kb_per_conn, t->rss_mib_per_rank, t->threads_per_rank, recv_kib_per_conn(m),
	       m->srq_depth);
	first = true;
	for (int r = 0; r < m->n; r++)
		if (dead[r]) {
			printf("%s%d", first ? "" : ",", r);
			first = false;
		}
	printf("],\"schema\":%d,\"status\":%d}\n", MESH_JSON_SCHEMA, status);
	fflush(stdout);
}

/* A rank other than the collector: one line about its own part. */
static void print_local(struct mesh *m, int status)
{
	uint64_t sent = 0, bytes = 0, got = 0, bad = 0, lost = 0, dup = 0;
	char names[1024];

	pthread_mutex_lock(&m->lock);
	for (int i = 0; i < m->n; i++) {
		struct peer *p = &m->peers[i];
		if (i == m->rank)
			continue;
		sent += p->tx.msgs[0] + p->tx.msgs[1];
		bytes += p->tx.bytes;
		got += p->rx.msgs[0] + p->rx.msgs[1];
		bad += p->rx.bad;
		lost += p->rx.lost;
		dup += p->rx.dup;
	}
	pthread_mutex_unlock(&m->lock);
	failed_ranks(m, names, sizeof(names));
	if (m->o->json) {
		printf("{\"tool\":\"rcc-mesh\",\"rank\":%d,\"collector\":%d,\"sent_msgs\":%llu,"
		       "\"sent_bytes\":%llu,\"received_msgs\":%llu,\"corrupt\":%llu,\"lost\":%llu,"
		       "\"dup\":%llu,\"schema\":%d,\"status\":%d}\n",
		       m->rank, m->o->collector, (unsigned long long)sent,
		       (unsigned long long)bytes, (unsigned long long)got, (unsigned long long)bad,
		       (unsigned long long)lost, (unsigned long long)dup, MESH_JSON_SCHEMA, status);
		fflush(stdout);
		return;
	}
	say(m, "sent %llu messages (%llu bytes) to %d peers, received %llu: %s%s%s",
	    (unsigned long long)sent, (unsigned long long)bytes, m->n - 1, (unsigned long long)got,
	    bad || lost || dup ? "DATA ERRORS" : "all verified", *names ? "; lost " : "", names);
}

int report_print(struct mesh *m, int status)
{
	bool dead[MESH_MAX_NODES] = { false };
	struct totals t;

	if (!is_collector(m)) {
		print_local(m, status);
		return status;
	}
	pthread_mutex_lock(&m->lock);
	for (int r = 0; r < m->n; r++) {
		dead[r] = r != m->rank && peer_failed(&m->peers[r]);
		if (m->ranks[r].reported)
			status = worse(status, m->ranks[r].done.status);
		else if (r != m->rank)
			status = worse(status, MESH_EXIT_PEER);
	}
	sum_up(m, dead, &t);
	pthread_mutex_unlock(&m->lock);
	if (t.bad || t.lost || t.dup)
		status = worse(status, MESH_EXIT_DATA);
	if (m->o->json)
		print_json(m, dead, &t, status);
	else
		print_table(m, dead, &t, status);
	return status;
}
