#!/usr/bin/env bash
# Mutation testing of the pure core with cargo-mutants: every mutant of
# common::sim, common::share, common::admission and common::policy is built
# and the libratory-common tests (unit, property, paper findings) are run
# against it; a mutant no test catches is "missed". Too long for every CI
# run (see docs/testing.md for how long it takes and the latest counts).
#
#   scripts/mutants.sh [module ...]      modules: sim share admission policy
#                                        (default: all four, smallest first)
#
# Output: $MUTANTS_OUT/<module>/mutants.out/{caught,missed,timeout,unviable}.txt
# (default MUTANTS_OUT: target/mutants). One mutant at a time (--jobs 1) so
# that the timeout means the same on a shared machine; a mutant that loops
# is stopped after MUTANT_TIMEOUT seconds and counted as "timeout".
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo-mutants >/dev/null; then
  echo "== installing cargo-mutants (cargo install cargo-mutants --locked)"
  cargo install cargo-mutants --locked
fi

out=${MUTANTS_OUT:-target/mutants}
timeout=${MUTANT_TIMEOUT:-120}
# Mutants build in their own target directory so that they never race a
# developer's build; no debug info: linking the test binaries dominates
# each mutant's build.
export CARGO_TARGET_DIR=${MUTANTS_TARGET_DIR:-$out/target}
export CARGO_PROFILE_DEV_DEBUG=0
export CARGO_PROFILE_TEST_DEBUG=0

modules=("$@")
[ ${#modules[@]} -gt 0 ] || modules=(sim share admission policy)
for m in "${modules[@]}"; do
  case $m in
    sim | share | admission) files=("common/src/$m.rs") ;;
    policy) files=("common/src/policy/*.rs") ;;
    *)
      echo "error: unknown module '$m' (sim, share, admission, policy)" >&2
      exit 2
      ;;
  esac
  args=()
  for f in "${files[@]}"; do args+=(--file "$f"); done
  mkdir -p "$out/$m"
  echo "== mutants of common::$m ($(date -u +%H:%M:%S) UTC)"
  start=$(date +%s)
  # Exit status 2 means "some mutants missed": reported, not fatal here.
  rc=0
  cargo mutants -p libratory-common "${args[@]}" --jobs 1 \
    --timeout "$timeout" --build-timeout 900 --baseline skip \
    --output "$out/$m" --no-shuffle || rc=$?
  took=$(($(date +%s) - start))
  d="$out/$m/mutants.out"
  printf '== common::%s: %d caught, %d missed, %d timeout, %d unviable in %d s (exit %d)\n' \
    "$m" "$(wc -l <"$d/caught.txt")" "$(wc -l <"$d/missed.txt")" \
    "$(wc -l <"$d/timeout.txt")" "$(wc -l <"$d/unviable.txt")" "$took" "$rc"
  case $rc in 0 | 2 | 3) ;; *) exit "$rc" ;; esac
done
