/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Mapped transfers on the shared-memory path: a region registered with
 * remote access on memory from rcc_mem_alloc() (a sealed memfd) is published
 * by the target in its part of the shared header (rkey, the memfd's number
 * in the target, inode, offset, address, length, access, and a control word
 * generation << 1 | live). The initiator takes the descriptor with
 * pidfd_getfd() (the same ptrace permission cross-memory attach needs),
 * checks it (a memfd sealed against shrinking, large enough, the inode
 * published), maps it once and caches the mapping; a large WRITE or READ to
 * the region is then one memcpy by the initiator, and a zero-length WRITE
 * frame keeps the request's place in msn order (docs/shm.md, "Mapped
 * transfers").
 *
 * The deregistration guarantee, as for single copy (shm_cma.h) with the
 * roles turned: the initiator sets busy, fences, checks live with the
 * generation it mapped, copies, clears busy; rcc_mr_dereg() clears live,
 * fences and waits while the peer is busy (Dekker).
 *
 * Everything in the header is the peer's to scribble: a lie makes only the
 * liar's own requests take the ring (or fail there).
 */
#ifndef RCC_TCP_SHM_MAP_H
#define RCC_TCP_SHM_MAP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* Where the mapped-transfer part of the shared header starts, and how many
 * regions each side publishes (the rest take the ring). */
#define SHM_MAP_HDR_OFF 4096u
#define SHM_MAP_ENTS 31
/* Requests of this many bytes and more are copied through the mapping
 * (RCC_SHM_MAP_MIN overrides it). Measured (docs/shm.md): one copy beat the
 * ring's two from 512 B up, in latency and bandwidth; below 1 KiB the
 * lookup is not worth it (and up to 256 B a request is usually inline). */
#define SHM_MAP_MIN_DEFAULT 1024u

/* One published region (written by the target only). */
struct shm_map_ent {
	_Alignas(64) _Atomic uint64_t ctl; /* generation << 1 | live */
	_Atomic uint32_t rkey;
	_Atomic uint32_t access;
	_Atomic int32_t fd; /* the memfd's number in the target */
	_Atomic uint32_t reserved;
	_Atomic uint64_t ino;  /* the memfd's inode */
	_Atomic uint64_t off;  /* of the region's first byte in the memfd */
	_Atomic uint64_t addr; /* the region's first byte in the target */
	_Atomic uint64_t len;
};

/* One side's part: its regions (as a target), its busy flag (as an
 * initiator: set around each copy into or out of the peer's memory). */
struct shm_map_side {
	_Alignas(64) _Atomic uint32_t busy;
	struct shm_map_ent ent[SHM_MAP_ENTS];
};

struct shm_map_hdr {
	struct shm_map_side side[2];
};

/* A peer's region as this side mapped it (private). */
struct shm_map_cache {
	uint64_t ctl; /* the entry's word when mapped; 0: nothing cached */
	uint32_t rkey;
	unsigned access;
	bool bad;      /* the entry did not check out: the ring, until it changes */
	uint8_t *base; /* where the region's first byte is in our mapping */
	void *map;
	size_t map_len;
	uint64_t addr, len;
};

/* One endpoint's private state (never read back from the region). */
struct shm_map {
	struct shm_map_side *mine, *peer;
	bool on;      /* RCC_SHM_MAP is not 0: publish, and map the peer's */
	bool refused; /* the kernel said no to pidfd_getfd: the ring */
	uint32_t min; /* the smallest request copied through a mapping */
	int pidfd;    /* the peer, from the Unix connection's SO_PEERCRED */
	/* As target: the key of the region in each of our entries (0: free),
	 * and each entry's generation; withdrawn once the endpoint left
	 * service (nothing is published any more). Under ctx->cma_lock. */
	uint32_t keys[SHM_MAP_ENTS];
	uint32_t gen[SHM_MAP_ENTS];
	bool withdrawn;
	/* As initiator: under tx_lock. */
	struct shm_map_cache cache[SHM_MAP_ENTS];
	uint64_t wait_ns;        /* how long a deregistration waits for the peer's copy */
	_Atomic uint64_t copies; /* statistics (tests): requests we copied */
};

/* The view of a mapped region's header; nothing published, nothing mapped. */
void rcci_shm_map_init(struct shm_map *m, void *map, bool accepter);
/* Whether mapped transfers are switched on (RCC_SHM_MAP, default 1). */
bool rcci_shm_map_enabled(void);
/* Open a pidfd of the peer at the other end of bell (once the connection is
 * up). A failure leaves mapping off for our requests (logged). */
void rcci_shm_map_start(struct shm_map *m, int bell, const char *peer);
/* Unmap every cached mapping and close the pidfd. */
void rcci_shm_map_close(struct shm_map *m);

/* Target: publish a region (key, [addr, addr+len) at off in memfd fd of
 * inode ino, access). false: no free entry, or withdrawn (the ring serves
 * it). Caller holds cma_lock. */
bool rcci_shm_map_offer(struct shm_map *m, uint32_t key, int fd, uint64_t ino, uint64_t off,
			uint64_t addr, uint64_t len, unsigned access);
/* Target: revoke the entries of key (all when key is 0), fence, wait
 * (bounded by wait_ns) until the peer copies no more. false: it stayed
 * busy (the connection must then fail). Caller holds cma_lock. */
bool rcci_shm_map_revoke(struct shm_map *m, uint32_t key);
/* Target: the endpoint leaves service. Every entry revoked as above and
 * nothing published any more, as a QP in error takes no RDMA. false: as
 * rcci_shm_map_revoke. Caller holds cma_lock. */
bool rcci_shm_map_withdraw(struct shm_map *m);
/* Target: the peer is inside a copy into or out of our regions (its busy
 * flag), one look. */
bool rcci_shm_map_peer_busy(const struct shm_map *m);

/* Initiator: copy len bytes between the peer's region (rkey, raddr) and
 * the local pieces iov (n), into the peer (write) or out of it. 0: done;
 * -ENOENT: not mappable (not published, lying, refused, out of bounds, no
 * access, revoked): the ring carries the request instead. Caller holds
 * tx_lock and mr_lock's read side (the local pieces checked). */
int rcci_shm_map_copy(struct shm_map *m, uint32_t rkey, uint64_t raddr, const struct iovec *iov,
		      int n, uint64_t len, bool write);

#endif
