#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Skips are skips: every registered test counts exit 77 as skipped
# (SKIP_RETURN_CODE), so a test that cannot run is never reported as passed.
#   skip-codes.sh BUILD_DIR
set -u
build=${1:?usage: $0 BUILD_DIR}
ctest --test-dir "$build" --show-only=json-v1 | python3 -c '
import json, sys
tests = json.load(sys.stdin)["tests"]
bad = []
for t in tests:
    props = {p["name"]: p["value"] for p in t.get("properties", [])}
    if str(props.get("SKIP_RETURN_CODE")) != "77":
        bad.append(t["name"])
print("%d tests registered, %d without SKIP_RETURN_CODE 77%s" %
      (len(tests), len(bad), (": " + " ".join(bad)) if bad else ""))
sys.exit(1 if bad or not tests else 0)
'
