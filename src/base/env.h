/* SPDX-License-Identifier: BSD-3-Clause */
/* Numbers from the environment: the one parser of every numeric RCC_* variable. */
#ifndef RCC_BASE_ENV_H
#define RCC_BASE_ENV_H

/*
 * The decimal number in environment variable NAME, if it lies in [min, max]:
 * 0 with *out set. -ENOENT when the variable is unset or empty; -EINVAL when
 * it holds anything but digits (blanks, a sign, a suffix: strtoul() would skip
 * or take them), a number beyond unsigned long, or one outside [min, max].
 * *out is left alone on any error. Leading zeros are allowed ("010" is 10).
 */
int rcci_env_ulong(const char *name, unsigned long min, unsigned long max, unsigned long *out);

#endif
