/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Progress of one file: a bar on a terminal (bytes, percent, rate, ETA),
 * periodic JSON lines with --json, or nothing.
 */
#ifndef XFER_PROGRESS_H
#define XFER_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

enum progress_mode {
	PROGRESS_NONE = 0,
	PROGRESS_BAR,
	PROGRESS_JSON
};

struct progress {
	enum progress_mode mode;
	char name[64];
	char json_name[600];
	uint64_t total;
	uint64_t start; /* bytes already there when this run began (resume) */
	uint64_t done;
	uint64_t t0_ns;
	uint64_t last_ns;
};

void progress_begin(struct progress *p, enum progress_mode mode, const char *name, uint64_t total,
		    uint64_t already);
/* Cheap when nothing needs drawing; draws at most a few times a second. */
void progress_update(struct progress *p, uint64_t done);
/* Erase the bar. */
void progress_end(struct progress *p);

/* "1:02:03" or "2:03" for a duration in seconds. */
const char *fmt_duration(double s, char *buf, size_t len);

#endif
