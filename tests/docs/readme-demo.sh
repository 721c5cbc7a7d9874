#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# readme-demo.sh SRC_DIR: the README's first command, ./scripts/demo.sh, run
# as the README shows it, in a scratch copy of the sources (its build/ is the
# copy's: the user's build/ is untouched), after the test build. It must exit
# 0 and print the ping-pong figures of its three sizes and rcc-perf's four
# tables with a row for each size. One change: the ping-pong port is a free
# one (RCC_DEMO_PORT), not 7471, which a test beside it may hold. Costs
# what the demo costs: a build of the library, tools and examples (about 35 s
# of CPU: 2.7 minutes on a busy shared 2-core host) and a few seconds of running.
# Skips (77) only when a package the demo would install is missing: a test
# installs nothing (scripts/test.sh has installed them before it runs this).
set -euo pipefail
. "$(dirname "$0")/copy-sources.sh"
src=$(cd "$1" && pwd)
. "$src/scripts/lib.sh"
missing=()
for p in $PKGS_BUILD; do
	dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qx installed || missing+=("$p")
done
((${#missing[@]} == 0)) || { echo "SKIP: the demo would install ${missing[*]}"; exit 77; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
copy_sources "$src" "$work"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])')

echo "running ./scripts/demo.sh in $work (RCC_DEMO_PORT=$port)"
t0=$SECONDS
rc=0
out=$(cd "$work" && RCC_DEMO_PORT=$port timeout 600 ./scripts/demo.sh 2>&1) || rc=$?
echo "the demo took $((SECONDS - t0)) s and exited $rc"
fail() {
	printf '%s\n' "$out" | tail -n 60
	echo "FAIL: $*"
	exit 1
}
[ "$rc" = 0 ] || fail "./scripts/demo.sh exited $rc"

# rcc-pingpong: one verified run per size, each with its latency and rate
for size in 16 4096 65536; do
	grep -q "^rcc-pingpong: 10000 round trips of $size bytes with 127.0.0.1:$port .*all pongs verified$" \
		<<<"$out" || fail "no verified ping-pong of $size bytes"
done
[ "$(grep -c '^  half round trip (us): min [0-9.]*  median [0-9.]*' <<<"$out")" = 3 ] ||
	fail "not three ping-pong latency lines"
[ "$(grep -c '^  rate: [0-9]* round trips/s' <<<"$out")" = 3 ] || fail "not three ping-pong rates"

# rcc-perf: the four tables, a figure row for each size under each
for t in "Send Latency Test" "RDMA_Write Latency Test" "Send BW Test" "RDMA_Write BW Test"; do
	grep -q "^ *$t$" <<<"$out" || fail "rcc-perf printed no '$t'"
done
for size in 8 4096 65536; do
	[ "$(grep -cE "^ $size +[0-9]+ +[0-9.]+ +[0-9.]+" <<<"$out")" = 4 ] ||
		fail "rcc-perf printed no row for $size bytes in each of its four tables"
done
tail -n 1 <<<"$out" | grep -qx '==> done' || fail "the demo did not end with '==> done'"
echo "ok: ./scripts/demo.sh ran and printed the ping-pong and rcc-perf figures"
