/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rcc session layer: the rdma_comm_core model on top of the core API.
 *
 *  - rcc_server: a listener that hands every new connection to an agent.
 *    Two thread modes: each connection gets its own thread and CQ
 *    (RCC_THREAD_PER_EP), or a few progress threads each drive one shared CQ
 *    serving many connections (RCC_THREAD_SHARED_CQ; wc.ep tells them apart).
 *    The application supplies callbacks; the server owns endpoints and CQs.
 *  - rcc_client: connect with bounded retry, owning its CQ and endpoint.
 *  - rcc_pool: one registered region split into fixed-size pieces.
 */
#ifndef RCC_SESSION_H
#define RCC_SESSION_H

#include <rcc/rcc.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Server                                                                    */
/* ------------------------------------------------------------------------ */

enum rcc_thread_mode {
	RCC_THREAD_PER_EP = 0, /* one agent thread and one CQ per connection */
	RCC_THREAD_SHARED_CQ,  /* num_threads progress threads, each with one shared CQ */
};

struct rcc_server;

/*
 * Callbacks. on_request runs on the listener thread, the others on the agent
 * thread that owns the connection; they must not block for long (in shared-CQ
 * mode one thread serves many connections). Every per-connection state a
 * callback creates is released through on_disconnect exactly once.
 */
struct rcc_server_ops {
	/* Optional. A client asks to connect (its private data via
	 * rcc_conn_req_private_data()). Return 0 to accept or a negative errno
	 * to reject. May create per-connection state (*conn) and name receives
	 * (*recv, *num_recv; valid until on_connect) that are posted before the
	 * client can send, so its first message never meets an empty queue.
	 * rcc_server_reply() sets this connection's own accept private data. */
	int (*on_request)(struct rcc_conn_req *req, void *arg, void **conn,
			  const struct rcc_recv_wr **recv, int *num_recv);
	/* Optional. The connection is up; *conn holds what on_request set.
	 * A negative return closes the connection. */
	int (*on_connect)(struct rcc_ep *ep, void *arg, void **conn);
	/* One completion of this connection, flush completions included --
	 * except those of the server's SRQ receives (srq_depth), which go to
	 * on_recv. */
	void (*on_completion)(struct rcc_ep *ep, const struct rcc_wc *wc, void *conn);
	/* Optional. The connection ended (peer left, error, rcc_ep_disconnect()
	 * from a callback, server stop) or never came up (ep is then NULL).
	 * Every completion has been delivered; free per-connection state. The
	 * endpoint is closed after this returns. */
	void (*on_disconnect)(struct rcc_ep *ep, void *conn);
	/* Required with srq_depth, unused without. A message of this
	 * connection took one of the server's SRQ receives (RCC_WC_SUCCESS
	 * only; opcode RCC_WC_RECV or RCC_WC_RECV_WRITE_IMM, byte_len, imm_data
	 * and wc_flags as in any receive completion; wr_id is the server's).
	 * data holds the wc->byte_len bytes of a RCC_WC_RECV; it is NULL for a
	 * RCC_WC_RECV_WRITE_IMM (its bytes went where the WRITE pointed). data
	 * belongs to the server and is valid only during the call: copy what
	 * you keep. The buffer is posted to the SRQ again as soon as on_recv
	 * returns. Runs on the connection's agent thread, in the connection's
	 * order of arrival, interleaved with its on_completion calls. */
	void (*on_recv)(struct rcc_ep *ep, const struct rcc_wc *wc, const void *data, void *conn);
	/* Optional. Per-connection work that no completion triggers (a
	 * deadline, a state change of the application's): runs on the
	 * connection's agent, for every connection it serves (after on_connect,
	 * never after on_disconnect), once after each rcc_server_wake() and,
	 * with attr.wake_ms, at least every wake_ms milliseconds. */
	void (*on_wake)(struct rcc_ep *ep, void *conn);
};

/* Largest rcc_server_attr.srq_depth (the largest SRQ, as rcc_srq_create()). */
#define RCC_SERVER_SRQ_MAX 16384u
/* rcc_server_attr.srq_buf_size when it is 0. */
#define RCC_SERVER_SRQ_BUF_DEFAULT 4096u

struct rcc_server_attr {
	const char *addr; /* listen address, e.g. ":7471" */
	enum rcc_thread_mode thread_mode;
	int num_threads; /* RCC_THREAD_SHARED_CQ only; 0: 1 */
	/* POLL: agents spin; WAIT/FD: agents sleep; HYBRID: agents spin for
	 * RCC_CQ_SPIN_US (default RCC_CQ_SPIN_US_DEFAULT) microseconds, then sleep */
	enum rcc_cq_mode cq_mode;
	uint32_t cq_depth;          /* 0: enough for the endpoints it serves */
	struct rcc_ep_attr ep_attr; /* template; its CQ fields are ignored */
	int max_connections;        /* 0: 1024; further requests are rejected */
	const struct rcc_server_ops *ops;
	void *arg; /* passed to on_request / on_connect */
	/*
	 * Shared receive queue. 0 (the default): off, each connection has its
	 * own receive queue and the application posts to it. 1..RCC_SERVER_SRQ_MAX:
	 * the server creates one SRQ (rcc_srq_create()) that every connection's
	 * endpoint takes its receives from, and srq_depth registered buffers
	 * of srq_buf_size bytes that it keeps posted to it, so receive memory is
	 * srq_depth * srq_buf_size for all connections together instead of a
	 * queue per connection. Received messages go to ops->on_recv (required
	 * then); each buffer is posted again as soon as on_recv returns, and a
	 * receive flushed by a connection leaving service at once -- the SRQ
	 * never runs low while on_recv keeps up, so the server arms no limit
	 * (RCC_EVENT_SRQ_LIMIT never names its SRQ). When every buffer is held
	 * by messages not yet delivered, senders meet receiver-not-ready and
	 * retry (their rnr_retry), as with an empty receive queue. A message
	 * longer than srq_buf_size fails on its connection as with any too
	 * short receive. On verbs, the one receive a connection was filling
	 * when it left service may be removed by the endpoint's close before
	 * its flush reaches the server (docs/verbs.md, shared receive
	 * queues): the SRQ then keeps one receive less. ep_attr.srq must be
	 * NULL (rq_depth and max_recv_sge are ignored); the SRQ and buffers
	 * are freed by rcc_server_stop() after the last endpoint.
	 */
	uint32_t srq_depth;
	/* Bytes per SRQ receive, up to RCC_MAX_MSG_SIZE; 0: RCC_SERVER_SRQ_BUF_DEFAULT. */
	uint32_t srq_buf_size;
	/* With ops->on_wake: call it for every connection at least this often
	 * (milliseconds, up to 60000), whether or not rcc_server_wake() is
	 * called; 0: only after rcc_server_wake(). */
	int wake_ms;
};

struct rcc_server_stats {
	uint64_t accepted;
	uint64_t rejected;
	uint64_t active;
};

/* Start listening and accepting on a background thread. Returns 0 and sets
 * *srv; -EINVAL for missing or out-of-range attributes (rcc_last_error()
 * says which; srq_depth without ops->on_recv included), or the status of
 * creating the listener, the SRQ and its buffers, or a thread. Does not
 * block on peers. Thread-safe; *srv is the caller's until rcc_server_stop().
 * attr, its addr and its ops table are copied during the call; what
 * ep_attr points to (private data, initial receives) is used for every
 * accept and arg is handed to every callback, so those stay valid until
 * rcc_server_stop() returns.
 *
 * The listener thread never waits on one client: it starts each accept
 * (rcc_accept_start()) and hands the connection to its agent (on_connect)
 * only when it is established; a client that never confirms (a verbs peer
 * that sends no RTU / READY) is dropped when its accept fails, within 5 s,
 * counted in stats.rejected, and its on_request state released through
 * on_disconnect(NULL, conn). Such a connection holds one of
 * max_connections meanwhile. Messages that fill the receives named by
 * on_request before that are delivered after on_connect, in order. To see
 * accepts end, the server turns connection events of ctx on and takes every
 * event of ctx on its listener thread (rcc_ctx_get_event()): an
 * application that wants connection events of its own (rcc_connect_start(),
 * rcc_ctx_event_fd()) uses another context for them, and so does a second
 * server. Should something else take an accept's event all the same, the
 * server still finds the accept ended from its endpoint's state, within
 * 1 s. */
int rcc_server_start(struct rcc_ctx *ctx, const struct rcc_server_attr *attr,
		     struct rcc_server **srv);
/* The bound port (useful with port 0). */
int rcc_server_port(const struct rcc_server *srv);
/* Copy the server's counters into *stats: connections accepted, turned
 * away or failed before they were served (rejected), and served now
 * (active: those of rcc_server_connect() included). Nothing for a NULL
 * argument. Never blocks; thread-safe, each counter read atomically (the
 * three together are not one snapshot). */
void rcc_server_stats(const struct rcc_server *srv, struct rcc_server_stats *stats);
/* From on_request only: private data (<= RCC_ACCEPT_PRIVATE_DATA_MAX) for
 * this client's accept, instead of the template's. -EINVAL elsewhere. */
int rcc_server_reply(struct rcc_conn_req *req, const void *data, size_t len);
/* From any thread: end one connection of this server (on_disconnect follows
 * on its agent). -ENOENT if ep is not, or no longer, a connection of srv. */
int rcc_server_disconnect(struct rcc_server *srv, struct rcc_ep *ep);
/* From any thread: have every agent call ops->on_wake for each connection
 * it serves, soon (an agent that sleeps is woken, one that spins sees it
 * within its next round). Wakes that come before the agent gets to them
 * are served by one round of calls; a wake during a round brings another.
 * Returns 0, or -EINVAL for a NULL srv or a server without on_wake. Never
 * blocks on peers. */
int rcc_server_wake(struct rcc_server *srv);
/* Stop accepting, disconnect every connection (each gets on_disconnect),
 * join all threads and free the server. Accepts still under way are given
 * up to 6 s to end (each ends within 5 s) and then served and ended like any
 * other connection, or dropped; rcc_server_connect() calls under way are
 * waited for (each up to its timeout) and their connections ended too. */
int rcc_server_stop(struct rcc_server *srv);

/*
 * Connect to addr ("host:port", "[v6]:port") and serve the connection with
 * this server's agents, as if it had been accepted: the endpoint is made on
 * an agent's CQ (its own in RCC_THREAD_PER_EP mode, the least loaded shared
 * one in RCC_THREAD_SHARED_CQ mode), with ep_attr (CQ fields and context
 * ignored, initial_recv and private_data honoured; NULL: the server's
 * ep_attr template without its private_data and initial_recv, which are
 * the accepts'). Once it is up, ops->on_connect(ep, srv's arg, &conn) runs on
 * that agent with *conn = conn (the caller's per-connection state), then
 * on_completion for each of its completions and on_disconnect exactly once
 * -- so one dispatcher serves the connections a process opens and those
 * it accepts (on_request is not called). With srq_depth the endpoint takes
 * its receives from the server's SRQ, as accepted ones do (ep_attr's
 * receive fields are then ignored). Blocks up to timeout_ms (0: 5000) for
 * the connection; does not retry. Returns 0 and sets *ep (owned by the
 * server: valid until on_disconnect returns; end it with
 * rcc_server_disconnect()), or rcc_connect()'s status (rcc_last_error()
 * explains), -EINVAL for a NULL srv, addr or ep or a negative timeout (conn
 * may be NULL), -EMFILE at max_connections (shared with accepted ones),
 * -ESHUTDOWN once rcc_server_stop() has begun. When it fails, on_disconnect
 * is not called and conn stays the caller's. The connection counts in
 * stats.active (not in accepted or rejected). Thread-safe, and allowed from
 * the server's own callbacks (the agent goes on serving its other
 * connections only once the call returns). rcc_server_stop() waits for
 * calls under way, then ends their connections like the others.
 */
int rcc_server_connect(struct rcc_server *srv, const char *addr, const struct rcc_ep_attr *ep_attr,
		       int timeout_ms, void *conn, struct rcc_ep **ep);

/* ------------------------------------------------------------------------ */
/* Message channel                                                           */
/* ------------------------------------------------------------------------ */

/*
 * A message channel: small messages over SEND/RECV on one connected RC
 * endpoint, with credits, so a message never meets an empty receive queue
 * (no receiver-not-ready retries, whatever the peer does) and a reader that
 * falls behind slows its sender down instead of failing the connection.
 * Both ends must use a channel with the same msg_max and credits.
 *
 * The channel owns the endpoint's receive queue and its SEND traffic: the
 * application may post RDMA WRITE, READ and atomics on the same endpoint
 * (with wr_ids whose top byte is not RCC_CHAN_WR_ID_TAG), and RDMA
 * WRITE_WITH_IMM through rcc_chan_write_imm() (it takes a receive at the
 * peer, so it takes a credit), but no SEND of its own and no receives. The
 * endpoint stays the application's: it creates it from rcc_chan_ep_attr(),
 * hands it over with rcc_chan_bind() once connected, and closes it before
 * rcc_chan_destroy(). The completions of the application's own requests
 * come back through rcc_chan_poll_app() when the channel has a CQ of its
 * own, and straight from the application's CQ otherwise.
 *
 * Credits: each side keeps `credits` receives posted. A sender holds one
 * credit per receive it knows to be free at the peer; a message takes one.
 * A receive is posted again when rcc_chan_recv() has copied its message
 * out, and the freed credits travel back on the next message, or in a
 * credit message of their own once half of them are waiting. The last
 * credit is kept for such a credit message, so two sides that read while
 * they wait never stop each other. A side whose peer does not read waits
 * (rcc_chan_send() times out), as a socket's writer does -- and so do two
 * sides that each send more than the credits before reading: wait with
 * timeout 0 and read in between.
 *
 * Every byte the peer sends is checked (header, credit count, length): a
 * peer that breaks the rules fails the channel with -EPROTO and is cut off
 * (rcc_ep_disconnect()), as a dead one fails it with -ECONNRESET. What
 * arrived before the failure is still handed out first. A call that
 * returns the failure sets rcc_last_error(); for -ECONNRESET it includes
 * the endpoint's own reason (rcc_ep_reason()): e.g. that a request of the
 * application's failed, whose completion says how.
 *
 * Thread-safety: one thread at a time per channel (calls on one channel must
 * not overlap); different channels are independent.
 */
struct rcc_chan;

/* The top byte of every wr_id the channel posts. */
#define RCC_CHAN_WR_ID_TAG 0xc7u
/* Largest rcc_chan_attr.msg_max and .credits; the defaults. */
#define RCC_CHAN_MSG_MAX 65536u
#define RCC_CHAN_CREDITS_MAX 1024u
#define RCC_CHAN_APP_DEPTH_MAX 65536u
#define RCC_CHAN_MSG_DEFAULT 256u
#define RCC_CHAN_CREDITS_DEFAULT 16u

struct rcc_chan_attr {
	uint32_t msg_max; /* largest message in bytes, 1..RCC_CHAN_MSG_MAX; 0: default */
	uint32_t credits; /* receives kept posted, 4..RCC_CHAN_CREDITS_MAX; 0: default */
	/* NULL: the channel makes a CQ of its own (cq_mode, deep enough) that
	 * its endpoint uses for sends and receives, and its calls wait on it.
	 * Else the application's CQ, which the endpoint uses (it may serve many
	 * endpoints: a shared-CQ server's agent): the application polls it and
	 * passes every completion to rcc_chan_handle(), and the channel never
	 * waits (its calls accept only timeout_ms 0). It must be deep enough
	 * for 2 * credits more completions. */
	struct rcc_cq *cq;
	/* As with cq, for a CQ the channel is not told of: the connection of
	 * a session server (rcc_server_start(), its agent's CQ). on_request
	 * returns the receives rcc_chan_ep_attr() names as its *recv and
	 * *num_recv (the server's ep_attr must have rq_depth >= credits and
	 * sq_depth >= credits + app_depth), on_connect binds the endpoint and
	 * on_completion passes every completion to rcc_chan_handle(). For
	 * rcc_server_connect() pass rcc_chan_ep_attr()'s attributes. */
	bool external_cq;
	enum rcc_cq_mode cq_mode; /* its own CQ's mode; ignored with cq or external_cq */
	/* The application's own requests that may be outstanding at once on
	 * the endpoint (WRITE, READ, atomics, rcc_chan_write_imm()), at most
	 * RCC_CHAN_APP_DEPTH_MAX; 0: none. Part of sq_depth and, with the
	 * channel's own CQ, of its depth and of what rcc_chan_poll_app() keeps. */
	uint32_t app_depth;
};

/* Make a channel: register 2 * credits buffers of msg_max bytes plus a
 * small header (and its CQ). Returns 0 and sets *ch; -EINVAL for a NULL or
 * out-of-range argument; -ENOMEM; a registration's or rcc_cq_create()'s
 * status. Never blocks. *ch is the caller's until rcc_chan_destroy(). */
int rcc_chan_create(struct rcc_ctx *ctx, const struct rcc_chan_attr *attr, struct rcc_chan **ch);

/* Fill in what the channel needs of the endpoint to create: send_cq and
 * recv_cq (NULL with external_cq), rq_depth (credits), max_recv_sge (at least 1), the channel's
 * receives as initial_recv / num_initial_recv (valid until
 * rcc_chan_destroy()), and sq_depth (credits + app_depth). The other
 * fields are left as they are. Then pass *ep_attr to rcc_connect(), rcc_connect_ex(), rcc_accept_req(),
 * rcc_client_connect() or rcc_server_connect(). -EINVAL for a NULL
 * argument or a channel already bound. Never blocks. */
int rcc_chan_ep_attr(const struct rcc_chan *ch, struct rcc_ep_attr *ep_attr);

/* The endpoint made with rcc_chan_ep_attr()'s attributes, now connected
 * (or accepted: messages may already have arrived). Returns 0, or -EINVAL
 * for a NULL argument or an already bound channel. The endpoint stays the
 * caller's; it must outlive the binding (close it, then destroy the
 * channel). Never blocks. */
int rcc_chan_bind(struct rcc_chan *ch, struct rcc_ep *ep);

/* What rcc_chan_recv() reports when it returns 0: the peer's RDMA
 * WRITE_WITH_IMM (rcc_chan_write_imm()) has landed in the application's
 * memory, len bytes of it, with this immediate value. */
struct rcc_chan_write_note {
	uint32_t imm;
	uint32_t len;
};

/* Send one message of len bytes (1..msg_max; copied: buf is free again on
 * return). Waits up to timeout_ms (0: not at all; -1: no limit) for a
 * credit and a free send buffer. Returns 0 once posted; -EAGAIN (timeout 0)
 * or -ETIMEDOUT when none came in time; -EMSGSIZE for len 0 or over msg_max;
 * -ECONNRESET once the connection is gone, -EPROTO once the peer broke the
 * rules, -EINVAL for a NULL argument, an unbound channel or, with an
 * application CQ, a timeout other than 0; a status of rcc_post_send(). A
 * posted message is delivered unless the connection fails first. */
int rcc_chan_send(struct rcc_chan *ch, const void *buf, size_t len, int timeout_ms);

/* Post an RDMA WRITE_WITH_IMM of the sge list (num_sge entries, at most
 * the endpoint's max_send_sge) to the peer's [remote_addr, rkey) -- memory
 * the application registered and told the peer of. It takes a credit, as a
 * message does (waiting up to timeout_ms as rcc_chan_send() does), so it
 * never meets an empty receive queue; the peer's rcc_chan_recv() reports it
 * in order with the messages (it returns 0 and fills its note). wr_id and
 * flags (RCC_SEND_SIGNALED, ...) are the application's: the completion is
 * the application's (rcc_chan_poll_app(), or its own CQ). Returns 0, or as
 * rcc_chan_send() (-EMSGSIZE does not apply), or rcc_post_write_imm()'s
 * status; -EINVAL also for a wr_id with the channel's tag. */
int rcc_chan_write_imm(struct rcc_chan *ch, const struct rcc_sge *sge, int num_sge,
		       uint64_t remote_addr, uint32_t rkey, uint32_t imm, uint64_t wr_id,
		       unsigned flags, int timeout_ms);

/* Take the oldest arrival: a message is copied to buf (cap bytes), a
 * WRITE_WITH_IMM of the peer's is described in *note (NULL: such an
 * arrival fails the channel with -EPROTO, as unexpected), and the receive
 * it took is posted again. Waits up to timeout_ms (0: not at all; -1: no
 * limit). Returns a message's length (> 0), or 0 for a WRITE_WITH_IMM;
 * -EAGAIN (timeout 0) or -ETIMEDOUT when none came; -EMSGSIZE if cap is
 * too small (the message stays, for a larger buffer); after the last
 * arrival before the failure, -ECONNRESET once the connection is gone,
 * -EPROTO once the peer broke the rules, -EIO if a request failed
 * otherwise; -EINVAL as rcc_chan_send(). buf may be NULL when cap is 0. */
int rcc_chan_recv(struct rcc_chan *ch, void *buf, size_t cap, struct rcc_chan_write_note *note,
		  int timeout_ms);

/* With an application CQ: pass each completion taken from it. Returns 1 if
 * it was the channel's (taken in: a message to read, a send done, or a
 * failure), 0 if not (wrong endpoint or wr_id tag: the application's own),
 * -EINVAL for a NULL argument or a channel not bound yet (bind it before
 * its endpoint's completions are taken: in on_connect for a server's
 * connection). Never blocks. With the channel's own CQ its
 * calls take the completions themselves. */
int rcc_chan_handle(struct rcc_chan *ch, const struct rcc_wc *wc);

/* With the channel's own CQ: up to max completions of the application's
 * own requests on the endpoint (its WRITEs, READs, atomics,
 * rcc_chan_write_imm()s), those the channel's calls took from its CQ
 * first (in order), then what the CQ holds now. Returns how many (0: none),
 * -EINVAL for a NULL argument, max <= 0 or a channel on an application's
 * CQ (those come from that CQ), or rcc_cq_poll()'s error. Never blocks.
 * The channel keeps up to app_depth of them; one more (a request beyond
 * that depth) fails the channel with -EOVERFLOW. */
int rcc_chan_poll_app(struct rcc_chan *ch, struct rcc_wc *wc, int max);

/* With the channel's own CQ: wait up to timeout_ms (0: only look; -1: no
 * limit) until rcc_chan_recv() or rcc_chan_poll_app() has something to
 * return without waiting -- one sleep for a program that waits for both
 * messages and its own completions. Returns 1 then; -ETIMEDOUT (or
 * -EAGAIN for timeout 0) when nothing came; the channel's failure once
 * nothing is left to take (as rcc_chan_recv()); -EINVAL for a NULL or
 * unbound channel, one on an application's CQ or a timeout below -1. */
int rcc_chan_wait(struct rcc_chan *ch, int timeout_ms);

/* Events of rcc_chan_wait_any(), as poll(2)'s POLLIN and POLLOUT. */
#define RCC_CHAN_CAN_RECV 1u /* rcc_chan_recv() or rcc_chan_poll_app() has something */
#define RCC_CHAN_CAN_SEND 2u /* rcc_chan_send() posts a message without waiting */

/* As rcc_chan_wait(), for any of events (RCC_CHAN_CAN_RECV,
 * RCC_CHAN_CAN_SEND, or both): one sleep for a program that sends a burst
 * while it reads what the peer sends -- whose sends wait on credits that
 * come back only as the peer reads -- woken by a message and by a credit
 * alike. Returns which of events hold (> 0); -ETIMEDOUT (-EAGAIN for
 * timeout 0) when none came; the channel's failure once nothing is left
 * to take; -EINVAL as rcc_chan_wait() or for events 0 or with other bits.
 * rcc_chan_wait(ch, t) is rcc_chan_wait_any(ch, RCC_CHAN_CAN_RECV, t).
 * Blocks up to timeout_ms; thread-safety as every call on the channel. */
int rcc_chan_wait_any(struct rcc_chan *ch, unsigned events, int timeout_ms);

/* Wait up to timeout_ms (0: only look; -1: no limit) until every message
 * and credit message the channel posted has completed -- delivered to the
 * peer's receive queue -- e.g. before closing the endpoint, which on verbs
 * discards what is still queued. Returns 0 then; -EAGAIN (timeout 0) or
 * -ETIMEDOUT while some are outstanding; the channel's failure once it has
 * failed; -EINVAL as rcc_chan_wait() (with an application's CQ only
 * timeout 0 is allowed: the application passes the completions). */
int rcc_chan_flush(struct rcc_chan *ch, int timeout_ms);

/* The CQ the channel's endpoint uses: its own, or the application's
 * (rcc_chan_attr.cq); NULL with external_cq or a NULL ch. Owned as
 * rcc_chan_attr says; valid until rcc_chan_destroy(). An application that
 * sleeps in its own poll(2)/epoll on rcc_cq_fd() of a channel's own FD-mode
 * CQ calls rcc_chan_wait(ch, 0) or rcc_chan_recv() when it is readable, and
 * never polls the CQ itself; it may call rcc_cq_arm() on it before it
 * sleeps (and look again when that returns 1). Never blocks. */
struct rcc_cq *rcc_chan_cq(const struct rcc_chan *ch);

/* Arrivals taken in and not read yet (a moment's figure); 0 for NULL. */
uint32_t rcc_chan_pending(const struct rcc_chan *ch);

/* Free the channel: its buffers, registrations and its own CQ. Call it once
 * the bound endpoint is closed (rcc_ep_close(): its receives name the
 * channel's buffers until then) or has delivered every completion (a
 * session server's on_disconnect), or before binding. NULL: nothing. Returns
 * 0 or the first failing deregistration's status (the channel is freed
 * either way). Never blocks. */
int rcc_chan_destroy(struct rcc_chan *ch);

/* ------------------------------------------------------------------------ */
/* Client                                                                    */
/* ------------------------------------------------------------------------ */

struct rcc_client;

struct rcc_client_attr {
	/* A CQ of the caller's to use (it may serve many clients, the shared-CQ
	 * mode); rcc_client_close() leaves it alone. NULL: the client makes its
	 * own with cq_mode and cq_depth. */
	struct rcc_cq *cq;
	enum rcc_cq_mode cq_mode;
	uint32_t cq_depth;          /* 0: sq_depth + rq_depth */
	struct rcc_ep_attr ep_attr; /* its CQ fields are filled in */
	int connect_timeout_ms;     /* per attempt; 0: 5000 */
	int retry_for_ms;           /* retry refused/unreachable attempts this long; 0: once */
};

/*
 * Connect to addr ("host:port", "[v6]:port") with the endpoint attributes of
 * attr (NULL: all defaults), on attr->cq or on a CQ of the client's own.
 * Blocks up to connect_timeout_ms per attempt; while the server refuses,
 * resets, times out or is unreachable, tries again (backing off 10..200 ms) until retry_for_ms
 * has passed. Returns 0 and sets *cli, or the last attempt's status
 * (-ECONNREFUSED, -ECONNRESET, -ETIMEDOUT, -EHOSTUNREACH, a reject: see
 * rcc_connect; rcc_last_error() explains it),
 * -EINVAL for a negative time or a NULL argument. Thread-safe; each client
 * belongs to its caller.
 */
int rcc_client_connect(struct rcc_ctx *ctx, const char *addr, const struct rcc_client_attr *attr,
		       struct rcc_client **cli);

/* rcc_client_ep(), rcc_client_cq(): the client's endpoint and CQ; owned by
 * the client, valid until rcc_client_close(). Never NULL for an open client
 * (NULL for a NULL cli). Never block; thread-safe. */
struct rcc_ep *rcc_client_ep(const struct rcc_client *cli);
struct rcc_cq *rcc_client_cq(const struct rcc_client *cli);
/* Close the endpoint, then the CQ if the client made it, then free. */
int rcc_client_close(struct rcc_client *cli);

/* ------------------------------------------------------------------------ */
/* Registered buffer pool                                                    */
/* ------------------------------------------------------------------------ */

/* A pool of equal pieces of one registered region, for receive and send
 * buffers. Every call below is thread-safe (taking and giving back pieces
 * is serialised by the pool), except rcc_pool_destroy(): call it once no
 * other thread uses the pool. */
struct rcc_pool;

/* count pieces of piece_size bytes in one registered, page-aligned region.
 * Pieces start on 64-byte boundaries. */
int rcc_pool_create(struct rcc_ctx *ctx, size_t piece_size, uint32_t count, unsigned access,
		    struct rcc_pool **pool);
/* Fails with -EBUSY while pieces are out. */
int rcc_pool_destroy(struct rcc_pool *pool);
/* Take a free piece; -ENOBUFS when none is left. */
int rcc_pool_get(struct rcc_pool *pool, void **piece);
/* Give a piece back; -EINVAL if it is not a piece of this pool or is already free. */
int rcc_pool_put(struct rcc_pool *pool, void *piece);
/* rcc_pool_mr(): the pool's registered region (owned by the pool, valid
 * until rcc_pool_destroy(); its rkey is what a peer needs); rcc_pool_piece_size()
 * and rcc_pool_count(): what it was created with; rcc_pool_available(): pieces
 * not taken now (a moment's figure when other threads take and give back).
 * 0 or NULL for a NULL pool. Never block. */
struct rcc_mr *rcc_pool_mr(const struct rcc_pool *pool);
size_t rcc_pool_piece_size(const struct rcc_pool *pool);
uint32_t rcc_pool_count(const struct rcc_pool *pool);
uint32_t rcc_pool_available(const struct rcc_pool *pool);
/* rcc_pool_index(): the index of a piece (0..count-1), or -EINVAL for
 * anything that is not the start of one of the pool's pieces;
 * rcc_pool_piece_at(): the piece at an index (NULL past the end), taken or
 * not. Never block. */
int rcc_pool_index(const struct rcc_pool *pool, const void *piece);
void *rcc_pool_piece_at(const struct rcc_pool *pool, uint32_t index);
/* An SGE for len bytes at the start of piece. */
struct rcc_sge rcc_pool_sge(const struct rcc_pool *pool, const void *piece, uint32_t len);

#ifdef __cplusplus
}
#endif

#endif /* RCC_SESSION_H */
