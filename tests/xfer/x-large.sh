#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A 1 GiB file arrives byte-identical (label "slow"). Memory stays bounded:
# each side's peak resident set is reported and must stay under a quarter of
# the file (256 MiB), so a side that held the file would fail.
# XFER_LARGE_MIB: another size (the Soft-RoCE suite's 256: the same claim, a
# file 8 times the verbs window, in a quarter of the emulated NIC's time).
. "$(dirname "$0")/lib.sh"
XFER_T=${XFER_T_LARGE:-500}
MIB=${XFER_LARGE_MIB:-1024}
BOUND_MIB=$((MIB / 4))

# tmpfs when there is room, so the test measures rcc-xfer and not the disk;
# XFER_LARGE_DIR names a folder with room for two copies (the Soft-RoCE suite
# mounts one, as its /tmp is too small).
base=$WORK
if [ -n "${XFER_LARGE_DIR:-}" ]; then
	base=$(mktemp -d "$XFER_LARGE_DIR/rcc-xfer-large.XXXXXX")
elif [ -d /dev/shm ] && [ "$(df -k --output=avail /dev/shm | tail -1)" -gt $((MIB * 3 << 10)) ]; then
	base=$(mktemp -d /dev/shm/rcc-xfer-large.XXXXXX)
fi
trap 'rm -rf "$base"; cleanup' EXIT
src=$base/src dst=$base/dst
mkdir -p "$src"
head -c $((MIB << 20)) /dev/urandom > "$src/large.bin"
start_recv r "$dst" --once --json || finish
send s "$RECV_PORT_r" --json "$src/large.bin"
expect_status "$MIB MiB sent" 0 $? "$WORK/s.err" "$WORK/r.err"
wait_status "$RECV_PID_r" 60
expect_status "receiver done" 0 "$ST" "$WORK/r.err"
check "$MIB MiB byte-identical (sha256sum)" same "$src/large.bin" "$dst/large.bin"
grep '"event":"sent"' "$WORK/s.out"
rss_of() { grep -o '"max_rss_kib":[0-9]*' "$1" | tail -1 | cut -d: -f2; }
srss=$(rss_of "$WORK/s.out") rrss=$(rss_of "$WORK/r.out")
say "peak resident memory: sender $((${srss:-0} / 1024)) MiB, receiver $((${rrss:-0} / 1024)) MiB"
check "sender stays under $BOUND_MIB MiB" test -n "$srss" -a "${srss:-0}" -lt $((BOUND_MIB * 1024))
check "receiver stays under $BOUND_MIB MiB" test -n "$rrss" -a "${rrss:-0}" -lt $((BOUND_MIB * 1024))
finish
