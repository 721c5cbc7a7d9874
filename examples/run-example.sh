#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Run one example and require exit status 0 and exactly the expected output
# (examples/expected/NAME.out): an example is documentation, so what it prints
# is part of what it teaches.
# Usage: run-example.sh PROGRAM EXPECTED_FILE [ARG...]  (ARGs go to PROGRAM)
set -uo pipefail
prog=$1 expected=$2
shift 2
out=$(timeout 30 "$prog" "$@" 2>/tmp/example-stderr.$$)
rc=$?
err=$(cat /tmp/example-stderr.$$)
rm -f /tmp/example-stderr.$$
if [ "$rc" -ne 0 ]; then
	echo "FAIL: $prog exited with $rc"
	printf '%s\n' "$err"
	exit 1
fi
if ! diff -u "$expected" <(printf '%s\n' "$out"); then
	echo "FAIL: $prog printed something other than $expected"
	exit 1
fi
echo "ok: $(basename "$prog") printed what examples/expected says"
