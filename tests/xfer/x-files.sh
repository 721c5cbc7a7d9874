#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Files of 0 B, 1 B, 4 KiB + 1 and 64 MiB arrive byte-identical (checked with
# sha256sum), with mode and modification time; several senders at once; the
# receipt printed by the sender matches the receiver's; the widest window (64
# chunks) in flight without a stall.
. "$(dirname "$0")/lib.sh"

src=$WORK/src dst=$WORK/dst
mkdir -p "$src"
mkfile "$src/zero" 0
mkfile "$src/one" 1
mkfile "$src/page-plus-one" 4097
mkfile "$src/big.bin" $((64 << 20))
mkfile "$src/other.bin" $((3 << 20))
chmod 640 "$src/page-plus-one"
touch -d '2020-02-02 02:02:02.123456789' "$src/one"

start_recv r "$dst" --json || finish
send s1 "$RECV_PORT_r" "$src/zero" "$src/one" "$src/page-plus-one" "$src/big.bin"
expect_status "send four files" 0 $? "$WORK/s1.err" "$WORK/r.err"
for f in zero one page-plus-one big.bin; do
	check "$f arrived byte-identical" same "$src/$f" "$dst/$f"
	check "$f left no partial files" test ! -e "$dst/.$f.rcc-part" -a ! -e "$dst/.$f.rcc-state"
done
check "mode kept (640)" test "$(stat -c %a "$dst/page-plus-one")" = 640
check "mtime kept to the nanosecond" test "$(stat -c %y "$dst/one")" = "$(stat -c %y "$src/one")"
check "summary line per file" test "$(grep -c '^sent ' "$WORK/s1.out")" -eq 4
check "summary line has throughput" has_line "$WORK/s1.out" '^sent .*big.bin: 64 MiB in [0-9.]+ s \([0-9.]+ [kMG]?B/s\)'
check "multi-file total line" has_line "$WORK/s1.out" '^4 of 4 files sent'

# The receipt the sender verified and printed is the one the receiver issued.
rs=$(sed -n 's/^sent .*big.bin.*receipt \([0-9a-f]*\)$/\1/p' "$WORK/s1.out")
rr=$(grep '"event":"received"' "$WORK/r.out" | grep '"name":"big.bin"' |
	sed 's/.*"receipt":"\([0-9a-f]*\)".*/\1/')
check "receipt printed by both sides and equal" test -n "$rs" -a "$rs" = "$rr"

# Two senders at once (the receiver serves each connection on its own thread).
mkdir -p "$src/b"
cp "$src/big.bin" "$src/b/twin.bin"
send_bg s2 "$RECV_PORT_r" "$src/other.bin"
p2=$SEND_PID
send s3 "$RECV_PORT_r" "$src/b/twin.bin"
st3=$?
wait_status "$p2" 30; st2=$ST
expect_status "concurrent sender 1" 0 "$st2" "$WORK/s2.err"
expect_status "concurrent sender 2" 0 "$st3" "$WORK/s3.err"
check "concurrent files identical" same "$src/other.bin" "$dst/other.bin"
check "concurrent files identical (2)" same "$src/b/twin.bin" "$dst/twin.bin"

# The widest window: 64 chunks in flight, each holding one of the receiver's
# message-channel receives until it is read, beside the control messages
# both ways (the credits both ends agree on cover it).
start_recv wide "$WORK/dst-wide" --window 64 --chunk-size 64K || finish
send s8 "$RECV_PORT_wide" "$src/other.bin"
expect_status "64-chunk window: sent" 0 $? "$WORK/s8.err" "$WORK/wide.err"
check "64-chunk window: file identical" same "$src/other.bin" "$WORK/dst-wide/other.bin"

# A receiver at its --max-conns turns a further sender away at once.
start_recv one "$WORK/dst-one" --max-conns 1 --chunk-size 1M || finish
send_bg s6 "$RECV_PORT_one" --json --limit-rate 8M "$src/big.bin"
p6=$SEND_PID
check "busy: first transfer under way" wait_until 30 progress_at_least "$WORK/s6.out" 1
send s7 "$RECV_PORT_one" "$src/one"
expect_status "busy: second sender turned away" 6 $? "$WORK/s7.err"
check "busy: says why" has_line "$WORK/s7.err" 'turned the connection away: already serving 1 connections'
check "busy: receiver logs it" has_line "$WORK/one.err" 'turned away .*--max-conns'
kill_tree "$p6"
wait "$p6" 2> /dev/null

# JSON mode: one object per line for scripts.
send s4 "$RECV_PORT_r" --json --as renamed.bin "$src/one"
expect_status "send --json --as" 0 $? "$WORK/s4.err"
check "json 'sent' event" has_line "$WORK/s4.out" '^\{"event":"sent","file":".*one","name":"renamed.bin","size":1,'
check "json summary event" has_line "$WORK/s4.out" '^\{"event":"summary","files":1,"ok":1,'
check "--as stores under the new name" same "$src/one" "$dst/renamed.bin"

# Quiet mode prints nothing on success.
send s5 "$RECV_PORT_r" -q --as quiet.bin "$src/one"
expect_status "send -q" 0 $? "$WORK/s5.err"
check "-q prints nothing" test ! -s "$WORK/s5.out" -a ! -s "$WORK/s5.err"
finish
