/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Small helpers that the library and the programs built on it share, so that
 * every wire format and every measurement uses one copy of each:
 *  - explicit little-endian loads and stores for anything that crosses a wire
 *    (never a raw struct: peers may differ in byte order and padding);
 *  - a monotonic clock in nanoseconds.
 * All are thread-safe and never block.
 */
#ifndef RCC_UTIL_H
#define RCC_UTIL_H

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

static inline void rcc_put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline void rcc_put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Load a little-endian value from p (unaligned allowed). */
static inline uint16_t rcc_get_le16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

static inline uint32_t rcc_get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
	       ((uint32_t)p[3] << 24);
}

static inline uint64_t rcc_get_le64(const uint8_t *p)
{
	return (uint64_t)rcc_get_le32(p) | ((uint64_t)rcc_get_le32(p + 4) << 32);
}

/* Nanoseconds on the monotonic clock (CLOCK_MONOTONIC): only differences mean
 * anything. Never fails, never blocks. */
uint64_t rcc_now_ns(void);

#ifdef __cplusplus
}
#endif

#endif /* RCC_UTIL_H */
