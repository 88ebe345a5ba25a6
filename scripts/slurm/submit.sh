#!/usr/bin/env bash
# Submits a cluster configuration to Slurm:
#
#   scripts/slurm/submit.sh CONFIG [--out DIR] [--no-build] [--wait] [SBATCH-OPTION...]
#
# The sbatch parameters come from the configuration (libratory config show
# --format sbatch): one node per [[hosts]] entry, one task per node, CPUs
# per task for the busiest host's emulated nodes, [slurm] time_limit,
# partition, account and sbatch_options; options given here come last and
# win. The batch script (libratory.sbatch) runs the manager on the first
# allocated host and, with srun, the node processes of [[hosts]] entry k on
# allocated host k.
#
# Like most Slurm clusters this assumes a file system shared by the login
# node and the compute nodes: the run directory DIR (default: [output] dir /
# slurm-TIMESTAMP) gets a copy of the binaries (DIR/bin: a rebuild does not
# change a queued job) and receives the results, the manager's log and every
# node process's log (DIR/hosts/NAME/logs/). The certificates directory is
# read in place; it is made (or completed) here if needed.
#
# --wait blocks until the job ends and exits with its exit code.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/lib.sh
source "$here/../lib.sh"

config=''
out=''
build=1
wait_opt=()
extra=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    --no-build) build=0; shift ;;
    --wait) wait_opt=(--wait); shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *)
      if [[ -z $config && $1 != -* ]]; then config=$1; else extra+=("$1"); fi
      shift
      ;;
  esac
done
[[ -n $config ]] || lbr_die "usage: scripts/slurm/submit.sh CONFIG [--out DIR] [--no-build] [--wait] [SBATCH-OPTION...]"
[[ -n ${LIBRATORY_BIN_DIR:-} ]] && build=0
command -v sbatch >/dev/null || lbr_die "sbatch not found: run this on a Slurm login node"
if ((build)); then
  lbr_say "building: cargo build --release"
  (cd "$lbr_root" && cargo build --release --workspace --bins)
fi
lbr_load "$config"
lbr_ensure_certs
run=${out:-$LBR_OUTPUT_DIR/slurm-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$run/bin" "$run/logs" "$run/hosts"
run=$(cd "$run" && pwd)
cp "$lbr_bin_dir/libratory" "$lbr_bin_dir/libratory-node" "$here/node-task.sh" "$run/bin/"
cp "$LBR_CONFIG" "$run/cluster.toml.submitted"

lbr_say "sbatch ${LBR_SBATCH[*]} ${extra[*]} (run directory $run)"
set +e
sbatch "${LBR_SBATCH[@]}" "${extra[@]}" "${wait_opt[@]}" \
  --output="$run/logs/slurm-%j.out" --chdir="$run" \
  --export="ALL,LIBRATORY_CONFIG=$LBR_CONFIG,LIBRATORY_RUN=$run,LIBRATORY_BIN=$run/bin" \
  "$here/libratory.sbatch"
rc=$?
set -e
if ((${#wait_opt[@]})); then
  lbr_say "job ended (exit $rc): results and logs in $run"
fi
exit "$rc"
