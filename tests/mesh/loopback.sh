#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# 4 ranks on loopback (distinct ports) over tcp, in the given thread mode:
# the mesh completes, every pair moves verified data both ways, and the
# collector's table (and its JSON) covers all 12 directed pairs.
#   loopback.sh RCC_MESH per-ep|shared [extra rcc-mesh options]
set -euo pipefail
MESH_BIN=$1
mode=$2
shift 2
. "$(dirname "$0")/lib.sh"

n=4
base=$(free_ports $n) || fail "no free ports"
nodes=$(loopback_nodes $n "$base")
run_mesh_on "$nodes" $n 40 -T tcp -t "$mode" -D 1 -s 1K -q 8 "$@"
expect_all 0 $n "$mode mesh"

t=$MESH_TMP/rank.0.log
# one host: shared memory unless it is turned off (docs/shm.md)
path=shm
[ "${RCC_SHM:-auto}" = 0 ] && path=tcp
grep -q "mesh complete: 3 connections out, 3 in" "$t" || { show_logs; fail "no mesh-complete line"; }
if [[ " $* " == *" --json "* ]]; then
	json=$(grep '^{"tool":"rcc-mesh","nodes":4' "$t") || { show_logs; fail "no JSON from the collector"; }
	for want in '"verified_pairs":12' '"failed_ranks":[]' '"status":0}' '"src":3,"dst":2' \
		'"src":3,"dst":2,"path":"'$path'"' '"verified_pairs":12,"path":"'$path'"'; do
		[[ $json == *"$want"* ]] || { show_logs; fail "collector JSON lacks $want"; }
	done
	for k in 1 2 3; do
		grep -q "^{\"tool\":\"rcc-mesh\",\"rank\":$k,.*\"status\":0}" \
			"$MESH_TMP/rank.$k.log" || { show_logs; fail "rank $k JSON"; }
	done
else
	grep -q "12/12 pairs verified" "$t" || { show_logs; fail "collector table incomplete"; }
	rows=$(grep -cE "^ +[0-3] +[0-3] +$path .* ok\$" "$t")
	[ "$rows" = 12 ] || { show_logs; fail "expected 12 verified pair rows, got $rows"; }
	for k in 1 2 3; do
		grep -q "all verified" "$MESH_TMP/rank.$k.log" || { show_logs; fail "rank $k not verified"; }
	done
fi
note "ok: $mode: 4 ranks, 12 pairs verified, over $path"
