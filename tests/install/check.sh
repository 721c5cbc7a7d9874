#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# check.sh BUILD_DIR: `cmake --install` of a built tree into a scratch prefix
# holds what the packages promise (headers, both libraries, rcc.pc, the CMake
# package, the man pages, the tools), the shared library exports the API and
# nothing else, the static library's globals all carry rcc_ or rcci_, and
# programs build against it both documented ways and run (consumer.sh). The
# install step of scripts/test.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=$1
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
fail=0

cmake --install "$build" --prefix "$prefix" >/dev/null
cached() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
libdir=$(cached CMAKE_INSTALL_LIBDIR)
expect=(include/rcc/rcc.h include/rcc/session.h include/rcc/util.h
	"$libdir/librcc.so" "$libdir/librcc.so.0" "$libdir/librcc.a" "$libdir/pkgconfig/rcc.pc"
	"$libdir/cmake/rcc/rccConfig.cmake" "$libdir/cmake/rcc/rccConfigVersion.cmake"
	"$libdir/cmake/rcc/rccTargets.cmake" share/man/man7/rcc.7 share/man/man3/rcc.3
	share/man/man3/rcc.h.3)
tools=(rcc-pingpong rcc-perf rcc-xfer rcc-mesh rcc-info)
if [ "$(cached RCC_BUILD_TOOLS)" = ON ]; then
	for t in "${tools[@]}"; do expect+=("bin/$t"); done
	# the pages exist when help2man did at configure time (man/CMakeLists.txt)
	if [[ $(cached HELP2MAN_EXECUTABLE) == /* && -z $(cached RCC_SANITIZE) && $(cached RCC_MAN_PAGES) != OFF ]]; then
		for t in "${tools[@]}"; do expect+=("share/man/man1/$t.1"); done
	else
		echo "note: help2man was not found when $build was configured: no tool man pages"
	fi
fi
for f in "${expect[@]}"; do
	[ -e "$prefix/$f" ] || { echo "FAIL: cmake --install did not install $f"; fail=1; }
done
((fail == 0)) && echo "ok: ${#expect[@]} files installed where the packages expect them"

# the shared library exports the API and nothing else
extra=$(nm -D --defined-only "$prefix/$libdir/librcc.so" | awk '$2 == "T" && $3 !~ /^rcc_/ { print $3 }')
[ -z "$extra" ] || { echo "FAIL: librcc.so exports non-API symbols: $extra"; fail=1; }
# the static library defines nothing outside the two prefixes (rcc_ the API,
# rcci_ the library's own): a program linked with librcc.a must be free to
# have its own ep_fail() or tx_flush()
extra=$(nm -g --defined-only "$prefix/$libdir/librcc.a" | awk 'NF == 3 && $2 ~ /[BCDRTV]/ && $3 !~ /^rcci?_/ { print $3 }' | sort -u)
[ -z "$extra" ] || { echo "FAIL: librcc.a defines globals without the rcc_/rcci_ prefix:" $extra; fail=1; }

# rcc(3) names every exported function, so it cannot fall behind the library
for f in $(nm -D --defined-only "$prefix/$libdir/librcc.so" | awk '$2 == "T" { print $3 }'); do
	grep -qw "$f" "$prefix/share/man/man3/rcc.3" || { echo "FAIL: rcc(3) does not list $f"; fail=1; }
done
# every page formats without a warning (from the man folder, as man(1) does,
# so that rcc.h(3)'s ".so man3/rcc.3" is found)
if command -v groff >/dev/null; then
	for page in "$prefix"/share/man/man*/*; do
		warnings=$(cd "$prefix/share/man" && groff -man -ww -z "$page" 2>&1)
		[ -z "$warnings" ] || { echo "FAIL: ${page#"$prefix"/}: $warnings"; fail=1; }
	done
else
	echo "note: no groff: the man pages were not formatted"
fi
# "man rcc.h" is rcc(3)
grep -qx '\.so man3/rcc\.3' "$prefix/share/man/man3/rcc.h.3" ||
	{ echo "FAIL: rcc.h(3) does not point at rcc(3)"; fail=1; }
if command -v man >/dev/null && command -v groff >/dev/null; then
	man -M "$prefix/share/man" -P cat rcc.h 2>/dev/null | grep -q 'library.s functions, by topic' ||
		{ echo "FAIL: man rcc.h does not show rcc(3)"; fail=1; }
fi

"$here/consumer.sh" "$prefix" "$src" || fail=1
exit $fail
