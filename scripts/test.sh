#!/usr/bin/env bash
# The whole test suite: unit, property, integration (real binaries, real
# traces from ../shared/traces). This is the README's test command and what
# CI runs after the format and lint checks.
set -euo pipefail
cd "$(dirname "$0")/.."

traces=../shared/traces
if [ ! -f "$traces/SDSC-SP2-1998-4.2-cln.swf.gz" ]; then
  echo "error: the SWF traces are expected in $(cd .. && pwd)/shared/traces (beside this checkout); tests read them there" >&2
  exit 1
fi

# The live tests start the real binaries of both crates: build them all
# before any test runs.
cargo build --workspace --bins "$@"
cargo test --workspace "$@"
