/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Datagram (RCC_QP_UD) endpoints over UDP (ud.h). What a device does, done
 * with one socket:
 *  - a send is one datagram, sent at post time; a signalled one completes
 *    at once (the datagram left), an unsignalled one holds its slot until a
 *    later completion is polled (rule 2);
 *  - an arriving datagram is read straight into the oldest posted receive
 *    (header into our own bytes, payload into the receive's buffers). It is
 *    dropped, the receive staying posted, when the header is malformed or
 *    the destination id or Q_Key is not ours; with no receive posted it is
 *    read and dropped at once (no RNR on UD): the socket's buffer never
 *    holds datagrams for a receive posted later, so a program cannot come
 *    to rely on that. An endpoint with an SRQ (one made for datagrams)
 *    first looks at the waiting datagram's header (MSG_PEEK) and takes the
 *    SRQ's oldest receive only for one it will deliver, as a connected
 *    endpoint takes it for a message;
 *  - a datagram longer than the receive it meets completes that receive
 *    with RCC_WC_LOC_LEN_ERR, and a receive or send naming memory that is
 *    not registered in error too; the endpoint then leaves service
 *    (RCC_EP_ERROR), as a device moves the QP to its error state (Soft-RoCE
 *    on Debian's 6.1 does exactly that for a datagram too long, with
 *    LOC_QP_OP_ERR).
 * Same-host peers use UDP over loopback: no shared memory here.
 */
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/log.h"
#include "ud.h"

/* Datagrams one pass reads at most, so one busy endpoint cannot starve others. */
#define RX_BUDGET 64
/* Socket buffers asked for (the kernel caps them at net.core.[rw]mem_max). */
#define UD_RCVBUF (4 << 20)
#define UD_SNDBUF (1 << 20)
#define UD_ID_SPAN 0xfffffeu /* ids 2..0xffffff */

static inline struct tcp_ud *tud(struct tcp_ep *ep) { return ep->ud; }

static const uint8_t v4_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

/* ------------------------------------------------------------ addresses */

/* The address rcc_ud_addr() names: the first IPv4 address of an interface
 * that is up and not loopback, else (IPv6 socket) the first global IPv6
 * one, else 127.0.0.1. Peers reach the socket at any of them. */
static void pick_host(int family, uint8_t host[16])
{
	struct ifaddrs *ifs, *i;
	bool have6 = false;
	uint8_t v6[16];

	memcpy(host, v4_prefix, 12);
	host[12] = 127;
	host[13] = host[14] = 0;
	host[15] = 1;
	if (getifaddrs(&ifs))
		return;
	for (i = ifs; i; i = i->ifa_next) {
		if (!i->ifa_addr || !(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK))
			continue;
		if (i->ifa_addr->sa_family == AF_INET) {
			memcpy(host + 12, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, 4);
			freeifaddrs(ifs);
			return;
		}
		if (i->ifa_addr->sa_family == AF_INET6 && family == AF_INET6 && !have6) {
			const struct in6_addr *a = &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr;
			/* link-local and site-scoped addresses need a scope: not ours to give */
			if (!IN6_IS_ADDR_LINKLOCAL(a) && !IN6_IS_ADDR_SITELOCAL(a) &&
			    !IN6_IS_ADDR_LOOPBACK(a) && !IN6_IS_ADDR_V4MAPPED(a)) {
				memcpy(v6, a, 16);
				have6 = true;
			}
		}
	}
	freeifaddrs(ifs);
	if (have6)
		memcpy(host, v6, 16);
}

/* Where a datagram came from, as the address part of a reply's blob. */
static bool from_sockaddr(const struct sockaddr_storage *ss, uint8_t ip[16], uint16_t *port)
{
	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
		memcpy(ip, &s6->sin6_addr, 16);
		*port = ntohs(s6->sin6_port);
		return true;
	}
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;
		memcpy(ip, v4_prefix, 12);
		memcpy(ip + 12, &s4->sin_addr, 4);
		*port = ntohs(s4->sin_port);
		return true;
	}
	return false;
}

void rcci_tcp_ud_addr(const struct rcc_ep *base, struct rcci_ud_addr *out)
{
	const struct tcp_ud *ud = tep((struct rcc_ep *)base)->ud;

	memset(out, 0, sizeof(*out));
	out->kind = RCCI_UD_TCP;
	out->qkey = base->attr.qkey;
	out->qpn = ud->id;
	memcpy(out->gid, ud->host, 16);
	out->port = ud->port;
}

int rcci_tcp_ah_create(struct rcc_ah *base, const struct rcci_ud_addr *a)
{
	struct tcp_ah *ah = (struct tcp_ah *)base;

	ah->v4 = !memcmp(a->gid, v4_prefix, 12);
	ah->sin6.sin6_family = AF_INET6;
	ah->sin6.sin6_port = htons(a->port);
	memcpy(&ah->sin6.sin6_addr, a->gid, 16);
	if (ah->v4) {
		ah->sin.sin_family = AF_INET;
		ah->sin.sin_port = htons(a->port);
		memcpy(&ah->sin.sin_addr, a->gid + 12, 4);
	}
	ah->id = a->qpn;
	ah->qkey = a->qkey;
	return 0;
}

void rcci_tcp_ah_destroy(struct rcc_ah *ah) { (void)ah; }

/* ------------------------------------------------------------- lifecycle */

static int open_socket(struct tcp_ud *ud)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t len = sizeof(struct sockaddr_in6);
	int fd, off = 0, rc;

	fd = socket(AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd >= 0 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off)) == 0) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
		s6->sin6_family = AF_INET6;
		s6->sin6_addr = in6addr_any;
		ud->family = AF_INET6;
	} else {
		/* a host without IPv6: IPv4 alone */
		if (fd >= 0)
			close(fd);
		fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
		s4->sin_family = AF_INET;
		s4->sin_addr.s_addr = htonl(INADDR_ANY);
		len = sizeof(*s4);
		ud->family = AF_INET;
	}
	if (bind(fd, (struct sockaddr *)&ss, len) ||
	    getsockname(fd, (struct sockaddr *)&ss, &len)) {
		rc = -errno;
		close(fd);
		return rc;
	}
	ud->port = (uint16_t)(ud->family == AF_INET6 ?
				      ntohs(((struct sockaddr_in6 *)&ss)->sin6_port) :
				      ntohs(((struct sockaddr_in *)&ss)->sin_port));
	int rcv = UD_RCVBUF, snd = UD_SNDBUF;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &snd, sizeof(snd));
	return fd;
}

static void free_queues(struct tcp_ep *ep)
{
	free(ep->rq);
	free(ep->rq_sge);
	free(ep->ud);
	ep->rq = NULL;
	ep->rq_sge = NULL;
	ep->ud = NULL;
}

int rcci_tcp_ud_create(struct rcc_ep *base)
{
	struct tcp_ep *ep = tep(base);
	const struct rcc_ep_attr *a = &base->attr;
	uint32_t rq_cap = tcp_pow2_at_least(a->rq_depth, 1);
	int rc;

	ep->ctx = tctx(base->ctx);
	base->max_inline = a->max_inline ? a->max_inline : TCP_DEFAULT_INLINE;
	if (base->max_inline > RCC_UD_TCP_MAX_MSG)
		return -EINVAL;
	base->ud_max_msg = RCC_UD_TCP_MAX_MSG;
	ep->ud = calloc(1, sizeof(*ep->ud));
	ep->rq = calloc(rq_cap, sizeof(*ep->rq));
	ep->rq_sge = calloc((size_t)rq_cap * a->max_recv_sge, sizeof(*ep->rq_sge));
	if (!ep->ud || !ep->rq || !ep->rq_sge) {
		free_queues(ep);
		return -ENOMEM;
	}
	ep->rq_mask = rq_cap - 1;
	ep->ud->id = 2 + rcci_keys_random() % UD_ID_SPAN;
	atomic_init(&ep->ud->dropped, 0);
	rc = open_socket(ep->ud);
	if (rc < 0) {
		free_queues(ep);
		return rc;
	}
	ep->fd = rc;
	pick_host(ep->ud->family, ep->ud->host);
	rcci_lock_init(&ep->tx_lock);
	rcci_lock_init(&ep->rx_lock);
	rcci_lock_init(&ep->rq_lock);
	pthread_mutex_init(&ep->ev_lock, NULL);
	atomic_init(&ep->link, LINK_UP);
	atomic_init(&ep->parked, false);
	atomic_init(&ep->kick, false);
	atomic_init(&ep->want_out, false);
	atomic_init(&ep->tx_deferred, false);
	atomic_init(&ep->sq_free, 0);
	atomic_init(&ep->rq_free, 0);
	atomic_init(&ep->thread_timer, false);
	rc = rcci_cq_attach(tcq(base->send_cq), ep);
	if (rc)
		goto err_locks;
	rc = rcci_cq_attach(tcq(base->recv_cq), ep);
	if (rc)
		goto err_send_cq;
	rc = rcci_progress_add(ep->ctx, ep);
	if (rc)
		goto err_recv_cq;
	log_debug("tcp: datagram endpoint 0x%x on UDP port %u", ep->ud->id, ep->ud->port);
	return 0;

err_recv_cq:
	rcci_cq_detach(tcq(base->recv_cq), ep);
err_send_cq:
	rcci_cq_detach(tcq(base->send_cq), ep);
err_locks:
	pthread_mutex_destroy(&ep->ev_lock);
	close(ep->fd);
	free_queues(ep);
	return rc;
}

/* Stop watching the socket; nothing is read after this. */
static void ud_link_down(struct tcp_ep *ep)
{
	if (atomic_exchange(&ep->link, LINK_DOWN) != LINK_DOWN)
		rcci_ep_update_events(ep);
}

/* Complete every posted receive: the oldest with status (unless success),
 * the others flushed. Caller holds rx_lock. */
static void flush_receives(struct tcp_ep *ep, enum rcc_wc_status status)
{
	struct rcc_wc wc = { .ep = &ep->base, .opcode = RCC_WC_RECV };

	rcci_lock_acquire(&ep->rq_lock);
	for (; ep->rq_head != ep->rq_tail; ep->rq_head++) {
		wc.wr_id = ep->rq[ep->rq_head & ep->rq_mask].wr_id;
		wc.status = status != RCC_WC_SUCCESS ? status : RCC_WC_WR_FLUSH_ERR;
		status = RCC_WC_SUCCESS;
		rcci_cq_push(tcq(ep->base.recv_cq), &wc, FREES_RQ, ep->rq_head + 1);
	}
	rcci_lock_release(&ep->rq_lock);
}

/* Move the public state out of service (under tx_lock, so no post is half
 * done): false when it was out already. */
static bool leave_locked(struct tcp_ep *ep, enum rcc_ep_state st, const char *why)
{
	int cur = RCC_EP_CONNECTED;

	if (atomic_load(&ep->base.state) != RCC_EP_CONNECTED)
		return false;
	/* a datagram endpoint leaves by its own disconnect or by a failure */
	rcci_ep_left(&ep->base, st == RCC_EP_ERROR ? -EIO : 0, why, false);
	if (!atomic_compare_exchange_strong(&ep->base.state, &cur, (int)st))
		return false;
	if (st == RCC_EP_ERROR)
		log_info("tcp: datagram endpoint 0x%x failed: %s", ep->ud->id, why);
	else
		log_debug("tcp: datagram endpoint 0x%x: %s", ep->ud->id, why);
	rcci_ep_state_changed(&ep->base);
	return true;
}

/* Out of service: state, then the receives (recv_status for the oldest).
 * Caller holds rx_lock; idempotent. */
static void ud_fail(struct tcp_ep *ep, enum rcc_ep_state st, enum rcc_wc_status recv_status,
		    const char *why)
{
	rcci_lock_acquire(&ep->tx_lock);
	leave_locked(ep, st, why);
	rcci_lock_release(&ep->tx_lock);
	if (atomic_load(&ep->link) != LINK_DOWN) {
		flush_receives(ep, recv_status);
		ud_link_down(ep);
	}
}

int rcci_tcp_ud_disconnect(struct rcc_ep *base)
{
	struct tcp_ep *ep = tep(base);

	rcci_lock_acquire(&ep->rx_lock);
	ud_fail(ep, RCC_EP_DISCONNECTED, RCC_WC_SUCCESS, "local disconnect");
	rcci_lock_release(&ep->rx_lock);
	/* flush completions an overrun CQ had no room for are lost (as verbs) */
	return rcci_cq_overran(ep) ? -EIO : 0;
}

/* A connected endpoint's destruction fits: CQs and progress let go, the
 * socket closed (its shutdown means nothing to UDP), the queues freed. */
void rcci_tcp_ud_destroy(struct rcc_ep *base)
{
	struct tcp_ep *ep = tep(base);
	struct tcp_ud *ud = ep->ud;
	unsigned long long dropped = atomic_load(&ud->dropped);

	if (dropped)
		log_debug("tcp: datagram endpoint 0x%x dropped %llu datagrams on arrival", ud->id,
			  dropped);
	rcci_tcp_ep_destroy(base);
	free(ud);
}

/* ------------------------------------------------------------------ send */

/* One datagram of wr to its address handle: RCC_WC_SUCCESS when it left or
 * was lost on the way (UDP's errors are loss, as on a wire), an error
 * status when its memory is not registered. Caller holds tx_lock. */
static enum rcc_wc_status send_one(struct tcp_ep *ep, const struct rcc_send_wr *wr, uint32_t total)
{
	const struct tcp_ah *ah = (const struct tcp_ah *)wr->ah;
	struct ud_hdr h = {
		.opcode = wr->opcode == RCC_WR_SEND_IMM ? UD_OP_SEND_IMM : UD_OP_SEND,
		.flags = (wr->flags & RCC_SEND_SOLICITED) ? UD_F_SOLICITED : 0,
		.qkey = ah->qkey,
		.src_id = ep->ud->id,
		.dst_id = ah->id,
		.imm = wr->opcode == RCC_WR_SEND_IMM ? wr->imm_data : 0,
		.len = total,
	};
	uint8_t hdr[UD_HDR_LEN];
	struct iovec iov[1 + TCP_MAX_SGE];
	struct msghdr m = { .msg_iov = iov };
	bool locked = !(wr->flags & RCC_SEND_INLINE);
	enum rcc_wc_status st = RCC_WC_SUCCESS;
	int n = 1;

	if (ep->ud->family == AF_INET6) {
		m.msg_name = (void *)&ah->sin6;
		m.msg_namelen = sizeof(ah->sin6);
	} else if (ah->v4) {
		m.msg_name = (void *)&ah->sin;
		m.msg_namelen = sizeof(ah->sin);
	} else {
		log_debug("tcp: datagram to an IPv6 address from an IPv4-only endpoint: lost");
		return RCC_WC_SUCCESS;
	}
	rcci_ud_hdr_encode(&h, hdr);
	iov[0] = (struct iovec){ hdr, UD_HDR_LEN };
	/* Inline data is the caller's to guarantee for the call; anything else
	 * must stay registered while the kernel copies it (dereg waits). */
	if (locked)
		rcci_rwlock_read(&ep->ctx->mr_lock);
	for (int i = 0; i < wr->num_sge; i++) {
		const struct rcc_sge *sg = &wr->sg_list[i];
		if (!sg->length)
			continue;
		if (locked && !rcci_mr_covers_locked(ep->ctx, sg->lkey, sg->addr, sg->length, 0)) {
			st = RCC_WC_LOC_PROT_ERR;
			goto out;
		}
		iov[n++] = (struct iovec){ (void *)(uintptr_t)sg->addr, sg->length };
	}
	m.msg_iovlen = (size_t)n;
	ssize_t r;
	do
		r = sendmsg(ep->fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		log_debug("tcp: datagram of %u bytes lost at the sender: %s", total,
			  rcc_strerror(-errno));
out:
	if (locked)
		rcci_rwlock_read_end(&ep->ctx->mr_lock);
	return st;
}

int rcci_tcp_ud_post_send(struct rcc_ep *base, const struct rcc_send_wr *wr, int n, int *posted)
{
	struct tcp_ep *ep = tep(base);
	struct tcp_ud *ud = tud(ep);
	struct rcc_wc wc = { .ep = base, .opcode = RCC_WC_SEND };
	bool failed = false;
	int rc = 0, i;

	rcci_lock_acquire(&ep->tx_lock);
	if (atomic_load(&base->state) != RCC_EP_CONNECTED) {
		rc = -ENOTCONN;
		i = 0;
		goto out;
	}
	for (i = 0; i < n; i++) {
		uint32_t idx = ud->sq_tail;
		uint32_t used = idx - atomic_load_explicit(&ep->sq_free, memory_order_acquire);
		if (used >= base->attr.sq_depth) {
			rc = -ENOMEM;
			break;
		}
		uint32_t total = rcci_sge_sum(wr[i].sg_list, wr[i].num_sge);
		/* After a failure the rest of the list is flushed, as a device
		 * flushes what follows the request that moved the QP to error. */
		wc.status = failed ? RCC_WC_WR_FLUSH_ERR : send_one(ep, &wr[i], total);
		ud->sq_tail = idx + 1;
		if (wc.status != RCC_WC_SUCCESS && !failed) {
			failed = true;
			leave_locked(ep, RCC_EP_ERROR,
				     "a send names memory that is not registered");
		}
		if (wc.status != RCC_WC_SUCCESS || (wr[i].flags & RCC_SEND_SIGNALED) ||
		    base->attr.sig_all) {
			wc.wr_id = wr[i].wr_id;
			wc.byte_len = total;
			rcci_cq_push(tcq(base->send_cq), &wc, FREES_SQ, idx + 1);
		}
	}
out:
	rcci_lock_release(&ep->tx_lock);
	if (posted)
		*posted = i;
	/* the receives are flushed by the progress thread, which owns that side */
	if (failed)
		rcci_progress_kick(ep);
	return rc;
}

/* --------------------------------------------------------------- receive */

static void drop(struct tcp_ep *ep, const char *why)
{
	atomic_fetch_add_explicit(&ep->ud->dropped, 1, memory_order_relaxed);
	log_trace("tcp: datagram endpoint 0x%x dropped a datagram: %s", ep->ud->id, why);
}

/* The sender's address for wc.src: false when it could not be replied to
 * (then the datagram is dropped: only a forged one has such a source). */
static bool source_of(struct tcp_ep *ep, const struct sockaddr_storage *from, uint32_t src_id,
		      struct rcc_ud_addr *out)
{
	struct rcci_ud_addr a = {
		.kind = RCCI_UD_TCP,
		.qkey = ep->base.attr.qkey, /* the receiver's own: rcc.h, struct rcc_wc */
		.qpn = src_id,
	};
	struct rcci_ud_addr check;

	if (!from_sockaddr(from, a.gid, &a.port))
		return false;
	rcci_ud_addr_encode(&a, out);
	return rcci_ud_addr_decode(out, &check, NULL) == 0;
}

/*
 * Whether a datagram waits on ep's socket (-1: none) and would be delivered
 * (1) or dropped on arrival (0), by a look at its header and source that
 * leaves it in the socket. Caller holds rx_lock (nobody else reads it).
 */
static int srq_datagram_waiting(struct tcp_ep *ep)
{
	uint8_t hdr[UD_HDR_LEN];
	struct iovec iov = { hdr, UD_HDR_LEN };
	struct sockaddr_storage from;
	struct msghdr m = {
		.msg_name = &from, .msg_namelen = sizeof(from), .msg_iov = &iov, .msg_iovlen = 1
	};
	struct rcc_ud_addr src;
	struct ud_hdr h;
	ssize_t got;

	do
		got = recvmsg(ep->fd, &m, MSG_DONTWAIT | MSG_TRUNC | MSG_PEEK);
	while (got < 0 && errno == EINTR);
	if (got < 0)
		return -1;
	return !rcci_ud_hdr_decode(hdr, (size_t)got, RCC_UD_TCP_MAX_MSG, &h) &&
	       h.dst_id == ep->ud->id && h.qkey == ep->base.attr.qkey &&
	       source_of(ep, &from, h.src_id, &src);
}

/*
 * Read one datagram. 1: one was taken (delivered or dropped), 0: the socket
 * is empty, -1: the endpoint left service. Caller holds rx_lock, the only
 * place receives are consumed, so the oldest receive stays put while the
 * datagram is read into it.
 */
static int receive_one(struct tcp_ep *ep)
{
	struct tcp_ud *ud = tud(ep);
	const uint32_t max_sge = ep->base.attr.max_recv_sge;
	uint8_t hdr[UD_HDR_LEN];
	struct iovec iov[1 + TCP_MAX_SGE];
	struct sockaddr_storage from;
	struct msghdr m = {
		.msg_name = &from,
		.msg_namelen = sizeof(from),
		.msg_iov = iov,
		.msg_iovlen = 1,
	};
	struct rq_wqe q = { 0 };
	const struct rcc_sge *sg = NULL;
	uint32_t idx;
	bool have, usable, peeked = false;
	ssize_t got;

again:
	/* With an SRQ: its oldest receive, as a connected endpoint takes it --
	 * only for a datagram that is there and will be delivered, so that a
	 * receive never waits on one endpoint while others could fill it. */
	if (ep->base.attr.srq) {
		int w = srq_datagram_waiting(ep);
		if (w < 0)
			return 0;
		if (w > 0) {
			rcci_lock_acquire(&ep->rq_lock);
			if (ep->rq_head == ep->rq_tail)
				rcci_srq_take(ep);
			rcci_lock_release(&ep->rq_lock);
		}
	}
	rcci_lock_acquire(&ep->rq_lock);
	idx = ep->rq_head;
	have = idx != ep->rq_tail;
	if (have) {
		q = ep->rq[idx & ep->rq_mask];
		sg = &ep->rq_sge[(size_t)(idx & ep->rq_mask) * max_sge];
	}
	rcci_lock_release(&ep->rq_lock);
	/* None posted: a datagram is dropped only if it was here before we found
	 * none (a device drops what arrives with no receive posted). The
	 * application may post one, and its peer answer into it, between that
	 * look and our read: so look at the socket first, then at the queue
	 * again, and a receive posted meanwhile takes the datagram. */
	if (!have && !peeked) {
		struct msghdr pm = { .msg_iov = &(struct iovec){ hdr, 1 }, .msg_iovlen = 1 };
		do
			got = recvmsg(ep->fd, &pm, MSG_DONTWAIT | MSG_PEEK);
		while (got < 0 && errno == EINTR);
		if (got < 0)
			return 0; /* nothing waiting (or an error the read below would meet) */
		peeked = true;
		goto again;
	}

	iov[0] = (struct iovec){ hdr, UD_HDR_LEN };
	usable = have && q.status == RCC_WC_SUCCESS;
	/* The receive's buffers must be registered while the kernel writes
	 * them: a deregistered region is never written (dereg waits for us). */
	rcci_rwlock_read(&ep->ctx->mr_lock);
	for (int i = 0; usable && i < q.num_sge; i++) {
		if (!sg[i].length)
			continue;
		if (!rcci_mr_covers_locked(ep->ctx, sg[i].lkey, sg[i].addr, sg[i].length,
					   RCC_ACCESS_LOCAL_WRITE)) {
			usable = false;
			q.status = RCC_WC_LOC_PROT_ERR;
			break;
		}
		iov[m.msg_iovlen++] = (struct iovec){ (void *)(uintptr_t)sg[i].addr, sg[i].length };
	}
	if (!usable)
		m.msg_iovlen = 1; /* the header alone: is it for us at all? */
	do
		got = recvmsg(ep->fd, &m, MSG_DONTWAIT | MSG_TRUNC);
	while (got < 0 && errno == EINTR);
	rcci_rwlock_read_end(&ep->ctx->mr_lock);
	if (got < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			log_debug("tcp: datagram endpoint 0x%x: recvmsg: %s", ud->id,
				  rcc_strerror(-errno));
		return 0;
	}

	struct ud_hdr h;
	if (rcci_ud_hdr_decode(hdr, (size_t)got, RCC_UD_TCP_MAX_MSG, &h)) {
		drop(ep, "malformed");
		return 1;
	}
	if (h.dst_id != ud->id || h.qkey != ep->base.attr.qkey) {
		drop(ep, "another endpoint's (destination or Q_Key)");
		return 1;
	}
	if (!have) {
		drop(ep, "no receive posted");
		return 1;
	}
	if (q.status != RCC_WC_SUCCESS) {
		/* it would have been delivered into memory it may not write */
		ud_fail(ep, RCC_EP_ERROR, (enum rcc_wc_status)q.status,
			"a receive names memory that is not registered");
		return -1;
	}
	if (h.len > q.total) {
		ud_fail(ep, RCC_EP_ERROR, RCC_WC_LOC_LEN_ERR,
			"a datagram longer than the receive it met");
		return -1;
	}
	struct rcc_wc wc = {
		.wr_id = q.wr_id,
		.ep = &ep->base,
		.status = RCC_WC_SUCCESS,
		.opcode = RCC_WC_RECV,
		.byte_len = h.len,
	};
	if (h.opcode == UD_OP_SEND_IMM) {
		wc.wc_flags = RCC_WC_WITH_IMM;
		wc.imm_data = h.imm;
	}
	if (!source_of(ep, &from, h.src_id, &wc.src)) {
		drop(ep, "a source nobody can reply to");
		return 1;
	}
	rcci_lock_acquire(&ep->rq_lock);
	uint32_t next = ++ep->rq_head;
	rcci_lock_release(&ep->rq_lock);
	rcci_cq_push(tcq(ep->base.recv_cq), &wc, FREES_RQ, next);
	return 1;
}

void rcci_ud_progress(struct tcp_ep *ep, bool by_user)
{
	if (atomic_load_explicit(&ep->link, memory_order_acquire) == LINK_DOWN)
		return;
	if (by_user) {
		if (!rcci_lock_try(&ep->rx_lock))
			return; /* the progress thread is on it */
	} else {
		rcci_lock_acquire(&ep->rx_lock);
	}
	atomic_store_explicit(&ep->kick, false, memory_order_relaxed);
	if (atomic_load(&ep->link) == LINK_DOWN)
		goto out;
	/* a CQ of ours lost a completion: fail as a device fails the QPs on it */
	if (rcci_cq_overran(ep))
		ud_fail(ep, RCC_EP_ERROR, RCC_WC_SUCCESS, "its CQ overran");
	/* a send failed at post time: the receives are ours to flush */
	if (atomic_load(&ep->base.state) != RCC_EP_CONNECTED) {
		ud_fail(ep, RCC_EP_ERROR, RCC_WC_SUCCESS, "a work request failed");
		goto out;
	}
	for (int i = 0; i < RX_BUDGET; i++)
		if (receive_one(ep) <= 0)
			break;
out:
	rcci_lock_release(&ep->rx_lock);
}
