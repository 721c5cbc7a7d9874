/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rcc-mesh's wire (tools/rcc-mesh/wire.c) over peer bytes: a connect request's
 * hello, an accept's private data and a control message. A hello that decodes
 * encodes back to the same fields, its tag is checked without reading past
 * the hello, and a hello made without the key never passes the check.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t key[HELLO_KEY_LEN] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct mesh_hello h;
	struct ctrl_msg m;
	uint16_t rank, nodes;
	uint8_t again[HELLO_LEN];

	if (hello_decode(data, size, &h) == 0) {
		/* a copy of exactly the hello's length: a read past it is caught */
		uint8_t *in = malloc(HELLO_LEN);
		if (!in)
			abort();
		memcpy(in, data, HELLO_LEN);
		(void)hello_tag_ok(key, in);
		if (hello_encode(&h, NULL, again) || memcmp(again, in, HELLO_SIGNED_LEN) ||
		    hello_tag_ok(key, again))
			abort();
		if (hello_encode(&h, key, again) || !hello_tag_ok(key, again))
			abort();
		free(in);
	}
	(void)accept_decode(data, size, &rank, &nodes);
	(void)ctrl_decode(data, size, &m);
	return 0;
}
