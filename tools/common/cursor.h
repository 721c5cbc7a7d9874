/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Bounded little-endian cursors for building and parsing the tools' control
 * messages. A cursor never reads or writes outside its buffer: an overrun sets a flag
 * that the caller checks once at the end, so encoders and decoders stay flat.
 */
#ifndef RCC_TOOLS_CURSOR_H
#define RCC_TOOLS_CURSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <rcc/util.h>

struct wcur {
	uint8_t *p;
	size_t cap, len;
	bool overflow;
};

struct rcur {
	const uint8_t *p;
	size_t len, off;
	bool short_read;
};

static inline void w_init(struct wcur *w, uint8_t *p, size_t cap)
{
	w->p = p;
	w->cap = cap;
	w->len = 0;
	w->overflow = false;
}

static inline void w_bytes(struct wcur *w, const void *src, size_t n)
{
	if (w->overflow || n > w->cap - w->len) {
		w->overflow = true;
		return;
	}
	if (n)
		memcpy(w->p + w->len, src, n);
	w->len += n;
}

static inline void w_u8(struct wcur *w, uint8_t v) { w_bytes(w, &v, 1); }

static inline void w_u16(struct wcur *w, uint16_t v)
{
	uint8_t b[2];
	rcc_put_le16(b, v);
	w_bytes(w, b, 2);
}

static inline void w_u32(struct wcur *w, uint32_t v)
{
	uint8_t b[4];
	rcc_put_le32(b, v);
	w_bytes(w, b, 4);
}

static inline void w_u64(struct wcur *w, uint64_t v)
{
	uint8_t b[8];
	rcc_put_le64(b, v);
	w_bytes(w, b, 8);
}

static inline void r_init(struct rcur *r, const uint8_t *p, size_t len)
{
	r->p = p;
	r->len = len;
	r->off = 0;
	r->short_read = false;
}

/* Pointer to the next n bytes, or NULL (and the flag set) when fewer remain. */
static inline const uint8_t *r_take(struct rcur *r, size_t n)
{
	if (r->short_read || n > r->len - r->off) {
		r->short_read = true;
		return NULL;
	}
	const uint8_t *q = r->p + r->off;
	r->off += n;
	return q;
}

static inline void r_bytes(struct rcur *r, void *dst, size_t n)
{
	const uint8_t *q = r_take(r, n);
	if (q && n)
		memcpy(dst, q, n);
	else if (!q && n)
		memset(dst, 0, n);
}

static inline uint8_t r_u8(struct rcur *r)
{
	const uint8_t *q = r_take(r, 1);
	return q ? q[0] : 0;
}

static inline uint16_t r_u16(struct rcur *r)
{
	const uint8_t *q = r_take(r, 2);
	return q ? rcc_get_le16(q) : 0;
}

static inline uint32_t r_u32(struct rcur *r)
{
	const uint8_t *q = r_take(r, 4);
	return q ? rcc_get_le32(q) : 0;
}

static inline uint64_t r_u64(struct rcur *r)
{
	const uint8_t *q = r_take(r, 8);
	return q ? rcc_get_le64(q) : 0;
}

/* Every byte consumed and none missing. */
static inline bool r_done(const struct rcur *r) { return !r->short_read && r->off == r->len; }

#endif
