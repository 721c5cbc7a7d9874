/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The contract between the core and a transport.
 *
 * The core owns argument checking, defaults, object lifetime and logging; a
 * transport owns everything that touches a wire or a device. Each object is
 * allocated by the core with the size the transport asks for (the transport
 * struct starts with the core's base struct), so a transport casts the base
 * pointer to its own type and never allocates or frees the object itself.
 */
#ifndef RCC_TRANSPORT_H
#define RCC_TRANSPORT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/socket.h>

#include "rcc/rcc.h"

struct rcc_transport_ops;

/* The longest device name rcc_ctx_attr.device may give, plus one. */
#define RCCI_DEVICE_NAME_MAX 64

/* Dead-peer detection (rcc_ep_attr.peer_timeout_ms), the same on every
 * transport: the longest timeout; heartbeats at an eighth of the shorter of
 * the two sides' timeouts, never more often than every 25 ms (the peer's
 * timeout is what it says, so hostile input). */
#define RCCI_MAX_PEER_TIMEOUT_MS (24u * 3600u * 1000u)
#define RCCI_HB_PER_TIMEOUT 8u
#define RCCI_HB_MIN_NS (25ull * 1000000ull)

/* Limits of every work queue (endpoints' and SRQs'), whatever the device. */
#define RCCI_MAX_QUEUE_DEPTH 16384u
#define RCCI_MAX_SGE 16u

/*
 * Connection events of a context (rcc_ctx_get_event): the endpoints whose
 * state changed and the SRQs whose limit was reached, oldest first, each
 * queued at most once (an intrusive list, so a peer cannot grow it past the
 * number of open endpoints and SRQs). Off until the application first asks;
 * the descriptor is readable exactly while the queue is not empty.
 */
struct rcci_event_node {
	struct rcci_event_node *next;
	bool queued;
	bool is_srq; /* the node is in a struct rcc_srq, else in a struct rcc_ep */
};

struct rcci_event_queue {
	pthread_mutex_t lock;
	struct rcci_event_node *head, *tail;
	int fd; /* eventfd; -1 while off */
};

/* What every transport's context starts with; the attributes only one
 * transport uses (verbs: device, port, GID, bring-up; tcp: shared memory)
 * are its own, taken from the rcc_ctx_attr its ctx_open is given. */
/* One rcc_mem_alloc() allocation (core/mem.c): a sealed memfd mapped shared
 * at addr, len bytes (whole pages). */
struct rcci_mem {
	struct rcci_mem *next; /* ctx->mems */
	void *addr;
	size_t len;
	int fd;        /* kept open: a same-host peer takes it (pidfd_getfd) */
	uint64_t ino;  /* the memfd's inode: what the peer checks it got */
	unsigned regs; /* regions registered on it (mem_lock): free is -EBUSY */
};

struct rcc_ctx {
	const struct rcc_transport_ops *ops;
	const struct rcc_conn_ops *conn; /* ops->conn unless ctx_open chose another */
	enum rcc_transport transport;
	atomic_int children; /* open MRs, CQs, endpoints, listeners, SRQs, AHs, allocations */
	struct rcci_event_queue events;
	pthread_mutex_t mem_lock; /* mems, and each one's regs */
	struct rcci_mem *mems;
};

struct rcc_mr {
	struct rcc_ctx *ctx;
	void *addr;
	size_t length;
	unsigned access;
	/* The allocation the region lies in (set before the transport's
	 * mr_reg sees it), NULL when it is other memory. */
	struct rcci_mem *mem;
	uint32_t lkey; /* set by the transport */
	uint32_t rkey; /* set by the transport */
};

struct rcc_cq {
	struct rcc_ctx *ctx;
	enum rcc_cq_mode mode;
	uint32_t depth;
	uint64_t spin_ns; /* RCC_CQ_HYBRID: rcc_cq_wait()'s spin budget */
	atomic_int users; /* endpoints using this CQ as send or recv CQ */
};

struct rcc_ep {
	struct rcc_ctx *ctx;
	struct rcc_cq *send_cq;
	struct rcc_cq *recv_cq;
	/* Resolved attributes: every default filled in, private_data cleared;
	 * retry counts are real counts (0 = none); initial_recv is valid only
	 * during accept/connect, which must post it before the peer may send. */
	struct rcc_ep_attr attr;
	uint32_t max_inline; /* the transport sets the real value */
	bool on_shm;         /* tcp transport: the stream runs over shared memory */
	_Atomic int state;   /* enum rcc_ep_state, written by the transport */
	void *_Atomic context;
	uint8_t peer_pdata[RCC_ACCEPT_PRIVATE_DATA_MAX];
	uint32_t peer_pdata_len;
	char peer[64]; /* "ip:port" of the other side */
	/* Private data this side sends (copied from the caller's attr). */
	uint8_t own_pdata[RCC_ACCEPT_PRIVATE_DATA_MAX];
	uint32_t own_pdata_len;
	struct rcci_event_node event; /* in ctx->events, under its lock */
	/* rcc_connect_start(): the attempt runs on a thread of its own; while
	 * `connecting` the application sees RCC_EP_CONNECTING and cannot post.
	 * NULL for an endpoint made by rcc_connect() or an accept. */
	struct rcci_connector *connector;
	atomic_bool connecting;
	/* RCC_QP_UD: the largest datagram (rcc_ud_max_msg), set by ud_create. */
	uint32_t ud_max_msg;
	/* Why it left service (rcc_ep_reason): set by rcci_ep_left() under
	 * ctx->events.lock, the text in static storage; NULL while it has not. */
	int left_status;
	const char *left_why;
};

/* A shared receive queue (rcc_srq_create); the transport's struct starts with it. */
struct rcc_srq {
	struct rcc_ctx *ctx;
	uint32_t max_wr;              /* resolved: defaults filled in */
	uint32_t max_sge;             /* resolved */
	bool datagram;                /* rcc_srq_attr.for_datagrams: UD endpoints only */
	atomic_int users;             /* open endpoints taking receives from it */
	struct rcci_event_node event; /* in ctx->events, under its lock */
};

/* A transport calls this when srq's armed limit was reached: queues an
 * RCC_EVENT_SRQ_LIMIT (at most one untaken per SRQ). Any thread, any lock
 * held except ctx->events.lock. */
void rcci_srq_limit_reached(struct rcc_srq *srq);

/* A transport calls this right after it moved ep->state (out of
 * RCC_EP_CONNECTED, or from disconnected to error): queues a connection
 * event when the application asked for them. Any thread, any lock held
 * except ctx->events.lock. */
void rcci_ep_state_changed(struct rcc_ep *ep);

/*
 * A transport calls this just before it moves ep out of RCC_EP_CONNECTED
 * (or from disconnected to error): why it leaves, for rcc_ep_reason() and
 * the connection event. status: 0 the application's own disconnect,
 * -ECONNRESET the peer disconnected or its connection ended, -ETIMEDOUT
 * nothing heard from the peer in time, -EPROTO the peer broke the protocol,
 * -EIO a request failed or a CQ overran, -ENODEV the device went away. why
 * is a static string. The first reason stays unless replace (an error seen
 * after a disconnect). Any thread, any lock held except ctx->events.lock.
 */
void rcci_ep_left(struct rcc_ep *ep, int status, const char *why, bool replace);

/*
 * A datagram address, decoded. core/ud_addr.c turns it into the public
 * blob (struct rcc_ud_addr) and back, checking every field of a blob it
 * reads; a transport only ever sees decoded, checked addresses.
 */
enum rcci_ud_kind {
	RCCI_UD_VERBS = 1,
	RCCI_UD_TCP = 2,
};

struct rcci_ud_addr {
	uint8_t kind;    /* enum rcci_ud_kind */
	uint32_t qkey;   /* bit 31 clear */
	uint32_t qpn;    /* verbs: QP number; tcp: endpoint id; 2..0xffffff */
	uint8_t gid[16]; /* verbs: GID (zero without a GRH); tcp: IPv6 or IPv4-mapped */
	uint16_t lid;    /* verbs: LID (IB routing without a GRH) */
	uint16_t port;   /* tcp: UDP port, never 0 */
	uint8_t sl;      /* verbs: service level 0..15 */
	bool global;     /* verbs: routed with a GRH (always on RoCE) */
};

/* The blob of a; a must be well-formed (what decode would accept). */
void rcci_ud_addr_encode(const struct rcci_ud_addr *a, struct rcc_ud_addr *out);
/* 0 and *a, or -EINVAL with *why saying what is wrong (static text). The
 * bytes may come from anyone: every field is checked. */
int rcci_ud_addr_decode(const struct rcc_ud_addr *in, struct rcci_ud_addr *a, const char **why);

/* An address handle (rcc_ah_create); the transport's struct starts with it. */
struct rcc_ah {
	struct rcc_ctx *ctx;
};

struct rcc_listener {
	struct rcc_ctx *ctx;
	int port;
	int max_pending;  /* bound on half-open handshakes (rcc_listener_attr) */
	int handshake_ms; /* each handshake's deadline */
};

struct rcc_conn_req {
	struct rcc_listener *lst;
	uint8_t pdata[RCC_CONNECT_PRIVATE_DATA_MAX];
	uint32_t pdata_len;
	char peer[64];
};

/*
 * How a transport listens and connects. The core always goes through
 * rcc_ctx.conn: the transport's own table (rcc_transport_ops.conn) unless its
 * ctx_open chose another (verbs: rdma_cm or the manual exchange).
 */
struct rcc_conn_ops {
	int (*listen)(struct rcc_listener *lst, const struct sockaddr *sa, socklen_t salen,
		      int backlog);
	void (*listener_close)(struct rcc_listener *lst);
	int (*listener_fd)(const struct rcc_listener *lst);
	/* Fill req (pdata, peer and the transport's own part). */
	int (*get_request)(struct rcc_listener *lst, int timeout_ms, struct rcc_conn_req *req);
	/* Both consume the request's transport resources, success or not. */
	int (*accept)(struct rcc_conn_req *req, struct rcc_ep *ep);
	int (*reject)(struct rcc_conn_req *req, const void *pdata, size_t len);

	/* ep->attr, send/recv CQs and own_pdata are filled in. */
	int (*connect)(struct rcc_ep *ep, const struct sockaddr *sa, socklen_t salen,
		       int timeout_ms);
};

/*
 * Every call returns 0 or a negative errno unless noted. Calls that create
 * an object receive it zeroed past the base part, with the base filled in;
 * on failure they release whatever they acquired.
 */
struct rcc_transport_ops {
	const char *name;
	size_t ctx_size, mr_size, cq_size, ep_size, listener_size, req_size, srq_size, ah_size;

	/* attr is checked (ranges, the device name's length) and its shm mode
	 * resolved (never RCC_SHM_AUTO's "ask RCC_SHM"); read during the call
	 * only. -ENODEV: no usable device (AUTO then falls back to tcp). */
	int (*ctx_open)(struct rcc_ctx *ctx, const struct rcc_ctx_attr *attr);
	void (*ctx_close)(struct rcc_ctx *ctx);
	/* rcc_device_list(): the devices this transport opens, and their release.
	 * NULL: it opens none (tcp). */
	int (*device_list)(struct rcc_device_info **devices, int *count);
	void (*device_list_free)(struct rcc_device_info *devices, int count);

	int (*mr_reg)(struct rcc_mr *mr);
	int (*mr_dereg)(struct rcc_mr *mr);

	int (*cq_create)(struct rcc_cq *cq);
	void (*cq_destroy)(struct rcc_cq *cq);
	/* Hot path: the core passes cq, wc and max through unchecked (max > 0). */
	int (*cq_poll)(struct rcc_cq *cq, struct rcc_wc *wc, int max);
	/* The poll of rcc_cq_wait()'s spin phase: as cq_poll, without the
	 * system calls that only sleeping needs (re-arming a channel). NULL:
	 * cq_poll is already that. */
	int (*cq_spin_poll)(struct rcc_cq *cq, struct rcc_wc *wc, int max);
	/* The descriptor rcc_cq_wait() sleeps on (POLLIN) in every mode but
	 * RCC_CQ_POLL; rcc_cq_wait() itself is the core's (src/core/cq.c). */
	int (*cq_fd)(struct rcc_cq *cq);
	/* rcc_cq_wait()'s sleep, when the transport knows a cheaper one than
	 * poll() on cq_fd: return 0 when completions may have come, -ETIMEDOUT
	 * at the deadline (rcci_deadline()), or a negative errno. NULL: cq_fd. */
	int (*cq_sleep)(struct rcc_cq *cq, uint64_t deadline);
	/* rcc_cq_wait()'s look just before its first sleep (timeout not 0):
	 * as cq_poll, but it may leave input that cq_sleep's wait reports at
	 * once to the poll after it -- on tcp an empty recv() per wait saved.
	 * NULL: cq_poll. */
	int (*cq_poll_before_sleep)(struct rcc_cq *cq, struct rcc_wc *wc, int max);
	/* rcc_cq_arm() on an RCC_CQ_FD CQ (the core checked the mode): 0 sleep,
	 * 1 poll first, or a negative errno. NULL: always 0. */
	int (*cq_arm)(struct rcc_cq *cq);

	/* Listening and connecting; a context may use other ones (rcc_ctx.conn). */
	struct rcc_conn_ops conn;

	/* Hot path: requests are already validated against ep->attr. */
	int (*post_send)(struct rcc_ep *ep, const struct rcc_send_wr *wr, int n, int *posted);
	int (*post_recv)(struct rcc_ep *ep, const struct rcc_recv_wr *wr, int n, int *posted);

	/* Must leave every outstanding work request completed (flushed) on the
	 * endpoint's CQs before returning; idempotent. */
	int (*ep_disconnect)(struct rcc_ep *ep);
	/* Remove the endpoint's remaining completions from its CQs and release
	 * transport resources; the core frees the struct. */
	void (*ep_destroy)(struct rcc_ep *ep);

	/* Shared receive queues: srq->max_wr/max_sge are resolved and checked;
	 * destroy is called only when no endpoint uses it. post_recv: requests
	 * already validated against max_sge. arm: limit <= max_wr, 0 disarms. */
	int (*srq_create)(struct rcc_srq *srq);
	void (*srq_destroy)(struct rcc_srq *srq);
	int (*srq_post_recv)(struct rcc_srq *srq, const struct rcc_recv_wr *wr, int n, int *posted);
	int (*srq_arm)(struct rcc_srq *srq, uint32_t limit);

	/*
	 * Datagram (RCC_QP_UD) endpoints. ud_create: ep->attr is resolved (no
	 * SRQ, qkey set, no initial receives -- the core posts them); it sets
	 * ep->max_inline and ep->ud_max_msg and leaves the endpoint in
	 * service. ud_post_send: requests already checked (SEND or SEND_IMM,
	 * ah of this context, at most ud_max_msg bytes). ud_disconnect and
	 * ud_destroy: as ep_disconnect and ep_destroy. ud_addr: the endpoint's
	 * own address (kind of this transport, well-formed).
	 */
	int (*ud_create)(struct rcc_ep *ep);
	void (*ud_addr)(const struct rcc_ep *ep, struct rcci_ud_addr *out);
	int (*ud_post_send)(struct rcc_ep *ep, const struct rcc_send_wr *wr, int n, int *posted);
	int (*ud_post_recv)(struct rcc_ep *ep, const struct rcc_recv_wr *wr, int n, int *posted);
	int (*ud_disconnect)(struct rcc_ep *ep);
	void (*ud_destroy)(struct rcc_ep *ep);
	/* a is decoded, checked and of this transport's kind. */
	int (*ah_create)(struct rcc_ah *ah, const struct rcci_ud_addr *a);
	void (*ah_destroy)(struct rcc_ah *ah);
};

extern const struct rcc_transport_ops rcci_tcp_ops;
#ifdef RCC_HAVE_VERBS
extern const struct rcc_transport_ops rcci_verbs_ops;
#endif

#endif /* RCC_TRANSPORT_H */
