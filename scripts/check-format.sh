#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Fail when a tracked C source or header differs from what .clang-format makes of
# it. Fix with: git ls-files '*.c' '*.h' | xargs clang-format -i
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "clang-format is not installed" >&2; exit 1; }
mapfile -t files < <(git ls-files '*.c' '*.h')
((${#files[@]})) || { echo "no C files found: not a git checkout?" >&2; exit 1; }
if ! out=$(clang-format --dry-run -Werror "${files[@]}" 2>&1); then
	printf '%s\n' "$out" | grep -E '^[^ ].*: error:' | cut -d: -f1 | sort -u |
		sed 's/^/  needs clang-format: /'
	exit 1
fi
echo "format: ${#files[@]} files match .clang-format"
