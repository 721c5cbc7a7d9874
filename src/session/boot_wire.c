/* SPDX-License-Identifier: BSD-3-Clause */
#include "boot_wire.h"

#include <errno.h>
#include <string.h>

#include "rcc/bootstrap.h"

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

void rcci_boot_hdr_encode(uint8_t type, uint32_t len, uint8_t out[BOOT_HDR_LEN])
{
	out[0] = BOOT_MAGIC >> 8;
	out[1] = BOOT_MAGIC & 0xff;
	out[2] = BOOT_VERSION;
	out[3] = type;
	put32(out + 4, len);
}

int rcci_boot_hdr_decode(const uint8_t in[BOOT_HDR_LEN], struct boot_hdr *h)
{
	if ((unsigned)(in[0] << 8 | in[1]) != BOOT_MAGIC)
		return -EPROTO;
	if (in[2] != BOOT_VERSION)
		return -EPROTONOSUPPORT;
	if (in[3] < BOOT_CHALLENGE || in[3] > BOOT_ABORT)
		return -EPROTO;
	h->type = in[3];
	h->len = get32(in + 4);
	return 0;
}

size_t rcci_boot_payload_max(uint8_t type, uint32_t size)
{
	switch (type) {
	case BOOT_CHALLENGE:
		return BOOT_CHALLENGE_LEN;
	case BOOT_HELLO:
		return BOOT_HELLO_LEN;
	case BOOT_WELCOME:
		return BOOT_WELCOME_LEN;
	case BOOT_CONTRIB:
		return 4 + RCC_BOOTSTRAP_BLOB_MAX;
	case BOOT_RESULT:
		if (size > RCC_BOOTSTRAP_MAX_RANKS)
			return 0;
		return 8 + (size_t)size * (2 + RCC_BOOTSTRAP_BLOB_MAX);
	case BOOT_ABORT:
		return BOOT_ABORT_MAX;
	}
	return 0;
}

long rcci_boot_frame_need(const uint8_t *buf, size_t fill, size_t max, struct boot_hdr *h)
{
	if (fill < BOOT_HDR_LEN)
		return BOOT_HDR_LEN;
	int rc = rcci_boot_hdr_decode(buf, h);

	if (rc)
		return rc;
	if (h->len > max)
		return -EPROTO;
	return (long)(BOOT_HDR_LEN + (size_t)h->len);
}

void rcci_boot_challenge_encode(const struct boot_challenge *c, uint8_t out[BOOT_CHALLENGE_LEN])
{
	memcpy(out, c->nonce, BOOT_NONCE_LEN);
	out[BOOT_NONCE_LEN] = c->flags;
}

int rcci_boot_challenge_decode(const uint8_t *p, size_t len, struct boot_challenge *c)
{
	if (len != BOOT_CHALLENGE_LEN || (p[BOOT_NONCE_LEN] & ~BOOT_FLAG_AUTH))
		return -EPROTO;
	memcpy(c->nonce, p, BOOT_NONCE_LEN);
	c->flags = p[BOOT_NONCE_LEN];
	return 0;
}

void rcci_boot_hello_encode(const struct boot_hello *h, uint8_t out[BOOT_HELLO_LEN])
{
	put32(out, h->rank);
	put32(out + 4, h->size);
	memcpy(out + 8, h->nonce, BOOT_NONCE_LEN);
	memcpy(out + 8 + BOOT_NONCE_LEN, h->proof, BOOT_TAG_LEN);
}

int rcci_boot_hello_decode(const uint8_t *p, size_t len, struct boot_hello *h)
{
	if (len != BOOT_HELLO_LEN)
		return -EPROTO;
	h->rank = get32(p);
	h->size = get32(p + 4);
	if (!h->size || h->size > RCC_BOOTSTRAP_MAX_RANKS || h->rank >= h->size)
		return -EPROTO;
	memcpy(h->nonce, p + 8, BOOT_NONCE_LEN);
	memcpy(h->proof, p + 8 + BOOT_NONCE_LEN, BOOT_TAG_LEN);
	return 0;
}

size_t rcci_boot_contrib_encode(uint32_t round, const void *blob, size_t bloblen, uint8_t *out)
{
	put32(out, round);
	if (bloblen)
		memcpy(out + 4, blob, bloblen);
	return 4 + bloblen;
}

int rcci_boot_contrib_decode(const uint8_t *p, size_t len, uint32_t *round, const uint8_t **blob,
			     size_t *bloblen)
{
	if (len < 4 || len - 4 > RCC_BOOTSTRAP_BLOB_MAX)
		return -EPROTO;
	*round = get32(p);
	*blob = p + 4;
	*bloblen = len - 4;
	return 0;
}

size_t rcci_boot_result_encode(uint32_t round, uint32_t n, const uint8_t *blobs, size_t stride,
			       const size_t *lens, uint8_t *out)
{
	size_t off = 8;

	put32(out, round);
	put32(out + 4, n);
	for (uint32_t i = 0; i < n; i++) {
		out[off] = (uint8_t)(lens[i] >> 8);
		out[off + 1] = (uint8_t)lens[i];
		if (lens[i])
			memcpy(out + off + 2, blobs + (size_t)i * stride, lens[i]);
		off += 2 + lens[i];
	}
	return off;
}

int rcci_boot_result_decode(const uint8_t *p, size_t len, uint32_t round, uint32_t n, void *out,
			    size_t stride, size_t *lens)
{
	size_t off = 8;
	bool too_long = false;

	if (len < 8 || get32(p) != round || get32(p + 4) != n)
		return -EPROTO;
	for (uint32_t i = 0; i < n; i++) {
		if (len - off < 2)
			return -EPROTO;
		size_t l = (size_t)p[off] << 8 | p[off + 1];
		if (l > RCC_BOOTSTRAP_BLOB_MAX || len - off - 2 < l)
			return -EPROTO;
		too_long |= l > stride;
		off += 2 + l;
	}
	if (off != len)
		return -EPROTO;
	if (too_long)
		return -EMSGSIZE;
	off = 8;
	for (uint32_t i = 0; i < n; i++) {
		size_t l = (size_t)p[off] << 8 | p[off + 1];
		if (l)
			memcpy((uint8_t *)out + (size_t)i * stride, p + off + 2, l);
		lens[i] = l;
		off += 2 + l;
	}
	return 0;
}
