#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Run one example and require exit status 0 and exactly the expected output
# (examples/expected/NAME.out): an example is documentation, so what it prints
# is part of what it teaches.
# Usage: run-example.sh PROGRAM EXPECTED_FILE [ARG...]  (ARGs go to PROGRAM)
set -uo pipefail
prog=$1 expected=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
timeout 30 "$prog" "$@" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -ne 0 ]; then
	echo "FAIL: $prog exited with $rc"
	cat "$tmp/err"
	exit 1
fi
# files, not process substitution: the VM's minimal root has no /dev/fd
if ! diff -u "$expected" "$tmp/out"; then
	echo "FAIL: $prog printed something other than $expected"
	cat "$tmp/err"
	exit 1
fi
echo "ok: $(basename "$prog") printed what examples/expected says"
