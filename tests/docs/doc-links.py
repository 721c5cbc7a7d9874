#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Fail when the documentation points at a file that is not in the sources.

Usage: doc-links.py SRC_DIR

Read: README.md, docs/*.md, every README.md under tests/, and man/*. Checked,
outside fenced code blocks (commands there are doc-commands.sh's business):
- every Markdown link [text](TARGET) that is not a URL or an anchor: TARGET
  relative to the file's folder must exist;
- every path written in the text (in backticks or not) that starts with ./,
  ../ or one of the source folders below: it must exist relative to the
  file's folder or to the repository root. A path whose first folder is not
  a source folder (build/, packages/, /opt/rcc) is something the commands
  make, and is not checked.
In a path, an upper-case word (NAME, TOOL, NN) stands for any name, and a
program may be named by its source (tests/verbs/rxe_probe: rxe_probe.c).
Prints every missing target as FILE:LINE: TARGET and exits 1 if there is any.
"""
import glob
import os
import re
import sys

# The repository's top-level source folders (kept in step with the tree: a
# folder listed here that is missing fails the check).
SOURCE_DIRS = ['.ci', 'bench', 'cmake', 'docs', 'examples', 'include', 'man', 'scripts',
               'src', 'tests', 'tools']
# Paths the text names on purpose although they do not exist, with the reason.
NOT_FILES = {
    ('docs/shm.md', 'src/transport/shm/'): 'a design that was not taken',
}

LINK = re.compile(r'\]\(([^)\s]+)\)')
PATH = re.compile(r'(?<![\w/.$~-])((?:\.\.?/|(?:%s)/)[\w./*-]*)' %
                  '|'.join(re.escape(d) for d in SOURCE_DIRS))
PLACEHOLDER = re.compile(r'\b[A-Z][A-Z0-9_]*[A-Z0-9]\b')


def exists(src, base, target):
    path = os.path.normpath(os.path.join(base, target))
    if path.split(os.sep)[0] not in SOURCE_DIRS + ['README.md', 'LICENSE', 'CMakeLists.txt']:
        return None  # made by a command, not a source
    # a * in the text is a wildcard; [ and ? are taken as they are
    pattern = re.sub(r'([\[?])', r'[\1]', os.path.join(src, path))
    pattern = PLACEHOLDER.sub('*', pattern)
    return bool(glob.glob(pattern) or glob.glob(pattern + '.*'))


def main():
    src = os.path.abspath(sys.argv[1])
    for d in SOURCE_DIRS:
        if not os.path.isdir(os.path.join(src, d)):
            print(f'doc-links.py: source folder {d}/ is gone: update SOURCE_DIRS')
            return 1
    files = ['README.md'] + sorted(glob.glob('docs/*.md', root_dir=src))
    files += sorted(glob.glob('tests/**/README.md', root_dir=src, recursive=True))
    files += sorted(f for f in glob.glob('man/*', root_dir=src) if f != 'man/CMakeLists.txt')
    checked = bad = 0
    for rel in files:
        here = os.path.dirname(rel)
        markdown = rel.endswith('.md')
        fenced = False
        with open(os.path.join(src, rel), encoding='utf-8') as f:
            lines = f.read().split('\n')
        for no, line in enumerate(lines, 1):
            if markdown and re.match(r'^ *```', line):
                fenced = not fenced
                continue
            if fenced:
                continue
            targets = set()
            if markdown:
                for m in LINK.finditer(line):
                    t = m.group(1).split('#')[0]
                    if t and not re.match(r'^[a-z][a-z0-9+.-]*:', t):
                        targets.add((t, (here,)))
            for m in PATH.finditer(line):
                targets.add((m.group(1).rstrip('.'), (here, '')))
            for t, bases in sorted(targets):
                if (rel, t) in NOT_FILES:
                    continue
                found = [exists(src, b, t) for b in bases]
                if all(x is None for x in found):
                    continue
                checked += 1
                if not any(found):
                    print(f'{rel}:{no}: {t} does not exist')
                    bad += 1
    print(f'{checked} paths in {len(files)} files checked, {bad} missing')
    if checked == 0:
        print('FAIL: no path found in the docs')
        return 1
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
