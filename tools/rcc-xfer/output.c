/* SPDX-License-Identifier: BSD-3-Clause */
#include "output.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "rcc/util.h"

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

static void vline(FILE *f, const char *prefix, bool escape, const char *fmt, va_list ap)
	__attribute__((format(printf, 4, 0)));
static void vline(FILE *f, const char *prefix, bool escape, const char *fmt, va_list ap)
{
	char raw[2048], line[4096];

	/* Lines quote what peers sent (file names, their error texts): escaped as
	 * a whole, each stays one line that cannot steer the terminal. JSON lines
	 * are not: json_str() has escaped their strings already. */
	vsnprintf(raw, sizeof(raw), fmt, ap);
	if (escape)
		rcc_text_escape(line, sizeof(line), raw, sizeof(raw));
	else
		snprintf(line, sizeof(line), "%s", raw);
	out_lock();
	if (eraser)
		eraser();
	if (prefix)
		fputs(prefix, f);
	fputs(line, f);
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
	vline(stdout, NULL, true, fmt, ap);
	va_end(ap);
}

void out_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline(stderr, "rcc-xfer: ", true, fmt, ap);
	va_end(ap);
}

void out_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline(stderr, "rcc-xfer: warning: ", true, fmt, ap);
	va_end(ap);
}

static void line(FILE *f, const char *prefix, bool escape, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void line(FILE *f, const char *prefix, bool escape, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline(f, prefix, escape, fmt, ap);
	va_end(ap);
}

void out_json(const char *fmt, ...)
{
	char obj[2048];
	va_list ap;

	if (mode != OUT_JSON)
		return;
	va_start(ap, fmt);
	vsnprintf(obj, sizeof(obj), fmt, ap);
	va_end(ap);
	/* Every object names its tool and the version of its layout (docs/json.md),
	 * at its end: scripts that match the start ('{"event":"sent"') still do. */
	size_t n = strlen(obj);
	if (n >= 2 && obj[0] == '{' && obj[n - 1] == '}')
		line(stdout, NULL, false, "%.*s,\"tool\":\"rcc-xfer\",\"schema\":%s}", (int)(n - 1),
		     obj, XFER_JSON_SCHEMA);
	else
		line(stdout, NULL, false, "%s", obj);
}

long peak_rss_kib(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : -1;
}
