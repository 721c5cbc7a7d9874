# SPDX-License-Identifier: BSD-3-Clause
# A private single-node Slurm for the launcher tests (docs/launch.md): its own
# munged, slurmctld and slurmd, with every file they write (configuration,
# MUNGE key and socket, state, spool, logs, pid files) under one directory, on
# ports nobody uses (on loopback where Slurm can, see slurm_config), so that
# it neither sees nor disturbs another Slurm or MUNGE on the machine. Needs root (slurmd starts the job's
# processes) and Debian's munge, slurmctld, slurmd and slurm-client.
# Sourced after tests/mesh/lib.sh (free_ports) and tests/common/checks.sh
# (wait_until, now_ms).
#
#   slurm_start DIR   start it; exports SLURM_CONF (every client command then
#                     talks to this one). Returns 1 with SLURM_WHY set when
#                     it cannot: the caller decides whether that is a skip.
#   slurm_stop        cancel its jobs, stop the daemons, kill what they left;
#                     every wait bounded. Safe to call twice, or before start.
# shellcheck shell=bash

SLURM_NODE=rccnode
SLURM_DIR=
SLURM_PIDS=() # munged, slurmctld, slurmd: ours, started in the foreground
SLURM_WHY= # why slurm_start gave up, for the caller to print
SLURM_HAS_PMIX=0 # srun --mpi=pmix available (Debian: slurm-wlm-basic-plugins)

# the daemons live in sbin, which a non-root PATH may lack
PATH=$PATH:/usr/sbin:/sbin

# slurm_why REASON...: say why slurm_start gives up (it then returns 1)
# shellcheck disable=SC2034 # read by the caller
slurm_why() { SLURM_WHY=$*; }

# slurm_missing: the commands this needs that are not installed
slurm_missing() {
	local c missing=()
	for c in munged munge unmunge slurmctld slurmd srun sinfo scontrol squeue scancel; do
		command -v "$c" >/dev/null || missing+=("$c")
	done
	echo "${missing[*]}"
}

# slurm_log NAME: the last lines of one daemon's log, to say why it failed
slurm_log() {
	local f
	for f in "$SLURM_DIR/log/$1.log" "$SLURM_DIR/log/$1.out"; do
		[ -s "$f" ] && tail -n 5 "$f" | sed "s|^|    $1: |"
	done
}

slurm_munge_ok() {
	timeout 5 munge -S "$SLURM_DIR/run/munge.sock" -n 2>/dev/null |
		timeout 5 unmunge -S "$SLURM_DIR/run/munge.sock" >/dev/null 2>&1
}
slurm_ctld_up() { timeout 5 scontrol ping 2>/dev/null | grep -q "is UP"; }
# idle, not idle* (not responding) nor drained
slurm_node_idle() {
	[ "$(timeout 5 sinfo -h -n "$SLURM_NODE" -o %t 2>/dev/null)" = idle ]
}
slurm_gone() { # slurm_gone PID...: none of them runs any more (a zombie does not)
	local p st
	for p; do
		st=$(sed 's/.*) //; s/ .*//' "/proc/$p/stat" 2>/dev/null) || continue # after "(comm)"
		[ -z "$st" ] || [ "$st" = Z ] || return 1
	done
}
slurm_no_jobs() { [ -z "$(timeout 5 squeue -h -o %i 2>/dev/null)" ]; }
slurm_alive() { # slurm_alive INDEX: that daemon still runs
	[ -n "${SLURM_PIDS[$1]:-}" ] && kill -0 "${SLURM_PIDS[$1]}" 2>/dev/null
}

# slurm_config PORT: slurm.conf for one node of 2 CPUs at 127.0.0.1 with
# the controller's port PORT and slurmd's PORT+1. Only plugins that need no
# cgroups (a container may not delegate any) and no database.
slurm_config() {
	local port=$1 host comm=
	host=$(hostname -s) # the controller must be named as this host calls itself
	# Loopback only where Slurm can: NoInAddrAny binds to the address the
	# host's name resolves to, so only when that is a loopback address.
	# Elsewhere the daemons listen on every address (the default), on ports
	# nobody uses, and answer only holders of this run's MUNGE key.
	case $(getent ahostsv4 "$(hostname)" 2>/dev/null | awk 'NR == 1 { print $1 }') in
	127.*) comm="CommunicationParameters=NoInAddrAny,NoCtldInAddrAny" ;;
	esac
	cat <<EOF
# written by tests/mesh/slurm.sh: a private single-node Slurm for rcc's tests
ClusterName=rcctest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
$comm
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SLURM_DIR/run/munge.sock
StateSaveLocation=$SLURM_DIR/state
SlurmdSpoolDir=$SLURM_DIR/spool
TmpFS=$SLURM_DIR/tmp
SlurmctldPidFile=$SLURM_DIR/run/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/run/slurmd.pid
SlurmctldLogFile=$SLURM_DIR/log/slurmctld.log
SlurmdLogFile=$SLURM_DIR/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=$([ "$SLURM_HAS_PMIX" = 1 ] && echo pmix || echo none)
ReturnToService=2
MessageTimeout=5
# the node is what this file says, whatever the hardware: a machine with one
# core still offers 2 CPUs, one with many offers no more
SlurmdParameters=config_overrides
NodeName=$SLURM_NODE NodeHostname=$host NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=rcc Nodes=$SLURM_NODE Default=YES MaxTime=10 State=UP OverSubscribe=YES
EOF
}

# slurm_all_alive: every daemon started so far still runs
slurm_all_alive() {
	local i
	for i in "${!SLURM_PIDS[@]}"; do
		slurm_alive "$i" || return 1
	done
}
slurm_settled() { "$@" || ! slurm_all_alive; }
# slurm_wait SECONDS CHECK...: poll until CHECK passes; fails at the bound,
# or at once when one of our daemons has exited
slurm_wait() {
	local secs=$1
	shift
	wait_until "$secs" slurm_settled "$@" && "$@"
}

slurm_start() {
	local missing port
	SLURM_DIR=$1
	missing=$(slurm_missing)
	if [ -n "$missing" ]; then
		slurm_why "not installed: $missing (Debian: munge slurmctld slurmd slurm-client)"
		return 1
	fi
	if [ "$(id -u)" != 0 ]; then
		slurm_why "a private Slurm needs root (slurmd starts the job's processes as their user)"
		return 1
	fi
	# munged insists that everyone can search every directory above its
	# socket (the caller's too), and that only its owner can read the key's
	mkdir -p "$SLURM_DIR"/{key,run,state,spool,tmp,log} || { slurm_why "cannot create $SLURM_DIR"; return 1; }
	chmod 755 "$SLURM_DIR" "$SLURM_DIR/run"
	chmod 700 "$SLURM_DIR/key"
	head -c 1024 /dev/urandom >"$SLURM_DIR/key/munge.key"
	chmod 400 "$SLURM_DIR/key/munge.key"
	port=$(free_ports 2) || { slurm_why "no two free ports for slurmctld and slurmd"; return 1; }
	export SLURM_CONF=$SLURM_DIR/slurm.conf # before the daemons: slurmstepd inherits it (slurm_stop)
	slurm_config "$port" >"$SLURM_CONF"
	# srun lists its MPI plugins from the file alone; PMIx becomes the default
	# when it is there, as on most clusters (then 'srun -n 2 rcc-perf' uses it)
	if timeout 10 srun --mpi=list 2>&1 | grep -qw pmix; then
		SLURM_HAS_PMIX=1
		slurm_config "$port" >"$SLURM_CONF"
	fi

	munged -F --socket="$SLURM_DIR/run/munge.sock" --key-file="$SLURM_DIR/key/munge.key" \
		--pid-file="$SLURM_DIR/run/munged.pid" --seed-file="$SLURM_DIR/key/munged.seed" \
		--log-file="$SLURM_DIR/log/munged.log" --num-threads=2 >"$SLURM_DIR/log/munged.out" 2>&1 &
	SLURM_PIDS[0]=$!
	if ! slurm_wait 10 slurm_munge_ok; then
		slurm_why "munged did not start:"$'\n'"$(slurm_log munged)"
		return 1
	fi
	slurmctld -D -f "$SLURM_CONF" >"$SLURM_DIR/log/slurmctld.out" 2>&1 &
	SLURM_PIDS[1]=$!
	slurmd -D -N "$SLURM_NODE" -f "$SLURM_CONF" >"$SLURM_DIR/log/slurmd.out" 2>&1 &
	SLURM_PIDS[2]=$!
	if ! slurm_wait 30 slurm_ctld_up; then
		slurm_why "slurmctld did not answer:"$'\n'"$(slurm_log slurmctld)"$'\n'"$(slurm_log slurmd)"
		return 1
	fi
	if ! slurm_wait 30 slurm_node_idle; then
		slurm_why "node $SLURM_NODE did not become idle ($(timeout 5 sinfo -h -o '%T: %E' 2>&1)):"$'\n'"$(slurm_log slurmd)"
		return 1
	fi
}

# slurm_term PID SECONDS: SIGTERM, then SIGKILL past the bound
slurm_term() {
	kill -TERM "$1" 2>/dev/null || return 0
	wait_until "$2" slurm_gone "$1" || kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null || true
}

slurm_stop() {
	[ -n "$SLURM_DIR" ] || return 0
	local i p
	# the jobs first, while the controller can still end them
	if slurm_alive 1 && slurm_alive 2; then
		timeout 5 scancel -u "$(id -un)" 2>/dev/null
		wait_until 10 slurm_no_jobs || note "slurm: jobs still listed after 10 s; killing them"
	fi
	for i in 2 1 0; do
		[ -z "${SLURM_PIDS[$i]:-}" ] || slurm_term "${SLURM_PIDS[$i]}" 10
	done
	# whatever our daemons started and left behind (slurmstepd, the tasks of
	# a step): every process whose environment names this configuration, a
	# path no other Slurm uses
	local left=()
	for p in /proc/[0-9]*; do
		p=${p#/proc/}
		[ "$p" != $$ ] || continue
		grep -qzxF "SLURM_CONF=$SLURM_DIR/slurm.conf" "/proc/$p/environ" 2>/dev/null || continue
		note "slurm: killing $p ($(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | cut -c1-60)), left running"
		kill -KILL "$p" 2>/dev/null && left+=("$p")
	done
	((${#left[@]} == 0)) || wait_until 5 slurm_gone "${left[@]}" || note "slurm: ${left[*]} outlived SIGKILL"
	SLURM_PIDS=()
	rm -rf "$SLURM_DIR"
	SLURM_DIR=
}
