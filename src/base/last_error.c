/* SPDX-License-Identifier: BSD-3-Clause */
/* rcc_last_error(): one explanation per thread, like errno but in words. */
#include "last_error.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include "log.h"
#include "rcc/util.h"

#define LAST_ERROR_MAX 256

static _Thread_local char last_error[LAST_ERROR_MAX];
static _Thread_local bool recorded;

__attribute__((format(printf, 1, 0))) static void record(const char *fmt, va_list ap)
{
	char raw[LAST_ERROR_MAX];

	vsnprintf(raw, sizeof(raw), fmt, ap);
	rcc_text_escape(last_error, sizeof(last_error), raw, sizeof(raw));
	recorded = true;
	log_debug("%s", last_error);
}

int rcci_fail(int status, const char *fmt, ...)
{
	va_list ap;

	if (recorded)
		return status;
	va_start(ap, fmt);
	record(fmt, ap);
	va_end(ap);
	return status;
}

void rcci_error_clear(void)
{
	last_error[0] = '\0';
	recorded = false;
}

const char *rcc_last_error(void) { return last_error; }
