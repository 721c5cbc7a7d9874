/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rcc-mesh: N processes, each with one rcc_server that accepts the incoming
 * connections and opens the N-1 outgoing ones (rcc_server_connect()), all
 * moving verified data at once.
 *
 * Data from rank A to rank B flows on A's outgoing connection to B: A is the
 * sender (WRITE with immediate into B's slots, and SEND into B's receives), B
 * checks every message and returns credits. The same connection carries the
 * control messages of the run (wire.h): WELCOME, CREDIT, READY, FIN, and the
 * figures each rank sends to the collector (rank 0 by default) at the end.
 *
 * Threads: the main thread runs the phases (run.c) and the watchdog
 * (faults.c); the session server's agents run both sides, the incoming
 * (incoming.c) and the outgoing (outgoing.c), each connection on one agent
 * (agents.c dispatches by the connection's kind). The outgoing side's work
 * that no completion triggers (READY, traffic at GO, the reports) runs in
 * on_wake: the main thread calls rcc_server_wake() at each phase change.
 * Per-connection state belongs to the agent that serves it; what others
 * need is published into struct peer under mesh.lock.
 */
#ifndef RCC_MESH_H
#define RCC_MESH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "histogram.h"
#include "rcc/bootstrap.h"
#include "rcc/rcc.h"
#include "rcc/session.h"
#include "stats.h"
#include "wire.h"

#define MESH_MAX_NODES 256 /* one bit each in ctrl_done.failed */
#define SRV_CTRL_SENDS 4   /* WELCOME/CREDIT buffers per incoming connection */
#define SRV_CTRL_RECVS 8   /* receives beyond the data window, for control */
#define CLI_CTRL_RECVS 16  /* WELCOME/CREDIT receives per outgoing connection */
#define CLI_CTRL_SENDS 8
/* on_wake at least this often: a closed connection, a peer failed elsewhere */
#define WAKE_MS 100
#define MAX_ERRORS_SHOWN 10 /* per connection; the counts stay exact */

enum mesh_ops {
	OPS_WRITE = 1,
	OPS_SEND = 2
};
enum {
	STREAM_WRITE = 0,
	STREAM_SEND = 1
};
enum inject_kind {
	INJECT_NONE = 0,
	INJECT_CORRUPT,
	INJECT_SKIP,
	INJECT_DUP,
	INJECT_TAIL,    /* the FIN claims one message more than was sent */
	INJECT_IMPOSTOR /* hellos without the job secret's tag first (outgoing.c) */
};
/* The injected fault hits this message index of the first stream toward rank+1. */
#define INJECT_AT 5

/* Exit statuses (documented in --help). */
enum {
	MESH_EXIT_OK = 0,
	MESH_EXIT_FAIL = 1, /* setup or runtime failure, timeout, interrupted */
	MESH_EXIT_USAGE = 2,
	MESH_EXIT_DATA = 3, /* a message was corrupt, lost or duplicated */
	MESH_EXIT_PEER = 4, /* a rank died or stopped responding */
};

struct node {
	char host[256];
	int port;
	char addr[300]; /* "host:port" or "[v6]:port", as rcc_connect takes it */
};

/* Version of --json's layout (docs/json.md): bumped when a field changes
 * meaning or goes away, not when one is added. */
#define MESH_JSON_SCHEMA 1

struct mesh_opts {
	struct node *nodes;
	int nnodes;
	int rank;
	const char *bind; /* listen address; NULL: our own entry */
	uint32_t size;
	uint32_t depth;
	unsigned ops; /* enum mesh_ops */
	double duration_s;
	uint64_t bytes; /* per directed pair; 0: run for duration_s */
	enum rcc_thread_mode thread_mode;
	int threads; /* shared mode: progress threads per side */
	enum rcc_cq_mode cq_mode;
	struct rcc_ctx_attr ctx;
	int connect_timeout_ms; /* bound on setup: every connection and the barrier */
	int timeout_ms;         /* bound on silence from a peer, and on each end phase */
	int collector;
	bool json;
	bool quiet;
	bool brief; /* collector: aggregate only, no per-pair rows */
	bool srq;   /* incoming connections share one SRQ of the session server */
	enum inject_kind inject;
	/* under a launcher (no --nodes, no --rank): nodes are filled in by
	 * launch_exchange() once every rank listens */
	enum rcc_bootstrap_backend bootstrap; /* --bootstrap; AUTO by default */
	struct rcc_bootstrap *boot;
};

enum phase {
	PH_SETUP = 0,
	PH_READY,
	PH_GO,
	PH_REPORT,
	PH_EXIT
};

struct mesh;
struct out_conn;

struct peer {
	int rank;
	struct mesh *m;
	const struct node *node;
	struct out_conn *out;
	/* under mesh.lock */
	bool in_claimed, in_up, ready_rx, fin_rx, done_rx;
	bool out_up, fin_tx, done_tx;
	char why[256];
	struct pair_rx rx; /* published by the incoming side */
	struct pair_tx tx; /* published by the outgoing side */
	/* read anywhere */
	atomic_bool failed;
	atomic_bool out_busy;             /* the outgoing side waits for completions */
	atomic_uint_fast64_t in_seen_ns;  /* last message from this peer */
	atomic_uint_fast64_t out_seen_ns; /* last completion toward it */
};

/* What the collector learns about each directed pair and each rank. */
struct gathered_pair {
	bool have_tx, have_rx;
	struct pair_tx tx;
	struct pair_rx rx;
};

struct gathered_rank {
	bool reported;
	struct ctrl_done done;
};

struct mesh {
	const struct mesh_opts *o;
	int n, rank;
	struct rcc_ctx *ctx;
	struct rcc_pool *src_pool;    /* outgoing: message sources */
	struct rcc_pool *target_pool; /* incoming: one region of write slots per sender */
	struct rcc_pool *recv_pool;   /* incoming: receives (data SENDs and control) */
	struct rcc_pool *ctrl_pool;   /* control buffers of both sides */
	struct rcc_server *srv;
	struct peer *peers; /* n entries; ours is unused */

	uint32_t q[2];              /* window per stream; 0: stream not used */
	uint32_t stride;            /* write slot stride */
	uint32_t recv_piece, nrecv; /* incoming receives: size and count per connection */
	uint32_t srq_depth;         /* --srq: the server's SRQ receives, for all of them; else 0 */
	uint32_t list_hash;
	/* with a job secret: hellos carry a tag under this key (wire.h); set
	 * with the node list, before nodes_state says it is known */
	bool keyed;
	uint8_t hello_key[HELLO_KEY_LEN];
	uint8_t accept_pd[ACCEPT_LEN];
	/* under a launcher, the node list (and list_hash) exist once the
	 * exchange is over; under lock, with cond broadcast when it ends */
	enum {
		NODES_KNOWN = 0,
		NODES_PENDING,
		NODES_FAILED
	} nodes_state;

	pthread_mutex_t lock;
	pthread_cond_t cond;
	atomic_int phase; /* enum phase; t_go/t_stop are set before PH_GO */
	uint64_t t_go, t_stop;
	atomic_bool data_error; /* some message we received was wrong */

	/* report: our own rows, set before PH_REPORT and read by a driver after it */
	struct ctrl_row *my_rows;
	int my_nrows;
	struct ctrl_done my_done;
	uint64_t rss_base_kb, rss_end_kb;
	int threads_end;
	/* collector only, under lock */
	struct gathered_pair *pairs; /* n * n, [src * n + dst] */
	struct gathered_rank *ranks;
};

/* Work request ids: what completed, a small detail, and an index. */
enum wr_kind {
	WR_DATA = 1,
	WR_CSEND,
	WR_CRECV,
	WR_RECV
};
#define WR_ID(kind, aux, idx) ((uint64_t)(kind) << 56 | (uint64_t)(aux) << 48 | (uint64_t)(idx))
#define WR_KIND(id) ((unsigned)((id) >> 56))
#define WR_AUX(id) ((unsigned)((id) >> 48) & 0xffu)
#define WR_IDX(id) ((id)&0xffffffffffffull)

static inline bool is_collector(const struct mesh *m) { return m->rank == m->o->collector; }

/* ctrl_send.c: the control messages a connection sends, from n (at most
 * CTRL_SENDER_MAX) buffers of the control pool. */
#define CTRL_SENDER_MAX 8
struct ctrl_sender {
	void *buf[CTRL_SENDER_MAX];
	uint32_t busy; /* one bit per buffer whose SEND is in flight */
	int n;
};
/* 0, or the pool's status (nothing held then). */
int ctrl_sender_init(struct mesh *m, struct ctrl_sender *s, int n);
void ctrl_sender_fini(struct mesh *m, struct ctrl_sender *s);
/* Post msg (from is set to our rank): 0, -EAGAIN with every buffer in flight,
 * or rcc_post_send_list()'s status. Its completion carries WR_CSEND, the
 * type and the buffer's index: pass the index to ctrl_sent(). */
int ctrl_post(struct mesh *m, struct rcc_ep *ep, struct ctrl_sender *s, struct ctrl_msg *msg);
static inline void ctrl_sent(struct ctrl_sender *s, uint64_t idx) { s->busy &= ~(1u << idx); }

/* options.c, hostfile.c */
int mesh_parse(int argc, char **argv, struct mesh_opts *o);
void mesh_opts_free(struct mesh_opts *o);
int node_parse(const char *s, struct node *nd, char *err, size_t errlen);
int nodes_from_list(const char *list, struct node **nodes, int *n, char *err, size_t errlen);
int nodes_from_file(const char *path, struct node **nodes, int *n, char *err, size_t errlen);

/* launch.c: rank, size and the node list from the bootstrap */
/* Open the bootstrap and size the node list; exits with a usage error (2)
 * when there is no launcher either, 1 when the bootstrap cannot start. */
void launch_open(struct mesh_opts *o);
/* Where the server listens: --bind (or every address), ephemeral port. */
void launch_listen_addr(const struct mesh *m, char *buf, size_t len);
/* Publish our address, gather everyone's into the node list: an exit status. */
int launch_exchange(struct mesh *m);
/* The listener's side: a peer may connect (its exchange ended first) before
 * ours is over; wait for it, bounded by --connect-timeout. True once the node
 * list is there, false if the exchange failed or took too long. */
bool launch_wait_nodes(struct mesh *m);

/* setup.c */
int mesh_open(struct mesh *m, const struct mesh_opts *o);
int mesh_listen(struct mesh *m);
int mesh_connect_all(struct mesh *m, uint64_t deadline_ns);
void mesh_close(struct mesh *m);

/* Every connection's state (the conn of the server's callbacks) starts with
 * its kind, so that one set of callbacks serves both sides (agents.c). */
enum conn_kind {
	CONN_IN = 1, /* accepted: incoming.c */
	CONN_OUT,    /* opened with rcc_server_connect(): outgoing.c */
};

/* agents.c: the server's callbacks */
extern const struct rcc_server_ops mesh_ops;

/* incoming.c: the receiving side */
int in_request(struct rcc_conn_req *req, void *arg, void **conn, const struct rcc_recv_wr **recv,
	       int *num_recv);
int in_connect(struct rcc_ep *ep, struct mesh *m, void *conn);
void in_completion(struct rcc_ep *ep, const struct rcc_wc *wc, void *conn);
void in_recv(struct rcc_ep *ep, const struct rcc_wc *wc, const void *data, void *conn);
void in_disconnect(struct rcc_ep *ep, void *conn);

/* outgoing.c: the sending side of one connection */
/* The connection's state and buffers: 0 or a negative errno (said). */
int out_create(struct mesh *m, struct peer *p, struct out_conn **out);
/* Connect it (on the server's agents), retrying until deadline_ns while the
 * peer is not up yet: 0 or a negative errno (the peer is failed then). */
int out_connect(struct out_conn *c, uint64_t deadline_ns);
/* Once the server has stopped (no agent serves it any more). */
void out_destroy(struct out_conn *c);
/* Send queue room an outgoing connection needs. */
uint32_t out_sq_depth(const struct mesh *m);
/* The server's callbacks for an outgoing connection, on its agent. */
int out_connected(struct rcc_ep *ep, void *conn);
void out_completion(struct rcc_ep *ep, const struct rcc_wc *wc, void *conn);
void out_recv(struct rcc_ep *ep, const struct rcc_wc *wc, const void *data, void *conn);
void out_wake(struct rcc_ep *ep, void *conn);
void out_disconnect(struct rcc_ep *ep, void *conn);

/* faults.c */
void peer_fail(struct peer *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool peer_failed(const struct peer *p);
/* Declare peers that have gone silent for longer than the timeout as failed. */
void watchdog(struct mesh *m, uint64_t now);
void failed_ranks(struct mesh *m, char *buf, size_t len);

/* run.c */
int mesh_run(struct mesh *m);
void mesh_set_phase(struct mesh *m, enum phase ph);

/* report.c */
/* From /proc/self/status: resident set in KiB, and (if threads) the thread count. */
uint64_t rss_kb(int *threads);
void report_build(struct mesh *m, int status);
int report_print(struct mesh *m, int local_status);
void collector_store_row(struct mesh *m, const struct ctrl_row *r, bool tx);
void collector_store_done(struct mesh *m, int from, const struct ctrl_done *d);

/* Messages: "rcc-mesh: rank K: ..." on stderr (errors) or stdout (progress). */
void say(const struct mesh *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void complain(const struct mesh *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
