/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The receiver's store resumes an interrupted file only from a prefix that
 * still hashes to what was recorded: a part file changed behind its back
 * (one flipped byte) starts over from zero.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "store.h"

enum {
	SIZE = 1 << 20,   /* the file */
	PREFIX = 1 << 18, /* written before the interruption */
};

static const struct store_opts opts = { .checkpoint_bytes = 1 << 16, .umask = 022 };

static struct xmsg meta(void)
{
	struct xmsg m = { .type = XM_META };
	m.u.meta.size = SIZE;
	m.u.meta.mtime_s = 1700000000;
	m.u.meta.mode = 0644;
	snprintf(m.u.meta.name, sizeof(m.u.meta.name), "resumed.bin");
	return m;
}

/* Write PREFIX bytes of a pattern, make them durable, stop (keeping them). */
static int interrupted_transfer(int dirfd)
{
	static uint8_t data[PREFIX];
	struct xmsg m = meta();
	struct store st;
	struct store_err e;
	int rc;

	fill_pattern(data, sizeof(data), 61);
	rc = store_open(&st, dirfd, &m, &opts, NULL, NULL, &e);
	if (rc)
		return rc;
	rc = store_write(&st, data, sizeof(data), &e);
	if (!rc)
		rc = store_checkpoint(&st, &e);
	store_abort(&st, true);
	return rc;
}

/* Where a new transfer of the same file starts: the resume point, or < 0. */
static long resume_point(int dirfd)
{
	struct xmsg m = meta();
	struct store st;
	struct store_err e;
	int rc = store_open(&st, dirfd, &m, &opts, NULL, NULL, &e);
	if (rc)
		return rc;
	long at = (long)st.written;
	store_abort(&st, false);
	return at;
}

static void resume_only_an_intact_prefix(void)
{
	for (int tamper = 0; tamper < 2 && !test_failed; tamper++) {
		char dir[] = "/tmp/rcc-xfer-store-XXXXXX";
		CHECK(mkdtemp(dir));
		int dirfd = open(dir, O_RDONLY | O_DIRECTORY);
		CHECK(dirfd >= 0);
		CHECK_OK(interrupted_transfer(dirfd));
		if (tamper) {
			int fd = openat(dirfd, ".resumed.bin.rcc-part", O_RDWR);
			CHECK(fd >= 0);
			uint8_t b;
			CHECK_EQ(pread(fd, &b, 1, PREFIX / 2), 1);
			b ^= 0x01;
			CHECK_EQ(pwrite(fd, &b, 1, PREFIX / 2), 1);
			close(fd);
		}
		long at = resume_point(dirfd);
		CHECK_MSG(at == (tamper ? 0 : PREFIX), "%s part file: resumed at %ld",
			  tamper ? "changed" : "intact", at);
		close(dirfd);
		CHECK_OK(rmdir(dir)); /* store_abort(false) left nothing behind */
	}
}

TEST_MAIN(TEST(resume_only_an_intact_prefix))
