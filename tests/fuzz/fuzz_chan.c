/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The message channel's header (src/session/chan_wire.h): a peer writes
 * every byte of it. What decodes must be a known kind with a payload length
 * that kind allows, and encode back to the same header; msg_max is taken
 * from the input too, so every limit is crossed.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "rcc/session.h"
#include "session/chan_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t msg_max = size ? 1u + data[0] % 64u : 1u;
	struct chan_hdr h;
	uint8_t again[CHAN_HDR_LEN];

	for (uint32_t max = msg_max; max <= RCC_CHAN_MSG_MAX; max *= 1024u) {
		if (chan_hdr_decode(data, size, max, &h))
			continue;
		if (size < CHAN_HDR_LEN || h.payload_len != size - CHAN_HDR_LEN)
			abort();
		if (h.kind == CHAN_MSG ? !h.payload_len || h.payload_len > max : h.payload_len)
			abort();
		chan_hdr_encode(h.kind, h.credits, again);
		if (memcmp(again, data, CHAN_HDR_LEN))
			abort();
	}
	return 0;
}
