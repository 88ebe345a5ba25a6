#!/usr/bin/env bash
# Fingerprint of the simulator's results: runs `libratory simulate` for every
# preset (`libratory presets`) with its default policies and its fixed default
# seed, plus one run of every registered policy (`libratory policies`) on the
# small synthetic batch, and prints one sha256 per result file. A refactoring
# that must not change behaviour is checked by
#
#   scripts/sim-fingerprint.sh > before.txt   # on the base commit
#   scripts/sim-fingerprint.sh > after.txt    # on the branch
#   diff before.txt after.txt
#
# Every result file is hashed byte for byte except two, from which only what
# legitimately varies between two runs of the same code is removed first:
# - manifest.json: started_unix, started_utc, wall_seconds (clock),
#   command_line (holds the temporary --out path), working_dir, binary
#   (version, git commit, build profile), host (machine facts), trace.path
#   (the trace's bytes and sha256 stay);
# - log.txt: the seconds spent reading the trace, the per-policy simulation
#   time and jobs/s rate (event counts and everything else stay), the
#   output directory of the closing "results in" line, and the "heap:" line
#   (how the allocator was set up on this machine).
#
# Usage: scripts/sim-fingerprint.sh [path/to/libratory]
# (default: builds and uses target/debug/libratory of this checkout, honouring
# CARGO_TARGET_DIR). Needs jq and the SDSC SP2 trace in ../shared/traces.
set -euo pipefail
cd "$(dirname "$0")/.."

need_tool() {
  command -v "$1" >/dev/null || { echo "error: $0 needs $1" >&2; exit 1; }
}
need_tool jq
need_tool sha256sum

trace=../shared/traces/SDSC-SP2-1998-4.2-cln.swf.gz
if [ ! -f "$trace" ]; then
  echo "error: the SDSC SP2 trace is expected at $(pwd)/$trace" >&2
  exit 1
fi

if [ $# -ge 1 ]; then
  bin=$1
else
  cargo build --quiet -p libratory-manager --bin libratory >&2
  bin=${CARGO_TARGET_DIR:-target}/debug/libratory
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# name|arguments (word-split on purpose)
runs=()
while read -r preset _; do
  runs+=("$preset|--preset $preset")
done < <("$bin" presets)
# batsim needs an external scheduler process: not part of the fingerprint.
all=$("$bin" policies | awk '{print $1}' | grep -vx batsim | paste -sd, -)
runs+=("all-policies|--preset libra --set jobs=200 --set nodes=20 --policies $all")

for run in "${runs[@]}"; do
  name=${run%%|*}
  args=${run#*|}
  out=$work/$name
  # A preset that generates its workload refuses --trace: give the trace
  # only to the presets that read one (`libratory presets NAME` says).
  preset=$(awk '{for (i = 1; i < NF; i++) if ($i == "--preset") print $(i + 1)}' <<<"$args")
  trace_args=()
  if [ "$("$bin" presets "$preset" | jq -r .params.source)" = trace ]; then
    trace_args=(--trace "$trace")
  fi
  # shellcheck disable=SC2086 # the arguments are meant to be split
  if ! "$bin" simulate "${trace_args[@]}" $args --out "$out" >"$work/$name.stdout" 2>&1; then
    echo "error: libratory simulate $args failed:" >&2
    cat "$work/$name.stdout" >&2
    exit 1
  fi
  jq -S 'del(.started_unix, .started_utc, .wall_seconds, .command_line,
             .working_dir, .binary, .host)
         | if .trace then .trace |= del(.path) else . end' \
    "$out/manifest.json" >"$out/manifest.json.stable"
  sed -E -e 's/\([0-9.]+ s to read.*\), ([0-9]+ nodes,)/(T s to read), \1/' \
    -e 's/^([a-z0-9-]+ +)[0-9.]+ s, [0-9]+ jobs\/s simulated/\1T s, R jobs\/s simulated/' \
    -e 's/^results in [^ ]+ /results in OUT /' \
    -e '/^heap: /d' \
    "$out/log.txt" >"$out/log.txt.stable"
  rm "$out/manifest.json" "$out/log.txt"
  (cd "$work" && find "$name" -type f | LC_ALL=C sort | xargs sha256sum)
done
