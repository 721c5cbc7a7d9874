/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Datagram (RCC_QP_UD) endpoints of the tcp transport: one UDP socket per
 * endpoint (ud.c), datagrams as in ud_wire.h.
 *
 * A datagram endpoint is a struct tcp_ep with ud set: fd is its UDP socket
 * (bound to every address of the host, IPv6 and IPv4 when the host has
 * IPv6), the receive queue, slot counters, locks and progress fields are
 * the connected endpoints' own, so the CQ's polling and the progress thread
 * serve it unchanged (rcci_ep_progress hands the pass to rcci_ud_progress). A send is
 * one sendmsg() at post time (the datagram is then the kernel's, so it
 * completes at once); a receive is one recvmsg() straight into the oldest
 * posted receive, by whichever thread passes first.
 */
#ifndef RCC_TCP_UD_H
#define RCC_TCP_UD_H

#include <netinet/in.h>

#include "tcp.h"
#include "ud_wire.h"

struct tcp_ud {
	int family;            /* the socket's: AF_INET6 (both families) or AF_INET */
	uint32_t id;           /* endpoint id, 2..0xffffff: a datagram's destination */
	uint8_t host[16];      /* the address rcc_ud_addr() names (IPv6 or IPv4-mapped) */
	uint16_t port;         /* the socket's UDP port */
	uint32_t sq_tail;      /* sends posted (tx_lock); slots free below ep->sq_free */
	atomic_ullong dropped; /* datagrams dropped on arrival (for the log) */
};

struct tcp_ah {
	struct rcc_ah base;
	struct sockaddr_in6 sin6; /* for an AF_INET6 socket (IPv4-mapped for IPv4) */
	struct sockaddr_in sin;   /* for an AF_INET socket: IPv4 destinations only */
	bool v4;
	uint32_t id;   /* destination endpoint id */
	uint32_t qkey; /* the destination's Q_Key */
};

int rcci_tcp_ud_create(struct rcc_ep *ep);
void rcci_tcp_ud_addr(const struct rcc_ep *ep, struct rcci_ud_addr *out);
int rcci_tcp_ud_post_send(struct rcc_ep *ep, const struct rcc_send_wr *wr, int n, int *posted);
int rcci_tcp_ud_disconnect(struct rcc_ep *ep);
void rcci_tcp_ud_destroy(struct rcc_ep *ep);
int rcci_tcp_ah_create(struct rcc_ah *ah, const struct rcci_ud_addr *a);
void rcci_tcp_ah_destroy(struct rcc_ah *ah);

#endif
