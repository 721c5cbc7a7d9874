#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The integration tests on the verbs transport, once per bring-up (rdma_cm, manual):
# every executable test_* in $RCC_BUILD/tests/integration and $RCC_BUILD/tests/verbs,
# then every example with its output checked.
source tests/rxe/lib.sh
bins=()
for d in "$RCC_BUILD/tests/integration" "$RCC_BUILD/tests/verbs"; do
	for t in "$d"/test_*; do
		[ -f "$t" ] && [ -x "$t" ] && bins+=("$t")
	done
done
[ ${#bins[@]} -gt 0 ] || { log "no test binaries under $RCC_BUILD/tests"; exit 1; }
for bringup in cm manual; do
	for t in "${bins[@]}"; do
		name=$(basename "$t")
		out=$RXE_LOGDIR/$name.$bringup.log
		t0=$(now)
		# verbs is what this VM is for: a case that would skip for want of it fails
		RCC_TEST_TRANSPORT=verbs RCC_TEST_ADDR=$RXE_IP RCC_TEST_BRINGUP=$bringup \
			RCC_TEST_REQUIRE=verbs \
			run_bounded "$T_LONG" "$t" >"$out" 2>&1
		st=$?
		summary=$(grep -E '^[0-9]+ of [0-9]+ cases passed' "$out" | tail -n1)
		check "$name ($bringup)" "$st" "${summary:-no summary} in $(since "$t0") s"
		# cases skipped inside a binary that passed: listed with the suite's
		# skips (their reasons are in the log: "skip CASE: needs NEED: WHY")
		# (a word list, not a process substitution: the VM has no /dev/fd)
		if [ "$st" -eq 0 ]; then
			for c in $(sed -nE 's/^skip ([^ :]+): needs .*/\1/p' "$out"); do
				SKIPPED_NAMES+=" $name.$bringup/$c"
				grep -m1 -E "^skip $c: " "$out" | sed 's/^/        /'
			done
		fi
		[ "$st" -eq 0 ] || grep -E '^FAIL|^timeout|[Aa]ssert|Sanitizer' "$out" | head -n 20 |
			sed 's/^/        /'
	done
done
# The examples, on verbs: a device exists here, so their RCC_TRANSPORT_AUTO
# context is verbs; they use the VM's address instead of 127.0.0.1.
for ex in "$RCC_BUILD"/examples/example_*; do
	[ -x "$ex" ] || continue
	name=$(basename "$ex")
	out=$RXE_LOGDIR/$name.log
	t0=$(now)
	# LD_LIBRARY_PATH: they link librcc.so, and their run path names the
	# build folder by its host path, which the VM may not show there
	LD_LIBRARY_PATH=$PWD/$RCC_BUILD/src run_bounded "$T_SHORT" bash examples/run-example.sh "$ex" \
		"examples/expected/${name#example_}.out" "$RXE_IP" >"$out" 2>&1
	st=$?
	check "$name" "$st" "output as expected/${name#example_}.out in $(since "$t0") s"
	[ "$st" -eq 0 ] || head -n 20 "$out" | sed 's/^/        /'
done
suite_result
