#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# check.sh MODEL.pml: verify a Promela model with SPIN -- every
# interleaving explored (safety: the model's assertions and invalid end
# states, i.e. deadlocks). Passes only when the verifier ran to the end and
# found no error; 77 (a skip) when SPIN or a C compiler is missing. Works in
# MODEL.work/ under the current directory (ctest's: the build's tests/model/).
set -euo pipefail
model=$1 work=$PWD/$(basename "$1" .pml).work
command -v spin >/dev/null || { echo "spin is not installed (Debian package spin)" >&2; exit 77; }
cc=${CC:-cc}
command -v "$cc" >/dev/null || { echo "no C compiler ($cc) for the verifier" >&2; exit 77; }
rm -rf "$work"
mkdir -p "$work"
cd "$work"
spin -a "$model" >spin.log 2>&1 || { cat spin.log; echo "spin could not read $model" >&2; exit 1; }
# the verifier: generated code, not ours; no warnings-as-errors
"$cc" -O2 -DSAFETY -w -o pan pan.c
./pan -m100000 >pan.log 2>&1 || true
cat pan.log
grep -q "^State-vector .* errors: 0$" pan.log || { echo "FAIL: the verifier found an error (trail above)" >&2; exit 1; }
stored=$(awk '$2 == "states," && $3 == "stored" { print $1 }' pan.log)
((${stored:-0} > 0)) || { echo "FAIL: no states explored" >&2; exit 1; }
! grep -q "max search depth too small" pan.log || { echo "FAIL: the search was cut short" >&2; exit 1; }
echo "PASS: $(basename "$model"), $stored states, no error"
