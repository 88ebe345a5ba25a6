#!/usr/bin/env bash
# One srun task of libratory.sbatch: on allocated host k (SLURM_PROCID),
# runs the node processes of the configuration's [[hosts]] entry k, each
# logging to RUN/hosts/NAME/logs/node-LABEL.log, and records their exit
# codes in RUN/hosts/NAME/run/LABEL.exit. SIGTERM (the step being
# stopped) is passed on to them.
#
#   node-task.sh BIN CONFIG RUN MANAGER-ADDRESS
set -euo pipefail
bin=$1 config=$2 run=$3 dial=$4
k=${SLURM_PROCID:?run by srun}
plan=$("$bin/libratory" config show --config "$config" --format shell)
eval "$plan"
name=${LBR_HOSTS[$k]:?no [[hosts]] entry $k in $config}
declare -n labels="LBR_LABELS_$k" args="LBR_NODE_ARGS_$k"
mkdir -p "$run/hosts/$name/logs" "$run/hosts/$name/run"
echo "slurm task $k on $(hostname) plays host $name: ${#labels[@]} node process(es)" \
  >"$run/hosts/$name/task.txt"
pids=()
for label in "${labels[@]}"; do
  "$bin/libratory-node" --manager "$dial" --certs "$LBR_CERTS" --label "$label" "${args[@]}" \
    >"$run/hosts/$name/logs/node-$label.log" 2>&1 &
  pids+=($!)
done
trap 'kill -TERM "${pids[@]}" 2>/dev/null || true' TERM INT
for n in "${!labels[@]}"; do
  code=0
  wait "${pids[$n]}" || code=$?
  echo "$code" >"$run/hosts/$name/run/${labels[$n]}.exit"
done
