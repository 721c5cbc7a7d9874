/* SPDX-License-Identifier: BSD-3-Clause */
#include "sock.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "addr.h"
#include "rcc/util.h"

static uint64_t now_ms(void) { return rcc_now_ns() / 1000000; }

uint64_t rcci_deadline(int timeout_ms)
{
	return timeout_ms < 0 ? UINT64_MAX : now_ms() + (uint64_t)timeout_ms;
}

int rcci_ms_left(uint64_t deadline)
{
	if (deadline == UINT64_MAX)
		return -1;
	uint64_t now = now_ms();
	if (now >= deadline)
		return 0;
	uint64_t left = deadline - now;
	return left > 86400000u ? 86400000 : (int)left;
}

int rcci_poll_until(struct pollfd *p, unsigned n, uint64_t deadline)
{
	for (;;) {
		int r = poll(p, n, rcci_ms_left(deadline));
		if (r > 0)
			return 0;
		if (r == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

int rcci_wait_fd(int fd, short events, uint64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = events };
	return rcci_poll_until(&p, 1, deadline);
}

/* After a call on a non-blocking socket failed with errno: 0 to try again
 * (interrupted, or the socket is ready now), or the error to give up with. */
static int again_by(int fd, short events, uint64_t deadline)
{
	if (errno == EINTR)
		return 0;
	if (errno != EAGAIN && errno != EWOULDBLOCK)
		return -errno;
	return rcci_wait_fd(fd, events, deadline);
}

ssize_t rcci_sendmsg_by(int fd, const struct msghdr *m, int flags, uint64_t deadline)
{
	for (;;) {
		ssize_t r = sendmsg(fd, m, flags | MSG_DONTWAIT | MSG_NOSIGNAL);
		if (r >= 0)
			return r;
		int rc = again_by(fd, POLLOUT, deadline);
		if (rc)
			return rc;
	}
}

ssize_t rcci_recvmsg_by(int fd, struct msghdr *m, int flags, uint64_t deadline)
{
	for (;;) {
		ssize_t r = recvmsg(fd, m, flags | MSG_DONTWAIT);
		if (r >= 0)
			return r;
		int rc = again_by(fd, POLLIN, deadline);
		if (rc)
			return rc;
	}
}

int rcci_send_all(int fd, const void *buf, size_t len, uint64_t deadline)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t r = send(fd, p, len, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (r > 0) {
			p += r;
			len -= (size_t)r;
			continue;
		}
		int rc = r < 0 ? again_by(fd, POLLOUT, deadline) :
				 rcci_wait_fd(fd, POLLOUT, deadline);
		if (rc)
			return rc;
	}
	return 0;
}

int rcci_recv_all(int fd, void *buf, size_t len, uint64_t deadline)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t r = recv(fd, p, len, MSG_DONTWAIT);
		if (r > 0) {
			p += r;
			len -= (size_t)r;
			continue;
		}
		if (r == 0)
			return -ECONNRESET;
		int rc = again_by(fd, POLLIN, deadline);
		if (rc)
			return rc;
	}
	return 0;
}

int rcci_sock_listen(const struct sockaddr *sa, socklen_t salen, int backlog, int *port)
{
	struct sockaddr_storage bound;
	socklen_t blen = sizeof(bound);
	int one = 1, fd, rc;

	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* a restarted server must not wait out the old one's TIME_WAIT */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, sa, salen) || listen(fd, backlog) ||
	    getsockname(fd, (struct sockaddr *)&bound, &blen)) {
		rc = -errno;
		close(fd);
		return rc;
	}
	*port = rcci_addr_port((struct sockaddr *)&bound);
	return fd;
}

int rcci_sock_connect(const struct sockaddr *sa, socklen_t salen, uint64_t deadline)
{
	int fd, rc, err = 0;
	socklen_t el = sizeof(err);

	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, sa, salen) && errno != EINPROGRESS) {
		rc = -errno;
		goto err_fd;
	}
	rc = rcci_wait_fd(fd, POLLOUT, deadline);
	if (rc)
		goto err_fd;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) || err) {
		rc = -(err ? err : errno);
		goto err_fd;
	}
	return fd;

err_fd:
	close(fd);
	return rc;
}

void rcci_sock_keepalive(int fd)
{
	int one = 1, idle = 10, intvl = 2, cnt = 3;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}
