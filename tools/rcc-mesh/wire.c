/* SPDX-License-Identifier: BSD-3-Clause */
#include "wire.h"

#include <errno.h>
#include <string.h>

#include <rcc/util.h>

/* A cursor over a bounded buffer: a read past the end sets bad instead of reading. */
struct cur {
	uint8_t *p;
	const uint8_t *q;
	size_t len, off;
	int bad;
};

static void put(struct cur *c, uint64_t v, int bytes)
{
	if (c->off + (size_t)bytes > c->len) {
		c->bad = 1;
		return;
	}
	uint8_t le[8];
	rcc_put_le64(le, v);
	memcpy(c->p + c->off, le, (size_t)bytes);
	c->off += (size_t)bytes;
}

static uint64_t get(struct cur *c, int bytes)
{
	uint64_t v = 0;
	if (c->off + (size_t)bytes > c->len) {
		c->bad = 1;
		return 0;
	}
	uint8_t le[8] = { 0 };
	memcpy(le, c->q + c->off, (size_t)bytes);
	v = rcc_get_le64(le);
	c->off += (size_t)bytes;
	return v;
}

void hello_encode(const struct mesh_hello *h, uint8_t out[HELLO_LEN])
{
	struct cur c = { .p = out, .len = HELLO_LEN };
	put(&c, MESH_MAGIC, 4);
	put(&c, MESH_VERSION, 1);
	put(&c, h->ops, 1);
	put(&c, h->src, 2);
	put(&c, h->dst, 2);
	put(&c, h->nodes, 2);
	put(&c, h->size, 4);
	put(&c, h->depth, 4);
	put(&c, h->list_hash, 4);
}

int hello_decode(const void *in, size_t len, struct mesh_hello *h)
{
	struct cur c = { .q = in, .len = len };
	if (!in || len < HELLO_LEN || get(&c, 4) != MESH_MAGIC || get(&c, 1) != MESH_VERSION)
		return -EPROTO;
	h->ops = (uint8_t)get(&c, 1);
	h->src = (uint16_t)get(&c, 2);
	h->dst = (uint16_t)get(&c, 2);
	h->nodes = (uint16_t)get(&c, 2);
	h->size = (uint32_t)get(&c, 4);
	h->depth = (uint32_t)get(&c, 4);
	h->list_hash = (uint32_t)get(&c, 4);
	return c.bad ? -EPROTO : 0;
}

void accept_encode(uint16_t rank, uint16_t nodes, uint8_t out[ACCEPT_LEN])
{
	struct cur c = { .p = out, .len = ACCEPT_LEN };
	put(&c, MESH_MAGIC, 4);
	put(&c, MESH_VERSION, 1);
	put(&c, 0, 1);
	put(&c, rank, 2);
	put(&c, nodes, 2);
}

int accept_decode(const void *in, size_t len, uint16_t *rank, uint16_t *nodes)
{
	struct cur c = { .q = in, .len = len };
	if (!in || len < ACCEPT_LEN || get(&c, 4) != MESH_MAGIC || get(&c, 1) != MESH_VERSION)
		return -EPROTO;
	get(&c, 1);
	*rank = (uint16_t)get(&c, 2);
	*nodes = (uint16_t)get(&c, 2);
	return c.bad ? -EPROTO : 0;
}

static void put_tx(struct cur *c, const struct pair_tx *t)
{
	put(c, t->msgs[0], 8);
	put(c, t->msgs[1], 8);
	put(c, t->bytes, 8);
	put(c, t->ns, 8);
	put(c, t->lat_p50, 8);
	put(c, t->lat_p99, 8);
	put(c, t->lat_p999, 8);
	put(c, t->lat_max, 8);
}

static void get_tx(struct cur *c, struct pair_tx *t)
{
	t->msgs[0] = get(c, 8);
	t->msgs[1] = get(c, 8);
	t->bytes = get(c, 8);
	t->ns = get(c, 8);
	t->lat_p50 = get(c, 8);
	t->lat_p99 = get(c, 8);
	t->lat_p999 = get(c, 8);
	t->lat_max = get(c, 8);
}

static void put_rx(struct cur *c, const struct pair_rx *r)
{
	put(c, r->msgs[0], 8);
	put(c, r->msgs[1], 8);
	put(c, r->bytes, 8);
	put(c, r->bad, 8);
	put(c, r->lost, 8);
	put(c, r->dup, 8);
	put(c, r->fin, 1);
}

static void get_rx(struct cur *c, struct pair_rx *r)
{
	r->msgs[0] = get(c, 8);
	r->msgs[1] = get(c, 8);
	r->bytes = get(c, 8);
	r->bad = get(c, 8);
	r->lost = get(c, 8);
	r->dup = get(c, 8);
	r->fin = (uint8_t)get(c, 1);
}

uint32_t ctrl_encode(const struct ctrl_msg *m, uint8_t out[CTRL_SIZE])
{
	struct cur c = { .p = out, .len = CTRL_SIZE };
	uint8_t mr[RCC_REMOTE_MR_WIRE_SIZE];

	put(&c, MESH_MAGIC, 4);
	put(&c, MESH_VERSION, 1);
	put(&c, m->type, 1);
	put(&c, m->from, 2);
	switch (m->type) {
	case CTRL_WELCOME:
		rcc_remote_mr_encode(&m->u.welcome.target, mr);
		for (int i = 0; i < RCC_REMOTE_MR_WIRE_SIZE; i++)
			put(&c, mr[i], 1);
		put(&c, m->u.welcome.stride, 4);
		put(&c, m->u.welcome.slots, 4);
		break;
	case CTRL_CREDIT:
		put(&c, m->u.credit.verified[0], 8);
		put(&c, m->u.credit.verified[1], 8);
		break;
	case CTRL_READY:
		break;
	case CTRL_FIN:
		for (int s = 0; s < 2; s++) {
			put(&c, m->u.fin.sent[s], 8);
			put(&c, m->u.fin.next_label[s], 8);
		}
		break;
	case CTRL_ROW_TX:
	case CTRL_ROW_RX:
		put(&c, m->u.row.src, 2);
		put(&c, m->u.row.dst, 2);
		if (m->type == CTRL_ROW_TX)
			put_tx(&c, &m->u.row.tx);
		else
			put_rx(&c, &m->u.row.rx);
		break;
	case CTRL_DONE:
		put(&c, m->u.done.rows, 2);
		put(&c, m->u.done.rss_base_kb, 8);
		put(&c, m->u.done.rss_end_kb, 8);
		put(&c, m->u.done.threads, 2);
		for (int i = 0; i < FAILED_MAP_LEN; i++)
			put(&c, m->u.done.failed[i], 1);
		put(&c, m->u.done.status, 1);
		break;
	}
	return (uint32_t)c.off;
}

int ctrl_decode(const void *in, size_t len, struct ctrl_msg *m)
{
	struct cur c = { .q = in, .len = len };
	uint8_t mr[RCC_REMOTE_MR_WIRE_SIZE];

	if (!in || get(&c, 4) != MESH_MAGIC || get(&c, 1) != MESH_VERSION)
		return -EPROTO;
	memset(m, 0, sizeof(*m));
	m->type = (enum ctrl_type)get(&c, 1);
	m->from = (uint16_t)get(&c, 2);
	switch (m->type) {
	case CTRL_WELCOME:
		for (int i = 0; i < RCC_REMOTE_MR_WIRE_SIZE; i++)
			mr[i] = (uint8_t)get(&c, 1);
		if (c.bad || rcc_remote_mr_decode(mr, sizeof(mr), &m->u.welcome.target))
			return -EPROTO;
		m->u.welcome.stride = (uint32_t)get(&c, 4);
		m->u.welcome.slots = (uint32_t)get(&c, 4);
		break;
	case CTRL_CREDIT:
		m->u.credit.verified[0] = get(&c, 8);
		m->u.credit.verified[1] = get(&c, 8);
		break;
	case CTRL_READY:
		break;
	case CTRL_FIN:
		for (int s = 0; s < 2; s++) {
			m->u.fin.sent[s] = get(&c, 8);
			m->u.fin.next_label[s] = get(&c, 8);
		}
		break;
	case CTRL_ROW_TX:
	case CTRL_ROW_RX:
		m->u.row.src = (uint16_t)get(&c, 2);
		m->u.row.dst = (uint16_t)get(&c, 2);
		if (m->type == CTRL_ROW_TX)
			get_tx(&c, &m->u.row.tx);
		else
			get_rx(&c, &m->u.row.rx);
		break;
	case CTRL_DONE:
		m->u.done.rows = (uint16_t)get(&c, 2);
		m->u.done.rss_base_kb = get(&c, 8);
		m->u.done.rss_end_kb = get(&c, 8);
		m->u.done.threads = (uint16_t)get(&c, 2);
		for (int i = 0; i < FAILED_MAP_LEN; i++)
			m->u.done.failed[i] = (uint8_t)get(&c, 1);
		m->u.done.status = (uint8_t)get(&c, 1);
		break;
	default:
		return -EPROTO;
	}
	return c.bad ? -EPROTO : 0;
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
