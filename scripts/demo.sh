#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The main job: build rcc, then run an rcc-pingpong server and client on
# loopback and a short benchmark, over the default transport (verbs when an
# RDMA device exists, tcp otherwise). Installs what it needs (Debian).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$REPO"

need_packages $PKGS_BUILD
say "building (build/)"
configure build "${DEMO_CONFIG[@]}"
build build

PP=build/tools/rcc-pingpong/rcc-pingpong
PERF=build/tools/rcc-perf/rcc-perf
PORT=${RCC_DEMO_PORT:-7471}
LOG=$(mktemp)
SRV=
cleanup() { [ -n "$SRV" ] && kill "$SRV" 2>/dev/null; wait 2>/dev/null; rm -f "$LOG"; }
trap cleanup EXIT

# Server and client on different CPUs when there are two: busy pollers sharing one core
# measure the scheduler, not the transport.
pin() { if [ "$(nproc)" -ge 2 ]; then taskset -c "$1" "${@:2}"; else "${@:2}"; fi; }
# In the background: the subshell becomes the program (exec), so $! is the
# program itself and killing it stops the server, not just a wrapper shell.
pin_bg() { if [ "$(nproc)" -ge 2 ]; then exec taskset -c "$1" "${@:2}"; else exec "${@:2}"; fi; }

say "rcc-pingpong: server and client on loopback"
pin_bg 0 "$PP" -p "$PORT" >"$LOG" 2>&1 &
SRV=$!
for _ in $(seq 100); do grep -q listening "$LOG" && break; sleep 0.05; done
grep -q listening "$LOG" || { cat "$LOG"; die "the rcc-pingpong server did not start"; }
cat "$LOG"
for size in 16 4K 64K; do
	pin 1 timeout 60 "$PP" -p "$PORT" -n 10000 -S "$size" 127.0.0.1
done
kill "$SRV"; wait "$SRV" 2>/dev/null || true; SRV=

if [ -x "$PERF" ]; then
	say "benchmark: rcc-perf, send and write latency and bandwidth"
	# the server picks a free port and prints it when it is ready
	pin_bg 0 timeout 120 "$PERF" -p 0 >"$LOG" 2>&1 &
	SRV=$!
	for _ in $(seq 200); do grep -q "on port" "$LOG" && break; sleep 0.05; done
	PERF_PORT=$(sed -n 's/.* on port \([0-9]*\).*/\1/p' "$LOG" | head -n1)
	[ -n "$PERF_PORT" ] || { cat "$LOG"; die "the rcc-perf server did not start"; }
	pin 1 timeout 120 "$PERF" -p "$PERF_PORT" --test send,write --sizes 8,4K,64K 127.0.0.1 ||
		die "rcc-perf failed"
	wait "$SRV" || true
	SRV=
fi
say "done"
