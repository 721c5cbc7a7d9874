/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Manual bring-up (RCC_BRINGUP_MANUAL), as ibv_rc_pingpong does it: the two
 * sides describe their QPs over a TCP connection and each moves its own QP
 * RESET -> INIT -> RTR -> RTS with ibv_modify_qp. The TCP connection stays
 * open afterwards as the liveness channel: EOF means the peer is gone, and
 * closing it is how this side tells the peer it left.
 *
 * Wire format: every message is a 40-byte header, all integers little-endian,
 * followed by pdata_len bytes of private data.
 *    0  4  magic "RCCM"
 *    4  1  version (1)
 *    5  1  kind: 1 HELLO (client), 2 ACCEPT, 3 REJECT (server), 4 READY (client)
 *    6  2  pdata_len (HELLO <= 48, ACCEPT <= 192, REJECT <= 144, READY 0)
 *    8  4  QP number
 *   12  4  first packet sequence number (24 bits)
 *   16  2  LID (0 on RoCE)
 *   18  1  active path MTU of the sender's port (enum ibv_mtu, 1..5)
 *   19  1  READ/atomic requests the sender accepts as responder
 *   20 16  GID, as stored in the GID table (network order)
 *   36  4  HELLO, ACCEPT: the sender's heartbeat QP number (heartbeat.c; 0:
 *          it sends none); REJECT, READY: 0
 * Exchange: HELLO ->, <- ACCEPT (server QP at RTS) or REJECT, READY -> once the
 * client QP is at RTS, so the server's accept returns only when both sides
 * can receive. Path MTU is the smaller of the two; each side uses its
 * context's GID index as source GID.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/addr.h"
#include "base/log.h"
#include "rcc/util.h"
#include "verbs.h"

#define MSG_HDR 40
#define MSG_VERSION 1

enum msg_kind {
	MSG_HELLO = 1,
	MSG_ACCEPT,
	MSG_REJECT,
	MSG_READY
};

struct msg {
	uint8_t kind;
	uint16_t pdata_len;
	uint32_t qpn, psn;
	uint32_t hb_qpn;
	uint16_t lid;
	uint8_t mtu, rd_atomic;
	uint8_t gid[16];
	uint8_t pdata[RCC_ACCEPT_PRIVATE_DATA_MAX];
};

static size_t msg_max_pdata(uint8_t kind)
{
	switch (kind) {
	case MSG_HELLO:
		return RCC_CONNECT_PRIVATE_DATA_MAX;
	case MSG_ACCEPT:
		return RCC_ACCEPT_PRIVATE_DATA_MAX;
	case MSG_REJECT:
		return RCC_REJECT_PRIVATE_DATA_MAX;
	default:
		return 0;
	}
}

static void msg_encode(const struct msg *m, uint8_t *out)
{
	memcpy(out, "RCCM", 4);
	out[4] = MSG_VERSION;
	out[5] = m->kind;
	rcc_put_le16(out + 6, m->pdata_len);
	rcc_put_le32(out + 8, m->qpn);
	rcc_put_le32(out + 12, m->psn);
	rcc_put_le16(out + 16, m->lid);
	out[18] = m->mtu;
	out[19] = m->rd_atomic;
	memcpy(out + 20, m->gid, 16);
	rcc_put_le32(out + 36, m->hb_qpn & 0xffffffu);
	memcpy(out + MSG_HDR, m->pdata, m->pdata_len);
}

static int msg_decode_hdr(const uint8_t *in, struct msg *m)
{
	if (memcmp(in, "RCCM", 4) || in[4] != MSG_VERSION)
		return -EPROTO;
	m->kind = in[5];
	m->pdata_len = rcc_get_le16(in + 6);
	m->qpn = rcc_get_le32(in + 8) & 0xffffff;
	m->psn = rcc_get_le32(in + 12) & 0xffffff;
	m->lid = rcc_get_le16(in + 16);
	m->mtu = in[18];
	m->rd_atomic = in[19];
	memcpy(m->gid, in + 20, 16);
	m->hb_qpn = rcc_get_le32(in + 36);
	if (m->hb_qpn > 0xffffffu)
		m->hb_qpn = 0; /* not a QP number: no heartbeats with this peer */
	if (m->kind < MSG_HELLO || m->kind > MSG_READY || m->pdata_len > msg_max_pdata(m->kind))
		return -EPROTO;
	if (m->kind != MSG_READY && m->kind != MSG_REJECT &&
	    (m->mtu < IBV_MTU_256 || m->mtu > IBV_MTU_4096 || m->qpn == 0))
		return -EPROTO;
	return 0;
}

static int msg_send(int fd, const struct msg *m, uint64_t deadline)
{
	uint8_t buf[MSG_HDR + RCC_ACCEPT_PRIVATE_DATA_MAX];
	msg_encode(m, buf);
	return rcci_send_all(fd, buf, MSG_HDR + m->pdata_len, deadline);
}

static int msg_recv(int fd, struct msg *m, uint64_t deadline)
{
	uint8_t hdr[MSG_HDR];
	int rc = rcci_recv_all(fd, hdr, sizeof(hdr), deadline);

	if (rc)
		return rc;
	rc = msg_decode_hdr(hdr, m);
	if (rc)
		return rc;
	return rcci_recv_all(fd, m->pdata, m->pdata_len, deadline);
}

static uint32_t random_psn(void)
{
	uint32_t v = 0;
	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v))
		v = (uint32_t)rcci_deadline(0) * 2654435761u; /* the clock: any start will do */
	return v & 0xffffff;
}

/* Our side of the description. */
static void describe(struct verbs_ep *ep, uint8_t kind, uint32_t psn, struct msg *m)
{
	m->kind = kind;
	m->qpn = ep->qpn;
	m->psn = psn;
	m->lid = ep->ctx->lid;
	m->mtu = (uint8_t)ep->ctx->mtu;
	m->rd_atomic = rcci_rd_atomic_responder(ep);
	memcpy(m->gid, ep->ctx->gid.raw, 16);
	m->hb_qpn = 0;
	m->pdata_len = (uint16_t)ep->base.own_pdata_len;
	memcpy(m->pdata, ep->base.own_pdata, ep->base.own_pdata_len);
}

static int qp_init(struct verbs_ep *ep)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = ep->ctx->port,
		.qp_access_flags = (unsigned)rcci_qp_access(ep),
	};
	return rcci_qp_modify(ep, &a,
			      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
			      "INIT");
}

static int qp_rtr_rts(struct verbs_ep *ep, const struct msg *peer, uint32_t our_psn)
{
	static const uint8_t zero[16];
	struct verbs_ctx *ctx = ep->ctx;
	struct ibv_qp_attr a;
	int mask, rc;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = peer->mtu < (uint8_t)ctx->mtu ? (enum ibv_mtu)peer->mtu : ctx->mtu;
	a.dest_qp_num = peer->qpn;
	a.rq_psn = peer->psn;
	a.ah_attr.dlid = peer->lid;
	a.ah_attr.port_num = ctx->port;
	if (ctx->eth || memcmp(peer->gid, zero, 16)) {
		a.ah_attr.is_global = 1;
		memcpy(a.ah_attr.grh.dgid.raw, peer->gid, 16);
		a.ah_attr.grh.sgid_index = (uint8_t)ctx->gid_index;
		a.ah_attr.grh.hop_limit = 64;
	}
	mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
	rcci_qp_rtr_overrides(ep, &a, &mask, rcci_rd_atomic_responder(ep));
	rc = rcci_qp_modify(ep, &a, mask, "RTR");
	if (rc)
		return rc;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = our_psn;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	uint8_t rd = rcci_rd_atomic_initiator(ep);
	rcci_qp_rts_overrides(ep, &a, &mask, peer->rd_atomic < rd ? peer->rd_atomic : rd);
	return rcci_qp_modify(ep, &a, mask, "RTS");
}

/* QP created, attached, INIT, initial receives posted. */
static int setup_qp(struct verbs_ep *ep)
{
	int rc = rcci_qp_create(ep);
	if (rc)
		return rc;
	rc = rcci_ep_attach(ep);
	if (rc)
		return rc;
	rc = qp_init(ep);
	if (rc)
		return rc;
	return rcci_qp_post_initial(ep);
}

/* ---------------------------------------------------------------- active */

static int man_connect(struct rcc_ep *base, const struct sockaddr *sa, socklen_t salen,
		       int timeout_ms)
{
	struct verbs_ep *ep = vep(base);
	uint64_t deadline = rcci_deadline(timeout_ms);
	uint32_t psn = random_psn();
	struct msg m, peer;
	int rc;

	rcci_ep_init(ep);
	ep->kind = VEP_MANUAL;
	ep->sock = rcci_sock_connect(sa, salen, deadline);
	if (ep->sock < 0) {
		rc = ep->sock;
		ep->sock = -1;
		goto err;
	}
	rcci_sock_keepalive(ep->sock);
	rc = setup_qp(ep);
	if (rc)
		goto err;
	describe(ep, MSG_HELLO, psn, &m);
	m.hb_qpn = rcci_hb_qpn(ep->ctx);
	rc = msg_send(ep->sock, &m, deadline);
	if (rc)
		goto err;
	rc = msg_recv(ep->sock, &peer, deadline); /* -ECONNRESET: dropped before an answer */
	if (rc)
		goto err;
	if (peer.kind == MSG_REJECT) {
		log_info("verbs: connection to %s rejected by the server", base->peer);
		memcpy(base->peer_pdata, peer.pdata, peer.pdata_len); /* <= the reject maximum */
		base->peer_pdata_len = peer.pdata_len;
		rc = -ECONNABORTED;
		goto err;
	}
	if (peer.kind != MSG_ACCEPT) {
		rc = -EPROTO;
		goto err;
	}
	memcpy(base->peer_pdata, peer.pdata, peer.pdata_len);
	base->peer_pdata_len = peer.pdata_len;
	ep->hb_on = m.hb_qpn && peer.hb_qpn;
	ep->hb_peer_qpn = peer.hb_qpn;
	rc = qp_rtr_rts(ep, &peer, psn);
	if (rc)
		goto err;
	memset(&m, 0, sizeof(m));
	m.kind = MSG_READY;
	rc = msg_send(ep->sock, &m, deadline);
	if (rc)
		goto err;
	rc = rcci_ep_start(ep);
	if (rc)
		goto err;
	log_debug("verbs: connected to %s (manual, QP %u -> %u)", base->peer, ep->qpn, peer.qpn);
	return 0;

err:
	rcci_ep_release(ep);
	return rc;
}

/* --------------------------------------------------------------- passive */

/* How long a client's HELLO is, from what has arrived of it (rcci_msg_len_fn). */
static long hello_len(const uint8_t *buf, size_t have)
{
	struct msg m;

	if (have < MSG_HDR)
		return MSG_HDR;
	if (msg_decode_hdr(buf, &m) || m.kind != MSG_HELLO ||
	    m.pdata_len > RCC_CONNECT_PRIVATE_DATA_MAX)
		return -EPROTO;
	return MSG_HDR + m.pdata_len;
}

static int man_listen(struct rcc_listener *base, const struct sockaddr *sa, socklen_t salen,
		      int backlog)
{
	struct verbs_listener *lst = (struct verbs_listener *)base;

	return rcci_handshakes_listen(&lst->hs, sa, salen, backlog, &base->port, base->max_pending,
				      base->handshake_ms, hello_len);
}

static void man_listener_close(struct rcc_listener *base)
{
	struct verbs_listener *lst = (struct verbs_listener *)base;

	rcci_handshakes_fini(&lst->hs);
}

static int man_listener_fd(const struct rcc_listener *base)
{
	return ((const struct verbs_listener *)base)->hs.epfd;
}

/* Every client's HELLO progresses at once (core/handshakes.c), each with the
 * listener's handshake deadline (the client creates its QP before it
 * speaks); the caller's timeout bounds only this call. */
static int man_get_request(struct rcc_listener *base, int timeout_ms, struct rcc_conn_req *rbase)
{
	struct verbs_listener *lst = (struct verbs_listener *)base;
	struct verbs_req *req = (struct verbs_req *)rbase;
	uint8_t buf[MSG_HDR + RCC_CONNECT_PRIVATE_DATA_MAX];
	struct msg m;
	size_t len;
	int fd;
	int rc = rcci_handshakes_next(&lst->hs, timeout_ms, &fd, buf, sizeof(buf), &len,
				      rbase->peer, sizeof(rbase->peer));

	if (rc)
		return rc;
	msg_decode_hdr(buf, &m); /* hello_len() checked the header and its length */
	rcci_sock_keepalive(fd);
	req->fd = fd;
	req->peer_qpn = m.qpn;
	req->peer_psn = m.psn;
	req->peer_lid = m.lid;
	req->peer_mtu = m.mtu;
	req->peer_rd_atomic = m.rd_atomic;
	req->peer_hb_qpn = m.hb_qpn;
	memcpy(req->peer_gid, m.gid, 16);
	rbase->pdata_len = m.pdata_len;
	memcpy(rbase->pdata, buf + MSG_HDR, m.pdata_len);
	log_debug("verbs: manual connection request from %s (QP %u)", rbase->peer, m.qpn);
	return 0;
}

static int man_accept(struct rcc_conn_req *rbase, struct rcc_ep *base)
{
	struct verbs_req *req = (struct verbs_req *)rbase;
	struct verbs_ep *ep = vep(base);
	uint64_t deadline = rcci_deadline(VERBS_HANDSHAKE_MS);
	uint32_t psn = random_psn();
	struct msg m, peer;
	int rc;

	rcci_ep_init(ep);
	ep->kind = VEP_MANUAL;
	ep->sock = req->fd;
	req->fd = -1;
	memcpy(base->peer_pdata, rbase->pdata, rbase->pdata_len);
	base->peer_pdata_len = rbase->pdata_len;
	memset(&peer, 0, sizeof(peer));
	peer.qpn = req->peer_qpn;
	peer.psn = req->peer_psn;
	peer.lid = req->peer_lid;
	peer.mtu = req->peer_mtu;
	peer.rd_atomic = req->peer_rd_atomic;
	memcpy(peer.gid, req->peer_gid, 16);

	rc = setup_qp(ep);
	if (rc == 0)
		rc = qp_rtr_rts(ep, &peer, psn);
	if (rc) {
		memset(&m, 0, sizeof(m));
		m.kind = MSG_REJECT;
		msg_send(ep->sock, &m, deadline);
		goto err;
	}
	describe(ep, MSG_ACCEPT, psn, &m);
	m.hb_qpn = req->peer_hb_qpn ? rcci_hb_qpn(ep->ctx) : 0;
	ep->hb_on = m.hb_qpn != 0;
	ep->hb_peer_qpn = req->peer_hb_qpn;
	rc = msg_send(ep->sock, &m, deadline);
	if (rc)
		goto err;
	rc = msg_recv(ep->sock, &m, deadline);
	if (rc == 0 && m.kind != MSG_READY)
		rc = -EPROTO;
	if (rc) {
		log_info("verbs: %s did not complete the bring-up: %s", base->peer,
			 rcc_strerror(rc));
		rc = rc == -ECONNRESET ? -ECONNABORTED : rc;
		goto err;
	}
	rc = rcci_ep_start(ep);
	if (rc)
		goto err;
	log_debug("verbs: accepted %s (manual, QP %u -> %u)", base->peer, ep->qpn, peer.qpn);
	return 0;

err:
	rcci_ep_release(ep);
	return rc;
}

static int man_reject(struct rcc_conn_req *rbase, const void *pdata, size_t len)
{
	struct verbs_req *req = (struct verbs_req *)rbase;
	struct msg m;
	int rc;

	memset(&m, 0, sizeof(m));
	m.kind = MSG_REJECT;
	m.pdata_len = (uint16_t)len;
	if (len)
		memcpy(m.pdata, pdata, len);
	rc = msg_send(req->fd, &m, rcci_deadline(VERBS_HANDSHAKE_MS));
	close(req->fd);
	return rc;
}

const struct rcc_conn_ops rcci_man_conn_ops = {
	.listen = man_listen,
	.listener_close = man_listener_close,
	.listener_fd = man_listener_fd,
	.get_request = man_get_request,
	.accept = man_accept,
	.reject = man_reject,
	.connect = man_connect,
};
