#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Counts of one ctest run from its JUnit file (ctest --output-junit), for
scripts/test.sh's closing line: prints 'PASSED FAILED SKIPPED' on the first
line, then one line per skipped test with the reason the test gave (its first
output line that says skip)."""
import sys
import xml.etree.ElementTree as ET

LABEL = sys.argv[2] if len(sys.argv) > 2 else ""
root = ET.parse(sys.argv[1]).getroot()
passed = failed = skipped = 0
notes = []
for case in root.iter("testcase"):
    status = case.get("status")
    if case.find("skipped") is not None:
        skipped += 1
        out = case.findtext("system-out") or ""
        why = next((l.strip() for l in out.splitlines() if "skip" in l.lower()),
                   "(no reason printed)")
        notes.append("%s%s: %s" % (LABEL, case.get("name"), why[:160]))
    elif status == "run":
        passed += 1
    else:
        failed += 1
print(passed, failed, skipped)
for n in notes:
    print(n)
