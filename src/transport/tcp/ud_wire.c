/* SPDX-License-Identifier: BSD-3-Clause */
/* The datagram header of the tcp transport (format in ud_wire.h). */
#include <errno.h>
#include <string.h>

#include "rcc/util.h"
#include "ud_wire.h"

#define UD_MAGIC "RCud"

void rcci_ud_hdr_encode(const struct ud_hdr *h, uint8_t out[UD_HDR_LEN])
{
	memcpy(out, UD_MAGIC, 4);
	out[4] = UD_WIRE_VERSION;
	out[5] = h->opcode;
	out[6] = h->flags;
	out[7] = 0;
	rcc_put_le32(out + 8, h->qkey);
	rcc_put_le32(out + 12, h->src_id);
	rcc_put_le32(out + 16, h->dst_id);
	rcc_put_le32(out + 20, h->imm);
	rcc_put_le32(out + 24, h->len);
}

int rcci_ud_hdr_decode(const uint8_t *in, size_t got, uint32_t max, struct ud_hdr *h)
{
	struct ud_hdr d;

	if (got < UD_HDR_LEN || memcmp(in, UD_MAGIC, 4) || in[4] != UD_WIRE_VERSION || in[7])
		return -EPROTO;
	d.opcode = in[5];
	d.flags = in[6];
	if ((d.opcode != UD_OP_SEND && d.opcode != UD_OP_SEND_IMM) || (d.flags & ~UD_F_SOLICITED))
		return -EPROTO;
	d.qkey = rcc_get_le32(in + 8);
	d.src_id = rcc_get_le32(in + 12);
	d.dst_id = rcc_get_le32(in + 16);
	d.imm = rcc_get_le32(in + 20);
	d.len = rcc_get_le32(in + 24);
	if (d.len > max || d.len != got - UD_HDR_LEN)
		return -EPROTO;
	if (d.opcode == UD_OP_SEND && d.imm)
		return -EPROTO;
	*h = d;
	return 0;
}
