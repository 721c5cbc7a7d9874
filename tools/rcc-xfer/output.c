/* SPDX-License-Identifier: BSD-3-Clause */
#include "output.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static enum out_mode mode;
static void (*eraser)(void);

void out_init(enum out_mode m) { mode = m; }

void out_lock(void) { pthread_mutex_lock(&lock); }

void out_unlock(void) { pthread_mutex_unlock(&lock); }

void out_set_eraser(void (*erase)(void))
{
	out_lock();
	eraser = erase;
	out_unlock();
}

static void vline(FILE *f, const char *prefix, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));
static void vline(FILE *f, const char *prefix, const char *fmt, va_list ap)
{
	out_lock();
	if (eraser)
		eraser();
	if (prefix)
		fputs(prefix, f);
	vfprintf(f, fmt, ap);
	fputc('\n', f);
	fflush(f);
	out_unlock();
}

void out_info(const char *fmt, ...)
{
	va_list ap;

	if (mode != OUT_HUMAN)
		return;
	va_start(ap, fmt);
	vline(stdout, NULL, fmt, ap);
	va_end(ap);
}

void out_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline(stderr, "rcc-xfer: ", fmt, ap);
	va_end(ap);
}

void out_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline(stderr, "rcc-xfer: warning: ", fmt, ap);
	va_end(ap);
}

void out_json(const char *fmt, ...)
{
	va_list ap;

	if (mode != OUT_JSON)
		return;
	va_start(ap, fmt);
	vline(stdout, NULL, fmt, ap);
	va_end(ap);
}

long peak_rss_kib(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : -1;
}
