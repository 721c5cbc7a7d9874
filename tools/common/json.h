/* SPDX-License-Identifier: BSD-3-Clause */
/* JSON string literals for the programs' machine-readable output. */
#ifndef RCC_TOOLS_JSON_H
#define RCC_TOOLS_JSON_H

#include <stddef.h>

/*
 * s as a quoted JSON string in buf (truncated to fit): quotes, backslashes
 * and control characters escaped; well-formed UTF-8 kept, any other high
 * byte escaped. Returns buf.
 */
const char *json_str(const char *s, char *buf, size_t len);

#endif
