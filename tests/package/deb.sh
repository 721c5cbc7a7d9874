#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# deb.sh BUILD_DIR SRC_DIR: build the .debs of a built tree with CPack and
# check them as a packager would:
#  - dpkg-deb -c: every file in the package it belongs to, none in two;
#  - dpkg-deb -f: names, versions, sections and dependencies (rdma-core's
#    libraries for librcc0 and rcc-tools, librcc0 at this exact version for
#    librcc-dev), librcc0's shlibs file and ldconfig trigger;
#  - dpkg -x into a scratch root (no maintainer scripts run and dpkg's
#    database is not touched, so this is safe as any user): the unpacked
#    rcc-info runs, and programs build against the unpacked librcc-dev with
#    pkg-config and with find_package (tests/install/consumer.sh).
# Skips (77) only where dpkg-deb is missing.
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
command -v dpkg-deb >/dev/null || { echo "skip: dpkg-deb is not installed (apt-get install dpkg)"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

cached() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
version=$(cached CMAKE_PROJECT_VERSION)-1
arch=$(dpkg --print-architecture)
libdir=usr/$(cached CMAKE_INSTALL_LIBDIR)
verbs=$(cached RCC_HAVE_VERBS)
tools=(rcc-pingpong rcc-perf rcc-xfer rcc-mesh rcc-info)
packages=(librcc0 librcc-dev)
[ "$(cached RCC_BUILD_TOOLS)" = ON ] && packages+=(rcc-tools)

(cd "$work" && cpack --config "$build/CPackConfig.cmake" -B "$work/out") >"$work/cpack.log" 2>&1 ||
	{ cat "$work/cpack.log"; echo "FAIL: cpack"; exit 1; }
deb() { echo "$work/out/${1}_${version}_$arch.deb"; }
for p in "${packages[@]}"; do
	[ -f "$(deb "$p")" ] || { ls "$work/out"; echo "FAIL: cpack made no $(basename "$(deb "$p")")"; exit 1; }
done
echo "ok: cpack made ${packages[*]} at $version"

# --- contents: what each package must hold, and nothing of the others' -------------
files() { dpkg-deb -c "$(deb "$1")" | awk '$1 !~ /^d/ { print $6 }' | sed 's|^\./||'; }
expect_files() { # PACKAGE FILE...: each FILE is in PACKAGE
	local p=$1 f list
	shift
	list=$(files "$p")
	for f in "$@"; do grep -qx "$f" <<<"$list" || bad "$p lacks $f"; done
}
expect_files librcc0 "$libdir/librcc.so.0" "$libdir/librcc.so.$(cached CMAKE_PROJECT_VERSION)" \
	usr/share/doc/librcc0/copyright
expect_files librcc-dev usr/include/rcc/rcc.h usr/include/rcc/session.h usr/include/rcc/util.h \
	"$libdir/librcc.so" "$libdir/librcc.a" "$libdir/pkgconfig/rcc.pc" "$libdir/cmake/rcc/rccConfig.cmake" \
	"$libdir/cmake/rcc/rccConfigVersion.cmake" "$libdir/cmake/rcc/rccTargets.cmake" \
	usr/share/man/man3/rcc.3 usr/share/man/man3/rcc.h.3 usr/share/man/man7/rcc.7 \
	usr/share/doc/librcc-dev/copyright
if [[ " ${packages[*]} " == *" rcc-tools "* ]]; then
	for t in "${tools[@]}"; do
		expect_files rcc-tools "usr/bin/$t"
		# the pages are there when help2man was (man/CMakeLists.txt)
		[ ! -f "$build/man/$t.1" ] || expect_files rcc-tools "usr/share/man/man1/$t.1"
	done
fi
# the run-time package holds the library and its licence only
extra=$(files librcc0 | grep -vE "^$libdir/librcc\.so\.[0-9.]+$|^usr/share/doc/librcc0/" || true)
[ -z "$extra" ] || bad "librcc0 holds more than the library: $extra"
dup=$(for p in "${packages[@]}"; do files "$p"; done | sort | uniq -d)
[ -z "$dup" ] || bad "files in two packages (dpkg would refuse the second): $dup"
((fail)) || echo "ok: every file is in its package, none in two"

# --- control fields -----------------------------------------------------------------
field() { dpkg-deb -f "$(deb "$1")" "$2"; }
expect_field() { # PACKAGE FIELD EXTENDED-REGEX
	local v
	v=$(field "$1" "$2")
	grep -qE "$3" <<<"$v" || bad "$1: $2 is '$v', expected /$3/"
}
for p in "${packages[@]}"; do
	expect_field "$p" Package "^$p\$"
	expect_field "$p" Version "^${version//./\\.}\$"
	expect_field "$p" Architecture "^$arch\$"
	expect_field "$p" Maintainer ".+"
	expect_field "$p" Description "^RDMA communication core \(rcc\): "
done
expect_field librcc0 Section '^libs$'
expect_field librcc-dev Section '^libdevel$'
expect_field librcc0 Depends '(^|, )libc6( |,|$)'
expect_field librcc-dev Depends "(^|, )librcc0 \(= ${version//./\\.}\)(,|$)"
if [ "$verbs" = ON ]; then
	expect_field librcc0 Depends '(^|, )libibverbs1( |,|$)'
	expect_field librcc0 Depends '(^|, )librdmacm1( |,|$)'
	expect_field librcc-dev Depends '(^|, )libibverbs-dev(,|$)'
	expect_field librcc-dev Depends '(^|, )librdmacm-dev(,|$)'
fi
if [[ " ${packages[*]} " == *" rcc-tools "* ]]; then
	# the tools carry rcc inside (static), so not librcc0; rcc-xfer needs OpenSSL
	expect_field rcc-tools Depends '(^|, )libssl3( |,|$)'
	[ "$verbs" != ON ] || expect_field rcc-tools Depends '(^|, )libibverbs1( |,|$)'
	[ "$verbs" != ON ] || expect_field rcc-tools Depends '(^|, )librdmacm1( |,|$)'
	! field rcc-tools Depends | grep -q librcc0 || bad "rcc-tools depends on librcc0, but links rcc statically"
fi
mkdir "$work/ctl"
dpkg-deb -e "$(deb librcc0)" "$work/ctl"
grep -qxE "librcc 0 librcc0 \(>= ${version//./\\.}\)" "$work/ctl/shlibs" 2>/dev/null ||
	bad "librcc0's shlibs file: $(cat "$work/ctl/shlibs" 2>/dev/null || echo missing)"
grep -qxE "activate-noawait ldconfig" "$work/ctl/triggers" 2>/dev/null ||
	bad "librcc0 does not trigger ldconfig: $(cat "$work/ctl/triggers" 2>/dev/null || echo no triggers file)"
((fail)) || echo "ok: names, versions, sections, dependencies, shlibs"

# --- unpacked: the programs run and the -dev package builds programs ---------------
root=$work/root
for p in "${packages[@]}"; do dpkg -x "$(deb "$p")" "$root"; done
if [[ " ${packages[*]} " == *" rcc-tools "* ]]; then
	v=$(env -u LD_LIBRARY_PATH "$root/usr/bin/rcc-info" --version | head -n1)
	[ "$v" = "rcc-info (rcc) $(cached CMAKE_PROJECT_VERSION)" ] || bad "unpacked rcc-info --version printed '$v'"
	echo "ok: unpacked $v"
fi
"$src/tests/install/consumer.sh" "$root/usr" "$src" || bad "programs do not build against the unpacked librcc-dev"
exit $fail
