/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Accesses to memory the transport uses for the peer with no completion in
 * between. The write latency test (perftest's ib_write_lat method) polls the
 * last byte of the buffer the peer's RDMA WRITE fills, reads that payload
 * under --validate, and rewrites its own source buffer for the next WRITE
 * once the peer has seen the previous one, before that WRITE's (unsignalled)
 * completion. Every test sets a point's target up (cleared, or filled for
 * READ) before the control channel starts the peer, and a bandwidth test
 * with --validate reads what the peer's WRITEs and atomics left there once
 * the peer says it is done: the peer saw their completions, but those are
 * the peer's; nothing in this process orders the transport's copies with
 * the control channel's message.
 *
 * The other side of each access is the transport, never a C11 atomic: on
 * verbs the NIC by DMA; on tcp and shared memory a library thread (the
 * progress thread, or the receive or send path driven from another thread's
 * poll) with memcpy() or recv(). Such a pair is a data race under the C11
 * model whatever this side does: an atomic load against a plain store is
 * still one, and TSan reports it so ("Atomic read of size 1 ... Previous
 * write of size 8 by thread T1: memcpy ... target_io"). An application cannot
 * express "wait until this memory changes" race-free against a writer it does
 * not own, and a plain WRITE gives the target no completion to synchronise
 * with; only the library could publish one.
 *
 * The races are benign for what the test does with them: the marker is one
 * byte, so a load sees the old value or the new, never a torn one; it is an
 * atomic (relaxed) load so that the compiler cannot hoist it out of the poll
 * loop or cache it; the payload is judged only after an acquire fence and
 * read again until it is whole (lat.c); the source buffer is rewritten only
 * after the peer has received all of it, so the transport's read of it is
 * over; and a target is set up before the peer is told to start, and read
 * after it said it is done, each a control-channel round trip away from the
 * transport's accesses. So these functions, and only they, are hidden from TSan: in its
 * build they are uninstrumented and use volatile accesses (TSan instruments
 * atomics even in a no_sanitize("thread") function, and so would still report
 * the pair); everywhere else they are the relaxed atomics described above.
 */
#include <stdatomic.h>

#include "perf.h"

#if defined(__SANITIZE_THREAD__)
#define PERF_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PERF_TSAN 1
#endif
#endif

#ifdef PERF_TSAN
/* Macros, not functions: a helper the compiler does not inline would be
 * instrumented itself. */
#define HIDDEN __attribute__((noinline, no_sanitize("thread")))
#define LOAD(p) (*(const volatile uint8_t *)(p))
#define STORE(p, v) (*(volatile uint8_t *)(p) = (v))
#else
#define HIDDEN
#define LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#endif

HIDDEN bool peer_byte_is(const uint8_t *p, uint8_t want)
{
	if (LOAD(p) != want)
		return false;
	/* On hardware the byte is the last the NIC writes, in order: what the
	 * peer wrote before it is visible to us once we have seen it. */
	atomic_thread_fence(memory_order_acquire);
	return true;
}

HIDDEN long peer_check(const uint8_t *buf, size_t len, uint64_t seq)
{
	for (size_t i = 0; i < len; i++)
		if (LOAD(&buf[i]) != pattern_byte(seq, i))
			return (long)i;
	return -1;
}

HIDDEN void peer_set(uint8_t *p, uint8_t v) { STORE(p, v); }

HIDDEN void peer_fill(uint8_t *buf, size_t len, uint64_t seq)
{
	for (size_t i = 0; i < len; i++)
		STORE(&buf[i], pattern_byte(seq, i));
}

HIDDEN void peer_clear(uint8_t *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		STORE(&buf[i], 0);
}

HIDDEN uint64_t peer_u64(const uint8_t *p)
{
	uint64_t v = 0;
	/* byte by byte, in memory order: the value the responder stored whole */
	for (size_t i = 0; i < sizeof(v); i++)
		((uint8_t *)&v)[i] = LOAD(&p[i]);
	return v;
}
