#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A source file that changes while it is being sent (written in place, grown,
# or truncated) ends as BAD: the sender exits 5, the receiver reports it, and
# neither a final file nor a partial one is left behind.
. "$(dirname "$0")/lib.sh"

src=$WORK/src dst=$WORK/dst
mkdir -p "$src"
MID=$((4 << 20))

# change NAME HOW: send a 24 MiB file slowly, change it mid-way.
change() {
	local name=$1 how=$2 f=$src/$1
	mkfile "$f" $((24 << 20))
	send_bg "s-$name" "$RECV_PORT_r" --json --limit-rate 8M "$f"
	if ! wait_until 30 progress_at_least "$WORK/s-$name.out" "$MID"; then
		fail "$name: transfer did not get going"
		return
	fi
	case $how in
	overwrite) printf 'X' | dd of="$f" bs=1 seek=100 conv=notrunc status=none ;;
	append) printf 'more' >> "$f" ;;
	truncate) truncate -s $((20 << 20)) "$f" ;;
	esac
	wait_status "$SEND_PID" 30
	expect_status "$name ($how during the send): sender" 5 "$ST" "$WORK/s-$name.err"
	check "$name: sender says the file changed" has_line "$WORK/s-$name.err" 'changed while it was being sent'
	check "$name: json failure event" has_line "$WORK/s-$name.out" '"event":"failed".*"code":"source-changed"'
	check "$name: receiver reports it" wait_until 10 line_in "$WORK/r.err" "$name: the sender abandoned the file"
	check "$name: no final or partial file" no_trace "$dst" "$name"
}

start_recv r "$dst" --chunk-size 1M || finish
change inplace overwrite
change grown append
change shrunk truncate
finish
