# SPDX-License-Identifier: BSD-3-Clause
# Helpers for the rcc-xfer script tests (bash). Sourced by every x-*.sh test:
#   XFER      the rcc-xfer binary (first argument of the test)
#   WORK      a private temporary folder, removed at exit
# Every process a test starts is bounded by `timeout`, killed by its pid at exit,
# and waited for by polling (ready file, JSON progress lines), never by sleeping.

set -u
XFER=${1:?usage: $0 path/to/rcc-xfer}
XFER_T=${XFER_T:-60}        # seconds any one rcc-xfer process may run
WORK=$(mktemp -d "${TMPDIR:-/tmp}/rcc-xfer-test.XXXXXX")
export RCC_XFER_KEY=${RCC_XFER_KEY:-test-key-0123456789abcdef}
export XFER_TRANSPORT=${XFER_TRANSPORT:-tcp}
XFER_HOST=${XFER_HOST:-127.0.0.1}
XFER_EXTRA=${XFER_EXTRA:-}  # more options for every rcc-xfer (e.g. "--bringup manual")
PIDS=()
MOUNTS=()

cleanup() {
	local p m
	for p in "${PIDS[@]}"; do kill_tree "$p"; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	for m in "${MOUNTS[@]}"; do umount "$m" 2>/dev/null; done
	[ -n "$KEEP" ] && { say "kept $WORK"; return; }
	rm -rf "$WORK"
}
trap cleanup EXIT
KEEP=${KEEP:-}

. "$(dirname "${BASH_SOURCE[0]}")/../common/checks.sh"

# mkfile PATH SIZE_BYTES: random content.
mkfile() { head -c "$2" /dev/urandom > "$1"; }
same() { [ "$(sha256sum < "$1")" = "$(sha256sum < "$2")" ]; }
# no_trace DIR NAME: neither NAME nor its partial files exist in DIR.
no_trace() { [ ! -e "$1/$2" ] && [ ! -e "$1/.$2.rcc-part" ] && [ ! -e "$1/.$2.rcc-state" ]; }
# line_in FILE REGEX: a line matches (quiet: for polling).
line_in() { grep -Eq -- "$2" "$1"; }
# has_line FILE REGEX: a line matches; if not, show the end of FILE.
has_line() {
	grep -Eq -- "$2" "$1" && return 0
	say "    (no line of $1 matches '$2'; it ends with:)"
	tail -5 "$1" 2>/dev/null | sed 's/^/      /'
	return 1
}

# start_recv NAME DIR [ARGS...]: receiver in the background on a free port.
# Sets RECV_PID_<NAME>, RECV_PORT_<NAME>; logs in $WORK/NAME.out / .err.
start_recv() {
	local name=$1 dir=$2 ready="$WORK/$1.port"
	shift 2
	mkdir -p "$dir"
	rm -f "$ready"
	# shellcheck disable=SC2086
	timeout -s KILL "$XFER_T" "$XFER" recv -T "$XFER_TRANSPORT" $XFER_EXTRA --dir "$dir" \
		--listen "$XFER_HOST:0" --ready-file "$ready" "$@" \
		> "$WORK/$name.out" 2> "$WORK/$name.err" &
	local pid=$!
	PIDS+=("$pid")
	printf -v "RECV_PID_$name" '%s' "$pid"
	# ready, or given up: a receiver that has exited will never write the file
	if ! wait_until 20 eval "test -s '$ready' || ! kill -0 $pid 2>/dev/null" ||
		! test -s "$ready"; then
		fail "receiver $name did not become ready:"
		cat "$WORK/$name.err"
		return 1
	fi
	printf -v "RECV_PORT_$name" '%s' "$(cat "$ready")"
}

# send NAME PORT [ARGS...]: run a sender in the foreground; status in $?.
# Output in $WORK/NAME.out / .err.
send() {
	local name=$1 port=$2
	shift 2
	# shellcheck disable=SC2086
	timeout -s KILL "$XFER_T" "$XFER" send -T "$XFER_TRANSPORT" $XFER_EXTRA "$@" \
		"$XFER_HOST:$port" > "$WORK/$name.out" 2> "$WORK/$name.err"
}

# send_bg NAME PORT [ARGS...]: same, in the background; sets SEND_PID.
send_bg() {
	local name=$1 port=$2
	shift 2
	# shellcheck disable=SC2086
	timeout -s KILL "$XFER_T" "$XFER" send -T "$XFER_TRANSPORT" $XFER_EXTRA "$@" \
		"$XFER_HOST:$port" > "$WORK/$name.out" 2> "$WORK/$name.err" &
	SEND_PID=$!
	PIDS+=("$SEND_PID")
}

# progress_at_least FILE BYTES: a JSON progress line at or past BYTES.
progress_at_least() {
	grep -o '"event":"progress"[^}]*"bytes":[0-9]*' "$1" 2>/dev/null |
		sed 's/.*"bytes"://' | awk -v b="$2" '$1 >= b {found=1} END {exit !found}'
}

# expect_status WHAT WANT GOT [LOGS...]: compare exit statuses, show logs on failure.
expect_status() {
	local what=$1 want=$2 got=$3 f
	shift 3
	if [ "$got" = "$want" ]; then
		pass "$what (exit $got)"
	else
		fail "$what: exit $got, wanted $want"
		for f in "$@"; do say "--- $f"; sed 's/^/    /' "$f" 2>/dev/null | tail -20; done
	fi
}
