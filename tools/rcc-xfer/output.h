/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Everything rcc-xfer prints goes through here, under one lock (the receiver
 * prints from several threads): human lines on stdout, errors on stderr,
 * JSON lines on stdout with --json, nothing but errors with --quiet. A
 * progress bar on stderr is erased before any other line is printed.
 */
#ifndef XFER_OUTPUT_H
#define XFER_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>

#include "json.h"

enum out_mode {
	OUT_HUMAN = 0,
	OUT_QUIET,
	OUT_JSON
};

void out_init(enum out_mode m);

void out_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void out_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void out_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Version of the --json events' layout (docs/json.md): bumped when a field
 * changes meaning or goes away, not when one is added. */
#define XFER_JSON_SCHEMA "1"

/* One JSON object per line; fmt produces the object without the newline
 * ("tool" and "schema" are added at its end). */
void out_json(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Peak resident memory of this process in KiB (reported in JSON summaries). */
long peak_rss_kib(void);

/* For the progress bar: draw under the lock, and how to erase it. */
void out_lock(void);
void out_unlock(void);
void out_set_eraser(void (*erase)(void));

#endif
