#!/usr/bin/env bash
# The whole test suite: unit, property, integration (real binaries, real
# traces from ../shared/traces), then the launch tests: shellcheck of every
# script, the multi-host launch over ssh into network namespaces
# (tests/launch/netns.sh), a real local Slurm cluster
# (tests/launch/slurm.sh) and one of three slurmd in network namespaces
# (tests/launch/slurm-nodes.sh), and the live web view in headless Chromium
# (tests/web/live_view.sh). This is the README's test command and what CI
# runs (as root) after the format and lint checks. The launch tests need
# root and install what they need with apt; they fail, never skip, when
# they cannot.
set -euo pipefail
cd "$(dirname "$0")/.."

traces=../shared/traces
if [ ! -f "$traces/SDSC-SP2-1998-4.2-cln.swf.gz" ]; then
  echo "error: the SWF traces are expected in $(cd .. && pwd)/shared/traces (beside this checkout); tests read them there" >&2
  exit 1
fi

# shellcheck source=tests/launch/common.sh
source tests/launch/common.sh
need_root "the launch tests (scripts/test.sh)"
need shellcheck:shellcheck

echo "== shellcheck"
shellcheck -x scripts/*.sh scripts/slurm/*.sh scripts/slurm/libratory.sbatch tests/launch/*.sh tests/web/*.sh .ci/run

# The Batsim tests run pybatsim's schedulers unchanged.
echo "== pybatsim"
bash scripts/install-pybatsim.sh

# Batsim's analysis library reads a run's out_jobs CSV (tests/batsim.rs).
echo "== evalys"
bash scripts/install-evalys.sh

# The property tests draw their cases from this seed, so the suite gives
# one answer per commit (a failure names its case); scripts/flake-check.sh
# and a run with another PROPTEST_RNG_SEED draw fresh ones.
export PROPTEST_RNG_SEED=${PROPTEST_RNG_SEED:-20261128}
echo "== property tests' seed: PROPTEST_RNG_SEED=$PROPTEST_RNG_SEED"

# The live tests start the real binaries of both crates: build them all
# before any test runs.
cargo build --workspace --bins "$@"
cargo test --workspace "$@"

# The live web view in headless Chromium against a live demo run.
echo "== tests/web/live_view.sh"
bash tests/web/live_view.sh

passed=0
for t in netns slurm slurm-nodes; do
  echo "== tests/launch/$t.sh"
  bash "tests/launch/$t.sh"
  passed=$((passed + 1))
done
echo "launch tests: shellcheck and $passed scenarios (netns over ssh, Slurm, Slurm on three nodes)"
echo "launch: $((passed + 1)) passed, 0 failed"
