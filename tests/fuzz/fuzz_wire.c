/* SPDX-License-Identifier: BSD-3-Clause */
/* The tcp transport's header and handshake decoders (an ACCEPT's
 * shared-memory part included). Whatever decodes must re-encode to the same
 * bytes. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "transport/tcp/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wire_hdr h;
	struct wire_hs hs;
	struct wire_shm_accept sa;
	uint8_t again[WIRE_SHM_ACCEPT_LEN];

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
		/* what follows the private data of an ACCEPT that offers shared memory */
		size_t at = WIRE_HS_HDR_LEN + hs.pdata_len;
		if (hs.kind == WIRE_HS_ACCEPT && rcci_wire_hs_ext_len(&hs) &&
		    size >= at + WIRE_SHM_ACCEPT_LEN) {
			rcci_wire_shm_accept_decode(data + at, &sa);
			rcci_wire_shm_accept_encode(&sa, again);
			if (memcmp(again, data + at, WIRE_SHM_ACCEPT_LEN))
				abort();
		}
	}
	return 0;
}
