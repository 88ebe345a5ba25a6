#!/usr/bin/env bash
# Runs `libratory simulate` on every preset, and on the 4531-job EASY run
# of the output benchmark, with two binaries, and checks that every result
# file is byte-identical. manifest.json is compared with the fields that
# carry the time of the run (started_unix, started_utc, wall_seconds) and
# the binary's identity removed; log.txt with the timing lines masked.
# Used to show that a change to the writers changes no output.
#
#   scripts/same-outputs.sh OLD_BINARY NEW_BINARY [WORK_DIR]
#
# Exits non-zero, naming the file, at the first difference.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -lt 2 ]; then
  echo "usage: $0 OLD_BINARY NEW_BINARY [WORK_DIR]" >&2
  exit 2
fi
old=$(realpath "$1")
new=$(realpath "$2")
work=${3:-$(mktemp -d)}
mkdir -p "$work"
command -v python3 >/dev/null || { echo "error: python3 is needed to compare manifests" >&2; exit 1; }

# name|arguments
runs=(
  "libra|--preset libra"
  "libra-plus-dollar|--preset libra-plus-dollar"
  "libra-risk|--preset libra-risk"
  "libra-sla|--preset libra-sla"
  "vqops|--preset vqops"
  "easy-4531|--preset libra-plus-dollar --policies fcfs-bf,sjf-bf,edf-bf --set drop_never_ran=true --set inaccuracy_form=toward-trace-at-least-actual --set inaccuracy=1 --set arrival_delay_factor=1 --set deadline_basis=estimate --set deadline_estimate_factor=1e9"
)

strip_manifest() {
  python3 - "$1" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
for k in ("started_unix", "started_utc", "wall_seconds", "command_line", "binary"):
    m.pop(k, None)
print(json.dumps(m, sort_keys=True, indent=1))
PY
}

mask_log() {
  # The read time, and how the trace cache was used (manager/src/lab/trace_cache.rs).
  sed -E -e 's/\([0-9.]+ s to read.*\), ([0-9]+ nodes,)/(X s to read), \1/' \
    -e 's/ [0-9.]+ s, [0-9]+ jobs\/s simulated/ X s, X jobs\/s simulated/' \
    -e 's#results in [^ ]+#results in DIR#' "$1"
}

status=0
for entry in "${runs[@]}"; do
  name=${entry%%|*}
  read -r -a args <<<"${entry#*|}"
  for which in old new; do
    bin=$old
    [ "$which" = new ] && bin=$new
    rm -rf "${work:?}/$which-$name"
    "$bin" simulate "${args[@]}" --out "$work/$which-$name" >/dev/null
  done
  a=$work/old-$name
  b=$work/new-$name
  if ! diff <(cd "$a" && ls) <(cd "$b" && ls) >/dev/null; then
    echo "$name: the two runs wrote different sets of files" >&2
    status=1
    continue
  fi
  for f in "$a"/*; do
    base=$(basename "$f")
    case $base in
      manifest.json) same=$(cmp -s <(strip_manifest "$f") <(strip_manifest "$b/$base") && echo y || echo n) ;;
      log.txt) same=$(cmp -s <(mask_log "$f") <(mask_log "$b/$base") && echo y || echo n) ;;
      *) same=$(cmp -s "$f" "$b/$base" && echo y || echo n) ;;
    esac
    if [ "$same" = y ]; then
      echo "same  $(sha256sum "$b/$base" | cut -c1-16)  $name/$base"
    else
      echo "DIFFERENT  $name/$base" >&2
      status=1
    fi
  done
done
[ $status = 0 ] && echo "every result file is identical (work dir $work)"
exit $status
