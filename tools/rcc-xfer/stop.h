/* SPDX-License-Identifier: BSD-3-Clause */
/* Interruption by SIGINT / SIGTERM: a flag every bounded wait checks. */
#ifndef XFER_STOP_H
#define XFER_STOP_H

#include <stdbool.h>

/* Install handlers for SIGINT and SIGTERM (no SA_RESTART) and ignore SIGPIPE. */
int stop_install(void);
bool stop_requested(void);

#endif
