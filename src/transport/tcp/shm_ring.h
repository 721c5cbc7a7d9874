/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shared-memory byte stream of a same-host tcp endpoint: two
 * single-producer single-consumer byte rings in one shared region, one per
 * direction. They replace only the socket's byte transport; the frames, their
 * checks and every RC rule stay those of the tcp transport (see docs/shm.md).
 *
 * The region is shared with another process, which may write anything into
 * it at any time: every index read from it is checked against the ring's
 * capacity before use, read once, and never trusted for our own position
 * (each side keeps its own index privately and only publishes it).
 *
 * Layout (the accepting side creates it; all offsets are fixed):
 *   0     header: dir[0] (accepter -> connector), dir[1] (connector -> accepter)
 *   1024  the single-copy part of the header (shm_cma.h)
 *   4096  the mapped-transfer part of the header (shm_map.h)
 *   8192  ring of dir[0], cap bytes
 *   8192+cap  ring of dir[1], cap bytes
 */
#ifndef RCC_TCP_SHM_RING_H
#define RCC_TCP_SHM_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "shm_cma.h"
#include "shm_map.h"

#define SHM_HDR_SIZE 8192u
#define SHM_RING_MIN (4u * 1024u)
#define SHM_RING_MAX (64u * 1024u * 1024u)
#define SHM_RING_DEFAULT (256u * 1024u)
#define SHM_TSAN_KEYS 64
/*
 * The layout's number, which the ACCEPT carries (wire.h): the offsets above,
 * the header's structures (shm_dir below, shm_cma.h's slots, shm_map.h's
 * table) and the rules both sides follow in them. Any change of these takes
 * the next number: two rcc builds on one host that lay the region out
 * differently then stay on the socket instead of misreading each other's
 * memory. 0: every build since the region travels as a sealed memfd.
 */
#define SHM_LAYOUT 0u

/* Control words of one direction. The producer writes tail and space_wait
 * (sets it); the consumer writes head and sleeping (sets it); the other side
 * only clears a flag it found set. Separate cache lines: no false sharing. */
struct shm_dir {
	_Alignas(64) _Atomic uint64_t tail; /* bytes ever produced */
	_Atomic uint32_t space_wait;        /* the producer waits for room */
	_Alignas(64) _Atomic uint64_t head; /* bytes ever consumed */
	_Atomic uint32_t sleeping;          /* the consumer is going to sleep */
};

struct shm_hdr {
	struct shm_dir dir[2];
};

/* One side's view of a mapped region. */
struct shm_ring {
	void *map;
	size_t map_len;
	uint32_t cap; /* per direction, a power of two */
	struct shm_dir *tx, *rx;
	uint8_t *tx_data, *rx_data;
	/* Private positions, never read back from the region. Written only by
	 * their side's stream calls (tx_lock, rx_lock); atomic because the
	 * progress thread's readiness checks read them without those locks. */
	_Atomic uint64_t tx_tail; /* what we produced */
	_Atomic uint64_t rx_head; /* what we consumed */
	/* The consumer's head as we last loaded it (checked then): the room it
	 * leaves is a lower bound of the room there is, so a write that fits
	 * in it needs no look at the peer's line -- a cache miss the consumer
	 * causes with every read, otherwise paid before every frame is
	 * published. Written only under tx_lock (rcci_shm_ring_write and
	 * _reserve): a readiness check that stored an older head could make
	 * tail - head exceed cap. */
	_Atomic uint64_t tx_head_seen;
	/* Room the producer last waited for (rcci_shm_ring_reserve): the ring
	 * counts as writable only once that much is free. Under tx_lock; read
	 * by the readiness checks. */
	_Atomic uint32_t tx_need;
	/* ThreadSanitizer only: the two ends of a connection inside one process
	 * map the region at different addresses, so TSan cannot see that the
	 * index stores and loads synchronise them; they name one key instead
	 * (the same on both ends: taken from the region's name). */
	unsigned tsan_key;
	/* Single-copy transfers over this region (shm_cma.h). */
	struct shm_cma cma;
	/* Mapped transfers over this region (shm_map.h). */
	struct shm_map mapped;
};

/* The region's size for a ring capacity. */
static inline size_t shm_region_len(uint32_t cap) { return SHM_HDR_SIZE + 2 * (size_t)cap; }

/* Whether cap is an acceptable ring capacity (peer input: checked). */
static inline bool shm_cap_ok(uint32_t cap)
{
	return cap >= SHM_RING_MIN && cap <= SHM_RING_MAX && (cap & (cap - 1)) == 0;
}

/* The ring capacity an accepting side offers (the connecting side takes
 * what it is offered): RCC_SHM_RING_KIB, a power of two from 4 to 65536
 * KiB, or SHM_RING_DEFAULT when unset or empty. 0, or -EINVAL when the
 * variable holds anything else (*cap then unchanged). */
int rcci_shm_ring_cap_env(uint32_t *cap);

/* Set up the view of a mapped region of shm_region_len(cap) bytes; the
 * accepter (accepter true) produces into dir[0]. */
void rcci_shm_ring_init(struct shm_ring *r, void *map, uint32_t cap, bool accepter);

/* A fresh region (its creator, before the peer may see it): both consumers
 * count as asleep, so the first bytes either side writes ring the doorbell
 * even if the other end has not started watching its ring yet. */
void rcci_shm_ring_fresh(struct shm_ring *r);

/* Copy up to the free room from iov into the ring: bytes taken (0 when
 * full), or -EPROTO when the peer's index is impossible. A producer that
 * will not come back by itself arms the room before it sleeps
 * (rcci_shm_ring_arm_tx). */
long rcci_shm_ring_write(struct shm_ring *r, const struct iovec *iov, int n);
/* Room for at least need bytes (at most cap): a room known free, no less
 * than need and no more than the free room (counted from the consumer's
 * head as last seen, which may be behind: loaded again only when that
 * leaves too little), or 0 when less is free (the room to arm is then that
 * much), or -EPROTO when the peer's index is impossible. Lets the caller
 * hand the ring whole frames only. */
long rcci_shm_ring_reserve(struct shm_ring *r, size_t need);
/* Copy up to what is there into iov: bytes (0 when empty) or -EPROTO. */
long rcci_shm_ring_readv(struct shm_ring *r, const struct iovec *iov, int n);

/* Bytes waiting to be read (no side effect), or -EPROTO when the peer's
 * index is impossible. */
long rcci_shm_ring_rx_avail(const struct shm_ring *r);
/* Copy up to len bytes, from byte skip on, of the first have bytes waiting
 * (a count rcci_shm_ring_rx_avail() gave since our last read; the peer's
 * index is not loaded again) into buf, consuming none: bytes copied. The
 * peer may change them before they are read: whatever a peek finds is a
 * hint, never trusted. */
size_t rcci_shm_ring_peek(const struct shm_ring *r, size_t have, size_t skip, void *buf,
			  size_t len);

/* After a write that moved bytes: whether the consumer said it sleeps (the
 * flag is then cleared and the caller must ring the doorbell). */
bool rcci_shm_ring_wake_consumer(struct shm_ring *r);
/* After a read that moved bytes: whether the producer waits for room (then
 * cleared; the caller rings the doorbell). */
bool rcci_shm_ring_wake_producer(struct shm_ring *r);
/* Announce that the consumer is going to sleep; then whether bytes are
 * already there (do not sleep then). */
bool rcci_shm_ring_arm(struct shm_ring *r);
/* Announce that a blocked producer's transmit will not come back by itself
 * (its thread sleeps, or the progress thread is to do it), so the
 * consumer's next read rings for us; then whether there is room already, as
 * much as the producer last waited for (do not sleep then). */
bool rcci_shm_ring_arm_tx(struct shm_ring *r);
/* Whether bytes wait to be read, or the peer's index is impossible (the read
 * reports it). No side effect. */
bool rcci_shm_ring_rx_ready(const struct shm_ring *r);
/* Whether the ring we produce into has room, as much as the producer last
 * waited for (rcci_shm_ring_reserve), or is broken. */
bool rcci_shm_ring_tx_room(const struct shm_ring *r);

#endif
