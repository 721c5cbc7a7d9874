#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Connections that pass the transport handshake and never authenticate never
# keep an authenticated sender out: they hold no --max-conns slot, at most
# --max-unauth are held (the oldest is dropped first), and each has only
# --auth-timeout to authenticate.
. "$(dirname "$0")/lib.sh"
STALL=${2:?usage: $0 rcc-xfer stall_peer}

# hold_stalled NAME PORT N: N unauthenticated connections, held in the
# background until the script ends; fails unless all N connected.
hold_stalled() {
	local name=$1 port=$2 n=$3
	mkfifo "$WORK/$name.in"
	XFER_TEST_ADDR=$XFER_HOST:$port RCC_TEST_TRANSPORT=$XFER_TRANSPORT \
		timeout -s KILL "$XFER_T" "$STALL" "$n" < "$WORK/$name.in" > "$WORK/$name.out" 2>&1 &
	PIDS+=("$!")
	exec {hold}> "$WORK/$name.in" # keeps its stdin open: it holds until we exit
	wait_until 30 line_in "$WORK/$name.out" '^holding '
	has_line "$WORK/$name.out" "^holding $n\$"
}

src=$WORK/src dst=$WORK/dst
mkdir -p "$src"
mkfile "$src/a.bin" 3000000

# One served slot, four pre-authentication slots, and a long auth deadline:
# only dropping the oldest can make room here, not the clock.
start_recv r "$dst" --max-conns 1 --max-unauth 4 --auth-timeout 60 || finish
check "8 connections held without authenticating" hold_stalled st "$RECV_PORT_r" 8
t0=$(now_ms)
send s1 "$RECV_PORT_r" "$src/a.bin"
expect_status "an authenticated sender is served behind them" 0 $? "$WORK/s1.err" "$WORK/r.err"
check "  its file arrived byte-identical" same "$src/a.bin" "$dst/a.bin"
check "  before any auth deadline could free a slot (60 s; took $(($(now_ms) - t0)) ms)" test $(($(now_ms) - t0)) -lt 45000
check "the receiver dropped the oldest unauthenticated ones" \
	has_line "$WORK/r.err" 'dropping .*have not authenticated yet \(--max-unauth\)'
check "the receiver is still running" kill -0 "$RECV_PID_r"
send s2 "$RECV_PORT_r" --as again.bin "$src/a.bin"
expect_status "and serves the next one too" 0 $? "$WORK/s2.err" "$WORK/r.err"

# A short authentication deadline: silent connections go by themselves.
dst2=$WORK/dst2
start_recv r2 "$dst2" --max-conns 1 --auth-timeout 1 || finish
check "2 connections held without authenticating" hold_stalled st2 "$RECV_PORT_r2" 2
check "the receiver drops them at --auth-timeout" \
	wait_until 20 eval "[ \$(grep -c 'authentication\|timeout\|silent' '$WORK/r2.err') -ge 2 ]"
send s3 "$RECV_PORT_r2" "$src/a.bin"
expect_status "an authenticated sender afterwards" 0 $? "$WORK/s3.err" "$WORK/r2.err"
check "  its file arrived byte-identical" same "$src/a.bin" "$dst2/a.bin"
finish
