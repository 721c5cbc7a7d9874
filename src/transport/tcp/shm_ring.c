/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ring arithmetic over peer-writable memory. Indices are free-running u64;
 * the peer's index is loaded once (acquire), checked (tail - head never more
 * than cap), then used: a peer scribbling the region can make us fail the
 * connection, never read or write outside the ring.
 */
#include "shm_ring.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/env.h"

_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "shared indices need lock-free 64-bit atomics");

#if defined(__SANITIZE_THREAD__)
#define SHM_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SHM_TSAN 1
#endif
#endif
#ifdef SHM_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
static char tsan_keys[SHM_TSAN_KEYS];
/* What an index store releases and its load acquires, made visible to TSan. */
static void tsan_release(const struct shm_ring *r) { __tsan_release(&tsan_keys[r->tsan_key]); }
static void tsan_acquire(const struct shm_ring *r) { __tsan_acquire(&tsan_keys[r->tsan_key]); }
#else
static void tsan_release(const struct shm_ring *r) { (void)r; }
static void tsan_acquire(const struct shm_ring *r) { (void)r; }
#endif
_Static_assert(sizeof(struct shm_hdr) <= SHM_HDR_SIZE, "header fits its page");

void rcci_shm_ring_init(struct shm_ring *r, void *map, uint32_t cap, bool accepter)
{
	struct shm_hdr *h = map;
	uint8_t *data = (uint8_t *)map + SHM_HDR_SIZE;
	int t = accepter ? 0 : 1;

	r->map = map;
	r->map_len = shm_region_len(cap);
	r->cap = cap;
	r->tx = &h->dir[t];
	r->rx = &h->dir[1 - t];
	r->tx_data = data + (size_t)t * cap;
	r->rx_data = data + (size_t)(1 - t) * cap;
	atomic_init(&r->tx_tail, 0);
	atomic_init(&r->rx_head, 0);
	atomic_init(&r->tx_head_seen, 0);
	atomic_init(&r->tx_need, 1);
	r->tsan_key = 0;
}

void rcci_shm_ring_fresh(struct shm_ring *r)
{
	struct shm_hdr *h = r->map;

	for (int d = 0; d < 2; d++)
		atomic_store_explicit(&h->dir[d].sleeping, 1, memory_order_relaxed);
}

/* Room in the ring we produce into: cap - used, or -EPROTO when the
 * consumer's head is impossible (ahead of what we produced, or more than cap
 * behind). The status itself, so no caller can hand on a bare -1. *seen
 * gets the head loaded (only on success). */
static long tx_room_load(const struct shm_ring *r, uint64_t *seen)
{
	uint64_t head = atomic_load_explicit(&r->tx->head, memory_order_acquire);
	tsan_acquire(r);
	uint64_t used = atomic_load_explicit(&r->tx_tail, memory_order_relaxed) - head;

	if (used > r->cap)
		return -EPROTO;
	*seen = head;
	return (long)(r->cap - used);
}

static long tx_room(const struct shm_ring *r)
{
	uint64_t seen;

	return tx_room_load(r, &seen);
}

/* The producer's room for want bytes (under tx_lock): from the head last
 * seen when that leaves enough, else loaded again and remembered. The head
 * only grows, and the bytes below the one seen were released to us when it
 * was loaded (acquire), so the remembered room is never more than the room
 * there is. */
static long tx_room_for(struct shm_ring *r, uint32_t want)
{
	uint64_t used = atomic_load_explicit(&r->tx_tail, memory_order_relaxed) -
			atomic_load_explicit(&r->tx_head_seen, memory_order_relaxed);
	uint64_t seen;
	long room;

	if (used <= r->cap && r->cap - used >= want)
		return (long)(r->cap - used);
	room = tx_room_load(r, &seen);
	if (room >= 0)
		atomic_store_explicit(&r->tx_head_seen, seen, memory_order_relaxed);
	return room;
}

/* Bytes waiting in the ring we consume, or -EPROTO when the tail is impossible.
 * (Prefetching the next frame's line beside the tail's load was tried: no
 * difference, interleaved, 2026-11-29.) */
static long rx_avail(const struct shm_ring *r)
{
	uint64_t tail = atomic_load_explicit(&r->rx->tail, memory_order_acquire);
	tsan_acquire(r);
	uint64_t have = tail - atomic_load_explicit(&r->rx_head, memory_order_relaxed);

	return have > r->cap ? -EPROTO : (long)have;
}

/* Copy iov from byte skip on into the ring, up to room: bytes copied. */
static size_t copy_in(struct shm_ring *r, const struct iovec *iov, int n, size_t skip, size_t room)
{
	uint64_t tail = atomic_load_explicit(&r->tx_tail, memory_order_relaxed);
	size_t done = 0;

	for (int i = 0; i < n && done < room; i++) {
		if (skip >= iov[i].iov_len) {
			skip -= iov[i].iov_len;
			continue;
		}
		const uint8_t *src = (const uint8_t *)iov[i].iov_base + skip;
		size_t left = iov[i].iov_len - skip;
		skip = 0;
		if (left > room - done)
			left = room - done;
		while (left) {
			uint32_t at = (uint32_t)((tail + done) & (r->cap - 1));
			size_t take = r->cap - at < left ? r->cap - at : left;
			memcpy(r->tx_data + at, src, take);
			src += take;
			left -= take;
			done += take;
		}
	}
	return done;
}

/* Too little room (less than want): say that the producer waits for room,
 * then look again -- the consumer may have freed it before it could see the
 * flag. Dekker with the consumer, which publishes head, fences and rings if
 * the flag is set. Returns the room if now enough, 0 if not (the flag stays
 * set: the consumer's next read rings for us), -EPROTO if the ring is broken.
 * Out of line, as the other fences here are: gcc refuses a fence inlined
 * into its callers under -fsanitize=thread (-Wtsan). */
static __attribute__((noinline)) long wait_for_room(struct shm_ring *r, uint32_t want)
{
	atomic_store_explicit(&r->tx->space_wait, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	long room = tx_room(r);
	return room < 0 || room >= (long)want ? room : 0;
}

long rcci_shm_ring_write(struct shm_ring *r, const struct iovec *iov, int n)
{
	size_t want = 0, done = 0;

	for (int i = 0; i < n; i++)
		want += iov[i].iov_len;
	while (done < want) {
		size_t left = want - done;
		long room = tx_room_for(r, left < r->cap ? (uint32_t)left : r->cap);
		if (room < 0)
			return room;
		if (room == 0) {
			/* Full: whoever will not come back by itself arms the room
			 * (rcci_shm_ring_arm_tx) before it sleeps. */
			atomic_store_explicit(&r->tx_need, 1, memory_order_relaxed);
			break;
		}
		size_t got = copy_in(r, iov, n, done, (size_t)room);
		done += got;
		uint64_t tail = atomic_load_explicit(&r->tx_tail, memory_order_relaxed) + got;
		atomic_store_explicit(&r->tx_tail, tail, memory_order_relaxed);
		tsan_release(r);
		atomic_store_explicit(&r->tx->tail, tail, memory_order_release);
	}
	return (long)done;
}

long rcci_shm_ring_reserve(struct shm_ring *r, size_t need)
{
	uint32_t want = need == 0 ? 1 : need > r->cap ? r->cap : (uint32_t)need;
	long room = tx_room_for(r, want);

	atomic_store_explicit(&r->tx_need, want, memory_order_relaxed);
	if (room < 0)
		return room;
	if (room < (long)want)
		return 0; /* the room to arm is now want */
	return room;
}

/* Copy len bytes of the ring we consume, from index at on, into dst. */
static void copy_out(const struct shm_ring *r, uint64_t at, uint8_t *dst, size_t len)
{
	while (len) {
		uint32_t pos = (uint32_t)(at & (r->cap - 1));
		size_t take = r->cap - pos < len ? r->cap - pos : len;
		memcpy(dst, r->rx_data + pos, take);
		dst += take;
		at += take;
		len -= take;
	}
}

long rcci_shm_ring_readv(struct shm_ring *r, const struct iovec *iov, int n)
{
	uint64_t head = atomic_load_explicit(&r->rx_head, memory_order_relaxed);
	long have = rx_avail(r);
	size_t done = 0;

	if (have < 0)
		return have;
	for (int i = 0; i < n && have > 0; i++) {
		size_t len = iov[i].iov_len < (size_t)have ? iov[i].iov_len : (size_t)have;
		copy_out(r, head + done, iov[i].iov_base, len);
		done += len;
		have -= (long)len;
	}
	if (done) {
		atomic_store_explicit(&r->rx_head, head + done, memory_order_relaxed);
		tsan_release(r);
		atomic_store_explicit(&r->rx->head, head + done, memory_order_release);
	}
	return (long)done;
}

size_t rcci_shm_ring_peek(const struct shm_ring *r, size_t have, size_t skip, void *buf, size_t len)
{
	if (have > r->cap)
		have = r->cap;
	if (skip >= have)
		return 0;
	if (len > have - skip)
		len = have - skip;
	copy_out(r, atomic_load_explicit(&r->rx_head, memory_order_relaxed) + skip, buf, len);
	return len;
}

/* Dekker: our index store, a full fence, then the other side's flag. The
 * other side sets its flag, fences, then re-reads our index: one of the two
 * sees the other. */
bool rcci_shm_ring_wake_consumer(struct shm_ring *r)
{
	atomic_thread_fence(memory_order_seq_cst);
	if (!atomic_load_explicit(&r->tx->sleeping, memory_order_relaxed))
		return false;
	return atomic_exchange_explicit(&r->tx->sleeping, 0, memory_order_relaxed) != 0;
}

bool rcci_shm_ring_wake_producer(struct shm_ring *r)
{
	atomic_thread_fence(memory_order_seq_cst);
	if (!atomic_load_explicit(&r->rx->space_wait, memory_order_relaxed))
		return false;
	return atomic_exchange_explicit(&r->rx->space_wait, 0, memory_order_relaxed) != 0;
}

bool rcci_shm_ring_arm(struct shm_ring *r)
{
	atomic_store_explicit(&r->rx->sleeping, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	return rcci_shm_ring_rx_ready(r);
}

bool rcci_shm_ring_arm_tx(struct shm_ring *r)
{
	return wait_for_room(r, atomic_load_explicit(&r->tx_need, memory_order_relaxed)) != 0;
}

bool rcci_shm_ring_rx_ready(const struct shm_ring *r) { return rx_avail(r) != 0; }

long rcci_shm_ring_rx_avail(const struct shm_ring *r) { return rx_avail(r); }

bool rcci_shm_ring_tx_room(const struct shm_ring *r)
{
	long need = (long)atomic_load_explicit(&r->tx_need, memory_order_relaxed);
	uint64_t used = atomic_load_explicit(&r->tx_tail, memory_order_relaxed) -
			atomic_load_explicit(&r->tx_head_seen, memory_order_relaxed);

	if (used <= r->cap && (long)(r->cap - used) >= need)
		return true; /* no look at the peer's line (tx_room_for) */
	long room = tx_room(r);
	return room < 0 || room >= need;
}

int rcci_shm_ring_cap_env(uint32_t *cap)
{
	unsigned long kib;
	int rc = rcci_env_ulong("RCC_SHM_RING_KIB", 0, SHM_RING_MAX / 1024u, &kib);

	if (rc == -ENOENT)
		*cap = SHM_RING_DEFAULT;
	else if (!rc && shm_cap_ok((uint32_t)kib * 1024u))
		*cap = (uint32_t)kib * 1024u;
	else
		return -EINVAL;
	return 0;
}
