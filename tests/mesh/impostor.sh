#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A connection that claims a rank cannot take it without the job secret: a
# 3-rank job under the env rendezvous with RCC_JOB_SECRET, every rank started
# with --inject impostor, so before its own connection to rank+1 each first
# sends two that claim its rank with hellos lacking the run's tag (none, and
# one under another key) -- what anyone who knows the node list can send.
# Every rank must turn both away, saying why, and still take the real rank's
# connection: the job completes with all 6 pairs verified. Without a secret
# (as before hellos had tags) the first impostor takes the rank and the run
# fails: the check is what stops it.
#   impostor.sh RCC_MESH
set -euo pipefail
MESH_BIN=$1
. "$(dirname "$0")/lib.sh"

no_launcher_env

ARGS=(-T tcp -D 1 -s 1K -q 4 -t shared --threads 1 --connect-timeout 10s --timeout 5s)

# job N SECRET RANKS_WITH_INJECT...: ranks 0..N-1 through the env rendezvous
# (SECRET may be empty), the listed ranks with --inject impostor
job() {
	local n=$1 secret=$2 k port
	shift 2
	rm -f "$MESH_TMP"/rank.*.log
	MESH_PIDS=()
	local inject=" $* "
	for k in $(seq 0 $((n - 1))); do
		local extra=()
		[[ $inject == *" $k "* ]] && extra=(--inject impostor)
		local envs=(RCC_RANK="$k" RCC_WORLD_SIZE="$n" RCC_MASTER_ADDR=127.0.0.1
			RCC_MASTER_PORT="${port:-0}")
		[ -n "$secret" ] && envs+=(RCC_JOB_SECRET="$secret")
		start_rank "$k" "$MESH_TMP/rank.$k.log" env "${envs[@]}" "$MESH_BIN" "${ARGS[@]}" \
			"${extra[@]}"
		if [ "$k" = 0 ]; then
			wait_line "$MESH_TMP/rank.0.log" "rendezvous listening on 127.0.0.1:[0-9]+$" 20 \
				"${MESH_PIDS[0]}" || { show_logs; fail "rank 0 did not open its rendezvous"; }
			port=$(sed -n 's/.*rendezvous listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' \
				"$MESH_TMP/rank.0.log")
		fi
	done
	MESH_STATUS=()
	for k in $(seq 0 $((n - 1))); do
		local rc=0
		wait_exit "${MESH_PIDS[$k]}" 60 || rc=$?
		MESH_STATUS[k]=$rc
	done
}

count() { # count K REGEX: lines of rank K's log matching REGEX
	grep -cE -- "$2" "$MESH_TMP/rank.$1.log" || true
}

# --- with a secret: every impostor turned away, every pair verified ------------
job 3 correct-horse-battery-staple 0 1 2
expect_all 0 3 "impostors at every rank, with a job secret"
[ "$(count 0 '6/6 pairs verified')" = 1 ] || { show_logs; fail "the collector did not verify 6 pairs"; }
for k in 0 1 2; do
	next=$(((k + 1) % 3)) prev=$(((k + 2) % 3))
	for what in "no tag" "a tag under another key"; do
		[ "$(count $k "inject impostor: rank $next turned away a hello with $what$")" = 1 ] ||
			{ show_logs; fail "rank $k: rank $next did not turn away the hello with $what"; }
	done
	# said as the other refusals are: who, which rank it claimed, and why
	[ "$(count $k "turned away 127\.0\.0\.1:[0-9]+ \(says it is rank $prev and wants rank $k\): its hello does not carry the job secret's tag")" = 2 ] ||
		{ show_logs; fail "rank $k did not say twice why it turned rank $prev's impostors away"; }
	[ "$(count $k "took a connection|second connection")" = 0 ] ||
		{ show_logs; fail "rank $k: an impostor took a rank"; }
done
note "ok: with a job secret, hellos without its tag are turned away and the real ranks served"

# --- without a secret: nothing tells an impostor from the rank ----------------
job 3 "" 0
[ "${MESH_STATUS[0]}" != 0 ] || { show_logs; fail "without a secret, the impostor's run passed"; }
[ "$(count 0 "inject impostor: rank 1 took a connection whose hello has no tag$")" = 1 ] ||
	{ show_logs; fail "without a secret, rank 1 did not take the impostor's connection"; }
[ "$(count 0 "hellos carry a tag")" = 0 ] || { show_logs; fail "rank 0 says its hellos are tagged"; }
note "ok: without a job secret, an impostor that comes first takes the rank (documented)"
