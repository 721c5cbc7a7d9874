#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The C harness's verdicts (tests/common/harness.c): a failed case fails the
# binary, a binary that ran nothing fails, a binary whose every case skipped
# exits 77 (a skip, not a pass), and a skip of a need listed in
# RCC_TEST_REQUIRE is a failure.
#   harness.sh PATH/TO/harness_probe
set -u
probe=${1:?usage: $0 harness_probe}
fails=0

# expect STATUS DESCRIPTION [VAR=VALUE...] -- CASES...
expect() {
	local want=$1 what=$2 st
	shift 2
	local envs=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	env -u RCC_TEST_REQUIRE "${envs[@]}" timeout 30 "$probe" "$@" >/dev/null 2>&1
	st=$?
	if [ "$st" = "$want" ]; then
		echo "  ok    $what (exit $st)"
	else
		echo "  FAIL  $what: exit $st, expected $want"
		fails=$((fails + 1))
	fi
}

expect 0 "a passing case passes" -- passes
expect 1 "a failing case fails the binary" -- passes fails
expect 1 "no case selected is a failure" -- no_such_case
expect 77 "every case skipped: 77" -- skips
expect 0 "some cases skipped, the rest passed: 0" -- passes skips
expect 1 "a required need that is missing fails" RCC_TEST_REQUIRE=other,probe-need -- skips
expect 77 "a need not required skips" RCC_TEST_REQUIRE=probe -- skips
expect 1 "a failure before a skip stays a failure" -- fails_then_skips
out=$(env -u RCC_TEST_REQUIRE "$probe" passes skips 2>&1)
if grep -q '^1 of 2 cases passed, 1 skipped' <<<"$out"; then
	echo "  ok    the summary counts skips apart from passes"
else
	echo "  FAIL  summary: $out"
	fails=$((fails + 1))
fi
[ "$fails" -eq 0 ]
