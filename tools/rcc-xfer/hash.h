/* SPDX-License-Identifier: BSD-3-Clause */
/* SHA-256 (OpenSSL EVP) for file contents, with a non-destructive peek. */
#ifndef XFER_HASH_H
#define XFER_HASH_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_LEN 32
#define SHA256_HEX_LEN 64

struct sha256 {
	void *ctx; /* EVP_MD_CTX */
};

/* 0 or -ENOMEM. */
int sha256_init(struct sha256 *h);
/* Start over without reallocating. 0 or -EIO. */
int sha256_reset(struct sha256 *h);
int sha256_update(struct sha256 *h, const void *p, size_t n);
/* Digest of everything so far; the state stays usable (a copy is finalised). */
int sha256_peek(const struct sha256 *h, uint8_t out[SHA256_LEN]);
void sha256_free(struct sha256 *h);

/* Lower-case hex of n bytes into out (2n + 1 bytes). Returns out. */
char *hex_encode(const uint8_t *p, size_t n, char *out);

#endif
