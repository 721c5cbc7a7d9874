#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# doc-commands.sh SRC_DIR BUILD_DIR: every tool command line that README.md
# and docs/*.md show in a code block is one the tool accepts. Each line that
# runs rcc-pingpong, rcc-perf, rcc-xfer, rcc-mesh or rcc-info (directly, by a
# build path, or after mpirun/srun and environment assignments) is run with
# RCC_CLI_CHECK=1: the tool parses and checks the whole command line, then
# exits 0 without opening anything (tools/common/cmdline.h). A line the docs
# show failing on purpose ends with the comment "# refused": it must exit 2.
# Shell variables in the docs ($N, $k) stand for small numbers here.
# Lines that one machine can run are also run, on loopback (see "Run"
# below); the others need other machines, a launcher or an RDMA device and
# are only parsed: each is listed with the reason.
# Fails when a line is refused, or when no line was found at all, or when a
# line that is run fails.
set -euo pipefail
. "$(dirname "$0")/../common/checks.sh" # signal_tool; check() is this script's own
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
tools="rcc-pingpong|rcc-perf|rcc-xfer|rcc-mesh|rcc-info"
for t in rcc-pingpong rcc-perf rcc-xfer rcc-mesh rcc-info; do
	[ -x "$build/tools/$t/$t" ] || { echo "SKIP: $t is not built in $build"; exit 77; }
done

# the lines of every fenced code block of one Markdown file: "LINE_NO<TAB>TEXT",
# and "0<TAB>" where a block starts
code_lines() {
	awk '/^ *```/ { inside = !inside; if (inside) print "0\t"; next }
		!inside { next }
		# a line ending in a backslash goes on in the next one
		held != "" { $0 = held " " $0; held = ""; n = first } held == "" { first = first ? first : NR }
		/\\$/ { held = substr($0, 1, length($0) - 1); next }
		{ printf "%d\t%s\n", first, $0; first = 0 }' "$1"
}

# check REL NO WANT TOOL PREFIX REST: run the tool in check mode, as the line would
check() {
	local rel=$1 no=$2 want=$3 tool=$4 prefix=$5 rest=$6 rc=0 out w i
	local -a pre=() args=() envs=()
	if ! eval "pre=( $prefix )" 2>/dev/null || ! eval "args=( $rest )" 2>/dev/null; then
		echo "FAIL $rel:$no: cannot split: $prefix$tool$rest"
		bad=$((bad + 1))
		return
	fi
	# what comes before the tool: VAR=value assignments, or a launcher (mpirun,
	# srun) whose -x VAR=value it exports and whose -np/-n it starts: rank 0
	# of that many is what the tool then sees
	for ((i = 0; i < ${#pre[@]}; i++)); do
		w=${pre[i]}
		case $w in
		mpirun | srun) envs+=(RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500) ;;
		-np | -n) envs+=("WORLD_SIZE=${pre[i + 1]:-2}") ;;
		-x) envs+=("${pre[i + 1]:-}") ;;
		[A-Za-z_]*=*) envs+=("$w") ;;
		esac
	done
	for i in "${!envs[@]}"; do
		w=${envs[i]}
		# the shell expands ~ after the = of an assignment; the docs' hosts are
		# examples: the rendezvous is this one
		[[ $w == *=~/* ]] && w=${w%%=*}=$HOME/${w#*=~/}
		[[ $w == MASTER_ADDR=* ]] && w=MASTER_ADDR=127.0.0.1
		envs[i]=$w
	done
	# bounded: a tool that ignored the check mode would wait for peers
	out=$(env "${envs[@]}" RCC_CLI_CHECK=1 timeout 10 "$build/tools/$tool/$tool" "${args[@]}" \
		2>&1 </dev/null) ||
		rc=$?
	checked=$((checked + 1))
	if [ "$rc" = "$want" ]; then
		if [ "$want" = 2 ]; then
			# a usage error is all the line shows: the check mode runs that part
			printf 'ok   %s:%s: %s  [refused, as the doc says]\n' "$rel" "$no" "$tool$rest"
		else
			printf 'ok   %s:%s: %s%s\n' "$rel" "$no" "$tool$rest" "$(parse_only_why "$rel:$no" "$prefix$tool$rest")"
		fi
	else
		printf 'FAIL %s:%s: %s (exit %s, want %s)\n' "$rel" "$no" "$tool$rest" "$rc" "$want"
		sed 's/^/       /' <<<"$out" | head -n 5
		bad=$((bad + 1))
	fi
}

# parse_only_why REL:NO WORDS: what else happens to a line (printed after it):
# run on loopback (by the "Run" part below), or why it is only parsed
parse_only_why() {
	local w=" $2 "
	if [ -n "${RAN[$1]:-}" ]; then
		echo "  [also run above]"
		return
	fi
	case $w in
	*" mpirun "* | *" srun "*) echo "  [parsed only: a launcher; tests/mesh/launch-*.sh runs it]" ;;
	*" -x "* | *" -d "* | *" verbs "* | *10.0.2.15*)
		echo "  [parsed only: an RDMA device; tests/rxe runs it in the Soft-RoCE VM]" ;;
	*" --nodes "* | *" 10.0.0."* | *=10.0.0.* | *"=n1 "* | *" server "*) echo "  [parsed only: other machines]" ;;
	*fe80::*) echo "  [parsed only: a link-local address of an interface this host may not have]" ;;
	*" -a "* | *" -D 2s "*) echo "  [parsed only: runs for minutes]" ;;
	*) echo "  [parsed only: could run here, not run yet]" ;;
	esac
}

# a home of its own: the docs create files there (a job secret) before a
# tool reads them
HOME=$(mktemp -d)
export HOME
trap 'rm -rf "$HOME"' EXIT
head -c 32 /dev/urandom | base64 >"$HOME/.rcc-job-secret"
chmod 600 "$HOME/.rcc-job-secret"

# --- Run: the lines one machine can run ------------------------------------------------
# These lines are taken from the docs as written (found by the regex given
# with each; a doc that no longer has the line fails the check) and run on
# loopback, every process under a timeout. What the harness changes:
# - the tool's name (or build path) becomes its path in BUILD_DIR;
# - a server gets "-p 0" after its own options (a free port: a test beside
#   this one may hold 7471), and its client that port as HOST:PORT;
# - `kill %1` stops that server (the job the line started), by its pid;
# - a pingpong server line shown with its client is run with --once (it
#   serves that one client, then exits);
# - MASTER_PORT becomes a free port (the docs' 29500 may be taken) and a
#   MASTER_ADDR other than 127.0.0.1 becomes 127.0.0.1 (the docs' n1 or
#   10.0.0.1 is the first node); $k runs over the ranks 0..WORLD_SIZE-1;
#   each process writes to a log of its own.
# Not run (parsed only, the reason printed with each line): rcc-perf's -a and
# -D lines (minutes: every size up to 8 MiB, or 2 s per test and size), mpirun and srun
# lines (a launcher; tests/mesh/launch-*.sh runs them on this host), lines
# that name other machines (10.0.0.x, n1, server, --nodes) and lines that
# need an RDMA device (-x, -d, verbs; the Soft-RoCE suites run those).
declare -A RAN=()
run=$(mktemp -d)
trap 'rm -rf "$HOME" "$run"' EXIT
ran=0

# doc_line REL REGEX: "NO<TAB>TEXT" of the first line of REL's code blocks
# whose text matches the (awk) REGEX; fails, saying so, when there is none
doc_line() {
	local hit
	hit=$(code_lines "$src/$1" | awk -F'\t' -v re="$2" '$1 > 0 && $2 ~ re { print; exit }')
	[ -n "$hit" ] || { echo "FAIL $1: no command line matches /$2/: update the run in doc-commands.sh" >&2; return 1; }
	printf '%s\n' "$hit"
}
# as_words TEXT: the words of a command line (comment, redirection and a
# trailing & dropped; $k expanded) in W, the tool's word its build path
as_words() {
	local t i
	t=$(sed -E 's/[[:space:]]+#.*$//; s/[[:space:]]*[|>].*$//; s/[[:space:]]*&[[:space:]]*$//' <<<"$1")
	eval "W=( $t )"
	for i in "${!W[@]}"; do
		[[ ${W[i]} =~ (^|/)($tools)$ ]] && W[i]=$build/tools/${BASH_REMATCH[2]}/${BASH_REMATCH[2]}
		[[ ${W[i]} == MASTER_ADDR=* && ${W[i]} != MASTER_ADDR=127.0.0.1 ]] && W[i]=MASTER_ADDR=127.0.0.1
		[[ ${W[i]} == MASTER_PORT=* ]] && W[i]=MASTER_PORT=$master_port
	done
	return 0
}
# port_of FILE: the port a server started in the background reports, waiting
# up to 10 s for it: a tool's "listening on HOST:PORT" or "on port PORT"
# line, or a ready file holding the number alone; nothing if none came
port_of() {
	local i p
	for i in $(seq 100); do
		p=$(sed -nE 's/.*(listening on [^ ]*:| on port )([0-9]+).*/\2/p; s/^([0-9]+)$/\1/p' "$1" 2>/dev/null |
			head -n1)
		[ -n "$p" ] && { echo "$p"; return; }
		sleep 0.1
	done
}
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])'; }
# run_failed REL:NO WHAT LOG...: report a line that failed, with its logs
run_failed() {
	local at=$1 what=$2 f
	shift 2
	echo "FAIL $at: $what"
	for f in "$@"; do [ -f "$f" ] && sed 's/^/       /' "$f" | tail -n 8; done
	bad=$((bad + 1))
}
run_ok() { # REL:NO... : lines that ran as the docs say
	local at
	for at in "$@"; do
		RAN[$at]=1
		ran=$((ran + 1))
		echo "ran  $at"
	done
}

# start_bg AT WHAT LOG PORTFILE SECONDS COMMAND...: COMMAND in the background,
# bounded by SECONDS, its output in LOG; sets the caller's pid, and its port to
# the one reported in PORTFILE (the log itself, or a ready file). When none
# comes within 10 s: stops it, reports AT ("WHAT did not start"), returns 1.
# Both files are removed first: the background shell truncates LOG only when
# it gets to run, and on a loaded host the previous server's log, still
# there, gave that server's port (its client then found nobody there, and
# the new server waited out its timeout for a client that never came).
start_bg() {
	local at=$1 what=$2 log=$3 portfile=$4 secs=$5
	shift 5
	rm -f "$log" "$portfile"
	timeout "$secs" "$@" >"$log" 2>&1 &
	pid=$!
	port=$(port_of "$portfile")
	[ -n "$port" ] && return 0
	kill "$pid" 2>/dev/null || true
	run_failed "$at" "$what did not start within 10 s" "$log"
	return 1
}

# README.md, Tools: a server in the background, a client, `kill %1`
run_server_client() {
	local rel=README.md s c k pid port rc=0 i
	s=$(doc_line $rel '(^|/)rcc-pingpong .*&') && c=$(doc_line $rel '(^|/)rcc-pingpong .* 127\.0\.0\.1') &&
		k=$(doc_line $rel '^kill %1') || { bad=$((bad + 1)); return; }
	as_words "${s#*$'\t'}"
	start_bg "$rel:${s%%$'\t'*}" "the server" "$run/server.log" "$run/server.log" 60 "${W[@]}" -p 0 ||
		return
	as_words "${c#*$'\t'}"
	W=("${W[@]/#127.0.0.1/127.0.0.1:$port}")
	timeout 60 "${W[@]}" >"$run/client.log" 2>&1 || rc=$?
	# the line `kill %1`: the server must still be there to be stopped
	signal_tool TERM "$pid" || { run_failed "$rel:${k%%$'\t'*}" "the server was gone before kill %1" \
		"$run/server.log"; wait "$pid" || true; return; }
	wait "$pid" || { run_failed "$rel:${k%%$'\t'*}" "the server exited $? when stopped" "$run/server.log"; return; }
	[ "$rc" = 0 ] || { run_failed "$rel:${c%%$'\t'*}" "the client exited $rc" "$run/client.log" "$run/server.log"; return; }
	grep -q 'all pongs verified' "$run/client.log" ||
		{ run_failed "$rel:${c%%$'\t'*}" "the client verified no pongs" "$run/client.log"; return; }
	grep -q '^rcc-pingpong: served 1 client ' "$run/server.log" ||
		{ run_failed "$rel:${k%%$'\t'*}" "the server did not report its client" "$run/server.log"; return; }
	run_ok "$rel:${s%%$'\t'*}" "$rel:${c%%$'\t'*}" "$rel:${k%%$'\t'*}"
}

# run_client REL REGEX SERVER READY: the client line of REL that matches
# REGEX, against a server started from the text SERVER (a doc line's, or the
# harness's own where the doc shows none) on a free port; a pipe in the doc's
# line is run on the client's output as shown. The client and the server
# (which serves this one client, then exits) must exit 0, and what comes out
# of the line must match READY.
run_client() {
	local rel=$1 l pid port rc=0 i out pipe=
	l=$(doc_line "$rel" "$2") || { bad=$((bad + 1)); return; }
	as_words "$3"
	start_bg "$rel:${l%%$'\t'*}" "its server ($3)" "$run/server.log" "$run/server.log" 120 \
		"${W[@]}" -p 0 || return
	[[ ${l#*$'\t'} == *'|'* ]] && pipe=${l#*|}
	as_words "${l#*$'\t'}"
	W=("${W[@]/#127.0.0.1/127.0.0.1:$port}")
	timeout 120 "${W[@]}" >"$run/client.log" 2>&1 || rc=$?
	wait "$pid" || { run_failed "$rel:${l%%$'\t'*}" "its server exited $?" "$run/server.log"; return; }
	[ "$rc" = 0 ] || { run_failed "$rel:${l%%$'\t'*}" "the client exited $rc" "$run/client.log"; return; }
	out=$(if [ -n "$pipe" ]; then bash -c "$pipe" <"$run/client.log"; else cat "$run/client.log"; fi) ||
		{ run_failed "$rel:${l%%$'\t'*}" "|$pipe failed" "$run/client.log"; return; }
	grep -qE "$4" <<<"$out" ||
		{ run_failed "$rel:${l%%$'\t'*}" "printed nothing like /$4/: $(head -c 200 <<<"$out")"; return; }
	run_ok "$rel:${l%%$'\t'*}"
}

# run_ranks REL REGEX READY: the environment rendezvous, every rank of a
# WORLD_SIZE=N line at once (as the docs' loop or "k = 0, 1" does); each must
# exit 0 and print a line matching READY
run_ranks() {
	local rel=$1 l n r k failed=0 master_port
	local -a pids=()
	l=$(doc_line "$rel" "$2") || { bad=$((bad + 1)); return; }
	n=$(sed -n 's/.*WORLD_SIZE=\([0-9]*\).*/\1/p' <<<"$l")
	master_port=$(free_port)
	for ((k = 0; k < n; k++)); do
		as_words "${l#*$'\t'}"
		timeout 120 env "${W[@]}" >"$run/rank.$k.log" 2>&1 &
		pids+=($!)
	done
	for r in "${!pids[@]}"; do
		wait "${pids[r]}" || { run_failed "$rel:${l%%$'\t'*}" "rank $r exited $?" "$run/rank.$r.log"; failed=1; }
	done
	[ "$failed" = 0 ] || return
	for ((r = 0; r < n; r++)); do
		grep -qE "$3" "$run/rank.$r.log" ||
			{ run_failed "$rel:${l%%$'\t'*}" "rank $r printed nothing like /$3/" "$run/rank.$r.log"; return; }
	done
	run_ok "$rel:${l%%$'\t'*}"
}

# docs/rcc-xfer.md's recv line and docs/cli.md's send line to [::1]:PORT;
# both use the key made by rcc-xfer.md's keygen line (run before this)
run_xfer_pair() {
	local r s pid port rc=0 i
	r=$(doc_line docs/rcc-xfer.md '^rcc-xfer recv -k ') && s=$(doc_line docs/cli.md "^rcc-xfer send [^ ]+ '\\[::1\\]:") ||
		{ bad=$((bad + 1)); return; }
	# a host without IPv6 on loopback leaves the pair parsed only
	python3 -c 'import socket; socket.socket(socket.AF_INET6).bind(("::1", 0))' 2>/dev/null ||
		{ echo "note: no IPv6 loopback here: the rcc-xfer lines are parsed only"; return; }
	mkdir -p "$run/in" "$run/out"
	head -c 300000 /dev/urandom >"$run/out/file.bin"
	as_words "${r#*$'\t'}"
	for i in "${!W[@]}"; do [ "${W[i]}" = --dir ] && W[i + 1]=$run/in; done
	start_bg "docs/rcc-xfer.md:${r%%$'\t'*}" "the receiver" "$run/recv.log" "$run/xfer.port" 60 \
		"${W[@]}" --listen '[::1]:0' --ready-file "$run/xfer.port" --once || return
	as_words "${s#*$'\t'}"
	W=("${W[@]/%\]:7472/]:$port}")
	# the line names no key file: the key comes from RCC_XFER_KEY, as --help says
	(cd "$run/out" && RCC_XFER_KEY=$(cat "$HOME/.rcc-xfer.key") timeout 60 "${W[@]}") \
		>"$run/send.log" 2>&1 || rc=$?
	wait "$pid" || { run_failed "docs/rcc-xfer.md:${r%%$'\t'*}" "the receiver exited $?" "$run/recv.log"; return; }
	[ "$rc" = 0 ] || { run_failed "docs/cli.md:${s%%$'\t'*}" "the sender exited $rc" "$run/send.log"; return; }
	cmp -s "$run/out/file.bin" "$run/in/file.bin" ||
		{ run_failed "docs/cli.md:${s%%$'\t'*}" "file.bin did not arrive whole" "$run/recv.log"; return; }
	run_ok "docs/rcc-xfer.md:${r%%$'\t'*}" "docs/cli.md:${s%%$'\t'*}"
}

bad=0
# (RCC_DOC_RUN=0: parse only; doc-commands-selftest.sh's made-up docs have none of these lines)
if [ "${RCC_DOC_RUN:-1}" = 1 ]; then
	run_server_client
	run_ranks README.md 'RANK=\$k WORLD_SIZE=[0-9]+ MASTER_ADDR=[^ ]+ MASTER_PORT=[0-9]+ +rcc-mesh ' 'traffic started'
	run_ranks docs/launch.md 'RANK=\$k WORLD_SIZE=[0-9]+ MASTER_ADDR=[^ ]+ MASTER_PORT=[0-9]+ +rcc-mesh ' 'traffic started'
	run_ranks docs/launch.md 'RANK=\$k WORLD_SIZE=[0-9]+ MASTER_ADDR=[^ ]+ MASTER_PORT=[0-9]+ +rcc-perf ' 'Latency Test|Client done'
	# the server line of docs/rcc-perf.md, and its short client lines
	if perf_server=$(doc_line docs/rcc-perf.md '^rcc-perf -T tcp &'); then
		run_client docs/rcc-perf.md '^rcc-perf -T tcp -c UC .*127\.0\.0\.1' "${perf_server#*$'\t'}" 'Test$'
		run_client docs/rcc-perf.md '^rcc-perf -T tcp -c UD .*127\.0\.0\.1' "${perf_server#*$'\t'}" 'Test$'
		RAN[docs/rcc-perf.md:${perf_server%%$'\t'*}]=1
	else
		bad=$((bad + 1))
	fi
	# docs/cli.md's connection types: each pingpong server line (made to serve
	# one client: --once) with its client, and the rcc-perf clients against
	# a plain rcc-perf server (cli.md shows none)
	for t in uc ud; do
		if l=$(doc_line docs/cli.md "^rcc-pingpong -T tcp -c $t &"); then
			srv=$(sed -E 's/[[:space:]]+#.*$//; s/[[:space:]]*&[[:space:]]*$//' <<<"${l#*$'\t'}")
			run_client docs/cli.md "^rcc-pingpong -T tcp -c $t -n [0-9]+ .*127\\.0\\.0\\.1" \
				"$srv --once" 'all pongs verified'
			RAN[docs/cli.md:${l%%$'\t'*}]=1
		else
			bad=$((bad + 1))
		fi
	done
	run_client docs/cli.md '^rcc-perf -T tcp -c UC --lat .*127\.0\.0\.1' 'rcc-perf -T tcp' 'Test$'
	run_client docs/cli.md '^rcc-perf -T tcp -c UD -s [0-9]+ 127\.0\.0\.1' 'rcc-perf -T tcp' 'Test$'
	# docs/json.md shows the client only: the server is the README's, for one client
	run_client docs/json.md '^rcc-pingpong -T tcp --json 127\.0\.0\.1' 'rcc-pingpong -T tcp --once' '^[0-9.]+$'
	# a line that needs no peer
	if l=$(doc_line docs/rcc-xfer.md '^rcc-xfer keygen ~/'); then
		as_words "${l#*$'\t'}"
		if ! timeout 30 "${W[@]}" >"$run/keygen.log" 2>&1 || [ ! -s "${W[-1]}" ]; then
			run_failed "docs/rcc-xfer.md:${l%%$'\t'*}" "made no key file ${W[-1]}" "$run/keygen.log"
		else
			run_ok "docs/rcc-xfer.md:${l%%$'\t'*}"
		fi
	else
		bad=$((bad + 1))
	fi
	# docs/rcc-xfer.md's receiver (its --dir a scratch folder, on [::1] and a
	# free port, serving one sender: --once) and docs/cli.md's IPv6 sender to
	# it, whose file must arrive whole
	run_xfer_pair
	echo "$ran command lines run on loopback, $bad failed"
	[ "$ran" -gt 0 ] || bad=$((bad + 1))
fi

checked=0
for doc in "$src/README.md" "$src"/docs/*.md; do
	rel=${doc#"$src"/}
	while IFS=$'\t' read -r no line; do
		if [ "$no" = 0 ]; then
			# a new block: its own variables; $k is a rank in the docs' loops
			unset N MASTER_ADDR MASTER_PORT
			k=1
			continue
		fi
		line=${line#"$ "}
		# a plain assignment (export X=v, N=list) holds for the rest of the block
		if [[ $line =~ ^[[:space:]]*(export[[:space:]]+)?([A-Za-z_][A-Za-z_0-9]*)=([^[:space:]]*)[[:space:]]*$ ]]; then
			val=${BASH_REMATCH[3]}
			[[ $val == *'$('* ]] && val=n1 # a command's output: any host name
			eval "export ${BASH_REMATCH[2]}=$val"
			continue
		fi
		want=0
		[[ $line =~ \#[[:space:]]*refused[[:space:]]*$ ]] && want=2
		# a comment, a pipe or a redirection ends what the tool sees; a trailing & too
		line=$(sed -E 's/[[:space:]]+#.*$//; s/[[:space:]]*[|>].*$//; s/[[:space:]]*&[[:space:]]*$//; s/\\$//' <<<"$line")
		# the last word that is a tool (or a path ending in one); greedy .* finds it
		[[ $line =~ ^(.*)(^|[[:space:]]|/)($tools)([[:space:]].*)?$ ]] || continue
		[[ $line == *"[OPTIONS]"* ]] && continue # a synopsis, not a command
		prefix=${BASH_REMATCH[1]} tool=${BASH_REMATCH[3]} rest=${BASH_REMATCH[4]}
		# a path to the build tree is part of the tool's word
		[ "${BASH_REMATCH[2]}" = / ] && prefix=$(sed -E 's/[^[:space:]]*$//' <<<"$prefix")
		check "$rel" "$no" "$want" "$tool" "$prefix" "$rest"
	done < <(code_lines "$doc")
done
echo "$checked command lines checked, $bad refused or failed"
[ "$checked" -gt 0 ] || { echo "FAIL: no command line found in the docs"; exit 1; }
[ "$bad" = 0 ]
