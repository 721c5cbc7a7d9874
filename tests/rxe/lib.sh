# SPDX-License-Identifier: BSD-3-Clause
# Helpers for Soft-RoCE suites (sourced by run-suites.sh inside the VM; bash).
#
# Environment every suite can rely on:
#   RCC_BUILD    build directory, relative to the repo root (the working directory)
#   RXE_DEV      rxe0          RXE_IP  the netdev's IPv4 address (use it, not 127.0.0.1:
#   RXE_GID_IDX  IPv4 RoCE v2 GID index   rdma_cm cannot resolve over lo)
#   RXE_LOGDIR   a writable folder for this suite's logs (inside the VM)
#
# Conventions: bound every process with a timeout (run_bounded / the T_* values),
# wait for readiness by polling (wait_for_line, wait_listen, wait_cm_listen), never
# by sleeping; pin busy-polling peers apart (SERVER_CPU / CLIENT_CPU): on one vCPU
# a busy-polling pair is tick-bound (~4 ms per round trip).

SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
T_SHORT=${T_SHORT:-30}   # seconds: one client/server run
T_LONG=${T_LONG:-180}    # seconds: one test binary

now() { echo "$EPOCHREALTIME"; }
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.2f", b-a}'; }
log() { printf '[%s] %s\n' "${SUITE:-rxe}" "$*"; }

# Per-suite result bookkeeping: check NAME STATUS [NOTE]. Status 77 is a skip
# (the check could not run here), counted and listed apart, never as a pass.
CHECKS_RUN=0 CHECKS_FAILED=0 CHECKS_SKIPPED=0 FAILED_NAMES= SKIPPED_NAMES=
check() {
	local name=$1 st=$2 note=${3:-}
	CHECKS_RUN=$((CHECKS_RUN + 1))
	if [ "$st" -eq 0 ]; then
		printf '  ok    %-44s %s\n' "$name" "$note"
	elif [ "$st" -eq 77 ]; then
		CHECKS_SKIPPED=$((CHECKS_SKIPPED + 1))
		SKIPPED_NAMES+=" $name"
		printf '  skip  %-44s %s\n' "$name" "$note"
	else
		CHECKS_FAILED=$((CHECKS_FAILED + 1))
		FAILED_NAMES+=" $name"
		printf '  FAIL  %-44s status %s %s\n' "$name" "$st" "$note"
	fi
}
# Exit status for the suite, with a one-line account.
# The counts also go to $RXE_LOGDIR/counts for run-suites.sh's total line.
suite_result() {
	local passed=$((CHECKS_RUN - CHECKS_FAILED - CHECKS_SKIPPED))
	log "$passed passed, $CHECKS_FAILED failed, $CHECKS_SKIPPED skipped${FAILED_NAMES:+ (failed:$FAILED_NAMES)}${SKIPPED_NAMES:+ (skipped:$SKIPPED_NAMES)}"
	[ -n "${RXE_LOGDIR:-}" ] &&
		echo "$passed $CHECKS_FAILED $CHECKS_SKIPPED$SKIPPED_NAMES" > "$RXE_LOGDIR/counts"
	[ "$passed" -gt 0 ] && [ "$CHECKS_FAILED" -eq 0 ]
}

# wait_for_line FILE REGEX TIMEOUT_S [PID]: until a line of FILE matches (extended regex).
# Fails early when PID (the process writing FILE) has exited.
wait_for_line() {
	local file=$1 re=$2 t=$3 pid=${4:-} end
	end=$(awk -v a="$EPOCHREALTIME" -v t="$t" 'BEGIN{printf "%.3f", a+t}')
	while :; do
		grep -Eq -- "$re" "$file" 2>/dev/null && return 0
		[ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null && {
			grep -Eq -- "$re" "$file" 2>/dev/null && return 0
			return 1
		}
		awk -v a="$EPOCHREALTIME" -v e="$end" 'BEGIN{exit !(a>=e)}' && return 1
		sleep 0.02
	done
}

# deadline_after SECONDS / past DEADLINE: wall-clock bounds for polling loops.
deadline_after() { awk -v a="$EPOCHREALTIME" -v t="$1" 'BEGIN{printf "%.3f", a+t}'; }
past() { awk -v a="$EPOCHREALTIME" -v e="$1" 'BEGIN{exit !(a>=e)}'; }

# wait_listen PORT [TIMEOUT_S]: a TCP socket listens on PORT (manual bring-up, perftest).
wait_listen() {
	local port=$1 end
	end=$(deadline_after "${2:-10}")
	until ss -Hltn "sport = :$port" 2>/dev/null | grep -q .; do
		past "$end" && return 1
		sleep 0.02
	done
}

# wait_cm_listen PORT [TIMEOUT_S]: an rdma_cm id listens on PORT.
wait_cm_listen() {
	local port=$1 end
	end=$(deadline_after "${2:-10}")
	until rdma res show cm_id 2>/dev/null | grep -E "state LISTEN" | grep -Eq -- "[:.]$port( |$)"; do
		past "$end" && return 1
		sleep 0.02
	done
}

# run_bounded SECONDS CMD...: the command under a timeout (KILL 5 s after TERM).
run_bounded() {
	local t=$1
	shift
	timeout -k 5 "$t" "$@"
}

# pinned CPU CMD...: run on one vCPU.
pinned() {
	local cpu=$1
	shift
	taskset -c "$cpu" "$@"
}

# server_client NAME READY_REGEX "SERVER CMD" "CLIENT CMD": start the server pinned to
# SERVER_CPU with its output in $RXE_LOGDIR/NAME.srv, wait for READY_REGEX in it, run the
# client pinned to CLIENT_CPU (output NAME.cli), then wait for the server. Both bounded
# by T_SHORT. Status: client's, or the server's when the client succeeded. On failure
# both logs are printed. The server command is split by the shell (no quoting inside).
server_client() {
	local name=$1 ready=$2 srv=$3 cli=$4 sp st sst t0
	local so=$RXE_LOGDIR/$name.srv co=$RXE_LOGDIR/$name.cli
	t0=$(now)
	# shellcheck disable=SC2086
	# timeout itself in the background ($! is its pid: killing it stops the server)
	timeout -k 5 "$T_SHORT" taskset -c "$SERVER_CPU" $srv >"$so" 2>&1 &
	sp=$!
	if ! wait_for_line "$so" "$ready" 15 "$sp"; then
		kill "$sp" 2>/dev/null
		wait "$sp" 2>/dev/null
		echo "--- $name: the server never became ready; its output:"
		cat "$so"
		LAST_TIME=$(since "$t0")
		return 90
	fi
	# shellcheck disable=SC2086
	run_bounded "$T_SHORT" taskset -c "$CLIENT_CPU" $cli >"$co" 2>&1
	st=$?
	wait "$sp"
	sst=$?
	LAST_TIME=$(since "$t0")
	if [ "$st" -ne 0 ] || [ "$sst" -ne 0 ]; then
		echo "--- $name: client status $st, server status $sst"
		echo "--- client output:"
		cat "$co"
		echo "--- server output:"
		cat "$so"
	fi
	[ "$st" -ne 0 ] && return "$st"
	return "$sst"
}
