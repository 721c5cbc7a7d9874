#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Fail when a public function in include/rcc/*.h has no doc comment.

A declaration is documented when a comment ends directly above it, or
directly above the run of declarations it belongs to (consecutive lines, no
blank line between: a group of getters may share one comment) and that
comment names it: a declaration must never borrow the comment of an
unrelated neighbour. Prints every undocumented function as FILE:LINE: NAME
and exits 1 if there is any.
Usage: check-header-docs.py [HEADER...]  (default: include/rcc/*.h)
"""
import glob
import os
import re
import sys

DECL = re.compile(r'^[A-Za-z_][\w \t\*]*?\b(rcc_\w+)\s*\(')


def statements(lines):
    """Yield (first_line_index, last_line_index, text) of top-level statements."""
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        s = line.strip()
        if s.startswith('#'):
            while lines[i].rstrip().endswith('\\') and i + 1 < n:
                i += 1  # a macro continued on the next line
            i += 1
            continue
        if not s or s.startswith('//') or s.startswith('extern "C"') or s == '}':
            i += 1
            continue
        if s.startswith('/*'):
            j = i
            while '*/' not in lines[j]:
                j += 1
            yield i, j, 'comment'
            i = j + 1
            continue
        j, depth = i, 0
        text = ''
        while j < n:
            text += lines[j] + '\n'
            depth += lines[j].count('{') - lines[j].count('}')
            if depth <= 0 and (lines[j].rstrip().endswith(';') or lines[j].rstrip().endswith('}')):
                break
            j += 1
        yield i, j, text
        i = j + 1


def check(path):
    lines = open(path, encoding='utf-8').read().split('\n')
    missing = []
    prev = None  # (last_line, kind) of the previous statement
    documented_run = False
    comment = ''  # the text of the comment that heads the current run
    for first, last, text in statements(lines):
        adjacent = prev is not None and prev[0] == first - 1
        if text == 'comment':
            prev, documented_run = (last, 'comment'), False
            comment = '\n'.join(lines[first:last + 1])
            continue
        m = DECL.match(text.strip())
        is_func = m is not None and 'typedef' not in text.split('(')[0]
        if is_func:
            if adjacent and prev[1] == 'comment':
                documented_run = True
            elif (adjacent and prev[1] == 'func' and documented_run and
                  re.search(r'\b' + m.group(1) + r'\b', comment)):
                pass
            else:
                documented_run = False
                missing.append((first + 1, m.group(1)))
            prev = (last, 'func')
        else:
            prev, documented_run = (last, 'other'), False
    return missing


def main(argv):
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
    headers = argv[1:] or sorted(glob.glob(os.path.join(root, 'include', 'rcc', '*.h')))
    bad = 0
    total = 0
    for h in headers:
        for line, name in check(h):
            print(f'{os.path.relpath(h, root)}:{line}: {name} has no doc comment')
            bad += 1
    if bad:
        print(f'{bad} public function(s) without a doc comment', file=sys.stderr)
        return 1
    print('every public function has a doc comment')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
