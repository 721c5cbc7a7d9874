#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Counts of one ctest run from its JUnit file (ctest --output-junit), for
scripts/test.sh's closing line: prints 'PASSED FAILED SKIPPED CASES' on the
first line, then one line per skipped test with the reason the test gave (its
first output line that says skip), then one line per case skipped inside a
test that passed (tests/common/harness.c prints 'skip CASE: needs NEED: WHY'
for each; CASES counts them)."""
import re
import sys
import xml.etree.ElementTree as ET

LABEL = sys.argv[2] if len(sys.argv) > 2 else ""
CASE_SKIP = re.compile(r"^skip (\S+): (needs .*)$")
root = ET.parse(sys.argv[1]).getroot()
passed = failed = skipped = cases = 0
notes = []
case_notes = []
for case in root.iter("testcase"):
    status = case.get("status")
    out = case.findtext("system-out") or ""
    if case.find("skipped") is not None:
        skipped += 1
        why = next((l.strip() for l in out.splitlines() if "skip" in l.lower()),
                   "(no reason printed)")
        notes.append("%s%s: %s" % (LABEL, case.get("name"), why[:160]))
    elif status == "run":
        passed += 1
        for line in out.splitlines():
            m = CASE_SKIP.match(line.strip())
            if m:
                cases += 1
                case_notes.append("%s%s case %s: %s" % (LABEL, case.get("name"), m.group(1),
                                                        m.group(2)[:160]))
    else:
        failed += 1
print(passed, failed, skipped, cases)
for n in notes + case_notes:
    print(n)
