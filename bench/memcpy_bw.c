/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memcpy_bw SIZE SECONDS [AREA]: single-thread memcpy bandwidth between two
 * buffers of SIZE bytes (the floor a copying transport is measured against).
 * Prints "size_B <n> GBps <x>" (GB = 1e9 B), the best of 5 timed slices.
 * With AREA, each copy takes the next SIZE-byte slot of two AREA-byte
 * buffers, as rcc-perf walks its 32 MiB areas: what a copy costs once the
 * buffers no longer fit the caches (on the 2-vCPU host, 1 MiB: about 41 GB/s
 * hot, 10-11 GB/s over 32 MiB).
 *
 * Both buffers start on a page: on AMD processors with fast "rep movsb"
 * (glibc uses it for copies of this size) a destination 16 bytes past the
 * source modulo 4 KiB -- two malloc'ed 64 KiB blocks side by side -- copies
 * at a tenth of the speed (measured here: 1.4 GB/s against 22 GB/s), which
 * would make the floor look lower than it is.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: memcpy_bw SIZE SECONDS [AREA]\n");
		return 2;
	}
	size_t size = strtoull(argv[1], NULL, 10);
	double secs = strtod(argv[2], NULL);
	size_t stride = (size + 4095) & ~(size_t)4095;
	size_t area = argc == 4 ? strtoull(argv[3], NULL, 10) : 0;
	size_t slots = area > stride ? area / stride : 1;
	size_t room = stride * slots;
	char *a = aligned_alloc(4096, room), *b = aligned_alloc(4096, room);
	double best = 0;

	if (!size || !a || !b || secs <= 0)
		return 2;
	memset(a, 1, room);
	memset(b, 2, room);
	for (int slice = 0; slice < 5; slice++) {
		double t0 = now_s(), t;
		unsigned long n = 0;
		do {
			size_t off = (n % slots) * stride;
			memcpy(b + off, a + off, size);
			a[off + n % size] ^=
				b[off + (n * 7) % size]; /* keep the copies observable */
			n++;
		} while ((t = now_s()) - t0 < secs / 5);
		double gbps = (double)n * (double)size / (t - t0) / 1e9;
		if (gbps > best)
			best = gbps;
	}
	printf("size_B %zu GBps %.4f\n", size, best);
	free(a);
	free(b);
	return 0;
}
