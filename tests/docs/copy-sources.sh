# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash
# copy_sources SRC DEST: a copy of the sources as git sees them (tracked and
# new files, not build trees) in the folder DEST, which must exist. Sourced by
# the doc tests that run the README's commands in a scratch copy.
copy_sources() {
	local src=$1 dest=$2
	# (only from the top of a checkout: a copy inside another, ignored, lists nothing)
	if [ "$(git -C "$src" rev-parse --show-toplevel 2>/dev/null)" = "$src" ]; then
		# (a file deleted but not yet committed is listed and skipped)
		git -C "$src" ls-files -z --cached --others --exclude-standard |
			tar -C "$src" --null --ignore-failed-read -T - -cf - 2>/dev/null | tar -xf - -C "$dest"
	else
		(cd "$src" && tar --exclude='./build*' -cf - .) | tar -xf - -C "$dest"
	fi
	[ -f "$dest/CMakeLists.txt" ] || { echo "FAIL: could not copy the sources"; exit 1; }
}
