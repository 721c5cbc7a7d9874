#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# rcc-pingpong end to end on verbs: both bring-ups x CQ modes poll/wait/fd x server
# thread modes per-ep/shared, UC, UD (-c ud, beside ibv_ud_pingpong), --srq (beside
# ibv_srq_pingpong). Server pinned to SERVER_CPU, client to CLIENT_CPU.
source tests/rxe/lib.sh
pp=$RCC_BUILD/tools/rcc-pingpong/rcc-pingpong
[ -x "$pp" ] || { log "no $pp (build the tools)"; exit 1; }
port=7600
ready='listening on .* \(transport verbs'
for bringup in cm manual; do
	for mode in poll wait fd; do
		for threads in per-ep shared; do
			port=$((port + 1))
			name=pp-$bringup-$mode-$threads
			common="-T verbs -B $bringup -m $mode -p $port"
			server_client "$name" "$ready" \
				"$pp $common -t $threads -b $RXE_IP --once" \
				"$pp $common -n 300 -S 4096 $RXE_IP"
			st=$?
			res=$(grep -Eio '(median|avg)[^,]*' "$RXE_LOGDIR/$name.cli" | head -n1)
			check "$bringup $mode $threads (4 KiB x 300)" "$st" "${res:+$res, }$LAST_TIME s"
		done
	done
done
# the default message size of rdma-core's examples, and a multi-MTU one
for size in 16 65536; do
	port=$((port + 1))
	server_client "pp-size-$size" "$ready" "$pp -T verbs -p $port -b $RXE_IP --once" \
		"$pp -T verbs -p $port -n 200 -S $size $RXE_IP"
	check "cm poll per-ep, $size bytes" $? "$LAST_TIME s"
done
# unreliable connected endpoints (-c uc) on both sides, both bring-ups
for bringup in cm manual; do
	port=$((port + 1))
	common="-T verbs -B $bringup -c uc -p $port"
	server_client "pp-uc-$bringup" "$ready" "$pp $common -b $RXE_IP --once" \
		"$pp $common -n 300 -S 4096 $RXE_IP"
	st=$?
	grep -q '(cq poll, UC), all pongs verified' "$RXE_LOGDIR/pp-uc-$bringup.cli" || [ $st -ne 0 ] ||
		st=92
	check "UC $bringup poll per-ep (4 KiB x 300)" "$st" "$LAST_TIME s"
done
# datagram endpoints (-c ud): one server endpoint, both bring-ups' listeners for the
# address exchange; then 4 clients at once against one server endpoint (sizes
# 200..800 B), every pong verified, and their goodbyes counted by the server
for bringup in cm manual; do
	port=$((port + 1))
	common="-T verbs -B $bringup -c ud -p $port"
	server_client "pp-ud-$bringup" "$ready" "$pp $common -b $RXE_IP --once" \
		"$pp $common -n 300 -S 1024 $RXE_IP"
	st=$?
	grep -q '(cq poll, UD), all pongs verified' "$RXE_LOGDIR/pp-ud-$bringup.cli" || [ $st -ne 0 ] ||
		st=93
	check "UD $bringup poll (1 KiB x 300)" "$st" "$LAST_TIME s"
done
port=$((port + 1))
so=$RXE_LOGDIR/pp-ud-many.srv
timeout -k 5 "$T_SHORT" taskset -c "$SERVER_CPU" "$pp" -T verbs -c ud -m wait -p "$port" \
	-b "$RXE_IP" >"$so" 2>&1 &
sp=$!
st=0
if wait_for_line "$so" "$ready" 15 "$sp"; then
	cps=()
	for i in 1 2 3 4; do
		# blocking completions: four busy pollers on one vCPU would be tick-bound
		run_bounded "$T_SHORT" taskset -c "$CLIENT_CPU" "$pp" -T verbs -c ud -m wait -p "$port" \
			-n 100 -S $((i * 200)) "$RXE_IP" >"$RXE_LOGDIR/pp-ud-many.$i.cli" 2>&1 &
		cps+=($!)
	done
	for i in 1 2 3 4; do
		wait "${cps[$((i - 1))]}" && grep -q 'all pongs verified' "$RXE_LOGDIR/pp-ud-many.$i.cli" ||
			{ st=94; cat "$RXE_LOGDIR/pp-ud-many.$i.cli"; }
	done
	# each client's goodbye datagram reaches the server (polled, bounded)
	end=$(deadline_after 5)
	until [ "$(grep -c 'left after 110 pongs' "$so")" -ge 4 ] || past "$end"; do sleep 0.02; done
	[ "$(grep -c 'left after 110 pongs' "$so")" -eq 4 ] || { [ $st -eq 0 ] && st=95; }
else
	st=90
fi
kill "$sp" 2>/dev/null
wait "$sp" 2>/dev/null
[ $st -eq 0 ] || cat "$so"
check "UD: 4 clients at once, one server endpoint, replies by source" "$st"
# rcc-pingpong -c ud beside rdma-core's ibv_ud_pingpong, 1 KiB (its default size,
# within the 1024-byte MTU), busy polling, in the same boot: half round trips
# printed side by side (ibv_ud_pingpong's usec/iter halved), never asserted
port=$((port + 1))
server_client "pp-ud-cmp" "$ready" "$pp -T verbs -c ud -p $port -b $RXE_IP --once" \
	"$pp -T verbs -c ud -p $port -n 1000 -S 1024 $RXE_IP"
st=$?
rcc_ud=$(sed -n 's/.*median \([0-9.]*\).*/\1/p' "$RXE_LOGDIR/pp-ud-cmp.cli" | head -n1)
rcc_ud_avg=$(sed -n 's/.*avg \([0-9.]*\).*/\1/p' "$RXE_LOGDIR/pp-ud-cmp.cli" | head -n1)
check "rcc-pingpong -c ud, 1 KiB x 1000" "$st" "median ${rcc_ud:-?} us, avg ${rcc_ud_avg:-?} us"
if command -v ibv_ud_pingpong >/dev/null; then
	port=$((port + 1))
	ud_args="-d ${RXE_DEV:-rxe0} -g $RXE_GID_IDX -p $port -n 1000 -s 1024"
	# shellcheck disable=SC2086
	run_bounded "$T_SHORT" taskset -c "$SERVER_CPU" ibv_ud_pingpong $ud_args \
		>"$RXE_LOGDIR/ud-ibv.srv" 2>&1 &
	sp=$!
	st=0
	wait_listen "$port" 15 || st=90
	# shellcheck disable=SC2086
	[ $st -ne 0 ] || run_bounded "$T_SHORT" taskset -c "$CLIENT_CPU" ibv_ud_pingpong \
		$ud_args "$RXE_IP" >"$RXE_LOGDIR/ud-ibv.cli" 2>&1 || st=$?
	[ $st -eq 90 ] && kill "$sp" 2>/dev/null
	wait "$sp" || [ $st -ne 0 ] || st=$?
	[ $st -eq 0 ] || cat "$RXE_LOGDIR/ud-ibv.srv" "$RXE_LOGDIR/ud-ibv.cli" 2>/dev/null
	ibv_ud=$(sed -n 's/.* = \([0-9.]*\) usec\/iter.*/\1/p' "$RXE_LOGDIR/ud-ibv.cli" |
		awk '{printf "%.2f", $1 / 2}')
	check "ibv_ud_pingpong, 1 KiB x 1000" "$st" "half round trip avg ${ibv_ud:-?} us"
	log "UD ping-pong, 1 KiB, half round trip, us (same boot; printed, not asserted):" \
		"rcc-pingpong -c ud avg ${rcc_ud_avg:-?} (median ${rcc_ud:-?}), ibv_ud_pingpong avg ${ibv_ud:-?}"
else
	log "no ibv_ud_pingpong in the image: the UD comparison is skipped"
fi
# rcc-pingpong --srq (one shared receive queue on the server) beside rdma-core's
# ibv_srq_pingpong (one QP, -q 1), 16 B, in the same boot: their half round trips
# printed side by side (ibv_srq_pingpong's usec/iter halved), never asserted
port=$((port + 1))
server_client "pp-srq" "$ready" "$pp -T verbs -p $port -b $RXE_IP --srq 16 -S 16 --once" \
	"$pp -T verbs -p $port -n 1000 -S 16 $RXE_IP"
st=$?
rcc=$(sed -n 's/.*median \([0-9.]*\).*/\1/p' "$RXE_LOGDIR/pp-srq.cli" | head -n1)
rcc_avg=$(sed -n 's/.*avg \([0-9.]*\).*/\1/p' "$RXE_LOGDIR/pp-srq.cli" | head -n1)
check "rcc-pingpong --srq 16, 16 B x 1000" "$st" "median ${rcc:-?} us, avg ${rcc_avg:-?} us"
if command -v ibv_srq_pingpong >/dev/null; then
	port=$((port + 1))
	srq_args="-d ${RXE_DEV:-rxe0} -g $RXE_GID_IDX -p $port -q 1 -n 1000 -s 16"
	# shellcheck disable=SC2086
	run_bounded "$T_SHORT" taskset -c "$SERVER_CPU" ibv_srq_pingpong $srq_args \
		>"$RXE_LOGDIR/srq-ibv.srv" 2>&1 &
	sp=$!
	st=0
	wait_listen "$port" 15 || st=90
	# shellcheck disable=SC2086
	[ $st -ne 0 ] || run_bounded "$T_SHORT" taskset -c "$CLIENT_CPU" ibv_srq_pingpong \
		$srq_args "$RXE_IP" >"$RXE_LOGDIR/srq-ibv.cli" 2>&1 || st=$?
	[ $st -eq 90 ] && kill "$sp" 2>/dev/null
	wait "$sp" || [ $st -ne 0 ] || st=$?
	[ $st -eq 0 ] || cat "$RXE_LOGDIR/srq-ibv.srv" "$RXE_LOGDIR/srq-ibv.cli" 2>/dev/null
	ibv=$(sed -n 's/.* = \([0-9.]*\) usec\/iter.*/\1/p' "$RXE_LOGDIR/srq-ibv.cli" |
		awk '{printf "%.2f", $1 / 2}')
	check "ibv_srq_pingpong -q 1, 16 B x 1000" "$st" "half round trip avg ${ibv:-?} us"
	log "SRQ ping-pong, 16 B, half round trip, us (same boot; printed, not asserted):" \
		"rcc-pingpong --srq avg ${rcc_avg:-?} (median ${rcc:-?}), ibv_srq_pingpong avg ${ibv:-?}"
else
	log "no ibv_srq_pingpong in the image: the SRQ comparison is skipped"
fi
suite_result
