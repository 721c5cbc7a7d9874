#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# rxe-pingpong.sh BUILD_DIR: SEND/RECV ping-pong latency on Soft-RoCE, rcc-pingpong
# (verbs transport, busy polling, rdma_cm) beside rdma-core's ibv_rc_pingpong and
# perftest's ib_send_lat, at the same message sizes, in ONE VM boot. Server and
# client are pinned to different vCPUs. Prints each tool's half round trip and the
# ratios. A benchmark, not a test: under TCG absolute numbers are noise; compare
# the ratios of one run.
#   RCC_BENCH_SIZES  message sizes [16 4096]     RCC_BENCH_ITERS  round trips [2000]
#   RCC_BENCH_REPS   runs per tool and size, the median is reported [3]
# Method: rcc-pingpong's median half round trip; ib_send_lat's t_typical (a median
# of RTT/2 samples); ibv_rc_pingpong reports only an average per iteration (one
# round trip), halved here -- it is compared on averages, with rcc's average beside.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)

if [ "${1:-}" != --inside ]; then
	[ $# -ge 1 ] || { sed -n '2,13p' "$0" >&2; exit 2; }
	build=$(cd "$1" && pwd) || exit 2
	rel=${build#"$root"/}
	[ "$rel" != "$build" ] || { echo "BUILD_DIR must be inside $root" >&2; exit 2; }
	export RCC_RXE_ENV="RCC_BENCH_SIZES RCC_BENCH_ITERS RCC_BENCH_REPS ${RCC_RXE_ENV:-}"
	export RCC_RXE_LIBSCAN="$rel"
	exec "$root/tests/rxe/vm/run-in-vm" "$root" "bash bench/rxe-pingpong.sh --inside $rel"
fi

# ---------------------------------------------------------------- in the VM
build=$2
pp=$build/tools/rcc-pingpong/rcc-pingpong
[ -x "$pp" ] || { echo "no $pp"; exit 1; }
sizes=${RCC_BENCH_SIZES:-16 4096}
iters=${RCC_BENCH_ITERS:-2000}
reps=${RCC_BENCH_REPS:-3}
G=$RXE_GID_IDX
D=$RXE_DEV
log=/tmp/bench
mkdir -p "$log"

deadline_after() { awk -v a="$EPOCHREALTIME" -v t="$1" 'BEGIN{printf "%.3f", a+t}'; }
past() { awk -v a="$EPOCHREALTIME" -v e="$1" 'BEGIN{exit !(a>=e)}'; }
wait_ready() { # FILE REGEX | tcp PORT
	local end
	end=$(deadline_after 20)
	while :; do
		if [ "$1" = tcp ]; then
			ss -Hltn "sport = :$2" | grep -q . && return 0
		else
			grep -Eq "$2" "$1" 2>/dev/null && return 0
		fi
		past "$end" && return 1
		sleep 0.02
	done
}
median() { sort -g | awk '{a[NR]=$1} END{if (NR) print a[int((NR+1)/2)]; else print "nan"}'; }

# pair READY SERVER... -- CLIENT...: server on vCPU 0, client on vCPU 1; client output on stdout
pair() {
	local ready=$1 srv=() cli=() sp
	shift
	while [ "$1" != -- ]; do srv+=("$1"); shift; done
	shift
	cli=("$@")
	timeout -k 5 120 taskset -c 0 "${srv[@]}" >"$log/srv" 2>&1 &
	sp=$!
	case $ready in
	tcp:*) wait_ready tcp "${ready#tcp:}" ;;
	*) wait_ready "$log/srv" "$ready" ;;
	esac || { echo "server not ready" >&2; cat "$log/srv" >&2; kill "$sp"; return 1; }
	timeout -k 5 120 taskset -c 1 "${cli[@]}"
	wait "$sp"
}

declare -A res
for s in $sizes; do
	for r in $(seq "$reps"); do
		out=$(pair 'listening on' "$pp" -T verbs -p 7471 -b "$RXE_IP" --once -- \
			"$pp" -T verbs -p 7471 -n "$iters" -S "$s" "$RXE_IP")
		echo "$out" >"$log/rcc.$s.$r"
		echo "$out" | sed -n 's/.*median \([0-9.]*\).*/\1/p' | head -n1 >>"$log/rcc_med.$s"
		echo "$out" | sed -n 's/.*avg \([0-9.]*\).*/\1/p' | head -n1 >>"$log/rcc_avg.$s"

		out=$(pair tcp:18515 ibv_rc_pingpong -d "$D" -g "$G" -s "$s" -n "$iters" -- \
			ibv_rc_pingpong -d "$D" -g "$G" -s "$s" -n "$iters" "$RXE_IP")
		echo "$out" >"$log/rc.$s.$r"
		echo "$out" | sed -n 's/.* = \([0-9.]*\) usec\/iter.*/\1/p' | head -n1 |
			awk '{printf "%.2f\n", $1 / 2}' >>"$log/rc.$s"

		out=$(pair tcp:18515 ib_send_lat -d "$D" -x "$G" -F -s "$s" -n "$iters" -- \
			ib_send_lat -d "$D" -x "$G" -F -s "$s" -n "$iters" "$RXE_IP" 2>&1)
		echo "$out" >"$log/perf.$s.$r"
		echo "$out" | awk -v s="$s" '$1 == s && NF >= 5 {print $5; exit}' >>"$log/perf.$s"
		echo "$out" | awk -v s="$s" '$1 == s && NF >= 6 {print $6; exit}' >>"$log/perf_avg.$s"
		echo "$out" | awk -v s="$s" '$1 == s && NF >= 8 {print $8; exit}' >>"$log/perf_p99.$s"
		echo "$(cat "$log/rcc.$s.$r")" | sed -n 's/.*p99 \([0-9.]*\).*/\1/p' | head -n1 >>"$log/rcc_p99.$s"
	done
	res[rcc_med.$s]=$(median <"$log/rcc_med.$s")
	res[rcc_avg.$s]=$(median <"$log/rcc_avg.$s")
	res[rc.$s]=$(median <"$log/rc.$s")
	res[perf.$s]=$(median <"$log/perf.$s")
	res[perf_avg.$s]=$(median <"$log/perf_avg.$s")
	res[perf_p99.$s]=$(median <"$log/perf_p99.$s")
	res[rcc_p99.$s]=$(median <"$log/rcc_p99.$s")
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b > 0 && a > 0) printf "%.2f", a / b; else print "n/a" }'; }
echo
echo "Soft-RoCE (rxe, qemu TCG) SEND/RECV half round trip, usec; $iters round trips," \
	"median of $reps runs; server vCPU 0, client vCPU 1"
printf '%-8s %16s %16s %16s %16s %14s %14s\n' bytes "rcc median" "ib_send_lat typ" \
	"rcc avg" "rc_pingpong avg" "rcc/send_lat" "rcc/rc_pp"
for s in $sizes; do
	printf '%-8s %16s %16s %16s %16s %14s %14s\n' "$s" "${res[rcc_med.$s]}" "${res[perf.$s]}" \
		"${res[rcc_avg.$s]}" "${res[rc.$s]}" \
		"$(ratio "${res[rcc_med.$s]}" "${res[perf.$s]}")" \
		"$(ratio "${res[rcc_avg.$s]}" "${res[rc.$s]}")"
done
echo
echo "tails (usec): average and p99 of the half round trip"
printf '%-8s %12s %12s %16s %16s %12s\n' bytes "rcc avg" "rcc p99" "ib_send_lat avg" \
	"ib_send_lat 99%" "avg ratio"
for s in $sizes; do
	printf '%-8s %12s %12s %16s %16s %12s\n' "$s" "${res[rcc_avg.$s]}" "${res[rcc_p99.$s]}" \
		"${res[perf_avg.$s]}" "${res[perf_p99.$s]}" \
		"$(ratio "${res[rcc_avg.$s]}" "${res[perf_avg.$s]}")"
done
echo "(raw outputs: $log inside the VM; ratios > 1 mean rcc is slower)"
