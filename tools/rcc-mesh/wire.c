/* SPDX-License-Identifier: BSD-3-Clause */
#include "wire.h"

#include <errno.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "cursor.h"

/* HMAC-SHA256 of HELLO_TAG_DOMAIN and the signed part, truncated. */
static int hello_tag(const uint8_t key[HELLO_KEY_LEN], const uint8_t *signed_part,
		     uint8_t tag[HELLO_TAG_LEN])
{
	uint8_t in[sizeof(HELLO_TAG_DOMAIN) + HELLO_SIGNED_LEN], mac[EVP_MAX_MD_SIZE];
	unsigned maclen = 0;

	memcpy(in, HELLO_TAG_DOMAIN, sizeof(HELLO_TAG_DOMAIN)); /* its NUL ends it */
	memcpy(in + sizeof(HELLO_TAG_DOMAIN), signed_part, HELLO_SIGNED_LEN);
	if (!HMAC(EVP_sha256(), key, HELLO_KEY_LEN, in, sizeof(in), mac, &maclen) ||
	    maclen < HELLO_TAG_LEN)
		return -EIO;
	memcpy(tag, mac, HELLO_TAG_LEN);
	OPENSSL_cleanse(mac, sizeof(mac));
	return 0;
}

int hello_encode(const struct mesh_hello *h, const uint8_t *key, uint8_t out[HELLO_LEN])
{
	struct wcur c;
	w_init(&c, out, HELLO_LEN);
	w_u32(&c, MESH_MAGIC);
	w_u8(&c, MESH_VERSION);
	w_u8(&c, h->ops);
	w_u16(&c, h->src);
	w_u16(&c, h->dst);
	w_u16(&c, h->nodes);
	w_u32(&c, h->size);
	w_u32(&c, h->depth);
	w_u32(&c, h->list_hash);
	memset(out + HELLO_SIGNED_LEN, 0, HELLO_TAG_LEN);
	return key ? hello_tag(key, out, out + HELLO_SIGNED_LEN) : 0;
}

bool hello_tag_ok(const uint8_t key[HELLO_KEY_LEN], const void *in)
{
	uint8_t want[HELLO_TAG_LEN];
	const uint8_t *p = in;

	if (hello_tag(key, p, want))
		return false;
	return CRYPTO_memcmp(want, p + HELLO_SIGNED_LEN, HELLO_TAG_LEN) == 0;
}

int hello_decode(const void *in, size_t len, struct mesh_hello *h)
{
	struct rcur c;
	r_init(&c, in, len);
	if (!in || len < HELLO_LEN || r_u32(&c) != MESH_MAGIC || r_u8(&c) != MESH_VERSION)
		return -EPROTO;
	h->ops = r_u8(&c);
	h->src = r_u16(&c);
	h->dst = r_u16(&c);
	h->nodes = r_u16(&c);
	h->size = r_u32(&c);
	h->depth = r_u32(&c);
	h->list_hash = r_u32(&c);
	return c.short_read ? -EPROTO : 0;
}

void accept_encode(uint16_t rank, uint16_t nodes, uint8_t out[ACCEPT_LEN])
{
	struct wcur c;
	w_init(&c, out, ACCEPT_LEN);
	w_u32(&c, MESH_MAGIC);
	w_u8(&c, MESH_VERSION);
	w_u8(&c, 0);
	w_u16(&c, rank);
	w_u16(&c, nodes);
}

int accept_decode(const void *in, size_t len, uint16_t *rank, uint16_t *nodes)
{
	struct rcur c;
	r_init(&c, in, len);
	if (!in || len < ACCEPT_LEN || r_u32(&c) != MESH_MAGIC || r_u8(&c) != MESH_VERSION)
		return -EPROTO;
	r_u8(&c);
	*rank = r_u16(&c);
	*nodes = r_u16(&c);
	return c.short_read ? -EPROTO : 0;
}

static void put_tx(struct wcur *c, const struct pair_tx *t)
{
	w_u64(c, t->msgs[0]);
	w_u64(c, t->msgs[1]);
	w_u64(c, t->bytes);
	w_u64(c, t->ns);
	w_u64(c, t->lat_p50);
	w_u64(c, t->lat_p99);
	w_u64(c, t->lat_p999);
	w_u64(c, t->lat_max);
	w_u8(c, t->path);
}

static void get_tx(struct rcur *c, struct pair_tx *t)
{
	t->msgs[0] = r_u64(c);
	t->msgs[1] = r_u64(c);
	t->bytes = r_u64(c);
	t->ns = r_u64(c);
	t->lat_p50 = r_u64(c);
	t->lat_p99 = r_u64(c);
	t->lat_p999 = r_u64(c);
	t->lat_max = r_u64(c);
	t->path = r_u8(c); /* an unknown code prints as "-" */
}

static void put_rx(struct wcur *c, const struct pair_rx *r)
{
	w_u64(c, r->msgs[0]);
	w_u64(c, r->msgs[1]);
	w_u64(c, r->bytes);
	w_u64(c, r->bad);
	w_u64(c, r->lost);
	w_u64(c, r->dup);
	w_u8(c, r->fin);
}

static void get_rx(struct rcur *c, struct pair_rx *r)
{
	r->msgs[0] = r_u64(c);
	r->msgs[1] = r_u64(c);
	r->bytes = r_u64(c);
	r->bad = r_u64(c);
	r->lost = r_u64(c);
	r->dup = r_u64(c);
	r->fin = r_u8(c);
}

uint32_t ctrl_encode(const struct ctrl_msg *m, uint8_t out[CTRL_SIZE])
{
	struct wcur c;
	w_init(&c, out, CTRL_SIZE);
	uint8_t mr[RCC_REMOTE_MR_WIRE_SIZE];

	w_u32(&c, MESH_MAGIC);
	w_u8(&c, MESH_VERSION);
	w_u8(&c, m->type);
	w_u16(&c, m->from);
	switch (m->type) {
	case CTRL_WELCOME:
		rcc_remote_mr_encode(&m->u.welcome.target, mr);
		w_bytes(&c, mr, sizeof(mr));
		w_u32(&c, m->u.welcome.stride);
		w_u32(&c, m->u.welcome.slots);
		break;
	case CTRL_CREDIT:
		w_u64(&c, m->u.credit.verified[0]);
		w_u64(&c, m->u.credit.verified[1]);
		break;
	case CTRL_READY:
		break;
	case CTRL_FIN:
		for (int s = 0; s < 2; s++) {
			w_u64(&c, m->u.fin.sent[s]);
			w_u64(&c, m->u.fin.next_label[s]);
		}
		break;
	case CTRL_ROW_TX:
	case CTRL_ROW_RX:
		w_u16(&c, m->u.row.src);
		w_u16(&c, m->u.row.dst);
		if (m->type == CTRL_ROW_TX)
			put_tx(&c, &m->u.row.tx);
		else
			put_rx(&c, &m->u.row.rx);
		break;
	case CTRL_DONE:
		w_u16(&c, m->u.done.rows);
		w_u64(&c, m->u.done.rss_base_kb);
		w_u64(&c, m->u.done.rss_end_kb);
		w_u16(&c, m->u.done.threads);
		w_bytes(&c, m->u.done.failed, FAILED_MAP_LEN);
		w_u8(&c, m->u.done.status);
		break;
	}
	return (uint32_t)c.len;
}

int ctrl_decode(const void *in, size_t len, struct ctrl_msg *m)
{
	struct rcur c;
	r_init(&c, in, len);
	uint8_t mr[RCC_REMOTE_MR_WIRE_SIZE];

	if (!in || r_u32(&c) != MESH_MAGIC || r_u8(&c) != MESH_VERSION)
		return -EPROTO;
	memset(m, 0, sizeof(*m));
	m->type = (enum ctrl_type)r_u8(&c);
	m->from = r_u16(&c);
	switch (m->type) {
	case CTRL_WELCOME:
		r_bytes(&c, mr, sizeof(mr));
		if (c.short_read || rcc_remote_mr_decode(mr, sizeof(mr), &m->u.welcome.target))
			return -EPROTO;
		m->u.welcome.stride = r_u32(&c);
		m->u.welcome.slots = r_u32(&c);
		break;
	case CTRL_CREDIT:
		m->u.credit.verified[0] = r_u64(&c);
		m->u.credit.verified[1] = r_u64(&c);
		break;
	case CTRL_READY:
		break;
	case CTRL_FIN:
		for (int s = 0; s < 2; s++) {
			m->u.fin.sent[s] = r_u64(&c);
			m->u.fin.next_label[s] = r_u64(&c);
		}
		break;
	case CTRL_ROW_TX:
	case CTRL_ROW_RX:
		m->u.row.src = r_u16(&c);
		m->u.row.dst = r_u16(&c);
		if (m->type == CTRL_ROW_TX)
			get_tx(&c, &m->u.row.tx);
		else
			get_rx(&c, &m->u.row.rx);
		break;
	case CTRL_DONE:
		m->u.done.rows = r_u16(&c);
		m->u.done.rss_base_kb = r_u64(&c);
		m->u.done.rss_end_kb = r_u64(&c);
		m->u.done.threads = r_u16(&c);
		r_bytes(&c, m->u.done.failed, FAILED_MAP_LEN);
		m->u.done.status = r_u8(&c);
		break;
	default:
		return -EPROTO;
	}
	return c.short_read ? -EPROTO : 0;
}

uint8_t mesh_path_code(const char *path)
{
	if (!strcmp(path, "tcp"))
		return MESH_PATH_TCP;
	if (!strcmp(path, "shm"))
		return MESH_PATH_SHM;
	if (!strcmp(path, "verbs"))
		return MESH_PATH_VERBS;
	return MESH_PATH_UNKNOWN;
}

const char *mesh_path_name(uint8_t code)
{
	switch (code) {
	case MESH_PATH_TCP:
		return "tcp";
	case MESH_PATH_SHM:
		return "shm";
	case MESH_PATH_VERBS:
		return "verbs";
	default:
		return "-";
	}
}

const char *ctrl_type_name(enum ctrl_type t)
{
	switch (t) {
	case CTRL_WELCOME:
		return "WELCOME";
	case CTRL_CREDIT:
		return "CREDIT";
	case CTRL_READY:
		return "READY";
	case CTRL_FIN:
		return "FIN";
	case CTRL_ROW_TX:
		return "ROW_TX";
	case CTRL_ROW_RX:
		return "ROW_RX";
	case CTRL_DONE:
		return "DONE";
	}
	return "?";
}

uint32_t list_hash(const char *const *addrs, int n)
{
	uint32_t h = 2166136261u;
	for (int i = 0; i < n; i++) {
		for (const char *s = addrs[i]; *s; s++)
			h = (h ^ (uint8_t)*s) * 16777619u;
		h = (h ^ 0xff) * 16777619u; /* separator: "a","bc" differs from "ab","c" */
	}
	return h;
}
