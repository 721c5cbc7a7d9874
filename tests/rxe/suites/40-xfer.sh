#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# rcc-xfer end to end on verbs (Soft-RoCE): the tcp test scripts of tests/xfer
# run again with -T verbs against $RXE_IP -- every file size, wrong keys, hostile
# names, a changing source, a full disk, killed and interrupted peers, a garbage
# peer on the verbs API, connections that never authenticate -- plus manual
# bring-up and a 256 MiB file.
source tests/rxe/lib.sh
xfer=$RCC_BUILD/tools/rcc-xfer/rcc-xfer
peer=$RCC_BUILD/tests/xfer/xfer_garbage_peer
stall=$RCC_BUILD/tests/xfer/xfer_stall_peer
[ -x "$xfer" ] && [ -x "$peer" ] && [ -x "$stall" ] ||
	{ log "no $xfer, $peer or $stall (build the tools and tests)"; exit 1; }
export XFER_TRANSPORT=verbs XFER_HOST=$RXE_IP XFER_T=120
export TMPDIR=${TMPDIR:-/tmp}

# script NAME [EXTRA...]: tests/xfer/x-NAME.sh on verbs; output in $RXE_LOGDIR.
script() {
	local name=$1 log=$RXE_LOGDIR/x-$1${XFER_EXTRA:+-manual}.log t0 st note
	shift
	t0=$(now)
	run_bounded "$T_LONG" bash "tests/xfer/x-$name.sh" "$xfer" "$@" > "$log" 2>&1
	st=$?
	note="$(grep -E '^[0-9]+ passed' "$log" | tail -1), $(since "$t0") s"
	[ "$st" -eq 77 ] && note="skipped: $(grep -i skip "$log" | head -n1)"
	check "x-$name${XFER_EXTRA:+ ($XFER_EXTRA)}" "$st" "$note"
	[ "$st" -eq 0 ] || { grep -v '^  ok' "$log" | tail -40; }
}

script files
script auth
script names
script source-change
script disk-full
script interrupt
script garbage "$peer"
script hostile "$stall"
export XFER_EXTRA="--bringup manual"
script files
unset XFER_EXTRA

# A large file byte-identical (sha256sum) with both sides under a quarter of
# its size resident: 256 MiB, 8 times the verbs window of 32 MiB (rxe in
# TCG moves about 26 MB/s: 1 GiB took 176 s of this suite's budget; the
# tcp suite sends the full 1 GiB). The guest's /tmp is too small for two
# copies, so a tmpfs of its own holds them.
large=$(mktemp -d)
if mount -t tmpfs -o size=600m rcc-xfer-large "$large"; then
	export XFER_LARGE_DIR=$large XFER_LARGE_MIB=256 XFER_T_LARGE=300
	T_LONG=400 script large
	grep -o '"rate_bps":[0-9]*' "$RXE_LOGDIR/x-large.log" |
		awk -F: '{ printf "  256 MiB at %.1f MB/s\n", $2 / 1e6 }'
	unset XFER_LARGE_DIR XFER_LARGE_MIB
	umount "$large"
else
	check "x-large" 1 "mounting a 600 MiB tmpfs for the 256 MiB transfer failed"
fi
rmdir "$large"
suite_result
