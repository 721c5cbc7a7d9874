/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory keys: random, unguessable, looked up on every access; and the check
 * every access passes (key, access flags, bounds of the region).
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/random.h>

#include "tcp.h"

int rcci_keys_init(struct key_table *t) { return rcci_u32map_init(&t->map, 64); }

void rcci_keys_free(struct key_table *t) { rcci_u32map_fini(&t->map); }

uint32_t rcci_keys_random(void)
{
	uint32_t k = 0;
	while (k == RCCI_U32MAP_FREE || k == RCCI_U32MAP_TOMB) {
		if (getrandom(&k, sizeof(k), 0) != (ssize_t)sizeof(k))
			k = (uint32_t)random() ^ ((uint32_t)random() << 16);
	}
	return k;
}

int rcci_keys_insert(struct key_table *t, struct tcp_mr *mr)
{
	uint32_t key;

	do
		key = rcci_keys_random();
	while (keys_find(t, key));
	int rc = rcci_u32map_put(&t->map, key, mr);
	if (rc)
		return rc;
	mr->base.lkey = key;
	mr->base.rkey = key;
	return 0;
}

void rcci_keys_remove(struct key_table *t, uint32_t key) { rcci_u32map_remove(&t->map, key); }

bool rcci_mr_covers_locked(struct tcp_ctx *ctx, uint32_t key, uint64_t addr, uint64_t len,
			   unsigned access)
{
	const struct tcp_mr *mr = keys_find(&ctx->keys, key);
	if (!mr || (mr->base.access & access) != access)
		return false;
	uint64_t start = (uint64_t)(uintptr_t)mr->base.addr;
	return addr >= start && addr + len >= addr && addr + len <= start + mr->base.length;
}

bool rcci_mr_covers(struct tcp_ctx *ctx, uint32_t key, uint64_t addr, uint64_t len, unsigned access)
{
	rcci_rwlock_read(&ctx->mr_lock);
	bool ok = rcci_mr_covers_locked(ctx, key, addr, len, access);
	rcci_rwlock_read_end(&ctx->mr_lock);
	return ok;
}
