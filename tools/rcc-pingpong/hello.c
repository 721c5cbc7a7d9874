/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <string.h>

#include "pingpong.h"

#define PP_MAGIC "rcpp"
#define PP_VERSION 1

void pp_hello_encode(uint32_t size, uint8_t out[PP_HELLO_LEN])
{
	memcpy(out, PP_MAGIC, 4);
	out[4] = PP_VERSION;
	out[5] = out[6] = out[7] = 0;
	for (int i = 0; i < 4; i++)
		out[8 + i] = (uint8_t)(size >> (8 * i));
}

int pp_hello_decode(const void *data, size_t len, uint32_t *size)
{
	const uint8_t *p = data;
	uint32_t v = 0;

	if (!p || len < PP_HELLO_LEN || memcmp(p, PP_MAGIC, 4) || p[4] != PP_VERSION)
		return -EINVAL;
	for (int i = 0; i < 4; i++)
		v |= (uint32_t)p[8 + i] << (8 * i);
	if (v > PP_MAX_SIZE)
		return -EINVAL;
	*size = v;
	return 0;
}
