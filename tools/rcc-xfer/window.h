/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The chunk window: count registered slots of chunk bytes each. The receiver
 * exposes its window for RDMA WRITE; the sender stages file data in a window
 * of the same shape. Which slot a WRITE_WITH_IMM filled, and which chunk of
 * the file it carries, travels in the immediate value.
 */
#ifndef XFER_WINDOW_H
#define XFER_WINDOW_H

#include <stdint.h>

#include "rcc/rcc.h"

struct window {
	uint8_t *mem;
	size_t bytes;
	struct rcc_mr *mr;
	uint32_t chunk;
	uint32_t count;
};

/* count may be 0 (nothing to move): then nothing is allocated. */
int window_create(struct rcc_ctx *ctx, uint32_t chunk, uint32_t count, unsigned access,
		  struct window *w);
void window_destroy(struct window *w);

static inline uint8_t *window_slot(const struct window *w, uint32_t i)
{
	return w->mem + (size_t)i * w->chunk;
}

/* Immediate value: slot in the low 8 bits, chunk sequence (mod 2^24) above. */
#define IMM_SEQ_MASK 0xffffffu
static inline uint32_t imm_encode(uint32_t slot, uint32_t seq)
{
	return (seq & IMM_SEQ_MASK) << 8 | (slot & 0xff);
}
static inline uint32_t imm_slot(uint32_t imm) { return imm & 0xff; }
static inline uint32_t imm_seq(uint32_t imm) { return imm >> 8; }

/* The window a receiver offers for the rest of a file: chunks of at most
 * chunk bytes (smaller for a small remainder, never below XFER_MIN_CHUNK),
 * no more of them than the remainder needs. */
void window_shape(uint64_t remaining, uint32_t chunk, uint32_t count, uint32_t *out_chunk,
		  uint32_t *out_count);

#endif
