#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# perf-rxe-vm.sh -- the part of bench/perf-rxe.sh that runs INSIDE the Soft-RoCE VM
# (from the repo root): rcc-perf on the verbs transport and perftest side by side,
# test by test, at 2 B and 64 KiB (atomics: 8 B; datagrams, -c UD: 2 B and 1 KiB,
# the port's MTU), and appends every figure to $PERF_OUT/raw.tsv as
# "rep tool test size metric value".
#   env: PERF_RCC (rcc-perf binary), PERF_OUT (folder, shared with the host),
#        PERF_REPS [3], PERF_QUICK [0], PERF_ONLY (groups to measure: lat atomic
#        bw ud [all]; count, never by default: see below), PERF_OVH (bench_overhead,
#        for count); RXE_IP and RXE_GID_IDX from the VM.
# Both tools: server pinned to vCPU 0, client to vCPU 1, TCP bring-up (perftest's
# default socket exchange; rcc-perf --bringup manual) so readiness is polled with
# `ss -ltn`; every process under `timeout`. perftest times with the TSC, which it
# must first calibrate against gettimeofday; under TCG that sometimes fails
# ("Correlation coefficient r^2 < 0.9", then figures of 0, inf or nonsense):
# such a run is repeated (at most 3 times) and never counted.
# count: every latency test once more at PERF_COUNT_N1 and _N2 iterations with
# both tools under valgrind --tool=callgrind (the passive READ/FADD target runs
# natively: it makes no call per iteration in either tool), and bench_overhead's
# empty polls at the same two counts for the price of one; the callgrind files go
# to $PERF_OUT/cg/, and bench/perf-rxe.sh does the arithmetic (bench/count-rxe.py).
set -u -o pipefail

RCC=${PERF_RCC:?PERF_RCC: the rcc-perf binary}
OUT=${PERF_OUT:?PERF_OUT: the output folder}
REPS=${PERF_REPS:-3}
QUICK=${PERF_QUICK:-0}
ONLY=${PERF_ONLY:-lat atomic bw ud}
IP=${RXE_IP:?run inside the VM}
GID=${RXE_GID_IDX:-1}
PORT=18515
T_RUN=180
LISTEN_TRIES=1500 # x 20 ms for a server's port
WORK=$(mktemp -d /tmp/perf-rxe.XXXXXX)
RAW=$OUT/raw.tsv
FAILS=$OUT/fails.txt
mkdir -p "$OUT"
: >"$RAW"
: >"$FAILS"
trap 'rm -rf "$WORK"' EXIT

log() { printf '[vm %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
fail() { echo "$*" >>"$FAILS"; log "FAIL: $*"; }
rec() { # tool test size metric value
	[[ -n "${5:-}" ]] || { fail "$1 $2 $3 $4: no value"; return; }
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$REP" "$1" "$2" "$3" "$4" "$5" >>"$RAW"
}
# wanted GROUP: is GROUP among PERF_ONLY's
wanted() { [[ " $ONLY " == *" $1 "* ]]; }
listening() { ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; }

# pair "SERVER CMD" "CLIENT CMD": pinned server, wait for its port, pinned client.
# Client output in $WORK/cli.log. Status: the client's, else the server's.
pair() {
	local srv=$1 cli=$2 sp i st sst
	for ((i = 0; i < 250; i++)); do listening $PORT || break; sleep 0.02; done
	# shellcheck disable=SC2086
	timeout -k 5 $T_RUN taskset -c 0 $srv >"$WORK/srv.log" 2>&1 &
	sp=$!
	for ((i = 0; i < LISTEN_TRIES; i++)); do
		listening $PORT && break
		kill -0 $sp 2>/dev/null || break
		sleep 0.02
	done
	if ! listening $PORT; then
		kill $sp 2>/dev/null
		wait $sp 2>/dev/null
		echo "server never listened: $(tail -c 300 "$WORK/srv.log" | tr '\n' ' ')" >"$WORK/cli.log"
		return 90
	fi
	# shellcheck disable=SC2086
	timeout -k 5 $T_RUN taskset -c 1 $cli >"$WORK/cli.log" 2>&1
	st=$?
	wait $sp
	sst=$?
	[ $st -ne 0 ] && return $st
	return $sst
}
why() { tail -n 3 "$WORK/cli.log" | tr '\n' ' ' | cut -c1-300; }

# rcc-perf KIND TEST SIZE ITERS [LABEL [CLIENT EXTRA]]
run_rcc() {
	local kind=$1 t=$2 s=$3 n=$4 label=${5:-$2} extra=${6:-} csv=$WORK/rcc.csv
	local common="-T verbs --bringup manual -x $GID -p $PORT"
	if pair "$RCC $common --quiet --accept-timeout 60" \
		"$RCC $common $IP --quiet --$kind --test $t -s $s -n $n $extra --csv $csv"; then
		awk -F, -v t="$t" -v k="$kind" -v s="$s" '
			NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
			$1 == t && $2 == k && $3 == s {
				if (k == "lat") printf "%s %s\n", $c["t_typical_us"], $c["t_avg_us"]
				else printf "%s %s\n", $c["bw_avg_MBps"], $c["msg_rate_Mpps"] }' "$csv" \
			>"$WORK/fig"
		read -r a b <"$WORK/fig"
		if [ "$kind" = lat ]; then
			rec rcc-perf "${label}_lat" "$s" t_typical_us "${a:-}"
			rec rcc-perf "${label}_lat" "$s" t_avg_us "${b:-}"
		else
			rec rcc-perf "${label}_bw" "$s" bw_avg_MBps "${a:-}"
			rec rcc-perf "${label}_bw" "$s" msg_rate_Mpps "${b:-}"
		fi
	else
		fail "rcc-perf $kind $t $s $extra: $(why)"
	fi
}

# perftest BINARY KIND LABEL SIZE ITERS [EXTRA...]
run_perftest() {
	local bin=$1 kind=$2 label=$3 s=$4 n=$5 try a b fig
	shift 5
	local args="-F -x $GID -p $PORT -s $s -n $n $*"
	for try in 1 2 3; do
		if ! pair "$bin $args" "$bin $args $IP"; then
			fail "$bin -s $s: $(why)"
			return
		fi
		# lat: #bytes #iters t_min t_max t_typical t_avg ...; bw: #bytes #iters peak avg rate
		if [ "$kind" = lat ]; then
			fig=$(awk -v s="$s" '$1 == s && NF >= 9 { print $5, $6 }' "$WORK/cli.log")
		else
			fig=$(awk -v s="$s" '$1 == s && NF >= 5 { print $4, $5 }' "$WORK/cli.log")
		fi
		read -r a b <<<"$fig"
		# a calibration failure shows as a warning and as 0 / inf / nan figures
		if ! grep -q "Correlation coefficient" "$WORK/cli.log" &&
			awk -v a="${a:-0}" 'BEGIN { exit !(a + 0 > 0 && a + 0 < 1e12) }'; then
			if [ "$kind" = lat ]; then
				rec perftest "$label" "$s" t_typical_us "$a"
				rec perftest "$label" "$s" t_avg_us "$b"
			else
				rec perftest "$label" "$s" bw_avg_MBps "$a"
				rec perftest "$label" "$s" msg_rate_Mpps "$b"
			fi
			return
		fi
		log "$bin -s $s: perftest could not calibrate its clock (try $try), again"
	done
	fail "$bin -s $s: no calibrated perftest run in 3 tries"
}

# one test at one size, the two tools in alternating order
point() { # kind test perftest-binary size iters [perftest extra]
	local kind=$1 t=$2 bin=$3 s=$4 n=$5
	shift 5
	if ((REP % 2)); then
		run_rcc "$kind" "$t" "$s" "$n"
		run_perftest "$bin" "$kind" "${t}_$kind" "$s" "$n" "$@"
	else
		run_perftest "$bin" "$kind" "${t}_$kind" "$s" "$n" "$@"
		run_rcc "$kind" "$t" "$s" "$n"
	fi
}

# datagrams: send over UD endpoints, rcc-perf -c UD beside ib_send_{lat,bw} -c UD
point_ud() { # kind size iters
	local kind=$1 s=$2 n=$3
	if ((REP % 2)); then
		run_rcc "$kind" send "$s" "$n" send_ud "-c UD"
		run_perftest "ib_send_$kind" "$kind" "send_ud_$kind" "$s" "$n" -c UD
	else
		run_perftest "ib_send_$kind" "$kind" "send_ud_$kind" "$s" "$n" -c UD
		run_rcc "$kind" send "$s" "$n" send_ud "-c UD"
	fi
}

[ -x "$RCC" ] || { echo "no rcc-perf at $RCC" >&2; exit 2; }
for g in $ONLY; do
	case $g in lat | atomic | bw | ud | count) ;; *) echo "PERF_ONLY: unknown group '$g'" >&2; exit 2 ;; esac
done
for b in ib_send_lat ib_send_bw ib_write_lat ib_read_lat ib_atomic_lat ib_write_bw ib_read_bw; do
	command -v $b >/dev/null || { echo "missing $b in the VM" >&2; exit 2; }
done
lat_n=1000 bw_small=5000 bw_big=2000
[ "$QUICK" = 1 ] && lat_n=200 bw_small=1000 bw_big=200
T0=$SECONDS

# count_point TEST SIZE PERFTEST [EXTRA]: both tools at both counts under callgrind.
# A run that fails is noted and its file removed: the host then says "no data".
count_point() {
	local t=$1 s=$2 bin=$3 extra=${4:-} n tool f srv cli
	local common="-T verbs --bringup manual -x $GID -p $PORT"
	local pt="-F -x $GID -p $PORT -s $s $extra"
	for n in $CN1 $CN2; do
		for tool in rcc-perf perftest; do
			f=$CGDIR/$tool.$t.$s.$n
			if [ $tool = rcc-perf ]; then
				srv="$RCC $common --quiet --accept-timeout 120"
				cli="$RCC $common $IP --quiet --lat --test $t -s $s -n $n --csv $WORK/rcc.csv"
			else
				srv="$bin $pt -n $n"
				cli="$bin $pt -n $n $IP"
			fi
			# the target of a READ or FADD is passive in both tools: not counted
			case $t in send | write) srv="$CG --callgrind-out-file=$f.srv $srv" ;; esac
			if ! pair "$srv" "$CG --callgrind-out-file=$f.cli $cli"; then
				fail "count: $tool $t $s B, $n iterations: $(why)"
				rm -f "$f.cli" "$f.srv"
			fi
		done
	done
}

if wanted count; then
	command -v valgrind >/dev/null || { echo "count: no valgrind in the VM" >&2; exit 2; }
	[ -x "${PERF_OVH:-}" ] || { echo "count: no bench_overhead at '${PERF_OVH:-}'" >&2; exit 2; }
	CN1=${PERF_COUNT_N1:-1000} CN2=${PERF_COUNT_N2:-2000}
	CGDIR=$OUT/cg
	CG="valgrind --tool=callgrind --fair-sched=yes"
	rm -rf "$CGDIR"
	mkdir -p "$CGDIR"
	T_RUN=300 LISTEN_TRIES=6000 # valgrind under TCG: ~20 s to a listening server
	for n in $CN1 $CN2; do
		log "count: empty polls, $n"
		# shellcheck disable=SC2086 # $CG is a command and its options
		RCC_TEST_ADDR=$IP timeout -k 5 $T_RUN $CG --callgrind-out-file="$CGDIR/empty.$n" \
			"$PERF_OVH" empty "$n" verbs >"$WORK/ovh.log" 2>&1 ||
			fail "count: bench_overhead empty $n: $(tail -n 3 "$WORK/ovh.log" | tr '\n' ' ')"
	done
	for s in 2 65536; do
		log "count: send, write, read at $s B"
		count_point send "$s" ib_send_lat
		count_point write "$s" ib_write_lat
		count_point read "$s" ib_read_lat
	done
	log "count: fadd"
	count_point fadd 8 ib_atomic_lat "-A FETCH_AND_ADD"
	T_RUN=180 LISTEN_TRIES=1500
	log "count: done in $((SECONDS - T0)) s"
fi
for ((REP = 1; REP <= REPS; REP++)); do
	if wanted lat; then
		for s in 2 65536; do
			log "rep $REP/$REPS: latency, $s B"
			point lat send ib_send_lat "$s" $lat_n
			point lat write ib_write_lat "$s" $lat_n
			point lat read ib_read_lat "$s" $lat_n
		done
	fi
	if wanted atomic; then
		log "rep $REP/$REPS: atomic latency, 8 B"
		point lat fadd ib_atomic_lat 8 $lat_n -A FETCH_AND_ADD
	fi
	if wanted bw; then
		for s in 2 65536; do
			n=$bw_small
			[ "$s" = 65536 ] && n=$bw_big
			log "rep $REP/$REPS: bandwidth, $s B"
			# the same outstanding READ limit for both (rcc-perf's default)
			point bw write ib_write_bw "$s" $n
			point bw read ib_read_bw "$s" $n -o 16
		done
	fi
	if wanted ud; then
		for s in 2 1024; do
			log "rep $REP/$REPS: datagrams (-c UD), $s B"
			point_ud lat "$s" $lat_n
			point_ud bw "$s" $bw_small
		done
	fi
done
log "measured in $((SECONDS - T0)) s"
[ -s "$FAILS" ] && exit 1
exit 0
