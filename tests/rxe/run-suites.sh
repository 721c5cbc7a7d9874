#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# run-suites.sh: runs INSIDE the Soft-RoCE VM, from the repo root. Runs every
# tests/rxe/suites/*.sh in name order (or those whose names are given, e.g.
# "10-integration"), each under its own timeout, prints a summary table and
# exits non-zero when any suite failed.
#   RCC_BUILD            build directory relative to the repo root [build-verbs]
#   RCC_SUITE_TIMEOUT    seconds per suite [600]
#   RCC_SUITES           space-separated suite names to run (default: all)
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 2
export RCC_BUILD=${RCC_BUILD:-build-verbs}
export RXE_DEV=${RXE_DEV:-rxe0} RXE_IP=${RXE_IP:?RXE_IP is not set: run inside the VM}
export RXE_GID_IDX=${RXE_GID_IDX:-1}
per_suite=${RCC_SUITE_TIMEOUT:-600}
[ -d "$RCC_BUILD" ] || { echo "run-suites: build directory $RCC_BUILD not found"; exit 2; }

want=" ${RCC_SUITES:-} $* "
summary=()
failed=0
n_pass=0 n_fail=0 n_skip=0 skipped=()
t_all=$EPOCHREALTIME
for s in tests/rxe/suites/*.sh; do
	name=$(basename "$s" .sh)
	if [ -n "${want// /}" ] && [[ $want != *" $name "* ]]; then
		continue
	fi
	logdir=/tmp/rxe-logs/$name
	mkdir -p "$logdir"
	rm -f "$logdir/counts"
	echo "===== suite $name"
	t0=$EPOCHREALTIME
	RXE_LOGDIR=$logdir SUITE=$name timeout -k 10 "$per_suite" bash "$s"
	st=$?
	dt=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.1f", b-a}')
	case $st in
	0) res=pass ;;
	124 | 137) res="TIMEOUT (${per_suite}s)" ;;
	*) res="FAIL ($st)" ;;
	esac
	[ "$st" -eq 0 ] || failed=$((failed + 1))
	summary+=("$(printf '%-22s %-18s %7s s' "$name" "$res" "$dt")")
	# checks: passed failed skipped [skipped names...] (tests/rxe/lib.sh suite_result)
	if read -r p f k names < "$logdir/counts" 2>/dev/null; then
		n_pass=$((n_pass + p)) n_fail=$((n_fail + f)) n_skip=$((n_skip + k))
		[ -n "${names:-}" ] && skipped+=("$name:$names")
	fi
done
echo "===== summary (build $RCC_BUILD, $RXE_DEV $RXE_IP gid $RXE_GID_IDX)"
for l in "${summary[@]}"; do echo "  $l"; done
echo "  total $(awk -v a="$t_all" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.1f", b-a}') s," \
	"$failed of ${#summary[@]} suites failed"
echo "$n_pass passed, $n_fail failed, $n_skip skipped (checks in all suites)"
for l in "${skipped[@]}"; do echo "  skipped in $l (see its log under /tmp/rxe-logs)"; done
[ "${#summary[@]}" -gt 0 ] || { echo "run-suites: no suite matched"; exit 2; }
[ "$failed" -eq 0 ]
