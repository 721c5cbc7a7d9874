/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The sending side: connect, authenticate, then for each file offer its
 * metadata, continue from the receiver's resume point, keep up to a window of
 * chunk WRITEs in flight (each chunk staged by pread into a registered slot
 * and hashed on the way), and finish with the SHA-256 the receiver must match.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exitcode.h"
#include "hash.h"
#include "names.h"
#include "opts.h"
#include "output.h"
#include "progress.h"
#include "session.h"
#include "stats.h"
#include "window.h"

#define READ_PIECE (1u << 20) /* read and hash in cache-sized pieces */

struct sender {
	const struct xfer_opts *o;
	struct xfer_key key;
	struct rcc_ctx *ctx;
	struct chan *ch;
	int status; /* exit status of the first failure */
	bool dead;  /* the connection is unusable */
	int files_ok;
	uint64_t bytes; /* moved in this run, over all files */
	uint64_t t0_ns;
};

/* One file on its way. */
struct outgoing {
	const char *path;
	const char *name;
	char jname[600]; /* name as a JSON string */
	int fd;
	struct stat st0; /* the source as first seen: any change aborts */
	struct sha256 hash;
	struct rcc_remote_mr remote;
	struct window win;
	uint8_t *remote_busy; /* slot written, not yet credited back */
	uint8_t *local_busy;  /* WRITE from the slot not yet complete */
	uint32_t *free_slots;
	uint32_t nfree;
	uint32_t inflight;
	uint64_t offset;    /* resume point */
	uint64_t next_off;  /* next byte to stage */
	uint64_t persisted; /* what the receiver reported durable */
	uint32_t seq;
	struct progress prog;
	uint64_t t0_ns;
	bool changed;
};

enum {
	FILE_OK = 0,
	FILE_FAILED,
	FILE_FATAL
};

static void note_failure(struct sender *s, int status)
{
	if (!s->status)
		s->status = status;
}

static int file_failed(struct sender *s, struct outgoing *f, int status, const char *token,
		       const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int file_failed(struct sender *s, struct outgoing *f, int status, const char *token,
		       const char *fmt, ...)
{
	char text[400], jtext[900];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	progress_end(&f->prog);
	out_error("%s: %s", f->path, text);
	out_json("{\"event\":\"failed\",\"file\":%s,\"code\":\"%s\",\"exit\":%d,\"error\":%s}",
		 f->jname, token, status, json_str(text, jtext, sizeof(jtext)));
	note_failure(s, status);
	return FILE_FAILED;
}

static int send_error(struct sender *s, enum xfer_err code, const char *text);
static int peer_refused(struct sender *s, struct outgoing *f, const struct xmsg *m);

static int conn_failed(struct sender *s, struct outgoing *f, int rc)
{
	struct chan_ev ev;

	if (rc == -EINTR && send_error(s, XE_INTERRUPTED, "the sender was interrupted") == 0)
		chan_drain(s->ch, 1000);
	/* A post can find the link gone before we read why the receiver left
	 * (verbs learns of a disconnect asynchronously): look for its reason. */
	while (rc == -ECONNRESET && chan_next(s->ch, 1000, 1000, &ev) == 0) {
		if (ev.type == CEV_MSG && ev.msg.type == XM_ERROR) {
			peer_refused(s, f, &ev.msg);
			s->dead = true;
			return FILE_FATAL;
		}
	}
	const char *token = rc == -EINTR     ? "interrupted" :
			    rc == -EBADMSG   ? "protocol" :
			    rc == -ETIMEDOUT ? "timeout" :
					       "connection";
	file_failed(s, f, exit_for_chan_error(rc), token, "%s", chan_why(s->ch));
	s->dead = true;
	return FILE_FATAL;
}

static int peer_refused(struct sender *s, struct outgoing *f, const struct xmsg *m)
{
	int rc = file_failed(s, f, exit_for_peer_error(m->u.error.code),
			     xfer_err_token(m->u.error.code), "receiver: %s", m->u.error.text);
	if (m->u.error.code == XE_INTERRUPTED || m->u.error.code == XE_PROTO ||
	    m->u.error.code == XE_TIMEOUT) {
		s->dead = true;
		return FILE_FATAL;
	}
	return rc;
}

static int send_error(struct sender *s, enum xfer_err code, const char *text)
{
	struct xmsg m;

	xmsg_error(&m, code, "%s", text);
	return chan_send(s->ch, &m);
}

static bool source_changed(const struct outgoing *f)
{
	struct stat now;

	if (fstat(f->fd, &now) < 0)
		return true;
	return now.st_size != f->st0.st_size || now.st_mtim.tv_sec != f->st0.st_mtim.tv_sec ||
	       now.st_mtim.tv_nsec != f->st0.st_mtim.tv_nsec ||
	       now.st_ctim.tv_sec != f->st0.st_ctim.tv_sec ||
	       now.st_ctim.tv_nsec != f->st0.st_ctim.tv_nsec;
}

/* pread exactly len bytes at off into dst, hashing them; -ENODATA if the
 * file ended early (it shrank). */
static int read_hashed(struct outgoing *f, uint8_t *dst, size_t len, uint64_t off)
{
	while (len) {
		size_t want = len < READ_PIECE ? len : READ_PIECE;
		ssize_t n = pread(f->fd, dst, want, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ENODATA;
		if (sha256_update(&f->hash, dst, (size_t)n))
			return -EIO;
		dst += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

/* Hash the prefix the receiver already holds, keeping the link alive.
 * A read error is returned; a channel error goes to *chan_rc. */
static int hash_prefix(struct sender *s, struct outgoing *f, uint64_t len, int *chan_rc)
{
	uint8_t *buf = malloc(READ_PIECE);
	uint64_t off = 0, last_tick = mono_ns();
	int rc = 0;

	*chan_rc = 0;
	if (!buf)
		return -ENOMEM;
	while (off < len && !rc && !*chan_rc) {
		size_t n = len - off < READ_PIECE ? (size_t)(len - off) : READ_PIECE;
		rc = read_hashed(f, buf, n, off);
		off += n;
		if (!rc && mono_ns() - last_tick > 500000000ull) {
			*chan_rc = chan_tick(s->ch);
			last_tick = mono_ns();
		}
	}
	free(buf);
	return rc;
}

static void release_slot(struct outgoing *f, uint32_t slot)
{
	if (!f->remote_busy[slot] && !f->local_busy[slot])
		f->free_slots[f->nfree++] = slot;
}

static int setup_window(struct sender *s, struct outgoing *f, const struct xmsg *acc)
{
	uint32_t count = acc->u.accept.chunk_count;
	int rc;

	f->remote = acc->u.accept.window;
	rc = window_create(s->ctx, acc->u.accept.chunk_size, count, RCC_ACCESS_LOCAL_WRITE,
			   &f->win);
	if (rc)
		return rc;
	f->remote_busy = calloc(count ? count : 1, 1);
	f->local_busy = calloc(count ? count : 1, 1);
	f->free_slots = calloc(count ? count : 1, sizeof(*f->free_slots));
	if (!f->remote_busy || !f->local_busy || !f->free_slots)
		return -ENOMEM;
	for (uint32_t i = 0; i < count; i++)
		f->free_slots[i] = count - 1 - i;
	f->nfree = count;
	return 0;
}

static void teardown_window(struct outgoing *f)
{
	free(f->free_slots);
	free(f->local_busy);
	free(f->remote_busy);
	f->free_slots = NULL;
	f->local_busy = f->remote_busy = NULL;
	window_destroy(&f->win);
}

/* Stage the next chunk into a free slot and WRITE it. A read error is
 * returned in *read_err, a channel error as the result. */
static int post_chunk(struct sender *s, struct outgoing *f, int *read_err)
{
	uint32_t slot = f->free_slots[--f->nfree];
	uint64_t left = f->st0.st_size - f->next_off;
	uint32_t len = left < f->win.chunk ? (uint32_t)left : f->win.chunk;
	uint8_t *p = window_slot(&f->win, slot);
	struct rcc_sge sge;
	int rc;

	rc = read_hashed(f, p, len, f->next_off);
	if (rc) {
		f->free_slots[f->nfree++] = slot;
		if (rc == -ENODATA)
			f->changed = true; /* it shrank */
		else
			*read_err = rc;
		return 0;
	}
	sge = rcc_mr_sge(f->win.mr, p, len);
	rc = chan_write_imm(s->ch, &sge, f->remote.addr + (uint64_t)slot * f->win.chunk,
			    f->remote.rkey, imm_encode(slot, f->seq), slot);
	if (rc)
		return rc;
	f->remote_busy[slot] = f->local_busy[slot] = 1;
	f->inflight++;
	f->next_off += len;
	f->seq++;
	if (source_changed(f))
		f->changed = true;
	return 0;
}

/* Milliseconds until --limit-rate lets the next chunk go; 0: now. */
static int pace_ms(const struct sender *s, const struct outgoing *f)
{
	double rate = (double)s->o->limit_rate, elapsed, allowed;
	uint64_t sent = f->next_off - f->offset;

	if (!s->o->limit_rate)
		return 0;
	elapsed = (double)(mono_ns() - f->t0_ns) / 1e9;
	allowed = elapsed * rate;
	if ((double)sent <= allowed)
		return 0;
	double ms = ((double)sent - allowed) / rate * 1000.0;
	return ms < 1 ? 1 : ms > 1000 ? 1000 : (int)ms;
}

/* After the receiver gave up on the file: let our WRITEs finish, then end
 * the file on our side with an ERROR of our own. */
static int drain_writes(struct sender *s, struct outgoing *f)
{
	struct chan_ev ev;
	int rc;

	while (f->inflight) {
		rc = chan_next(s->ch, s->o->timeout_ms, -1, &ev);
		if (rc)
			return rc;
		if (ev.type == CEV_WRITE_DONE && ev.id < f->win.count && f->local_busy[ev.id]) {
			f->local_busy[ev.id] = 0;
			f->inflight--;
		}
	}
	return 0;
}

static int on_credit(struct sender *s, struct outgoing *f, const struct xmsg *m)
{
	uint32_t slot = m->u.credit.slot;

	if (slot >= f->win.count || !f->remote_busy[slot] ||
	    m->u.credit.persisted > (uint64_t)f->st0.st_size) {
		send_error(s, XE_PROTO, "CREDIT for a slot that was not written");
		return -EBADMSG;
	}
	f->remote_busy[slot] = 0;
	release_slot(f, slot);
	if (m->u.credit.persisted > f->persisted)
		f->persisted = m->u.credit.persisted;
	progress_update(&f->prog, f->persisted);
	return 0;
}

static int data_phase(struct sender *s, struct outgoing *f)
{
	uint64_t size = (uint64_t)f->st0.st_size;
	struct chan_ev ev;
	int rc, wait;

	f->t0_ns = mono_ns();
	for (;;) {
		wait = 0;
		while (!f->changed && f->nfree && f->next_off < size) {
			wait = pace_ms(s, f);
			if (wait)
				break;
			int read_err = 0;
			rc = post_chunk(s, f, &read_err);
			if (rc)
				return conn_failed(s, f, rc);
			if (read_err) {
				drain_writes(s, f);
				send_error(s, XE_IO, "the sender could not read the file");
				return file_failed(s, f, XEXIT_LOCAL, "io", "cannot read: %s",
						   strerror(-read_err));
			}
		}
		if (f->changed && !f->inflight) {
			send_error(s, XE_SOURCE_CHANGED,
				   "the source file changed while it was "
				   "being sent; the transfer was abandoned");
			return file_failed(s, f, XEXIT_INTEGRITY, "source-changed",
					   "the file changed while it was being sent; nothing "
					   "was stored (send it again once it is stable)");
		}
		if (f->next_off == size && !f->inflight)
			return FILE_OK;
		rc = chan_next(s->ch, s->o->timeout_ms, wait ? wait : -1, &ev);
		if (rc == -EAGAIN)
			continue;
		if (rc)
			return conn_failed(s, f, rc);
		switch (ev.type) {
		case CEV_WRITE_DONE:
			if (ev.id >= f->win.count || !f->local_busy[ev.id])
				return conn_failed(s, f, -EIO);
			f->local_busy[ev.id] = 0;
			f->inflight--;
			release_slot(f, ev.id);
			break;
		case CEV_MSG:
			if (ev.msg.type == XM_CREDIT) {
				if (on_credit(s, f, &ev.msg))
					return conn_failed(s, f, -EBADMSG);
				break;
			}
			if (ev.msg.type == XM_ERROR) {
				/* The receiver's reason matters more than how the
				 * connection ends after it (it may close at once). */
				rc = drain_writes(s, f);
				if (!rc)
					send_error(s, ev.msg.u.error.code,
						   "aborted after the receiver's error");
				int st = peer_refused(s, f, &ev.msg);
				if (rc)
					s->dead = true;
				return rc ? FILE_FATAL : st;
			}
			send_error(s, XE_PROTO, "unexpected message during the data phase");
			file_failed(s, f, XEXIT_PROTO, "protocol",
				    "unexpected %s from the receiver", xmsg_type_name(ev.msg.type));
			s->dead = true;
			return FILE_FATAL;
		case CEV_CHUNK:
			send_error(s, XE_PROTO, "a sender does not take RDMA writes");
			file_failed(s, f, XEXIT_PROTO, "protocol",
				    "the receiver wrote into our memory");
			s->dead = true;
			return FILE_FATAL;
		}
	}
}

static int verify_result(struct sender *s, struct outgoing *f, const uint8_t sha[XFER_SHA_LEN],
			 const struct xmsg *m)
{
	uint8_t want[XFER_MAC_LEN];
	char shahex[SHA256_HEX_LEN + 1], rhex[2 * XFER_MAC_LEN + 1];
	char sz[32], rate[32], jr[900];
	double secs = (double)(mono_ns() - f->t0_ns) / 1e9;
	uint64_t moved = (uint64_t)f->st0.st_size - f->offset;

	if (memcmp(m->u.result.sha, sha, XFER_SHA_LEN))
		return file_failed(s, f, XEXIT_INTEGRITY, "integrity",
				   "the receiver reports a different SHA-256");
	if (auth_receipt(&s->key, s->o->id, sha, (uint64_t)f->st0.st_size, m->u.result.name,
			 want) ||
	    !auth_equal(want, m->u.result.receipt, XFER_MAC_LEN) ||
	    strcmp(m->u.result.name, f->name))
		return file_failed(s, f, XEXIT_INTEGRITY, "integrity",
				   "the receiver's receipt does not verify");
	progress_end(&f->prog);
	hex_encode(sha, XFER_SHA_LEN, shahex);
	hex_encode(m->u.result.receipt, XFER_MAC_LEN, rhex);
	fmt_bytes((uint64_t)f->st0.st_size, sz, sizeof(sz));
	fmt_rate(secs > 0 ? (double)moved / secs : 0, rate, sizeof(rate));
	if (f->offset) {
		char at[32];
		fmt_bytes(f->offset, at, sizeof(at));
		out_info("sent %s: %s in %.2f s (%s), resumed at %s, sha256 %s, receipt %s",
			 f->path, sz, secs, rate, at, shahex, rhex);
	} else {
		out_info("sent %s: %s in %.2f s (%s), sha256 %s, receipt %s", f->path, sz, secs,
			 rate, shahex, rhex);
	}
	out_json("{\"event\":\"sent\",\"file\":%s,\"name\":%s,\"size\":%llu,\"resumed_from\":%llu,"
		 "\"seconds\":%.6f,\"rate_bps\":%.0f,\"sha256\":\"%s\",\"receipt\":\"%s\"}",
		 json_str(f->path, jr, sizeof(jr)), f->jname, (unsigned long long)f->st0.st_size,
		 (unsigned long long)f->offset, secs, secs > 0 ? (double)moved / secs : 0, shahex,
		 rhex);
	s->bytes += moved;
	s->files_ok++;
	return FILE_OK;
}

static int finish_file(struct sender *s, struct outgoing *f)
{
	uint8_t sha[XFER_SHA_LEN];
	struct chan_ev ev;
	struct xmsg m;
	int rc;

	if (source_changed(f)) {
		send_error(s, XE_SOURCE_CHANGED, "the source file changed while it was being sent");
		return file_failed(s, f, XEXIT_INTEGRITY, "source-changed",
				   "the file changed while it was being sent; nothing was stored");
	}
	if (sha256_peek(&f->hash, sha))
		return file_failed(s, f, XEXIT_LOCAL, "internal", "hashing failed");
	memset(&m, 0, sizeof(m));
	m.type = XM_DONE;
	m.u.done.size = (uint64_t)f->st0.st_size;
	memcpy(m.u.done.sha, sha, XFER_SHA_LEN);
	rc = chan_send(s->ch, &m);
	if (rc)
		return conn_failed(s, f, rc);
	for (;;) {
		rc = chan_next(s->ch, s->o->timeout_ms, -1, &ev);
		if (rc)
			return conn_failed(s, f, rc);
		if (ev.type == CEV_MSG && ev.msg.type == XM_CREDIT)
			continue; /* late credits for the last chunks */
		if (ev.type == CEV_MSG && ev.msg.type == XM_RESULT)
			return verify_result(s, f, sha, &ev.msg);
		if (ev.type == CEV_MSG && ev.msg.type == XM_ERROR)
			return peer_refused(s, f, &ev.msg);
		send_error(s, XE_PROTO, "expected RESULT");
		file_failed(s, f, XEXIT_PROTO, "protocol", "unexpected reply to DONE");
		s->dead = true;
		return FILE_FATAL;
	}
}

/* Offer the file and wait for ACCEPT (or a refusal). */
static int offer(struct sender *s, struct outgoing *f, uint32_t flags, struct xmsg *acc)
{
	struct chan_ev ev;
	struct xmsg m;
	int rc;

	memset(&m, 0, sizeof(m));
	m.type = XM_META;
	m.u.meta.size = (uint64_t)f->st0.st_size;
	m.u.meta.mtime_s = f->st0.st_mtim.tv_sec;
	m.u.meta.mtime_ns = (uint32_t)f->st0.st_mtim.tv_nsec;
	m.u.meta.mode = f->st0.st_mode & 07777;
	m.u.meta.flags = flags;
	snprintf(m.u.meta.name, sizeof(m.u.meta.name), "%s", f->name);
	rc = chan_send(s->ch, &m);
	if (rc)
		return conn_failed(s, f, rc);
	for (;;) {
		rc = chan_next(s->ch, s->o->timeout_ms, -1, &ev);
		if (rc)
			return conn_failed(s, f, rc);
		if (ev.type == CEV_MSG && ev.msg.type == XM_CREDIT)
			continue; /* late credits of an earlier file */
		if (ev.type == CEV_MSG && ev.msg.type == XM_ERROR)
			return peer_refused(s, f, &ev.msg);
		if (ev.type == CEV_MSG && ev.msg.type == XM_ACCEPT)
			break;
		send_error(s, XE_PROTO, "expected ACCEPT");
		file_failed(s, f, XEXIT_PROTO, "protocol", "unexpected reply to META");
		s->dead = true;
		return FILE_FATAL;
	}
	*acc = ev.msg;
	uint64_t rest = (uint64_t)f->st0.st_size - acc->u.accept.offset;
	if (acc->u.accept.offset > (uint64_t)f->st0.st_size ||
	    (rest && !acc->u.accept.chunk_count)) {
		send_error(s, XE_PROTO, "ACCEPT does not fit the file");
		file_failed(s, f, XEXIT_PROTO, "protocol", "the receiver's ACCEPT does not fit");
		s->dead = true;
		return FILE_FATAL;
	}
	if ((uint64_t)acc->u.accept.chunk_size * acc->u.accept.chunk_count >
	    XFER_SENDER_WINDOW_MAX) {
		send_error(s, XE_TOO_LARGE, "window larger than this sender stages (256 MiB)");
		return file_failed(s, f, XEXIT_REFUSED, "too-large",
				   "the receiver asks for a window larger than 256 MiB");
	}
	return FILE_OK;
}

static int open_source(struct outgoing *f, struct sender *s)
{
	f->fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (f->fd < 0)
		return file_failed(s, f, XEXIT_LOCAL, "io", "cannot open: %s", strerror(errno));
	if (fstat(f->fd, &f->st0) < 0)
		return file_failed(s, f, XEXIT_LOCAL, "io", "cannot stat: %s", strerror(errno));
	if (!S_ISREG(f->st0.st_mode))
		return file_failed(s, f, XEXIT_LOCAL, "io",
				   "not a regular file (only files can be sent)");
	posix_fadvise(f->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	return FILE_OK;
}

static enum progress_mode progress_mode_for(const struct xfer_opts *o)
{
	if (o->out == OUT_JSON)
		return PROGRESS_JSON;
	if (o->out == OUT_QUIET || o->progress == 0)
		return PROGRESS_NONE;
	if (o->progress == 1 || isatty(STDERR_FILENO))
		return PROGRESS_BAR;
	return PROGRESS_NONE;
}

static int send_one(struct sender *s, const char *path)
{
	struct outgoing f;
	struct xmsg acc;
	uint32_t flags = (s->o->force ? XFER_META_FORCE : 0) |
			 (s->o->no_resume ? XFER_META_NO_RESUME : 0);
	int rc;

	memset(&f, 0, sizeof(f));
	f.fd = -1;
	f.path = path;
	f.name = s->o->as_name ? s->o->as_name : path_basename(path);
	json_str(f.name, f.jname, sizeof(f.jname));
	rc = open_source(&f, s);
	if (rc)
		goto out_close;
	if (sha256_init(&f.hash)) {
		rc = file_failed(s, &f, XEXIT_LOCAL, "internal", "out of memory");
		goto out_close;
	}
	for (int attempt = 0;; attempt++) {
		rc = offer(s, &f, flags, &acc);
		if (rc)
			goto out_hash;
		f.offset = f.next_off = acc.u.accept.offset;
		f.persisted = f.offset;
		int chan_rc;
		rc = hash_prefix(s, &f, f.offset, &chan_rc);
		if (chan_rc) {
			rc = conn_failed(s, &f, chan_rc);
			goto out_hash;
		}
		if (rc) {
			send_error(s, XE_IO, "the sender could not read the file");
			rc = file_failed(s, &f, XEXIT_LOCAL, "io", "cannot read: %s",
					 rc == -ENODATA ? "the file shrank" : strerror(-rc));
			goto out_hash;
		}
		uint8_t prefix[XFER_SHA_LEN];
		sha256_peek(&f.hash, prefix);
		if (!f.offset || !memcmp(prefix, acc.u.accept.prefix_sha, XFER_SHA_LEN))
			break;
		/* The receiver's partial copy is not of this source: start over. */
		if (attempt || send_error(s, XE_RESUME_MISMATCH,
					  "partial copy differs from the "
					  "source; starting over")) {
			rc = conn_failed(s, &f, -EBADMSG);
			goto out_hash;
		}
		out_info("%s: the receiver's partial copy differs from this file; sending it whole",
			 path);
		flags |= XFER_META_NO_RESUME;
		sha256_reset(&f.hash);
	}
	progress_begin(&f.prog, progress_mode_for(s->o), f.name, (uint64_t)f.st0.st_size, f.offset);
	rc = setup_window(s, &f, &acc);
	if (rc) {
		send_error(s, XE_INTERNAL, "the sender could not register memory");
		rc = file_failed(s, &f, XEXIT_LOCAL, "internal",
				 "cannot register %u x %u bytes: %s", acc.u.accept.chunk_count,
				 acc.u.accept.chunk_size, rcc_strerror(rc));
		goto out_window;
	}
	rc = data_phase(s, &f);
	if (!rc)
		rc = finish_file(s, &f);
out_window:
	if (s->dead)
		chan_disconnect(s->ch); /* WRITEs may still read from the window */
	teardown_window(&f);
	progress_end(&f.prog);
out_hash:
	sha256_free(&f.hash);
out_close:
	if (f.fd >= 0)
		close(f.fd);
	return rc;
}

static void print_summary(const struct sender *s)
{
	double secs = (double)(mono_ns() - s->t0_ns) / 1e9;
	char sz[32], rate[32];

	if (s->o->nfiles < 2)
		return;
	fmt_bytes(s->bytes, sz, sizeof(sz));
	fmt_rate(secs > 0 ? (double)s->bytes / secs : 0, rate, sizeof(rate));
	out_info("%d of %d files sent, %s in %.2f s (%s)", s->files_ok, s->o->nfiles, sz, secs,
		 rate);
}

int xfer_send(const struct xfer_opts *o)
{
	struct sender s;
	struct chan_opts co = { .cq_mode = o->cq_mode, .write_depth = XFER_MAX_CHUNKS };
	char err[256], jpeer[400];
	int warn, rc, i;

	memset(&s, 0, sizeof(s));
	s.o = o;
	s.t0_ns = mono_ns();
	if (key_load(o->key_file, &s.key, &warn, err, sizeof(err))) {
		out_error("%s", err);
		return XEXIT_USAGE;
	}
	if (warn)
		out_warn("key file %s is readable by others; chmod 600 it", o->key_file);
	rc = rcc_ctx_open(&o->ctx_attr, &s.ctx);
	if (rc) {
		out_error("cannot open the %s transport: %s",
			  rcc_transport_name(o->ctx_attr.transport), explain_status(rc));
		s.status = XEXIT_LOCAL;
		goto out_key;
	}
	rc = chan_connect(s.ctx, o->target, &co, o->connect_timeout_ms, &s.ch, err, sizeof(err));
	if (rc) {
		out_error("cannot connect to %s: %s", o->target, err);
		s.status = rc == -EPROTO ? XEXIT_PROTO : XEXIT_CONN;
		goto out_ctx;
	}
	rc = auth_as_sender(s.ch, &s.key, o->id, o->timeout_ms);
	if (rc) {
		s.status = rc;
		goto out_chan;
	}
	out_json("{\"event\":\"connected\",\"peer\":%s,\"transport\":\"%s\"}",
		 json_str(o->target, jpeer, sizeof(jpeer)),
		 rcc_transport_name(rcc_ctx_transport(s.ctx)));
	for (i = 0; i < o->nfiles && !s.dead; i++)
		send_one(&s, o->files[i]);
	if (!s.dead) {
		struct xmsg bye = { .type = XM_BYE };
		if (chan_send(s.ch, &bye) == 0)
			chan_drain(s.ch, 5000);
	}
	print_summary(&s);
	out_json("{\"event\":\"summary\",\"files\":%d,\"ok\":%d,\"bytes\":%llu,\"seconds\":%.6f,"
		 "\"exit\":%d,\"max_rss_kib\":%ld}",
		 o->nfiles, s.files_ok, (unsigned long long)s.bytes,
		 (double)(mono_ns() - s.t0_ns) / 1e9, s.status, peak_rss_kib());
out_chan:
	chan_close(s.ch);
out_ctx:
	rcc_ctx_close(s.ctx);
out_key:
	key_wipe(&s.key);
	return s.status;
}
