/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rcc bootstrap: how the processes of one job find each other.
 *
 * A job of N processes (ranks 0..N-1) is started by a launcher -- Open MPI's
 * mpirun, Slurm's srun, a torchrun-style launcher, or a plain shell loop --
 * and each process needs to learn its rank, N, and every other rank's
 * endpoint address. A bootstrap answers exactly that: rank, size, an
 * all-gather of a small blob (typically "host:port" of a listener), and a
 * barrier. It carries no data traffic; that is what endpoints are for.
 *
 * Backends (docs/launch.md has the launcher recipes):
 *  - "env": rank and size from the environment, addresses through a small
 *    TCP rendezvous that rank 0 serves at MASTER_ADDR:MASTER_PORT.
 *      rank:   RCC_RANK, else RANK, else OMPI_COMM_WORLD_RANK, else
 *              PMI_RANK, else SLURM_PROCID (the first one set wins, and
 *              the size comes from the same family: RCC_WORLD_SIZE,
 *              WORLD_SIZE, OMPI_COMM_WORLD_SIZE, PMI_SIZE, SLURM_NTASKS)
 *      master: RCC_MASTER_ADDR, else MASTER_ADDR; RCC_MASTER_PORT, else
 *              MASTER_PORT. Required when the size is above 1, whatever
 *              family gave the rank: mpirun and srun give ranks but no
 *              rendezvous. Rank 0 may be given port 0: it then listens on a
 *              free port that rcc_bootstrap_rendezvous_port() tells, for
 *              the caller to hand to the other ranks.
 *      secret: RCC_JOB_SECRET (the value) or RCC_JOB_SECRET_FILE (a file
 *              holding it), 16 bytes or more, the same on every rank. When
 *              set, every rank proves it holds the secret to rank 0 and
 *              rank 0 proves it back (HMAC-SHA256 challenge-response over
 *              fresh nonces from both sides; the secret never crosses the
 *              wire), and every later frame carries an HMAC tag under a key
 *              derived from both nonces. Without it, anyone who reaches the
 *              rendezvous port first with a rank number takes that rank.
 *              The secret also keys rcc_bootstrap_derive_key(), for what the
 *              ranks say to each other afterwards.
 *    Everything a peer sends is bounded (frame sizes, blob sizes, number of
 *    unauthenticated connections held: 64, oldest dropped first) and timed
 *    (each connection has until the call's deadline, and at most 5 s before
 *    it has identified itself); a silent or garbage-sending connection is
 *    dropped without delaying anyone else.
 *  - "static": the caller gives the node list and its rank (what rcc-mesh's
 *    --nodes/--hostfile/--rank are). There is no channel: the all-gather
 *    returns each rank's list entry (the blob passed in is ignored), and
 *    the barrier is not available (-ENOTSUP).
 *  - "pmix": when rcc was built with PMIx (pkg-config pmix) and the process
 *    runs under a PMIx server (mpirun, srun --mpi=pmix, prterun): rank and
 *    size from PMIx, blobs through PMIx_Put/Commit/Fence/Get, barrier by
 *    fence.
 *
 * Choice (attr.backend RCC_BOOTSTRAP_AUTO): the environment variable
 * RCC_BOOTSTRAP=pmix|env|static if set; else static when attr.nodes is
 * given; else pmix when built in and PMIX_RANK is set; else env.
 *
 * Collective calls (all-gather, barrier) must be made by every rank, in the
 * same order. A handle is used by one thread at a time; distinct handles are
 * independent. The library never prints: what went wrong is returned as a
 * negative errno and explained in a sentence (rcc_bootstrap_error(), open's
 * err buffer); these are set-up calls, so rcc_last_error() has the same
 * sentence on the calling thread.
 */
#ifndef RCC_BOOTSTRAP_H
#define RCC_BOOTSTRAP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Largest blob a rank may contribute to one all-gather. */
#define RCC_BOOTSTRAP_BLOB_MAX 1024
/* Largest job the bootstrap accepts. */
#define RCC_BOOTSTRAP_MAX_RANKS 4096
/* Default bound on each call that waits for other ranks. */
#define RCC_BOOTSTRAP_DEFAULT_TIMEOUT_MS 30000
/* Room for rcc_bootstrap_error()'s sentence and for open's err buffer. */
#define RCC_BOOTSTRAP_ERROR_MAX 1024
/* Length of a key from rcc_bootstrap_derive_key(). */
#define RCC_BOOTSTRAP_KEY_LEN 32

enum rcc_bootstrap_backend {
	RCC_BOOTSTRAP_AUTO = 0,
	RCC_BOOTSTRAP_PMIX,
	RCC_BOOTSTRAP_ENV,
	RCC_BOOTSTRAP_STATIC,
};

struct rcc_bootstrap_attr {
	enum rcc_bootstrap_backend backend; /* AUTO: see the choice above */
	/* Static backend only: the node list (ranks in order, each typically
	 * "host:port"; copied at open) and this process's position in it. */
	const char *const *nodes;
	int nnodes;
	int rank;
};

struct rcc_bootstrap;

/*
 * Open a bootstrap. attr may be NULL (AUTO, no static list).
 * Rank 0 of the env backend starts listening here, on MASTER_ADDR (which must
 * be one of its own addresses) and MASTER_PORT; the other ranks only read the
 * environment: nobody connects before the first collective call, so start
 * order does not matter. Does not block (PMIx: PMIx_Init's own bound).
 * Returns 0 and sets *bs, or a negative errno: -ENOENT (no launcher: no rank
 * in the environment, no PMIx), -EDESTADDRREQ (a rank, but no master address
 * for a job of more than one rank), -EINVAL (a malformed or missing variable,
 * a rank out of range, a secret too short),
 * -ENOTSUP (a backend that is not built in), -EADDRINUSE, -ENOMEM. On
 * failure a sentence naming the cause is written to err (errlen bytes,
 * RCC_BOOTSTRAP_ERROR_MAX is enough; err may be NULL). May be called from
 * any thread, but the environment must not change meanwhile (setenv), and a
 * process holds at most one PMIx bootstrap at a time (PMIx_Init/Finalize are
 * process-wide). The handle is the caller's until rcc_bootstrap_close().
 */
int rcc_bootstrap_open(const struct rcc_bootstrap_attr *attr, struct rcc_bootstrap **bs, char *err,
		       size_t errlen);

/* rcc_bootstrap_rank(): this process's rank (0..size-1); rcc_bootstrap_size():
 * the job's size. -EINVAL for a NULL bs. Never block; thread-safe. */
int rcc_bootstrap_rank(const struct rcc_bootstrap *bs);
int rcc_bootstrap_size(const struct rcc_bootstrap *bs);
/* "pmix", "env" or "static"; a static string. */
const char *rcc_bootstrap_backend_name(const struct rcc_bootstrap *bs);

/*
 * Env backend, rank 0: the port the rendezvous listens on (useful when
 * MASTER_PORT was 0). -ENOTSUP on other ranks and other backends.
 */
int rcc_bootstrap_rendezvous_port(const struct rcc_bootstrap *bs);

/*
 * The local IP address (no port) through which this process reaches the
 * rendezvous -- on a multi-homed host, the one the other ranks can most
 * likely reach -- NUL-terminated into buf (64 bytes are enough): rank 0's
 * master address, or on the other ranks the source address the kernel's
 * routing picks toward it (known at open; no packet is sent). Env backend
 * only. Never blocks. 0, -ENOTSUP (other backends), -EAGAIN (the master
 * address did not resolve), -ENOSPC (buf too small).
 */
int rcc_bootstrap_local_host(const struct rcc_bootstrap *bs, char *buf, size_t len);

/*
 * All-gather: every rank contributes len bytes at blob (len <=
 * RCC_BOOTSTRAP_BLOB_MAX, may be 0) and receives every rank's blob, its own
 * included: rank i's at out + i * stride, its length in lens[i]. out holds
 * size * stride bytes, lens size entries; both are written only on success.
 * Blocks until every rank has contributed or timeout_ms passes (0: the
 * default; on ranks other than 0 the bound is that plus 1 s, so that rank
 * 0's explanation of a failure arrives before they give up themselves).
 * Returns 0 or a negative errno: -ETIMEDOUT (rcc_bootstrap_error() names the
 * ranks that never arrived, joined but never contributed, or -- pmix --
 * never reached the exchange), -ECONNRESET (a rank left, named; rank 0 of the
 * env backend says so once every other rank is in, so that ranks still on
 * their way hear it too), -EPROTO (a malformed frame), -EACCES
 * (authentication failed), -EMSGSIZE (a blob longer than stride or than the
 * maximum), -ECANCELED (rank 0 gave up; its reason is in the error text),
 * -EINVAL (bad arguments). After a failure other than -EINVAL or our own
 * blob being over the maximum, the job's collectives are broken: the handle
 * then answers -ECANCELED to every collective and keeps the first failure's
 * sentence; close it. Thread-safety: one thread at a time per handle.
 */
int rcc_bootstrap_allgather(struct rcc_bootstrap *bs, const void *blob, size_t len, void *out,
			    size_t stride, size_t *lens, int timeout_ms);

/* Wait until every rank has reached the barrier, bounded by timeout_ms as
 * the all-gather. 0 or the all-gather's errors; -ENOTSUP on static. */
int rcc_bootstrap_barrier(struct rcc_bootstrap *bs, int timeout_ms);

/*
 * A key for authenticating what the job's ranks say to each other outside the
 * bootstrap (rcc-mesh's connect hellos, say): RCC_BOOTSTRAP_KEY_LEN bytes,
 * HMAC-SHA256 under the job secret over label and a run id that rank 0 draws
 * at random when it opens and hands to every rank inside the authenticated
 * rendezvous (vouched for by its proof of the secret). So every rank of the
 * run derives the same key for the same label, a different label gives an
 * unrelated key, another run of the same job (same secret) gets other keys,
 * and without the secret no key can be made or checked. label: a non-empty
 * NUL-terminated string naming the purpose (copied from; only its bytes up to
 * the NUL count). out is written only on success.
 * Available from the end of this rank's first successful collective call
 * (all-gather or barrier: that is when ranks other than 0 learn the run id).
 * Returns 0, -ENOKEY (the job has no secret: the pmix and static backends,
 * the env backend without RCC_JOB_SECRET(_FILE), or a job of one rank),
 * -EAGAIN (no collective call has succeeded yet on this handle), -EINVAL
 * (NULL bs or out, NULL or empty label). Never blocks, does not touch
 * rcc_bootstrap_error() or rcc_last_error(). Thread-safe with itself and with
 * the other calls that only read (rank, size): it reads what the first
 * collective call fixed; not concurrently with a collective call or close.
 */
int rcc_bootstrap_derive_key(const struct rcc_bootstrap *bs, const char *label,
			     uint8_t out[RCC_BOOTSTRAP_KEY_LEN]);

/* The sentence explaining the last failure of a call on bs ("" if none):
 * names ranks and, escaped, peer addresses. Valid until the next call on bs. */
const char *rcc_bootstrap_error(const struct rcc_bootstrap *bs);

/* Close connections and the listener, free bs. Does not wait for other
 * ranks (a rank that closes early makes the others' next collective fail,
 * naming it). NULL is accepted. Returns 0. */
int rcc_bootstrap_close(struct rcc_bootstrap *bs);

#ifdef __cplusplus
}
#endif

#endif /* RCC_BOOTSTRAP_H */
