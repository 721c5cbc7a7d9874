#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# readme-commands.sh SRC_DIR: the commands README.md shows under "Build,
# install and link" and "Packages" still work. Takes every ```bash block of
# those sections, in order, and runs them as one script in a scratch copy of
# the sources. Two changes, both printed: /opt/rcc becomes a scratch folder
# (a test does not write outside its scratch space), and each `cmake -S`
# line gets the tests, tools and examples turned off first (the README's own
# options come after and win), so that the README's cmake and ninja lines
# build the library alone, in well under a minute on two cores (the full
# build is what the rest of the test command checks). Fails if a section is
# missing or shows no command.
set -euo pipefail
. "$(dirname "$0")/copy-sources.sh"
src=$(cd "$1" && pwd)
readme=$src/README.md
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# the ```bash blocks of one "## TITLE" section
section_commands() {
	awk -v title="## $1" '
		/^## / { in_section = ($0 == title) }
		in_section && /^```bash$/ { in_block = 1; next }
		in_block && /^```$/ { in_block = 0; next }
		in_section && in_block { print }' "$readme"
}
script=$work/readme.sh
: >"$script"
for title in "Build, install and link" "Packages"; do
	cmds=$(section_commands "$title")
	[ -n "$cmds" ] || { echo "FAIL: README.md has no bash commands under '## $title'"; exit 1; }
	printf '%s\n' "$cmds" >>"$script"
done
sed -i -e "s|/opt/rcc|$work/opt/rcc|g" \
	-e 's/^cmake -S /cmake -DRCC_BUILD_TESTS=OFF -DRCC_BUILD_TOOLS=OFF -DRCC_BUILD_EXAMPLES=OFF -S /' "$script"

mkdir "$work/src"
copy_sources "$src" "$work/src"

echo "running the README's commands (/opt/rcc moved to $work/opt/rcc; library only):"
sed 's/^/  | /' "$script"
out=$(cd "$work/src" && env -u PKG_CONFIG_PATH -u LD_LIBRARY_PATH bash -euo pipefail "$script" 2>&1) || {
	printf '%s\n' "$out" | tail -n 40
	echo "FAIL: a README command failed"
	exit 1
}
# the example's output ends the first section; the packages the second
grep -qxF "$(cat "$src/examples/expected/send_recv.out")" <<<"$out" ||
	{ printf '%s\n' "$out" | tail -n 20; echo "FAIL: the README's example did not print what it should"; exit 1; }
ls "$work/src/packages/"librcc0_*.deb "$work/src/packages/"librcc-dev_*.deb >/dev/null ||
	{ echo "FAIL: the README's cpack command made no packages"; exit 1; }
# where the README says the library goes
if command -v dpkg-architecture >/dev/null; then
	multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
	list=$(dpkg-deb -c "$work/src/packages/"librcc0_*.deb)
	grep -q " \./usr/lib/$multiarch/librcc\.so\.0 " <<<"$list" ||
		{ printf '%s\n' "$list"; echo "FAIL: librcc0 is not in /usr/lib/$multiarch"; exit 1; }
fi
echo "ok: the README's build, install, link and package commands work"
