#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# No false passes: every tool test script, run with a tool that does nothing
# (/bin/false, /bin/true) in place of the real one, must not pass. A script
# that passes then would pass whatever the tool did. A script that cannot run
# here (no root for namespaces, no mpirun, no private Slurm) skips with 77,
# which is reported as a skip, never as a pass.
#   fake-tools.sh SOURCE_DIR [XFER_STALL_PEER]
# XFER_STALL_PEER: x-hostile.sh's real helper, so that only the tool is fake
# there (without it, the fake stands in for the helper too).
set -u
src=${1:?usage: $0 SOURCE_DIR [XFER_STALL_PEER]}
stall=${2:-}
fails=0 runs=0

# try SCRIPT FAKE [ARGS...]: the script with FAKE as its tool; bounded (TERM
# first, so that a script's own clean-up runs: daemons, namespaces).
try() {
	local script=$1 fake=$2 st
	shift 2
	runs=$((runs + 1))
	XFER_T=10 timeout -k 15 120 bash "$script" "$fake" "$@" >/dev/null 2>&1
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
		*/x-hostile.sh) try "$s" "$fake" "${stall:-$fake}" ;;
		*/x-large.sh) ;; # the 64 MiB+ transfer script: same library, same start
		*) try "$s" "$fake" ;;
		esac
	done
	try "$src/tests/mesh/loopback.sh" "$fake" per-ep
	# (kill.sh waits 30 s for ranks that never come: once is enough)
	[ "$fake" = /bin/true ] && try "$src/tests/mesh/kill.sh" "$fake" per-ep
	try "$src/tests/mesh/verify.sh" "$fake"
	try "$src/tests/mesh/usage.sh" "$fake"
	try "$src/tests/mesh/srq.sh" "$fake"
	try "$src/tests/mesh/launch-env.sh" "$fake"
	try "$src/tests/tools/launch-pair.sh" "$fake" OFF "all pongs verified" -T tcp -n 50
	# once each: they need root (namespaces), mpirun or a private Slurm, and
	# skip (77) without them; with them they take a while to set up
	if [ "$fake" = /bin/false ]; then
		try "$src/tests/mesh/netns.sh" "$fake" per-ep
		try "$src/tests/mesh/launch-mpirun.sh" "$fake" OFF
		try "$src/tests/mesh/launch-slurm.sh" "$fake" OFF "$fake" "$fake"
	fi
	for s in "$src"/tests/pingpong/*.sh; do
		[ -e "$s" ] && try "$s" "$fake"
	done
done
echo "$runs runs, $fails passed with a fake tool"
[ "$runs" -gt 0 ] && [ "$fails" -eq 0 ]
