/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Setting up the shared region of a same-host connection: who we are (kernel
 * boot id and network namespace, compared in the handshake), and the region
 * itself. The accepting side creates it as a memfd of fixed size, sealed
 * against shrinking, growing and further seals, so no process -- the peer
 * included -- can truncate it under our mapping (a touch beyond the end of a
 * shared file raises SIGBUS). The descriptor is handed over a Unix socket
 * with SCM_RIGHTS (shm_handoff.c), and the opener checks the seals before it
 * maps. Nothing has a name in the file system; nothing is left behind.
 */
#ifndef RCC_TCP_SHM_REGION_H
#define RCC_TCP_SHM_REGION_H

#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shm_ring.h"
#include "wire.h"

/* This process's host identity. 0 or a negative errno (then no shm). */
int rcci_shm_local_id(struct wire_shm_id *id);
bool rcci_shm_same_host(const struct wire_shm_id *a, const struct wire_shm_id *b);

/* Create, size, reserve, seal and map a fresh region of ring capacity cap:
 * its descriptor (close it once handed over), or a negative errno with why
 * saying what failed (nothing is left behind). tsan_key: the same on both
 * ends (shm_ring.h). */
int rcci_shm_region_create(uint32_t cap, unsigned tsan_key, struct shm_ring *r, const char **why);
/* Map the region a peer handed us, after checking that it can never change
 * size: a regular file of this user, exactly the size cap implies, sealed
 * against shrinking, growing and new seals (F_GET_SEALS). fd stays the
 * caller's. 0, or a negative errno with why. */
int rcci_shm_region_map(int fd, uint32_t cap, unsigned tsan_key, struct shm_ring *r,
			const char **why);
void rcci_shm_region_unmap(struct shm_ring *r);

/* The seals a region must carry before it is mapped. */
#define SHM_REGION_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

/*
 * shm_handoff.c: the creator offers the region's descriptor on a listening
 * Unix socket in the abstract namespace (per network namespace, which the
 * handshake proved shared) under a random name, and gives it to the one
 * process that connects with the random token of its ACCEPT (which only the
 * TCP peer has read) and runs as our user (SO_PEERCRED). That Unix
 * connection then carries the doorbells of the connection and tells either
 * side when the other is gone, in place of the TCP socket.
 */
struct shm_offer {
	int lfd; /* the listening Unix socket */
	uint8_t name[WIRE_SHM_NAME_LEN];
	uint8_t token[WIRE_SHM_TOKEN_LEN];
};

/* Listen under a fresh random name, with a fresh token. 0 or a negative
 * errno with why. */
int rcci_shm_offer_open(struct shm_offer *o, const char **why);
/* Hand memfd to the peer that proves itself, by the deadline; returns early
 * if the TCP peer speaks first on tcp_fd (its confirmation: it gave up).
 * The Unix connection the region went over (non-blocking; the caller's), or
 * -EAGAIN (the peer spoke first), or another negative errno (-ETIMEDOUT at
 * the deadline). Impostors are dropped and waited past. */
int rcci_shm_offer_serve(struct shm_offer *o, int memfd, int tcp_fd, uint64_t deadline);
void rcci_shm_offer_close(struct shm_offer *o);
/* The opener: connect to the offer named in an ACCEPT, check that its
 * listener runs as our user, show the token, receive exactly one
 * descriptor (*memfd). The Unix connection (non-blocking; the caller's), or
 * a negative errno with why (then nothing is left open). */
int rcci_shm_offer_fetch(const uint8_t name[WIRE_SHM_NAME_LEN],
			 const uint8_t token[WIRE_SHM_TOKEN_LEN], uint64_t deadline, int *memfd,
			 const char **why);

#endif
