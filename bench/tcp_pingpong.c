/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The raw-TCP baselines for bench/pingpong-tcp.sh: a ping-pong over one TCP
 * connection with TCP_NODELAY, both sides busy-polling non-blocking sockets,
 * as rcc's tcp transport does when the application busy-polls; or, with
 * "block", both sides sleeping in blocking recv() -- the floor for rcc's
 * RCC_CQ_WAIT and RCC_CQ_FD modes, where a thread sleeps until its message
 * comes. The client prints the median and average half round trip in
 * microseconds.
 *
 *   tcp_pingpong -s PORT [block]                    server (one client, then exit)
 *   tcp_pingpong -c HOST PORT SIZE ITERS [block]    client
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

/* MSG_DONTWAIT (spin) or 0 (sleep in the kernel until bytes come). */
static int recv_flags = MSG_DONTWAIT;

/* Exactly n bytes, spinning on a non-blocking socket (or sleeping in it). */
static int spin_recv(int fd, char *p, size_t n)
{
	while (n) {
		ssize_t r = recv(fd, p, n, recv_flags);
		if (r > 0) {
			p += r;
			n -= (size_t)r;
		} else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
			return -1;
		}
	}
	return 0;
}

static int spin_send(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t r = send(fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (r > 0) {
			p += r;
			n -= (size_t)r;
		} else if (r < 0 && errno != EAGAIN && errno != EINTR) {
			return -1;
		}
	}
	return 0;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int one = 1;
	if ((argc == 4 && !strcmp(argv[1], "-s")) || argc == 7) {
		if (strcmp(argv[argc - 1], "block")) {
			fprintf(stderr, "tcp_pingpong: the last argument may only be 'block'\n");
			return 2;
		}
		recv_flags = 0;
		argc--;
	}
	if (argc == 3 && !strcmp(argv[1], "-s")) {
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(atoi(argv[2])) };
		int l = socket(AF_INET, SOCK_STREAM, 0), fd;
		setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
		    (fd = accept(l, NULL, NULL)) < 0) {
			perror("tcp_pingpong server");
			return 1;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		unsigned size;
		if (spin_recv(fd, (char *)&size, sizeof(size)))
			return 1;
		char *buf = malloc(size ? size : 1);
		while (spin_recv(fd, buf, size) == 0 && spin_send(fd, buf, size) == 0)
			;
		return 0;
	}
	if (argc != 6 || strcmp(argv[1], "-c")) {
		fprintf(stderr,
			"usage: tcp_pingpong -s PORT [block] | -c HOST PORT SIZE ITERS [block]\n");
		return 2;
	}
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(atoi(argv[3])) };
	unsigned size = (unsigned)atoi(argv[4]);
	long iters = atol(argv[5]), warm = iters / 10;
	inet_pton(AF_INET, argv[2], &a.sin_addr);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		perror("tcp_pingpong client");
		return 1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	char *buf = calloc(1, size ? size : 1);
	double *lat = malloc(sizeof(double) * (size_t)iters), sum = 0;
	if (spin_send(fd, (char *)&size, sizeof(size)))
		return 1;
	for (long i = 0; i < warm + iters; i++) {
		double t0 = now_us();
		if (spin_send(fd, buf, size) || spin_recv(fd, buf, size))
			return 1;
		if (i >= warm)
			lat[i - warm] = (now_us() - t0) / 2;
	}
	for (long i = 0; i < iters; i++)
		sum += lat[i];
	qsort(lat, (size_t)iters, sizeof(*lat), cmp);
	printf("size %u iters %ld median_us %.3f avg_us %.3f\n", size, iters, lat[iters / 2],
	       sum / iters);
	return 0;
}
