#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# rcc-pingpong end to end on verbs: both bring-ups x CQ modes poll/wait/fd x server
# thread modes per-ep/shared. Server pinned to SERVER_CPU, client to CLIENT_CPU.
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
