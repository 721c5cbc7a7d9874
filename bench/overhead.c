/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The hot path, nothing else: one process connects a pair of endpoints to
 * itself and repeats one operation N times -- post, then poll until it
 * completed (for SEND also the receive: post_recv, poll the receiver). Run
 * under valgrind --tool=callgrind twice with different N by
 * bench/overhead.sh, the difference gives the user-space instructions one
 * operation costs in the library, every thread included (the set-up cancels
 * out). Only the public API is used.
 *
 *   bench_overhead send|write|read|fadd|empty N [transport [passive]]
 * (empty: N polls of an empty CQ, the price of one to take out of the rest)
 * passive: the target is left to the library, as at a NIC -- only the
 * initiator's CQ is polled (SEND: then the receiver's, once), with a yield
 * after each empty poll (wait_one); bench/overhead.sh's shm rows, where the
 * progress thread serves the target and is counted apart.
 * The pair connects over RCC_TEST_ADDR (127.0.0.1 by default, as the tests):
 * rdma_cm cannot route over lo, so verbs in the Soft-RoCE VM needs $RXE_IP.
 *
 * Prints "op N empty_polls" on success; exits 1 on any failure, 2 on usage.
 */
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rcc/rcc.h>

#define SIZE 8
#define DEADLINE_POLLS 100000000ull

struct accept_job {
	struct rcc_listener *lst;
	struct rcc_ep_attr attr;
	struct rcc_ep *ep;
	int rc;
};

static void *accept_main(void *arg)
{
	struct accept_job *j = arg;
	j->rc = rcc_accept(j->lst, &j->attr, 10000, &j->ep);
	return NULL;
}

/*
 * Poll cq until one completion; counts the empty polls. 0 or -1. other (may
 * be NULL) is the peer's CQ, polled after each empty poll: on a transport
 * whose poll also makes progress (tcp) this thread then serves the target's
 * side itself instead of spinning until another thread did -- the count is
 * the work, not the wait.
 */
static int take_one(struct rcc_cq *cq, struct rcc_cq *other, uint64_t *empty)
{
	struct rcc_wc wc;

	for (uint64_t i = 0; i < DEADLINE_POLLS; i++) {
		int n = rcc_cq_poll(cq, &wc, 1);
		if (n < 0)
			return -1;
		if (n == 0) {
			(*empty)++;
			if (other && rcc_cq_poll(other, &wc, 1) != 0)
				return -1; /* the target's CQ never gets a completion here */
			continue;
		}
		if (wc.status != RCC_WC_SUCCESS) {
			fprintf(stderr, "completion: %s\n", rcc_wc_status_str(wc.status));
			return -1;
		}
		return 0;
	}
	fprintf(stderr, "no completion\n");
	return -1;
}

/*
 * The passive target's wait: poll cq until one completion, yielding the CPU
 * after each empty poll, and never poll the peer's CQ -- the target's side is
 * then its progress thread's, as at a target that does not call the library.
 * Under valgrind, which runs one thread at a time, the yield hands over at
 * once instead of spinning a whole time slice, so there are few empty polls.
 * 0 on a completion, 1 once limit empty polls were made, -1 on failure. The
 * "empty" op in passive mode is this same loop with nothing outstanding, so
 * an empty poll and the price it is taken out at are the same instructions.
 */
static int wait_one(struct rcc_cq *cq, uint64_t *empty, uint64_t limit)
{
	struct rcc_wc wc;

	for (uint64_t i = 0; i < limit; i++) {
		int n = rcc_cq_poll(cq, &wc, 1);
		if (n < 0)
			return -1;
		if (n == 0) {
			(*empty)++;
			sched_yield();
			continue;
		}
		if (wc.status != RCC_WC_SUCCESS) {
			fprintf(stderr, "completion: %s\n", rcc_wc_status_str(wc.status));
			return -1;
		}
		return 0;
	}
	return 1;
}

/* SEND: the sender's and the receiver's completion, polling both CQs in turn. */
static int take_both(struct rcc_cq *a, struct rcc_cq *b, uint64_t *empty)
{
	struct rcc_wc wc;
	int need_a = 1, need_b = 1;

	for (uint64_t i = 0; (need_a || need_b) && i < DEADLINE_POLLS; i++) {
		/* both, every time: the side already done may still owe the other
		 * its progress (an acknowledgement), and nothing else is pending */
		int na = rcc_cq_poll(a, &wc, 1);
		if (na < 0 || na > need_a || (na && wc.status != RCC_WC_SUCCESS))
			return -1;
		int nb = rcc_cq_poll(b, &wc, 1);
		if (nb < 0 || nb > need_b || (nb && wc.status != RCC_WC_SUCCESS))
			return -1;
		need_a -= na;
		need_b -= nb;
		*empty += (uint64_t)!na + (uint64_t)!nb;
	}
	return need_a || need_b ? -1 : 0;
}

struct rig {
	struct rcc_ctx *ctx;
	struct rcc_cq *cq_a, *cq_b;
	struct rcc_listener *lst;
	struct rcc_ep *a, *b;
	struct rcc_mr *mr;
	uint64_t *buf; /* [0..SIZE): a's source/result, [64..): b's target */
};

static int rig_open(struct rig *r, enum rcc_transport t)
{
	struct rcc_ctx_attr ca = { .transport = t };
	struct rcc_cq_attr qa = { .depth = 64, .mode = RCC_CQ_POLL };
	struct accept_job job = { 0 };
	const char *host = getenv("RCC_TEST_ADDR");
	pthread_t th;
	char addr[80];

	if (!host || !*host)
		host = "127.0.0.1";
	snprintf(addr, sizeof(addr), "%s:0", host);

	if (rcc_ctx_open(&ca, &r->ctx) || rcc_cq_create(r->ctx, &qa, &r->cq_a) ||
	    rcc_cq_create(r->ctx, &qa, &r->cq_b) || rcc_listen(r->ctx, addr, 4, &r->lst))
		return -1;
	r->buf = aligned_alloc(64, 4096);
	if (!r->buf)
		return -1;
	memset(r->buf, 0, 4096);
	if (rcc_mr_reg(r->ctx, r->buf, 4096,
		       RCC_ACCESS_LOCAL_WRITE | RCC_ACCESS_REMOTE_WRITE | RCC_ACCESS_REMOTE_READ |
			       RCC_ACCESS_REMOTE_ATOMIC,
		       &r->mr))
		return -1;
	job.lst = r->lst;
	job.attr = (struct rcc_ep_attr){ .send_cq = r->cq_b, .max_rd_atomic = 1 };
	if (pthread_create(&th, NULL, accept_main, &job))
		return -1;
	struct rcc_ep_attr ea = { .send_cq = r->cq_a, .max_rd_atomic = 1 };
	snprintf(addr, sizeof(addr), "%s:%d", host, rcc_listener_port(r->lst));
	int rc = rcc_connect(r->ctx, addr, &ea, 10000, &r->a);
	pthread_join(th, NULL);
	if (rc || job.rc) {
		fprintf(stderr, "connect: %s / accept: %s\n", rcc_strerror(rc),
			rcc_strerror(job.rc));
		return -1;
	}
	r->b = job.ep;
	return 0;
}

static void rig_close(struct rig *r)
{
	if (r->a)
		rcc_ep_close(r->a);
	if (r->b)
		rcc_ep_close(r->b);
	if (r->lst)
		rcc_listener_close(r->lst);
	if (r->mr)
		rcc_mr_dereg(r->mr);
	if (r->cq_a)
		rcc_cq_destroy(r->cq_a);
	if (r->cq_b)
		rcc_cq_destroy(r->cq_b);
	if (r->ctx)
		rcc_ctx_close(r->ctx);
	free(r->buf);
}

static int run(struct rig *r, const char *op, long n, bool passive, uint64_t *empty)
{
	struct rcc_sge src = rcc_mr_sge(r->mr, r->buf, SIZE);
	struct rcc_sge dst = rcc_mr_sge(r->mr, r->buf + 8, SIZE);
	uint64_t target = (uint64_t)(uintptr_t)(r->buf + 8);
	uint32_t rkey = rcc_mr_rkey(r->mr);
	const unsigned sig = RCC_SEND_SIGNALED;

	if (passive && !strcmp(op, "empty")) /* n empty polls of the wait loop itself */
		return wait_one(r->cq_a, empty, (uint64_t)n) == 1 ? 0 : -1;
	for (long i = 0; i < n; i++) {
		int rc;
		if (!strcmp(op, "empty")) {
			/* the price of one empty poll, to take out of the others */
			struct rcc_wc wc;
			if (rcc_cq_poll(r->cq_a, &wc, 1) != 0)
				return -1;
			(*empty)++;
			continue;
		}
		if (!strcmp(op, "send")) {
			rc = rcc_post_recv(r->b, &dst, 1, (uint64_t)i);
			rc = rc ? rc : rcc_post_send(r->a, &src, 1, (uint64_t)i, sig);
			if (rc)
				return -1;
			/* passive: the receiver's completion is queued before the
			 * sender's ack leaves, so its CQ is polled once it is there */
			if (passive ? wait_one(r->cq_a, empty, DEADLINE_POLLS) ||
					      wait_one(r->cq_b, empty, DEADLINE_POLLS) :
				      take_both(r->cq_a, r->cq_b, empty))
				return -1;
			continue;
		}
		if (!strcmp(op, "write"))
			rc = rcc_post_write(r->a, &src, 1, target, rkey, (uint64_t)i, sig);
		else if (!strcmp(op, "read"))
			rc = rcc_post_read(r->a, &src, 1, target, rkey, (uint64_t)i, sig);
		else
			rc = rcc_post_fadd(r->a, &src, target, rkey, 1, (uint64_t)i, sig);
		if (rc || (passive ? wait_one(r->cq_a, empty, DEADLINE_POLLS) :
				     take_one(r->cq_a, r->cq_b, empty)))
			return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct rig r = { 0 };
	enum rcc_transport t = RCC_TRANSPORT_TCP;
	uint64_t empty = 0;
	long n;

	if (argc < 3 || argc > 5 || (n = strtol(argv[2], NULL, 10)) <= 0 ||
	    (strcmp(argv[1], "send") && strcmp(argv[1], "write") && strcmp(argv[1], "read") &&
	     strcmp(argv[1], "fadd") && strcmp(argv[1], "empty")) ||
	    (argc >= 4 && rcc_transport_parse(argv[3], &t)) ||
	    (argc == 5 && strcmp(argv[4], "passive"))) {
		fprintf(stderr,
			"usage: %s send|write|read|fadd|empty N [auto|verbs|tcp [passive]]\n",
			argv[0]);
		return 2;
	}
	bool passive = argc == 5;
	int rc = rig_open(&r, t) || run(&r, argv[1], n, passive, &empty) ? 1 : 0;
	if (!rc)
		printf("%s %ld %llu\n", argv[1], n, (unsigned long long)empty);
	rig_close(&r);
	return rc;
}
