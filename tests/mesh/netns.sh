#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# 8 ranks, each in its own network namespace with one veth leg on a bridge
# (the bridge in a namespace of its own, so the host's stack is untouched),
# over tcp: the mesh completes across real (virtual) links and every pair is
# verified. The test creates and removes everything; names carry the PID so
# parallel runs do not clash. Skips (status 77) unless root with ip netns.
#   netns.sh RCC_MESH [per-ep|shared]
set -euo pipefail
MESH_BIN=$1
mode=${2:-per-ep}
. "$(dirname "$0")/lib.sh"

skip() { note "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root for ip netns"
command -v ip >/dev/null || skip "iproute2 (ip) is not installed"

n=8
tag=rccm$$
br=${tag}br
subnet=10.199.$(($$ % 250)).
port=7471

nsdel() { ip netns del "$1" 2>/dev/null || true; }
ip netns add "$br" 2>/dev/null || skip "ip netns add failed (no namespace support here?)"
MESH_CLEANUPS+=("nsdel $br")
ip -n "$br" link add br0 type bridge 2>/dev/null || skip "cannot create a bridge (no bridge module?)"
ip -n "$br" link set br0 up
nodes=
for i in $(seq 0 $((n - 1))); do
	ns=$tag$i
	ip netns add "$ns" || fail "ip netns add $ns"
	MESH_CLEANUPS+=("nsdel $ns")
	# the node's leg is eth0 in its namespace; the bridge's leg is v$i in the bridge's
	ip -n "$ns" link add eth0 type veth peer name "v$i" netns "$br" || fail "veth for $ns"
	ip -n "$br" link set "v$i" master br0 up
	ip -n "$ns" addr add "$subnet$((i + 1))/24" dev eth0
	ip -n "$ns" link set eth0 up
	ip -n "$ns" link set lo up
	nodes+="${nodes:+,}$subnet$((i + 1)):$port"
done

for k in $(seq 0 $((n - 1))); do
	start_rank "$k" "$MESH_TMP/rank.$k.log" ip netns exec "$tag$k" "$MESH_BIN" --nodes "$nodes" \
		--rank "$k" -T tcp -t "$mode" -D 1 -s 2K -q 8 --connect-timeout 30000
done
MESH_STATUS=()
for k in $(seq 0 $((n - 1))); do
	rc=0
	wait_exit "${MESH_PIDS[$k]}" 60 || rc=$?
	MESH_STATUS[$k]=$rc
done
expect_all 0 $n "namespace mesh"
t=$MESH_TMP/rank.0.log
grep -q "56/56 pairs verified" "$t" || { show_logs; fail "collector table incomplete"; }
grep -q "listening on ${subnet}1:$port" "$t" || { show_logs; fail "rank 0 did not listen on its namespace address"; }
# one kernel, eight network namespaces: never shared memory (docs/shm.md)
grep -qE '^ +mesh +56 +tcp ' "$t" || { show_logs; fail "the pairs did not all take the tcp path"; }
note "ok: 8 ranks in 8 namespaces over a bridge: 56 pairs verified, all over tcp"
