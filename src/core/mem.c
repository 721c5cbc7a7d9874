/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rcc_mem_alloc() / rcc_mem_free(): memory a same-host peer can map. Each
 * allocation is its own memfd, sized to whole pages and sealed against
 * shrinking, growing and further seals before anybody else can see it (a
 * peer that maps it can then never be made to fault by a truncation), and
 * mapped MAP_SHARED. The descriptor stays open for the allocation's life:
 * the tcp transport publishes its number to a shared-memory peer, which
 * takes it with pidfd_getfd() (docs/shm.md, "Mapped transfers").
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/last_error.h"
#include "core/core.h"

#define MEM_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

int rcc_mem_alloc(struct rcc_ctx *ctx, size_t length, void **addr)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct rcci_mem *m;
	struct stat st;
	int fd, rc;

	rcci_error_clear();
	if (!ctx || !addr || !length)
		return rcci_fail(-EINVAL, "rcc_mem_alloc: ctx and addr must not be NULL, length 0");
	if (length > SIZE_MAX - page)
		return rcci_fail(-ENOMEM, "rcc_mem_alloc: %zu bytes", length);
	size_t len = (length + page - 1) & ~(page - 1);
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	fd = memfd_create("rcc-mem", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0) {
		rc = errno == EMFILE || errno == ENFILE ? -ENOMEM : -errno;
		goto err_free;
	}
	if (ftruncate(fd, (off_t)len) || fcntl(fd, F_ADD_SEALS, MEM_SEALS) || fstat(fd, &st)) {
		rc = -errno;
		goto err_close;
	}
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		rc = -errno;
		goto err_close;
	}
	m->addr = p;
	m->len = len;
	m->fd = fd;
	m->ino = (uint64_t)st.st_ino;
	pthread_mutex_lock(&ctx->mem_lock);
	m->next = ctx->mems;
	ctx->mems = m;
	pthread_mutex_unlock(&ctx->mem_lock);
	atomic_fetch_add(&ctx->children, 1);
	*addr = p;
	return 0;

err_close:
	close(fd);
err_free:
	free(m);
	return rcci_fail(rc, "rcc_mem_alloc of %zu bytes failed: %s", length, rcc_strerror(rc));
}

int rcc_mem_free(struct rcc_ctx *ctx, void *addr)
{
	struct rcci_mem **pp, *m = NULL;

	rcci_error_clear();
	if (!ctx || !addr)
		return rcci_fail(-EINVAL, "rcc_mem_free: ctx and addr must not be NULL");
	pthread_mutex_lock(&ctx->mem_lock);
	for (pp = &ctx->mems; *pp; pp = &(*pp)->next) {
		if ((*pp)->addr == addr) {
			m = *pp;
			break;
		}
	}
	if (m && m->regs) {
		pthread_mutex_unlock(&ctx->mem_lock);
		return rcci_fail(-EBUSY, "rcc_mem_free: %u regions still registered on it",
				 m->regs);
	}
	if (m)
		*pp = m->next;
	pthread_mutex_unlock(&ctx->mem_lock);
	if (!m)
		return rcci_fail(-EINVAL, "rcc_mem_free: %p is no allocation of this context",
				 addr);
	munmap(m->addr, m->len);
	close(m->fd);
	free(m);
	atomic_fetch_sub(&ctx->children, 1);
	return 0;
}

struct rcci_mem *rcci_mem_hold(struct rcc_ctx *ctx, const void *addr, size_t len)
{
	uintptr_t a = (uintptr_t)addr;
	struct rcci_mem *m;

	pthread_mutex_lock(&ctx->mem_lock);
	for (m = ctx->mems; m; m = m->next) {
		uintptr_t b = (uintptr_t)m->addr;
		if (a >= b && a - b <= m->len && len <= m->len - (a - b)) {
			m->regs++;
			break;
		}
	}
	pthread_mutex_unlock(&ctx->mem_lock);
	return m;
}

void rcci_mem_release(struct rcc_ctx *ctx, struct rcci_mem *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&ctx->mem_lock);
	m->regs--;
	pthread_mutex_unlock(&ctx->mem_lock);
}
