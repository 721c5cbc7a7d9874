/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completion queues: ibv_poll_cq mapped to rcc_wc, a software backlog for
 * completions pulled out early by disconnect/close, and the completion
 * channel of WAIT/FD mode.
 *
 * FD contract: the channel fd is readable when an event is pending; the user
 * then polls until poll returns 0. So an empty poll consumes pending events
 * (without blocking), acknowledges them in batches, re-arms the CQ and polls
 * once more, because a completion that arrived before the re-arm raises no
 * event of its own.
 */
#include <assert.h>
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>

#include "base/log.h"
#include "base/thread.h"
#include "verbs.h"

#define POLL_BATCH 16
#define ACK_BATCH 64u
/* Room beyond the requested depth: the disconnect markers of several eps. */
#define CQ_SLACK 32

/* ------------------------------------------------------------ poll gate */

/*
 * Pollers read the qp_num table and the endpoints it names without a lock;
 * attach, detach and drain (the writers) exclude them. The argument is in
 * docs/verbs.md "Locks"; in short, a Dekker handshake between a poller's
 * slot and the CQ's gate:
 *
 *   poller: slot = cq; barrier; if gate: slot = NULL, take gate_lock instead
 *           ... device poll and mapping ...; slot = NULL (release)
 *   writer: take gate_lock; gate = 1; barrier; wait until no slot == cq
 *           ... change the table, drain ...; gate = 0 (release); unlock
 *
 * Either the writer sees the poller's slot (and waits for it), or the poller
 * sees the gate (and queues behind gate_lock). The poller's barrier is only a
 * compiler barrier when membarrier(2) is there: the writer's
 * MEMBARRIER_CMD_PRIVATE_EXPEDITED makes it a full fence on every thread of
 * the process at that moment. Without membarrier a poller's slot store is a
 * seq_cst exchange and its gate load seq_cst, as the writer's are.
 * A slot is per thread (a thread polls one CQ at a time), so the common
 * path writes only memory of its own thread and reads the gate, a line
 * nobody writes while no writer runs: no atomic read-modify-write at all.
 */
struct poller {
	_Atomic(struct verbs_cq *) in; /* the CQ this thread polls, or NULL */
	struct poller *prev, *next;
} __attribute__((aligned(64)));

static pthread_once_t pollers_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t pollers_lock = PTHREAD_MUTEX_INITIALIZER;
static struct poller *pollers; /* every registered thread's slot */
static pthread_key_t pollers_key;
static bool pollers_key_ok;
static bool asym_fence; /* membarrier registered: pollers need no fence */
/* Read on every poll: base/thread.h's initial-exec model, one load instead of
 * a call to __tls_get_addr. */
static RCCI_THREAD_HOT struct poller *my_slot;

static void poller_exit(void *p)
{
	struct poller *r = p;

	pthread_mutex_lock(&pollers_lock);
	if (r->prev)
		r->prev->next = r->next;
	else
		pollers = r->next;
	if (r->next)
		r->next->prev = r->prev;
	pthread_mutex_unlock(&pollers_lock);
	free(r);
}

static void pollers_init(void)
{
	pollers_key_ok = pthread_key_create(&pollers_key, poller_exit) == 0;
	asym_fence = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
	if (!asym_fence)
		log_debug("verbs: no membarrier(2): pollers fence on every poll");
}

/* This thread's slot, made on its first poll; NULL: none (out of memory),
 * so this thread polls under gate_lock. */
static struct poller *poller_slot(void)
{
	struct poller *r;

	pthread_once(&pollers_once, pollers_init);
	if (!pollers_key_ok)
		return NULL;
	r = aligned_alloc(64, sizeof(*r));
	if (!r)
		return NULL;
	atomic_init(&r->in, NULL);
	r->prev = NULL;
	if (pthread_setspecific(pollers_key, r)) {
		free(r);
		return NULL;
	}
	pthread_mutex_lock(&pollers_lock);
	r->next = pollers;
	if (pollers)
		pollers->prev = r;
	pollers = r;
	pthread_mutex_unlock(&pollers_lock);
	my_slot = r;
	return r;
}

/* Enter cq as a reader without a lock: its slot, or NULL when the gate is
 * shut (or this thread has no slot): then the caller takes gate_lock. */
static inline struct poller *gate_enter(struct verbs_cq *cq)
{
	struct poller *r = my_slot;
	bool shut;

	if (__builtin_expect(!r, 0) && !(r = poller_slot()))
		return NULL;
	if (__builtin_expect(asym_fence, 1)) {
		atomic_store_explicit(&r->in, cq, memory_order_relaxed);
		atomic_signal_fence(memory_order_seq_cst);
		shut = atomic_load_explicit(&cq->gate, memory_order_acquire);
	} else { /* both seq_cst: the writer's store and load are too */
		atomic_exchange(&r->in, cq);
		shut = atomic_load(&cq->gate);
	}
	if (__builtin_expect(shut, 0)) {
		atomic_store_explicit(&r->in, NULL, memory_order_release);
		return NULL;
	}
	return r;
}

static inline void gate_leave(struct poller *r)
{
	atomic_store_explicit(&r->in, NULL, memory_order_release);
}

/* A writer: from here to gate_open() no poller is between the device and
 * the table of cq. */
static void gate_shut(struct verbs_cq *cq)
{
	pthread_once(&pollers_once, pollers_init);
	pthread_mutex_lock(&cq->gate_lock);
	atomic_store(&cq->gate, true);
	/* Once the process registered, the command cannot fail (membarrier(2)). */
	if (asym_fence)
		syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
	pthread_mutex_lock(&pollers_lock);
	for (struct poller *r = pollers; r; r = r->next)
		while (atomic_load(&r->in) == cq)
			sched_yield();
	pthread_mutex_unlock(&pollers_lock);
}

static void gate_open(struct verbs_cq *cq)
{
	atomic_store_explicit(&cq->gate, false, memory_order_release);
	pthread_mutex_unlock(&cq->gate_lock);
}

/* ---------------------------------------------------------- qp_num table */

/* qpn 0 is never an RC QP, and QP numbers have 24 bits: neither reserved key
 * of the map is ever one. */
static struct verbs_ep *ep_of_qpn(const struct verbs_cq *cq, uint32_t qpn)
{
	return rcci_u32map_find(&cq->eps, qpn);
}

/* Forget the cached endpoint (map_wc): every change of the table does, with
 * the gate shut, so a pointer cached by a poller was in the table for the
 * whole of that poller's gate section and no later section finds one the
 * table no longer holds: it never outlives the endpoint's detach, which comes
 * before its QP is destroyed and before the endpoint is freed. */
static void last_ep_forget(struct verbs_cq *cq)
{
	atomic_store_explicit(&cq->last_ep, NULL, memory_order_relaxed);
}

int rcci_vcq_attach(struct verbs_cq *cq, struct verbs_ep *ep)
{
	int rc = 0;

	gate_shut(cq);
	last_ep_forget(cq);
	if (ep_of_qpn(cq, ep->qpn) != ep) /* else: send CQ == recv CQ */
		rc = rcci_u32map_put(&cq->eps, ep->qpn, ep);
	gate_open(cq);
	return rc;
}

void rcci_vcq_detach(struct verbs_cq *cq, struct verbs_ep *ep)
{
	gate_shut(cq);
	last_ep_forget(cq);
	rcci_u32map_remove(&cq->eps, ep->qpn);
	gate_open(cq);
}

/* ------------------------------------------------------------ mapping */

static enum rcc_wc_status map_status(enum ibv_wc_status s)
{
	switch (s) {
	case IBV_WC_SUCCESS:
		return RCC_WC_SUCCESS;
	case IBV_WC_LOC_LEN_ERR:
		return RCC_WC_LOC_LEN_ERR;
	case IBV_WC_LOC_QP_OP_ERR:
		return RCC_WC_LOC_QP_OP_ERR;
	case IBV_WC_LOC_PROT_ERR:
		return RCC_WC_LOC_PROT_ERR;
	case IBV_WC_WR_FLUSH_ERR:
		return RCC_WC_WR_FLUSH_ERR;
	case IBV_WC_BAD_RESP_ERR:
		return RCC_WC_BAD_RESP_ERR;
	case IBV_WC_LOC_ACCESS_ERR:
		return RCC_WC_LOC_ACCESS_ERR;
	case IBV_WC_REM_INV_REQ_ERR:
		return RCC_WC_REM_INV_REQ_ERR;
	case IBV_WC_REM_ACCESS_ERR:
		return RCC_WC_REM_ACCESS_ERR;
	case IBV_WC_REM_OP_ERR:
		return RCC_WC_REM_OP_ERR;
	case IBV_WC_RETRY_EXC_ERR:
	case IBV_WC_RESP_TIMEOUT_ERR:
		return RCC_WC_RETRY_EXC_ERR;
	case IBV_WC_RNR_RETRY_EXC_ERR:
		return RCC_WC_RNR_RETRY_EXC_ERR;
	case IBV_WC_REM_ABORT_ERR:
		return RCC_WC_REM_ABORT_ERR;
	case IBV_WC_FATAL_ERR:
		return RCC_WC_FATAL_ERR;
	default:
		return RCC_WC_GENERAL_ERR;
	}
}

/* rcc's completion opcodes have verbs' values (rcc.h), so each one rcc knows
 * passes as it is, with two compares instead of a switch; anything else
 * (bind, invalidate, TSO: never posted by rcc) is a SEND, as before. */
static_assert(RCC_WC_SEND == (int)IBV_WC_SEND && RCC_WC_WRITE == (int)IBV_WC_RDMA_WRITE &&
		      RCC_WC_READ == (int)IBV_WC_RDMA_READ && RCC_WC_CAS == (int)IBV_WC_COMP_SWAP &&
		      RCC_WC_FADD == (int)IBV_WC_FETCH_ADD && RCC_WC_RECV == (int)IBV_WC_RECV &&
		      RCC_WC_RECV_WRITE_IMM == (int)IBV_WC_RECV_RDMA_WITH_IMM,
	      "rcc_wc_opcode has ibv_wc_opcode's values");
static inline enum rcc_wc_opcode map_opcode(enum ibv_wc_opcode op)
{
	bool sent = (unsigned)op <= IBV_WC_FETCH_ADD;
	bool recv = op == IBV_WC_RECV || op == IBV_WC_RECV_RDMA_WITH_IMM;

	return __builtin_expect(sent || recv, 1) ? (enum rcc_wc_opcode)op : RCC_WC_SEND;
}

/* The endpoint of qpn: the last one found on this CQ when it is that QP's
 * (most completions in a row are one QP's), else the table's. The caller is
 * in the gate (a poller) or holds it shut (drain): the cache is written only
 * there and cleared by every change of the table (last_ep_forget), so a cached
 * endpoint is one the table holds. Pollers of one CQ may store concurrently:
 * any of their values is such an endpoint, and release/acquire hands its
 * fields (qpn, set before attach) from the storing poller to the loading one. */
static inline struct verbs_ep *ep_of_wc(struct verbs_cq *cq, uint32_t qpn)
{
	struct verbs_ep *ep = atomic_load_explicit(&cq->last_ep, memory_order_acquire);

	if (__builtin_expect(ep != NULL && ep->qpn == qpn, 1))
		return ep;
	ep = ep_of_qpn(cq, qpn);
	if (ep)
		atomic_store_explicit(&cq->last_ep, ep, memory_order_release);
	return ep;
}

/* false: not for the user (a disconnect marker, or a QP no longer known).
 * Forced inline: one call less per completion in the poll (and in drain). */
static inline __attribute__((always_inline)) bool map_wc(struct verbs_cq *cq,
							 const struct ibv_wc *w, struct rcc_wc *out)
{
	struct verbs_ep *ep = ep_of_wc(cq, w->qp_num);

	if (__builtin_expect(!ep, 0)) {
		log_debug("verbs: completion for unknown QP %u dropped", w->qp_num);
		return false;
	}
	if (__builtin_expect(w->wr_id == (uintptr_t)&ep->mark_send ||
				     w->wr_id == (uintptr_t)&ep->mark_recv,
			     0) &&
	    atomic_load(&ep->draining)) {
		atomic_fetch_or(&ep->markers,
				w->wr_id == (uintptr_t)&ep->mark_send ? MARK_SEND : MARK_RECV);
		return false;
	}
	/* rule 2: a send completion taken from the device frees its slots (a
	 * failed one frees nothing: the endpoint refuses posts from then on) */
	if (w->status == IBV_WC_SUCCESS && w->opcode < IBV_WC_RECV)
		rcci_sq_completed(&ep->sq);
	else if (w->status == IBV_WC_SUCCESS && !ep->ud && !ep->base.attr.srq)
		atomic_fetch_sub_explicit(&ep->rq_used, 1, memory_order_relaxed);
	out->wr_id = w->wr_id;
	out->ep = &ep->base;
	/* success, nearly always: no switch for it */
	out->status = w->status == IBV_WC_SUCCESS ? RCC_WC_SUCCESS : map_status(w->status);
	out->opcode = map_opcode(w->opcode);
	out->byte_len = w->byte_len;
	out->vendor_err = w->vendor_err;
	if (w->wc_flags & IBV_WC_WITH_IMM) {
		out->wc_flags = RCC_WC_WITH_IMM;
		out->imm_data = ntohl(w->imm_data);
	} else {
		out->wc_flags = 0;
		out->imm_data = 0;
	}
	if (__builtin_expect(ep->ud != NULL, 0))
		rcci_ud_map_wc(ep, w, out); /* a receive's slot, GRH and source */
	/* A flush while we still think the endpoint is connected means the
	 * device put the QP in error on its own (e.g. the responder side of a
	 * remote access violation, before its async event is read). */
	if (__builtin_expect(w->status != IBV_WC_SUCCESS, 0))
		rcci_ep_error_seen(ep, w->status == IBV_WC_WR_FLUSH_ERR);
	return true;
}

/* --------------------------------------------------------------- backlog */

/* Caller holds bl_lock. */
static void bl_push(struct verbs_cq *cq, const struct rcc_wc *wc)
{
	if (cq->bl_n == cq->bl_cap) {
		uint32_t cap = cq->bl_cap ? cq->bl_cap * 2 : 64;
		struct rcc_wc *n = malloc(cap * sizeof(*n));
		if (!n) {
			log_error("verbs: out of memory: completion of wr_id %llu lost",
				  (unsigned long long)wc->wr_id);
			return;
		}
		for (uint32_t i = 0; i < cq->bl_n; i++)
			n[i] = cq->bl[(cq->bl_head + i) % cq->bl_cap];
		free(cq->bl);
		cq->bl = n;
		cq->bl_cap = cap;
		cq->bl_head = 0;
	}
	cq->bl[(cq->bl_head + cq->bl_n) % cq->bl_cap] = *wc;
	cq->bl_n++;
	atomic_store_explicit(&cq->bl_count, cq->bl_n, memory_order_release);
}

static int bl_pop(struct verbs_cq *cq, struct rcc_wc *wc, int max)
{
	uint32_t n;

	pthread_mutex_lock(&cq->bl_lock);
	n = cq->bl_n < (uint32_t)max ? cq->bl_n : (uint32_t)max;
	for (uint32_t i = 0; i < n; i++)
		wc[i] = cq->bl[(cq->bl_head + i) % cq->bl_cap];
	if (n) {
		cq->bl_head = (cq->bl_head + n) % cq->bl_cap;
		cq->bl_n -= n;
		atomic_store_explicit(&cq->bl_count, cq->bl_n, memory_order_release);
	}
	pthread_mutex_unlock(&cq->bl_lock);
	return (int)n;
}

void rcci_vcq_forget(struct verbs_cq *cq, struct verbs_ep *ep)
{
	uint32_t kept = 0;

	pthread_mutex_lock(&cq->bl_lock);
	for (uint32_t i = 0; i < cq->bl_n; i++) {
		const struct rcc_wc *w = &cq->bl[(cq->bl_head + i) % cq->bl_cap];
		if (w->ep != &ep->base)
			cq->bl[(cq->bl_head + kept++) % cq->bl_cap] = *w;
	}
	cq->bl_n = kept;
	atomic_store_explicit(&cq->bl_count, kept, memory_order_release);
	pthread_mutex_unlock(&cq->bl_lock);
}

void rcci_vcq_drain(struct verbs_cq *cq)
{
	struct ibv_wc w[POLL_BATCH];
	struct rcc_wc wc[POLL_BATCH];
	int n;

	gate_shut(cq);
	do {
		int k = 0;
		n = ibv_poll_cq(cq->cq, POLL_BATCH, w);
		for (int i = 0; i < n; i++)
			k += map_wc(cq, &w[i], &wc[k]);
		pthread_mutex_lock(&cq->bl_lock);
		for (int i = 0; i < k; i++)
			bl_push(cq, &wc[i]);
		pthread_mutex_unlock(&cq->bl_lock);
	} while (n == POLL_BATCH);
	gate_open(cq);
}

/* -------------------------------------------------------------- polling */

/*
 * Backlog first (older), then the device, all inside the gate: only a writer
 * (drain) adds to the backlog, so one look at it from within the gate sees
 * everything a drain moved before this poll, and a drain after this poll
 * moves only what arrived after it. (A look before the gate would miss a
 * drain between it and the device poll and need a second look.)
 * Forced inline, and into its three callers: one function call per poll
 * (rcc's op) instead of four nested ones.
 */
static inline __attribute__((always_inline)) int poll_inside(struct verbs_cq *cq,
							     struct rcc_wc *out, int max)
{
	struct ibv_wc w[POLL_BATCH];
	int got = 0;

	if (__builtin_expect(atomic_load_explicit(&cq->bl_count, memory_order_acquire) != 0, 0))
		got = bl_pop(cq, out, max);
	while (got < max) {
		int want = max - got < POLL_BATCH ? max - got : POLL_BATCH;
		int n = ibv_poll_cq(cq->cq, want, w);
		if (n <= 0) {
			if (__builtin_expect(n < 0, 0))
				log_error("verbs: ibv_poll_cq failed (%d)", n);
			break;
		}
		for (int i = 0; i < n; i++)
			got += map_wc(cq, &w[i], &out[got]);
		if (n < want)
			break;
	}
	return got;
}

static inline __attribute__((always_inline)) int poll_once(struct verbs_cq *cq, struct rcc_wc *wc,
							   int max)
{
	struct poller *r = gate_enter(cq);
	int n;

	if (__builtin_expect(r == NULL, 0))
		pthread_mutex_lock(&cq->gate_lock); /* behind the writer */
	n = poll_inside(cq, wc, max);
	if (__builtin_expect(r != NULL, 1))
		gate_leave(r);
	else
		pthread_mutex_unlock(&cq->gate_lock);
	return n;
}

/* Empty poll of a channel CQ: consume events, re-arm, poll again. */
static int rearm_and_poll(struct verbs_cq *cq, struct rcc_wc *wc, int max)
{
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	bool rearmed = false;

	pthread_mutex_lock(&cq->ch_lock);
	while (ibv_get_cq_event(cq->ch, &ev_cq, &ev_ctx) == 0) {
		cq->unacked++;
		cq->armed = false;
	}
	if (cq->unacked >= ACK_BATCH) {
		ibv_ack_cq_events(cq->cq, cq->unacked);
		cq->unacked = 0;
	}
	if (!cq->armed) {
		if (ibv_req_notify_cq(cq->cq, 0) == 0) {
			cq->armed = true;
			rearmed = true;
		} else {
			log_error("verbs: ibv_req_notify_cq failed");
		}
	}
	pthread_mutex_unlock(&cq->ch_lock);
	return rearmed ? poll_once(cq, wc, max) : 0;
}

int rcci_vcq_spin_poll(struct rcc_cq *base, struct rcc_wc *wc, int max)
{
	return poll_once(vcq(base), wc, max);
}

int rcci_vcq_poll(struct rcc_cq *base, struct rcc_wc *wc, int max)
{
	struct verbs_cq *cq = vcq(base);
	int n = poll_once(cq, wc, max);

	if (n == 0 && cq->ch)
		n = rearm_and_poll(cq, wc, max);
	return n;
}

int rcci_vcq_fd(struct rcc_cq *base)
{
	struct verbs_cq *cq = vcq(base);
	return cq->ch ? cq->ch->fd : -EINVAL;
}

/* ------------------------------------------------------------ lifecycle */

int rcci_vcq_create(struct rcc_cq *base)
{
	struct verbs_cq *cq = vcq(base);
	struct verbs_ctx *ctx = vctx(base->ctx);
	int depth = (int)base->depth + CQ_SLACK, rc;

	if (depth > ctx->dev_attr.max_cqe)
		depth = ctx->dev_attr.max_cqe;
	if ((int)base->depth > depth) {
		log_error("verbs: CQ depth %u exceeds the device's %d", base->depth,
			  ctx->dev_attr.max_cqe);
		return -EINVAL;
	}
	rc = rcci_u32map_init(&cq->eps, 16);
	if (rc)
		return rc;
	if (base->mode != RCC_CQ_POLL) {
		cq->ch = ibv_create_comp_channel(ctx->verbs);
		if (!cq->ch) {
			rc = -errno ? -errno : -ENOMEM;
			goto err_map;
		}
		rc = rcci_verbs_set_nonblock(cq->ch->fd);
		if (rc)
			goto err_ch;
	}
	cq->cq = ibv_create_cq(ctx->verbs, depth, cq, cq->ch, 0);
	if (!cq->cq) {
		rc = -errno ? -errno : -ENOMEM;
		log_error("verbs: ibv_create_cq(%d): %s", depth, rcc_strerror(rc));
		goto err_ch;
	}
	if (cq->ch) {
		if (ibv_req_notify_cq(cq->cq, 0)) {
			rc = -EIO;
			goto err_cq;
		}
		cq->armed = true;
	}
	atomic_init(&cq->gate, false);
	atomic_init(&cq->last_ep, NULL);
	pthread_mutex_init(&cq->gate_lock, NULL);
	pthread_mutex_init(&cq->bl_lock, NULL);
	pthread_mutex_init(&cq->ch_lock, NULL);
	atomic_init(&cq->bl_count, 0);
	atomic_init(&cq->overrun, false);
	return 0;

err_cq:
	ibv_destroy_cq(cq->cq);
err_ch:
	if (cq->ch)
		ibv_destroy_comp_channel(cq->ch);
err_map:
	rcci_u32map_fini(&cq->eps);
	return rc;
}

void rcci_vcq_destroy(struct rcc_cq *base)
{
	struct verbs_cq *cq = vcq(base);
	struct ibv_cq *ev_cq;
	void *ev_ctx;

	if (cq->ch) {
		while (ibv_get_cq_event(cq->ch, &ev_cq, &ev_ctx) == 0)
			cq->unacked++;
		if (cq->unacked)
			ibv_ack_cq_events(cq->cq, cq->unacked);
	}
	if (ibv_destroy_cq(cq->cq))
		log_warn("verbs: ibv_destroy_cq failed");
	if (cq->ch && ibv_destroy_comp_channel(cq->ch))
		log_warn("verbs: ibv_destroy_comp_channel failed");
	pthread_mutex_destroy(&cq->ch_lock);
	pthread_mutex_destroy(&cq->bl_lock);
	pthread_mutex_destroy(&cq->gate_lock);
	free(cq->bl);
	rcci_u32map_fini(&cq->eps);
}
