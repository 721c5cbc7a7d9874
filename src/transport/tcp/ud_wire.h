/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tcp transport's datagram (RCC_QP_UD) format: one UDP datagram per
 * message, a 28-byte little-endian header and then the payload.
 *
 *   0 magic "RCud"  4 u8 version (1)  5 u8 opcode (1 SEND, 2 SEND_IMM)
 *   6 u8 flags (bit 0: solicited)  7 u8 reserved=0
 *   8 u32 qkey (the receiver's, as the sender's address handle says)
 *  12 u32 source endpoint id  16 u32 destination endpoint id
 *  20 u32 imm (SEND_IMM; 0 otherwise)  24 u32 payload length
 *
 * A receiver drops, without a word to anyone, a datagram whose header is
 * malformed (rcci_ud_hdr_decode), whose length field disagrees with what arrived,
 * or whose destination id or Q_Key is not its own -- as a device drops a
 * datagram with the wrong destination QP or Q_Key.
 */
#ifndef RCC_TCP_UD_WIRE_H
#define RCC_TCP_UD_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define UD_HDR_LEN 28
#define UD_WIRE_VERSION 1

enum ud_wire_op {
	UD_OP_SEND = 1,
	UD_OP_SEND_IMM = 2,
};

#define UD_F_SOLICITED 1u

struct ud_hdr {
	uint8_t opcode; /* enum ud_wire_op */
	uint8_t flags;  /* UD_F_* */
	uint32_t qkey;
	uint32_t src_id;
	uint32_t dst_id;
	uint32_t imm;
	uint32_t len;
};

void rcci_ud_hdr_encode(const struct ud_hdr *h, uint8_t out[UD_HDR_LEN]);
/* The header of a datagram of got bytes (the header included) whose payload
 * may be at most max bytes: 0 and *h when it is well-formed and its length
 * field is exactly what arrived, else -EPROTO. Takes any bytes. */
int rcci_ud_hdr_decode(const uint8_t *in, size_t got, uint32_t max, struct ud_hdr *h);

#endif
