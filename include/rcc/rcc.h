/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rcc - RDMA communication core.
 *
 * One API for reliable-connected RDMA over libibverbs/librdmacm ("verbs") and
 * over a software provider on TCP ("tcp") that keeps RC semantics, so the same
 * program runs on a NIC, on Soft-RoCE, or on any Linux host.
 *
 * Conventions used by every call below:
 *  - A function returns 0 (or a non-negative count) on success and a negative
 *    errno value on failure; rcc_strerror() turns it into text.
 *  - Output parameters are written only on success.
 *  - Attribute structs may be zero-initialised: a zero field means "default".
 *  - Objects are created by one call and released by exactly one other call;
 *    release them in reverse order of creation (endpoints before their CQs,
 *    everything before its context).
 *  - All calls are thread-safe unless stated otherwise, as with verbs.
 *  - The library never prints except through its logger (see RCC_LOG below).
 */
#ifndef RCC_RCC_H
#define RCC_RCC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RCC_VERSION_MAJOR 0
#define RCC_VERSION_MINOR 1
#define RCC_VERSION_PATCH 0

/* Default service port, the one rdma-core's rdma_server/rdma_client use. */
#define RCC_DEFAULT_PORT 7471

/* Largest message a single work request may move (as on most RC devices). */
#define RCC_MAX_MSG_SIZE (1u << 30)

/*
 * Private data limits, the same on every transport: rdma_cm's RC limits
 * (56 / 196 / 148 bytes) less a small header with which rcc carries the
 * exact length (rdma_cm itself hands the receiver the whole padded area).
 */
#define RCC_CONNECT_PRIVATE_DATA_MAX 48
#define RCC_ACCEPT_PRIVATE_DATA_MAX 192
#define RCC_REJECT_PRIVATE_DATA_MAX 144
/* What a zero sq_depth / rq_depth of struct rcc_ep_attr stands for. */
#define RCC_DEFAULT_QUEUE_DEPTH 128

struct rcc_ctx;
struct rcc_mr;
struct rcc_cq;
struct rcc_ep;
struct rcc_listener;
struct rcc_conn_req;
struct rcc_srq;
struct rcc_ah;

/* ------------------------------------------------------------------------ */
/* Status and logging                                                        */
/* ------------------------------------------------------------------------ */

/* Text for a status returned by any rcc call (a negative errno). Never NULL. */
const char *rcc_strerror(int status);

/*
 * Why the most recent failing set-up call of this thread failed, in words,
 * when its status alone does not say: which argument ("private data of 60
 * bytes; a connect carries at most 48"), which peer condition ("10.0.0.2:7471
 * closed the connection before answering"). "" when the call said no more.
 * Set-up calls are those that open, create, register, listen, accept,
 * connect or start something (contexts, regions, CQs, listeners, endpoints,
 * session clients and servers); each one forgets the previous text when it
 * starts, so read it right after the failure, before the next such call on
 * the same thread. Posting, polling and getters never touch it, with these
 * exceptions that say why a post was refused: a receive posted to an
 * endpoint that takes its receives from a shared receive queue, a READ or
 * atomic posted to an RCC_QP_UC endpoint (both -EINVAL), and a send an
 * RCC_QP_UD endpoint cannot carry (-EINVAL: not a SEND or SEND_IMM, or no
 * address handle; -EMSGSIZE: longer than rcc_ud_max_msg()). Never NULL;
 * the text belongs to the thread, is escaped like a log message and stays
 * valid until the thread's next set-up call. Never blocks.
 */
const char *rcc_last_error(void);

/* Library version as "major.minor.patch". */
const char *rcc_version(void);

enum rcc_log_level {
	RCC_LOG_ERROR = 0,
	RCC_LOG_WARN,
	RCC_LOG_INFO,
	RCC_LOG_DEBUG,
	RCC_LOG_TRACE,
};

/*
 * The level comes from the environment variable RCC_LOG
 * (error|warn|info|debug|trace; default error). Messages go to stderr, one
 * line each, unless a handler is installed. A message is one line of at most
 * 1023 bytes with every control character escaped (rcc_text_escape() of
 * rcc/util.h), since messages quote text peers sent. rcc_log_set_handler(NULL, NULL)
 * restores stderr. rcc_log_set_level() overrides the environment.
 */
typedef void (*rcc_log_fn)(enum rcc_log_level level, const char *msg, void *arg);

/*
 * Send every later message to fn(level, msg, arg) instead of stderr (NULL:
 * back to stderr). fn runs on whichever thread logs -- the caller's, or one
 * of the library's own progress threads -- possibly on several at once, so
 * it must be thread-safe and must not call back into rcc. msg is valid only
 * during the call; arg is yours and is passed through untouched. A message
 * being logged while the handler changes may still reach the old handler
 * once: keep its arg alive until no rcc call is running. Never blocks.
 */
void rcc_log_set_handler(rcc_log_fn fn, void *arg);

/* Log messages at this level and more severe ones, overriding RCC_LOG. Never
 * blocks; takes effect for every thread at once. */
void rcc_log_set_level(enum rcc_log_level level);

/* The level in force (RCC_LOG's, or what rcc_log_set_level() set). */
enum rcc_log_level rcc_log_get_level(void);

/* ------------------------------------------------------------------------ */
/* Context: one device (verbs) or one software provider instance (tcp)       */
/* ------------------------------------------------------------------------ */

enum rcc_transport {
	RCC_TRANSPORT_AUTO = 0, /* verbs when a device exists, otherwise tcp */
	RCC_TRANSPORT_VERBS,
	RCC_TRANSPORT_TCP,
};

/* How a verbs connection is brought up; the tcp transport ignores it. */
enum rcc_bringup {
	RCC_BRINGUP_CM = 0, /* rdma_cm: resolve, connect/accept with private data */
	RCC_BRINGUP_MANUAL, /* lid/qpn/psn/gid exchanged over a TCP socket */
};

/*
 * Same-host connections of the tcp transport (docs/shm.md): when both ends
 * run on one kernel (same boot id and network namespace, compared in the
 * handshake -- never the address), the byte stream runs through a shared
 * memory ring instead of the kernel's TCP, with the same semantics.
 */
enum rcc_shm {
	RCC_SHM_AUTO =
		0,   /* RCC_SHM decides ("0", "1", "auto"); unset: shared memory when possible */
	RCC_SHM_OFF, /* always the socket */
	RCC_SHM_REQUIRE, /* a connection that cannot use shared memory fails */
};

/* gid_index value that selects index 0 explicitly (0 means "automatic"). */
#define RCC_GID_INDEX_ZERO (-1)

struct rcc_ctx_attr {
	enum rcc_transport transport;
	enum rcc_bringup bringup;
	const char *device; /* verbs device name, e.g. "rxe0"; NULL: first usable */
	int port;           /* device port; 0: first ACTIVE port */
	int gid_index;      /* 0: automatic (RoCE v2 IPv4 GID on Ethernet links) */
	/* tcp transport: same-host shared memory. RCC_SHM_AUTO (0) reads the
	 * environment variable RCC_SHM: "0" off, "1" required, "auto" or unset
	 * when possible. Another value of RCC_SHM makes rcc_ctx_open() fail with
	 * -EINVAL. With RCC_SHM_REQUIRE (either way), rcc_connect() to, or
	 * rcc_accept() of, a peer that is not on this host, does not offer it,
	 * or whose region cannot be shared fails with -EPROTONOSUPPORT
	 * (rcc_last_error() says why). On shared memory, RCC_SHM_CMA=1 in
	 * both processes has a WRITE or READ of 64 KiB and more copied once,
	 * by the target process, where the kernel allows it; by default it
	 * takes the ring's two copies, faster on the hosts measured
	 * (docs/shm.md). A WRITE or READ of 1 KiB and more to a region on a
	 * peer's rcc_mem_alloc() memory is copied by the initiator through
	 * a mapping of it (RCC_SHM_MAP=0 in either process: not; RCC_SHM_MAP_MIN
	 * sets the threshold). RCC_SHM_RING_KIB (a power of two from 4 to 65536,
	 * default 256) in the accepting process sets the capacity of the two
	 * rings of each connection it accepts; any other value makes
	 * rcc_ctx_open() fail with -EINVAL. verbs ignores all of these. */
	enum rcc_shm shm;
};

/* Open a context. attr may be NULL (all defaults). With RCC_TRANSPORT_VERBS
 * and no usable device the result is -ENODEV (-ENOSYS when rcc was built
 * without verbs). RCC_TRANSPORT_AUTO picks verbs when a usable device exists
 * and tcp otherwise -- unless attr->device names a device: then it is verbs on
 * that device or the same error as RCC_TRANSPORT_VERBS, never a silent tcp. */
int rcc_ctx_open(const struct rcc_ctx_attr *attr, struct rcc_ctx **ctx);

/* Close a context. Fails with -EBUSY while any MR, CQ, endpoint, listener,
 * SRQ or address handle created from it is still open. */
int rcc_ctx_close(struct rcc_ctx *ctx);

/* The transport actually in use (never RCC_TRANSPORT_AUTO). */
enum rcc_transport rcc_ctx_transport(const struct rcc_ctx *ctx);

/* "verbs", "tcp" or "auto". */
const char *rcc_transport_name(enum rcc_transport t);

/* Parse "auto", "verbs" or "tcp". Returns 0 or -EINVAL. */
int rcc_transport_parse(const char *name, enum rcc_transport *t);

/* ------------------------------------------------------------------------ */
/* Memory registration                                                       */
/* ------------------------------------------------------------------------ */

/* Same bit values as enum ibv_access_flags. Remote write and remote atomic
 * access require local write, as on verbs. */
enum rcc_access {
	RCC_ACCESS_LOCAL_WRITE = 1 << 0,
	RCC_ACCESS_REMOTE_WRITE = 1 << 1,
	RCC_ACCESS_REMOTE_READ = 1 << 2,
	RCC_ACCESS_REMOTE_ATOMIC = 1 << 3,
};

/* What a peer needs to address a region: send it with rcc_remote_mr_encode(). */
struct rcc_remote_mr {
	uint64_t addr;
	uint64_t length;
	uint32_t rkey;
};

/*
 * Allocate length bytes (rounded up to whole pages) of zeroed memory that a
 * same-host peer can map: shared memory (a sealed memfd mapped MAP_SHARED)
 * instead of the heap. ctx: the context the memory belongs to; length:
 * non-zero; *addr receives the page-aligned start. Returns 0, -EINVAL (NULL
 * argument, length 0), -ENOMEM (no memory or no descriptor left) or
 * another negative errno of memfd_create()/mmap(). May block in the
 * kernel; thread-safe. The memory is plain memory on every transport:
 * register it with rcc_mr_reg() as any other (whole or in parts). What it
 * adds: on a shared-memory connection (rcc_ep_path() "shm") a region
 * registered on it with remote access is "mappable": a peer's WRITE or
 * READ of 1 KiB and more (RCC_SHM_MAP_MIN bytes in the peer's environment
 * sets another threshold) is copied by the peer itself, once, straight
 * into or out of this memory (docs/shm.md, "Mapped transfers"; RCC_SHM_MAP=0
 * in either process turns that off). The memory stays ctx's until
 * rcc_mem_free(); the context cannot be closed before.
 */
int rcc_mem_alloc(struct rcc_ctx *ctx, size_t length, void **addr);

/*
 * Free memory rcc_mem_alloc() returned (addr exactly as returned). Returns
 * 0, -EINVAL (NULL, or not an allocation of ctx) or -EBUSY while a region
 * registered on it is still registered (deregister it first). A peer that
 * mapped it may keep the pages alive until its connection closes, but can
 * no longer reach them through rcc (every region on it was deregistered).
 * Thread-safe; never blocks beyond munmap().
 */
int rcc_mem_free(struct rcc_ctx *ctx, void *addr);

/*
 * Register [addr, addr+length) with ctx for the access bits in access
 * (enum rcc_access; 0 is local read only, as on verbs). addr: any memory of
 * this process (heap, stack, mmap, rcc_mem_alloc()), which must stay mapped
 * and is not copied: the caller keeps owning it and must keep it until
 * rcc_mr_dereg() returned; length: non-zero. *mr receives the region, only
 * on success; its keys (rcc_mr_lkey(), rcc_mr_rkey()) name it in work
 * requests and to peers.
 * Returns 0, -EINVAL (NULL argument, length 0, unknown access bits, a range
 * that wraps around, remote write or atomic access without local write),
 * -ENOMEM, or the transport's negative errno (verbs: ibv_reg_mr()'s, e.g.
 * -EFAULT for memory that is not mapped, -ENOMEM past the locked-memory
 * limit); rcc_last_error() says why. May block: verbs pins the pages in
 * the kernel; tcp takes the context's registration lock, waiting for
 * copies into or out of other regions in progress. Thread-safe.
 */
int rcc_mr_reg(struct rcc_ctx *ctx, void *addr, size_t length, unsigned access, struct rcc_mr **mr);

/*
 * Deregister mr and free it (on success mr is invalid afterwards, for
 * every thread). Afterwards the region can no longer be
 * reached by peers or by work requests that name its keys; they fail with
 * a protection or remote access error. Returns 0, -EINVAL (mr NULL) or the
 * transport's negative errno (verbs: ibv_dereg_mr()'s; mr is then kept and
 * may be deregistered again). Blocks until no copy into or out of the
 * region is in progress: on tcp and shared memory the local ones (bounded
 * by their length) and a same-host peer's (bounded by the peer timeout,
 * docs/shm.md "Deregistration guarantee"); on verbs as long as
 * ibv_dereg_mr() takes. Thread-safe: work that names the region's keys,
 * posted by another thread meanwhile, either is done with the memory
 * before this returns or fails as above.
 */
int rcc_mr_dereg(struct rcc_mr *mr);

/*
 * What a region was registered with: rcc_mr_addr() its start,
 * rcc_mr_length() its length, rcc_mr_lkey() its local key (for struct
 * rcc_sge), rcc_mr_rkey() its remote key (for a peer's WRITE/READ/atomics),
 * rcc_mr_access() its access bits, and rcc_mr_remote() the three a peer
 * needs in one struct. Never fail, never block, thread-safe; valid until
 * rcc_mr_dereg(mr).
 */
void *rcc_mr_addr(const struct rcc_mr *mr);
size_t rcc_mr_length(const struct rcc_mr *mr);
uint32_t rcc_mr_lkey(const struct rcc_mr *mr);
uint32_t rcc_mr_rkey(const struct rcc_mr *mr);
unsigned rcc_mr_access(const struct rcc_mr *mr);
struct rcc_remote_mr rcc_mr_remote(const struct rcc_mr *mr);

/* Fixed little-endian encoding of struct rcc_remote_mr for the wire. */
#define RCC_REMOTE_MR_WIRE_SIZE 20

/* Write r into out (exactly RCC_REMOTE_MR_WIRE_SIZE bytes; any alignment). */
void rcc_remote_mr_encode(const struct rcc_remote_mr *r, uint8_t out[RCC_REMOTE_MR_WIRE_SIZE]);

/*
 * Read a region description a peer sent: the first RCC_REMOTE_MR_WIRE_SIZE
 * of len bytes at in (bytes past them are ignored). Returns 0, or -EINVAL
 * when len is too short or addr + length wraps around. The result is only
 * what the peer claims: the target's own keys and bounds decide whether an
 * operation using it succeeds.
 */
int rcc_remote_mr_decode(const void *in, size_t len, struct rcc_remote_mr *r);

/* A scatter/gather element; same layout as struct ibv_sge. */
struct rcc_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

/* An SGE covering [addr, addr+length) of mr. */
struct rcc_sge rcc_mr_sge(const struct rcc_mr *mr, const void *addr, uint32_t length);

/* ------------------------------------------------------------------------ */
/* Completion queues                                                         */
/* ------------------------------------------------------------------------ */

/*
 * RCC_CQ_POLL:   busy polling with rcc_cq_poll(); rcc_cq_wait() spins until
 *                its timeout (yielding the CPU now and then, see
 *                rcc_cq_wait()); no file descriptor.
 * RCC_CQ_WAIT:   a completion channel: rcc_cq_wait() sleeps until a
 *                completion arrives or the timeout expires.
 * RCC_CQ_FD:     as RCC_CQ_WAIT, and rcc_cq_fd() returns a descriptor for
 *                epoll/poll over many CQs.
 * RCC_CQ_HYBRID: spin, then sleep: rcc_cq_wait() polls for up to spin_us
 *                microseconds (struct rcc_cq_attr) and then sleeps as in
 *                RCC_CQ_WAIT. A completion that comes soon costs no wake-up
 *                (no system call at all on verbs); a waiter with nothing to
 *                do gives its core back after spin_us. The mode a server
 *                wants by default. No descriptor (rcc_cq_fd() is -EINVAL).
 */
enum rcc_cq_mode {
	RCC_CQ_POLL = 0,
	RCC_CQ_WAIT,
	RCC_CQ_FD,
	RCC_CQ_HYBRID,
};

/* What a zero spin_us of an RCC_CQ_HYBRID CQ stands for (unless the
 * environment variable RCC_CQ_SPIN_US gives another value), and the largest
 * spin_us accepted. */
#define RCC_CQ_SPIN_US_DEFAULT 50
#define RCC_CQ_SPIN_US_MAX 10000000

struct rcc_cq_attr {
	uint32_t depth; /* completions the CQ must hold; 0: 1024 */
	enum rcc_cq_mode mode;
	/*
	 * RCC_CQ_HYBRID only (ignored, and never read, in the other modes, so
	 * a program built before this field existed is not affected):
	 * microseconds rcc_cq_wait() polls before it sleeps, at most
	 * RCC_CQ_SPIN_US_MAX (else -EINVAL). 0: RCC_CQ_SPIN_US from the
	 * environment if set (decimal microseconds, at most
	 * RCC_CQ_SPIN_US_MAX; 0 there means "sleep at once"; any other value
	 * is ignored with a warning), otherwise RCC_CQ_SPIN_US_DEFAULT. Read
	 * once, at rcc_cq_create().
	 */
	uint32_t spin_us;
};

/* Same values as enum ibv_wc_status. */
enum rcc_wc_status {
	RCC_WC_SUCCESS = 0,
	RCC_WC_LOC_LEN_ERR = 1,
	RCC_WC_LOC_QP_OP_ERR = 2,
	RCC_WC_LOC_PROT_ERR = 4,
	RCC_WC_WR_FLUSH_ERR = 5,
	RCC_WC_BAD_RESP_ERR = 7,
	RCC_WC_LOC_ACCESS_ERR = 8,
	RCC_WC_REM_INV_REQ_ERR = 9,
	RCC_WC_REM_ACCESS_ERR = 10,
	RCC_WC_REM_OP_ERR = 11,
	RCC_WC_RETRY_EXC_ERR = 12,
	RCC_WC_RNR_RETRY_EXC_ERR = 13,
	RCC_WC_REM_ABORT_ERR = 16,
	RCC_WC_FATAL_ERR = 19,
	RCC_WC_GENERAL_ERR = 21,
};

/* Same values as enum ibv_wc_opcode. */
enum rcc_wc_opcode {
	RCC_WC_SEND = 0,
	RCC_WC_WRITE = 1,
	RCC_WC_READ = 2,
	RCC_WC_CAS = 3,
	RCC_WC_FADD = 4,
	RCC_WC_RECV = 128,
	RCC_WC_RECV_WRITE_IMM = 129,
};

enum rcc_wc_flags {
	RCC_WC_WITH_IMM = 1 << 0,
};

/*
 * The address of a datagram (RCC_QP_UD) endpoint: what a peer needs to send
 * to it (rcc_ah_create()). A fixed-size opaque blob, the same size on every
 * transport and meant to be copied as it is -- into private data, a file, a
 * message of your own (it holds no pointer and no byte-order dependence).
 * What is inside depends on the transport (verbs: GID, LID, SL, QP number,
 * Q_Key; tcp: the endpoint's UDP address, its endpoint id and Q_Key), behind
 * a tag and a check byte: a blob of another transport, of another rcc
 * version, or damaged is refused (-EINVAL) wherever one is taken, never
 * trusted. See rcc_ud_addr(), rcc_ud_addr_str() and docs/ud.md.
 */
#define RCC_UD_ADDR_SIZE 32
struct rcc_ud_addr {
	uint8_t bytes[RCC_UD_ADDR_SIZE];
};

/*
 * One completion. opcode, byte_len, imm_data and wc_flags are meaningful only
 * when status is RCC_WC_SUCCESS (as with verbs). ep names the endpoint the
 * work request was posted on; no completion polled after rcc_ep_close() has
 * returned names that endpoint (rule 6 below: completions already in your
 * array are yours to skip).
 *
 * src is meaningful only for a successful receive completion of an
 * RCC_QP_UD endpoint: the sender's address, ready for rcc_ah_create() to
 * reply without another exchange. For every other completion its contents
 * are unspecified (nothing builds an address for them, so connected
 * endpoints pay nothing for it). Its Q_Key is the
 * receiving endpoint's own (a completion does not carry the sender's), so a
 * reply reaches senders that use the same Q_Key, as rcc endpoints do unless
 * told otherwise.
 */
struct rcc_wc {
	uint64_t wr_id;
	struct rcc_ep *ep;
	enum rcc_wc_status status;
	enum rcc_wc_opcode opcode;
	uint32_t byte_len;
	uint32_t imm_data; /* host byte order */
	uint32_t wc_flags;
	uint32_t vendor_err;
	struct rcc_ud_addr src; /* RCC_QP_UD receives only */
};

/*
 * Create a completion queue holding at least attr->depth completions (0:
 * 1024; a device may round it up) in attr->mode. attr may be NULL (depth
 * 1024, RCC_CQ_POLL). One CQ may serve many endpoints, as send CQ, receive
 * CQ or both (rule 1 below says how deep it must be). Returns 0 and sets
 * *cq, -EINVAL for a bad mode, a depth past the largest a CQ may have or
 * (RCC_CQ_HYBRID) a spin_us above RCC_CQ_SPIN_US_MAX, -ENOMEM, or the
 * device's error. Does not block. Release with rcc_cq_destroy() after every
 * endpoint using it.
 */
int rcc_cq_create(struct rcc_ctx *ctx, const struct rcc_cq_attr *attr, struct rcc_cq **cq);

/* Destroy a CQ. Fails with -EBUSY while an endpoint still uses it. */
int rcc_cq_destroy(struct rcc_cq *cq);

/* Take up to max completions; never blocks. Returns how many (0..max). */
int rcc_cq_poll(struct rcc_cq *cq, struct rcc_wc *wc, int max);

/*
 * Take up to max completions, waiting at most timeout_ms (-1: no limit) for
 * the first. Returns how many (>0) or -ETIMEDOUT; -EINVAL for a NULL cq or
 * wc, max <= 0 or timeout_ms < -1. timeout 0 polls once (the CQ's mode
 * decides how) and returns at once.
 *
 * How it waits depends on the CQ's mode:
 *  - RCC_CQ_POLL: polls without sleeping until the timeout. After every 64
 *    empty polls it calls sched_yield(), so that more polling threads than
 *    cores share them instead of each burning its time slice while the
 *    threads that would complete its work wait for a core.
 *  - RCC_CQ_WAIT, RCC_CQ_FD: polls, then sleeps in the kernel until the CQ
 *    has a completion (on verbs after arming the CQ and polling once more,
 *    so a completion that came before the arm is not missed).
 *  - RCC_CQ_HYBRID: polls as RCC_CQ_POLL does (with the same yields) for up
 *    to spin_us or until the timeout, whichever is first, then waits as
 *    RCC_CQ_WAIT does for the rest of the timeout. The spin phase makes no
 *    system call on verbs except the yields; on tcp it reads the sockets of
 *    the CQ's endpoints itself, as RCC_CQ_POLL does.
 * On tcp a waiter that sleeps (WAIT, FD, HYBRID) sleeps on the sockets of the
 * CQ's endpoints as well, and reads the message that completes its work
 * itself, as a thread blocked in recv() would: one wake-up per completion.
 * The timeout is honoured in every phase (to the millisecond, or a yield's
 * time slice on an overloaded host).
 *
 * Thread-safe: any number of threads may wait on one CQ, in every mode; each
 * completion is returned to exactly one of them. A thread that sleeps is
 * woken when the CQ has completions, which another thread may take first:
 * the sleeper then goes back to sleep for what is left of its timeout.
 */
int rcc_cq_wait(struct rcc_cq *cq, struct rcc_wc *wc, int max, int timeout_ms);

/*
 * A descriptor (RCC_CQ_FD mode only, otherwise -EINVAL) that becomes readable
 * when completions may be available. Do not read it: when it is readable call
 * rcc_cq_poll() until it returns 0, then (best: rcc_cq_arm()) wait on it
 * again. It may be readable with nothing to poll; wait again then. Owned by
 * the CQ: valid until rcc_cq_destroy(), never to be closed by the caller.
 */
int rcc_cq_fd(struct rcc_cq *cq);

/*
 * Say that the calling thread is about to sleep on rcc_cq_fd() (in its own
 * poll(2) or epoll), as ibv_req_notify_cq() does on verbs. The loop:
 *
 *     for (;;) {
 *         while ((n = rcc_cq_poll(cq, wc, max)) > 0)
 *             handle(wc, n);
 *         if (rcc_cq_arm(cq) == 0)
 *             epoll_wait(...);   // on rcc_cq_fd(cq) and whatever else
 *     }
 *
 * Returns 0: sleep now; the descriptor becomes readable for any completion
 * that comes after the last poll. 1: completions, or input that makes
 * them, are already there: poll again instead of sleeping. -EINVAL: cq is
 * NULL or not in RCC_CQ_FD mode. Another negative errno (-ENOMEM) if the
 * descriptor's set could not be extended; sleeping is then still correct,
 * at the cost of the wake-up below.
 *
 * Optional, and what it buys: without it the descriptor still becomes
 * readable for every completion, but on a same-host shared-memory
 * connection (docs/shm.md) only after the context's background thread read
 * the peer's message and woke you -- two thread wake-ups per completion
 * where a blocking socket costs one. Once a CQ has been armed, its
 * shared-memory peers ring the descriptor directly when it is armed, and a
 * thread that polls it reads their messages itself (as rcc_cq_wait() does).
 * The other side of the trade: an unarmed CQ leaves those connections to
 * the background thread, which keeps spinning for a while after each
 * message, so under a steady stream it never sleeps and can deliver
 * sooner -- a core spent for latency. A thread that wants that trade
 * should ask for it where it is bounded and visible: RCC_CQ_HYBRID and
 * rcc_cq_wait() (docs/shm.md, "Figures").
 * Arming and then not sleeping is harmless: it costs the peer a system call
 * for its next message. Also sends, at once, an acknowledgement this
 * thread held back for the reply it expected to post.
 *
 * Does not block. No system call on verbs (its CQ is re-armed by every
 * poll that finds it empty); on tcp at most one (to have the context's
 * thread send a held-back acknowledgement), and on a CQ's first call one
 * more per shared-memory connection. Thread-safe; any number of threads
 * may arm and sleep on one CQ.
 */
int rcc_cq_arm(struct rcc_cq *cq);

/* The mode the CQ was created with. */
enum rcc_cq_mode rcc_cq_get_mode(const struct rcc_cq *cq);

/* Text for a status, e.g. "remote access error". Never NULL. */
const char *rcc_wc_status_str(enum rcc_wc_status status);
/* Text for an opcode, e.g. "RECV_WRITE_IMM". Never NULL. */
const char *rcc_wc_opcode_str(enum rcc_wc_opcode opcode);

/* ------------------------------------------------------------------------ */
/* Endpoints (RC queue pairs) and connection management                      */
/* ------------------------------------------------------------------------ */

/* rnr_retry / retry_cnt value for "no retry at all" (0 means default). */
#define RCC_NO_RETRY (-1)
/* rnr_retry value that retries forever (the default). */
#define RCC_RETRY_FOREVER 7

/*
 * The kind of queue pair behind an endpoint. Both sides of a connection must
 * choose the same kind (verbs QPs of different kinds cannot talk).
 *  - RCC_QP_UD, unreliable datagram: not connected at all; made by
 *    rcc_ud_create() (rcc_connect() and the accepts refuse it with -EINVAL)
 *    and described in "Datagram endpoints" below.
 *  - RCC_QP_RC, reliable connected (the default): every operation.
 *  - RCC_QP_UC, unreliable connected: SEND, SEND_IMM, WRITE and WRITE_IMM
 *    only; READ, CAS and FADD are refused at post with -EINVAL (and
 *    rcc_last_error() says why) on every transport. On verbs a message lost
 *    on the wire is not retransmitted: the receiver never sees it (a receive
 *    or WRITE_IMM it would have consumed waits for the next message) and the
 *    sender's completion only means the message left; no RNR wait either
 *    (a SEND meeting no receive is dropped). tcp carries UC with its RC
 *    machinery -- reliable and RNR-retried, a superset of what UC promises --
 *    so a program correct on UC (one that tolerates loss) works there too,
 *    but one that works on tcp may still lose messages on a NIC.
 */
enum rcc_qp_type {
	RCC_QP_RC = 0,
	RCC_QP_UC,
	RCC_QP_UD,
};

struct rcc_ep_attr {
	struct rcc_cq *send_cq; /* required */
	struct rcc_cq *recv_cq; /* NULL: same as send_cq */
	/* Queue capacities are minimums: a device may round them up. */
	uint32_t sq_depth;        /* outstanding send work requests; 0: RCC_DEFAULT_QUEUE_DEPTH */
	uint32_t rq_depth;        /* posted receives; 0: RCC_DEFAULT_QUEUE_DEPTH */
	uint32_t max_send_sge;    /* 0: 4 */
	uint32_t max_recv_sge;    /* 0: 4 */
	uint32_t max_inline;      /* 0: transport default; see rcc_ep_max_inline() */
	uint32_t max_rd_atomic;   /* outstanding READ/atomic per direction; 0: 16 */
	int retry_cnt;            /* transport retries 1..7; 0: 7; RCC_NO_RETRY */
	int rnr_retry;            /* RNR retries 1..6, 7 = forever; 0: 7; RCC_NO_RETRY */
	uint8_t min_rnr_timer;    /* IB encoding 1..31; 0: 12 (0.64 ms) */
	uint8_t timeout;          /* IB encoding 4.096us * 2^t, 1..31; 0: 14 */
	bool sig_all;             /* every send work request generates a completion */
	const void *private_data; /* sent with connect (<= 48 B) or accept (<= 192 B) */
	uint32_t private_data_len;
	void *context; /* returned by rcc_ep_context() */
	/* Receives posted before the peer learns the connection is up (as an
	 * rdma_cm user posts before rdma_accept), so its first messages never
	 * meet an empty receive queue. Read during the call only. */
	const struct rcc_recv_wr *initial_recv;
	int num_initial_recv;
	/* Dead-peer detection: when nothing at all has been heard from the peer
	 * for this long, the endpoint leaves service (RCC_EP_DISCONNECTED, the
	 * oldest outstanding send RCC_WC_RETRY_EXC_ERR, everything else
	 * flushed), whether or not work is outstanding -- a crashed host, a
	 * frozen process or a cut link alike. 0: the environment variable
	 * RCC_PEER_TIMEOUT_MS if set, else RCC_DEFAULT_PEER_TIMEOUT_MS. At
	 * least RCC_MIN_PEER_TIMEOUT_MS, at most a day (else -EINVAL). The two
	 * sides' library threads send each other heartbeats at an eighth of the
	 * shorter of their timeouts (tcp: while idle, on the connection; verbs:
	 * always, one small UD datagram per endpoint from a UD QP the context
	 * makes with its first connection), so a process that is frozen or
	 * gone counts as dead although its kernel or NIC still answers. verbs:
	 * everything outstanding is flushed (RCC_WC_WR_FLUSH_ERR), and a peer
	 * that takes no part (a raw rdma_cm program) is not timed. Shared
	 * memory: a peer frozen in the middle of copying into or out of this
	 * process's memory could finish that copy when it resumes, so the
	 * endpoint stays RCC_EP_CONNECTED (what arrives is dropped) until
	 * the copy ended, at most one more peer_timeout_ms (and while an
	 * rcc_mr_dereg() of this context waits for such a peer); no thread
	 * waits meanwhile. */
	uint32_t peer_timeout_ms;
	/* Take receives from this shared receive queue (rcc_srq_create(), same
	 * context) instead of a receive queue of the endpoint's own: rq_depth
	 * and max_recv_sge are then ignored (the SRQ's max_sge applies), initial
	 * receives are refused (-EINVAL: post them to the SRQ before connecting
	 * or accepting), and so is rcc_post_recv() on the endpoint. The SRQ must
	 * outlive the endpoint. RC and UC endpoints take an SRQ made without
	 * rcc_srq_attr.for_datagrams, UD endpoints (rcc_ud_create()) one made
	 * with it (-EINVAL otherwise). NULL: a receive queue of its own. */
	struct rcc_srq *srq;
	/* RCC_QP_RC (0, the default) or RCC_QP_UC for rcc_connect() and the
	 * accepts; RCC_QP_UD for rcc_ud_create(); anything else -EINVAL. */
	enum rcc_qp_type qp_type;
	/* RCC_QP_UD only (ignored otherwise): the Q_Key a datagram must carry
	 * to be delivered to this endpoint, and the one its address hands to
	 * senders. 0: RCC_UD_DEFAULT_QKEY. Bit 31 must be clear (-EINVAL):
	 * verbs reserves Q_Keys with it set. */
	uint32_t qkey;
};
#define RCC_DEFAULT_PEER_TIMEOUT_MS 10000u
#define RCC_MIN_PEER_TIMEOUT_MS 100u

enum rcc_ep_state {
	RCC_EP_CONNECTED = 0,
	RCC_EP_ERROR,        /* a work request failed; outstanding work was flushed */
	RCC_EP_DISCONNECTED, /* closed by either side or the peer vanished */
	RCC_EP_CONNECTING,   /* rcc_connect_start() still at work; posts fail */
};

/*
 * How a listener treats peers before they are connection requests. A peer
 * that connects says who it is in a handshake; until that has fully arrived
 * the connection is "half-open". A listener progresses every half-open
 * connection at once, each with its own deadline, so a silent, slow or
 * partial peer never delays another; their number is bounded, and past the
 * bound the OLDEST half-open connection is dropped (never the newest, so a
 * real client always gets in during a flood of idle ones). Zero fields mean
 * the defaults.
 *   backlog            the kernel's queue of not yet accepted connections (128)
 *   max_pending        half-open connections held at once
 *                      (RCC_DEFAULT_MAX_PENDING: each holds a descriptor, and
 *                      128 stays far inside the usual limit of 1024 per process)
 *   handshake_timeout_ms  how long one may take to complete its handshake
 *                      (the environment variable RCC_HANDSHAKE_TIMEOUT_MS,
 *                      1..3600000 ms, read at rcc_listen(); else
 *                      RCC_DEFAULT_HANDSHAKE_TIMEOUT_MS)
 * tcp and verbs' manual bring-up read the handshake themselves and apply all
 * three; rdma_cm (verbs' default) exchanges it in the kernel and the device,
 * asynchronously, and uses backlog only.
 */
struct rcc_listener_attr {
	int backlog;
	int max_pending;
	int handshake_timeout_ms;
};
#define RCC_DEFAULT_MAX_PENDING 128
#define RCC_DEFAULT_HANDSHAKE_TIMEOUT_MS 5000

/*
 * Listen on "host:port", "[v6addr]:port", ":port" or "host" (port 7471).
 * Port 0 picks a free port (see rcc_listener_port()). attr may be NULL (all
 * defaults). Returns 0 and sets *lst, or -EINVAL (a NULL argument, a negative
 * attribute), an address error (rcc_strerror() explains it), -EADDRINUSE, or
 * another negative errno. Does not block beyond name resolution of addr.
 * Thread-safe. *lst is the caller's until rcc_listener_close().
 */
int rcc_listen_ex(struct rcc_ctx *ctx, const char *addr, const struct rcc_listener_attr *attr,
		  struct rcc_listener **lst);
/* rcc_listen_ex() with only a backlog (0: 128). */
int rcc_listen(struct rcc_ctx *ctx, const char *addr, int backlog, struct rcc_listener **lst);
/* Close the listener and every half-open connection it holds (requests
 * already returned by rcc_get_request() stay valid). 0 or -EINVAL. */
int rcc_listener_close(struct rcc_listener *lst);
/* The port the listener is bound to (the one the system chose for port 0),
 * or -EINVAL for a NULL lst. Never blocks; thread-safe. */
int rcc_listener_port(const struct rcc_listener *lst);
/*
 * A descriptor to poll (POLLIN / EPOLLIN) in the caller's own loop: readable
 * when rcc_get_request() has something to do -- a new connection to accept
 * or handshake bytes to read -- so that a call with timeout 0 then makes
 * progress without waiting (it may still return -ETIMEDOUT when what arrived
 * was not yet a whole handshake, or was dropped). Owned by the listener;
 * never close it.
 */
int rcc_listener_fd(const struct rcc_listener *lst);

/*
 * Wait up to timeout_ms (-1: no limit; 0: never waits) for a connection
 * request, progressing every half-open connection meanwhile (see
 * rcc_listener_attr): the first peer whose handshake completes is returned,
 * whichever others are silent. The request must then be given to exactly one
 * of rcc_accept_req() / rcc_reject_req(). Returns 0 and sets *req,
 * -ETIMEDOUT when none completed in time, -EINVAL, or a negative errno when
 * the listening socket fails. Not thread-safe per listener: one caller at a
 * time (different listeners are independent).
 */
int rcc_get_request(struct rcc_listener *lst, int timeout_ms, struct rcc_conn_req **req);

/* rcc_conn_req_private_data(): what the client sent with its connect (at
 * most RCC_CONNECT_PRIVATE_DATA_MAX bytes, *len set; NULL when none);
 * rcc_conn_req_peer(): its address "ip:port". Both belong to the request:
 * valid until it is accepted or rejected. Never block. The bytes are the
 * peer's: check them before trusting them (and escape them before printing:
 * rcc_text_escape()). */
const void *rcc_conn_req_private_data(const struct rcc_conn_req *req, size_t *len);
const char *rcc_conn_req_peer(const struct rcc_conn_req *req);
/* The context of the listener the request came to (for accepting elsewhere). */
struct rcc_ctx *rcc_conn_req_ctx(const struct rcc_conn_req *req);

/*
 * Accept: creates the endpoint; attr->private_data goes back to the client.
 * The request is consumed whatever the result (a refused attr rejects the
 * client). Blocks until the connection is up: on tcp only to send the
 * answer; on verbs until the client confirms (rdma_cm's RTU, the manual
 * bring-up's READY), at most 5 s -- use rcc_accept_start() in a server that
 * must never wait on a client.
 */
int rcc_accept_req(struct rcc_conn_req *req, const struct rcc_ep_attr *attr, struct rcc_ep **ep);

/*
 * rcc_accept_req() that returns at once (non-blocking accept): *ep is in
 * RCC_EP_CONNECTING until the client confirmed, then a connection event of
 * the listener's context says RCC_EVENT_ESTABLISHED, or
 * RCC_EVENT_CONNECT_FAILED with ev.status (the client went away, or never
 * confirmed within 5 s). Checks attr before it returns (the request is
 * rejected and consumed on any failure); posting fails with -ENOTCONN until
 * established, while the initial receives may complete before that (a
 * client sends as soon as it is connected): answer such early messages once
 * the event is taken; close waits for the attempt (at most 5 s). Turns the
 * context's events on. Thread-safe.
 */
int rcc_accept_start(struct rcc_conn_req *req, const struct rcc_ep_attr *attr, struct rcc_ep **ep);
/* Reject with optional private data; the client's rcc_connect() gets
 * -ECONNABORTED, and rcc_connect_ex() the private data too. */
int rcc_reject_req(struct rcc_conn_req *req, const void *private_data, size_t len);

/* rcc_get_request() followed by rcc_accept_req(). */
int rcc_accept(struct rcc_listener *lst, const struct rcc_ep_attr *attr, int timeout_ms,
	       struct rcc_ep **ep);

/*
 * Connect to "host:port" within timeout_ms (-1: no limit); blocks until the
 * connection is up or has failed. Errors, each also explained in words by
 * rcc_last_error():
 *   -ECONNREFUSED   nothing listens there;
 *   -ECONNRESET     something listened but closed the connection before
 *                   answering (a server at its limit of pending handshakes,
 *                   or not an rcc server);
 *   -ECONNABORTED   the server rejected the connection (rcc_reject_req);
 *   -ETIMEDOUT      no answer in time;
 *   -EHOSTUNREACH / -ENETUNREACH  no route there (verbs: not through this
 *                   context's device);
 *   -EPROTO         the answer was not an rcc handshake;
 *   -EINVAL / -ENOENT  a bad argument (which one: rcc_last_error()) or an
 *                   unknown host.
 */
int rcc_connect(struct rcc_ctx *ctx, const char *addr, const struct rcc_ep_attr *attr,
		int timeout_ms, struct rcc_ep **ep);

/*
 * Start connecting and return at once (non-blocking connect): *ep is the
 * endpoint, in RCC_EP_CONNECTING until the attempt ends. The end is a
 * connection event of ctx (this call turns events on; see rcc_ctx_get_event):
 * RCC_EVENT_ESTABLISHED -- the endpoint is RCC_EP_CONNECTED, the peer's
 * private data readable -- or RCC_EVENT_CONNECT_FAILED with ev.status, one of
 * rcc_connect()'s statuses; the endpoint is then RCC_EP_DISCONNECTED (after a
 * reject its private data is the server's reject data) and only closing it
 * is left. Arguments and the address are checked before this returns
 * (-EINVAL, -ENOENT: name resolution may block as getaddrinfo() does);
 * timeout_ms bounds the attempt and must be >= 0. attr is copied, its
 * initial receives included (their buffers must stay registered). Posting
 * fails with -ENOTCONN until the endpoint is established (rcc_ep_state()
 * says RCC_EP_CONNECTED, at the latest when the event is taken); the initial
 * receives may complete before that, so a reply to an early message waits
 * for the event. Read its private data only after the event. rcc_ep_disconnect() and rcc_ep_close() of a
 * connecting endpoint wait for the attempt to end (at most timeout_ms).
 * Thread-safe. One attempt holds a thread of its own while it runs.
 */
int rcc_connect_start(struct rcc_ctx *ctx, const char *addr, const struct rcc_ep_attr *attr,
		      int timeout_ms, struct rcc_ep **ep);

/*
 * rcc_connect(), and when the server rejected (-ECONNABORTED) the private
 * data it gave rcc_reject_req() -- typically why: reject_data must have room
 * for RCC_REJECT_PRIVATE_DATA_MAX bytes, and *reject_len is set to the
 * number copied (0: none). Both are left alone on any other result. Pass
 * both or neither. A rejecting peer that is not rcc, over rdma_cm, may give a
 * fixed-size block with trailing padding.
 */
int rcc_connect_ex(struct rcc_ctx *ctx, const char *addr, const struct rcc_ep_attr *attr,
		   int timeout_ms, struct rcc_ep **ep, void *reject_data, size_t *reject_len);

/*
 * Disconnect: the endpoint leaves RCC_EP_CONNECTED, the peer is told, and
 * every outstanding work request of this endpoint has completed with
 * RCC_WC_WR_FLUSH_ERR (already queued on its CQs) when this returns. Later
 * posts fail with -ENOTCONN. The object stays valid until rcc_ep_close().
 * -EIO: a CQ of the endpoint overran (rule 1), so some of those flush
 * completions may be lost; the endpoint is disconnected all the same.
 * Blocks only on shared memory, while the peer is inside a copy into or
 * out of this process's memory: microseconds, or at most the endpoint's
 * peer timeout for a peer frozen there (the copy must not land after this
 * returns).
 */
int rcc_ep_disconnect(struct rcc_ep *ep);

/* Disconnect if needed, remove this endpoint's remaining completions from its
 * CQs and free it. May block as rcc_ep_disconnect() does. */
int rcc_ep_close(struct rcc_ep *ep);

/* The endpoint's state now; it may change at any time from another thread
 * (a peer leaving). Never blocks. */
enum rcc_ep_state rcc_ep_state(const struct rcc_ep *ep);

/*
 * The path the endpoint's bytes take: "shm" (tcp transport, same-host
 * shared memory), "tcp" (tcp transport over the kernel's TCP), "udp" (an
 * RCC_QP_UD endpoint of the tcp transport) or "verbs".
 * ep: an endpoint that is connected or was (a NULL ep or one still
 * connecting gives "tcp" or "verbs" by its context, NULL ep gives "none").
 * Returns a static string, never NULL, valid for the life of the program.
 * Never blocks; safe from any thread (the path is fixed once connected).
 */
const char *rcc_ep_path(const struct rcc_ep *ep);

/* Text for a state, e.g. "connected". Never NULL; static storage. */
const char *rcc_ep_state_str(enum rcc_ep_state s);

/*
 * Why ep left service: a sentence in static storage (e.g. "the peer closed
 * the connection", "nothing heard from the peer within the peer timeout",
 * "local disconnect"), and in *status (when status is not NULL) one of
 *   0             the application disconnected or closed it;
 *   -ECONNRESET   the peer disconnected, or its connection or process ended;
 *   -ETIMEDOUT    nothing heard from the peer within peer_timeout_ms (or the
 *                 transport's retries ran out);
 *   -EPROTO       the peer broke the protocol (tcp: a malformed frame);
 *   -EIO          a request failed (its completion says how) or a CQ overran;
 *   -ENODEV       the device went away;
 * or another negative errno the transport met. NULL, *status untouched,
 * while ep has not left service (or is NULL). The same status is the
 * RCC_EVENT_DISCONNECTED / RCC_EVENT_ERROR event's. The first reason stays,
 * except that an endpoint that fails after it was disconnected says why it
 * failed. Never blocks; thread-safe.
 */
const char *rcc_ep_reason(const struct rcc_ep *ep, int *status);

/* rcc_ep_context() returns, and rcc_ep_set_context() sets, a pointer of the
 * application's kept with the endpoint (NULL at first) and never touched by
 * rcc: find your connection object from wc->ep. Safe from any thread (the
 * store is released, the load acquired); valid until rcc_ep_close(). */
void *rcc_ep_context(const struct rcc_ep *ep);
void rcc_ep_set_context(struct rcc_ep *ep, void *context);

/*
 * Connection events: which endpoints of a context left service, so that a
 * server runs accept (rcc_listener_fd), completions (rcc_cq_fd) and
 * disconnects (rcc_ctx_event_fd) from one epoll loop with no thread of its
 * own. Events are off until the application first calls rcc_ctx_event_fd()
 * or rcc_ctx_get_event(); from then on, every endpoint of the context that
 * leaves RCC_EP_CONNECTED -- the peer disconnected or vanished, a request
 * failed, the CQ overran, or rcc_ep_disconnect() was called -- is queued
 * once, oldest first, and so is every rcc_connect_start() when its attempt
 * ends (established or failed). An endpoint gives at most two events: leaving service,
 * and (verbs) a later change from disconnected to error when a failure
 * surfaces after the peer's disconnect. The queue holds at most one entry
 * per open endpoint, whatever peers do; rcc_ep_close() removes the
 * endpoint's entry, so no event names a closed endpoint -- except one
 * already returned to you (as with completions, rule 6 below).
 * Outstanding work of the endpoint completes on its CQs as rule 4 says;
 * the event does not wait for those completions to be polled.
 * Besides endpoints, an SRQ whose armed limit was reached is queued once
 * (RCC_EVENT_SRQ_LIMIT, rcc_srq_arm_limit()), in the same oldest-first
 * order; rcc_srq_destroy() removes the SRQ's entry.
 */
enum rcc_event_type {
	RCC_EVENT_DISCONNECTED = 1, /* ep is RCC_EP_DISCONNECTED */
	RCC_EVENT_ERROR,            /* ep is RCC_EP_ERROR */
	RCC_EVENT_ESTABLISHED,      /* a started connect succeeded: ep is ready */
	RCC_EVENT_CONNECT_FAILED,   /* a started connect failed: see status */
	RCC_EVENT_SRQ_LIMIT,        /* srq fell below its armed limit; ep is NULL */
};

/*
 * An event reports the endpoint's state when it is taken: a connection that
 * was established and then lost before you took the event shows as
 * RCC_EVENT_DISCONNECTED (or _ERROR) only.
 */
struct rcc_event {
	enum rcc_event_type type;
	struct rcc_ep *ep;   /* still open: yours to close */
	void *context;       /* rcc_ep_context(ep) when the event was taken */
	int status;          /* RCC_EVENT_CONNECT_FAILED: what rcc_connect() would return;
			      * _DISCONNECTED, _ERROR: why (rcc_ep_reason()) */
	struct rcc_srq *srq; /* RCC_EVENT_SRQ_LIMIT: the SRQ (still yours); else NULL */
};

/*
 * Take the oldest connection event of ctx, waiting up to timeout_ms for one
 * (0: do not wait; -1: no limit). Returns 0 and fills *ev, -ETIMEDOUT, or
 * -EINVAL. Turns events on. Thread-safe: each event goes to one caller.
 */
int rcc_ctx_get_event(struct rcc_ctx *ctx, struct rcc_event *ev, int timeout_ms);

/*
 * A descriptor readable (POLLIN / EPOLLIN, level-triggered) exactly while
 * ctx has connection events to take; take them with rcc_ctx_get_event(ctx,
 * ev, 0) until -ETIMEDOUT. Turns events on. Owned by the context, valid until
 * rcc_ctx_close(); never read or close it. Returns the descriptor or a
 * negative errno (-EMFILE, ...).
 */
int rcc_ctx_event_fd(struct rcc_ctx *ctx);

/* Private data the peer sent (client: from accept; server: from connect). */
const void *rcc_ep_private_data(const struct rcc_ep *ep, size_t *len);
/* Largest payload that may be posted with RCC_SEND_INLINE. */
uint32_t rcc_ep_max_inline(const struct rcc_ep *ep);
/* The peer's address as "ip:port" ("" for an RCC_QP_UD endpoint: it has none). */
const char *rcc_ep_peer(const struct rcc_ep *ep);
/* The CQs the endpoint was created with (rcc_ep_send_cq(), rcc_ep_recv_cq():
 * the same CQ when one serves both) and its context (rcc_ep_ctx()); NULL for
 * a NULL ep. The application's own objects, not counted again: they stay
 * open at least as long as the endpoint. Never block; thread-safe. */
struct rcc_cq *rcc_ep_send_cq(const struct rcc_ep *ep);
struct rcc_cq *rcc_ep_recv_cq(const struct rcc_ep *ep);
struct rcc_ctx *rcc_ep_ctx(const struct rcc_ep *ep);

/* ------------------------------------------------------------------------ */
/* Posting work                                                              */
/* ------------------------------------------------------------------------ */

/*
 * Rules every transport keeps. A program that follows them behaves the same on
 * tcp, on Soft-RoCE and on a NIC; tcp enforces each one (it fails a program
 * that breaks them the way a device would) so that a program tested on tcp
 * does not break on a NIC. tests/integration/test_rules.c checks one rule per
 * case on every transport.
 *
 * 1. CQ capacity. Never let more than the CQ's depth completions wait
 *    unpolled in it: count every signalled send, every receive and every
 *    flush of every endpoint that uses the CQ. Breaking this overruns the CQ:
 *    completions are lost, every endpoint using the CQ goes to RCC_EP_ERROR
 *    (soon, not within the call that overran it), its outstanding work is
 *    flushed (flush completions that find no room may be lost too), later posts
 *    fail with -ENOTCONN and rcc_ep_disconnect() may return -EIO. The CQ
 *    itself stays usable: polling returns what it holds. tcp overruns at
 *    exactly depth + 1; a device may hold a few more first (depths are
 *    minimums), which a correct program never notices.
 *
 * 2. Queue slots. A posted send work request holds its slot until a
 *    completion of that request or of a later one on the same endpoint has
 *    been returned by rcc_cq_poll()/rcc_cq_wait(); an unsignalled request
 *    therefore frees nothing by itself. A posted receive holds its slot
 *    until its own completion has been returned. A full queue refuses posts
 *    with -ENOMEM (a list posts what fits, says how many, and returns
 *    -ENOMEM). Signal at least one request in every sq_depth (or use
 *    sig_all) and poll it, or the send queue stays full for good. Every
 *    transport counts slots this way at the depths the endpoint asked for,
 *    as NICs that free slots at poll time (e.g. mlx5) do; on verbs rcc
 *    counts them itself, since Soft-RoCE frees executed requests' and
 *    consumed receives' slots on its own.
 *
 * 3. Solicited events. RCC_SEND_SOLICITED is accepted on every transport and
 *    sets the solicited-event bit of the message (SEND, SEND_IMM,
 *    WRITE_IMM), which a verbs peer that armed its CQ for solicited events
 *    only uses to decide whether to wake. rcc itself has no such arm: an rcc
 *    receiver's rcc_cq_wait() and CQ descriptor wake for every completion,
 *    solicited or not, on every transport. The flag never changes what
 *    completes or in which order.
 *
 * 4. After an endpoint error (RCC_EP_ERROR: a work request failed, the peer
 *    broke the protocol, or rule 1): the failing request completes with its
 *    own status; every other outstanding send and receive of the endpoint,
 *    signalled or not, completes with RCC_WC_WR_FLUSH_ERR, each queue in
 *    posting order (the two queues may interleave); posts fail with
 *    -ENOTCONN; the peer is told and leaves service as well (its
 *    outstanding work is flushed too). The same holds after a disconnect by
 *    either side (RCC_EP_DISCONNECTED), except that nothing carries an error
 *    status of its own. Only rcc_ep_close() brings nothing back.
 *
 * 5. Ordering on one endpoint. Send completions come in posting order.
 *    SEND, SEND_IMM and WRITE_IMM each consume the oldest posted receive and
 *    complete at the receiver in the order the peer posted them, whatever
 *    their mix; a WRITE_IMM completes as RCC_WC_RECV_WRITE_IMM with its data
 *    in place. When a receive completion is returned, the data of every
 *    WRITE the peer posted before that message is in place too. Nothing is
 *    promised between different endpoints, or between the send and receive
 *    completions of one endpoint.
 *
 * 6. Completions and closed endpoints. rcc_ep_close() removes the
 *    endpoint's remaining completions from its CQs: no later poll returns
 *    one naming it. Completions you have already polled into your own array
 *    are not the library's to change: if you close an endpoint while
 *    handling a batch, the later entries that name it point at freed
 *    memory. Compare their ep with the closed pointer (do not dereference
 *    it) and skip them, before creating any endpoint that could reuse the
 *    address, or defer closes until the batch is handled.
 */

enum rcc_wr_opcode {
	RCC_WR_SEND = 0,
	RCC_WR_SEND_IMM,
	RCC_WR_WRITE,
	RCC_WR_WRITE_IMM,
	RCC_WR_READ,
	RCC_WR_CAS,  /* 8 bytes: if *remote == compare_add then *remote = swap */
	RCC_WR_FADD, /* 8 bytes: *remote += compare_add */
};

enum rcc_send_flags {
	RCC_SEND_SIGNALED = 1 << 0, /* generate a completion on success */
	RCC_SEND_INLINE = 1 << 1,   /* copy the payload at post time; no lkey needed */
	RCC_SEND_FENCE = 1 << 2,    /* wait for earlier READ/atomics first */
	/* the solicited-event bit for the receiver: see rule 3 above */
	RCC_SEND_SOLICITED = 1 << 3,
};

/*
 * One send-queue work request. For CAS and FADD the SGE list must describe
 * exactly 8 bytes of local memory that receives the remote value before the
 * operation, and remote_addr must be 8-byte aligned (else -EINVAL at post).
 */
struct rcc_send_wr {
	uint64_t wr_id;
	const struct rcc_sge *sg_list;
	int num_sge;
	enum rcc_wr_opcode opcode;
	unsigned flags;       /* enum rcc_send_flags */
	uint32_t imm_data;    /* SEND_IMM / WRITE_IMM, host byte order */
	uint64_t remote_addr; /* WRITE*, READ, CAS, FADD */
	uint32_t rkey;
	uint64_t compare_add; /* CAS: compare value; FADD: value to add */
	uint64_t swap;        /* CAS: new value */
	/* RCC_QP_UD: where the datagram goes (required, of the endpoint's
	 * context), as ibv_send_wr.wr.ud; ignored by connected endpoints. */
	struct rcc_ah *ah;
};

struct rcc_recv_wr {
	uint64_t wr_id;
	const struct rcc_sge *sg_list;
	int num_sge;
};

/*
 * Post n work requests in order with one call. Returns 0 when all were
 * posted; otherwise a negative errno, with *posted (if not NULL) set to the
 * number accepted before the failing one. -ENOMEM: queue full; -EINVAL: a
 * malformed request; -ENOTCONN: the endpoint is no longer connected.
 * Problems only the transfer can reveal (a bad key, a short buffer) arrive
 * as error completions instead.
 */
int rcc_post_send_list(struct rcc_ep *ep, const struct rcc_send_wr *wr, int n, int *posted);
/* READ, CAS and FADD on an RCC_QP_UC endpoint: -EINVAL, explained by
 * rcc_last_error(); the requests before it in the list are posted. On an
 * RCC_QP_UD endpoint: anything but SEND and SEND_IMM, or a request without
 * an address handle (or with one of another context), is -EINVAL; a request
 * longer than rcc_ud_max_msg() is -EMSGSIZE; both explained by
 * rcc_last_error(), nothing of that request sent, those before it posted.
 * An endpoint created with an SRQ (rcc_ep_attr.srq) has no receive queue
 * of its own: posting a receive to it fails with -EINVAL, and
 * rcc_last_error() says to post to the SRQ (rcc_srq_post_recv()). */
int rcc_post_recv_list(struct rcc_ep *ep, const struct rcc_recv_wr *wr, int n, int *posted);

/*
 * Single-request helpers: rcc_post_recv() is rcc_post_recv_list() with one
 * request; rcc_post_send(), rcc_post_send_imm(), rcc_post_write(),
 * rcc_post_write_imm(), rcc_post_read(), rcc_post_cas() and rcc_post_fadd()
 * are rcc_post_send_list() with one request of that opcode. flags are enum
 * rcc_send_flags; result (CAS, FADD) is 8 bytes that receive the old value.
 * Same returns, rules, thread-safety and lifetimes as the list calls (the
 * memory named by sge/result must stay registered until the completion);
 * never block.
 */
int rcc_post_recv(struct rcc_ep *ep, const struct rcc_sge *sge, int num_sge, uint64_t wr_id);
int rcc_post_send(struct rcc_ep *ep, const struct rcc_sge *sge, int num_sge, uint64_t wr_id,
		  unsigned flags);
int rcc_post_send_imm(struct rcc_ep *ep, const struct rcc_sge *sge, int num_sge, uint32_t imm,
		      uint64_t wr_id, unsigned flags);
int rcc_post_write(struct rcc_ep *ep, const struct rcc_sge *sge, int num_sge, uint64_t remote_addr,
		   uint32_t rkey, uint64_t wr_id, unsigned flags);
int rcc_post_write_imm(struct rcc_ep *ep, const struct rcc_sge *sge, int num_sge,
		       uint64_t remote_addr, uint32_t rkey, uint32_t imm, uint64_t wr_id,
		       unsigned flags);
int rcc_post_read(struct rcc_ep *ep, const struct rcc_sge *sge, int num_sge, uint64_t remote_addr,
		  uint32_t rkey, uint64_t wr_id, unsigned flags);
int rcc_post_cas(struct rcc_ep *ep, const struct rcc_sge *result, uint64_t remote_addr,
		 uint32_t rkey, uint64_t compare, uint64_t swap, uint64_t wr_id, unsigned flags);
int rcc_post_fadd(struct rcc_ep *ep, const struct rcc_sge *result, uint64_t remote_addr,
		  uint32_t rkey, uint64_t add, uint64_t wr_id, unsigned flags);

/* ------------------------------------------------------------------------ */
/* Shared receive queues                                                     */
/* ------------------------------------------------------------------------ */

/*
 * A shared receive queue (SRQ): one pool of posted receives that any number
 * of endpoints of a context draw from (rcc_ep_attr.srq), so that a server
 * with many clients bounds its receive memory by the SRQ's depth instead of
 * one receive queue per connection. As on verbs:
 *  - each incoming SEND, SEND_IMM or WRITE_IMM, whichever endpoint it
 *    arrives on, takes the oldest receive posted to the SRQ (FIFO across all
 *    endpoints); its completion goes to that endpoint's recv CQ and names
 *    that endpoint (wc.ep); wr_id tells the application which buffer;
 *  - when the SRQ is empty, the sender sees receiver-not-ready exactly as
 *    with an empty receive queue of its own (rnr_retry, RNR NAK, retries);
 *    a datagram arriving on a UD endpoint of an SRQ made for datagrams
 *    (rcc_srq_attr.for_datagrams) takes the oldest receive the same way,
 *    and is dropped when none is posted (rule U3: no RNR on UD);
 *  - a posted receive holds its slot of max_wr until its completion has
 *    been returned by rcc_cq_poll()/rcc_cq_wait() (rule 2 below);
 *  - an endpoint that leaves service flushes only the receive it was filling
 *    (if any); the others stay posted to the SRQ for the other endpoints.
 *    On verbs that one flush completion may reach the CQ shortly after
 *    rcc_ep_disconnect() returns (docs/verbs.md: the device gives nothing
 *    to wait for); rcc_ep_close() removes it all the same.
 */
struct rcc_srq_attr {
	uint32_t max_wr;  /* posted receives it holds; 0: RCC_DEFAULT_QUEUE_DEPTH */
	uint32_t max_sge; /* scatter/gather elements per receive; 0: 4 */
	/* false (the default): the SRQ serves connected (RCC_QP_RC, RCC_QP_UC)
	 * endpoints only. true: it serves datagram (RCC_QP_UD) endpoints only
	 * (rcc_ud_create()), each receive as a UD endpoint's own (rule U5:
	 * payload at offset 0, byte_len the payload's, wc.src the sender).
	 * Either kind attached to the other's SRQ is -EINVAL, explained by
	 * rcc_last_error(). verbs: every receive posted to such an SRQ gets a
	 * first scatter element of rcc's own for the 40-byte GRH, which
	 * receives of connected endpoints must not get (docs/ud.md). */
	bool for_datagrams;
};

/*
 * Create an SRQ holding at least attr->max_wr receives (a device may round
 * it up) of up to attr->max_sge elements each. attr may be NULL (defaults).
 * Returns 0 and sets *srq; -EINVAL (a NULL ctx or srq, max_wr above 16384
 * or max_sge above 16 -- rcc_last_error() says which), -ENOMEM, or the
 * device's error (-EOPNOTSUPP: the device has no SRQs). Does not block.
 * Thread-safe. *srq is the caller's until rcc_srq_destroy(), which must come
 * after every endpoint using it was closed and before rcc_ctx_close().
 */
int rcc_srq_create(struct rcc_ctx *ctx, const struct rcc_srq_attr *attr, struct rcc_srq **srq);

/*
 * Destroy an SRQ: receives still posted to it are dropped without a
 * completion (their buffers are the caller's again). Returns 0, -EINVAL
 * (NULL), or -EBUSY while an endpoint that uses it is open (nothing is
 * changed then). A limit event naming it that was not taken yet is
 * dropped. Does not block on peers. Call it once no other thread uses srq.
 */
int rcc_srq_destroy(struct rcc_srq *srq);

/*
 * Post n receives to srq in order with one call, as rcc_post_recv_list():
 * 0 when all were posted; otherwise a negative errno with *posted (if not
 * NULL) set to the number accepted before the failing one. -ENOMEM: max_wr
 * receives are held already (posted, or completed and not yet polled);
 * -EINVAL: a NULL srq or wr, n <= 0, or a request with more than max_sge
 * elements or more than RCC_MAX_MSG_SIZE bytes. The buffers must stay
 * registered (RCC_ACCESS_LOCAL_WRITE) until their completion; sg_list is
 * copied, so it may be reused at once. A receive naming memory that is not
 * registered completes in error on the endpoint whose message takes it
 * (which then leaves service, as with its own receive queue). Never blocks.
 * Thread-safe: any number of threads may post to one SRQ at once.
 */
int rcc_srq_post_recv_list(struct rcc_srq *srq, const struct rcc_recv_wr *wr, int n, int *posted);

/* rcc_srq_post_recv_list() with one request. */
int rcc_srq_post_recv(struct rcc_srq *srq, const struct rcc_sge *sge, int num_sge, uint64_t wr_id);

/*
 * Arm the SRQ's low-watermark (verbs' srq_limit): the next time a message
 * takes a receive and leaves fewer than limit posted and not yet taken, the
 * SRQ's context gets one RCC_EVENT_SRQ_LIMIT naming it (rcc_ctx_get_event(),
 * rcc_ctx_event_fd()), and the limit is disarmed (one-shot: arm again after
 * posting more). Arm it while at least limit receives are posted (devices
 * differ about an SRQ already below the limit). limit 0 disarms. Returns 0,
 * -EINVAL (NULL, or limit above max_wr) or the device's error. Turns the
 * context's events on (as rcc_ctx_get_event() does), so the event is never
 * lost for want of a reader; one untaken limit event per SRQ at most. Never
 * blocks. Thread-safe.
 */
int rcc_srq_arm_limit(struct rcc_srq *srq, uint32_t limit);

/* ------------------------------------------------------------------------ */
/* Datagram endpoints (UD)                                                   */
/* ------------------------------------------------------------------------ */

/*
 * An RCC_QP_UD endpoint is an unconnected queue pair: one endpoint sends to
 * and receives from any number of peers, each datagram on its own. The rules
 * below hold on every transport (docs/ud.md says how each keeps them); rules
 * 1, 2, 3 and 6 of "Posting work" hold as for connected endpoints.
 *
 * U1. No connection. A peer is named by an address handle (rcc_ah_create()
 *     from the peer's struct rcc_ud_addr); nothing tells an endpoint that a
 *     peer came or went. The endpoint is RCC_EP_CONNECTED ("in service") from
 *     rcc_ud_create() until a CQ of it overruns, a request meets memory that
 *     is not registered or a datagram is longer than the receive it meets
 *     (RCC_EP_ERROR, with an event when events are on), or until
 *     rcc_ep_disconnect() (RCC_EP_DISCONNECTED); then rule 4 holds for its
 *     own work: outstanding requests are flushed, posts fail with -ENOTCONN,
 *     and only rcc_ep_close() is left.
 *
 * U2. SEND and SEND_IMM only, each one datagram of at most rcc_ud_max_msg()
 *     bytes (verbs: the port's active MTU; tcp: RCC_UD_TCP_MAX_MSG). A
 *     longer one is refused at post with -EMSGSIZE (a device would drop it
 *     without a word); WRITE, READ and atomics with -EINVAL.
 *
 * U3. Loss. A datagram may vanish without a trace: on the wire; at a
 *     receiver with no receive posted (no RNR wait: it is dropped, as a
 *     device drops it; with an SRQ: none posted to the SRQ); when its Q_Key is not the receiver's; when the
 *     receiver is gone. A send completion means the datagram left, never
 *     that it arrived. tcp carries datagrams over UDP (loopback included)
 *     and retransmits nothing. A datagram longer than the receive it meets
 *     is not lost quietly: that receive completes in error (tcp:
 *     RCC_WC_LOC_LEN_ERR; Soft-RoCE: RCC_WC_LOC_QP_OP_ERR) and the endpoint
 *     leaves service (U1), as a device moves the QP to error. Post receives
 *     of rcc_ud_max_msg() bytes.
 *
 * U4. Order is not promised between datagrams, not even from one endpoint
 *     to one endpoint (a NIC usually keeps it; UDP across a network may
 *     not). Send completions of an endpoint come in posting order, and each
 *     datagram that arrives takes the oldest posted receive (of its SRQ,
 *     when it has one).
 *
 * U5. A receive gets the payload at offset 0 of its buffers on every
 *     transport (verbs' 40-byte GRH lands in rcc's own memory, never in
 *     yours), byte_len is the payload's length, and wc.src names the sender.
 */

/* The Q_Key of an endpoint whose rcc_ep_attr.qkey is 0. */
#define RCC_UD_DEFAULT_QKEY 0x52434355u
/* rcc_ud_max_msg() on the tcp transport: a UDP datagram carries it anywhere. */
#define RCC_UD_TCP_MAX_MSG 4096u

/*
 * Create a datagram endpoint of ctx. attr->qp_type must be RCC_QP_UD. Used:
 * send_cq (required), recv_cq, sq_depth, rq_depth, max_send_sge,
 * max_recv_sge, max_inline, sig_all, context, qkey and the initial receives
 * (posted before this returns); srq: NULL, or an SRQ of ctx created with
 * rcc_srq_attr.for_datagrams (-EINVAL for one without: rcc_last_error()
 * says so), whose receives the endpoint then takes as rcc_ep_attr.srq says
 * (no initial receives, rcc_post_recv() refused, rules U3-U5 unchanged);
 * private_data_len must be 0 (-EINVAL: a UD endpoint carries no private
 * data); the connection fields (retries, timers, peer timeout, READ/atomic depth) are
 * ignored. Returns 0 and sets *ep (RCC_EP_CONNECTED: ready to post at once),
 * -EINVAL (a NULL argument, a bad attribute -- rcc_last_error() says
 * which), -ENOMEM, or the transport's error (tcp: the UDP socket's, e.g.
 * -EMFILE). Does not block. Thread-safe. *ep is the caller's until
 * rcc_ep_close(); its CQs must outlive it.
 */
int rcc_ud_create(struct rcc_ctx *ctx, const struct rcc_ep_attr *attr, struct rcc_ep **ep);

/*
 * The largest payload one datagram of ep may carry (rule U2): verbs: the
 * active MTU of the context's port (256..4096); tcp: RCC_UD_TCP_MAX_MSG.
 * 0 when ep is NULL or not an RCC_QP_UD endpoint. Never blocks; fixed for
 * the endpoint's life.
 */
uint32_t rcc_ud_max_msg(const struct rcc_ep *ep);

/*
 * ep's own address, for peers to send to (give it to them out of band, or
 * with rcc_ud_resolve() / rcc_ud_answer()). tcp: the host part is the first
 * IPv4 address of an interface that is up and not loopback (else the first
 * global IPv6 address, else 127.0.0.1); the endpoint receives on every
 * address of the host, and the exchange helpers put the address the peer
 * reached instead. Returns 0 and fills *addr, or -EINVAL (NULL, or ep is
 * not an RCC_QP_UD endpoint). Never blocks; thread-safe.
 */
int rcc_ud_addr(const struct rcc_ep *ep, struct rcc_ud_addr *addr);

/*
 * addr in words, for logs and tools: "verbs gid ::ffff:10.0.0.1 lid 0 sl 0
 * qpn 0x11 qkey 0x52434355", "tcp 10.0.0.1:40211 ep 0x8a2f qkey
 * 0x52434355". At most len - 1 characters and a NUL (cut when buf is
 * short). Returns the length of the whole text (as snprintf), or -EINVAL
 * when addr is not a well-formed address (nothing is written but buf[0] =
 * '\0' when len > 0) or buf is NULL with len > 0. Never blocks; thread-safe.
 */
int rcc_ud_addr_str(const struct rcc_ud_addr *addr, char *buf, size_t len);

/*
 * An address handle: where datagrams go (rcc_send_wr.ah, rcc_post_send_to()).
 * addr is a peer's address -- from the peer, or a receive completion's
 * wc.src -- and is checked, never trusted: -EINVAL (rcc_last_error() says
 * why) when it is malformed or of another transport, -EAFNOSUPPORT (tcp)
 * when this host cannot reach its address family, otherwise 0 and *ah. The
 * handle may be used on every RCC_QP_UD endpoint of ep's context (as a verbs
 * AH belongs to the protection domain). Does not block (verbs: the device
 * may take a system call). Thread-safe. *ah is the caller's until
 * rcc_ah_destroy(); the context cannot be closed while it exists (-EBUSY).
 */
int rcc_ah_create(struct rcc_ep *ep, const struct rcc_ud_addr *addr, struct rcc_ah **ah);

/*
 * Destroy an address handle. As on verbs, keep it until every send posted
 * with it has completed (its completion, or a later one of the same
 * endpoint, was returned by a poll); rcc does not check that. Returns 0, or
 * -EINVAL for NULL. Does not block. Call it once no other thread uses ah.
 */
int rcc_ah_destroy(struct rcc_ah *ah);

/*
 * Post one SEND (one SEND_IMM) datagram to ah on the RCC_QP_UD endpoint ep:
 * rcc_post_send_list() with one request whose ah is set. flags are enum
 * rcc_send_flags. Returns 0; -EINVAL when ep is not a UD endpoint or ah is
 * NULL or of another context; -EMSGSIZE beyond rcc_ud_max_msg(ep); -ENOMEM
 * when the send queue is full; -ENOTCONN out of service. Never blocks.
 * rcc_post_send_to_imm() is the same with a SEND_IMM carrying imm.
 */
int rcc_post_send_to(struct rcc_ep *ep, struct rcc_ah *ah, const struct rcc_sge *sge, int num_sge,
		     uint64_t wr_id, unsigned flags);
int rcc_post_send_to_imm(struct rcc_ep *ep, struct rcc_ah *ah, const struct rcc_sge *sge,
			 int num_sge, uint32_t imm, uint64_t wr_id, unsigned flags);

/*
 * Exchange addresses with a server that calls rcc_ud_answer(): the client
 * asks the listener at addr ("host:port", as rcc_connect()) with ud_ep's
 * address as connect private data, the server turns the request down with
 * its own endpoint's address as reject private data, and nothing stays
 * connected. On the tcp transport the host part of the server's address is
 * replaced by the address this call reached it at. Blocks up to timeout_ms
 * (-1: no limit; as rcc_connect()). Returns 0 and fills *peer; -ECONNABORTED
 * when the server turned the request down without a valid address of this
 * transport (not a UD server: rcc_last_error() quotes its reject data,
 * escaped); else rcc_connect()'s statuses (-ECONNREFUSED, -ETIMEDOUT...,
 * explained by rcc_last_error()). Thread-safe; ud_ep must be an RCC_QP_UD
 * endpoint (-EINVAL).
 */
int rcc_ud_resolve(struct rcc_ep *ud_ep, const char *addr, int timeout_ms,
		   struct rcc_ud_addr *peer);

/*
 * The server's side of rcc_ud_resolve(): take connection requests from lst
 * until one carries a valid address of this transport, answer it with
 * ud_ep's address (reject private data: nothing is connected) and return
 * the client's address in *peer (on tcp with the host part the client was
 * reached from). Every other request that arrives meanwhile -- an RC or UC
 * client, garbage -- is rejected and skipped, so a listener given to this
 * call should serve address exchanges only. Waits up to timeout_ms overall
 * (-1: no limit; 0: only requests already complete). Returns 0, -ETIMEDOUT,
 * -EINVAL (NULL arguments, ud_ep not RCC_QP_UD or of another context), or
 * the listener's error. Not thread-safe per listener (rcc_get_request()'s
 * rule).
 */
int rcc_ud_answer(struct rcc_listener *lst, struct rcc_ep *ud_ep, int timeout_ms,
		  struct rcc_ud_addr *peer);

/* ------------------------------------------------------------------------ */
/* Devices (verbs): what rcc-info shows                                      */
/* ------------------------------------------------------------------------ */

struct rcc_gid_info {
	int index;
	uint8_t gid[16];
	char type[16];   /* "IB", "RoCE v1", "RoCE v2" */
	char netdev[32]; /* Ethernet device behind a RoCE GID, or "" */
};

struct rcc_port_info {
	int port;
	char state[16];      /* "ACTIVE", "DOWN", ... */
	char link_layer[16]; /* "InfiniBand", "Ethernet" */
	int active_mtu;      /* bytes */
	int max_mtu;         /* bytes */
	uint16_t lid;
	int num_gids;
	struct rcc_gid_info *gids;
};

struct rcc_device_info {
	char name[64];
	char node_type[16]; /* "CA", "RNIC", ... */
	uint64_t node_guid; /* host byte order */
	char fw_ver[64];
	int max_qp;
	int max_qp_wr;
	int max_sge;
	int max_cqe;
	int max_mr;
	uint64_t max_mr_size;
	int max_qp_rd_atom;
	int num_ports;
	struct rcc_port_info *ports;
};

/*
 * List RDMA devices. *count may be 0. -ENOSYS when rcc was built without
 * verbs; -ENODEV when the kernel has no RDMA support. Free with
 * rcc_device_list_free().
 */
int rcc_device_list(struct rcc_device_info **devices, int *count);
void rcc_device_list_free(struct rcc_device_info *devices, int count);

#ifdef __cplusplus
}
#endif

#endif /* RCC_RCC_H */
