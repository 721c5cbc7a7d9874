#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# bench/xfer-rxe.sh [BUILD_DIR]: rcc-xfer against rdma-core's rcopy on Soft-RoCE.
#
# Boots the project's VM once (tests/rxe/vm/run-in-vm) and, inside it, copies
# one file (256 MiB by default) with each tool between two folders in the VM's
# memory, receiver and sender pinned to different vCPUs, RUNS times each
# (alternating), every copy checked with cmp. Prints the median wall times and
# the ratio (target: rcc-xfer at least 1.0x rcopy). Absolute figures under TCG
# are slow; only the same-boot ratio means something. A benchmark, not a test.
#
# rcc-xfer is measured twice: as is, and with OpenSSL told to use its scalar
# SHA-256 (OPENSSL_ia32cap without SSSE3). Under TCG the emulated SIMD code is
# the slower one (about 50 vs 80 MB/s here), for the same reason the VM runs a
# Nehalem CPU model rather than one with AVX; on real hardware leave it alone.
#   BUILD_DIR   a build with the verbs transport inside the repo [build-xfer]
#   SIZE_MB=256 RUNS=3 RCC_RXE_TIMEOUT=1200
#   XFER_ARGS="..." options for both rcc-xfer sides; XFER_RECV_ARGS for the receiver
set -u -o pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
SIZE_MB=${SIZE_MB:-256} RUNS=${RUNS:-3} XFER_ARGS=${XFER_ARGS:-}
XFER_RECV_ARGS=${XFER_RECV_ARGS:-}

if [ "${1:-}" != --in-vm ]; then
	build=$(cd "${1:-$root/build-xfer}" 2>/dev/null && pwd) || { echo "no build directory" >&2; exit 2; }
	case $build/ in
	"$root"/*) rel=${build#"$root"/} ;;
	*) echo "the build directory must be inside $root (the VM shares only the repo)" >&2; exit 2 ;;
	esac
	[ -x "$build/tools/rcc-xfer/rcc-xfer" ] || { echo "build rcc-xfer first" >&2; exit 2; }
	# The VM image may lack rcopy: bring the host's (its libraries follow it in).
	rcopy=$(command -v rcopy) || { echo "needs rcopy (apt-get install rdmacm-utils)" >&2; exit 2; }
	mkdir -p "$build/bench-bin"
	cp "$rcopy" "$build/bench-bin/rcopy"
	export XB_REL=$rel XB_SIZE=$SIZE_MB XB_RUNS=$RUNS XB_ARGS=$XFER_ARGS XB_RARGS=$XFER_RECV_ARGS
	export RCC_RXE_ENV="XB_REL XB_SIZE XB_RUNS XB_ARGS XB_RARGS ${RCC_RXE_ENV:-}"
	export RCC_RXE_LIBSCAN="$rel/tools $rel/bench-bin ${RCC_RXE_LIBSCAN:-}"
	export RCC_RXE_TIMEOUT=${RCC_RXE_TIMEOUT:-1200}
	exec "$root/tests/rxe/vm/run-in-vm" "$root" "bash bench/xfer-rxe.sh --in-vm"
fi

# ---------------------------------------------------------------- in the VM
source tests/rxe/lib.sh
SUITE=xfer-bench
xfer=$XB_REL/tools/rcc-xfer/rcc-xfer
PATH=$PATH:$PWD/$XB_REL/bench-bin
command -v rcopy > /dev/null || { log "rcopy is missing"; exit 1; }
work=$(mktemp -d)
mkdir -p "$work/dst"
trap 'rm -rf "$work"' EXIT
head -c $((XB_SIZE << 20)) /dev/urandom > "$work/data.bin"
export RCC_XFER_KEY=bench-key-0123456789abcdef
port=7800

run_rcopy() {
	local pid t0 st
	port=$((port + 1))
	rm -f "$work/dst/data.bin"
	taskset -c "$SERVER_CPU" timeout 300 rcopy -p "$port" > "$work/rcopy.srv" 2>&1 &
	pid=$!
	wait_cm_listen "$port" 15 || { log "rcopy server not listening"; kill "$pid"; return 1; }
	t0=$(now)
	taskset -c "$CLIENT_CPU" timeout 300 rcopy "$work/data.bin" "$RXE_IP:$work/dst/data.bin" \
		-p "$port" > "$work/rcopy.cli" 2>&1
	st=$?
	ELAPSED=$(since "$t0")
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	[ "$st" -eq 0 ] && cmp -s "$work/data.bin" "$work/dst/data.bin" ||
		{ log "rcopy failed ($st)"; cat "$work/rcopy.cli"; return 1; }
}

run_xfer() { # [ENV=VALUE...] for the rcc-xfer processes
	local pid t0 st
	port=$((port + 1))
	rm -f "$work/dst/data.bin" "$work/ready"
	# shellcheck disable=SC2086
	env "$@" taskset -c "$SERVER_CPU" timeout 300 "$xfer" recv -T verbs -q --once --dir "$work/dst" \
		--listen "$RXE_IP:$port" --ready-file "$work/ready" $XB_ARGS $XB_RARGS &
	pid=$!
	for _ in $(seq 750); do [ -s "$work/ready" ] && break; sleep 0.02; done
	t0=$(now)
	# shellcheck disable=SC2086
	env "$@" taskset -c "$CLIENT_CPU" timeout 300 "$xfer" send -T verbs -q $XB_ARGS "$work/data.bin" \
		"$RXE_IP:$port"
	st=$?
	wait "$pid"
	ELAPSED=$(since "$t0")
	[ "$st" -eq 0 ] && cmp -s "$work/data.bin" "$work/dst/data.bin" ||
		{ log "rcc-xfer failed ($st)"; return 1; }
}

median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
echo "rcc-xfer vs rcopy (rsockets) on Soft-RoCE, $XB_SIZE MiB, receiver vCPU $SERVER_CPU," \
	"sender vCPU $CLIENT_CPU, median of $XB_RUNS${XB_ARGS:+, rcc-xfer $XB_ARGS}${XB_RARGS:+, recv $XB_RARGS}"
r_times=() x_times=() y_times=()
scalar=OPENSSL_ia32cap="~0x20000000000"
for i in $(seq "$XB_RUNS"); do
	run_rcopy || exit 1
	r=$ELAPSED
	run_xfer || exit 1
	x=$ELAPSED
	run_xfer "$scalar" || exit 1
	y=$ELAPSED
	r_times+=("$r") x_times+=("$x") y_times+=("$y")
	echo "  run $i: rcopy $r s   rcc-xfer $x s   rcc-xfer (scalar SHA-256) $y s"
done
r=$(printf '%s\n' "${r_times[@]}" | median)
x=$(printf '%s\n' "${x_times[@]}" | median)
y=$(printf '%s\n' "${y_times[@]}" | median)
awk -v r="$r" -v x="$x" -v y="$y" -v m="$XB_SIZE" 'BEGIN {
	printf "rcopy                      %.2f s  %.1f MiB/s\n", r, m / r
	printf "rcc-xfer                   %.2f s  %.1f MiB/s  ratio %.2fx\n", x, m / x, r / x
	printf "rcc-xfer, scalar SHA-256   %.2f s  %.1f MiB/s  ratio %.2fx\n", y, m / y, r / y
	printf "(rcc-xfer verifies SHA-256 end to end, fsyncs, authenticates; target >= 1.00x)\n"
}'
