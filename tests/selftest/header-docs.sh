#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Every function the shared library exports is declared in a public header
# with a doc comment (scripts/check-header-docs.py), and the checker itself
# can fail: it must reject a header with one undocumented function.
# Usage: header-docs.sh SOURCE_DIR LIBRCC_SO
set -euo pipefail
src=$1 lib=$2
check=$src/scripts/check-header-docs.py
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

# 1. the real headers
if ! python3 "$check" "$src"/include/rcc/*.h; then
	bad "a public function has no doc comment (listed above)"
fi

# 2. every exported rcc_* symbol is declared in a header
command -v nm >/dev/null || { echo "SKIP: nm not found"; exit 77; }
declared=$(grep -ohE '\brcc_[a-z0-9_]+\s*\(' "$src"/include/rcc/*.h | tr -d ' (' | sort -u)
exported=$(nm -D --defined-only "$lib" | awk '$2 == "T" && $3 ~ /^rcc_/ { print $3 }' | sort -u)
[ -n "$exported" ] || bad "no rcc_* symbol exported by $lib: wrong file?"
undeclared=$(comm -13 <(echo "$declared") <(echo "$exported"))
[ -z "$undeclared" ] || bad "exported but in no public header: $undeclared"

# 3. the checker rejects what it should and accepts what it should
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/bad.h" <<'H'
/* Documented. */
int rcc_fine(void);

int rcc_forgotten(int x);
H
out=$(python3 "$check" "$tmp/bad.h" 2>&1) && bad "checker passed a header with an undocumented function"
grep -q 'rcc_forgotten' <<<"$out" || bad "checker did not name rcc_forgotten: $out"
grep -q 'rcc_fine' <<<"$out" && bad "checker named the documented rcc_fine: $out"
cat >"$tmp/good.h" <<'H'
/* A group shares one comment: rcc_a() and rcc_b(). */
int rcc_a(void);
int rcc_b(void);
H
python3 "$check" "$tmp/good.h" >/dev/null || bad "checker refused a documented group"
# a declaration right under another's comment, which does not name it
cat >"$tmp/borrowed.h" <<'H'
/* Close the thing. */
int rcc_thing_close(void);
int rcc_thing_port(void);
H
out=$(python3 "$check" "$tmp/borrowed.h" 2>&1) && bad "checker let rcc_thing_port borrow a neighbour's comment"
grep -q 'rcc_thing_port' <<<"$out" || bad "checker did not name rcc_thing_port: $out"
grep -q 'rcc_thing_close' <<<"$out" && bad "checker named the documented rcc_thing_close: $out"

[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "header docs: every exported function declared and documented; checker verified"
