/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rcc-xfer control messages: what travels by SEND/RECV between sender and
 * receiver, as messages of the session layer's message channel (rcc_chan_*,
 * which puts its own 8-byte header with the credits in front of each: see
 * docs/rcc-xfer.md). Every message is a frame with an explicit little-endian
 * header,
 *
 *   u32 magic "RCX1" | u8 type | u8 flags | u16 reserved (0) | u32 body_len
 *
 * a body of at most XFER_BODY_MAX bytes whose layout depends on the type, and,
 * once both sides are authenticated, a 32-byte tag (HMAC-SHA256 under the
 * session key) that the channel adds and checks (see chan.h). The decoder
 * accepts a body only if it has exactly the length its type implies and every
 * field is in range; anything else is a protocol error, never a crash.
 * File data never travels here: it moves by RDMA WRITE into the window.
 */
#ifndef XFER_PROTO_H
#define XFER_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rcc/rcc.h"

/* 2: frames travel on rcc_chan (its header, credits); 1 had raw SENDs. */
#define XFER_PROTO_VERSION 2
#define XFER_MAGIC 0x31584352u /* "RCX1" on the wire */
#define XFER_HDR_LEN 12
#define XFER_TAG_LEN 32
#define XFER_BODY_MAX 512
#define XFER_FRAME_MAX (XFER_HDR_LEN + XFER_BODY_MAX + XFER_TAG_LEN)
#define XFER_FLAG_SEALED 0x01

#define XFER_NONCE_LEN 32
#define XFER_MAC_LEN 32
#define XFER_SHA_LEN 32
#define XFER_ID_MAX 64
#define XFER_NAME_MAX 255
#define XFER_TEXT_MAX 200

/* Bounds any peer must respect for the chunk window it offers. */
#define XFER_MAX_CHUNKS 64u
#define XFER_MIN_CHUNK (4u << 10)
#define XFER_MAX_CHUNK (64u << 20)

/* The message channel's credits, which both ends must use: a constant, so
 * that neither has to learn the other's before the first message. A chunk
 * in flight holds one of the receiver's receives until it is read, so the
 * largest window any receiver may offer fits, with room for the control
 * messages beside it; the receives kept posted are what the old wire had. */
#define XFER_CHAN_CREDITS (XFER_MAX_CHUNKS + 16)

enum xmsg_type {
	XM_HELLO = 1, /* S->R: version, sender nonce, sender id */
	XM_CHALLENGE, /* R->S: receiver nonce, receiver's proof */
	XM_AUTH,      /* S->R: sender's proof */
	XM_AUTH_OK,   /* R->S: first sealed message */
	XM_META,      /* S->R: one file offered */
	XM_ACCEPT,    /* R->S: resume point and the chunk window */
	XM_CREDIT,    /* R->S: a chunk slot was persisted and may be written again */
	XM_DONE,      /* S->R: every chunk written; the file's SHA-256 */
	XM_RESULT,    /* R->S: the file is in place; receipt */
	XM_ERROR,     /* either way: this file (or the session) failed, and why */
	XM_KEEPALIVE, /* either way: still here, busy with local work */
	XM_BYE,       /* S->R: no more files */
	XM_TYPE_MAX = XM_BYE,
};

/* META flags. */
#define XFER_META_FORCE 0x1     /* the sender asks to replace an existing file */
#define XFER_META_NO_RESUME 0x2 /* discard any partial copy and start over */
#define XFER_META_FLAGS_ALL (XFER_META_FORCE | XFER_META_NO_RESUME)

/* Error codes carried by XM_ERROR. Stable: they are part of the protocol. */
enum xfer_err {
	XE_NONE = 0,
	XE_AUTH = 1,        /* authentication failed */
	XE_PROTO,           /* malformed or unexpected message */
	XE_VERSION,         /* protocol version not supported */
	XE_BADNAME,         /* file name refused */
	XE_EXISTS,          /* destination exists and overwriting was not allowed */
	XE_BUSY,            /* another transfer of this name is running; or too many connections */
	XE_NOSPACE,         /* no space left on the receiver */
	XE_IO,              /* local I/O error */
	XE_INTEGRITY,       /* SHA-256 of what was written differs from the sender's */
	XE_SOURCE_CHANGED,  /* the source file changed while it was being sent */
	XE_RESUME_MISMATCH, /* the receiver's partial copy is not a prefix of the source */
	XE_INTERRUPTED,     /* the peer was told to stop (signal) */
	XE_TOO_LARGE,       /* a size or window outside what this side accepts */
	XE_TIMEOUT,         /* the peer was silent for too long */
	XE_INTERNAL,        /* out of memory, registration failure, ... */
	XE_NOTSUPP,         /* a request this side does not support */
	XE_MAX_KNOWN = XE_NOTSUPP,
};

struct xmsg {
	enum xmsg_type type;
	union {
		struct {
			uint16_t version;
			uint8_t nonce[XFER_NONCE_LEN];
			char id[XFER_ID_MAX + 1];
		} hello;
		struct {
			uint8_t nonce[XFER_NONCE_LEN];
			uint8_t mac[XFER_MAC_LEN];
		} challenge;
		struct {
			uint8_t mac[XFER_MAC_LEN];
		} auth;
		struct {
			uint64_t size;
			int64_t mtime_s;
			uint32_t mtime_ns;
			uint32_t mode;  /* permission bits only (07777) */
			uint32_t flags; /* XFER_META_* */
			char name[XFER_NAME_MAX + 1];
		} meta;
		struct {
			uint64_t offset; /* resume point: bytes the receiver already holds */
			uint8_t prefix_sha[XFER_SHA_LEN]; /* SHA-256 of those bytes */
			uint32_t chunk_size;
			uint32_t chunk_count; /* 0 when nothing is left to send */
			struct rcc_remote_mr window;
		} accept;
		struct {
			uint32_t slot;
			uint64_t persisted; /* bytes written in file order so far */
		} credit;
		struct {
			uint64_t size;
			uint8_t sha[XFER_SHA_LEN];
		} done;
		struct {
			uint8_t sha[XFER_SHA_LEN];
			uint8_t receipt[XFER_MAC_LEN];
			char name[XFER_NAME_MAX + 1];
		} result;
		struct {
			uint32_t code; /* enum xfer_err; unknown values are shown as numbers */
			char text[XFER_TEXT_MAX + 1];
		} error;
	} u;
};

/* Encode header and body of m into buf. Returns the frame length or -EINVAL
 * (a field out of range) / -EMSGSIZE (does not fit cap). */
int xmsg_encode(const struct xmsg *m, uint8_t *buf, size_t cap);

/* The header fields of a frame. */
struct xhdr {
	uint8_t type;
	uint8_t flags;
	uint32_t body_len;
};

/* Parse and check the header of a received frame of len bytes: magic,
 * reserved bits, body_len within bounds and consistent with len (counting
 * the tag when the sealed flag is set). 0 or -EBADMSG with *why set. */
int xhdr_parse(const uint8_t *buf, size_t len, struct xhdr *h, const char **why);

/* Decode the body of a frame whose header was accepted. 0 or -EBADMSG with
 * *why set to a short reason. */
int xmsg_decode_body(const struct xhdr *h, const uint8_t *body, struct xmsg *m, const char **why);

/* "HELLO", "META", ...; "unknown" for others. */
const char *xmsg_type_name(unsigned type);

/* Fill an XM_ERROR message; text is truncated to XFER_TEXT_MAX. */
void xmsg_error(struct xmsg *m, enum xfer_err code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
