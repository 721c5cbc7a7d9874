/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Where the receiver puts one file. Data goes to ".NAME.rcc-part" in file
 * order (pwrite at the next offset) and is hashed in that order; every
 * checkpoint makes the written prefix durable and records it in
 * ".NAME.rcc-state" so an interrupted transfer can resume. Only when the
 * whole file's SHA-256 equals the sender's is the part file fsync'ed and
 * renamed to NAME: a reader never sees a truncated or unverified file.
 * The part file is flock'ed for the whole transfer, so two transfers of the
 * same name (threads or processes) never mix.
 */
#ifndef XFER_STORE_H
#define XFER_STORE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "hash.h"
#include "names.h"
#include "proto.h"

struct store_opts {
	bool no_clobber;           /* refuse to replace a file even when asked */
	bool no_preallocate;       /* do not reserve the file's space up front */
	uint64_t checkpoint_bytes; /* make progress durable at least this often */
	mode_t umask;
};

/* Called during long local work (re-hashing a resumed prefix) so the peer
 * does not think we vanished. Non-zero stops the work. */
typedef int (*store_tick_fn)(void *arg);

struct store {
	int dirfd;
	char name[XFER_NAME_MAX + 1];
	char part[COMPANION_MAX];
	char state[COMPANION_MAX];
	int part_fd;
	int state_fd;
	struct sha256 hash;
	uint64_t size;
	uint64_t written; /* bytes written and hashed, in file order */
	uint64_t synced;  /* of those, durable and recorded */
	uint64_t resumed; /* where this transfer started */
	uint64_t last_ckpt_ns;
	int64_t mtime_s;
	uint32_t mtime_ns;
	uint32_t mode;
	const struct store_opts *opts;
};

/* A failure to report to the peer: protocol code and a sentence. */
struct store_err {
	enum xfer_err code;
	char text[XFER_TEXT_MAX + 1];
};

/*
 * Check the offer and prepare the part file: refuse bad names and existing
 * files (unless forced), lock, resume from an intact record that matches the
 * source (re-reading and re-hashing the prefix), reserve space. On success
 * st->written is the resume point. 0 or a negative errno with *e filled.
 */
int store_open(struct store *st, int dirfd, const struct xmsg *meta, const struct store_opts *o,
	       store_tick_fn tick, void *arg, struct store_err *e);
/* Append len bytes at st->written. 0 or a negative errno with *e filled. */
int store_write(struct store *st, const void *buf, size_t len, struct store_err *e);
/* Make st->written durable and record it. */
int store_checkpoint(struct store *st, struct store_err *e);
/* SHA-256 of everything written so far. */
int store_digest(const struct store *st, uint8_t out[SHA256_LEN]);
/* Verify against the sender's digest, then fsync, set mode and mtime, and
 * rename into place (never over an existing file unless force). The store is
 * closed afterwards whatever the outcome. */
int store_finish(struct store *st, const uint8_t sender_sha[SHA256_LEN], bool force,
		 struct store_err *e);
/* Give up: keep the verified prefix for a later resume (keep) or delete
 * every trace. The store is closed afterwards. */
void store_abort(struct store *st, bool keep);

#endif
