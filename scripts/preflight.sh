#!/usr/bin/env bash
# Pre-flight checks of a cluster configuration, before a run:
#
#   scripts/preflight.sh CONFIG [--reach-only]
#
# - this machine has the binaries and the certificates (CA, manager, one per
#   host);
# - every host answers over ssh (without a password) and has bash;
# - every host's clock is within [launch] max_clock_skew_ms of this one's
#   (measured over one ssh round trip; the uncertainty is printed);
# - (not with --reach-only) every host has libratory-node in the same
#   version as this machine's, its certificate and this cluster's ca.pem in
#   its work directory and no key but its own (`libratory-node keys`: not
#   the CA's, the client's or another node's), no node processes of an
#   earlier launch, and reaches
#   the manager's UDP port: a `libratory probe-server` on the manager's
#   address answers each host's `libratory-node probe`, a full QUIC and
#   mutual-TLS handshake with the host's certificate.
#
# scripts/launch.sh runs it with --reach-only before copying anything and
# in full after. Each problem names the host and what to do; the exit code
# is 1 when there is any.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "$0")/lib.sh"

config=${1:?usage: scripts/preflight.sh CONFIG [--reach-only]}
reach_only=0
[[ ${2:-} == --reach-only ]] && reach_only=1
lbr_load "$config"
# The probe server and the hosts' probes run in the background, where a
# non-interactive shell leaves SIGINT ignored: a Ctrl-C would leave them
# behind (the server holding the manager's port for its whole --for-s).
server=''
probers=()
preflight_close() {
  local p
  if [[ -n $server ]]; then kill "$server" 2>/dev/null || true; fi
  # A prober is a subshell running ssh (or the local probe): its child
  # first, then it.
  for p in "${probers[@]}"; do
    pkill -P "$p" 2>/dev/null || true
    kill "$p" 2>/dev/null || true
  done
  lbr_close
}
trap preflight_close EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

problems=0
ok() { printf '  ok    %s\n' "$*"; }
bad() {
  printf '  FAIL  %s\n' "$*"
  problems=$((problems + 1))
}

echo "preflight: $LBR_CONFIG ($LBR_NHOSTS host(s), $LBR_TOTAL_NODES emulated nodes)"

# ---- this machine
for b in libratory libratory-node; do
  if [[ -x $lbr_bin_dir/$b ]]; then
    ok "this machine: $lbr_bin_dir/$b"
  else
    bad "this machine: $lbr_bin_dir/$b missing: run cargo build --release (or set LIBRATORY_BIN_DIR)"
  fi
done
local_version=$("$lbr_bin_dir/libratory-node" --version 2>/dev/null || true)
missing=()
for f in ca.pem manager.pem manager.key; do
  [[ -r $LBR_CERTS/$f ]] || missing+=("$f")
done
for n in "${LBR_HOSTS[@]}"; do
  for f in "node-$n.pem" "node-$n.key"; do
    [[ -r $LBR_CERTS/$f ]] || missing+=("$f")
  done
done
if [[ ${#missing[@]} -eq 0 ]]; then
  ok "this machine: certificates in $LBR_CERTS"
else
  bad "this machine: ${missing[*]} missing in $LBR_CERTS: scripts/launch.sh makes them, or run: $lbr_bin_dir/libratory certs --out $LBR_CERTS --nodes $LBR_CERT_NAMES (add --add to sign more with an existing CA)"
fi
local_ca=''
[[ -r $LBR_CERTS/ca.pem ]] && local_ca=$(sha256sum "$LBR_CERTS/ca.pem" | cut -d' ' -f1)

# now_us: this machine's clock in microseconds.
now_us() {
  local t=$EPOCHREALTIME
  echo $((10#${t/[.,]/}))
}

# clock_check I: the host's clock against ours over one ssh round trip.
# The host prints "ready" once the session is up; we note our time, ask for
# its time, and note ours again when the answer arrives: the host read its
# clock within that interval.
clock_check() {
  local i=$1 line t0 t1 remote skew half
  local -n target="LBR_TARGET_$i"
  coproc CLOCK { "$lbr_state/ssh-$i" "$target" 'echo ready; read -r _; date +%s%N' 2>/dev/null; }
  # bash forgets CLOCK_PID once the coprocess ends.
  local cpid=$CLOCK_PID
  if ! read -r -t 15 line <&"${CLOCK[0]}" || [[ $line != ready ]]; then
    bad "$(lbr_where "$i"): could not read its clock over ssh"
    return
  fi
  t0=$(now_us)
  echo >&"${CLOCK[1]}"
  read -r -t 15 remote <&"${CLOCK[0]}" || remote=''
  t1=$(now_us)
  wait "$cpid" 2>/dev/null || true
  if [[ ! $remote =~ ^[0-9]{16,}$ ]]; then
    bad "$(lbr_where "$i"): its date +%s%N printed '$remote' (GNU date needed)"
    return
  fi
  remote=$((remote / 1000))
  skew=$((remote - (t0 + t1) / 2))
  half=$(((t1 - t0 + 1) / 2))
  local abs=${skew#-} msg
  msg=$(printf '%s: clock %s%d.%03d ms from this machine (+-%d.%03d ms)' "$(lbr_where "$i")" \
    "$([[ $skew -lt 0 ]] && echo - || echo +)" $((abs / 1000)) $((abs % 1000)) $((half / 1000)) $((half % 1000)))
  # The bound, in microseconds (max_clock_skew_ms may be fractional).
  local bound
  bound=$(awk -v ms="$LBR_MAX_SKEW_MS" 'BEGIN { printf "%d", ms * 1000 }')
  if ((abs > bound)); then
    bad "$msg: more than max_clock_skew_ms = $LBR_MAX_SKEW_MS; synchronise it (chrony/NTP: chronyc tracking, timedatectl) or raise [launch] max_clock_skew_ms"
  else
    ok "$msg"
  fi
}

# ---- every host: ssh, bash, clock
reachable=()
for ((i = 0; i < LBR_NHOSTS; i++)); do
  where=$(lbr_where "$i")
  if lbr_is_local "$i"; then
    ok "$where: no ssh needed"
    reachable+=("$i")
    continue
  fi
  t0=$(now_us)
  if err=$(lbr_on "$i" 'command -v bash >/dev/null || { echo "bash not found"; exit 3; }' 2>&1); then
    t1=$(now_us)
    ok "$where: ssh answers ($(((t1 - t0) / 1000)) ms)"
    reachable+=("$i")
    clock_check "$i"
  else
    rc=$?
    err=$(printf '%s' "$err" | tail -n 1)
    if [[ $rc == 3 ]]; then
      bad "$where: bash not found on the host: install bash there"
    else
      declare -n args="LBR_SSH_ARGS_$i" target="LBR_TARGET_$i"
      bad "$where: ssh failed (exit $rc: ${err:-no message}): check that the host is up, its sshd port, and that this logs in with a key, no password: $(lbr_q ssh "${args[@]}" "$target" true) (docs/launching.md, 'ssh keys')"
      unset -n args target
    fi
  fi
done

if ((reach_only)); then
  echo "preflight (reach only): $problems problem(s)"
  ((problems == 0))
  exit
fi

# ---- every reachable host: binary version, certificates, leftovers
probe_hosts=()
for i in "${reachable[@]}"; do
  where=$(lbr_where "$i")
  declare -n bin="LBR_NODE_BIN_$i" work="LBR_WORK_$i"
  declare -A fact=()
  if facts=$(lbr_agent "$i" check "$(lbr_name "$i")" "$bin" 2>&1); then
    while IFS='=' read -r k v; do fact[$k]=$v; done <<<"$facts"
  else
    bad "$where: the agent $work/bin/libratory-host did not run (${facts##*$'\n'}): copy it with scripts/launch.sh $config --deploy-only"
    unset -n bin work
    continue
  fi
  if [[ -z ${fact[version]:-} ]]; then
    bad "$where: no libratory-node at $bin: copy it with scripts/launch.sh $config --deploy-only (or fix node_binary)"
  elif [[ ${fact[version]} != "$local_version" ]]; then
    bad "$where: $bin is '${fact[version]}', this machine has '$local_version': copy this build with scripts/launch.sh $config --deploy-only (or update the host's node_binary)"
  else
    ok "$where: $bin is $local_version"
  fi
  if [[ -n ${fact[certs_missing]:-} ]]; then
    bad "$where: ${fact[certs_missing]} missing in $work/certs: copy them from $LBR_CERTS with scripts/launch.sh $config --deploy-only"
  elif [[ ${fact[ca_sha256]:-} != "$local_ca" ]]; then
    bad "$where: $work/certs/ca.pem is not this cluster's CA ($LBR_CERTS/ca.pem): copy it with scripts/launch.sh $config --deploy-only"
  else
    ok "$where: certificate node-$(lbr_name "$i") and this cluster's ca.pem"
    probe_hosts+=("$i")
    # No key but the host's own (not the CA's, the client's, another
    # node's), asked of this build's libratory-node only.
    if [[ ${fact[version]:-} == "$local_version" ]]; then
      if out=$(lbr_on "$i" "$(lbr_q "$bin" keys --certs "$work/certs" --name "$(lbr_name "$i")")" 2>&1); then
        ok "$where: ${out##*keys: }"
      else
        bad "$where: ${out#*error: }"
      fi
    fi
  fi
  if [[ ${fact[running]:-0} != 0 ]]; then
    bad "$where: ${fact[running]} node process(es) of an earlier launch still running: scripts/stop.sh $config"
  fi
  unset -n bin work
done

# ---- UDP: a probe server on the manager's address, each host probes it
# start_probe_server: starts it in the background (pid in $server) and
# waits until it listens. Returns 1, with why in $server_why, when it ends
# first or does not listen within 10 s; its exit status is part of why (a
# server that dies without a word, e.g. killed by a signal, says nothing
# in its log).
start_probe_server() {
  "$lbr_bin_dir/libratory" probe-server --config "$LBR_CONFIG" \
    --for-s "$(awk -v t="$LBR_PROBE_TIMEOUT_S" -v n="${#probe_hosts[@]}" 'BEGIN { print t * n + 10 }')" \
    --expect "${#probe_hosts[@]}" >"$plog" 2>&1 &
  server=$!
  local rc=0
  for _ in $(seq 200); do
    grep -q 'listening on' "$plog" 2>/dev/null && return 0
    kill -0 "$server" 2>/dev/null || break
    sleep 0.05
  done
  grep -q 'listening on' "$plog" && return 0
  if kill -0 "$server" 2>/dev/null; then
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    server_why="not listening after 10 s"
  else
    wait "$server" 2>/dev/null || rc=$?
    if ((rc > 128)); then
      server_why="the probe server was killed by signal $((rc - 128))"
    else
      server_why="the probe server exited with status $rc"
    fi
  fi
  [[ -s $plog ]] && server_why+=": $(tail -n 1 "$plog")"
  server=''
  return 1
}
if [[ ${#probe_hosts[@]} -gt 0 ]]; then
  plog="$lbr_state/probe-server.log"
  server_why=
  listening=1
  if ! start_probe_server; then
    # Once more if it died without saying why: a real cause (the port
    # taken, certificates unreadable) repeats and is reported below.
    if [[ ! -s $plog ]]; then
      echo "  note  this machine: $server_why, saying nothing; starting it once more"
      start_probe_server || listening=0
    else
      listening=0
    fi
  fi
  if ((listening == 0)); then
    bad "this machine: cannot listen on $LBR_LISTEN (UDP): $server_why; is a manager already running (scripts/status.sh $config)?"
  else
    # Every host probes at once; the answers are read in host order.
    probers=()
    for i in "${probe_hosts[@]}"; do
      declare -n bin="LBR_NODE_BIN_$i" work="LBR_WORK_$i"
      dial=$LBR_DIAL
      lbr_is_local "$i" && dial=$LBR_LOCAL_DIAL
      lbr_on "$i" "$(lbr_q "$bin" probe --manager "$dial" --certs "$work/certs" \
        --name "$(lbr_name "$i")" --timeout-s "$LBR_PROBE_TIMEOUT_S")" >"$lbr_state/probe-$i.log" 2>&1 &
      probers+=($!)
      unset -n bin work
    done
    for k in "${!probe_hosts[@]}"; do
      i=${probe_hosts[$k]}
      if wait "${probers[$k]}"; then
        out=$(cat "$lbr_state/probe-$i.log")
        ok "$(lbr_where "$i"): ${out##*probe: }"
      else
        out=$(cat "$lbr_state/probe-$i.log")
        bad "$(lbr_where "$i"): ${out##*error: }"
      fi
    done
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    server=''
    probers=()
  fi
fi

echo "preflight: $problems problem(s)"
((problems == 0))
