#!/usr/bin/env bash
# Instructions per timed decision of the `decide` bench, counted by
# callgrind: a measure of a decision's work that the host's noise does not
# move (the same binary and seed give the same count). With --cache, also
# the first-level and last-level data cache misses of valgrind's model
# cache, with a last level of 1 MiB (one core's L2 here; the real L3 and
# prefetchers hide part of what it counts: docs/benchmarks.md).
#
#   scripts/decide-instructions.sh [--cache] POLICY NODES [NODES...]
#   scripts/decide-instructions.sh libra-risk 10000 158976
#
# Each size runs alone under valgrind (the warm-up uninstrumented, ~5x
# slower than native: ~1 minute at 158,976 nodes). DECIDE_SEED and
# DECIDE_SUBMITS pass through to the bench.
set -euo pipefail
cd "$(dirname "$0")/.."

cache=()
if [[ "${1:-}" == "--cache" ]]; then
    cache=(--cache-sim=yes "--I1=32768,8,64" "--D1=32768,8,64" "--LL=1048576,16,64")
    shift
fi
if [[ $# -lt 2 ]]; then
    echo "usage: $0 [--cache] POLICY NODES [NODES...]" >&2
    exit 2
fi
policy=$1
shift
command -v valgrind >/dev/null || {
    echo "$0: valgrind is not installed (apt-get install valgrind)" >&2
    exit 1
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Cargo names the bench's executable in parentheses ("Executable
# benches/decide.rs (target/release/deps/decide-...)"), wherever
# CARGO_TARGET_DIR puts it.
if ! cargo bench -p libratory-benches --bench decide --no-run >"$tmp/build" 2>&1; then
    cat "$tmp/build" >&2
    echo "$0: the decide bench did not build" >&2
    exit 1
fi
bin=$(sed -n 's/.*Executable .*(\(.*decide-[0-9a-f]*\)).*/\1/p' "$tmp/build" | tail -1)
[[ -n "$bin" && -x "$bin" ]] || {
    cat "$tmp/build" >&2
    echo "$0: cannot find the decide bench's executable in cargo's output" >&2
    exit 1
}
for n in "$@"; do
    DECIDE_CALLGRIND=1 DECIDE_POLICIES="$policy" DECIDE_NODES="$n" \
        valgrind --tool=callgrind --instr-atstart=no --collect-atstart=no \
        '--toggle-collect=*ManagerCore>::submit' ${cache[@]+"${cache[@]}"} \
        --callgrind-out-file="$tmp/out" "$bin" --bench >"$tmp/log" 2>&1 || {
        cat "$tmp/log" >&2
        echo "$0: the run at $n nodes failed" >&2
        exit 1
    }
    timed=$(awk -v n="$n" -v p="$policy" '$1 == n && $2 == p { print $5 }' "$tmp/log")
    events=$(sed -n 's/^events: *//p' "$tmp/out" | head -1)
    counts=$(sed -n 's/^totals: *//p' "$tmp/out" | head -1)
    seed=$(sed -n 's/.*seed \([0-9]*\),.*/\1/p' "$tmp/log" | head -1)
    if [[ -z "$timed" || "$timed" == 0 || -z "$counts" ]]; then
        cat "$tmp/log" >&2
        echo "$0: no count for $policy at $n nodes" >&2
        exit 1
    fi
    printf '%s at %s nodes, seed %s, %s timed submissions; per submission:' \
        "$policy" "$n" "$seed" "$timed"
    read -r -a names <<<"$events"
    read -r -a values <<<"$counts"
    for i in "${!names[@]}"; do
        printf ' %s %s' "${names[$i]}" "$((values[i] / timed))"
    done
    echo
done
