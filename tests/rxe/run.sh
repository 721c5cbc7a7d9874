#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# run.sh BUILD_DIR [SUITE...]: host entry point of the Soft-RoCE tests. Boots one
# VM (tests/rxe/vm/run-in-vm) with the repo root shared, runs
# tests/rxe/run-suites.sh inside (every suite, or the named ones), and exits with
# its status.
#   RCC_SKIP_RXE=1     skip (prints that it skipped, exit 0) -- the only way to skip
#   RCC_RXE_TIMEOUT    seconds for the whole VM [900]; exit 124 when exceeded
#   RCC_SUITE_TIMEOUT  seconds per suite [600]
# BUILD_DIR must be inside the repo (the VM sees only the repo) and built with the
# verbs transport (rdma-core development files present).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
note() { printf '[rxe run.sh] %s\n' "$*" >&2; }

if [ "${RCC_SKIP_RXE:-0}" = 1 ]; then
	note "SKIPPED: RCC_SKIP_RXE=1 (no Soft-RoCE tests were run)"
	exit 0
fi
[ $# -ge 1 ] || { sed -n '2,12p' "$0" >&2; exit 2; }
build=$(cd "$1" 2>/dev/null && pwd) || { note "no build directory $1"; exit 2; }
shift
case $build/ in
"$root"/*) rel=${build#"$root"/} ;;
*) note "the build directory must be inside $root (the VM shares only the repo)"; exit 2 ;;
esac
grep -q '^RCC_HAVE_VERBS' "$build/CMakeCache.txt" 2>/dev/null ||
	grep -q 'RCC_HAVE_VERBS' "$build/build.ninja" 2>/dev/null ||
	note "warning: $rel does not look like a build with the verbs transport"

export RCC_BUILD=$rel
export RCC_RXE_ENV="RCC_BUILD RCC_SUITE_TIMEOUT RCC_SUITES ${RCC_RXE_ENV:-}"
export RCC_RXE_LIBSCAN="$rel ${RCC_RXE_LIBSCAN:-}"
export RCC_SUITES="${RCC_SUITES:-} $*"
set +e
"$here/vm/run-in-vm" "$root" "bash tests/rxe/run-suites.sh"
st=$?
set -e
case $st in
0) note "all suites passed" ;;
124) note "FAILED: the VM ran out of time (RCC_RXE_TIMEOUT=${RCC_RXE_TIMEOUT:-900} s)" ;;
125) note "FAILED: the VM could not start or died (see above); set RCC_SKIP_RXE=1 to skip" ;;
*) note "FAILED: suites reported status $st" ;;
esac
exit "$st"
