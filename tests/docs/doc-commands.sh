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
# Fails when a line is refused, or when no line was found at all.
set -euo pipefail
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
		printf 'ok   %s:%s: %s\n' "$rel" "$no" "$tool$rest"
	else
		printf 'FAIL %s:%s: %s (exit %s, want %s)\n' "$rel" "$no" "$tool$rest" "$rc" "$want"
		sed 's/^/       /' <<<"$out" | head -n 5
		bad=$((bad + 1))
	fi
}

# a home of its own: the docs create files there (a job secret) before a
# tool reads them
HOME=$(mktemp -d)
export HOME
trap 'rm -rf "$HOME"' EXIT
head -c 32 /dev/urandom | base64 >"$HOME/.rcc-job-secret"
chmod 600 "$HOME/.rcc-job-secret"

checked=0 bad=0
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
echo "$checked command lines checked, $bad refused"
[ "$checked" -gt 0 ] || { echo "FAIL: no command line found in the docs"; exit 1; }
[ "$bad" = 0 ]
