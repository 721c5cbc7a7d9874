/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Posting work: every request is checked here against the endpoint's limits,
 * so transports can trust what they receive.
 */
#include <errno.h>

#include "base/last_error.h"
#include "base/log.h"
#include "core/core.h"

#define SEND_FLAGS_ALL (RCC_SEND_SIGNALED | RCC_SEND_INLINE | RCC_SEND_FENCE | RCC_SEND_SOLICITED)

static int sge_total(const struct rcc_sge *sg, int n, uint64_t *total)
{
	uint64_t sum = 0;

	if (n > 0 && !sg)
		return -EINVAL;
	for (int i = 0; i < n; i++)
		sum += sg[i].length;
	if (sum > RCC_MAX_MSG_SIZE)
		return -EINVAL;
	*total = sum;
	return 0;
}

static const char *opcode_word(enum rcc_wr_opcode op)
{
	switch (op) {
	case RCC_WR_WRITE:
		return "WRITE";
	case RCC_WR_WRITE_IMM:
		return "WRITE_IMM";
	case RCC_WR_READ:
		return "READ";
	case RCC_WR_CAS:
		return "CAS";
	case RCC_WR_FADD:
		return "FADD";
	default:
		return "SEND";
	}
}

/* A datagram: SEND or SEND_IMM, to an address handle of this context, at
 * most one datagram long (rules U2 in rcc.h). */
static int check_ud_send(const struct rcc_ep *ep, const struct rcc_send_wr *wr, uint64_t total)
{
	if (wr->opcode != RCC_WR_SEND && wr->opcode != RCC_WR_SEND_IMM) {
		rcci_error_clear(); /* this refusal is the text, not an older one */
		return rcci_fail(-EINVAL,
				 "%s on a datagram (RCC_QP_UD) endpoint: UD carries SEND and "
				 "SEND_IMM only",
				 opcode_word(wr->opcode));
	}
	if (!wr->ah || wr->ah->ctx != ep->ctx) {
		rcci_error_clear();
		return rcci_fail(-EINVAL, "a send on a datagram (RCC_QP_UD) endpoint needs an "
					  "address handle of its context (rcc_send_wr.ah)");
	}
	if (total > ep->ud_max_msg) {
		rcci_error_clear();
		return rcci_fail(-EMSGSIZE,
				 "a datagram of %llu bytes: this endpoint carries at most %u "
				 "(rcc_ud_max_msg)",
				 (unsigned long long)total, ep->ud_max_msg);
	}
	return 0; /* the inline limit is checked as for any SEND */
}

/* Forced inline: rcc_post_<op> (post_one) passes a constant opcode, and the
 * compiler then drops the opcode's range check and switch; the checks made
 * are the same. */
static inline __attribute__((always_inline)) int check_send_wr(const struct rcc_ep *ep,
							       const struct rcc_send_wr *wr)
{
	uint64_t total;

	if (wr->opcode < RCC_WR_SEND || wr->opcode > RCC_WR_FADD || (wr->flags & ~SEND_FLAGS_ALL) ||
	    wr->num_sge < 0 || (uint32_t)wr->num_sge > ep->attr.max_send_sge)
		return -EINVAL;
	if (sge_total(wr->sg_list, wr->num_sge, &total))
		return -EINVAL;
	if (__builtin_expect(ep->attr.qp_type == RCC_QP_UD, 0)) {
		int rc = check_ud_send(ep, wr, total);
		if (rc)
			return rc;
	}
	if (__builtin_expect(ep->attr.qp_type == RCC_QP_UC, 0) && wr->opcode >= RCC_WR_READ) {
		rcci_error_clear(); /* this refusal is the text, not an older one */
		return rcci_fail(-EINVAL,
				 "%s on an unreliable-connected (RCC_QP_UC) endpoint: UC "
				 "carries SEND and WRITE only",
				 opcode_word(wr->opcode));
	}
	switch (wr->opcode) {
	case RCC_WR_CAS:
	case RCC_WR_FADD:
		/* Devices differ (rxe refuses at post, others fail the completion):
		 * refusing here gives one answer everywhere. */
		if (total != 8 || (wr->flags & RCC_SEND_INLINE) || (wr->remote_addr & 7))
			return -EINVAL;
		break;
	case RCC_WR_READ:
		if (wr->flags & RCC_SEND_INLINE)
			return -EINVAL;
		break;
	default:
		if ((wr->flags & RCC_SEND_INLINE) && total > ep->max_inline)
			return -EINVAL;
		break;
	}
	return 0;
}

static inline int check_connected(const struct rcc_ep *ep)
{
	/* a started connect keeps the transport's state "connected" while it
	 * sets the endpoint up; the application may not post until it ended */
	if (__builtin_expect(atomic_load_explicit(&ep->state, memory_order_acquire) !=
					     RCC_EP_CONNECTED ||
				     atomic_load_explicit(&ep->connecting, memory_order_acquire),
			     0))
		return -ENOTCONN;
	return 0;
}

int rcc_post_send_list(struct rcc_ep *ep, const struct rcc_send_wr *wr, int n, int *posted)
{
	int rc;

	if (posted)
		*posted = 0;
	if (!ep || !wr || n <= 0)
		return -EINVAL;
	rc = check_connected(ep);
	if (rc)
		return rc;
	int (*post)(struct rcc_ep *, const struct rcc_send_wr *, int,
		    int *) = __builtin_expect(ep->attr.qp_type == RCC_QP_UD, 0) ?
				     ep->ctx->ops->ud_post_send :
				     ep->ctx->ops->post_send;
	for (int i = 0; i < n; i++) {
		rc = check_send_wr(ep, &wr[i]);
		if (rc) {
			log_debug("post_send: request %d of %d is malformed", i, n);
			/* Post the good prefix so the outcome matches verbs' bad_wr. */
			if (i > 0) {
				int done = 0;
				int rc2 = post(ep, wr, i, &done);
				if (posted)
					*posted = done;
				return rc2 ? rc2 : rc;
			}
			return rc;
		}
	}
	return post(ep, wr, n, posted);
}

/* Forced inline: rcc_post_recv's one request is checked without a call. */
static inline __attribute__((always_inline)) bool recv_wr_ok(const struct rcc_recv_wr *wr,
							     uint32_t max_sge)
{
	uint64_t total;

	return wr->num_sge >= 0 && (uint32_t)wr->num_sge <= max_sge &&
	       !sge_total(wr->sg_list, wr->num_sge, &total);
}

int rcci_recv_list_check(const struct rcc_recv_wr *wr, int n, uint32_t max_sge)
{
	for (int i = 0; i < n; i++)
		if (!recv_wr_ok(&wr[i], max_sge))
			return i;
	return n;
}

/* What rcc_post_recv_list checks of the endpoint, before its requests. */
static inline __attribute__((always_inline)) int recv_ready(const struct rcc_ep *ep)
{
	if (!ep)
		return -EINVAL;
	if (__builtin_expect(ep->attr.srq != NULL, 0)) {
		rcci_error_clear(); /* this refusal is the text, not an older one */
		return rcci_fail(-EINVAL,
				 "this endpoint takes its receives from a shared receive queue: "
				 "post them with rcc_srq_post_recv()");
	}
	return check_connected(ep);
}

int rcc_post_recv_list(struct rcc_ep *ep, const struct rcc_recv_wr *wr, int n, int *posted)
{
	int rc;

	if (posted)
		*posted = 0;
	if (!wr || n <= 0)
		return -EINVAL;
	rc = recv_ready(ep);
	if (rc)
		return rc;
	int good = rcci_recv_list_check(wr, n, ep->attr.max_recv_sge);
	/* Post the good prefix so the outcome matches verbs' bad_wr. */
	if (good)
		rc = __builtin_expect(ep->attr.qp_type == RCC_QP_UD, 0) ?
			     ep->ctx->ops->ud_post_recv(ep, wr, good, posted) :
			     ep->ctx->ops->post_recv(ep, wr, good, posted);
	return rc ? rc : (good < n ? -EINVAL : 0);
}

/* rcc_post_recv_list(ep, &wr, 1, NULL) step for step (the same checks in the
 * same order, the same answers) without the call into the list's loop; the
 * request is built after recv_ready's acquire loads, so its fields stay known
 * to the compiler. */
int rcc_post_recv(struct rcc_ep *ep, const struct rcc_sge *sge, int num_sge, uint64_t wr_id)
{
	int rc = recv_ready(ep);

	if (rc)
		return rc;
	struct rcc_recv_wr wr = { .wr_id = wr_id, .sg_list = sge, .num_sge = num_sge };
	if (!recv_wr_ok(&wr, ep->attr.max_recv_sge))
		return -EINVAL;
	return __builtin_expect(ep->attr.qp_type == RCC_QP_UD, 0) ?
		       ep->ctx->ops->ud_post_recv(ep, &wr, 1, NULL) :
		       ep->ctx->ops->post_recv(ep, &wr, 1, NULL);
}

/*
 * rcc_post_<op>: rcc_post_send_list(ep, &wr, 1, NULL) step for step, the same
 * checks in the same order and the same answers, without the call into the
 * list loop. post_ready first (the endpoint), then the request is built and
 * post_single checks and posts it: built after check_connected's acquire
 * loads, its fields are known to the compiler (with the opcode a constant,
 * check_send_wr's opcode checks fold away) instead of read back from memory.
 */
static inline __attribute__((always_inline)) int post_ready(const struct rcc_ep *ep)
{
	if (!ep)
		return -EINVAL;
	return check_connected(ep);
}

static inline __attribute__((always_inline)) int post_single(struct rcc_ep *ep,
							     const struct rcc_send_wr *wr)
{
	int rc = check_send_wr(ep, wr);

	if (rc) {
		log_debug("post_send: request %d of %d is malformed", 0, 1);
		return rc;
	}
	return __builtin_expect(ep->attr.qp_type == RCC_QP_UD, 0) ?
		       ep->ctx->ops->ud_post_send(ep, wr, 1, NULL) :
		       ep->ctx->ops->post_send(ep, wr, 1, NULL);
}

static inline __attribute__((always_inline)) int post_one(struct rcc_ep *ep, enum rcc_wr_opcode op,
							  const struct rcc_sge *sge, int num_sge,
							  uint64_t raddr, uint32_t rkey,
							  uint32_t imm, uint64_t wr_id,
							  unsigned flags)
{
	int rc = post_ready(ep);

	if (rc)
		return rc;
	struct rcc_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = sge,
		.num_sge = num_sge,
		.opcode = op,
		.flags = flags,
		.imm_data = imm,
		.remote_addr = raddr,
		.rkey = rkey,
	};
	return post_single(ep, &wr);
}

int rcc_post_send(struct rcc_ep *ep, const struct rcc_sge *sge, int num_sge, uint64_t wr_id,
		  unsigned flags)
{
	return post_one(ep, RCC_WR_SEND, sge, num_sge, 0, 0, 0, wr_id, flags);
}

int rcc_post_send_imm(struct rcc_ep *ep, const struct rcc_sge *sge, int num_sge, uint32_t imm,
		      uint64_t wr_id, unsigned flags)
{
	return post_one(ep, RCC_WR_SEND_IMM, sge, num_sge, 0, 0, imm, wr_id, flags);
}

static int post_to(struct rcc_ep *ep, struct rcc_ah *ah, enum rcc_wr_opcode op,
		   const struct rcc_sge *sge, int num_sge, uint32_t imm, uint64_t wr_id,
		   unsigned flags)
{
	struct rcc_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = sge,
		.num_sge = num_sge,
		.opcode = op,
		.flags = flags,
		.imm_data = imm,
		.ah = ah,
	};

	if (!ep || ep->attr.qp_type != RCC_QP_UD) {
		rcci_error_clear();
		return rcci_fail(-EINVAL, "rcc_post_send_to: not a datagram (RCC_QP_UD) endpoint");
	}
	return rcc_post_send_list(ep, &wr, 1, NULL);
}

int rcc_post_send_to(struct rcc_ep *ep, struct rcc_ah *ah, const struct rcc_sge *sge, int num_sge,
		     uint64_t wr_id, unsigned flags)
{
	return post_to(ep, ah, RCC_WR_SEND, sge, num_sge, 0, wr_id, flags);
}

int rcc_post_send_to_imm(struct rcc_ep *ep, struct rcc_ah *ah, const struct rcc_sge *sge,
			 int num_sge, uint32_t imm, uint64_t wr_id, unsigned flags)
{
	return post_to(ep, ah, RCC_WR_SEND_IMM, sge, num_sge, imm, wr_id, flags);
}

int rcc_post_write(struct rcc_ep *ep, const struct rcc_sge *sge, int num_sge, uint64_t remote_addr,
		   uint32_t rkey, uint64_t wr_id, unsigned flags)
{
	return post_one(ep, RCC_WR_WRITE, sge, num_sge, remote_addr, rkey, 0, wr_id, flags);
}

int rcc_post_write_imm(struct rcc_ep *ep, const struct rcc_sge *sge, int num_sge,
		       uint64_t remote_addr, uint32_t rkey, uint32_t imm, uint64_t wr_id,
		       unsigned flags)
{
	return post_one(ep, RCC_WR_WRITE_IMM, sge, num_sge, remote_addr, rkey, imm, wr_id, flags);
}

int rcc_post_read(struct rcc_ep *ep, const struct rcc_sge *sge, int num_sge, uint64_t remote_addr,
		  uint32_t rkey, uint64_t wr_id, unsigned flags)
{
	return post_one(ep, RCC_WR_READ, sge, num_sge, remote_addr, rkey, 0, wr_id, flags);
}

static inline __attribute__((always_inline)) int post_atomic(struct rcc_ep *ep,
							     enum rcc_wr_opcode op,
							     const struct rcc_sge *result,
							     uint64_t remote_addr, uint32_t rkey,
							     uint64_t compare_add, uint64_t swap,
							     uint64_t wr_id, unsigned flags)
{
	int rc = post_ready(ep);

	if (rc)
		return rc;
	struct rcc_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = result,
		.num_sge = 1,
		.opcode = op,
		.flags = flags,
		.remote_addr = remote_addr,
		.rkey = rkey,
		.compare_add = compare_add,
		.swap = swap,
	};
	return post_single(ep, &wr);
}

int rcc_post_cas(struct rcc_ep *ep, const struct rcc_sge *result, uint64_t remote_addr,
		 uint32_t rkey, uint64_t compare, uint64_t swap, uint64_t wr_id, unsigned flags)
{
	return post_atomic(ep, RCC_WR_CAS, result, remote_addr, rkey, compare, swap, wr_id, flags);
}

int rcc_post_fadd(struct rcc_ep *ep, const struct rcc_sge *result, uint64_t remote_addr,
		  uint32_t rkey, uint64_t add, uint64_t wr_id, unsigned flags)
{
	return post_atomic(ep, RCC_WR_FADD, result, remote_addr, rkey, add, 0, wr_id, flags);
}
