#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# rcc-perf end to end on verbs: the smoke test of every test mode (tests/perf), then
# rcc-perf runs over both bring-ups, all sizes, and a validated multi-endpoint
# bidirectional run. Functional only: no performance figure is asserted here
# (bench/perf-rxe.sh compares with perftest). Server pinned to SERVER_CPU, client
# to CLIENT_CPU.
source tests/rxe/lib.sh
perf=$RCC_BUILD/tools/rcc-perf/rcc-perf
smoke=$RCC_BUILD/tests/perf/test_perf_smoke
[ -x "$perf" ] || { log "no $perf (build the tools)"; exit 1; }
ready='waiting for a client'
port=7700

if [ -x "$smoke" ]; then
	t0=$(now)
	RCC_TEST_TRANSPORT=verbs RCC_TEST_ADDR=$RXE_IP run_bounded "$T_LONG" "$smoke" \
		>"$RXE_LOGDIR/smoke.log" 2>&1
	st=$?
	[ $st -eq 0 ] || cat "$RXE_LOGDIR/smoke.log"
	check "smoke: every test mode (tests/perf)" $st \
		"$(grep -o '[0-9]* of [0-9]* cases passed' "$RXE_LOGDIR/smoke.log") $(since "$t0") s"
else
	log "no $smoke (tests not built): smoke test skipped"
fi

# every test, both bring-ups (rdma_cm needs the netdev's address, not lo)
for bringup in cm manual; do
	port=$((port + 1))
	common="-T verbs --bringup $bringup -x $RXE_GID_IDX -p $port"
	server_client "perf-$bringup" "$ready" "$perf $common --accept-timeout 20" \
		"$perf $common $RXE_IP --test all -s 4096 -n 200 --json $RXE_LOGDIR/perf-$bringup.json"
	st=$?
	rows=$(grep -c '"test"' "$RXE_LOGDIR/perf-$bringup.json" 2>/dev/null)
	[ "${rows:-0}" -eq 12 ] || { [ $st -eq 0 ] && st=91; }
	wl=$(awk '/RDMA_Write Latency/ { f = 1 } f && $1 == 4096 { print $5 " us"; exit }' \
		"$RXE_LOGDIR/perf-$bringup.cli")
	check "$bringup: 6 tests x lat/bw, 4 KiB" $st "${rows:-0} points, write t_typical ${wl:-?}, $LAST_TIME s"
done

# all sizes (2 B .. 8 MiB), a few iterations each: 92 runs in one client,
# which under TCG on a loaded host went past the 30 s of one client/server
# run (2026-11-27, load 20-30); this run alone gets 3x that, which still
# ends a hung one
port=$((port + 1))
T_SHORT=90 server_client "perf-all-sizes" "$ready" "$perf -T verbs -p $port --accept-timeout 20" \
	"$perf -T verbs -p $port $RXE_IP -a --test write,read -n 8 --warmup 2"
st=$?
rows=$(grep -c '^ [0-9]' "$RXE_LOGDIR/perf-all-sizes.cli")
[ "${rows:-0}" -eq 92 ] || { [ $st -eq 0 ] && st=92; }
check "-a: write, read, lat and bw, 23 sizes" $st "${rows:-0} rows, $LAST_TIME s"

# several endpoints, post lists, moderation, both directions, every byte checked,
# completion channel
port=$((port + 1))
server_client "perf-validate" "$ready" "$perf -T verbs -p $port --accept-timeout 20" \
	"$perf -T verbs -p $port $RXE_IP --bw -b --validate -q 2 -l 4 -Q 4 -t 32 -s 3000 -n 200 -e"
check "-b --validate -q 2 -l 4 -Q 4 -e" $? "$LAST_TIME s"

# a server that dies mid-run: the client reports it and exits 1 (never hangs).
# The server runs without a wrapper so that $! is rcc-perf itself (taskset execs
# it); it is bounded by being killed here.
port=$((port + 1))
so=$RXE_LOGDIR/perf-kill.srv co=$RXE_LOGDIR/perf-kill.cli
taskset -c "$SERVER_CPU" "$perf" -T verbs -p "$port" --accept-timeout 20 >"$so" 2>&1 &
sp=$!
if wait_for_line "$so" "$ready" 15 "$sp"; then
	run_bounded "$T_SHORT" taskset -c "$CLIENT_CPU" "$perf" -T verbs -p "$port" "$RXE_IP" \
		--lat --test write -D 20 >"$co" 2>&1 &
	cp=$!
	wait_for_line "$co" '#bytes' 15 "$cp"
	kill -9 "$sp" 2>/dev/null
	wait "$cp"
	st=$?
	wait "$sp" 2>/dev/null
	[ $st -eq 1 ] && grep -q 'lost\|progress' "$co"
	check "server killed: client exits 1" $? "status $st: $(grep -m1 rcc-perf: "$co")"
else
	kill "$sp" 2>/dev/null
	wait "$sp" 2>/dev/null
	check "server killed: client exits 1" 90 "the server never became ready"
fi
suite_result
