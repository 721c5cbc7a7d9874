/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Pre-shared key, mutual challenge-response and everything derived from the
 * key (HMAC-SHA256 throughout).
 *
 * Handshake (both nonces fresh, both connection tokens from the connect /
 * accept private data, so a proof is bound to this one connection):
 *   S -> R  HELLO     nonce_s, id
 *   R -> S  CHALLENGE nonce_r, proof_r = HMAC(K, "receiver proof" | transcript)
 *   S -> R  AUTH      proof_s = HMAC(K, "sender proof" | transcript)
 *   R -> S  AUTH_OK   (sealed: the first message under the session key)
 * The sender checks proof_r before it reveals its own proof, the receiver
 * checks proof_s before it registers or advertises any memory. The two labels
 * keep a proof from being reflected back. After AUTH_OK every frame carries a
 * tag HMAC(Ks, dir | seq | frame) with Ks = HMAC(K, "session key" | transcript),
 * so control messages cannot be forged, replayed or reordered.
 */
#ifndef XFER_AUTH_H
#define XFER_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"

#define XFER_KEY_MIN 16
#define XFER_KEY_MAX 1024
#define XFER_TOKEN_LEN 16
#define XFER_ENV_KEY "RCC_XFER_KEY"

struct xfer_key {
	uint8_t b[XFER_KEY_MAX];
	size_t len;
};

/*
 * Load the key from path (whole file, trailing white space removed) or, when
 * path is NULL, from $RCC_XFER_KEY. On failure returns a negative errno and
 * writes a sentence for the user into err. A key file readable by group or
 * others is accepted with *warn set.
 */
int key_load(const char *path, struct xfer_key *k, int *warn, char *err, size_t errlen);
void key_wipe(struct xfer_key *k);

/* Fill p with n bytes from a cryptographically secure source. 0 or -EIO. */
int random_bytes(void *p, size_t n);

/* Write a fresh key (64 hex digits and a newline) to path, mode 0600, never
 * replacing an existing file. 0 or a negative errno. */
int key_generate(const char *path);

/* Connection private data: "RCXF", u16 version, u16 0, token. */
#define XFER_PDATA_LEN (8 + XFER_TOKEN_LEN)
void pdata_encode(const uint8_t token[XFER_TOKEN_LEN], uint8_t out[XFER_PDATA_LEN]);
/* 0, or -EPROTO (not rcc-xfer) / -EPROTONOSUPPORT (other version). */
int pdata_decode(const void *p, size_t len, uint8_t token[XFER_TOKEN_LEN]);

struct auth_transcript {
	uint8_t token_s[XFER_TOKEN_LEN];
	uint8_t token_r[XFER_TOKEN_LEN];
	uint8_t nonce_s[XFER_NONCE_LEN];
	uint8_t nonce_r[XFER_NONCE_LEN];
	char id[XFER_ID_MAX + 1];
};

enum auth_role {
	AUTH_SENDER = 'S',
	AUTH_RECEIVER = 'R'
};

/* The proof a side of that role presents. */
int auth_proof(const struct xfer_key *k, enum auth_role role, const struct auth_transcript *t,
	       uint8_t out[XFER_MAC_LEN]);
int auth_session_key(const struct xfer_key *k, const struct auth_transcript *t,
		     uint8_t out[XFER_MAC_LEN]);
/* Constant-time comparison: 1 when equal. */
int auth_equal(const uint8_t *a, const uint8_t *b, size_t n);

/* Receipt for a stored file: HMAC(K, "receipt" | id | sha256 | size | name). */
int auth_receipt(const struct xfer_key *k, const char *id, const uint8_t sha[XFER_SHA_LEN],
		 uint64_t size, const char *name, uint8_t out[XFER_MAC_LEN]);

/* Tag of a frame sent in direction dir ('S' sender->receiver, 'R' back) as
 * message number seq of that direction. */
int auth_frame_tag(const uint8_t skey[XFER_MAC_LEN], uint8_t dir, uint64_t seq,
		   const uint8_t *frame, size_t len, uint8_t out[XFER_TAG_LEN]);

#endif
