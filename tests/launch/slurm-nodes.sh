#!/usr/bin/env bash
# The multi-node Slurm test: a real Slurm cluster of one controller and
# three compute nodes, each in a network namespace of its own on a bridge
# (as tests/launch/netns.sh does for ssh hosts), made for the test from
# Debian's packages (munged, slurmctld, three slurmd, with a slurm.conf,
# munge key and state in a temporary directory):
#
#   <ns>-br   a bridge (br0) that every other namespace's veth plugs into
#   <ns>-ctl  10.78.0.1   slurmctld; sbatch, squeue and clients run here
#   <ns>-n1   10.78.0.11  slurmd n1 ... <ns>-n3 10.78.0.13 slurmd n3
#
# scripts/slurm/submit.sh submits a three-host cluster configuration; Slurm
# allocates the three nodes, the batch script runs the manager on the first
# (in n1's namespace) and srun starts the node processes of host k on node
# k, which reach the manager over the bridge. Checks: the run completes
# with every job accounted for and results from every node (each host's
# node processes registered, ran parts and left their logs and exit codes);
# then, in a second job, the node processes under n3's slurmd are killed
# mid-run (while parts run there): the manager records them lost with the
# reason, their parts lost, and still completes the run and writes its
# results. Afterwards nothing of the test runs and the namespaces are gone.
#
# munged runs in the root namespace: its socket is a file, which every
# namespace sees. Process tracking is proctrack/linuxproc and task/none
# (no cgroups), and SlurmdParameters=config_overrides lets three slurmd on
# one machine each declare the CPUs and memory of slurm.conf.
#
# Needs root; installs slurmctld, slurmd, slurm-client, munge and iproute2
# with apt when missing; fails (never skips) when it cannot.
set -euo pipefail
# shellcheck source=tests/launch/common.sh
source "$(dirname "$0")/common.sh"

need_root "the multi-node Slurm test"
need slurmctld:slurmctld slurmd:slurmd sbatch:slurm-client munged:munge ip:iproute2 \
  nsenter:util-linux ps:procps python3:python3
need_bins

started=$SECONDS
T=$(mktemp -d /tmp/libratory-slurmn.XXXXXX)
chmod 755 "$T"
P=lbs$$
keep=0
inctl() { ip netns exec "$P-ctl" "$@"; }
cleanup() {
  local rc=$?
  set +e
  t_stop_daemons "$P-ctl"
  t_cleanup_namespaces
  if ((rc != 0)); then
    keep=1
    echo "multi-node slurm test failed; its files (slurm.conf, daemon logs, run directories) are in $T" >&2
  fi
  ((keep)) || rm -rf "$T"
  exit "$rc"
}
trap cleanup EXIT

# ---- namespaces on a bridge
t_bridge "$P"
t_addnode "$P-ctl" 10.78.0.1 vctl
for k in 1 2 3; do t_addnode "$P-n$k" "10.78.0.1$k" "vn$k"; done

# ---- munge, with a key and socket of its own
mkdir -p "$T/state" "$T/log"
t_munge

# ---- slurm.conf: the controller in <ns>-ctl, nodes n1..n3
host=$(hostname -s)
export SLURM_CONF=$T/slurm.conf
{
  cat <<EOF
ClusterName=libratory-nodes
SlurmctldHost=$host(10.78.0.1)
SlurmctldPort=16827
SlurmdPort=16828
SlurmdSpoolDir=$T/spool-%n
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd-%n.pid
SlurmctldLogFile=$T/log/slurmctld.log
SlurmdLogFile=$T/log/slurmd-%n.log
SlurmdParameters=config_overrides
KillWait=10
EOF
  t_slurm_conf_common
  for k in 1 2 3; do
    echo "NodeName=n$k NodeAddr=10.78.0.1$k CPUs=2 RealMemory=1000 State=UNKNOWN"
  done
  echo "PartitionName=test Nodes=n[1-3] Default=YES MaxTime=10 State=UP"
} >"$SLURM_CONF"
nsenter --net="/run/netns/$P-ctl" slurmctld -D -f "$SLURM_CONF" >"$T/log/slurmctld.out" 2>&1 </dev/null &
daemons+=($!)
for k in 1 2 3; do
  mkdir -p "$T/spool-n$k"
  # nsenter enters the network namespace only: `ip netns exec` would also
  # mount a fresh /sys without the cgroup file systems slurmd 22.05 insists
  # on reading.
  nsenter --net="/run/netns/$P-n$k" slurmd -D -N "n$k" -f "$SLURM_CONF" \
    >"$T/log/slurmd-n$k.out" 2>&1 </dev/null &
  daemons+=($!)
done
for _ in $(seq 200); do
  [[ $(inctl sinfo -h -N -o '%N %T' 2>/dev/null | grep -c ' idle$') == 3 ]] && break
  sleep 0.2
done
[[ $(inctl sinfo -h -N -o '%N %T' 2>/dev/null | grep -c ' idle$') == 3 ]] ||
  fail "the three Slurm nodes did not come up idle: $(inctl sinfo -N 2>&1; tail -n 20 "$T"/log/*.log)"
say "slurmctld ($P-ctl) and slurmd n1..n3 in their namespaces up ($((SECONDS - started)) s): $(inctl sinfo -h -o '%P %D %T %N')"

# ---- a cluster configuration: three hosts (the allocation's nodes)
# config FILE TIME-SCALE JOBS MIPS
config() {
  cat >"$1" <<EOF
[manager]
listen = "0.0.0.0:7979"
certs = "certs"
time_scale = $2
start_timeout_s = 30
link_timeout_s = 3
report_ms = 100
heartbeat_ms = 200

[workload]
preset = "libra"
policy = "libra"
set = { jobs = $3, nodes = 6, synthetic_arrival_max = 20, synthetic_mips = $4 }

[launch]
stop_grace_s = 10

[slurm]
time_limit = "5"
cpus_per_host = 1
EOF
  for k in 1 2 3; do
    cat >>"$1" <<EOF

[[hosts]]
name = "s$k"
processes = 1
nodes_per_process = 2
capacity = 0.2
executors = 1
EOF
  done
}
config "$T/nodes.toml" 0.02 24 300

# submit CONFIG OUT [--wait]: scripts/slurm/submit.sh from the controller's
# namespace (where sbatch reaches slurmctld).
submit() {
  local cfg=$1 out=$2
  shift 2
  timeout 180 ip netns exec "$P-ctl" env LIBRATORY_BIN_DIR="$t_bin" SLURM_CONF="$SLURM_CONF" \
    "$t_root/scripts/slurm/submit.sh" "$cfg" --out "$out" "$@"
}

say "scripts/slurm/submit.sh --wait: three hosts on n1..n3"
t0=$SECONDS
if ! submit "$T/nodes.toml" "$T/run" --wait >"$T/submit.log" 2>&1; then
  cat "$T/submit.log" "$T"/run/logs/slurm-*.out "$T/run/logs/manager.log" >&2 || true
  fail "the three-node Slurm job failed"
fi
job_s=$((SECONDS - t0))
job=$(sed -n 's/^Submitted batch job \([0-9]*\)$/\1/p' "$T/submit.log")
[[ -n $job ]] || fail "no job id in: $(cat "$T/submit.log")"
state=$(inctl scontrol show job "$job" | sed -n 's/.*JobState=\([A-Z]*\).*/\1/p')
[[ $state == COMPLETED ]] || fail "job $job is $state, not COMPLETED"
nodelist=$(inctl scontrol show job "$job" | sed -n 's/^ *NodeList=\([^ ]*\).*/\1/p')
[[ $nodelist == "n[1-3]" ]] || fail "job $job ran on '$nodelist', not n[1-3]"
run=$T/run
python3 - "$run" <<'EOF' || fail "the three-node run's results are wrong"
import csv, json, sys
run = sys.argv[1]
s = json.load(open(f"{run}/summary.json"))
p = s["policies"][0]
assert p["submitted"] == 24, p
assert p["accepted"] > 0, p
assert p["completed"] == p["accepted"], p
assert p["lost"] == 0, p
labels = sorted(h.split(" ")[0] for h, _ in s["node_processes"])
assert labels == ["s1-0", "s2-0", "s3-0"], labels
# Every host's node process registered from its own namespace's address.
addrs = sorted(h.split("(")[1].split(":")[0] for h, _ in s["node_processes"])
assert addrs == ["10.78.0.11", "10.78.0.12", "10.78.0.13"], addrs
# Parts ran on every host's nodes: ids are given two per node process, so
# each process's pair must appear among the parts.
parts = list(csv.DictReader(open(f"{run}/parts-libra.csv")))
nodes = {int(r["node"]) for r in parts}
for pair in ({0, 1}, {2, 3}, {4, 5}):
    assert nodes & pair, f"no part ran on nodes {sorted(pair)}: parts on {sorted(nodes)}"
EOF
for k in 1 2 3; do
  grep -q "admitted by 10.78.0.11:7979" "$run/hosts/s$k/logs/node-s$k-0.log" ||
    fail "s$k-0's log is missing or it was not admitted: $(cat "$run/hosts/s$k/logs/node-s$k-0.log" 2>&1)"
  [[ $(cat "$run/hosts/s$k/run/s$k-0.exit") == 0 ]] || fail "s$k-0 did not exit 0"
  grep -q "plays host s$k" "$run/hosts/s$k/task.txt" || fail "no srun task played host s$k"
done
grep -q "on n\[1-3\]: manager on" "$run/logs/slurm-$job.out" || fail "the batch log lacks the allocation line: $(cat "$run/logs/slurm-$job.out")"
say "Slurm job $job on n[1-3]: 24 jobs on 3 node processes, one per slurmd, started by srun ($job_s s)"

# ---- a second job; n3's node processes killed while parts run there
config "$T/long.toml" 0.1 24 300
submit "$T/long.toml" "$T/run2" >"$T/submit2.log" 2>&1 ||
  fail "submitting the second job failed: $(cat "$T/submit2.log")"
job2=$(sed -n 's/^Submitted batch job \([0-9]*\)$/\1/p' "$T/submit2.log")
[[ -n $job2 ]] || fail "no job id in: $(cat "$T/submit2.log")"
# Wait for parts on s3's nodes (the manager's own status, asked as the
# look-only viewer from the controller's namespace).
busy=0
for _ in $(seq 300); do
  if [[ -e $T/run2/logs/manager.log ]] && grep -q 'replay started' "$T/run2/logs/manager.log" &&
    st=$(inctl "$t_bin/libratory" status --json --manager 10.78.0.11:7979 --certs "$T/certs" \
      --identity viewer 2>/dev/null) &&
    python3 -c '
import json, sys
s = json.loads(sys.argv[1])["Status"]
sys.exit(0 if any(n["host"].startswith("s3-0") and n["parts"] for n in s["nodes"]) else 1)
' "$st"; then
    busy=1
    break
  fi
  sleep 0.1
done
((busy)) || fail "no part ran on s3 in job $job2: $(cat "$T/run2/logs/manager.log" 2>&1)"
victims=()
for p in $(ip netns pids "$P-n3"); do
  [[ $(cat "/proc/$p/comm" 2>/dev/null) == libratory-node ]] && victims+=("$p")
done
[[ ${#victims[@]} == 1 ]] || fail "expected one node process under n3's slurmd, found ${#victims[@]}"
kill -KILL "${victims[@]}"
say "killed n3's node process (pid ${victims[*]}) mid-run"
for _ in $(seq 900); do
  [[ -z $(inctl squeue -h -j "$job2" 2>/dev/null) ]] && break
  sleep 0.1
done
[[ -z $(inctl squeue -h -j "$job2" 2>/dev/null) ]] || fail "job $job2 still in the queue 90 s after the kill"
python3 - "$T/run2" <<'EOF' || fail "the run with n3's node process killed is wrong: $(cat "$T"/run2/logs/slurm-*.out "$T/run2/logs/manager.log" 2>&1)"
import json, sys
run = sys.argv[1]
s = json.load(open(f"{run}/summary.json"))
p = s["policies"][0]
assert p["submitted"] == 24, p
assert p["lost"] > 0, p
assert p["completed"] > 0, p
assert p["completed"] + p["lost"] == p["accepted"], p
w = " ".join(s["warnings"])
assert "lost node process s3-0" in w, w
assert "stopped early" not in json.dumps(s), "the run did not complete"
jobs = open(f"{run}/jobs-libra.csv").read()
assert "lost at" in jobs, "lost parts carry their reason"
EOF
grep -q 'manager exited (0)' "$T"/run2/logs/slurm-"$job2".out ||
  fail "the manager of job $job2 did not complete: $(cat "$T"/run2/logs/slurm-*.out)"
say "job $job2: n3's node process killed mid-run, its parts lost with reasons, the run completed"

# ---- stop the daemons; nothing of the test may be left
t_stop_daemons_checked
say "multi-node slurm test passed in $((SECONDS - started)) s (first job: $job_s s)"
