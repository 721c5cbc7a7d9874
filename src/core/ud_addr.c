/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The datagram address blob (struct rcc_ud_addr), RCC_UD_ADDR_SIZE bytes,
 * little-endian, no padding and no pointers:
 *
 *   0   'R' 'U'    magic
 *   2   version    1
 *   3   kind       1 verbs, 2 tcp (enum rcci_ud_kind)
 *   4   qkey       le32, bit 31 clear
 *   8   qpn        le32: verbs QP number / tcp endpoint id, 2..0xffffff
 *   12  gid        16 bytes: verbs GID / tcp IPv6 or IPv4-mapped address
 *   28  lid/port   le16: verbs LID / tcp UDP port (never 0)
 *   30  route      verbs: SL in bits 0-3, 0x80 "with a GRH"; tcp: 0
 *   31  check      sum of bytes 0..30, xor 0x5a
 *
 * The blob travels through peers and applications, so decoding checks every
 * byte: a blob of another kind, another version, with a bad check byte, an
 * out-of-range field, reserved bits set, or an address nobody can be (tcp:
 * unspecified, multicast or broadcast; verbs: a GRH route without a GID) is
 * refused. The check byte catches accidents (a truncated or shifted copy),
 * not forgery: an address is only ever where datagrams go.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "rcc/util.h"
#include "transport/transport.h"

#define UD_MAGIC0 'R'
#define UD_MAGIC1 'U'
#define UD_VERSION 1
#define UD_ROUTE_GRH 0x80
#define UD_ROUTE_SL 0x0f
#define UD_CHECK_XOR 0x5a
#define UD_QPN_MAX 0xffffffu

static uint8_t check_byte(const uint8_t *b)
{
	unsigned sum = 0;

	for (int i = 0; i < RCC_UD_ADDR_SIZE - 1; i++)
		sum += b[i];
	return (uint8_t)(sum ^ UD_CHECK_XOR);
}

void rcci_ud_addr_encode(const struct rcci_ud_addr *a, struct rcc_ud_addr *out)
{
	uint8_t *b = out->bytes;

	memset(b, 0, RCC_UD_ADDR_SIZE);
	b[0] = UD_MAGIC0;
	b[1] = UD_MAGIC1;
	b[2] = UD_VERSION;
	b[3] = a->kind;
	rcc_put_le32(b + 4, a->qkey);
	rcc_put_le32(b + 8, a->qpn);
	memcpy(b + 12, a->gid, 16);
	if (a->kind == RCCI_UD_VERBS) {
		rcc_put_le16(b + 28, a->lid);
		b[30] = (uint8_t)((a->sl & UD_ROUTE_SL) | (a->global ? UD_ROUTE_GRH : 0));
	} else {
		rcc_put_le16(b + 28, a->port);
	}
	b[31] = check_byte(b);
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static bool v4_mapped(const uint8_t *ip)
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	return !memcmp(ip, prefix, sizeof(prefix));
}

/* An IP address a datagram can be sent to: one host, not "any", not a group. */
static const char *tcp_host_problem(const uint8_t *ip)
{
	if (v4_mapped(ip)) {
		const uint8_t *v4 = ip + 12;
		if (all_zero(v4, 4))
			return "the IPv4 address 0.0.0.0 names no host";
		if ((v4[0] & 0xf0) == 0xe0)
			return "an IPv4 multicast address names no single endpoint";
		if (v4[0] == 255 && v4[1] == 255 && v4[2] == 255 && v4[3] == 255)
			return "the IPv4 broadcast address names no single endpoint";
		return NULL;
	}
	if (all_zero(ip, 16))
		return "the IPv6 address :: names no host";
	if (ip[0] == 0xff)
		return "an IPv6 multicast address names no single endpoint";
	return NULL;
}

int rcci_ud_addr_decode(const struct rcc_ud_addr *in, struct rcci_ud_addr *a, const char **why)
{
	const uint8_t *b = in->bytes;
	struct rcci_ud_addr d = { 0 };
	const char *bad = NULL;

	if (b[0] != UD_MAGIC0 || b[1] != UD_MAGIC1)
		bad = "not an rcc datagram address";
	else if (b[2] != UD_VERSION)
		bad = "a datagram address of another rcc version";
	else if (b[31] != check_byte(b))
		bad = "a damaged datagram address (check byte)";
	else if (b[3] != RCCI_UD_VERBS && b[3] != RCCI_UD_TCP)
		bad = "a datagram address of an unknown transport";
	if (bad)
		goto out;
	d.kind = b[3];
	d.qkey = rcc_get_le32(b + 4);
	d.qpn = rcc_get_le32(b + 8);
	memcpy(d.gid, b + 12, 16);
	if (d.qkey & 0x80000000u)
		bad = "a Q_Key with bit 31 set (reserved)";
	else if (d.qpn < 2 || d.qpn > UD_QPN_MAX)
		bad = "a queue pair number outside 2..0xffffff";
	if (bad)
		goto out;
	if (d.kind == RCCI_UD_VERBS) {
		d.lid = rcc_get_le16(b + 28);
		d.sl = b[30] & UD_ROUTE_SL;
		d.global = b[30] & UD_ROUTE_GRH;
		if (b[30] & ~(UD_ROUTE_SL | UD_ROUTE_GRH))
			bad = "reserved route bits set";
		else if (d.global && all_zero(d.gid, 16))
			bad = "a GRH route without a GID";
		else if (!d.global && (!d.lid || !all_zero(d.gid, 16)))
			bad = "a LID route without a LID, or with a GID";
	} else {
		d.port = rcc_get_le16(b + 28);
		if (b[30])
			bad = "reserved route bits set";
		else if (!d.port)
			bad = "UDP port 0";
		else
			bad = tcp_host_problem(d.gid);
	}
out:
	if (bad) {
		if (why)
			*why = bad;
		return -EINVAL;
	}
	*a = d;
	return 0;
}

int rcc_ud_addr_str(const struct rcc_ud_addr *addr, char *buf, size_t len)
{
	struct rcci_ud_addr a;
	char ip[INET6_ADDRSTRLEN];

	if (!buf && len)
		return -EINVAL;
	if (len)
		buf[0] = '\0';
	if (!addr || rcci_ud_addr_decode(addr, &a, NULL))
		return -EINVAL;
	if (a.kind == RCCI_UD_VERBS) {
		inet_ntop(AF_INET6, a.gid, ip, sizeof(ip));
		return snprintf(buf, len, "verbs gid %s lid %u sl %u qpn 0x%x qkey 0x%x", ip, a.lid,
				a.sl, a.qpn, a.qkey);
	}
	if (v4_mapped(a.gid)) {
		inet_ntop(AF_INET, a.gid + 12, ip, sizeof(ip));
		return snprintf(buf, len, "tcp %s:%u ep 0x%x qkey 0x%x", ip, a.port, a.qpn, a.qkey);
	}
	inet_ntop(AF_INET6, a.gid, ip, sizeof(ip));
	return snprintf(buf, len, "tcp [%s]:%u ep 0x%x qkey 0x%x", ip, a.port, a.qpn, a.qkey);
}
