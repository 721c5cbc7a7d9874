/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Rule 2 of rcc.h on verbs: a send work request holds its slot until a
 * completion of it or of a later request of the same endpoint has been
 * polled, and a full send queue refuses posts with -ENOMEM. mlx5 keeps that
 * rule in hardware; Soft-RoCE frees the slot of every executed request by
 * itself, so a program that never signals would work on rxe and stall on a
 * NIC. rcc counts the slots itself, at the depth the endpoint asked for.
 *
 * Each signalled request in flight has an entry in a ring: how many slots
 * its completion frees (itself and the unsignalled requests posted since the
 * previous signalled one). Send completions come in posting order, so a
 * successful one frees the oldest entry. A failed one frees nothing: the
 * endpoint has left service and refuses posts from then on.
 */
#include <errno.h>
#include <stdlib.h>

#include "verbs.h"

int rcci_sq_slots_init(struct verbs_sq_slots *s, uint32_t depth)
{
	s->runs = calloc(depth ? depth : 1, sizeof(*s->runs));
	if (!s->runs)
		return -ENOMEM;
	rcci_lock_init(&s->lock);
	s->depth = depth;
	s->used = s->run = s->head = s->n = 0;
	return 0;
}

void rcci_sq_slots_fini(struct verbs_sq_slots *s)
{
	if (!s->runs)
		return;
	free(s->runs);
	s->runs = NULL;
}
