#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# rcc-info lists the Soft-RoCE device correctly: port ACTIVE, Ethernet link layer,
# the IPv4 RoCE v2 GID at RXE_GID_IDX, and the documented exit statuses.
source tests/rxe/lib.sh
info=$RCC_BUILD/tools/rcc-info/rcc-info
[ -x "$info" ] || { log "no $info (build the tools)"; exit 1; }
out=$RXE_LOGDIR/info.txt

run_bounded 30 "$info" >"$out" 2>&1
check "exit status 0 with a device" $?
cat "$out"
grep -q "^$RXE_DEV: node type CA" "$out"
check "device $RXE_DEV listed (node type CA)" $?
grep -Eq "^  port 1: state ACTIVE, link layer Ethernet, active MTU [0-9]+, max MTU 4096" "$out"
check "port 1 ACTIVE, Ethernet, max MTU 4096" $?
gidre=$(printf '^    GID +%d  0000:0000:0000:0000:0000:ffff:[0-9a-f:]+  RoCE v2  %s +IPv4 %s$' \
	"$RXE_GID_IDX" "${RXE_NETDEV:-dummy0}" "${RXE_IP//./\\.}")
grep -Eq "$gidre" "$out"
check "GID $RXE_GID_IDX is RoCE v2 IPv4 $RXE_IP on ${RXE_NETDEV:-dummy0}" $?
grep -Eq '^    GID +0  fe80:' "$out"
check "GID 0 is the link-local RoCE v2 GID" $?

run_bounded 30 "$info" -d "$RXE_DEV" -v >"$out.v" 2>&1
st=$?
grep -q "^  limits: max_qp [0-9]" "$out.v"
check "-d $RXE_DEV -v shows the limits" $((st | $?))

run_bounded 30 "$info" --json >"$out.json" 2>&1
st=$?
grep -q "\"name\":\"$RXE_DEV\"" "$out.json" && grep -q '"state":"ACTIVE"' "$out.json" &&
	grep -q "\"address\":\"$RXE_IP\"" "$out.json"
check "--json names the device, ACTIVE, $RXE_IP" $((st | $?))

run_bounded 30 "$info" -d no-such-dev >/dev/null 2>&1
check "-d unknown device exits 1" $(($? != 1))
run_bounded 30 "$info" --bogus >/dev/null 2>&1
check "a bad option exits 2" $(($? != 2))
suite_result
