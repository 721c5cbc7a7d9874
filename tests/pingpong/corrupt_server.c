/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Not a test by itself: a stand-in rcc-pingpong server, written from the
 * public API only, that echoes every ping with one byte changed (the last
 * one, so a client that compares only a prefix or only the length is caught).
 * pingpong.sh points `rcc-pingpong --verify` (the default) at it and expects
 * exit status 3, "pong mismatch".
 *   corrupt_server PORTFILE     (tcp, 127.0.0.1, ephemeral port written to PORTFILE)
 * Serves one client, then exits 0; every wait is bounded (10 s).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "rcc/rcc.h"
#include "rcc/util.h"

#define WAIT_MS 10000
#define HELLO_LEN 12 /* rcc-pingpong's connect hello: "rcpp", version, 3 zero bytes, size */
#define MAX_SIZE (1u << 20)

static int serve(struct rcc_ctx *ctx, struct rcc_listener *lst, struct rcc_cq *cq)
{
	struct rcc_conn_req *req;
	struct rcc_ep *ep = NULL;
	struct rcc_mr *mr = NULL;
	struct rcc_wc wc;
	uint8_t *buf = NULL;
	size_t len = 0;
	uint32_t size;
	int rc = 1;

	if (rcc_get_request(lst, WAIT_MS, &req))
		return 1;
	const uint8_t *hello = rcc_conn_req_private_data(req, &len);
	size = len >= HELLO_LEN ? rcc_get_le32(hello + 8) : 0;
	if (!size || size > MAX_SIZE) {
		rcc_reject_req(req, NULL, 0);
		return 1;
	}
	buf = malloc(size);
	if (!buf || rcc_mr_reg(ctx, buf, size, RCC_ACCESS_LOCAL_WRITE, &mr)) {
		rcc_reject_req(req, NULL, 0);
		goto out;
	}
	struct rcc_ep_attr attr = { .send_cq = cq, .recv_cq = cq };
	if (rcc_accept_req(req, &attr, &ep))
		goto out;
	struct rcc_sge sge = rcc_mr_sge(mr, buf, size);
	if (rcc_post_recv(ep, &sge, 1, 1))
		goto out;
	/* ping -> (recv again) -> corrupted pong, until the client leaves */
	for (;;) {
		if (rcc_cq_wait(cq, &wc, 1, WAIT_MS) != 1 || wc.status != RCC_WC_SUCCESS)
			break;
		if (wc.opcode != RCC_WC_RECV)
			continue;
		buf[wc.byte_len ? wc.byte_len - 1 : 0] ^= 0x5a;
		struct rcc_sge pong = rcc_mr_sge(mr, buf, wc.byte_len);
		if (rcc_post_send(ep, &pong, 1, 2, RCC_SEND_SIGNALED))
			break;
		if (rcc_cq_wait(cq, &wc, 1, WAIT_MS) != 1 || wc.status != RCC_WC_SUCCESS)
			break;
		if (rcc_post_recv(ep, &sge, 1, 1))
			break;
	}
	rc = 0; /* the client decides; it leaves after the first mismatch */
out:
	if (ep)
		rcc_ep_close(ep);
	if (mr)
		rcc_mr_dereg(mr);
	free(buf);
	return rc;
}

int main(int argc, char **argv)
{
	struct rcc_ctx_attr cattr = { .transport = RCC_TRANSPORT_TCP };
	struct rcc_ctx *ctx;
	struct rcc_listener *lst;
	struct rcc_cq *cq;
	FILE *f;
	int rc = 1;

	if (argc != 2) {
		fprintf(stderr, "usage: %s PORTFILE\n", argv[0]);
		return 2;
	}
	if (rcc_ctx_open(&cattr, &ctx))
		return 1;
	if (rcc_cq_create(ctx, NULL, &cq))
		goto out_ctx;
	if (rcc_listen(ctx, "127.0.0.1:0", 0, &lst))
		goto out_cq;
	/* written whole, then renamed: a reader never sees a partial number */
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s.tmp", argv[1]);
	f = fopen(tmp, "w");
	if (!f)
		goto out_lst;
	fprintf(f, "%d\n", rcc_listener_port(lst));
	if (fclose(f) || rename(tmp, argv[1]))
		goto out_lst;
	rc = serve(ctx, lst, cq);
out_lst:
	rcc_listener_close(lst);
out_cq:
	rcc_cq_destroy(cq);
out_ctx:
	rcc_ctx_close(ctx);
	return rc;
}
