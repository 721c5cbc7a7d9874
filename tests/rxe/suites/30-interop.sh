#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Interoperability with rdma-core's examples (rdmacm-utils), default port 7471 and
# 16-byte messages as those programs use:
#  - rcc-pingpong's server echoes for rdma_client (which sends 16 bytes, expects 16 back);
#  - rcc-pingpong's client does one round trip with rdma_server (which answers, no echo).
source tests/rxe/lib.sh
pp=$RCC_BUILD/tools/rcc-pingpong/rcc-pingpong
[ -x "$pp" ] || { log "no $pp (build the tools)"; exit 1; }
command -v rdma_client >/dev/null && command -v rdma_server >/dev/null ||
	{ log "rdma_client/rdma_server (rdmacm-utils) missing from the VM"; exit 1; }

for round in 1 2; do
	server_client "rcc-server-rdma_client-$round" 'listening on .* \(transport verbs' \
		"$pp -T verbs -B cm -p 7471 -b $RXE_IP --once" \
		"rdma_client -s $RXE_IP -p 7471"
	check "rcc-pingpong server <- rdma_client (#$round)" $? "$LAST_TIME s"
done

# rdma_server has no readiness line: wait for its rdma_cm listener.
for round in 1 2; do
	so=$RXE_LOGDIR/rdma_server-$round.srv co=$RXE_LOGDIR/rdma_server-$round.cli
	t0=$(now)
	timeout -k 5 "$T_SHORT" taskset -c "$SERVER_CPU" rdma_server -p 7471 >"$so" 2>&1 &
	sp=$!
	if wait_cm_listen 7471 15; then
		run_bounded "$T_SHORT" taskset -c "$CLIENT_CPU" \
			"$pp" -T verbs -B cm -p 7471 -n 1 -w 0 -S 16 --no-verify "$RXE_IP" >"$co" 2>&1
		st=$?
	else
		echo "rdma_server never listened"
		st=90
	fi
	wait "$sp"
	sst=$?
	[ "$st" -eq 0 ] && [ "$sst" -eq 0 ] || { echo "--- client:"; cat "$co"; echo "--- rdma_server:"; cat "$so"; }
	check "rcc-pingpong client -> rdma_server (#$round)" $((st | sst)) "$(since "$t0") s"
done
suite_result
