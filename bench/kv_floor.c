/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The floor for bench/server-load.sh: the key-value RPCs of examples/kv.c
 * over plain TCP, as a competent socket programmer would write them without
 * rcc. The server is one thread in an epoll loop (level-triggered,
 * non-blocking sockets, TCP_NODELAY); PUT and GET are both request/reply
 * RPCs (TCP has no one-sided READ, so GET costs the server a wake-up that
 * rcc's READ does not). Clients are threads with one blocking socket each.
 * Same table, same value checks, same output line as example_kv's client.
 *
 *   kv_floor server PORT                        serve until SIGINT/SIGTERM
 *   kv_floor client HOST PORT CLIENTS OPS       prints throughput and percentiles
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define NKEYS 4096
#define VALUE_SIZE 64
#define OP_PUT 1
#define OP_GET 2

/* request: op, key, version, value (GET: op and key only matter) */
struct req {
	uint32_t op;
	uint32_t key;
	uint64_t version;
	uint8_t value[VALUE_SIZE];
};

/* reply: status, key, version, value */
struct rep {
	uint32_t status;
	uint32_t key;
	uint64_t version;
	uint8_t value[VALUE_SIZE];
};

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void value_of(uint64_t key, uint64_t version, uint8_t *out)
{
	for (int i = 0; i < VALUE_SIZE; i++)
		out[i] = (uint8_t)(key * 31 + version * 7 + (uint64_t)i);
}

/* ------------------------------------------------------------------ server */

struct conn {
	int fd;
	size_t have; /* bytes of the request read so far */
	struct req q;
};

static struct {
	uint64_t version;
	uint8_t value[VALUE_SIZE];
} table[NKEYS];

static volatile sig_atomic_t stop;
static void on_signal(int sig) { stop = sig; }

/* Read what is there; answer each whole request. -1: close the connection. */
static int serve_conn(struct conn *c)
{
	for (;;) {
		ssize_t r = recv(c->fd, (char *)&c->q + c->have, sizeof(c->q) - c->have, 0);
		if (r == 0)
			return -1;
		if (r < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -1;
		c->have += (size_t)r;
		if (c->have < sizeof(c->q))
			continue;
		c->have = 0;
		struct rep p = { .status = 1, .key = c->q.key };
		if (c->q.key < NKEYS && c->q.op == OP_PUT) {
			table[c->q.key].version = c->q.version;
			memcpy(table[c->q.key].value, c->q.value, VALUE_SIZE);
			p.status = 0;
			p.version = c->q.version;
		} else if (c->q.key < NKEYS && c->q.op == OP_GET) {
			p.status = 0;
			p.version = table[c->q.key].version;
			memcpy(p.value, table[c->q.key].value, VALUE_SIZE);
		}
		/* a reply this small always fits an empty socket buffer: the
		 * client sends nothing until it has it */
		if (send(c->fd, &p, sizeof(p), MSG_NOSIGNAL) != (ssize_t)sizeof(p))
			return -1;
	}
}

static int run_server(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct epoll_event ev[64];
	struct sigaction sig = { .sa_handler = on_signal };
	int one = 1;

	for (uint64_t k = 0; k < NKEYS; k++)
		value_of(k, 0, table[k].value);
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 128)) {
		perror("kv_floor server");
		return 1;
	}
	socklen_t len = sizeof(sa);
	getsockname(lfd, (struct sockaddr *)&sa, &len);
	printf("listening on port %d\n", ntohs(sa.sin_port));
	fflush(stdout);
	sigaction(SIGINT, &sig, NULL);
	sigaction(SIGTERM, &sig, NULL);
	int ep = epoll_create1(0);
	struct epoll_event le = { .events = EPOLLIN, .data.ptr = NULL };
	epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &le);
	while (!stop) {
		int n = epoll_wait(ep, ev, 64, 100);
		for (int i = 0; i < n; i++) {
			struct conn *c = ev[i].data.ptr;
			if (!c) {
				int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
				if (fd < 0)
					continue;
				setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
				c = calloc(1, sizeof(*c));
				if (!c) {
					close(fd);
					continue;
				}
				c->fd = fd;
				struct epoll_event ce = { .events = EPOLLIN, .data.ptr = c };
				epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ce);
			} else if (serve_conn(c)) {
				epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
				close(c->fd);
				free(c);
			}
		}
	}
	close(ep);
	close(lfd);
	return 0;
}

/* ------------------------------------------------------------------ client */

struct client {
	const char *host;
	int port, id, nclients, ops;
	uint64_t nonce, t0, t1;
	uint64_t *lat_ns;
	int errors;
};

static int all(int fd, void *buf, size_t n, int out)
{
	char *p = buf;
	while (n) {
		ssize_t r = out ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);
		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			return -1;
		}
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

static void *client_main(void *arg)
{
	struct client *c = arg;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)c->port) };
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);
	int nown = (NKEYS - c->id + c->nclients - 1) / c->nclients;
	uint64_t *ver = calloc((size_t)nown, sizeof(*ver));
	uint8_t want[VALUE_SIZE];

	if (fd < 0 || !ver || inet_pton(AF_INET, c->host, &sa.sin_addr) != 1 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		c->errors++;
		goto out;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->t0 = now_ns();
	for (int i = 0; i < c->ops; i++) {
		int k = i % nown;
		struct req q = { .key = (uint32_t)(c->id + k * c->nclients) };
		struct rep p;
		uint64_t t = now_ns();
		bool is_put = !ver[k] || i % 4 == 0; /* same mix as examples/kv.c */
		if (is_put) {
			ver[k] = c->nonce + (uint64_t)i + 1;
			q.op = OP_PUT;
			q.version = ver[k];
			value_of(q.key, q.version, q.value);
		} else {
			q.op = OP_GET;
		}
		if (all(fd, &q, sizeof(q), 1) || all(fd, &p, sizeof(p), 0) || p.status ||
		    p.version != ver[k]) {
			c->errors++;
			break;
		}
		if (!is_put) {
			value_of(q.key, ver[k], want);
			if (memcmp(p.value, want, VALUE_SIZE)) {
				c->errors++;
				break;
			}
		}
		c->lat_ns[i] = now_ns() - t;
	}
	c->t1 = now_ns();
out:
	if (fd >= 0)
		close(fd);
	free(ver);
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int run_clients(const char *host, int port, int n, int ops)
{
	struct client *cl = calloc((size_t)n, sizeof(*cl));
	pthread_t *th = calloc((size_t)n, sizeof(*th));
	uint64_t *lat = calloc((size_t)n * (size_t)ops, sizeof(*lat));
	int errors = 0, started = 0;
	uint64_t t0 = UINT64_MAX, t1 = 0;

	if (!cl || !th || !lat)
		return 1;
	for (; started < n; started++) {
		cl[started] = (struct client){ .host = host,
					       .port = port,
					       .id = started,
					       .nclients = n,
					       .ops = ops,
					       .nonce = now_ns() << 8,
					       .lat_ns = lat + (size_t)started * (size_t)ops };
		if (pthread_create(&th[started], NULL, client_main, &cl[started]))
			break;
	}
	errors += started < n;
	for (int i = 0; i < started; i++) {
		pthread_join(th[i], NULL);
		errors += cl[i].errors;
		t0 = cl[i].t0 && cl[i].t0 < t0 ? cl[i].t0 : t0;
		t1 = cl[i].t1 > t1 ? cl[i].t1 : t1;
	}
	if (errors) {
		fprintf(stderr, "kv_floor: %d clients failed\n", errors);
	} else {
		size_t total = (size_t)n * (size_t)ops;
		qsort(lat, total, sizeof(*lat), cmp_u64);
		double secs = (double)(t1 - t0) / 1e9;
		printf("clients=%d ops=%zu secs=%.3f ops_per_s=%.0f p50_us=%.1f p99_us=%.1f "
		       "p999_us=%.1f torn_reads=0\n",
		       n, total, secs, (double)total / secs, (double)lat[total / 2] / 1e3,
		       (double)lat[total * 99 / 100] / 1e3, (double)lat[total * 999 / 1000] / 1e3);
	}
	free(cl);
	free(th);
	free(lat);
	return errors ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "server"))
		return run_server(atoi(argv[2]));
	if (argc == 6 && !strcmp(argv[1], "client") && atoi(argv[4]) > 0 && atoi(argv[5]) > 0)
		return run_clients(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
	fprintf(stderr, "usage: %s server PORT | client HOST PORT CLIENTS OPS\n", argv[0]);
	return 2;
}
