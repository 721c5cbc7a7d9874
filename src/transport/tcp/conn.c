/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Connection management: a versioned handshake on a fresh TCP connection
 * carries the private data both ways and can reject, as rdma_cm's REQ/REP/REJ.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/addr.h"
#include "core/log.h"
#include "core/sock.h"
#include "tcp.h"

/* Bound on each step of accepting or rejecting (the answer to a hello). */
#define HANDSHAKE_MS 5000

static int send_hs(int fd, uint16_t kind, uint32_t rd_max, const void *pdata, size_t len,
		   uint64_t deadline)
{
	uint8_t buf[WIRE_HS_HDR_LEN + RCC_ACCEPT_PRIVATE_DATA_MAX];
	struct wire_hs h = {
		.version = WIRE_VERSION,
		.kind = kind,
		.pdata_len = (uint16_t)len,
		.max_rd_atomic = rd_max,
	};

	wire_hs_encode(&h, buf);
	if (len)
		memcpy(buf + WIRE_HS_HDR_LEN, pdata, len);
	return rcci_send_all(fd, buf, WIRE_HS_HDR_LEN + len, deadline);
}

/* Read one handshake message; its private data lands in pdata (room for any kind). */
static int recv_hs(int fd, struct wire_hs *h, uint8_t *pdata, uint64_t deadline)
{
	uint8_t hdr[WIRE_HS_HDR_LEN];
	int rc = rcci_recv_all(fd, hdr, sizeof(hdr), deadline);

	if (rc)
		return rc;
	if (wire_hs_decode(hdr, h))
		return -EPROTO;
	return rcci_recv_all(fd, pdata, h->pdata_len, deadline);
}

/* The length of a client's hello from its first bytes (rcci_msg_len_fn): a
 * listener reads nothing else before accepting, and nothing longer. */
static long hello_len(const uint8_t *buf, size_t have)
{
	struct wire_hs h;

	if (have < WIRE_HS_HDR_LEN)
		return WIRE_HS_HDR_LEN;
	if (wire_hs_decode(buf, &h) || h.kind != WIRE_HS_HELLO ||
	    h.pdata_len > RCC_CONNECT_PRIVATE_DATA_MAX)
		return -EPROTO;
	return WIRE_HS_HDR_LEN + h.pdata_len;
}

int tcp_listen(struct rcc_listener *base, const struct sockaddr *sa, socklen_t salen, int backlog)
{
	struct tcp_listener *lst = (struct tcp_listener *)base;
	int fd = rcci_sock_listen(sa, salen, backlog, &base->port);
	int rc;

	if (fd < 0)
		return fd;
	rc = rcci_handshakes_init(&lst->hs, fd, base->max_pending, base->handshake_ms, hello_len);
	if (rc) {
		close(fd);
		return rc;
	}
	lst->fd = fd;
	return 0;
}

void tcp_listener_close(struct rcc_listener *base)
{
	struct tcp_listener *lst = (struct tcp_listener *)base;

	rcci_handshakes_fini(&lst->hs);
	close(lst->fd);
}

/* The epoll descriptor over the listening socket and every half-open
 * connection: readable exactly when tcp_get_request() has work to do. */
int tcp_listener_fd(const struct rcc_listener *base)
{
	return ((const struct tcp_listener *)base)->hs.epfd;
}

/* Many handshakes progress at once (core/handshakes.c): the first complete
 * hello is returned, whoever else is silent or slow. The caller's timeout
 * bounds the wait; each handshake has the listener's own deadline. */
int tcp_get_request(struct rcc_listener *base, int timeout_ms, struct rcc_conn_req *rbase)
{
	struct tcp_listener *lst = (struct tcp_listener *)base;
	struct tcp_req *req = (struct tcp_req *)rbase;
	uint8_t msg[WIRE_HS_HDR_LEN + RCC_CONNECT_PRIVATE_DATA_MAX];
	struct wire_hs h;
	size_t len;
	int fd, rc;

	rc = rcci_handshakes_next(&lst->hs, timeout_ms, &fd, msg, sizeof(msg), &len, rbase->peer,
				  sizeof(rbase->peer));
	if (rc)
		return rc;
	wire_hs_decode(msg, &h); /* hello_len() accepted it */
	req->fd = fd;
	req->peer_rd_max = h.max_rd_atomic;
	rbase->pdata_len = h.pdata_len;
	memcpy(rbase->pdata, msg + WIRE_HS_HDR_LEN, h.pdata_len);
	log_debug("connection request from %s (%u bytes of private data)", rbase->peer,
		  h.pdata_len);
	return 0;
}

int tcp_accept(struct rcc_conn_req *rbase, struct rcc_ep *base)
{
	struct tcp_req *req = (struct tcp_req *)rbase;
	struct tcp_ep *ep = tep(base);
	int rc;

	memcpy(base->peer_pdata, rbase->pdata, rbase->pdata_len);
	base->peer_pdata_len = rbase->pdata_len;
	/* Queues and initial receives exist before the client may send. */
	rc = ep_start(ep, req->fd, req->peer_rd_max);
	if (rc) {
		send_hs(req->fd, WIRE_HS_REJECT, 0, NULL, 0, rcci_deadline(HANDSHAKE_MS));
		close(req->fd);
		return rc;
	}
	rc = send_hs(req->fd, WIRE_HS_ACCEPT, base->attr.max_rd_atomic, base->own_pdata,
		     base->own_pdata_len, rcci_deadline(HANDSHAKE_MS));
	if (rc) {
		/* The client went away during the handshake. */
		tcp_ep_disconnect(base);
		tcp_ep_destroy(base);
		return rc;
	}
	return 0;
}

int tcp_reject(struct rcc_conn_req *rbase, const void *pdata, size_t len)
{
	struct tcp_req *req = (struct tcp_req *)rbase;
	int rc = send_hs(req->fd, WIRE_HS_REJECT, 0, pdata, len, rcci_deadline(HANDSHAKE_MS));
	close(req->fd);
	return rc;
}

int tcp_connect(struct rcc_ep *base, const struct sockaddr *sa, socklen_t salen, int timeout_ms)
{
	struct tcp_ep *ep = tep(base);
	uint64_t deadline = rcci_deadline(timeout_ms);
	uint8_t pdata[RCC_ACCEPT_PRIVATE_DATA_MAX];
	struct wire_hs h;
	int fd, rc;

	fd = rcci_sock_connect(sa, salen, deadline);
	if (fd < 0)
		return fd;
	rc = send_hs(fd, WIRE_HS_HELLO, base->attr.max_rd_atomic, base->own_pdata,
		     base->own_pdata_len, deadline);
	if (rc == -EPIPE)
		rc = -ECONNRESET; /* closed on us already: the same news as below */
	if (rc)
		goto err_fd;
	/* -ECONNRESET: the server dropped us before answering (not "refused":
	 * something was listening) */
	rc = recv_hs(fd, &h, pdata, deadline);
	if (rc)
		goto err_fd;
	if (h.kind == WIRE_HS_REJECT) {
		log_info("connection to %s rejected by the server (%u bytes of private data)",
			 base->peer, h.pdata_len);
		memcpy(base->peer_pdata, pdata, h.pdata_len); /* wire_hs_decode bounds it */
		base->peer_pdata_len = h.pdata_len;
		rc = -ECONNABORTED;
		goto err_fd;
	}
	if (h.kind != WIRE_HS_ACCEPT) {
		rc = -EPROTO;
		goto err_fd;
	}
	memcpy(base->peer_pdata, pdata, h.pdata_len);
	base->peer_pdata_len = h.pdata_len;
	rc = ep_start(ep, fd, h.max_rd_atomic);
	if (rc)
		goto err_fd;
	return 0;

err_fd:
	close(fd);
	return rc;
}
