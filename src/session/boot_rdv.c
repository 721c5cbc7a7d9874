/* SPDX-License-Identifier: BSD-3-Clause */
/* The env bootstrap, rank 0: the rendezvous (boot_env.h). */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "boot_env.h"
#include "base/log.h"
#include "base/sock.h"
#include "rcc/rcc.h"

static void note(struct boot_env *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct boot_env *e, const char *fmt, ...)
{
	char *slot = e->notes[e->nnotes % NOTES];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(slot, sizeof(e->notes[0]), fmt, ap);
	va_end(ap);
	e->nnotes++;
	log_warn("bootstrap: rendezvous: %s", slot);
}

static void pending_drop(struct boot_env *e, int i)
{
	rcci_boot_conn_free(e->pending[i]);
	e->pending[i] = e->pending[--e->npending];
}

static void accept_new(struct boot_env *e, uint64_t deadline)
{
	/* a bounded batch: a flood of connections must not keep us from the others */
	for (int n = 0; n < MAX_PENDING; n++) {
		int fd = accept4(e->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return; /* EAGAIN, or a connection that vanished: nothing to do */
		struct conn *c = rcci_boot_conn_new(fd);
		if (!c || getrandom(c->nonce_s, BOOT_NONCE_LEN, 0) != BOOT_NONCE_LEN) {
			if (c)
				rcci_boot_conn_free(c);
			else
				close(fd);
			continue;
		}
		rcci_boot_peer_name(fd, c->addr, sizeof(c->addr));
		if (e->npending == MAX_PENDING) {
			int oldest = 0;
			for (int i = 1; i < e->npending; i++)
				if (e->pending[i]->deadline < e->pending[oldest]->deadline)
					oldest = i;
			note(e, "%s: dropped, %d connections were waiting to identify themselves",
			     e->pending[oldest]->addr, MAX_PENDING);
			pending_drop(e, oldest);
		}
		uint64_t now = rcci_deadline(0);
		c->deadline = now + IDENTIFY_MS < deadline ? now + IDENTIFY_MS : deadline;
		struct boot_challenge ch = { .flags = e->secret_len ? BOOT_FLAG_AUTH : 0 };
		uint8_t p[BOOT_CHALLENGE_LEN];
		memcpy(ch.nonce, c->nonce_s, BOOT_NONCE_LEN);
		rcci_boot_challenge_encode(&ch, p);
		/* 41 bytes into a fresh socket's empty buffer: never waits */
		if (rcci_boot_frame_send(c, 's', BOOT_CHALLENGE, p, sizeof(p), now)) {
			rcci_boot_conn_free(c);
			continue;
		}
		e->pending[e->npending++] = c;
	}
}

/*
 * Read what has arrived. Returns 1 when a whole frame (header decoded into h)
 * is at c->buf, 0 when more is needed, -ECONNRESET when the peer closed,
 * -EPROTO for a bad header or a frame longer than max, -EPROTONOSUPPORT for
 * another protocol version, another negative errno.
 */
static int conn_pump(struct conn *c, size_t max, struct boot_hdr *h)
{
	if (c->cap < BOOT_HDR_LEN + max) {
		uint8_t *b = realloc(c->buf, BOOT_HDR_LEN + max);
		if (!b)
			return -ENOMEM;
		c->buf = b;
		c->cap = BOOT_HDR_LEN + max;
	}
	for (;;) {
		long want = rcci_boot_frame_need(c->buf, c->fill, max, h);
		if (want < 0)
			return (int)want;
		if (c->fill >= BOOT_HDR_LEN && c->fill >= (size_t)want)
			return 1;
		ssize_t r = recv(c->fd, c->buf + c->fill, (size_t)want - c->fill, MSG_DONTWAIT);
		if (r == 0)
			return -ECONNRESET;
		if (r < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 :
											   -errno;
		c->fill += (size_t)r;
	}
}

/* Drop the frame at the start of c->buf, keeping whatever followed it. */
static void conn_consume(struct conn *c, const struct boot_hdr *h)
{
	size_t n = BOOT_HDR_LEN + h->len;
	memmove(c->buf, c->buf + n, c->fill - n);
	c->fill -= n;
}

/* A HELLO from a pending connection: it joins as its rank, or is dropped. */
static int identify(struct rcc_bootstrap *bs, struct boot_env *e, int i)
{
	struct conn *c = e->pending[i];
	struct boot_hello h;
	struct boot_hdr hdr;
	uint8_t want[RCCI_SHA256_LEN];
	int rc = conn_pump(c, BOOT_HELLO_LEN, &hdr);

	if (rc == 0)
		return 0;
	if (rc < 0) {
		note(e, "%s: dropped before identifying itself: it %s", c->addr, rcci_boot_why(rc));
		pending_drop(e, i);
		return 1;
	}
	if (hdr.type != BOOT_HELLO || rcci_boot_frame_open(c, 'c', 0, &hdr, c->buf) < 0 ||
	    rcci_boot_hello_decode(c->buf + BOOT_HDR_LEN, hdr.len, &h)) {
		note(e, "%s: dropped: it sent something that is not an rcc bootstrap hello",
		     c->addr);
		pending_drop(e, i);
		return 1;
	}
	conn_consume(c, &hdr);
	if (h.size != (uint32_t)bs->size || h.rank == 0) {
		note(e, "%s: dropped: it says rank %u of %u, the job is %d ranks with rank 0 here",
		     c->addr, h.rank, h.size, bs->size);
		pending_drop(e, i);
		return 1;
	}
	if (e->secret_len) {
		rcci_boot_proof(e, "rcc bootstrap rank", c->nonce_s, &h, NULL, want);
		if (!rcci_ct_equal(want, h.proof, sizeof(want))) {
			note(e, "%s: dropped: it claimed rank %u with a wrong job secret", c->addr,
			     h.rank);
			static const char refused[] = "authentication failed (wrong job secret)";
			rcci_boot_frame_send(c, 's', BOOT_ABORT, refused, sizeof(refused) - 1,
					     rcci_deadline(0));
			pending_drop(e, i);
			return 1;
		}
	}
	if (e->ranks[h.rank]) {
		note(e, "%s: dropped: it claims rank %u, which %s already holds", c->addr, h.rank,
		     e->ranks[h.rank]->addr);
		pending_drop(e, i);
		return 1;
	}
	uint8_t p[BOOT_WELCOME_LEN] = { 0 };
	if (e->secret_len) { /* our proof, and the run id it vouches for */
		rcci_boot_proof(e, "rcc bootstrap rank 0", c->nonce_s, &h, e->run, p);
		memcpy(p + BOOT_TAG_LEN, e->run, BOOT_RUN_LEN);
	}
	if (rcci_boot_frame_send(c, 's', BOOT_WELCOME, p, sizeof(p), rcci_deadline(0))) {
		note(e, "%s: dropped: it does not take our welcome", c->addr);
		pending_drop(e, i);
		return 1;
	}
	if (e->secret_len) /* tags from the first frame after the welcome */
		rcci_boot_conn_key(e, c, c->nonce_s, h.nonce);
	c->rank = (int)h.rank;
	e->ranks[h.rank] = c;
	e->pending[i] = e->pending[--e->npending];
	log_debug("bootstrap: rendezvous: rank %u joined from %s", h.rank, c->addr);
	return 1;
}

/* A CONTRIB from a rank that has joined. 0 or the reason it failed. */
static int take_contrib(struct boot_env *e, struct conn *c, uint32_t size)
{
	struct boot_hdr hdr;
	uint32_t round;
	const uint8_t *blob;
	size_t len;
	long plen;
	int rc;

	while (!c->contributed) {
		rc = conn_pump(c, rcci_boot_payload_max(BOOT_CONTRIB, size) + BOOT_TAG_LEN, &hdr);
		if (rc <= 0)
			return rc;
		if (hdr.type != BOOT_CONTRIB)
			return -EPROTO;
		plen = rcci_boot_frame_open(c, 'c', size, &hdr, c->buf);
		if (plen < 0)
			return (int)plen;
		if (rcci_boot_contrib_decode(c->buf + BOOT_HDR_LEN, (size_t)plen, &round, &blob,
					     &len) ||
		    round != e->round)
			return -EPROTO;
		memcpy(c->blob, blob, len);
		c->bloblen = len;
		c->contributed = true;
		conn_consume(c, &hdr);
	}
	return 0;
}

/*
 * A rank that has contributed sends nothing until it has the result: its
 * connection readable means it closed (its process ended) or broke the
 * protocol. 0 while it waits quietly.
 */
static int still_there(const struct conn *c)
{
	char b;
	ssize_t r = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);

	if (r == 0)
		return -ECONNRESET;
	if (r > 0)
		return -EPROTO;
	return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -errno;
}

/* Rank k's connection is done for (why: a negative errno): it no longer counts
 * as waiting, and is named when the round fails. */
static void rank_lost(struct conn *c, int why)
{
	c->gone = why;
	log_warn("bootstrap: rendezvous: rank %d (%s) %s", c->rank, c->addr, rcci_boot_why(why));
}

/* Every rank has joined and either contributed or is gone. */
static bool all_in(struct rcc_bootstrap *bs, struct boot_env *e)
{
	for (int k = 1; k < bs->size; k++)
		if (!e->ranks[k] || !(e->ranks[k]->contributed || e->ranks[k]->gone))
			return false;
	return true;
}

/* "rank 2 (a:p) closed the connection; rank 5 (...) ..." of the ranks gone, into
 * buf; the first one's reason, or 0 when none is. */
static int gone_list(struct rcc_bootstrap *bs, struct boot_env *e, char *buf, size_t len)
{
	size_t off = 0;
	int first = 0;

	buf[0] = 0;
	for (int k = 1; k < bs->size; k++) {
		struct conn *c = e->ranks[k];
		if (!c || !c->gone)
			continue;
		if (!first)
			first = c->gone;
		if (off < len)
			off += (size_t)snprintf(buf + off, len - off, "%srank %d (%s) %s",
						off ? "; " : "", k, c->addr,
						rcci_boot_why(c->gone));
	}
	return first;
}

/* "3, 5, 7" of the ranks that match, up to a sensible length. */
static void rank_list(struct rcc_bootstrap *bs, struct boot_env *e, bool joined, char *buf,
		      size_t len)
{
	size_t off = 0;
	int shown = 0;

	buf[0] = 0;
	for (int k = 1; k < bs->size && off < len; k++) {
		bool j = e->ranks[k] != NULL;
		if (j != joined || (j && (e->ranks[k]->contributed || e->ranks[k]->gone)))
			continue;
		if (shown++ == 16) {
			snprintf(buf + off, len - off, ", ...");
			return;
		}
		if (j)
			off += (size_t)snprintf(buf + off, len - off, "%s%d (%s)", off ? ", " : "",
						k, e->ranks[k]->addr);
		else
			off += (size_t)snprintf(buf + off, len - off, "%s%d", off ? ", " : "", k);
	}
}

static void explain_timeout(struct rcc_bootstrap *bs, struct boot_env *e, int timeout_ms)
{
	char absent[300], silent[300], gone[300], notes[420] = "";
	size_t off = 0;

	rank_list(bs, e, false, absent, sizeof(absent));
	rank_list(bs, e, true, silent, sizeof(silent));
	gone_list(bs, e, gone, sizeof(gone));
	for (int i = e->nnotes > NOTES ? e->nnotes - NOTES : 0;
	     i < e->nnotes && off < sizeof(notes); i++)
		off += (size_t)snprintf(notes + off, sizeof(notes) - off, "; %s",
					e->notes[i % NOTES]);
	rcci_boot_fail(bs, "rendezvous timed out after %.1f s:%s%s%s%s%s%s%s%s%s%s%s",
		       timeout_ms / 1000.0, *absent ? " never arrived: rank " : "", absent,
		       *absent && *silent ? ";" : "",
		       *silent ? " joined but sent nothing: rank " : "", silent,
		       (*absent || *silent) && *gone ? ";" : "", *gone ? " lost: " : "", gone,
		       *notes ? " (turned away" : "", notes, *notes ? ")" : "");
}

static void abort_all(struct rcc_bootstrap *bs, struct boot_env *e)
{
	char text[BOOT_ABORT_MAX];
	size_t n = strlen(bs->err) < sizeof(text) ? strlen(bs->err) : sizeof(text);

	memcpy(text, bs->err, n);
	/* best effort: they fail on their own deadline otherwise; the gone are gone */
	for (int k = 1; k < bs->size; k++)
		if (e->ranks[k] && !e->ranks[k]->gone)
			rcci_boot_frame_send(e->ranks[k], 's', BOOT_ABORT, text, n,
					     rcci_deadline(200));
}

static int serve_round(struct rcc_bootstrap *bs, struct boot_env *e, int timeout_ms)
{
	uint64_t deadline = rcci_deadline(timeout_ms);
	struct pollfd *pf;
	int rc = 0;

	pf = calloc((size_t)bs->size + MAX_PENDING + 1, sizeof(*pf));
	if (!pf)
		return -ENOMEM;
	for (;;) {
		/* what already arrived first: a fast rank may be a round ahead of us */
		for (int k = 1; k < bs->size; k++) {
			struct conn *c = e->ranks[k];
			if (!c || c->gone)
				continue;
			if (!c->contributed)
				rc = take_contrib(e, c, (uint32_t)bs->size);
			else
				rc = still_there(c);
			if (rc)
				rank_lost(c, rc);
		}
		rc = 0;
		for (int i = 0; i < e->npending;)
			i += !identify(bs, e, i);
		if (all_in(bs, e)) {
			char gone[RCC_BOOTSTRAP_ERROR_MAX - 64];
			rc = gone_list(bs, e, gone, sizeof(gone));
			if (!rc)
				break;
			rcci_boot_fail(bs, "%s", gone);
			goto out;
		}
		uint64_t now = rcci_deadline(0);
		for (int i = 0; i < e->npending;) {
			if (e->pending[i]->deadline <= now) {
				note(e,
				     "%s: dropped: it connected but did not identify itself in time",
				     e->pending[i]->addr);
				pending_drop(e, i);
			} else {
				i++;
			}
		}
		if (now >= deadline) {
			explain_timeout(bs, e, timeout_ms);
			rc = -ETIMEDOUT;
			goto out;
		}
		uint64_t wake = deadline;
		int n = 0;
		if (e->lfd >= 0)
			pf[n++] = (struct pollfd){ .fd = e->lfd, .events = POLLIN };
		for (int i = 0; i < e->npending; i++) {
			pf[n++] = (struct pollfd){ .fd = e->pending[i]->fd, .events = POLLIN };
			if (e->pending[i]->deadline < wake)
				wake = e->pending[i]->deadline;
		}
		for (int k = 1; k < bs->size; k++) /* contributed ones too: they may leave */
			if (e->ranks[k] && !e->ranks[k]->gone)
				pf[n++] = (struct pollfd){ .fd = e->ranks[k]->fd,
							   .events = POLLIN };
		if (poll(pf, (nfds_t)n, rcci_ms_left(wake)) < 0 && errno != EINTR) {
			rc = -errno;
			rcci_boot_fail(bs, "rendezvous: poll: %s", strerror(errno));
			goto out;
		}
		if (e->lfd >= 0)
			accept_new(e, deadline);
	}
	if (e->lfd >= 0) { /* every rank is here: nobody else has any business */
		close(e->lfd);
		e->lfd = -1;
		for (int i = e->npending; i-- > 0;)
			pending_drop(e, i);
	}
out:
	free(pf);
	return rc;
}

int rcci_boot_root_allgather(struct rcc_bootstrap *bs, struct boot_env *e, const void *blob,
			     size_t len, void *out, size_t stride, size_t *lens, int timeout_ms)
{
	size_t n = (size_t)bs->size, total = 8;
	uint8_t *all = NULL, *res = NULL;
	size_t *l = NULL;
	int rc;

	rc = serve_round(bs, e, timeout_ms);
	if (rc)
		goto fail;
	all = malloc(n * RCC_BOOTSTRAP_BLOB_MAX);
	l = malloc(n * sizeof(*l));
	if (!all || !l) {
		rc = -ENOMEM;
		rcci_boot_fail(bs, "out of memory");
		goto fail;
	}
	if (len) /* a barrier has no blob */
		memcpy(all, blob, len);
	l[0] = len;
	for (size_t k = 1; k < n; k++) {
		memcpy(all + k * RCC_BOOTSTRAP_BLOB_MAX, e->ranks[k]->blob, e->ranks[k]->bloblen);
		l[k] = e->ranks[k]->bloblen;
	}
	for (size_t k = 0; k < n; k++) {
		total += 2 + l[k];
		if (l[k] > stride) {
			rcci_boot_fail(bs,
				       "rank %zu's blob is %zu bytes, more than the %zu asked for",
				       k, l[k], stride);
			rc = -EMSGSIZE;
			goto fail;
		}
	}
	if (!(res = malloc(total))) {
		rc = -ENOMEM;
		rcci_boot_fail(bs, "out of memory");
		goto fail;
	}
	rcci_boot_result_encode(e->round, (uint32_t)n, all, RCC_BOOTSTRAP_BLOB_MAX, l, res);
	uint64_t deadline = rcci_deadline(timeout_ms);
	for (size_t k = 1; k < n; k++) {
		rc = rcci_boot_frame_send(e->ranks[k], 's', BOOT_RESULT, res, total, deadline);
		if (rc) {
			rcci_boot_fail(bs, "rank %zu (%s) did not take the result: %s", k,
				       e->ranks[k]->addr, rcci_boot_why(rc));
			goto fail;
		}
		e->ranks[k]->contributed = false;
	}
	for (size_t k = 0; k < n; k++) {
		if (l[k]) /* out may be NULL when every blob is empty */
			memcpy((uint8_t *)out + k * stride, all + k * RCC_BOOTSTRAP_BLOB_MAX, l[k]);
		lens[k] = l[k];
	}
	e->round++;
	free(res);
	free(l);
	free(all);
	return 0;
fail:
	abort_all(bs, e);
	free(res);
	free(l);
	free(all);
	return rc;
}
