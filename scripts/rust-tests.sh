#!/usr/bin/env bash
# Every Rust test of the workspace with cargo-nextest (one pool for all test binaries, each
# test its own process; configured in .config/nextest.toml), then the doc examples, then
# the slowest tests of the run. Without nextest, plain `cargo test`. Arguments go to the
# test runner (a filter, say).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(--workspace --exclude frontend --exclude site-builder)
if ! cargo nextest --version >/dev/null 2>&1; then
  echo "cargo-nextest is not installed: running plain cargo test"
  exec cargo test "${packages[@]}" "$@"
fi
cargo nextest run "${packages[@]}" --cargo-quiet "$@"
cargo test "${packages[@]}" --doc --quiet
python3 - target/nextest/default/junit.xml <<'PY'
import sys, xml.etree.ElementTree as ET
cases = [(float(c.get("time", 0)), c.get("classname", "") + " " + c.get("name", ""))
         for c in ET.parse(sys.argv[1]).iter("testcase")]
cases.sort(reverse=True)
print(f"\nslowest of {len(cases)} tests (seconds):")
for seconds, name in cases[:15]:
    print(f"{seconds:8.1f}  {name}")
PY
