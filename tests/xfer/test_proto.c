/* SPDX-License-Identifier: BSD-3-Clause */
/* Control-message encoding: round trips, every rejection, and a fuzz pass. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "proto.h"
#include "cursor.h"

/* Encode m, parse and decode it back. 0 or the failing step's status. */
static int roundtrip(const struct xmsg *m, struct xmsg *out)
{
	uint8_t f[XFER_FRAME_MAX];
	struct xhdr h;
	const char *why;
	int len = xmsg_encode(m, f, sizeof(f));

	if (len < 0)
		return len;
	if (xhdr_parse(f, (size_t)len, &h, &why))
		return -1;
	return xmsg_decode_body(&h, f + XFER_HDR_LEN, out, &why);
}

static int decode_raw(const uint8_t *f, size_t len, struct xmsg *out)
{
	struct xhdr h;
	const char *why = NULL;
	int rc = xhdr_parse(f, len, &h, &why);

	if (!rc)
		rc = xmsg_decode_body(&h, f + XFER_HDR_LEN, out, &why);
	if (rc && !why)
		return -999; /* a rejection must say why */
	return rc;
}

static void roundtrips(void)
{
	struct xmsg m, out;

	memset(&m, 0, sizeof(m));
	m.type = XM_HELLO;
	m.u.hello.version = 1;
	memset(m.u.hello.nonce, 7, XFER_NONCE_LEN);
	strcpy(m.u.hello.id, "alice@host");
	CHECK_OK(roundtrip(&m, &out));
	CHECK(!memcmp(&m, &out, sizeof(m)));

	memset(&m, 0, sizeof(m));
	m.type = XM_META;
	m.u.meta.size = 1ull << 40;
	m.u.meta.mtime_s = -5;
	m.u.meta.mtime_ns = 999999999;
	m.u.meta.mode = 04755;
	m.u.meta.flags = XFER_META_FORCE | XFER_META_NO_RESUME;
	memset(m.u.meta.name, 'n', XFER_NAME_MAX);
	CHECK_OK(roundtrip(&m, &out));
	CHECK(!memcmp(&m, &out, sizeof(m)));

	memset(&m, 0, sizeof(m));
	m.type = XM_ACCEPT;
	m.u.accept.offset = 12345;
	memset(m.u.accept.prefix_sha, 3, XFER_SHA_LEN);
	m.u.accept.chunk_size = 4 << 20;
	m.u.accept.chunk_count = 8;
	/* field by field: assigning a compound literal may copy its padding,
	 * which the memcmp below would then compare (seen at -O0 under ASan) */
	m.u.accept.window.addr = 0x7f0000001000ull;
	m.u.accept.window.length = 32 << 20;
	m.u.accept.window.rkey = 0xdeadbeef;
	CHECK_OK(roundtrip(&m, &out));
	CHECK(!memcmp(&m, &out, sizeof(m)));

	memset(&m, 0, sizeof(m));
	m.type = XM_RESULT;
	memset(m.u.result.sha, 1, 32);
	memset(m.u.result.receipt, 2, 32);
	strcpy(m.u.result.name, "file.txt");
	CHECK_OK(roundtrip(&m, &out));
	CHECK(!memcmp(&m, &out, sizeof(m)));

	xmsg_error(&m, XE_NOSPACE, "disk %s", "full");
	CHECK_OK(roundtrip(&m, &out));
	CHECK_EQ(out.u.error.code, XE_NOSPACE);
	CHECK(!strcmp(out.u.error.text, "disk full"));

	for (int t = XM_CHALLENGE; t <= XM_TYPE_MAX; t++) {
		if (t == XM_META || t == XM_ACCEPT || t == XM_RESULT || t == XM_ERROR)
			continue;
		memset(&m, 0, sizeof(m));
		m.type = (enum xmsg_type)t;
		m.u.credit.slot = 3;
		CHECK_OK(roundtrip(&m, &out));
		CHECK_EQ(out.type, t);
	}
}

static void encoder_refuses(void)
{
	struct xmsg m;
	uint8_t f[XFER_FRAME_MAX];

	memset(&m, 0, sizeof(m));
	m.type = (enum xmsg_type)99;
	CHECK_EQ(xmsg_encode(&m, f, sizeof(f)), -EINVAL);
	m.type = XM_HELLO;
	memset(m.u.hello.id, 'x', XFER_ID_MAX); /* the longest id */
	m.u.hello.id[XFER_ID_MAX] = 0;
	CHECK(xmsg_encode(&m, f, sizeof(f)) > 0);
	m.type = XM_META;
	memset(m.u.meta.name, 'x', sizeof(m.u.meta.name) - 1);
	CHECK(xmsg_encode(&m, f, 20) == -EMSGSIZE);
}

static void header_rejections(void)
{
	struct xmsg m = { .type = XM_BYE }, out;
	uint8_t f[XFER_FRAME_MAX + 64];
	int len = xmsg_encode(&m, f, sizeof(f));

	CHECK_EQ(len, XFER_HDR_LEN);
	CHECK_OK(decode_raw(f, (size_t)len, &out));
	CHECK_EQ(decode_raw(f, 0, &out), -EBADMSG);
	CHECK_EQ(decode_raw(f, XFER_HDR_LEN - 1, &out), -EBADMSG);
	f[0] ^= 1; /* magic */
	CHECK_EQ(decode_raw(f, (size_t)len, &out), -EBADMSG);
	f[0] ^= 1;
	f[6] = 1; /* reserved */
	CHECK_EQ(decode_raw(f, (size_t)len, &out), -EBADMSG);
	f[6] = 0;
	f[5] = 0x80; /* unknown flag */
	CHECK_EQ(decode_raw(f, (size_t)len, &out), -EBADMSG);
	f[5] = XFER_FLAG_SEALED; /* sealed, but no tag follows */
	CHECK_EQ(decode_raw(f, (size_t)len, &out), -EBADMSG);
	memset(f + len, 0, XFER_TAG_LEN);
	CHECK_OK(decode_raw(f, (size_t)len + XFER_TAG_LEN, &out));
	f[5] = 0;
	f[4] = 0; /* type 0 */
	CHECK_EQ(decode_raw(f, (size_t)len, &out), -EBADMSG);
	f[4] = XM_TYPE_MAX + 1;
	CHECK_EQ(decode_raw(f, (size_t)len, &out), -EBADMSG);
	f[4] = XM_BYE;
	f[8] = 1; /* body_len 1, but none there */
	CHECK_EQ(decode_raw(f, (size_t)len, &out), -EBADMSG);
	f[8] = 0;
	f[10] = 1; /* body_len 65536: over the limit */
	CHECK_EQ(decode_raw(f, (size_t)len, &out), -EBADMSG);
}

/* Re-encode m, then change byte off of the frame to v (or cut/extend it). */
static int decode_modified(const struct xmsg *m, int off, int v, int extra)
{
	uint8_t f[XFER_FRAME_MAX + 16];
	struct xmsg out;
	int len = xmsg_encode(m, f, XFER_FRAME_MAX);
	struct wcur w;

	if (len < 0)
		return len;
	if (off >= 0)
		f[off] = (uint8_t)v;
	if (extra) {
		/* Grow or shrink the body and fix body_len so only the body is wrong. */
		len += extra;
		w_init(&w, f + 8, 4);
		w_u32(&w, (uint32_t)(len - XFER_HDR_LEN));
		if (extra > 0)
			memset(f + len - extra, 0, (size_t)extra);
	}
	return decode_raw(f, (size_t)len, &out);
}

static void body_rejections(void)
{
	struct xmsg m;
	const int B = XFER_HDR_LEN;

	/* Every type, one byte short and one byte long. */
	for (int t = 1; t <= XM_TYPE_MAX; t++) {
		memset(&m, 0, sizeof(m));
		m.type = (enum xmsg_type)t;
		if (t == XM_HELLO)
			strcpy(m.u.hello.id, "id");
		if (t == XM_META)
			strcpy(m.u.meta.name, "n");
		if (t == XM_ACCEPT)
			m.u.accept.window.length = 1;
		CHECK_EQ(decode_modified(&m, -1, 0, 1), -EBADMSG);
		if (t != XM_AUTH_OK && t != XM_KEEPALIVE && t != XM_BYE)
			CHECK_EQ(decode_modified(&m, -1, 0, -1), -EBADMSG);
	}

	memset(&m, 0, sizeof(m));
	m.type = XM_HELLO;
	strcpy(m.u.hello.id, "ok");
	CHECK_OK(decode_modified(&m, -1, 0, 0));
	CHECK_EQ(decode_modified(&m, B + 2 + 32 + 1, ' ', 0), -EBADMSG); /* space in id */
	CHECK_EQ(decode_modified(&m, B + 2 + 32 + 1, 0, 0), -EBADMSG);   /* NUL in id */
	CHECK_EQ(decode_modified(&m, B + 2 + 32, 0, -2), -EBADMSG);      /* empty id */
	CHECK_EQ(decode_modified(&m, B + 2 + 32, 200, 0), -EBADMSG);     /* id length lies */

	memset(&m, 0, sizeof(m));
	m.type = XM_META;
	strcpy(m.u.meta.name, "a");
	CHECK_OK(decode_modified(&m, -1, 0, 0));
	CHECK_EQ(decode_modified(&m, B + 7, 0x80, 0), -EBADMSG);      /* size > INT64_MAX */
	CHECK_EQ(decode_modified(&m, B + 16 + 3, 0x40, 0), -EBADMSG); /* ns >= 1e9 */
	CHECK_EQ(decode_modified(&m, B + 20 + 1, 0x10, 0), -EBADMSG); /* mode beyond 07777 */
	CHECK_EQ(decode_modified(&m, B + 24, 0x04, 0), -EBADMSG);     /* unknown flag */
	CHECK_EQ(decode_modified(&m, B + 30, 0, 0), -EBADMSG);        /* NUL in name */
	CHECK_EQ(decode_modified(&m, B + 29, 1, 0), -EBADMSG);        /* name length lies */

	memset(&m, 0, sizeof(m));
	m.type = XM_ACCEPT;
	m.u.accept.chunk_size = 1 << 20;
	m.u.accept.chunk_count = 4;
	m.u.accept.window.length = 4 << 20;
	CHECK_OK(decode_modified(&m, -1, 0, 0));
	m.u.accept.chunk_count = XFER_MAX_CHUNKS + 1;
	CHECK_EQ(decode_modified(&m, -1, 0, 0), -EBADMSG);
	m.u.accept.chunk_count = 4;
	m.u.accept.window.length = (4 << 20) - 1;
	CHECK_EQ(decode_modified(&m, -1, 0, 0), -EBADMSG);
	m.u.accept.window.length = 1ull << 40;
	m.u.accept.chunk_size = XFER_MIN_CHUNK - 1;
	CHECK_EQ(decode_modified(&m, -1, 0, 0), -EBADMSG);
	m.u.accept.chunk_size = XFER_MAX_CHUNK + 1;
	CHECK_EQ(decode_modified(&m, -1, 0, 0), -EBADMSG);
	m.u.accept.chunk_count = 0; /* no window: sizes do not matter */
	CHECK_OK(decode_modified(&m, -1, 0, 0));

	/* Peer text is made safe for a terminal, not refused. */
	struct xmsg out;
	xmsg_error(&m, XE_IO, "bad\033[2Jthing\n");
	CHECK_OK(roundtrip(&m, &out));
	CHECK(!strcmp(out.u.error.text, "bad?[2Jthing?"));
}

/* Random frames and random mutations of valid ones: never a crash (ASan
 * and UBSan builds run this), and whatever is accepted re-encodes. */
static void fuzz(void)
{
	uint8_t f[XFER_FRAME_MAX + 64];
	struct xmsg m, out;
	unsigned seed = 12345;
	int accepted = 0;

	for (int i = 0; i < 200000; i++) {
		size_t len;
		if (i % 2) {
			len = (size_t)rand_r(&seed) % sizeof(f);
			for (size_t j = 0; j < len; j++)
				f[j] = (uint8_t)rand_r(&seed);
		} else {
			memset(&m, 0, sizeof(m));
			m.type = (enum xmsg_type)(1 + rand_r(&seed) % XM_TYPE_MAX);
			strcpy(m.u.hello.id, "x");
			int n = xmsg_encode(&m, f, sizeof(f));
			CHECK(n > 0 || m.type == XM_META || m.type == XM_RESULT ||
			      m.type == XM_ERROR);
			len = n > 0 ? (size_t)n : 12;
			for (int k = rand_r(&seed) % 4; k >= 0; k--)
				f[(size_t)rand_r(&seed) % len] = (uint8_t)rand_r(&seed);
		}
		if (decode_raw(f, len, &out) == 0) {
			accepted++;
			uint8_t g[XFER_FRAME_MAX];
			CHECK(xmsg_encode(&out, g, sizeof(g)) > 0);
		}
	}
	CHECK(accepted > 0);
}

TEST_MAIN(TEST(roundtrips), TEST(encoder_refuses), TEST(header_rejections), TEST(body_rejections),
	  TEST(fuzz))
