# SPDX-License-Identifier: BSD-3-Clause
# Helpers for the rcc-mesh tests: start ranks, wait for lines and exits with a
# bound, clean up whatever a test started. Sourced by the tests/mesh scripts
# and by bench/mesh-scale.sh. Every wait polls with a deadline; none of them
# sleeps for synchronisation.

MESH_PIDS=()
MESH_TMP=$(mktemp -d "${TMPDIR:-/tmp}/rcc-mesh-test.XXXXXX")
MESH_CLEANUPS=()

mesh_cleanup() {
	local pid
	for pid in "${MESH_PIDS[@]}"; do
		kill -9 "$pid" 2>/dev/null || true
	done
	for pid in "${MESH_PIDS[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	local c
	for c in "${MESH_CLEANUPS[@]}"; do
		eval "$c" || true
	done
	rm -rf "$MESH_TMP"
}
trap mesh_cleanup EXIT
trap 'exit 130' INT TERM

# no_launcher_env: whatever launcher runs a test must not leak its ranks, its
# rendezvous or its secret into the job the test starts itself
no_launcher_env() {
	unset RANK WORLD_SIZE MASTER_ADDR MASTER_PORT RCC_RANK RCC_WORLD_SIZE RCC_MASTER_ADDR \
		RCC_MASTER_PORT OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE PMI_RANK PMI_SIZE SLURM_PROCID \
		SLURM_NTASKS PMIX_RANK PMIX_NAMESPACE RCC_JOB_SECRET RCC_JOB_SECRET_FILE RCC_BOOTSTRAP
}

note() { printf '[mesh-test] %s\n' "$*" >&2; }
fail() { note "FAIL: $*"; exit 1; }

# free_ports N: N consecutive TCP ports nobody uses, from a random base, so
# parallel runs do not collide. Below the ephemeral range: an outgoing
# connection (ours or another test's) may otherwise take a rank's port as its
# local port before that rank listens.
free_ports() {
	local n=$1 base tries p busy lo=32768 span
	read -r lo _ < /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || lo=32768
	span=$((lo - 10000 - n))
	[ "$span" -gt 100 ] || span=20000 # an unusual range: take our chances
	for tries in $(seq 50); do
		base=$((10000 + (RANDOM * 32768 + RANDOM) % span))
		busy=0
		for p in $(seq "$base" $((base + n - 1))); do
			if ss -Htan "( sport = :$p )" 2>/dev/null | grep -q .; then
				busy=1
				break
			fi
		done
		[ $busy = 0 ] && { echo "$base"; return 0; }
	done
	return 1
}

# loopback_nodes N BASE: the --nodes list of N ranks on 127.0.0.1
loopback_nodes() {
	local n=$1 base=$2 i list=
	for i in $(seq 0 $((n - 1))); do
		list+="${list:+,}127.0.0.1:$((base + i))"
	done
	echo "$list"
}

# start_rank K LOG CMD...: run CMD in the background with its output in LOG;
# the PID is the command's own (prefixes such as 'ip netns exec' exec it).
start_rank() {
	local k=$1 log=$2
	shift 2
	"$@" >"$log" 2>&1 &
	MESH_PIDS[$k]=$!
}

# wait_line FILE REGEX SECONDS [PID]: until FILE has a matching line, or fail;
# with PID, fail as soon as that process (the one writing FILE) has ended
# without writing it: a rank that died never prints it, and waiting out the
# bound for it only made every failure slow.
wait_line() {
	local file=$1 re=$2 secs=$3 pid=${4:-}
	local end=$((SECONDS + secs))
	until grep -qE "$re" "$file" 2>/dev/null; do
		if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
			grep -qE "$re" "$file" 2>/dev/null # its last words, written before it ended
			return
		fi
		[ $SECONDS -lt $end ] || return 1
		sleep 0.05 # polling interval, not a synchronisation
	done
}

# wait_exit PID SECONDS: the process's exit status; 124 (after killing it)
# when it outlives the bound.
wait_exit() {
	local pid=$1 secs=$2
	local end=$((SECONDS + secs))
	while kill -0 "$pid" 2>/dev/null; do
		if [ $SECONDS -ge $end ]; then
			kill -9 "$pid" 2>/dev/null
			wait "$pid" 2>/dev/null
			return 124
		fi
		sleep 0.05 # polling interval
	done
	wait "$pid"
}

# run_mesh_on NODES N SECONDS ARGS...: ranks 0..N-1 of NODES, each bounded by
# SECONDS; exit statuses land in MESH_STATUS[k], logs in $MESH_TMP/rank.K.log.
run_mesh_on() {
	local nodes=$1 n=$2 secs=$3
	shift 3
	local k
	for k in $(seq 0 $((n - 1))); do
		start_rank "$k" "$MESH_TMP/rank.$k.log" "$MESH_BIN" --nodes "$nodes" --rank "$k" "$@"
	done
	MESH_STATUS=()
	for k in $(seq 0 $((n - 1))); do
		local rc=0
		wait_exit "${MESH_PIDS[$k]}" "$secs" || rc=$?
		MESH_STATUS[$k]=$rc
	done
}

show_logs() {
	local f
	for f in "$MESH_TMP"/rank.*.log; do
		echo "---- $f" >&2
		cat "$f" >&2
	done
}

expect_all() {
	local want=$1 n=$2 what=$3 k
	for k in $(seq 0 $((n - 1))); do
		if [ "${MESH_STATUS[$k]}" != "$want" ]; then
			show_logs
			fail "$what: rank $k exited ${MESH_STATUS[$k]}, expected $want"
		fi
	done
}

# launched NAME CMD...: a launcher's run of a job (mpirun, srun...), bounded
# by 120 s, its output in $MESH_TMP/NAME.log; the test fails, showing that
# output, when the launcher exits non-zero.
launched() {
	local name=$1 rc=0
	shift
	timeout -k 5 120 "$@" >"$MESH_TMP/$name.log" 2>&1 || rc=$?
	[ $rc = 0 ] || { cat "$MESH_TMP/$name.log" >&2; fail "$name: $1 exited $rc"; }
}

# log_has NAME REGEX [COUNT]: $MESH_TMP/NAME.log has COUNT lines matching
# REGEX (default: at least one), or the test fails, showing the log.
log_has() {
	local n
	n=$(grep -cE -- "$2" "$MESH_TMP/$1.log" || true)
	if [ "$n" = 0 ] || { [ -n "${3:-}" ] && [ "$n" != "$3" ]; }; then
		cat "$MESH_TMP/$1.log" >&2
		fail "$1: expected ${3:-some} lines matching '$2', found $n"
	fi
}

# launched_mesh_ok NAME BOOTSTRAP N: the launched N-rank mesh of NAME.log
# exchanged its addresses through BOOTSTRAP (every rank says so), the
# collector verified all N(N-1) pairs and every other rank its own.
launched_mesh_ok() {
	local name=$1 bs=$2 n=$3
	log_has "$name" "addresses exchanged \($bs bootstrap, $n ranks\)" "$n"
	log_has "$name" "$((n * (n - 1)))/$((n * (n - 1))) pairs verified" 1
	log_has "$name" "all verified" $((n - 1))
}
