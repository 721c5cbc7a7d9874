/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The byte stream of a same-host endpoint: the shared rings carry the
 * frames, the socket stays open as the doorbell and as the liveness signal
 * (a peer that dies closes it: EOF ends the connection as on the socket
 * path). These calls behave like the non-blocking socket calls they replace
 * in rx.c and tx.c: partial transfers, 0 when nothing can move now.
 *
 * Wake-ups (docs/shm.md): a consumer about to sleep sets its "sleeping" flag
 * (rcci_shm_ring_arm) and the producer rings one byte on the socket only then; a
 * producer that found the ring full sets "space_wait" and the consumer rings
 * when it frees room. Busy polling therefore costs no system call. The
 * doorbell is read by the progress thread, or by an application thread that
 * armed the ring before it slept on the socket (cq.c).
 */
#include <errno.h>
#include <sys/socket.h>

#include "tcp.h"

static void ring_doorbell(struct tcp_ep *ep)
{
	static const uint8_t one = 1;

	/* EAGAIN: bytes the peer has not read yet wake it anyway; EPIPE: it is
	 * gone, which its socket tells us on the receive side. */
	(void)!send(ep->fd, &one, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* Read and drop doorbell bytes: 0 (none left, or fewer than asked: the rest
 * of a burst keeps the socket readable, which wakes whoever watches it),
 * -ECONNRESET at end of stream, another negative errno on failure. */
static long drain_doorbell(struct tcp_ep *ep)
{
	uint8_t sink[64];

	for (;;) {
		ssize_t n = recv(ep->fd, sink, sizeof(sink), MSG_DONTWAIT);
		if (n == (ssize_t)sizeof(sink))
			continue;
		if (n > 0)
			return 0;
		if (n == 0)
			return -ECONNRESET;
		if (errno == EINTR)
			continue;
		return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
	}
}

static long ring_read(struct tcp_ep *ep, const struct iovec *iov, int n)
{
	long r = rcci_shm_ring_readv(&ep->shm, iov, n);

	if (r > 0 && rcci_shm_ring_wake_producer(&ep->shm))
		ring_doorbell(ep);
	return r;
}

long rcci_shm_stream_recvv(struct tcp_ep *ep, const struct iovec *iov, int n)
{
	long s = 0;

	/* A pass that may look at the socket (the progress thread's, or a
	 * waiter's that armed the ring) reads the doorbells first, once: what
	 * the peer wrote before ringing is in the ring for the read below. Not
	 * after an empty read only: rx.c stops at a short read without asking
	 * again, so a woken waiter that found its message would leave the bell
	 * behind, and bells would pile up while every wake-up finds data. */
	if (ep->shm_sock) {
		s = drain_doorbell(ep);
		if (s == 0)
			ep->shm_sock = false; /* the rest of this pass: the ring only */
	}
	/* At the peer's end (s < 0) the ring is still read to its end first,
	 * and the socket stays this pass's to report that end. */
	long r = ring_read(ep, iov, n);
	return r != 0 ? r : s;
}

ssize_t rcci_shm_stream_send(struct tcp_ep *ep, const struct iovec *iov, int n)
{
	long r = rcci_shm_ring_write(&ep->shm, iov, n);

	if (r < 0) {
		ep->tx_err = EPROTO; /* the peer broke the ring */
		return -1;
	}
	if (r > 0 && rcci_shm_ring_wake_consumer(&ep->shm))
		ring_doorbell(ep);
	return r;
}

/*
 * Whether a poll of this endpoint by the application would do nothing: the
 * conditions of rcci_ep_progress()'s busy-polling fast path, read from
 * atomics before its locks are taken, with "nothing came in" decided by the
 * ring instead of a read. A pass leaves nothing staged but a partial header
 * (whole frames are written at once, and the rest of a hostile peer's frame
 * shows in the ring), unless it stopped at its budget, which kicks the
 * progress thread; so with the ring empty and none of the flags set a pass
 * reads nothing and sends nothing. The same gate drive() (cq.c) applies to
 * the endpoints of a CQ with several, plus the link, a kick and an overrun:
 * the empty poll of a busy poller then takes no lock and copies nothing.
 * A flag another thread sets just after is seen by the next poll, as a
 * frame published just after the look is.
 */
bool rcci_shm_stream_idle(struct tcp_ep *ep)
{
	return atomic_load_explicit(&ep->link, memory_order_relaxed) == LINK_UP &&
	       !atomic_load_explicit(&ep->kick, memory_order_relaxed) &&
	       !atomic_load_explicit(&ep->tx_deferred, memory_order_relaxed) &&
	       !atomic_load_explicit(&ep->thread_timer, memory_order_relaxed) &&
	       !atomic_load_explicit(&ep->want_out, memory_order_relaxed) &&
	       !atomic_load_explicit(&ep->user_bell, memory_order_relaxed) &&
	       !rcci_cq_overran(ep) && !rcci_shm_ring_rx_ready(&ep->shm);
}

bool rcci_shm_stream_ready(struct tcp_ep *ep)
{
	return rcci_shm_ring_rx_ready(&ep->shm) ||
	       (atomic_load_explicit(&ep->want_out, memory_order_relaxed) &&
		rcci_shm_ring_tx_room(&ep->shm));
}

/*
 * A blocked transmit arms the ring too: it is not always blocked on a ring it
 * saw full -- one that used up its rounds (tx.c) stops with the flag unset,
 * and if the ring then fills before a sleeper looks, neither room nor a
 * doorbell would ever come (the producer asleep, the consumer never ringing).
 */
bool rcci_shm_stream_arm(struct tcp_ep *ep)
{
	bool ready = rcci_shm_ring_arm(&ep->shm);

	if (atomic_load_explicit(&ep->want_out, memory_order_relaxed) &&
	    rcci_shm_ring_arm_tx(&ep->shm))
		ready = true;
	return ready || rcci_shm_stream_ready(ep);
}
