/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rcc-mesh wire formats: the hello a client sends with its connect request,
 * the server's accept data, and the control messages both sides exchange.
 * Every field is encoded explicitly little-endian (never a raw struct), and
 * every decoder checks length, magic and version: the bytes come from a peer.
 */
#ifndef RCC_MESH_WIRE_H
#define RCC_MESH_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rcc/rcc.h"

#define MESH_MAGIC 0x4853454du /* "MESH" */
#define MESH_VERSION 3         /* 3: the hello carries a tag under the job secret */
/* Immediate of every control message; data SENDs carry no immediate. */
#define MESH_CTRL_IMM 0x4d534843u
/* Largest control message, and the size of every control buffer. */
#define CTRL_SIZE 128

/*
 * What a client tells the server it connects to; both sides must agree. When
 * the job has a secret (the env bootstrap's RCC_JOB_SECRET), the hello ends
 * with a tag: HMAC-SHA256, truncated to HELLO_TAG_LEN bytes, under the key
 * rcc_bootstrap_derive_key(HELLO_KEY_LABEL) -- the same on every rank of this
 * run, another in every other run -- over HELLO_TAG_DOMAIN and the hello's
 * first HELLO_SIGNED_LEN bytes: magic, version, both ranks, the node count,
 * the options and the node list's hash. So a hello is good for one client
 * rank, one server rank, one node list and one run, and nobody without the
 * secret can make one. Without a secret the tag is zeros and nobody checks it.
 */
struct mesh_hello {
	uint16_t src, dst; /* ranks: the client's, and the one it thinks it reaches */
	uint16_t nodes;
	uint8_t ops;        /* enum mesh_ops */
	uint32_t size;      /* message size */
	uint32_t depth;     /* queue depth per stream */
	uint32_t list_hash; /* hash of the node list: every rank must use the same */
};
#define HELLO_SIGNED_LEN 24
#define HELLO_TAG_LEN 16
#define HELLO_LEN (HELLO_SIGNED_LEN + HELLO_TAG_LEN)
#define HELLO_KEY_LEN 32
#define HELLO_KEY_LABEL "rcc-mesh hello"
#define HELLO_TAG_DOMAIN "rcc-mesh hello tag"
/* The hello, with its tag under key (NULL: no secret, a zero tag). 0, or
 * -EIO when the HMAC could not be computed. */
int hello_encode(const struct mesh_hello *h, const uint8_t *key, uint8_t out[HELLO_LEN]);
int hello_decode(const void *in, size_t len, struct mesh_hello *h);
/* Whether the hello at in (hello_decode() took it: HELLO_LEN bytes or more)
 * carries the right tag under key; compared in constant time. */
bool hello_tag_ok(const uint8_t key[HELLO_KEY_LEN], const void *in);

/* The server's accept private data: who answered. */
#define ACCEPT_LEN 10
void accept_encode(uint16_t rank, uint16_t nodes, uint8_t out[ACCEPT_LEN]);
int accept_decode(const void *in, size_t len, uint16_t *rank, uint16_t *nodes);

enum ctrl_type {
	CTRL_WELCOME = 1, /* server -> client: where WRITEs go */
	CTRL_CREDIT,      /* server -> client: messages verified so far (cumulative) */
	CTRL_READY,       /* client -> server: the sender's rank has its whole mesh up */
	CTRL_FIN,         /* client -> server: the sender is done; what it sent */
	CTRL_ROW_TX,      /* client -> collector: one pair's sender figures */
	CTRL_ROW_RX,      /* client -> collector: one pair's receiver figures */
	CTRL_DONE,        /* client -> collector: the last of its figures */
};

struct ctrl_welcome {
	struct rcc_remote_mr target; /* the write slots: one region */
	uint32_t stride;             /* bytes from one slot to the next */
	uint32_t slots;
};

struct ctrl_credit {
	uint64_t verified[2]; /* per stream */
};

struct ctrl_fin {
	uint64_t sent[2];       /* messages per stream */
	uint64_t next_label[2]; /* the label the next message would have carried */
};

/* The path a connection's bytes took (rcc_ep_path), as a pair's row carries it. */
enum mesh_path {
	MESH_PATH_UNKNOWN = 0, /* the sender did not say (the pair never finished) */
	MESH_PATH_TCP,
	MESH_PATH_SHM,
	MESH_PATH_VERBS,
};
uint8_t mesh_path_code(const char *path);
/* "tcp", "shm", "verbs", or "-" for anything else. */
const char *mesh_path_name(uint8_t code);

/* One directed pair's figures, as one side saw them. */
struct pair_tx {
	uint64_t msgs[2];
	uint64_t bytes;
	uint64_t ns; /* from the start of traffic to the last completion */
	uint64_t lat_p50, lat_p99, lat_p999, lat_max; /* completion latency, ns */
	uint8_t path;                                 /* enum mesh_path of the sender's endpoint */
};

struct pair_rx {
	uint64_t msgs[2];
	uint64_t bytes;
	uint64_t bad, lost, dup;
	uint8_t fin; /* the sender's end-of-stream announcement arrived and matched */
};

struct ctrl_row {
	uint16_t src, dst;
	struct pair_tx tx; /* CTRL_ROW_TX */
	struct pair_rx rx; /* CTRL_ROW_RX */
};

#define FAILED_MAP_LEN 32 /* one bit per rank, MESH_MAX_NODES ranks */
struct ctrl_done {
	uint16_t rows;
	uint64_t rss_base_kb, rss_end_kb;
	uint16_t threads;               /* its thread count at the end of traffic */
	uint8_t failed[FAILED_MAP_LEN]; /* ranks this reporter lost */
	uint8_t status;                 /* its own exit status */
};

struct ctrl_msg {
	enum ctrl_type type;
	uint16_t from; /* sender's rank */
	union {
		struct ctrl_welcome welcome;
		struct ctrl_credit credit;
		struct ctrl_fin fin;
		struct ctrl_row row;
		struct ctrl_done done;
	} u;
};

/* Encode into a CTRL_SIZE buffer; returns the length used. */
uint32_t ctrl_encode(const struct ctrl_msg *m, uint8_t out[CTRL_SIZE]);
/* 0, or -EPROTO when the bytes are not a valid control message. */
int ctrl_decode(const void *in, size_t len, struct ctrl_msg *m);
const char *ctrl_type_name(enum ctrl_type t);

/* FNV-1a over the node addresses in rank order. */
uint32_t list_hash(const char *const *addrs, int n);

#endif
