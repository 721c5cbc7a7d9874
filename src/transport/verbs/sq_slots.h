/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The send slots of a verbs endpoint (rule 2 of rcc.h), shared by the post
 * path (post.c) and the completion path (cq.c); sq_slots.c says how they are
 * counted.
 */
#ifndef RCC_VERBS_SQ_SLOTS_H
#define RCC_VERBS_SQ_SLOTS_H

#include <stdbool.h>
#include <stdint.h>

#include "rcc/rcc.h"
#include "transport/verbs/slot_lock.h"

/* The send slots of rule 2 (rcc.h), counted by rcc since Soft-RoCE
 * frees them by itself. Posters hold lock while they take slots and post;
 * pollers take it to free them. */
struct verbs_sq_slots {
	atomic_int lock; /* slot_lock.h: posts and send completions */
	uint32_t depth, used;
	uint32_t run;   /* unsignalled requests since the last signalled one */
	uint32_t *runs; /* ring (depth): per signalled request in flight, the slots it frees */
	uint32_t head, n;
};
/* 0 or -ENOMEM; fini is safe on a zeroed or finished struct. */
int rcci_sq_slots_init(struct verbs_sq_slots *s, uint32_t depth);
void rcci_sq_slots_fini(struct verbs_sq_slots *s);
/* Caller holds lock: the slots wr[0..n) take (at most the room left). */
void rcci_sq_take(struct verbs_sq_slots *s, const struct rcc_send_wr *wr, int n, bool sig_all);
/* A successful send completion was taken from the device (any thread). */
void rcci_sq_completed(struct verbs_sq_slots *s);
static inline uint32_t rcci_sq_room(const struct verbs_sq_slots *s) { return s->depth - s->used; }

#endif
