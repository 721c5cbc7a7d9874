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

#include "base/addr.h"
#include "base/log.h"
#include "base/sock.h"
#include "rcc/util.h"
#include "shm_region.h"
#include "tcp.h"

/* Bound on each step of accepting or rejecting (the answer to a hello). */
#define HANDSHAKE_MS 5000

/* Send a handshake message; ext (flags: WIRE_HS_F_SHM) is the shared-memory
 * extension after the private data. */
static int send_hs(int fd, uint16_t kind, uint32_t rd_max, const void *pdata, size_t len,
		   const uint8_t *ext, size_t ext_len, uint64_t deadline)
{
	uint8_t buf[WIRE_HS_HDR_LEN + RCC_ACCEPT_PRIVATE_DATA_MAX + WIRE_SHM_ACCEPT_LEN];
	struct wire_hs h = {
		.version = WIRE_VERSION,
		.kind = kind,
		.pdata_len = (uint16_t)len,
		.flags = ext_len ? WIRE_HS_F_SHM : 0,
		.max_rd_atomic = rd_max,
	};

	rcci_wire_hs_encode(&h, buf);
	if (len)
		memcpy(buf + WIRE_HS_HDR_LEN, pdata, len);
	if (ext_len)
		memcpy(buf + WIRE_HS_HDR_LEN + len, ext, ext_len);
	return rcci_send_all(fd, buf, WIRE_HS_HDR_LEN + len + ext_len, deadline);
}

/* Read one handshake message; its private data lands in pdata (room for any
 * kind), its shared-memory extension in ext (room for WIRE_SHM_ACCEPT_LEN). */
static int recv_hs(int fd, struct wire_hs *h, uint8_t *pdata, uint8_t *ext, uint64_t deadline)
{
	uint8_t hdr[WIRE_HS_HDR_LEN];
	int rc = rcci_recv_all(fd, hdr, sizeof(hdr), deadline);

	if (rc)
		return rc;
	if (rcci_wire_hs_decode(hdr, h))
		return -EPROTO;
	rc = rcci_recv_all(fd, pdata, h->pdata_len, deadline);
	if (rc)
		return rc;
	return rcci_recv_all(fd, ext, rcci_wire_hs_ext_len(h), deadline);
}

/* The client's last word on shared memory: 0 (mapped) or a reason not to. */
static int send_confirm(int fd, uint32_t result, uint64_t deadline)
{
	uint8_t msg[WIRE_SHM_CONFIRM_LEN];

	memcpy(msg, WIRE_SHM_MAGIC, 4);
	rcc_put_le32(msg + 4, result);
	return rcci_send_all(fd, msg, sizeof(msg), deadline);
}

/* 1: the client mapped the region; 0: it falls back to the socket. */
static int recv_confirm(int fd, uint64_t deadline)
{
	uint8_t msg[WIRE_SHM_CONFIRM_LEN];
	int rc = rcci_recv_all(fd, msg, sizeof(msg), deadline);

	if (rc)
		return rc;
	if (memcmp(msg, WIRE_SHM_MAGIC, 4))
		return -EPROTO;
	return rcc_get_le32(msg + 4) == 0;
}

/* The length of a client's hello from its first bytes (rcci_msg_len_fn): a
 * listener reads nothing else before accepting, and nothing longer. */
static long hello_len(const uint8_t *buf, size_t have)
{
	struct wire_hs h;

	if (have < WIRE_HS_HDR_LEN)
		return WIRE_HS_HDR_LEN;
	if (rcci_wire_hs_decode(buf, &h) || h.kind != WIRE_HS_HELLO ||
	    h.pdata_len > RCC_CONNECT_PRIVATE_DATA_MAX)
		return -EPROTO;
	return (long)(WIRE_HS_HDR_LEN + h.pdata_len + rcci_wire_hs_ext_len(&h));
}

int rcci_tcp_listen(struct rcc_listener *base, const struct sockaddr *sa, socklen_t salen,
		    int backlog)
{
	struct tcp_listener *lst = (struct tcp_listener *)base;

	return rcci_handshakes_listen(&lst->hs, sa, salen, backlog, &base->port, base->max_pending,
				      base->handshake_ms, hello_len);
}

void rcci_tcp_listener_close(struct rcc_listener *base)
{
	struct tcp_listener *lst = (struct tcp_listener *)base;

	rcci_handshakes_fini(&lst->hs);
}

/* The epoll descriptor over the listening socket and every half-open
 * connection: readable exactly when rcci_tcp_get_request() has work to do. */
int rcci_tcp_listener_fd(const struct rcc_listener *base)
{
	return ((const struct tcp_listener *)base)->hs.epfd;
}

/* Many handshakes progress at once (core/handshakes.c): the first complete
 * hello is returned, whoever else is silent or slow. The caller's timeout
 * bounds the wait; each handshake has the listener's own deadline. */
int rcci_tcp_get_request(struct rcc_listener *base, int timeout_ms, struct rcc_conn_req *rbase)
{
	struct tcp_listener *lst = (struct tcp_listener *)base;
	struct tcp_req *req = (struct tcp_req *)rbase;
	uint8_t msg[WIRE_HS_HDR_LEN + RCC_CONNECT_PRIVATE_DATA_MAX + WIRE_SHM_HELLO_LEN];
	struct wire_hs h;
	size_t len;
	int fd, rc;

	rc = rcci_handshakes_next(&lst->hs, timeout_ms, &fd, msg, sizeof(msg), &len, rbase->peer,
				  sizeof(rbase->peer));
	if (rc)
		return rc;
	rcci_wire_hs_decode(msg, &h); /* hello_len() accepted it */
	req->fd = fd;
	req->peer_rd_max = h.max_rd_atomic;
	req->peer_shm = (h.flags & WIRE_HS_F_SHM) != 0;
	if (req->peer_shm)
		rcci_wire_shm_id_decode(msg + WIRE_HS_HDR_LEN + h.pdata_len, &req->peer_id);
	rbase->pdata_len = h.pdata_len;
	memcpy(rbase->pdata, msg + WIRE_HS_HDR_LEN, h.pdata_len);
	log_debug("connection request from %s (%u bytes of private data)", rbase->peer,
		  h.pdata_len);
	return 0;
}

/* Why a client is not offered shared memory (NULL: offer it). */
static const char *shm_refusal(const struct tcp_req *req, enum rcc_shm mode)
{
	struct wire_shm_id me;

	if (mode == RCC_SHM_OFF)
		return "turned off here";
	if (!req->peer_shm)
		return "the peer does not offer it";
	if (rcci_shm_local_id(&me))
		return "this host's identity cannot be read";
	if (!rcci_shm_same_host(&me, &req->peer_id))
		return "the peer runs on another host or network namespace";
	return NULL;
}

/* Make a region and its offer: NULL, or why not (then nothing is left). */
static const char *shm_prepare(struct wire_shm_accept *a, struct shm_offer *o, int *memfd,
			       struct shm_ring *ring)
{
	const char *why = NULL;

	if (rcci_shm_local_id(&a->id))
		return "this host's identity cannot be read";
	if (rcci_shm_offer_open(o, &why))
		return why;
	*memfd = rcci_shm_region_create(a->cap, o->name[0], ring, &why);
	if (*memfd < 0) {
		rcci_shm_offer_close(o);
		return why;
	}
	/* Before the client can map it: the client probes us before it confirms. */
	rcci_shm_cma_publish(&ring->cma);
	memcpy(a->name, o->name, sizeof(a->name));
	memcpy(a->token, o->token, sizeof(a->token));
	return NULL;
}

/* Offer the region in our ACCEPT, hand it to the client that comes for it,
 * and learn whether the client mapped it: 1 (it did: *bell is the Unix
 * connection that carries the doorbells from now on), 0 (both stay on the
 * socket), or a negative errno (the client went away). The offer and the
 * descriptor are closed before this returns, and the region unmapped unless
 * the answer is 1. */
static int accept_over_shm(struct tcp_req *req, struct rcc_ep *base,
			   const struct wire_shm_accept *a, struct shm_offer *o, int memfd,
			   struct shm_ring *ring, int *bell)
{
	uint8_t ext[WIRE_SHM_ACCEPT_LEN];
	uint64_t deadline = rcci_deadline(HANDSHAKE_MS);
	int rc, c = -1;

	rcci_wire_shm_accept_encode(a, ext);
	rc = send_hs(req->fd, WIRE_HS_ACCEPT, base->attr.max_rd_atomic, base->own_pdata,
		     base->own_pdata_len, ext, sizeof(ext), deadline);
	if (!rc) {
		/* Whether or not the region was handed over, the client's
		 * confirmation says what it did: a client that could not fetch
		 * it (the offer closed on it) asks to stay on the socket. */
		c = rcci_shm_offer_serve(o, memfd, req->fd, deadline);
		rcci_shm_offer_close(o);
		rc = recv_confirm(req->fd, deadline);
		if (rc == 1 && c < 0)
			rc = -EPROTO; /* mapped what it never received */
	}
	rcci_shm_offer_close(o);
	close(memfd);
	if (rc == 1) {
		/* The client published its cookie before it confirmed. */
		rcci_shm_cma_probe(&ring->cma, c, req->base.peer);
		*bell = c;
		return 1;
	}
	if (c >= 0)
		close(c);
	rcci_shm_region_unmap(ring);
	return rc;
}

int rcci_tcp_accept(struct rcc_conn_req *rbase, struct rcc_ep *base)
{
	struct tcp_req *req = (struct tcp_req *)rbase;
	struct tcp_ep *ep = tep(base);
	enum rcc_shm mode = tctx(base->ctx)->shm;
	const char *why = shm_refusal(req, mode);
	struct wire_shm_accept a = { .cap = tctx(base->ctx)->shm_ring_cap, .layout = SHM_LAYOUT };
	struct shm_offer offer = { .lfd = -1 };
	struct shm_ring ring = { 0 };
	int memfd = -1, bell = -1, rc;

	memcpy(base->peer_pdata, rbase->pdata, rbase->pdata_len);
	base->peer_pdata_len = rbase->pdata_len;
	if (!why)
		why = shm_prepare(&a, &offer, &memfd, &ring);
	if (why && mode == RCC_SHM_REQUIRE) {
		log_info("%s: shared memory is required but not possible: %s", rbase->peer, why);
		rc = -EPROTONOSUPPORT;
		goto reject;
	}
	if (!why) {
		/* The client reads our ACCEPT and confirms before it sends any
		 * frame: the endpoint starts on whichever stream we agreed. */
		rc = accept_over_shm(req, base, &a, &offer, memfd, &ring, &bell);
		if (rc < 0) {
			close(req->fd);
			return rc;
		}
		if (rc == 0 && mode == RCC_SHM_REQUIRE) {
			log_info("%s: shared memory is required but the peer could not map "
				 "the region",
				 rbase->peer);
			close(req->fd);
			return -EPROTONOSUPPORT;
		}
		if (rc == 1)
			log_info("%s: connected over shared memory", rbase->peer);
		else
			log_info("%s: shared memory not used (the peer could not map the "
				 "region): tcp",
				 rbase->peer);
		/* On shared memory the Unix connection is the doorbell and the
		 * liveness signal: the TCP socket has done its part. */
		bool on_shm = rc == 1;
		if (on_shm)
			close(req->fd);
		rc = rcci_tcp_ep_start(ep, on_shm ? bell : req->fd, req->peer_rd_max,
				       on_shm ? &ring : NULL);
		if (rc) {
			if (on_shm)
				rcci_shm_region_unmap(&ring);
			close(on_shm ? bell : req->fd);
		}
		return rc;
	}
	if (req->peer_shm)
		log_info("%s: shared memory not used (%s): tcp", rbase->peer, why);
	/* Queues and initial receives exist before the client may send. */
	rc = rcci_tcp_ep_start(ep, req->fd, req->peer_rd_max, NULL);
	if (rc)
		goto reject;
	rc = send_hs(req->fd, WIRE_HS_ACCEPT, base->attr.max_rd_atomic, base->own_pdata,
		     base->own_pdata_len, NULL, 0, rcci_deadline(HANDSHAKE_MS));
	if (rc) {
		/* The client went away during the handshake. */
		rcci_tcp_ep_disconnect(base);
		rcci_tcp_ep_destroy(base);
		return rc;
	}
	return 0;

reject:
	send_hs(req->fd, WIRE_HS_REJECT, 0, NULL, 0, NULL, 0, rcci_deadline(HANDSHAKE_MS));
	close(req->fd);
	return rc;
}

int rcci_tcp_reject(struct rcc_conn_req *rbase, const void *pdata, size_t len)
{
	struct tcp_req *req = (struct tcp_req *)rbase;
	int rc = send_hs(req->fd, WIRE_HS_REJECT, 0, pdata, len, NULL, 0,
			 rcci_deadline(HANDSHAKE_MS));
	close(req->fd);
	return rc;
}

/* Fetch the region an ACCEPT offers and map it: NULL (*bell: the Unix
 * connection it came over), or why not (nothing is left open). */
static const char *shm_take(const struct wire_shm_accept *a, const struct wire_shm_id *me,
			    struct shm_ring *ring, uint64_t deadline, int *bell)
{
	const char *why = NULL;
	int memfd = -1;

	if (!rcci_shm_same_host(me, &a->id))
		return "the server runs on another host or network namespace";
	/* Another rcc build's region: its offsets and rules are not ours. Not
	 * even fetched: the server's offer ends on our confirmation. */
	if (a->layout != SHM_LAYOUT)
		return "the server's rcc lays the region out differently";
	*bell = rcci_shm_offer_fetch(a->name, a->token, deadline, &memfd, &why);
	if (*bell < 0)
		return why;
	rcci_shm_region_map(memfd, a->cap, a->name[0], ring, &why);
	close(memfd);
	if (why) {
		close(*bell);
		*bell = -1;
	}
	return why;
}

/* The client's side of an ACCEPT that offers a region: take it and confirm,
 * or tell the server we both stay on the socket. 1: on shared memory (*bell:
 * the doorbell connection), 0: on the socket, negative errno: the connection
 * is lost. */
static int connect_over_shm(struct rcc_ep *base, int fd, const uint8_t *ext,
			    const struct wire_shm_id *me, struct shm_ring *ring, uint64_t deadline,
			    int *bell)
{
	struct wire_shm_accept a;
	const char *why;
	int rc;

	rcci_wire_shm_accept_decode(ext, &a);
	why = shm_take(&a, me, ring, deadline, bell);
	if (!why) {
		/* The server published its cookie before it offered the region;
		 * ours is there before the confirmation that makes it probe us. */
		rcci_shm_cma_publish(&ring->cma);
		rcci_shm_cma_probe(&ring->cma, *bell, base->peer);
	}
	rc = send_confirm(fd, why ? 1 : 0, deadline);
	if (rc) {
		if (!why) {
			rcci_shm_region_unmap(ring);
			close(*bell);
		}
		return rc;
	}
	if (why) {
		log_info("%s: shared memory not used (%s): tcp", base->peer, why);
		return 0;
	}
	log_info("%s: connected over shared memory", base->peer);
	return 1;
}

int rcci_tcp_connect(struct rcc_ep *base, const struct sockaddr *sa, socklen_t salen,
		     int timeout_ms)
{
	struct tcp_ep *ep = tep(base);
	enum rcc_shm mode = tctx(base->ctx)->shm;
	uint64_t deadline = rcci_deadline(timeout_ms);
	uint8_t pdata[RCC_ACCEPT_PRIVATE_DATA_MAX];
	uint8_t ext[WIRE_SHM_ACCEPT_LEN];
	struct shm_ring ring = { 0 };
	struct wire_shm_id me;
	struct wire_hs h;
	size_t ext_len = 0;
	int fd, rc, on_shm = 0, bell = -1;

	if (mode != RCC_SHM_OFF) {
		rc = rcci_shm_local_id(&me);
		if (!rc) {
			rcci_wire_shm_id_encode(&me, ext);
			ext_len = WIRE_SHM_HELLO_LEN;
		} else if (mode == RCC_SHM_REQUIRE) {
			log_info("%s: shared memory is required but this host's identity "
				 "cannot be read: %s",
				 base->peer, rcc_strerror(rc));
			return -EPROTONOSUPPORT;
		}
	}
	fd = rcci_sock_connect(sa, salen, deadline);
	if (fd < 0)
		return fd;
	rc = send_hs(fd, WIRE_HS_HELLO, base->attr.max_rd_atomic, base->own_pdata,
		     base->own_pdata_len, ext, ext_len, deadline);
	if (rc == -EPIPE)
		rc = -ECONNRESET; /* closed on us already: the same news as below */
	if (rc)
		goto err_fd;
	/* -ECONNRESET: the server dropped us before answering (not "refused":
	 * something was listening) */
	rc = recv_hs(fd, &h, pdata, ext, deadline);
	if (rc)
		goto err_fd;
	if (h.kind == WIRE_HS_REJECT) {
		log_info("connection to %s rejected by the server (%u bytes of private data)",
			 base->peer, h.pdata_len);
		memcpy(base->peer_pdata, pdata, h.pdata_len); /* rcci_wire_hs_decode bounds it */
		base->peer_pdata_len = h.pdata_len;
		rc = -ECONNABORTED;
		goto err_fd;
	}
	if (h.kind != WIRE_HS_ACCEPT || ((h.flags & WIRE_HS_F_SHM) && !ext_len)) {
		rc = -EPROTO; /* an offer we did not ask for is not an rcc server's */
		goto err_fd;
	}
	if (h.flags & WIRE_HS_F_SHM) {
		on_shm = connect_over_shm(base, fd, ext, &me, &ring, deadline, &bell);
		if (on_shm < 0) {
			rc = on_shm;
			goto err_fd;
		}
	} else if (ext_len) {
		log_info("%s: shared memory not used (the server does not offer it): tcp",
			 base->peer);
	}
	if (!on_shm && mode == RCC_SHM_REQUIRE) {
		rc = -EPROTONOSUPPORT;
		goto err_fd;
	}
	memcpy(base->peer_pdata, pdata, h.pdata_len);
	base->peer_pdata_len = h.pdata_len;
	/* On shared memory the Unix connection is the doorbell and the liveness
	 * signal: the TCP socket has done its part. */
	if (on_shm) {
		close(fd);
		fd = bell;
	}
	rc = rcci_tcp_ep_start(ep, fd, h.max_rd_atomic, on_shm ? &ring : NULL);
	if (rc)
		goto err_ring;
	return 0;

err_ring:
	if (on_shm)
		rcci_shm_region_unmap(&ring);
err_fd:
	close(fd);
	return rc;
}
