/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Not a test by itself: N connections to an rcc-xfer receiver that pass the
 * transport handshake with valid rcc-xfer private data and then never
 * authenticate -- what x-hostile.sh floods a receiver with. Prints one line
 * "holding N" once all are connected, then holds them until its stdin
 * closes or it is killed.
 *   XFER_TEST_ADDR=host:port stall_peer N
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "auth.h"
#include "pair.h"

#define MAX_PEERS 256

int main(int argc, char **argv)
{
	static struct rcc_ep *ep[MAX_PEERS];
	const char *addr = getenv("XFER_TEST_ADDR");
	int n = argc == 2 ? atoi(argv[1]) : 0, held = 0;
	struct rcc_ctx *ctx;
	struct rcc_cq *cq;
	char c;

	if (!addr || n < 1 || n > MAX_PEERS) {
		fprintf(stderr, "usage: XFER_TEST_ADDR=host:port %s N (1-%d)\n", argv[0],
			MAX_PEERS);
		return 2;
	}
	if (test_ctx_open(&ctx) || rcc_cq_create(ctx, NULL, &cq))
		return 1;
	for (int i = 0; i < n; i++) {
		uint8_t token[XFER_TOKEN_LEN], pd[XFER_PDATA_LEN];
		struct rcc_ep_attr a = { .send_cq = cq,
					 .private_data = pd,
					 .private_data_len = sizeof(pd) };
		if (random_bytes(token, sizeof(token)))
			break;
		pdata_encode(token, pd);
		if (rcc_connect(ctx, addr, &a, TEST_TIMEOUT_MS, &ep[i])) {
			fprintf(stderr, "stall_peer: connection %d refused\n", i);
			break;
		}
		held++;
	}
	printf("holding %d\n", held);
	fflush(stdout);
	while (read(STDIN_FILENO, &c, 1) > 0)
		;
	for (int i = 0; i < held; i++)
		rcc_ep_close(ep[i]);
	rcc_cq_destroy(cq);
	rcc_ctx_close(ctx);
	return held == n ? 0 : 1;
}
