# SPDX-License-Identifier: BSD-3-Clause
# The verdict helpers of the tool test scripts (sourced by tests/xfer/lib.sh,
# tests/pingpong/pingpong.sh and tests/tools/launch-pair.sh): counted checks, a
# final verdict that fails when no case ran, bounded polling, bounded waits
# for a background process, signals to the tool under a `timeout`, and
# kill_tree.
# shellcheck shell=bash

PASSES=0
FAILS=0

say() { printf '%s\n' "$*"; }
pass() { PASSES=$((PASSES + 1)); say "  ok    $*"; }
# With RCC_TEST_FAIL_FAST set (the mutation run), the first failure ends the
# script (its EXIT trap still cleans up): the verdict is already known, and
# the cases after it would each wait out their own bound.
fail() {
	FAILS=$((FAILS + 1))
	say "  FAIL  $*"
	if [ "${RCC_TEST_FAIL_FAST:-0}" != 0 ]; then
		say "$PASSES passed, $FAILS failed (stopped at the first failure: RCC_TEST_FAIL_FAST)"
		exit 1
	fi
}
# check DESCRIPTION COMMAND...: run the command, pass or fail.
check() {
	local what=$1
	shift
	if "$@"; then pass "$what"; else fail "$what"; fi
}
# finish: the verdict. A script passes only if at least one case ran and none
# failed: a run that stopped before its first check (the tool never started,
# a server never became ready) is a failure, not "no failures so far".
finish() {
	[ $((PASSES + FAILS)) -gt 0 ] || fail "no case ran"
	say "$PASSES passed, $FAILS failed"
	[ "$FAILS" -eq 0 ]
	exit $?
}

# now_ms: monotonic enough for bounding polls.
now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }

# wait_until TIMEOUT_S COMMAND...: poll (every 20 ms) until the command succeeds.
wait_until() {
	local end=$(($(now_ms) + $1 * 1000))
	shift
	until "$@"; do
		[ "$(now_ms)" -ge "$end" ] && return 1
		sleep 0.02
	done
}

# stacks PID: every thread's stack in PID and its descendants (a tool under
# `timeout`; a sanitizer's leak checker, a clone that ptrace-stops the
# process at exit), printed before a process found hung is killed: what it
# waited for is the first thing to know, and a rare hang may not come again.
# Each process's state and tracer first: a process already traced cannot be
# attached by gdb, and its tracer is the one to look at. gdb when installed
# (scripts/lib.sh installs it for the tests), its own words when it shows no
# stack; else each thread's kernel wait channel.
stacks() {
	local p t out c
	p=$1
	say "    stacks of $p ($(cat "/proc/$p/comm" 2>/dev/null)," \
		"$(grep -E '^(State|TracerPid):' "/proc/$p/status" 2>/dev/null | tr -s '\t\n' '  ')):"
	if command -v gdb >/dev/null; then
		out=$(timeout 60 gdb -p "$p" -batch -nx -ex 'thread apply all bt' 2>&1)
		if grep -qE '^(Thread |#)' <<<"$out"; then
			grep -E '^(Thread |#)' <<<"$out" | sed 's/^/      /'
		else
			tail -n 5 <<<"$out" | sed 's/^/      gdb: /'
		fi
	fi
	for t in /proc/"$p"/task/*; do
		say "      thread ${t##*/} ($(cat "$t/comm" 2>/dev/null)):" \
			"$(awk '{print $3}' "$t/stat" 2>/dev/null) $(cat "$t/wchan" 2>/dev/null)"
	done
	for t in /proc/"$p"/task/*; do
		for c in $(cat "$t/children" 2>/dev/null); do stacks "$c"; done
	done
}

# wait_status PID TIMEOUT_S: wait for a background process; its exit status
# (or "timeout", after its stacks are printed) goes to ST. Not in a subshell:
# only the parent can wait.
wait_status() {
	local pid=$1 t=$2
	if ! wait_until "$t" bash -c "! kill -0 $pid 2>/dev/null || \
		[ \"\$(awk '{print \$3}' /proc/$pid/stat 2>/dev/null)\" = Z ]"; then
		ST=timeout
		stacks "$pid"
		return
	fi
	wait "$pid" 2>/dev/null
	ST=$?
}

# tool_of PID: the tool that a `timeout` started in the background (PID,
# from $!) runs: its only child.
tool_of() { cat "/proc/$1/task/$1/children" 2>/dev/null | awk '{print $1}'; }

# signal_tool SIG PID: SIG to the tool that `timeout` (PID) runs, never to
# the timeout. timeout passes a signal on and then sends SIGCONT, and a
# SIGCONT that lands while the tool is already exiting under ASan cancels
# the stop that LeakSanitizer's exit-time check (ptrace) waits for: the tool
# then spins, traced, until killed (the CI failures of stops 24 and 25; an
# ASan program sent SIGCONTs as it exits hangs in a third of runs). Returns
# kill's status.
signal_tool() {
	local t
	t=$(tool_of "$2")
	kill -"$1" "${t:-$2}" 2>/dev/null
}

# scratch_dir NAME: a fresh directory in TMP, and PIDS, the processes the
# script starts (it appends to it): on the way out, whatever happened, each is
# killed with its children and the directory removed (an EXIT trap).
scratch_dir() {
	TMP=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
	PIDS=()
	trap scratch_cleanup EXIT
}
scratch_cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill_tree "$p"; done
	rm -rf "$TMP"
}

# kill_tree PID: the process and its children. A tool under `timeout` must go
# with it: SIGKILL on timeout itself leaves the tool running, orphaned, with
# no time limit left (busy-polling servers then loaded the machine for good).
kill_tree() {
	local c
	for c in $(cat "/proc/$1/task/$1/children" 2>/dev/null); do kill -KILL "$c" 2>/dev/null; done
	kill -KILL "$1" 2>/dev/null || true
}
