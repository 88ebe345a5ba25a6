# shellcheck shell=bash
# Shared by the launch tests (sourced): loud failures, root, packages.

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
