/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * File names a sender may ask for, and the receiver's companion files.
 * A name is one path component: files land only in the receiver's folder.
 */
#ifndef XFER_NAMES_H
#define XFER_NAMES_H

#include <stddef.h>

#define PART_SUFFIX ".rcc-part"
#define STATE_SUFFIX ".rcc-state"
/* Longest accepted name: ".NAME.rcc-state" must still fit in 255 bytes. */
#define NAME_LEN_MAX 244

/* "." + name + suffix + NUL */
#define COMPANION_MAX (1 + 255 + 10 + 1)

/* NULL when name is acceptable, else why not (for the refusal message). */
const char *name_refusal(const char *name);

/* ".NAME.rcc-part" and ".NAME.rcc-state". 0 or -ENAMETOOLONG. */
int part_name(const char *name, char *out, size_t len);
int state_name(const char *name, char *out, size_t len);

/* The last component of a path, as the sender offers it ("dir/a.txt" -> "a.txt").
 * Returns a pointer into path; "" for a path ending in '/'. */
const char *path_basename(const char *path);

#endif
