/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Single-copy transfers on the shared-memory path (cross-memory attach): a
 * large WRITE's payload is pulled by the target from the initiator's source
 * with process_vm_readv(), a large READ's data pushed by the target into the
 * initiator's destination with process_vm_writev(). The target copies under
 * its own mr_lock, so its side of the deregistration guarantee holds as on
 * the ring; the initiator's buffer is guarded by a slot in the shared header
 * (one per outstanding single-copy request): the initiator makes it "live",
 * the copier sets "busy", fences, checks "live", copies, clears "busy";
 * rcc_mr_dereg() clears "live" in every slot naming the region, fences and
 * waits while "busy" (Dekker: docs/shm.md, "Single-copy transfers").
 *
 * Everything in the shared header is the peer's to scribble: slot indices,
 * generations, addresses and lengths are checked; a lying peer can make its
 * own requests fail, or delay a deregistration by at most its timeout.
 */
#ifndef RCC_TCP_SHM_CMA_H
#define RCC_TCP_SHM_CMA_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

/* Requests of this many bytes and more go single-copy (docs/shm.md, Figures:
 * below it the ring's two copies cost less than the system call). */
#define SHM_CMA_MIN (64u * 1024u)
#define SHM_CMA_SLOTS 32
#define SHM_CMA_MAX_IOV 16
/* The descriptor a single-copy request carries as its frame's payload:
 * u32 slot, u32 generation, u32 count, u32 reserved=0, then count x (u64
 * address, u64 length) of the initiator's buffer. */
#define SHM_CMA_DESC_HDR 16u
#define SHM_CMA_DESC_MAX (SHM_CMA_DESC_HDR + 16u * SHM_CMA_MAX_IOV)
/* Where the single-copy part of the shared header starts (after the rings'
 * control words, shm_ring.h). */
#define SHM_CMA_HDR_OFF 1024u

/* One outstanding single-copy request of the side owning the slot. ctl:
 * generation << 1 | live, written by the owner (the initiator); busy: set by
 * the copier (the peer) around each copy. */
struct shm_cma_slot {
	_Atomic uint64_t ctl;
	_Atomic uint32_t busy;
	uint32_t reserved[5];
};

/* One side's part of the header (side 0: the accepter, 1: the connector). */
struct shm_cma_side {
	/* Where this side's probe cookie lies in its own memory, and its value
	 * (written before the peer may look). */
	_Alignas(64) _Atomic uint64_t cookie_addr;
	_Atomic uint64_t cookie_val;
	/* This side can read and write the other's memory: send it single-copy
	 * requests. */
	_Atomic uint32_t pulls;
	_Alignas(64) struct shm_cma_slot slot[SHM_CMA_SLOTS];
};

struct shm_cma_hdr {
	struct shm_cma_side side[2];
};

/* One endpoint's private single-copy state (never read back from the
 * region). */
struct shm_cma {
	struct shm_cma_side *mine; /* our slots, our cookie, our "pulls" */
	struct shm_cma_side *peer; /* the peer's: we copy for the slots there */
	bool pull;                 /* the probe passed: we copy for the peer */
	bool send;                 /* the switch is on: we may ask the peer to copy */
	pid_t pid;                 /* the peer (SO_PEERCRED), when pull */
	int pidfd;                 /* held while pull: a reused pid is never copied */
	uint32_t used;             /* tx_lock: slots given to requests */
	/* Slots whose live flag a deregistration (or the endpoint's end) cleared:
	 * their request fails as a local protection error. */
	_Atomic uint32_t killed;
	uint32_t gen[SHM_CMA_SLOTS];
	/* Keys of the regions each slot's request names; written only under
	 * mr_lock's read side with tx_lock, read under its write side. */
	uint8_t nkeys[SHM_CMA_SLOTS];
	uint32_t keys[SHM_CMA_SLOTS][SHM_CMA_MAX_IOV];
	uint64_t wait_ns; /* how long a wait for a busy copier may last */
	/* Statistics (tests): single-copy requests copied for the peer. */
	_Atomic uint64_t copies;
};

/* The view of a mapped region's single-copy header; accepter as for the
 * ring. No copy in either direction until publish/probe say so. */
void rcci_shm_cma_init(struct shm_cma *c, void *map, bool accepter);
/* Whether single copy is switched on (RCC_SHM_CMA=1; default off). */
bool rcci_shm_cma_enabled(void);
/* Publish our probe cookie (before the peer may look at the region). */
void rcci_shm_cma_publish(struct shm_cma *c);
/* Probe the peer at the other end of the Unix connection bell (its pid from
 * SO_PEERCRED): read its cookie, write into it; on success hold a pidfd and
 * announce that we copy for it. A failure leaves single copy off for
 * requests the peer sends us (logged, never an error). */
void rcci_shm_cma_probe(struct shm_cma *c, int bell, const char *peer);
/* Release what the probe holds (the pidfd). */
void rcci_shm_cma_close(struct shm_cma *c);

/* Whether the peer copies for our requests. */
static inline bool shm_cma_peer_pulls(const struct shm_cma *c)
{
	return c->send && c->peer && atomic_load_explicit(&c->peer->pulls, memory_order_relaxed);
}

/* Give a request a slot: the slot (>= 0) or -1 when none is free. Its keys
 * are those of the n regions the buffer lies in; made live now. Caller holds
 * tx_lock and mr_lock's read side. */
int rcci_shm_cma_claim(struct shm_cma *c, const uint32_t *keys, int n);
/* The request of slot s completed: nobody may copy for it any more. */
void rcci_shm_cma_release(struct shm_cma *c, int s);
/* The descriptor of slot s over iov (n entries): its length. */
uint32_t rcci_shm_cma_desc(const struct shm_cma *c, int s, const struct iovec *iov, int n,
			   uint8_t out[SHM_CMA_DESC_MAX]);

/* A peer's descriptor (bytes it wrote into a frame: hostile, fuzzed by
 * fuzz_shm) as the peer buffer's iov entries, checked: a slot below
 * SHM_CMA_SLOTS, 1..SHM_CMA_MAX_IOV entries whose lengths add up to len
 * exactly. 0 or -EPROTO; the outputs are meaningful only on 0. */
int rcci_shm_cma_desc_decode(const uint8_t *desc, uint32_t desc_len, uint64_t len, uint32_t *slot,
			     uint32_t *gen, struct iovec *iov, int *n);

/* The copier: carry out a peer's single-copy request described by desc,
 * between local (len bytes of our memory, checked by the caller under its
 * mr_lock) and the peer's buffer: pull (readv) or push (writev). 0, -EPROTO
 * (a malformed descriptor), -EACCES (the peer's buffer is no longer live:
 * deregistered), -ESRCH (the peer is gone), -EFAULT (the kernel refused). */
int rcci_shm_cma_copy(struct shm_cma *c, const uint8_t *desc, uint32_t desc_len, void *local,
		      uint64_t len, bool push);

/* Clear live in the slots of mask, then wait (bounded by wait_ns) until no
 * copier is inside any of them. false: one stayed busy (the connection
 * must then fail). */
bool rcci_shm_cma_kill(struct shm_cma *c, uint32_t mask);
/* Its two halves: clear live (and fence); wait while busy (a copier that
 * passed the live check before the clear). Busy is the copier's alone, so
 * a slot reused in between is waited for too, never too little. */
void rcci_shm_cma_revoke(struct shm_cma *c, uint32_t mask);
bool rcci_shm_cma_wait(struct shm_cma *c, uint32_t mask);
/* The peer is inside a copy for one of our slots (its busy flag), one look. */
bool rcci_shm_cma_peer_busy(const struct shm_cma *c);
/* The slots whose request names key. Caller holds mr_lock's write side. */
uint32_t rcci_shm_cma_slots_of(const struct shm_cma *c, uint32_t key);

#endif
