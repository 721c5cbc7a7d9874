/* SPDX-License-Identifier: BSD-3-Clause */
/* Leveled logging for library code: the only way the library writes text. */
#ifndef RCC_CORE_LOG_H
#define RCC_CORE_LOG_H

#include <stdatomic.h>
#include <stdbool.h>

#include "rcc/rcc.h"

/* -1 until the environment has been read. */
extern atomic_int rcci_log_threshold;

int rcci_log_load_threshold(void);
void rcci_log_emit(enum rcc_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static inline bool rcc_log_enabled(enum rcc_log_level level)
{
	int t = atomic_load_explicit(&rcci_log_threshold, memory_order_relaxed);
	if (t < 0)
		t = rcci_log_load_threshold();
	return (int)level <= t;
}

#define RCC_LOG_AT(level, ...)                             \
	do {                                               \
		if (rcc_log_enabled(level))                \
			rcci_log_emit(level, __VA_ARGS__); \
	} while (0)

#define log_error(...) RCC_LOG_AT(RCC_LOG_ERROR, __VA_ARGS__)
#define log_warn(...) RCC_LOG_AT(RCC_LOG_WARN, __VA_ARGS__)
#define log_info(...) RCC_LOG_AT(RCC_LOG_INFO, __VA_ARGS__)
#define log_debug(...) RCC_LOG_AT(RCC_LOG_DEBUG, __VA_ARGS__)
#define log_trace(...) RCC_LOG_AT(RCC_LOG_TRACE, __VA_ARGS__)

#endif
