#!/usr/bin/env bash
# One command from a cluster configuration to a finished run:
#
#   scripts/launch.sh CONFIG [--out DIR] [--no-build] [--deploy-only]
#                            [--faults FILE]
#
#  1. builds once (cargo build --release; skipped with --no-build or when
#     LIBRATORY_BIN_DIR names prebuilt binaries);
#  2. makes the cluster's certificates if there are none (a CA and one per
#     host), or signs the ones missing;
#  3. checks every host is reachable (scripts/preflight.sh --reach-only);
#  4. copies libratory-node, the agent (scripts/libratory-host.sh) and each
#     host's certificate and ca.pem into the host's work directory (rsync
#     or scp over ssh; cp for a host without ssh);
#  5. runs the full pre-flight (versions, certificates, clocks, the
#     manager's UDP port from every host);
#  6. starts the manager here (libratory run), then every node process on
#     every host (detached, logging to WORK/logs, pid files in WORK/run);
#  7. shows the manager's progress and, every 10 s, how many node
#     processes run on each host;
#  8. when the manager ends (or on Ctrl-C, or any error) stops whatever
#     still runs on every host, and collects the results and every host's
#     logs into one run directory:
#
#     DIR/summary.json, jobs-*.csv, histograms/   the manager's results
#     DIR/logs/manager.log                        what the manager printed
#     DIR/hosts/NAME/logs/node-LABEL.log          each node process's log
#     DIR/hosts/NAME/run/LABEL.exit               its exit code
#     DIR/hosts/NAME/status.txt                   the agent's last word
#
# DIR defaults to [output] dir / a time stamp. Hosts without `ssh` run on
# this machine, so a one-host configuration is a local multi-process run
# (scripts/local.sh). --deploy-only stops after step 5.
#
# --faults FILE (default: the configuration's [workload] faults) runs a
# fault scenario (docs/faults.md): the manager gets it (manifest, manager
# crashes), every node process a --fault-control file, and
# `libratory inject` executes the node faults through each host's agent
# over ssh, reporting each to the manager (its log: DIR/logs/inject.log).
# Exit code: the manager's; 3 when it succeeded but a node process did not
# exit cleanly.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"

usage() {
  echo "usage: scripts/launch.sh CONFIG [--out DIR] [--no-build] [--deploy-only] [--faults FILE]" >&2
  exit 2
}
config=''
out=''
build=1
deploy_only=0
faults=''
while [[ $# -gt 0 ]]; do
  case $1 in
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    --no-build) build=0; shift ;;
    --deploy-only) deploy_only=1; shift ;;
    --faults) faults=${2:?--faults needs a scenario file}; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) usage ;;
    *) [[ -z $config ]] || usage; config=$1; shift ;;
  esac
done
[[ -n $config ]] || usage
[[ -n ${LIBRATORY_BIN_DIR:-} ]] && build=0

# ---- 1. build once
if ((build)); then
  lbr_say "building: cargo build --release"
  (cd "$lbr_root" && cargo build --release --workspace --bins)
fi
lbr_load "$config"
faults=${faults:-$LBR_FAULTS}
if [[ -n $faults ]]; then
  [[ -f $faults ]] || lbr_die "--faults $faults: no such fault scenario"
  faults=$(cd "$(dirname "$faults")" && pwd)/$(basename "$faults")
fi

if [[ -s $lbr_state/manager.pid ]] && kill -0 "$(cat "$lbr_state/manager.pid")" 2>/dev/null; then
  lbr_die "$config is already running (manager pid $(cat "$lbr_state/manager.pid")): scripts/status.sh $config, scripts/stop.sh $config"
fi
run=${out:-$LBR_OUTPUT_DIR/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$run/logs" "$run/hosts"
run=$(cd "$run" && pwd)
echo "$run" >"$lbr_state/run-dir"
lbr_say "launch of $LBR_CONFIG: $LBR_NHOSTS host(s), $LBR_TOTAL_NODES emulated nodes; run directory $run"

# ---- 2. certificates
lbr_ensure_certs
if [[ -n $faults && ! -e $LBR_CERTS/operator.pem ]]; then
  # The injector reports the faults it applies with this identity.
  [[ -e $LBR_CERTS/ca.key ]] ||
    lbr_die "--faults: no operator certificate in $LBR_CERTS and no ca.key there to sign one"
  "$lbr_bin_dir/libratory" certs --out "$LBR_CERTS" --add >/dev/null
fi

trap lbr_close EXIT

# ---- 3. reachable?
"$lbr_root/scripts/preflight.sh" "$config" --reach-only ||
  lbr_die "pre-flight: some host is not reachable (above); nothing was started"

# ---- 4. deploy (every host at once)
stage="$lbr_state/stage"
rm -rf "$stage"
mkdir -p "$stage/bin"
cp "$lbr_bin_dir/libratory-node" "$stage/bin/libratory-node"
cp "$lbr_root/scripts/libratory-host.sh" "$stage/bin/libratory-host"
deploy() {
  local i=$1 where bins certs f
  local -n work="LBR_WORK_$i" copy="LBR_COPY_BIN_$i" files="LBR_CERT_FILES_$i"
  where=$(lbr_where "$i")
  bins=("$stage/bin/libratory-host")
  ((copy)) && bins+=("$stage/bin/libratory-node")
  certs=()
  for f in "${files[@]}"; do certs+=("$LBR_CERTS/$f"); done
  lbr_put "$i" "$work/bin" "${bins[@]}" || lbr_die "$where: copying the binaries to $work/bin failed"
  lbr_put "$i" "$work/certs" "${certs[@]}" || lbr_die "$where: copying the certificates to $work/certs failed"
  lbr_on "$i" "chmod 600 $(lbr_q "$work/certs/node-$(lbr_name "$i").key")"
  lbr_agent "$i" clean || lbr_die "$where: node processes of an earlier launch still run there: scripts/stop.sh $config"
  lbr_say "$where: copied ${#bins[@]} binaries and ${#certs[@]} certificate files to $work"
}
deployers=()
for ((i = 0; i < LBR_NHOSTS; i++)); do
  deploy "$i" >"$lbr_state/deploy-$i.log" 2>&1 &
  deployers+=($!)
done
deploy_failed=0
for ((i = 0; i < LBR_NHOSTS; i++)); do
  wait "${deployers[$i]}" || deploy_failed=1
  cat "$lbr_state/deploy-$i.log"
done
((deploy_failed == 0)) || lbr_die "deploying failed (above); nothing was started"

# ---- 5. full pre-flight
"$lbr_root/scripts/preflight.sh" "$config" ||
  lbr_die "pre-flight failed (above); nothing was started"
if ((deploy_only)); then
  lbr_say "deployed; not starting (--deploy-only)"
  exit 0
fi

# ---- 6.-8. run, watch, stop and collect
mgr=''
tailer=''
injector=''
# finish_host I: stop what still runs on host I, then fetch its logs, pid
# and exit files and the agent's last word into the run directory.
finish_host() {
  local i=$1 name
  local -n work="LBR_WORK_$i"
  name=$(lbr_name "$i")
  mkdir -p "$run/hosts/$name"
  printf '%s: %s\n' "$(lbr_where "$i")" "$(lbr_agent "$i" stop "$LBR_STOP_GRACE_S" 2>&1 | tail -n 1)"
  lbr_agent "$i" status >"$run/hosts/$name/status.txt" 2>&1 || true
  lbr_get "$i" "$work/logs" "$run/hosts/$name/logs" 2>/dev/null ||
    echo "warning: $(lbr_where "$i"): could not fetch $work/logs" >&2
  lbr_get "$i" "$work/run" "$run/hosts/$name/run" 2>/dev/null ||
    echo "warning: $(lbr_where "$i"): could not fetch $work/run" >&2
}
finished=0
stop_everything() {
  ((finished)) && return
  finished=1
  local i pids=()
  if [[ -n $mgr ]] && kill -0 "$mgr" 2>/dev/null; then
    lbr_say "stopping the manager (it writes what it has)"
    kill -INT "$mgr" 2>/dev/null || true
    for _ in $(seq 150); do kill -0 "$mgr" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$mgr" 2>/dev/null; then
      lbr_say "the manager did not stop within 15 s: killing it"
      kill -KILL "$mgr" 2>/dev/null || true
    fi
  fi
  if [[ -n $mgr ]]; then wait "$mgr" 2>/dev/null || true; fi
  if [[ -n $injector ]]; then
    kill "$injector" 2>/dev/null || true
    wait "$injector" 2>/dev/null || true
    injector=''
  fi
  # The manager's last words (its table) reach the terminal before the
  # tail stops.
  if [[ -n $tailer ]]; then
    sleep 0.3
    kill "$tailer" 2>/dev/null || true
    wait "$tailer" 2>/dev/null || true
    tailer=''
  fi
  # Every host at once: stopping waits up to stop_grace_s per host.
  for ((i = 0; i < LBR_NHOSTS; i++)); do
    finish_host "$i" >"$lbr_state/finish-$i.log" 2>&1 &
    pids+=($!)
  done
  for ((i = 0; i < LBR_NHOSTS; i++)); do
    wait "${pids[$i]}" || true
    cat "$lbr_state/finish-$i.log"
  done
  rm -f "$lbr_state/manager.pid"
}
on_exit() {
  local rc=$?
  set +e
  trap - EXIT
  # The cleanup runs to its end: a second Ctrl-C only says so, and a
  # terminal pipe gone with the first (`launch.sh | tee`) does not kill
  # it on its next line. Ctrl-\ (SIGQUIT) still quits at once.
  trap 'lbr_say "still stopping the node processes (Ctrl-\\ quits now and leaves them running)" 2>/dev/null' INT TERM HUP
  trap '' PIPE
  stop_everything
  lbr_close
  lbr_say "results and logs of every host in $run"
  exit "$rc"
}
trap on_exit EXIT
trap 'echo; lbr_say "interrupted"; exit 130' INT TERM HUP

fault_args=()
[[ -n $faults ]] && fault_args=(--faults "$faults")
"$lbr_bin_dir/libratory" run --config "$LBR_CONFIG" --out "$run" --progress-every 2 "${fault_args[@]}" \
  >"$run/logs/manager.log" 2>&1 &
mgr=$!
echo "$mgr" >"$lbr_state/manager.pid"
for _ in $(seq 200); do
  grep -q 'listening on' "$run/logs/manager.log" && break
  kill -0 "$mgr" 2>/dev/null || break
  sleep 0.1
done
if ! grep -q 'listening on' "$run/logs/manager.log"; then
  tail -n 20 "$run/logs/manager.log" >&2
  lbr_die "the manager did not start listening on $LBR_LISTEN (its log above)"
fi
lbr_say "manager pid $mgr listening on $LBR_LISTEN; starting node processes"

if [[ -n $faults ]]; then
  # Before the node processes: the replay cannot start before it watches.
  "$lbr_bin_dir/libratory" inject --config "$LBR_CONFIG" --faults "$faults" --run "$run" \
    >"$run/logs/inject.log" 2>&1 &
  injector=$!
  for _ in $(seq 600); do
    grep -q 'node fault act' "$run/logs/inject.log" && break
    kill -0 "$injector" 2>/dev/null || break
    sleep 0.1
  done
  if ! grep -q 'node fault act' "$run/logs/inject.log"; then
    cat "$run/logs/inject.log" >&2
    lbr_die "the fault injector did not start (its log above)"
  fi
  lbr_say "fault injector pid $injector: $(grep 'node fault act' "$run/logs/inject.log")"
fi

for ((i = 0; i < LBR_NHOSTS; i++)); do
  declare -n work="LBR_WORK_$i" bin="LBR_NODE_BIN_$i" labels="LBR_LABELS_$i" args="LBR_NODE_ARGS_$i"
  dial=$LBR_DIAL
  lbr_is_local "$i" && dial=$LBR_LOCAL_DIAL
  for label in "${labels[@]}"; do
    # (faults) Where the injector hands the node its link faults.
    fc=()
    [[ -n $faults ]] && fc=(--fault-control "$work/run/$label.fault")
    msg=$(lbr_agent "$i" start "$label" "$bin" --manager "$dial" --certs "$work/certs" \
      --label "$label" "${args[@]}" "${fc[@]}") || lbr_die "$(lbr_where "$i"): $label did not start"
    lbr_say "$(lbr_where "$i"): $msg"
  done
  unset -n work bin labels args
done

tail -n +1 -f "$run/logs/manager.log" &
tailer=$!
ticks=0
while kill -0 "$mgr" 2>/dev/null; do
  sleep 1
  ticks=$((ticks + 1))
  if ((ticks % 10 == 0)); then
    line=''
    for ((i = 0; i < LBR_NHOSTS; i++)); do
      declare -n labels="LBR_LABELS_$i"
      line+=" $(lbr_name "$i") $(lbr_agent "$i" running 2>/dev/null || echo '?')/${#labels[@]}"
      unset -n labels
    done
    lbr_say "node processes running:$line"
  fi
done
set +e
wait "$mgr"
rc=$?
set -e
mgr=''
sleep 0.3
kill "$tailer" 2>/dev/null || true
wait "$tailer" 2>/dev/null || true
tailer=''
lbr_say "manager exited ($rc); waiting up to ${LBR_STOP_GRACE_S}s for node processes to leave"
end=$((SECONDS + ${LBR_STOP_GRACE_S%.*}))
while ((SECONDS < end)); do
  left=0
  for ((i = 0; i < LBR_NHOSTS; i++)); do
    n=$(lbr_agent "$i" running 2>/dev/null || echo 0)
    left=$((left + n))
  done
  ((left == 0)) && break
  sleep 1
done
stop_everything
lbr_close
trap - EXIT

failed=()
for ((i = 0; i < LBR_NHOSTS; i++)); do
  declare -n labels="LBR_LABELS_$i"
  for label in "${labels[@]}"; do
    code=$(cat "$run/hosts/$(lbr_name "$i")/run/$label.exit" 2>/dev/null || echo '?')
    [[ $code == 0 ]] || failed+=("$label ($code)")
  done
  unset -n labels
done
lbr_say "results and logs of every host in $run"
if ((rc != 0)); then
  lbr_say "the manager failed (exit $rc): see $run/logs/manager.log"
  exit "$rc"
fi
if [[ ${#failed[@]} -gt 0 ]]; then
  lbr_say "node processes that did not exit cleanly: ${failed[*]} (their logs: $run/hosts/NAME/logs/)"
  exit 3
fi
[[ -f $run/summary.json ]] || lbr_die "the manager wrote no $run/summary.json"
lbr_say "done: every node process exited cleanly"
