/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What rcc-perf puts on the wire: the plan (connect private data of the
 * control connection, <= 48 B), the data connections' hello (connect and
 * accept private data) and control messages. Explicit little-endian fields,
 * never raw structs, so both sides agree whatever their compilers do.
 */
#include <errno.h>
#include <string.h>

#include <rcc/util.h>

#include "perf.h"

#define MAGIC0 'r'
#define MAGIC1 'P'

enum hello_kind {
	HELLO_PARAMS = 1,
	HELLO_DATA = 2
};

static void put_header(uint8_t *out, enum hello_kind kind)
{
	out[0] = MAGIC0;
	out[1] = MAGIC1;
	out[2] = PERF_WIRE_VERSION;
	out[3] = (uint8_t)kind;
}

static int check_header(const uint8_t *in, size_t len, size_t want, enum hello_kind kind)
{
	if (len < 4 || in[0] != MAGIC0 || in[1] != MAGIC1)
		return -EPROTO;
	if (in[2] != PERF_WIRE_VERSION)
		return -EPROTONOSUPPORT;
	if (in[3] != kind || len < want)
		return -EPROTO;
	return 0;
}

void params_encode(const struct perf_params *p, uint8_t out[PERF_PARAMS_WIRE_LEN])
{
	memset(out, 0, PERF_PARAMS_WIRE_LEN);
	put_header(out, HELLO_PARAMS);
	out[4] = p->ops;
	out[5] = p->kinds;
	rcc_put_le16(out + 6, p->flags);
	rcc_put_le32(out + 8, p->size);
	rcc_put_le32(out + 12, p->iters);
	rcc_put_le32(out + 16, p->duration_ms);
	rcc_put_le32(out + 20, p->warmup);
	rcc_put_le16(out + 24, p->qps);
	rcc_put_le16(out + 26, p->post_list);
	rcc_put_le16(out + 28, p->cq_mod);
	rcc_put_le16(out + 30, p->tx_depth);
	rcc_put_le16(out + 32, p->rx_depth);
	rcc_put_le16(out + 34, p->inline_size);
	rcc_put_le16(out + 36, p->outs);
	out[38] = p->cq_mode;
	rcc_put_le32(out + 39, p->cookie);
	out[43] = p->qp_type; /* 0 (RC) in the plans of clients older than -c */
}

int params_decode(const void *in, size_t len, struct perf_params *p)
{
	const uint8_t *b = in;
	int rc = check_header(b, len, PERF_PARAMS_WIRE_LEN, HELLO_PARAMS);

	if (rc)
		return rc;
	p->ops = b[4];
	p->kinds = b[5];
	p->flags = rcc_get_le16(b + 6);
	p->size = rcc_get_le32(b + 8);
	p->iters = rcc_get_le32(b + 12);
	p->duration_ms = rcc_get_le32(b + 16);
	p->warmup = rcc_get_le32(b + 20);
	p->qps = rcc_get_le16(b + 24);
	p->post_list = rcc_get_le16(b + 26);
	p->cq_mod = rcc_get_le16(b + 28);
	p->tx_depth = rcc_get_le16(b + 30);
	p->rx_depth = rcc_get_le16(b + 32);
	p->inline_size = rcc_get_le16(b + 34);
	p->outs = rcc_get_le16(b + 36);
	p->cq_mode = b[38];
	p->cookie = rcc_get_le32(b + 39);
	p->qp_type = b[43];
	return 0;
}

void data_hello_encode(uint32_t cookie, uint16_t index, const struct rcc_remote_mr *mr,
		       uint8_t out[PERF_DATA_HELLO_LEN])
{
	put_header(out, HELLO_DATA);
	rcc_put_le32(out + 4, cookie);
	rcc_put_le16(out + 8, index);
	rcc_remote_mr_encode(mr, out + 10);
}

int data_hello_decode(const void *in, size_t len, uint32_t *cookie, uint16_t *index,
		      struct rcc_remote_mr *mr)
{
	const uint8_t *b = in;
	int rc = check_header(b, len, PERF_DATA_HELLO_LEN, HELLO_DATA);

	if (rc)
		return rc;
	if (rcc_remote_mr_decode(b + 10, len - 10, mr))
		return -EPROTO;
	*cookie = rcc_get_le32(b + 4);
	*index = rcc_get_le16(b + 8);
	return 0;
}

void ctrl_encode(const struct ctrl_msg *m, uint8_t out[PERF_CTRL_MSG_LEN])
{
	out[0] = m->type;
	out[1] = m->op;
	out[2] = m->kind;
	out[3] = 0;
	rcc_put_le32(out + 4, m->size);
	rcc_put_le64(out + 8, m->a);
	rcc_put_le64(out + 16, m->b);
	rcc_put_le64(out + 24, m->c);
	rcc_put_le64(out + 32, m->d);
}

int ctrl_decode(const void *in, size_t len, struct ctrl_msg *m)
{
	const uint8_t *b = in;

	if (len != PERF_CTRL_MSG_LEN || b[0] < CTRL_READY || b[0] > CTRL_BYE)
		return -EPROTO;
	m->type = b[0];
	m->op = b[1];
	m->kind = b[2];
	m->size = rcc_get_le32(b + 4);
	m->a = rcc_get_le64(b + 8);
	m->b = rcc_get_le64(b + 16);
	m->c = rcc_get_le64(b + 24);
	m->d = rcc_get_le64(b + 32);
	return 0;
}
