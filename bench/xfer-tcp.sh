#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# bench/xfer-tcp.sh BUILD_DIR: rcc-xfer against a raw TCP copy (socat) on loopback.
#
# Moves one file (1 GiB by default) between two tmpfs folders, receiver and
# sender pinned to different CPUs, and reports the median wall time of each
# tool over RUNS runs, their throughput, and the ratio (target: rcc-xfer at
# least 0.8x raw TCP). Every copy is checked with sha256sum. A benchmark, not a
# test: it always exits 0 unless something fails outright. It also reports the
# CPU time (user + system) each side used, which a busy machine disturbs less
# than wall time.
#   SIZE_MB=1024 RUNS=3 SERVER_CPU=1 CLIENT_CPU=0 SOCAT_BUF=1048576
#   XFER_ARGS="..." extra options for both rcc-xfer sides (e.g. "--cq-mode poll"),
#   XFER_RECV_ARGS, XFER_SEND_ARGS for one side (e.g. XFER_RECV_ARGS="--chunk-size 4M")
#   BENCH_DIR=/dev/shm   where the tmpfs folders go
set -euo pipefail
# The socket path: same-host shared memory (the default between two local
# processes, docs/shm.md) is measured by bench/perf-shm.sh.
export RCC_SHM=0
build=${1:?usage: $0 BUILD_DIR}
xfer=$build/tools/rcc-xfer/rcc-xfer
[ -x "$xfer" ] || { echo "no $xfer: build first" >&2; exit 2; }
command -v socat > /dev/null || { echo "needs socat (apt-get install socat)" >&2; exit 2; }
SIZE_MB=${SIZE_MB:-1024} RUNS=${RUNS:-3}
SERVER_CPU=${SERVER_CPU:-1} CLIENT_CPU=${CLIENT_CPU:-0}
SOCAT_BUF=${SOCAT_BUF:-1048576} XFER_ARGS=${XFER_ARGS:-}
XFER_RECV_ARGS=${XFER_RECV_ARGS:-} XFER_SEND_ARGS=${XFER_SEND_ARGS:-}
base=$(mktemp -d "${BENCH_DIR:-/dev/shm}/rcc-xfer-bench.XXXXXX")
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$base"
}
trap cleanup EXIT
export RCC_XFER_KEY=bench-key-0123456789abcdef
mkdir -p "$base/src" "$base/dst"
head -c $((SIZE_MB << 20)) /dev/urandom > "$base/src/data.bin"
want=$(sha256sum < "$base/src/data.bin")

now() { date +%s.%N; }
# wait_file FILE: poll (bounded) until FILE is non-empty.
wait_file() {
	local i
	for i in $(seq 500); do [ -s "$1" ] && return 0; sleep 0.01; done
	echo "timed out waiting for $1" >&2
	return 1
}
# free_port: a port nothing listens on right now.
free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 12000)) # below the ephemeral ports
		ss -Hltn "sport = :$p" | grep -q . || { echo "$p"; return; }
	done
}
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f", a - b }'; }

run_socat() {
	local port t0 t1 pid
	rm -f "$base/dst/data.bin"
	port=$(free_port)
	cpu_of "$base/cpu.srv" taskset -c "$SERVER_CPU" timeout 120 socat -u -b "$SOCAT_BUF" \
		"TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr" "OPEN:$base/dst/data.bin,creat,trunc" &
	pid=$!
	pids+=("$pid")
	for _ in $(seq 500); do ss -Hltn "sport = :$port" | grep -q . && break; sleep 0.01; done
	t0=$(now)
	cpu_of "$base/cpu.cli" taskset -c "$CLIENT_CPU" timeout 120 socat -u -b "$SOCAT_BUF" \
		"OPEN:$base/src/data.bin" "TCP:127.0.0.1:$port"
	wait "$pid"
	t1=$(now)
	[ "$(sha256sum < "$base/dst/data.bin")" = "$want" ] || { echo "socat copy differs" >&2; exit 1; }
	sub "$t1" "$t0"
}

run_xfer() {
	local t0 t1 pid ready=$base/port
	rm -f "$base/dst/data.bin" "$ready"
	# shellcheck disable=SC2086
	cpu_of "$base/cpu.srv" taskset -c "$SERVER_CPU" timeout 300 "$xfer" recv -T tcp -q --once \
		--dir "$base/dst" \
		--listen 127.0.0.1:0 --ready-file "$ready" $XFER_ARGS $XFER_RECV_ARGS &
	pid=$!
	pids+=("$pid")
	wait_file "$ready"
	t0=$(now)
	# shellcheck disable=SC2086
	cpu_of "$base/cpu.cli" taskset -c "$CLIENT_CPU" timeout 300 "$xfer" send -T tcp -q \
		$XFER_ARGS $XFER_SEND_ARGS \
		"$base/src/data.bin" "127.0.0.1:$(cat "$ready")"
	wait "$pid"
	t1=$(now)
	[ "$(sha256sum < "$base/dst/data.bin")" = "$want" ] || { echo "rcc-xfer copy differs" >&2; exit 1; }
	sub "$t1" "$t0"
}

# cpu_of FILE CMD...: run CMD; its user + system CPU seconds go to FILE.
cpu_of() {
	local out=$1
	shift
	( TIMEFORMAT='%U %S'; time "$@" ) 2> "$out.raw"
	local st=$?
	tail -1 "$out.raw" | awk '{ printf "%.3f\n", $1 + $2 }' > "$out"
	return $st
}
cpus() { echo "$(cat "$base/cpu.cli") $(cat "$base/cpu.srv")"; }

median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
rate() { awk -v m="$SIZE_MB" -v t="$1" 'BEGIN { printf "%.0f MiB/s", m / t }'; }

echo "rcc-xfer vs raw TCP (socat -b $SOCAT_BUF), $SIZE_MB MiB tmpfs to tmpfs, loopback,"
echo "receiver on CPU $SERVER_CPU, sender on CPU $CLIENT_CPU, median of $RUNS runs"
args="$XFER_ARGS $XFER_RECV_ARGS $XFER_SEND_ARGS"
[ -n "${args// /}" ] && echo "rcc-xfer options: $args"
s_times=() x_times=() s_cpu=() x_cpu=()
for i in $(seq "$RUNS"); do
	s=$(run_socat)
	sc=$(cpus)
	x=$(run_xfer)
	xc=$(cpus)
	s_times+=("$s") x_times+=("$x") s_cpu+=("$sc") x_cpu+=("$xc")
	printf '  run %d: socat %.3f s (cpu %s / %s s)   rcc-xfer %.3f s (cpu %s / %s s)\n' \
		"$i" "$s" $sc "$x" $xc
done
s=$(printf '%s\n' "${s_times[@]}" | median)
x=$(printf '%s\n' "${x_times[@]}" | median)
col() { printf '%s\n' "${@:2}" | awk -v c="$1" '{ print $c }' | median; }
ratio=$(awk -v s="$s" -v x="$x" 'BEGIN { printf "%.4f", s / x }')
printf 'socat     %.3f s  %s   cpu sender %s s, receiver %s s\n' "$s" "$(rate "$s")" \
	"$(col 1 "${s_cpu[@]}")" "$(col 2 "${s_cpu[@]}")"
printf 'rcc-xfer  %.3f s  %s   cpu sender %s s, receiver %s s\n' "$x" "$(rate "$x")" \
	"$(col 1 "${x_cpu[@]}")" "$(col 2 "${x_cpu[@]}")"
echo "          (rcc-xfer: SHA-256 on both sides end to end, fsync, authenticated)"
printf 'ratio rcc-xfer / raw TCP: %.2fx (target >= 0.80x)\n' "$ratio"
