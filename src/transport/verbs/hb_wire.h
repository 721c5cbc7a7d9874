/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The verbs heartbeat datagram (heartbeat.c): 16 bytes, little-endian.
 *    0  4  magic "RCHB"
 *    4  4  the receiver's RC QP number (24 bits): which endpoint it keeps alive
 *    8  4  the sender's RC QP number (24 bits): which peer says so
 *   12  4  the sender's peer timeout in ms: the receiver sends at least an
 *          eighth of it often (within RCC_MIN_PEER_TIMEOUT_MS..a day)
 * Anyone on the fabric who knows the Q_Key can send one: the decoder takes
 * nothing on trust (tests/fuzz/fuzz_ud.c).
 * Header-only and without verbs types, so the fuzzer builds everywhere.
 */
#ifndef RCC_VERBS_HB_WIRE_H
#define RCC_VERBS_HB_WIRE_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "rcc/rcc.h"
#include "rcc/util.h"
#include "transport/transport.h"

#define HB_WIRE_SIZE 16u

struct hb_msg {
	uint32_t to_qpn;     /* the receiver's RC QP */
	uint32_t from_qpn;   /* the sender's RC QP */
	uint32_t timeout_ms; /* the sender's peer timeout */
};

static inline void hb_encode(const struct hb_msg *m, uint8_t out[HB_WIRE_SIZE])
{
	memcpy(out, "RCHB", 4);
	rcc_put_le32(out + 4, m->to_qpn & 0xffffffu);
	rcc_put_le32(out + 8, m->from_qpn & 0xffffffu);
	rcc_put_le32(out + 12, m->timeout_ms);
}

/* 0 and *m filled, or -EPROTO (too short, not a heartbeat, a QP number
 * wider than 24 bits or 0, a timeout out of range); longer input is
 * refused too: a heartbeat is exactly HB_WIRE_SIZE bytes. */
static inline int hb_decode(const uint8_t *in, size_t len, struct hb_msg *m)
{
	struct hb_msg d;

	if (len != HB_WIRE_SIZE || memcmp(in, "RCHB", 4))
		return -EPROTO;
	d.to_qpn = rcc_get_le32(in + 4);
	d.from_qpn = rcc_get_le32(in + 8);
	d.timeout_ms = rcc_get_le32(in + 12);
	if (d.to_qpn == 0 || d.to_qpn > 0xffffffu || d.from_qpn == 0 || d.from_qpn > 0xffffffu ||
	    d.timeout_ms < RCC_MIN_PEER_TIMEOUT_MS || d.timeout_ms > RCCI_MAX_PEER_TIMEOUT_MS)
		return -EPROTO;
	*m = d;
	return 0;
}

#endif
