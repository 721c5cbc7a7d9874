/* SPDX-License-Identifier: BSD-3-Clause */
/* Two-sided messaging: the server posts a receive, the client sends. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <rcc/rcc.h>

static struct rcc_ctx *ctx;
static struct rcc_listener *lst;

static void *server(void *arg)
{
	char buf[64] = "";
	struct rcc_cq *cq;
	struct rcc_mr *mr;
	struct rcc_ep *ep;
	struct rcc_wc wc;

	(void)arg;
	rcc_cq_create(ctx, NULL, &cq);
	rcc_mr_reg(ctx, buf, sizeof(buf), RCC_ACCESS_LOCAL_WRITE, &mr);
	struct rcc_sge sge = rcc_mr_sge(mr, buf, sizeof(buf));
	struct rcc_recv_wr recv = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 };
	/* the receive is posted before the client may send */
	struct rcc_ep_attr attr = { .send_cq = cq, .initial_recv = &recv, .num_initial_recv = 1 };
	if (rcc_accept(lst, &attr, 5000, &ep) == 0) {
		if (rcc_cq_wait(cq, &wc, 1, 5000) == 1 && wc.status == RCC_WC_SUCCESS)
			printf("server got %u bytes: %s\n", wc.byte_len, buf);
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
	char msg[] = "hello over rcc", addr[64];
	struct rcc_cq *cq;
	struct rcc_mr *mr;
	struct rcc_ep *ep;
	struct rcc_wc wc;
	pthread_t th;
	int rc;

	snprintf(listen_at, sizeof(listen_at), "%s:0", host);
	if ((rc = rcc_ctx_open(NULL, &ctx)) || (rc = rcc_listen(ctx, listen_at, 0, &lst))) {
		fprintf(stderr, "setup: %s\n", rcc_strerror(rc));
		return 1;
	}
	snprintf(addr, sizeof(addr), "%s:%d", host, rcc_listener_port(lst));
	pthread_create(&th, NULL, server, NULL);

	rcc_cq_create(ctx, NULL, &cq);
	rcc_mr_reg(ctx, msg, sizeof(msg), RCC_ACCESS_LOCAL_WRITE, &mr);
	struct rcc_ep_attr attr = { .send_cq = cq };
	rc = rcc_connect(ctx, addr, &attr, 5000, &ep);
	if (rc == 0) {
		struct rcc_sge sge = rcc_mr_sge(mr, msg, sizeof(msg));
		rcc_post_send(ep, &sge, 1, 1, RCC_SEND_SIGNALED);
		if (rcc_cq_wait(cq, &wc, 1, 5000) != 1 || wc.status != RCC_WC_SUCCESS)
			rc = -1;
	} else {
		fprintf(stderr, "connect: %s\n", rcc_strerror(rc));
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
