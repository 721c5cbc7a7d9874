#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The tools under Slurm's srun, on a private single-node Slurm started for
# this test alone (tests/mesh/slurm.sh: own munged, slurmctld and slurmd, all
# state under a temporary directory, ports nobody uses, on loopback where
# Slurm can; torn down at exit), no --rank, no --nodes, no fixed ports:
#   - srun --mpi=pmix -n 4 rcc-mesh: rank, size and the address exchange from
#     the PMIx server slurmd starts for the step
#   - srun --mpi=none -n 4 rcc-mesh: rank and size from SLURM_PROCID and
#     SLURM_NTASKS, addresses through rank 0's rendezvous at MASTER_ADDR:PORT
#   - srun -n 2 rcc-perf, srun -n 2 rcc-pingpong: a launched pair, through
#     the cluster's default MPI plugin (PMIx when Slurm has it)
# The PMIx cases need rcc built with PMIx and Slurm's pmix plugin; without
# them only the env cases run, and then the test skips (77; fails when
# RCC_TEST_REQUIRE lists pmix). Skips (77), with the
# reason, when the packages are missing, when not root, or when the daemons
# cannot start here.
#   launch-slurm.sh RCC_MESH HAVE_PMIX(ON|OFF) RCC_PERF RCC_PINGPONG
set -euo pipefail
MESH_BIN=$1
HAVE_PMIX=${2:-OFF}
PERF_BIN=$3
PP_BIN=$4
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../common/checks.sh" # wait_until
. "$HERE/lib.sh"              # after checks.sh: its note/fail (exit at once) win
. "$HERE/../common/require.sh"
. "$HERE/slurm.sh"
chmod 755 "$MESH_TMP" # munged: every directory above its socket searchable by all

# whatever launched this test (a Slurm job, mpirun, a torchrun) must not leak
# into our srun or our ranks
for v in $(compgen -e); do
	case $v in SLURM_* | SRUN_* | SALLOC_* | SBATCH_* | SINFO_* | SQUEUE_* | PMIX_* | OMPI_*) unset "$v" ;; esac
done
unset RANK WORLD_SIZE MASTER_ADDR MASTER_PORT RCC_RANK RCC_WORLD_SIZE RCC_MASTER_ADDR \
	RCC_MASTER_PORT PMI_RANK PMI_SIZE RCC_BOOTSTRAP RCC_JOB_SECRET RCC_JOB_SECRET_FILE

MESH_CLEANUPS+=(slurm_stop)
T0=$SECONDS
if ! slurm_start "$MESH_TMP/slurm"; then
	note "skip: no private Slurm here: $SLURM_WHY"
	exit 77
fi
note "private Slurm up in $((SECONDS - T0)) s (slurmctld port $(sed -n 's/^SlurmctldPort=//p' "$SLURM_CONF"), MpiDefault=$(sed -n 's/^MpiDefault=//p' "$SLURM_CONF"))"

# an ASan build: libpmix's own leftovers are not ours to report (srun passes
# the environment on to the tasks)
export LSAN_OPTIONS="suppressions=$HERE/lsan-pmix.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
# -O: 4 tasks on 2 CPUs; --kill-on-bad-exit: a rank that fails ends the step
SRUN=(srun -O --kill-on-bad-exit=1 -t 2 -J rcc-launch-test)
MESH_ARGS=(-T tcp -D 1 -s 1K -q 4 -t shared --threads 1 --brief --bind 127.0.0.1)

# env_args: srun's arguments for the env bootstrap: no PMIx, a rendezvous on
# a free port
env_args() {
	local port
	port=$(free_ports 1) || fail "no free port"
	SRUN_ENV=(--mpi=none "--export=ALL,MASTER_ADDR=127.0.0.1,MASTER_PORT=$port")
}

if [ "$HAVE_PMIX" = ON ] && [ "$SLURM_HAS_PMIX" = 1 ]; then
	launched mesh-pmix "${SRUN[@]}" --mpi=pmix -n 4 "$MESH_BIN" "${MESH_ARGS[@]}"
	launched_mesh_ok mesh-pmix pmix 4
	note "ok: srun --mpi=pmix -n 4 rcc-mesh through PMIx, 12 pairs verified"
	PAIR="pmix"
else
	NO_PMIX="the srun --mpi=pmix cases did not run: rcc built with PMIx: $HAVE_PMIX; Slurm's pmix plugin: $SLURM_HAS_PMIX (srun --mpi=list)"
	note "$NO_PMIX"
	PAIR="env"
fi

env_args
launched mesh-env "${SRUN[@]}" "${SRUN_ENV[@]}" -n 4 "$MESH_BIN" "${MESH_ARGS[@]}"
launched_mesh_ok mesh-env env 4
note "ok: srun --mpi=none -n 4 rcc-mesh through the env rendezvous (SLURM_PROCID/SLURM_NTASKS), 12 pairs verified"

# the pair tools as a cluster user would start them: 'srun -n 2', through the
# default MPI plugin (PMIx); without PMIx, through the rendezvous
SRUN_ENV=()
[ "$PAIR" = pmix ] || env_args
launched perf "${SRUN[@]}" "${SRUN_ENV[@]}" -n 2 "$PERF_BIN" -T tcp --test write,send -s 4K -n 200 --validate \
	--bind 127.0.0.1
log_has perf "rcc-perf: rank 0: serving rank 1 at 127\.0\.0\.1:[0-9]+" 1
log_has perf "Direction +: one way, validated"
log_has perf "^ 4096 +200 " 4 # latency and bandwidth of write and of send
note "ok: srun -n 2 rcc-perf ($PAIR bootstrap), write and send validated"

[ "$PAIR" = pmix ] || env_args
launched pingpong "${SRUN[@]}" "${SRUN_ENV[@]}" -n 2 "$PP_BIN" -T tcp -n 500 --bind 127.0.0.1
log_has pingpong "round trips of 16 bytes with 127[.]0[.]0[.]1:[0-9]+ over tcp" 1
log_has pingpong "all pongs verified" 1
note "ok: srun -n 2 rcc-pingpong ($PAIR bootstrap), pongs verified"
note "all Slurm cases passed in $((SECONDS - T0)) s, daemons included"
[ "$PAIR" = pmix ] || skipped_part pmix "$NO_PMIX"
