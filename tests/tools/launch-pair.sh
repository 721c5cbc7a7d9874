#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A client/server tool (rcc-pingpong, rcc-perf) as a launched pair
# (docs/launch.md): no HOST, rank 0 serves on a free port, rank 1 learns its
# address through the bootstrap and measures.
#   - two processes with RANK/WORLD_SIZE/MASTER_* (rank 0's rendezvous on a
#     free port, read from its progress line)
#   - a "pair" of 3: a usage error (2)
#   - mpirun -np 2 through PMIx (tests/mesh/launch-mpirun.sh covers the env
#     bootstrap there); without mpirun or PMIx in rcc the other cases run and
#     the script skips (77; fails when RCC_TEST_REQUIRE lists the need)
#   launch-pair.sh TOOL HAVE_PMIX(ON|OFF) DONE_REGEX [TOOL ARGS...]
# DONE_REGEX: what rank 1 prints when it measured and verified.
set -euo pipefail
PP=$1
HAVE_PMIX=${2:-OFF}
DONE=$3
shift 3
ARGS=("$@")
NAME=$(basename "$PP")
. "$(dirname "$0")/../common/checks.sh"
. "$(dirname "$0")/../common/require.sh"
scratch_dir rcc-pp-launch
unset RANK WORLD_SIZE MASTER_ADDR MASTER_PORT RCC_RANK RCC_WORLD_SIZE RCC_MASTER_ADDR \
	RCC_MASTER_PORT OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE PMI_RANK PMI_SIZE SLURM_PROCID \
	SLURM_NTASKS PMIX_RANK PMIX_NAMESPACE RCC_JOB_SECRET RCC_JOB_SECRET_FILE RCC_BOOTSTRAP

has_port() { grep -qE "rendezvous listening on 127\.0\.0\.1:[0-9]+$" "$TMP/r0.log"; }
# wait_pid PID SECONDS: its exit status; 124 (killed) past the bound
wait_pid() {
	local end=$(($(now_ms) + $2 * 1000))
	while kill -0 "$1" 2>/dev/null; do
		[ "$(now_ms)" -lt "$end" ] || { kill -9 "$1"; wait "$1" 2>/dev/null; return 124; }
		sleep 0.02 # polling interval, not a synchronisation
	done
	wait "$1"
}

say "env bootstrap: a pair from two shell commands"
RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=0 "$PP" "${ARGS[@]}" >"$TMP/r0.log" 2>&1 &
PIDS+=($!)
r0=$!
# (a rank 0 that ended never opens it: no need to wait out the bound)
wait_until 20 eval 'has_port || ! kill -0 "$r0" 2>/dev/null' || true
if has_port; then
	port=$(sed -n 's/.*rendezvous listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$TMP/r0.log")
	rc=0
	RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port timeout 60 "$PP" "${ARGS[@]}" \
		>"$TMP/r1.log" 2>&1 || rc=$?
	check "rank 1 measured (exit $rc)" [ $rc = 0 ]
	check "rank 1 measured and verified" grep -qE "$DONE" "$TMP/r1.log"
	rc=0
	wait_pid "$r0" 20 || rc=$?
	check "rank 0 served one client and ended (exit $rc)" [ $rc = 0 ]
	check "rank 0 said where it serves" grep -q "$NAME: rank 0: serving rank 1 at 127.0.0.1:" "$TMP/r0.log"
else
	fail "rank 0 did not open its rendezvous"
fi
cat "$TMP"/r*.log

say "a launched 'pair' of 3 is a usage error"
rc=0
RCC_RANK=1 RCC_WORLD_SIZE=3 RCC_MASTER_ADDR=127.0.0.1 RCC_MASTER_PORT=1 timeout 10 "$PP" \
	"${ARGS[@]}" >"$TMP/u.log" 2>&1 || rc=$?
check "exit 2 ($rc)" [ $rc = 2 ]
check "says why" grep -q "runs as 2 ranks" "$TMP/u.log"

SKIP_NEED=
if ! command -v mpirun >/dev/null; then
	SKIP_NEED=mpirun SKIP_WHY="mpirun is not installed (Debian: openmpi-bin): mpirun -np 2 did not run"
elif [ "$HAVE_PMIX" != ON ]; then
	SKIP_NEED=pmix SKIP_WHY="rcc is built without PMIx: mpirun -np 2 did not run"
else
	say "mpirun -np 2 $NAME"
	MPIRUN=(mpirun --oversubscribe -np 2 --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo)
	[ "$(id -u)" != 0 ] || MPIRUN+=(--allow-run-as-root)
	export LSAN_OPTIONS="suppressions=$(cd "$(dirname "$0")/../mesh" && pwd)/lsan-pmix.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
	MPIRUN+=(-x LSAN_OPTIONS)
	rc=0
	timeout -k 5 120 "${MPIRUN[@]}" "$PP" "${ARGS[@]}" --bind 127.0.0.1 >"$TMP/mpi.log" 2>&1 ||
		rc=$?
	check "mpirun exited 0 ($rc)" [ $rc = 0 ]
	check "rank 1 measured and verified" grep -qE "$DONE" "$TMP/mpi.log"
	cat "$TMP/mpi.log"
fi
if [ -n "$SKIP_NEED" ] && [ "$FAILS" = 0 ] && [ "$PASSES" -gt 0 ]; then
	say "$PASSES passed, 0 failed"
	skipped_part "$SKIP_NEED" "$SKIP_WHY"
fi
finish
