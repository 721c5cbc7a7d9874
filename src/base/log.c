/* SPDX-License-Identifier: BSD-3-Clause */
#include "log.h"
#include "rcc/util.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

atomic_int rcci_log_threshold = -1;

static pthread_mutex_t handler_lock = PTHREAD_MUTEX_INITIALIZER;
static rcc_log_fn handler;
static void *handler_arg;

static const char *const level_names[] = { "error", "warn", "info", "debug", "trace" };

static int parse_level(const char *s)
{
	if (!s || !*s)
		return RCC_LOG_ERROR;
	for (int i = 0; i <= RCC_LOG_TRACE; i++)
		if (!strcasecmp(s, level_names[i]))
			return i;
	if (!strcasecmp(s, "warning"))
		return RCC_LOG_WARN;
	if (s[0] >= '0' && s[0] <= '4' && s[1] == '\0')
		return s[0] - '0';
	return RCC_LOG_ERROR;
}

int rcci_log_load_threshold(void)
{
	int level = parse_level(getenv("RCC_LOG"));
	int expected = -1;
	/* A level set explicitly before the first message wins over the environment. */
	if (!atomic_compare_exchange_strong(&rcci_log_threshold, &expected, level))
		return expected;
	return level;
}

void rcc_log_set_level(enum rcc_log_level level)
{
	if ((int)level < RCC_LOG_ERROR)
		level = RCC_LOG_ERROR;
	if (level > RCC_LOG_TRACE)
		level = RCC_LOG_TRACE;
	atomic_store(&rcci_log_threshold, (int)level);
}

enum rcc_log_level rcc_log_get_level(void)
{
	int t = atomic_load(&rcci_log_threshold);
	if (t < 0)
		t = rcci_log_load_threshold();
	return (enum rcc_log_level)t;
}

void rcc_log_set_handler(rcc_log_fn fn, void *arg)
{
	pthread_mutex_lock(&handler_lock);
	handler = fn;
	handler_arg = arg;
	pthread_mutex_unlock(&handler_lock);
}

void rcci_log_emit(enum rcc_log_level level, const char *fmt, ...)
{
	char raw[512], msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	/* Messages quote what peers sent (names, reasons, addresses): escaped as a
	 * whole, a log line stays one line and cannot steer a terminal. */
	rcc_text_escape(msg, sizeof(msg), raw, sizeof(raw));

	pthread_mutex_lock(&handler_lock);
	rcc_log_fn fn = handler;
	void *arg = handler_arg;
	pthread_mutex_unlock(&handler_lock);
	if (fn) {
		fn(level, msg, arg);
		return;
	}
	/* One write() per line so lines from several threads never interleave. */
	char line[sizeof(msg) + 64];
	int n = snprintf(line, sizeof(line), "rcc[%d] %s: %s\n", (int)getpid(),
			 level_names[level <= RCC_LOG_TRACE ? level : RCC_LOG_TRACE], msg);
	if (n > (int)sizeof(line) - 1)
		n = (int)sizeof(line) - 1;
	if (n > 0 && write(STDERR_FILENO, line, (size_t)n) < 0) {
		/* nowhere left to report a failing stderr */
	}
}
