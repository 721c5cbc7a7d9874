/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Posting: rcc work requests become chained ibv work requests on the stack,
 * a chunk at a time (no allocation), and go to the device in one call each.
 */
#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <stddef.h>

#include "verbs.h"

/* An rcc_sge list is handed to the device as it is. */
static_assert(sizeof(struct rcc_sge) == sizeof(struct ibv_sge), "rcc_sge layout");
static_assert(offsetof(struct rcc_sge, addr) == offsetof(struct ibv_sge, addr), "sge.addr");
static_assert(offsetof(struct rcc_sge, length) == offsetof(struct ibv_sge, length), "sge.length");
static_assert(offsetof(struct rcc_sge, lkey) == offsetof(struct ibv_sge, lkey), "sge.lkey");

#define CHUNK 16

static inline enum ibv_wr_opcode wr_opcode(enum rcc_wr_opcode op)
{
	switch (op) {
	case RCC_WR_SEND_IMM:
		return IBV_WR_SEND_WITH_IMM;
	case RCC_WR_WRITE:
		return IBV_WR_RDMA_WRITE;
	case RCC_WR_WRITE_IMM:
		return IBV_WR_RDMA_WRITE_WITH_IMM;
	case RCC_WR_READ:
		return IBV_WR_RDMA_READ;
	case RCC_WR_CAS:
		return IBV_WR_ATOMIC_CMP_AND_SWP;
	case RCC_WR_FADD:
		return IBV_WR_ATOMIC_FETCH_AND_ADD;
	case RCC_WR_SEND:
		break;
	}
	return IBV_WR_SEND;
}

/* rcc's send flags as verbs': a table of the 16 combinations of the four
 * (a lookup instead of four tests), the same bits as testing each. */
#define FLAGS_OF(f)                                          \
	((((f)&RCC_SEND_SIGNALED) ? IBV_SEND_SIGNALED : 0) | \
	 (((f)&RCC_SEND_INLINE) ? IBV_SEND_INLINE : 0) |     \
	 (((f)&RCC_SEND_FENCE) ? IBV_SEND_FENCE : 0) |       \
	 (((f)&RCC_SEND_SOLICITED) ? IBV_SEND_SOLICITED : 0))
static_assert((RCC_SEND_SIGNALED | RCC_SEND_INLINE | RCC_SEND_FENCE | RCC_SEND_SOLICITED) == 15,
	      "send_flags' table has one entry per combination of the four flags");
static const uint8_t send_flags_of[16] = {
	FLAGS_OF(0),  FLAGS_OF(1),  FLAGS_OF(2),  FLAGS_OF(3),  FLAGS_OF(4),  FLAGS_OF(5),
	FLAGS_OF(6),  FLAGS_OF(7),  FLAGS_OF(8),  FLAGS_OF(9),  FLAGS_OF(10), FLAGS_OF(11),
	FLAGS_OF(12), FLAGS_OF(13), FLAGS_OF(14), FLAGS_OF(15),
};

static inline unsigned send_flags(unsigned f) { return send_flags_of[f & 15]; }

/* ibv_post_* return an errno value; some providers return -1 and set errno. */
static inline int post_err(int rc)
{
	if (rc > 0)
		return -rc;
	return errno > 0 ? -errno : -EINVAL;
}

static inline void fill_send(struct ibv_send_wr *w, const struct rcc_send_wr *r)
{
	w->wr_id = r->wr_id;
	w->sg_list = (struct ibv_sge *)(uintptr_t)r->sg_list;
	w->num_sge = r->num_sge;
	w->opcode = wr_opcode(r->opcode);
	w->send_flags = send_flags(r->flags);
	w->imm_data = 0;
	switch (r->opcode) {
	case RCC_WR_SEND:
		break;
	case RCC_WR_SEND_IMM:
		w->imm_data = htonl(r->imm_data);
		break;
	case RCC_WR_WRITE_IMM:
		w->imm_data = htonl(r->imm_data);
		/* fall through */
	case RCC_WR_WRITE:
	case RCC_WR_READ:
		w->wr.rdma.remote_addr = r->remote_addr;
		w->wr.rdma.rkey = r->rkey;
		break;
	case RCC_WR_CAS:
	case RCC_WR_FADD:
		w->wr.atomic.remote_addr = r->remote_addr;
		w->wr.atomic.rkey = r->rkey;
		w->wr.atomic.compare_add = r->compare_add;
		w->wr.atomic.swap = r->swap;
		break;
	}
}

/* A datagram's destination, from its address handle (as ibv_send_wr.wr.ud). */
static inline void fill_ud(struct ibv_send_wr *w, const struct rcc_send_wr *r)
{
	const struct verbs_ah *ah = (const struct verbs_ah *)r->ah;

	w->wr.ud.ah = ah->ah;
	w->wr.ud.remote_qpn = ah->qpn;
	w->wr.ud.remote_qkey = ah->qkey;
}

/* post_send for one request (every rcc_post_<op>), the same steps without the
 * chunk loop: its counters and the array of 16 work requests on the stack
 * cost more than the request itself. The device took it or not (rc), so
 * its slots are taken on success only, as post_send's took does. */
static int post_send_one(struct verbs_ep *ep, const struct rcc_send_wr *wr, int *posted, bool ud)
{
	struct verbs_sq_slots *s = &ep->sq;
	struct ibv_send_wr w, *bad = NULL;
	int rc = -ENOMEM, done = 0; /* no room: the send queue is full, rule 2 */

	rcci_lock_acquire(&s->lock);
	if (__builtin_expect(rcci_sq_room(s) != 0, 1)) {
		fill_send(&w, wr);
		if (ud)
			fill_ud(&w, wr);
		w.next = NULL;
		rc = ibv_post_send(ep->qp, &w, &bad);
		if (__builtin_expect(rc == 0, 1)) {
			rcci_sq_take(s, wr, 1, ep->base.attr.sig_all);
			done = 1;
		} else {
			rc = post_err(rc);
		}
	}
	rcci_lock_release(&s->lock);
	if (posted)
		*posted = done;
	return rc;
}

/* Rule 2 (rcc.h): at most the slots the endpoint has left are posted, the
 * rest refused with -ENOMEM, as a device with a full send queue does. */
static int post_send(struct verbs_ep *ep, const struct rcc_send_wr *wr, int n, int *posted, bool ud)
{
	struct verbs_sq_slots *s = &ep->sq;
	struct ibv_send_wr w[CHUNK], *bad;
	bool sig_all = ep->base.attr.sig_all;
	int done = 0, rc = 0;

	rcci_lock_acquire(&s->lock);
	int room = (int)rcci_sq_room(s);
	int fit = n < room ? n : room;
	while (done < fit) {
		int k = fit - done < CHUNK ? fit - done : CHUNK;
		for (int i = 0; i < k; i++) {
			fill_send(&w[i], &wr[done + i]);
			if (ud)
				fill_ud(&w[i], &wr[done + i]);
			w[i].next = i + 1 < k ? &w[i + 1] : NULL;
		}
		bad = NULL;
		rc = ibv_post_send(ep->qp, w, &bad);
		/* The slots of what the device took, counted after the post: a
		 * completion of it cannot be counted before, as its poller waits
		 * for the lock this poster holds. */
		int took = __builtin_expect(rc == 0, 1) ? k : bad ? (int)(bad - w) : 0;
		rcci_sq_take(s, &wr[done], took, sig_all);
		done += took;
		if (__builtin_expect(rc != 0, 0)) {
			rc = post_err(rc);
			break;
		}
	}
	rcci_lock_release(&s->lock);
	if (!rc && done < n)
		rc = -ENOMEM; /* the send queue is full: rule 2 */
	if (posted)
		*posted = done;
	return rc;
}

int rcci_verbs_post_send(struct rcc_ep *base, const struct rcc_send_wr *wr, int n, int *posted)
{
	if (__builtin_expect(n == 1, 1))
		return post_send_one(vep(base), wr, posted, false);
	return post_send(vep(base), wr, n, posted, false);
}

int rcci_verbs_ud_post_send(struct rcc_ep *base, const struct rcc_send_wr *wr, int n, int *posted)
{
	if (__builtin_expect(n == 1, 1))
		return post_send_one(vep(base), wr, posted, true);
	return post_send(vep(base), wr, n, posted, true);
}

/* Rule 2 (rcc.h): an endpoint's own receive queue takes at most rq_depth
 * receives until completions are polled (Soft-RoCE frees a consumed
 * receive's slot by itself; rcc counts, as a NIC that frees at poll time). */
int rcci_verbs_post_recv(struct rcc_ep *base, const struct rcc_recv_wr *wr, int n, int *posted)
{
	struct verbs_ep *ep = vep(base);
	unsigned depth = base->attr.rq_depth, used = atomic_load(&ep->rq_used), fit;
	int done = 0;

	/* One receive (rcc_post_recv): the steps below for n == 1 without the
	 * chunk loop. A full queue is refused before the compare-and-swap,
	 * which would store the count unchanged (fit 0) and post nothing. */
	if (__builtin_expect(n == 1, 1)) {
		struct ibv_recv_wr w, *bad = NULL;

		do {
			if (__builtin_expect(used >= depth, 0)) {
				if (posted)
					*posted = 0;
				return -ENOMEM; /* the receive queue is full: rule 2 */
			}
		} while (!atomic_compare_exchange_weak(&ep->rq_used, &used, used + 1));
		w.wr_id = wr->wr_id;
		w.sg_list = (struct ibv_sge *)(uintptr_t)wr->sg_list;
		w.num_sge = wr->num_sge;
		w.next = NULL;
		int rc = ibv_post_recv(ep->qp, &w, &bad);
		if (__builtin_expect(rc != 0, 0)) {
			rc = post_err(rc);
			atomic_fetch_sub(&ep->rq_used, 1); /* the device took none */
		}
		if (posted)
			*posted = rc ? 0 : 1;
		return rc;
	}

	do {
		unsigned room = used < depth ? depth - used : 0;
		fit = (unsigned)n < room ? (unsigned)n : room;
	} while (!atomic_compare_exchange_weak(&ep->rq_used, &used, used + fit));
	int rc = rcci_verbs_post_recv_to(ep->qp, NULL, wr, (int)fit, &done);
	if (rc)
		atomic_fetch_sub(&ep->rq_used,
				 fit - (unsigned)done); /* the device took only these */
	else if (fit < (unsigned)n)
		rc = -ENOMEM; /* the receive queue is full: rule 2 */
	if (posted)
		*posted = done;
	return rc;
}

int rcci_verbs_post_recv_to(struct ibv_qp *qp, struct ibv_srq *srq, const struct rcc_recv_wr *wr,
			    int n, int *posted)
{
	struct ibv_recv_wr w[CHUNK], *bad;
	int done = 0;

	while (done < n) {
		int k = n - done < CHUNK ? n - done : CHUNK;
		for (int i = 0; i < k; i++) {
			w[i].wr_id = wr[done + i].wr_id;
			w[i].sg_list = (struct ibv_sge *)(uintptr_t)wr[done + i].sg_list;
			w[i].num_sge = wr[done + i].num_sge;
			w[i].next = i + 1 < k ? &w[i + 1] : NULL;
		}
		bad = NULL;
		int rc = srq ? ibv_post_srq_recv(srq, w, &bad) : ibv_post_recv(qp, w, &bad);
		if (__builtin_expect(rc != 0, 0)) {
			rc = post_err(rc);
			if (posted)
				*posted = done + (bad ? (int)(bad - w) : 0);
			return rc;
		}
		done += k;
	}
	if (posted)
		*posted = n;
	return 0;
}
