/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The session server's callbacks: one set for both sides. Its agents serve
 * the connections it accepts (incoming.c) and those it opens with
 * rcc_server_connect() (outgoing.c); each connection's state starts with its
 * kind, which says whose handlers get it. Only the outgoing side has work
 * that no completion triggers (on_wake).
 */
#include "mesh.h"

static enum conn_kind kind_of(const void *conn) { return *(const enum conn_kind *)conn; }

static int on_connect(struct rcc_ep *ep, void *arg, void **conn)
{
	return kind_of(*conn) == CONN_OUT ? out_connected(ep, *conn) : in_connect(ep, arg, *conn);
}

static void on_completion(struct rcc_ep *ep, const struct rcc_wc *wc, void *conn)
{
	if (kind_of(conn) == CONN_OUT)
		out_completion(ep, wc, conn);
	else
		in_completion(ep, wc, conn);
}

static void on_recv(struct rcc_ep *ep, const struct rcc_wc *wc, const void *data, void *conn)
{
	if (kind_of(conn) == CONN_OUT)
		out_recv(ep, wc, data, conn);
	else
		in_recv(ep, wc, data, conn);
}

static void on_wake(struct rcc_ep *ep, void *conn)
{
	if (kind_of(conn) == CONN_OUT)
		out_wake(ep, conn);
}

static void on_disconnect(struct rcc_ep *ep, void *conn)
{
	if (kind_of(conn) == CONN_OUT)
		out_disconnect(ep, conn);
	else
		in_disconnect(ep, conn);
}

const struct rcc_server_ops mesh_ops = {
	.on_request = in_request,
	.on_connect = on_connect,
	.on_completion = on_completion,
	.on_disconnect = on_disconnect,
	.on_recv = on_recv,
	.on_wake = on_wake,
};
