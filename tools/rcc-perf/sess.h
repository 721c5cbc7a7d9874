/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A run's live state: the control channel, the data endpoints with their
 * memory, and the helpers that wait on them without ever waiting forever.
 */
#ifndef RCC_PERF_SESS_H
#define RCC_PERF_SESS_H

#include "perf.h"
#include "rcc/session.h"

void perr(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* rcc_strerror(), but says "connection to the peer lost" for the ways a dead
 * peer shows up. */
const char *perf_strerror(int rc);

/* ------------------------------------------------------------------ control */

#define CTRL_SLOTS 16 /* the channel's credits */
/* How long a message waits for a credit: only a dead or stuck peer keeps them all. */
#define CTRL_SEND_WAIT_MS 10000

struct ctrl {
	struct rcc_chan *ch; /* own CQ in WAIT mode: a passive side sleeps on it */
	struct rcc_ep *ep;
	struct ctrl_msg back; /* ctrl_unget()'s message, taken first */
	bool have_back;
	uint64_t last_heard_ns; /* any message from the peer */
	int err;                /* a malformed message came (those before it still count) */
};

/* The channel; ctrl_fill_attr() for the endpoint to connect/accept, then
 * ctrl_bind() once c->ep exists. */
int ctrl_init(struct ctrl *c, struct rcc_ctx *ctx);
void ctrl_fill_attr(struct ctrl *c, struct rcc_ep_attr *attr);
int ctrl_bind(struct ctrl *c);
void ctrl_fini(struct ctrl *c);
int ctrl_send(struct ctrl *c, const struct ctrl_msg *m);
/* ctrl_send(), waiting at most timeout_ms for a credit (0: -EAGAIN at once,
 * else -ETIMEDOUT). */
int ctrl_send_within(struct ctrl *c, const struct ctrl_msg *m, int timeout_ms);
/* Non-blocking: 1 with a message, 0 none, negative errno if the connection is gone. */
int ctrl_poll(struct ctrl *c, struct ctrl_msg *m);
/* Put back the message ctrl_poll() just returned: it is for a later step. */
void ctrl_unget(struct ctrl *c, const struct ctrl_msg *m);
/* A message other than a heartbeat within timeout_ms of silence (heartbeats extend it). */
int ctrl_wait(struct ctrl *c, struct ctrl_msg *m, int timeout_ms);
/* ctrl_wait and insist on the type (and the point, for READY). */
int ctrl_expect(struct ctrl *c, uint8_t type, struct ctrl_msg *m, int timeout_ms);

/* --------------------------------------------------------------------- data */

struct pep { /* one data endpoint */
	struct rcc_ep *ep;
	int index;
	uint8_t *buf;    /* [local area | target area] */
	bool buf_shared; /* from rcc_mem_alloc() (else the heap) */
	size_t area;     /* bytes per area */
	struct rcc_mr *mr;
	struct rcc_remote_mr remote; /* the peer's region, same layout (not with -c UD) */
	struct rcc_ah *ah;           /* -c UD: the peer's datagram endpoint */
	uint32_t lkey;
	/* receives */
	uint32_t rx_slots;    /* receive buffers in the target area */
	uint32_t rx_posted;   /* outstanding receives */
	uint64_t rx_post_seq; /* receives ever posted: picks the next slot */
	uint64_t rx_seq;      /* receives completed in the current point */
	/* bandwidth bookkeeping of this endpoint's send queue */
	uint64_t posted, completed; /* messages of the current point */
	uint64_t target;            /* post up to this many (bandwidth phase) */
	uint32_t sq_unsig;          /* unsignalled sends since the last signalled one */
	uint64_t *ring;             /* global index of each outstanding message */
	uint32_t ring_mask;
};

struct sess {
	const struct perf_config *cfg;
	struct perf_params p; /* the plan in force (the client's) */
	bool server;
	const char *transport;
	const char *path; /* rcc_ep_path() of the data endpoints: "shm", "tcp", "verbs" */
	struct rcc_ctx *ctx;
	struct rcc_cq *cq; /* data CQ, every data endpoint */
	int epfd;          /* FD mode: epoll over the CQ's descriptor */
	struct ctrl ctrl;
	struct pep *eps;
	int neps;
	uint32_t max_size;
	uint32_t stride;     /* slot stride: max size rounded to 64 */
	uint32_t max_inline; /* what the endpoints took */
	uint32_t rx_want;    /* receives kept posted per endpoint (sess_rx_want) */
	int timeout_ms;
	uint64_t last_hb_ns; /* active side: last heartbeat sent */
	struct done_set {
		bool *seen;      /* per endpoint */
		uint64_t *count; /* messages the peer sent on it (warm-up included) */
		int n;
	} peer; /* the peer's DONEs of the current point */
	struct perf_results results;
};

/* conn.c */
int sess_client_connect(struct sess *s);
/* Wait for one client and set everything up; -ETIMEDOUT after the accept timeout. */
int sess_server_accept(struct sess *s, struct rcc_listener *lst);
void sess_close(struct sess *s);
/* Bytes of the area for the plan (also the receive slot budget). */
size_t sess_area_bytes(const struct perf_params *p, uint32_t stride);

/* wait.c: taking completions from the data CQ in its mode */
struct waiter {
	uint64_t deadline_ns;
	unsigned calls;
	bool progressed;   /* since the last clock check */
	bool passive_peer; /* send heartbeats: the peer only sleeps on control */
};
/* Up to max completions; 0 if none yet (poll mode returns at once, the
 * blocking modes after a short slice). Negative errno on a CQ failure. */
int data_cq_take(struct sess *s, struct rcc_wc *wc, int max);
void waiter_start(struct sess *s, struct waiter *w, bool passive_peer);
/*
 * Call once per turn of a wait loop, saying whether the turn moved anything.
 * Every so often (every turn in the blocking modes when idle) it checks the
 * clock, the connections and the heartbeat. 0: go on; negative errno: give up
 * (after printing why).
 */
int waiter_tick(struct sess *s, struct waiter *w, bool progress);
/* Every data endpoint and the control endpoint still connected? */
int sess_check_links(struct sess *s);
/* A bad completion: print it and return a negative errno. */
int wc_error(struct sess *s, const struct rcc_wc *wc, const char *what);

/* Receives kept posted on every data endpoint (0 when no test needs them). */
uint32_t sess_rx_want(const struct sess *s);
/* Build up to max receive requests for e's next slots (wrs/sges: max entries). */
int pep_recv_wrs(struct sess *s, struct pep *e, int max, struct rcc_recv_wr *wrs,
		 struct rcc_sge *sges);
/* Top e up to sess_rx_want() posted receives. */
int pep_refill(struct sess *s, struct pep *e);
/* The buffer a receive completion filled. */
static inline uint8_t *recv_buf(const struct sess *s, const struct pep *e, uint64_t wr_id)
{
	return e->buf + e->area + (size_t)(wr_id & ~(1ull << 63)) * s->stride;
}

/* done.c: the end of a point */
void done_reset(struct sess *s);
/* DONE for endpoint ep, waiting up to timeout_ms for a control credit: 0,
 * -EAGAIN (not printed) when timeout_ms is 0 and none is free, or a printed
 * error. */
int done_send(struct sess *s, enum perf_op op, enum perf_kind kind, uint32_t size, int ep,
	      uint64_t count, int timeout_ms);
/* Non-blocking: take DONEs (and heartbeats: *heard) that arrived. */
int done_poll(struct sess *s, struct done_set *d, bool *heard);
/* Until `want` DONEs: asleep on the control channel, or with --target-poll
 * busy-polling the data CQ. */
int done_wait(struct sess *s, struct done_set *d, int want);
/* RESULT: the server's own figures (bidirectional) and any error it saw. */
int result_send(struct sess *s, enum perf_op op, enum perf_kind kind, uint32_t size, uint64_t msgs,
		uint64_t ns, double peak_ns, int err);

/* lat.c / bw.c: one point; fills pt on the measuring side. */
int run_lat(struct sess *s, enum perf_op op, uint32_t size, struct perf_point *pt);
int run_bw(struct sess *s, enum perf_op op, uint32_t size, struct perf_point *pt);

/* Local and target area addresses. */
static inline uint8_t *local_at(const struct pep *e, size_t off) { return e->buf + off; }

static inline uint8_t *target_at(const struct pep *e, size_t off) { return e->buf + e->area + off; }

static inline uint64_t remote_target(const struct pep *e, size_t off)
{
	return e->remote.addr + e->area + off;
}

/* wr_id tags: receives and sends share the CQ */
#define WR_RECV (1ull << 63)

#endif
