/* SPDX-License-Identifier: BSD-3-Clause */
/* Single-copy transfers on the shared-memory path (shm_cma.h, docs/shm.md). */
#include "shm_cma.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/env.h"
#include "base/log.h"
#include "rcc/util.h"
#include "shm_busy.h"
#include "shm_ring.h"

_Static_assert(SHM_CMA_HDR_OFF >= sizeof(struct shm_hdr), "after the rings' control words");
_Static_assert(SHM_CMA_HDR_OFF + sizeof(struct shm_cma_hdr) <= SHM_HDR_SIZE,
	       "the single-copy header fits the header page");
_Static_assert(SHM_CMA_SLOTS <= 32, "slots are a 32-bit mask");

/* The probe's cookie: [0] a random value the peer reads, [1] a word it
 * writes. Process-wide and never freed, so a peer probing late (our side of
 * the connection gone already) still reads and writes memory that is ours
 * to give. */
static _Atomic uint64_t cookie[2];
static pthread_once_t cookie_once = PTHREAD_ONCE_INIT;

static void cookie_init(void)
{
	uint64_t v = 0;
	while (!v && getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
		v = (uint64_t)random() << 32 ^ (uint64_t)random();
	atomic_store(&cookie[0], v | 1);
}

bool rcci_shm_cma_enabled(void)
{
	/* Off unless asked for: on the 2-vCPU hosts measured, one copier's
	 * process_vm_readv/writev moved 1 MiB at about half the rate of the
	 * ring's two copies, which run on both CPUs at once (docs/shm.md). */
	unsigned long on = 0; /* kept when unset or refused */
	if (rcci_env_ulong("RCC_SHM_CMA", 0, 1, &on) == -EINVAL)
		log_warn("RCC_SHM_CMA=%s is neither 0 nor 1: single copy stays off",
			 getenv("RCC_SHM_CMA"));
	return on;
}

void rcci_shm_cma_init(struct shm_cma *c, void *map, bool accepter)
{
	struct shm_cma_hdr *h = (struct shm_cma_hdr *)((uint8_t *)map + SHM_CMA_HDR_OFF);
	int me = accepter ? 0 : 1;

	memset(c, 0, sizeof(*c));
	c->mine = &h->side[me];
	c->peer = &h->side[1 - me];
	c->pidfd = -1;
	c->send = rcci_shm_cma_enabled();
	c->wait_ns = 5000000000ull;
}

void rcci_shm_cma_publish(struct shm_cma *c)
{
	if (!c->send)
		return; /* switched off: the peer finds no cookie and copies nothing for us */
	pthread_once(&cookie_once, cookie_init);
	atomic_store_explicit(&c->mine->cookie_val, atomic_load(&cookie[0]), memory_order_relaxed);
	atomic_store_explicit(&c->mine->cookie_addr, (uint64_t)(uintptr_t)&cookie[0],
			      memory_order_release);
}

static int peer_pid(int bell, pid_t *pid)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(bell, SOL_SOCKET, SO_PEERCRED, &cr, &len) || len != sizeof(cr))
		return -errno;
	if (cr.pid <= 0)
		return -ESRCH; /* not visible in our pid namespace */
	*pid = cr.pid;
	return 0;
}

/* The process of pidfd has not exited (its pid is still the peer's). */
static bool peer_alive(int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };
	return poll(&p, 1, 0) == 0;
}

/* Read the peer's cookie and write its second word: both calls must work
 * (a seccomp filter may forbid one). 0 or a negative errno. */
static int probe(struct shm_cma *c, pid_t pid)
{
	uint64_t addr = atomic_load_explicit(&c->peer->cookie_addr, memory_order_acquire);
	uint64_t want = atomic_load_explicit(&c->peer->cookie_val, memory_order_relaxed);
	uint64_t got = 0;
	struct iovec l = { &got, sizeof(got) };
	struct iovec r = { (void *)(uintptr_t)addr, sizeof(got) };

	if (!addr || !want)
		return -ENOENT; /* the peer does not offer single copy */
	if (process_vm_readv(pid, &l, 1, &r, 1, 0) != (ssize_t)sizeof(got))
		return -errno ? -errno : -EIO;
	if (got != want)
		return -EPERM; /* not the process that published the cookie */
	r.iov_base = (void *)(uintptr_t)(addr + sizeof(uint64_t));
	if (process_vm_writev(pid, &l, 1, &r, 1, 0) != (ssize_t)sizeof(got))
		return -errno ? -errno : -EIO;
	return 0;
}

void rcci_shm_cma_probe(struct shm_cma *c, int bell, const char *peer)
{
	pid_t pid = 0;
	int fd = -1, rc;

	if (!c->send) {
		log_info("%s: single copy not switched on (RCC_SHM_CMA=1 does): the ring copies",
			 peer);
		return;
	}
	rc = peer_pid(bell, &pid);
	if (!rc) {
		/* Before the probe: the pidfd then names the process probed. */
		fd = (int)syscall(SYS_pidfd_open, pid, 0);
		if (fd < 0)
			rc = -errno;
	}
	if (!rc)
		rc = probe(c, pid);
	if (!rc && !peer_alive(fd))
		rc = -ESRCH;
	if (rc) {
		if (fd >= 0)
			close(fd);
		/* rcc_strerror() words ENOENT for addresses: say what it means here */
		log_info("%s: single copy for the peer's requests not possible (%s): the ring "
			 "copies",
			 peer,
			 rc == -ENOENT ? "the peer does not offer it (no RCC_SHM_CMA=1 there?)" :
					 rcc_strerror(rc));
		return;
	}
	c->pid = pid;
	c->pidfd = fd;
	c->pull = true;
	atomic_store_explicit(&c->mine->pulls, 1, memory_order_release);
	log_info("%s: single copy (cross-memory attach) for the peer's requests", peer);
}

void rcci_shm_cma_close(struct shm_cma *c)
{
	if (c->pull && c->pidfd >= 0)
		close(c->pidfd);
	c->pidfd = -1;
	c->pull = false;
}

int rcci_shm_cma_claim(struct shm_cma *c, const uint32_t *keys, int n)
{
	uint32_t free_slots = ~c->used;

	if (!free_slots || n > SHM_CMA_MAX_IOV)
		return -1;
	int s = __builtin_ctz(free_slots);
	c->used |= 1u << s;
	c->gen[s]++;
	c->nkeys[s] = (uint8_t)n;
	memcpy(c->keys[s], keys, (size_t)n * sizeof(*keys));
	atomic_fetch_and(&c->killed, ~(1u << s));
	/* Release: the descriptor naming this generation travels behind it. */
	atomic_store_explicit(&c->mine->slot[s].ctl, (uint64_t)c->gen[s] << 1 | 1,
			      memory_order_release);
	return s;
}

void rcci_shm_cma_release(struct shm_cma *c, int s)
{
	/* The peer answered (after its copy) or the endpoint left service (its
	 * slots were killed and waited out, rcci_shm_cma_kill). */
	atomic_fetch_and_explicit(&c->mine->slot[s].ctl, ~(uint64_t)1, memory_order_relaxed);
	c->used &= ~(1u << s);
}

uint32_t rcci_shm_cma_desc(const struct shm_cma *c, int s, const struct iovec *iov, int n,
			   uint8_t out[SHM_CMA_DESC_MAX])
{
	uint8_t *p = out + SHM_CMA_DESC_HDR;

	rcc_put_le32(out, (uint32_t)s);
	rcc_put_le32(out + 4, c->gen[s]);
	rcc_put_le32(out + 8, (uint32_t)n);
	rcc_put_le32(out + 12, 0);
	for (int i = 0; i < n; i++, p += 16) {
		rcc_put_le64(p, (uint64_t)(uintptr_t)iov[i].iov_base);
		rcc_put_le64(p + 8, iov[i].iov_len);
	}
	return (uint32_t)(p - out);
}

int rcci_shm_cma_desc_decode(const uint8_t *desc, uint32_t desc_len, uint64_t len, uint32_t *slot,
			     uint32_t *gen, struct iovec *iov, int *n)
{
	uint64_t sum = 0;

	if (desc_len < SHM_CMA_DESC_HDR)
		return -EPROTO;
	*slot = rcc_get_le32(desc);
	*gen = rcc_get_le32(desc + 4);
	uint32_t count = rcc_get_le32(desc + 8);
	if (*slot >= SHM_CMA_SLOTS || count == 0 || count > SHM_CMA_MAX_IOV ||
	    rcc_get_le32(desc + 12) || desc_len != SHM_CMA_DESC_HDR + 16u * count)
		return -EPROTO;
	for (uint32_t i = 0; i < count; i++) {
		const uint8_t *p = desc + SHM_CMA_DESC_HDR + 16u * i;
		uint64_t l = rcc_get_le64(p + 8);
		if (l > len - sum) /* sum <= len: no wrap, whatever len is */
			return -EPROTO;
		sum += l;
		iov[i].iov_base = (void *)(uintptr_t)rcc_get_le64(p);
		iov[i].iov_len = (size_t)l;
	}
	if (sum != len)
		return -EPROTO;
	*n = (int)count;
	return 0;
}

int rcci_shm_cma_copy(struct shm_cma *c, const uint8_t *desc, uint32_t desc_len, void *local,
		      uint64_t len, bool push)
{
	struct iovec remote[SHM_CMA_MAX_IOV];
	struct iovec l = { local, (size_t)len };
	uint32_t s, gen;
	int n, rc;

	if (!c->pull)
		return -EPROTO; /* we never offered to copy */
	rc = rcci_shm_cma_desc_decode(desc, desc_len, len, &s, &gen, remote, &n);
	if (rc)
		return rc;
	struct shm_cma_slot *slot = &c->peer->slot[s];
	/* Dekker with rcci_shm_cma_kill: busy, fence, look at live. Either we
	 * see live cleared, or the deregistration sees busy and waits. */
	atomic_store_explicit(&slot->busy, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&slot->ctl, memory_order_relaxed) != ((uint64_t)gen << 1 | 1)) {
		rc = -EACCES;
	} else if (!peer_alive(c->pidfd)) {
		rc = -ESRCH; /* its pid may name another process by now */
	} else {
		ssize_t got = push ? process_vm_writev(c->pid, &l, 1, remote, (unsigned long)n, 0) :
				     process_vm_readv(c->pid, &l, 1, remote, (unsigned long)n, 0);
		rc = got == (ssize_t)len ? 0 : -EFAULT;
	}
	atomic_store_explicit(&slot->busy, 0, memory_order_release);
	/* What was read came from the peer only if it still lives now. */
	if (!rc && !push && !peer_alive(c->pidfd))
		rc = -ESRCH;
	if (!rc)
		atomic_fetch_add_explicit(&c->copies, 1, memory_order_relaxed);
	return rc;
}

/* Out of line: gcc refuses a fence inlined into its callers under
 * -fsanitize=thread. */
__attribute__((noinline)) void rcci_shm_cma_revoke(struct shm_cma *c, uint32_t mask)
{
	if (!mask || !c->mine)
		return;
	for (int s = 0; s < SHM_CMA_SLOTS; s++)
		if (mask & (1u << s))
			atomic_fetch_and_explicit(&c->mine->slot[s].ctl, ~(uint64_t)1,
						  memory_order_relaxed);
	atomic_fetch_or(&c->killed, mask);
	atomic_thread_fence(memory_order_seq_cst);
}

bool rcci_shm_cma_wait(struct shm_cma *c, uint32_t mask)
{
	if (!mask || !c->mine)
		return true;
	uint64_t deadline = rcc_now_ns() + c->wait_ns;
	for (int s = 0; s < SHM_CMA_SLOTS; s++)
		if ((mask & (1u << s)) && !rcci_shm_busy_wait(&c->mine->slot[s].busy, deadline, -1))
			return false;
	return true;
}

bool rcci_shm_cma_kill(struct shm_cma *c, uint32_t mask)
{
	rcci_shm_cma_revoke(c, mask);
	return rcci_shm_cma_wait(c, mask);
}

bool rcci_shm_cma_peer_busy(const struct shm_cma *c)
{
	if (!c->mine)
		return false;
	for (int s = 0; s < SHM_CMA_SLOTS; s++)
		if (atomic_load_explicit(&c->mine->slot[s].busy, memory_order_acquire))
			return true;
	return false;
}

uint32_t rcci_shm_cma_slots_of(const struct shm_cma *c, uint32_t key)
{
	uint32_t mask = 0;

	for (int s = 0; s < SHM_CMA_SLOTS; s++)
		for (int k = 0; k < c->nkeys[s]; k++)
			if (c->keys[s][k] == key)
				mask |= 1u << s;
	return mask;
}
