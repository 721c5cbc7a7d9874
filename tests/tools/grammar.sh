#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The one command line of docs/cli.md, tool by tool: --version and --help in
# GNU form, HOST:PORT and [::1]:PORT, TIME values, -m fd, -c RC|UC|UD, a missing device, and
# the exit status and message of each mistake. Then the output of docs/json.md:
# JSON that parses and says its schema, and the server's "served 1 client".
#   grammar.sh BUILD_DIR
set -u
build=${1:?usage: $0 BUILD_DIR}
. "$(dirname "$0")/../common/checks.sh"

work=$(mktemp -d "${TMPDIR:-/tmp}/rcc-grammar.XXXXXX")
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	rm -rf "$work"
}
trap cleanup EXIT

pp=$build/tools/rcc-pingpong/rcc-pingpong
perf=$build/tools/rcc-perf/rcc-perf
xfer=$build/tools/rcc-xfer/rcc-xfer
mesh=$build/tools/rcc-mesh/rcc-mesh
info=$build/tools/rcc-info/rcc-info
for b in "$pp" "$perf" "$xfer" "$mesh" "$info"; do
	[ -x "$b" ] || { say "no $b: build the tools"; exit 1; }
done
export RCC_XFER_KEY=grammar-test-key-0123456789
printf 'x' >"$work/file"

# run NAME STATUS PATTERN CMD...: CMD exits with STATUS (bounded) and its output
# (stdout and stderr) matches the extended regular expression PATTERN.
run() {
	local name=$1 want=$2 pattern=$3 st
	shift 3
	timeout -s KILL 30 "$@" >"$work/out" 2>&1
	st=$?
	if [ "$st" -eq "$want" ] && grep -Eq -- "$pattern" "$work/out"; then
		pass "$name"
	else
		fail "$name: exit $st (want $want), output:"
		sed 's/^/        /' "$work/out" | head -5
	fi
}

# Each tool as a list of words: how to call it so that the common options apply.
declare -A call=(
	[rcc-pingpong]="$pp"
	[rcc-perf]="$perf"
	[rcc-xfer]="$xfer recv"
	[rcc-mesh]="$mesh --nodes 127.0.0.1:1,127.0.0.1:2 --rank 0"
	[rcc-info]="$info"
)

for t in rcc-pingpong rcc-perf rcc-xfer rcc-mesh rcc-info; do
	read -ra c <<<"${call[$t]}"
	bin=${c[0]}
	say "$t"
	run "--version: '$t (rcc) X.Y.Z' first (GNU, help2man)" 0 "^$t \\(rcc\\) [0-9]+\\.[0-9]+" \
		"$bin" --version
	check "  and nothing before it" eval "head -1 '$work/out' | grep -q '^$t (rcc) '"
	run "-V as --version" 0 "^$t \\(rcc\\) " "$bin" -V
	run "--help: a Usage line and the shared options" 0 "docs/cli.md" "$bin" --help
	check "  starts with 'Usage: $t'" eval "head -1 '$work/out' | grep -q '^Usage: $t '"
	check "  says the exit status" grep -q '^Exit status:' "$work/out"
	check "  lines fit 80 columns" eval "! awk 'length > 80' '$work/out' | grep -q ."
	run "an unknown option: exit 2, the option named" 2 "unknown option '--no-such-option'" \
		"${c[@]}" --no-such-option
	check "  and where to look" grep -q "^Try '$t --help'.$" "$work/out"
	run "-d nosuchdev: exit 1, the device named" 1 "^$t: no RDMA device named 'nosuchdev'" \
		"${c[@]}" -d nosuchdev
	[ "$t" = rcc-info ] && continue

	run "-d with -T tcp: a usage error" 2 "-d nosuchdev names an RDMA device" \
		"${c[@]}" -T tcp -d nosuchdev
	# -m fd parses in every tool: the device check after it is what stops the run
	run "-m fd is taken" 1 "no RDMA device named" "${c[@]}" -m fd -d nosuchdev
	run "--mode and --cq-mode are -m" 1 "no RDMA device named" \
		"${c[@]}" --mode wait --cq-mode poll -d nosuchdev
	run "-m nonsense: exit 2, the choices named" 2 "must be poll, wait, fd or hybrid, not 'spin'" \
		"${c[@]}" -m spin
	run "-T nonsense: exit 2" 2 "the transport must be auto, verbs or tcp, not 'ib'" \
		"${c[@]}" -T ib
	run "--timeout 500ms is a time" 1 "no RDMA device named" \
		"${c[@]}" --timeout 500ms -d nosuchdev
	run "--timeout 5x: exit 2" 2 "--timeout: bad duration '5x'" "${c[@]}" --timeout 5x
	run "--timeout -1: exit 2" 2 "--timeout: bad duration '-1'" "${c[@]}" --timeout -1
	run "--timeout 1e3: exit 2 (no exponents)" 2 "--timeout: bad duration '1e3'" \
		"${c[@]}" --timeout 1e3
	run "--timeout 0: exit 2 (out of range)" 2 "--timeout: '0' is out of range" \
		"${c[@]}" --timeout 0
	run "--timeout with no value: exit 2" 2 "option '--timeout' needs a value" \
		"${c[@]}" --timeout
done

say "connection type (-c): rcc-pingpong and rcc-perf; RC, UC and UD in either case"
for bin in "$pp" "$perf"; do
	t=${bin##*/}
	run "$t -c UC is taken" 1 "no RDMA device named" "$bin" -c UC -d nosuchdev
	run "$t --connection uc is taken" 1 "no RDMA device named" "$bin" --connection uc -d nosuchdev
	run "$t -c UD is taken" 1 "no RDMA device named" "$bin" -c UD -d nosuchdev
	run "$t -c ud is taken" 1 "no RDMA device named" "$bin" -c ud -d nosuchdev
	run "$t -c xrc: exit 2, the choices named" 2 "the connection type \\(-c\\) must be RC, UC or UD, not 'xrc'" \
		"$bin" -c xrc
	run "$t --help lists -c" 0 "-c, --connection TYPE" "$bin" --help
done
run "rcc-perf -c UC --test read: exit 2, the cure named" 2 "READ and atomics need -c RC" \
	"$perf" -c UC --test read 127.0.0.1
run "rcc-perf -c uc --test atomic: exit 2" 2 "READ and atomics need -c RC" \
	"$perf" -c uc --test atomic 127.0.0.1
run "rcc-perf -c UD --test write: exit 2, the cure named" 2 "-c UD carries send only" \
	"$perf" -c UD --test write 127.0.0.1
run "rcc-perf -c ud --test send,read: exit 2" 2 "-c UD carries send only" \
	"$perf" -c ud --test send,read 127.0.0.1
run "rcc-pingpong -c ud --srq: exit 2, the reason named" 2 "--srq does not go with -c ud" \
	"$pp" -c ud --srq 4
run "rcc-xfer takes no -c" 2 "unknown option -c" "$xfer" recv -c uc

say "peers: HOST:PORT and [v6]:PORT (nothing listens on port 1: a connect error, not usage)"
run "rcc-pingpong 127.0.0.1:1" 1 "cannot connect to 127\\.0\\.0\\.1:1\\b" \
	"$pp" -T tcp -n 2 127.0.0.1:1
run "rcc-pingpong [::1]:1" 1 "cannot connect to \\[::1\\]:1\\b" "$pp" -T tcp -n 2 '[::1]:1'
run "rcc-pingpong 127.0.0.1:99999: exit 2" 2 "bad HOST '127.0.0.1:99999'" "$pp" 127.0.0.1:99999
run "rcc-perf 127.0.0.1:1" 1 "127\\.0\\.0\\.1:1\\b" "$perf" -T tcp 127.0.0.1:1
run "rcc-perf [::1]:1" 1 "\\[::1\\]:1\\b" "$perf" -T tcp '[::1]:1'
run "rcc-perf [::1: exit 2" 2 "bad HOST '\\[::1'" "$perf" -T tcp '[::1'
run "rcc-xfer send 127.0.0.1:1" 6 "cannot connect to 127\\.0\\.0\\.1:1\\b" \
	"$xfer" send -T tcp "$work/file" 127.0.0.1:1
run "rcc-xfer send [::1]:1" 6 "cannot connect to \\[::1\\]:1\\b" \
	"$xfer" send -T tcp "$work/file" '[::1]:1'
run "rcc-xfer send -p 1 127.0.0.1 (port from -p)" 6 "cannot connect to 127\\.0\\.0\\.1:1\\b" \
	"$xfer" send -T tcp -p 1 "$work/file" 127.0.0.1
run "rcc-xfer send host:0: exit 2" 2 "bad destination 'host:0'" "$xfer" send "$work/file" host:0
run "rcc-mesh nodes HOST:PORT and [v6]:PORT (2 parsed)" 2 "rank 5 is not in a list of 2 nodes" \
	"$mesh" --nodes '127.0.0.1:1,[::1]:2' --rank 5
run "rcc-mesh node without a port: exit 2" 2 "'127.0.0.1': expected HOST:PORT" \
	"$mesh" --nodes '127.0.0.1,[::1]:2' --rank 0

say "durations with units, and the old milliseconds"
run "rcc-perf -D 1e3: exit 2" 2 "--duration: bad duration '1e3'" "$perf" -T tcp -D 1e3 127.0.0.1
run "rcc-mesh -D 2x: exit 2" 2 "--duration: bad duration '2x'" \
	"$mesh" --nodes 127.0.0.1:1,127.0.0.1:2 --rank 0 -D 2x
run "rcc-mesh --connect-timeout 1.5.2: exit 2" 2 "--connect-timeout: bad duration" \
	"$mesh" --nodes 127.0.0.1:1,127.0.0.1:2 --rank 0 --connect-timeout 1.5.2
run "rcc-xfer --auth-timeout 5sec: exit 2" 2 "--auth-timeout: bad duration '5sec'" \
	"$xfer" recv --auth-timeout 5sec
run "rcc-pingpong --timeout 3000 is still 3000 ms (warned)" 1 "read as 3000ms" \
	"$pp" --timeout 3000 -d nosuchdev 127.0.0.1
run "rcc-perf -m 1024 (perftest's MTU) is explained" 2 "not perftest's MTU" "$perf" -m 1024

say "output"
# a server on a free port, its lines line-buffered into a file
"$pp" -T tcp -p 0 --once >"$work/srv" 2>&1 &
pids+=($!)
if wait_until 10 grep -q 'listening on' "$work/srv"; then
	port=$(sed -n 's/.*listening on [^ ]*:\([0-9][0-9]*\) .*/\1/p' "$work/srv")
	run "rcc-pingpong --json parses, schema 1" 0 '"schema":1' "$pp" -T tcp -n 20 --json \
		"127.0.0.1:$port"
	check "  one JSON object on stdout" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["tool"] == "rcc-pingpong" and d["schema"] == 1 and d["half_rtt_us"]["median"] > 0
' "$work/out"
	check "the server says 'served 1 client ('" wait_until 10 grep -q 'served 1 client (' "$work/srv"
else
	fail "rcc-pingpong server did not start"
fi
"$perf" -T tcp -p 0 >"$work/psrv" 2>&1 &
pids+=($!)
if wait_until 10 grep -q 'server on port' "$work/psrv"; then
	port=$(sed -n 's/.*server on port \([0-9][0-9]*\) .*/\1/p' "$work/psrv")
	timeout -s KILL 60 "$perf" -T tcp --test send -s 64 -n 20 --json "127.0.0.1:$port" \
		>"$work/pj" 2>"$work/pt"
	check "rcc-perf --json: exit 0" test $? -eq 0
	check "  stdout is one JSON object, schema 1, both kinds" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["tool"] == "rcc-perf" and d["schema"] == 1
assert sorted(p["kind"] for p in d["results"]) == ["bw", "lat"]
' "$work/pj"
	check "  the tables went to stderr, units in the headers" \
		grep -q '#bytes .*t_typical\[us\]' "$work/pt"
	check "  the banner shows the real iterations" grep -Eq '^ Iterations +: 20$' "$work/pt"
	check "  no tab in the tables" eval "! grep -q \$'\\t' '$work/pt'"
else
	fail "rcc-perf server did not start"
fi
"$info" --json >"$work/ij" 2>&1
check "rcc-info --json parses, schema 1" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["tool"] == "rcc-info" and d["schema"] == 1 and isinstance(d["devices"], list)
' "$work/ij"
finish
