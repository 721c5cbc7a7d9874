/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control messages both sides of a connection send (wire.h): a few
 * buffers from the control pool, one bit each while its SEND is in flight.
 * They travel in band, as SEND with immediate MESH_CTRL_IMM into the
 * receives the data uses (with --srq, the session server's SRQ): that is
 * why rcc-mesh does not use the session layer's message channel, which
 * owns an endpoint's receive queue.
 */
#include <errno.h>

#include "mesh.h"

int ctrl_sender_init(struct mesh *m, struct ctrl_sender *s, int n)
{
	*s = (struct ctrl_sender){ .n = n };
	for (int i = 0; i < n; i++) {
		int rc = rcc_pool_get(m->ctrl_pool, &s->buf[i]);
		if (rc) {
			ctrl_sender_fini(m, s);
			return rc;
		}
	}
	return 0;
}

void ctrl_sender_fini(struct mesh *m, struct ctrl_sender *s)
{
	for (int i = 0; i < s->n; i++)
		if (s->buf[i])
			rcc_pool_put(m->ctrl_pool, s->buf[i]);
	*s = (struct ctrl_sender){ 0 };
}

int ctrl_post(struct mesh *m, struct rcc_ep *ep, struct ctrl_sender *s, struct ctrl_msg *msg)
{
	int i = 0;
	while (i < s->n && (s->busy & (1u << i)))
		i++;
	if (i == s->n)
		return -EAGAIN; /* all in flight; a completion will free one */
	msg->from = (uint16_t)m->rank;
	uint32_t len = ctrl_encode(msg, s->buf[i]);
	struct rcc_sge sge = rcc_pool_sge(m->ctrl_pool, s->buf[i], len);
	struct rcc_send_wr wr = {
		.wr_id = WR_ID(WR_CSEND, msg->type, i),
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = RCC_WR_SEND_IMM,
		.flags = RCC_SEND_SIGNALED,
		.imm_data = MESH_CTRL_IMM,
	};
	int rc = rcc_post_send_list(ep, &wr, 1, NULL);
	if (!rc)
		s->busy |= 1u << i;
	return rc;
}
