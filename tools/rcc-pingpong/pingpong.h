/* SPDX-License-Identifier: BSD-3-Clause */
/* rcc-pingpong: shared definitions of its server and client. */
#ifndef RCC_PINGPONG_H
#define RCC_PINGPONG_H

#include <stdbool.h>
#include <stdint.h>

#include "rcc/bootstrap.h"
#include "rcc/rcc.h"
#include "rcc/session.h"

struct pp_opts {
	bool server;
	const char *host; /* client: the server (host part of SERVER) */
	char host_buf[256];
	const char *bind; /* server: listen address */
	int port;
	long iters;
	long warmup;
	uint32_t size;
	enum rcc_cq_mode cq_mode;
	enum rcc_qp_type qp_type; /* -c: both sides must agree (the hello says) */
	enum rcc_thread_mode thread_mode;
	int threads;        /* shared mode: progress threads */
	uint32_t srq_depth; /* server --srq N: one shared receive queue for all clients */
	struct rcc_ctx_attr ctx;
	bool verify;
	bool once;
	bool json;
	bool quiet;
	int timeout_ms;             /* bound on every wait of the client */
	struct rcc_bootstrap *boot; /* under a launcher (launch.c); else NULL */
};

int pp_parse(int argc, char **argv, struct pp_opts *o);

/* launch.c: two ranks under a launcher, rank 0 the server, rank 1 the client */
/* Without HOST: open the bootstrap if a launcher started us (exits on errors). */
void pp_launch_open(struct pp_opts *o);
/* Rank 0, listening on port: give rank 1 our address. 0 or -1 (said why). */
int pp_launch_publish(const struct pp_opts *o, int port);
/* Rank 1: learn the server's address into o->host/o->port. 0 or -1 (said why). */
int pp_launch_find_server(struct pp_opts *o);
int pp_server(const struct pp_opts *o);
int pp_client(const struct pp_opts *o);
/* Sleep until SIGINT/SIGTERM (blocked by the caller, so every thread
 * inherits the mask) or until donefd is readable (--once: the first client
 * has left). first_ms: how long a first client may take to arrive (-1: for
 * ever): then anyone_came(arg) decides, -ETIMEDOUT when none did. */
int pp_wait_for_end(int donefd, int first_ms, bool (*anyone_came)(void *), void *arg);

/* ud.c: -c ud. The server answers every client through one datagram
 * endpoint (addresses exchanged with rcc_ud_answer), each ping echoed to its
 * completion's source; a client resolves the server (rcc_ud_resolve),
 * pings through an address handle and says goodbye with a datagram. */
int pp_ud_server(const struct pp_opts *o);
struct pp_ud_client {
	struct rcc_cq *cq;
	struct rcc_ep *ep;
	struct rcc_ah *ah; /* the server */
};
/* 0, or -1 after saying why. */
int pp_ud_client_open(const struct pp_opts *o, struct rcc_ctx *ctx, const char *addr,
		      struct pp_ud_client *u);
void pp_ud_client_close(struct pp_ud_client *u);
/* The goodbye datagram's immediate (no payload): "bye!". */
#define PP_UD_BYE 0x62796521u

/*
 * The client's hello, carried as connect private data: "rcpp", version,
 * connection type (enum rcc_qp_type; 0, RC, from clients older than -c),
 * two zero bytes, message size (u32 LE). A client without it (rdma-core's
 * rdma_client) is served with the server's own -S size and -c type.
 */
#define PP_HELLO_LEN 12
void pp_hello_encode(uint32_t size, enum rcc_qp_type type, uint8_t out[PP_HELLO_LEN]);
/* 0, the size and the type, or -EINVAL when the data is not a hello (or
 * names a type rcc does not know). */
int pp_hello_decode(const void *data, size_t len, uint32_t *size, enum rcc_qp_type *type);

/* Version of the client's --json layout (docs/json.md): bumped when a field
 * changes meaning or goes away, not when one is added. */
#define PP_JSON_SCHEMA 1

/* Largest message rcc-pingpong agrees to echo. */
#define PP_MAX_SIZE (64u << 20)

#endif
