#!/usr/bin/env bash
# What runs for a cluster configuration:
#
#   scripts/status.sh CONFIG
#
# the manager on this machine (from the last scripts/launch.sh of CONFIG),
# then per host whether it answers and each node process's state (running,
# exited CODE, gone), pid and last log line. Exit code 0 when something
# runs, 1 when nothing does.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"

config=${1:?usage: scripts/status.sh CONFIG}
lbr_load "$config"
trap lbr_close EXIT
anything=0
run=$(cat "$lbr_state/run-dir" 2>/dev/null || echo '(none yet)')
pid=$(cat "$lbr_state/manager.pid" 2>/dev/null || true)
if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
  anything=1
  echo "manager: running, pid $pid, run directory $run"
  tail -n 1 "$run/logs/manager.log" 2>/dev/null | sed 's/^/  /' || true
else
  echo "manager: not running (last run directory: $run)"
fi
for ((i = 0; i < LBR_NHOSTS; i++)); do
  declare -n work="LBR_WORK_$i"
  where=$(lbr_where "$i")
  if ! lbr_on "$i" true 2>/dev/null; then
    echo "$where: unreachable over ssh"
  elif ! lbr_on "$i" "test -f $(lbr_q "$work/bin/libratory-host")"; then
    echo "$where: nothing launched there ($work)"
  else
    n=$(lbr_agent "$i" running)
    echo "$where: $n node process(es) running in $work"
    ((n > 0)) && anything=1
    lbr_agent "$i" status | sed 's/^/  /'
  fi
  unset -n work
done
((anything))
