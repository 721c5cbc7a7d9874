/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tcp transport: reliable-connected RDMA semantics over one TCP
 * connection per endpoint.
 *
 * Model. Each side numbers its requests (SEND, WRITE, READ, atomics) by their
 * send-queue index, the "msn". The responder executes requests strictly in
 * msn order and reports progress with a cumulative ack (the next msn it
 * expects) carried by every frame it sends; READ and atomic requests are
 * answered by response frames. A send-side work request completes only when
 * the peer has acknowledged or answered it, and completions leave the send
 * queue in order. A SEND that finds no posted receive is refused with an RNR
 * NAK; the responder then drops requests until the initiator retransmits from
 * that msn (go-back-N), after the responder's RNR timer.
 *
 * Progress. Bytes are moved by whoever gets there first: the application
 * thread inside rcc_cq_poll() (busy polling, so a ping-pong costs what a raw
 * TCP ping-pong costs), or the context's progress thread, which serves
 * endpoints nobody is polling -- so one-sided operations complete at a target
 * that never calls the library, as on a NIC. While an application keeps
 * polling a POLL-mode CQ, the progress thread "parks" that CQ's endpoints (stops
 * watching their input) so the two never fight over a core.
 *
 * Locks, always taken in this order, each optional:
 *   cq->eps_lock -> ep->rx_lock -> ep->tx_lock -> ep->rq_lock -> srq->lock
 *   -> ep->ev_lock -> ctx->mr_lock (read side) -> cq->lock
 * ctx->eps_lock is taken only by the progress thread's list walk and by
 * endpoint creation/destruction, never while holding any lock above.
 * ctx->cma_lock (the endpoints with single-copy slots) is taken by
 * rcc_mr_dereg() before mr_lock's write side, by endpoint start and
 * destruction holding no other lock, and by rcci_ep_fail() (whose caller
 * may hold cq->eps_lock and rx_lock); nothing takes an endpoint's or a
 * CQ's lock, or mr_lock's read side, while holding it.
 */
#ifndef RCC_TCP_H
#define RCC_TCP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "rcc/util.h"
#include "base/handshakes.h"
#include "base/lock.h"
#include "base/rwlock.h"
#include "base/u32map.h"
#include "transport/transport.h"
#include "shm_ring.h"
#include "wire.h"

/* ------------------------------------------------------------------ memory */

struct tcp_mr {
	struct rcc_mr base; /* lkey == rkey: one random, non-zero key */
	/* ctx->map_mrs (cma_lock): on rcc_mem_alloc() memory with remote
	 * access, published to shared-memory peers (shm_map.h). */
	struct tcp_mr *map_next;
	bool map_listed;
};

/* Open addressing, linear probing; key 0 marks a free slot, ~0 a tombstone. */
struct key_table {
	struct rcci_u32map map; /* key -> struct tcp_mr */
};

int rcci_keys_init(struct key_table *t);
void rcci_keys_free(struct key_table *t);
/* Insert mr under a fresh random key (written to mr lkey/rkey). */
int rcci_keys_insert(struct key_table *t, struct tcp_mr *mr);
void rcci_keys_remove(struct key_table *t, uint32_t key);
/* A random 32-bit value, never the table's reserved keys (0, ~0). */
uint32_t rcci_keys_random(void);
static inline struct tcp_mr *keys_find(const struct key_table *t, uint32_t key)
{
	return rcci_u32map_find(&t->map, key);
}

/* ----------------------------------------------------------------- context */

struct tcp_ep;
struct tcp_ud;

struct tcp_ctx {
	struct rcc_ctx base;
	enum rcc_shm shm;      /* resolved: RCC_SHM_AUTO here means "when possible" */
	uint32_t shm_ring_cap; /* what rcc_accept() offers (RCC_SHM_RING_KIB) */
	/* Registered memory: writers (reg/dereg) exclude every access to it. */
	struct rcci_rwlock mr_lock;
	struct key_table keys;

	pthread_t thread;
	int epfd;   /* the progress thread's epoll set */
	int wakefd; /* eventfd: wake the progress thread */
	atomic_bool stop;

	pthread_mutex_t eps_lock;
	pthread_cond_t pass_cond;
	struct tcp_ep *eps;    /* every endpoint of this context */
	uint64_t pass_seq;     /* completed passes of the progress thread */
	atomic_int parked;     /* endpoints parked */
	atomic_int timers;     /* endpoints waiting out an RNR backoff or owing an ack */
	atomic_int held_fails; /* endpoints whose failure waits for the peer's copy (ep.c) */
	/* A thread went to sleep while some endpoint owed an ack: serve timers
	 * now, not at the next tick (rcci_tcp_cq_sleep, progress.c). */
	atomic_bool timers_due;
	uint64_t spin_ns; /* how long the thread keeps looking after moving bytes */
	/* Shortest heartbeat period any endpoint has needed: the thread visits
	 * every endpoint this often (0: none yet). Only ever shrinks. */
	atomic_ullong hb_ns;
	atomic_int nshm; /* endpoints on shared memory (the thread arms them before sleeping) */
	/* Endpoints whose requests may name slots (single copy, shm_cma.h):
	 * rcc_mr_dereg() kills the slots naming the region it drops. */
	pthread_mutex_t cma_lock;
	struct tcp_ep *cma_eps;
	/* Regions shared-memory peers may map (shm_map.h), under cma_lock:
	 * published to every endpoint of cma_eps. */
	struct tcp_mr *map_mrs;
};

/* keys.c: check that [addr, addr+len) lies in the live region of key with
 * access. The _locked form expects ctx->mr_lock held (either side). */
bool rcci_mr_covers(struct tcp_ctx *ctx, uint32_t key, uint64_t addr, uint64_t len,
		    unsigned access);
bool rcci_mr_covers_locked(struct tcp_ctx *ctx, uint32_t key, uint64_t addr, uint64_t len,
			   unsigned access);

/* Heartbeats go out at an eighth of the timeout: a peer is declared dead
 * only after eight in a row went missing, so a sender stalled for most of a
 * timeout (a loaded host) is not taken for dead. A peer cannot ask for them
 * more often than TCP_HB_MIN_NS (what it asks for is hostile input). The
 * same numbers as verbs' (transport/transport.h). */
#define TCP_HB_PER_TIMEOUT RCCI_HB_PER_TIMEOUT
#define TCP_HB_MIN_NS RCCI_HB_MIN_NS

/* RCC_TCP_SPIN_US overrides it; 0 makes the progress thread sleep at once. */
#define TCP_SPIN_US_DEFAULT 50
/* As for RCC_CQ_SPIN_US: a spin of more than 10 s is surely a mistake. */
#define TCP_SPIN_US_MAX RCC_CQ_SPIN_US_MAX

/* ---------------------------------------------------------------------- CQ */

/* Which work queue a completion's polling releases slots of (see the slot
 * rule in rcc.h: a slot is free only once its completion was polled). */
enum cqe_frees {
	FREES_SQ = 0,
	FREES_RQ,
};

struct tcp_cqe {
	struct rcc_wc wc;
	uint32_t next; /* the endpoint's sq_free / rq_free once this is polled */
	uint8_t frees; /* enum cqe_frees */
};

struct tcp_cq {
	struct rcc_cq base;
	struct rcci_lock lock;
	struct tcp_cqe *ring;
	uint32_t cap, head, count; /* count never exceeds base.depth */
	atomic_uint nready;        /* == count; lets poll skip the lock when empty */
	/* A completion found the ring holding base.depth entries and was lost,
	 * as on a device: every endpoint using this CQ fails (see rcc.h). */
	atomic_bool overrun;
	int efd; /* eventfd readable while completions wait (all modes but POLL) */
	bool efd_set;
	atomic_uint polls; /* bumped by every poll that found the ring empty */

	struct rcci_lock eps_lock;
	struct tcp_ep **eps; /* endpoints using this CQ: progressed by poll */
	int neps, eps_cap;
	/* epoll over their sockets (a shared-memory endpoint's, its doorbell,
	 * but in FD mode until rcc_cq_arm()) and, but in POLL mode, the eventfd
	 * as a NULL entry: what poll asks for input, and what a waiter sleeps
	 * on (cq.c). */
	int pepfd;
	/* FD mode: the application has called rcc_cq_arm(), so it arms before
	 * it sleeps in its own epoll: shared-memory doorbells are in pepfd and
	 * the CQ counts for parking (progress.c). Set once, under eps_lock. */
	atomic_bool app_arms;
};

/* Queue a completion (lost, and the CQ overruns, when it is full); polling it
 * releases the slots of queue frees below next. */
void rcci_cq_push(struct tcp_cq *cq, const struct rcc_wc *wc, enum cqe_frees frees, uint32_t next);
/* Whether a CQ of this endpoint overran (it must then fail). */
bool rcci_cq_overran(const struct tcp_ep *ep);
/* Remove every completion that names ep. */
void rcci_cq_forget_ep(struct tcp_cq *cq, struct rcc_ep *ep);
int rcci_cq_attach(struct tcp_cq *cq, struct tcp_ep *ep);
void rcci_cq_unwatch(struct tcp_ep *ep);
void rcci_cq_detach(struct tcp_cq *cq, struct tcp_ep *ep);

int rcci_tcp_cq_create(struct rcc_cq *cq);
void rcci_tcp_cq_destroy(struct rcc_cq *cq);
int rcci_tcp_cq_poll(struct rcc_cq *cq, struct rcc_wc *wc, int max);
int rcci_tcp_cq_fd(struct rcc_cq *cq);
int rcci_tcp_cq_sleep(struct rcc_cq *cq, uint64_t deadline);
int rcci_tcp_cq_arm(struct rcc_cq *cq);
int rcci_tcp_cq_poll_before_sleep(struct rcc_cq *cq, struct rcc_wc *wc, int max);
/* Whether a poll or wait on cq looks after the shared-memory endpoints
 * that use it (arms their rings before sleeping): not an FD-mode CQ whose
 * application never called rcc_cq_arm(). */
static inline bool rcci_cq_minds_shm(struct tcp_cq *cq)
{
	return cq->base.mode != RCC_CQ_FD ||
	       atomic_load_explicit(&cq->app_arms, memory_order_relaxed);
}

/* ---------------------------------------------------------------- endpoint */

enum wqe_state {
	WQE_QUEUED = 0, /* not (completely) on the wire yet */
	WQE_SENT,       /* on the wire, waiting for the ack or the response */
	WQE_ANSWERED,   /* READ/atomic response fully received */
	WQE_FAILED,     /* refused at post time; completes with status in order */
};

struct sq_wqe {
	uint64_t wr_id;
	uint64_t raddr;
	uint64_t compare_add;
	uint64_t swap;
	uint32_t rkey;
	uint32_t imm;
	uint32_t total;  /* message length */
	uint32_t tx_off; /* bytes of it on the wire */
	uint32_t rx_off; /* READ: response bytes received */
	uint8_t opcode;  /* enum rcc_wr_opcode */
	uint8_t flags;   /* enum rcc_send_flags; sig_all folded into SIGNALED */
	uint8_t num_sge;
	uint8_t state;  /* enum wqe_state */
	uint8_t status; /* enum rcc_wc_status for WQE_FAILED */
	uint8_t rnr_tries;
	uint8_t cma; /* single copy: its slot + 1 (shm_cma.h), 0: on the ring */
	/* Mapped (shm_map.h): copied at post time; a zero-length WRITE frame
	 * keeps its msn, and it completes with that frame's ack. */
	uint8_t mapped;
};

struct rq_wqe {
	uint64_t wr_id;
	uint32_t total;
	uint8_t num_sge;
	uint8_t status; /* non-zero: failed its key check at post time */
};

/*
 * A shared receive queue: posted receives in FIFO order. A message takes the
 * oldest into the receive queue of the endpoint it arrives on (which holds
 * just that one, see resolve_attr), so everything after that -- filling,
 * completing, flushing -- is the endpoint's ordinary receive path. A slot
 * counts against max_wr from its post until its completion was polled.
 */
struct tcp_srq {
	struct rcc_srq base;
	struct rcci_lock lock;
	struct rq_wqe *wqe;
	struct rcc_sge *sge; /* base.max_sge per slot */
	uint32_t mask, head, tail;
	uint32_t limit;   /* armed low-watermark; 0: disarmed */
	atomic_uint held; /* posted, or completed and not yet polled */
};

static inline struct tcp_srq *tsrq(struct rcc_srq *s) { return (struct tcp_srq *)s; }

int rcci_tcp_srq_create(struct rcc_srq *srq);
void rcci_tcp_srq_destroy(struct rcc_srq *srq);
int rcci_tcp_srq_post_recv(struct rcc_srq *srq, const struct rcc_recv_wr *wr, int n, int *posted);
int rcci_tcp_srq_arm(struct rcc_srq *srq, uint32_t limit);
/* Move the SRQ's oldest receive into ep's (empty) receive queue; false when
 * the SRQ is empty. Caller holds ep->rq_lock. */
bool rcci_srq_take(struct tcp_ep *ep);
/* A completion of a receive taken from srq was polled (or dropped). */
void rcci_srq_slot_free(struct rcc_srq *srq);

/* A response owed to the peer; sent in order, before our own requests. */
struct resp_job {
	uint8_t type;    /* WIRE_READ_RESP, WIRE_ATOMIC_RESP or WIRE_NAK */
	uint16_t status; /* NAK status */
	uint32_t msn;
	uint32_t rkey;  /* READ */
	uint64_t raddr; /* READ */
	uint32_t len;   /* READ length */
	uint32_t off;   /* READ bytes already sent */
	uint64_t value; /* ATOMIC_RESP */
	uint32_t imm;   /* NAK RNR: timer code */
	bool cma;       /* READ: the data was pushed already (single copy) */
};

enum rx_state {
	RX_HDR = 0,
	RX_PAYLOAD
};

enum rx_dest {
	DEST_DISCARD = 0,
	DEST_RECV,   /* a SEND into the receive WQE at rx_rq_idx */
	DEST_TARGET, /* a WRITE into local registered memory (rx_key, rx_addr) */
	DEST_READ,   /* READ response data into the send WQE at rx_sq_idx */
	DEST_SMALL,  /* atomic operands or result into rx_small */
	DEST_CMA,    /* a single-copy request's descriptor into rx_cma */
};

/* Where the connection is in its life (the public state is base.state). */
enum link_state {
	LINK_UP = 0,
	LINK_DRAINING, /* failed/closing: sending what is owed, then CLOSE */
	LINK_DOWN,     /* socket shut down; nothing more moves */
};

#define TX_MAX_IOV 64
#define TCP_MAX_SGE 16               /* the core's limit on SGEs per request */
#define TCP_RXBUF_SIZE (64u * 1024u) /* staging buffer for small frames */
#define TCP_DEFAULT_INLINE 256u
#define TCP_MAX_INLINE 4096u

/* What rcci_ep_fail() does to an endpoint (its arguments), and by when a
 * held failure is carried out whatever the peer does. */
struct ep_failure {
	enum rcc_ep_state st;
	int status;
	enum rcc_wc_status send_status, recv_status;
	const char *why;
	uint64_t deadline_ns; /* coarse clock */
};

struct tcp_ep {
	struct rcc_ep base;
	struct tcp_ctx *ctx;
	int fd; /* the TCP socket; on shared memory the Unix connection the region
		 * came over, which carries only doorbells and the peer's end */
	struct tcp_ep *next, *prev; /* ctx->eps */
	struct shm_ring shm;        /* the stream when base.on_shm */
	struct tcp_ep *cma_next;    /* ctx->cma_eps (cma_lock) */
	uint32_t cma_dereg_mask;    /* slots an rcc_mr_dereg() killed, to wait for (cma_lock) */
	bool cma_listed;
	bool shm_sock; /* rx_lock: this pass may read the socket (shm) */
	/* shm: a thread about to sleep on a CQ of this endpoint armed its ring
	 * (cq.c): the next poll reads the doorbell the peer may have rung. */
	atomic_bool user_bell;
	atomic_int link; /* enum link_state */

	/* ---- transmit side and the send queue (tx_lock) ---- */
	struct rcci_lock tx_lock;
	struct sq_wqe *sq;
	struct rcc_sge *sq_sge; /* attr.max_send_sge per slot */
	uint8_t *sq_inline;     /* max_inline bytes per slot */
	uint32_t sq_mask;
	uint32_t sq_head, sq_tx, sq_tail;
	/* One past the last request posted that is not mapped: a mapped copy
	 * may not overtake it, so waits until sq_head passed it. */
	uint32_t map_ring_last;
	/* Slots below this may be reused by a post: advanced only when the
	 * application polls a send completion, so unsignalled requests hold
	 * their slots until a later signalled one is polled, as on a NIC. */
	atomic_uint sq_free;
	uint32_t peer_ack;       /* requests below this are done at the peer; written
				  * by the receive side only (under rx_lock and tx_lock) */
	uint32_t rd_outstanding; /* READ/atomics on the wire and unanswered */
	uint32_t rd_max;         /* min(our max_rd_atomic, the peer's) */
	uint32_t resp_next;      /* oldest READ/atomic msn awaiting its response */
	struct resp_job *resp;
	uint32_t resp_mask, resp_head, resp_tail;
	bool rnr_wait; /* transmit paused for an RNR backoff */
	uint64_t rnr_until_ns;
	struct iovec part[TX_MAX_IOV + 1]; /* rest of a frame the socket did not take */
	int part_n, part_i;
	uint8_t part_hdr[WIRE_HDR_LEN + WIRE_ATOMIC_REQ_LEN];
	uint8_t *bounce;   /* payload of a partly sent frame, once we own it */
	uint32_t ack_sent; /* last ack value put on the wire */
	/* the thread that deferred the ack owed, by the address of its count,
	 * and that count's epoch (progress.c), until the ack goes out; NULL:
	 * none, or no longer known */
	const void *ack_deferrer;
	uint32_t ack_epoch;
	atomic_bool want_out;    /* the socket is full: watch for EPOLLOUT */
	atomic_bool tx_deferred; /* posts left for the next poll to send together */
	bool close_sent;
	bool shut_wr;
	uint64_t last_tx_ns; /* when we last put bytes on the wire (coarse clock) */
	bool hb_due;         /* send an ACK even if it says nothing new: a heartbeat */
	int tx_err;          /* socket error seen while sending */

	/* ---- receive side (rx_lock) ---- */
	struct rcci_lock rx_lock;
	uint8_t *rxbuf;
	uint32_t rx_start, rx_end;
	enum rx_state rx_state;
	struct wire_hdr rx_hdr;
	uint32_t rx_left; /* payload bytes of the current frame still to come */
	/* The current frame (or the last, between frames) carries a payload of
	 * DIRECT_MIN and up: socket reads stop at the next header (rx.c, fill). */
	bool rx_large;
	uint64_t rx_staged_bytes; /* payload bytes copied out of rxbuf (tests) */
	enum rx_dest rx_dest;
	uint32_t rx_off;    /* destination offset of the next payload byte */
	uint32_t rx_rq_idx; /* DEST_RECV: receive WQE being filled */
	uint32_t rx_sq_idx; /* DEST_READ: our READ being answered */
	uint32_t rx_key;    /* DEST_TARGET */
	uint64_t rx_addr;   /* DEST_TARGET: address of the next byte */
	uint8_t rx_small[WIRE_ATOMIC_REQ_LEN];
	uint32_t rx_small_len;
	uint8_t rx_cma[SHM_CMA_DESC_MAX];
	uint32_t rx_cma_len;
	uint16_t rx_bad;      /* NAK owed for this frame (destination went bad) */
	uint8_t rx_local_err; /* local completion status for this frame */
	/* requests from the peer */
	atomic_uint rx_expected; /* next msn expected; what we ack */
	bool rx_in_msg;          /* between FIRST and LAST of a request */
	uint8_t rx_msg_type;
	uint32_t rx_msg_total, rx_msg_done;
	bool rx_discard; /* after an RNR NAK: drop until the retransmission */
	uint32_t rx_discard_msn;
	atomic_uint unacked_bytes; /* request payload received since our last ack */
	bool rx_eof;
	/* Dead-peer detection (attr.peer_timeout_ms): nothing heard for
	 * peer_timeout_ns ends the connection. Our ACK frames carry our timeout
	 * in imm, so the peer knows how often it must speak. */
	uint64_t peer_timeout_ns;
	atomic_ullong last_rx_ns;  /* when bytes last arrived (coarse clock) */
	atomic_uint peer_wants_ms; /* the peer's timeout (0: not told yet) */

	/* ---- receive queue (rq_lock) ---- */
	struct rcci_lock rq_lock;
	struct rq_wqe *rq;
	struct rcc_sge *rq_sge;
	uint32_t rq_mask, rq_tail;
	/* The oldest receive not yet completed: moved by the receive side
	 * only, so rx_lock (and rq_lock as well where the tail is compared
	 * with it); the slot it names stays the poster's until rq_free passes it. */
	uint32_t rq_head;
	atomic_uint rq_free; /* as sq_free, for receives */

	/* ---- progress-thread bookkeeping ---- */
	pthread_mutex_t ev_lock;
	uint32_t ev_mask;         /* events registered in ctx->epfd (0: not registered) */
	bool removed;             /* leaving: never register again (ev_lock) */
	atomic_bool parked;       /* the application is polling it: input not watched */
	atomic_bool kick;         /* needs a pass of the progress thread */
	atomic_bool thread_timer; /* counted in ctx->timers */
	/* rcci_ep_fail() met the peer inside a copy of ours (stopped there, or
	 * frozen): the failure is held, and the progress thread finishes it
	 * once the copy ended or at the deadline (rcci_ep_fail_held()). Under
	 * rx_lock; fail_held is counted in ctx->held_fails. */
	atomic_bool fail_held;
	struct ep_failure held;
	atomic_bool cq_unwatched; /* the socket left its CQs' sets (rcci_cq_unwatch) */
	unsigned seen_polls[2];   /* progress thread only: send/recv CQ poll counters */

	/* RCC_QP_UD: the datagram side (ud.c: fd is its UDP socket, and only the
	 * queues, locks and progress fields above are used). NULL otherwise. */
	struct tcp_ud *ud;
};

struct tcp_listener {
	struct rcc_listener base;
	struct rcci_handshakes hs; /* the listening socket; accepted, hello not complete yet */
};

struct tcp_req {
	struct rcc_conn_req base;
	int fd;               /* the accepted socket, handshake read */
	uint32_t peer_rd_max; /* the client's max_rd_atomic */
	bool peer_shm;        /* the client offered shared memory */
	struct wire_shm_id peer_id;
};

static inline struct tcp_ep *tep(struct rcc_ep *ep) { return (struct tcp_ep *)ep; }
/* In service: connected, and no failure held (what arrives is carried out). */
static inline bool ep_serving(struct tcp_ep *ep)
{
	return atomic_load(&ep->base.state) == RCC_EP_CONNECTED && !atomic_load(&ep->fail_held);
}
static inline struct tcp_cq *tcq(struct rcc_cq *cq) { return (struct tcp_cq *)cq; }
static inline struct tcp_ctx *tctx(struct rcc_ctx *c) { return (struct tcp_ctx *)c; }

/* Serial-number comparison of 32-bit message numbers. */
static inline bool msn_lt(uint32_t a, uint32_t b) { return (int32_t)(a - b) < 0; }

/* READ and atomics wait for a response and count against rd_max. */
static inline bool is_rd_atomic(uint8_t op)
{
	return op == RCC_WR_READ || op == RCC_WR_CAS || op == RCC_WR_FADD;
}

/* The completion opcode of a send-queue request. */
static inline enum rcc_wc_opcode sq_wc_opcode(uint8_t op)
{
	switch (op) {
	case RCC_WR_SEND:
	case RCC_WR_SEND_IMM:
		return RCC_WC_SEND;
	case RCC_WR_WRITE:
	case RCC_WR_WRITE_IMM:
		return RCC_WC_WRITE;
	case RCC_WR_READ:
		return RCC_WC_READ;
	case RCC_WR_CAS:
		return RCC_WC_CAS;
	default:
		return RCC_WC_FADD;
	}
}

/* How often ep must send something for the peer (and itself) to be content. */
uint64_t rcci_ep_hb_period_ns(const struct tcp_ep *ep);
/* A thread is about to sleep: if it deferred an ack since it last slept,
 * have the progress thread serve every endpoint owing an ack (or waiting out
 * an RNR backoff) now. */
void rcci_progress_serve_timers(struct tcp_ctx *ctx);
/* The calling thread left ep's ack for its next poll (see serve_timers);
 * ep's ack went out (a post carried it, or a pass sent it); and whether
 * this thread owes one it deferred since it last slept (for tests). The
 * first two under ep's tx_lock. */
void rcci_progress_deferred_ack(struct tcp_ep *ep);
void rcci_progress_ack_sent(struct tcp_ep *ep);
bool rcci_progress_deferred_here(void);
/* Make the progress thread visit every endpoint at least every ns. */
void rcci_progress_hb_at_most(struct tcp_ctx *ctx, uint64_t ns);

/* ep.c: lifecycle. shm: the mapped region the stream runs over (taken over
 * on success), or NULL for the socket. */
int rcci_tcp_ep_start(struct tcp_ep *ep, int fd, uint32_t peer_rd_max, struct shm_ring *shm);
/* Move the endpoint out of service: public state (RCC_EP_ERROR or
 * RCC_EP_DISCONNECTED) first, then every outstanding request completes: the
 * oldest send with send_status and the oldest receive with recv_status when
 * those are not RCC_WC_SUCCESS, all others flushed; then the orderly close
 * starts. Setting the state before any completion is visible means an
 * application that sees the error also sees the endpoint out of service.
 * On shared memory the peer's copies into or out of our memory end first
 * (shm_cma_ep.c); while the peer stays inside one, the failure is held
 * (what arrives is dropped; the progress thread carries it out once the copy
 * ended, at most the peer timeout later: rcci_ep_fail_held()), so that no
 * thread -- the progress thread serving every other endpoint, or one in
 * rcc_cq_poll() -- waits for a stopped peer. Caller holds rx_lock. */
void rcci_ep_fail(struct tcp_ep *ep, enum rcc_ep_state st, int status,
		  enum rcc_wc_status send_status, enum rcc_wc_status recv_status, const char *why);
/* The progress thread, every tick while the endpoint's failure is held:
 * carry it out if the peer's copy ended or the deadline passed. Tries
 * rx_lock (taken: the next tick looks again); never waits. */
void rcci_ep_fail_held(struct tcp_ep *ep);
int rcci_tcp_ep_disconnect(struct rcc_ep *ep);
void rcci_tcp_ep_destroy(struct rcc_ep *ep);
/* Move bytes: read and execute what arrived, then transmit.
 * by_user: called from rcc_cq_poll (never blocks on rx_lock). */
void rcci_ep_progress(struct tcp_ep *ep, bool by_user);
void rcci_ep_set_want_out(struct tcp_ep *ep, bool on);
void rcci_ep_update_events(struct tcp_ep *ep);

/* ud.c: a datagram endpoint's pass (rcci_ep_progress hands it over). */
void rcci_ud_progress(struct tcp_ep *ep, bool by_user);

/* post.c: posting work requests (checked, then copied into the queues) */
/* Bytes a scatter/gather list covers (the core checked it fits). */
uint32_t rcci_sge_sum(const struct rcc_sge *sg, int n);
/* Fill q and its SGE slot from a receive request (key checked now). */
void rcci_rq_wqe_fill(struct tcp_ctx *ctx, struct rq_wqe *q, struct rcc_sge *sge,
		      const struct rcc_recv_wr *wr);
int rcci_tcp_post_send(struct rcc_ep *ep, const struct rcc_send_wr *wr, int n, int *posted);
int rcci_tcp_post_recv(struct rcc_ep *ep, const struct rcc_recv_wr *wr, int n, int *posted);

/* tx.c: building frames and writing them to the stream; caller holds tx_lock */
void rcci_tx_flush(struct tcp_ep *ep, bool ack_now);
/* The most payload one frame of ep carries. */
uint32_t rcci_tx_frame_max(const struct tcp_ep *ep);
/* Copy what a half-sent frame still needs from application memory into the
 * endpoint's own buffer (tx_lock held). 0 or -ENOMEM. */
int rcci_tx_own_partial(struct tcp_ep *ep);
int rcci_tx_queue_resp(struct tcp_ep *ep, const struct resp_job *job);

/* sq.c: the send queue's bookkeeping; caller holds tx_lock. Complete what is
 * done from the head, in order (a failed request at the head fails the
 * endpoint: tx_lock is dropped around rcci_ep_fail); go back to msn after an RNR
 * NAK (or fail it when its retries are spent). */
void rcci_sq_advance(struct tcp_ep *ep);
void rcci_sq_go_back(struct tcp_ep *ep, uint32_t msn, uint8_t timer_code);

/* The send WQE at index idx, and its scatter list. */
static inline struct sq_wqe *sq_at(struct tcp_ep *ep, uint32_t idx)
{
	return &ep->sq[idx & ep->sq_mask];
}

static inline const struct rcc_sge *sq_sges(struct tcp_ep *ep, uint32_t idx)
{
	return &ep->sq_sge[(size_t)(idx & ep->sq_mask) * ep->base.attr.max_send_sge];
}

/* rx.c: the receive stream's framing; caller holds rx_lock. Returns bytes
 * consumed (>= 0) or a negative errno that ends the connection (-ECONNRESET
 * for an orderly/unclean EOF). */
long rcci_rx_process(struct tcp_ep *ep, size_t budget);
/* Bytes [off, off+len) of a local scatter list: copy src there, or (src NULL)
 * read them from the stream. Every element touched must still be registered
 * with local write access: -EFAULT otherwise. */
long rcci_rx_sge_io(struct tcp_ep *ep, const struct rcc_sge *sg, int nsge, uint32_t off,
		    uint32_t len, const uint8_t *src);

/* responder.c: the peer's requests, called by rx.c at a request frame's
 * beginning (0, or -EPROTO: the stream is broken) and end; rx_lock held. */
int rcci_responder_frame_begin(struct tcp_ep *ep, const struct wire_hdr *h);
void rcci_responder_frame_end(struct tcp_ep *ep, const struct wire_hdr *h);

/* requester.c: what the peer says about our requests; rx_lock held. The
 * cumulative ack of every frame (0 or -EPROTO), then the beginning and end of
 * a response or NAK frame (as the responder's). */
int rcci_requester_ack_moved(struct tcp_ep *ep, uint32_t ack);
static inline int requester_take_ack(struct tcp_ep *ep, uint32_t ack)
{
	/* peer_ack has no writer but this path, which holds rx_lock: comparing
	 * needs no other lock, and most frames repeat the last ack (no call). */
	if (ack == ep->peer_ack)
		return 0;
	return rcci_requester_ack_moved(ep, ack);
}
int rcci_requester_frame_begin(struct tcp_ep *ep, const struct wire_hdr *h);
void rcci_requester_frame_end(struct tcp_ep *ep, const struct wire_hdr *h);

/* shm_stream.c: the stream of an endpoint on shared memory, used by rx.c
 * and tx.c in place of recvmsg()/sendmsg() (same results). */
long rcci_shm_stream_recvv(struct tcp_ep *ep, const struct iovec *iov, int n);
ssize_t rcci_shm_stream_send(struct tcp_ep *ep, const struct iovec *iov, int n);
/* Input waits, or a blocked transmit has room again: worth a pass. */
bool rcci_shm_stream_ready(struct tcp_ep *ep);
/* A poll of ep by the application would find nothing to do (no lock taken). */
bool rcci_shm_stream_idle(struct tcp_ep *ep);
/* Announce that nobody will look without a doorbell; true: look now instead.
 * Any thread (the progress thread, or one about to sleep on a CQ). */
bool rcci_shm_stream_arm(struct tcp_ep *ep);

/* shm_cma_ep.c: single copy and the context's endpoints (shm_cma.h). List
 * a shared-memory endpoint whose requests may name slots (start), and take
 * it out once none can be copied for any more (stop, cma_lock free). */
void rcci_cma_ep_start(struct tcp_ep *ep);
void rcci_cma_ep_stop(struct tcp_ep *ep);
/* The endpoint leaves service: kill every slot and wait out their copiers. */
void rcci_cma_ep_quiesce(struct tcp_ep *ep);
/* The endpoint leaves service (rcci_ep_fail): the regions published to it
 * revoked, the peer's mapped copies waited out (at most the peer timeout,
 * then the connection is shut), nothing published to it any more. Under
 * cma_lock (the caller holds no lock after rx_lock in the order): with
 * block false, false at once if another thread holds it (a deregistration
 * may hold it while it waits for a peer). give_up: the peer's copies are
 * waited for no longer, here and for this endpoint from now on. */
bool rcci_cma_ep_withdraw(struct tcp_ep *ep, bool block, bool give_up);
/* Whether the peer is inside a copy the above or rcci_cma_ep_quiesce()
 * would wait out (mapped, into or out of our regions; single copy, of our
 * buffers), looked at again and again for up to for_ns (0: one look).
 * Never yields: on a loaded CPU a yield can give away a whole time slice,
 * and the caller may be the progress thread. Any thread, no lock. */
bool rcci_cma_ep_peer_copying(struct tcp_ep *ep, uint64_t for_ns);
/* The peer stayed inside a copy (what: "a mapped copy", "a single-copy
 * slot") past its timeout -- stopped, dead or lying: logged, and the
 * connection shut, so its end shows up on the doorbell as the peer's death
 * would. Any thread. */
void rcci_cma_ep_peer_stuck(struct tcp_ep *ep, const char *what);
/* rcc_mr_dereg() of key: kill every slot naming it (revoke: caller holds
 * cma_lock and mr_lock's write side, under which the slots' keys are
 * read), then wait out their copiers (wait: cma_lock only -- a peer
 * stopped inside a copy must not hold mr_lock, which every copy of every
 * endpoint takes, for its timeout). */
void rcci_cma_dereg_revoke(struct tcp_ctx *ctx, uint32_t key);
void rcci_cma_dereg_wait(struct tcp_ctx *ctx);
/* Mapped transfers (shm_map.h). A region registered (after the key table
 * took it) and deregistered (its entries revoked, the peers' copies waited
 * out); caller holds cma_lock (not mr_lock while it waits, as above). */
void rcci_map_reg(struct tcp_ctx *ctx, struct tcp_mr *mr);
/* A shared-memory endpoint joins cma_eps: the peer's pidfd opened, every
 * mappable region published to it. Caller holds cma_lock. */
void rcci_map_ep_start(struct tcp_ep *ep);
void rcci_map_dereg(struct tcp_ctx *ctx, struct tcp_mr *mr);
/* Posting: carry out request w (slot idx) through the peer's mapping if it
 * may go that way (mapped set); tx_lock held. */
void rcci_map_post(struct tcp_ep *ep, uint32_t idx, struct sq_wqe *w);

/* conn.c */
int rcci_tcp_listen(struct rcc_listener *lst, const struct sockaddr *sa, socklen_t salen,
		    int backlog);
void rcci_tcp_listener_close(struct rcc_listener *lst);
int rcci_tcp_listener_fd(const struct rcc_listener *lst);
int rcci_tcp_get_request(struct rcc_listener *lst, int timeout_ms, struct rcc_conn_req *req);
int rcci_tcp_accept(struct rcc_conn_req *req, struct rcc_ep *ep);
int rcci_tcp_reject(struct rcc_conn_req *req, const void *pdata, size_t len);
int rcci_tcp_connect(struct rcc_ep *ep, const struct sockaddr *sa, socklen_t salen, int timeout_ms);

/* progress.c */
int rcci_progress_start(struct tcp_ctx *ctx);
void rcci_progress_stop(struct tcp_ctx *ctx);
int rcci_progress_add(struct tcp_ctx *ctx, struct tcp_ep *ep);
/* Ask the progress thread for a pass over ep (e.g. to complete a failed post). */
void rcci_progress_kick(struct tcp_ep *ep);
/* Unlink ep and wait until the progress thread can no longer touch it. */
void rcci_progress_remove(struct tcp_ctx *ctx, struct tcp_ep *ep);
void rcci_progress_wake(struct tcp_ctx *ctx);
void rcci_progress_timer(struct tcp_ep *ep, bool on);

/* The smallest power of two >= v and >= floor (a power of two): ring sizes,
 * so that an index wraps with a mask. v is at most 2^31 (depths are bounded). */
static inline uint32_t tcp_pow2_at_least(uint32_t v, uint32_t floor)
{
	uint32_t p = floor;
	while (p < v)
		p <<= 1;
	return p;
}

#endif
