/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A whole tcp endpoint fed arbitrary bytes: a raw socket completes a valid
 * handshake, then writes the input as its frame stream. The endpoint must
 * consume it or leave service; it must never crash, hang or touch memory it
 * does not own.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fuzz.h"
#include "rcc/rcc.h"
#include "transport/tcp/wire.h"

static struct rcc_ctx *ctx;
static struct rcc_cq *cq;
static struct rcc_listener *lst;
static struct rcc_mr *mr;
static uint8_t region[8192];
static int port;

static bool setup(void)
{
	struct rcc_ctx_attr a = { .transport = RCC_TRANSPORT_TCP };
	if (ctx)
		return true;
	if (rcc_ctx_open(&a, &ctx) || rcc_cq_create(ctx, NULL, &cq) ||
	    rcc_listen(ctx, "127.0.0.1:0", 64, &lst) ||
	    rcc_mr_reg(ctx, region, sizeof(region),
		       RCC_ACCESS_LOCAL_WRITE | RCC_ACCESS_REMOTE_WRITE | RCC_ACCESS_REMOTE_READ |
			       RCC_ACCESS_REMOTE_ATOMIC,
		       &mr))
		return false;
	port = rcc_listener_port(lst);
	return true;
}

static uint64_t ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	uint8_t hs[WIRE_HS_HDR_LEN];
	struct wire_hs hello = { .version = WIRE_VERSION,
				 .kind = WIRE_HS_HELLO,
				 .max_rd_atomic = 4 };
	struct rcc_conn_req *req;
	struct rcc_ep *ep;
	struct rcc_wc wc[16];

	if (!setup() || size > 60000)
		return 0;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	/* loopback connect completes from the backlog: no second thread needed */
	if (fd < 0 || connect(fd, (struct sockaddr *)&sin, sizeof(sin)))
		goto out_fd;
	rcci_wire_hs_encode(&hello, hs);
	if (send(fd, hs, sizeof(hs), MSG_NOSIGNAL) != sizeof(hs) ||
	    rcc_get_request(lst, 1000, &req))
		goto out_fd;
	struct rcc_sge sge = rcc_mr_sge(mr, region, 256);
	struct rcc_recv_wr rw[2] = { { .wr_id = 1, .sg_list = &sge, .num_sge = 1 },
				     { .wr_id = 2, .sg_list = &sge, .num_sge = 1 } };
	struct rcc_ep_attr attr = {
		.send_cq = cq, .rnr_retry = RCC_NO_RETRY, .initial_recv = rw, .num_initial_recv = 2
	};
	if (rcc_accept_req(req, &attr, &ep))
		goto out_fd;
	if (recv(fd, hs, sizeof(hs), MSG_WAITALL) != sizeof(hs))
		goto out_ep;
	/* the input is the peer's whole stream: frames, then the end of stream */
	if (size && send(fd, data, size, MSG_NOSIGNAL) < 0)
		goto out_ep;
	shutdown(fd, SHUT_WR);
	uint64_t end = ms() + 2000;
	while (rcc_ep_state(ep) == RCC_EP_CONNECTED && ms() < end)
		rcc_cq_poll(cq, wc, 16);
	if (rcc_ep_state(ep) == RCC_EP_CONNECTED)
		abort(); /* the stream ended: the endpoint must have noticed */
out_ep:
	rcc_ep_close(ep);
	while (rcc_cq_poll(cq, wc, 16) > 0)
		;
out_fd:
	if (fd >= 0)
		close(fd);
	return 0;
}
