#!/usr/bin/env bash
# Mutation testing of the pure core with cargo-mutants: every mutant of
# common::sim, common::share, common::admission, common::policy,
# common::busy_index and common::node_model (the code every decision runs
# through) is built and the libratory-common tests (unit, property, paper
# findings) are run against it; a mutant no test catches is "missed". Too
# long for every CI run (see docs/testing.md for how long it takes and the
# latest counts).
#
#   scripts/mutants.sh [module ...] [-- cargo-mutants options]
#     modules: sim share admission policy busy_index node_model (default:
#     all six)
#     e.g. scripts/mutants.sh policy -- --shard 0/8
#          scripts/mutants.sh admission -- -F 'ManagerCore::reserve'
#
# First the unmutated tests run once in the copy: if they fail, every
# mutant would count as caught, so the script stops there. At the end each
# missed mutant is looked up in scripts/mutants-survivors.txt, the
# survivors reviewed as equivalent (file and description, no line
# number); the exit status is 1 when any missed mutant is not there, and
# those are listed. Add one to the file only with the reason it cannot
# change behaviour in docs/testing.md.
#
# Output: $MUTANTS_OUT/<module>/mutants.out/{caught,missed,timeout,unviable}.txt
# and outcomes.json (each mutant's build and test seconds); default
# MUTANTS_OUT: target/mutants. One mutant at a time (in place, in one
# copy) so that the timeout means the same on a shared machine; a mutant that loops is
# stopped after MUTANT_TIMEOUT seconds and counted as "timeout".
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

modules=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  modules+=("$1")
  shift
done
[ "${1:-}" != "--" ] || shift
extra=("$@")
[ ${#modules[@]} -gt 0 ] || modules=(sim share admission policy busy_index node_model)
for m in "${modules[@]}"; do
  case $m in
    sim | share | node_model | admission | policy | busy_index) ;;
    *)
      echo "error: unknown module '$m' (sim, share, admission, policy, busy_index, node_model)" >&2
      exit 2
      ;;
  esac
done

if ! command -v cargo-mutants >/dev/null; then
  echo "== installing cargo-mutants (cargo install cargo-mutants --locked)"
  cargo install cargo-mutants --locked
fi
command -v rsync >/dev/null || {
  echo "error: rsync is needed to copy the tree the mutants are made in" >&2
  exit 1
}

out=${MUTANTS_OUT:-target/mutants}
mkdir -p "$out"
out=$(cd "$out" && pwd)
timeout=${MUTANT_TIMEOUT:-240}
# Mutants build in their own target directory so that they never race a
# developer's build; no debug info, which the test binaries do not need.
export CARGO_TARGET_DIR=${MUTANTS_TARGET_DIR:-$out/target}
export CARGO_PROFILE_DEV_DEBUG=0
export CARGO_PROFILE_TEST_DEBUG=0
# The property tests read PROPTEST_CASES (their `cases` helper): a mutant
# runs each with 16 random cases instead of the suite's 48-128. The
# mutants the properties catch break every case or nearly (a survivor at
# 16 cases is rerun with the full count before it is listed).
export PROPTEST_CASES=${PROPTEST_CASES:-16}

# The mutants are made in place in a plain copy of the tree at a fixed
# path ($out/src): not in the developer's tree, which stays untouched, and
# not in cargo-mutants' fresh temporary copy, whose new path makes every
# run rebuild libratory-common from scratch (~3 minutes on a loaded
# 2-core host). The trace tests read ../shared/traces beside the tree, so
# the copy gets the same neighbour.
traces="$root/../shared/traces"
[ -d "$traces" ] || {
  echo "error: the SWF traces are missing at $traces (the paper-findings tests need them)" >&2
  exit 1
}
src=$out/src
mkdir -p "$src"
rsync -a --delete --exclude /target --exclude /.git --exclude /runs "$root/" "$src/"
ln -sfn "$(cd "$root/../shared" && pwd)" "$out/shared"

# A run stopped mid-build (Ctrl-C, kill, timeout) can leave rustc's
# incremental cache of libratory-common inconsistent: every later mutant
# then fails to link ("undefined hidden symbol") and would be counted
# unviable. A marker says a run is under way; finding it at the start
# means the last one was stopped, and that cache is rebuilt from scratch.
marker=$out/run-under-way
if [ -e "$marker" ]; then
  echo "== the last run was stopped: rebuilding libratory-common's incremental cache"
  rm -rf "$CARGO_TARGET_DIR"/debug/incremental/common-*
fi
touch "$marker"

# The baseline, once: the tests must pass unmutated (a broken test, a
# missing trace or a debug-only check that fires would make every mutant
# "caught"). The crate's sources are touched first: a mutant is undone
# with the file's old time, and rsync keeps the tree's times, so cargo
# would otherwise take the last mutant's build for the unmutated crate's
# (the baseline caught exactly that: SpareRule's names, mutated by the
# run before, failed two tests).
find "$src/common/src" -name '*.rs' -exec touch {} +
echo "== the unmutated tests in $src (baseline)"
if ! (cd "$src" && cargo test -p libratory-common --tests >"$out/baseline.log" 2>&1); then
  tail -n 30 "$out/baseline.log" >&2
  echo "error: the libratory-common tests fail without any mutant ($out/baseline.log): fix them first" >&2
  rm -f "$marker"
  exit 1
fi

for m in "${modules[@]}"; do
  # common::sim_faults is a module of its own (the fault schedule), not
  # part of common::sim. admission/tests.rs is #[cfg(test)]: no mutants.
  case $m in
    sim | share | node_model) globs=("common/src/$m.rs") ;;
    admission | policy) globs=("common/src/$m/*.rs") ;;
    busy_index) globs=("common/src/busy_index.rs" "common/src/busy_index/*.rs") ;;
    *)
      echo "error: unknown module '$m' (sim, share, admission, policy, busy_index, node_model)" >&2
      exit 2
      ;;
  esac
  args=()
  for g in "${globs[@]}"; do
    # Fail loudly when the tree has moved under the script: a glob that
    # matches no file would make cargo-mutants test nothing and report 0.
    if ! compgen -G "$src/$g" >/dev/null; then
      echo "error: common::$m: '$g' matches no file (was the module moved? update scripts/mutants.sh)" >&2
      exit 1
    fi
    args+=(--file "$g")
  done
  n=$(cd "$src" && cargo mutants -p libratory-common "${args[@]}" --list "${extra[@]}" | wc -l)
  if [ "$n" -eq 0 ]; then
    echo "error: common::$m: cargo-mutants finds no mutant in ${globs[*]}" >&2
    exit 1
  fi
  mkdir -p "$out/$m"
  echo "== $n mutants of common::$m ($(date -u +%H:%M:%S) UTC) ${extra[*]}"
  start=$(date +%s)
  # Exit status 2 means "some mutants missed", 3 "some timed out":
  # reported, not fatal here.
  rc=0
  # --tests: the unit, property and paper-findings tests, not the doc
  # tests: libratory-common has none, and rustdoc's pass over the crate
  # to find them is a second compilation per mutant.
  (cd "$src" && cargo mutants -p libratory-common "${args[@]}" --in-place \
    --cargo-test-arg=--tests \
    --timeout "$timeout" --build-timeout 900 --baseline skip \
    --output "$out/$m" --no-shuffle "${extra[@]}") || rc=$?
  took=$(($(date +%s) - start))
  case $rc in 0 | 2 | 3) ;; *)
    echo "error: cargo-mutants failed on common::$m (exit $rc)" >&2
    exit "$rc"
    ;;
  esac
  d="$out/$m/mutants.out"
  printf '== common::%s: %d caught, %d missed, %d timeout, %d unviable in %d s (exit %d)\n' \
    "$m" "$(wc -l <"$d/caught.txt")" "$(wc -l <"$d/missed.txt")" \
    "$(wc -l <"$d/timeout.txt")" "$(wc -l <"$d/unviable.txt")" "$took" "$rc"
done
rm -f "$marker"

# Missed mutants not reviewed fail the run. A line of missed.txt is
# FILE:LINE:COL: DESCRIPTION; the survivors file holds either
# FILE: DESCRIPTION (every such mutant of the function) or, for one
# mutant, FILE: DESCRIPTION | COL | SOURCE LINE (the line's text, leading
# blanks off): lines move as code is added above them, the text and the
# column do not, and a change to the line unlists the mutant.
survivors=$root/scripts/mutants-survivors.txt
new=()
for m in "${modules[@]}"; do
  while IFS= read -r line; do
    [[ -n $line ]] || continue
    IFS=: read -r file lineno col _ <<<"$line"
    desc=${line#"$file:$lineno:$col: "}
    text=$(sed -n "${lineno}p" "$src/$file" | sed -E 's/^[[:space:]]+//')
    grep -qxF "$file: $desc" "$survivors" ||
      grep -qxF "$file: $desc | $col | $text" "$survivors" ||
      new+=("$line")
  done <"$out/$m/mutants.out/missed.txt"
done
if ((${#new[@]})); then
  echo "== ${#new[@]} missed mutant(s) not among the reviewed survivors ($survivors):"
  printf '  %s\n' "${new[@]}"
  echo "each ran at PROPTEST_CASES=$PROPTEST_CASES: first rerun them at the suite's full counts (scripts/mutants-recheck.py $out/<module>/mutants.out/missed.txt);"
  echo "kill each still missed with a test, or, when it cannot change behaviour, add it to $survivors with the reason in docs/testing.md"
  exit 1
fi
echo "== every missed mutant is a reviewed survivor"
