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
# A number to read in review, never asserted: the exit status is non-zero
# only when a run failed.
#
#   bench/overhead.sh [BUILD_DIR]
# Environment: QUICK=1 (small N, as CI runs it), TRANSPORT (tcp; verbs in the
# Soft-RoCE VM, with RCC_TEST_ADDR=$RXE_IP: rdma_cm has no route over lo), OPS
# ("send write read fadd"). Verbs against perftest, counted the same way in the
# VM: ONLY=count bench/perf-rxe.sh.
set -euo pipefail
# The socket path: same-host shared memory (the default between two local
# processes, docs/shm.md) is measured by bench/perf-shm.sh.
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

# per_op OP: "instructions/op empty-polls/op" from the two runs
per_op() {
	local i1 i2 e1 e2
	i1=$(instructions "$1" "$N1")
	i2=$(instructions "$1" "$N2")
	e1=$(cat "$WORK/empty.$1.$N1")
	e2=$(cat "$WORK/empty.$1.$N2")
	awk -v i1="$i1" -v i2="$i2" -v e1="$e1" -v e2="$e2" -v n1="$N1" -v n2="$N2" \
		'BEGIN { printf "%.1f %.3f\n", (i2 - i1) / (n2 - n1), (e2 - e1) / (n2 - n1) }'
}

read -r poll_cost _ < <(per_op empty)
printf 'Hot-path instructions per operation (%s, 8 B, poll mode; N = %d and %d)\n' \
	"$TRANSPORT" "$N1" "$N2"
printf 'one empty poll: %.0f instructions\n' "$poll_cost"
printf '%-6s %12s %16s %18s\n' op "instr/op" "empty polls/op" "less the polls"
for op in $OPS; do
	read -r ins emp < <(per_op "$op")
	awk -v op="$op" -v ins="$ins" -v emp="$emp" -v pc="$poll_cost" \
		'BEGIN { printf "%-6s %12.0f %16.2f %18.0f\n", op, ins, emp, ins - emp * pc }'
done
