/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The session server's records (connections, agents, the server) and the
 * agent calls that server.c shares with the other files of the server.
 * Everything here is internal: the application sees struct rcc_server only
 * by pointer.
 */
#ifndef RCC_SESSION_SERVER_H
#define RCC_SESSION_SERVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "rcc/session.h"
#include "server_srq.h"

struct conn {
	struct rcc_ep *ep;
	void *user;
	struct agent *ag;
	atomic_bool want_close;           /* rcc_server_disconnect() asked */
	struct conn *next;                /* the agent's list (agent thread only) */
	struct conn *all_prev, *all_next; /* srv->all (srv->lock) */
	struct conn *pend_next;           /* srv->pending (listener thread only) */
	bool failed;                      /* handed over only to be dropped: never came up */
	/* agent thread only: handed over (on_connect called); until then its
	 * completions wait in early[] */
	bool live;
	struct rcc_wc *early;
	int nearly, early_cap;
};

struct agent {
	struct rcc_server *srv;
	pthread_t thread;
	bool started;
	bool per_ep;
	struct rcc_cq *cq;
	int wakefd;
	int epfd; /* WAIT/FD modes: the CQ's fd and wakefd */
	pthread_mutex_t lock;
	struct conn *incoming; /* handed over by the listener (lock) */
	atomic_bool has_incoming;
	atomic_bool stop;
	atomic_bool done;
	atomic_bool wake;      /* rcc_server_wake(): on_wake for every connection */
	uint64_t next_wake_ns; /* attr.wake_ms: the next round (agent thread only) */
	atomic_int load;       /* connections assigned, for placement */
	struct conn *conns;    /* agent thread only */
	struct agent *next;    /* srv->agents (srv->lock) */
};

struct rcc_server {
	struct rcc_ctx *ctx;
	struct rcc_server_attr attr;
	struct rcc_server_ops ops;
	struct rcc_listener *lst;
	pthread_t listener;
	int stopfd;
	pthread_mutex_t lock;
	struct agent *agents;
	struct conn *all;     /* every live connection, for rcc_server_disconnect() */
	struct conn *pending; /* accepts started, not yet ended (listener thread only) */
	int evfd;             /* the context's connection events */
	struct agent **shared;
	int nshared;
	atomic_uint_fast64_t accepted, rejected, active;
	uint64_t spin_ns;      /* RCC_CQ_HYBRID: how long an agent spins before it sleeps */
	struct server_srq srq; /* attr.srq_depth: every connection's receives */
	/* rcc_server_connect() calls under way, and none begins once stopping
	 * (srv->lock; connects_done: the last one ended) */
	int connecting;
	bool stopping;
	pthread_cond_t connects_done;
};

/* Wake whoever sleeps on the eventfd fd (an agent, the listener). */
void rcci_server_wake(int fd);

/* A new agent (thread not started): its CQ, deep enough for one endpoint with
 * ep_attr (per_ep) or for many (shared). 0 or a negative errno. */
int rcci_server_agent_new(struct rcc_server *srv, bool per_ep, const struct rcc_ep_attr *ep_attr,
			  struct agent **out);
/* Start its thread and list it in srv->agents. 0 or a negative errno (the
 * agent is then still the caller's to free). */
int rcci_server_agent_start(struct agent *ag);
/* Free an agent whose thread is joined or never ran. */
void rcci_server_agent_free(struct agent *ag);
/* Give c to ag's thread: it goes live (or, failed, is dropped) there. */
void rcci_server_agent_handover(struct agent *ag, struct conn *c);
/* The shared-CQ agent with the fewest connections. */
struct agent *rcci_server_least_loaded(struct rcc_server *srv);
/* Count one more connection in stats.active unless max_connections are
 * already counted there: accepts (from request to end) and
 * rcc_server_connect() share them. false when none is left. */
bool rcci_server_take_slot(struct rcc_server *srv);
/* List c in srv->all (rcc_server_disconnect() finds it there). */
void rcci_server_track_conn(struct rcc_server *srv, struct conn *c);

/* From rcc_server_stop(): rcc_server_connect() fails with -ESHUTDOWN from
 * now on; waits for the calls under way (their connections have reached
 * their agents when it returns). In server_connect.c. */
void rcci_server_connects_stop(struct rcc_server *srv);

#endif
