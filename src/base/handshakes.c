/* SPDX-License-Identifier: BSD-3-Clause */
/* Half-open connections of a listener, progressed together (handshakes.h). */
#include "handshakes.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/addr.h"
#include "base/log.h"
#include "base/sock.h"

struct rcci_half_open {
	int fd;
	uint64_t seq;
	uint64_t deadline; /* rcci_deadline() units */
	size_t have;
	uint8_t buf[RCCI_HANDSHAKE_MAX];
	char peer[64];
};

/* epoll data: the slot index, or LISTENER for the listening socket */
#define LISTENER UINT32_MAX
/* Accepts per pass, so a flood of connections cannot starve the reads. */
#define ACCEPT_BURST 64

int rcci_handshakes_listen(struct rcci_handshakes *hs, const struct sockaddr *sa, socklen_t salen,
			   int backlog, int *port, int max, int timeout_ms, rcci_msg_len_fn msg_len)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = LISTENER };
	int rc;

	if (max < 1 || timeout_ms < 1 || !msg_len)
		return -EINVAL;
	memset(hs, 0, sizeof(*hs));
	hs->slot = calloc((size_t)max, sizeof(*hs->slot));
	if (!hs->slot)
		return -ENOMEM;
	for (int i = 0; i < max; i++)
		hs->slot[i].fd = -1;
	hs->lfd = rcci_sock_listen(sa, salen, backlog, port);
	if (hs->lfd < 0) {
		rc = hs->lfd;
		goto err_slot;
	}
	hs->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (hs->epfd < 0) {
		rc = -errno;
		goto err_lfd;
	}
	if (epoll_ctl(hs->epfd, EPOLL_CTL_ADD, hs->lfd, &ev)) {
		rc = -errno;
		goto err_ep;
	}
	hs->max = max;
	hs->timeout_ms = timeout_ms;
	hs->msg_len = msg_len;
	return 0;

err_ep:
	close(hs->epfd);
err_lfd:
	close(hs->lfd);
err_slot:
	free(hs->slot);
	return rc;
}

static void drop(struct rcci_handshakes *hs, struct rcci_half_open *h, const char *why)
{
	log_info("dropped a connection from %s before its handshake ended: %s", h->peer, why);
	close(h->fd); /* also leaves the epoll set */
	h->fd = -1;
	hs->count--;
	hs->dropped++;
}

void rcci_handshakes_fini(struct rcci_handshakes *hs)
{
	for (int i = 0; i < hs->max; i++)
		if (hs->slot[i].fd >= 0)
			close(hs->slot[i].fd);
	close(hs->epfd);
	close(hs->lfd);
	free(hs->slot);
	hs->slot = NULL;
}

/* A free slot, making one by dropping the oldest half-open connection: a
 * flood of idle peers then costs each of them its place in turn, while a new
 * client always gets in and has its full deadline to say hello. */
static struct rcci_half_open *free_slot(struct rcci_handshakes *hs)
{
	struct rcci_half_open *oldest = NULL;

	for (int i = 0; i < hs->max; i++) {
		struct rcci_half_open *h = &hs->slot[i];
		if (h->fd < 0)
			return h;
		if (!oldest || h->seq < oldest->seq)
			oldest = h;
	}
	drop(hs, oldest, "too many half-open connections (the oldest goes)");
	return oldest;
}

static int accept_some(struct rcci_handshakes *hs)
{
	for (int n = 0; n < ACCEPT_BURST; n++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept4(hs->lfd, (struct sockaddr *)&ss, &sl,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO)
				continue;
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM) {
				/* out of descriptors: make room, try again next pass */
				if (hs->count)
					drop(hs, free_slot(hs), "out of file descriptors");
				return 0;
			}
			return -errno;
		}
		struct rcci_half_open *h = free_slot(hs);
		uint32_t idx = (uint32_t)(h - hs->slot);
		struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP, .data.u32 = idx };
		if (epoll_ctl(hs->epfd, EPOLL_CTL_ADD, fd, &ev)) {
			log_warn("listener: cannot watch an accepted connection: %s",
				 rcc_strerror(-errno));
			close(fd);
			continue;
		}
		h->fd = fd;
		h->seq = hs->next_seq++;
		h->deadline = rcci_deadline(hs->timeout_ms);
		h->have = 0;
		rcci_addr_format((struct sockaddr *)&ss, h->peer, sizeof(h->peer));
		hs->count++;
	}
	return 0;
}

/* Read what h's peer sent; 1 when its first message is complete. */
static int read_some(struct rcci_handshakes *hs, struct rcci_half_open *h)
{
	for (;;) {
		long need = hs->msg_len(h->buf, h->have);
		if (need < 0 || (size_t)need > sizeof(h->buf)) {
			drop(hs, h, "not a connection request");
			return 0;
		}
		if ((size_t)need == h->have)
			return 1;
		ssize_t r = recv(h->fd, h->buf + h->have, (size_t)need - h->have, MSG_DONTWAIT);
		if (r > 0) {
			h->have += (size_t)r;
			continue;
		}
		if (r == 0) {
			drop(hs, h, "the peer closed");
			return 0;
		}
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		if (errno == EINTR)
			continue;
		drop(hs, h, rcc_strerror(-errno));
		return 0;
	}
}

/* Drop what has passed its deadline; the soonest deadline left. */
static uint64_t expire(struct rcci_handshakes *hs)
{
	uint64_t soonest = UINT64_MAX, now = rcci_deadline(0);

	for (int i = 0; i < hs->max; i++) {
		struct rcci_half_open *h = &hs->slot[i];
		if (h->fd < 0)
			continue;
		if (h->deadline <= now)
			drop(hs, h, "no complete handshake in time");
		else if (h->deadline < soonest)
			soonest = h->deadline;
	}
	return soonest;
}

int rcci_handshakes_next(struct rcci_handshakes *hs, int timeout_ms, int *fd, uint8_t *buf,
			 size_t buflen, size_t *len, char *peer, size_t peerlen)
{
	uint64_t deadline = rcci_deadline(timeout_ms);
	struct epoll_event ev[32];

	for (;;) {
		uint64_t soonest = expire(hs);
		uint64_t wake = soonest < deadline ? soonest : deadline;
		int n = epoll_wait(hs->epfd, ev, 32, rcci_ms_left(wake));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (int i = 0; i < n; i++) {
			if (ev[i].data.u32 == LISTENER) {
				int rc = accept_some(hs);
				if (rc)
					return rc;
				continue;
			}
			struct rcci_half_open *h = &hs->slot[ev[i].data.u32];
			/* an event for a slot dropped or reused earlier in this batch
			 * is harmless: reading finds nothing or the new peer's bytes */
			if (h->fd < 0 || !read_some(hs, h))
				continue;
			if (h->have > buflen) {
				drop(hs, h, "message too long for the transport");
				continue;
			}
			/* complete: it leaves the set, the caller owns the socket. The
			 * rest of this batch stays ready in epoll (level-triggered). */
			epoll_ctl(hs->epfd, EPOLL_CTL_DEL, h->fd, NULL);
			*fd = h->fd;
			memcpy(buf, h->buf, h->have);
			*len = h->have;
			snprintf(peer, peerlen, "%s", h->peer);
			h->fd = -1;
			hs->count--;
			return 0;
		}
		if (rcci_deadline(0) >= deadline && deadline != UINT64_MAX)
			return -ETIMEDOUT;
	}
}
