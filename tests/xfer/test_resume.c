/* SPDX-License-Identifier: BSD-3-Clause */
/* The resume record: round trip, damage detection, file I/O. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "resume.h"

static struct resume_state sample(void)
{
	struct resume_state st = {
		.size = 10ull << 30, .mtime_s = 1700000000, .mtime_ns = 42, .done = 3ull << 30
	};
	memset(st.prefix_sha, 0x5a, sizeof(st.prefix_sha));
	return st;
}

/* Field by field: the struct has padding, which memcmp would compare too. */
static bool same_state(const struct resume_state *a, const struct resume_state *b)
{
	return a->size == b->size && a->mtime_s == b->mtime_s && a->mtime_ns == b->mtime_ns &&
	       a->done == b->done && !memcmp(a->prefix_sha, b->prefix_sha, sizeof(a->prefix_sha));
}

static void roundtrip(void)
{
	struct resume_state st = sample(), out;
	uint8_t rec[RESUME_RECORD_LEN];

	resume_encode(&st, rec);
	CHECK_OK(resume_decode(rec, sizeof(rec), &out));
	CHECK(same_state(&st, &out));
	CHECK(resume_matches(&out, st.size, st.mtime_s, st.mtime_ns));
	CHECK(!resume_matches(&out, st.size + 1, st.mtime_s, st.mtime_ns));
	CHECK(!resume_matches(&out, st.size, st.mtime_s, st.mtime_ns + 1));
}

static void damage(void)
{
	struct resume_state st = sample(), out;
	uint8_t rec[RESUME_RECORD_LEN];

	resume_encode(&st, rec);
	for (size_t i = 0; i < sizeof(rec); i++) {
		rec[i] ^= 0x01;
		CHECK_MSG(resume_decode(rec, sizeof(rec), &out) == -EBADMSG, "byte %zu", i);
		rec[i] ^= 0x01;
	}
	CHECK_EQ(resume_decode(rec, sizeof(rec) - 1, &out), -EBADMSG);
	st.done = st.size + 1; /* impossible, even if well-formed */
	resume_encode(&st, rec);
	CHECK_EQ(resume_decode(rec, sizeof(rec), &out), -EBADMSG);
}

static void file_io(void)
{
	char path[] = "/tmp/rcc-xfer-resume-XXXXXX";
	struct resume_state st = sample(), out;
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	unlink(path);
	CHECK_EQ(resume_read(fd, &out), -ENODATA); /* empty file */
	CHECK_OK(resume_write(fd, &st));
	CHECK_OK(resume_read(fd, &out));
	CHECK(same_state(&st, &out));
	st.done += 1;
	CHECK_OK(resume_write(fd, &st)); /* overwritten in place */
	CHECK_OK(resume_read(fd, &out));
	CHECK_EQ(out.done, st.done);
	CHECK_EQ(pwrite(fd, "junk", 4, 50), 4);
	CHECK_EQ(resume_read(fd, &out), -ENODATA);
	close(fd);
}

TEST_MAIN(TEST(roundtrip), TEST(damage), TEST(file_io))
