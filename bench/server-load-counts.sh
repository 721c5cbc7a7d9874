#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Where bench/server-load.sh's time goes, counted instead of timed: for the
# floor (bench/kv_floor.c) and the kv example in each CQ mode, perf stat
# attached to the server process and wrapping the client process, printed
# per operation: context switches, system calls (all, and the ones that
# matter here), futex calls, eventfd-sized reads/writes (the library's only
# read/write calls), and wake-ups each process caused. Counts hardly move
# with the host's load, so two builds can be compared on a busy machine where
# their times cannot. Figures only, nothing asserted.
#
#   bench/server-load-counts.sh [BUILD_DIR]
# Environment: OPS (per client, default 2000), CLIENTS (default 8),
# MODES ("fd wait hybrid poll"), RCC_SHM (0: rcc over TCP sockets; unset:
# same-host shared memory, the library's default), SRV_CPU / CLI_CPU
# (0 / 1). Needs perf with tracepoint access (root, or
# perf_event_paranoid <= -1); exit 77 when it is missing.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
KV=${1:-$REPO/build}/examples/example_kv
[ -x "$KV" ] || { echo "build rcc first (no $KV)" >&2; exit 1; }
for t in perf taskset cc timeout; do
	command -v "$t" >/dev/null || { echo "missing: $t" >&2; exit 77; }
done
: "${OPS:=2000}" "${CLIENTS:=8}" "${MODES:=fd wait hybrid poll}" "${SRV_CPU:=0}" "${CLI_CPU:=1}"
EVENTS=context-switches,raw_syscalls:sys_enter,syscalls:sys_enter_futex
EVENTS+=,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_poll,syscalls:sys_enter_recvfrom
EVENTS+=,syscalls:sys_enter_sendmsg,syscalls:sys_enter_sendto,syscalls:sys_enter_read
EVENTS+=,syscalls:sys_enter_write,sched:sched_wakeup
perf stat -e "$EVENTS" true >/dev/null 2>&1 || {
	echo "perf cannot count these tracepoints here (root or perf_event_paranoid)" >&2
	exit 77
}
WORK=$(mktemp -d)
SRV_PID= PERF_PID=
cleanup() {
	[ -n "$PERF_PID" ] && kill -INT "$PERF_PID" 2>/dev/null
	[ -n "$SRV_PID" ] && kill "$SRV_PID" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
cc -std=c11 -D_GNU_SOURCE -O2 -pthread -o "$WORK/kv_floor" "$REPO/bench/kv_floor.c"

# count NAME SERVER-CMD... -- CLIENT-CMD...: one run; appends "NAME event srv cli" lines
count() {
	local name=$1 fifo=$WORK/srv.fifo line port srv=() cli=()
	shift
	while [ "$1" != -- ]; do srv+=("$1"); shift; done
	shift
	cli=("$@")
	rm -f "$fifo"
	mkfifo "$fifo"
	taskset -c "$SRV_CPU" "${srv[@]}" >"$fifo" &
	SRV_PID=$!
	exec 3<"$fifo"
	read -t 10 -r line <&3 || { echo "$name: server did not start" >&2; exit 1; }
	port=${line##* }
	perf stat -x, -e "$EVENTS" -p "$SRV_PID" -o "$WORK/srv.txt" &
	PERF_PID=$!
	# perf attaches asynchronously and says nothing when it has: give it a
	# moment (an idle server counts next to nothing meanwhile)
	sleep 0.5
	if ! perf stat -x, -e "$EVENTS" -o "$WORK/cli.txt" \
		taskset -c "$CLI_CPU" timeout 300 "${cli[@]//PORT/$port}" >"$WORK/out" 2>&1; then
		echo "$name: client failed: $(cat "$WORK/out")" >&2
		FAILURES=$((FAILURES + 1))
	fi
	kill -INT "$PERF_PID"
	wait "$PERF_PID" || true
	PERF_PID=
	exec 3<&-
	kill -TERM "$SRV_PID"
	wait "$SRV_PID" 2>/dev/null || true
	SRV_PID=
	# CSV: value,unit,event,...
	join -t, -1 2 -2 2 \
		<(grep -v '^#' "$WORK/srv.txt" | awk -F, 'NF > 2 { print $1 "," $3 }' | sort -t, -k2) \
		<(grep -v '^#' "$WORK/cli.txt" | awk -F, 'NF > 2 { print $1 "," $3 }' | sort -t, -k2) |
		awk -F, -v n="$name" '{ print n, $1, $2, $3 }' >>"$WORK/counts"
}

: >"$WORK/counts"
FAILURES=0
count floor "$WORK/kv_floor" server 0 -- "$WORK/kv_floor" client 127.0.0.1 PORT "$CLIENTS" "$OPS"
for mode in $MODES; do
	count "$mode" "$KV" server 127.0.0.1:0 "$mode" -- "$KV" client 127.0.0.1:PORT "$CLIENTS" "$OPS" "$mode"
done

total=$((CLIENTS * OPS))
printf '\nkv load counted per operation (%d clients x %d ops; server CPU %s, clients CPU %s)\n' \
	"$CLIENTS" "$OPS" "$SRV_CPU" "$CLI_CPU"
printf 'rcc over %s; %s, %d CPUs, load %s\n' \
	"$([ "${RCC_SHM:-auto}" = 0 ] && echo 'TCP sockets (RCC_SHM=0)' || echo "shared memory when possible (RCC_SHM=${RCC_SHM:-unset})")" \
	"$(uname -r)" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-34s' "server / client"
for n in floor $MODES; do printf ' %15s' "$n"; done
printf '\n'
for ev in context-switches raw_syscalls:sys_enter syscalls:sys_enter_futex \
	syscalls:sys_enter_epoll_wait syscalls:sys_enter_poll syscalls:sys_enter_recvfrom \
	syscalls:sys_enter_sendmsg syscalls:sys_enter_sendto syscalls:sys_enter_read \
	syscalls:sys_enter_write sched:sched_wakeup; do
	printf '%-34s' "${ev#*sys_enter_}"
	for n in floor $MODES; do
		awk -v n="$n" -v e="$ev" -v t="$total" '$1 == n && $2 == e { f = sprintf("%.2f/%.2f", $3 / t, $4 / t) }
			END { printf " %15s", f ? f : "-" }' "$WORK/counts"
	done
	printf '\n'
done
[ "$FAILURES" -eq 0 ] || { echo "$FAILURES run(s) FAILED" >&2; exit 1; }
