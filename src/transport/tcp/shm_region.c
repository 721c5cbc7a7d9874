/* SPDX-License-Identifier: BSD-3-Clause */
#include "shm_region.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The boot id is a UUID in text: its 32 hex digits are the 16 bytes. */
static int read_boot_id(uint8_t out[16])
{
	char text[64];
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	ssize_t n;
	int nib = 0;

	if (fd < 0)
		return -errno;
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	memset(out, 0, 16);
	for (ssize_t i = 0; i < n && nib < 32; i++) {
		char c = text[i];
		int v = c >= '0' && c <= '9' ? c - '0' :
			c >= 'a' && c <= 'f' ? c - 'a' + 10 :
			c >= 'A' && c <= 'F' ? c - 'A' + 10 :
					       -1;
		if (v < 0)
			continue;
		out[nib / 2] |= (uint8_t)(nib % 2 ? v : v << 4);
		nib++;
	}
	return nib == 32 ? 0 : -EIO;
}

int rcci_shm_local_id(struct wire_shm_id *id)
{
	struct stat st;
	int rc = read_boot_id(id->boot_id);

	if (rc)
		return rc;
	if (stat("/proc/self/ns/net", &st))
		return -errno;
	id->netns_dev = (uint64_t)st.st_dev;
	id->netns_ino = (uint64_t)st.st_ino;
	return 0;
}

bool rcci_shm_same_host(const struct wire_shm_id *a, const struct wire_shm_id *b)
{
	return !memcmp(a->boot_id, b->boot_id, sizeof(a->boot_id)) &&
	       a->netns_dev == b->netns_dev && a->netns_ino == b->netns_ino;
}

static int map_fd(int fd, uint32_t cap, unsigned tsan_key, struct shm_ring *r, bool accepter)
{
	void *m = mmap(NULL, shm_region_len(cap), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	if (m == MAP_FAILED)
		return -errno;
	rcci_shm_ring_init(r, m, cap, accepter);
	rcci_shm_cma_init(&r->cma, m, accepter);
	rcci_shm_map_init(&r->mapped, m, accepter);
	r->tsan_key = tsan_key % SHM_TSAN_KEYS;
	return 0;
}

int rcci_shm_region_create(uint32_t cap, unsigned tsan_key, struct shm_ring *r, const char **why)
{
	int fd, rc;

	fd = memfd_create("rcc-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0) {
		*why = "memfd_create failed";
		return -errno;
	}
	if (ftruncate(fd, (off_t)shm_region_len(cap))) {
		rc = -errno;
		*why = "ftruncate failed";
		goto err;
	}
	/* Reserve the pages now: with no memory to spare the fallback is tcp,
	 * not a fault at the first touch of the ring. */
	rc = -posix_fallocate(fd, 0, (off_t)shm_region_len(cap));
	if (rc) {
		*why = "no memory for the region";
		goto err;
	}
	/* From here on nobody, the peer included, can change its size: a
	 * mapping of it can never reach past the end of the file (SIGBUS). */
	if (fcntl(fd, F_ADD_SEALS, SHM_REGION_SEALS)) {
		rc = -errno;
		*why = "the region cannot be sealed";
		goto err;
	}
	rc = map_fd(fd, cap, tsan_key, r, true);
	if (rc) {
		*why = "mmap failed";
		goto err;
	}
	rcci_shm_ring_fresh(r);
	return fd;

err:
	close(fd);
	return rc;
}

int rcci_shm_region_map(int fd, uint32_t cap, unsigned tsan_key, struct shm_ring *r,
			const char **why)
{
	struct stat st;
	int seals, rc;

	if (!shm_cap_ok(cap)) {
		*why = "the peer named an impossible ring size";
		return -EPROTO;
	}
	if (fstat(fd, &st)) {
		*why = "fstat failed";
		return -errno;
	}
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (uint64_t)st.st_size != shm_region_len(cap)) {
		*why = "the peer's region is not a file of this user of the agreed size";
		return -EPERM;
	}
	/* Sealed: its size is fixed for good (checked after the size: a seal
	 * that is there stays there). Not sealed: the peer could truncate it
	 * under our mapping, and our next touch would raise SIGBUS. */
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || (seals & SHM_REGION_SEALS) != SHM_REGION_SEALS) {
		*why = "the peer's region is not sealed against truncation";
		return -EPERM;
	}
	rc = map_fd(fd, cap, tsan_key, r, false);
	if (rc)
		*why = "mmap failed";
	return rc;
}

void rcci_shm_region_unmap(struct shm_ring *r)
{
	rcci_shm_cma_close(&r->cma);
	rcci_shm_map_close(&r->mapped);
	if (r->map)
		munmap(r->map, r->map_len);
	r->map = NULL;
}
