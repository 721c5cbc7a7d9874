/* SPDX-License-Identifier: BSD-3-Clause */
/* The bootstrap's pieces that need no network: SHA-256 and HMAC against
 * published vectors, and the rendezvous frames' encoders and decoders. */
#include <stdlib.h>

#include "base/sha256.h"
#include "harness.h"
#include "rcc/bootstrap.h"
#include "session/boot_wire.h"

static void hex(const uint8_t *p, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
}

static void sha256_vectors(void)
{
	uint8_t d[32];
	char h[65];
	struct rcci_sha256 s;

	rcci_sha256_init(&s);
	rcci_sha256_final(&s, d);
	hex(d, 32, h);
	CHECK(!strcmp(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
	rcci_sha256_init(&s);
	rcci_sha256_update(&s, "abc", 3);
	rcci_sha256_final(&s, d);
	hex(d, 32, h);
	CHECK(!strcmp(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
	/* two blocks, fed in odd pieces */
	const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	rcci_sha256_init(&s);
	for (size_t i = 0; i < strlen(m); i += 7)
		rcci_sha256_update(&s, m + i, strlen(m) - i < 7 ? strlen(m) - i : 7);
	rcci_sha256_final(&s, d);
	hex(d, 32, h);
	CHECK(!strcmp(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
}

/* RFC 4231 test cases 1, 2 and 6 (a key longer than a block). */
static void hmac_vectors(void)
{
	uint8_t key[131], d[32];
	char h[65];

	memset(key, 0x0b, 20);
	struct rcci_iov one[] = { { "Hi There", 8 } };
	rcci_hmac_sha256(key, 20, one, 1, d);
	hex(d, 32, h);
	CHECK(!strcmp(h, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"));
	struct rcci_iov two[] = { { "what do ya want ", 16 }, { "for nothing?", 12 } };
	rcci_hmac_sha256("Jefe", 4, two, 2, d);
	hex(d, 32, h);
	CHECK(!strcmp(h, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"));
	memset(key, 0xaa, sizeof(key));
	const char *t = "Test Using Larger Than Block-Size Key - Hash Key First";
	struct rcci_iov six[] = { { t, strlen(t) } };
	rcci_hmac_sha256(key, sizeof(key), six, 1, d);
	hex(d, 32, h);
	CHECK(!strcmp(h, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"));
	CHECK(rcci_ct_equal("abc", "abc", 3));
	CHECK(!rcci_ct_equal("abc", "abd", 3));
}

static void header_round_trip(void)
{
	uint8_t b[BOOT_HDR_LEN];
	struct boot_hdr h;

	rcci_boot_hdr_encode(BOOT_RESULT, 1234, b);
	CHECK_EQ(rcci_boot_hdr_decode(b, &h), 0);
	CHECK_EQ(h.type, BOOT_RESULT);
	CHECK_EQ(h.len, 1234);
	b[0] ^= 1;
	CHECK_EQ(rcci_boot_hdr_decode(b, &h), -EPROTO);
	rcci_boot_hdr_encode(0, 0, b);
	CHECK_EQ(rcci_boot_hdr_decode(b, &h), -EPROTO);
	rcci_boot_hdr_encode(BOOT_ABORT + 1, 0, b);
	CHECK_EQ(rcci_boot_hdr_decode(b, &h), -EPROTO);
	rcci_boot_hdr_encode(BOOT_HELLO, 0, b);
	b[2] = BOOT_VERSION - 1; /* a rank of an older release */
	CHECK_EQ(rcci_boot_hdr_decode(b, &h), -EPROTONOSUPPORT);
	CHECK_EQ(rcci_boot_frame_need(b, sizeof(b), 100, &h), -EPROTONOSUPPORT);
	memcpy(b, "GET / HT", 8); /* an HTTP probe on the rendezvous port */
	CHECK_EQ(rcci_boot_hdr_decode(b, &h), -EPROTO);
	CHECK_EQ(rcci_boot_payload_max(BOOT_RESULT, RCC_BOOTSTRAP_MAX_RANKS + 1), 0);
}

static void hello_checks(void)
{
	struct boot_hello h = { .rank = 3, .size = 8 }, g;
	uint8_t b[BOOT_HELLO_LEN];

	memset(h.nonce, 7, sizeof(h.nonce));
	memset(h.proof, 9, sizeof(h.proof));
	rcci_boot_hello_encode(&h, b);
	CHECK_EQ(rcci_boot_hello_decode(b, sizeof(b), &g), 0);
	CHECK_EQ(g.rank, 3);
	CHECK_EQ(g.size, 8);
	CHECK(!memcmp(g.proof, h.proof, sizeof(g.proof)));
	CHECK_EQ(rcci_boot_hello_decode(b, sizeof(b) - 1, &g), -EPROTO);
	h.rank = 8; /* not below the size */
	rcci_boot_hello_encode(&h, b);
	CHECK_EQ(rcci_boot_hello_decode(b, sizeof(b), &g), -EPROTO);
	h.rank = 0;
	h.size = RCC_BOOTSTRAP_MAX_RANKS + 1;
	rcci_boot_hello_encode(&h, b);
	CHECK_EQ(rcci_boot_hello_decode(b, sizeof(b), &g), -EPROTO);
	struct boot_challenge c = { .flags = BOOT_FLAG_AUTH }, d;
	uint8_t cb[BOOT_CHALLENGE_LEN];
	rcci_boot_challenge_encode(&c, cb);
	CHECK_EQ(rcci_boot_challenge_decode(cb, sizeof(cb), &d), 0);
	CHECK_EQ(d.flags, BOOT_FLAG_AUTH);
	cb[BOOT_NONCE_LEN] = 0x80; /* an unknown flag */
	CHECK_EQ(rcci_boot_challenge_decode(cb, sizeof(cb), &d), -EPROTO);
}

static void result_checks(void)
{
	uint8_t blobs[3 * 16] = "a", out[3 * 16], enc[64];
	size_t lens[3] = { 1, 0, 16 }, got[3] = { 99, 99, 99 };
	memset(blobs + 32, 'z', 16);
	size_t n = rcci_boot_result_encode(5, 3, blobs, 16, lens, enc);
	CHECK_EQ(n, 8 + 2 + 1 + 2 + 2 + 16);
	CHECK_EQ(rcci_boot_result_decode(enc, n, 5, 3, out, 16, got), 0);
	CHECK_EQ(got[0], 1);
	CHECK_EQ(got[1], 0);
	CHECK_EQ(got[2], 16);
	CHECK(out[0] == 'a' && out[32] == 'z' && out[47] == 'z');
	/* nothing is written when anything is wrong */
	memset(got, 0, sizeof(got));
	CHECK_EQ(rcci_boot_result_decode(enc, n, 6, 3, out, 16, got), -EPROTO); /* round */
	CHECK_EQ(rcci_boot_result_decode(enc, n, 5, 4, out, 16, got), -EPROTO); /* count */
	CHECK_EQ(rcci_boot_result_decode(enc, n - 1, 5, 3, out, 16, got), -EPROTO);
	CHECK_EQ(rcci_boot_result_decode(enc, n, 5, 3, out, 8, got), -EMSGSIZE); /* stride */
	enc[n] = 0;
	CHECK_EQ(rcci_boot_result_decode(enc, n + 1, 5, 3, out, 16, got), -EPROTO); /* trailing */
	CHECK_EQ(got[0] + got[1] + got[2], 0);
	const uint8_t *blob;
	size_t bl;
	uint32_t round;
	CHECK_EQ(rcci_boot_contrib_encode(2, "xyz", 3, enc), 7);
	CHECK_EQ(rcci_boot_contrib_decode(enc, 7, &round, &blob, &bl), 0);
	CHECK(round == 2 && bl == 3 && !memcmp(blob, "xyz", 3));
	CHECK_EQ(rcci_boot_contrib_decode(enc, 3, &round, &blob, &bl), -EPROTO);
}

TEST_MAIN(TEST(sha256_vectors), TEST(hmac_vectors), TEST(header_round_trip), TEST(hello_checks),
	  TEST(result_checks))
