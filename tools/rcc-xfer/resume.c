/* SPDX-License-Identifier: BSD-3-Clause */
#include "resume.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "cursor.h"

#define RESUME_MAGIC 0x53584352u /* "RCXS" */
#define RESUME_VERSION 1u

static int record_check(const uint8_t *p, size_t n, uint8_t out[SHA256_LEN])
{
	struct sha256 h;
	int rc = sha256_init(&h);

	if (rc)
		return rc;
	rc = sha256_update(&h, p, n);
	if (!rc)
		rc = sha256_peek(&h, out);
	sha256_free(&h);
	return rc;
}

void resume_encode(const struct resume_state *st, uint8_t out[RESUME_RECORD_LEN])
{
	struct wcur w;
	uint8_t check[SHA256_LEN] = { 0 };

	w_init(&w, out, RESUME_RECORD_LEN);
	w_u32(&w, RESUME_MAGIC);
	w_u32(&w, RESUME_VERSION);
	w_u64(&w, st->size);
	w_u64(&w, (uint64_t)st->mtime_s);
	w_u32(&w, st->mtime_ns);
	w_u32(&w, 0);
	w_u64(&w, st->done);
	w_bytes(&w, st->prefix_sha, SHA256_LEN);
	/* Without a checksum the record is written as damaged: it is then
	 * ignored on load, which is the safe reading. */
	record_check(out, w.len, check);
	w_bytes(&w, check, SHA256_LEN);
}

int resume_decode(const uint8_t *in, size_t len, struct resume_state *st)
{
	uint8_t check[SHA256_LEN], want[SHA256_LEN];
	struct rcur r;

	if (len != RESUME_RECORD_LEN || record_check(in, len - SHA256_LEN, want))
		return -EBADMSG;
	r_init(&r, in, len);
	if (r_u32(&r) != RESUME_MAGIC || r_u32(&r) != RESUME_VERSION)
		return -EBADMSG;
	st->size = r_u64(&r);
	st->mtime_s = (int64_t)r_u64(&r);
	st->mtime_ns = r_u32(&r);
	if (r_u32(&r) != 0)
		return -EBADMSG;
	st->done = r_u64(&r);
	r_bytes(&r, st->prefix_sha, SHA256_LEN);
	r_bytes(&r, check, SHA256_LEN);
	if (!r_done(&r) || memcmp(check, want, SHA256_LEN) || st->done > st->size)
		return -EBADMSG;
	return 0;
}

int resume_write(int fd, const struct resume_state *st)
{
	uint8_t rec[RESUME_RECORD_LEN];
	ssize_t n;

	resume_encode(st, rec);
	n = pwrite(fd, rec, sizeof(rec), 0);
	if (n < 0)
		return -errno;
	if (n != (ssize_t)sizeof(rec))
		return -ENOSPC;
	if (fdatasync(fd) < 0)
		return -errno;
	return 0;
}

int resume_read(int fd, struct resume_state *st)
{
	uint8_t rec[RESUME_RECORD_LEN + 1];
	ssize_t n = pread(fd, rec, sizeof(rec), 0);

	if (n < 0)
		return -errno;
	return resume_decode(rec, (size_t)n, st) ? -ENODATA : 0;
}

bool resume_matches(const struct resume_state *st, uint64_t size, int64_t mtime_s,
		    uint32_t mtime_ns)
{
	return st->size == size && st->mtime_s == mtime_s && st->mtime_ns == mtime_ns;
}
