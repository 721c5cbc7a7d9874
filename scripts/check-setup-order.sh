#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The README's two commands share build/: each must leave it right for itself
# whichever ran before, any number of times. Configures a scratch tree the way
# demo.sh does and the way test.sh does, in both orders, and checks what each
# needs: the tests registered for test.sh, the tools built for demo.sh.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
fail=0

ntests() { ctest --test-dir "$scratch" -N | sed -n 's/^Total Tests: //p'; }
cached() { sed -n "s/^$1:[A-Z]*=//p" "$scratch/CMakeCache.txt"; }

expect_test_tree() { # WHEN
	local n
	n=$(ntests)
	if [ "${n:-0}" -gt 0 ] && [ "$(cached RCC_BUILD_TOOLS)" = ON ]; then
		echo "ok: test configuration after $1 registers $n tests"
	else
		echo "FAIL: test configuration after $1 registers ${n:-no} tests"
		fail=1
	fi
}
expect_demo_tree() { # WHEN
	if [ "$(cached RCC_BUILD_TOOLS)" = ON ] && [ "$(cached RCC_BUILD_TESTS)" = OFF ]; then
		echo "ok: demo configuration after $1 builds the tools and no tests"
	else
		echo "FAIL: demo configuration after $1: tools $(cached RCC_BUILD_TOOLS), tests $(cached RCC_BUILD_TESTS)"
		fail=1
	fi
}

configure "$scratch" "${DEMO_CONFIG[@]}"
configure "$scratch" "${TEST_CONFIG[@]}"
expect_test_tree "the demo"
configure "$scratch" "${DEMO_CONFIG[@]}"
expect_demo_tree "the tests"
configure "$scratch" "${TEST_CONFIG[@]}"
expect_test_tree "demo, tests, demo"
exit $fail
