# shellcheck shell=bash
# Shared by launch.sh, preflight.sh, status.sh and stop.sh (sourced, not
# run). Everything a script knows about a cluster comes from
# `libratory config show --format shell` (LBR_* variables; per host i:
# LBR_TARGET_i, LBR_SSH_ARGS_i, LBR_WORK_i, ...): no TOML is parsed here.
#
# Environment:
#   LIBRATORY_BIN_DIR    where libratory and libratory-node are
#                        (default: $CARGO_TARGET_DIR or target/, /release)
#   LIBRATORY_STATE_DIR  local state: manager pid, current run directory,
#                        ssh control sockets
#                        (default: ${TMPDIR:-/tmp}/libratory-launch-UID)
#   LIBRATORY_SSH_MUX    0: one ssh connection per command (default: one
#                        shared connection per host, closed on exit)

lbr_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
lbr_bin_dir=${LIBRATORY_BIN_DIR:-${CARGO_TARGET_DIR:-$lbr_root/target}/release}

lbr_die() {
  echo "error: $*" >&2
  exit 1
}

lbr_say() {
  printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*"
}

# lbr_q ARGS...: the arguments as one string of shell words.
lbr_q() {
  local out='' a
  for a in "$@"; do out+="$(printf '%q' "$a") "; done
  printf '%s' "${out% }"
}

# lbr_load CONFIG: reads the launch plan into LBR_* variables and sets
# lbr_state (this config's local state directory).
lbr_load() {
  local config=$1 plan
  [[ -f $config ]] || lbr_die "$config: no such cluster configuration"
  [[ -x $lbr_bin_dir/libratory ]] ||
    lbr_die "$lbr_bin_dir/libratory not found: build it (cargo build --release) or set LIBRATORY_BIN_DIR"
  plan=$("$lbr_bin_dir/libratory" config show --config "$config" --format shell) ||
    lbr_die "$config: not a usable cluster configuration (see above)"
  eval "$plan"
  local root=${LIBRATORY_STATE_DIR:-${TMPDIR:-/tmp}/libratory-launch-$(id -u)}
  # The state holds the ssh wrappers launch.sh runs: in a shared /tmp,
  # only a directory of this user's own, not a link, and closed to others.
  mkdir -p "$root"
  [[ -O $root && ! -L $root ]] ||
    lbr_die "$root is not a directory of this user's own (another user's, or a symlink): set LIBRATORY_STATE_DIR"
  [[ -n ${LIBRATORY_STATE_DIR:-} ]] || chmod 700 "$root"
  lbr_state=$root/$LBR_NAME-$LBR_CONFIG_ID
  mkdir -p "$lbr_state"
  # Wrappers for scp -S and rsync -e: ssh with this host's arguments and,
  # unless LIBRATORY_SSH_MUX=0, one shared connection per host (a launch
  # makes a few dozen ssh calls per host; each would cost a handshake).
  local i mux
  for ((i = 0; i < LBR_NHOSTS; i++)); do
    local -n args="LBR_SSH_ARGS_$i"
    mux=()
    if [[ ${LIBRATORY_SSH_MUX:-1} != 0 ]]; then
      mux=(-o ControlMaster=auto -o "ControlPath=$lbr_state/mux-$i" -o ControlPersist=300)
    fi
    # Written aside and renamed: a launch running from another terminal
    # may be executing this wrapper.
    printf '#!/usr/bin/env bash\nexec ssh %s "$@"\n' "$(lbr_q "${mux[@]}" "${args[@]}")" >"$lbr_state/ssh-$i.$$"
    chmod +x "$lbr_state/ssh-$i.$$"
    mv -f "$lbr_state/ssh-$i.$$" "$lbr_state/ssh-$i"
  done
  # The script that loaded the plan first owns the shared connections and
  # closes them (lbr_close); scripts it runs use them. A connection
  # already up (a launch running from another terminal, which
  # status.sh or stop.sh may be run beside) is that script's: left open.
  if [[ -z ${LBR_MUX_OWNER:-} ]]; then
    export LBR_MUX_OWNER=$$
    lbr_mux_theirs=()
    for ((i = 0; i < LBR_NHOSTS; i++)); do
      local -n target="LBR_TARGET_$i"
      if [[ -n $target && -S $lbr_state/mux-$i ]] &&
        ssh -o "ControlPath=$lbr_state/mux-$i" -O check "$target" >/dev/null 2>&1; then
        lbr_mux_theirs[i]=1
      fi
      unset -n target
    done
  fi
}

# lbr_close: closes the shared ssh connections, if this script owns them
# (not one another script had up before it).
lbr_close() {
  [[ ${LBR_MUX_OWNER:-} == "$$" ]] || return 0
  local i
  for ((i = 0; i < LBR_NHOSTS; i++)); do
    local -n target="LBR_TARGET_$i"
    if [[ -n $target && -S $lbr_state/mux-$i && -z ${lbr_mux_theirs[i]:-} ]]; then
      ssh -o "ControlPath=$lbr_state/mux-$i" -O exit "$target" >/dev/null 2>&1 || true
    fi
  done
}

# lbr_ensure_certs: a CA and every host's certificate in LBR_CERTS: made
# when there is no CA, signed with ca.key when some host's is missing.
lbr_ensure_certs() {
  local n need=()
  if [[ ! -e $LBR_CERTS/ca.pem ]]; then
    lbr_say "no certificates in $LBR_CERTS: making a CA and node certificates for $LBR_CERT_NAMES"
    "$lbr_bin_dir/libratory" certs --out "$LBR_CERTS" --nodes "$LBR_CERT_NAMES" >/dev/null
    return
  fi
  for n in "${LBR_HOSTS[@]}"; do
    [[ -e $LBR_CERTS/node-$n.pem ]] || need+=("$n")
  done
  [[ ${#need[@]} -eq 0 ]] && return
  [[ -e $LBR_CERTS/ca.key ]] ||
    lbr_die "node certificate(s) for ${need[*]} missing in $LBR_CERTS and no ca.key there to sign them: copy ca.key from the machine that made the CA, or make new certificates there"
  lbr_say "signing node certificate(s) for ${need[*]}"
  "$lbr_bin_dir/libratory" certs --out "$LBR_CERTS" --nodes "$(
    IFS=,
    echo "${need[*]}"
  )" --add >/dev/null
}

lbr_name() {
  local -n n="LBR_HOSTS"
  printf '%s' "${n[$1]}"
}

lbr_is_local() {
  local -n t="LBR_TARGET_$1"
  [[ -z $t ]]
}

# lbr_on I COMMAND-STRING: runs a shell command on host I (over ssh, or
# here for a host without ssh), stdin closed.
lbr_on() {
  local i=$1 cmd=$2
  local -n target="LBR_TARGET_$i"
  if [[ -z $target ]]; then
    bash -c "$cmd" </dev/null
  else
    "$lbr_state/ssh-$i" "$target" "$cmd" </dev/null
  fi
}

# lbr_agent I COMMAND ARGS...: the agent (libratory-host) on host I.
lbr_agent() {
  local i=$1
  shift
  local -n work="LBR_WORK_$i"
  lbr_on "$i" "bash $(lbr_q "$work/bin/libratory-host" "$work" "$@")"
}

# Does host I have rsync? (asked once)
declare -A lbr_rsync_on=()
lbr_has_rsync() {
  local i=$1
  if [[ -z ${lbr_rsync_on[$i]:-} ]]; then
    if command -v rsync >/dev/null && lbr_on "$i" 'command -v rsync' >/dev/null 2>&1; then
      lbr_rsync_on[$i]=1
    else
      lbr_rsync_on[$i]=0
    fi
  fi
  [[ ${lbr_rsync_on[$i]} == 1 ]]
}

# lbr_put I DEST-DIR FILES...: copies files into a directory on host I
# (rsync over ssh when both ends have it, else scp; cp for this machine).
lbr_put() {
  local i=$1 dest=$2
  shift 2
  local -n target="LBR_TARGET_$i"
  if [[ -z $target ]]; then
    mkdir -p "$dest" && cp -p "$@" "$dest/"
  else
    lbr_on "$i" "mkdir -p $(lbr_q "$dest")" || return 1
    if lbr_has_rsync "$i"; then
      rsync -a -e "$lbr_state/ssh-$i" "$@" "$target:$dest/"
    else
      scp -q -p -S "$lbr_state/ssh-$i" "$@" "$target:$dest/"
    fi
  fi
}

# lbr_get I REMOTE-DIR LOCAL-DIR: copies a directory's contents from host I.
lbr_get() {
  local i=$1 src=$2 dest=$3
  local -n target="LBR_TARGET_$i"
  mkdir -p "$dest"
  if [[ -z $target ]]; then
    cp -pR "$src/." "$dest/"
  elif lbr_has_rsync "$i"; then
    rsync -a -e "$lbr_state/ssh-$i" "$target:$src/" "$dest/"
  else
    scp -q -p -r -S "$lbr_state/ssh-$i" "$target:$src/." "$dest/"
  fi
}

# lbr_where I: how to say host I in messages.
lbr_where() {
  local -n target="LBR_TARGET_$1"
  local -n args="LBR_SSH_ARGS_$1"
  if [[ -z $target ]]; then
    printf '%s (this machine)' "$(lbr_name "$1")"
  else
    local port=''
    [[ ${args[0]:-} == -p ]] && port=" port ${args[1]}"
    printf '%s (%s%s)' "$(lbr_name "$1")" "$target" "$port"
  fi
}
