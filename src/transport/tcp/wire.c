/* SPDX-License-Identifier: BSD-3-Clause */
#include "wire.h"

#include <errno.h>
#include <string.h>

#include "rcc/util.h"
#include "rcc/rcc.h"

void rcci_wire_hdr_encode(const struct wire_hdr *h, uint8_t out[WIRE_HDR_LEN])
{
	out[0] = h->type;
	out[1] = h->flags;
	rcc_put_le16(out + 2, h->status);
	rcc_put_le32(out + 4, h->len);
	rcc_put_le32(out + 8, h->msn);
	rcc_put_le32(out + 12, h->ack);
	rcc_put_le64(out + 16, h->raddr);
	rcc_put_le32(out + 24, h->rkey);
	rcc_put_le32(out + 28, h->imm);
	rcc_put_le32(out + 32, h->total);
	rcc_put_le32(out + 36, 0);
}

uint32_t rcci_wire_hdr_len(const uint8_t in[WIRE_HDR_LEN_PREFIX]) { return rcc_get_le32(in + 4); }

static int check_hdr(const struct wire_hdr *h)
{
	const uint8_t chunk = WIRE_F_FIRST | WIRE_F_LAST;

	if (h->len > WIRE_FRAME_MAX || h->total > RCC_MAX_MSG_SIZE)
		return -EPROTO;
	switch (h->type) {
	case WIRE_SEND:
		if (h->flags & ~(chunk | WIRE_F_IMM | WIRE_F_SOLICITED))
			return -EPROTO;
		if ((h->flags & WIRE_F_IMM) && !(h->flags & WIRE_F_LAST))
			return -EPROTO;
		if ((h->flags & WIRE_F_FIRST) && h->len > h->total)
			return -EPROTO;
		return h->status ? -EPROTO : 0;
	case WIRE_WRITE:
		if (h->flags &
		    ~(chunk | WIRE_F_IMM | WIRE_F_SOLICITED | WIRE_F_CMA | WIRE_F_MAPPED))
			return -EPROTO;
		if ((h->flags & WIRE_F_CMA) && (h->flags & chunk) != chunk)
			return -EPROTO;
		if ((h->flags & WIRE_F_MAPPED) &&
		    ((h->flags & (chunk | WIRE_F_IMM | WIRE_F_CMA)) != (chunk | WIRE_F_IMM) ||
		     h->len))
			return -EPROTO;
		if ((h->flags & WIRE_F_IMM) && !(h->flags & WIRE_F_LAST))
			return -EPROTO;
		if ((h->flags & WIRE_F_FIRST) && h->len > h->total)
			return -EPROTO;
		if (h->raddr + h->len < h->raddr)
			return -EPROTO;
		return h->status ? -EPROTO : 0;
	case WIRE_READ_REQ:
		/* single copy: the descriptor is the payload */
		if ((h->flags & ~WIRE_F_CMA) || (h->len && !(h->flags & WIRE_F_CMA)) || h->status ||
		    h->raddr + h->total < h->raddr)
			return -EPROTO;
		return 0;
	case WIRE_ATOMIC_REQ:
		if ((h->flags & ~WIRE_F_CAS) || h->len != WIRE_ATOMIC_REQ_LEN || h->status)
			return -EPROTO;
		return 0;
	case WIRE_READ_RESP:
		if (h->flags & ~(chunk | WIRE_F_CMA))
			return -EPROTO;
		if ((h->flags & WIRE_F_CMA) && ((h->flags & chunk) != chunk || h->len))
			return -EPROTO;
		/* An error ends a response early: LAST, no payload, status set. */
		if (h->status &&
		    (h->len || !(h->flags & WIRE_F_LAST) || h->status > WIRE_NAK_REM_OP))
			return -EPROTO;
		return 0;
	case WIRE_ATOMIC_RESP:
		if (h->flags || h->status || h->len != WIRE_ATOMIC_RESP_LEN)
			return -EPROTO;
		return 0;
	case WIRE_ACK:
	case WIRE_CLOSE:
		if (h->flags || h->len || h->status > 0xff)
			return -EPROTO;
		return 0;
	case WIRE_NAK:
		if (h->flags || h->len || h->status < WIRE_NAK_RNR || h->status > WIRE_NAK_REM_OP)
			return -EPROTO;
		if (h->status == WIRE_NAK_RNR && h->imm > 31)
			return -EPROTO;
		return 0;
	default:
		return -EPROTO;
	}
}

int rcci_wire_hdr_decode(const uint8_t in[WIRE_HDR_LEN], struct wire_hdr *h)
{
	struct wire_hdr t;

	t.type = in[0];
	t.flags = in[1];
	t.status = rcc_get_le16(in + 2);
	t.len = rcc_get_le32(in + 4);
	t.msn = rcc_get_le32(in + 8);
	t.ack = rcc_get_le32(in + 12);
	t.raddr = rcc_get_le64(in + 16);
	t.rkey = rcc_get_le32(in + 24);
	t.imm = rcc_get_le32(in + 28);
	t.total = rcc_get_le32(in + 32);
	if (rcc_get_le32(in + 36) != 0 || check_hdr(&t))
		return -EPROTO;
	*h = t;
	return 0;
}

void rcci_wire_hs_encode(const struct wire_hs *h, uint8_t out[WIRE_HS_HDR_LEN])
{
	memcpy(out, WIRE_MAGIC, 4);
	rcc_put_le16(out + 4, h->version);
	rcc_put_le16(out + 6, h->kind);
	rcc_put_le16(out + 8, h->pdata_len);
	rcc_put_le16(out + 10, h->flags);
	rcc_put_le32(out + 12, h->max_rd_atomic);
}

int rcci_wire_hs_decode(const uint8_t in[WIRE_HS_HDR_LEN], struct wire_hs *h)
{
	struct wire_hs t;

	if (memcmp(in, WIRE_MAGIC, 4))
		return -EPROTO;
	t.flags = rcc_get_le16(in + 10);
	if (t.flags & ~WIRE_HS_F_SHM)
		return -EPROTO;
	t.version = rcc_get_le16(in + 4);
	t.kind = rcc_get_le16(in + 6);
	t.pdata_len = rcc_get_le16(in + 8);
	t.max_rd_atomic = rcc_get_le32(in + 12);
	if (t.version != WIRE_VERSION)
		return -EPROTO;
	switch (t.kind) {
	case WIRE_HS_HELLO:
		if (t.pdata_len > RCC_CONNECT_PRIVATE_DATA_MAX)
			return -EPROTO;
		break;
	case WIRE_HS_ACCEPT:
		if (t.pdata_len > RCC_ACCEPT_PRIVATE_DATA_MAX)
			return -EPROTO;
		break;
	case WIRE_HS_REJECT:
		if (t.pdata_len > RCC_REJECT_PRIVATE_DATA_MAX || t.flags)
			return -EPROTO;
		break;
	default:
		return -EPROTO;
	}
	if (t.kind != WIRE_HS_REJECT && (t.max_rd_atomic == 0 || t.max_rd_atomic > 1024))
		return -EPROTO;
	*h = t;
	return 0;
}

size_t rcci_wire_hs_ext_len(const struct wire_hs *h)
{
	if (!(h->flags & WIRE_HS_F_SHM))
		return 0;
	return h->kind == WIRE_HS_HELLO ? WIRE_SHM_HELLO_LEN : WIRE_SHM_ACCEPT_LEN;
}

void rcci_wire_shm_id_encode(const struct wire_shm_id *id, uint8_t out[WIRE_SHM_HELLO_LEN])
{
	memcpy(out, id->boot_id, 16);
	rcc_put_le64(out + 16, id->netns_dev);
	rcc_put_le64(out + 24, id->netns_ino);
}

void rcci_wire_shm_id_decode(const uint8_t in[WIRE_SHM_HELLO_LEN], struct wire_shm_id *id)
{
	memcpy(id->boot_id, in, 16);
	id->netns_dev = rcc_get_le64(in + 16);
	id->netns_ino = rcc_get_le64(in + 24);
}

void rcci_wire_shm_accept_encode(const struct wire_shm_accept *a, uint8_t out[WIRE_SHM_ACCEPT_LEN])
{
	uint8_t *p = out + WIRE_SHM_HELLO_LEN;

	rcci_wire_shm_id_encode(&a->id, out);
	memcpy(p, a->name, WIRE_SHM_NAME_LEN);
	memcpy(p + WIRE_SHM_NAME_LEN, a->token, WIRE_SHM_TOKEN_LEN);
	rcc_put_le32(p + WIRE_SHM_NAME_LEN + WIRE_SHM_TOKEN_LEN, a->cap);
	rcc_put_le32(p + WIRE_SHM_NAME_LEN + WIRE_SHM_TOKEN_LEN + 4, a->layout);
}

void rcci_wire_shm_accept_decode(const uint8_t in[WIRE_SHM_ACCEPT_LEN], struct wire_shm_accept *a)
{
	const uint8_t *p = in + WIRE_SHM_HELLO_LEN;

	rcci_wire_shm_id_decode(in, &a->id);
	memcpy(a->name, p, WIRE_SHM_NAME_LEN);
	memcpy(a->token, p + WIRE_SHM_NAME_LEN, WIRE_SHM_TOKEN_LEN);
	a->cap = rcc_get_le32(p + WIRE_SHM_NAME_LEN + WIRE_SHM_TOKEN_LEN);
	a->layout = rcc_get_le32(p + WIRE_SHM_NAME_LEN + WIRE_SHM_TOKEN_LEN + 4);
}
