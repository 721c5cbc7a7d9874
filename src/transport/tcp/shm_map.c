/* SPDX-License-Identifier: BSD-3-Clause */
/* Mapped transfers on the shared-memory path (shm_map.h, docs/shm.md). */
#include "shm_map.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/env.h"
#include "base/log.h"
#include "rcc/rcc.h"
#include "rcc/util.h"
#include "shm_busy.h"
#include "shm_ring.h"

#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

_Static_assert(SHM_MAP_HDR_OFF >= SHM_CMA_HDR_OFF + sizeof(struct shm_cma_hdr),
	       "after the single-copy header");
_Static_assert(SHM_MAP_HDR_OFF + sizeof(struct shm_map_hdr) <= SHM_HDR_SIZE,
	       "the mapped-transfer header fits the header pages");

bool rcci_shm_map_enabled(void)
{
	unsigned long on = 1; /* kept when unset or refused */
	if (rcci_env_ulong("RCC_SHM_MAP", 0, 1, &on) == -EINVAL)
		log_warn("RCC_SHM_MAP=%s is neither 0 nor 1: mapped transfers stay on",
			 getenv("RCC_SHM_MAP"));
	return on;
}

void rcci_shm_map_init(struct shm_map *m, void *map, bool accepter)
{
	struct shm_map_hdr *h = (struct shm_map_hdr *)((uint8_t *)map + SHM_MAP_HDR_OFF);
	int me = accepter ? 0 : 1;
	unsigned long min = SHM_MAP_MIN_DEFAULT;

	memset(m, 0, sizeof(*m));
	m->mine = &h->side[me];
	m->peer = &h->side[1 - me];
	m->pidfd = -1;
	m->on = rcci_shm_map_enabled();
	if (rcci_env_ulong("RCC_SHM_MAP_MIN", 1, 1ul << 30, &min) == -EINVAL)
		log_warn("RCC_SHM_MAP_MIN=%s is not a size from 1 to 2^30: %u it is",
			 getenv("RCC_SHM_MAP_MIN"), SHM_MAP_MIN_DEFAULT);
	m->min = (uint32_t)min;
	m->wait_ns = 5000000000ull;
}

void rcci_shm_map_start(struct shm_map *m, int bell, const char *peer)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (!m->on)
		return;
	if (getsockopt(bell, SOL_SOCKET, SO_PEERCRED, &cr, &len) || len != sizeof(cr) ||
	    cr.pid <= 0) {
		m->refused = true;
		log_info("%s: mapped transfers not possible (the peer's pid is not visible): the "
			 "ring copies",
			 peer);
		return;
	}
	m->pidfd = (int)syscall(SYS_pidfd_open, cr.pid, 0);
	if (m->pidfd < 0) {
		m->refused = true;
		log_info("%s: mapped transfers not possible (pidfd_open: %s): the ring copies",
			 peer, rcc_strerror(-errno));
	}
}

static void cache_drop(struct shm_map_cache *c)
{
	if (c->map)
		munmap(c->map, c->map_len);
	memset(c, 0, sizeof(*c));
}

void rcci_shm_map_close(struct shm_map *m)
{
	for (int e = 0; e < SHM_MAP_ENTS; e++)
		cache_drop(&m->cache[e]);
	if (m->pidfd >= 0)
		close(m->pidfd);
	m->pidfd = -1;
}

bool rcci_shm_map_offer(struct shm_map *m, uint32_t key, int fd, uint64_t ino, uint64_t off,
			uint64_t addr, uint64_t len, unsigned access)
{
	struct shm_map_ent *x;
	int e;

	if (!m->on || !m->mine || m->withdrawn)
		return false;
	for (e = 0; e < SHM_MAP_ENTS && m->keys[e]; e++)
		;
	if (e == SHM_MAP_ENTS)
		return false; /* every entry taken: this region keeps the ring */
	x = &m->mine->ent[e];
	m->keys[e] = key;
	m->gen[e]++;
	/* The entry is not live (never was, or revoked): the peer ignores
	 * these fields until the release below makes them a new generation. */
	atomic_store_explicit(&x->rkey, key, memory_order_relaxed);
	atomic_store_explicit(&x->access, access, memory_order_relaxed);
	atomic_store_explicit(&x->fd, fd, memory_order_relaxed);
	atomic_store_explicit(&x->ino, ino, memory_order_relaxed);
	atomic_store_explicit(&x->off, off, memory_order_relaxed);
	atomic_store_explicit(&x->addr, addr, memory_order_relaxed);
	atomic_store_explicit(&x->len, len, memory_order_relaxed);
	atomic_store_explicit(&x->ctl, (uint64_t)m->gen[e] << 1 | 1, memory_order_release);
	return true;
}

bool rcci_shm_map_revoke(struct shm_map *m, uint32_t key)
{
	bool any = false;

	if (!m->mine)
		return true;
	for (int e = 0; e < SHM_MAP_ENTS; e++) {
		if (!m->keys[e] || (key && m->keys[e] != key))
			continue;
		atomic_fetch_and_explicit(&m->mine->ent[e].ctl, ~(uint64_t)1, memory_order_relaxed);
		m->keys[e] = 0;
		any = true;
	}
	if (!any)
		return true;
	/* Dekker with rcci_shm_map_copy: either the copier sees live cleared,
	 * or we see its busy and wait for its copy to end. */
	atomic_thread_fence(memory_order_seq_cst);
	return rcci_shm_busy_wait(&m->peer->busy, rcc_now_ns() + m->wait_ns, m->pidfd);
}

bool rcci_shm_map_withdraw(struct shm_map *m)
{
	m->withdrawn = true;
	return rcci_shm_map_revoke(m, 0);
}

bool rcci_shm_map_peer_busy(const struct shm_map *m)
{
	return m->peer && atomic_load_explicit(&m->peer->busy, memory_order_acquire);
}

/* Map entry e of the peer, whose word read ctl (live): its fields checked
 * (hostile input), its descriptor taken and checked. 0, or -ENOENT (the
 * entry changed meanwhile: try again later) or another negative errno (it
 * does not check out). Out of line (the slow path, once per region): gcc
 * refuses a fence inlined into its callers under -fsanitize=thread. */
static __attribute__((noinline)) int map_entry(struct shm_map *m, int e, uint64_t ctl,
					       struct shm_map_cache *c)
{
	const struct shm_map_ent *x = &m->peer->ent[e];
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uint32_t rkey = atomic_load_explicit(&x->rkey, memory_order_relaxed);
	uint32_t access = atomic_load_explicit(&x->access, memory_order_relaxed);
	int32_t fd = atomic_load_explicit(&x->fd, memory_order_relaxed);
	uint64_t ino = atomic_load_explicit(&x->ino, memory_order_relaxed);
	uint64_t off = atomic_load_explicit(&x->off, memory_order_relaxed);
	uint64_t addr = atomic_load_explicit(&x->addr, memory_order_relaxed);
	uint64_t len = atomic_load_explicit(&x->len, memory_order_relaxed);
	struct stat st;
	int seals;

	/* Seqlock: the fields belong to ctl only if it did not move. */
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&x->ctl, memory_order_relaxed) != ctl)
		return -ENOENT;
	if (fd < 0 || !len || addr + len < addr || off + len < off || off + len > SIZE_MAX / 2)
		return -EINVAL;
	int gfd = (int)syscall(SYS_pidfd_getfd, m->pidfd, fd, 0);
	if (gfd < 0) {
		int rc = -errno;
		if (rc == -EPERM || rc == -ENOSYS || rc == -EACCES) {
			m->refused = true;
			log_info("mapped transfers not possible (pidfd_getfd: %s): the ring copies",
				 rcc_strerror(rc));
		}
		return rc == -ENOENT ? -EBADF : rc;
	}
	/* A regular file, the inode published, as large as the region claims,
	 * sealed against shrinking: nobody can truncate it under our mapping
	 * (a touch beyond the end of a shared file raises SIGBUS). */
	seals = fcntl(gfd, F_GET_SEALS);
	if (fstat(gfd, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_ino != ino ||
	    (uint64_t)st.st_size < off + len || seals < 0 || !(seals & F_SEAL_SHRINK)) {
		close(gfd);
		return -EINVAL;
	}
	uint64_t moff = off & ~(uint64_t)(page - 1);
	size_t mlen = (size_t)(((off + len + page - 1) & ~(uint64_t)(page - 1)) - moff);
	int prot = PROT_READ | (access & RCC_ACCESS_REMOTE_WRITE ? PROT_WRITE : 0);
	void *p = mmap(NULL, mlen, prot, MAP_SHARED, gfd, (off_t)moff);
	close(gfd);
	if (p == MAP_FAILED)
		return -errno;
	c->ctl = ctl;
	c->rkey = rkey;
	c->access = access;
	c->base = (uint8_t *)p + (off - moff);
	c->map = p;
	c->map_len = mlen;
	c->addr = addr;
	c->len = len;
	return 0;
}

/* The live entry of the peer's that publishes rkey, mapped: its index, or
 * -1 (none, or it does not check out: the ring). */
static int lookup(struct shm_map *m, uint32_t rkey)
{
	/* The usual case first: a region mapped before, its entry unchanged
	 * (one load of shared memory, not one per entry). */
	for (int e = 0; e < SHM_MAP_ENTS; e++) {
		const struct shm_map_cache *c = &m->cache[e];
		if (c->ctl && c->rkey == rkey &&
		    atomic_load_explicit(&m->peer->ent[e].ctl, memory_order_acquire) == c->ctl)
			return c->bad ? -1 : e;
	}
	for (int e = 0; e < SHM_MAP_ENTS; e++) {
		const struct shm_map_ent *x = &m->peer->ent[e];
		uint64_t ctl = atomic_load_explicit(&x->ctl, memory_order_acquire);
		struct shm_map_cache *c = &m->cache[e];

		if (!(ctl & 1) || atomic_load_explicit(&x->rkey, memory_order_relaxed) != rkey)
			continue;
		if (c->ctl == ctl)
			return c->bad ? -1 : e;
		cache_drop(c); /* a generation we no longer need */
		int rc = map_entry(m, e, ctl, c);
		if (rc == -ENOENT || m->refused)
			return -1; /* changed under us, or no mapping at all: not cached */
		if (rc) {
			c->ctl = ctl; /* checked once: the ring until the entry changes */
			c->rkey = rkey;
			c->bad = true;
			return -1;
		}
		return e;
	}
	return -1;
}

int rcci_shm_map_copy(struct shm_map *m, uint32_t rkey, uint64_t raddr, const struct iovec *iov,
		      int n, uint64_t len, bool write)
{
	if (!m->on || m->refused || m->pidfd < 0 || !m->peer)
		return -ENOENT;
	int e = lookup(m, rkey);
	if (e < 0)
		return -ENOENT;
	const struct shm_map_cache *c = &m->cache[e];
	/* Our own checks of the target's bounds and access: the target never
	 * sees the request (a hostile initiator bypasses them anyway). */
	unsigned need = write ? RCC_ACCESS_REMOTE_WRITE : RCC_ACCESS_REMOTE_READ;
	if (raddr < c->addr || raddr - c->addr > c->len || len > c->len - (raddr - c->addr) ||
	    !(c->access & need))
		return -ENOENT; /* the ring: the target refuses it, as it should */
	uint8_t *p = c->base + (raddr - c->addr);

	/* Dekker with rcci_shm_map_revoke: busy, fence, look at the entry. */
	atomic_store_explicit(&m->mine->busy, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&m->peer->ent[e].ctl, memory_order_relaxed) != c->ctl) {
		atomic_store_explicit(&m->mine->busy, 0, memory_order_release);
		return -ENOENT; /* revoked: the ring, where the target refuses it */
	}
	for (int i = 0; i < n; i++) {
		if (write)
			memcpy(p, iov[i].iov_base, iov[i].iov_len);
		else
			memcpy(iov[i].iov_base, p, iov[i].iov_len);
		p += iov[i].iov_len;
	}
	atomic_store_explicit(&m->mine->busy, 0, memory_order_release);
	atomic_fetch_add_explicit(&m->copies, 1, memory_order_relaxed);
	return 0;
}
