/* SPDX-License-Identifier: BSD-3-Clause */
#include "auth.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hash.h"
#include "cursor.h"

#define LABEL_RECEIVER "rcc-xfer/1 receiver proof"
#define LABEL_SENDER "rcc-xfer/1 sender proof"
#define LABEL_SESSION "rcc-xfer/1 session key"
#define LABEL_RECEIPT "rcc-xfer/1 receipt"
#define LABEL_FRAME "rcc-xfer/1 frame"
#define PDATA_MAGIC 0x46584352u /* "RCXF" */

static size_t trim_right(const uint8_t *p, size_t n)
{
	while (n && (p[n - 1] == '\n' || p[n - 1] == '\r' || p[n - 1] == ' ' || p[n - 1] == '\t'))
		n--;
	return n;
}

static int key_from_file(const char *path, struct xfer_key *k, int *warn, char *err, size_t errlen)
{
	uint8_t buf[XFER_KEY_MAX + 2];
	struct stat st;
	ssize_t n;
	size_t len = 0;
	int fd, rc = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot open key file %s: %s", path, strerror(errno));
		return rc;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		rc = -EINVAL;
		snprintf(err, errlen, "key file %s is not a regular file", path);
		goto out;
	}
	*warn = (st.st_mode & 077) != 0;
	while (len < sizeof(buf)) {
		n = read(fd, buf + len, sizeof(buf) - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			snprintf(err, errlen, "cannot read key file %s: %s", path, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	len = trim_right(buf, len);
	if (len > XFER_KEY_MAX) {
		rc = -E2BIG;
		snprintf(err, errlen, "key file %s: key longer than %d bytes", path, XFER_KEY_MAX);
		goto out;
	}
	memcpy(k->b, buf, len);
	k->len = len;
out:
	OPENSSL_cleanse(buf, sizeof(buf));
	close(fd);
	return rc;
}

int key_load(const char *path, struct xfer_key *k, int *warn, char *err, size_t errlen)
{
	int rc;

	*warn = 0;
	k->len = 0;
	if (path) {
		rc = key_from_file(path, k, warn, err, errlen);
		if (rc)
			return rc;
	} else {
		const char *env = getenv(XFER_ENV_KEY);
		if (!env || !*env) {
			snprintf(err, errlen,
				 "no key: give --key-file FILE or set %s (see 'rcc-xfer keygen')",
				 XFER_ENV_KEY);
			return -ENOKEY;
		}
		size_t len = trim_right((const uint8_t *)env, strlen(env));
		if (len > XFER_KEY_MAX) {
			snprintf(err, errlen, "%s: key longer than %d bytes", XFER_ENV_KEY,
				 XFER_KEY_MAX);
			return -E2BIG;
		}
		memcpy(k->b, env, len);
		k->len = len;
	}
	if (k->len < XFER_KEY_MIN) {
		snprintf(err, errlen,
			 "key too short (%zu bytes): use at least %d, e.g. from "
			 "'rcc-xfer keygen FILE'",
			 k->len, XFER_KEY_MIN);
		key_wipe(k);
		return -EINVAL;
	}
	return 0;
}

void key_wipe(struct xfer_key *k)
{
	OPENSSL_cleanse(k->b, sizeof(k->b));
	k->len = 0;
}

int random_bytes(void *p, size_t n) { return RAND_bytes(p, (int)n) == 1 ? 0 : -EIO; }

int key_generate(const char *path)
{
	uint8_t raw[32];
	char hex[2 * sizeof(raw) + 2];
	int fd, rc = 0;

	if (random_bytes(raw, sizeof(raw)))
		return -EIO;
	hex_encode(raw, sizeof(raw), hex);
	OPENSSL_cleanse(raw, sizeof(raw));
	strcat(hex, "\n");
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	if (write(fd, hex, strlen(hex)) != (ssize_t)strlen(hex) || fsync(fd) < 0)
		rc = errno ? -errno : -EIO;
	if (close(fd) < 0 && !rc)
		rc = -errno;
	if (rc)
		unlink(path);
out:
	OPENSSL_cleanse(hex, sizeof(hex));
	return rc;
}

void pdata_encode(const uint8_t token[XFER_TOKEN_LEN], uint8_t out[XFER_PDATA_LEN])
{
	struct wcur w;

	w_init(&w, out, XFER_PDATA_LEN);
	w_u32(&w, PDATA_MAGIC);
	w_u16(&w, XFER_PROTO_VERSION);
	w_u16(&w, 0);
	w_bytes(&w, token, XFER_TOKEN_LEN);
}

int pdata_decode(const void *p, size_t len, uint8_t token[XFER_TOKEN_LEN])
{
	struct rcur r;

	if (!p || len != XFER_PDATA_LEN)
		return -EPROTO;
	r_init(&r, p, len);
	if (r_u32(&r) != PDATA_MAGIC)
		return -EPROTO;
	if (r_u16(&r) != XFER_PROTO_VERSION)
		return -EPROTONOSUPPORT;
	if (r_u16(&r) != 0)
		return -EPROTO;
	r_bytes(&r, token, XFER_TOKEN_LEN);
	return r_done(&r) ? 0 : -EPROTO;
}

static int hmac(const uint8_t *key, size_t keylen, const uint8_t *data, size_t len,
		uint8_t out[XFER_MAC_LEN])
{
	unsigned int outlen = 0;

	if (!HMAC(EVP_sha256(), key, (int)keylen, data, len, out, &outlen) ||
	    outlen != XFER_MAC_LEN)
		return -EIO;
	return 0;
}

static void put_transcript(struct wcur *w, const char *label, const struct auth_transcript *t)
{
	size_t idlen = strnlen(t->id, XFER_ID_MAX);

	w_bytes(w, label, strlen(label) + 1);
	w_bytes(w, t->token_s, XFER_TOKEN_LEN);
	w_bytes(w, t->token_r, XFER_TOKEN_LEN);
	w_bytes(w, t->nonce_s, XFER_NONCE_LEN);
	w_bytes(w, t->nonce_r, XFER_NONCE_LEN);
	w_u8(w, (uint8_t)idlen);
	w_bytes(w, t->id, idlen);
}

static int transcript_mac(const struct xfer_key *k, const char *label,
			  const struct auth_transcript *t, uint8_t out[XFER_MAC_LEN])
{
	uint8_t buf[256];
	struct wcur w;

	w_init(&w, buf, sizeof(buf));
	put_transcript(&w, label, t);
	if (w.overflow)
		return -EMSGSIZE;
	return hmac(k->b, k->len, buf, w.len, out);
}

int auth_proof(const struct xfer_key *k, enum auth_role role, const struct auth_transcript *t,
	       uint8_t out[XFER_MAC_LEN])
{
	return transcript_mac(k, role == AUTH_SENDER ? LABEL_SENDER : LABEL_RECEIVER, t, out);
}

int auth_session_key(const struct xfer_key *k, const struct auth_transcript *t,
		     uint8_t out[XFER_MAC_LEN])
{
	return transcript_mac(k, LABEL_SESSION, t, out);
}

int auth_equal(const uint8_t *a, const uint8_t *b, size_t n) { return CRYPTO_memcmp(a, b, n) == 0; }

int auth_receipt(const struct xfer_key *k, const char *id, const uint8_t sha[XFER_SHA_LEN],
		 uint64_t size, const char *name, uint8_t out[XFER_MAC_LEN])
{
	uint8_t buf[sizeof(LABEL_RECEIPT) + 1 + XFER_ID_MAX + XFER_SHA_LEN + 8 + 2 + XFER_NAME_MAX];
	size_t idlen = strnlen(id, XFER_ID_MAX), namelen = strnlen(name, XFER_NAME_MAX);
	struct wcur w;

	w_init(&w, buf, sizeof(buf));
	w_bytes(&w, LABEL_RECEIPT, sizeof(LABEL_RECEIPT));
	w_u8(&w, (uint8_t)idlen);
	w_bytes(&w, id, idlen);
	w_bytes(&w, sha, XFER_SHA_LEN);
	w_u64(&w, size);
	w_u16(&w, (uint16_t)namelen);
	w_bytes(&w, name, namelen);
	if (w.overflow)
		return -EMSGSIZE;
	return hmac(k->b, k->len, buf, w.len, out);
}

int auth_frame_tag(const uint8_t skey[XFER_MAC_LEN], uint8_t dir, uint64_t seq,
		   const uint8_t *frame, size_t len, uint8_t out[XFER_TAG_LEN])
{
	uint8_t buf[sizeof(LABEL_FRAME) + 1 + 8 + XFER_FRAME_MAX];
	struct wcur w;

	w_init(&w, buf, sizeof(buf));
	w_bytes(&w, LABEL_FRAME, sizeof(LABEL_FRAME));
	w_u8(&w, dir);
	w_u64(&w, seq);
	w_bytes(&w, frame, len);
	if (w.overflow)
		return -EMSGSIZE;
	return hmac(skey, XFER_MAC_LEN, buf, w.len, out);
}
