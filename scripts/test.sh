#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Build and run every test: unit, integration (tcp) and tool tests with gcc;
# a clang build; the ASan+UBSan build; the TSan build of the threaded tests;
# valgrind; the fuzzers for a short while; the install check; the verbs suite
# in a Soft-RoCE VM, and its integration tests again built with ASan+UBSan and
# with TSan; then the mutation run. The VM's boots run in the background beside
# the host's steps, from the gcc build on (tests/rxe/README.md says why), and
# beside the mutation run, whose VM mutants take turns with them for the VM.
# Installs what it needs (Debian). Stops
# at the first failure and prints a timed summary.
#
# Environment:
#   RCC_SKIP_RXE=1     skip the Soft-RoCE VM suite (say so explicitly; never implied)
#   RCC_FUZZ_SECONDS   seconds per fuzz target (default 12; 0 skips fuzzing)
#   RCC_TEST_JOBS      ctest parallelism (default 2)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$REPO"

JOBS=${RCC_TEST_JOBS:-2}
# Read only by sanitizer runtimes: fail loudly, with stacks.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
# The tcp runs promise the tcp transport: a case that would skip for want of it
# fails (tests/common/harness.h). The VM suite promises verbs the same way.
# pmix: the launcher tests' PMIx cases (tests/common/require.sh).
export RCC_TEST_REQUIRE=tcp,pmix
# 12 s each keeps the eight fuzzers to about 100 s of the host path (the
# corpora are replayed by ctest on every build; longer runs: RCC_FUZZ_SECONDS)
FUZZ_SECONDS=${RCC_FUZZ_SECONDS:-12}
T0=$SECONDS

need_packages $PKGS_BUILD $PKGS_TEST
[ "${RCC_SKIP_RXE:-0}" = 1 ] || need_packages $PKGS_VM

# Totals over every test run (ctest runs and the VM suite's checks): a skip is
# counted as a skip, never as a pass, and each is listed with its reason.
# A test that passed with some of its cases skipped counts as passed; its
# skipped cases are counted (N_CASES_SKIPPED) and listed as well.
N_PASSED=0 N_FAILED=0 N_SKIPPED=0 N_CASES_SKIPPED=0
SKIP_NOTES=()
add_counts() { # PASSED FAILED SKIPPED [CASES_SKIPPED]
	N_PASSED=$((N_PASSED + $1)) N_FAILED=$((N_FAILED + $2)) N_SKIPPED=$((N_SKIPPED + $3))
	N_CASES_SKIPPED=$((N_CASES_SKIPPED + ${4:-0}))
}
summary_counts() {
	say "$N_PASSED passed, $N_FAILED failed, $N_SKIPPED skipped"
	((N_CASES_SKIPPED == 0)) || say "  and $N_CASES_SKIPPED cases skipped inside tests that passed"
	((${#SKIP_NOTES[@]} == 0)) || printf '  skipped: %s\n' "${SKIP_NOTES[@]}"
	# the kill rate, when this run got as far as the mutation step
	local kr=${RCC_MUTATE_DIR:-$REPO/build-mutate}/kill-rate
	if [ -f "$kr" ] && (($(stat -c %Y "$kr") >= $(date +%s) - (SECONDS - T0))); then
		say "$(cat "$kr")"
	fi
}

ctest_in() { # DIR [ctest args...]
	local dir=$1 junit=$REPO/$1/ctest-junit.xml rc=0 counts line
	shift
	rm -f "$junit"
	ctest --test-dir "$dir" --output-on-failure --no-tests=error -j "$JOBS" \
		--output-junit "$junit" "$@" || rc=$?
	if [ -f "$junit" ] && counts=$(python3 scripts/ctest-counts.py "$junit" "$dir/"); then
		# shellcheck disable=SC2046
		add_counts $(head -n1 <<<"$counts")
		while IFS= read -r line; do SKIP_NOTES+=("$line"); done < <(tail -n +2 <<<"$counts")
	else
		echo "no test results from $dir"
		[ "$rc" != 0 ] || rc=1
	fi
	return "$rc"
}

# --- source format: .clang-format, checked before anything is built ---------------------
step "format check (.clang-format)" ./scripts/check-format.sh

# --- gcc: everything ----------------------------------------------------------------
step "README commands in either order" ./scripts/check-setup-order.sh
step "gcc build (build/)" eval 'configure build "${TEST_CONFIG[@]}" && build build'
# --- verbs on Soft-RoCE, beside the host's steps ------------------------------------------
# The VM's emulated CPUs keep about one core busy (qemu TCG, measured 95-107%),
# and most of its time is rxe's latency; the host's steps after the builds mostly
# wait on sockets and bounds. So the VM's four boots run one after another in
# the background (the "lane"), beside the host's steps, from the gcc build on;
# a boot that needs a sanitizer build waits until the host has built it. Each
# boot's output goes to build/vm-lane/N.log, shown, and its checks counted,
# once the host's steps are done (tests/rxe/README.md "In the test command").
VM_LANE=$REPO/build/vm-lane VM_LANE_PID=
# BUILD QUICK SUITES...: quick = RCC_TEST_QUICK=1 in the VM (scaled-down sizes)
VM_BOOTS=()
vm_input_ready() { # BUILD: the lane may start the boots that run BUILD's tests
	[ -z "$VM_LANE_PID" ] || touch "$VM_LANE/ready.$1"
}
run_vm_boot() { # I BUILD QUICK SUITE...: one boot, its output in $VM_LANE/I.log, "STATUS SECONDS" in $VM_LANE/I
	local i=$1 build=$2 quick=$3 t0=$SECONDS rc=0 waited=0
	shift 3
	# bounded: the host's steps build it within minutes, or fail and end the lane
	until [ "$build" = build ] || [ -f "$VM_LANE/ready.$build" ]; do
		((waited++ < 3600)) || { echo "$build was never built" >"$VM_LANE/$i.log"; echo "1 0" >"$VM_LANE/$i"; return; }
		sleep 1 # polling a file the foreground writes, not a synchronisation of tests
	done
	{
		# one VM at a time on the machine: the mutation run's boots take the
		# same lock (RCC_VM_LOCK), so the two never share the spare core
		flock 8
		t0=$SECONDS
		if [ "$quick" = quick ]; then
			RCC_TEST_QUICK=1 RCC_RXE_ENV="RCC_TEST_QUICK ${RCC_RXE_ENV:-}" tests/rxe/run.sh "$build" "$@" \
				>"$VM_LANE/$i.log" 2>&1 || rc=$?
		else
			tests/rxe/run.sh "$build" "$@" >"$VM_LANE/$i.log" 2>&1 || rc=$?
		fi
		echo "$rc $((SECONDS - t0))" >"$VM_LANE/$i"
	} 8>"$VM_LANE/vm.lock"
}
vm_lane() { # the boots of VM_BOOTS, one after another
	local i=0 spec
	for spec in "${VM_BOOTS[@]}"; do
		i=$((i + 1))
		# shellcheck disable=SC2086
		run_vm_boot "$i" $spec
	done
}
stop_vm_lane() { # on the way out, whatever happened: no VM outlives the run
	local kill_tree
	[ -n "$VM_LANE_PID" ] || return 0
	kill_tree() { local c; for c in $(pgrep -P "$1"); do kill_tree "$c"; done; kill "$1" 2>/dev/null; }
	kill_tree "$VM_LANE_PID"
}
if [ "${RCC_SKIP_RXE:-0}" != 1 ]; then
	[ -x tests/rxe/run.sh ] || die "tests/rxe/run.sh is missing"
	# four boots, each well inside its own time limit (RCC_RXE_TIMEOUT, 900 s):
	# the verbs transport's suites (05-30) and the tools' (40 on), then the
	# transport's integration tests under ASan+UBSan and under TSan, both with
	# quick sizes (the same paths and threads without 64 MiB buffers through a
	# sanitizer in TCG: 367 s of 900 for TSan, 278-422 s for ASan with full
	# sizes). tests/rxe/README.md numbers the suites so.
	mapfile -t vm_suites < <(cd tests/rxe/suites && ls -- *.sh | sed 's/\.sh$//')
	vm_lib=() vm_tools=()
	for s in "${vm_suites[@]}"; do
		if [[ $s < 40 ]]; then vm_lib+=("$s"); else vm_tools+=("$s"); fi
	done
	((${#vm_lib[@]} && ${#vm_tools[@]})) || die "tests/rxe/suites: expected suites below and from 40"
	VM_BOOTS=("build full ${vm_lib[*]}" "build full ${vm_tools[*]}" "build-asan quick 10-integration"
		"build-tsan quick 10-integration")
	VM_NAMES=("VM: verbs suites ${vm_lib[0]}..${vm_lib[-1]}" "VM: tools' suites ${vm_tools[0]}..${vm_tools[-1]}"
		"verbs integration under ASan+UBSan in the VM (quick sizes)" "verbs integration under TSan in the VM (quick sizes)")
	rm -rf "$VM_LANE"
	mkdir -p "$VM_LANE"
	vm_lane </dev/null &
	VM_LANE_PID=$!
	trap stop_vm_lane EXIT
	say "Soft-RoCE VM: ${#VM_BOOTS[@]} boots started beside the host's steps (output: build/vm-lane/)"
fi
# the sanitizer builds now: the VM's later boots run their tests
step "ASan+UBSan build (build-asan/)" eval 'configure build-asan -DRCC_SANITIZE=address && build build-asan'
vm_input_ready build-asan
step "TSan build (build-tsan/)" eval 'configure build-tsan -DRCC_SANITIZE=thread && build build-tsan'
vm_input_ready build-tsan
step "tests: unit, integration, tools (tcp)" ctest_in build

# --- clang: the code must build warning-free with it too; and without PMIx, which
# is optional (the bootstrap's tests check what is left: docs/launch.md) ----------
step "clang build without PMIx (build-clang/)" eval 'CC=clang configure build-clang -DRCC_WITH_PMIX=OFF && build build-clang'
step "tests: unit, bootstrap (clang, no PMIx)" ctest_in build-clang -L 'unit|bootstrap'

# --- sanitizers -----------------------------------------------------------------------
step "tests under ASan+UBSan" ctest_in build-asan
step "threaded tests under TSan" ctest_in build-tsan -L threaded

# --- valgrind (memcheck), scaled-down sizes ---------------------------------------------
run_valgrind() {
	local t tr rc out failed=0 integ=(build/tests/integration/test_ops build/tests/integration/test_errors
		build/tests/integration/test_conn build/tests/integration/test_session)
	# each test's stdout (its "ok CASE" lines), shown when it fails: a case that
	# hangs or dies of a signal prints no FAIL line, and valgrind -q does not
	# say the process was killed, so only these name where it stopped
	out=$(mktemp)
	# the integration tests on the socket (tcp) and on same-host shared memory (shm)
	for t in build/tests/unit/test_* "${integ[@]/%/:tcp}" "${integ[@]/%/:shm}" \
		build/tests/integration/test_srq:tcp build/tests/integration/test_uc:tcp \
		build/tests/integration/test_ud:tcp \
		build/tests/integration/test_shm:shm build/tests/bootstrap/test_bootstrap; do
		tr=tcp
		[[ $t == *:* ]] && tr=${t##*:} && t=${t%:*}
		[ -x "$t" ] || continue
		printf '  %s (%s)\n' "$t" "$tr"
		# --fair-sched: valgrind runs one thread at a time, and its default lock
		# lets a busy-polling thread starve the progress thread indefinitely
		rc=0
		RCC_TEST_TRANSPORT=$tr RCC_TEST_QUICK=1 timeout 600 valgrind -q --fair-sched=yes \
			--error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
			"$t" >"$out" || rc=$?
		[ $rc = 0 ] && continue
		failed=1
		printf '  %s (%s) failed under valgrind: exit status %s' "$t" "$tr" $rc
		if [ $rc = 99 ]; then
			echo " (memory errors, above)"
		elif [ $rc = 124 ]; then
			echo " (timed out after 600 s)"
		elif ((rc > 128)); then
			echo " (killed by SIG$(kill -l $((rc - 128)) 2>/dev/null || echo $((rc - 128))))"
		else
			echo
		fi
		echo "  its output, last 60 lines (the case after the last \"ok\" is the one that stopped):"
		tail -n 60 "$out" | sed 's/^/    /'
	done
	rm -f "$out"
	return $failed
}
step "valgrind memcheck" run_valgrind
# instructions per operation on the hot path: a number to read in review, never
# asserted (issue 13 item 6); fails only when a run fails
step "hot-path instructions (bench/overhead.sh, quick)" env QUICK=1 ./bench/overhead.sh build

# --- fuzzing ----------------------------------------------------------------------------
run_fuzzers() {
	local t work rc
	for t in wire stream escape boot shm ud chan mesh; do
		work=$(mktemp -d)
		mkdir "$work/corpus" "$work/found"
		cp tests/fuzz/corpus/$t/* "$work/corpus"/
		printf '  fuzz_%s for %ss\n' "$t" "$FUZZ_SECONDS"
		rc=0
		timeout $((FUZZ_SECONDS + 60)) build-fuzz/tests/fuzz/fuzz_$t -max_total_time="$FUZZ_SECONDS" \
			-max_len=4096 -print_final_stats=1 -artifact_prefix="$work/found/" "$work/corpus" \
			>"$work/log" 2>&1 || rc=$?
		grep -E "^(stat::number_of_executed_units|Done)" "$work/log"
		if [ $rc != 0 ]; then
			# what it found, and the input that shows it (the "Base64:" line;
			# add it to tests/fuzz/make_seeds.py once fixed)
			echo "  fuzz_$t failed (exit $rc):"
			grep -vE '^#[0-9]' "$work/log" | tail -n 40 | sed 's/^/    /'
			rm -rf "$work"
			return 1
		fi
		rm -rf "$work"
	done
}
if [ "$FUZZ_SECONDS" != 0 ]; then
	step "fuzz build (build-fuzz/, clang)" eval 'CC=clang configure build-fuzz -DRCC_FUZZ=ON \
		-DRCC_BUILD_TOOLS=OFF -DRCC_BUILD_EXAMPLES=OFF && NINJA_FLAGS="fuzz_wire fuzz_stream fuzz_escape fuzz_boot fuzz_shm fuzz_ud fuzz_chan fuzz_mesh" build build-fuzz'
	step "fuzzers (${FUZZ_SECONDS}s each)" run_fuzzers
fi

# --- install: headers, libraries, pkg-config, CMake package, man pages; programs built against them
step "install + pkg-config + find_package + example" tests/install/check.sh build

# --- the mutation run, beside the VM's last boots -------------------------------------
# Once the host's steps are done the lane still has minutes of boots to go,
# and the CPU they leave is what most mutants need: a test waiting out a bound
# for a completion the fault withholds. Its VM mutants have a worker of their
# own beside the host mutants' two; their boots take the lane's lock
# (RCC_VM_LOCK), so they run between the lane's boots, one VM at a time on
# the machine (fresh clone, 2026-11-27: the lane ended 438 s after the host's
# steps, then the run took 641 s alone; 2026-12-07, with the VM mutants still
# queued after the host ones: they took the run's last 175 s of 873).
# Its baseline: the tests the gcc run above passed on this same tree count.
# The VM's baseline likewise: the lane's first boot ran every integration and
# verbs test binary of this tree on verbs (suite 10-integration); once it
# passed, the VM mutants need no baseline boot of their own (in CI7 that boot
# took 180 s after the lane's last, on the run's critical path).
mutate_env=(RCC_MUTATE_PASSED_JUNIT="$REPO/build/ctest-junit.xml")
if [ -n "$VM_LANE_PID" ]; then
	mutate_env+=(RCC_VM_LOCK="$VM_LANE/vm.lock")
	[[ " ${vm_lib[*]} " != *" 10-integration "* ]] || mutate_env+=(RCC_MUTATE_VM_PASSED="$VM_LANE/1")
fi
step "mutation run (scripts/mutate.sh)" env "${mutate_env[@]}" ./scripts/mutate.sh

# --- the VM's boots, beside the host's steps and the mutation run: their output and totals -------------
# Its checks join the totals (tests/rxe/run-suites.sh prints "N passed, N failed, N skipped").
vm_collect() { # I BUILD: boot I's output, its checks counted; its status
	local i=$1 build=$2 log=$VM_LANE/$1.log rc line secs
	[ -f "$VM_LANE/$i" ] || { echo "boot $i left no status"; return 1; }
	read -r rc secs <"$VM_LANE/$i"
	tr -d '\r' <"$log"
	echo "(this boot ran ${secs} s, beside the host's steps)"
	line=$(tr -d '\r' <"$log" | grep -aE '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped \(checks' | tail -n1)
	if [ -n "$line" ]; then
		# shellcheck disable=SC2046
		add_counts $(sed -E 's/^([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped.*/\1 \2 \3/' <<<"$line")
		while IFS= read -r line; do SKIP_NOTES+=("vm $build ${line#  skipped in }"); done < <(
			tr -d '\r' <"$log" | grep -a '^  skipped in ')
	else
		echo "the VM suite printed no totals"
		[ "$rc" != 0 ] || rc=1
	fi
	return "$rc"
}
if [ "${RCC_SKIP_RXE:-0}" = 1 ]; then
	say "Soft-RoCE VM suite SKIPPED (RCC_SKIP_RXE=1)"
	STEP_LOG+=("$(printf '%-44s %5s   %s' "Soft-RoCE VM suite" - "SKIPPED by RCC_SKIP_RXE=1")")
else
	step "waiting for the VM's boots to end" wait "$VM_LANE_PID"
	VM_LANE_PID=
	for i in "${!VM_BOOTS[@]}"; do
		# the summary's time for these is the collection's: say the boot's own
		secs='?'
		[ -f "$VM_LANE/$((i + 1))" ] && read -r _ secs <"$VM_LANE/$((i + 1))"
		step "${VM_NAMES[$i]} (ran ${secs} s beside)" vm_collect $((i + 1)) "${VM_BOOTS[$i]%% *}"
	done
fi

summary
say "all tests passed in $((SECONDS - T0)) s"
