# SPDX-License-Identifier: BSD-3-Clause
# RCC_TEST_REQUIRE for the test scripts, read as tests/common/harness.h reads it
# for the C tests: a need the set-up promised (comma-separated list; test.sh
# sets "tcp,pmix") turns a skip into a failure.
# shellcheck shell=bash

# required NEED: whether RCC_TEST_REQUIRE lists NEED.
required() { [[ ",${RCC_TEST_REQUIRE:-}," == *",$1,"* ]]; }

# skipped_part NEED WHY: the end of a script whose other cases passed but one
# of which could not run here for want of NEED. Exits 77, so that ctest counts
# the test as skipped (with WHY), never as passed; 1 when NEED is required.
skipped_part() {
	if required "$1"; then
		printf 'FAIL: %s, and RCC_TEST_REQUIRE lists %s\n' "$2" "$1" >&2
		exit 1
	fi
	printf 'skip: %s (the cases that could run passed)\n' "$2" >&2
	exit 77
}
