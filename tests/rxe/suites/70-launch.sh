#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# rcc-perf on verbs started as a launched pair (docs/launch.md), the way a
# cluster user benchmarks two nodes from one command: no HOST, rank 0 serves
# on a free port of RXE_IP (--bind: the RDMA device's address), rank 1 learns
# it through the bootstrap and measures, every byte validated.
#   - env rendezvous: two commands with RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT
#   - mpirun -np 2 (Open MPI's runtime is in the image; PMIx): skipped when
#     rcc was built without PMIx or the image has no mpirun
# Rank 0 on SERVER_CPU, rank 1 on CLIENT_CPU (mpirun binds one rank per core).
source tests/rxe/lib.sh
perf=$RCC_BUILD/tools/rcc-perf/rcc-perf
[ -x "$perf" ] || { log "no $perf (build the tools)"; exit 1; }
args=(-T verbs --bind "$RXE_IP" --test write -s 4096 -n 100 --validate)
unset RANK WORLD_SIZE MASTER_ADDR MASTER_PORT RCC_RANK RCC_WORLD_SIZE RCC_MASTER_ADDR \
	RCC_MASTER_PORT RCC_BOOTSTRAP RCC_JOB_SECRET RCC_JOB_SECRET_FILE

# measured LOG: rank 1 measured latency and bandwidth over verbs, validated
measured() {
	[ "$(grep -c "^ 4096 \+100 " "$1")" -eq 2 ] && grep -q '^ Path \+: verbs' "$1" &&
		grep -q 'Direction \+: one way, validated' "$1"
}

# --- env rendezvous: rank 0 takes a free port and says which -------------------
t0=$(now)
r0=$RXE_LOGDIR/env.0 r1=$RXE_LOGDIR/env.1
RANK=0 WORLD_SIZE=2 MASTER_ADDR=$RXE_IP MASTER_PORT=0 \
	timeout -k 5 "$T_SHORT" taskset -c "$SERVER_CPU" "$perf" "${args[@]}" >"$r0" 2>&1 &
p0=$!
if wait_for_line "$r0" "rendezvous listening on $RXE_IP:[0-9]+$" 15 "$p0"; then
	port=$(sed -n "s/.*rendezvous listening on $RXE_IP:\([0-9]*\)$/\1/p" "$r0")
	RANK=1 WORLD_SIZE=2 MASTER_ADDR=$RXE_IP MASTER_PORT=$port \
		run_bounded "$T_SHORT" taskset -c "$CLIENT_CPU" "$perf" "${args[@]}" >"$r1" 2>&1
	st=$?
	wait "$p0"
	st0=$?
	[ $st -ne 0 ] || measured "$r1" || st=91
	[ $st -ne 0 ] || [ $st0 -eq 0 ] || st=$st0
	[ $st -ne 0 ] || grep -q "rank 0: serving rank 1 at $RXE_IP:" "$r0" || st=92
else
	kill "$p0" 2>/dev/null
	wait "$p0" 2>/dev/null
	st=90
fi
[ $st -eq 0 ] || { echo "--- rank 0:"; cat "$r0"; echo "--- rank 1:"; cat "${r1}" 2>/dev/null; }
check "env rendezvous: RANK=0/1 rcc-perf -T verbs" $st "$(since "$t0") s"

# --- mpirun -np 2, through PMIx -------------------------------------------------
t0=$(now)
if ! command -v mpirun >/dev/null; then
	check "mpirun -np 2 rcc-perf -T verbs" 77 "the image has no mpirun (tests/rxe/vm/build-image)"
elif ! grep -qa PMIx_Fence "$perf"; then
	check "mpirun -np 2 rcc-perf -T verbs" 77 "rcc built without PMIx (libpmix-dev)"
else
	# Open MPI names the job's nodes: the VM has no host name until given one
	[ "$(hostname)" != "(none)" ] || hostname rxe-vm
	log=$RXE_LOGDIR/mpirun.log
	# isolated: one node, no ssh to look for; root: the VM's only user
	run_bounded 120 mpirun --allow-run-as-root --mca plm isolated --mca oob_tcp_if_include lo \
		-np 2 "$perf" "${args[@]}" >"$log" 2>&1
	st=$?
	[ $st -ne 0 ] || measured "$log" || st=91
	[ $st -ne 0 ] || grep -q "rank 0: serving rank 1 at $RXE_IP:" "$log" || st=92
	[ $st -eq 0 ] || cat "$log"
	check "mpirun -np 2 rcc-perf -T verbs" $st "$(since "$t0") s"
fi
suite_result
