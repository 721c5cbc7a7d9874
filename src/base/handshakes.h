/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The half-open connections of a listener that takes connection requests over
 * TCP (the tcp transport; verbs' manual bring-up can use the same): accepted
 * sockets whose first message has not fully arrived yet. Many progress at
 * once, each with its own deadline, so no peer -- silent, slow or sending
 * part of a message -- holds up the others; their number is bounded, and
 * past the bound the oldest is dropped, never the newest.
 *
 * One epoll descriptor covers the listening socket and every half-open one:
 * it is readable exactly when rcci_handshakes_next() has work to do (a new
 * connection to accept, bytes from a half-open one). Not thread-safe: the
 * listener's owner calls it (rcc_get_request() has the same rule).
 */
#ifndef RCC_CORE_HANDSHAKES_H
#define RCC_CORE_HANDSHAKES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* How long the first message of a connection is, from the bytes so far:
 * the total length (> have while incomplete; a header's length while even the
 * header is incomplete), or a negative errno for bytes that cannot start a
 * valid message (the connection is dropped). */
typedef long (*rcci_msg_len_fn)(const uint8_t *buf, size_t have);

/* Room for the largest first message any user reads. */
#define RCCI_HANDSHAKE_MAX 256

struct rcci_half_open;

struct rcci_handshakes {
	int lfd;  /* the listening socket */
	int epfd; /* epoll over lfd and every half-open socket */
	int max;  /* bound on half-open connections */
	int timeout_ms;
	rcci_msg_len_fn msg_len;
	struct rcci_half_open *slot; /* max entries; fd -1 when free */
	int count;
	uint64_t next_seq; /* accept order: the smallest live seq is the oldest */
	uint64_t dropped;  /* connections dropped (timed out, evicted, garbage) */
};

/* Listen on sa (a non-blocking socket; *port is the port it got, as
 * rcci_sock_listen()) with at most max half-open connections, each given
 * timeout_ms to send its first message. max >= 1, timeout_ms >= 1. 0 or a
 * negative errno (nothing left open). */
int rcci_handshakes_listen(struct rcci_handshakes *hs, const struct sockaddr *sa, socklen_t salen,
			   int backlog, int *port, int max, int timeout_ms,
			   rcci_msg_len_fn msg_len);
/* Close every half-open socket, the epoll descriptor and the listening socket. */
void rcci_handshakes_fini(struct rcci_handshakes *hs);

/*
 * Progress accepts and reads until one connection's first message is
 * complete, for up to timeout_ms (-1: no limit; 0: only what is ready now).
 * On success the connection leaves the set: *fd is the caller's (non-blocking),
 * its message is in buf (*len bytes, at most buflen), its address in peer.
 * Returns 0, -ETIMEDOUT when none completed in time, or a negative errno for a
 * failure of the listening socket itself.
 */
int rcci_handshakes_next(struct rcci_handshakes *hs, int timeout_ms, int *fd, uint8_t *buf,
			 size_t buflen, size_t *len, char *peer, size_t peerlen);

#endif
