#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Names: '..', '/' components and absolute paths are refused (files land only
# in the receiver's folder); an existing file is not replaced without --force;
# --no-clobber refuses even then; a name with control characters is shown
# escaped on both sides.
. "$(dirname "$0")/lib.sh"

src=$WORK/src dst=$WORK/box/dst
mkdir -p "$src" "$WORK/box"
mkfile "$src/f" 5000
start_recv r "$dst" || finish

for bad in ../escape /tmp/abs-escape a/b .. . sub/../x .x.rcc-part "$(printf 'new\nline')"; do
	send s "$RECV_PORT_r" --as "$bad" "$src/f"
	st=$?
	expect_status "name '${bad//$'\n'/\\n}' refused" 4 "$st" "$WORK/s.err"
	check "  with a reason" has_line "$WORK/s.err" 'receiver: refused name: '
done
check "nothing escaped the folder" test ! -e "$WORK/box/escape" -a ! -e /tmp/abs-escape
check "nothing stored at all" test -z "$(ls -A "$dst")"
check "receiver logged the refusals" test "$(grep -c 'refused name' "$WORK/r.err")" -eq 8

# A name that would steer the terminal and forge a log line reaches both sides'
# output escaped: no raw ESC, no line it started, the bytes shown as \xHH.
evil=$'evil\e[2J\nrcc-xfer: forged line'
send s7 "$RECV_PORT_r" --as "$evil" "$src/f"
expect_status "name with ESC and newline refused" 4 $? "$WORK/s7.err"
for side in r s7; do
	check "  $side: no raw ESC byte in its output" eval "! grep -q $'\\e' '$WORK/$side.err'"
	check "  $side: no forged line" eval "! grep -q '^rcc-xfer: forged line' '$WORK/$side.err'"
done
check "  receiver: the name shown escaped" \
	grep -qF 'evil\x1b[2J\x0arcc-xfer: forged line: refused name' "$WORK/r.err"
check "  nothing stored" test -z "$(ls -A "$dst")"

# Existing destination.
echo original > "$dst/keep.txt"
send s2 "$RECV_PORT_r" --as keep.txt "$src/f"
expect_status "existing file without --force" 4 $? "$WORK/s2.err"
check "  says it exists" has_line "$WORK/s2.err" "'keep.txt' exists \(the sender may pass --force"
check "  content untouched" test "$(cat "$dst/keep.txt")" = original
check "  no partial files" test ! -e "$dst/.keep.txt.rcc-part"
send s3 "$RECV_PORT_r" --force --as keep.txt "$src/f"
expect_status "existing file with --force" 0 $? "$WORK/s3.err"
check "  replaced" same "$src/f" "$dst/keep.txt"
mkdir "$dst/adir"
send s4 "$RECV_PORT_r" --force --as adir "$src/f"
expect_status "a directory is never replaced" 4 $? "$WORK/s4.err"

# A refused file does not stop the others (status of the first failure).
send s5 "$RECV_PORT_r" "$src/f" "$dst/keep.txt" "$WORK/missing" 2>/dev/null
expect_status "mixed batch: first failure wins" 4 $? "$WORK/s5.err"
check "  the good file still arrived" same "$src/f" "$dst/f"
check "  the missing file is reported" has_line "$WORK/s5.err" 'missing: cannot open'

dst2=$WORK/box/dst2
start_recv nc "$dst2" --no-clobber || finish
echo original > "$dst2/keep.txt"
send s6 "$RECV_PORT_nc" --force --as keep.txt "$src/f"
expect_status "--no-clobber receiver with --force sender" 4 $? "$WORK/s6.err"
check "  says it never replaces" has_line "$WORK/s6.err" 'never replaces files'
check "  content untouched" test "$(cat "$dst2/keep.txt")" = original
finish
