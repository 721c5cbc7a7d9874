/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Setting up the shared region of a same-host connection: who we are (kernel
 * boot id and network namespace, compared in the handshake), and the POSIX
 * shared-memory object the accepting side creates and the connecting side
 * opens. Its name is 128 random bits; it exists only for the handshake and is
 * unlinked as soon as the client confirmed (or on any failure).
 */
#ifndef RCC_TCP_SHM_REGION_H
#define RCC_TCP_SHM_REGION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shm_ring.h"
#include "wire.h"

/* This process's host identity. 0 or a negative errno (then no shm). */
int shm_local_id(struct wire_shm_id *id);
bool shm_same_host(const struct wire_shm_id *a, const struct wire_shm_id *b);

/* Create, size, reserve and map a fresh region of ring capacity cap, under a
 * new random name (written to name). On failure nothing is left behind and
 * why says what failed. */
int shm_region_create(uint32_t cap, uint8_t name[WIRE_SHM_NAME_LEN], struct shm_ring *r,
		      const char **why);
/* Open and map the region a peer named, after checking it is ours alone (a
 * regular file of this user, mode 0600) and exactly the size cap implies. */
int shm_region_open(const uint8_t name[WIRE_SHM_NAME_LEN], uint32_t cap, struct shm_ring *r,
		    const char **why);
void shm_region_unlink(const uint8_t name[WIRE_SHM_NAME_LEN]);
void shm_region_unmap(struct shm_ring *r);

#endif
