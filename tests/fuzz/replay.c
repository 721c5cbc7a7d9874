/* SPDX-License-Identifier: BSD-3-Clause */
/* Without libFuzzer: run the target over every file in the given directories. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

#include "fuzz.h"

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	uint8_t *buf = malloc(1 << 20);
	size_t n = buf ? fread(buf, 1, 1 << 20, f) : 0;
	fclose(f);
	if (!buf)
		return -1;
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	int files = 0;
	for (int i = 1; i < argc; i++) {
		DIR *d = opendir(argv[i]);
		if (!d) {
			files += run_file(argv[i]) == 0;
			continue;
		}
		struct dirent *e;
		char path[4096];
		while ((e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[i], e->d_name);
			files += run_file(path) == 0;
		}
		closedir(d);
	}
	printf("replayed %d inputs without a crash\n", files);
	return files ? 0 : 1;
}
