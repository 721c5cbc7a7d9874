#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# rcc-mesh under Open MPI's mpirun, 4 ranks on this host, no --nodes, no
# --rank, no fixed ports for the mesh:
#   - with PMIx (when rcc was built with it): rank, size and the address
#     exchange from mpirun's PMIx server
#   - with the env bootstrap: rank and size from OMPI_COMM_WORLD_*, addresses
#     through rank 0's rendezvous at MASTER_ADDR:MASTER_PORT (-x)
#   - with PMIx, -np 3 where rank 2 exits before the exchange: the others fail
#     at their timeout, naming rank 2
# Skips (77) when mpirun is not installed; without PMIx in rcc, runs the env
# case and then skips (77; fails when RCC_TEST_REQUIRE lists pmix).
#   launch-mpirun.sh RCC_MESH HAVE_PMIX(ON|OFF)
set -euo pipefail
MESH_BIN=$1
HAVE_PMIX=${2:-OFF}
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../common/require.sh"

command -v mpirun >/dev/null || { note "skip: mpirun is not installed (Debian: openmpi-bin)"; exit 77; }
unset RANK WORLD_SIZE MASTER_ADDR MASTER_PORT RCC_RANK RCC_WORLD_SIZE RCC_MASTER_ADDR \
	RCC_MASTER_PORT RCC_BOOTSTRAP RCC_JOB_SECRET RCC_JOB_SECRET_FILE

# an ASan build of rcc-mesh: libpmix's own leftovers are not ours to report
export LSAN_OPTIONS="suppressions=$(cd "$(dirname "$0")" && pwd)/lsan-pmix.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
MPI_OPTS=(--oversubscribe -x LSAN_OPTIONS)
[ "$(id -u)" != 0 ] || MPI_OPTS+=(--allow-run-as-root)
# loopback only: this host's other interfaces may not route to each other
MPI_OPTS+=(--mca btl_tcp_if_include lo --mca oob_tcp_if_include lo)
MPIRUN=(mpirun -np 4 "${MPI_OPTS[@]}")
ARGS=(-T tcp -D 1 -s 1K -q 4 -t shared --threads 1 --brief --bind 127.0.0.1)

# run NAME [mpirun args...] -- [rcc-mesh args...]
run() {
	local name=$1 pre=()
	shift
	while [ "$1" != -- ]; do pre+=("$1"); shift; done
	shift
	launched "$name" "${MPIRUN[@]}" "${pre[@]}" "$MESH_BIN" "${ARGS[@]}" "$@"
}

if [ "$HAVE_PMIX" = ON ]; then
	run pmix --
	launched_mesh_ok pmix pmix 4
	note "ok: mpirun -np 4 rcc-mesh through PMIx, 12 pairs verified"

	# rank 2 ends before it reaches the exchange: it exits 0 at once, and the
	# others start rcc-mesh only once its process is gone (mpirun ends the
	# whole job at once when a rank exits after another has called init, or
	# exits non-zero); then the first of ranks 0 and 1 to fail ends the job,
	# so the other may be killed before it says anything
	cat >"$MESH_TMP/gone.sh" <<'SH'
pidfile=$1
shift
if [ "$OMPI_COMM_WORLD_RANK" = 2 ]; then echo $$ >"$pidfile.tmp" && mv "$pidfile.tmp" "$pidfile"; exit 0; fi
i=0
until [ -s "$pidfile" ] && [ ! -e "/proc/$(cat "$pidfile")" ]; do
	i=$((i + 1))
	[ $i -lt 600 ] || { echo "rank 2 did not end" >&2; exit 9; }
	sleep 0.05 # polling interval, bounded (30 s)
done
exec "$@"
SH
	rc=0
	timeout -k 5 90 mpirun -np 3 "${MPI_OPTS[@]}" sh "$MESH_TMP/gone.sh" "$MESH_TMP/rank2.pid" \
		"$MESH_BIN" "${ARGS[@]}" --connect-timeout 3s >"$MESH_TMP/pmix-gone.log" 2>&1 || rc=$?
	[ $rc != 0 ] && [ $rc != 124 ] || { cat "$MESH_TMP/pmix-gone.log" >&2; fail "pmix-gone: mpirun exited $rc"; }
	log_has pmix-gone "rank [01]: address exchange \(pmix bootstrap\) failed: PMIx exchange failed: TIMEOUT; never reached it: rank 2 \(its process ended, or never started\)$"
	! grep -E "never reached it: .*\b[01]\b" "$MESH_TMP/pmix-gone.log" ||
		fail "pmix-gone: a rank that reached the exchange was named"
	note "ok: mpirun -np 3 with rank 2 gone before the exchange: rank 2 named (PMIx)"
fi

port=$(free_ports 1) || fail "no free port"
run env -x RCC_BOOTSTRAP=env -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT="$port" --
launched_mesh_ok env env 4
note "ok: mpirun -np 4 rcc-mesh through the env rendezvous (OMPI_COMM_WORLD_*), 12 pairs verified"
[ "$HAVE_PMIX" = ON ] || skipped_part pmix "rcc is built without PMIx: the mpirun -np 4 PMIx case did not run"
