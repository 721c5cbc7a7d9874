#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The key-value example as separate server and client processes, the way
# bench/server-load.sh runs it: for each server CQ mode, 8 clients with their
# CQs in the same mode verify every GET against their last PUT (the client
# exits non-zero on a wrong value, or on a wait that ends without a
# completion: an FD-mode client must wait again after an empty wake-up).
# Usage: kv-roles.sh EXAMPLE_KV [HOST]
set -uo pipefail
kv=$1 host=${2:-127.0.0.1}
status=0
for mode in fd hybrid wait poll; do
	coproc SRV { exec "$kv" server "$host:0" "$mode"; }
	srv_pid=$SRV_PID
	# the server prints its port once it listens: wait for that line (bounded)
	if ! read -t 10 -r _ _ _ port <&"${SRV[0]}" || [ -z "$port" ]; then
		echo "FAIL: $mode server did not say where it listens"
		kill "$srv_pid" 2>/dev/null
		exit 1
	fi
	client_mode=$mode
	if out=$(timeout 60 "$kv" client "$host:$port" 8 500 "$client_mode" 2>&1); then
		echo "ok: server $mode, 8 clients $client_mode: $out"
	else
		echo "FAIL: server $mode, 8 clients $client_mode: $out"
		status=1
	fi
	kill -TERM "$srv_pid"
	if ! timeout 10 tail --pid="$srv_pid" -f /dev/null; then
		echo "FAIL: $mode server did not stop on SIGTERM"
		kill -KILL "$srv_pid"
		status=1
	fi
	wait "$srv_pid" 2>/dev/null || { echo "FAIL: $mode server exited with $?"; status=1; }
done
exit $status
