/* SPDX-License-Identifier: BSD-3-Clause */
/* How deep a CQ must be for one endpoint of the session layer. */
#ifndef RCC_SESSION_CQ_DEPTH_H
#define RCC_SESSION_CQ_DEPTH_H

#include "rcc/rcc.h"

/* Every send and receive it may have outstanding, plus room for the
 * completions a disconnect flushes while the owner is not polling. */
static inline uint32_t rcci_ep_cq_depth(const struct rcc_ep_attr *a)
{
	return (a->sq_depth ? a->sq_depth : RCC_DEFAULT_QUEUE_DEPTH) +
	       (a->rq_depth ? a->rq_depth : RCC_DEFAULT_QUEUE_DEPTH) + 16;
}

#endif
