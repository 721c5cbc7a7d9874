/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Deadlines and bounded socket I/O for connection set-up, shared by the
 * transports (the tcp handshake, verbs' manual bring-up).
 */
#ifndef RCC_CORE_SOCK_H
#define RCC_CORE_SOCK_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* A monotonic deadline timeout_ms from now; UINT64_MAX for -1 (none). */
uint64_t rcci_deadline(int timeout_ms);
/* Milliseconds left (0 once passed), for poll(); -1 for no deadline. */
int rcci_ms_left(uint64_t deadline);
/* Wait for events on fd: 0, -ETIMEDOUT or a negative errno. A deadline
 * already reached still gets one look, so a zero timeout means "if ready now". */
int rcci_wait_fd(int fd, short events, uint64_t deadline);
/* poll() on n descriptors until one is ready or the deadline passes (EINTR
 * retried): 0, -ETIMEDOUT or a negative errno; p[].revents as poll() set them. */
int rcci_poll_until(struct pollfd *p, unsigned n, uint64_t deadline);
/* All len bytes to / from a non-blocking socket by the deadline: 0,
 * -ETIMEDOUT, -ECONNRESET (the peer closed) or a negative errno. */
int rcci_send_all(int fd, const void *buf, size_t len, uint64_t deadline);
int rcci_recv_all(int fd, void *buf, size_t len, uint64_t deadline);
/* One sendmsg()/recvmsg() on a non-blocking socket, waiting for it to be
 * ready by the deadline: the bytes moved (recvmsg: 0 at end of stream), or
 * -ETIMEDOUT or another negative errno. send adds MSG_NOSIGNAL. */
ssize_t rcci_sendmsg_by(int fd, const struct msghdr *m, int flags, uint64_t deadline);
ssize_t rcci_recvmsg_by(int fd, struct msghdr *m, int flags, uint64_t deadline);

/* A non-blocking listening socket on sa; *port is the port it got (sa may ask
 * for 0). The fd, or a negative errno. */
int rcci_sock_listen(const struct sockaddr *sa, socklen_t salen, int backlog, int *port);
/* A non-blocking socket connected to sa by the deadline: the fd, or
 * -ETIMEDOUT, -ECONNREFUSED, ... */
int rcci_sock_connect(const struct sockaddr *sa, socklen_t salen, uint64_t deadline);
/* No Nagle, and keepalive probes after 10 s idle (every 2 s, 3 times): the
 * socket is how a vanished peer is noticed, and this bounds how late. */
void rcci_sock_keepalive(int fd);

#endif
