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
#include "base/lock.h"

/* The send slots of rule 2 (rcc.h), counted by rcc since Soft-RoCE
 * frees them by itself. Posters hold lock while they take slots and post;
 * pollers take it to free them. */
struct verbs_sq_slots {
	struct rcci_lock lock; /* posts and send completions */
	uint32_t depth, used;
	uint32_t run;   /* unsignalled requests since the last signalled one */
	uint32_t *runs; /* ring (depth): per signalled request in flight, the slots it frees */
	uint32_t head, n;
};
/* 0 or -ENOMEM; fini is safe on a zeroed or finished struct. */
int rcci_sq_slots_init(struct verbs_sq_slots *s, uint32_t depth);
void rcci_sq_slots_fini(struct verbs_sq_slots *s);
static inline uint32_t rcci_sq_room(const struct verbs_sq_slots *s) { return s->depth - s->used; }

/*
 * Inline: every post call takes slots and every successful send completion
 * frees them (a call each cost about a tenth of the post). The ring's index
 * wraps by a compare, not a division: head < depth and n <= used <= depth,
 * so head + n < 2 * depth and one subtraction is the same as % depth.
 */
static inline uint32_t rcci_sq_wrap(const struct verbs_sq_slots *s, uint32_t i)
{
	return i >= s->depth ? i - s->depth : i;
}

/* Caller holds lock: the slots wr[0..n) take (at most the room left). */
static inline void rcci_sq_take(struct verbs_sq_slots *s, const struct rcc_send_wr *wr, int n,
				bool sig_all)
{
	for (int i = 0; i < n; i++) {
		s->run++;
		if (sig_all || (wr[i].flags & RCC_SEND_SIGNALED)) {
			s->runs[rcci_sq_wrap(s, s->head + s->n)] = s->run;
			s->n++;
			s->run = 0;
		}
	}
	s->used += (uint32_t)n;
}

/* A successful send completion was taken from the device (any thread). */
static inline void rcci_sq_completed(struct verbs_sq_slots *s)
{
	rcci_lock_acquire(&s->lock);
	if (s->n) { /* always, unless the device completed what we never counted */
		s->used -= s->runs[s->head];
		s->head = rcci_sq_wrap(s, s->head + 1);
		s->n--;
	}
	rcci_lock_release(&s->lock);
}

#endif
