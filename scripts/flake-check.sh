#!/usr/bin/env bash
# Runs the test suite N times with both cores kept busy by stress-ng and
# reports every test that failed at least once: the suite must give the
# same verdict on a busy host as on a quiet one (0 failures in 5 runs is
# the bar; docs/testing.md has the latest result).
#
#   scripts/flake-check.sh [-n RUNS] [--cargo-only] [-- CARGO TEST ARGS]
#
# Each run is `cargo test --workspace --no-fail-fast` plus, unless
# --cargo-only, the shell tests scripts/test.sh runs (tests/web/live_view.sh,
# tests/launch/netns.sh, tests/launch/slurm.sh, slurm-nodes.sh; they need root). The load is
# `stress-ng --cpu 2` for the whole check, installed with apt when missing
# and running as root (otherwise the check fails, saying so). Logs go to
# $FLAKE_OUT (default target/flake-check): run-K.log per run, and
# failures.txt, one line per failure: "run K: TEST".
set -euo pipefail
cd "$(dirname "$0")/.."

runs=5
shell_tests=1
while [ $# -gt 0 ]; do
  case $1 in
    -n)
      runs=$2
      shift 2
      ;;
    --cargo-only)
      shell_tests=0
      shift
      ;;
    --)
      shift
      break
      ;;
    *)
      echo "usage: $0 [-n RUNS] [--cargo-only] [-- CARGO TEST ARGS]" >&2
      exit 2
      ;;
  esac
done

if ! command -v stress-ng >/dev/null; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "error: stress-ng is needed for the CPU load and this is not root: apt-get install stress-ng, or run as root" >&2
    exit 1
  fi
  echo "== installing stress-ng"
  apt-get install -y stress-ng >/dev/null 2>&1 ||
    { apt-get update >/dev/null && apt-get install -y stress-ng >/dev/null; } ||
    { echo "error: apt-get install stress-ng failed" >&2; exit 1; }
fi
if [ $shell_tests -eq 1 ] && [ "$(id -u)" -ne 0 ]; then
  echo "error: the shell tests (launch, web) need root; run as root or pass --cargo-only" >&2
  exit 1
fi

out=${FLAKE_OUT:-target/flake-check}
mkdir -p "$out"
: >"$out/failures.txt"

# Build first, unloaded: what is checked is the tests, not the compiler.
cargo build --workspace --bins "$@"
cargo test --workspace --no-run "$@"
# Fresh property-test cases every run (scripts/test.sh fixes a seed).
unset PROPTEST_RNG_SEED

stress-ng --cpu 2 --quiet &
stress=$!
trap 'kill "$stress" 2>/dev/null || true; wait "$stress" 2>/dev/null || true' EXIT
echo "== load: stress-ng --cpu 2 (pid $stress)"

start=$(date +%s)
for k in $(seq 1 "$runs"); do
  log="$out/run-$k.log"
  echo "== run $k of $runs ($(date -u +%H:%M:%S) UTC)"
  t0=$(date +%s)
  rc=0
  cargo test --workspace --no-fail-fast "$@" >"$log" 2>&1 || rc=$?
  # libtest prints "test NAME ... FAILED"; a test binary that crashed (a
  # signal, an abort) or did not build has no such line for what it lost:
  # cargo says the first "process didn't exit successfully: `BIN ...`
  # (signal: N, SIG...)", the second "could not compile".
  grep -E '^test .* \.\.\. FAILED$' "$log" | sed -E "s/^test (.*) \.\.\. FAILED$/run $k: \1/" >>"$out/failures.txt" || true
  grep -E "process didn't exit successfully: .*\(signal: " "$log" |
    sed -E "s/^.*process didn't exit successfully: .([^ ]*).*\(signal: ([^)]*)\).*$/run $k: crashed: \1 (signal \2)/" >>"$out/failures.txt" || true
  grep -E '^error: could not compile' "$log" | sed -E "s/^error: (.*)$/run $k: cargo: \1/" >>"$out/failures.txt" || true
  if ((rc != 0)) && ! grep -qE "^test .* \.\.\. FAILED|process didn't exit successfully: .*\(signal: |^error: could not compile" "$log"; then
    echo "run $k: cargo test exited $rc without naming a failure (see $log)" >>"$out/failures.txt"
  fi
  if [ $shell_tests -eq 1 ]; then
    for t in tests/web/live_view.sh tests/launch/netns.sh tests/launch/slurm.sh tests/launch/slurm-nodes.sh; do
      if ! bash "$t" >>"$log" 2>&1; then
        echo "run $k: $t" >>"$out/failures.txt"
      fi
    done
  fi
  echo "   run $k took $(($(date +%s) - t0)) s; failures so far: $(wc -l <"$out/failures.txt")"
done

echo "== $runs runs under stress-ng --cpu 2 in $(($(date +%s) - start)) s"
if [ -s "$out/failures.txt" ]; then
  echo "tests that failed at least once (times failed, test):"
  sed -E 's/^run [0-9]+: //' "$out/failures.txt" | sort | uniq -c | sort -rn
  exit 1
fi
echo "no test failed"
