#!/usr/bin/env bash
# The Slurm test: a real single-node Slurm cluster on this machine, made
# for the test (munged, slurmctld and slurmd from Debian's packages, with a
# slurm.conf, munge key and state written into a temporary directory, on
# ports of their own), and a cluster configuration submitted with
# scripts/slurm/submit.sh: the batch script starts the manager and, with
# srun, the node processes; the run completes and its results and logs are
# in the run directory; a second job cancelled mid-run (scancel, as the
# time limit would) still writes its partial results and leaves nothing
# behind; the daemons are stopped and nothing is left.
#
# Process tracking is proctrack/linuxproc and task/none: no cgroup plugin,
# so it runs in containers and VMs alike.
#
# Needs root; installs slurmctld, slurmd, slurm-client and munge with apt
# when missing; fails (never skips) when it cannot.
set -euo pipefail
# shellcheck source=tests/launch/common.sh
source "$(dirname "$0")/common.sh"

need_root "the Slurm test"
need slurmctld:slurmctld slurmd:slurmd sbatch:slurm-client munged:munge ps:procps python3:python3
need_bins

started=$SECONDS
T=$(mktemp -d /tmp/libratory-slurm.XXXXXX)
chmod 755 "$T"
keep=0
cleanup() {
  local rc=$?
  set +e
  # Jobs still queued or running (a failure): cancel them while the
  # controller is up.
  t_stop_daemons ""
  if ((rc != 0)); then
    keep=1
    echo "slurm test failed; its files (slurm.conf, daemon logs, the run directory) are in $T" >&2
  fi
  ((keep)) || rm -rf "$T"
  exit "$rc"
}
trap cleanup EXIT

# ---- munge, with a key and socket of its own
mkdir -p "$T/state" "$T/spool" "$T/log"
t_munge

# ---- slurm.conf: this machine is the controller and the only node
host=$(hostname -s)
cpus=$(nproc)
mem=$(($(awk '/MemTotal/ { print $2 }' /proc/meminfo) / 1024 / 2))
export SLURM_CONF=$T/slurm.conf
{
  cat <<EOF
ClusterName=libratory-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=16817
SlurmdPort=16818
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/log/slurmctld.log
SlurmdLogFile=$T/log/slurmd.log
KillWait=30
EOF
  t_slurm_conf_common
  cat <<EOF
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=10 State=UP
EOF
} >"$SLURM_CONF"
slurmctld -D -f "$SLURM_CONF" >"$T/log/slurmctld.out" 2>&1 </dev/null &
daemons+=($!)
slurmd -D -f "$SLURM_CONF" >"$T/log/slurmd.out" 2>&1 </dev/null &
daemons+=($!)
for _ in $(seq 150); do
  sinfo -h -o '%T' 2>/dev/null | grep -q '^idle' && break
  sleep 0.2
done
sinfo -h -o '%T' 2>/dev/null | grep -q '^idle' ||
  fail "the Slurm node did not come up idle: $(sinfo 2>&1; tail -n 20 "$T"/log/*.log)"
say "slurmctld, slurmd and munged up ($((SECONDS - started)) s): $(sinfo -h -o '%P %D %T %N')"

# ---- a cluster configuration: one host (the allocation's one node), two
# node processes of two emulated nodes
port=$(python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$T/slurm.toml" <<EOF
[manager]
listen = "127.0.0.1:$port"
certs = "certs"
time_scale = 0.02
start_timeout_s = 30
link_timeout_s = 3
report_ms = 100
heartbeat_ms = 200

[workload]
preset = "libra"
policy = "libra"
set = { jobs = 16, nodes = 4, synthetic_arrival_max = 17 }

[launch]
stop_grace_s = 10

[slurm]
time_limit = "5"

[[hosts]]
name = "s1"
processes = 2
nodes_per_process = 2
capacity = 0.2
executors = 1
EOF
[[ $("$t_bin/libratory" config show --config "$T/slurm.toml" --format sbatch | tr '\n' ' ') == \
  "--job-name=libratory-slurm --nodes=1 --ntasks-per-node=1 --cpus-per-task=1 --time=5 " ]] ||
  fail "unexpected sbatch options: $("$t_bin/libratory" config show --config "$T/slurm.toml" --format sbatch)"

say "scripts/slurm/submit.sh --wait"
t0=$SECONDS
if ! LIBRATORY_BIN_DIR=$t_bin timeout 180 "$t_root/scripts/slurm/submit.sh" "$T/slurm.toml" \
  --out "$T/run" --wait >"$T/submit.log" 2>&1; then
  cat "$T/submit.log" "$T"/run/logs/slurm-*.out >&2 || true
  fail "the Slurm job failed"
fi
job_s=$((SECONDS - t0))
job=$(sed -n 's/^Submitted batch job \([0-9]*\)$/\1/p' "$T/submit.log")
[[ -n $job ]] || fail "no job id in: $(cat "$T/submit.log")"
state=$(scontrol show job "$job" | sed -n 's/.*JobState=\([A-Z]*\).*/\1/p')
[[ $state == COMPLETED ]] || fail "job $job is $state, not COMPLETED"
run=$T/run
python3 - "$run/summary.json" <<'EOF' || fail "summary.json of the Slurm run is wrong"
import json, sys
s = json.load(open(sys.argv[1]))
p = s["policies"][0]
assert p["submitted"] == 16, p
assert p["accepted"] > 0, p
assert p["completed"] == p["accepted"], p
assert p["lost"] == 0, p
labels = sorted(h.split(" ")[0] for h, _ in s["node_processes"])
assert labels == ["s1-0", "s1-1"], labels
EOF
for l in s1-0 s1-1; do
  grep -q "admitted by 127.0.0.1:$port" "$run/hosts/s1/logs/node-$l.log" || fail "$l's log is missing or it was not admitted"
  [[ $(cat "$run/hosts/s1/run/$l.exit") == 0 ]] || fail "$l did not exit 0"
done
grep -q "plays host s1" "$run/hosts/s1/task.txt" || fail "the srun task did not record its host"
grep -q "manager on $(hostname)" "$run/logs/slurm-$job.out" || fail "the batch log lacks the manager line"
say "Slurm job $job: 16 jobs on 2 node processes started by srun ($job_s s)"

# ---- scancel mid-run (as the time limit would): the manager still writes
# what it has, and no node process outlives the job
sed 's/^time_scale = 0.02$/time_scale = 0.5/' "$T/slurm.toml" >"$T/long.toml"
LIBRATORY_BIN_DIR=$t_bin "$t_root/scripts/slurm/submit.sh" "$T/long.toml" --out "$T/run2" \
  >"$T/submit2.log" 2>&1 || fail "submitting the second job failed: $(cat "$T/submit2.log")"
job2=$(sed -n 's/^Submitted batch job \([0-9]*\)$/\1/p' "$T/submit2.log")
[[ -n $job2 ]] || fail "no job id in: $(cat "$T/submit2.log")"
for _ in $(seq 600); do
  grep -q 'replay started' "$T/run2/logs/manager.log" 2>/dev/null && break
  sleep 0.1
done
grep -q 'replay started' "$T/run2/logs/manager.log" 2>/dev/null ||
  fail "job $job2 did not start its replay: $(cat "$T"/run2/logs/slurm-*.out 2>&1)"
sleep 1
scancel "$job2"
for _ in $(seq 300); do
  [[ -z $(squeue -h -j "$job2" 2>/dev/null) ]] && break
  sleep 0.1
done
[[ -z $(squeue -h -j "$job2" 2>/dev/null) ]] || fail "job $job2 still in the queue 30 s after scancel"
grep -q 'run stopped early: terminated (SIGTERM)' "$T/run2/summary.json" 2>/dev/null ||
  fail "the cancelled job's manager wrote no summary: $(cat "$T"/run2/logs/slurm-*.out "$T/run2/logs/manager.log" 2>&1)"
for _ in $(seq 50); do
  [[ -z $(alive_matching "$T/run2/bin/libratory") ]] && break
  sleep 0.1
done
left=$(alive_matching "$T/run2/bin/libratory")
[[ -z $left ]] || fail "processes of the cancelled job left running: $left"
say "scancel of job $job2 mid-run: partial results written, nothing left"

# ---- stop the daemons; nothing of the test may be left
t_stop_daemons_checked
say "slurm test passed in $((SECONDS - started)) s (job: $job_s s)"
