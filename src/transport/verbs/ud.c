/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Datagram (RCC_QP_UD) endpoints on verbs: an IBV_QPT_UD QP taken to RTS at
 * once (INIT with the port and Q_Key, RTR, RTS), address handles from
 * ibv_create_ah, and the GRH kept out of the application's buffers.
 *
 * GRH. A UD receive's first 40 bytes get the packet's GRH (on RoCE v2 over
 * IPv4: 20 bytes the device leaves alone, then the IPv4 header). Every
 * receive posted here gets a first element of its own -- a 40-byte slot of a
 * region this endpoint registered -- before the application's elements, so
 * the payload lands at offset 0 of the application's buffers on verbs as on
 * tcp. A slot is taken at post (its wr_id is the slot's address, as the
 * disconnect markers' are, so no application wr_id can be mistaken for it),
 * and freed when the completion is mapped (cq.c): the sender's GID is read
 * from it then, byte_len loses the 40 bytes, wc_id becomes the
 * application's. A full ring refuses posts with -ENOMEM (rule 2: a receive
 * holds its slot until its completion was polled). An SRQ made for
 * datagrams has a ring of its own, as deep as the SRQ (srq.c), and every
 * receive posted to it gets its slot the same way; a UD endpoint on such an
 * SRQ has none and maps its receives with the SRQ's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "verbs.h"

#define CHUNK 16
/* How far a datagram's GRH lets it travel (RoCE v2: the IP TTL). */
#define UD_HOP_LIMIT 64

struct ud_slot {
	uint64_t wr_id;   /* the application's */
	atomic_bool busy; /* posted, completion not yet mapped */
};

/* The GRH slots of one receive queue: a UD endpoint's own, or a datagram
 * SRQ's (as deep as the SRQ). */
struct verbs_grh {
	uint8_t *grh;          /* VERBS_GRH_LEN per slot */
	struct ibv_mr *grh_mr; /* LOCAL_WRITE over grh */
	struct ud_slot *slots; /* nslots of them */
	uint32_t nslots;
	pthread_mutex_t post_lock; /* next */
	uint32_t next;             /* where the search for a free slot starts */
};

struct verbs_ud {
	struct verbs_grh *rq;   /* its own receives' slots; NULL with an SRQ */
	struct ibv_ah *self_ah; /* the disconnect marker's destination */
};

/* ------------------------------------------------------------ addresses */

void rcci_verbs_ud_addr(const struct rcc_ep *base, struct rcci_ud_addr *out)
{
	const struct verbs_ep *ep = (const struct verbs_ep *)base;
	const struct verbs_ctx *ctx = ep->ctx;

	memset(out, 0, sizeof(*out));
	out->kind = RCCI_UD_VERBS;
	out->qkey = base->attr.qkey;
	out->qpn = ep->qpn;
	out->lid = ctx->lid;
	/* RoCE routes by GID only; InfiniBand inside a subnet by LID */
	out->global = ctx->eth || !ctx->lid;
	if (out->global)
		memcpy(out->gid, ctx->gid.raw, 16);
}

static struct ibv_ah *make_ah(struct verbs_ctx *ctx, const struct rcci_ud_addr *a)
{
	struct ibv_ah_attr at = {
		.dlid = a->lid,
		.sl = a->sl,
		.port_num = ctx->port,
		.is_global = a->global,
	};

	if (a->global) {
		memcpy(at.grh.dgid.raw, a->gid, 16);
		at.grh.sgid_index = (uint8_t)ctx->gid_index;
		at.grh.hop_limit = UD_HOP_LIMIT;
	}
	return ibv_create_ah(ctx->pd, &at);
}

int rcci_verbs_ah_create(struct rcc_ah *base, const struct rcci_ud_addr *a)
{
	struct verbs_ah *ah = (struct verbs_ah *)base;
	struct verbs_ctx *ctx = vctx(base->ctx);

	if (ctx->eth && !a->global)
		return -EINVAL; /* an InfiniBand LID: nothing to route on Ethernet */
	ah->ah = make_ah(ctx, a);
	if (!ah->ah) {
		int rc = -errno ? -errno : -EINVAL;
		log_debug("verbs: ibv_create_ah: %s", rcc_strerror(rc));
		return rc;
	}
	ah->qpn = a->qpn;
	ah->qkey = a->qkey;
	return 0;
}

void rcci_verbs_ah_destroy(struct rcc_ah *base)
{
	struct verbs_ah *ah = (struct verbs_ah *)base;

	if (ibv_destroy_ah(ah->ah))
		log_warn("verbs: ibv_destroy_ah failed");
}

/* ------------------------------------------------------------- lifecycle */

void rcci_grh_free(struct verbs_grh *g)
{
	if (!g)
		return;
	if (g->grh_mr)
		ibv_dereg_mr(g->grh_mr);
	pthread_mutex_destroy(&g->post_lock);
	free(g->grh);
	free(g->slots);
	free(g);
}

int rcci_grh_new(struct verbs_ctx *ctx, uint32_t n, struct verbs_grh **out)
{
	struct verbs_grh *g = calloc(1, sizeof(*g));

	if (!g)
		return -ENOMEM;
	pthread_mutex_init(&g->post_lock, NULL);
	g->nslots = n;
	g->slots = calloc(n, sizeof(*g->slots));
	g->grh = calloc(n, VERBS_GRH_LEN);
	if (!g->slots || !g->grh) {
		rcci_grh_free(g);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < n; i++)
		atomic_init(&g->slots[i].busy, false);
	g->grh_mr = ibv_reg_mr(ctx->pd, g->grh, (size_t)n * VERBS_GRH_LEN, IBV_ACCESS_LOCAL_WRITE);
	if (!g->grh_mr) {
		int rc = -errno ? -errno : -ENOMEM;
		rcci_grh_free(g);
		return rc;
	}
	*out = g;
	return 0;
}

static void ud_free(struct verbs_ud *ud)
{
	if (!ud)
		return;
	if (ud->self_ah)
		ibv_destroy_ah(ud->self_ah);
	rcci_grh_free(ud->rq);
	free(ud);
}

/* The slots of the endpoint's own receives; none with an SRQ (the SRQ's). */
static int ud_alloc(struct verbs_ep *ep)
{
	struct verbs_ud *ud = calloc(1, sizeof(*ud));
	int rc;

	if (!ud)
		return -ENOMEM;
	if (!ep->base.attr.srq) {
		rc = rcci_grh_new(ep->ctx, ep->base.attr.rq_depth, &ud->rq);
		if (rc) {
			free(ud);
			return rc;
		}
	}
	ep->ud = ud;
	return 0;
}

int rcci_verbs_ud_create(struct rcc_ep *base)
{
	struct verbs_ep *ep = vep(base);
	struct rcci_ud_addr self;
	int rc;

	rcci_ep_init(ep);
	ep->kind = VEP_UD;
	base->ud_max_msg = (uint32_t)rcci_verbs_mtu_bytes(ep->ctx->mtu);
	rc = ud_alloc(ep);
	if (rc)
		goto err_lock;
	rc = rcci_qp_create(ep);
	if (rc)
		goto err_ud;
	rc = rcci_qp_ud_ready(ep->qp, ep->ctx->port, ep->base.attr.qkey);
	if (rc)
		goto err_qp;
	rcci_verbs_ud_addr(base, &self);
	ep->ud->self_ah = make_ah(ep->ctx, &self);
	if (!ep->ud->self_ah) {
		rc = -errno ? -errno : -EINVAL;
		log_error("verbs: an address handle to the endpoint itself: %s", rcc_strerror(rc));
		goto err_qp;
	}
	rc = rcci_ep_attach(ep);
	if (rc)
		goto err_qp;
	rc = rcci_ep_start(ep);
	if (rc)
		goto err_attach;
	log_debug("verbs: datagram endpoint QP %u (max %u bytes)", ep->qpn, base->ud_max_msg);
	return 0;

err_attach:
	rcci_ep_detach(ep);
err_qp:
	rcci_qp_destroy(ep);
err_ud:
	ud_free(ep->ud);
	ep->ud = NULL;
err_lock:
	rcci_sq_slots_fini(&ep->sq);
	pthread_mutex_destroy(&ep->lock);
	return rc;
}

void rcci_verbs_ud_destroy(struct rcc_ep *base)
{
	struct verbs_ep *ep = vep(base);

	rcci_verbs_ep_destroy(base); /* maps what is left: the slots go last */
	ud_free(ep->ud);
	ep->ud = NULL;
}

void rcci_ud_marker_dest(struct verbs_ep *ep, struct ibv_send_wr *w)
{
	w->wr.ud.ah = ep->ud->self_ah;
	w->wr.ud.remote_qpn = ep->qpn;
	w->wr.ud.remote_qkey = ep->base.attr.qkey;
}

/* --------------------------------------------------------------- receive */

/* A free slot at or after g->next (post_lock held), or -1: every slot
 * holds a receive. Completions free slots in the order they are polled,
 * which on an SRQ serving several CQs is not the order of posting. */
static int64_t grh_slot(struct verbs_grh *g, uint32_t from)
{
	for (uint32_t i = 0; i < g->nslots; i++) {
		uint32_t s = (from + i) % g->nslots;
		if (!atomic_load_explicit(&g->slots[s].busy, memory_order_acquire))
			return s;
	}
	return -1;
}

int rcci_grh_post(struct verbs_grh *g, struct ibv_qp *qp, struct ibv_srq *srq,
		  const struct rcc_recv_wr *wr, int n, int *posted)
{
	struct ibv_recv_wr w[CHUNK], *bad;
	struct ibv_sge sg[CHUNK][RCCI_MAX_SGE + 1];
	uint32_t slot[CHUNK];
	int done = 0, rc = 0;

	pthread_mutex_lock(&g->post_lock);
	while (done < n && !rc) {
		int k = 0;
		for (; k < CHUNK && done + k < n; k++) {
			const struct rcc_recv_wr *r = &wr[done + k];
			int64_t s = grh_slot(g, g->next);
			if (s < 0) {
				rc = -ENOMEM; /* every slot holds a receive (rule 2) */
				break;
			}
			slot[k] = (uint32_t)s;
			g->next = (uint32_t)(s + 1) % g->nslots;
			g->slots[s].wr_id = r->wr_id;
			sg[k][0] = (struct ibv_sge){ (uintptr_t)(g->grh +
								 (size_t)s * VERBS_GRH_LEN),
						     VERBS_GRH_LEN, g->grh_mr->lkey };
			if (r->num_sge)
				memcpy(&sg[k][1], r->sg_list,
				       (size_t)r->num_sge * sizeof(sg[k][1]));
			w[k].wr_id = (uintptr_t)&g->slots[s];
			w[k].sg_list = sg[k];
			w[k].num_sge = r->num_sge + 1;
			w[k].next = NULL;
			if (k)
				w[k - 1].next = &w[k];
			atomic_store_explicit(&g->slots[s].busy, true, memory_order_relaxed);
		}
		if (!k)
			break;
		bad = NULL;
		int err = srq ? ibv_post_srq_recv(srq, w, &bad) : ibv_post_recv(qp, w, &bad);
		int ok = k;
		if (err) {
			ok = bad ? (int)(bad - w) : 0;
			rc = err > 0 ? -err : (errno > 0 ? -errno : -EINVAL);
			for (int i = ok; i < k; i++) /* never reached the device */
				atomic_store(&g->slots[slot[i]].busy, false);
			if (ok < k)
				g->next = slot[ok];
		}
		done += ok;
	}
	pthread_mutex_unlock(&g->post_lock);
	if (posted)
		*posted = done;
	return rc;
}

int rcci_verbs_ud_post_recv(struct rcc_ep *base, const struct rcc_recv_wr *wr, int n, int *posted)
{
	struct verbs_ep *ep = vep(base);

	return rcci_grh_post(ep->ud->rq, ep->qp, NULL, wr, n, posted);
}

/* An IPv4 header is whole when its ones' complement sum is all ones. */
static bool ipv4_header_ok(const uint8_t *h)
{
	uint32_t sum = 0;

	for (int i = 0; i < 20; i += 2)
		sum += (uint32_t)(h[i] << 8 | h[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum == 0xffff;
}

/*
 * The sender's GID from a receive's GRH slot. RoCE v2 over IPv4 leaves the
 * first 20 bytes alone and puts the IPv4 header (version 4, 20 bytes) in
 * the last 20: the source is then an IPv4-mapped GID. Otherwise the 40
 * bytes are a GRH or an IPv6 header (version 6), the source GID at 8..23.
 * Both can look plausible (the first 20 bytes are whatever they were): an
 * IPv4 header whose checksum holds wins, as rdma-core decides it too.
 */
static void grh_source(const uint8_t *g, uint8_t gid[16])
{
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	const uint8_t *ip4 = g + 20;

	if (ip4[0] == 0x45 && ((g[0] >> 4) != 6 || ipv4_header_ok(ip4))) {
		memcpy(gid, mapped, sizeof(mapped));
		memcpy(gid + 12, ip4 + 12, 4);
	} else {
		memcpy(gid, g + 8, 16);
	}
}

void rcci_ud_map_wc(struct verbs_ep *ep, const struct ibv_wc *w, struct rcc_wc *out)
{
	/* the receive's slot: in the endpoint's own ring, or its SRQ's */
	struct verbs_grh *g = ep->base.attr.srq ? vsrq(ep->base.attr.srq)->grh : ep->ud->rq;
	uintptr_t id = (uintptr_t)w->wr_id;
	uintptr_t first = (uintptr_t)g->slots;

	if (id < first || id >= (uintptr_t)(g->slots + g->nslots) ||
	    (id - first) % sizeof(*g->slots))
		return; /* a send: its wr_id is the application's already */
	struct ud_slot *slot = (struct ud_slot *)id;
	size_t s = (size_t)(slot - g->slots);
	out->wr_id = slot->wr_id;
	if (w->status == IBV_WC_SUCCESS) {
		struct rcci_ud_addr a = {
			.kind = RCCI_UD_VERBS,
			.qkey = ep->base.attr.qkey, /* the receiver's own: rcc.h, struct rcc_wc */
			.qpn = w->src_qp,
			.lid = w->slid,
			.sl = w->sl,
			.global = w->wc_flags & IBV_WC_GRH,
		};
		if (a.global)
			grh_source(g->grh + s * VERBS_GRH_LEN, a.gid);
		rcci_ud_addr_encode(&a, &out->src);
		out->byte_len = w->byte_len >= VERBS_GRH_LEN ? w->byte_len - VERBS_GRH_LEN : 0;
	}
	atomic_store_explicit(&slot->busy, false, memory_order_release);
}
