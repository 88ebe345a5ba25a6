# shellcheck shell=bash
# Shared by the launch tests (sourced): loud failures, root, packages,
# network namespaces on a bridge, and the pieces of a Slurm cluster made
# for a test (munge, the common slurm.conf lines, stopping the daemons).

t_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
t_bin=${LIBRATORY_BIN_DIR:-${CARGO_TARGET_DIR:-$t_root/target}/debug}

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

say() {
  printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*"
}

# need_root WHAT: these tests change the machine (namespaces, daemons,
# packages); they do not skip, they fail.
need_root() {
  [[ $(id -u) == 0 ]] || fail "$1 needs root (namespaces, daemons, apt): run scripts/test.sh as root, as CI does"
}

# need COMMAND:PACKAGE...: installs the Debian packages of the commands
# that are missing, or fails saying which.
t_apt_updated=0
need() {
  local pair cmd pkg missing=()
  for pair in "$@"; do
    cmd=${pair%%:*}
    pkg=${pair#*:}
    if ! command -v "$cmd" >/dev/null 2>&1 && [[ ! -x /usr/sbin/$cmd ]]; then
      [[ " ${missing[*]} " == *" $pkg "* ]] || missing+=("$pkg")
    fi
  done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  command -v apt-get >/dev/null || fail "missing ${missing[*]} and no apt-get to install them"
  say "installing ${missing[*]}"
  if ((t_apt_updated == 0)); then
    apt-get update -qq >/dev/null || fail "apt-get update failed (needed to install ${missing[*]})"
    t_apt_updated=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
    fail "apt-get install ${missing[*]} failed"
}

need_bins() {
  local b
  for b in libratory libratory-node; do
    [[ -x $t_bin/$b ]] || fail "$t_bin/$b missing: build first (scripts/test.sh runs cargo build --workspace --bins)"
  done
}

# alive_matching PATTERN: processes (not zombies) whose command line
# contains PATTERN, one "pid stat args" line each.
alive_matching() {
  ps -eo pid=,stat=,args= | awk -v p="$1" 'index($0, p) && $2 !~ /^Z/ && $0 !~ /awk -v p=/'
}

# ---- network namespaces on a bridge (netns.sh, slurm-nodes.sh)
# Every namespace made is listed in `namespaces`, for t_cleanup_namespaces.
namespaces=()

# t_bridge PREFIX: namespace PREFIX-br holding the bridge br0 that every
# t_addnode namespace plugs into.
t_bridge() {
  t_bridge_ns=$1-br
  ip netns add "$t_bridge_ns"
  namespaces+=("$t_bridge_ns")
  ip -n "$t_bridge_ns" link add br0 type bridge
  ip -n "$t_bridge_ns" link set br0 up
  ip -n "$t_bridge_ns" link set lo up
}

# t_addnode NAMESPACE ADDRESS VETH: a namespace whose eth0 (ADDRESS/24) is
# a veth plugged into t_bridge's br0.
t_addnode() {
  ip netns add "$1"
  namespaces+=("$1")
  ip -n "$t_bridge_ns" link add "$3" type veth peer name eth0 netns "$1"
  ip -n "$t_bridge_ns" link set "$3" master br0 up
  ip -n "$1" addr add "$2/24" dev eth0
  ip -n "$1" link set eth0 up
  ip -n "$1" link set lo up
}

# t_cleanup_namespaces: on a failure, kills what still runs in the
# namespaces and deletes them.
t_cleanup_namespaces() {
  local n p
  for n in "${namespaces[@]}"; do
    for p in $(ip netns pids "$n" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
    ip netns del "$n" 2>/dev/null
  done
}

# t_delete_namespaces: at the end of a passing test, fails when a process
# is left in a namespace, then deletes them all.
t_delete_namespaces() {
  local n in_ns
  for n in "${namespaces[@]}"; do
    in_ns=$(ip netns pids "$n" | tr '\n' ' ')
    [[ -z $in_ns ]] || fail "processes left in namespace $n: $(ps -o pid=,args= -p "${in_ns// /,}" 2>/dev/null)"
    ip netns del "$n"
  done
  namespaces=()
}

# ---- a Slurm cluster made for the test (slurm.sh, slurm-nodes.sh)
# Every daemon started is listed in `daemons`.
daemons=()

# t_munge: munged with a key and socket of its own in $T/munge (its socket
# is a file, which every namespace sees).
t_munge() {
  mkdir -p "$T/munge"
  chmod 700 "$T/munge"
  head -c 1024 /dev/urandom >"$T/munge/munge.key"
  chmod 600 "$T/munge/munge.key"
  munged --foreground --force --key-file="$T/munge/munge.key" --socket="$T/munge/munge.sock" \
    --pid-file="$T/munge/munged.pid" --log-file="$T/munge/munged.log" --seed-file="$T/munge/seed" \
    >"$T/munge/munged.out" 2>&1 </dev/null &
  daemons+=($!)
  for _ in $(seq 100); do [[ -S $T/munge/munge.sock ]] && break; sleep 0.05; done
  [[ -S $T/munge/munge.sock ]] || fail "munged did not start: $(cat "$T/munge/munged.log")"
  # The socket's directory must be searchable by everyone (munge checks).
  chmod 755 "$T/munge"
}

# t_slurm_conf_common: the slurm.conf lines both Slurm tests share: root
# daemons, munge auth on t_munge's socket, state in $T, no cgroups (process
# tracking by /proc), no accounting, CPUs as the consumable resource.
t_slurm_conf_common() {
  cat <<CONF
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$T/munge/munge.sock
StateSaveLocation=$T/state
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=300
CONF
}

# t_stop_daemons [NAMESPACE]: on a failure, cancels the jobs left (while
# the controller is up; from the controller's NAMESPACE when given) and
# stops the daemons.
t_stop_daemons() {
  local p in_ns=()
  [[ -n ${1:-} ]] && in_ns=(ip netns exec "$1")
  if [[ -n ${SLURM_CONF:-} && ${#daemons[@]} -gt 0 ]]; then
    timeout 10 "${in_ns[@]}" scancel --full --quiet --user=root 2>/dev/null
  fi
  for p in "${daemons[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${daemons[@]}"; do wait "$p" 2>/dev/null; done
}

# t_stop_daemons_checked: at the end of a passing Slurm test, stops the
# daemons and fails when a process of the test or a slurmstepd is left.
t_stop_daemons_checked() {
  local p left
  for p in "${daemons[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${daemons[@]}"; do wait "$p" 2>/dev/null || true; done
  daemons=()
  for _ in $(seq 50); do
    [[ -z $(alive_matching "$T") && -z $(alive_matching slurmstepd) ]] && break
    sleep 0.1
  done
  left=$(alive_matching "$T")
  [[ -z $left ]] || fail "processes of the test left running: $left"
  left=$(alive_matching slurmstepd)
  [[ -z $left ]] || fail "slurmstepd left running: $left"
}
