/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control channel of one connection: an rcc endpoint with the session
 * layer's message channel (rcc_chan_*, rcc/session.h) on it, which keeps the
 * receives posted and holds a sender back by credits. chan_next() turns what
 * arrives into events: a decoded (and, once sealed, authenticated) message, a
 * chunk that arrived by WRITE_WITH_IMM, or a finished local RDMA WRITE.
 * Keepalives are answered and swallowed here.
 *
 * Every wait is bounded and checks the stop flag. Errors are negative:
 *   -ETIMEDOUT   the peer was silent for too long
 *   -EINTR       SIGINT/SIGTERM
 *   -ECONNRESET  the peer went away (closed, crashed, or the link died)
 *   -EBADMSG     the peer sent a malformed, forged or unexpected frame
 *   -EIO         a work request failed (chan_why() says which and how)
 * After -ECONNRESET or -EIO the channel is dead and only chan_close() helps;
 * after -EBADMSG messages can still be sent (to say why), nothing received.
 */
#ifndef XFER_CHAN_H
#define XFER_CHAN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "auth.h"
#include "proto.h"
#include "rcc/rcc.h"

struct chan_opts {
	enum rcc_cq_mode cq_mode;
	uint32_t write_depth; /* RDMA WRITEs that may be outstanding */
};

enum chan_ev_type {
	CEV_MSG = 1,
	CEV_CHUNK,      /* imm, len: a WRITE_WITH_IMM landed in our window */
	CEV_WRITE_DONE, /* id: one of our WRITEs completed */
};

struct chan_ev {
	enum chan_ev_type type;
	struct xmsg msg;
	uint32_t imm;
	uint32_t len;
	uint32_t id;
};

struct chan;

/* Connect to addr ("host:port"). On failure *err explains. */
int chan_connect(struct rcc_ctx *ctx, const char *addr, const struct chan_opts *o, int timeout_ms,
		 struct chan **out, char *err, size_t errlen);
/* Accept a request whose private data was checked by the caller
 * (pdata_decode()); peer_token is what it carried. The request is consumed. */
int chan_accept(struct rcc_ctx *ctx, struct rcc_conn_req *req,
		const uint8_t peer_token[XFER_TOKEN_LEN], const struct chan_opts *o,
		struct chan **out, char *err, size_t errlen);
void chan_close(struct chan *c);
/* While *flag is set, every wait for the peer fails at once with -ECANCELED
 * (checked at least every 200 ms). flag must outlive the channel; NULL: none. */
void chan_set_abort(struct chan *c, const atomic_bool *flag);
/* Stop a dead channel's endpoint: every request still outstanding (WRITEs
 * from a caller's window among them) has completed when this returns, so
 * their memory may go. */
void chan_disconnect(struct chan *c);

const char *chan_peer(const struct chan *c);
/* The connection tokens as (sender's, receiver's), for the auth transcript. */
void chan_tokens(const struct chan *c, uint8_t token_s[XFER_TOKEN_LEN],
		 uint8_t token_r[XFER_TOKEN_LEN]);
/* Why the last call failed. */
const char *chan_why(const struct chan *c);

/* From now on every frame is tagged and checked under skey. role says which
 * direction this side sends in. */
void chan_seal(struct chan *c, enum auth_role role, const uint8_t skey[XFER_MAC_LEN]);

int chan_send(struct chan *c, const struct xmsg *m);
/* The next event. Fails with -EINTR once a stop was requested, even with
 * events waiting; with -ETIMEDOUT when nothing at all (keepalives
 * included) came from the peer for idle_timeout_ms; returns -EAGAIN when
 * max_wait_ms (>= 0) passed first, for callers that pace themselves. */
int chan_next(struct chan *c, int idle_timeout_ms, int max_wait_ms, struct chan_ev *ev);
/* Wait up to ms (0: only look) until chan_next() has something to return at
 * once, taking nothing: 1 then, -ETIMEDOUT (-EAGAIN for 0) when nothing came,
 * or the channel's failure. Neither checks the stop flag nor deadlines. */
int chan_wait(struct chan *c, int ms);
/* Post a signalled RDMA WRITE_WITH_IMM; its completion is CEV_WRITE_DONE(id). */
int chan_write_imm(struct chan *c, const struct rcc_sge *sge, uint64_t raddr, uint32_t rkey,
		   uint32_t imm, uint32_t id);
/* Send a keepalive if nothing was sent for a while (call during long local work). */
int chan_tick(struct chan *c);
/* Before closing after a last message (closing discards unsent work on
 * verbs): wait (bounded) until the peer has left, skipping what it sends.
 * 0 once it has, -ETIMEDOUT; chan_why() is left alone. */
int chan_drain(struct chan *c, int timeout_ms);

#endif
