# SPDX-License-Identifier: BSD-3-Clause
# Shared by demo.sh and test.sh: package installation and timed steps.
# shellcheck shell=bash

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Debian packages each part needs.
# help2man makes the tools' man pages (the build goes on without them).
PKGS_BUILD="gcc g++ make cmake ninja-build pkg-config libibverbs-dev librdmacm-dev libssl-dev help2man"
# openmpi-bin: mpirun for the launcher tests; libpmix-dev: the PMIx bootstrap;
# munge slurmctld slurmd slurm-client: srun for the launcher tests, on a private
# Slurm the test starts itself (tests/mesh/slurm.sh; Debian starts no Slurm
# daemon without /etc/slurm/slurm.conf, but does start the system's munged
# where services may start: the test runs its own);
# dpkg-dev and file: the .deb test's dependencies from dpkg-shlibdeps; groff-base: the man page check;
# gdb: the stacks of a process a test script found hung (tests/common/checks.sh).
PKGS_TEST="clang clang-format libclang-rt-dev valgrind iproute2 procps util-linux gnuplot-nox spin \
openmpi-bin libpmix-dev munge slurmctld slurmd slurm-client dpkg-dev file groff-base gdb"
PKGS_VM="qemu-system-x86 busybox-static rdma-core ibverbs-providers libibverbs1 librdmacm1 \
ibverbs-utils rdmacm-utils perftest openmpi-bin cpio kmod gzip xz-utils"

say() { printf '\n==> %s\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Install whichever of the named packages are missing (apt-get, as root or via sudo).
need_packages() {
	local missing=() p
	for p in "$@"; do
		dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qx installed ||
			missing+=("$p")
	done
	((${#missing[@]})) || return 0
	local sudo=
	[ "$(id -u)" = 0 ] || sudo=sudo
	say "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	# a fresh machine may have no package lists yet
	$sudo apt-get install -y --no-install-recommends "${missing[@]}" ||
		{ $sudo apt-get update && $sudo apt-get install -y --no-install-recommends "${missing[@]}"; } ||
		die "could not install: ${missing[*]}"
}

# Every project option, at its default. configure passes all of them on every
# run, so a build tree's CMake cache never carries one script's choice into the
# other (demo.sh turns the tests off in build/, test.sh needs them on there).
RCC_OPTION_DEFAULTS=(-DRCC_BUILD_TESTS=ON -DRCC_BUILD_TOOLS=ON -DRCC_BUILD_EXAMPLES=ON
	-DRCC_FUZZ=OFF -DRCC_SANITIZE= -DRCC_WITH_VERBS=AUTO -DRCC_WITH_PMIX=AUTO)

# What each README command configures in build/ (check-setup-order.sh runs both,
# in both orders, against these).
DEMO_CONFIG=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DRCC_BUILD_TESTS=OFF)
# PMIx is required there (a missing libpmix-dev fails the configure): the
# launcher tests' PMIx cases would otherwise skip.
TEST_CONFIG=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DRCC_WITH_PMIX=ON)

# configure DIR [cmake args...]: a Ninja build tree (DIR relative to the
# repository unless absolute); the arguments override the defaults above (a
# later -D wins).
configure() {
	local dir=$1
	shift
	[[ $dir == /* ]] || dir=$REPO/$dir
	cmake -S "$REPO" -B "$dir" -G Ninja "${RCC_OPTION_DEFAULTS[@]}" "$@" >/dev/null ||
		die "cmake configure of $dir failed"
}

build() {
	ninja -C "$REPO/$1" ${NINJA_FLAGS:-} >/dev/null || { ninja -C "$REPO/$1"; die "build of $1 failed"; }
}

STEP_LOG=()
# step NAME CMD...: run, time, remember the outcome; stop at the first failure.
step() {
	local name=$1 t0=$SECONDS rc=0
	shift
	say "$name"
	"$@" || rc=$?
	STEP_LOG+=("$(printf '%-44s %5ss  %s' "$name" $((SECONDS - t0)) "$([ $rc = 0 ] && echo ok || echo "FAILED ($rc)")")")
	if [ $rc != 0 ]; then
		summary
		exit "$rc"
	fi
}

summary() {
	say "summary"
	printf '%s\n' "${STEP_LOG[@]}"
	# the caller's own totals (test.sh: tests passed / failed / skipped)
	! declare -F summary_counts >/dev/null || summary_counts
}
