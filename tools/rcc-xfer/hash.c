/* SPDX-License-Identifier: BSD-3-Clause */
#include "hash.h"

#include <errno.h>
#include <openssl/evp.h>

int sha256_init(struct sha256 *h)
{
	EVP_MD_CTX *c = EVP_MD_CTX_new();

	if (!c)
		return -ENOMEM;
	if (EVP_DigestInit_ex(c, EVP_sha256(), NULL) != 1) {
		EVP_MD_CTX_free(c);
		return -EIO;
	}
	h->ctx = c;
	return 0;
}

int sha256_reset(struct sha256 *h)
{
	return EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) == 1 ? 0 : -EIO;
}

int sha256_update(struct sha256 *h, const void *p, size_t n)
{
	if (!n)
		return 0;
	return EVP_DigestUpdate(h->ctx, p, n) == 1 ? 0 : -EIO;
}

int sha256_peek(const struct sha256 *h, uint8_t out[SHA256_LEN])
{
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	unsigned int len = 0;
	int rc = -EIO;

	if (!c)
		return -ENOMEM;
	if (EVP_MD_CTX_copy_ex(c, h->ctx) == 1 && EVP_DigestFinal_ex(c, out, &len) == 1 &&
	    len == SHA256_LEN)
		rc = 0;
	EVP_MD_CTX_free(c);
	return rc;
}

void sha256_free(struct sha256 *h)
{
	EVP_MD_CTX_free(h->ctx);
	h->ctx = NULL;
}

char *hex_encode(const uint8_t *p, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * n] = 0;
	return out;
}
