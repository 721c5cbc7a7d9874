#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# No false passes: every tool test script, run with a tool that does nothing
# (/bin/false, /bin/true) in place of the real one, must not pass. A script
# that passes then would pass whatever the tool did.
#   fake-tools.sh SOURCE_DIR
set -u
src=${1:?usage: $0 SOURCE_DIR}
fails=0 runs=0

# try SCRIPT FAKE [ARGS...]: the script with FAKE as its tool; bounded.
try() {
	local script=$1 fake=$2 st
	shift 2
	runs=$((runs + 1))
	XFER_T=10 timeout -s KILL 120 bash "$script" "$fake" "$@" >/dev/null 2>&1
	st=$?
	case $st in
	0)
		echo "  FAIL  ${script#"$src"/} passed with $fake as the tool"
		fails=$((fails + 1))
		;;
	77) echo "  ok    ${script#"$src"/} with $fake: skipped (not passed)" ;;
	*) echo "  ok    ${script#"$src"/} with $fake: failed ($st)" ;;
	esac
}

for fake in /bin/false /bin/true; do
	for s in "$src"/tests/xfer/x-*.sh; do
		case $s in
		*/x-garbage.sh) try "$s" "$fake" "$fake" ;;
		*/x-large.sh) ;; # the 64 MiB+ transfer script: same library, same start
		*) try "$s" "$fake" ;;
		esac
	done
	try "$src/tests/mesh/loopback.sh" "$fake" per-ep
	# (kill.sh waits 30 s for ranks that never come: once is enough)
	[ "$fake" = /bin/true ] && try "$src/tests/mesh/kill.sh" "$fake" per-ep
	try "$src/tests/mesh/verify.sh" "$fake"
	try "$src/tests/mesh/usage.sh" "$fake"
	for s in "$src"/tests/pingpong/*.sh; do
		[ -e "$s" ] && try "$s" "$fake"
	done
done
echo "$runs runs, $fails passed with a fake tool"
[ "$runs" -gt 0 ] && [ "$fails" -eq 0 ]
