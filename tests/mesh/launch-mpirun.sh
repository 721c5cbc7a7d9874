#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# rcc-mesh under Open MPI's mpirun, 4 ranks on this host, no --nodes, no
# --rank, no fixed ports for the mesh:
#   - with PMIx (when rcc was built with it): rank, size and the address
#     exchange from mpirun's PMIx server
#   - with the env bootstrap: rank and size from OMPI_COMM_WORLD_*, addresses
#     through rank 0's rendezvous at MASTER_ADDR:MASTER_PORT (-x)
# Skips (77) when mpirun is not installed.
#   launch-mpirun.sh RCC_MESH HAVE_PMIX(ON|OFF)
set -euo pipefail
MESH_BIN=$1
HAVE_PMIX=${2:-OFF}
. "$(dirname "$0")/lib.sh"

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
	local name=$1 pre=() rc=0
	shift
	while [ "$1" != -- ]; do pre+=("$1"); shift; done
	shift
	timeout -k 5 120 "${MPIRUN[@]}" "${pre[@]}" "$MESH_BIN" "${ARGS[@]}" "$@" \
		>"$MESH_TMP/$name.log" 2>&1 || rc=$?
	if [ $rc != 0 ]; then
		cat "$MESH_TMP/$name.log" >&2
		fail "$name: mpirun exited $rc"
	fi
	grep -q "12/12 pairs verified" "$MESH_TMP/$name.log" ||
		{ cat "$MESH_TMP/$name.log" >&2; fail "$name: the collector did not verify 12 pairs"; }
	[ "$(grep -c "all verified" "$MESH_TMP/$name.log")" = 3 ] ||
		{ cat "$MESH_TMP/$name.log" >&2; fail "$name: not every rank verified its pairs"; }
}

if [ "$HAVE_PMIX" = ON ]; then
	run pmix --
	grep -q "addresses exchanged (pmix bootstrap, 4 ranks)" "$MESH_TMP/pmix.log" ||
		{ cat "$MESH_TMP/pmix.log" >&2; fail "pmix: the exchange did not go through PMIx"; }
	note "ok: mpirun -np 4 rcc-mesh through PMIx, 12 pairs verified"
else
	note "rcc is built without PMIx: only the env bootstrap under mpirun"
fi

port=$(free_ports 1) || fail "no free port"
run env -x RCC_BOOTSTRAP=env -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT="$port" --
grep -q "addresses exchanged (env bootstrap, 4 ranks)" "$MESH_TMP/env.log" ||
	{ cat "$MESH_TMP/env.log" >&2; fail "env: the exchange did not go through the rendezvous"; }
note "ok: mpirun -np 4 rcc-mesh through the env rendezvous (OMPI_COMM_WORLD_*), 12 pairs verified"
