/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The per-thread explanation behind rcc_last_error(): set where a set-up call
 * fails for a reason its status alone does not say (which argument, which
 * peer condition).
 */
#ifndef RCC_CORE_LAST_ERROR_H
#define RCC_CORE_LAST_ERROR_H

/*
 * Record why the running call fails and return status, so that a failure
 * reads `return rcci_fail(-EINVAL, "...", ...);`. The text is escaped like a
 * log message (it may quote what a peer sent) and logged at debug level.
 * The first explanation since rcci_error_clear() wins: the layer closest to
 * the cause (a transport) says it, and the generic words an outer layer adds
 * for the same status are dropped.
 */
int rcci_fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Forget the previous explanation: called on entry by every set-up call. */
void rcci_error_clear(void);

#endif
