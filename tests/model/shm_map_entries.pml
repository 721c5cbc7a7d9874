/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The mapped-transfer revocation of the shared-memory path (docs/shm.md,
 * "The deregistration guarantee on mapped memory"; src/transport/tcp/
 * shm_map.c), checked with SPIN: once rcc_mr_dereg() of a region has
 * returned, no copy by the initiator through its mapping touches that
 * region -- under every interleaving of the target publishing a region,
 * revoking it, publishing another in the same entry, and the initiator
 * looking up the entry, caching it (possibly long before), and copying.
 *
 * What is modelled (one table entry, two regions published in it one after
 * the other):
 *  - ctl, one word: generation * 2 + live, and key, the region the entry
 *    names; written by the target only. The initiator reads the pair as one
 *    (the C code's seqlock: the fields count only if ctl did not move).
 *  - The initiator: a lookup takes (ctl, key) of a live entry into its
 *    cache, or it keeps the cache it has (it may be stale by any amount);
 *    a copy: busy = 1, load ctl, copy through the cached region only if ctl
 *    equals the cached word, busy = 0. The C code puts a seq_cst fence
 *    between the store and the load, and the target one between its clear
 *    and its look at busy: one total order, so the sequentially consistent
 *    interleavings SPIN explores are the ones the hardware can produce.
 *  - The target: publish region 0 (generation 1), deregister it (clear
 *    live, wait while busy, then freed), publish region 1 in the same entry
 *    (generation 2), deregister it.
 * Left out: the bounded wait's timeout (a peer inside its copy for longer
 * than the peer timeout fails the connection; only a process allowed to
 * ptrace us could write then, and it could anyway), the initiator's bounds
 * and access checks (its own business), more entries (independent).
 *
 * Property: never copying into or out of region r while freed[r] (the
 * monitor), and every process ends (no deadlock).
 */
byte ctl = 0;  /* generation * 2 + live */
byte key = 0;  /* the region the entry names */
bool busy = false;
bool freed[2] = false;
bool copying[2] = false;

active proctype initiator()
{
	byte cctl = 0, ckey = 0, n = 0;

	do
	:: n < 4 ->
		n++;
		if
		:: atomic { ctl % 2 == 1 -> cctl = ctl; ckey = key } /* lookup: a live entry */
		:: skip /* keep the cache, stale or not */
		fi;
		if
		:: cctl != 0 ->
			busy = true;
			if
			:: ctl == cctl ->
				copying[ckey] = true;
				copying[ckey] = false
			:: else ->
				skip /* revoked: the ring, where the target refuses it */
			fi;
			busy = false
		:: else ->
			skip
		fi
	:: else ->
		break
	od
}

active proctype target()
{
	byte r = 0;

	do
	:: r < 2 ->
		atomic { key = r; ctl = (r + 1) * 2 + 1 }; /* publish, a new generation */
		ctl = ctl - (ctl % 2); /* rcc_mr_dereg(): revoke */
		!busy; /* wait while the peer is inside a copy */
		freed[r] = true;
		r++
	:: else ->
		break
	od
}

active proctype monitor()
{
end:	atomic { (copying[0] && freed[0]) || (copying[1] && freed[1]) -> assert(false) }
}
