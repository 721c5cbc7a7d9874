#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Instructions per operation on the hot path (post + poll to completion),
# counted, not timed: bench_overhead (bench/overhead.c) runs each operation
# N1 and then N2 times under valgrind --tool=callgrind, and
# (instructions(N2) - instructions(N1)) / (N2 - N1) is what one more
# operation costs in user space, every thread of the process included, the
# set-up cancelled out. Polls that found nothing are part of that count (the
# target's side may be served by another thread meanwhile); they are counted
# too, priced by a run of empty polls alone, and taken out in the last
# column, which is the figure to compare.
#
# shm rows (tcp only; SHM=0 skips them): the same operations with both
# endpoints on the same-host shared-memory ring (RCC_SHM=1, docs/shm.md), the
# target passive as at a NIC: the application thread posts and polls only the
# initiator's CQ, yielding after each empty poll ("passive" in overhead.c),
# and the context's progress thread serves the target. Counted per thread
# (--separate-threads=yes): the application thread's instructions plus the
# progress thread's endpoint work (everything inside rcci_ep_progress) -- the
# target's side, and the initiator's acknowledgements when the thread rather
# than the application reads them (which of the two does varies from run to
# run; their sum hardly moves). Excluded, and why: the rest of the progress
# thread, its loop (epoll_wait, sweeping the rings for input, spinning for a
# while after each message, ticks), is paid per unit of time, not per
# operation, and callgrind's slowed-down time made it swing from run to run
# (counting every thread together, the first attempt read from -4.5 to +26
# empty polls per operation between runs). A run the scheduler disturbed
# (many empty polls) is run again (shm_instructions). The empty-poll price is
# the same wait loop with nothing outstanding, application thread only.
#
# A number to read in review, never asserted: the exit status is non-zero
# only when a run failed.
#
#   bench/overhead.sh [BUILD_DIR]
# Environment: QUICK=1 (small N, as CI runs it), SHM=0 (no shm rows), TRANSPORT (tcp; verbs in the
# Soft-RoCE VM, with RCC_TEST_ADDR=$RXE_IP: rdma_cm has no route over lo), OPS
# ("send write read fadd"). Verbs against perftest, counted the same way in the
# VM: ONLY=count bench/perf-rxe.sh.
set -euo pipefail
# The socket path for the tcp rows; the shm rows set RCC_SHM=1 for their runs
# (its timings: bench/perf-shm.sh).
export RCC_SHM=0
REPO=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$REPO/build}
BIN=$BUILD/tests/bench/bench_overhead
TRANSPORT=${TRANSPORT:-tcp}
OPS=${OPS:-"send write read fadd"}
if [ "${QUICK:-0}" = 1 ]; then N1=200 N2=600; else N1=2000 N2=6000; fi

# 77: cannot run here (a skip for the smoke test in tests/bench)
[ -x "$BIN" ] || { echo "build rcc first (no $BIN)" >&2; exit 77; }
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 77; }
if grep -qE '^RCC_SANITIZE:STRING=.+' "$BUILD/CMakeCache.txt" 2>/dev/null; then
	echo "a sanitizer build: valgrind cannot run it, and its counts mean nothing" >&2
	exit 77
fi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# instructions OP N: the total user-space instructions of one run
instructions() {
	local out=$WORK/cg.$1.$2
	if ! timeout 300 valgrind --tool=callgrind --fair-sched=yes --callgrind-out-file="$out" \
		"$BIN" "$1" "$2" "$TRANSPORT" >"$WORK/run.out" 2>"$WORK/run.err"; then
		echo "bench_overhead $1 $2 $TRANSPORT failed:" >&2
		cat "$WORK/run.err" >&2
		return 1
	fi
	awk '/^(summary|totals):/ { print $2; exit }' "$out"
	awk '{ print $3 }' "$WORK/run.out" >"$WORK/empty.$1.$2"
}

# total FILE: a callgrind file's total instructions (fails without one)
total() { awk '/^(summary|totals):/ { print $2; f = 1; exit } END { exit !f }' "$1"; }

# shm_instructions OP N: as instructions, on shared memory with a passive
# target: the application thread's instructions plus the progress thread's
# inside rcci_ep_progress (only the application thread's for "empty", which
# is one run). An undisturbed run makes an empty poll every tenth operation
# or so; one with more than one every other operation is run again, up to 3
# runs in all, and the one with the fewest counts.
shm_instructions() {
	local out=$WORK/shm.$1.$2 ins prog emp best_ins='' best_emp='' runs=0
	while [ "$runs" -lt 3 ]; do
		runs=$((runs + 1))
		rm -f "$out"-*
		if ! RCC_SHM=1 timeout 300 valgrind --tool=callgrind --fair-sched=yes \
			--separate-threads=yes --callgrind-out-file="$out" \
			"$BIN" "$1" "$2" tcp passive >"$WORK/run.out" 2>"$WORK/run.err"; then
			echo "bench_overhead $1 $2 tcp passive (RCC_SHM=1) failed:" >&2
			cat "$WORK/run.err" >&2
			return 1
		fi
		read -r _ _ emp <"$WORK/run.out"
		# thread 1 is the application's; the progress thread's file is the one
		# with progress_main (the other is rig_open's accept thread)
		ins=$(total "$out-01") || return 1
		if [ "$1" = empty ]; then
			best_ins=$ins best_emp=$emp
			break
		fi
		prog=$(grep -lE '^c?fn=.* progress_main$' "$out"-0[2-9] | head -n 1)
		[ -n "$prog" ] || { echo "no progress thread in the $1 $2 run" >&2; return 1; }
		prog=$(callgrind_annotate --inclusive=yes "$prog" |
			awk '!f && /:rcci_ep_progress / { gsub(",", "", $1); print $1; f = 1 }
			     END { if (!f) print 0 }') || return 1
		ins=$((ins + prog))
		if [ -z "$best_emp" ] || [ "$emp" -lt "$best_emp" ]; then
			best_ins=$ins best_emp=$emp
		fi
		[ $((2 * best_emp)) -gt "$2" ] || break
	done
	echo "$best_ins"
	echo "$best_emp" >"$WORK/empty.$1.$2"
}

# per_op COUNT OP: "instructions/op empty-polls/op" from the two runs
per_op() {
	local i1 i2 e1 e2
	i1=$("$1" "$2" "$N1")
	i2=$("$1" "$2" "$N2")
	e1=$(cat "$WORK/empty.$2.$N1")
	e2=$(cat "$WORK/empty.$2.$N2")
	awk -v i1="$i1" -v i2="$i2" -v e1="$e1" -v e2="$e2" -v n1="$N1" -v n2="$N2" \
		'BEGIN { printf "%.1f %.3f\n", (i2 - i1) / (n2 - n1), (e2 - e1) / (n2 - n1) }'
}

# table COUNT LABEL: the empty-poll price and a row per op
table() {
	local poll_cost ins emp op
	read -r poll_cost _ < <(per_op "$1" empty)
	printf 'Hot-path instructions per operation (%s, 8 B, poll mode; N = %d and %d)\n' \
		"$2" "$N1" "$N2"
	printf 'one empty poll: %.0f instructions\n' "$poll_cost"
	printf '%-6s %12s %16s %18s\n' op "instr/op" "empty polls/op" "less the polls"
	for op in $OPS; do
		read -r ins emp < <(per_op "$1" "$op")
		awk -v op="$op" -v ins="$ins" -v emp="$emp" -v pc="$poll_cost" \
			'BEGIN { printf "%-6s %12.0f %16.2f %18.0f\n", op, ins, emp, ins - emp * pc }'
	done
}

table instructions "$TRANSPORT"
if [ "$TRANSPORT" = tcp ] && [ "${SHM:-1}" != 0 ]; then
	echo
	if command -v callgrind_annotate >/dev/null; then
		table shm_instructions \
			"shm, passive target: application thread + progress thread's endpoint work"
	else
		echo "no shm rows: callgrind_annotate (valgrind's) is not installed"
	fi
fi
