#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# --srq: 4 ranks on loopback over tcp whose incoming connections share one
# SRQ of the session server. Every pair still moves verified data both ways,
# and the collector reports the receive buffers per incoming connection: a
# third (3 incoming connections) of what a queue of its own holds, in the
# table and in the JSON.
#   srq.sh RCC_MESH
set -euo pipefail
MESH_BIN=$1
shift
. "$(dirname "$0")/lib.sh"

n=4
# -s 1K -q 8, write and send: 8 + 8 + 8 (control) receives of 1024 B, 24 KiB a
# connection on its own; with --srq one queue of 24 receives for 3 connections
own="24 receives of 1024 B each"
shared="8.0 KiB per incoming connection (--srq: one shared receive queue of 24 x 1024 B for 3 connections)"

base=$(free_ports $n) || fail "no free ports"
run_mesh_on "$(loopback_nodes $n "$base")" $n 40 -T tcp -t per-ep -D 1 -s 1K -q 8
expect_all 0 $n "mesh without --srq"
grep -qF "receive buffers: 24.0 KiB per incoming connection ($own" "$MESH_TMP/rank.0.log" ||
	{ show_logs; fail "no receive-buffer line without --srq"; }

for mode in per-ep shared; do
	base=$(free_ports $n) || fail "no free ports"
	run_mesh_on "$(loopback_nodes $n "$base")" $n 40 -T tcp -t "$mode" -D 1 -s 1K -q 8 --srq
	expect_all 0 $n "$mode mesh with --srq"
	t=$MESH_TMP/rank.0.log
	grep -q "12/12 pairs verified" "$t" || { show_logs; fail "$mode --srq: table incomplete"; }
	grep -q "one SRQ" "$t" || { show_logs; fail "$mode --srq: the server has no SRQ"; }
	grep -qF "receive buffers: $shared" "$t" ||
		{ show_logs; fail "$mode --srq: no shared receive-buffer line"; }
done

base=$(free_ports $n) || fail "no free ports"
run_mesh_on "$(loopback_nodes $n "$base")" $n 40 -T tcp -t shared -D 1 -s 1K -q 8 --srq --json
expect_all 0 $n "JSON mesh with --srq"
json=$(grep '^{"tool":"rcc-mesh","nodes":4' "$MESH_TMP/rank.0.log") ||
	{ show_logs; fail "no JSON from the collector"; }
for want in '"verified_pairs":12' '"recv_kib_per_connection":8.0,"srq_depth":24}' '"status":0}'; do
	[[ $json == *"$want"* ]] || { show_logs; fail "collector JSON lacks $want"; }
done
note "ok: --srq: 12 pairs verified in both thread modes, 8 KiB of receives per connection instead of 24"
