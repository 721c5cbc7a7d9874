/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The message channel's header (rcc_chan_*, session.h): 8 bytes in front of
 * every SEND of a channel. The peer writes them, so decoding checks all of
 * them; the credit count is checked against what is outstanding by the
 * caller, which alone knows it.
 *
 *   byte 0     kind: CHAN_MSG (a message follows) or CHAN_CREDIT (nothing does)
 *   byte 1     CHAN_WIRE_VERSION
 *   bytes 2-3  zero
 *   bytes 4-7  receives the sender has posted again since its last header
 *              (little endian): the credits it gives back
 */
#ifndef RCC_SESSION_CHAN_WIRE_H
#define RCC_SESSION_CHAN_WIRE_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "rcc/util.h"

#define CHAN_HDR_LEN 8u
#define CHAN_WIRE_VERSION 1u

enum chan_kind {
	CHAN_MSG = 1,
	CHAN_CREDIT = 2,
};

struct chan_hdr {
	enum chan_kind kind;
	uint32_t credits;
	uint32_t
		payload_len; /* bytes after the header: 1..msg_max for CHAN_MSG, 0 for CHAN_CREDIT */
};

static inline void chan_hdr_encode(enum chan_kind kind, uint32_t credits, uint8_t out[CHAN_HDR_LEN])
{
	out[0] = (uint8_t)kind;
	out[1] = CHAN_WIRE_VERSION;
	out[2] = 0;
	out[3] = 0;
	rcc_put_le32(out + 4, credits);
}

/* Decode the len bytes a receive got, for a channel of msg_max: 0, or
 * -EPROTO for anything but a well-formed header of a known kind followed by
 * a payload of a length that kind allows. */
static inline int chan_hdr_decode(const uint8_t *in, size_t len, uint32_t msg_max,
				  struct chan_hdr *h)
{
	if (len < CHAN_HDR_LEN || in[1] != CHAN_WIRE_VERSION || in[2] || in[3])
		return -EPROTO;
	size_t payload = len - CHAN_HDR_LEN;
	if (in[0] == CHAN_MSG && payload >= 1 && payload <= msg_max)
		h->kind = CHAN_MSG;
	else if (in[0] == CHAN_CREDIT && payload == 0)
		h->kind = CHAN_CREDIT;
	else
		return -EPROTO;
	h->credits = rcc_get_le32(in + 4);
	h->payload_len = (uint32_t)payload;
	return 0;
}

#endif
