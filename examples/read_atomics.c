/* SPDX-License-Identifier: BSD-3-Clause */
/* READ and atomics: the target never calls the library after accepting, yet
 * its memory is read and updated (as with a NIC). */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <rcc/rcc.h>

static struct rcc_ctx *ctx;
static struct rcc_listener *lst;
static struct {
	uint64_t counter;
	char text[56];
} shared = { 41, "remote bytes" };
static struct rcc_ep *target_ep;
static struct rcc_cq *target_cq;
static struct rcc_mr *target_mr;

static void *accept_one(void *arg)
{
	uint8_t desc[RCC_REMOTE_MR_WIRE_SIZE];
	(void)arg;
	struct rcc_remote_mr rm = rcc_mr_remote(target_mr);
	rcc_remote_mr_encode(&rm, desc);
	struct rcc_ep_attr attr = { .send_cq = target_cq,
				    .private_data = desc,
				    .private_data_len = sizeof(desc) };
	rcc_accept(lst, &attr, 5000, &target_ep);
	return NULL;
}

/* Post one request and wait for its completion. */
static int run(struct rcc_ep *ep, struct rcc_cq *cq, struct rcc_send_wr *wr, const char *what)
{
	struct rcc_wc wc;
	int rc = rcc_post_send_list(ep, wr, 1, NULL);
	if (rc == 0) {
		rc = rcc_cq_wait(cq, &wc, 1, 5000);
		rc = rc == 1 ? 0 : rc;
	}
	if (rc)
		fprintf(stderr, "%s: %s\n", what, rcc_strerror(rc));
	else if (wc.status != RCC_WC_SUCCESS) {
		fprintf(stderr, "%s: %s\n", what, rcc_wc_status_str(wc.status));
		rc = -EIO;
	}
	return rc;
}

int main(int argc, char **argv)
{
	/* the address to use: 127.0.0.1 unless one is given (on a NIC: its IP) */
	const char *host = argc > 1 ? argv[1] : "127.0.0.1";
	char listen_at[64];
	struct {
		uint64_t old;
		char text[56];
	} local = { 0, "" };
	struct rcc_cq *cq;
	struct rcc_mr *mr;
	struct rcc_ep *ep = NULL;
	struct rcc_remote_mr rm;
	char addr[64];
	pthread_t th;
	size_t len;
	int rc;

	snprintf(listen_at, sizeof(listen_at), "%s:0", host);
	if ((rc = rcc_ctx_open(NULL, &ctx)) || (rc = rcc_listen(ctx, listen_at, 0, &lst)) ||
	    (rc = rcc_cq_create(ctx, NULL, &target_cq)) ||
	    (rc = rcc_mr_reg(ctx, &shared, sizeof(shared),
			     RCC_ACCESS_LOCAL_WRITE | RCC_ACCESS_REMOTE_READ |
				     RCC_ACCESS_REMOTE_ATOMIC,
			     &target_mr))) {
		fprintf(stderr, "setup: %s\n", rcc_strerror(rc));
		return 1;
	}
	snprintf(addr, sizeof(addr), "%s:%d", host, rcc_listener_port(lst));
	if (pthread_create(&th, NULL, accept_one, NULL)) {
		fprintf(stderr, "cannot start the target's thread\n");
		return 1;
	}
	if ((rc = rcc_cq_create(ctx, NULL, &cq)) ||
	    (rc = rcc_mr_reg(ctx, &local, sizeof(local), RCC_ACCESS_LOCAL_WRITE, &mr))) {
		fprintf(stderr, "setup: %s\n", rcc_strerror(rc));
		return 1;
	}
	struct rcc_ep_attr attr = { .send_cq = cq };
	rc = rcc_connect(ctx, addr, &attr, 5000, &ep);
	pthread_join(th, NULL);
	if (rc)
		fprintf(stderr, "connect: %s\n", rcc_strerror(rc));
	if (rc == 0) {
		/* the target's region description came as accept private data */
		const void *pd = rcc_ep_private_data(ep, &len);
		rc = rcc_remote_mr_decode(pd, len, &rm);
		if (rc)
			fprintf(stderr, "the target's region description: %s\n", rcc_strerror(rc));
	}
	if (rc == 0) {
		struct rcc_sge text = rcc_mr_sge(mr, local.text, sizeof(local.text));
		struct rcc_sge old = rcc_mr_sge(mr, &local.old, 8);
		struct rcc_send_wr rd = { .sg_list = &text,
					  .num_sge = 1,
					  .opcode = RCC_WR_READ,
					  .flags = RCC_SEND_SIGNALED,
					  .remote_addr = rm.addr + 8,
					  .rkey = rm.rkey };
		struct rcc_send_wr fadd = { .sg_list = &old,
					    .num_sge = 1,
					    .opcode = RCC_WR_FADD,
					    .flags = RCC_SEND_SIGNALED,
					    .remote_addr = rm.addr,
					    .rkey = rm.rkey,
					    .compare_add = 1 };
		struct rcc_send_wr cas = { .sg_list = &old,
					   .num_sge = 1,
					   .opcode = RCC_WR_CAS,
					   .flags = RCC_SEND_SIGNALED,
					   .remote_addr = rm.addr,
					   .rkey = rm.rkey,
					   .compare_add = 42,
					   .swap = 100 };
		if (!(rc = run(ep, cq, &rd, "read")))
			printf("read: %s\n", local.text);
		if (!rc && !(rc = run(ep, cq, &fadd, "fetch-and-add")))
			printf("fetch-and-add: was %llu\n", (unsigned long long)local.old);
		if (!rc && !(rc = run(ep, cq, &cas, "compare-and-swap")))
			printf("compare-and-swap: was %llu, now %llu\n",
			       (unsigned long long)local.old, (unsigned long long)shared.counter);
	}
	if (ep)
		rcc_ep_close(ep);
	if (target_ep)
		rcc_ep_close(target_ep);
	rcc_mr_dereg(mr);
	rcc_mr_dereg(target_mr);
	rcc_cq_destroy(cq);
	rcc_cq_destroy(target_cq);
	rcc_listener_close(lst);
	rcc_ctx_close(ctx);
	return rc ? 1 : 0;
}
