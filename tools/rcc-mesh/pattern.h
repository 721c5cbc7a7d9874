/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Payload pattern. Every data message is a pure function of (sender rank,
 * receiver rank, stream, label), so the receiver can recompute it and check
 * every byte: a corrupted, misdirected, lost, duplicated or reordered message
 * cannot pass. Messages of 16 bytes or more start with a readable header
 * (label, ranks, stream) so a mismatch can also say what arrived instead.
 */
#ifndef RCC_MESH_PATTERN_H
#define RCC_MESH_PATTERN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pat_id {
	uint16_t src, dst;
	uint8_t stream;
	uint64_t label; /* the message's sequence number as the sender labelled it */
};

#define PAT_HDR_LEN 16

void pattern_fill(void *buf, size_t len, const struct pat_id *id);

/* -1 if buf holds exactly the message id describes, else the offset of the
 * first differing byte (and its expected value in *want). */
long pattern_check(const void *buf, size_t len, const struct pat_id *id, uint8_t *want);

/* What a message's header claims, if it has a plausible one. */
bool pattern_header(const void *buf, size_t len, struct pat_id *claimed);

#endif
