#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# rcc-mesh under the environment rendezvous (docs/launch.md), on loopback:
# rank 0 takes a free port for the rendezvous (RCC_MASTER_PORT=0) and says
# which; the others are started by a plain shell loop with RANK/WORLD_SIZE/
# MASTER_ADDR/MASTER_PORT, as a torchrun-style launcher would. Then the
# hostile cases, each ending in a clear error within its bound:
#   - 8 ranks run a verified mesh (56 pairs)
#   - with a job secret, garbage and a silent connection on the rendezvous
#     port: turned away, the mesh still completes
#   - a wrong job secret: refused, named by both sides
#   - a rank that never arrives: rank 0 names it, the others hear it from rank 0
#   - only garbage and a silent connection arrive: both named in rank 0's error
#   - a rank that joins (a valid hello) and then says nothing: named by rank 0
#     and, through it, by the others, at the timeout
#   - 4 ranks from a shell loop, one killed (kill -9) after it joined and sent
#     its address while another is still on its way: every other rank exits
#     naming the dead one, well before the timeout
#   launch-env.sh RCC_MESH
set -euo pipefail
MESH_BIN=$1
. "$(dirname "$0")/lib.sh"

no_launcher_env

ARGS=(-T tcp -D 1 -s 1K -q 4 -t shared --threads 1)

# rank0 N [env...] -- [rcc-mesh args...]: start rank 0 on a free rendezvous
# port and set PORT to it, from its progress line.
rank0() {
	local n=$1 envs=()
	shift
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	start_rank 0 "$MESH_TMP/rank.0.log" env RCC_RANK=0 RCC_WORLD_SIZE="$n" \
		RCC_MASTER_ADDR=127.0.0.1 RCC_MASTER_PORT=0 "${envs[@]}" "$MESH_BIN" "${ARGS[@]}" "$@"
	wait_line "$MESH_TMP/rank.0.log" "rendezvous listening on 127.0.0.1:[0-9]+$" 20 "${MESH_PIDS[0]}" ||
		{ show_logs; fail "rank 0 did not open its rendezvous"; }
	PORT=$(sed -n 's/.*rendezvous listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$MESH_TMP/rank.0.log")
}

# rank K N [env...] -- [rcc-mesh args...]: torchrun's names this time; HOLD,
# when set, is a command prefix the rank starts under
HOLD=()
rank() {
	local k=$1 n=$2 envs=()
	shift 2
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	start_rank "$k" "$MESH_TMP/rank.$k.log" "${HOLD[@]}" env RANK="$k" WORLD_SIZE="$n" MASTER_ADDR=127.0.0.1 \
		MASTER_PORT="$PORT" "${envs[@]}" "$MESH_BIN" "${ARGS[@]}" "$@"
}

expect() { # expect K WANT SECONDS WHAT: rank K's exit status, bounded
	local rc=0
	wait_exit "${MESH_PIDS[$1]}" "$3" || rc=$?
	[ "$rc" = "$2" ] || { show_logs; fail "$4: rank $1 exited $rc, expected $2"; }
}

has() { # has K REGEX WHAT
	grep -qE "$2" "$MESH_TMP/rank.$1.log" || { show_logs; fail "$3"; }
}

reset() {
	rm -f "$MESH_TMP"/rank.*.log
	MESH_PIDS=()
}

# --- 8 ranks -----------------------------------------------------------------
rank0 8 --
for k in 1 2 3 4 5 6 7; do
	rank $k 8 --
done
for k in 0 1 2 3 4 5 6 7; do
	expect $k 0 60 "8-rank mesh"
done
has 0 "addresses exchanged \(env bootstrap, 8 ranks\)" "rank 0 did not exchange addresses"
has 0 "56/56 pairs verified" "the collector did not verify 56 pairs"
for k in 1 2 3 4 5 6 7; do
	has $k "all verified" "rank $k not verified"
done
note "ok: 8 ranks through the env rendezvous, 56 pairs verified"

# --- a secret, and intruders that are turned away ------------------------------
reset
SECRET=RCC_JOB_SECRET=correct-horse-battery-staple
rank0 3 RCC_LOG=warn "$SECRET" --
exec {silent}<>"/dev/tcp/127.0.0.1/$PORT" # connects and says nothing
# rank 0 drops it after the first 8 bytes, so a later write may meet a reset
printf 'GET / HTTP/1.0\r\n\r\n' 2>/dev/null >"/dev/tcp/127.0.0.1/$PORT" || true
rank 1 3 "$SECRET" --
rank 2 3 "$SECRET" --
for k in 0 1 2; do
	expect $k 0 60 "mesh with a secret and intruders"
done
exec {silent}>&-
has 0 "6/6 pairs verified" "the collector did not verify 6 pairs"
has 0 "rendezvous: 127\.0\.0\.1:[0-9]+: dropped before identifying itself: it sent a malformed frame" \
	"rank 0 did not say it dropped the garbage"
note "ok: with a job secret; garbage and a silent connection did not stop the job"

# --- a wrong secret --------------------------------------------------------------
reset
rank0 2 "$SECRET" -- --connect-timeout 3s
rank 1 2 RCC_JOB_SECRET=not-the-right-secret-at-all --
expect 1 1 20 "a rank with a wrong secret"
has 1 "address exchange \(env bootstrap\) failed: rank 0 gave up: authentication failed \(wrong job secret\)" \
	"the rank with a wrong secret did not say so"
expect 0 4 20 "rank 0 facing a wrong secret"
has 0 "never arrived: rank 1 \(turned away; 127\.0\.0\.1:[0-9]+: dropped: it claimed rank 1 with a wrong job secret\)" \
	"rank 0 did not name the rank with a wrong secret"
note "ok: a wrong job secret is refused and named"

# --- a rank that never arrives ------------------------------------------------------
reset
rank0 3 -- --connect-timeout 2s
rank 1 3 -- --connect-timeout 2s
expect 0 4 20 "rank 0 waiting for a rank that never comes"
has 0 "rendezvous timed out after 2\.0 s: never arrived: rank 2$" "rank 0 did not name rank 2"
expect 1 4 20 "rank 1 waiting for a rank that never comes"
has 1 "rank 0 gave up: rendezvous timed out after 2\.0 s: never arrived: rank 2$" \
	"rank 1 did not hear from rank 0 that rank 2 never arrived"
note "ok: a rank that never arrives is named by every rank"

# --- only garbage and silence arrive ------------------------------------------------
reset
rank0 2 -- --connect-timeout 2s
exec {silent}<>"/dev/tcp/127.0.0.1/$PORT"
printf '\x52\x42\x02\x02\xff\xff\xff\xff' 2>/dev/null >"/dev/tcp/127.0.0.1/$PORT" || true # a hello of 4 GiB
expect 0 4 20 "rank 0 with only intruders"
exec {silent}>&-
has 0 "never arrived: rank 1 \(turned away; 127\.0\.0\.1:[0-9]+: dropped before identifying itself: it sent a malformed frame; 127\.0\.0\.1:[0-9]+: dropped: it connected but did not identify itself in time\)" \
	"rank 0 did not name both intruders"
note "ok: garbage and a silent connection are named, nothing hangs"

# --- a rank that joins and then says nothing --------------------------------------
reset
rank0 3 -- --connect-timeout 2s
rank 1 3 -- --connect-timeout 2s
exec {joined}<>"/dev/tcp/127.0.0.1/$PORT"
# a valid hello (no secret in this job): rank 2 of 3, a nonce, no proof; then nothing
printf '\x52\x42\x02\x02\x00\x00\x00\x48\x00\x00\x00\x02\x00\x00\x00\x03' >&"$joined"
head -c 64 /dev/zero >&"$joined"
expect 0 4 20 "rank 0 with a rank that joined and stays silent"
expect 1 4 20 "rank 1 with a rank that joined and stays silent"
exec {joined}>&-
has 0 "rendezvous timed out after 2\.0 s: joined but sent nothing: rank 2 \(127\.0\.0\.1:[0-9]+\)$" \
	"rank 0 did not name the silent rank 2"
has 1 "rank 0 gave up: rendezvous timed out after 2\.0 s: joined but sent nothing: rank 2 \(127\.0\.0\.1:[0-9]+\)$" \
	"rank 1 did not hear from rank 0 that rank 2 stayed silent"
note "ok: a rank that joined and stays silent is named by every rank at the timeout"

# --- a rank killed in the middle of the exchange --------------------------------------
# 4 ranks from a loop; rank 3 is held (stopped before it runs rcc-mesh) so that
# the exchange is still open when rank 2, which has joined and sent its
# address, is killed. Then rank 3 goes on: it must hear why too.
reset
rank0 4 RCC_LOG=debug -- --connect-timeout 20s
for k in 1 2 3; do
	HOLD=()
	[ $k != 3 ] || HOLD=(bash -c 'kill -STOP $$ && exec "$@"' held-rank)
	rank $k 4 --
done
HOLD=()
stopped() { [ "$(cut -d' ' -f3 "/proc/${MESH_PIDS[3]}/stat" 2>/dev/null)" = T ]; }
end=$((SECONDS + 20))
until stopped; do
	[ $SECONDS -lt $end ] || { show_logs; fail "rank 3 was not held"; }
	sleep 0.05 # polling interval
done
for k in 1 2; do
	wait_line "$MESH_TMP/rank.0.log" "rendezvous: rank $k joined from" 20 ||
		{ show_logs; fail "rank $k did not join"; }
done
t0=$SECONDS
kill -9 "${MESH_PIDS[2]}"
expect 2 137 5 "the killed rank"
wait_line "$MESH_TMP/rank.0.log" "rendezvous: rank 2 \(127\.0\.0\.1:[0-9]+\) closed the connection" 10 ||
	{ show_logs; fail "rank 0 did not notice that rank 2 died"; }
kill -CONT "${MESH_PIDS[3]}"
for k in 0 1 3; do
	expect $k 4 15 "a rank killed in the exchange"
done
[ $((SECONDS - t0)) -lt 15 ] || fail "the ranks took $((SECONDS - t0)) s: the 20 s timeout, not the loss, ended them"
has 0 "address exchange \(env bootstrap\) failed: rank 2 \(127\.0\.0\.1:[0-9]+\) closed the connection$" \
	"rank 0 did not name the killed rank 2"
for k in 1 3; do
	has $k "address exchange \(env bootstrap\) failed: rank 0 gave up: rank 2 \(127\.0\.0\.1:[0-9]+\) closed the connection$" \
		"rank $k did not hear from rank 0 that rank 2 died"
done
note "ok: a rank killed in the exchange is named by every other rank in $((SECONDS - t0)) s, before the timeout"
