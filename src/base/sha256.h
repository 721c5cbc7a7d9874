/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * SHA-256 and HMAC-SHA256 (FIPS 180-4, RFC 2104), small and dependency-free:
 * the bootstrap authenticates ranks with them, and the library links no
 * crypto library. Not constant-time beyond what HMAC needs; compare tags
 * with rcci_ct_equal().
 */
#ifndef RCC_CORE_SHA256_H
#define RCC_CORE_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RCCI_SHA256_LEN 32

struct rcci_sha256 {
	uint32_t h[8];
	uint64_t bytes;
	uint8_t buf[64];
	size_t fill;
};

void rcci_sha256_init(struct rcci_sha256 *s);
void rcci_sha256_update(struct rcci_sha256 *s, const void *p, size_t n);
void rcci_sha256_final(struct rcci_sha256 *s, uint8_t out[RCCI_SHA256_LEN]);

/* HMAC over the concatenation of n parts (ptr, len pairs). */
struct rcci_iov {
	const void *p;
	size_t len;
};
void rcci_hmac_sha256(const void *key, size_t keylen, const struct rcci_iov *parts, int n,
		      uint8_t out[RCCI_SHA256_LEN]);

/* Equal without an early exit, so timing does not tell how much matched. */
bool rcci_ct_equal(const void *a, const void *b, size_t n);

#endif
