/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A map from a 32-bit key to a pointer, for lookups on a hot path (a memory
 * key on every remote access, a QP number on every verbs completion): open
 * addressing, linear probing, tombstones for removals. At most half of the
 * slots are ever taken, so a probe ends soon; a rehash drops the tombstones
 * of entries that came and went, and only live entries make it grow.
 * Keys 0 and 0xffffffff are reserved (a free slot, a tombstone). Not
 * thread-safe: the owner locks.
 */
#ifndef RCC_CORE_U32MAP_H
#define RCC_CORE_U32MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RCCI_U32MAP_FREE 0u
#define RCCI_U32MAP_TOMB 0xffffffffu

struct rcci_u32map {
	uint32_t *keys;
	void **vals;
	uint32_t cap;  /* a power of two */
	uint32_t used; /* live entries + tombstones */
	uint32_t live;
};

static inline uint32_t rcci_u32map_slot(uint32_t key, uint32_t cap)
{
	/* a multiplicative mix: QP numbers are sequential, keys may be weak */
	return (key * 2654435761u) & (cap - 1);
}

/* An empty map of cap slots (a power of two). 0 or -ENOMEM. */
int rcci_u32map_init(struct rcci_u32map *m, uint32_t cap);
void rcci_u32map_fini(struct rcci_u32map *m);

/* The value stored under key, or NULL (also for the reserved keys). */
static inline void *rcci_u32map_find(const struct rcci_u32map *m, uint32_t key)
{
	if (key == RCCI_U32MAP_FREE || key == RCCI_U32MAP_TOMB)
		return NULL;
	for (uint32_t i = rcci_u32map_slot(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (m->keys[i] == key)
			return m->vals[i];
		if (m->keys[i] == RCCI_U32MAP_FREE)
			return NULL;
	}
}

/* Store val under key, which must not be in the map nor reserved. 0,
 * -EINVAL (a reserved key) or -ENOMEM (the map is unchanged). */
int rcci_u32map_put(struct rcci_u32map *m, uint32_t key, void *val);

/* Remove key; whether it was there. */
bool rcci_u32map_remove(struct rcci_u32map *m, uint32_t key);

#endif
