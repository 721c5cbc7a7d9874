/* SPDX-License-Identifier: BSD-3-Clause */
#include "u32map.h"

#include <errno.h>
#include <stdlib.h>

int rcci_u32map_init(struct rcci_u32map *m, uint32_t cap)
{
	m->keys = calloc(cap, sizeof(*m->keys));
	m->vals = calloc(cap, sizeof(*m->vals));
	if (!m->keys || !m->vals) {
		free(m->keys);
		free(m->vals);
		m->keys = NULL;
		m->vals = NULL;
		return -ENOMEM;
	}
	m->cap = cap;
	m->used = m->live = 0;
	return 0;
}

void rcci_u32map_fini(struct rcci_u32map *m)
{
	free(m->keys);
	free(m->vals);
	m->keys = NULL;
	m->vals = NULL;
	m->cap = m->used = m->live = 0;
}

/* Store into the first free or dead slot; whether it was a never-used one. */
static bool place(uint32_t *keys, void **vals, uint32_t cap, uint32_t key, void *val)
{
	uint32_t i = rcci_u32map_slot(key, cap);
	while (keys[i] != RCCI_U32MAP_FREE && keys[i] != RCCI_U32MAP_TOMB)
		i = (i + 1) & (cap - 1);
	bool fresh = keys[i] == RCCI_U32MAP_FREE;
	keys[i] = key;
	vals[i] = val;
	return fresh;
}

static int rehash(struct rcci_u32map *m, uint32_t cap)
{
	uint32_t *keys = calloc(cap, sizeof(*keys));
	void **vals = calloc(cap, sizeof(*vals));

	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < m->cap; i++)
		if (m->keys[i] != RCCI_U32MAP_FREE && m->keys[i] != RCCI_U32MAP_TOMB)
			place(keys, vals, cap, m->keys[i], m->vals[i]);
	free(m->keys);
	free(m->vals);
	m->keys = keys;
	m->vals = vals;
	m->cap = cap;
	m->used = m->live;
	return 0;
}

int rcci_u32map_put(struct rcci_u32map *m, uint32_t key, void *val)
{
	if (key == RCCI_U32MAP_FREE || key == RCCI_U32MAP_TOMB)
		return -EINVAL;
	/* probes end at a never-used slot: keep at least half of them free */
	if ((m->used + 1) * 2 > m->cap) {
		uint32_t cap = (m->live + 1) * 4 > m->cap ? m->cap * 2 : m->cap;
		int rc = rehash(m, cap);
		if (rc)
			return rc;
	}
	m->used += place(m->keys, m->vals, m->cap, key, val);
	m->live++;
	return 0;
}

bool rcci_u32map_remove(struct rcci_u32map *m, uint32_t key)
{
	if (key == RCCI_U32MAP_FREE || key == RCCI_U32MAP_TOMB)
		return false;
	for (uint32_t i = rcci_u32map_slot(key, m->cap); m->keys[i] != RCCI_U32MAP_FREE;
	     i = (i + 1) & (m->cap - 1)) {
		if (m->keys[i] == key) {
			m->keys[i] = RCCI_U32MAP_TOMB;
			m->vals[i] = NULL;
			m->live--;
			return true;
		}
	}
	return false;
}
