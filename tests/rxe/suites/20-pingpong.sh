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
suite_result
