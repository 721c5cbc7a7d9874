/* SPDX-License-Identifier: BSD-3-Clause */
/* The env bootstrap, ranks > 0: joining the rendezvous, taking part (boot_env.h). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "boot_env.h"
#include "base/addr.h"
#include "base/sock.h"
#include "rcc/rcc.h"
#include "rcc/util.h"

/* Read one whole frame of an expected type (or ABORT) into a new buffer. */
static int recv_frame(struct rcc_bootstrap *bs, struct boot_env *e, uint8_t type, uint8_t **f,
		      size_t *len, struct boot_hdr *h, uint64_t deadline)
{
	struct conn *c = e->up;
	uint8_t hb[BOOT_HDR_LEN];
	int rc = rcci_recv_all(c->fd, hb, sizeof(hb), deadline);

	if (rc)
		return rc;
	rc = rcci_boot_hdr_decode(hb, h);
	if (rc)
		return rc;
	if ((h->type != type && h->type != BOOT_ABORT) ||
	    h->len > rcci_boot_payload_max(h->type, (uint32_t)bs->size) + BOOT_TAG_LEN)
		return -EPROTO;
	*f = malloc(BOOT_HDR_LEN + h->len);
	if (!*f)
		return -ENOMEM;
	memcpy(*f, hb, BOOT_HDR_LEN);
	rc = rcci_recv_all(c->fd, *f + BOOT_HDR_LEN, h->len, deadline);
	if (rc)
		goto err;
	long l = rcci_boot_frame_open(c, 's', (uint32_t)bs->size, h, *f);
	if (l < 0) {
		rc = (int)l;
		goto err;
	}
	*len = (size_t)l;
	return 0;
err:
	free(*f);
	*f = NULL;
	return rc;
}

/* An ABORT's text, escaped, as this call's error. */
static int aborted(struct rcc_bootstrap *bs, const uint8_t *text, size_t len)
{
	char esc[RCC_BOOTSTRAP_ERROR_MAX - 64];
	rcc_text_escape(esc, sizeof(esc), text, len);
	rcci_boot_fail(bs, "rank 0 gave up: %s", esc);
	return -ECANCELED;
}

static int connect_up(struct rcc_bootstrap *bs, struct boot_env *e, uint64_t deadline)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int rc, fd;

	rc = rcci_addr_resolve(e->master, false, &ss, &sl);
	if (rc) {
		rcci_boot_fail(bs, "cannot resolve the rendezvous address %s", e->master);
		return rc;
	}
	for (;;) {
		fd = rcci_sock_connect((struct sockaddr *)&ss, sl, deadline);
		if (fd >= 0)
			break;
		rc = fd;
		/* rank 0 not listening yet: launchers start ranks in any order */
		if ((rc != -ECONNREFUSED && rc != -ECONNRESET) || !rcci_ms_left(deadline))
			return rc;
		poll(NULL, 0,
		     rcci_ms_left(deadline) < RETRY_MS ? rcci_ms_left(deadline) : RETRY_MS);
	}
	if (!(e->up = rcci_boot_conn_new(fd))) {
		close(fd);
		return -ENOMEM;
	}
	return 0;
}

static int join(struct rcc_bootstrap *bs, struct boot_env *e, uint64_t deadline)
{
	struct boot_challenge ch;
	struct boot_hello h = { .rank = (uint32_t)bs->rank, .size = (uint32_t)bs->size };
	struct boot_hdr hdr;
	uint8_t p[BOOT_HELLO_LEN], want[RCCI_SHA256_LEN], *f = NULL;
	size_t len;
	int rc;

	if ((rc = connect_up(bs, e, deadline)))
		return rc;
	if ((rc = recv_frame(bs, e, BOOT_CHALLENGE, &f, &len, &hdr, deadline)))
		return rc;
	if (hdr.type == BOOT_ABORT || rcci_boot_challenge_decode(f + BOOT_HDR_LEN, len, &ch)) {
		free(f);
		return -EPROTO;
	}
	free(f);
	if (!(ch.flags & BOOT_FLAG_AUTH) != !e->secret_len) {
		rcci_boot_fail(bs, "%s",
			       e->secret_len ?
				       "rank 0 does not authenticate, but we have a job secret "
				       "(set RCC_JOB_SECRET the same on every rank)" :
				       "rank 0 requires a job secret (RCC_JOB_SECRET), and we "
				       "have none");
		return -EACCES;
	}
	if (getrandom(h.nonce, BOOT_NONCE_LEN, 0) != BOOT_NONCE_LEN)
		return -EIO;
	if (e->secret_len)
		rcci_boot_proof(e, "rcc bootstrap rank", ch.nonce, &h, NULL, h.proof);
	rcci_boot_hello_encode(&h, p);
	if ((rc = rcci_boot_frame_send(e->up, 'c', BOOT_HELLO, p, sizeof(p), deadline)))
		return rc;
	if ((rc = recv_frame(bs, e, BOOT_WELCOME, &f, &len, &hdr, deadline)))
		return rc;
	if (hdr.type == BOOT_ABORT) {
		rc = aborted(bs, f + BOOT_HDR_LEN, len);
		free(f);
		return rc == -ECANCELED ? -EACCES : rc;
	}
	if (len != BOOT_WELCOME_LEN) { /* the proof is read whole: nothing shorter */
		free(f);
		return -EPROTO;
	}
	if (e->secret_len) {
		const uint8_t *run = f + BOOT_HDR_LEN + BOOT_TAG_LEN;
		rcci_boot_proof(e, "rcc bootstrap rank 0", ch.nonce, &h, run, want);
		if (!rcci_ct_equal(want, f + BOOT_HDR_LEN, sizeof(want))) {
			free(f);
			rcci_boot_fail(bs, "the rendezvous at %s does not know the job secret",
				       e->master);
			return -EACCES;
		}
		rcci_boot_conn_key(e, e->up, ch.nonce, h.nonce);
		memcpy(e->run, run, BOOT_RUN_LEN);
	}
	free(f);
	return 0;
}

int rcci_boot_leaf_allgather(struct rcc_bootstrap *bs, struct boot_env *e, const void *blob,
			     size_t len, void *out, size_t stride, size_t *lens, int timeout_ms)
{
	uint64_t deadline = rcci_deadline(timeout_ms + CLIENT_GRACE_MS);
	uint8_t p[4 + RCC_BOOTSTRAP_BLOB_MAX], *f = NULL;
	struct boot_hdr hdr;
	size_t flen;
	int rc = 0;

	if (!e->up)
		rc = join(bs, e, deadline);
	if (!rc)
		rc = rcci_boot_frame_send(e->up, 'c', BOOT_CONTRIB, p,
					  rcci_boot_contrib_encode(e->round, blob, len, p),
					  deadline);
	if (!rc)
		rc = recv_frame(bs, e, BOOT_RESULT, &f, &flen, &hdr, deadline);
	if (!rc && hdr.type == BOOT_ABORT)
		rc = aborted(bs, f + BOOT_HDR_LEN, flen);
	else if (!rc)
		rc = rcci_boot_result_decode(f + BOOT_HDR_LEN, flen, e->round, (uint32_t)bs->size,
					     out, stride, lens);
	free(f);
	if (!rc) {
		e->round++;
		return 0;
	}
	if (bs->err[0])
		return rc;
	if (rc == -ETIMEDOUT)
		rcci_boot_fail(bs, "no answer from the rendezvous at %s (rank 0) within %.1f s: %s",
			       e->master, (timeout_ms + CLIENT_GRACE_MS) / 1000.0,
			       e->up ? "rank 0 is still waiting for other ranks, or stopped" :
				       "rank 0 is not running, or MASTER_ADDR/PORT are wrong");
	else if (rc == -ECONNREFUSED)
		rcci_boot_fail(bs, "nobody listens at the rendezvous %s (rank 0) after %.1f s",
			       e->master, (timeout_ms + CLIENT_GRACE_MS) / 1000.0);
	else if (rc == -EMSGSIZE)
		rcci_boot_fail(bs, "a rank's blob is longer than the %zu bytes asked for", stride);
	else
		rcci_boot_fail(bs, "the rendezvous at %s (rank 0) %s", e->master,
			       rcci_boot_why(rc));
	return rc;
}
