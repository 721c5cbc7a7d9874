#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A peer that sends garbage (tests/xfer/garbage_peer.c): the receiver refuses
# every case cleanly, stores nothing, and still serves a real sender after.
# Its -t 3 bounds how long it waits for a peer that goes silent.
. "$(dirname "$0")/lib.sh"
PEER=${2:?usage: $0 rcc-xfer garbage_peer}

dst=$WORK/dst
start_recv r "$dst" -t 3 || finish
XFER_TEST_ADDR=$XFER_HOST:$RECV_PORT_r RCC_TEST_TRANSPORT=$XFER_TRANSPORT \
	timeout -s KILL 90 "$PEER" > "$WORK/peer.out" 2>&1
st=$?
expect_status "every hostile case refused as expected" 0 "$st" "$WORK/peer.out" "$WORK/r.err"
check "receiver still running" kill -0 "$RECV_PID_r"
check "nothing stored by the hostile peer" test -z "$(ls -A "$dst")"
mkfile "$WORK/good.bin" 300000
send s "$RECV_PORT_r" "$WORK/good.bin"
expect_status "a real sender afterwards" 0 $? "$WORK/s.err" "$WORK/r.err"
check "its file arrived" same "$WORK/good.bin" "$dst/good.bin"
finish
