/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The verbs transport: rcc over libibverbs + librdmacm (a NIC or Soft-RoCE).
 *
 * Objects. A context owns one device context (the one rdma_cm uses, so cm_ids
 * and our PD/CQs/MRs are compatible), one PD and one background thread. Every
 * endpoint is one RC QP that rcc creates and moves through its states itself,
 * also with rdma_cm (the cm_id has no QP attached: rdma_init_qp_attr supplies
 * the path, rcc overrides timeout, retry counts and the RNR timer so that the
 * endpoint's own attributes hold on both sides, exactly as with manual
 * bring-up).
 *
 * Completions. A CQ maps each ibv_wc to an rcc_wc; the endpoint comes from a
 * per-CQ qp_num -> endpoint table. Disconnect and close need to pull
 * completions out of the hardware CQ before the user polls them; those wait
 * in the CQ's software backlog, which poll returns first.
 *
 * Leaving service. The first error completion of an endpoint (or an async QP
 * error, a cm DISCONNECTED event, EOF on the manual bring-up socket) takes the
 * endpoint out of RCC_EP_CONNECTED; the background thread then moves the QP
 * to ERR (flushing what is outstanding) and tells the peer (rdma_disconnect /
 * closing the socket), so both sides leave service as on the tcp transport.
 *
 * Locks, in this order: ctx->eps_lock -> vep->lock -> cq->gate_lock (a
 * writer: attach, detach, drain) -> cq->bl_lock. The poll path takes no lock
 * to read the qp_num table (cq.c, "the poll gate"; docs/verbs.md "Locks"),
 * only bl_lock for the backlog; it never takes the others (an error
 * completion only sets flags and wakes the thread).
 */
#ifndef RCC_VERBS_H
#define RCC_VERBS_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/u32map.h"
#include "transport/verbs/sq_slots.h"
#include "base/handshakes.h"
#include "base/sock.h"
#include "transport/transport.h"

/* Waits inside the library that have no caller-given bound. */
#define VERBS_HANDSHAKE_MS 5000
#define VERBS_DRAIN_MS 2000
/* Inline size asked for when the caller leaves it to us; lowered if refused. */
#define VERBS_DEFAULT_INLINE 256u

struct verbs_ep;
struct verbs_hb;
struct verbs_ud;
struct verbs_grh;

/* ----------------------------------------------------------------- context */

struct verbs_ctx {
	struct rcc_ctx base;
	struct ibv_context **devs; /* rdma_get_devices(); verbs points into it */
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	struct ibv_device_attr dev_attr;
	uint8_t port;
	int gid_index; /* resolved index (>= 0) */
	union ibv_gid gid;
	uint16_t lid;
	enum ibv_mtu mtu; /* the port's active MTU */
	bool eth;         /* link layer Ethernet (RoCE): GRH required */

	/* The background thread: cm events, manual sockets, async events. */
	pthread_t thread;
	bool thread_started;
	int epfd;
	int wakefd;
	atomic_bool stop;
	atomic_bool fail_pending; /* some endpoint saw an error completion */
	pthread_mutex_t eps_lock;
	struct verbs_ep *eps; /* endpoints in service (doubly linked) */
	uint64_t next_serial;
	/* Heartbeats (heartbeat.c): made with the first connected endpoint
	 * (under eps_lock), freed when the context closes. */
	struct verbs_hb *hb;
	bool hb_unavailable; /* making it failed (logged once): no heartbeats */
};

static inline struct verbs_ctx *vctx(struct rcc_ctx *c) { return (struct verbs_ctx *)c; }

/* device.c */
/* Pick device, port and GID for ctx as attr asks (device, port, gid_index). */
int rcci_verbs_select(struct verbs_ctx *ctx, const struct rcc_ctx_attr *attr);
/* 256..4096 for IBV_MTU_*, 0 otherwise. */
int rcci_verbs_mtu_bytes(enum ibv_mtu mtu);
/* The ops table's device_list and device_list_free (rcc_device_list()). */
int rcci_verbs_device_list(struct rcc_device_info **devices, int *count);
void rcci_verbs_device_list_free(struct rcc_device_info *devices, int count);

/* ---------------------------------------------------------------------- MR */

struct verbs_mr {
	struct rcc_mr base;
	struct ibv_mr *mr;
};

/* ---------------------------------------------------------------------- CQ */

struct verbs_cq {
	struct rcc_cq base;
	struct ibv_cq *cq;
	struct ibv_comp_channel *ch; /* WAIT/FD */

	/* The poll gate (cq.c): readers are pollers, between taking
	 * completions from the device and mapping them to endpoints; writers
	 * (endpoint attach/detach, disconnect and close draining the hardware
	 * CQ) hold gate_lock with gate set, once no reader is inside. So a
	 * completion taken from the device is either returned to a poller or
	 * parked in the backlog, never lost between the two, and no poller
	 * holds an endpoint a writer is removing. */
	atomic_bool gate; /* set: pollers take gate_lock */
	pthread_mutex_t gate_lock;
	struct rcci_u32map eps; /* qp_num -> struct verbs_ep */
	/* The endpoint map_wc found last, or NULL; cleared with the gate shut
	 * whenever eps changes (cq.c, ep_of_wc). */
	_Atomic(struct verbs_ep *) last_ep;

	pthread_mutex_t bl_lock;
	struct rcc_wc *bl;
	uint32_t bl_cap, bl_head, bl_n;
	atomic_uint bl_count; /* == bl_n, read without the lock */

	atomic_bool overrun; /* the device reported a CQ error: completions lost */

	pthread_mutex_t ch_lock; /* completion channel: events, acks, arming */
	unsigned unacked;
	bool armed;
};

static inline struct verbs_cq *vcq(struct rcc_cq *c) { return (struct verbs_cq *)c; }

int rcci_vcq_create(struct rcc_cq *cq);
void rcci_vcq_destroy(struct rcc_cq *cq);
int rcci_vcq_poll(struct rcc_cq *cq, struct rcc_wc *wc, int max);
/* A device poll without the channel's re-arm: rcc_cq_wait()'s spin phase. */
int rcci_vcq_spin_poll(struct rcc_cq *cq, struct rcc_wc *wc, int max);
int rcci_vcq_fd(struct rcc_cq *cq);
int rcci_vcq_attach(struct verbs_cq *cq, struct verbs_ep *ep);
void rcci_vcq_detach(struct verbs_cq *cq, struct verbs_ep *ep);
/* Move everything in the hardware CQ into the backlog (markers are noted,
 * not kept), excluding pollers meanwhile. */
void rcci_vcq_drain(struct verbs_cq *cq);
/* Drop backlog entries that name ep. */
void rcci_vcq_forget(struct verbs_cq *cq, struct verbs_ep *ep);

/* --------------------------------------------------------------------- SRQ */
struct verbs_srq {
	struct rcc_srq base;
	struct ibv_srq *srq;   /* srq_context is &base: the async limit event finds it */
	struct verbs_grh *grh; /* base.datagram: its receives' GRH slots (ud.c); else NULL */
};

static inline struct verbs_srq *vsrq(struct rcc_srq *s) { return (struct verbs_srq *)s; }

/* srq.c */
int rcci_vsrq_create(struct rcc_srq *srq);
void rcci_vsrq_destroy(struct rcc_srq *srq);
int rcci_vsrq_post_recv(struct rcc_srq *srq, const struct rcc_recv_wr *wr, int n, int *posted);
int rcci_vsrq_arm(struct rcc_srq *srq, uint32_t limit);

/* ---------------------------------------------------------------- endpoint */

enum verbs_bringup_kind {
	VEP_CM = 0,
	VEP_MANUAL,
	VEP_UD, /* a datagram endpoint: no bring-up, nothing to watch (ud.c) */
};

/* What the background thread watches; data.u64 in epoll is the ep serial. */
struct verbs_ep {
	struct rcc_ep base;
	struct verbs_ctx *ctx;
	enum verbs_bringup_kind kind;
	struct ibv_qp *qp;
	uint32_t qpn;
	uint64_t serial; /* epoll key (never reused within a context) */

	struct rdma_cm_id *id; /* cm */
	struct rdma_event_channel *ch;
	int sock; /* manual: the bring-up socket, kept as liveness */

	pthread_mutex_t lock; /* leaving service, disconnect, destroy */
	bool listed;          /* on ctx->eps and in the epoll set (eps_lock) */
	bool attached;        /* in its CQs' qp tables */
	bool left;            /* QP in ERR, peer told */
	bool drained;         /* markers seen (disconnect completed) */

	atomic_bool draining;         /* markers are posted: recognise them */
	atomic_int markers;           /* MARK_SEND | MARK_RECV seen */
	atomic_bool fail_pending;     /* error completion seen: thread must act */
	uint8_t mark_send, mark_recv; /* their addresses are the marker wr_ids */

	struct verbs_ep *next, *prev;
	struct verbs_ud *ud;      /* VEP_UD: the datagram side (ud.c); else NULL */
	struct verbs_sq_slots sq; /* made with the QP, freed by rcci_ep_release */
	/* Rule 2's receive slots of an endpoint with a receive queue of its own
	 * (post.c): taken by a post, freed by a successful receive completion
	 * taken from the device. (UD receives are counted by their GRH slots.) */
	atomic_uint rq_used;

	/* Dead-peer detection (heartbeat.c). The bring-up sets hb_on (the peer
	 * takes part) and hb_peer_qpn (its context's heartbeat QP; 0 until its
	 * first heartbeat says, with rdma_cm on the client); the rest is the
	 * background thread's, under ctx->eps_lock. */
	bool hb_on;
	uint32_t hb_peer_qpn;
	uint32_t hb_peer_rc_qpn;   /* the peer's RC QP: heartbeats name it */
	uint32_t hb_peer_wants_ms; /* the peer's timeout, from its heartbeats; 0: unknown */
	struct ibv_ah *hb_ah;      /* the RC QP's path, for datagrams */
	uint64_t hb_heard_ns;      /* the last heartbeat (or the start) */
	uint64_t hb_next_ns;       /* our next one */
};

#define MARK_SEND 1
#define MARK_RECV 2

static inline struct verbs_ep *vep(struct rcc_ep *e) { return (struct verbs_ep *)e; }

/* qp.c */
/* Create the RC QP for ep (capabilities from ep->base.attr); sets max_inline. */
int rcci_qp_create(struct verbs_ep *ep);
void rcci_qp_destroy(struct verbs_ep *ep);
/* Post attr.initial_recv, if any. */
int rcci_qp_post_initial(struct verbs_ep *ep);
/* Modify with attr/mask; logs and returns a negative errno on failure. */
int rcci_qp_modify(struct verbs_ep *ep, struct ibv_qp_attr *attr, int mask, const char *what);
/* A UD QP from RESET to RTS (port, Q_Key): it needs no peer. */
int rcci_qp_ud_ready(struct ibv_qp *qp, uint8_t port, uint32_t qkey);
/* The QP's access flags at INIT: UC allows remote writes only. */
int rcci_qp_access(const struct verbs_ep *ep);
/* RTR/RTS fields rcc controls, applied on top of whatever the bring-up filled
 * (for UC: the RC-only attributes removed from the mask). */
void rcci_qp_rtr_overrides(struct verbs_ep *ep, struct ibv_qp_attr *a, int *mask,
			   uint8_t max_dest_rd_atomic);
void rcci_qp_rts_overrides(struct verbs_ep *ep, struct ibv_qp_attr *a, int *mask,
			   uint8_t max_rd_atomic);
/* Clamp our outstanding READ/atomic depth to the device's limits. */
uint8_t rcci_rd_atomic_responder(struct verbs_ep *ep);
uint8_t rcci_rd_atomic_initiator(struct verbs_ep *ep);

/* post.c */
int rcci_verbs_post_send(struct rcc_ep *ep, const struct rcc_send_wr *wr, int n, int *posted);
int rcci_verbs_post_recv(struct rcc_ep *ep, const struct rcc_recv_wr *wr, int n, int *posted);
/* Post receives to a QP's receive queue (srq NULL) or to an SRQ (qp NULL). */
int rcci_verbs_post_recv_to(struct ibv_qp *qp, struct ibv_srq *srq, const struct rcc_recv_wr *wr,
			    int n, int *posted);

/* ep.c */
/* Fields every bring-up starts from (lock, sockets, flags). */
void rcci_ep_init(struct verbs_ep *ep);
/* Attach to CQs (qp table) after the QP exists. */
int rcci_ep_attach(struct verbs_ep *ep);
void rcci_ep_detach(struct verbs_ep *ep);
/* The connection is up: hand the endpoint to the background thread. */
int rcci_ep_start(struct verbs_ep *ep);
/* Leave service: state (if still connected), QP -> ERR, tell the peer.
 * The _locked form expects ep->lock held. */
void rcci_ep_leave(struct verbs_ep *ep, enum rcc_ep_state st, int status, const char *why);
void rcci_ep_leave_locked(struct verbs_ep *ep, enum rcc_ep_state st, int status, const char *why);
/* Release QP, CQ attachment and bring-up resources (an endpoint that never
 * started, or the last step of destroy). */
void rcci_ep_release(struct verbs_ep *ep);
int rcci_verbs_ep_disconnect(struct rcc_ep *ep);
void rcci_verbs_ep_destroy(struct rcc_ep *ep);
/* From the poll path: a completion with a status other than success. */
void rcci_ep_error_seen(struct verbs_ep *ep, bool flush);

/* ------------------------------------------------------ datagrams (UD) */

/* Bytes a UD receive's first element gets before the payload (IB's GRH,
 * RoCE v2's IPv4 header in its last 20): rcc's own memory, never the
 * application's (ud.c). */
#define VERBS_GRH_LEN 40

struct verbs_ah {
	struct rcc_ah base;
	struct ibv_ah *ah;
	uint32_t qpn;  /* remote_qpn */
	uint32_t qkey; /* remote_qkey */
};

/* ud.c: datagram (RCC_QP_UD) endpoints and address handles */
int rcci_verbs_ud_create(struct rcc_ep *ep);
void rcci_verbs_ud_addr(const struct rcc_ep *ep, struct rcci_ud_addr *out);
int rcci_verbs_ud_post_recv(struct rcc_ep *ep, const struct rcc_recv_wr *wr, int n, int *posted);
void rcci_verbs_ud_destroy(struct rcc_ep *ep);
int rcci_verbs_ah_create(struct rcc_ah *ah, const struct rcci_ud_addr *a);
void rcci_verbs_ah_destroy(struct rcc_ah *ah);
/* The disconnect marker send of a datagram endpoint: to itself (flushed,
 * never sent: the QP is in ERR by then). */
void rcci_ud_marker_dest(struct verbs_ep *ep, struct ibv_send_wr *w);
/* A completion of a datagram endpoint that is not a marker: the receive's
 * own wr_id, the payload's length and the source (rcc.h, rule U5). */
void rcci_ud_map_wc(struct verbs_ep *ep, const struct ibv_wc *w, struct rcc_wc *out);
/* The GRH slots of a receive queue (ud.c): n of them, registered on ctx's PD. */
int rcci_grh_new(struct verbs_ctx *ctx, uint32_t n, struct verbs_grh **out);
void rcci_grh_free(struct verbs_grh *g);
/* Post receives to a QP's receive queue (srq NULL) or to an SRQ (qp NULL),
 * each with a GRH slot of g as its first element; -ENOMEM when g has no
 * free slot. */
int rcci_grh_post(struct verbs_grh *g, struct ibv_qp *qp, struct ibv_srq *srq,
		  const struct rcc_recv_wr *wr, int n, int *posted);
/* post.c */
int rcci_verbs_ud_post_send(struct rcc_ep *ep, const struct rcc_send_wr *wr, int n, int *posted);

/* events.c */
int rcci_events_start(struct verbs_ctx *ctx);
void rcci_events_stop(struct verbs_ctx *ctx);
/* Watch ep (cm channel or manual socket) and list it. */
int rcci_events_add(struct verbs_ctx *ctx, struct verbs_ep *ep);
/* Unlist ep; when this returns the thread no longer touches it. */
void rcci_events_remove(struct verbs_ctx *ctx, struct verbs_ep *ep);
void rcci_events_wake(struct verbs_ctx *ctx);

/* heartbeat.c: dead-peer detection (rcc_ep_attr.peer_timeout_ms) */
/* Our context's heartbeat QP number, made on first use; 0 when it cannot be
 * made (logged): the connection then goes without heartbeats. Any thread. */
uint32_t rcci_hb_qpn(struct verbs_ctx *ctx);
/* Under eps_lock, as ep is listed / unlisted (events.c). */
void rcci_hb_ep_listed(struct verbs_ep *ep);
void rcci_hb_ep_unlisted(struct verbs_ep *ep);
/* The background thread's: its epoll keys and what they mean. */
#define VERBS_KEY_HB_CQ 2
#define VERBS_KEY_HB_TIMER 3
void rcci_hb_cq_event(struct verbs_ctx *ctx);
void rcci_hb_timer_event(struct verbs_ctx *ctx);
/* After the thread stopped: free what rcci_hb_qpn made. */
void rcci_hb_destroy(struct verbs_ctx *ctx);

/* ------------------------------------------------------- connection setup */

struct verbs_listener {
	struct rcc_listener base;
	/* cm */
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	/* manual: the listening socket and the HELLOs in progress (its epoll
	 * fd is the listener's) */
	struct rcci_handshakes hs;
};

struct verbs_req {
	struct rcc_conn_req base;
	/* cm: the request's id, already moved to its own channel */
	struct rdma_cm_id *id;
	struct rdma_event_channel *ch;
	uint8_t peer_responder, peer_initiator;
	/* both: the client's heartbeat QP (heartbeat.c); 0: it takes no part */
	uint32_t peer_hb_qpn;
	/* manual: the socket and the client's QP description */
	int fd;
	uint32_t peer_qpn, peer_psn;
	uint16_t peer_lid;
	uint8_t peer_mtu, peer_rd_atomic;
	uint8_t peer_gid[16];
};

/* How connections come up: rdma_cm (cm.c) or QP information exchanged over a
 * TCP socket (manual.c); ctx_open sets rcc_ctx.conn to the one the context
 * asked for. */
extern const struct rcc_conn_ops rcci_cm_conn_ops, rcci_man_conn_ops;

/* util (ops.c) */
int rcci_verbs_set_nonblock(int fd);

#endif
