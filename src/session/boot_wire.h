/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The env bootstrap's rendezvous frames (rank 0 <-> every other rank, TCP).
 * Pure encoders and decoders, fuzzed (tests/fuzz/fuzz_boot.c): every byte a
 * peer sends passes through a decoder here before it means anything.
 *
 * A frame: magic "RB", version, type, payload length (all big-endian), then
 * the payload. Once a job secret authenticated the connection, every payload
 * is followed by a 32-byte HMAC tag (counted in the length).
 *
 *   CHALLENGE  0->k  nonce_s[32], flags (1: rank 0 requires the job secret)
 *   HELLO      k->0  rank u32, size u32, nonce_c[32], proof[32] (zeros: none)
 *   WELCOME    0->k  proof[32] (rank 0's own proof, over the run id too), run[32]
 *                    (the run id rank 0 drew at open, for every rank alike:
 *                    rcc_bootstrap_derive_key()); all zeros without a secret
 *   CONTRIB    k->0  round u32, blob
 *   RESULT     0->k  round u32, n u32, n x (len u16, blob)
 *   ABORT      0->k  why rank 0 gave up: text (at most BOOT_ABORT_MAX)
 */
#ifndef RCC_SESSION_BOOT_WIRE_H
#define RCC_SESSION_BOOT_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BOOT_MAGIC 0x5242u
/* 2: the WELCOME grew from 32 to 64 bytes (the run id). A job that mixes
 * releases is told so by name instead of "a malformed frame". */
#define BOOT_VERSION 2
#define BOOT_HDR_LEN 8
#define BOOT_NONCE_LEN 32
#define BOOT_TAG_LEN 32
#define BOOT_ABORT_MAX 512
#define BOOT_CHALLENGE_LEN (BOOT_NONCE_LEN + 1)
#define BOOT_HELLO_LEN (8 + BOOT_NONCE_LEN + BOOT_TAG_LEN)
#define BOOT_RUN_LEN 32
#define BOOT_WELCOME_LEN (BOOT_TAG_LEN + BOOT_RUN_LEN)
#define BOOT_FLAG_AUTH 1u

enum boot_type {
	BOOT_CHALLENGE = 1,
	BOOT_HELLO,
	BOOT_WELCOME,
	BOOT_CONTRIB,
	BOOT_RESULT,
	BOOT_ABORT,
};

struct boot_hdr {
	uint8_t type;
	uint32_t len;
};

struct boot_challenge {
	uint8_t nonce[BOOT_NONCE_LEN];
	uint8_t flags;
};

struct boot_hello {
	uint32_t rank, size;
	uint8_t nonce[BOOT_NONCE_LEN];
	uint8_t proof[BOOT_TAG_LEN];
};

void rcci_boot_hdr_encode(uint8_t type, uint32_t len, uint8_t out[BOOT_HDR_LEN]);
/* 0; -EPROTONOSUPPORT: our magic with another version (another rcc
 * release); -EPROTO: wrong magic or an unknown type. */
int rcci_boot_hdr_decode(const uint8_t in[BOOT_HDR_LEN], struct boot_hdr *h);
/* The longest payload (tag excluded) a frame of this type may carry in a
 * job of size ranks; 0 for an unknown type. */
size_t rcci_boot_payload_max(uint8_t type, uint32_t size);

/*
 * How long the frame starting at buf is, header included, given fill bytes
 * of it so far: BOOT_HDR_LEN while the header is incomplete, else header +
 * payload (more than fill: read on). -EPROTO for a bad header or a payload
 * longer than max (rank 0 knows what it expects: nothing longer is read),
 * -EPROTONOSUPPORT for another protocol version.
 */
long rcci_boot_frame_need(const uint8_t *buf, size_t fill, size_t max, struct boot_hdr *h);

void rcci_boot_challenge_encode(const struct boot_challenge *c, uint8_t out[BOOT_CHALLENGE_LEN]);
int rcci_boot_challenge_decode(const uint8_t *p, size_t len, struct boot_challenge *c);
void rcci_boot_hello_encode(const struct boot_hello *h, uint8_t out[BOOT_HELLO_LEN]);
int rcci_boot_hello_decode(const uint8_t *p, size_t len, struct boot_hello *h);

/* CONTRIB: out needs 4 + bloblen bytes. Decoding points *blob into p. */
size_t rcci_boot_contrib_encode(uint32_t round, const void *blob, size_t bloblen, uint8_t *out);
int rcci_boot_contrib_decode(const uint8_t *p, size_t len, uint32_t *round, const uint8_t **blob,
			     size_t *bloblen);

/* RESULT: out needs 8 + sum(2 + lens[i]) bytes; returns the length. */
size_t rcci_boot_result_encode(uint32_t round, uint32_t n, const uint8_t *blobs, size_t stride,
			       const size_t *lens, uint8_t *out);
/*
 * Checks the whole payload first (exactly n entries, each <= the blob maximum,
 * nothing left over): -EPROTO when malformed, -EMSGSIZE when an entry is
 * longer than stride; only then copies entry i to out + i * stride and its
 * length to lens[i].
 */
int rcci_boot_result_decode(const uint8_t *p, size_t len, uint32_t round, uint32_t n, void *out,
			    size_t stride, size_t *lens);

#endif
