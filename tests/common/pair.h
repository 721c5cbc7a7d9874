/* SPDX-License-Identifier: BSD-3-Clause */
/* A connected pair of endpoints in one process, on the test transport. */
#ifndef RCC_TEST_PAIR_H
#define RCC_TEST_PAIR_H

#include <sys/types.h>

#include "harness.h"

struct pair {
	struct rcc_ctx *ctx;        /* a's context, and b's unless opened split */
	struct rcc_ctx *ctx_b;      /* b's and the listener's: ctx, or one of its own */
	struct rcc_cq *cq_a, *cq_b; /* a: the client side, b: the server side */
	struct rcc_ep *a, *b;
	struct rcc_listener *lst;
};

struct pair_opts {
	enum rcc_cq_mode mode; /* both CQs */
	uint32_t cq_depth;
	struct rcc_ep_attr attr_a; /* CQ fields are filled in */
	struct rcc_ep_attr attr_b;
	uint32_t spin_us; /* RCC_CQ_HYBRID: both CQs' spin budget */
	bool split;       /* b on a context of its own (ctx_b): each side has its own
			   * progress thread, so one can be held while the other runs */
};

/* 0 or a negative errno (after printing why). */
int pair_open(struct pair *p, const struct pair_opts *o);
/* Connect two endpoints through lst (a listener of ctx): a from aa (the
 * connecting side), b from ab (accepted on a thread of its own). 0 and both
 * set, or a negative errno with neither left open (after printing why). */
int pair_connect(struct rcc_ctx *ctx, struct rcc_listener *lst, const struct rcc_ep_attr *aa,
		 const struct rcc_ep_attr *ab, struct rcc_ep **a, struct rcc_ep **b);
void pair_close(struct pair *p);

/* Teardown is part of what a case checks: a CQ still in use or a context
 * with an object left open means something leaked or was never released.
 * Fails the case (without returning) when call returns an error. */
#define TEARDOWN(call)                                                           \
	do {                                                                     \
		int rc_ = (call);                                                \
		if (rc_)                                                         \
			test_fail(__FILE__, __LINE__, "teardown: %s: %s", #call, \
				  rcc_strerror(rc_));                            \
	} while (0)

/* Open a context on the test transport. */
int test_ctx_open(struct rcc_ctx **ctx);

/* Wait (bounded) for one completion; 0 or -ETIMEDOUT / error. */
int wait_one(struct rcc_cq *cq, struct rcc_wc *wc, int timeout_ms);
/* Wait for n completions into wc[]; returns how many arrived. */
int wait_n(struct rcc_cq *cq, struct rcc_wc *wc, int n, int timeout_ms);

/* Every access flag a region can have. */
#define ALL_ACCESS                                                                   \
	(RCC_ACCESS_LOCAL_WRITE | RCC_ACCESS_REMOTE_WRITE | RCC_ACCESS_REMOTE_READ | \
	 RCC_ACCESS_REMOTE_ATOMIC)

/* Check (in a test case) that the next completion on cq has this wr_id and status. */
#define EXPECT_STATUS(cq, id, st)                               \
	do {                                                    \
		struct rcc_wc w_;                               \
		CHECK_OK(wait_one((cq), &w_, TEST_TIMEOUT_MS)); \
		CHECK_EQ(w_.wr_id, (id));                       \
		CHECK_WC(w_, (st));                             \
	} while (0)

/* A registered, zeroed, page-aligned buffer. */
struct tbuf {
	uint8_t *p;
	size_t len;
	struct rcc_mr *mr;
};
int tbuf_alloc(struct tbuf *b, struct rcc_ctx *ctx, size_t len, unsigned access);
/* Deregister (a failure fails the case, and the memory is then left
 * allocated) and free. */
void tbuf_free(struct tbuf *b);
struct rcc_sge tbuf_sge(const struct tbuf *b, size_t off, uint32_t len);

/*
 * A peer in a process of its own (kill -9 tests): peer_spawn() forks a child
 * that waits for a port, then starts self again by exec as
 * "self --peer-child PORT FD" (rdma-core state must not cross a fork; by
 * name, not /proc/self/exe: under valgrind that is valgrind). The child
 * writes one byte to FD once connected. 0 or -errno. peer_spawn_as() runs
 * "self ROLE PORT FD" instead, for a test's other kinds of peer.
 */
struct peer_proc {
	pid_t pid;
	int to_child;   /* the port goes here */
	int from_child; /* one byte: connected */
};
int peer_spawn(struct peer_proc *pp, const char *self);
int peer_spawn_as(struct peer_proc *pp, const char *self, const char *role);
/* A child that listens writes its port (an int) to FD first: read it (0: none). */
int peer_port(struct peer_proc *pp);
/* Give the child the port (0: it gives up); then whether it said it connected. */
void peer_go(struct peer_proc *pp, int port);
bool peer_connected(struct peer_proc *pp);
/*
 * The child's side of such a pair, for its role function: open a context and
 * a CQ (cq_attr; NULL: defaults) and one connection with attr (send_cq is
 * filled in): serves: listen, write the port (an int) to notify_fd, accept
 * one client; else connect to port. 0, or a non-zero status for the child
 * to exit with (what is open then is left to the exit).
 */
struct peer_child {
	struct rcc_ctx *ctx;
	struct rcc_cq *cq;
	struct rcc_listener *lst; /* NULL when it connected */
	struct rcc_ep *ep;
};
int peer_child_open(bool serves, int port, int notify_fd, const struct rcc_cq_attr *cq_attr,
		    struct rcc_ep_attr attr, struct peer_child *pc);
/* SIGKILL and reap. */
void peer_kill(struct peer_proc *pp);

#endif
