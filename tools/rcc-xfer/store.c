/* SPDX-License-Identifier: BSD-3-Clause */
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <linux/magic.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "resume.h"
#include "stats.h"

#define IO_PIECE (1u << 20)         /* write and hash in cache-sized pieces */
#define CHECKPOINT_NS 1000000000ull /* and make progress durable every second */
#define TICK_EVERY (256ull << 20)

static int set_err(struct store_err *e, enum xfer_err code, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int set_err(struct store_err *e, enum xfer_err code, int rc, const char *fmt, ...)
{
	va_list ap;

	e->code = code;
	va_start(ap, fmt);
	vsnprintf(e->text, sizeof(e->text), fmt, ap);
	va_end(ap);
	return rc;
}

static bool is_nospace(int err) { return err == ENOSPC || err == EDQUOT; }

static int nospace_err(struct store *st, struct store_err *e, const char *what)
{
	struct statvfs vfs;
	char need[32], have[32];

	fmt_bytes(st->size - st->written, need, sizeof(need));
	if (fstatvfs(st->part_fd, &vfs) == 0)
		fmt_bytes((uint64_t)vfs.f_bavail * vfs.f_frsize, have, sizeof(have));
	else
		snprintf(have, sizeof(have), "unknown");
	return set_err(e, XE_NOSPACE, -ENOSPC,
		       "no space left on the receiver for '%s' (%s; %s still needed, %s free)",
		       st->name, what, need, have);
}

/* Open ".NAME.rcc-part" and lock it. A transfer finishing concurrently may
 * rename or delete the path between open and lock: then try again. */
static int open_locked(int dirfd, const char *path)
{
	struct stat a, b;
	int fd, rc;

	for (int tries = 0; tries < 5; tries++) {
		fd = openat(dirfd, path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0)
			return -errno;
		if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
			rc = errno == EWOULDBLOCK ? -EBUSY : -errno;
			close(fd);
			return rc;
		}
		if (fstat(fd, &a) < 0) {
			rc = -errno;
			close(fd);
			return rc;
		}
		if (!S_ISREG(a.st_mode)) {
			close(fd);
			return -EINVAL;
		}
		if (fstatat(dirfd, path, &b, AT_SYMLINK_NOFOLLOW) == 0 && a.st_dev == b.st_dev &&
		    a.st_ino == b.st_ino)
			return fd;
		close(fd);
	}
	return -EAGAIN;
}

static int pwrite_all(int fd, const uint8_t *p, size_t n, uint64_t off)
{
	while (n) {
		ssize_t w = pwrite(fd, p, n, (off_t)off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		if (w == 0)
			return -ENOSPC;
		p += w;
		n -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

/* Re-read and hash [0, len) of the part file into st->hash. */
static int rehash_prefix(struct store *st, uint64_t len, store_tick_fn tick, void *arg)
{
	uint8_t *buf = malloc(IO_PIECE);
	uint64_t off = 0, next_tick = TICK_EVERY;
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	while (off < len && !rc) {
		size_t want = len - off < IO_PIECE ? (size_t)(len - off) : IO_PIECE;
		ssize_t n = pread(st->part_fd, buf, want, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = n < 0 ? -errno : -ENODATA;
			break;
		}
		rc = sha256_update(&st->hash, buf, (size_t)n);
		off += (uint64_t)n;
		if (!rc && tick && off >= next_tick) {
			rc = tick(arg) ? -EINTR : 0;
			next_tick += TICK_EVERY;
		}
	}
	free(buf);
	return rc;
}

/* Continue from the record if it is intact, belongs to this source, and the
 * part file still holds exactly the bytes it describes. 0: resumed or not. */
static int try_resume(struct store *st, store_tick_fn tick, void *arg)
{
	struct resume_state rs;
	uint8_t digest[SHA256_LEN];
	struct stat sb;
	int rc;

	if (resume_read(st->state_fd, &rs) ||
	    !resume_matches(&rs, st->size, st->mtime_s, st->mtime_ns) || !rs.done)
		return 0;
	if (fstat(st->part_fd, &sb) < 0 || (uint64_t)sb.st_size < rs.done)
		return 0;
	rc = rehash_prefix(st, rs.done, tick, arg);
	if (rc == -EINTR)
		return rc;
	if (!rc && !sha256_peek(&st->hash, digest) && !memcmp(digest, rs.prefix_sha, SHA256_LEN)) {
		st->written = st->synced = rs.done;
		return 0;
	}
	return sha256_reset(&st->hash);
}

/*
 * Make sure the rest of the file fits before any of it moves. Where blocks
 * can be reserved cheaply (unwritten extents) they are; on tmpfs, reserving
 * means zero-filling memory that is about to be overwritten, so the free
 * space is checked instead (a concurrent writer can still fill it: then the
 * write fails and is reported like any full disk).
 */
static int reserve_space(struct store *st)
{
	uint64_t need = st->size - st->written;
	struct statfs fs;

	if (fstatfs(st->part_fd, &fs) == 0 && fs.f_type == TMPFS_MAGIC) {
		if ((uint64_t)fs.f_bavail * (uint64_t)fs.f_bsize < need)
			return -ENOSPC;
		return 0;
	}
	if (fallocate(st->part_fd, 0, (off_t)st->written, (off_t)need) < 0 && errno != EOPNOTSUPP &&
	    errno != ENOSYS)
		return -errno;
	return 0;
}

static void close_fds(struct store *st)
{
	if (st->state_fd >= 0)
		close(st->state_fd);
	if (st->part_fd >= 0)
		close(st->part_fd);
	st->state_fd = st->part_fd = -1;
	if (st->hash.ctx)
		sha256_free(&st->hash);
}

static int check_destination(struct store *st, bool force, struct store_err *e)
{
	struct stat sb;

	if (fstatat(st->dirfd, st->name, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT)
			return 0;
		return set_err(e, XE_IO, -errno, "cannot check '%s': %s", st->name,
			       strerror(errno));
	}
	if (S_ISDIR(sb.st_mode))
		return set_err(e, XE_EXISTS, -EEXIST, "'%s' exists and is a directory", st->name);
	if (st->opts->no_clobber)
		return set_err(e, XE_EXISTS, -EEXIST,
			       "'%s' exists and this receiver never replaces files", st->name);
	if (!force)
		return set_err(e, XE_EXISTS, -EEXIST,
			       "'%s' exists (the sender may pass --force to replace it)", st->name);
	return 0;
}

int store_open(struct store *st, int dirfd, const struct xmsg *meta, const struct store_opts *o,
	       store_tick_fn tick, void *arg, struct store_err *e)
{
	const char *why;
	bool force = meta->u.meta.flags & XFER_META_FORCE;
	struct resume_state rs;
	int rc;

	memset(st, 0, sizeof(*st));
	st->part_fd = st->state_fd = -1;
	st->dirfd = dirfd;
	st->opts = o;
	snprintf(st->name, sizeof(st->name), "%s", meta->u.meta.name);
	st->size = meta->u.meta.size;
	st->mtime_s = meta->u.meta.mtime_s;
	st->mtime_ns = meta->u.meta.mtime_ns;
	st->mode = meta->u.meta.mode;

	why = name_refusal(meta->u.meta.name);
	if (why)
		return set_err(e, XE_BADNAME, -EINVAL, "refused name: %s", why);
	if (part_name(st->name, st->part, sizeof(st->part)) ||
	    state_name(st->name, st->state, sizeof(st->state)))
		return set_err(e, XE_BADNAME, -ENAMETOOLONG, "file name too long");
	rc = check_destination(st, force, e);
	if (rc)
		return rc;
	rc = sha256_init(&st->hash);
	if (rc)
		return set_err(e, XE_INTERNAL, rc, "out of memory");
	st->part_fd = open_locked(dirfd, st->part);
	if (st->part_fd < 0) {
		rc = st->part_fd;
		close_fds(st);
		if (rc == -EBUSY)
			return set_err(e, XE_BUSY, rc, "another transfer of '%s' is in progress",
				       st->name);
		return set_err(e, is_nospace(-rc) ? XE_NOSPACE : XE_IO, rc,
			       "cannot create '%s' in the receiver's folder: %s", st->part,
			       strerror(-rc));
	}
	st->state_fd = openat(dirfd, st->state, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (st->state_fd < 0) {
		rc = set_err(e, is_nospace(errno) ? XE_NOSPACE : XE_IO, -errno,
			     "cannot create '%s': %s", st->state, strerror(errno));
		goto err_delete;
	}
	if (!(meta->u.meta.flags & XFER_META_NO_RESUME)) {
		rc = try_resume(st, tick, arg);
		if (rc) {
			/* Leave the earlier partial copy and its record untouched. */
			close_fds(st);
			return set_err(e, XE_INTERRUPTED, rc,
				       "interrupted while checking the partial copy");
		}
	}
	/* Anything past the verified prefix is unverified: drop it. */
	if (ftruncate(st->part_fd, (off_t)st->written) < 0) {
		rc = set_err(e, XE_IO, -errno, "cannot truncate '%s': %s", st->part,
			     strerror(errno));
		goto err_keep;
	}
	rs = (struct resume_state){ .size = st->size,
				    .mtime_s = st->mtime_s,
				    .mtime_ns = st->mtime_ns,
				    .done = st->written };
	sha256_peek(&st->hash, rs.prefix_sha);
	rc = resume_write(st->state_fd, &rs);
	if (rc) {
		if (is_nospace(-rc))
			nospace_err(st, e, "cannot even record progress");
		else
			set_err(e, XE_IO, rc, "cannot write '%s': %s", st->state, strerror(-rc));
		goto err_keep;
	}
	if (!o->no_preallocate && st->size > st->written) {
		rc = reserve_space(st);
		if (rc) {
			if (is_nospace(-rc))
				nospace_err(st, e, "space could not be reserved");
			else
				set_err(e, XE_IO, rc, "cannot reserve space for '%s': %s", st->name,
					strerror(-rc));
			goto err_keep;
		}
	}
	st->resumed = st->written;
	st->last_ckpt_ns = mono_ns();
	return 0;

err_keep:
	store_abort(st, true);
	return rc;
err_delete:
	store_abort(st, false);
	return rc;
}

int store_checkpoint(struct store *st, struct store_err *e)
{
	struct resume_state rs;
	int rc;

	if (st->synced == st->written)
		return 0;
	if (fdatasync(st->part_fd) < 0)
		return set_err(e, XE_IO, -errno, "cannot flush '%s': %s", st->part,
			       strerror(errno));
	rs = (struct resume_state){ .size = st->size,
				    .mtime_s = st->mtime_s,
				    .mtime_ns = st->mtime_ns,
				    .done = st->written };
	rc = sha256_peek(&st->hash, rs.prefix_sha);
	if (!rc)
		rc = resume_write(st->state_fd, &rs);
	if (rc)
		return set_err(e, XE_IO, rc, "cannot record progress in '%s': %s", st->state,
			       strerror(-rc));
	st->synced = st->written;
	st->last_ckpt_ns = mono_ns();
	return 0;
}

int store_write(struct store *st, const void *buf, size_t len, struct store_err *e)
{
	const uint8_t *p = buf;
	int rc;

	if (len > st->size - st->written)
		return set_err(e, XE_PROTO, -EINVAL, "more data than the file's size");
	while (len) {
		size_t n = len < IO_PIECE ? len : IO_PIECE;
		rc = pwrite_all(st->part_fd, p, n, st->written);
		if (rc) {
			if (is_nospace(-rc))
				return nospace_err(st, e, "the disk filled up during the transfer");
			return set_err(e, XE_IO, rc, "write to '%s' failed: %s", st->part,
				       strerror(-rc));
		}
		rc = sha256_update(&st->hash, p, n);
		if (rc)
			return set_err(e, XE_INTERNAL, rc, "hashing failed");
		st->written += n;
		p += n;
		len -= n;
	}
	if (st->written - st->synced >= st->opts->checkpoint_bytes ||
	    mono_ns() - st->last_ckpt_ns >= CHECKPOINT_NS)
		return store_checkpoint(st, e);
	return 0;
}

int store_digest(const struct store *st, uint8_t out[SHA256_LEN])
{
	return sha256_peek(&st->hash, out);
}

/* rename without replacing. Where the filesystem cannot do that atomically,
 * link() refuses an existing target just as well; where it has no links
 * either (FAT), check and rename, which leaves only a tiny race. */
static int rename_noreplace(int dirfd, const char *from, const char *to)
{
	struct stat sb;

	if (renameat2(dirfd, from, dirfd, to, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -errno;
	if (linkat(dirfd, from, dirfd, to, 0) == 0) {
		unlinkat(dirfd, from, 0);
		return 0;
	}
	if (errno != EPERM && errno != EOPNOTSUPP)
		return -errno;
	if (fstatat(dirfd, to, &sb, AT_SYMLINK_NOFOLLOW) == 0)
		return -EEXIST;
	return renameat(dirfd, from, dirfd, to) < 0 ? -errno : 0;
}

int store_finish(struct store *st, const uint8_t sender_sha[SHA256_LEN], bool force,
		 struct store_err *e)
{
	uint8_t digest[SHA256_LEN];
	char ours[SHA256_HEX_LEN + 1], theirs[SHA256_HEX_LEN + 1];
	struct timespec times[2];
	int rc;

	rc = sha256_peek(&st->hash, digest);
	if (rc) {
		set_err(e, XE_INTERNAL, rc, "hashing failed");
		goto err_keep;
	}
	if (memcmp(digest, sender_sha, SHA256_LEN)) {
		set_err(e, XE_INTEGRITY, -EBADMSG,
			"SHA-256 mismatch for '%s': received %.16s..., sender has %.16s...; "
			"the data was discarded",
			st->name, hex_encode(digest, SHA256_LEN, ours),
			hex_encode(sender_sha, SHA256_LEN, theirs));
		store_abort(st, false);
		return -EBADMSG;
	}
	rc = store_checkpoint(st, e);
	if (rc)
		goto err_keep;
	times[0].tv_nsec = UTIME_OMIT;
	times[0].tv_sec = 0;
	times[1].tv_sec = (time_t)st->mtime_s;
	times[1].tv_nsec = st->mtime_ns;
	if (fchmod(st->part_fd, st->mode & 0777 & ~st->opts->umask) < 0 ||
	    futimens(st->part_fd, times) < 0 || fsync(st->part_fd) < 0) {
		rc = set_err(e, XE_IO, -errno, "cannot finish '%s': %s", st->part, strerror(errno));
		goto err_keep;
	}
	if (force && !st->opts->no_clobber)
		rc = renameat(st->dirfd, st->part, st->dirfd, st->name) < 0 ? -errno : 0;
	else
		rc = rename_noreplace(st->dirfd, st->part, st->name);
	if (rc == -EEXIST) {
		set_err(e, XE_EXISTS, rc,
			"'%s' appeared while it was being received; the "
			"verified copy stays in '%s' (send again with --force to replace)",
			st->name, st->part);
		goto err_keep;
	}
	if (rc) {
		set_err(e, XE_IO, rc, "cannot rename '%s' to '%s': %s", st->part, st->name,
			strerror(-rc));
		goto err_keep;
	}
	/* The rename is durable only once the folder is. */
	if (fsync(st->dirfd) < 0 && errno != EINVAL) {
		rc = set_err(e, XE_IO, -errno, "cannot flush the receiver's folder: %s",
			     strerror(errno));
		unlinkat(st->dirfd, st->state, 0);
		close_fds(st);
		return rc;
	}
	unlinkat(st->dirfd, st->state, 0);
	close_fds(st);
	return 0;

err_keep:
	store_abort(st, true);
	return rc;
}

void store_abort(struct store *st, bool keep)
{
	struct store_err ignored;

	if (st->part_fd < 0)
		goto out;
	if (keep && st->written > 0) {
		if (store_checkpoint(st, &ignored) == 0) {
			/* Give back space reserved for the part not received. */
			if (ftruncate(st->part_fd, (off_t)st->written) == 0)
				goto out;
		}
	}
	/* Delete while the lock is held, so no other transfer can be using it. */
	unlinkat(st->dirfd, st->part, 0);
	unlinkat(st->dirfd, st->state, 0);
out:
	close_fds(st);
}
