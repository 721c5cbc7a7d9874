#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Bad input never crashes or hangs: usage errors exit 2 with a message, a
# peer that never comes up fails setup within --connect-timeout (status 4,
# naming it), and a mismatched peer is turned away (both sides say why).
#   usage.sh RCC_MESH
set -euo pipefail
MESH_BIN=$1
. "$(dirname "$0")/lib.sh"

# into a file first: grep -q stops reading at its match, and the rest of the
# help (line-buffered) would then die of SIGPIPE, failing the pipeline
"$MESH_BIN" --help >"$MESH_TMP/help" || fail "--help failed"
grep -q "^Exit status:" "$MESH_TMP/help" || fail "--help lacks the exit status"
bad() {
	local rc=0
	timeout 10 "$MESH_BIN" "$@" >"$MESH_TMP/out" 2>&1 || rc=$?
	[ $rc = 2 ] || { cat "$MESH_TMP/out" >&2; fail "'$*' exited $rc, expected 2"; }
	grep -q "rcc-mesh: " "$MESH_TMP/out" || fail "'$*' gave no message"
}
bad
bad --rank 0
bad --nodes 127.0.0.1:1 --rank 0
bad --nodes 127.0.0.1:1,127.0.0.1:2 --rank 2
bad --nodes 127.0.0.1:1,127.0.0.1:1 --rank 0
bad --nodes 127.0.0.1,127.0.0.1:2 --rank 0
bad --nodes 127.0.0.1:99999,127.0.0.1:2 --rank 0
bad --nodes 127.0.0.1:1,127.0.0.1:2 --rank 0 -s 0
bad --nodes 127.0.0.1:1,127.0.0.1:2 --rank 0 -q 0
bad --nodes 127.0.0.1:1,127.0.0.1:2 --rank 0 -o read
bad --nodes 127.0.0.1:1,127.0.0.1:2 --rank 0 -D -1
bad --nodes 127.0.0.1:1,127.0.0.1:2 --rank 0 extra
bad --hostfile /nonexistent --rank 0
printf '# two nodes\n127.0.0.1:1\n\n  127.0.0.1:2  # second\n127.0.0.1:x\n' >"$MESH_TMP/hosts"
bad --hostfile "$MESH_TMP/hosts" --rank 0
grep -q "hosts:5:" "$MESH_TMP/out" || fail "hostfile error does not name the line"

# a peer that never starts: setup gives up in time and names it
base=$(free_ports 2) || fail "no free ports"
nodes=$(loopback_nodes 2 "$base")
start_rank 0 "$MESH_TMP/rank.0.log" "$MESH_BIN" --nodes "$nodes" --rank 0 -T tcp \
	--connect-timeout 1500
rc=0
wait_exit "${MESH_PIDS[0]}" 15 || rc=$?
[ $rc = 4 ] || { show_logs; fail "lonely rank exited $rc, expected 4"; }
grep -q "rank 1 (127.0.0.1:$((base + 1))) failed: cannot connect" "$MESH_TMP/rank.0.log" ||
	{ show_logs; fail "lonely rank did not name the missing peer"; }

# mismatched options: the server turns the client away, both say why
start_rank 0 "$MESH_TMP/rank.0.log" "$MESH_BIN" --nodes "$nodes" --rank 0 -T tcp -s 512 \
	--connect-timeout 5000
start_rank 1 "$MESH_TMP/rank.1.log" "$MESH_BIN" --nodes "$nodes" --rank 1 -T tcp -s 1024 \
	--connect-timeout 5000
for k in 0 1; do
	rc=0
	wait_exit "${MESH_PIDS[$k]}" 20 || rc=$?
	[ $rc = 4 ] || { show_logs; fail "mismatched rank $k exited $rc, expected 4"; }
done
grep -q "turned away rank" "$MESH_TMP/rank.0.log" "$MESH_TMP/rank.1.log" ||
	{ show_logs; fail "nobody said why the connection was refused"; }
note "ok: usage errors, a missing peer and a mismatched peer"
