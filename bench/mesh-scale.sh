#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# mesh-scale: N rcc-mesh processes on one machine (loopback, tcp by default)
# complete the mesh and the traffic phase, once per thread mode and per path;
# prints the aggregate rate, the worst pair's p99 latency and the memory per
# connection of each.
#
#   bench/mesh-scale.sh [NODES [SECONDS [SIZE [DEPTH]]]]     (16 3 4K 16)
#
# Environment: RCC_MESH (the binary; default build-mesh, then build),
# MESH_TRANSPORT (tcp), MESH_MODES ("per-ep shared:1 shared:2"),
# MESH_PATHS ("shm tcp": on the tcp transport, each mode once over same-host
# shared memory, RCC_SHM=1, and once over loopback TCP, RCC_SHM=0; the path
# column is what the collector reports, rcc_ep_path() of every pair),
# MESH_EXTRA (more rcc-mesh options).
#
# Memory per connection: each rank measures its own RSS after opening the
# context (before pools, server or connections) and again after traffic, and
# divides the growth by its 2(N-1) connections; the collector prints the mean.
# The threads and RSS per process columns are each rank's own /proc/self/status
# at the end of traffic (a script polling /proc from outside is starved by the
# hundreds of busy threads on a small machine). This is a benchmark, not a test: it fails only if a run
# does.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-16}
secs=${2:-3}
size=${3:-4K}
depth=${4:-16}
transport=${MESH_TRANSPORT:-tcp}
modes=${MESH_MODES:-per-ep shared:1 shared:2}
paths=${MESH_PATHS:-shm tcp}
[ "$transport" = tcp ] || paths=default
bin=${RCC_MESH:-}
for cand in "$root/build-mesh/tools/rcc-mesh/rcc-mesh" "$root/build/tools/rcc-mesh/rcc-mesh"; do
	[ -n "$bin" ] || { [ -x "$cand" ] && bin=$cand; }
done
[ -x "$bin" ] || { echo "mesh-scale: no rcc-mesh binary; build first or set RCC_MESH" >&2; exit 1; }
MESH_BIN=$bin
. "$root/tests/mesh/lib.sh"

field() { # field JSON KEY: the number after "KEY":
	sed -n "s/.*\"$2\":\([-0-9.e+]*\).*/\1/p" <<<"$1" | head -1
}

printf 'rcc-mesh scale: %d nodes on one machine (%d cores), %s, %s messages, depth %d, %s s\n' \
	"$n" "$(nproc)" "$transport" "$size" "$depth" "$secs"
printf '%-10s %5s %9s %10s %11s %13s %9s %8s %9s %9s\n' mode path "setup ms" "MB/s" "msg/s" \
	"p99 us worst" "KiB/conn" "threads" "RSS MiB" verified
status=0
for spec in $modes; do
	for want in $paths; do # interleaved: each mode over both paths back to back
		case $want in
		shm) shm_env=(env RCC_SHM=1) ;;
		tcp) shm_env=(env RCC_SHM=0) ;;
		*) shm_env=() ;;
		esac
		mode=${spec%%:*}
		threads=${spec#*:}
		[ "$threads" = "$spec" ] && threads=1
		base=$(free_ports "$n") || { echo "mesh-scale: no free ports" >&2; exit 1; }
		nodes=$(loopback_nodes "$n" "$base")
		for k in $(seq 0 $((n - 1))); do
			start_rank "$k" "$MESH_TMP/rank.$k.log" "${shm_env[@]}" "$MESH_BIN" --nodes "$nodes" --rank "$k" \
				-T "$transport" -t "$mode" --threads "$threads" -D "$secs" -s "$size" -q "$depth" \
				--json --brief --connect-timeout 60000 --timeout 30000 ${MESH_EXTRA:-}
		done
		rcs=()
		for k in $(seq 0 $((n - 1))); do
			rc=0
			wait_exit "${MESH_PIDS[$k]}" $((secs + 120)) || rc=$?
			rcs+=("$rc")
		done
		json=$(grep '^{"tool":"rcc-mesh","nodes"' "$MESH_TMP/rank.0.log" || true)
		setup_ms=$(sed -n 's/.*mesh complete: .*(\([0-9]*\) ms).*/\1/p' "$MESH_TMP/rank.0.log" | head -1)
		bad=0
		for rc in "${rcs[@]}"; do [ "$rc" = 0 ] || bad=1; done
		if [ -z "$json" ] || [ $bad = 1 ]; then
			echo "mesh-scale: $spec over $want failed (exit statuses: ${rcs[*]}); rank 0 said:" >&2
			tail -5 "$MESH_TMP/rank.0.log" >&2
			status=1
			continue
		fi
		path=$(sed -n 's/.*"verified_pairs":[0-9]*,"path":"\([a-z-]*\)".*/\1/p' <<<"$json")
		printf '%-10s %5s %9s %10.1f %11.0f %13.0f %9.0f %8.1f %9.1f %9s\n' "$spec" "${path:-?}" \
			"${setup_ms:-?}" "$(field "$json" mb_per_s)" "$(field "$json" msgs_per_s)" "$(field "$json" p99)" \
			"$(field "$json" rss_kib_per_connection)" "$(field "$json" threads_per_rank)" \
			"$(field "$json" rss_mib_per_rank)" \
			"$(field "$json" verified_pairs)/$(field "$json" pairs)"
		if [ "$want" != default ] && [ "$path" != "$want" ]; then
			echo "mesh-scale: $spec asked for $want but the pairs took ${path:-?}" >&2
			status=1
		fi
	done
done
echo "(threads and RSS: per process, from /proc at the end of traffic; KiB/conn: RSS growth"
echo " over each rank's $((2 * (n - 1))) connections, mean of the ranks; MB/s, msg/s: sums over"
echo " the $((n * (n - 1))) directed pairs; p99: the worst pair's per-message completion latency)"
exit $status
