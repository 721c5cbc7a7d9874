#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# rcc-perf's write latency (ib_write_lat's method) over loopback, on the socket
# and on shared memory, small to large sizes, with and without --validate.
# Each side polls the last byte of the buffer the peer's WRITE fills while a
# library thread writes it, and rewrites its own source before that WRITE's
# completion (tools/rcc-perf/peermem.c): labelled "threaded", so the TSan build
# runs it, where a data race makes a side exit 66 (a report, halt_on_error or
# not). Several points per run: the race shows only when the progress thread,
# not the polling one, moves the bytes, which happens in most runs, not all.
#   write-lat.sh RCC_PERF
set -uo pipefail # not -e: a side's exit status is a case's verdict, not the script's
PERF=$1
. "$(dirname "$0")/../common/checks.sh"
scratch_dir rcc-write-lat

N=0
has_port() { grep -qE "server on port [0-9]+" "$SRV"; }
# pair SHM ARGS...: one server and one client; both must end with status 0.
# Each pair logs to files of its own: the shell creates a background job's
# output file only when the job starts, so a shared name could show the
# previous server's port.
pair() {
	local shm=$1 srv rc=0 port
	shift
	N=$((N + 1))
	SRV=$TMP/srv.$N.log CLI=$TMP/cli.$N.log
	: >"$SRV"
	RCC_SHM=$shm timeout 120 "$PERF" -T tcp -p 0 >"$SRV" 2>&1 &
	srv=$!
	PIDS+=("$srv")
	wait_until 60 eval 'has_port || ! kill -0 "$srv" 2>/dev/null' || true
	if ! has_port; then
		if kill -0 "$srv" 2>/dev/null; then ST=running; else wait_status "$srv" 1; fi
		fail "RCC_SHM=$shm $*: the server never listened (status: $ST)"
		cat "$SRV"
		return
	fi
	port=$(sed -n 's/.*server on port \([0-9]*\).*/\1/p' "$SRV")
	RCC_SHM=$shm timeout 120 "$PERF" -T tcp -p "$port" 127.0.0.1 --lat --test write "$@" \
		>"$CLI" 2>&1 || rc=$?
	wait_status "$srv" 30
	check "RCC_SHM=$shm $*: client exit $rc (66: a TSan report)" [ "$rc" = 0 ]
	check "RCC_SHM=$shm $*: server exit $ST (66: a TSan report)" [ "$ST" = 0 ]
	if [ "$rc" != 0 ] || [ "$ST" != 0 ]; then head -n 80 "$CLI" "$SRV"; fi
}

for shm in 0 1; do
	pair $shm --sizes 8,64,4K,64K,1M -n 200
	pair $shm --sizes 8,4K,1M -n 200 --validate
done
finish
