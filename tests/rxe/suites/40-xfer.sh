#!/usr/bin/env bash
# rcc-xfer end to end on verbs (Soft-RoCE): the tcp test scripts of tests/xfer
# run again with -T verbs against $RXE_IP -- every file size, wrong keys, hostile
# names, a changing source, a full disk, killed and interrupted peers, a garbage
# peer on the verbs API -- plus manual bring-up and a timed 128 MiB transfer with
# the peers pinned apart.
source tests/rxe/lib.sh
xfer=$RCC_BUILD/tools/rcc-xfer/rcc-xfer
peer=$RCC_BUILD/tests/xfer/xfer_garbage_peer
[ -x "$xfer" ] && [ -x "$peer" ] || { log "no $xfer or $peer (build the tools and tests)"; exit 1; }
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
	if [ "$st" -eq 77 ]; then
		st=0
		note="skipped: $(grep SKIPPED "$log")"
	fi
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
export XFER_EXTRA="--bringup manual"
script files
unset XFER_EXTRA

# Throughput with the peers pinned apart (functional figure; TCG is slow).
work=$(mktemp -d)
mkdir -p "$work/dst"
head -c $((128 << 20)) /dev/urandom > "$work/big.bin"
export RCC_XFER_KEY=rxe-suite-key-0123456789
port=$((7700 + RANDOM % 100))
t0=$(now)
T_SHORT=180 server_client xfer-128m 'listening on' \
	"$xfer recv -T verbs --once --dir $work/dst --listen $RXE_IP:$port" \
	"$xfer send -T verbs $work/big.bin $RXE_IP:$port"
st=$?
[ "$st" -eq 0 ] && ! cmp -s "$work/big.bin" "$work/dst/big.bin" && st=1
check "128 MiB, pinned apart" "$st" "$(grep -o '([0-9.]* [kMG]B/s)' "$RXE_LOGDIR/xfer-128m.cli") $(since "$t0") s"
rm -rf "$work"
suite_result
