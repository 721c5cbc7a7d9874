#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# perf-tcp.sh -- rcc-perf on the tcp transport against raw TCP (sockperf, iperf3, and
# bench/tcp_pingpong.c: a busy-polling raw TCP ping-pong, the floor for a transport
# that busy-polls),
# UCX over tcp (ucx_perftest, UCX_TLS=tcp) and libfabric tcp (fi_pingpong), on
# loopback, at 8 B, 4 KiB, 64 KiB and 1 MiB, in ONE run, and prints a table of
# ratios with the project's targets (PASS/MISS).
#
#   usage: bench/perf-tcp.sh                 (REPS=3 repeats by default)
#   env:   REPS=n           repeats; every figure is the median over them
#          QUICK=1          REPS=1 and short runs (checks the script, not the machine)
#          RCC_BUILD_DIR    a build with rcc-perf [build-perf-bench, configured and built
#                           here when missing]
#          OUTDIR           where raw.tsv, results.csv and table.md go
#                           [$RCC_BUILD_DIR/perf-tcp]
#   needs: cmake + a C compiler, sockperf, iperf3, ucx-utils (ucx_perftest),
#          libfabric-bin (fi_pingpong), ss, taskset, timeout. A missing peer tool is
#          reported and its rows are left out.
#
# Method: every server is pinned to CPU 0 and every client to CPU 1; servers are
# waited for by polling `ss -ltn`; every process is bounded by `timeout`; only
# PIDs started here are ever signalled. Loopback TCP latency on these machines
# flips between two levels for tens of seconds at a time, so the tools are
# interleaved size by size, each repeat measures everything once, figures are
# medians over the repeats, and each ratio is the median of the per-repeat ratios
# (both sides of a ratio measured within seconds of each other).
# Units: latency = half round trip in us (READ, atomics and ucp_get: one full
# round trip); bandwidth in GB/s = 1e9 B/s of payload.
set -u -o pipefail
# The socket path: same-host shared memory (the default between two local
# processes, docs/shm.md) is measured by bench/perf-shm.sh.
export RCC_SHM=0

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
QUICK=${QUICK:-0}
REPS=${REPS:-3}
[ "$QUICK" = 1 ] && REPS=1
BUILD=${RCC_BUILD_DIR:-$root/build-perf-bench}
OUTDIR=${OUTDIR:-$BUILD/perf-tcp}
SRV_CPU=0
CLI_CPU=1
HOST=127.0.0.1
SRV_TMO=120                      # upper bound on any server's life
CLI_TMO=60                       # upper bound on any client run
DUR=2                            # seconds: sockperf / iperf3 / rcc-perf -D points
[ "$QUICK" = 1 ] && DUR=1
P_RCC=18515 P_SOCKPERF=11111 P_IPERF=5201 P_UCX=13337 P_FI=47592 P_RAW=18530
LAT_SIZES="8 4096 65536 1048576"
BW_SIZES="8 4096 65536 1048576"

# shellcheck source=bench/perf-lib.sh
. "$here/perf-lib.sh"
perf_setup perf-tcp

# ------------------------------------------------------------------ rcc-perf
RCC=$BUILD/tools/rcc-perf/rcc-perf
# rcc_lat SIZE: send/write/read (+ atomics at 8 B) latency; READ and atomics also
# with the target busy-polling (--target-poll)
rcc_lat() {
	local s=$1 n tests csv=$WORK/rcc.csv t
	case $s in 8 | 4096) n=20000 ;; 65536) n=5000 ;; *) n=1000 ;; esac
	[ "$QUICK" = 1 ] && n=$((n / 10))
	tests=send,write,read
	[ "$s" = 8 ] && tests=$tests,fadd,cas
	for variant in plain target-poll; do
		local extra=() vt=$tests sfx=
		if [ $variant = target-poll ]; then
			extra=(--target-poll)
			vt=read
			[ "$s" = 8 ] && vt=read,fadd
			sfx=_tp
		fi
		srv_start $P_RCC "$RCC" -T tcp -p $P_RCC --quiet || return
		if cli "$RCC" -T tcp -p $P_RCC $HOST --quiet --lat --test "$vt" -s "$s" -n "$n" \
			"${extra[@]}" --csv "$csv"; then
			for t in ${vt//,/ }; do
				rec rcc "$t$sfx" "$s" lat_p50_us "$(rcc_csv_get "$csv" "$t" lat "$s" t_typical_us)"
				rec rcc "$t$sfx" "$s" lat_avg_us "$(rcc_csv_get "$csv" "$t" lat "$s" t_avg_us)"
				rec rcc "$t$sfx" "$s" lat_p99_us "$(rcc_csv_get "$csv" "$t" lat "$s" p99_us)"
			done
			srv_stop 5
		else
			fail "rcc-perf lat $vt $s: $(clierr)"
			srv_stop 1
		fi
	done
}

# rcc_bw SIZE [one]: WRITE and SEND bandwidth, -D seconds each. rcc-perf's default
# buffers: a slot per message in flight (up to 32 MiB a side: large copies miss the
# caches). With "one": --one-buffer, every message from and into one buffer a side,
# as iperf3 and ucx_perftest move theirs -- the like-for-like row the targets
# against them are read from (ops write_bw1, send_bw1).
rcc_bw() {
	local s=$1 csv=$WORK/rcc.csv t sfx='' extra=()
	[ "${2:-}" = one ] && sfx=1 && extra=(--one-buffer)
	srv_start $P_RCC "$RCC" -T tcp -p $P_RCC --quiet || return
	if cli "$RCC" -T tcp -p $P_RCC $HOST --quiet --bw --test write,send -s "$s" -D "$DUR" \
		"${extra[@]}" --csv "$csv"; then
		for t in write send; do
			rec rcc "${t}_bw$sfx" "$s" bw_GBps "$(rcc_csv_get "$csv" $t bw "$s" bw_avg_MBps |
				awk '{ if ($1 != "") printf "%.4g\n", $1 * 1048576 / 1e9 }')"
		done
		srv_stop 5
	else
		fail "rcc-perf bw $s: $(clierr)"
		srv_stop 1
	fi
}

# ------------------------------------------------------------------ raw TCP
sockperf_lat() { # SIZE (sockperf's smallest message is 14 B)
	local s=$1 m=$1 L=$WORK/cli.log
	((m < 14)) && m=14
	((m > 65000)) && return
	srv_start $P_SOCKPERF sockperf server --tcp -i $HOST -p $P_SOCKPERF || return
	if cli sockperf ping-pong --tcp -i $HOST -p $P_SOCKPERF -m "$m" -t "$DUR"; then
		rec sockperf pingpong "$s" lat_p50_us "$(awk '/percentile 50.000 =/{print $NF}' "$L")"
		rec sockperf pingpong "$s" lat_avg_us \
			"$(sed -n 's/.*Summary: Latency is \([0-9.]*\) usec.*/\1/p' "$L")"
	else
		fail "sockperf $m: $(clierr)"
	fi
	srv_stop
}

RAWPP=
build_rawpp() { # the busy-polling raw TCP ping-pong next to this script, if present
	[ -f "$here/tcp_pingpong.c" ] && have cc || return 0
	timeout 120 cc -O2 -o "$WORK/tcp_pingpong" "$here/tcp_pingpong.c" && RAWPP=$WORK/tcp_pingpong
}
rawpp_lat() { # SIZE
	local s=$1 n L=$WORK/cli.log
	case $s in 8 | 4096) n=20000 ;; 65536) n=5000 ;; *) n=1000 ;; esac
	[ "$QUICK" = 1 ] && n=$((n / 10))
	srv_start $P_RAW "$RAWPP" -s $P_RAW || return
	if cli "$RAWPP" -c $HOST $P_RAW "$s" "$n"; then
		rec rawtcp busypoll "$s" lat_p50_us \
			"$(awk '{ for (i = 1; i < NF; i++) if ($i == "median_us") print $(i + 1) }' "$L")"
		rec rawtcp busypoll "$s" lat_avg_us \
			"$(awk '{ for (i = 1; i < NF; i++) if ($i == "avg_us") print $(i + 1) }' "$L")"
		srv_stop 5
	else
		fail "tcp_pingpong $s: $(clierr)"
		srv_stop 1
	fi
}

iperf3_bw() { # SIZE: one write size per point; the first second (slow start) omitted
	local s=$1
	((s < 4096)) && return
	srv_start $P_IPERF iperf3 -s -1 -B $HOST -p $P_IPERF || return
	if cli iperf3 -c $HOST -p $P_IPERF -l "$s" -t "$DUR" -O 1 -f m; then
		rec iperf3 stream "$s" bw_GBps "$(awk '/receiver/ { for (i = 1; i < NF; i++)
			if ($(i+1) == "Mbits/sec") v = $i } END { if (v != "") printf "%.4g\n", v / 8000 }' \
			"$WORK/cli.log")"
		srv_stop 3
	else
		fail "iperf3 $s: $(clierr)"
		srv_stop 1
	fi
}

# ------------------------------------------------------------------ UCX
# ucx_perftest -f prints one final line:
#   iters lat_pct lat_avg lat_overall bw_avg bw_overall(MiB/s) mr_avg mr_overall
# lat_pct is the -R percentile; the *_lat tests print half a round trip, ucp_get a full get.
ucx_iters() { # test size -> "n w"; UCX's put and get over tcp are slow at large sizes
	local t=$1 s=$2 nw
	case $t:$s in
	tag_lat:8 | tag_lat:4096 | ucp_put_lat:8 | ucp_put_lat:4096) nw="20000 2000" ;;
	tag_lat:65536) nw="2000 200" ;;
	tag_lat:*) nw="500 50" ;;
	ucp_put_lat:65536) nw="1000 100" ;;
	ucp_put_lat:*) nw="100 10" ;;
	ucp_get:1048576) nw="50 5" ;;
	ucp_get:*) nw="300 20" ;;
	tag_bw:8 | tag_bw:4096) nw="100000 5000" ;;
	tag_bw:65536) nw="10000 1000" ;;
	tag_bw:*) nw="1500 100" ;;
	ucp_put_bw:1048576) nw="100 10" ;;
	ucp_put_bw:*) nw="5000 500" ;;
	esac
	if [ "$QUICK" = 1 ]; then
		set -- $nw
		nw="$(($1 / 10 + 10)) $(($2 / 10 + 2))"
	fi
	echo "$nw"
}
UCX_ENVS=(UCX_TLS=tcp UCX_NET_DEVICES=lo) # ucx_run's transport (perf-lib.sh)

# ------------------------------------------------------------------ libfabric
# fi_pingpong: usec/xfer = half round trip (mean).
fi_lat() { # size
	local s=$1 I F
	case $s in 8 | 4096) I=20000 ;; 65536) I=4000 ;; *) I=400 ;; esac
	[ "$QUICK" = 1 ] && I=$((I / 10))
	local args=(-p tcp -e msg -d lo -I "$I" -S "$s")
	srv_start $P_FI fi_pingpong "${args[@]}" -B $P_FI || return
	if cli fi_pingpong "${args[@]}" -P $P_FI $HOST; then
		read -r -a F <<<"$(awk '$1 ~ /^[0-9]/ && NF == 8 { l = $0 } END { print l }' "$WORK/cli.log")"
		rec fi_pingpong msg "$s" lat_avg_us "${F[6]:-}"
		srv_stop 5
	else
		fail "fi_pingpong -S $s: $(clierr)"
		srv_stop 1
	fi
}

# ------------------------------------------------------------------ main
for t in taskset timeout ss awk cmake; do have $t || { echo "missing: $t" >&2; exit 1; }; done
MISSING=
for t in sockperf iperf3 ucx_perftest fi_pingpong; do have $t || MISSING+=" $t"; done
[ -n "$MISSING" ] && log "missing peer tools (their rows are left out):$MISSING"
[ "$(nproc)" -ge 2 ] || log "warning: fewer than 2 CPUs: server and client share one"
build_rcc || { echo "cannot build rcc-perf (see above)" >&2; exit 1; }
build_rawpp || log "bench/tcp_pingpong.c did not build: no raw busy-polling row"
mkdir -p "$OUTDIR"

T0=$SECONDS
for ((REP = 1; REP <= REPS; REP++)); do
	for s in $LAT_SIZES; do
		log "rep $REP/$REPS: latency, $s B"
		rcc_lat "$s"
		[ -n "$RAWPP" ] && rawpp_lat "$s"
		have ucx_perftest && { ucx_lat tag_lat "$s"; ucx_lat ucp_put_lat "$s"; ucx_lat ucp_get "$s"; }
		have sockperf && sockperf_lat "$s"
		have fi_pingpong && fi_lat "$s"
	done
	for s in $BW_SIZES; do
		log "rep $REP/$REPS: bandwidth, $s B"
		rcc_bw "$s"
		((s >= 65536)) && rcc_bw "$s" one
		have iperf3 && iperf3_bw "$s"
		have ucx_perftest && { ucx_bw tag_bw "$s"; ucx_bw ucp_put_bw "$s"; }
	done
done
log "measured in $((SECONDS - T0)) s"
cp "$RAW" "$OUTDIR/raw.tsv"

# ------------------------------------------------------------------ summary
# Comparisons: label | size | numerator | denominator | factor | target (le|ge) | threshold
# A key is tool:op:metric; the ratio is numerator / (factor * denominator).
SPEC=$WORK/spec.txt
{
	for s in $LAT_SIZES; do
		t=
		[ "$s" = 8 ] && t="le|0.9"
		echo "send lat / UCX tag_lat|$s|rcc:send:lat_p50_us|ucx:tag_lat:lat_p50_us|1|${t:-|}"
		echo "send lat / raw TCP busy-poll ping-pong|$s|rcc:send:lat_p50_us|rawtcp:busypoll:lat_p50_us|1||"
		echo "send lat / sockperf ping-pong (raw TCP)|$s|rcc:send:lat_p50_us|sockperf:pingpong:lat_p50_us|1||"
		echo "send lat avg / fi_pingpong avg|$s|rcc:send:lat_avg_us|fi_pingpong:msg:lat_avg_us|1||"
		echo "write lat / own send lat|$s|rcc:write:lat_p50_us|rcc:send:lat_p50_us|1|le|1.05"
		echo "write lat / UCX ucp_put_lat|$s|rcc:write:lat_p50_us|ucx:ucp_put_lat:lat_p50_us|1||"
		echo "read lat / one round trip (2 x send)|$s|rcc:read:lat_p50_us|rcc:send:lat_p50_us|2|le|1.25"
		echo "read lat, target polls / one round trip|$s|rcc:read_tp:lat_p50_us|rcc:send:lat_p50_us|2|le|1.25"
		echo "read lat / UCX ucp_get|$s|rcc:read:lat_p50_us|ucx:ucp_get:lat_p50_us|1||"
		if [ "$s" = 8 ]; then
			echo "fadd lat / one round trip (2 x send)|$s|rcc:fadd:lat_p50_us|rcc:send:lat_p50_us|2|le|1.25"
			echo "fadd lat, target polls / one round trip|$s|rcc:fadd_tp:lat_p50_us|rcc:send:lat_p50_us|2|le|1.25"
			echo "cas lat / one round trip (2 x send)|$s|rcc:cas:lat_p50_us|rcc:send:lat_p50_us|2|le|1.25"
		fi
	done
	for s in $BW_SIZES; do
		t1= t2=
		[ "$s" = 1048576 ] && t1="ge|0.9" && t2="ge|1.0"
		echo "write bw / iperf3 (raw TCP)|$s|rcc:write_bw:bw_GBps|iperf3:stream:bw_GBps|1|${t1:-|}"
		echo "write bw / UCX tag_bw|$s|rcc:write_bw:bw_GBps|ucx:tag_bw:bw_GBps|1|${t2:-|}"
		echo "write bw / UCX ucp_put_bw|$s|rcc:write_bw:bw_GBps|ucx:ucp_put_bw:bw_GBps|1||"
		echo "send bw / UCX tag_bw|$s|rcc:send_bw:bw_GBps|ucx:tag_bw:bw_GBps|1||"
		# Like for like (one buffer a side, as the reference tools): issue 13
		# item 4's bandwidth targets, >= iperf3 from 64 KiB up, >= UCX
		# tag_bw for WRITE and SEND at 1 MiB.
		((s >= 65536)) || continue
		t2=
		[ "$s" = 1048576 ] && t2="ge|1.0"
		echo "write bw, one buffer / iperf3|$s|rcc:write_bw1:bw_GBps|iperf3:stream:bw_GBps|1|ge|1.0"
		echo "send bw, one buffer / iperf3|$s|rcc:send_bw1:bw_GBps|iperf3:stream:bw_GBps|1|ge|1.0"
		echo "write bw, one buffer / UCX tag_bw|$s|rcc:write_bw1:bw_GBps|ucx:tag_bw:bw_GBps|1|${t2:-|}"
		echo "send bw, one buffer / UCX tag_bw|$s|rcc:send_bw1:bw_GBps|ucx:tag_bw:bw_GBps|1|${t2:-|}"
	done
} >"$SPEC"

TABLE=$OUTDIR/table.md
summarise "$SPEC" "$TABLE"
echo
echo "Latency: half round trip (READ, atomics: full round trip); UCX tag/put lat: median (-R 50);"
echo "sockperf at 8 B sends 14 B (its minimum); fi_pingpong reports a mean. GB/s = 1e9 B/s."
echo "Files: $OUTDIR/table.md, results.csv, raw.tsv"
if [[ -s $FAILS ]]; then
	echo "Failures / skipped:"
	sed 's/^/  /' "$FAILS"
	exit 1
fi
