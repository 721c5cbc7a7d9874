/* SPDX-License-Identifier: BSD-3-Clause */
#include "names.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

const char *name_refusal(const char *name)
{
	size_t n = strlen(name);

	if (n == 0)
		return "empty file name";
	if (n > NAME_LEN_MAX)
		return "file name longer than 244 bytes (the partial file needs room for a suffix)";
	if (name[0] == '/')
		return "absolute path";
	if (strchr(name, '/'))
		return "file name with a '/' (only plain names are accepted)";
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return "file name '.' or '..'";
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return "control character in file name";
	if (ends_with(name, PART_SUFFIX) || ends_with(name, STATE_SUFFIX))
		return "name reserved for rcc-xfer's partial files";
	return NULL;
}

static int companion(const char *name, const char *suffix, char *out, size_t len)
{
	int n = snprintf(out, len, ".%s%s", name, suffix);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int part_name(const char *name, char *out, size_t len)
{
	return companion(name, PART_SUFFIX, out, len);
}

int state_name(const char *name, char *out, size_t len)
{
	return companion(name, STATE_SUFFIX, out, len);
}

const char *path_basename(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}
