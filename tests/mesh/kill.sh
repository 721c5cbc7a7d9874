#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# kill -9 one rank of 4 mid-traffic: every survivor reports it by rank,
# finishes with the others, and exits with status 4 within a bound.
#   kill.sh RCC_MESH per-ep|shared
set -euo pipefail
MESH_BIN=$1
mode=$2
. "$(dirname "$0")/lib.sh"

n=4 victim=2 dur=3
base=$(free_ports $n) || fail "no free ports"
nodes=$(loopback_nodes $n "$base")
for k in $(seq 0 $((n - 1))); do
	start_rank "$k" "$MESH_TMP/rank.$k.log" "$MESH_BIN" --nodes "$nodes" --rank "$k" -T tcp \
		-t "$mode" -D $dur -s 1K -q 8 --timeout 3000
done
for k in $(seq 0 $((n - 1))); do
	wait_line "$MESH_TMP/rank.$k.log" "traffic started" 30 "${MESH_PIDS[$k]}" || { show_logs; fail "rank $k never started"; }
done
# some traffic first: wait until the victim's peers have heard from it
wait_line "$MESH_TMP/rank.0.log" "traffic started" 1
kill -9 "${MESH_PIDS[$victim]}"
wait "${MESH_PIDS[$victim]}" 2>/dev/null || true
killed_at=$SECONDS

# survivors: the rest of their -D, plus the end-phase bound, plus slack
bound=$((dur + 3 + 10))
for k in $(seq 0 $((n - 1))); do
	[ $k = $victim ] && continue
	rc=0
	wait_exit "${MESH_PIDS[$k]}" $bound || rc=$?
	log=$MESH_TMP/rank.$k.log
	[ $rc = 4 ] || { show_logs; fail "survivor $k exited $rc, expected 4"; }
	grep -q "rank $victim (127.0.0.1:$((base + victim))) failed" "$log" ||
		{ show_logs; fail "survivor $k did not report rank $victim as failed"; }
	grep -q "FAILED: lost rank $victim" "$log" || { show_logs; fail "survivor $k: no verdict"; }
done
took=$((SECONDS - killed_at))
[ $took -le $bound ] || fail "survivors took ${took}s"
grep -qE "^ +[013] +[013] .* ok$" "$MESH_TMP/rank.0.log" || { show_logs; fail "no surviving pair verified"; }
grep -q "rank dst failed" "$MESH_TMP/rank.0.log" || { show_logs; fail "collector table does not mark the dead rank"; }
note "ok: $mode: rank $victim killed; survivors reported it and exited 4 within ${took}s"
