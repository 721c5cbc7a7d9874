#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# rcc-pingpong over the tcp transport beside a raw busy-polling TCP ping-pong
# (bench/tcp_pingpong.c) and UCX's tcp transport (ucx_perftest tag_lat), at
# 8 B, 4 KiB, 64 KiB and 1 MiB (every size issue 13 item 4 names), server and
# client pinned to different CPUs. The tools take turns within each repetition
# (loopback latency drifts between levels for tens of seconds), and each figure
# is the median of the repetitions' medians.
#
#   bench/pingpong-tcp.sh [BUILD_DIR]        REPS=5 by default
#
# Targets (printed, not asserted): rcc's half round trip <= 1.05x raw TCP
# busy-polling at 8 B and <= 1.1x at the other sizes (issue 13 item 4), and
# below UCX tcp at 8 B; in RCC_CQ_WAIT and RCC_CQ_FD mode (-m wait,
# -m fd on both sides) <= 1.2x a ping-pong of two threads sleeping in blocking
# recv() (tcp_pingpong ... block), issue 13 item 1.
set -euo pipefail
# The socket path: same-host shared memory (the default between two local
# processes, docs/shm.md) is measured by bench/perf-shm.sh.
export RCC_SHM=0
REPO=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$REPO/build}
PP=$BUILD/tools/rcc-pingpong/rcc-pingpong
REPS=${REPS:-5}
SIZES=(8 4096 65536 1048576)
SRV_CPU=0 CLI_CPU=1
PORT_RCC=18471 PORT_RAW=18472 PORT_UCX=18473

[ -x "$PP" ] || { echo "build rcc first (no $PP)" >&2; exit 1; }
for t in taskset timeout ss cc; do command -v $t >/dev/null || { echo "missing: $t" >&2; exit 1; }; done
HAVE_UCX=1
command -v ucx_perftest >/dev/null || { HAVE_UCX=0; echo "ucx_perftest not found (apt-get install ucx-utils): UCX column skipped" >&2; }

WORK=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
cc -O2 -o "$WORK/tcp_pingpong" "$REPO/bench/tcp_pingpong.c"

listening() { ss -Hltn "sport = :$1" | grep -q .; }
wait_listen() { for _ in $(seq 500); do listening "$1" && return 0; sleep 0.01; done; return 1; }
iters_for() { case $1 in 8) echo 20000 ;; 4096) echo 20000 ;; 65536) echo 5000 ;; *) echo 1000 ;; esac; }

# Each runner prints one number: the median half round trip in microseconds.
run_rcc() { # SIZE [CQ_MODE]
	local size=$1 mode=${2:-poll} n
	n=$(iters_for "$size")
	timeout 60 taskset -c $SRV_CPU "$PP" -T tcp -p $PORT_RCC -m "$mode" --once -q \
		>"$WORK/srv.log" 2>&1 &
	PIDS+=($!)
	wait_listen $PORT_RCC || { echo "rcc-pingpong server did not start" >&2; return 1; }
	timeout 60 taskset -c $CLI_CPU "$PP" -T tcp -p $PORT_RCC -m "$mode" -n "$n" -S "$size" \
		--json 127.0.0.1 | sed -n 's/.*"median":\([0-9.]*\).*/\1/p'
	wait
}
run_rccwait() { run_rcc "$1" wait; }
run_rccfd() { run_rcc "$1" fd; }
run_raw() { # SIZE [block]
	local size=$1 n
	n=$(iters_for "$size")
	timeout 60 taskset -c $SRV_CPU "$WORK/tcp_pingpong" -s $PORT_RAW ${2:-} &
	PIDS+=($!)
	wait_listen $PORT_RAW || return 1
	timeout 60 taskset -c $CLI_CPU "$WORK/tcp_pingpong" -c 127.0.0.1 $PORT_RAW "$size" "$n" \
		${2:-} | awk '{ print $6 }'
	wait
}
run_rawblock() { run_raw "$1" block; }
run_ucx() {
	local size=$1 n
	n=$(iters_for "$size")
	UCX_TLS=tcp UCX_NET_DEVICES=lo timeout 60 taskset -c $SRV_CPU ucx_perftest -p $PORT_UCX \
		>"$WORK/ucx-srv.log" 2>&1 &
	PIDS+=($!)
	wait_listen $PORT_UCX || return 1
	# -f: one line "iters lat_pct lat_avg lat_overall bw_avg bw_overall mr_avg mr_overall";
	# with -R 50 lat_pct is the median half round trip
	UCX_TLS=tcp UCX_NET_DEVICES=lo timeout 60 taskset -c $CLI_CPU ucx_perftest 127.0.0.1 \
		-p $PORT_UCX -t tag_lat -s "$size" -n "$n" -w $((n / 10)) -R 50 -f 2>/dev/null |
		awk 'NF == 8 && $1 ~ /^[0-9]+$/ { v = $2 } END { print v }'
	wait
}

: >"$WORK/raw.tsv"
for ((rep = 1; rep <= REPS; rep++)); do
	for size in "${SIZES[@]}"; do
		for tool in raw rcc ucx rawblock rccwait rccfd; do
			[ $tool = ucx ] && [ $HAVE_UCX = 0 ] && continue
			v=$(run_$tool "$size") || v=
			[ -n "$v" ] && printf '%s\t%s\t%s\n' $tool "$size" "$v" >>"$WORK/raw.tsv"
		done
	done
	echo "repetition $rep/$REPS done" >&2
done

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
fig() { awk -F'\t' -v t="$1" -v s="$2" '$1 == t && $2 == s { print $3 }' "$WORK/raw.tsv" | median; }

printf '\nhalf round trip, median of %d runs (us); server CPU %d, client CPU %d\n' "$REPS" $SRV_CPU $CLI_CPU
printf '%-8s %12s %12s %12s %14s %14s\n' size raw-TCP rcc UCX-tcp rcc/raw rcc/UCX
for size in "${SIZES[@]}"; do
	raw=$(fig raw "$size"); rcc=$(fig rcc "$size"); ucx=$(fig ucx "$size")
	awk -v s="$size" -v r="$raw" -v c="$rcc" -v u="$ucx" 'BEGIN {
		printf "%-8s %12s %12s %12s %14s %14s\n", s, r, c, (u == "" ? "-" : u),
			(r > 0 && c > 0) ? sprintf("%.2fx", c / r) : "-",
			(u > 0 && c > 0) ? sprintf("%.2fx", c / u) : "-" }'
done
printf '\nsleeping waiters: blocking-socket TCP vs rcc -m wait / -m fd (us)\n'
printf '%-8s %12s %12s %12s %14s %14s\n' size raw-block rcc-wait rcc-fd wait/raw fd/raw
for size in "${SIZES[@]}"; do
	raw=$(fig rawblock "$size"); w=$(fig rccwait "$size"); f=$(fig rccfd "$size")
	awk -v s="$size" -v r="$raw" -v w="$w" -v f="$f" 'BEGIN {
		printf "%-8s %12s %12s %12s %14s %14s\n", s, r, w, f,
			(r > 0 && w > 0) ? sprintf("%.2fx", w / r) : "-",
			(r > 0 && f > 0) ? sprintf("%.2fx", f / r) : "-" }'
done
echo
for size in "${SIZES[@]}"; do
	raw=$(fig raw "$size"); rcc=$(fig rcc "$size")
	awk -v s="$size" -v r="$raw" -v c="$rcc" 'BEGIN { t = s == 8 ? 1.05 : 1.1
	if (r > 0 && c > 0) printf "target %s B: rcc <= %.2fx raw TCP busy-polling: %s (%.2fx)\n", s, t, (c <= t * r) ? "MET" : "MISSED", c / r }'
done
raw=$(fig raw 8); rcc=$(fig rcc 8); ucx=$(fig ucx 8)
awk -v r="$raw" -v c="$rcc" -v u="$ucx" 'BEGIN {
	if (u > 0 && c > 0) printf "target 8 B: rcc below UCX tcp tag_lat:      %s (%.2fx)\n", (c < u) ? "MET" : "MISSED", c / u }'
raw=$(fig rawblock 8); w=$(fig rccwait 8); f=$(fig rccfd 8)
awk -v r="$raw" -v w="$w" -v f="$f" 'BEGIN {
	if (r > 0 && w > 0) printf "target 8 B: rcc -m wait <= 1.2x blocking TCP: %s (%.2fx)\n", (w <= 1.2 * r) ? "MET" : "MISSED", w / r
	if (r > 0 && f > 0) printf "target 8 B: rcc -m fd   <= 1.2x blocking TCP: %s (%.2fx)\n", (f <= 1.2 * r) ? "MET" : "MISSED", f / r }'
