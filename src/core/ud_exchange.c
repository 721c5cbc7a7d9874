/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Exchanging datagram addresses through a listener (rcc_ud_resolve /
 * rcc_ud_answer): the client's connect carries its address as private data,
 * the server turns the request down with its own address as reject private
 * data. A blob (RCC_UD_ADDR_SIZE) fits both on every transport and bring-up,
 * nothing is ever connected, and the peer's bytes go through the same
 * decoder as any other address. On the tcp transport the host part of the
 * address is the one the other side was reached at: that one works between
 * these two hosts for certain, while an endpoint's own choice (rcc_ud_addr)
 * is a guess on a host with several addresses.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "base/addr.h"
#include "base/last_error.h"
#include "base/log.h"
#include "core/core.h"
#include "rcc/util.h"

/* tcp: the host the other side was reached at, instead of the one it named. */
static void use_host(struct rcci_ud_addr *a, const struct sockaddr_storage *ss)
{
	if (a->kind != RCCI_UD_TCP)
		return;
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)ss;
		static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
		memcpy(a->gid, mapped, sizeof(mapped));
		memcpy(a->gid + 12, &in->sin_addr, 4);
	} else if (ss->ss_family == AF_INET6) {
		memcpy(a->gid, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
	}
}

/* The peer's blob, if it is one of our kind (with its host replaced). */
static int take_peer(const struct rcc_ep *ep, const void *data, size_t len,
		     const struct sockaddr_storage *reached, struct rcc_ud_addr *peer,
		     const char **why)
{
	struct rcc_ud_addr blob;
	struct rcci_ud_addr a;
	struct rcci_ud_addr mine;

	if (!data || len != RCC_UD_ADDR_SIZE) {
		*why = "not a datagram address (wrong length)";
		return -EINVAL;
	}
	memcpy(blob.bytes, data, RCC_UD_ADDR_SIZE);
	if (rcci_ud_addr_decode(&blob, &a, why))
		return -EINVAL;
	ep->ctx->ops->ud_addr(ep, &mine);
	if (a.kind != mine.kind) {
		*why = "a datagram address of another transport";
		return -EINVAL;
	}
	if (reached)
		use_host(&a, reached);
	rcci_ud_addr_encode(&a, peer);
	return 0;
}

static bool is_ud(const struct rcc_ep *ep) { return ep && ep->attr.qp_type == RCC_QP_UD; }

int rcc_ud_resolve(struct rcc_ep *ud_ep, const char *addr, int timeout_ms, struct rcc_ud_addr *peer)
{
	uint8_t answer[RCC_REJECT_PRIVATE_DATA_MAX];
	size_t answer_len = 0;
	struct rcc_ud_addr mine;
	struct rcc_ep *ep = NULL;
	struct sockaddr_storage ss;
	socklen_t sslen;
	const char *why = NULL;
	int rc;

	rcci_error_clear();
	if (!is_ud(ud_ep) || !addr || !peer || timeout_ms < -1)
		return rcci_fail(-EINVAL, "rcc_ud_resolve: a datagram endpoint, an address and "
					  "a result are needed, and a timeout of -1 or more");
	rcc_ud_addr(ud_ep, &mine);
	/* The smallest connected endpoint there is, on the datagram endpoint's
	 * CQ: it only carries the request and never comes up. */
	struct rcc_ep_attr a = {
		.send_cq = ud_ep->send_cq,
		.sq_depth = 1,
		.rq_depth = 1,
		.max_send_sge = 1,
		.max_recv_sge = 1,
		.private_data = mine.bytes,
		.private_data_len = RCC_UD_ADDR_SIZE,
	};
	rc = rcc_connect_ex(ud_ep->ctx, addr, &a, timeout_ms, &ep, answer, &answer_len);
	if (rc == 0) {
		rcc_ep_close(ep);
		rcci_error_clear();
		return rcci_fail(-EPROTO,
				 "%s accepted a connection instead of answering with its "
				 "datagram address (not an rcc_ud_answer() listener)",
				 addr);
	}
	if (rc != -ECONNABORTED)
		return rc; /* rcc_connect_ex() said why */
	bool have_host = rcci_addr_resolve(addr, false, &ss, &sslen) == 0;
	if (take_peer(ud_ep, answer, answer_len, have_host ? &ss : NULL, peer, &why)) {
		rcci_error_clear();
		/* the peer's words up to a NUL; rcci_fail() escapes them */
		return rcci_fail(-ECONNABORTED,
				 "%s turned the request down without a datagram address (%s): "
				 "'%.*s'",
				 addr, why, (int)answer_len, (const char *)answer);
	}
	return 0;
}

/* Words for a request that is not ours, sent back as reject data. */
static const char not_ud[] = "this listener exchanges datagram (RCC_QP_UD) addresses only";

int rcc_ud_answer(struct rcc_listener *lst, struct rcc_ep *ud_ep, int timeout_ms,
		  struct rcc_ud_addr *peer)
{
	uint64_t deadline = timeout_ms < 0 ? 0 : rcc_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	struct rcc_ud_addr mine, theirs;
	int rc;

	rcci_error_clear();
	if (!lst || !is_ud(ud_ep) || !peer || timeout_ms < -1 || ud_ep->ctx != lst->ctx)
		return rcci_fail(-EINVAL, "rcc_ud_answer: a listener and a datagram endpoint of "
					  "its context, a result, and a timeout of -1 or more");
	rcc_ud_addr(ud_ep, &mine);
	for (;;) {
		struct rcc_conn_req *req;
		int wait = -1;
		if (timeout_ms >= 0) {
			uint64_t now = rcc_now_ns();
			wait = now >= deadline ? 0 : (int)((deadline - now + 999999) / 1000000);
		}
		rc = rcc_get_request(lst, wait, &req);
		if (rc)
			return rc;
		size_t len;
		const void *pd = rcc_conn_req_private_data(req, &len);
		struct sockaddr_storage ss;
		socklen_t sslen;
		bool have_host = rcci_addr_resolve(rcc_conn_req_peer(req), false, &ss, &sslen) == 0;
		const char *why = NULL;
		char who[64];
		snprintf(who, sizeof(who), "%s", rcc_conn_req_peer(req));
		if (take_peer(ud_ep, pd, len, have_host ? &ss : NULL, &theirs, &why)) {
			log_info("ud_answer: turning %s away: %s", who, why);
			rcc_reject_req(req, not_ud, sizeof(not_ud) - 1);
			continue;
		}
		rc = rcc_reject_req(req, mine.bytes, RCC_UD_ADDR_SIZE);
		if (rc) {
			/* it asked and left: nobody to give an address to */
			log_info("ud_answer: %s left before its answer: %s", who, rcc_strerror(rc));
			continue;
		}
		*peer = theirs;
		return 0;
	}
}
