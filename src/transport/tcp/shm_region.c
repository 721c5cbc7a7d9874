/* SPDX-License-Identifier: BSD-3-Clause */
#include "shm_region.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
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

int shm_local_id(struct wire_shm_id *id)
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

bool shm_same_host(const struct wire_shm_id *a, const struct wire_shm_id *b)
{
	return !memcmp(a->boot_id, b->boot_id, sizeof(a->boot_id)) &&
	       a->netns_dev == b->netns_dev && a->netns_ino == b->netns_ino;
}

static void make_name(const uint8_t name[WIRE_SHM_NAME_LEN], char out[64])
{
	static const char hex[] = "0123456789abcdef";
	int k = snprintf(out, 64, "/rcc-");

	for (unsigned i = 0; i < WIRE_SHM_NAME_LEN; i++) {
		out[k++] = hex[name[i] >> 4];
		out[k++] = hex[name[i] & 15];
	}
	out[k] = '\0';
}

static int map_fd(int fd, uint32_t cap, const uint8_t name[WIRE_SHM_NAME_LEN], struct shm_ring *r,
		  bool accepter)
{
	void *m = mmap(NULL, shm_region_len(cap), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	if (m == MAP_FAILED)
		return -errno;
	shm_ring_init(r, m, cap, accepter);
	r->tsan_key = name[0] % SHM_TSAN_KEYS;
	return 0;
}

int shm_region_create(uint32_t cap, uint8_t name[WIRE_SHM_NAME_LEN], struct shm_ring *r,
		      const char **why)
{
	char path[64];
	int fd, rc;

	if (getrandom(name, WIRE_SHM_NAME_LEN, 0) != WIRE_SHM_NAME_LEN) {
		*why = "no random bytes for the region's name";
		return -EIO;
	}
	make_name(name, path);
	fd = shm_open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		*why = "shm_open failed";
		return -errno;
	}
	/* Reserve the pages now: on a full /dev/shm the fallback is tcp, not a
	 * SIGBUS at the first touch of the ring. */
	if (ftruncate(fd, (off_t)shm_region_len(cap))) {
		rc = -errno;
		*why = "ftruncate failed";
		goto err;
	}
	rc = -posix_fallocate(fd, 0, (off_t)shm_region_len(cap));
	if (rc) {
		*why = "no room in /dev/shm";
		goto err;
	}
	rc = map_fd(fd, cap, name, r, true);
	if (rc) {
		*why = "mmap failed";
		goto err;
	}
	shm_ring_fresh(r);
	close(fd);
	return 0;

err:
	close(fd);
	shm_unlink(path);
	return rc;
}

int shm_region_open(const uint8_t name[WIRE_SHM_NAME_LEN], uint32_t cap, struct shm_ring *r,
		    const char **why)
{
	char path[64];
	struct stat st;
	int fd, rc;

	if (!shm_cap_ok(cap)) {
		*why = "the peer named an impossible ring size";
		return -EPROTO;
	}
	make_name(name, path);
	fd = shm_open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0);
	if (fd < 0) {
		*why = "the peer's region cannot be opened here (another user, or another /dev/shm)";
		return -errno;
	}
	if (fstat(fd, &st)) {
		rc = -errno;
		*why = "fstat failed";
		goto out;
	}
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) ||
	    (uint64_t)st.st_size != shm_region_len(cap)) {
		rc = -EPERM;
		*why = "the peer's region is not a private file of this user of the agreed size";
		goto out;
	}
	rc = map_fd(fd, cap, name, r, false);
	if (rc)
		*why = "mmap failed";
out:
	close(fd);
	return rc;
}

void shm_region_unlink(const uint8_t name[WIRE_SHM_NAME_LEN])
{
	char path[64];

	make_name(name, path);
	shm_unlink(path);
}

void shm_region_unmap(struct shm_ring *r)
{
	if (r->map)
		munmap(r->map, r->map_len);
	r->map = NULL;
}
