#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A real-server load: the key-value example (examples/kv.c: PUT by SEND RPC,
# GET by one-sided READ, 3 GETs per PUT, every value verified) with 1, 8 and
# 64 client threads, its server on one shared CQ in fd, wait, hybrid and poll
# mode (the clients' CQs in the same mode unless CLIENT_MODE says), beside
# the same RPCs over a plain epoll TCP server with blocking-socket clients
# (bench/kv_floor.c: the floor).
# Prints throughput and p50/p99/p99.9 latency per operation, and each as a
# ratio to the floor measured in the same run (throughput: higher is better;
# latency: lower is better). Figures only: no speed is asserted; the exit
# status is non-zero only when a run failed (a client saw a wrong value).
#
#   bench/server-load.sh [BUILD_DIR]
# Environment: OPS (operations per client, default 2000), REPS (default 1;
# each figure is the median of the repeats), CLIENTS ("1 8 64"),
# MODES ("fd wait hybrid poll"), RCC_SHM (0: rcc over TCP sockets, as the
# floor; unset: same-host shared memory, the library's default; the header
# says which), CLIENT_MODE (the clients' CQ mode; default:
# the server's), SRV_CPU / CLI_CPU (default 0 / 1: server and
# clients pinned to different CPUs; PIN=0 to leave placement to the kernel).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$REPO/build}
KV=$BUILD/examples/example_kv
OPS=${OPS:-2000}
REPS=${REPS:-1}
CLIENTS=${CLIENTS:-"1 8 64"}
MODES=${MODES:-"fd wait hybrid poll"}
SRV_CPU=${SRV_CPU:-0}
CLI_CPU=${CLI_CPU:-1}
[ -x "$KV" ] || { echo "build rcc first (no $KV)" >&2; exit 1; }
# 77: cannot run here (a skip for the smoke test in tests/bench)
for t in timeout cc $([ "${PIN:-1}" = 0 ] || echo taskset); do
	command -v "$t" >/dev/null || { echo "missing: $t" >&2; exit 77; }
done
WORK=$(mktemp -d)
SRV_PID=
cleanup() {
	[ -n "$SRV_PID" ] && kill "$SRV_PID" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
cc -std=c11 -D_GNU_SOURCE -O2 -pthread -o "$WORK/kv_floor" "$REPO/bench/kv_floor.c"
pin() { # CPU CMD...: run pinned unless PIN=0 (exec: a background pin is the program)
	local cpu=$1
	shift
	if [ "${PIN:-1}" = 0 ]; then exec "$@"; else exec taskset -c "$cpu" "$@"; fi
}

# start_server CMD...: starts it pinned, sets SRV_PID and PORT from its
# "listening on port N" line (bounded wait, no sleep)
start_server() {
	local fifo=$WORK/srv.fifo line
	rm -f "$fifo"
	mkfifo "$fifo"
	pin "$SRV_CPU" "$@" >"$fifo" &
	SRV_PID=$!
	exec 3<"$fifo"
	if ! read -t 10 -r line <&3; then
		echo "server did not start: $*" >&2
		exit 1
	fi
	PORT=${line##* }
}
stop_server() {
	exec 3<&-
	kill -TERM "$SRV_PID" 2>/dev/null || true
	wait "$SRV_PID" 2>/dev/null || true
	SRV_PID=
}

# run TOOL MODE N: one client run; appends "TOOL MODE N ops_per_s p50 p99 p999" to results
run() {
	local tool=$1 mode=$2 n=$3 out
	if [ "$tool" = floor ]; then
		start_server "$WORK/kv_floor" server 0
		out=$(pin "$CLI_CPU" timeout 300 "$WORK/kv_floor" client 127.0.0.1 "$PORT" "$n" "$OPS") || out=FAILED
	else
		start_server "$KV" server 127.0.0.1:0 "$mode"
		out=$(pin "$CLI_CPU" timeout 300 "$KV" client "127.0.0.1:$PORT" "$n" "$OPS" \
			"${CLIENT_MODE:-$mode}") || out=FAILED
	fi
	stop_server
	if [ "$out" = FAILED ]; then
		echo "$tool $mode $n: FAILED" >&2
		FAILURES=$((FAILURES + 1))
		return
	fi
	# clients=.. ops=.. secs=.. ops_per_s=X p50_us=X p99_us=X p999_us=X torn_reads=..
	echo "$tool $mode $n $(echo "$out" | sed -E 's/.*ops_per_s=([0-9.]+) p50_us=([0-9.]+) p99_us=([0-9.]+) p999_us=([0-9.]+).*/\1 \2 \3 \4/')" >>"$WORK/results"
}

: >"$WORK/results"
FAILURES=0
for ((rep = 1; rep <= REPS; rep++)); do
	for n in $CLIENTS; do
		run floor - "$n"
		for mode in $MODES; do
			run rcc "$mode" "$n"
		done
	done
	echo "repetition $rep/$REPS done" >&2
done

# median of column COL (4: ops/s, 5: p50, 6: p99, 7: p99.9) for TOOL MODE N
fig() {
	awk -v t="$1" -v m="$2" -v n="$3" -v c="$4" '$1 == t && $2 == m && $3 == n { print $c }' \
		"$WORK/results" | sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.2f", a / b }'; }

printf '\nkey-value load (examples/kv.c vs an epoll TCP server), %d ops per client, median of %d run(s)\n' "$OPS" "$REPS"
printf 'clients in %s mode; server CPU %s, client CPU %s (PIN=%s); %s, %d CPUs, load %s\n' "${CLIENT_MODE:-server}" "$SRV_CPU" "$CLI_CPU" "${PIN:-1}" \
	"$(uname -r)" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
# rcc's path: on one host the tcp transport uses shared memory unless told not to
printf 'rcc over %s\n' "$(case ${RCC_SHM:-auto} in 0) echo 'TCP sockets (RCC_SHM=0)' ;;
	*) echo "shared memory when possible (RCC_SHM=${RCC_SHM:-unset}; RCC_SHM=0: TCP sockets)" ;; esac)"
printf '%-8s %-7s %10s %9s %9s %9s   %7s %7s %7s %7s\n' clients mode ops/s p50_us p99_us p99.9_us \
	tput/fl p50/fl p99/fl p999/fl
for n in $CLIENTS; do
	ft=$(fig floor - "$n" 4) f50=$(fig floor - "$n" 5) f99=$(fig floor - "$n" 6) f999=$(fig floor - "$n" 7)
	printf '%-8s %-7s %10s %9s %9s %9s\n' "$n" floor "$ft" "$f50" "$f99" "$f999"
	for mode in $MODES; do
		t=$(fig rcc "$mode" "$n" 4) p50=$(fig rcc "$mode" "$n" 5) p99=$(fig rcc "$mode" "$n" 6)
		p999=$(fig rcc "$mode" "$n" 7)
		printf '%-8s %-7s %10s %9s %9s %9s   %7s %7s %7s %7s\n' "$n" "$mode" "$t" "$p50" "$p99" \
			"$p999" "$(ratio "$t" "$ft")" "$(ratio "$p50" "$f50")" "$(ratio "$p99" "$f99")" \
			"$(ratio "$p999" "$f999")"
	done
done
printf '\ntarget (issue 13) at 8 and 64 clients: tput/fl >= 0.8 and p99/fl <= 1.5\n'
# a run that failed (a wrong value, a client error) is an error, not a figure
[ "$FAILURES" -eq 0 ] || { echo "$FAILURES run(s) FAILED" >&2; exit 1; }
