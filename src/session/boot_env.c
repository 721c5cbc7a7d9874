/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The env bootstrap: rank and size from the launcher's variables, and a
 * rendezvous that rank 0 serves over TCP (boot_wire.h has the frames).
 *
 * Rank 0 keeps one connection per rank for the life of the bootstrap; each
 * collective is one round: every rank sends CONTRIB, rank 0 answers with
 * RESULT (or ABORT, saying why it gave up). Rank 0 serves every connection at
 * once with poll(): a connection that says nothing, says garbage or fails to
 * authenticate is dropped on its own deadline or at once, and never delays
 * another one. Once every rank has joined, the listener is closed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "boot.h"
#include "boot_wire.h"
#include "core/addr.h"
#include "core/log.h"
#include "core/sha256.h"
#include "core/sock.h"
#include "rcc/util.h"

#define SECRET_MIN 16
#define SECRET_MAX 1024
#define MAX_PENDING 64       /* unidentified connections held at once */
#define IDENTIFY_MS 5000     /* bound on a connection's CHALLENGE -> HELLO */
#define CLIENT_GRACE_MS 1000 /* ranks > 0 wait this much longer than rank 0 */
#define RETRY_MS 50          /* between connection attempts to rank 0 */
#define NOTES 4              /* dropped connections remembered for the error */
#define ADDR_LEN 64

struct conn {
	int fd;
	int rank; /* -1 while it has not identified itself */
	char addr[ADDR_LEN];
	uint64_t deadline; /* unidentified: when it is dropped */
	uint8_t nonce_s[BOOT_NONCE_LEN];
	uint8_t key[RCCI_SHA256_LEN]; /* session key, with a secret */
	bool keyed;                   /* frames carry tags from now on */
	uint64_t seq_rx, seq_tx;
	uint8_t *buf; /* what has arrived of the next frame(s) */
	size_t fill, cap;
	bool contributed;
	size_t bloblen;
	uint8_t blob[RCC_BOOTSTRAP_BLOB_MAX];
};

struct boot_env {
	char master[300]; /* "host:port" of the rendezvous */
	uint8_t secret[SECRET_MAX];
	size_t secret_len;
	char local_host[ADDR_LEN];
	uint32_t round;
	/* rank 0 */
	int lfd, port;
	struct conn **ranks; /* size entries; [0] unused */
	struct conn *pending[MAX_PENDING];
	int npending;
	char notes[NOTES][200];
	int nnotes;
	/* other ranks */
	struct conn *up; /* to rank 0 */
};

/* ------------------------------------------------------------------------ */
/* Environment                                                               */
/* ------------------------------------------------------------------------ */

static int env_int(const char *name, long lo, long hi, long *v, char *err, size_t errlen)
{
	const char *s = getenv(name);
	char *end;

	if (!s || !*s)
		return -ENOENT;
	errno = 0;
	*v = strtol(s, &end, 10);
	if (*s < '0' || *s > '9' || *end || errno || *v < lo || *v > hi) {
		char esc[64];
		rcc_text_escape(esc, sizeof(esc), s, strlen(s));
		boot_explain(err, errlen, "%s='%s': expected a number from %ld to %ld", name, esc,
			     lo, hi);
		return -EINVAL;
	}
	return 0;
}

/* Rank and size from the first family whose rank variable is set. */
static int env_rank_size(int *rank, int *size, char *err, size_t errlen)
{
	static const char *const fam[][2] = {
		{ "RCC_RANK", "RCC_WORLD_SIZE" },
		{ "RANK", "WORLD_SIZE" },
		{ "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE" },
		{ "PMI_RANK", "PMI_SIZE" },
		{ "SLURM_PROCID", "SLURM_NTASKS" },
	};
	long r, s;
	int rc;

	for (size_t i = 0; i < sizeof(fam) / sizeof(fam[0]); i++) {
		rc = env_int(fam[i][0], 0, RCC_BOOTSTRAP_MAX_RANKS - 1, &r, err, errlen);
		if (rc == -ENOENT)
			continue;
		if (rc)
			return rc;
		rc = env_int(fam[i][1], 1, RCC_BOOTSTRAP_MAX_RANKS, &s, err, errlen);
		if (rc == -ENOENT)
			boot_explain(err, errlen, "%s is set but %s is not", fam[i][0], fam[i][1]);
		if (rc)
			return rc;
		if (r >= s) {
			boot_explain(err, errlen, "%s=%ld is not below %s=%ld", fam[i][0], r,
				     fam[i][1], s);
			return -EINVAL;
		}
		*rank = (int)r;
		*size = (int)s;
		return 0;
	}
	boot_explain(err, errlen,
		     "no rank in the environment (RCC_RANK, RANK, OMPI_COMM_WORLD_RANK, PMI_RANK "
		     "or SLURM_PROCID)");
	return -ENOENT;
}

static const char *env_either(const char *a, const char *b)
{
	const char *s = getenv(a);
	return s && *s ? s : getenv(b);
}

/* The secret's bytes, trailing white space (a file's newline) removed. */
static int env_secret(struct boot_env *e, char *err, size_t errlen)
{
	const char *val = getenv("RCC_JOB_SECRET"), *path = getenv("RCC_JOB_SECRET_FILE");
	size_t n = 0;

	if (val && *val && path && *path) {
		boot_explain(err, errlen, "set RCC_JOB_SECRET or RCC_JOB_SECRET_FILE, not both");
		return -EINVAL;
	}
	if (val && *val) {
		n = strlen(val);
		if (n > SECRET_MAX)
			n = SECRET_MAX + 1;
		else
			memcpy(e->secret, val, n);
	} else if (path && *path) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			int rc = -errno;
			boot_explain(err, errlen, "cannot open RCC_JOB_SECRET_FILE: %s",
				     strerror(errno));
			return rc;
		}
		ssize_t r;
		while (n <= SECRET_MAX && (r = read(fd, e->secret + n, SECRET_MAX - n)) > 0)
			n += (size_t)r;
		if (n == SECRET_MAX) {
			uint8_t extra;
			if (read(fd, &extra, 1) == 1)
				n = SECRET_MAX + 1;
		}
		close(fd);
	} else {
		return 0;
	}
	if (n <= SECRET_MAX)
		while (n && (e->secret[n - 1] == '\n' || e->secret[n - 1] == '\r' ||
			     e->secret[n - 1] == ' ' || e->secret[n - 1] == '\t'))
			n--;
	if (n < SECRET_MIN || n > SECRET_MAX) {
		memset(e->secret, 0, sizeof(e->secret));
		boot_explain(err, errlen, "the job secret must be %d to %d bytes", SECRET_MIN,
			     SECRET_MAX);
		return -EINVAL;
	}
	e->secret_len = n;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Frames on one connection                                                  */
/* ------------------------------------------------------------------------ */

static void frame_tag(const struct conn *c, char dir, uint64_t seq, const uint8_t *hdr,
		      const uint8_t *payload, size_t len, uint8_t tag[BOOT_TAG_LEN])
{
	uint8_t s[8];
	for (int i = 0; i < 8; i++)
		s[i] = (uint8_t)(seq >> (56 - 8 * i));
	struct rcci_iov parts[] = {
		{ &dir, 1 }, { s, 8 }, { hdr, BOOT_HDR_LEN }, { payload, len }
	};
	rcci_hmac_sha256(c->key, sizeof(c->key), parts, 4, tag);
}

/* One frame, with its tag when the connection is authenticated. dir: who sends. */
static int frame_send(struct conn *c, char dir, uint8_t type, const void *payload, size_t len,
		      uint64_t deadline)
{
	size_t tag = c->keyed ? BOOT_TAG_LEN : 0;
	uint8_t *f = malloc(BOOT_HDR_LEN + len + tag);
	int rc;

	if (!f)
		return -ENOMEM;
	boot_hdr_encode(type, (uint32_t)(len + tag), f);
	if (len)
		memcpy(f + BOOT_HDR_LEN, payload, len);
	if (tag)
		frame_tag(c, dir, c->seq_tx++, f, f + BOOT_HDR_LEN, len, f + BOOT_HDR_LEN + len);
	rc = rcci_send_all(c->fd, f, BOOT_HDR_LEN + len + tag, deadline);
	free(f);
	return rc;
}

/*
 * Check a whole frame at f (header decoded into h): its length is within the
 * type's bound and, when sealed, its tag is right. dir: who sent it. Returns
 * the payload length (tag excluded) or -EPROTO / -EACCES.
 */
static long frame_open(struct conn *c, char dir, uint32_t size, const struct boot_hdr *h,
		       const uint8_t *f)
{
	size_t tag = c->keyed ? BOOT_TAG_LEN : 0;
	uint8_t want[BOOT_TAG_LEN];

	if (h->len < tag || h->len - tag > boot_payload_max(h->type, size))
		return -EPROTO;
	size_t len = h->len - tag;
	if (tag) {
		frame_tag(c, dir, c->seq_rx, f, f + BOOT_HDR_LEN, len, want);
		if (!rcci_ct_equal(want, f + BOOT_HDR_LEN + len, BOOT_TAG_LEN))
			return -EACCES;
		c->seq_rx++;
	}
	return (long)len;
}

static void proof(const struct boot_env *e, const char *label, const uint8_t *nonce_s,
		  const struct boot_hello *h, uint8_t out[RCCI_SHA256_LEN])
{
	uint8_t rs[8];
	for (int i = 0; i < 4; i++) {
		rs[i] = (uint8_t)(h->rank >> (24 - 8 * i));
		rs[4 + i] = (uint8_t)(h->size >> (24 - 8 * i));
	}
	struct rcci_iov parts[] = { { label, strlen(label) + 1 },
				    { nonce_s, BOOT_NONCE_LEN },
				    { h->nonce, BOOT_NONCE_LEN },
				    { rs, 8 } };
	rcci_hmac_sha256(e->secret, e->secret_len, parts, 4, out);
}

static void conn_free(struct conn *c)
{
	if (!c)
		return;
	if (c->fd >= 0)
		close(c->fd);
	free(c->buf);
	memset(c->key, 0, sizeof(c->key));
	free(c);
}

static struct conn *conn_new(int fd)
{
	struct conn *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->fd = fd;
	c->rank = -1;
	return c;
}

static void peer_name(int fd, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (getpeername(fd, (struct sockaddr *)&ss, &sl))
		snprintf(buf, len, "?");
	else
		rcci_addr_format((const struct sockaddr *)&ss, buf, len);
}

/* ------------------------------------------------------------------------ */
/* Rank 0: the rendezvous                                                    */
/* ------------------------------------------------------------------------ */

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
	conn_free(e->pending[i]);
	e->pending[i] = e->pending[--e->npending];
}

static void accept_new(struct boot_env *e, uint64_t deadline)
{
	for (;;) {
		int fd = accept4(e->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return; /* EAGAIN, or a connection that vanished: nothing to do */
		struct conn *c = conn_new(fd);
		if (!c || getrandom(c->nonce_s, BOOT_NONCE_LEN, 0) != BOOT_NONCE_LEN) {
			if (c)
				conn_free(c);
			else
				close(fd);
			continue;
		}
		peer_name(fd, c->addr, sizeof(c->addr));
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
		boot_challenge_encode(&ch, p);
		/* 41 bytes into a fresh socket's empty buffer: never waits */
		if (frame_send(c, 's', BOOT_CHALLENGE, p, sizeof(p), now)) {
			conn_free(c);
			continue;
		}
		e->pending[e->npending++] = c;
	}
}

/*
 * Read what has arrived. Returns 1 when a whole frame (header decoded into h)
 * is at c->buf, 0 when more is needed, -ECONNRESET when the peer closed,
 * -EPROTO for a bad header or a frame longer than max, another negative errno.
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
		long want = boot_frame_need(c->buf, c->fill, max, h);
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

static const char *why(int rc)
{
	switch (rc) {
	case -ECONNRESET:
		return "closed the connection";
	case -EPROTO:
		return "sent a malformed frame";
	case -EACCES:
		return "failed authentication";
	default:
		return rcc_strerror(rc);
	}
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
		note(e, "%s: dropped before identifying itself: it %s", c->addr, why(rc));
		pending_drop(e, i);
		return 1;
	}
	if (hdr.type != BOOT_HELLO || frame_open(c, 'c', 0, &hdr, c->buf) < 0 ||
	    boot_hello_decode(c->buf + BOOT_HDR_LEN, hdr.len, &h)) {
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
		proof(e, "rcc bootstrap rank", c->nonce_s, &h, want);
		if (!rcci_ct_equal(want, h.proof, sizeof(want))) {
			note(e, "%s: dropped: it claimed rank %u with a wrong job secret", c->addr,
			     h.rank);
			static const char refused[] = "authentication failed (wrong job secret)";
			frame_send(c, 's', BOOT_ABORT, refused, sizeof(refused) - 1,
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
	if (e->secret_len) {
		proof(e, "rcc bootstrap rank 0", c->nonce_s, &h, p);
		struct rcci_iov parts[] = { { "rcc bootstrap key", 18 },
					    { c->nonce_s, BOOT_NONCE_LEN },
					    { h.nonce, BOOT_NONCE_LEN } };
		rcci_hmac_sha256(e->secret, e->secret_len, parts, 3, c->key);
	}
	if (frame_send(c, 's', BOOT_WELCOME, p, sizeof(p), rcci_deadline(0))) {
		note(e, "%s: dropped: it does not take our welcome", c->addr);
		pending_drop(e, i);
		return 1;
	}
	c->keyed = e->secret_len != 0;
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
		rc = conn_pump(c, boot_payload_max(BOOT_CONTRIB, size) + BOOT_TAG_LEN, &hdr);
		if (rc <= 0)
			return rc;
		if (hdr.type != BOOT_CONTRIB)
			return -EPROTO;
		plen = frame_open(c, 'c', size, &hdr, c->buf);
		if (plen < 0)
			return (int)plen;
		if (boot_contrib_decode(c->buf + BOOT_HDR_LEN, (size_t)plen, &round, &blob, &len) ||
		    round != e->round)
			return -EPROTO;
		memcpy(c->blob, blob, len);
		c->bloblen = len;
		c->contributed = true;
		conn_consume(c, &hdr);
	}
	return 0;
}

static bool all_in(struct rcc_bootstrap *bs, struct boot_env *e)
{
	for (int k = 1; k < bs->size; k++)
		if (!e->ranks[k] || !e->ranks[k]->contributed)
			return false;
	return true;
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
		if (j != joined || (j && e->ranks[k]->contributed))
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
	char absent[400], silent[400], notes[420] = "";
	size_t off = 0;

	rank_list(bs, e, false, absent, sizeof(absent));
	rank_list(bs, e, true, silent, sizeof(silent));
	for (int i = e->nnotes > NOTES ? e->nnotes - NOTES : 0;
	     i < e->nnotes && off < sizeof(notes); i++)
		off += (size_t)snprintf(notes + off, sizeof(notes) - off, "; %s",
					e->notes[i % NOTES]);
	boot_fail(bs, "rendezvous timed out after %.1f s:%s%s%s%s%s%s%s%s", timeout_ms / 1000.0,
		  *absent ? " never arrived: rank " : "", absent, *absent && *silent ? ";" : "",
		  *silent ? " joined but sent nothing: rank " : "", silent,
		  *notes ? " (turned away" : "", notes, *notes ? ")" : "");
}

static void abort_all(struct rcc_bootstrap *bs, struct boot_env *e)
{
	char text[BOOT_ABORT_MAX];
	size_t n = strlen(bs->err) < sizeof(text) ? strlen(bs->err) : sizeof(text);

	memcpy(text, bs->err, n);
	for (int k = 1; k < bs->size; k++)
		if (e->ranks[k]) /* best effort: they fail on their own deadline otherwise */
			frame_send(e->ranks[k], 's', BOOT_ABORT, text, n, rcci_deadline(200));
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
			if (c && !c->contributed && (rc = take_contrib(e, c, (uint32_t)bs->size))) {
				boot_fail(bs, "rank %d (%s) %s", k, c->addr, why(rc));
				goto out;
			}
		}
		for (int i = 0; i < e->npending;)
			i += !identify(bs, e, i);
		if (all_in(bs, e))
			break;
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
		for (int k = 1; k < bs->size; k++)
			if (e->ranks[k] && !e->ranks[k]->contributed)
				pf[n++] = (struct pollfd){ .fd = e->ranks[k]->fd,
							   .events = POLLIN };
		if (poll(pf, (nfds_t)n, rcci_ms_left(wake)) < 0 && errno != EINTR) {
			rc = -errno;
			boot_fail(bs, "rendezvous: poll: %s", strerror(errno));
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

static int root_allgather(struct rcc_bootstrap *bs, struct boot_env *e, const void *blob,
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
		boot_fail(bs, "out of memory");
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
			boot_fail(bs, "rank %zu's blob is %zu bytes, more than the %zu asked for",
				  k, l[k], stride);
			rc = -EMSGSIZE;
			goto fail;
		}
	}
	if (!(res = malloc(total))) {
		rc = -ENOMEM;
		boot_fail(bs, "out of memory");
		goto fail;
	}
	boot_result_encode(e->round, (uint32_t)n, all, RCC_BOOTSTRAP_BLOB_MAX, l, res);
	uint64_t deadline = rcci_deadline(timeout_ms);
	for (size_t k = 1; k < n; k++) {
		rc = frame_send(e->ranks[k], 's', BOOT_RESULT, res, total, deadline);
		if (rc) {
			boot_fail(bs, "rank %zu (%s) did not take the result: %s", k,
				  e->ranks[k]->addr, why(rc));
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

/* ------------------------------------------------------------------------ */
/* Ranks > 0                                                                 */
/* ------------------------------------------------------------------------ */

/* Read one whole frame of an expected type (or ABORT) into a new buffer. */
static int recv_frame(struct rcc_bootstrap *bs, struct boot_env *e, uint8_t type, uint8_t **f,
		      size_t *len, struct boot_hdr *h, uint64_t deadline)
{
	struct conn *c = e->up;
	uint8_t hb[BOOT_HDR_LEN];
	int rc = rcci_recv_all(c->fd, hb, sizeof(hb), deadline);

	if (rc)
		return rc;
	if (boot_hdr_decode(hb, h) || (h->type != type && h->type != BOOT_ABORT) ||
	    h->len > boot_payload_max(h->type, (uint32_t)bs->size) + BOOT_TAG_LEN)
		return -EPROTO;
	*f = malloc(BOOT_HDR_LEN + h->len);
	if (!*f)
		return -ENOMEM;
	memcpy(*f, hb, BOOT_HDR_LEN);
	rc = rcci_recv_all(c->fd, *f + BOOT_HDR_LEN, h->len, deadline);
	if (rc)
		goto err;
	long l = frame_open(c, 's', (uint32_t)bs->size, h, *f);
	if (l < 0) {
		rc = (int)l;
		goto err;
	}
	*len = (size_t)l;
	return 0;
err:
	free(*f);
	*f = NULL;
	return rc;
}

/* An ABORT's text, escaped, as this call's error. */
static int aborted(struct rcc_bootstrap *bs, const uint8_t *text, size_t len)
{
	char esc[RCC_BOOTSTRAP_ERROR_MAX - 64];
	rcc_text_escape(esc, sizeof(esc), text, len);
	boot_fail(bs, "rank 0 gave up: %s", esc);
	return -ECANCELED;
}

static int connect_up(struct rcc_bootstrap *bs, struct boot_env *e, uint64_t deadline)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int rc, fd;

	rc = rcci_addr_resolve(e->master, false, &ss, &sl);
	if (rc) {
		boot_fail(bs, "cannot resolve the rendezvous address %s", e->master);
		return rc;
	}
	for (;;) {
		fd = rcci_sock_connect((struct sockaddr *)&ss, sl, deadline);
		if (fd >= 0)
			break;
		rc = fd;
		/* rank 0 not listening yet: launchers start ranks in any order */
		if ((rc != -ECONNREFUSED && rc != -ECONNRESET) || !rcci_ms_left(deadline))
			return rc;
		poll(NULL, 0,
		     rcci_ms_left(deadline) < RETRY_MS ? rcci_ms_left(deadline) : RETRY_MS);
	}
	if (!(e->up = conn_new(fd))) {
		close(fd);
		return -ENOMEM;
	}
	return 0;
}

static int join(struct rcc_bootstrap *bs, struct boot_env *e, uint64_t deadline)
{
	struct boot_challenge ch;
	struct boot_hello h = { .rank = (uint32_t)bs->rank, .size = (uint32_t)bs->size };
	struct boot_hdr hdr;
	uint8_t p[BOOT_HELLO_LEN], want[RCCI_SHA256_LEN], *f = NULL;
	size_t len;
	int rc;

	if ((rc = connect_up(bs, e, deadline)))
		return rc;
	if ((rc = recv_frame(bs, e, BOOT_CHALLENGE, &f, &len, &hdr, deadline)))
		return rc;
	if (hdr.type == BOOT_ABORT || boot_challenge_decode(f + BOOT_HDR_LEN, len, &ch)) {
		free(f);
		return -EPROTO;
	}
	free(f);
	if (!(ch.flags & BOOT_FLAG_AUTH) != !e->secret_len) {
		boot_fail(bs, "%s",
			  e->secret_len ? "rank 0 does not authenticate, but we have a job secret "
					  "(set RCC_JOB_SECRET the same on every rank)" :
					  "rank 0 requires a job secret (RCC_JOB_SECRET), and we "
					  "have none");
		return -EACCES;
	}
	if (getrandom(h.nonce, BOOT_NONCE_LEN, 0) != BOOT_NONCE_LEN)
		return -EIO;
	if (e->secret_len)
		proof(e, "rcc bootstrap rank", ch.nonce, &h, h.proof);
	boot_hello_encode(&h, p);
	if ((rc = frame_send(e->up, 'c', BOOT_HELLO, p, sizeof(p), deadline)))
		return rc;
	if ((rc = recv_frame(bs, e, BOOT_WELCOME, &f, &len, &hdr, deadline)))
		return rc;
	if (hdr.type == BOOT_ABORT) {
		rc = aborted(bs, f + BOOT_HDR_LEN, len);
		free(f);
		return rc == -ECANCELED ? -EACCES : rc;
	}
	if (e->secret_len) {
		proof(e, "rcc bootstrap rank 0", ch.nonce, &h, want);
		if (!rcci_ct_equal(want, f + BOOT_HDR_LEN, sizeof(want))) {
			free(f);
			boot_fail(bs, "the rendezvous at %s does not know the job secret",
				  e->master);
			return -EACCES;
		}
		struct rcci_iov parts[] = { { "rcc bootstrap key", 18 },
					    { ch.nonce, BOOT_NONCE_LEN },
					    { h.nonce, BOOT_NONCE_LEN } };
		rcci_hmac_sha256(e->secret, e->secret_len, parts, 3, e->up->key);
		e->up->keyed = true;
	}
	free(f);
	return 0;
}

static int leaf_allgather(struct rcc_bootstrap *bs, struct boot_env *e, const void *blob,
			  size_t len, void *out, size_t stride, size_t *lens, int timeout_ms)
{
	uint64_t deadline = rcci_deadline(timeout_ms + CLIENT_GRACE_MS);
	uint8_t p[4 + RCC_BOOTSTRAP_BLOB_MAX], *f = NULL;
	struct boot_hdr hdr;
	size_t flen;
	int rc = 0;

	if (!e->up)
		rc = join(bs, e, deadline);
	if (!rc)
		rc = frame_send(e->up, 'c', BOOT_CONTRIB, p,
				boot_contrib_encode(e->round, blob, len, p), deadline);
	if (!rc)
		rc = recv_frame(bs, e, BOOT_RESULT, &f, &flen, &hdr, deadline);
	if (!rc && hdr.type == BOOT_ABORT)
		rc = aborted(bs, f + BOOT_HDR_LEN, flen);
	else if (!rc)
		rc = boot_result_decode(f + BOOT_HDR_LEN, flen, e->round, (uint32_t)bs->size, out,
					stride, lens);
	free(f);
	if (!rc) {
		e->round++;
		return 0;
	}
	if (bs->err[0])
		return rc;
	if (rc == -ETIMEDOUT)
		boot_fail(bs, "no answer from the rendezvous at %s (rank 0) within %.1f s: %s",
			  e->master, (timeout_ms + CLIENT_GRACE_MS) / 1000.0,
			  e->up ? "rank 0 is still waiting for other ranks, or stopped" :
				  "rank 0 is not running, or MASTER_ADDR/PORT are wrong");
	else if (rc == -ECONNREFUSED)
		boot_fail(bs, "nobody listens at the rendezvous %s (rank 0) after %.1f s",
			  e->master, (timeout_ms + CLIENT_GRACE_MS) / 1000.0);
	else if (rc == -EMSGSIZE)
		boot_fail(bs, "a rank's blob is longer than the %zu bytes asked for", stride);
	else
		boot_fail(bs, "the rendezvous at %s (rank 0) %s", e->master, why(rc));
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Backend                                                                   */
/* ------------------------------------------------------------------------ */

static int env_allgather(struct rcc_bootstrap *bs, const void *blob, size_t len, void *out,
			 size_t stride, size_t *lens, int timeout_ms)
{
	struct boot_env *e = bs->priv;

	if (bs->size == 1) {
		if (len > stride) {
			boot_fail(bs, "our blob is longer than the %zu bytes asked for", stride);
			return -EMSGSIZE;
		}
		if (len)
			memcpy(out, blob, len);
		lens[0] = len;
		return 0;
	}
	if (bs->rank == 0)
		return root_allgather(bs, e, blob, len, out, stride, lens, timeout_ms);
	return leaf_allgather(bs, e, blob, len, out, stride, lens, timeout_ms);
}

static int env_barrier(struct rcc_bootstrap *bs, int timeout_ms)
{
	size_t *lens = malloc((size_t)bs->size * sizeof(*lens));
	int rc;

	if (!lens) {
		boot_fail(bs, "out of memory");
		return -ENOMEM;
	}
	rc = env_allgather(bs, NULL, 0, NULL, 0, lens, timeout_ms);
	free(lens);
	return rc;
}

static int env_port(const struct rcc_bootstrap *bs)
{
	const struct boot_env *e = bs->priv;
	return bs->rank == 0 && bs->size > 1 ? e->port : -ENOTSUP;
}

static int env_local_host(const struct rcc_bootstrap *bs, char *buf, size_t len)
{
	const struct boot_env *e = bs->priv;

	if (!e->local_host[0])
		return -EAGAIN;
	if (strlen(e->local_host) >= len)
		return -ENOSPC;
	strcpy(buf, e->local_host);
	return 0;
}

static void env_close(struct rcc_bootstrap *bs)
{
	struct boot_env *e = bs->priv;

	if (e->lfd >= 0)
		close(e->lfd);
	for (int i = 0; i < e->npending; i++)
		conn_free(e->pending[i]);
	if (e->ranks)
		for (int k = 1; k < bs->size; k++)
			conn_free(e->ranks[k]);
	free(e->ranks);
	conn_free(e->up);
	memset(e->secret, 0, sizeof(e->secret));
	free(e);
}

static const struct boot_ops env_ops = {
	.name = "env",
	.allgather = env_allgather,
	.barrier = env_barrier,
	.rendezvous_port = env_port,
	.local_host = env_local_host,
	.close = env_close,
};

static void host_of(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	if (ss->ss_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, buf,
			  (socklen_t)len);
	else
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, buf,
			  (socklen_t)len);
}

/*
 * Ranks > 0: the local address the kernel would use toward rank 0, known
 * before any packet is sent (a UDP socket's connect() only picks a route):
 * on a multi-homed host, the interface the other ranks can reach us on.
 */
static void route_host(struct boot_env *e)
{
	struct sockaddr_storage ss, me;
	socklen_t sl, ml = sizeof(me);
	int fd;

	if (rcci_addr_resolve(e->master, false, &ss, &sl))
		return; /* said again, with the reason, when we connect */
	fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (!connect(fd, (struct sockaddr *)&ss, sl) &&
	    !getsockname(fd, (struct sockaddr *)&me, &ml))
		host_of(&me, e->local_host, sizeof(e->local_host));
	close(fd);
}

/* Rank 0 listens on the master address, which must be one of its own. */
static int env_listen(struct boot_env *e, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int rc = rcci_addr_resolve(e->master, false, &ss, &sl);

	if (rc) {
		boot_explain(err, errlen, "cannot resolve the rendezvous address %s", e->master);
		return rc;
	}
	e->lfd = rcci_sock_listen((struct sockaddr *)&ss, sl, 128, &e->port);
	if (e->lfd < 0) {
		rc = e->lfd;
		e->lfd = -1;
		boot_explain(err, errlen, "rank 0 cannot listen on %s for the rendezvous: %s",
			     e->master, rcc_strerror(rc));
		return rc;
	}
	host_of(&ss, e->local_host, sizeof(e->local_host));
	return 0;
}

int boot_env_open(struct rcc_bootstrap *bs, char *err, size_t errlen)
{
	struct boot_env *e;
	int rank, size, rc;
	long port;

	if ((rc = env_rank_size(&rank, &size, err, errlen)))
		return rc;
	if (!(e = calloc(1, sizeof(*e)))) {
		boot_explain(err, errlen, "out of memory");
		return -ENOMEM;
	}
	e->lfd = -1;
	if (size > 1) {
		const char *host = env_either("RCC_MASTER_ADDR", "MASTER_ADDR");
		const char *pname = getenv("RCC_MASTER_PORT") && *getenv("RCC_MASTER_PORT") ?
					    "RCC_MASTER_PORT" :
					    "MASTER_PORT";
		if (!host || !*host || !getenv(pname) || !*getenv(pname)) {
			boot_explain(
				err, errlen,
				"rank %d of %d: no rendezvous: set MASTER_ADDR and MASTER_PORT "
				"(or RCC_MASTER_ADDR and RCC_MASTER_PORT) to rank 0's address "
				"and a port, the same on every rank",
				rank, size);
			rc = -ENOENT;
			goto err;
		}
		if ((rc = env_int(pname, rank == 0 ? 0 : 1, 65535, &port, err, errlen)))
			goto err;
		if (strlen(host) > 255) {
			boot_explain(err, errlen, "the master address is too long");
			rc = -EINVAL;
			goto err;
		}
		snprintf(e->master, sizeof(e->master), strchr(host, ':') ? "[%s]:%ld" : "%s:%ld",
			 host, port);
		if ((rc = env_secret(e, err, errlen)))
			goto err;
		if (rank == 0) {
			e->ranks = calloc((size_t)size, sizeof(*e->ranks));
			if (!e->ranks) {
				boot_explain(err, errlen, "out of memory");
				rc = -ENOMEM;
				goto err;
			}
			if ((rc = env_listen(e, err, errlen)))
				goto err_ranks;
		} else {
			route_host(e);
		}
	}
	bs->ops = &env_ops;
	bs->rank = rank;
	bs->size = size;
	bs->priv = e;
	return 0;

err_ranks:
	free(e->ranks);
err:
	memset(e->secret, 0, sizeof(e->secret));
	free(e);
	return rc;
}
