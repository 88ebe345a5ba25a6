#!/usr/bin/env bash
# The live web view in a real browser: a live demo run (the manager and
# two real libratory-node processes over QUIC) serves its page with
# `--http`; headless Chromium loads it and renders its DOM (the page's own
# JavaScript fetching the JSON), twice. Checks: the page shows every
# registered node (8 = 2 processes x 4) with its node process, progress and
# decisions; a later load shows different progress (it updates while the
# run goes); no file path of the run (where its keys are) is served; a
# POST is refused. Afterwards the run is stopped with SIGTERM and still
# writes its results.
#
# Needs root to install Chromium with apt when it is missing (Debian's
# `chromium`); fails (never skips) when it cannot.
set -euo pipefail
# shellcheck source=tests/launch/common.sh
source "$(dirname "$0")/../launch/common.sh"

need_root "the browser test (it installs chromium)"
need chromium:chromium curl:curl
need_bins

T=$(mktemp -d /tmp/libratory-web.XXXXXX)
demo_pid=
cleanup() {
  if [[ -n $demo_pid ]] && kill -0 "$demo_pid" 2>/dev/null; then
    kill "$demo_pid" 2>/dev/null || true
    wait "$demo_pid" 2>/dev/null || true
  fi
  rm -rf "$T"
}
trap cleanup EXIT

# 1000 jobs of the Libra paper's batch: minutes of replay, far longer than the
# checks (Chromium takes seconds per load on a busy machine); stopped early.
"$t_bin/libratory" demo --http 127.0.0.1:0 --jobs 1000 --processes 2 --nodes 4 \
  --out "$T/demo" >"$T/demo.out" 2>"$T/demo.err" &
demo_pid=$!

url=
for _ in $(seq 1 100); do
  url=$(grep -o 'live view: http://[0-9.:]*/' "$T/demo.err" | head -n 1 | cut -d' ' -f3 || true)
  [[ -n $url ]] && break
  kill -0 "$demo_pid" 2>/dev/null || fail "the demo exited early: $(cat "$T/demo.err")"
  sleep 0.2
done
[[ -n $url ]] || fail "no 'live view:' line on the demo's stderr: $(cat "$T/demo.err")"
say "live view at $url"

# dump N: the DOM Chromium renders after the page's scripts ran.
dump() {
  timeout 60 chromium --headless --no-sandbox --disable-gpu --no-first-run \
    --user-data-dir="$T/chromium" --virtual-time-budget=1500 --dump-dom "$url" \
    >"$T/dom$1.html" 2>"$T/chromium$1.log" ||
    fail "chromium --dump-dom failed: $(tail -n 5 "$T/chromium$1.log")"
}
progress_of() {
  grep -o '<p id="progress">[^<]*</p>' "$T/dom$1.html" || true
}

# First load once every node has registered and the replay runs.
ok=0
for _ in $(seq 1 40); do
  dump 1
  if progress_of 1 | grep -q 'nodes 8 / 8' && grep -q 'replaying' "$T/dom1.html"; then
    ok=1
    break
  fi
  sleep 0.5
done
((ok)) || fail "the page never showed 8 of 8 nodes replaying; last DOM: $(head -c 2000 "$T/dom1.html")"
nodes=$(grep -o '<div class="node" data-node="[0-9]*"' "$T/dom1.html" | sort -u | wc -l)
[[ $nodes == 8 ]] || fail "the page shows $nodes node cards, expected 8"
for n in 0 1 2 3 4 5 6 7; do
  grep -q "data-node=\"$n\"" "$T/dom1.html" || fail "node $n missing from the page"
done
for h in local-0 local-1; do
  grep -q "$h" "$T/dom1.html" || fail "node process $h missing from the page"
done
grep -q '<td>policy_compute_us</td>' "$T/dom1.html" || fail "no latency table on the page"
grep -Eq '<tr class="(accept|reject)">' "$T/dom1.html" || fail "no decision on the page"
first=$(progress_of 1)
say "first load: $first"

# A later load shows other progress.
changed=0
for _ in $(seq 1 30); do
  sleep 1
  dump 2
  second=$(progress_of 2)
  if [[ -n $second && $second != "$first" ]]; then
    changed=1
    break
  fi
done
((changed)) || fail "the page did not change in 30 s: $first"
say "later load: $second"
chromium --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$T/chromium" \
  --window-size=1280,1000 --virtual-time-budget=1500 --screenshot="$T/live.png" "$url" \
  >/dev/null 2>&1 || fail "chromium --screenshot failed"
[[ -s $T/live.png ]] || fail "no screenshot"

# Read-only, and nothing of the run's files (certificates, keys) is served:
# no endpoint shows a path of the run or a PEM block, and paths that try
# to leave the endpoint list (traversal, the certificates' own names) get
# 404.
state=$(curl -sf "${url}api/state") || fail "GET /api/state failed"
[[ $state == *'"nodes":'* ]] || fail "/api/state: $state"
for ep in "" index.html api/state api/progress api/nodes api/decisions api/latency; do
  body=$(curl -sf "${url}$ep") || fail "GET /$ep failed"
  [[ -n $body ]] || fail "GET /$ep: empty"
  [[ $body != *"$T"* ]] || fail "/$ep shows a path of the run: $body"
  [[ $body != *"BEGIN "* ]] || fail "/$ep shows a PEM block"
done
for bad in ../certs/ca.key certs/ca.key ../demo/summary.json api/../../certs/ca.key "api/state/../../certs/ca.key" %2e%2e/certs/ca.key; do
  code=$(curl -s --path-as-is -o "$T/bad.out" -w '%{http_code}' "${url}$bad")
  [[ $code == 404 ]] || fail "GET /$bad answered $code, expected 404: $(head -c 200 "$T/bad.out")"
done
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "${url}api/state")
[[ $code == 405 ]] || fail "POST answered $code, expected 405"

# Stop the run: it writes its results all the same.
kill -TERM "$demo_pid"
wait "$demo_pid" || fail "the demo failed after SIGTERM: $(tail -n 20 "$T/demo.err")"
demo_pid=
[[ -s $T/demo/summary.json ]] || fail "no summary.json after SIGTERM"
say "live view: page in Chromium shows 8 nodes and updates; read-only; 7 endpoints show no path or key, 6 escaping paths get 404"
