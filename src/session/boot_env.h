/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The env bootstrap's insides, shared by its files:
 *   boot_env.c   the environment, the backend's entry points
 *   boot_conn.c  frames on one connection: tags, proofs, the session key
 *   boot_rdv.c   rank 0: the rendezvous
 *   boot_leaf.c  ranks > 0: joining it and taking part in each round
 *
 * Rank 0 keeps one connection per rank for the life of the bootstrap; each
 * collective is one round: every rank sends CONTRIB, rank 0 answers with
 * RESULT (or ABORT, saying why it gave up). Rank 0 serves every connection at
 * once with poll(): a connection that says nothing, says garbage or fails to
 * authenticate is dropped on its own deadline or at once, and never delays
 * another one. Once every rank has joined, the listener is closed. A rank
 * that has joined and then leaves (its process died) or breaks the protocol,
 * before or after its CONTRIB, is named in the ABORT as soon as every other
 * rank is in, so that ranks still on their way hear it too (or at the
 * timeout, with the ranks that never came).
 */
#ifndef RCC_SESSION_BOOT_ENV_H
#define RCC_SESSION_BOOT_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "boot.h"
#include "boot_wire.h"
#include "base/sha256.h"

#define SECRET_MIN 16
#define SECRET_MAX 1024
#define MAX_PENDING 64       /* unidentified connections held at once */
#define IDENTIFY_MS 5000     /* bound on a connection's CHALLENGE -> HELLO */
#define CLIENT_GRACE_MS 1000 /* ranks > 0 wait this much longer than rank 0 */
#define RETRY_MS 50          /* between connection attempts to rank 0 */
#define NOTES 4              /* dropped connections remembered for the error */
#define ADDR_LEN 64

struct conn {
	int fd;
	int rank; /* -1 while it has not identified itself */
	char addr[ADDR_LEN];
	uint64_t deadline; /* unidentified: when it is dropped */
	uint8_t nonce_s[BOOT_NONCE_LEN];
	uint8_t key[RCCI_SHA256_LEN]; /* session key, with a secret */
	bool keyed;                   /* frames carry tags from now on */
	uint64_t seq_rx, seq_tx;
	uint8_t *buf; /* what has arrived of the next frame(s) */
	size_t fill, cap;
	bool contributed;
	int gone; /* a rank that left or broke the protocol: why (negative errno) */
	size_t bloblen;
	uint8_t blob[RCC_BOOTSTRAP_BLOB_MAX];
};

struct boot_env {
	char master[300]; /* "host:port" of the rendezvous */
	uint8_t secret[SECRET_MAX];
	size_t secret_len;
	/* with a secret: drawn by rank 0 at open, learnt by the others from its
	 * welcome; known on every rank once its first round is over */
	uint8_t run[BOOT_RUN_LEN];
	char local_host[ADDR_LEN];
	uint32_t round;
	/* rank 0 */
	int lfd, port;
	struct conn **ranks; /* size entries; [0] unused */
	struct conn *pending[MAX_PENDING];
	int npending;
	char notes[NOTES][200];
	int nnotes;
	/* other ranks */
	struct conn *up; /* to rank 0 */
};

/* boot_conn.c */
struct conn *rcci_boot_conn_new(int fd);
void rcci_boot_conn_free(struct conn *c);
/* One frame, with its tag when the connection is authenticated. dir: who sends. */
int rcci_boot_frame_send(struct conn *c, char dir, uint8_t type, const void *payload, size_t len,
			 uint64_t deadline);
/*
 * Check a whole frame at f (header decoded into h): its length is within the
 * type's bound and, when sealed, its tag is right. dir: who sent it. Returns
 * the payload length (tag excluded) or -EPROTO / -EACCES.
 */
long rcci_boot_frame_open(struct conn *c, char dir, uint32_t size, const struct boot_hdr *h,
			  const uint8_t *f);
/* HMAC of the secret over label, both nonces, rank and size, and the run id
 * when run is not NULL (rank 0's proof: the welcome carries it). */
void rcci_boot_proof(const struct boot_env *e, const char *label, const uint8_t *nonce_s,
		     const struct boot_hello *h, const uint8_t *run, uint8_t out[RCCI_SHA256_LEN]);
/* The connection's session key, from the secret and both nonces; its frames
 * carry tags from now on. */
void rcci_boot_conn_key(const struct boot_env *e, struct conn *c, const uint8_t *nonce_s,
			const uint8_t *nonce_c);
/* "a.b.c.d:port" of the peer, or "?". */
void rcci_boot_peer_name(int fd, char *buf, size_t len);
/* What a negative errno from a peer's connection means, in words. */
const char *rcci_boot_why(int rc);

/* boot_rdv.c, boot_leaf.c: one round of the all-gather */
int rcci_boot_root_allgather(struct rcc_bootstrap *bs, struct boot_env *e, const void *blob,
			     size_t len, void *out, size_t stride, size_t *lens, int timeout_ms);
int rcci_boot_leaf_allgather(struct rcc_bootstrap *bs, struct boot_env *e, const void *blob,
			     size_t len, void *out, size_t stride, size_t *lens, int timeout_ms);

#endif
