/* SPDX-License-Identifier: BSD-3-Clause */
/* The env bootstrap: frames on one connection, proofs and keys (boot_env.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "boot_env.h"
#include "base/addr.h"
#include "base/sock.h"
#include "rcc/rcc.h"

static void frame_tag(const struct conn *c, char dir, uint64_t seq, const uint8_t *hdr,
		      const uint8_t *payload, size_t len, uint8_t tag[BOOT_TAG_LEN])
{
	uint8_t s[8];
	for (int i = 0; i < 8; i++)
		s[i] = (uint8_t)(seq >> (56 - 8 * i));
	struct rcci_iov parts[] = {
		{ &dir, 1 }, { s, 8 }, { hdr, BOOT_HDR_LEN }, { payload, len }
	};
	rcci_hmac_sha256(c->key, sizeof(c->key), parts, 4, tag);
}

/* One frame, with its tag when the connection is authenticated. dir: who sends. */
int rcci_boot_frame_send(struct conn *c, char dir, uint8_t type, const void *payload, size_t len,
			 uint64_t deadline)
{
	size_t tag = c->keyed ? BOOT_TAG_LEN : 0;
	uint8_t *f = malloc(BOOT_HDR_LEN + len + tag);
	int rc;

	if (!f)
		return -ENOMEM;
	rcci_boot_hdr_encode(type, (uint32_t)(len + tag), f);
	if (len)
		memcpy(f + BOOT_HDR_LEN, payload, len);
	if (tag)
		frame_tag(c, dir, c->seq_tx++, f, f + BOOT_HDR_LEN, len, f + BOOT_HDR_LEN + len);
	rc = rcci_send_all(c->fd, f, BOOT_HDR_LEN + len + tag, deadline);
	free(f);
	return rc;
}

/*
 * Check a whole frame at f (header decoded into h): its length is within the
 * type's bound and, when sealed, its tag is right. dir: who sent it. Returns
 * the payload length (tag excluded) or -EPROTO / -EACCES.
 */
long rcci_boot_frame_open(struct conn *c, char dir, uint32_t size, const struct boot_hdr *h,
			  const uint8_t *f)
{
	size_t tag = c->keyed ? BOOT_TAG_LEN : 0;
	uint8_t want[BOOT_TAG_LEN];

	if (h->len < tag || h->len - tag > rcci_boot_payload_max(h->type, size))
		return -EPROTO;
	size_t len = h->len - tag;
	if (tag) {
		frame_tag(c, dir, c->seq_rx, f, f + BOOT_HDR_LEN, len, want);
		if (!rcci_ct_equal(want, f + BOOT_HDR_LEN + len, BOOT_TAG_LEN))
			return -EACCES;
		c->seq_rx++;
	}
	return (long)len;
}

void rcci_boot_proof(const struct boot_env *e, const char *label, const uint8_t *nonce_s,
		     const struct boot_hello *h, const uint8_t *run, uint8_t out[RCCI_SHA256_LEN])
{
	uint8_t rs[8];
	for (int i = 0; i < 4; i++) {
		rs[i] = (uint8_t)(h->rank >> (24 - 8 * i));
		rs[4 + i] = (uint8_t)(h->size >> (24 - 8 * i));
	}
	struct rcci_iov parts[] = { { label, strlen(label) + 1 },
				    { nonce_s, BOOT_NONCE_LEN },
				    { h->nonce, BOOT_NONCE_LEN },
				    { rs, 8 },
				    { run, run ? BOOT_RUN_LEN : 0 } };
	rcci_hmac_sha256(e->secret, e->secret_len, parts, run ? 5 : 4, out);
}

void rcci_boot_conn_free(struct conn *c)
{
	if (!c)
		return;
	if (c->fd >= 0)
		close(c->fd);
	free(c->buf);
	memset(c->key, 0, sizeof(c->key));
	free(c);
}

struct conn *rcci_boot_conn_new(int fd)
{
	struct conn *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->fd = fd;
	c->rank = -1;
	return c;
}

void rcci_boot_peer_name(int fd, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (getpeername(fd, (struct sockaddr *)&ss, &sl))
		snprintf(buf, len, "?");
	else
		rcci_addr_format((const struct sockaddr *)&ss, buf, len);
}

const char *rcci_boot_why(int rc)
{
	switch (rc) {
	case -ECONNRESET:
		return "closed the connection";
	case -EPROTO:
		return "sent a malformed frame";
	case -EPROTONOSUPPORT:
		return "speaks another version of the bootstrap protocol (another rcc release?)";
	case -EACCES:
		return "failed authentication";
	default:
		return rcc_strerror(rc);
	}
}

void rcci_boot_conn_key(const struct boot_env *e, struct conn *c, const uint8_t *nonce_s,
			const uint8_t *nonce_c)
{
	static const char label[] = "rcc bootstrap key";
	struct rcci_iov parts[] = { { label, sizeof(label) },
				    { nonce_s, BOOT_NONCE_LEN },
				    { nonce_c, BOOT_NONCE_LEN } };

	rcci_hmac_sha256(e->secret, e->secret_len, parts, 3, c->key);
	c->keyed = true;
}
