#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# rcc-pingpong end to end on tcp: a server on an ephemeral port serves several
# concurrent clients in each thread and completion mode with every pong
# verified; its progress lines reach a log while it runs; --verify catches a
# server that corrupts one byte of a pong (exit 3), and only --no-verify lets
# it pass; a peer that sends garbage does not stop the server; -c uc serves UC
# endpoints and turns an RC client away; --srq serves every client from one
# shared receive queue.
#   pingpong.sh RCC_PINGPONG CORRUPT_SERVER
set -u
PP=${1:?usage: $0 rcc-pingpong corrupt_server}
CORRUPT=${2:-}
T=60 # seconds any one process may run
WORK=$(mktemp -d "${TMPDIR:-/tmp}/rcc-pp-test.XXXXXX")
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill_tree "$p"; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	rm -rf "$WORK"
}
trap cleanup EXIT

. "$(dirname "$0")/../common/checks.sh"
alive() { kill -0 "$1" 2>/dev/null; }
# ready_or_dead LOG PID: the server printed its port, or exited (no use waiting).
ready_or_dead() { grep -q 'listening on .*:[0-9]* (transport' "$1" || ! alive "$2"; }

# start_server NAME [ARGS...]: sets SRV_PID, SRV_PORT; log in $WORK/NAME.srv
start_server() {
	local name=$1 log=$WORK/$1.srv
	shift
	timeout -s KILL "$T" "$PP" -T tcp -b 127.0.0.1 -p 0 "$@" > "$log" 2>&1 &
	SRV_PID=$!
	PIDS+=("$SRV_PID")
	SRV_PORT=
	wait_until 20 ready_or_dead "$log" "$SRV_PID"
	SRV_PORT=$(sed -n 's/.*listening on .*:\([0-9]*\) (transport.*/\1/p' "$log" | head -n1)
	if [ -z "$SRV_PORT" ]; then
		fail "server $name became ready:"
		sed 's/^/      /' "$log"
		return 1
	fi
}

# clients NAME N ARGS...: N clients at once against SRV_PORT; all must exit 0
# and say every pong was verified.
clients() {
	local name=$1 n=$2 i pids=() bad=0
	shift 2
	for i in $(seq "$n"); do
		timeout -s KILL "$T" "$PP" -T tcp -p "$SRV_PORT" "$@" 127.0.0.1 \
			> "$WORK/$name.$i.out" 2>&1 &
		pids+=("$!")
	done
	for i in $(seq "$n"); do
		if ! wait "${pids[$((i - 1))]}" ||
			! grep -q 'all pongs verified' "$WORK/$name.$i.out"; then
			bad=1
			sed 's/^/      /' "$WORK/$name.$i.out"
		fi
	done
	return $bad
}

for mode in poll wait fd hybrid; do
	for threads in per-ep shared; do
		name=$mode-$threads
		start_server "$name" -m "$mode" -t "$threads" || continue
		check "$name: 4 concurrent clients, 4 KiB x 300, verified" \
			clients "$name" 4 -m "$mode" -n 300 -S 4K
		check "$name: 64 KiB messages (several frames), verified" \
			clients "$name-big" 1 -m "$mode" -n 50 -S 64K
		# line-buffered progress: the line is in the log while the server runs
		check "$name: the server logged the clients' departures as they happened" \
			wait_until 5 eval "[ \$(grep -c 'left after' '$WORK/$name.srv') -ge 5 ]"
		check "$name: server still running" alive "$SRV_PID"
		signal_tool TERM "$SRV_PID"
		wait_status "$SRV_PID" 30
		check "$name: server exits 0 on SIGTERM (exit $ST)" test "$ST" = 0
		# check() itself succeeds either way (scripts under set -e go on)
		[ "$ST" = 0 ] || sed 's/^/      /' "$WORK/$name.srv"
		check "$name: server counts 5 clients served" \
			grep -q 'served 5 clients (0 turned away)' "$WORK/$name.srv"
	done
done

# -c uc on both sides: UC endpoints, every pong verified; the client says so
# (either case). A client of the other type is turned away with the reason,
# and the server goes on serving.
if start_server uc -c uc -t shared; then
	check "uc: 2 concurrent clients, 1 KiB x 200, verified" clients uc 2 -c UC -n 200 -S 1K
	check "uc: the client ran UC" grep -q '(cq poll, UC), all pongs verified' "$WORK/uc.1.out"
	check "uc: the server listens for UC" grep -q 'shared threads, cq poll, UC)' "$WORK/uc.srv"
	timeout -s KILL "$T" "$PP" -T tcp -p "$SRV_PORT" -n 10 127.0.0.1 > "$WORK/uc-rc.out" 2>&1
	check "uc: an RC client is refused (exit 1)" test $? -eq 1
	check "uc: ... and the server says why" \
		grep -q 'turned away: it asks for RC, this server serves UC (-c)' "$WORK/uc.srv"
	check "uc: then a UC client is still served" clients uc-after 1 -c uc -n 50
	check "uc: server still running" alive "$SRV_PID"
fi
# --srq 4: every client's pings land in one shared receive queue of 4
# buffers of -S bytes; a client with larger pings is turned away, saying why
if start_server srq --srq 4 -S 4K -t shared; then
	check "srq: 3 concurrent clients, 1 KiB x 300, verified" clients srq 3 -n 300 -S 1K
	check "srq: 4 KiB (the buffers' size), verified" clients srq-4k 1 -n 100 -S 4K
	timeout -s KILL "$T" "$PP" -T tcp -p "$SRV_PORT" -n 10 -S 8K 127.0.0.1 > "$WORK/srq-big.out" 2>&1
	check "srq: an 8 KiB client is refused (exit 1)" test $? -eq 1
	check "srq: ... and the server says why" \
		grep -q "its 8192-byte pings do not fit the SRQ's 4096-byte buffers" "$WORK/srq.srv"
	check "srq: server still running" alive "$SRV_PID"
fi
timeout -s KILL "$T" "$PP" --srq 4 127.0.0.1 > "$WORK/srq-cli.out" 2>&1
check "--srq on a client: a usage error (exit 2)" test $? -eq 2

# -c ud: one datagram endpoint serves every client, each pong routed by its
# ping's source (every one verified); the clients' goodbyes reach the server;
# an RC client is turned away and the server goes on; a client asking for
# more than one datagram carries is refused before it pings; --once ends the
# server with the first client's goodbye.
for mode in poll wait fd hybrid; do
	n=1
	[ "$mode" = poll ] && n=4
	start_server "ud-$mode" -c ud -m "$mode" || continue
	check "ud $mode: $n concurrent clients, 1 KiB x 300, verified" \
		clients "ud-$mode" "$n" -c ud -m "$mode" -n 300 -S 1K
	check "ud $mode: the client ran UD" \
		grep -q "(cq $mode, UD), all pongs verified" "$WORK/ud-$mode.1.out"
	check "ud $mode: the server logged every goodbye" \
		wait_until 5 eval "[ \$(grep -c 'left after 3.. pongs' '$WORK/ud-$mode.srv') -ge $n ]"
	check "ud $mode: the server listens for UD" grep -q "one datagram endpoint, cq $mode, UD)" \
		"$WORK/ud-$mode.srv"
	if [ "$mode" = poll ]; then
		timeout -s KILL "$T" "$PP" -T tcp -p "$SRV_PORT" -n 10 127.0.0.1 >"$WORK/ud-rc.out" 2>&1
		check "ud: an RC client is refused (exit 1)" test $? -eq 1
		timeout -s KILL "$T" "$PP" -T tcp -c ud -p "$SRV_PORT" -n 10 -S 8K 127.0.0.1 \
			>"$WORK/ud-big.out" 2>&1
		check "ud: an 8 KiB datagram client is refused (exit 1)" test $? -eq 1
		check "ud: ... saying what one datagram carries" \
			grep -q 'carries at most 4096 bytes per datagram' "$WORK/ud-big.out"
		check "ud: then a UD client is still served" clients ud-after 1 -c ud -n 50 -S 4K
	fi
	check "ud $mode: server still running" alive "$SRV_PID"
	signal_tool TERM "$SRV_PID"
	wait "$SRV_PID"
	check "ud $mode: server exits 0 on SIGTERM" test $? -eq 0
done
if start_server ud-once -c ud --once; then
	check "ud --once: a client is served" clients ud-once 1 -c ud -n 100
	check "ud --once: the server ends after its goodbye" wait_until 10 eval '! alive "$SRV_PID"'
fi
# a UD client at an RC server: it accepts instead of answering with an address
if start_server rc-for-ud; then
	timeout -s KILL "$T" "$PP" -T tcp -c ud -p "$SRV_PORT" -n 10 127.0.0.1 >"$WORK/ud-at-rc.out" 2>&1
	check "a UD client at an RC server fails (exit 1)" test $? -eq 1
	check "... saying the server is no UD server" \
		grep -q 'instead of answering with its datagram address' "$WORK/ud-at-rc.out"
	check "... and the RC server goes on" clients rc-after-ud 1 -n 50
fi

# a peer that sends garbage, then one that connects and leaves: the server serves on
if start_server garbage; then
	exec 3<>"/dev/tcp/127.0.0.1/$SRV_PORT" && printf 'GET / HTTP/1.0\r\n\r\n' >&3
	exec 3>&-
	exec 3<>"/dev/tcp/127.0.0.1/$SRV_PORT"
	exec 3>&-
	check "after garbage peers: a real client is served" clients garbage-after 1 -n 100
	check "after garbage peers: server still running" alive "$SRV_PID"
fi

# 200 connections that never say hello and 50 that send the first 4 bytes of
# one (the magic) and stall, all held open: a new client is still served, in
# under 5 s -- issue 11 asks for 1 s, and 5x is the margin for a loaded
# 2-core machine; it takes ~10 ms. The server's handshake deadline is 120 s,
# so a listener that waited on a silent peer would miss that for certain.
if RCC_HANDSHAKE_TIMEOUT_MS=120000 start_server flood; then
	idle=()
	for i in $(seq 250); do
		exec {fd}<>"/dev/tcp/127.0.0.1/$SRV_PORT" || continue
		idle+=("$fd")
		((i <= 200)) || printf 'RCCt' >&"$fd"
	done
	check "flood: 200 idle and 50 half-open connections opened" test "${#idle[@]}" -eq 250
	t0=$(now_ms)
	check "flood: a new client is served" clients flood 1 -n 100
	took=$(($(now_ms) - t0))
	check "flood: ... in under 5 s (took $took ms)" test "$took" -lt 5000
	check "flood: server still running" alive "$SRV_PID"
	for fd in "${idle[@]}"; do exec {fd}>&-; done
fi

# a server that corrupts the last byte of every pong
if [ -n "$CORRUPT" ]; then
	timeout -s KILL "$T" "$CORRUPT" "$WORK/corrupt.port" > "$WORK/corrupt.out" 2>&1 &
	PIDS+=("$!")
	if wait_until 20 test -s "$WORK/corrupt.port"; then
		timeout -s KILL "$T" "$PP" -T tcp -p "$(cat "$WORK/corrupt.port")" -n 100 -S 64 \
			127.0.0.1 > "$WORK/verify.out" 2>&1
		st=$?
		check "--verify: a corrupt pong is caught (exit 3, not $st)" test "$st" -eq 3
		check "--verify: names the first differing byte (the last, 63)" \
			grep -q 'differs from its ping (64 of 64 bytes, first difference at byte 63)' "$WORK/verify.out"
	else
		fail "corrupting server became ready"
	fi
	timeout -s KILL "$T" "$CORRUPT" "$WORK/corrupt2.port" > "$WORK/corrupt2.out" 2>&1 &
	PIDS+=("$!")
	if wait_until 20 test -s "$WORK/corrupt2.port"; then
		timeout -s KILL "$T" "$PP" -T tcp -p "$(cat "$WORK/corrupt2.port")" -n 100 -S 64 \
			--no-verify 127.0.0.1 > "$WORK/noverify.out" 2>&1
		check "--no-verify: the same pongs are accepted unchecked" test $? -eq 0
	else
		fail "corrupting server became ready (2)"
	fi
fi
finish
