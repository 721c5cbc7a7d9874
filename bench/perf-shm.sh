#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# perf-shm.sh -- two processes on one host: rcc-perf and rcc-pingpong over the tcp
# transport's shared-memory path (RCC_SHM=1; its WRITE and READ bandwidth through the
# ring (buffers from the heap, rcc-perf --heap), with single copy switched on
# (RCC_SHM_CMA=1, heap buffers too) and mapped (rcc-perf's default buffers from
# rcc_mem_alloc(), which the peer maps: one memcpy by the initiator)) against the same tools over loopback TCP
# (RCC_SHM=0), UCX's shared-memory transports (ucx_perftest, UCX_TLS=posix for
# tag_lat/tag_bw, UCX_TLS=cma for ucp_put_bw) and a single-thread memcpy of the same
# size (bench/memcpy_bw.c) and a bare two-thread shared ring of the same messages
# (bench/ring_bw.c: the ceiling of any transport that copies twice, on these two
# CPUs), interleaved size by size in ONE run; prints a table of ratios with the
# issue's targets (PASS/MISS).
#
#   usage: bench/perf-shm.sh                 (REPS=3 repeats by default)
#   env:   REPS=n, QUICK=1 (REPS=1, short runs), RCC_BUILD_DIR [build-perf-bench],
#          OUTDIR [$RCC_BUILD_DIR/perf-shm]
#   needs: cmake + a C compiler, ucx-utils (ucx_perftest; a missing one is reported and
#          its rows left out), ss, taskset, timeout.
#
# Method and units as bench/perf-tcp.sh (bench/perf-lib.sh): server pinned to CPU 0,
# client to CPU 1, figures medians over the repeats, ratios medians of per-repeat
# ratios; latency = half round trip in us (READ: a full round trip), GB/s = 1e9 B/s.
# Every rcc run is checked to have taken the path it claims (rcc-perf --json
# params.path, rcc-pingpong's "path"). The progress threads and the busy-polling
# clients need CPUs of their own: on a loaded machine the figures say little.
set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
QUICK=${QUICK:-0}
REPS=${REPS:-3}
[ "$QUICK" = 1 ] && REPS=1
BUILD=${RCC_BUILD_DIR:-$root/build-perf-bench}
OUTDIR=${OUTDIR:-$BUILD/perf-shm}
SRV_CPU=0
CLI_CPU=1
HOST=127.0.0.1
SRV_TMO=120
CLI_TMO=60
DUR=2
[ "$QUICK" = 1 ] && DUR=1
P_RCC=18545 P_PP=18546 P_UCX=13347
LAT_SIZES="8 4096 65536"
BW_SIZES="8 65536 1048576"

# shellcheck source=bench/perf-lib.sh
. "$here/perf-lib.sh"
perf_setup perf-shm

RCC=$BUILD/tools/rcc-perf/rcc-perf
PP=$BUILD/tools/rcc-pingpong/rcc-pingpong

# path_is WANT JSONFILE: the run really took that path
path_is() { grep -Eq "\"path\": ?\"$1\"" "$2"; }

# rcc_lat PATH SIZE: SEND/WRITE/READ latency with RCC_SHM=1 (shm) or 0 (tcp), rcc-perf's
# default buffers (rcc_mem_alloc: on shm a WRITE/READ of 1 KiB and more is mapped)
rcc_lat() {
	local p=$1 s=$2 n csv=$WORK/rcc.csv js=$WORK/rcc.json t env
	env=RCC_SHM=$([ "$p" = shm ] && echo 1 || echo 0)
	case $s in 8 | 4096) n=20000 ;; *) n=5000 ;; esac
	[ "$QUICK" = 1 ] && n=$((n / 10))
	srv_start $P_RCC env "$env" "$RCC" -T tcp -p $P_RCC --quiet || return
	if cli env "$env" "$RCC" -T tcp -p $P_RCC $HOST --quiet --lat --test send,write,read \
		-s "$s" -n "$n" --csv "$csv" --json="$js"; then
		if path_is "$p" "$js"; then
			for t in send write read; do
				rec "rcc_$p" "$t" "$s" lat_p50_us "$(rcc_csv_get "$csv" "$t" lat "$s" t_typical_us)"
			done
		else
			fail "rcc-perf lat $s: not on path $p"
		fi
		srv_stop 5
	else
		fail "rcc-perf lat $p $s: $(clierr)"
		srv_stop 1
	fi
}

# rcc_bw PATH SIZE: WRITE and READ bandwidth (8 B: SEND message rate, post lists of 16);
# PATH shm (the ring: heap buffers), tcp, cma: shared memory with single copy switched on
# in both processes (RCC_SHM_CMA=1, docs/shm.md; heap buffers), or map: buffers from
# rcc_mem_alloc() (rcc-perf's default), copied through the peer's mapping (the
# endpoint's path says "shm" for all three); map1: map with --one-buffer (every message
# to and from one buffer per side, as memcpy_bw and ucx_perftest copy)
rcc_bw() {
	local p=$1 s=$2 csv=$WORK/rcc.csv js=$WORK/rcc.json t env tests=write,read extra=() path=$1
	env=(RCC_SHM=1)
	[ "$p" = tcp ] && env=(RCC_SHM=0)
	[ "$p" = shm ] && extra+=(--heap)
	[ "$p" = cma ] && env+=(RCC_SHM_CMA=1) && path=shm && extra+=(--heap)
	[ "$p" = map ] && path=shm
	[ "$p" = map1 ] && path=shm && extra+=(--one-buffer)
	[ "$s" = 8 ] && tests=send && extra+=(-l 16)
	srv_start $P_RCC env "${env[@]}" "$RCC" -T tcp -p $P_RCC --quiet || return
	if cli env "${env[@]}" "$RCC" -T tcp -p $P_RCC $HOST --quiet --bw --test $tests -s "$s" \
		-D "$DUR" "${extra[@]}" --csv "$csv" --json="$js"; then
		if path_is "$path" "$js"; then
			for t in ${tests//,/ }; do
				rec "rcc_$p" "${t}_bw" "$s" bw_GBps "$(rcc_csv_get "$csv" $t bw "$s" bw_avg_MBps |
					awk '{ if ($1 != "") printf "%.4g\n", $1 * 1048576 / 1e9 }')"
				rec "rcc_$p" "${t}_bw" "$s" mps "$(rcc_csv_get "$csv" $t bw "$s" msg_rate_Mpps)"
			done
		else
			fail "rcc-perf bw $s: not on path $p"
		fi
		srv_stop 5
	else
		fail "rcc-perf bw $p $s: $(clierr)"
		srv_stop 1
	fi
}

pp_lat() { # SIZE: rcc-pingpong over shared memory, busy polling
	local s=$1 n=20000 L=$WORK/cli.log
	[ "$QUICK" = 1 ] && n=2000
	srv_start $P_PP env RCC_SHM=1 "$PP" -T tcp -p $P_PP || return
	if cli env RCC_SHM=1 "$PP" -T tcp -p $P_PP -s "$s" -n "$n" --json $HOST; then
		if grep -q '"path":"shm"' "$L"; then
			rec pingpong shm "$s" lat_p50_us "$(sed -n 's/.*"median":\([0-9.]*\).*/\1/p' "$L")"
		else
			fail "rcc-pingpong $s: not on shared memory"
		fi
	else
		fail "rcc-pingpong $s: $(clierr)"
	fi
	srv_stop 2
}

ucx_iters() { # test size -> "n w"
	local nw
	case $1:$2 in
	tag_lat:*) nw="20000 2000" ;;
	tag_bw:8) nw="1000000 10000" ;;
	tag_bw:*) nw="20000 1000" ;;
	ucp_put_bw:*) nw="5000 500" ;;
	esac
	if [ "$QUICK" = 1 ]; then
		set -- $nw
		nw="$(($1 / 10 + 10)) $(($2 / 10 + 2))"
	fi
	echo "$nw"
}
ucx_posix() { UCX_ENVS=(UCX_TLS=posix,self) UCX_NAME=ucx_posix "$@"; }
ucx_cma() { UCX_ENVS=(UCX_TLS=cma,posix,self) UCX_NAME=ucx_cma "$@"; }

MEMCPY=
build_memcpy() {
	have cc || return 1
	timeout 120 cc -O2 -o "$WORK/memcpy_bw" "$here/memcpy_bw.c" && MEMCPY=$WORK/memcpy_bw
}
memcpy_bw() { # SIZE
	local s=$1
	if cli "$MEMCPY" "$s" "$DUR"; then
		rec memcpy copy "$s" bw_GBps "$(awk '{ print $4 }' "$WORK/cli.log")"
	else
		fail "memcpy_bw $s: $(clierr)"
	fi
	# the same copies walking rcc-perf's 32 MiB areas (tools/rcc-perf/conn.c
	# AREA_BUDGET): out of the caches, as rcc-perf's own copies are
	if cli "$MEMCPY" "$s" "$DUR" $((32 << 20)); then
		rec memcpy copy_area "$s" bw_GBps "$(awk '{ print $4 }' "$WORK/cli.log")"
	else
		fail "memcpy_bw $s (32 MiB area): $(clierr)"
	fi
}
RING=
build_ring() {
	have cc || return 1
	timeout 120 cc -O2 -pthread -o "$WORK/ring_bw" "$here/ring_bw.c" && RING=$WORK/ring_bw
}
ring_bw() { # SIZE: pins its two threads to CPUs 0 and 1 itself
	local s=$1
	if timeout -k 2 "$CLI_TMO" "$RING" "$s" "$DUR" >"$WORK/cli.log" 2>&1; then
		rec ring copy2 "$s" bw_GBps "$(awk '{ print $4 }' "$WORK/cli.log")"
	else
		CLI_ST=$?
		fail "ring_bw $s: $(clierr)"
	fi
}

# ------------------------------------------------------------------ main
for t in taskset timeout ss awk cmake; do have $t || { echo "missing: $t" >&2; exit 1; }; done
have ucx_perftest || log "missing ucx_perftest (apt-get install ucx-utils): UCX rows are left out"
[ "$(nproc)" -ge 2 ] || log "warning: fewer than 2 CPUs: server and client share one"
build_rcc || { echo "cannot build rcc-perf (see above)" >&2; exit 1; }
timeout 600 cmake --build "$BUILD" --target rcc-pingpong >"$WORK/build.log" 2>&1 ||
	{ cat "$WORK/build.log" >&2; exit 1; }
build_memcpy || log "bench/memcpy_bw.c did not build: no memcpy rows"
build_ring || log "bench/ring_bw.c did not build: no two-copy ceiling rows"
mkdir -p "$OUTDIR"

T0=$SECONDS
for ((REP = 1; REP <= REPS; REP++)); do
	for s in $LAT_SIZES; do
		log "rep $REP/$REPS: latency, $s B"
		rcc_lat shm "$s"
		rcc_lat tcp "$s"
		pp_lat "$s"
		have ucx_perftest && ucx_posix ucx_lat tag_lat "$s"
	done
	for s in $BW_SIZES; do
		log "rep $REP/$REPS: bandwidth, $s B"
		rcc_bw shm "$s"
		[ "$s" != 8 ] && rcc_bw cma "$s"
		[ "$s" != 8 ] && rcc_bw map "$s"
		[ "$s" != 8 ] && rcc_bw map1 "$s"
		rcc_bw tcp "$s"
		[ -n "$MEMCPY" ] && [ "$s" != 8 ] && memcpy_bw "$s"
		[ -n "$RING" ] && [ "$s" != 8 ] && ring_bw "$s"
		if have ucx_perftest; then
			ucx_posix ucx_bw tag_bw "$s"
			[ "$s" != 8 ] && ucx_cma ucx_bw ucp_put_bw "$s"
		fi
	done
done
log "measured in $((SECONDS - T0)) s"
cp "$RAW" "$OUTDIR/raw.tsv"

# ------------------------------------------------------------------ summary
# The issue's targets: 8 B half round trip at or below UCX posix tag_lat; 1 MiB WRITE
# and READ at or above UCX cma ucp_put_bw and at least 0.6 x memcpy; 8 B message rate
# reported beside UCX tag_bw.
SPEC=$WORK/spec.txt
{
	for s in $LAT_SIZES; do
		t=
		[ "$s" = 8 ] && t="le|1.0"
		echo "shm send lat / UCX posix tag_lat|$s|rcc_shm:send:lat_p50_us|ucx_posix:tag_lat:lat_p50_us|1|${t:-|}"
		echo "pingpong shm / UCX posix tag_lat|$s|pingpong:shm:lat_p50_us|ucx_posix:tag_lat:lat_p50_us|1|${t:-|}"
		echo "shm send lat / tcp send lat|$s|rcc_shm:send:lat_p50_us|rcc_tcp:send:lat_p50_us|1||"
		echo "shm write lat / tcp write lat|$s|rcc_shm:write:lat_p50_us|rcc_tcp:write:lat_p50_us|1||"
		echo "shm read lat / tcp read lat|$s|rcc_shm:read:lat_p50_us|rcc_tcp:read:lat_p50_us|1||"
	done
	echo "shm 8 B send rate (post list 16) / UCX posix tag_bw|8|rcc_shm:send_bw:mps|ucx_posix:tag_bw:mps|1||"
	echo "shm 8 B send rate / tcp|8|rcc_shm:send_bw:mps|rcc_tcp:send_bw:mps|1||"
	for s in $BW_SIZES; do
		[ "$s" = 8 ] && continue
		t1= t2=
		[ "$s" = 1048576 ] && t1="ge|1.0" && t2="ge|0.6"
		echo "shm write bw / UCX cma ucp_put_bw|$s|rcc_shm:write_bw:bw_GBps|ucx_cma:ucp_put_bw:bw_GBps|1|${t1:-|}"
		echo "shm read bw / UCX cma ucp_put_bw|$s|rcc_shm:read_bw:bw_GBps|ucx_cma:ucp_put_bw:bw_GBps|1|${t1:-|}"
		echo "shm write bw / memcpy|$s|rcc_shm:write_bw:bw_GBps|memcpy:copy:bw_GBps|1|${t2:-|}"
		echo "shm read bw / memcpy|$s|rcc_shm:read_bw:bw_GBps|memcpy:copy:bw_GBps|1|${t2:-|}"
		echo "shm write bw / UCX posix tag_bw|$s|rcc_shm:write_bw:bw_GBps|ucx_posix:tag_bw:bw_GBps|1||"
		echo "shm write bw / two-copy ring (ring_bw)|$s|rcc_shm:write_bw:bw_GBps|ring:copy2:bw_GBps|1||"
		echo "shm read bw / two-copy ring (ring_bw)|$s|rcc_shm:read_bw:bw_GBps|ring:copy2:bw_GBps|1||"
		echo "two-copy ring (ring_bw) / memcpy|$s|ring:copy2:bw_GBps|memcpy:copy:bw_GBps|1||"
		echo "shm write bw / tcp write bw|$s|rcc_shm:write_bw:bw_GBps|rcc_tcp:write_bw:bw_GBps|1||"
		echo "single copy write bw / memcpy|$s|rcc_cma:write_bw:bw_GBps|memcpy:copy:bw_GBps|1|${t2:-|}"
		echo "single copy read bw / memcpy|$s|rcc_cma:read_bw:bw_GBps|memcpy:copy:bw_GBps|1|${t2:-|}"
		echo "single copy write bw / UCX cma ucp_put_bw|$s|rcc_cma:write_bw:bw_GBps|ucx_cma:ucp_put_bw:bw_GBps|1|${t1:-|}"
		echo "single copy write bw / the ring's (shm)|$s|rcc_cma:write_bw:bw_GBps|rcc_shm:write_bw:bw_GBps|1||"
		echo "single copy read bw / the ring's (shm)|$s|rcc_cma:read_bw:bw_GBps|rcc_shm:read_bw:bw_GBps|1||"
		echo "mapped write bw / memcpy|$s|rcc_map:write_bw:bw_GBps|memcpy:copy:bw_GBps|1|${t2:-|}"
		echo "mapped read bw / memcpy|$s|rcc_map:read_bw:bw_GBps|memcpy:copy:bw_GBps|1|${t2:-|}"
		echo "mapped write bw / UCX cma ucp_put_bw|$s|rcc_map:write_bw:bw_GBps|ucx_cma:ucp_put_bw:bw_GBps|1|${t1:-|}"
		echo "mapped read bw / UCX cma ucp_put_bw|$s|rcc_map:read_bw:bw_GBps|ucx_cma:ucp_put_bw:bw_GBps|1|${t1:-|}"
		echo "mapped one-buffer write bw / memcpy|$s|rcc_map1:write_bw:bw_GBps|memcpy:copy:bw_GBps|1|${t2:-|}"
		echo "mapped one-buffer read bw / memcpy|$s|rcc_map1:read_bw:bw_GBps|memcpy:copy:bw_GBps|1|${t2:-|}"
		echo "mapped one-buffer write bw / UCX cma ucp_put_bw|$s|rcc_map1:write_bw:bw_GBps|ucx_cma:ucp_put_bw:bw_GBps|1|${t1:-|}"
		echo "mapped one-buffer read bw / UCX cma ucp_put_bw|$s|rcc_map1:read_bw:bw_GBps|ucx_cma:ucp_put_bw:bw_GBps|1|${t1:-|}"
		echo "mapped write bw / memcpy over 32 MiB areas|$s|rcc_map:write_bw:bw_GBps|memcpy:copy_area:bw_GBps|1||"
		echo "mapped read bw / memcpy over 32 MiB areas|$s|rcc_map:read_bw:bw_GBps|memcpy:copy_area:bw_GBps|1||"
		echo "memcpy over 32 MiB areas / memcpy|$s|memcpy:copy_area:bw_GBps|memcpy:copy:bw_GBps|1||"
		echo "mapped write bw / the ring's (shm)|$s|rcc_map:write_bw:bw_GBps|rcc_shm:write_bw:bw_GBps|1||"
		echo "mapped read bw / the ring's (shm)|$s|rcc_map:read_bw:bw_GBps|rcc_shm:read_bw:bw_GBps|1||"
	done
} >"$SPEC"

summarise "$SPEC" "$OUTDIR/table.md"
echo
echo "Latency: median half round trip (READ: full round trip); rates in millions of messages/s;"
echo "GB/s = 1e9 B/s. Files: $OUTDIR/table.md, results.csv, raw.tsv"
if [[ -s $FAILS ]]; then
	echo "Failures:"
	sed 's/^/  /' "$FAILS"
	exit 1
fi
