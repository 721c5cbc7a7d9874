/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ring_bw SIZE SECONDS [CAP [CHUNK]]: the ceiling of a two-copy shared-memory
 * transport on this host. Two threads, pinned to CPUs 0 and 1 (the CPUs
 * bench/perf-shm.sh gives rcc's server and client), move messages of SIZE
 * bytes through a single-producer single-consumer byte ring of CAP bytes
 * (256 KiB, as the tcp transport's shm ring): the producer copies from its
 * message into the ring in pieces of at most CHUNK bytes (64 KiB, a whole
 * frame on that ring) and publishes its index after each; the consumer copies
 * whatever is there out into its message buffer and publishes its own. Both
 * busy-poll: no locks, no system calls, no framing -- only the two copies and
 * the cache lines crossing between the cores. Prints "size_B <n> GBps <x>"
 * (GB = 1e9 B), the best of 5 timed slices, as bench/memcpy_bw.c does.
 *
 * A single-thread memcpy (memcpy_bw) copies between buffers in one core's
 * caches; here every ring line moves from the producer's core to the
 * consumer's and back, which on a host whose cores exchange lines slowly caps
 * any design that copies twice far below memcpy_bw.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static size_t size, cap, chunk;
static uint8_t *ring, *src, *dst;
static _Alignas(64) _Atomic uint64_t tail;
static _Alignas(64) _Atomic uint64_t head;
static _Alignas(64) atomic_bool stop;

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	(void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* Copy n bytes between the ring (at index pos) and a buffer, across the wrap. */
static void ring_copy(uint64_t pos, uint8_t *buf, size_t n, bool in)
{
	while (n) {
		size_t at = (size_t)(pos & (cap - 1));
		size_t take = cap - at < n ? cap - at : n;
		if (in)
			memcpy(ring + at, buf, take);
		else
			memcpy(buf, ring + at, take);
		pos += take;
		buf += take;
		n -= take;
	}
}

static void *producer(void *arg)
{
	uint64_t t = 0;
	size_t off = 0;

	(void)arg;
	pin(0);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		size_t room = cap - (size_t)(t - atomic_load_explicit(&head, memory_order_acquire));
		size_t n = size - off < chunk ? size - off : chunk;
		if (room < n)
			continue;
		ring_copy(t, src + off, n, true);
		t += n;
		off = (off + n) % size;
		atomic_store_explicit(&tail, t, memory_order_release);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 3 || argc > 5) {
		fprintf(stderr, "usage: ring_bw SIZE SECONDS [CAP [CHUNK]]\n");
		return 2;
	}
	size = strtoull(argv[1], NULL, 10);
	double secs = strtod(argv[2], NULL), best = 0;
	cap = argc > 3 ? strtoull(argv[3], NULL, 10) : 256u * 1024u;
	chunk = argc > 4 ? strtoull(argv[4], NULL, 10) : 64u * 1024u;
	size_t room = (size + 4095) & ~(size_t)4095;
	if (!size || secs <= 0 || cap < 4096 || (cap & (cap - 1)) || !chunk || chunk > cap)
		return 2;
	ring = aligned_alloc(4096, cap);
	src = aligned_alloc(4096, room);
	dst = aligned_alloc(4096, room);
	if (!ring || !src || !dst)
		return 2;
	memset(ring, 0, cap);
	memset(src, 1, size);
	memset(dst, 2, size);

	pthread_t p;
	if (pthread_create(&p, NULL, producer, NULL))
		return 2;
	pin(1);
	uint64_t h = 0;
	size_t off = 0;
	for (int slice = 0; slice < 5; slice++) {
		double t0 = now_s(), t;
		uint64_t got = 0;
		do {
			size_t have = (size_t)(atomic_load_explicit(&tail, memory_order_acquire) -
					       h);
			if (!have)
				continue;
			size_t n = have < size - off ? have : size - off;
			ring_copy(h, dst + off, n, false);
			h += n;
			got += n;
			off = (off + n) % size;
			atomic_store_explicit(&head, h, memory_order_release);
		} while ((t = now_s()) - t0 < secs / 5);
		double gbps = (double)got / (t - t0) / 1e9;
		if (gbps > best)
			best = gbps;
	}
	atomic_store(&stop, true);
	pthread_join(p, NULL);
	if (memcmp(src, dst, size) != 0) /* whole messages went through in order */
		fprintf(stderr, "ring_bw: the bytes did not arrive as sent\n");
	printf("size_B %zu GBps %.4f\n", size, best);
	free(ring);
	free(src);
	free(dst);
	return 0;
}
