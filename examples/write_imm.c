/* SPDX-License-Identifier: BSD-3-Clause */
/* One-sided WRITE with immediate: the target learns of the data through a
 * receive completion carrying the immediate, without copying anything. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <rcc/rcc.h>

static struct rcc_ctx *ctx;
static struct rcc_listener *lst;
static char region[256];

static void *target(void *arg)
{
	struct rcc_cq *cq;
	struct rcc_mr *mr;
	struct rcc_ep *ep;
	struct rcc_wc wc;
	uint8_t desc[RCC_REMOTE_MR_WIRE_SIZE];

	(void)arg;
	rcc_cq_create(ctx, NULL, &cq);
	rcc_mr_reg(ctx, region, sizeof(region), RCC_ACCESS_LOCAL_WRITE | RCC_ACCESS_REMOTE_WRITE,
		   &mr);
	/* tell the initiator where to write: {addr, len, rkey} in the accept data */
	struct rcc_remote_mr rm = rcc_mr_remote(mr);
	rcc_remote_mr_encode(&rm, desc);
	struct rcc_recv_wr recv = { .wr_id = 1 }; /* WRITE_IMM consumes a receive, no buffer */
	struct rcc_ep_attr attr = { .send_cq = cq,
				    .private_data = desc,
				    .private_data_len = sizeof(desc),
				    .initial_recv = &recv,
				    .num_initial_recv = 1 };
	if (rcc_accept(lst, &attr, 5000, &ep) == 0) {
		if (rcc_cq_wait(cq, &wc, 1, 5000) == 1 && wc.status == RCC_WC_SUCCESS)
			printf("target: immediate 0x%x, %u bytes written: %s\n", wc.imm_data,
			       wc.byte_len, region);
		rcc_ep_close(ep);
	}
	rcc_mr_dereg(mr);
	rcc_cq_destroy(cq);
	return NULL;
}

int main(int argc, char **argv)
{
	/* the address to use: 127.0.0.1 unless one is given (on a NIC: its IP) */
	const char *host = argc > 1 ? argv[1] : "127.0.0.1";
	char listen_at[64];
	char data[] = "written straight into the target's memory", addr[64];
	struct rcc_cq *cq;
	struct rcc_mr *mr;
	struct rcc_ep *ep = NULL;
	struct rcc_wc wc;
	struct rcc_remote_mr rm;
	pthread_t th;
	size_t len;
	int rc;

	snprintf(listen_at, sizeof(listen_at), "%s:0", host);
	if ((rc = rcc_ctx_open(NULL, &ctx)) || (rc = rcc_listen(ctx, listen_at, 0, &lst))) {
		fprintf(stderr, "setup: %s\n", rcc_strerror(rc));
		return 1;
	}
	snprintf(addr, sizeof(addr), "%s:%d", host, rcc_listener_port(lst));
	pthread_create(&th, NULL, target, NULL);
	rcc_cq_create(ctx, NULL, &cq);
	rcc_mr_reg(ctx, data, sizeof(data), RCC_ACCESS_LOCAL_WRITE, &mr);
	struct rcc_ep_attr attr = { .send_cq = cq };
	rc = rcc_connect(ctx, addr, &attr, 5000, &ep);
	if (rc == 0) {
		const void *pd = rcc_ep_private_data(ep, &len);
		rc = rcc_remote_mr_decode(pd, len, &rm);
	}
	if (rc == 0) {
		struct rcc_sge sge = rcc_mr_sge(mr, data, sizeof(data));
		rcc_post_write_imm(ep, &sge, 1, rm.addr, rm.rkey, 0xc0ffee, 1, RCC_SEND_SIGNALED);
		if (rcc_cq_wait(cq, &wc, 1, 5000) != 1 || wc.status != RCC_WC_SUCCESS)
			rc = -1;
	}
	pthread_join(th, NULL);
	if (ep)
		rcc_ep_close(ep);
	rcc_mr_dereg(mr);
	rcc_cq_destroy(cq);
	rcc_listener_close(lst);
	rcc_ctx_close(ctx);
	return rc ? 1 : 0;
}
