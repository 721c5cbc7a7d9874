/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tcp transport's wire format. Every field is encoded explicitly in
 * little-endian order; nothing is sent as a raw struct.
 *
 * Handshake (before any frame), 16-byte header then private data:
 *   0 magic "RCCt"   4 u16 version   6 u16 kind (HELLO/ACCEPT/REJECT)
 *   8 u16 pdata_len 10 u16 flags 12 u32 max_rd_atomic
 * flags (reserved=0 before shared memory; a peer that never sets them gets
 * plain tcp): WIRE_HS_F_SHM on a HELLO offers shared memory and appends the
 * client's host identity after the private data (WIRE_SHM_HELLO_LEN: 16-byte
 * kernel boot id, u64 netns st_dev, u64 netns st_ino); on an ACCEPT it means
 * "take the region offered here": the server's identity, then the 16-byte
 * random name of the Unix socket (abstract namespace) that hands over the
 * region's sealed memfd, the 16-byte random token to show there, u32 ring
 * capacity, u32 the region's layout (SHM_LAYOUT in shm_ring.h; reserved=0
 * before it was named, the layout of those builds is 0) (WIRE_SHM_ACCEPT_LEN).
 * A client that does not know the layout stays on the socket. It then answers
 * with an 8-byte confirmation: "RCCs", u32 0 (the region is mapped: the
 * stream runs over it) or non-zero (both stay on the socket).
 *
 * Frame header, 40 bytes, followed by len payload bytes:
 *   0 u8 type   1 u8 flags   2 u16 status   4 u32 len   8 u32 msn
 *  12 u32 ack (next request number this side expects: all below are done)
 *  16 u64 raddr   24 u32 rkey   28 u32 imm   32 u32 total   36 u32 reserved=0
 */
#ifndef RCC_TCP_WIRE_H
#define RCC_TCP_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define WIRE_MAGIC "RCCt"
#define WIRE_VERSION 1
#define WIRE_HS_HDR_LEN 16
#define WIRE_HDR_LEN 40
/* Largest payload of one frame; longer messages travel as several chunks. */
#define WIRE_FRAME_MAX (256u * 1024u)
#define WIRE_ATOMIC_REQ_LEN 16
#define WIRE_ATOMIC_RESP_LEN 8

#define WIRE_HS_F_SHM 1u
#define WIRE_SHM_NAME_LEN 16
#define WIRE_SHM_TOKEN_LEN 16
#define WIRE_SHM_HELLO_LEN 32
#define WIRE_SHM_ACCEPT_LEN (WIRE_SHM_HELLO_LEN + WIRE_SHM_NAME_LEN + WIRE_SHM_TOKEN_LEN + 8)
#define WIRE_SHM_CONFIRM_LEN 8
#define WIRE_SHM_MAGIC "RCCs"

enum wire_hs_kind {
	WIRE_HS_HELLO = 1,
	WIRE_HS_ACCEPT = 2,
	WIRE_HS_REJECT = 3,
};

struct wire_hs {
	uint16_t version;
	uint16_t kind;
	uint16_t pdata_len;
	uint16_t flags; /* WIRE_HS_F_* */
	uint32_t max_rd_atomic;
};

/* Where a process runs: same boot id and network namespace = same host. */
struct wire_shm_id {
	uint8_t boot_id[16];
	uint64_t netns_dev;
	uint64_t netns_ino;
};

/* The shared-memory part of an ACCEPT. */
struct wire_shm_accept {
	struct wire_shm_id id;
	uint8_t name[WIRE_SHM_NAME_LEN];   /* where the region is handed over */
	uint8_t token[WIRE_SHM_TOKEN_LEN]; /* what to show there */
	uint32_t cap;
	uint32_t layout; /* SHM_LAYOUT of the server's build */
};

enum wire_type {
	WIRE_SEND = 1,        /* a chunk of a SEND; FIRST consumes a receive */
	WIRE_WRITE = 2,       /* a chunk of a WRITE; LAST+IMM consumes a receive */
	WIRE_READ_REQ = 3,    /* raddr, rkey, total = length */
	WIRE_ATOMIC_REQ = 4,  /* raddr, rkey; payload: compare_add, swap */
	WIRE_READ_RESP = 5,   /* a chunk of READ data for request msn */
	WIRE_ATOMIC_RESP = 6, /* payload: the remote value before the operation */
	WIRE_ACK = 7,         /* ack; imm: the sender's dead-peer timeout in ms (0: none) */
	WIRE_NAK = 8,         /* request msn failed: status; RNR: imm = rnr timer code */
	WIRE_CLOSE = 9,       /* orderly end of the connection */
};

enum wire_flags {
	WIRE_F_FIRST = 1 << 0,
	WIRE_F_LAST = 1 << 1,
	WIRE_F_IMM = 1 << 2,
	WIRE_F_SOLICITED = 1 << 3,
	WIRE_F_CAS = 1 << 4, /* ATOMIC_REQ: compare-and-swap (else fetch-and-add) */
	/* Single copy (shared memory only, shm_cma.h): a WRITE (FIRST and LAST)
	 * or READ_REQ whose payload is the descriptor of the initiator's
	 * buffer, which the target copies itself; a READ_RESP (FIRST and LAST,
	 * no payload) whose data the target has put in place already. */
	WIRE_F_CMA = 1 << 5,
	/* Mapped (shared memory only, shm_map.h): a WRITE with immediate
	 * (FIRST and LAST, no payload) whose total bytes the initiator copied
	 * into the target's memory itself; the target only completes the
	 * receive (plain mapped WRITEs and READs travel as zero-length WRITEs). */
	WIRE_F_MAPPED = 1 << 6,
};

/* NAK statuses on the wire (decoupled from the API's enum values). */
enum wire_nak {
	WIRE_NAK_RNR = 1,
	WIRE_NAK_REM_ACCESS = 2,
	WIRE_NAK_REM_INV_REQ = 3,
	WIRE_NAK_REM_OP = 4,
};

struct wire_hdr {
	uint8_t type;
	uint8_t flags;
	uint16_t status;
	uint32_t len;
	uint32_t msn;
	uint32_t ack;
	uint64_t raddr;
	uint32_t rkey;
	uint32_t imm;
	uint32_t total;
};

void rcci_wire_hdr_encode(const struct wire_hdr *h, uint8_t out[WIRE_HDR_LEN]);
/* Decode and validate a frame header: 0 or -EPROTO. */
int rcci_wire_hdr_decode(const uint8_t in[WIRE_HDR_LEN], struct wire_hdr *h);
/* The payload length a frame header announces, from its first
 * WIRE_HDR_LEN_PREFIX bytes, unchecked (a hint: rcci_wire_hdr_decode checks). */
#define WIRE_HDR_LEN_PREFIX 8u
uint32_t rcci_wire_hdr_len(const uint8_t in[WIRE_HDR_LEN_PREFIX]);

void rcci_wire_hs_encode(const struct wire_hs *h, uint8_t out[WIRE_HS_HDR_LEN]);
/* Decode and validate a handshake header: 0 or -EPROTO. */
int rcci_wire_hs_decode(const uint8_t in[WIRE_HS_HDR_LEN], struct wire_hs *h);
/* Length of the shared-memory extension a handshake of this header carries. */
size_t rcci_wire_hs_ext_len(const struct wire_hs *h);

void rcci_wire_shm_id_encode(const struct wire_shm_id *id, uint8_t out[WIRE_SHM_HELLO_LEN]);
void rcci_wire_shm_id_decode(const uint8_t in[WIRE_SHM_HELLO_LEN], struct wire_shm_id *id);
void rcci_wire_shm_accept_encode(const struct wire_shm_accept *a, uint8_t out[WIRE_SHM_ACCEPT_LEN]);
/* Every field as sent: the capacity and the layout are the user's to check. */
void rcci_wire_shm_accept_decode(const uint8_t in[WIRE_SHM_ACCEPT_LEN], struct wire_shm_accept *a);

#endif
