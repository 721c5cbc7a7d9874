/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The decoders of datagram bytes a peer controls: the address blob
 * (core/ud_addr.c: rcc_ah_create, rcc_ud_answer/resolve, rcc_ud_addr_str),
 * the tcp transport's datagram header and the verbs heartbeat
 * (transport/verbs/hb_wire.h: anyone on the fabric can send one). Whatever
 * decodes must re-encode to the same bytes and print as one NUL-terminated
 * line; what does not decode must print nothing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "transport/tcp/ud_wire.h"
#include "transport/verbs/hb_wire.h"
#include "transport/transport.h"

static void address(const uint8_t *data)
{
	struct rcc_ud_addr in, again;
	struct rcci_ud_addr a;
	char text[200];

	memcpy(in.bytes, data, RCC_UD_ADDR_SIZE);
	memset(text, 'x', sizeof(text));
	int n = rcc_ud_addr_str(&in, text, sizeof(text));
	if (rcci_ud_addr_decode(&in, &a, NULL)) {
		if (n != -EINVAL || text[0])
			abort();
		return;
	}
	if (n <= 0 || (size_t)n >= sizeof(text) || strlen(text) != (size_t)n)
		abort();
	for (int i = 0; i < n; i++)
		if (text[i] < 0x20 || text[i] > 0x7e)
			abort();
	rcci_ud_addr_encode(&a, &again);
	if (memcmp(again.bytes, in.bytes, RCC_UD_ADDR_SIZE))
		abort();
}

/* A heartbeat decodes only whole, in range, and re-encodes to its bytes. */
static void heartbeat(const uint8_t *data, size_t size)
{
	struct hb_msg m;
	uint8_t again[HB_WIRE_SIZE];

	if (hb_decode(data, size, &m))
		return;
	if (size != HB_WIRE_SIZE || !m.to_qpn || m.to_qpn > 0xffffffu || !m.from_qpn ||
	    m.from_qpn > 0xffffffu || m.timeout_ms < RCC_MIN_PEER_TIMEOUT_MS ||
	    m.timeout_ms > RCCI_MAX_PEER_TIMEOUT_MS)
		abort();
	hb_encode(&m, again);
	if (memcmp(again, data, HB_WIRE_SIZE))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ud_hdr h;
	uint8_t again[UD_HDR_LEN];

	if (size >= RCC_UD_ADDR_SIZE)
		address(data);
	heartbeat(data, size);
	if (rcci_ud_hdr_decode(data, size, RCC_UD_TCP_MAX_MSG, &h) == 0) {
		if (h.len != size - UD_HDR_LEN)
			abort();
		rcci_ud_hdr_encode(&h, again);
		if (memcmp(again, data, UD_HDR_LEN))
			abort();
	}
	return 0;
}
