/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rcc-perf: a perftest-class latency and bandwidth benchmark over the rcc API.
 *
 * One binary: without a host it is the server, with one it is the client. The
 * client owns the plan (which tests, sizes, iterations, depths...) and sends it
 * to the server as the private data of the control connection, so the server
 * needs only transport options. Both sides then walk the same plan in lock step:
 * for each test point they meet at a barrier on the control endpoint, run their
 * role, and finish with a DONE/RESULT exchange.
 *
 * Endpoints of one run:
 *   control  one endpoint carrying a message channel (rcc_chan) on its own
 *            CQ (always WAIT mode, so a passive side sleeps): barrier,
 *            counts, results, heartbeats.
 *   data     -q endpoints sharing one CQ in the chosen mode (poll|wait|fd|hybrid); each
 *            has one registered region: [local area][target area], the target
 *            area being what the peer writes to, reads from and sends into.
 */
#ifndef RCC_PERF_H
#define RCC_PERF_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rcc/rcc.h"
#include "stats.h"

enum perf_op {
	OP_SEND = 0,
	OP_WRITE,
	OP_WRITE_IMM,
	OP_READ,
	OP_CAS,
	OP_FADD,
	OP_COUNT,
};

enum perf_kind {
	KIND_LAT = 0,
	KIND_BW,
	KIND_COUNT,
};

#define OPS_ALL ((1u << OP_COUNT) - 1)
/* What an unreliable-connected endpoint carries (-c UC): no READ, no atomics. */
#define OPS_UC ((1u << OP_SEND) | (1u << OP_WRITE) | (1u << OP_WRITE_IMM))
/* What a datagram endpoint carries (-c UD): send, one MTU at most. */
#define OPS_UD (1u << OP_SEND)
#define KINDS_ALL ((1u << KIND_COUNT) - 1)
/* --setup-timeout's default: a client the server accepted has this long to
 * open every data connection (a peer that sends a valid hello and stops
 * holds this one-client server no longer). */
#define PERF_SETUP_TIMEOUT_MS 5000

/* Flags of struct perf_params. */
enum {
	PF_ALL_SIZES = 1 << 0,   /* -a: 2 B .. 8 MiB */
	PF_BIDIR = 1 << 1,       /* -b */
	PF_VALIDATE = 1 << 2,    /* --validate */
	PF_DURATION = 1 << 3,    /* -D: duration_ms, not iters */
	PF_ITERS_SET = 1 << 4,   /* -n given: no scaling for large sizes */
	PF_TARGET_POLL = 1 << 5, /* passive side busy-polls its data CQ */
	PF_NO_PEAK = 1 << 6,     /* -N: skip the peak bandwidth search */
	PF_WARMUP_SET = 1 << 7,  /* --warmup given */
	PF_SIZE_LIST = 1 << 8,   /* --sizes: `size` is a mask, bit k = 2^k bytes */
	PF_HEAP_MEM = 1 << 9,    /* --heap: buffers from the heap, not rcc_mem_alloc() */
	PF_ONE_BUFFER = 1 << 10, /* --one-buffer: one message slot per area */
};

#define PERF_MIN_ALL_SIZE 2u
#define PERF_MAX_ALL_SIZE (8u << 20)
#define PERF_MAX_SIZE (1u << 30)
#define PERF_ATOMIC_SIZE 8u
#define PERF_INLINE_AUTO 0xffffu

/* The plan: everything the client decides and the server follows. */
struct perf_params {
	uint8_t ops;          /* bit per enum perf_op */
	uint8_t kinds;        /* bit per enum perf_kind */
	uint16_t flags;       /* PF_* */
	uint32_t size;        /* -s; a mask with PF_SIZE_LIST; ignored with PF_ALL_SIZES */
	uint32_t iters;       /* -n (per endpoint for bandwidth) */
	uint32_t duration_ms; /* -D */
	uint32_t warmup;      /* untimed iterations first (with PF_WARMUP_SET) */
	uint16_t qps;         /* -q data endpoints */
	uint16_t post_list;   /* -l */
	uint16_t cq_mod;      /* -Q */
	uint16_t tx_depth;    /* -t */
	uint16_t rx_depth;    /* -r */
	uint16_t inline_size; /* -I; PERF_INLINE_AUTO: the transport's default */
	uint16_t outs;        /* -o: outstanding READ/atomics */
	uint8_t cq_mode;      /* enum rcc_cq_mode of the data CQ */
	uint8_t qp_type;      /* -c: enum rcc_qp_type of the data endpoints (UD: datagrams) */
	uint32_t cookie;      /* ties the data connections to this control connection */
};

/* Local options; params is what goes to the server. */
struct perf_config {
	const char *prog;
	const char *host; /* NULL: server; else the host part of HOST[:PORT] */
	char host_buf[256];
	const char *bind; /* server: listen address */
	int port;
	struct rcc_ctx_attr ctx;
	struct perf_params p;
	int timeout_ms;       /* bound on any wait without progress */
	int accept_timeout_s; /* server: wait for a client at most this long (0: forever) */
	/* server: a client whose hello was accepted opens all its data
	 * connections within this, or the session is dropped */
	int setup_timeout_ms;
	bool persistent; /* server: serve clients one after another */
	bool report_gbits;
	bool quiet;
	const char *json_path; /* "-": stdout */
	const char *csv_path;
	const char *plot_dir;
	FILE *text; /* banners, tables, progress: stdout, or stderr when JSON takes stdout */
	/* under a launcher (docs/launch.md): rank 0 serves, rank 1 measures */
	struct rcc_bootstrap *boot;
};

/* options.c: parse or exit(2) with a message. */
void perf_parse(int argc, char **argv, struct perf_config *cfg);

/* ------------------------------------------------------------------------ */
/* plan.c: names, sizes, iterations (pure)                                   */
/* ------------------------------------------------------------------------ */

const char *op_name(enum perf_op op);       /* "send", "write", ... */
const char *op_title(enum perf_op op);      /* perftest's "Send", "RDMA_Write", ... */
const char *kind_name(enum perf_kind kind); /* "lat", "bw" */
/* "send,write,write_imm,read,cas,fadd", "atomic", "all" -> bitmask; 0 or -EINVAL. */
int parse_ops(const char *s, uint8_t *ops);
/* "8,4K,64K,1M" -> mask of powers of two (bit k: 2^k B, at most 1 GiB). */
int parse_size_list(const char *s, uint32_t *mask);
/* "lat", "bw", "lat,bw", "all" -> bitmask. */
int parse_kinds(const char *s, uint8_t *kinds);
/* Is this op/kind combination run under these parameters (and why not)? */
bool plan_runs(const struct perf_params *p, enum perf_op op, enum perf_kind kind,
	       const char **why_not);
/* Sizes of one op in order: *n entries of out (at most 32). */
void plan_sizes(const struct perf_params *p, enum perf_op op, uint32_t *out, int *n);
/* Largest size any test of the plan moves. */
uint32_t plan_max_size(const struct perf_params *p);
/* Timed iterations of one point: -n, or the default shortened for big messages. */
uint32_t plan_iters(const struct perf_params *p, enum perf_kind kind, uint32_t size);
/* Untimed iterations before the timed ones: --warmup, or a tenth of the
 * timed ones, between 1 and 100. */
uint32_t plan_warmup(const struct perf_params *p, enum perf_kind kind, uint32_t size);
/* Half round trip (2) for ping-pongs, full round trip (1) for READ and atomics. */
int plan_rtt_factor(enum perf_op op);
/* A consistency check of received parameters; NULL when fine, else why. */
const char *plan_check(const struct perf_params *p);

/* ------------------------------------------------------------------------ */
/* wire.c: fixed little-endian encodings (pure)                              */
/* ------------------------------------------------------------------------ */

#define PERF_WIRE_VERSION 2 /* 2: control messages over rcc_chan */
#define PERF_WIRE_STR "2"   /* the same, for --version */
#define PERF_PARAMS_WIRE_LEN 44
#define PERF_DATA_HELLO_LEN (10 + RCC_REMOTE_MR_WIRE_SIZE)
#define PERF_CTRL_MSG_LEN 40

void params_encode(const struct perf_params *p, uint8_t out[PERF_PARAMS_WIRE_LEN]);
/* 0, -EPROTO (not rcc-perf) or -EPROTONOSUPPORT (another version). */
int params_decode(const void *in, size_t len, struct perf_params *p);

/* Data connection hello: cookie, endpoint index and the sender's region. */
void data_hello_encode(uint32_t cookie, uint16_t index, const struct rcc_remote_mr *mr,
		       uint8_t out[PERF_DATA_HELLO_LEN]);
int data_hello_decode(const void *in, size_t len, uint32_t *cookie, uint16_t *index,
		      struct rcc_remote_mr *mr);

enum ctrl_type {
	CTRL_READY = 1, /* barrier before a point: op, kind, size */
	CTRL_DONE,      /* a: messages this side sent (warm-up included) */
	CTRL_RESULT,    /* a: messages, b: ns, c: peak B/s (double bits), d: error */
	CTRL_HEARTBEAT, /* the active side is alive (passive phases) */
	CTRL_BYE,       /* the plan is over */
};

struct ctrl_msg {
	uint8_t type;
	uint8_t op;
	uint8_t kind;
	uint32_t size;
	uint64_t a, b, c, d;
};

void ctrl_encode(const struct ctrl_msg *m, uint8_t out[PERF_CTRL_MSG_LEN]);
int ctrl_decode(const void *in, size_t len, struct ctrl_msg *m);

/* ------------------------------------------------------------------------ */
/* bwcalc.c: bandwidth figures (pure)                                        */
/* ------------------------------------------------------------------------ */

/*
 * perftest's peak: the best average time per message over any run of
 * messages, from the post of message i (a post-list boundary) to the
 * completion of message j (a signalled one). posted/completed are ns.
 * The search is O(n^2 / (post_list * cq_mod)); above max_work pairs the
 * starting points are thinned evenly. Returns ns per message (0 if n == 0).
 */
double bw_peak_ns_per_msg(const uint64_t *posted, const uint64_t *completed, size_t n,
			  unsigned post_list, unsigned cq_mod, uint64_t max_work);

struct bw_figures {
	double bw_peak_Bps; /* bytes per second */
	double bw_avg_Bps;
	double msg_rate_Mpps; /* millions of messages per second */
};

/* msgs of size bytes in elapsed_ns; peak from ns per message (0: none). */
void bw_figures(uint64_t msgs, uint32_t size, uint64_t elapsed_ns, double peak_ns_per_msg,
		struct bw_figures *out);

/* perftest's units: MB/sec = 2^20 B/s; Gb/sec = 10^9 bit/s. */
double Bps_to_MBps(double Bps);
double Bps_to_Gbps(double Bps);

/* ------------------------------------------------------------------------ */
/* pattern.c: payload contents for --validate (pure)                         */
/* ------------------------------------------------------------------------ */

/* Byte i of message seq's pattern: a different byte sequence per seq, cheap
 * enough to fill MiBs. */
uint8_t pattern_byte(uint64_t seq, size_t i);
/* Fill len bytes with the pattern of message seq. */
void pattern_fill(void *buf, size_t len, uint64_t seq);
/* First offset that differs from the pattern of seq, or -1. */
long pattern_check(const void *buf, size_t len, uint64_t seq);

/* ------------------------------------------------------------------------ */
/* peermem.c: memory the transport uses for the peer, no completion between  */
/* ------------------------------------------------------------------------ */

/* Does *p, which a peer's WRITE fills, hold want? If so, what the peer wrote
 * before it is visible too (acquire; peermem.c says what that is worth on
 * each transport). */
bool peer_byte_is(const uint8_t *p, uint8_t want);
/* pattern_check() of memory a peer's WRITE is filling. */
long peer_check(const uint8_t *buf, size_t len, uint64_t seq);
/* *p = v, and pattern_fill(), in the source of a WRITE the peer has seen
 * whose completion has not been polled. */
void peer_set(uint8_t *p, uint8_t v);
void peer_fill(uint8_t *buf, size_t len, uint64_t seq);
/* memset(buf, 0, len) of a target the peer's operations use. */
void peer_clear(uint8_t *buf, size_t len);
/* The 8 bytes at p, which the peer's atomics updated. */
uint64_t peer_u64(const uint8_t *p);

/* ------------------------------------------------------------------------ */
/* Results                                                                   */
/* ------------------------------------------------------------------------ */

struct perf_point {
	enum perf_op op;
	enum perf_kind kind;
	uint32_t size;
	uint64_t iters;     /* timed iterations (lat) or messages (bw, both sides if -b) */
	struct summary lat; /* us, already divided by the rtt factor */
	int rtt_factor;
	struct bw_figures bw;
	uint64_t bytes; /* payload moved in the timed phase */
	double seconds; /* timed phase */
};

struct perf_results {
	struct perf_point *v;
	size_t n, cap;
};

int results_add(struct perf_results *r, const struct perf_point *pt);
void results_free(struct perf_results *r);

/* report.c: perftest-style terminal output on cfg->text */
void report_banner(const struct perf_config *cfg, const struct perf_params *p, enum perf_op op,
		   enum perf_kind kind, const char *transport, const char *path,
		   uint32_t max_inline, bool server);
void report_header(const struct perf_config *cfg, enum perf_kind kind);
void report_point(const struct perf_config *cfg, const struct perf_point *pt);
void report_footer(const struct perf_config *cfg);

/* What the run ended up with (for the outputs). */
struct run_info {
	const char *transport; /* "tcp" or "verbs" */
	const char *path;      /* "shm", "tcp" or "verbs" (rcc_ep_path) */
	uint32_t max_inline;   /* inline limit in use */
	const char *peer;      /* the server as given */
};

/* Version of --json's layout (docs/json.md): bumped when a field changes
 * meaning or goes away, not when one is added. */
#define PERF_JSON_SCHEMA 1

/* export.c: every figure plus the run's parameters ("-": stdout). 0 or -errno (printed). */
int export_json(const char *path, const struct perf_config *cfg, const struct perf_params *p,
		const struct run_info *ri, const struct perf_results *r);
int export_csv(const char *path, const struct perf_config *cfg, const struct perf_params *p,
	       const struct run_info *ri, const struct perf_results *r);

/* plot.c: PNG charts through gnuplot. 0 or -errno (printed). */
int plot_results(const char *dir, const struct perf_config *cfg, const struct perf_params *p,
		 const struct run_info *ri, const struct perf_results *r);

/* Set by SIGINT/SIGTERM: every wait gives up at its next check. */
extern volatile sig_atomic_t perf_stop;

/* run.c: the two roles; exit status of the program. */
int perf_client(const struct perf_config *cfg);
int perf_server(const struct perf_config *cfg);

#endif
