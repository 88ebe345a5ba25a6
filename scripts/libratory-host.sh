#!/usr/bin/env bash
# The launcher's agent on a node host. scripts/launch.sh copies it to
# WORK/bin/libratory-host on every host and runs it there (over ssh, or
# directly on this machine) as
#
#   bash WORK/bin/libratory-host WORK COMMAND [ARGS...]
#
# COMMAND:
#   start LABEL BINARY ARGS...  start one node process, detached (setsid,
#                               nohup): log in WORK/logs/node-LABEL.log, pid in
#                               WORK/run/LABEL.pid, exit code in
#                               WORK/run/LABEL.exit when it ends, command
#                               line in WORK/run/LABEL.cmd
#   fault LABEL ACT [ARG]       the fault injector's acts on one node process
#                               (libratory inject): `signal KILL|STOP|CONT`;
#                               `restart` (the same command line, logging
#                               on); `control LINE` (LINE into its
#                               --fault-control file, then SIGUSR1);
#                               `exited` (its exit code once it ended)
#   status                      one line per node process: label, state, pid,
#                               last log line
#   running                     how many node processes are alive
#   stop GRACE_S                SIGTERM the live ones, SIGKILL what is left
#                               after GRACE_S seconds
#   clean                       forget the previous run (logs, pid files);
#                               refuses while node processes are alive
#   check NAME BINARY           pre-flight facts, one key=value per line
#
# It only ever signals pids it recorded, and only while /proc says they
# still run a libratory-node (a recycled pid is left alone).
set -euo pipefail

work=${1:?usage: libratory-host WORK COMMAND [ARGS...]}
cmd=${2:?usage: libratory-host WORK COMMAND [ARGS...]}
shift 2
mkdir -p "$work/logs" "$work/run"
# Paths the launcher passes (WORK, the binary, the node's --certs and
# --fault-control) may be relative: to the ssh user's home, or to the
# launcher's directory on its own machine, where this agent is started.
# The agent keeps its books in WORK; node processes run where it was
# started, so their relative paths mean what the launcher meant.
origin=$PWD
cd "$work"
work=$PWD

# from_origin PATH: PATH as the launcher meant it.
from_origin() {
  if [[ $1 == /* ]]; then printf '%s' "$1"; else printf '%s/%s' "$origin" "$1"; fi
}

# Is pid $1 alive and node process $2's (its command line starts with
# the binary recorded in run/LABEL.cmd, whatever it is named; without a
# record, a libratory-node)?
alive() {
  local pid=$1 label=${2:-} cmdline binary=libratory-node
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  [[ -r /proc/$pid/cmdline ]] || return 1
  # A zombie has an empty command line: it is not running.
  cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
  if [[ -n $label && -s run/$label.cmd ]]; then
    IFS= read -r -d '' binary <"run/$label.cmd" || true
  fi
  [[ -n $cmdline && $cmdline == *"$binary"* ]]
}

labels() {
  local f
  for f in run/*.pid; do
    [[ -e $f ]] || continue
    f=${f#run/}
    echo "${f%.pid}"
  done
}

live_pids() {
  local l pid
  for l in $(labels); do
    pid=$(cat "run/$l.pid" 2>/dev/null || true)
    if alive "$pid" "$l"; then echo "$pid"; fi
  done
}

# start_one LABEL APPEND BINARY ARGS...: starts one node process detached;
# APPEND=1 logs on after the earlier lines (a restart).
start_one() {
  local label=$1 append=$2 binary=$3
  shift 3
  [[ -x $(from_origin "$binary") ]] || { echo "libratory-host: $binary is not an executable on $(hostname)" >&2; exit 1; }
  rm -f "run/$label.pid" "run/$label.exit"
  # The command line, NUL-separated, for a restart after a crash fault.
  printf '%s\0' "$binary" "$@" >"run/$label.cmd"
  ((append)) || : >"logs/node-$label.log"
  # The wrapper records the node's pid and, when it ends, its exit code.
  # shellcheck disable=SC2016  # expanded by the wrapper's bash
  # Started from where the agent was (the subshell keeps the agent in
  # WORK); only the wrapper goes to the background, with every descriptor
  # redirected, so that ssh does not wait for the node process to end.
  (
    cd "$origin"
    setsid nohup bash -c '"$@" & echo $! >"$0.pid"; wait $!; echo $? >"$0.exit"' \
      "$work/run/$label" "$binary" "$@" >>"$work/logs/node-$label.log" 2>&1 </dev/null &
  )
  for _ in $(seq 50); do
    [[ -s run/$label.pid ]] && break
    sleep 0.1
  done
  [[ -s run/$label.pid ]] || { echo "libratory-host: $label did not start (see $work/logs/node-$label.log)" >&2; exit 1; }
}

case $cmd in
  start)
    label=${1:?start LABEL BINARY ARGS...}
    binary=${2:?start LABEL BINARY ARGS...}
    shift 2
    start_one "$label" 0 "$binary" "$@"
    echo "started $label pid $(cat "run/$label.pid")"
    ;;
  fault)
    label=${1:?fault LABEL ACT [ARG]}
    act=${2:?fault LABEL ACT [ARG]}
    pid=$(cat "run/$label.pid" 2>/dev/null || true)
    case $act in
      signal)
        sig=${3:?fault LABEL signal KILL|STOP|CONT}
        [[ $sig =~ ^(KILL|STOP|CONT)$ ]] || { echo "libratory-host: signal $sig is not one the injector sends" >&2; exit 2; }
        alive "$pid" "$label" || { echo "libratory-host: node process $label (pid ${pid:-none}) is not running on $(hostname)" >&2; exit 1; }
        kill "-$sig" "$pid"
        if [[ $sig == KILL ]]; then
          # Gone, and its exit code written, before the act is reported.
          for _ in $(seq 100); do
            [[ -s run/$label.exit ]] && break
            sleep 0.05
          done
        fi
        echo "SIG$sig to node process $label (pid $pid)"
        ;;
      restart)
        [[ -s run/$label.cmd ]] || { echo "libratory-host: no command line of $label to start again" >&2; exit 1; }
        if alive "$pid" "$label"; then
          echo "libratory-host: node process $label still runs (pid $pid): not started twice" >&2
          exit 1
        fi
        mapfile -d '' -t line <"run/$label.cmd"
        # The control file is the old process's: the new one reads it from
        # its first line.
        for ((k = 0; k + 1 < ${#line[@]}; k++)); do
          [[ ${line[$k]} == --fault-control ]] && : >"$(from_origin "${line[$((k + 1))]}")"
        done
        start_one "$label" 1 "${line[@]}"
        echo "node process $label started again (pid $(cat "run/$label.pid"))"
        ;;
      control)
        text=${3:?fault LABEL control LINE}
        mapfile -d '' -t line <"run/$label.cmd" 2>/dev/null || line=()
        file=''
        for ((k = 0; k + 1 < ${#line[@]}; k++)); do
          [[ ${line[$k]} == --fault-control ]] && file=$(from_origin "${line[$((k + 1))]}")
        done
        [[ -n $file ]] || { echo "libratory-host: node process $label has no --fault-control file" >&2; exit 1; }
        alive "$pid" "$label" || { echo "libratory-host: node process $label (pid ${pid:-none}) is not running on $(hostname)" >&2; exit 1; }
        # Appended: two faults of one process at an instant may meet one
        # signal (the node reads every line it has not read).
        printf '%s\n' "$text" >>"$file"
        kill -USR1 "$pid"
        echo "\`$text\` (real seconds) to node process $label's link (pid $pid)"
        ;;
      exited)
        if ! alive "$pid" "$label" && [[ -s run/$label.exit ]]; then cat "run/$label.exit"; fi
        ;;
      *)
        echo "libratory-host: unknown fault act $act" >&2
        exit 2
        ;;
    esac
    ;;
  status)
    for l in $(labels); do
      pid=$(cat "run/$l.pid" 2>/dev/null || true)
      last=$(tail -n 1 "logs/node-$l.log" 2>/dev/null || true)
      if alive "$pid" "$l"; then
        state=running
      elif [[ -s run/$l.exit ]]; then
        state="exited $(cat "run/$l.exit")"
      else
        state=gone
      fi
      printf '%s %s pid %s | %s\n' "$l" "$state" "$pid" "${last:0:160}"
    done
    ;;
  running)
    live_pids | wc -l
    ;;
  stop)
    grace=${1:-10}
    mapfile -t pids < <(live_pids)
    [[ ${#pids[@]} -eq 0 ]] && { echo "nothing running"; exit 0; }
    kill -TERM "${pids[@]}" 2>/dev/null || true
    end=$((SECONDS + ${grace%.*}))
    while ((SECONDS < end)) && [[ -n $(live_pids) ]]; do sleep 0.2; done
    mapfile -t left < <(live_pids)
    if [[ ${#left[@]} -gt 0 ]]; then
      kill -KILL "${left[@]}" 2>/dev/null || true
      echo "stopped ${#pids[@]} node process(es); killed ${#left[@]} after ${grace}s: ${left[*]}"
    else
      echo "stopped ${#pids[@]} node process(es)"
    fi
    ;;
  clean)
    if [[ -n $(live_pids) ]]; then
      echo "libratory-host: node processes still running in $work: $(live_pids | tr '\n' ' ')" >&2
      exit 1
    fi
    rm -rf logs run
    mkdir -p logs run
    ;;
  check)
    name=${1:?check NAME BINARY}
    binary=${2:?check NAME BINARY}
    echo "host=$(hostname)"
    if [[ -x $(from_origin "$binary") ]]; then
      echo "version=$("$(from_origin "$binary")" --version 2>&1 | head -n 1)"
    else
      echo "version="
    fi
    missing=()
    for f in ca.pem "node-$name.pem" "node-$name.key"; do
      [[ -r certs/$f ]] || missing+=("$f")
    done
    echo "certs_missing=${missing[*]}"
    if [[ -r certs/ca.pem ]]; then
      echo "ca_sha256=$(sha256sum certs/ca.pem | cut -d' ' -f1)"
    else
      echo "ca_sha256="
    fi
    echo "running=$(live_pids | wc -l)"
    ;;
  *)
    echo "libratory-host: unknown command $cmd" >&2
    exit 2
    ;;
esac
