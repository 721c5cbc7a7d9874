#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# rcc-mesh under Open MPI's mpirun, 4 ranks on this host, no --nodes, no
# --rank, no fixed ports for the mesh:
#   - with PMIx (when rcc was built with it): rank, size and the address
#     exchange from mpirun's PMIx server
#   - with the env bootstrap: rank and size from OMPI_COMM_WORLD_*, addresses
#     through rank 0's rendezvous at MASTER_ADDR:MASTER_PORT (-x)
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
MPIRUN=(mpirun --oversubscribe -np 4 -x LSAN_OPTIONS)
[ "$(id -u)" != 0 ] || MPIRUN+=(--allow-run-as-root)
# loopback only: this host's other interfaces may not route to each other
MPIRUN+=(--mca btl_tcp_if_include lo --mca oob_tcp_if_include lo)
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
fi

port=$(free_ports 1) || fail "no free port"
run env -x RCC_BOOTSTRAP=env -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT="$port" --
launched_mesh_ok env env 4
note "ok: mpirun -np 4 rcc-mesh through the env rendezvous (OMPI_COMM_WORLD_*), 12 pairs verified"
[ "$HAVE_PMIX" = ON ] || skipped_part pmix "rcc is built without PMIx: the mpirun -np 4 PMIx case did not run"
