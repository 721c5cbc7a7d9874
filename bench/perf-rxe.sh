#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# perf-rxe.sh -- rcc-perf on the verbs transport against perftest (ib_send_lat,
# ib_write_lat, ib_read_lat, ib_atomic_lat, ib_write_bw, ib_read_bw; and over
# datagram endpoints rcc-perf -c UD against ib_send_lat -c UD and ib_send_bw -c UD,
# at 2 B and 1 KiB) on Soft-RoCE,
# at 2 B and 64 KiB, in ONE boot of the project's VM (tests/rxe/vm/run-in-vm), and
# prints a table of ratios with the target: within 5% of perftest for the latency
# median (t_typical) and the average bandwidth (judged on MsgRate, the same ratio at
# a fixed size, because perftest prints MB/s with only two decimals).
#
#   usage: bench/perf-rxe.sh
#   env:   REPS=n         repeats [3]; figures are medians, ratios medians of per-repeat
#                         ratios (both tools measured back to back, order alternating)
#          QUICK=1        REPS=1 and short runs (checks the script, not the stack)
#          RCC_BUILD_DIR  a build with the verbs transport, inside the repo (the VM
#                         sees only the repo) [build-perf-bench; configured and built
#                         here when missing]
#          RCC_RXE_TIMEOUT  bound on the whole VM in seconds [2400]
#          SUMMARY_ONLY=1 no VM: print the table again from the last run's raw.tsv
#          ONLY="GROUP..." measure only these groups [all]: lat (send, write, read
#                         latency), atomic (fetch-and-add latency), bw (write and
#                         read bandwidth), ud (-c UD send latency and bandwidth);
#                         count (never by default): instructions, not time -- see
#                         below
#          COUNT_N1, COUNT_N2  iterations of the two counted runs [1000 2000]
#   needs: cmake, a C compiler, libibverbs-dev, librdmacm-dev, and what
#          tests/rxe/vm/build-image installs (qemu, rdma-core, perftest).
# The VM side is bench/perf-rxe-vm.sh; numbers under TCG are slow and noisy in
# absolute terms, which is why only same-boot ratios are reported.
#
# count: the verbs overhead counted, not timed. Every latency test (send, write,
# read at 2 B and 64 KiB, fadd at 8 B; client and server side, except the passive
# READ/FADD target) runs under valgrind --tool=callgrind, for both tools, at
# COUNT_N1 and COUNT_N2 iterations; printed: the user-space instructions per
# iteration spent inside the calls each tool makes into its RDMA library (rcc for
# rcc-perf, libibverbs and the provider for perftest), the difference of the two
# runs over the difference of the iterations (set-up cancels), with the empty polls
# of the busy-polling wait taken out at their exact price (an empty poll measured
# alone by bench_overhead_static in the same boot): how many there are depends on
# how long the emulated peer took, not on the library. The method in full is in
# bench/count-rxe.py, the figures in docs/verbs.md. The count group needs valgrind
# on the host (copied into a VM image of its own, ~/.cache/rcc-rxe-vm-vg, as
# tests/rxe/README.md's valgrind recipe does) and exits 77 without it. About 10-17
# minutes for the whole group under TCG (996 s of VM on 2026-11-28, 588-741 s on
# 2026-11-29: it depends on the host's load).
set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
QUICK=${QUICK:-0}
REPS=${REPS:-3}
[ "$QUICK" = 1 ] && REPS=1
BUILD=${RCC_BUILD_DIR:-$root/build-perf-bench}
export RCC_RXE_TIMEOUT=${RCC_RXE_TIMEOUT:-2400}
log() { printf '[%(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
COUNT=0
[[ " ${ONLY:-} " == *" count "* ]] && COUNT=1
targets=(rcc-perf)
if [ "$COUNT" = 1 ]; then
	command -v valgrind >/dev/null || { echo "count: valgrind is not installed" >&2; exit 77; }
	command -v python3 >/dev/null || { echo "count: python3 is not installed" >&2; exit 77; }
	targets+=(bench_overhead_static)
	# tests/rxe/README.md's valgrind image (the same settings: one image for both)
	export RCC_RXE_CACHE=${RCC_RXE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rcc-rxe-vm-vg}
	export RCC_RXE_EXTRA_BINS=${RCC_RXE_EXTRA_BINS:-valgrind valgrind.bin}
	export RCC_RXE_EXTRA_DIRS=${RCC_RXE_EXTRA_DIRS:-/usr/libexec/valgrind /usr/lib/debug}
fi
COUNT_N1=${COUNT_N1:-1000} COUNT_N2=${COUNT_N2:-2000}

mkdir -p "$BUILD"
BUILD=$(cd "$BUILD" && pwd)
case $BUILD/ in
"$root"/*) rel=${BUILD#"$root"/} ;;
*) echo "RCC_BUILD_DIR must be inside $root (the VM shares only the repo)" >&2; exit 2 ;;
esac
VMRUN=$root/tests/rxe/vm/run-in-vm
[ -x "$VMRUN" ] || { echo "missing $VMRUN (the project's Soft-RoCE harness)" >&2; exit 2; }

OUT=$BUILD/perf-rxe
vm_status=0
if [ "${SUMMARY_ONLY:-0}" != 1 ]; then
gen=()
command -v ninja >/dev/null && [ ! -f "$BUILD/CMakeCache.txt" ] && gen=(-G Ninja)
log "building ${targets[*]} (verbs) in $rel"
if ! { timeout 300 cmake -S "$root" -B "$BUILD" "${gen[@]}" -DRCC_WITH_VERBS=ON \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo >"$BUILD/perf-rxe-build.log" 2>&1 &&
	timeout 900 cmake --build "$BUILD" --target "${targets[@]}" >>"$BUILD/perf-rxe-build.log" 2>&1; }; then
	tail -n 30 "$BUILD/perf-rxe-build.log" >&2
	echo "cannot build rcc-perf with the verbs transport" >&2
	exit 1
fi

rm -rf "$OUT"
mkdir -p "$OUT"
export PERF_RCC=$rel/tools/rcc-perf/rcc-perf PERF_OUT=$rel/perf-rxe PERF_REPS=$REPS
export PERF_QUICK=$QUICK PERF_ONLY=${ONLY:-}
export PERF_OVH=$rel/tests/bench/bench_overhead_static PERF_COUNT_N1=$COUNT_N1 PERF_COUNT_N2=$COUNT_N2
export RCC_RXE_ENV="PERF_RCC PERF_OUT PERF_REPS PERF_QUICK PERF_ONLY PERF_OVH PERF_COUNT_N1 PERF_COUNT_N2 ${RCC_RXE_ENV:-}"
export RCC_RXE_LIBSCAN="$rel/tools ${RCC_RXE_LIBSCAN:-}"
log "one VM boot: rcc-perf and perftest side by side ($REPS repeat(s))"
"$VMRUN" "$root" "bash bench/perf-rxe-vm.sh"
vm_status=$?
fi
if [ "$COUNT" = 1 ]; then
	echo "Load average on the host: $(cut -d' ' -f1-3 /proc/loadavg) (counts do not depend on it)"
	python3 "$here/count-rxe.py" "$OUT/cg" "$COUNT_N1" "$COUNT_N2" "$OUT/count.csv" |
		tee "$OUT/count.md" || vm_status=1
	[ "${ONLY:-}" = count ] && { [ "$vm_status" -eq 0 ]; exit; }
fi
[ -s "$OUT/raw.tsv" ] || { echo "no results came back from the VM (status $vm_status)" >&2; exit 1; }

# ------------------------------------------------------------------ summary
awk -F'\t' -v csv="$OUT/results.csv" -v reps="$REPS" '
function median(arr, n,    a, b, x, s) {
	for (a = 1; a <= n; a++) s[a] = arr[a]
	for (a = 2; a <= n; a++) { x = s[a]; for (b = a - 1; b >= 1 && s[b] > x; b--) s[b+1] = s[b]; s[b+1] = x }
	return (n % 2) ? s[(n+1)/2] : (s[n/2] + s[n/2+1]) / 2
}
function human(s) { return s >= 1024 ? s/1024 " KiB" : s " B" }
{ k = $3 SUBSEP $4 SUBSEP $5; v[$2, k, $1] = $6
  if (!(k in seen)) { seen[k] = 1; order[++n] = k }
  if ($1 > maxrep) maxrep = $1 }
END {
	print "test,size_B,metric,rcc_perf,perftest,ratio,target,result,reps" > csv
	printf "| test | size | figure | rcc-perf | perftest | ratio | target | result |\n"
	printf "|---|---:|---|---:|---:|---:|---|---|\n"
	for (i = 1; i <= n; i++) {
		split(order[i], f, SUBSEP)
		t = f[1]; s = f[2]; m = f[3]
		if (m != "t_typical_us" && m != "t_avg_us" && m != "bw_avg_MBps" && m != "msg_rate_Mpps")
			continue
		na = nb = nr = 0
		for (r = 1; r <= maxrep; r++) {
			if (("rcc-perf", order[i], r) in v) A[++na] = v["rcc-perf", order[i], r]
			if (("perftest", order[i], r) in v) B[++nb] = v["perftest", order[i], r]
			if (("rcc-perf", order[i], r) in v && ("perftest", order[i], r) in v &&
			    v["perftest", order[i], r] > 0)
				R[++nr] = v["rcc-perf", order[i], r] / v["perftest", order[i], r]
		}
		if (!na || !nb) {
			printf "| %s | %s | %s | %s | %s | - | | no data |\n", t, human(s), m,
				na ? sprintf("%.4g", median(A, na)) : "-", nb ? sprintf("%.4g", median(B, nb)) : "-"
			continue
		}
		ratio = median(R, nr)
		tgt = res = ""
		if (m == "t_typical_us") { tgt = "<= 1.05"; res = ratio <= 1.05 ? "PASS" : "MISS" }
		# average bandwidth = size x message rate; perftest prints MB/s with two
		# decimals (0.11 MB/s at 2 B) but MsgRate with six: judge on MsgRate
		if (m == "msg_rate_Mpps") { tgt = ">= 0.95"; res = ratio >= 0.95 ? "PASS" : "MISS" }
		if (res == "PASS") npass++
		if (res == "MISS") nmiss++
		unit = m ~ /MBps/ ? " MB/s" : m ~ /Mpps/ ? " Mpps" : " us"
		printf "| %s | %s | %s | %.4g%s | %.4g%s | %.3f | %s | %s |\n", t, human(s), m,
			median(A, na), unit, median(B, nb), unit, ratio, tgt, res
		printf "%s,%s,%s,%.6g,%.6g,%.4f,%s,%s,%d\n", t, s, m, median(A, na), median(B, nb),
			ratio, tgt, res, nr > csv
	}
	printf "\n%d targets met, %d missed; %d repeat(s) in one VM boot. MB/s = 2^20 B/s (both tools).\n",
		npass, nmiss, reps
}' "$OUT/raw.tsv" | tee "$OUT/table.md"
echo "Latency: t_typical (median) and t_avg in us, half round trip for send/write, full"
echo "round trip for read/fadd. Files: $OUT/table.md, results.csv, raw.tsv"
if [ -s "$OUT/fails.txt" ]; then
	echo "Failures:"
	sed 's/^/  /' "$OUT/fails.txt"
fi
[ "$vm_status" -eq 0 ]
