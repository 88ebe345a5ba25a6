#!/usr/bin/env bash
# A run on this machine only: the manager and every node process of a
# configuration whose hosts have no `ssh` (cluster-configs/local.toml by
# default), through the same launcher as a lab run (scripts/launch.sh):
# binaries and certificates copied into each host's work directory, node
# processes detached with pid files and logs, everything stopped and
# collected at the end or on Ctrl-C.
#
#   scripts/local.sh [CONFIG] [launch.sh options...]
set -euo pipefail
here=$(dirname "$0")
config=${1:-$(cd "$here/.." && pwd)/cluster-configs/local.toml}
[[ $# -gt 0 ]] && shift
# shellcheck source=scripts/lib.sh
source "$here/lib.sh"
plan=$("$lbr_bin_dir/libratory" config show --config "$config" --format json 2>/dev/null || true)
if grep -q '"target": "[^"]' <<<"$plan"; then
  lbr_die "$config has hosts reached over ssh: use scripts/launch.sh $config"
fi
exec "$here/launch.sh" "$config" "$@"
