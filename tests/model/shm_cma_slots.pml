/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The single-copy slot protocol of the shared-memory path (docs/shm.md,
 * "Single-copy transfers"; src/transport/tcp/shm_cma.c), checked with SPIN:
 * once rcc_mr_dereg() of a region has returned, no copy by the peer touches
 * that region -- under every interleaving of a claim, its release, a late
 * descriptor, the copier and the deregistration.
 *
 * What is modelled (one slot, two regions, the deregistration of region 0):
 *  - ctl, one word: generation * 2 + live, written by the owner (the
 *    initiator) when it claims the slot for a request and when it releases
 *    it, cleared of live by a deregistration; busy, written by the copier.
 *  - The owner claims under the read side of mr_lock, only for a region that
 *    is still registered, bumps the generation and records privately which
 *    region the request names (the key table); it may release the slot (the
 *    request completed or was flushed) before the copier came to it.
 *  - Descriptors (generation, region) travel in FIFO order to the copier, as
 *    frames do in the ring; one copier per connection.
 *  - The copier: busy = 1, load ctl, copy only if it equals its
 *    descriptor's generation with live set, busy = 0. The C code puts a
 *    seq_cst fence between the store and the load, and the deregistration
 *    one between its clear and its look at busy: those two fences are in
 *    one total order, so the sequentially consistent interleavings SPIN
 *    explores are the ones the hardware can produce (store buffering is what
 *    the fences rule out).
 *  - rcc_mr_dereg(): the write side of mr_lock, the region unregistered,
 *    live cleared in the slot if the key table says the slot's request
 *    named the region (a released slot keeps its key until it is claimed
 *    again), then a wait while busy; then it returns: freed.
 * Left out: the bounded wait's timeout (a copier busy for longer than the
 * peer timeout fails the connection; only a process allowed to ptrace us
 * could still write then, and it could anyway), and more slots (each slot's
 * protocol is independent of the others').
 *
 * Property: never copying from or into region r while freed[r] (the monitor
 * below), and every process ends (no deadlock: spin -a's invalid end states).
 */
#define NGEN 3

byte ctl = 0;           /* generation * 2 + live */
bool busy = false;
byte slot_key = 0;      /* the owner's private key table: the region its request names */
bool registered[2] = true;
bool freed[2] = false;
bool copying[2] = false;
byte readers = 0;       /* mr_lock */
bool writer = false;
chan desc = [NGEN] of { byte, byte };  /* generation, region */

active proctype owner()
{
	byte g = 0;
	byte r;

	do
	:: g < NGEN ->
		if
		:: r = 0
		:: r = 1
		fi;
		atomic { !writer -> readers++ };
		if
		:: registered[r] ->
			g++;
			slot_key = r;
			ctl = g * 2 + 1; /* claim: one store of the word */
			readers--;
			desc!g,r;
			ctl = ctl - (ctl % 2) /* release, now or after the copy */
		:: else ->
			readers--
		fi
	:: else ->
		break
	od
}

active proctype copier()
{
	byte g, r;

end:	do
	:: desc?g,r ->
		busy = true;
		if
		:: ctl == g * 2 + 1 ->
			copying[r] = true;
			copying[r] = false
		:: else ->
			skip /* refused: the access NAK */
		fi;
		busy = false
	od
}

active proctype dereg()
{
	atomic { readers == 0 && !writer -> writer = true };
	registered[0] = false;
	if
	:: slot_key == 0 -> ctl = ctl - (ctl % 2) /* kill: clear live */
	:: else -> skip
	fi;
	!busy; /* wait while a copier is inside */
	freed[0] = true;
	writer = false
}

active proctype monitor()
{
end:	atomic { (copying[0] && freed[0]) || (copying[1] && freed[1]) -> assert(false) }
}
