#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# perf-lib.sh -- helpers shared by the benchmark scripts that compare rcc-perf with
# reference tools (perf-tcp.sh, perf-shm.sh): pinned servers waited for with ss,
# bounded clients, the raw figure log, and the ratio table. Sourced, never run.
# The caller sets SRV_CPU CLI_CPU SRV_TMO CLI_TMO, BUILD RCC root (build_rcc), OUTDIR
# REPS (summarise), and calls perf_setup first.

# perf_setup NAME: a scratch directory WORK with the raw figures (RAW: rep tool op
# size metric value) and the failures (FAILS); every process started here (STARTED)
# is stopped and WORK removed on exit.
perf_setup() {
	WORK=$(mktemp -d "/tmp/$1.XXXXXX")
	RAW=$WORK/raw.tsv
	FAILS=$WORK/fails.txt
	: >"$RAW"
	: >"$FAILS"
	STARTED=()
	SRV_PID=
	REP=0
	trap perf_cleanup EXIT
	trap 'exit 130' INT TERM
}
perf_cleanup() {
	local p
	for p in "${STARTED[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${STARTED[@]}"; do wait "$p" 2>/dev/null; done
	rm -rf "$WORK"
}

log() { printf '[%(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
fail() { echo "$*" >>"$FAILS"; log "FAIL: $*"; }
rec() { # tool op size metric value
	[[ -n "${5:-}" ]] || { fail "$1 $2 $3 $4: no value parsed"; return; }
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$REP" "$1" "$2" "$3" "$4" "$5" >>"$RAW"
}
have() { command -v "$1" >/dev/null; }
listening() { ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; }

# srv_start PORT CMD...: pinned server; returns once PORT listens (polling ss)
srv_start() {
	local port=$1 i
	shift
	for ((i = 0; i < 250; i++)); do listening "$port" || break; sleep 0.02; done
	if listening "$port"; then fail "port $port busy (not ours): $*"; return 1; fi
	timeout -k 2 "$SRV_TMO" taskset -c "$SRV_CPU" "$@" >"$WORK/srv.log" 2>&1 &
	SRV_PID=$!
	STARTED+=("$SRV_PID")
	for ((i = 0; i < 500; i++)); do
		listening "$port" && return 0
		kill -0 "$SRV_PID" 2>/dev/null || break
		sleep 0.02
	done
	fail "server did not listen on $port: $* ($(tail -c 300 "$WORK/srv.log" | tr '\n' ' '))"
	srv_stop
	return 1
}
# srv_stop [GRACE_S]: a one-shot server gets GRACE_S to exit by itself, then TERM
srv_stop() {
	local grace=${1:-0} i
	[[ -n "$SRV_PID" ]] || return 0
	for ((i = 0; i < grace * 50; i++)); do kill -0 "$SRV_PID" 2>/dev/null || break; sleep 0.02; done
	kill "$SRV_PID" 2>/dev/null
	wait "$SRV_PID" 2>/dev/null
	SRV_PID=
}
cli() {
	timeout -k 2 "$CLI_TMO" taskset -c "$CLI_CPU" "$@" >"$WORK/cli.log" 2>&1
	CLI_ST=$?
	return $CLI_ST
}
clierr() {
	[ "${CLI_ST:-0}" = 124 ] && { echo "timed out after $CLI_TMO s"; return; }
	echo "status ${CLI_ST:-?}: $(tail -n 3 "$WORK/cli.log" | tr '\n' ' ' | cut -c1-300)"
}

build_rcc() {
	if [ -x "$RCC" ] && [ "${REBUILD:-0}" != 1 ]; then
		# keep an existing build current; a no-op when nothing changed
		timeout 600 cmake --build "$BUILD" --target rcc-perf >"$WORK/build.log" 2>&1 ||
			{ cat "$WORK/build.log" >&2; return 1; }
		return 0
	fi
	local gen=()
	have ninja && gen=(-G Ninja)
	log "building rcc-perf in $BUILD"
	timeout 300 cmake -S "$root" -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DRCC_BUILD_TESTS=OFF >"$WORK/build.log" 2>&1 &&
		timeout 900 cmake --build "$BUILD" --target rcc-perf >>"$WORK/build.log" 2>&1 ||
		{ cat "$WORK/build.log" >&2; return 1; }
}

# rcc_csv_get FILE TEST KIND SIZE COLUMN: one figure of rcc-perf's CSV
rcc_csv_get() {
	awk -F, -v t="$2" -v k="$3" -v s="$4" -v c="$5" '
		NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
		$1 == t && $2 == k && $3 == s { print $col[c]; exit }' "$1"
}

# ucx_run TEST SIZE: one ucx_perftest run (pinned server and client) under the
# environment in the array UCX_ENVS; prints its -f result line:
#   iters lat_pct lat_avg lat_overall bw_avg bw_overall(MiB/s) mr_avg mr_overall
# lat_pct is the -R percentile. The caller defines ucx_iters TEST SIZE -> "n w".
# ucx_lat / ucx_bw record under tool name $UCX_NAME (default ucx).
ucx_run() {
	local t=$1 s=$2 nw
	nw=$(ucx_iters "$t" "$s")
	srv_start $P_UCX env "${UCX_ENVS[@]}" ucx_perftest -p $P_UCX || return 1
	if cli env "${UCX_ENVS[@]}" ucx_perftest $HOST -p $P_UCX -t "$t" -s "$s" -n "${nw% *}" \
		-w "${nw#* }" -R 50 -f; then
		srv_stop 5
		awk 'NF == 8 && $1 ~ /^[0-9]+$/ { l = $0 } END { if (l != "") print l; else exit 1 }' \
			"$WORK/cli.log"
	else
		srv_stop 1
		fail "ucx_perftest -t $t -s $s: $(clierr)"
		return 1
	fi
}
ucx_lat() { # test size
	local line F
	line=$(ucx_run "$1" "$2") || return
	read -r -a F <<<"$line"
	rec "${UCX_NAME:-ucx}" "$1" "$2" lat_p50_us "${F[1]}"
	rec "${UCX_NAME:-ucx}" "$1" "$2" lat_avg_us "${F[3]}"
}
ucx_bw() { # test size
	local line F
	line=$(ucx_run "$1" "$2") || return
	read -r -a F <<<"$line"
	rec "${UCX_NAME:-ucx}" "$1" "$2" bw_GBps "$(awk -v m="${F[5]}" 'BEGIN { printf "%.4g\n", m * 1048576 / 1e9 }')"
	rec "${UCX_NAME:-ucx}" "$1" "$2" mps "$(awk -v m="${F[6]}" 'BEGIN { printf "%.4g\n", m / 1e6 }')"
}

# summarise SPEC TABLE: the ratio table (markdown on stdout and in TABLE, CSV in
# $OUTDIR/results.csv) from $RAW. SPEC lines: label|size|numerator|denominator|factor|
# target (le|ge)|threshold; a key is tool:op:metric; ratio = numerator / (factor *
# denominator), the median of the per-repeat ratios. The "repeats" column shows
# those ratios' range and, for a target, in how many repeats it was met: a
# median that passes while single repeats swing from far below to far above
# the target is the host's noise, and the reader should see it.
summarise() {
	local SPEC=$1 TABLE=$2
	awk -F'\t' -v spec="$SPEC" -v csv="$OUTDIR/results.csv" -v reps="$REPS" '
	function median(arr, n,    a, b, x, s) {
		for (a = 1; a <= n; a++) s[a] = arr[a]
		for (a = 2; a <= n; a++) { x = s[a]; for (b = a - 1; b >= 1 && s[b] > x; b--) s[b+1] = s[b]; s[b+1] = x }
		return (n % 2) ? s[(n+1)/2] : (s[n/2] + s[n/2+1]) / 2
	}
	function human(s) { return s >= 1048576 ? s/1048576 " MiB" : s >= 1024 ? s/1024 " KiB" : s " B" }
	{ key = $2 ":" $3 ":" $5; val[key, $4, $1] = $6; seen[key, $4] = 1; if ($1 > maxrep) maxrep = $1 }
	END {
		print "figure,size_B,rcc_perf,peer,ratio,target,result,reps,ratio_min,ratio_max,reps_met" > csv
		printf "| comparison | size | rcc-perf | peer | ratio | target | result | repeats |\n"
		printf "|---|---:|---:|---:|---:|---|---|---|\n"
		npass = nmiss = 0
		while ((getline line < spec) > 0) {
			split(line, f, "|")
			label = f[1]; s = f[2]; num = f[3]; den = f[4]; fac = f[5]; cmp = f[6]; thr = f[7]
			if (!((num, s) in seen) || !((den, s) in seen)) continue
			nn = nd = nr = 0
			for (r = 1; r <= maxrep; r++) {
				if ((num, s, r) in val) nv[++nn] = val[num, s, r]
				if ((den, s, r) in val) dv[++nd] = val[den, s, r]
				if ((num, s, r) in val && (den, s, r) in val && val[den, s, r] > 0)
					rv[++nr] = val[num, s, r] / (fac * val[den, s, r])
			}
			if (!nr) continue
			mn = median(nv, nn); md = median(dv, nd); ratio = median(rv, nr)
			lo = hi = rv[1]; met = 0
			for (r = 1; r <= nr; r++) {
				if (rv[r] < lo) lo = rv[r]
				if (rv[r] > hi) hi = rv[r]
				if ((cmp == "le" && rv[r] <= thr) || (cmp == "ge" && rv[r] >= thr)) met++
			}
			spread = nr > 1 ? sprintf("%.2f-%.2f", lo, hi) : sprintf("%.2f", lo)
			tgt = res = ""
			if (cmp == "le") { tgt = "<= " thr; res = ratio <= thr ? "PASS" : "MISS" }
			if (cmp == "ge") { tgt = ">= " thr; res = ratio >= thr ? "PASS" : "MISS" }
			if (tgt != "") spread = spread sprintf(" (%d/%d met)", met, nr)
			if (res == "PASS") npass++
			if (res == "MISS") nmiss++
			unit = num ~ /bw_GBps/ ? " GB/s" : num ~ /:mps$/ ? " M msg/s" : " us"
			peer = (fac != 1 ? fac " x " : "") sprintf("%.4g", md) unit
			printf "| %s | %s | %.4g%s | %s | %.3f | %s | %s | %s |\n", label, human(s), mn, unit, peer, ratio, tgt, res, spread
			printf "\"%s\",%s,%.6g,%.6g,%.4f,%s,%s,%d,%.4f,%.4f,%s\n", label, s, mn, fac * md, ratio, tgt, res, nr, lo, hi, (tgt != "" ? met : "") > csv
		}
		printf "\n%d targets met, %d missed; %d repeat(s); figures are medians, ratios medians of per-repeat ratios\n(repeats: their range, and in how many the target was met).\n", npass, nmiss, reps
	}' "$RAW" | tee "$TABLE"
}
