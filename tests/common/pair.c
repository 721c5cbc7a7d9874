/* SPDX-License-Identifier: BSD-3-Clause */
#include "pair.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int test_ctx_open(struct rcc_ctx **ctx)
{
	struct rcc_ctx_attr a = { .transport = test_transport(),
				  .bringup = test_bringup(),
				  .shm = test_shm() };
	int rc = rcc_ctx_open(&a, ctx);
	if (rc)
		fprintf(stderr, "rcc_ctx_open(%s): %s\n", rcc_transport_name(a.transport),
			rcc_strerror(rc));
	return rc;
}

struct accept_job {
	struct rcc_listener *lst;
	struct rcc_ep_attr attr;
	struct rcc_ep *ep;
	int rc;
};

static void *accept_thread(void *arg)
{
	struct accept_job *j = arg;
	j->rc = rcc_accept(j->lst, &j->attr, TEST_TIMEOUT_MS, &j->ep);
	return NULL;
}

int pair_connect(struct rcc_ctx *ctx, struct rcc_listener *lst, const struct rcc_ep_attr *aa,
		 const struct rcc_ep_attr *ab, struct rcc_ep **a, struct rcc_ep **b)
{
	struct accept_job job = { .lst = lst, .attr = *ab, .rc = -EINPROGRESS };
	struct rcc_ep *ea = NULL;
	char addr[128];
	pthread_t th;
	int rc;

	rc = -pthread_create(&th, NULL, accept_thread, &job);
	if (rc)
		return rc;
	snprintf(addr, sizeof(addr), "%s:%d", test_addr(), rcc_listener_port(lst));
	rc = rcc_connect(ctx, addr, aa, TEST_TIMEOUT_MS, &ea);
	pthread_join(th, NULL);
	if (rc || job.rc) {
		fprintf(stderr, "pair_connect: connect %s, accept %s\n", rcc_strerror(rc),
			rcc_strerror(job.rc));
		if (!rc)
			rcc_ep_close(ea);
		if (!job.rc)
			rcc_ep_close(job.ep);
		return rc ? rc : job.rc;
	}
	*a = ea;
	*b = job.ep;
	return 0;
}

int pair_open(struct pair *p, const struct pair_opts *o)
{
	static const struct pair_opts defaults;
	struct rcc_cq_attr ca;
	struct rcc_ep_attr aa, bb;
	char addr[128];
	int rc;

	if (!o)
		o = &defaults;
	memset(p, 0, sizeof(*p));
	ca = (struct rcc_cq_attr){ .depth = o->cq_depth, .mode = o->mode, .spin_us = o->spin_us };
	rc = test_ctx_open(&p->ctx);
	if (rc)
		return rc;
	p->ctx_b = p->ctx;
	if (o->split && (rc = test_ctx_open(&p->ctx_b)))
		goto err_ctx;
	rc = rcc_cq_create(p->ctx, &ca, &p->cq_a);
	if (rc)
		goto err_ctx;
	rc = rcc_cq_create(p->ctx_b, &ca, &p->cq_b);
	if (rc)
		goto err_cq_a;
	snprintf(addr, sizeof(addr), "%s:0", test_addr());
	rc = rcc_listen(p->ctx_b, addr, 0, &p->lst);
	if (rc)
		goto err_cq_b;

	bb = o->attr_b;
	bb.send_cq = bb.recv_cq = p->cq_b;
	aa = o->attr_a;
	aa.send_cq = aa.recv_cq = p->cq_a;
	rc = pair_connect(p->ctx, p->lst, &aa, &bb, &p->a, &p->b);
	if (rc)
		goto err_lst;
	/* RCC_TEST_TRANSPORT=shm: both ends must really be on shared memory. */
	if (test_shm() == RCC_SHM_REQUIRE &&
	    (strcmp(rcc_ep_path(p->a), "shm") || strcmp(rcc_ep_path(p->b), "shm"))) {
		fprintf(stderr, "pair_open: paths %s/%s, want shm\n", rcc_ep_path(p->a),
			rcc_ep_path(p->b));
		rcc_ep_close(p->a);
		rcc_ep_close(p->b);
		rc = -EPROTONOSUPPORT;
		goto err_lst;
	}
	return 0;

err_lst:
	rcc_listener_close(p->lst);
err_cq_b:
	rcc_cq_destroy(p->cq_b);
err_cq_a:
	rcc_cq_destroy(p->cq_a);
err_ctx:
	if (p->ctx_b != p->ctx)
		rcc_ctx_close(p->ctx_b);
	rcc_ctx_close(p->ctx);
	memset(p, 0, sizeof(*p));
	return rc;
}

void pair_close(struct pair *p)
{
	if (!p->ctx)
		return;
	if (p->a)
		TEARDOWN(rcc_ep_close(p->a));
	if (p->b)
		TEARDOWN(rcc_ep_close(p->b));
	TEARDOWN(rcc_listener_close(p->lst));
	TEARDOWN(rcc_cq_destroy(p->cq_b));
	TEARDOWN(rcc_cq_destroy(p->cq_a));
	if (p->ctx_b && p->ctx_b != p->ctx)
		TEARDOWN(rcc_ctx_close(p->ctx_b));
	TEARDOWN(rcc_ctx_close(p->ctx));
	memset(p, 0, sizeof(*p));
}

int wait_one(struct rcc_cq *cq, struct rcc_wc *wc, int timeout_ms)
{
	int n = rcc_cq_wait(cq, wc, 1, timeout_ms);
	return n == 1 ? 0 : (n < 0 ? n : -EIO);
}

int wait_n(struct rcc_cq *cq, struct rcc_wc *wc, int n, int timeout_ms)
{
	uint64_t end = now_ms() + (uint64_t)timeout_ms;
	int got = 0;

	while (got < n) {
		uint64_t now = now_ms();
		if (now >= end)
			break;
		int r = rcc_cq_wait(cq, wc + got, n - got, (int)(end - now));
		if (r < 0)
			break;
		got += r;
	}
	return got;
}

int tbuf_alloc(struct tbuf *b, struct rcc_ctx *ctx, size_t len, unsigned access)
{
	size_t alloc = (len + 4095) & ~(size_t)4095;
	b->p = aligned_alloc(4096, alloc ? alloc : 4096);
	if (!b->p)
		return -ENOMEM;
	memset(b->p, 0, alloc ? alloc : 4096);
	b->len = len;
	int rc = rcc_mr_reg(ctx, b->p, len ? len : 1, access, &b->mr);
	if (rc) {
		free(b->p);
		b->p = NULL;
	}
	return rc;
}

void tbuf_free(struct tbuf *b)
{
	int rc = b->mr ? rcc_mr_dereg(b->mr) : 0;
	if (rc)
		/* still registered: leave the memory to it rather than free it */
		test_fail(__FILE__, __LINE__, "teardown: rcc_mr_dereg: %s", rcc_strerror(rc));
	else
		free(b->p);
	memset(b, 0, sizeof(*b));
}

struct rcc_sge tbuf_sge(const struct tbuf *b, size_t off, uint32_t len)
{
	return rcc_mr_sge(b->mr, b->p + off, len);
}

int peer_spawn(struct peer_proc *pp, const char *self)
{
	return peer_spawn_as(pp, self, "--peer-child");
}

int peer_port(struct peer_proc *pp)
{
	int port;
	return read(pp->from_child, &port, sizeof(port)) == sizeof(port) && port > 0 ? port : 0;
}

int peer_spawn_as(struct peer_proc *pp, const char *self, const char *role)
{
	int to_child[2], to_parent[2];

	if (pipe(to_child))
		return -errno;
	if (pipe(to_parent)) {
		close(to_child[0]);
		close(to_child[1]);
		return -errno;
	}
	pp->pid = fork();
	if (pp->pid < 0) {
		int rc = -errno;
		close(to_child[0]);
		close(to_child[1]);
		close(to_parent[0]);
		close(to_parent[1]);
		return rc;
	}
	if (pp->pid == 0) {
		int port;
		char ports[16], fds[16];
		close(to_child[1]);
		close(to_parent[0]);
		if (read(to_child[0], &port, sizeof(port)) != sizeof(port) || port <= 0)
			_exit(1);
		snprintf(ports, sizeof(ports), "%d", port);
		snprintf(fds, sizeof(fds), "%d", to_parent[1]);
		execlp(self, self, role, ports, fds, (char *)NULL);
		_exit(127);
	}
	close(to_child[0]);
	close(to_parent[1]);
	pp->to_child = to_child[1];
	pp->from_child = to_parent[0];
	return 0;
}

int peer_child_open(bool serves, int port, int notify_fd, const struct rcc_cq_attr *cq_attr,
		    struct rcc_ep_attr attr, struct peer_child *pc)
{
	char addr[128];

	memset(pc, 0, sizeof(*pc));
	if (test_ctx_open(&pc->ctx) || rcc_cq_create(pc->ctx, cq_attr, &pc->cq))
		return 2;
	attr.send_cq = pc->cq;
	if (serves) {
		snprintf(addr, sizeof(addr), "%s:0", test_addr());
		if (rcc_listen(pc->ctx, addr, 0, &pc->lst))
			return 3;
		port = rcc_listener_port(pc->lst);
		if (write(notify_fd, &port, sizeof(port)) != sizeof(port) ||
		    rcc_accept(pc->lst, &attr, TEST_TIMEOUT_MS, &pc->ep))
			return 4;
	} else {
		snprintf(addr, sizeof(addr), "%s:%d", test_addr(), port);
		if (rcc_connect(pc->ctx, addr, &attr, TEST_TIMEOUT_MS, &pc->ep))
			return 4;
	}
	return 0;
}

void peer_go(struct peer_proc *pp, int port)
{
	if (write(pp->to_child, &port, sizeof(port)) != sizeof(port))
		fprintf(stderr, "peer_go: the child is gone\n");
	close(pp->to_child);
	pp->to_child = -1;
}

bool peer_connected(struct peer_proc *pp)
{
	char x;
	bool ok = read(pp->from_child, &x, 1) == 1;
	close(pp->from_child);
	pp->from_child = -1;
	return ok;
}

void peer_kill(struct peer_proc *pp)
{
	kill(pp->pid, SIGKILL);
	waitpid(pp->pid, NULL, 0);
}
