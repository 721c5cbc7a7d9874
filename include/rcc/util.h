/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Small helpers that the library and the programs built on it share, so that
 * every wire format and every measurement uses one copy of each:
 *  - explicit little-endian loads and stores for anything that crosses a wire
 *    (never a raw struct: peers may differ in byte order and padding);
 *  - a monotonic clock in nanoseconds;
 *  - escaping of peer-supplied text before it is printed or logged.
 * All are thread-safe and never block.
 */
#ifndef RCC_UTIL_H
#define RCC_UTIL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Store v at p[0..1] / p[0..3] / p[0..7], least significant byte first. p need
 * not be aligned. */
static inline void rcc_put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

/* As rcc_put_le16, four bytes. */
static inline void rcc_put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* As rcc_put_le16, eight bytes. Two halves: compilers merge each into one
 * store, where the loop of eight byte stores stayed a loop (a frame header
 * encode spent half its instructions in it). */
static inline void rcc_put_le64(uint8_t *p, uint64_t v)
{
	rcc_put_le32(p, (uint32_t)v);
	rcc_put_le32(p + 4, (uint32_t)(v >> 32));
}

/* Load a little-endian value from p (unaligned allowed). */
static inline uint16_t rcc_get_le16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

/* As rcc_get_le16, four bytes. */
static inline uint32_t rcc_get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
	       ((uint32_t)p[3] << 24);
}

/* As rcc_get_le16, eight bytes. */
static inline uint64_t rcc_get_le64(const uint8_t *p)
{
	return (uint64_t)rcc_get_le32(p) | ((uint64_t)rcc_get_le32(p + 4) << 32);
}

/* Nanoseconds on the monotonic clock (CLOCK_MONOTONIC): only differences mean
 * anything. Never fails, never blocks. */
uint64_t rcc_now_ns(void);

/*
 * Text a peer sent (a file name, a reject reason, an address, private data),
 * made safe to print or log: the result is one line that cannot move the
 * cursor, change colours, forge a log line or reorder text.
 *  - printable ASCII and well-formed UTF-8 letters are copied;
 *  - a backslash becomes two; C0 controls (newline, ESC, ...), DEL, the C1
 *    controls (U+0080..U+009F), bidirectional overrides and isolates
 *    (U+202A..U+202E, U+2066..U+2069) and every byte that is not part of
 *    well-formed UTF-8 become \xHH per byte;
 *  - at most srclen bytes of src are read (it stops early at a NUL byte).
 * dst always ends up NUL-terminated when dstlen > 0. When the escaped text does
 * not fit, it is cut at a character boundary and ends with "...".
 * Returns the length written (excluding the NUL). Never fails, never blocks,
 * thread-safe; src and dst must not overlap.
 */
size_t rcc_text_escape(char *dst, size_t dstlen, const void *src, size_t srclen);

#ifdef __cplusplus
}
#endif

#endif /* RCC_UTIL_H */
