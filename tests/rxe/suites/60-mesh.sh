#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# rcc-mesh on verbs (Soft-RoCE): 3 ranks as processes in the VM, all on
# RXE_IP with distinct ports. Both thread modes, both bring-ups, --srq, a rank killed
# mid-run, an injected corruption that the receivers must catch, and with a job
# secret (env rendezvous) hellos without its tag turned away.
# Runs inside the VM from the repo root (see tests/rxe/run-suites.sh).
# Threads sleep on completions (cq wait), so nothing busy-polls a vCPU.
if [ -f tests/rxe/lib.sh ]; then
	source tests/rxe/lib.sh
else # stand-alone fallbacks of the few helpers used here
	CHECKS_RUN=0 CHECKS_FAILED=0
	log() { printf '[%s] %s\n' "${SUITE:-60-mesh}" "$*"; }
	check() {
		CHECKS_RUN=$((CHECKS_RUN + 1))
		if [ "$2" -eq 0 ]; then printf '  ok    %-44s %s\n' "$1" "${3:-}"; else
			CHECKS_FAILED=$((CHECKS_FAILED + 1))
			printf '  FAIL  %-44s status %s %s\n' "$1" "$2" "${3:-}"
		fi
	}
	suite_result() { [ "$CHECKS_RUN" -gt 0 ] && [ "$CHECKS_FAILED" -eq 0 ]; }
fi
: "${RCC_BUILD:?}" "${RXE_IP:?}"
logdir=${RXE_LOGDIR:-/tmp/rxe-logs/60-mesh}
mkdir -p "$logdir"
mesh=$RCC_BUILD/tools/rcc-mesh/rcc-mesh
[ -x "$mesh" ] || { log "no $mesh (build the tools)"; exit 1; }

n=3
port=7700
pids=()

# mesh NAME DEVICE_OPTS... : start 3 ranks on fresh ports, logs NAME.K
start_mesh() {
	local name=$1 k nodes=
	shift
	port=$((port + 10))
	for k in $(seq 0 $((n - 1))); do
		nodes+="${nodes:+,}$RXE_IP:$((port + k))"
	done
	pids=()
	for k in $(seq 0 $((n - 1))); do
		# no 'timeout' wrapper: the PID must be rcc-mesh's own, for kill -9
		"$mesh" --nodes "$nodes" --rank "$k" -T verbs -d "${RXE_DEV:-rxe0}" \
			-g "${RXE_GID_IDX:-1}" --connect-timeout 30000 "$@" >"$logdir/$name.$k" 2>&1 &
		pids+=($!)
	done
}

# wait_bounded PID SECONDS: its exit status; 124 after killing it at the bound
wait_bounded() {
	local pid=$1 end=$((SECONDS + $2))
	while kill -0 "$pid" 2>/dev/null; do
		if [ $SECONDS -ge $end ]; then
			kill -9 "$pid" 2>/dev/null
			wait "$pid" 2>/dev/null
			return 124
		fi
		sleep 0.05 # polling interval
	done
	wait "$pid"
}

# wait_all PIDS...: their statuses, space-separated, in WAIT_ST (each bounded)
wait_all() {
	local st=() p rc
	for p in "$@"; do
		rc=0
		wait_bounded "$p" 120 || rc=$?
		st+=("$rc")
	done
	WAIT_ST="${st[*]}"
}

dump() {
	local f
	for f in "$logdir/$1".*; do
		echo "--- $f"
		cat "$f"
	done
}

# run_ok NAME OPTS...: a whole mesh that must pass and be verified
run_ok() {
	local name=$1 t0=$EPOCHREALTIME st
	shift
	start_mesh "$name" "$@"
	wait_all "${pids[@]}"
	st=$WAIT_ST
	local dt res
	dt=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.1f", b-a}')
	res=$(awk '$1 == "mesh" {print $3 " " $4 " MB/s, " $5 " msg/s"}' "$logdir/$name.0")
	if [ "$st" != "0 0 0" ] || ! grep -q "6/6 pairs verified" "$logdir/$name.0"; then
		dump "$name"
		check "$name" 1 "statuses $st"
		return
	fi
	check "$name" 0 "${res:+$res, }$dt s"
}

log "3 ranks on $RXE_IP over ${RXE_DEV:-rxe0}"
run_ok "per-ep cm, write+send 4K" -t per-ep -D 2 -s 4K -q 8
run_ok "shared cm, write+send 4K" -t shared --threads 1 -D 2 -s 4K -q 8
# Manual bring-up with several clients per listener: the listener is asked
# with timeout 0 while a client's HELLO may still be on its way.
run_ok "per-ep manual bring-up, 64 B" -t per-ep -B manual -D 1 -s 64 -q 8
run_ok "shared, multi-MTU 64K writes" -t shared -D 1 -s 64K -q 4 -o write
# the served connections share one SRQ of the session server (verbs SRQ)
run_ok "per-ep --srq, write+send 4K" -t per-ep -D 2 -s 4K -q 8 --srq

# an injected corruption: every receiver names the pair and the byte
start_mesh inject -D 1 -s 1K -q 4 --inject corrupt
wait_all "${pids[@]}"
st=$WAIT_ST
ok=1
[ "$st" = "3 3 3" ] || ok=0
for k in 0 1 2; do
	grep -q "DATA ERROR from rank $(((k + 2) % 3)) .*byte 512 of 1024 differs" "$logdir/inject.$k" || ok=0
done
[ $ok = 1 ] || dump inject
check "injected corruption caught by all" $((1 - ok)) "statuses $st"

# with a job secret, through the env rendezvous: every hello carries the run's
# tag in its connect private data, and the hellos each rank first sends
# without it (--inject impostor) are turned away on verbs too
secret=RCC_JOB_SECRET=a-job-secret-for-the-vm-test
launched() { # K PORT: rank K of 3, the rendezvous at RXE_IP:PORT
	env RCC_RANK="$1" RCC_WORLD_SIZE=$n RCC_MASTER_ADDR="$RXE_IP" RCC_MASTER_PORT="$2" "$secret" \
		"$mesh" -T verbs -d "${RXE_DEV:-rxe0}" -g "${RXE_GID_IDX:-1}" --bind "$RXE_IP" \
		--connect-timeout 30000 -D 1 -s 1K -q 4 --inject impostor >"$logdir/secret.$1" 2>&1 &
	pids+=($!)
}
pids=()
launched 0 0
ok=1
for _ in $(seq 1500); do # poll for rank 0's rendezvous port (no sleeps)
	grep -q "rendezvous listening on $RXE_IP:[0-9]*$" "$logdir/secret.0" && break
	kill -0 "${pids[0]}" 2>/dev/null || break
	sleep 0.02
done
rdv=$(sed -n "s/.*rendezvous listening on $RXE_IP:\([0-9]*\)$/\1/p" "$logdir/secret.0")
[ -n "$rdv" ] || ok=0
[ $ok = 0 ] || { launched 1 "$rdv"; launched 2 "$rdv"; }
wait_all "${pids[@]}"
st=$WAIT_ST
[ "$st" = "0 0 0" ] && grep -q "6/6 pairs verified" "$logdir/secret.0" || ok=0
for k in 0 1 2; do
	[ "$(grep -c "turned away .*(says it is rank $(((k + 2) % 3)) and wants rank $k): its hello does not carry the job secret's tag" "$logdir/secret.$k")" = 2 ] || ok=0
done
[ $ok = 1 ] || dump secret
check "job secret: untagged hellos turned away" $((1 - ok)) "statuses $st"

# kill -9 a rank mid-traffic: the survivors name it and exit 4 in bounded time
# The kill must land inside the traffic phase even when the VM is slow, so the
# phase is long; survivors report the death at once and finish their traffic
# with the others, so they end within the phase plus a margin.
kill_phase=12
start_mesh kill -D $kill_phase -s 4K -q 8 --timeout 5000
ok=1
for k in 0 1 2; do
	# poll for readiness (no sleeps): every rank has started its traffic phase
	for _ in $(seq 1500); do
		grep -q "traffic started" "$logdir/kill.$k" && break
		kill -0 "${pids[$k]}" 2>/dev/null || break
		sleep 0.02
	done
	grep -q "traffic started" "$logdir/kill.$k" || ok=0
done
t0=$EPOCHREALTIME
kill -9 "${pids[2]}" 2>/dev/null
wait "${pids[2]}" 2>/dev/null
wait_all "${pids[0]}" "${pids[1]}"
st=($WAIT_ST)
dt=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.1f", b-a}')
[ "${st[*]}" = "4 4" ] || ok=0
for k in 0 1; do
	grep -q "rank 2 ($RXE_IP:$((port + 2))) failed" "$logdir/kill.$k" || ok=0
done
awk -v d="$dt" -v p="$kill_phase" 'BEGIN{exit !(d <= p + 15)}' || ok=0
[ $ok = 1 ] || dump kill
check "kill -9 rank 2: survivors exit 4 naming it" $((1 - ok)) "statuses ${st[*]}, ${dt} s"

suite_result
