/* SPDX-License-Identifier: BSD-3-Clause */
/* The tcp transport's memory-key table: random keys, lookups, removal, growth. */
#include <stdlib.h>

#include "harness.h"
#include "transport/tcp/tcp.h"

static void insert_find_remove(void)
{
	enum {
		N = 5000
	};
	struct key_table t;
	struct tcp_mr *mr = calloc(N, sizeof(*mr));

	CHECK(mr);
	CHECK_OK(keys_init(&t));
	for (int i = 0; i < N; i++) {
		CHECK_OK(keys_insert(&t, &mr[i]));
		CHECK(mr[i].base.lkey != 0 && mr[i].base.lkey == mr[i].base.rkey);
	}
	for (int i = 0; i < N; i++)
		CHECK(keys_find(&t, mr[i].base.lkey) == &mr[i]);
	/* remove every other one; the rest stay reachable across tombstones */
	for (int i = 0; i < N; i += 2)
		keys_remove(&t, mr[i].base.lkey);
	for (int i = 0; i < N; i++)
		CHECK(keys_find(&t, mr[i].base.lkey) == (i % 2 ? &mr[i] : NULL));
	/* reuse the freed slots */
	for (int i = 0; i < N; i += 2)
		CHECK_OK(keys_insert(&t, &mr[i]));
	for (int i = 0; i < N; i++)
		CHECK(keys_find(&t, mr[i].base.lkey) == &mr[i]);
	CHECK(keys_find(&t, 0) == NULL);
	CHECK(keys_find(&t, 0xffffffffu) == NULL);
	keys_free(&t);
	free(mr);
}

/* Keys are not sequential: a peer cannot guess the next one. */
static void keys_look_random(void)
{
	struct key_table t;
	struct tcp_mr mr[64];
	int small_steps = 0;

	CHECK_OK(keys_init(&t));
	for (int i = 0; i < 64; i++)
		CHECK_OK(keys_insert(&t, &mr[i]));
	for (int i = 1; i < 64; i++) {
		uint32_t d = mr[i].base.lkey - mr[i - 1].base.lkey;
		if (d < 1024 || d > 0xffffffffu - 1024)
			small_steps++;
	}
	CHECK(small_steps < 3);
	keys_free(&t);
}

TEST_MAIN(TEST(insert_find_remove), TEST(keys_look_random))
