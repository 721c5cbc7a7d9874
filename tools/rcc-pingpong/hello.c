/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <string.h>

#include <rcc/util.h>

#include "pingpong.h"

#define PP_MAGIC "rcpp"
#define PP_VERSION 1

void pp_hello_encode(uint32_t size, enum rcc_qp_type type, uint8_t out[PP_HELLO_LEN])
{
	memcpy(out, PP_MAGIC, 4);
	out[4] = PP_VERSION;
	out[5] = (uint8_t)type;
	out[6] = out[7] = 0;
	rcc_put_le32(out + 8, size);
}

int pp_hello_decode(const void *data, size_t len, uint32_t *size, enum rcc_qp_type *type)
{
	const uint8_t *p = data;
	uint32_t v;

	if (!p || len < PP_HELLO_LEN || memcmp(p, PP_MAGIC, 4) || p[4] != PP_VERSION)
		return -EINVAL;
	v = rcc_get_le32(p + 8);
	if (v > PP_MAX_SIZE || p[5] > RCC_QP_UC)
		return -EINVAL;
	*size = v;
	*type = (enum rcc_qp_type)p[5];
	return 0;
}
