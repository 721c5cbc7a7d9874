/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Handing a region's descriptor to the peer (shm_region.h): a listening Unix
 * socket in the abstract namespace under 128 random bits, one SCM_RIGHTS
 * message to the process that shows the ACCEPT's 128-bit token and runs as
 * our user. The abstract name is visible to every process of the network
 * namespace (/proc/net/unix); the token is not: it travelled only on the TCP
 * connection, so whoever shows it is our TCP peer (or can already read our
 * memory). Every step is bounded by the handshake's deadline.
 *
 * The Unix connection then stays: it is the connection's doorbell and
 * liveness signal in place of the TCP socket (a byte through a Unix socket
 * costs far less than through loopback TCP, and each side owns its end: the
 * peer cannot change the flags of the descriptor we read, as it could those
 * of an eventfd or pipe it shared with us).
 */
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/sock.h"
#include "shm_region.h"

#define NAME_PREFIX "rcc-shm-"

/* "\0rcc-shm-" + the name in hex: an abstract address, no file anywhere. */
static socklen_t abstract_addr(const uint8_t name[WIRE_SHM_NAME_LEN], struct sockaddr_un *sa)
{
	static const char hex[] = "0123456789abcdef";
	size_t k = 1 + sizeof(NAME_PREFIX) - 1;

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	memcpy(sa->sun_path + 1, NAME_PREFIX, sizeof(NAME_PREFIX) - 1);
	for (unsigned i = 0; i < WIRE_SHM_NAME_LEN; i++) {
		sa->sun_path[k++] = hex[name[i] >> 4];
		sa->sun_path[k++] = hex[name[i] & 15];
	}
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + k);
}

/* The process at the other end of a Unix socket runs as our user. */
static bool same_user(int fd)
{
	struct ucred c;
	socklen_t len = sizeof(c);

	return !getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c, &len) && len == sizeof(c) &&
	       c.uid == geteuid();
}

/* Compare without stopping at the first difference. */
static bool token_equal(const uint8_t *a, const uint8_t *b)
{
	uint8_t diff = 0;

	for (unsigned i = 0; i < WIRE_SHM_TOKEN_LEN; i++)
		diff |= (uint8_t)(a[i] ^ b[i]);
	return diff == 0;
}

int rcci_shm_offer_open(struct shm_offer *o, const char **why)
{
	struct sockaddr_un sa;
	socklen_t len;
	int fd, rc;

	o->lfd = -1;
	if (getrandom(o->name, WIRE_SHM_NAME_LEN, 0) != WIRE_SHM_NAME_LEN ||
	    getrandom(o->token, WIRE_SHM_TOKEN_LEN, 0) != WIRE_SHM_TOKEN_LEN) {
		*why = "no random bytes for the region's offer";
		return -EIO;
	}
	len = abstract_addr(o->name, &sa);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		*why = "no Unix socket for the region's offer";
		return -errno;
	}
	if (bind(fd, (struct sockaddr *)&sa, len) || listen(fd, 4)) {
		rc = -errno;
		close(fd);
		*why = "cannot listen for the region's offer";
		return rc;
	}
	o->lfd = fd;
	return 0;
}

void rcci_shm_offer_close(struct shm_offer *o)
{
	if (o->lfd >= 0)
		close(o->lfd);
	o->lfd = -1;
}

/* One byte with the descriptor attached. */
static int send_fd(int c, int memfd, uint64_t deadline)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	uint8_t one = 1;
	struct iovec v = { .iov_base = &one, .iov_len = 1 };
	struct msghdr m = { .msg_iov = &v,
			    .msg_iovlen = 1,
			    .msg_control = ctl.buf,
			    .msg_controllen = sizeof(ctl.buf) };
	struct cmsghdr *h = CMSG_FIRSTHDR(&m);

	memset(&ctl, 0, sizeof(ctl));
	h->cmsg_level = SOL_SOCKET;
	h->cmsg_type = SCM_RIGHTS;
	h->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(h), &memfd, sizeof(int));
	ssize_t n = rcci_sendmsg_by(c, &m, 0, deadline);
	return n == 1 ? 0 : n < 0 ? (int)n : -EIO;
}

/* One connection to the offer: 1 (handed over), 0 (not our peer: drop it),
 * or -ETIMEDOUT. */
static int serve_one(struct shm_offer *o, int memfd, int c, uint64_t deadline)
{
	uint8_t got[WIRE_SHM_TOKEN_LEN];
	int rc;

	if (!same_user(c))
		return 0;
	rc = rcci_recv_all(c, got, sizeof(got), deadline);
	if (rc == -ETIMEDOUT)
		return rc;
	if (rc || !token_equal(got, o->token))
		return 0;
	rc = send_fd(c, memfd, deadline);
	return rc == -ETIMEDOUT ? rc : rc == 0;
}

int rcci_shm_offer_serve(struct shm_offer *o, int memfd, int tcp_fd, uint64_t deadline)
{
	for (;;) {
		struct pollfd p[2] = { { .fd = o->lfd, .events = POLLIN },
				       { .fd = tcp_fd, .events = POLLIN } };
		int r = poll(p, 2, rcci_ms_left(deadline));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ETIMEDOUT;
		if (p[1].revents)
			return -EAGAIN; /* the peer confirmed (or went away) without fetching */
		int c = accept4(o->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (c < 0) {
			if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED)
				continue;
			return -errno;
		}
		r = serve_one(o, memfd, c, deadline);
		if (r == 1)
			return c;
		close(c);
		if (r)
			return r;
	}
}

/* Receive the one descriptor of an SCM_RIGHTS message: the descriptor, or a
 * negative errno. Anything else the peer attaches is closed. */
static int recv_fd(int fd, uint64_t deadline)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(4 * sizeof(int))];
	} ctl;
	uint8_t byte;
	struct iovec v = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr m = { .msg_iov = &v,
			    .msg_iovlen = 1,
			    .msg_control = ctl.buf,
			    .msg_controllen = sizeof(ctl.buf) };
	ssize_t n = rcci_recvmsg_by(fd, &m, MSG_CMSG_CLOEXEC, deadline);

	if (n < 0)
		return (int)n;
	int got = -1, count = 0;
	for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h)) {
		if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS ||
		    h->cmsg_len < CMSG_LEN(0))
			continue;
		size_t k = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int one;
			memcpy(&one, CMSG_DATA(h) + i * sizeof(int), sizeof(int));
			if (count++ == 0)
				got = one;
			else
				close(one);
		}
	}
	if (n == 1 && count == 1 && !(m.msg_flags & MSG_CTRUNC))
		return got;
	if (got >= 0)
		close(got);
	return n == 0 ? -ECONNRESET : -EPROTO;
}

int rcci_shm_offer_fetch(const uint8_t name[WIRE_SHM_NAME_LEN],
			 const uint8_t token[WIRE_SHM_TOKEN_LEN], uint64_t deadline, int *memfd,
			 const char **why)
{
	struct sockaddr_un sa;
	socklen_t len = abstract_addr(name, &sa);
	int fd, rc;

	fd = rcci_sock_connect((struct sockaddr *)&sa, len, deadline);
	if (fd < 0) {
		*why = "the peer's region offer cannot be reached (another network namespace?)";
		return fd;
	}
	if (!same_user(fd)) {
		*why = "the peer's region offer is not this user's";
		rc = -EPERM;
		goto err;
	}
	rc = rcci_send_all(fd, token, WIRE_SHM_TOKEN_LEN, deadline);
	if (!rc)
		rc = recv_fd(fd, deadline);
	if (rc < 0) {
		*why = "the peer did not hand its region over";
		goto err;
	}
	*memfd = rc;
	return fd;

err:
	close(fd);
	return rc;
}
