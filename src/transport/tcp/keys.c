/* SPDX-License-Identifier: BSD-3-Clause */
/* Memory keys: random, unguessable, looked up on every remote access. */
#include <errno.h>
#include <stdlib.h>
#include <sys/random.h>

#include "tcp.h"

#define KEY_FREE 0u
#define KEY_TOMB 0xffffffffu

static uint32_t slot_of(uint32_t key, uint32_t cap)
{
	/* Keys are random already; a multiplicative mix guards against a weak source. */
	return (key * 2654435761u) & (cap - 1);
}

int keys_init(struct key_table *t)
{
	t->cap = 64;
	t->used = t->live = 0;
	t->keys = calloc(t->cap, sizeof(*t->keys));
	t->vals = calloc(t->cap, sizeof(*t->vals));
	if (!t->keys || !t->vals) {
		free(t->keys);
		free(t->vals);
		return -ENOMEM;
	}
	return 0;
}

void keys_free(struct key_table *t)
{
	free(t->keys);
	free(t->vals);
	t->keys = NULL;
	t->vals = NULL;
}

static void place(uint32_t *keys, struct tcp_mr **vals, uint32_t cap, uint32_t key,
		  struct tcp_mr *mr)
{
	uint32_t i = slot_of(key, cap);
	while (keys[i] != KEY_FREE)
		i = (i + 1) & (cap - 1);
	keys[i] = key;
	vals[i] = mr;
}

static int rehash(struct key_table *t, uint32_t cap)
{
	uint32_t *keys = calloc(cap, sizeof(*keys));
	struct tcp_mr **vals = calloc(cap, sizeof(*vals));

	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < t->cap; i++)
		if (t->keys[i] != KEY_FREE && t->keys[i] != KEY_TOMB)
			place(keys, vals, cap, t->keys[i], t->vals[i]);
	free(t->keys);
	free(t->vals);
	t->keys = keys;
	t->vals = vals;
	t->cap = cap;
	t->used = t->live;
	return 0;
}

static uint32_t random_key(void)
{
	uint32_t k = 0;
	while (k == KEY_FREE || k == KEY_TOMB) {
		if (getrandom(&k, sizeof(k), 0) != (ssize_t)sizeof(k))
			k = (uint32_t)random() ^ ((uint32_t)random() << 16);
	}
	return k;
}

int keys_insert(struct key_table *t, struct tcp_mr *mr)
{
	uint32_t key;
	int rc;

	if ((t->used + 1) * 4 > t->cap * 3) {
		uint32_t cap = t->live * 4 > t->cap * 2 ? t->cap * 2 : t->cap;
		rc = rehash(t, cap);
		if (rc)
			return rc;
	}
	do
		key = random_key();
	while (keys_find(t, key));
	uint32_t i = slot_of(key, t->cap);
	while (t->keys[i] != KEY_FREE && t->keys[i] != KEY_TOMB)
		i = (i + 1) & (t->cap - 1);
	if (t->keys[i] == KEY_FREE)
		t->used++;
	t->keys[i] = key;
	t->vals[i] = mr;
	t->live++;
	mr->base.lkey = key;
	mr->base.rkey = key;
	return 0;
}

void keys_remove(struct key_table *t, uint32_t key)
{
	uint32_t i = slot_of(key, t->cap);
	while (t->keys[i] != KEY_FREE) {
		if (t->keys[i] == key) {
			t->keys[i] = KEY_TOMB;
			t->vals[i] = NULL;
			t->live--;
			return;
		}
		i = (i + 1) & (t->cap - 1);
	}
}

struct tcp_mr *keys_find(const struct key_table *t, uint32_t key)
{
	if (key == KEY_FREE || key == KEY_TOMB)
		return NULL;
	uint32_t i = slot_of(key, t->cap);
	while (t->keys[i] != KEY_FREE) {
		if (t->keys[i] == key)
			return t->vals[i];
		i = (i + 1) & (t->cap - 1);
	}
	return NULL;
}
