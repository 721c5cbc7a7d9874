#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# consumer.sh PREFIX SRC_DIR: build examples/send_recv.c against the rcc
# installed under PREFIX in the two documented ways, and run each program:
#  - pkg-config, with the README's flags and rpath (the recipe in README.md);
#  - CMake's find_package(rcc CONFIG), with rcc::rcc and rcc::rcc_static.
# Nothing from the build tree is used: only PREFIX and the example's source.
# Used by check.sh (cmake --install) and tests/package/deb.sh (the .debs).
set -euo pipefail
prefix=$1 src=$(cd "$2" && pwd)
example=$src/examples/send_recv.c
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The library must come from PREFIX, never from the environment.
unset LD_LIBRARY_PATH CMAKE_PREFIX_PATH PKG_CONFIG_PATH

run() { # NAME PROGRAM: it prints what examples/expected says
	bash "$src/examples/run-example.sh" "$2" "$src/examples/expected/send_recv.out" >/dev/null ||
		{ bash "$src/examples/run-example.sh" "$2" "$src/examples/expected/send_recv.out"; echo "FAIL: $1"; return 1; }
	echo "ok: $1 built and ran"
}

pc=$(find "$prefix" -name rcc.pc -path '*/pkgconfig/*' | head -n1)
[ -n "$pc" ] || { echo "FAIL: no rcc.pc under $prefix"; exit 1; }
export PKG_CONFIG_PATH=${pc%/rcc.pc}
# shellcheck disable=SC2046 # pkg-config's output is a list of words
cc -std=c11 -Wall -Wextra -Werror -o "$work/send_recv" "$example" $(pkg-config --cflags --libs rcc) \
	-Wl,-rpath,"$(pkg-config --variable=libdir rcc)"
run "pkg-config consumer" "$work/send_recv"
unset PKG_CONFIG_PATH

cmake -S "$src/tests/install/consumer" -B "$work/cmake" -G Ninja -DCMAKE_BUILD_TYPE=Release \
	-DCMAKE_PREFIX_PATH="$prefix" -DRCC_EXAMPLE="$example" >"$work/cmake.log" ||
	{ cat "$work/cmake.log"; echo "FAIL: find_package(rcc CONFIG) under $prefix"; exit 1; }
grep -- "-- rcc " "$work/cmake.log"
ninja -C "$work/cmake" >"$work/ninja.log" || { cat "$work/ninja.log"; echo "FAIL: CMake consumer build"; exit 1; }
# the shared one must use PREFIX's librcc.so.0, the static one none
ldd "$work/cmake/consumer_shared" | grep -F "librcc.so.0 => $(cd "$prefix" && pwd -P)/" >/dev/null ||
	{ ldd "$work/cmake/consumer_shared"; echo "FAIL: consumer_shared does not use $prefix's librcc"; exit 1; }
! ldd "$work/cmake/consumer_static" | grep -q librcc || { echo "FAIL: consumer_static needs librcc.so"; exit 1; }
run "find_package consumer (rcc::rcc)" "$work/cmake/consumer_shared"
run "find_package consumer (rcc::rcc_static)" "$work/cmake/consumer_static"
