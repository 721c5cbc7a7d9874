/* SPDX-License-Identifier: BSD-3-Clause */
/* Numbers from the environment (base/env.h). */
#include "base/env.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>

int rcci_env_ulong(const char *name, unsigned long min, unsigned long max, unsigned long *out)
{
	const char *s = getenv(name);
	unsigned long v = 0;

	if (!s || !*s)
		return -ENOENT;
	/* Digits by hand rather than strtoul(): it skips blanks, takes a sign
	 * (negating "-1" into ULONG_MAX) and reports overflow through errno. */
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		unsigned long d = (unsigned long)(*p - '0');
		if (v > (ULONG_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	if (v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}
