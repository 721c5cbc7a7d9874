/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The receiver's resume record, ".NAME.rcc-state" next to ".NAME.rcc-part":
 * which source it belongs to (size and modification time as the sender
 * reported them) and how long a prefix of the partial file is persisted
 * (fdatasync'ed) and hashed, with that prefix's SHA-256. The record carries
 * its own checksum, so a torn or foreign file reads as "no record" and the
 * transfer starts over rather than trusting it.
 */
#ifndef XFER_RESUME_H
#define XFER_RESUME_H

#include <stdbool.h>
#include <stdint.h>

#include "hash.h"

struct resume_state {
	uint64_t size;
	int64_t mtime_s;
	uint32_t mtime_ns;
	uint64_t done; /* persisted and hashed prefix */
	uint8_t prefix_sha[SHA256_LEN];
};

#define RESUME_RECORD_LEN 104

void resume_encode(const struct resume_state *st, uint8_t out[RESUME_RECORD_LEN]);
/* 0, or -EBADMSG for anything but an intact record of this version. */
int resume_decode(const uint8_t *in, size_t len, struct resume_state *st);

/* Write the record at offset 0 of fd and make it durable. 0 or -errno. */
int resume_write(int fd, const struct resume_state *st);
/* 0, -ENODATA (empty or damaged), or -errno. */
int resume_read(int fd, struct resume_state *st);

/* The record belongs to a source of this size and modification time. */
bool resume_matches(const struct resume_state *st, uint64_t size, int64_t mtime_s,
		    uint32_t mtime_ns);

#endif
