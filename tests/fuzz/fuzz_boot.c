/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The env bootstrap's rendezvous frames (src/session/boot_wire.h), read the
 * way rank 0 and the other ranks read them: frame after frame from one byte
 * stream, each payload through its type's decoder. Whatever decodes must
 * re-encode to the same bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "rcc/bootstrap.h"
#include "session/boot_wire.h"

#define SIZE 4 /* a job of 4 ranks: RESULT frames stay small */

static void payload(uint8_t type, const uint8_t *p, size_t len)
{
	static uint8_t out[SIZE * RCC_BOOTSTRAP_BLOB_MAX],
		again[8 + SIZE * (2 + RCC_BOOTSTRAP_BLOB_MAX)];
	size_t lens[SIZE];
	struct boot_challenge c;
	struct boot_hello h;
	const uint8_t *blob;
	size_t bl;
	uint32_t round;

	switch (type) {
	case BOOT_CHALLENGE:
		if (rcci_boot_challenge_decode(p, len, &c) == 0) {
			rcci_boot_challenge_encode(&c, again);
			if (memcmp(again, p, len))
				abort();
		}
		break;
	case BOOT_HELLO:
		if (rcci_boot_hello_decode(p, len, &h) == 0) {
			rcci_boot_hello_encode(&h, again);
			if (memcmp(again, p, len))
				abort();
		}
		break;
	case BOOT_CONTRIB:
		if (rcci_boot_contrib_decode(p, len, &round, &blob, &bl) == 0) {
			if (bl > RCC_BOOTSTRAP_BLOB_MAX ||
			    rcci_boot_contrib_encode(round, blob, bl, again) != len ||
			    memcmp(again, p, len))
				abort();
		}
		break;
	case BOOT_RESULT:
		if (len >= 4) {
			round = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
				p[3];
			if (rcci_boot_result_decode(p, len, round, SIZE, out,
						    RCC_BOOTSTRAP_BLOB_MAX, lens) == 0) {
				if (rcci_boot_result_encode(round, SIZE, out,
							    RCC_BOOTSTRAP_BLOB_MAX, lens,
							    again) != len ||
				    memcmp(again, p, len))
					abort();
			}
			/* a small stride must be refused, never overrun */
			(void)rcci_boot_result_decode(p, len, round, SIZE, out, 3, lens);
		}
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 0;
	struct boot_hdr h;

	for (;;) {
		long need = rcci_boot_frame_need(data + off, size - off,
						 rcci_boot_payload_max(BOOT_RESULT, SIZE), &h);
		if (need < 0 || (size_t)need > size - off || size - off < BOOT_HDR_LEN)
			break;
		if (h.len <= rcci_boot_payload_max(h.type, SIZE))
			payload(h.type, data + off + BOOT_HDR_LEN, h.len);
		off += (size_t)need;
	}
	return 0;
}
