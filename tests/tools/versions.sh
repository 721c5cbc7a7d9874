#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Every tool answers --version and --help with exit 0; a client names its peer
# as HOST:PORT; a named device that does not exist is an error, not a quiet
# fallback to tcp.
#   versions.sh BUILD_DIR
set -u
build=${1:?usage: $0 BUILD_DIR}
. "$(dirname "$0")/../common/checks.sh"

for t in rcc-pingpong rcc-perf rcc-xfer rcc-mesh rcc-info; do
	bin=$build/tools/$t/$t
	check "$t --version" eval "'$bin' --version | grep -q '^$t (.*rcc.*0\\.'"
	check "$t --help" eval "'$bin' --help >/dev/null"
done
pp=$build/tools/rcc-pingpong/rcc-pingpong
out=$(timeout 30 "$pp" -d no-such-dev0 -n 10 127.0.0.1:1 2>&1)
st=$?
check "-d with a missing device fails (exit $st)" test "$st" -ne 0
check "  and says which device" grep -q "no-such-dev0" <<<"$out"
check "  and never ran over tcp" eval "! grep -q 'over tcp' <<<\"\$out\""
out=$(timeout 30 "$pp" 127.0.0.1:99999 2>&1)
check "a bad HOST:PORT is a usage error" test $? -eq 2
finish
