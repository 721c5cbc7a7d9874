/* SPDX-License-Identifier: BSD-3-Clause */
#include "proto.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cursor.h"

static const char *const type_names[] = {
	[XM_HELLO] = "HELLO",     [XM_CHALLENGE] = "CHALLENGE", [XM_AUTH] = "AUTH",
	[XM_AUTH_OK] = "AUTH_OK", [XM_META] = "META",           [XM_ACCEPT] = "ACCEPT",
	[XM_CREDIT] = "CREDIT",   [XM_DONE] = "DONE",           [XM_RESULT] = "RESULT",
	[XM_ERROR] = "ERROR",     [XM_KEEPALIVE] = "KEEPALIVE", [XM_BYE] = "BYE",
};

const char *xmsg_type_name(unsigned type)
{
	if (type >= 1 && type <= XM_TYPE_MAX)
		return type_names[type];
	return "unknown";
}

void xmsg_error(struct xmsg *m, enum xfer_err code, const char *fmt, ...)
{
	va_list ap;

	memset(m, 0, sizeof(*m));
	m->type = XM_ERROR;
	m->u.error.code = code;
	va_start(ap, fmt);
	vsnprintf(m->u.error.text, sizeof(m->u.error.text), fmt, ap);
	va_end(ap);
}

/* Length-prefixed string (u8 or u16 prefix) of at most max bytes. */
static void w_str(struct wcur *w, const char *s, size_t max, bool wide, bool *bad)
{
	size_t n = strlen(s);

	if (n > max) {
		*bad = true;
		return;
	}
	if (wide)
		w_u16(w, (uint16_t)n);
	else
		w_u8(w, (uint8_t)n);
	w_bytes(w, s, n);
}

static void encode_body(const struct xmsg *m, struct wcur *w, bool *bad)
{
	uint8_t mr[RCC_REMOTE_MR_WIRE_SIZE];

	switch (m->type) {
	case XM_HELLO:
		w_u16(w, m->u.hello.version);
		w_bytes(w, m->u.hello.nonce, XFER_NONCE_LEN);
		w_str(w, m->u.hello.id, XFER_ID_MAX, false, bad);
		break;
	case XM_CHALLENGE:
		w_bytes(w, m->u.challenge.nonce, XFER_NONCE_LEN);
		w_bytes(w, m->u.challenge.mac, XFER_MAC_LEN);
		break;
	case XM_AUTH:
		w_bytes(w, m->u.auth.mac, XFER_MAC_LEN);
		break;
	case XM_META:
		w_u64(w, m->u.meta.size);
		w_u64(w, (uint64_t)m->u.meta.mtime_s);
		w_u32(w, m->u.meta.mtime_ns);
		w_u32(w, m->u.meta.mode);
		w_u32(w, m->u.meta.flags);
		w_str(w, m->u.meta.name, XFER_NAME_MAX, true, bad);
		break;
	case XM_ACCEPT:
		w_u64(w, m->u.accept.offset);
		w_bytes(w, m->u.accept.prefix_sha, XFER_SHA_LEN);
		w_u32(w, m->u.accept.chunk_size);
		w_u32(w, m->u.accept.chunk_count);
		rcc_remote_mr_encode(&m->u.accept.window, mr);
		w_bytes(w, mr, sizeof(mr));
		break;
	case XM_CREDIT:
		w_u32(w, m->u.credit.slot);
		w_u64(w, m->u.credit.persisted);
		break;
	case XM_DONE:
		w_u64(w, m->u.done.size);
		w_bytes(w, m->u.done.sha, XFER_SHA_LEN);
		break;
	case XM_RESULT:
		w_bytes(w, m->u.result.sha, XFER_SHA_LEN);
		w_bytes(w, m->u.result.receipt, XFER_MAC_LEN);
		w_str(w, m->u.result.name, XFER_NAME_MAX, true, bad);
		break;
	case XM_ERROR:
		w_u32(w, m->u.error.code);
		w_str(w, m->u.error.text, XFER_TEXT_MAX, true, bad);
		break;
	case XM_AUTH_OK:
	case XM_KEEPALIVE:
	case XM_BYE:
		break;
	default:
		*bad = true;
	}
}

int xmsg_encode(const struct xmsg *m, uint8_t *buf, size_t cap)
{
	uint8_t body[XFER_BODY_MAX];
	struct wcur w, b;
	bool bad = false;

	w_init(&b, body, sizeof(body));
	encode_body(m, &b, &bad);
	if (bad)
		return -EINVAL;
	if (b.overflow)
		return -EMSGSIZE;
	w_init(&w, buf, cap);
	w_u32(&w, XFER_MAGIC);
	w_u8(&w, (uint8_t)m->type);
	w_u8(&w, 0);
	w_u16(&w, 0);
	w_u32(&w, (uint32_t)b.len);
	w_bytes(&w, body, b.len);
	if (w.overflow)
		return -EMSGSIZE;
	return (int)w.len;
}

int xhdr_parse(const uint8_t *buf, size_t len, struct xhdr *h, const char **why)
{
	struct rcur r;
	uint32_t magic;
	uint16_t reserved;
	size_t want;

	r_init(&r, buf, len);
	magic = r_u32(&r);
	h->type = r_u8(&r);
	h->flags = r_u8(&r);
	reserved = r_u16(&r);
	h->body_len = r_u32(&r);
	if (r.short_read) {
		*why = "frame shorter than its header";
		return -EBADMSG;
	}
	if (magic != XFER_MAGIC) {
		*why = "bad magic (not an rcc-xfer peer?)";
		return -EBADMSG;
	}
	if (reserved || (h->flags & ~XFER_FLAG_SEALED)) {
		*why = "reserved header bits set";
		return -EBADMSG;
	}
	if (h->body_len > XFER_BODY_MAX) {
		*why = "body length over the limit";
		return -EBADMSG;
	}
	want = XFER_HDR_LEN + h->body_len + ((h->flags & XFER_FLAG_SEALED) ? XFER_TAG_LEN : 0);
	if (want != len) {
		*why = "frame length disagrees with its header";
		return -EBADMSG;
	}
	if (h->type < 1 || h->type > XM_TYPE_MAX) {
		*why = "unknown message type";
		return -EBADMSG;
	}
	return 0;
}

/* A string of n bytes from r into out (capacity max + 1); no NUL inside. */
static bool r_str(struct rcur *r, size_t n, size_t max, char *out)
{
	const uint8_t *q;

	if (n > max)
		return false;
	q = r_take(r, n);
	if (!q)
		return false;
	if (memchr(q, 0, n))
		return false;
	memcpy(out, q, n);
	out[n] = 0;
	return true;
}

static bool id_ok(const char *id)
{
	if (!*id)
		return false;
	for (const char *p = id; *p; p++)
		if (*p < 0x21 || *p > 0x7e)
			return false;
	return true;
}

/* Peer text is only ever displayed: make it safe for a terminal. */
static void sanitize_text(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s == 0x7f)
			*s = '?';
}

int xmsg_decode_body(const struct xhdr *h, const uint8_t *body, struct xmsg *m, const char **why)
{
	struct rcur r;
	uint8_t mr[RCC_REMOTE_MR_WIRE_SIZE];
	bool ok = true;

	memset(m, 0, sizeof(*m));
	m->type = (enum xmsg_type)h->type;
	r_init(&r, body, h->body_len);
	switch (m->type) {
	case XM_HELLO:
		m->u.hello.version = r_u16(&r);
		r_bytes(&r, m->u.hello.nonce, XFER_NONCE_LEN);
		ok = r_str(&r, r_u8(&r), XFER_ID_MAX, m->u.hello.id) && id_ok(m->u.hello.id);
		if (!ok)
			*why = "HELLO: bad sender id";
		break;
	case XM_CHALLENGE:
		r_bytes(&r, m->u.challenge.nonce, XFER_NONCE_LEN);
		r_bytes(&r, m->u.challenge.mac, XFER_MAC_LEN);
		break;
	case XM_AUTH:
		r_bytes(&r, m->u.auth.mac, XFER_MAC_LEN);
		break;
	case XM_META:
		m->u.meta.size = r_u64(&r);
		m->u.meta.mtime_s = (int64_t)r_u64(&r);
		m->u.meta.mtime_ns = r_u32(&r);
		m->u.meta.mode = r_u32(&r);
		m->u.meta.flags = r_u32(&r);
		ok = r_str(&r, r_u16(&r), XFER_NAME_MAX, m->u.meta.name);
		if (!ok)
			*why = "META: bad name field";
		else if (m->u.meta.mtime_ns >= 1000000000u || (m->u.meta.mode & ~07777u) ||
			 (m->u.meta.flags & ~(uint32_t)XFER_META_FLAGS_ALL) ||
			 m->u.meta.size > (uint64_t)INT64_MAX) {
			ok = false;
			*why = "META: field out of range";
		}
		break;
	case XM_ACCEPT:
		m->u.accept.offset = r_u64(&r);
		r_bytes(&r, m->u.accept.prefix_sha, XFER_SHA_LEN);
		m->u.accept.chunk_size = r_u32(&r);
		m->u.accept.chunk_count = r_u32(&r);
		r_bytes(&r, mr, sizeof(mr));
		if (r.short_read)
			break;
		if (rcc_remote_mr_decode(mr, sizeof(mr), &m->u.accept.window) < 0) {
			ok = false;
			*why = "ACCEPT: bad window descriptor";
		} else if (m->u.accept.chunk_count > XFER_MAX_CHUNKS ||
			   (m->u.accept.chunk_count &&
			    (m->u.accept.chunk_size < XFER_MIN_CHUNK ||
			     m->u.accept.chunk_size > XFER_MAX_CHUNK ||
			     m->u.accept.window.length <
				     (uint64_t)m->u.accept.chunk_size * m->u.accept.chunk_count))) {
			ok = false;
			*why = "ACCEPT: chunk window out of range";
		}
		break;
	case XM_CREDIT:
		m->u.credit.slot = r_u32(&r);
		m->u.credit.persisted = r_u64(&r);
		break;
	case XM_DONE:
		m->u.done.size = r_u64(&r);
		r_bytes(&r, m->u.done.sha, XFER_SHA_LEN);
		break;
	case XM_RESULT:
		r_bytes(&r, m->u.result.sha, XFER_SHA_LEN);
		r_bytes(&r, m->u.result.receipt, XFER_MAC_LEN);
		ok = r_str(&r, r_u16(&r), XFER_NAME_MAX, m->u.result.name);
		if (!ok)
			*why = "RESULT: bad name field";
		break;
	case XM_ERROR:
		m->u.error.code = r_u32(&r);
		ok = r_str(&r, r_u16(&r), XFER_TEXT_MAX, m->u.error.text);
		if (ok)
			sanitize_text(m->u.error.text);
		else
			*why = "ERROR: bad text field";
		break;
	case XM_AUTH_OK:
	case XM_KEEPALIVE:
	case XM_BYE:
		break;
	}
	if (!ok)
		return -EBADMSG;
	if (!r_done(&r)) {
		*why = r.short_read ? "body shorter than its type requires" :
				      "body longer than its type allows";
		return -EBADMSG;
	}
	return 0;
}
