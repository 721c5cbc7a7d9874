/* SPDX-License-Identifier: BSD-3-Clause */
/* The tcp transport's header and handshake decoders. Whatever decodes must
 * re-encode to the same bytes. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "transport/tcp/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wire_hdr h;
	struct wire_hs hs;
	uint8_t again[WIRE_HDR_LEN];

	for (size_t off = 0; off + WIRE_HDR_LEN <= size; off += WIRE_HDR_LEN) {
		if (rcci_wire_hdr_decode(data + off, &h) == 0) {
			rcci_wire_hdr_encode(&h, again);
			if (memcmp(again, data + off, WIRE_HDR_LEN))
				abort();
		}
	}
	if (size >= WIRE_HS_HDR_LEN && rcci_wire_hs_decode(data, &hs) == 0) {
		rcci_wire_hs_encode(&hs, again);
		if (memcmp(again, data, WIRE_HS_HDR_LEN))
			abort();
	}
	return 0;
}
