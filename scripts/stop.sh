#!/usr/bin/env bash
# Stops everything a launch of a cluster configuration started, wherever it
# runs, and tidies the local state:
#
#   scripts/stop.sh CONFIG [--grace SECONDS]
#
# The manager on this machine gets SIGINT (it writes the results it has),
# then SIGTERM/SIGKILL; every host's node processes get SIGTERM, then
# SIGKILL after the grace period ([launch] stop_grace_s by default). Only
# processes the launch recorded are signalled. Safe to run at any time;
# a host that cannot be reached is reported and the exit code is 1.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"

config=${1:?usage: scripts/stop.sh CONFIG [--grace SECONDS]}
lbr_load "$config"
trap lbr_close EXIT
grace=$LBR_STOP_GRACE_S
[[ ${2:-} == --grace ]] && grace=${3:?--grace needs seconds}
status=0
pid=$(cat "$lbr_state/manager.pid" 2>/dev/null || true)
if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null &&
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q 'libratory run'; then
  kill -INT "$pid" || true
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid" || true
    echo "manager pid $pid: killed"
  else
    echo "manager pid $pid: stopped"
  fi
else
  echo "manager: not running"
fi
rm -f "$lbr_state/manager.pid"
for ((i = 0; i < LBR_NHOSTS; i++)); do
  declare -n work="LBR_WORK_$i"
  where=$(lbr_where "$i")
  # `test -f` says 1 for "no agent"; ssh says 255 when the link failed.
  rc=0
  lbr_on "$i" "test -f $(lbr_q "$work/bin/libratory-host")" 2>/dev/null || rc=$?
  if ((rc == 1)); then
    echo "$where: nothing launched there"
  elif ((rc != 0)); then
    echo "$where: unreachable over ssh: its node processes (if any) still run"
    status=1
  elif out=$(lbr_agent "$i" stop "$grace" 2>&1); then
    echo "$where: $(tail -n 1 <<<"$out")"
  else
    # The link dropped, or the agent failed: the processes may still run.
    echo "$where: stopping failed: ${out:-ssh exited without a word}: its node processes (if any) may still run"
    status=1
  fi
  unset -n work
done
exit "$status"
