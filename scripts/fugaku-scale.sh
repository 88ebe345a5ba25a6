#!/usr/bin/env bash
# A Fugaku-sized cluster (158,976 emulated nodes in eight node processes)
# on this machine, live, through each policy in turn; prints how long the
# nodes took to register and the memory of the manager and of the node
# processes per node, against issue 31's targets:
#   all nodes registered <= 10 s, manager <= 1 KB per node, node processes
#   <= 4 KB per idle node.
# Memory is VmRSS from /proc, read when the last node process registered
# (the replay has just started: nearly every node is idle) and the
# manager's largest over the run (sampled every second). The manager
# serves clients (--serve): when every job is over, the script shows its
# status summary (`libratory status --summary`, one small frame at any
# size) and then interrupts it, which ends the run as usual.
#
#   scripts/fugaku-scale.sh [CONFIG] [POLICY...]
#     CONFIG    default cluster-configs/fugaku-scale.toml
#     POLICY    default libra libra-plus-dollar libra-risk
#   FUGAKU_OUT=DIR   results (default runs/fugaku-scale-<UTC time>)
#   LIBRATORY_BIN=DIR  where libratory and libratory-node are (default
#                      target/release)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
config=${1:-$root/cluster-configs/fugaku-scale.toml}
[[ $# -gt 0 ]] && shift
policies=("$@")
[[ ${#policies[@]} -gt 0 ]] || policies=(libra libra-plus-dollar libra-risk)
bin=${LIBRATORY_BIN:-${CARGO_TARGET_DIR:-$root/target}/release}
[[ -x $bin/libratory && -x $bin/libratory-node ]] ||
  { echo "fugaku-scale.sh: no libratory/libratory-node in $bin (cargo build --release --workspace --bins)" >&2; exit 1; }
export PATH=$bin:$PATH
out=${FUGAKU_OUT:-$root/runs/fugaku-scale-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out"
config=$(cd "$(dirname "$config")" && pwd)/$(basename "$config")
cfg_dir=$(dirname "$config")

# The certificates the config names (relative to it), made when missing.
certs=$(sed -n 's/^certs *= *"\([^"]*\)".*/\1/p' "$config")
[[ $certs = /* ]] || certs=$cfg_dir/$certs
hosts=$(sed -n 's/^name *= *"\([^"]*\)".*/\1/p' "$config" | paste -sd, -)
[[ -f $certs/ca.pem ]] || libratory certs --out "$certs" --nodes "$hosts" >/dev/null
listen=$(sed -n 's/^listen *= *"\([^"]*\)".*/\1/p' "$config")
status() { libratory status --manager "$listen" --certs "$certs" "$@"; }

rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }

manager='' run_cfg=''
cleanup() {
  # The per-policy copy of the config, also when interrupted.
  [[ -z $run_cfg ]] || rm -f "$run_cfg"
  if [[ -n $manager ]] && kill -0 "$manager" 2>/dev/null; then
    for p in $(pgrep -P "$manager" || true); do kill "$p" 2>/dev/null || true; done
    kill "$manager" 2>/dev/null || true
  fi
}
trap cleanup EXIT INT TERM

echo "host: $(hostname), $(nproc) cores, $(uname -r); $(date -u +%FT%TZ)"
echo "config: $config; results in $out"
for policy in "${policies[@]}"; do
  # The config with this policy, beside it (so its relative paths hold).
  run_cfg=$cfg_dir/.fugaku-scale-$policy-$$.toml
  sed "s/^policy *= *\"[^\"]*\"/policy = \"$policy\"/" "$config" >"$run_cfg"
  log=$out/$policy.log
  start=$(date +%s.%N)
  libratory run --spawn-local --serve --config "$run_cfg" --out "$out/$policy" --progress-every 5 >"$log" 2>&1 &
  manager=$!
  expected='' reg_s='' node_kb='' mgr_kb_reg='' mgr_kb_max=0 nodes_n=0 jobs='' summary=''
  while kill -0 "$manager" 2>/dev/null; do
    # Every job over: the status summary, then the end of the run.
    [[ -n $jobs ]] || jobs=$(sed -n 's/^replay started: \([0-9]*\) jobs.*/\1/p' "$log" | head -1)
    if [[ -n $jobs && -z $summary ]] &&
      status --summary --json 2>/dev/null |
      jq -e --argjson n "$jobs" '.Status.summary | .submitted == $n and .open == 0 and .queued == 0' >/dev/null; then
      summary=$(status --summary 2>&1 || true)
      kill -INT "$manager"
    fi
    if [[ -z $expected ]]; then
      expected=$(sed -n 's/.*waiting for \([0-9]*\) emulated nodes.*/\1/p' "$log" 2>/dev/null | head -1 || true)
      [[ -n $expected ]] && listening=$(date +%s.%N)
    fi
    if [[ -n $expected && -z $reg_s ]] && grep -q ": $expected of $expected emulated nodes" "$log"; then
      reg_s=$(echo "$(date +%s.%N) - $listening" | bc)
      node_kb=0
      for p in $(pgrep -P "$manager" -f libratory-node || true); do
        node_kb=$((node_kb + $(rss_kb "$p")))
        nodes_n=$((nodes_n + 1))
      done
      mgr_kb_reg=$(rss_kb "$manager")
    fi
    m=$(rss_kb "$manager")
    [[ ${m:-0} -gt $mgr_kb_max ]] && mgr_kb_max=$m
    sleep 0.05
    # Sample memory every second once registered (the loop polls faster
    # only to catch the registration).
    [[ -n $reg_s ]] && sleep 0.95
  done
  wait "$manager" && rc=0 || rc=$?
  manager=
  rm -f "$run_cfg"
  end=$(date +%s.%N)
  echo
  echo "== $policy: exit $rc, $(echo "$end - $start" | bc | cut -c1-6) s in all (log: $log)"
  if [[ -z $reg_s ]]; then
    echo "   not every node registered; the log's end:"; tail -5 "$log"; continue
  fi
  awk -v n="$expected" -v reg="$reg_s" -v nkb="$node_kb" -v np="$nodes_n" \
    -v mreg="$mgr_kb_reg" -v mmax="$mgr_kb_max" 'BEGIN {
    printf "   %d nodes registered in %.2f s from the manager listening (target <= 10 s: %s)\n", n, reg, (reg <= 10 ? "met" : "missed")
    printf "   node processes: %d, %.0f MB resident in all at registration: %.2f KB per idle node (target <= 4 KB: %s)\n", np, nkb / 1024, nkb * 1024 / n / 1000, (nkb * 1024 / n <= 4000 ? "met" : "missed")
    printf "   manager: %.0f MB resident at registration, %.0f MB at most over the run: %.3f / %.3f KB per node (target <= 1 KB: %s)\n", mreg / 1024, mmax / 1024, mreg * 1024 / n / 1000, mmax * 1024 / n / 1000, (mmax * 1024 / n <= 1000 ? "met" : "missed")
  }'
  grep -E "^(policy|$policy) " "$log" | sed 's/^/   /' || true
  if [[ -n $summary ]]; then
    echo "   libratory status --summary when every job was over:"
    while IFS= read -r line; do echo "     $line"; done <<<"$summary"
  fi
done
