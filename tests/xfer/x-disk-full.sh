#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A full disk on the receiver: a clear error on both sides, never a truncated
# final file; the verified part is kept for resume (or nothing is left when
# there is nothing to keep), and the transfer completes once there is room.
# Needs root for a small tmpfs; otherwise it says so and is skipped (77).
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" != 0 ]; then
	say "SKIPPED: mounting a small tmpfs needs root"
	exit 77
fi
src=$WORK/src small=$WORK/small
mkdir -p "$src" "$small"
if ! mount -t tmpfs -o size=2m rcc-xfer-test "$small"; then
	say "SKIPPED: cannot mount a tmpfs here"
	exit 77
fi
MOUNTS+=("$small")
mkfile "$src/big.bin" $((5 << 20))

# 1. Space is reserved up front: the refusal comes before any data moves.
start_recv r "$small" || finish
send s1 "$RECV_PORT_r" "$src/big.bin"
expect_status "too big for the disk: sender" 4 $? "$WORK/s1.err"
check "sender: clear reason" has_line "$WORK/s1.err" 'receiver: no space left on the receiver for .big.bin.'
check "receiver: same reason" has_line "$WORK/r.err" 'no space left on the receiver for .big.bin.'
check "no final or partial file" no_trace "$small" big.bin

# 2. Without reservation the disk fills during the transfer.
start_recv r2 "$small" --no-preallocate --chunk-size 256K || finish
send s2 "$RECV_PORT_r2" "$src/big.bin"
expect_status "disk fills mid-transfer: sender" 4 $? "$WORK/s2.err"
check "sender: clear reason" has_line "$WORK/s2.err" 'disk filled up during the transfer'
check "receiver: same reason" has_line "$WORK/r2.err" 'disk filled up during the transfer'
check "no final file" test ! -e "$small/big.bin"
part=$small/.big.bin.rcc-part
if [ -e "$part" ]; then
	check "part holds only verified data" test "$(stat -c %s "$part")" -le $((2 << 20))
	check "resume record kept with it" test -s "$small/.big.bin.rcc-state"
fi
check "the receiver keeps serving" kill -0 "$RECV_PID_r2"

# 3. Room again: the same command completes (resuming what was kept).
mount -o remount,size=16m "$small"
send s3 "$RECV_PORT_r2" "$src/big.bin"
expect_status "after making room: sender" 0 $? "$WORK/s3.err"
check "byte-identical" same "$src/big.bin" "$small/big.bin"
check "no partial files left" test ! -e "$part" -a ! -e "$small/.big.bin.rcc-state"
finish
