#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Mutation run: proves the test suite can fail. Each tests/mutants/*.mutant
# names one deliberate fault (a file, an exact search string that occurs there
# exactly once, its replacement, the ctest regex of the tests that must catch
# it). Every fault is applied alone to a scratch copy of the tree, built
# incrementally in one build dir, and the named tests are run: a failing run
# kills the mutant, a passing one means the suite would not notice that fault.
# Each mutant rebuilds only the programs its tests run (the paths in their
# ctest commands; everything when a test is handed the whole build folder),
# and its tests stop at the first failure; a mutant that survives that is
# rebuilt whole and tested again before it counts as a survivor, so a program
# a script finds by itself can never make a fault look uncaught.
# A fault in code only the verbs transport runs names its tests "vm:REGEX":
# those test binaries then run on verbs in the Soft-RoCE VM (tests/rxe), and
# with RCC_SKIP_RXE=1 such mutants are skipped (counted apart, never killed).
#
# Usage: scripts/mutate.sh [--check] [NAME...]
#   NAME     run only these mutants (file names without .mutant)
#   --check  only verify that every mutant still applies and names tests
# Environment:
#   RCC_MUTATE_DIR   scratch directory (default build-mutate/ in the repository;
#                    wiped and refilled from the working tree on every run)
#   RCC_TEST_JOBS    ctest and ninja parallelism (default 2)
#   RCC_MUTATE_WORKERS  host mutants run side by side, each in its own copy
#                    (default 2); VM mutants have one worker (and copy) more
#   RCC_MUTATE_PASSED_JUNIT  a ctest JUnit file of the same working tree, written
#                    just before (scripts/test.sh's own run of every test): the
#                    baseline's host tests that passed there are not run again
#   RCC_MUTATE_VM_PASSED  a file whose first word is 0 once a VM run of this
#                    same tree passed every test binary of tests/integration and
#                    tests/verbs on verbs, both bring-ups (scripts/test.sh's VM
#                    lane, its first boot: tests/rxe/suites/10-integration.sh
#                    among others): the VM baseline is then not run again
#   RCC_VM_LOCK      a lock file every boot of a VM on this machine takes
#                    (scripts/test.sh's VM lane), so this run's VM mutants wait
#                    their turn instead of sharing the one spare core (default:
#                    a lock of this run's own)
# Exit status: 0 every mutant killed (or skipped); 1 a mutant survived; 2 a mutant is stale
# (search string not found or not unique, regex matches no test), does not
# build, or the unmutated tree fails its own tests.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$REPO"

MUTANTS=$REPO/tests/mutants
WORK=${RCC_MUTATE_DIR:-$REPO/build-mutate}
JOBS=${RCC_TEST_JOBS:-2}
CHECK_ONLY=0
# a broken set-up, not a surviving mutant: exit 2
fail() { printf 'error: %s\n' "$*" >&2; exit 2; }
if [ "${1:-}" = --check ]; then
	CHECK_ONLY=1
	shift
fi

# --- reading a mutant -------------------------------------------------------------------
# m_file m_search m_replace m_tests m_describe: the fields of one .mutant file.
read_mutant() { # PATH
	local line key val
	m_file='' m_search='' m_replace='' m_tests='' m_describe=''
	while IFS= read -r line || [ -n "$line" ]; do
		[[ $line == \#* || -z $line ]] && continue
		key=${line%%:*}
		val=${line#*:}
		val=${val# }
		case $key in
		file) m_file=$val ;;
		search) m_search=$val ;;
		replace) m_replace=$val ;;
		tests) m_tests=$val ;;
		describe) m_describe=$val ;;
		*) echo "$1: unknown field '$key'" >&2; return 1 ;;
		esac
	done <"$1"
	if [ -z "$m_file" ] || [ -z "$m_search" ] || [ -z "$m_tests" ] || [ -z "$m_describe" ]; then
		echo "$1: needs file, search, replace, tests and describe" >&2
		return 1
	fi
	[ "$m_search" != "$m_replace" ] || { echo "$1: replace equals search" >&2; return 1; }
}

# apply_mutant ROOT NAME: replace the search string in ROOT/m_file; it must occur
# exactly once, or the mutant is stale (the code moved) and we say which and where.
apply_mutant() {
	local root=$1 name=$2 path content rest n
	path=$root/$m_file
	[ -f "$path" ] || { echo "mutant $name: file $m_file does not exist (moved?)" >&2; return 1; }
	content=$(<"$path")
	rest=${content//"$m_search"/}
	n=$(((${#content} - ${#rest}) / ${#m_search}))
	if [ "$n" != 1 ]; then
		echo "mutant $name: search string found $n times (need exactly 1) in $m_file:" >&2
		echo "    $m_search" >&2
		echo "  update tests/mutants/$name.mutant to the code as it is now" >&2
		return 1
	fi
	[ "$root" = "$REPO" ] && return 0 # --check: never write into the real tree
	printf '%s\n' "${content/"$m_search"/"$m_replace"}" >"$path"
}

mapfile -t ALL < <(find "$MUTANTS" -name '*.mutant' | sort)
((${#ALL[@]})) || fail "no mutants in $MUTANTS"
if (($#)); then
	LIST=()
	for a in "$@"; do
		[ -f "$MUTANTS/$a.mutant" ] || fail "no mutant $a"
		LIST+=("$MUTANTS/$a.mutant")
	done
else
	LIST=("${ALL[@]}")
fi

# --- every mutant must still apply to the code as it is ------------------------------
stale=0
for m in "${LIST[@]}"; do
	name=$(basename "$m" .mutant)
	if ! read_mutant "$m" || ! apply_mutant "$REPO" "$name"; then
		stale=1
	fi
done
((stale == 0)) || fail "stale mutants (see above): the list must follow the code"

# --- scratch copy and its build --------------------------------------------------------
T0=$SECONDS
# --check configures a throw-away copy of its own: a real run may be using $WORK
if ((CHECK_ONLY)); then
	WORK=$(mktemp -d)
	trap 'rm -rf "$WORK"' EXIT
fi
rm -rf "$WORK"
mkdir -p "$WORK/src"
# the working tree as it is (uncommitted edits and new files included; ignored ones not)
git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$WORK/src"
BUILD=$WORK/build
cmake -S "$WORK/src" -B "$BUILD" -G Ninja "${RCC_OPTION_DEFAULTS[@]}" "${TEST_CONFIG[@]}" \
	>"$WORK/configure.log" || { cat "$WORK/configure.log"; fail "configure of the scratch copy failed"; }

# "vm:REGEX": the tests run in the Soft-RoCE VM; the regex is ctest's all the same
is_vm() { [[ $m_tests == vm:* ]]; }
regex() { printf '%s' "${m_tests#vm:}"; }
# every regex must name at least one test (ctest -R matching nothing would "pass")
for m in "${LIST[@]}"; do
	name=$(basename "$m" .mutant)
	read_mutant "$m"
	n=$(ctest --test-dir "$BUILD" -N -R "$(regex)" | sed -n 's/^Total Tests: //p')
	[ "${n:-0}" -gt 0 ] || { echo "mutant $name: tests regex '$m_tests' matches no test" >&2; stale=1; }
done
((stale == 0)) || fail "mutants name tests that do not exist (see above)"
if ((CHECK_ONLY)); then
	echo "mutants: ${#LIST[@]} apply and name their tests"
	exit 0
fi
nice ninja -C "$BUILD" -j"$JOBS" >"$WORK/build.log" ||
	{ tail -n 40 "$WORK/build.log"; fail "the unmutated scratch copy does not build"; }

run_tests() { # REGEX LOG [ctest args...]: 0 when every matching test passed
	local regex=$1 log=$2
	shift 2
	# a binary stops at its first failed case (tests/common/harness.h): the
	# verdict is the same, and the cases after it would each wait out a bound
	RCC_TEST_FAIL_FAST=1 timeout 600 nice ctest --test-dir "$BUILD" --output-on-failure -j "$JOBS" -R "$regex" "$@" \
		>"$log" 2>&1
}

# The ninja targets (outputs relative to the build folder) that the tests
# matching REGEX run, or "all" when a test is handed the whole build folder or
# names none of its programs (it may run any of them).
targets_for() { # REGEX
	ctest --test-dir "$BUILD" -N -V -R "$1" | sed -n 's/^[0-9]*: Test command: //p' |
		python3 -c '
import shlex, sys
build = sys.argv[1].rstrip("/") + "/"
out = set()
for line in sys.stdin:
    mine = [t[len(build):] for t in shlex.split(line) if t.startswith(build)]
    if not mine or any(t == "" for t in mine):
        print("all")
        sys.exit(0)
    out.update(mine)
print(" ".join(sorted(out)) if out else "all")
' "$BUILD"
}

build_for() { # TARGETS LOG: rebuild what the mutant's tests run ("all": everything)
	local t=$1
	[ "$t" = all ] && t=
	# shellcheck disable=SC2086
	nice -n 19 ninja -C "$BUILD" -j"$JOBS" $t >"$2" 2>&1
}

# The VM's side: every test binary REGEX names runs on verbs (both bring-ups),
# as tests/rxe/suites/10-integration.sh runs it. The scratch folder is the VM's
# share, so the binaries are reached under build/.
VM_OK=1
[ "${RCC_SKIP_RXE:-0}" = 1 ] && VM_OK=0
run_vm_tests() { # REGEX LOG: 0 when every matching binary passed in the VM
	local bins=() t rel
	while IFS= read -r t; do
		rel=$(find "$BUILD/tests" -type f -perm -u+x -name "$t" -print -quit)
		[ -n "$rel" ] && bins+=("${rel#"$WORK"/}")
	done < <(ctest --test-dir "$BUILD" -N -R "$1" | sed -n 's/^ *Test *#[0-9]*: \(.*\)$/\1/p')
	((${#bins[@]})) || { echo "no test binary for '$1'" >"$2"; return 1; }
	RCC_RXE_TIMEOUT=${RCC_RXE_TIMEOUT:-600} tests/rxe/vm/run-in-vm "$WORK" \
		"for b in cm manual; do for t in ${bins[*]}; do RCC_TEST_TRANSPORT=verbs \
		RCC_TEST_ADDR=\$RXE_IP RCC_TEST_BRINGUP=\$b RCC_TEST_REQUIRE=verbs RCC_TEST_FAIL_FAST=1 \
		timeout 300 \$t || exit 1; done; done" >"$2" 2>&1
}

# the unmutated tree must pass every test the mutants name, or a kill proves nothing.
# The host's tests are run by name: the mutants' own regexes joined into one
# pass CMake's limit of 9 groups, and ctest then matched nothing and passed.
tests_named() { # REGEX: the names of the tests it matches, one a line
	ctest --test-dir "$BUILD" -N -R "$1" | sed -n 's/^ *Test *#[0-9]*: \(.*\)$/\1/p'
}
names_all= regex_vm=
for m in "${LIST[@]}"; do
	read_mutant "$m"
	if is_vm; then regex_vm+="$(regex)|"; else names_all+="$(tests_named "$(regex)")"$'\n'; fi
done
regex_vm=${regex_vm%|}
# The queue: host mutants first, VM mutants last, so that a caller's VM lane
# (RCC_VM_LOCK) has usually ended before they want a VM.
host_list=() vm_list=()
for m in "${LIST[@]}"; do
	read_mutant "$m"
	if is_vm; then vm_list+=("$m"); else host_list+=("$m"); fi
done
LIST=("${host_list[@]}" "${vm_list[@]}")
NHOST=${#host_list[@]}
mapfile -t base_names < <(grep . <<<"$names_all" | sort -u)
say "baseline: the unmutated copy passes the targeted tests (${#base_names[@]} on the host)"
# Tests the caller's run of this very tree passed (RCC_MUTATE_PASSED_JUNIT) are
# not run again: the baseline needs them passed, not passed twice.
junit=${RCC_MUTATE_PASSED_JUNIT:-}
if ((${#base_names[@]})) && [ -n "$junit" ]; then
	[ -f "$junit" ] || fail "RCC_MUTATE_PASSED_JUNIT: no file $junit"
	mapfile -t base_names < <(printf '%s\n' "${base_names[@]}" | python3 -c '
import sys, xml.etree.ElementTree as ET
passed = {c.get("name") for c in ET.parse(sys.argv[1]).getroot().iter("testcase")
          if c.get("status") == "run" and c.find("failure") is None and c.find("skipped") is None}
for name in sys.stdin.read().split():
    if name not in passed:
        print(name)
' "$junit")
	echo "  passed in ${junit#"$REPO"/} just now, except ${#base_names[@]} run here"
fi
if ((${#base_names[@]})); then
	base_regex="^($(IFS='|'; echo "${base_names[*]}"))\$"
	run_tests "$base_regex" "$WORK/baseline.log" ||
		{ tail -n 60 "$WORK/baseline.log"; fail "the unmutated tree fails its tests: fix that first"; }
	grep -q "tests passed.* out of ${#base_names[@]}\$" "$WORK/baseline.log" ||
		{ tail -n 5 "$WORK/baseline.log"; fail "the baseline did not run its ${#base_names[@]} tests"; }
fi
# The VM's baseline runs with the first VM mutant, under the VM lock (below):
# the host's mutants need not wait for a VM a caller's lane may be using.

# --- the mutants -----------------------------------------------------------------------
# Two host workers by default, each with its own copy and build folder (w1: the
# one built above; w2..: configured now, built lazily, only what their first
# mutants' tests run). Most of a slow mutant's time is a test waiting out a
# bound for a completion the fault withholds: the CPU is idle then, and the
# other worker uses it. Builds run at the lowest priority, tests above them.
# Host workers take the next host mutant off one queue (a counter under
# flock); the VM mutants have a worker of their own, with its own copy, one VM
# at a time (flock), as two would share the machine's one spare core. It
# starts with the others and takes the VM between a caller's lane boots
# (RCC_VM_LOCK): the VM's work then runs beside the host mutants, not after
# them (the test command's critical path; in a fresh clone on 2026-12-07 the
# VM mutants took the last 175 s of an 873 s run, the host workers idle).
WORKERS=${RCC_MUTATE_WORKERS:-2}
[[ $WORKERS =~ ^[1-9][0-9]*$ ]] || fail "RCC_MUTATE_WORKERS must be a positive number"
((WORKERS <= NHOST)) || WORKERS=$NHOST
VM_WORKER=0 # the VM mutants' worker (0: none)
if ((NHOST < ${#LIST[@]})); then
	VM_WORKER=$((WORKERS + 1))
fi
mkdir -p "$WORK/results"
echo 0 >"$WORK/queue"
echo "$NHOST" >"$WORK/queue-vm"
for ((w = 2; w <= WORKERS + (VM_WORKER > 0); w++)); do
	mkdir -p "$WORK/w$w/src"
	tar -C "$WORK/src" -cf - . | tar -xf - -C "$WORK/w$w/src"
done

next_mutant() { # QUEUE END: the queue's next index (END or past: none left)
	local i
	{
		flock 9
		i=$(<"$WORK/$1")
		echo $((i + 1)) >"$WORK/$1"
	} 9>"$WORK/queue.lock"
	((i < $2)) && echo "$i"
}

# run_mutant M: apply, build, test and restore one mutant in this worker's
# ROOT (src/, build/); its verdict goes to results/NAME and to stdout.
run_mutant() {
	local m=$1 name t0 src log targets verdict
	name=$(basename "$m" .mutant)
	read_mutant "$m"
	t0=$SECONDS
	if is_vm && ! ((VM_OK)); then
		verdict=skipped
	elif is_vm && ! vm_baseline_once; then
		# the whole run fails on it (below): a kill would prove nothing
		verdict="not run: the VM baseline failed"
	else
		src=$ROOT/src/$m_file
		cp -p "$src" "$ROOT/original"
		apply_mutant "$ROOT/src" "$name"
		log=$WORK/$name.log
		if is_vm; then
			# the VM runs the binaries the regex names, whatever their commands say
			targets=all
		else
			targets=$(targets_for "$m_tests")
		fi
		if ! build_for "$targets" "$log"; then
			verdict="BUILD FAILED"
		elif is_vm && ! run_vm_tests_locked "$(regex)" "$log"; then
			verdict=killed
		# one test at a time, in the order they are defined (unit and integration
		# binaries before the tool scripts): the first that fails ends the run,
		# where two at once kept a slow script going after a quick binary failed
		elif ! is_vm && ! run_tests "$m_tests" "$log" --stop-on-failure -j1; then
			verdict=killed
		elif [ "$targets" != all ] && ! build_for all "$log"; then
			verdict="BUILD FAILED"
		elif [ "$targets" != all ] && ! run_tests "$m_tests" "$log"; then
			# caught only once everything was rebuilt: a test runs a program its
			# command does not name (worth naming it, for speed)
			verdict="killed (all)"
		else
			verdict=SURVIVED
		fi
		# back to the original; a fresh mtime so the next build recompiles it
		cp "$ROOT/original" "$src"
		touch "$src"
	fi
	echo "$verdict" >"$WORK/results/$name"
	if [ "$verdict" = skipped ]; then
		printf '  %-32s %-12s %4ss  %s\n' "$name" "$verdict" 0 "$m_describe (RCC_SKIP_RXE=1)"
	else
		printf '  %-32s %-12s %4ss  %s\n' "$name" "$verdict" $((SECONDS - t0)) "$m_describe"
	fi
}

VM_LOCK=${RCC_VM_LOCK:-$WORK/vm.lock}
run_vm_tests_locked() { # REGEX LOG: run_vm_tests, one VM at a time
	{
		flock 8
		run_vm_tests "$@"
	} 8>"$VM_LOCK"
}

# vm_baseline_once: 0 when the unmutated tree passes every VM mutant's tests
# in the VM. Run by the first worker to take a VM mutant, before it applies
# that mutant (its tree is the unmutated one then, built whole here); the
# others find the verdict.
vm_baseline_once() {
	local rc=0 passed=${RCC_MUTATE_VM_PASSED:-}
	if [ ! -f "$WORK/baseline-vm.status" ] && [ -n "$passed" ] && [ -f "$passed" ] &&
		[ "$(cut -d' ' -f1 <"$passed")" = 0 ]; then
		# the VM is the machine's scarce resource: the same binaries, passed
		# on the same tree minutes ago, need not boot it again
		echo 0 >"$WORK/baseline-vm.status"
		echo "  (VM baseline: passed in ${passed#"$REPO"/}, not run again)"
	fi
	if [ ! -f "$WORK/baseline-vm.status" ]; then
		build_for all "$ROOT/baseline-vm-build.log" || rc=$?
		{
			flock 8
			if [ ! -f "$WORK/baseline-vm.status" ]; then
				((rc)) || run_vm_tests "$regex_vm" "$WORK/baseline-vm.log" || rc=$?
				echo "$rc" >"$WORK/baseline-vm.status"
			fi
		} 8>"$VM_LOCK"
	fi
	[ "$(<"$WORK/baseline-vm.status")" = 0 ]
}

worker() { # K QUEUE END: mutants off QUEUE (indices below END) until none is left
	local k=$1 queue=$2 end=$3 i
	ROOT=$WORK
	if ((k > 1)); then
		ROOT=$WORK/w$k
		BUILD=$ROOT/build
		cmake -S "$ROOT/src" -B "$BUILD" -G Ninja "${RCC_OPTION_DEFAULTS[@]}" "${TEST_CONFIG[@]}" \
			>"$ROOT/configure.log" 2>&1 || { echo "  (worker $k: configure failed; the others go on)"; return 0; }
	fi
	while i=$(next_mutant "$queue" "$end"); do
		run_mutant "${LIST[$i]}"
	done
}

say "mutants (${#LIST[@]}: $NHOST on $WORKERS host workers, $((${#LIST[@]} - NHOST)) VM)"
WORKER_PIDS=()
for ((w = 1; w <= WORKERS; w++)); do
	worker "$w" queue "$NHOST" &
	WORKER_PIDS+=($!)
done
if ((VM_WORKER)); then
	worker "$VM_WORKER" queue-vm "${#LIST[@]}" &
	WORKER_PIDS+=($!)
fi
for p in "${WORKER_PIDS[@]}"; do wait "$p" || fail "a mutation worker failed"; done
if [ -f "$WORK/baseline-vm.status" ] && [ "$(<"$WORK/baseline-vm.status")" != 0 ]; then
	tail -n 60 "$WORK/baseline-vm.log" 2>/dev/null || tail -n 40 "$WORK"/w*/baseline-vm-build.log "$WORK/baseline-vm-build.log" 2>/dev/null || true
	fail "the unmutated tree fails its tests in the VM (or did not build for them)"
fi
# leave w1's build matching the unmutated tree
nice ninja -C "$BUILD" -j"$JOBS" >/dev/null

killed=0 survived=0 broken=0 skipped=0 missing=0
SURVIVORS=()
for m in "${LIST[@]}"; do
	name=$(basename "$m" .mutant)
	verdict=$(cat "$WORK/results/$name" 2>/dev/null) || { missing=$((missing + 1)); continue; }
	case $verdict in
	killed*) killed=$((killed + 1)) ;;
	skipped) skipped=$((skipped + 1)) ;;
	"BUILD FAILED") broken=$((broken + 1)) ;;
	*)
		survived=$((survived + 1))
		read_mutant "$m"
		SURVIVORS+=("$name: $m_describe ($m_file; tests: $m_tests)")
		;;
	esac
done
((missing == 0)) || fail "$missing mutants have no verdict (a worker stopped early)"
total=$((killed + survived + broken))
((total)) || total=1
result="mutation run: $killed of $total killed ($((100 * killed / total))%), $survived survived,"
result+=" $broken did not build, $skipped skipped (VM), in $((SECONDS - T0)) s (logs in $WORK)"
say "$result"
# for scripts/test.sh's closing summary
echo "$result" >"$WORK/kill-rate"
if ((survived)); then
	echo "survivors (each one is a missing test):"
	printf '  %s\n' "${SURVIVORS[@]}"
	exit 1
fi
((broken == 0)) || exit 2
