#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Build and run every test: unit, integration (tcp) and tool tests with gcc;
# a clang build; the ASan+UBSan build; the TSan build of the threaded tests;
# valgrind; the fuzzers for a short while; the install check; the verbs
# suite in a Soft-RoCE VM, and its integration tests again built with
# ASan+UBSan and with TSan. Installs what it needs (Debian). Stops at the first
# failure and prints a timed summary.
#
# Environment:
#   RCC_SKIP_RXE=1     skip the Soft-RoCE VM suite (say so explicitly; never implied)
#   RCC_FUZZ_SECONDS   seconds per fuzz target (default 20; 0 skips fuzzing)
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
FUZZ_SECONDS=${RCC_FUZZ_SECONDS:-20}
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
step "tests: unit, integration, tools (tcp)" ctest_in build
# its baseline: the tests the step above just passed on this same tree count
step "mutation run (scripts/mutate.sh)" env RCC_MUTATE_PASSED_JUNIT="$REPO/build/ctest-junit.xml" \
	./scripts/mutate.sh

# --- clang: the code must build warning-free with it too; and without PMIx, which
# is optional (the bootstrap's tests check what is left: docs/launch.md) ----------
step "clang build without PMIx (build-clang/)" eval 'CC=clang configure build-clang -DRCC_WITH_PMIX=OFF && build build-clang'
step "tests: unit, bootstrap (clang, no PMIx)" ctest_in build-clang -L 'unit|bootstrap'

# --- sanitizers -----------------------------------------------------------------------
step "ASan+UBSan build (build-asan/)" eval 'configure build-asan -DRCC_SANITIZE=address && build build-asan'
step "tests under ASan+UBSan" ctest_in build-asan
step "TSan build (build-tsan/)" eval 'configure build-tsan -DRCC_SANITIZE=thread && build build-tsan'
step "threaded tests under TSan" ctest_in build-tsan -L threaded

# --- valgrind (memcheck), scaled-down sizes ---------------------------------------------
run_valgrind() {
	local t tr failed=0 integ=(build/tests/integration/test_ops build/tests/integration/test_errors
		build/tests/integration/test_conn build/tests/integration/test_session)
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
		RCC_TEST_TRANSPORT=$tr RCC_TEST_QUICK=1 timeout 600 valgrind -q --fair-sched=yes \
			--error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
			"$t" >/dev/null || { echo "  valgrind found problems in $t ($tr)"; failed=1; }
	done
	return $failed
}
step "valgrind memcheck" run_valgrind
# instructions per operation on the hot path: a number to read in review, never
# asserted (issue 13 item 6); fails only when a run fails
step "hot-path instructions (bench/overhead.sh, quick)" env QUICK=1 ./bench/overhead.sh build

# --- fuzzing ----------------------------------------------------------------------------
run_fuzzers() {
	local t corpus
	for t in wire stream escape boot shm ud; do
		corpus=$(mktemp -d)
		cp tests/fuzz/corpus/$t/* "$corpus"/
		printf '  fuzz_%s for %ss\n' "$t" "$FUZZ_SECONDS"
		timeout $((FUZZ_SECONDS + 60)) build-fuzz/tests/fuzz/fuzz_$t -max_total_time="$FUZZ_SECONDS" \
			-max_len=4096 -print_final_stats=1 "$corpus" 2>&1 | grep -E "^(stat::number_of_executed_units|Done)" ||
			{ rm -rf "$corpus"; return 1; }
		rm -rf "$corpus"
	done
}
if [ "$FUZZ_SECONDS" != 0 ]; then
	step "fuzz build (build-fuzz/, clang)" eval 'CC=clang configure build-fuzz -DRCC_FUZZ=ON \
		-DRCC_BUILD_TOOLS=OFF -DRCC_BUILD_EXAMPLES=OFF && NINJA_FLAGS="fuzz_wire fuzz_stream fuzz_escape fuzz_boot fuzz_shm fuzz_ud" build build-fuzz'
	step "fuzzers (${FUZZ_SECONDS}s each)" run_fuzzers
fi

# --- install: headers, libraries, pkg-config, CMake package, man pages; programs built against them
step "install + pkg-config + find_package + example" tests/install/check.sh build

# --- verbs on Soft-RoCE -------------------------------------------------------------------
# Its checks join the totals (tests/rxe/run-suites.sh prints "N passed, N failed, N skipped").
run_vm_suite() { # BUILD_DIR [SUITE...]
	local build=$1 rc=0 line
	shift
	local log=$REPO/$build/rxe-suite.log
	set -o pipefail
	tests/rxe/run.sh "$build" "$@" 2>&1 | tee "$log" || rc=$?
	line=$(tr -d '\r' < "$log" | grep -aE '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped \(checks' | tail -n1)
	if [ -n "$line" ]; then
		# shellcheck disable=SC2046
		add_counts $(sed -E 's/^([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped.*/\1 \2 \3/' <<<"$line")
		while IFS= read -r line; do SKIP_NOTES+=("vm $build ${line#  skipped in }"); done < <(
			tr -d '\r' < "$log" | grep -a '^  skipped in ')
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
	[ -x tests/rxe/run.sh ] || die "tests/rxe/run.sh is missing"
	# two boots, each well inside its own time limit (RCC_RXE_TIMEOUT, 900 s; one
	# boot of every suite took 850-900 s on a loaded host): the verbs transport's
	# suites (05-30) and the tools' (40 on); tests/rxe/README.md numbers them so
	mapfile -t vm_suites < <(cd tests/rxe/suites && ls -- *.sh | sed 's/\.sh$//')
	vm_lib=() vm_tools=()
	for s in "${vm_suites[@]}"; do
		if [[ $s < 40 ]]; then vm_lib+=("$s"); else vm_tools+=("$s"); fi
	done
	((${#vm_lib[@]} && ${#vm_tools[@]})) || die "tests/rxe/suites: expected suites below and from 40"
	step "VM: verbs suites ${vm_lib[0]}..${vm_lib[-1]}" run_vm_suite build "${vm_lib[@]}"
	step "VM: tools' suites ${vm_tools[0]}..${vm_tools[-1]}" run_vm_suite build "${vm_tools[@]}"
	# the verbs transport's own code under the sanitizers, on a real verbs path
	step "verbs integration under ASan+UBSan in the VM" run_vm_suite build-asan 10-integration
	step "verbs integration under TSan in the VM" run_vm_suite build-tsan 10-integration
fi

summary
say "all tests passed in $((SECONDS - T0)) s"
