#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Text other ranks send is printed escaped: in a 3-rank job under the env
# rendezvous, rank 2 (tests/mesh/bad_rank.c) publishes an "address" with an ESC
# sequence and a newline that would forge a line of its own. Ranks 0 and 1 must
# refuse it as an address (split_host_port takes no control characters), exit
# with the peer status (4) within their bound, and print it as \x1b...\x0a: no
# raw ESC, no line starting with the forged text.
#   peer-text.sh RCC_MESH MESH_BAD_RANK
set -euo pipefail
MESH_BIN=$1
BAD=$2
. "$(dirname "$0")/lib.sh"

no_launcher_env

ARGS=(-T tcp -D 1 -s 1K -q 4 -t shared --threads 1 --connect-timeout 10s)
start_rank 0 "$MESH_TMP/rank.0.log" env RCC_RANK=0 RCC_WORLD_SIZE=3 RCC_MASTER_ADDR=127.0.0.1 \
	RCC_MASTER_PORT=0 "$MESH_BIN" "${ARGS[@]}"
wait_line "$MESH_TMP/rank.0.log" "rendezvous listening on 127.0.0.1:[0-9]+$" 20 ||
	{ show_logs; fail "rank 0 did not open its rendezvous"; }
PORT=$(sed -n 's/.*rendezvous listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$MESH_TMP/rank.0.log")
start_rank 1 "$MESH_TMP/rank.1.log" env RANK=1 WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 \
	MASTER_PORT="$PORT" "$MESH_BIN" "${ARGS[@]}"
evil=$(printf 'x\033[2J\nforged rank 9 all verified:1')
start_rank 2 "$MESH_TMP/rank.2.log" env RANK=2 WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 \
	MASTER_PORT="$PORT" "$BAD" "$evil"
for k in 0 1; do
	rc=0
	wait_exit "${MESH_PIDS[$k]}" 40 || rc=$?
	[ "$rc" = 4 ] || { show_logs; fail "rank $k exited $rc, expected 4 (a peer's fault)"; }
done
rc=0
wait_exit "${MESH_PIDS[2]}" 40 || rc=$?
[ "$rc" = 0 ] || { show_logs; fail "the bad rank exited $rc: it did not publish"; }
for k in 0 1; do
	log=$MESH_TMP/rank.$k.log
	grep -qF 'rank 2 published an address we cannot use' "$log" ||
		{ show_logs; fail "rank $k did not refuse rank 2's address"; }
	grep -qF "'x\\x1b[2J\\x0aforged rank 9 all verified:1'" "$log" ||
		{ show_logs; fail "rank $k did not print rank 2's text escaped"; }
	! grep -q $'\033' "$log" || { show_logs; fail "rank $k printed a raw ESC"; }
	! grep -q '^forged' "$log" || { show_logs; fail "rank $k printed a forged line"; }
done
note "ok: an address with ESC and a newline is refused and printed escaped by every rank"
