#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The checks catch what they claim to: with one message corrupted, skipped,
# repeated or lost at the end on purpose (--inject), the receiver names the pair, the message and
# (for corruption) the byte, and every rank exits with status 3.
#   verify.sh RCC_MESH
set -euo pipefail
MESH_BIN=$1
. "$(dirname "$0")/lib.sh"

n=3
base=$(free_ports $n) || fail "no free ports"
nodes=$(loopback_nodes $n "$base")
declare -A expect=(
	[corrupt]='write stream message #5: byte 128 of 256 differs'
	[skip]='write stream: 1 message\(s\) lost: expected #5, got #6'
	[dup]='write stream: duplicate of message #4 where #5 was due'
	[tail]='write stream: the last 1 of its messages never arrived'
)
for kind in corrupt skip dup tail; do
	run_mesh_on "$nodes" $n 30 -T tcp -D 0.3 -s 256 -q 4 --inject $kind
	expect_all 3 $n "--inject $kind"
	for k in $(seq 0 $((n - 1))); do
		from=$(((k + n - 1) % n))
		grep -qE "rank $k: DATA ERROR from rank $from \(127.0.0.1:$((base + from))\): ${expect[$kind]}" \
			"$MESH_TMP/rank.$k.log" || { show_logs; fail "$kind: rank $k did not report it"; }
	done
	grep -q "3/6 pairs verified -- FAILED" "$MESH_TMP/rank.0.log" ||
		{ show_logs; fail "$kind: collector table"; }
done
# tiny writes carry no header: the immediate still tells a loss from corruption
run_mesh_on "$nodes" $n 30 -T tcp -D 0.3 -s 8 -q 4 -o write --inject skip
expect_all 3 $n "--inject skip with 8-byte writes"
grep -q "1 message(s) lost" "$MESH_TMP/rank.1.log" || { show_logs; fail "8-byte skip"; }
note "ok: corrupt, skip, dup and a lost tail detected and reported"
