#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# doc-commands-selftest.sh BUILD_DIR: doc-commands.sh can fail. A made-up
# README with a command line the tool refuses must fail the check, naming the
# line; the same line marked "# refused" passes, and so does a good one.
# (The parse check only: the made-up docs have none of the lines that
# doc-commands.sh runs; a fault there is a mutant of doc_commands itself.)
set -euo pipefail
export RCC_DOC_RUN=0
here=$(cd "$(dirname "$0")" && pwd)
build=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/docs"

printf '```sh\nrcc-perf -T tcp 127.0.0.1\nrcc-perf --no-such-option 127.0.0.1\n```\n' >"$work/README.md"
rc=0
out=$(bash "$here/doc-commands.sh" "$work" "$build" 2>&1) || rc=$?
[ "$rc" = 77 ] && { echo "$out"; exit 77; }
[ "$rc" = 1 ] || { echo "$out"; echo "FAIL: a refused command line passed (exit $rc)"; exit 1; }
grep -q '^FAIL README.md:3: rcc-perf --no-such-option' <<<"$out" ||
	{ echo "$out"; echo "FAIL: the refused line is not named"; exit 1; }
grep -q '^ok   README.md:2: rcc-perf -T tcp 127.0.0.1' <<<"$out" ||
	{ echo "$out"; echo "FAIL: the good line is not reported ok"; exit 1; }

printf '```sh\nrcc-perf --no-such-option 127.0.0.1   # refused\n```\n' >"$work/README.md"
bash "$here/doc-commands.sh" "$work" "$build" >/dev/null ||
	{ echo "FAIL: a line marked '# refused' that the tool refuses did not pass"; exit 1; }
echo "ok: doc-commands.sh fails on a refused line and passes a line marked refused"
