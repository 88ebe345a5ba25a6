#!/usr/bin/env bash
# The multi-host launch test: four "lab machines" on this machine, each a
# network namespace with its own address and its own sshd, driven by
# scripts/launch.sh over ssh exactly as real machines would be.
#
#   <ns>-br   a bridge (br0) that every other namespace's veth plugs into
#   <ns>-mgr  10.77.0.1   runs scripts/launch.sh, hence the manager
#   <ns>-h1   10.77.0.11  sshd on port 2201 ... <ns>-h4 10.77.0.14 port 2204
#
# Nothing is added to the root namespace: the addresses exist only inside
# these namespaces, and all traffic stays between them. Each sshd has its
# own config, host key and port, and takes root with a test key. The
# namespaces share this machine's file system, so each host gets its own
# work directory, and the launcher copies binaries and certificates into it
# as on real machines.
#
# Checks: pre-flight names an unreachable host, a host whose clock is off
# (libfaketime in that host's ssh sessions), a host with another
# libratory-node version, a host holding a key not its own (the CA's), and
# hosts that cannot reach the manager's UDP port; a launch runs a small workload on six node processes
# (four hosts over ssh, and m0, a host without ssh: the manager's machine)
# and collects every host's logs; status/stop see nothing
# left; a launch with a fault scenario named by the configuration crashes
# h2's node process over ssh (libratory inject through h2's agent), and the
# crash is journaled and named by every job it lost; a second launch stopped by SIGTERM mid-run stops every node process
# and still collects results and logs; afterwards no process of the test
# runs and the namespaces are gone.
#
# Needs root; installs openssh-server, rsync, iproute2 and faketime with apt
# when missing; fails (never skips) when it cannot.
set -euo pipefail
# shellcheck source=tests/launch/common.sh
source "$(dirname "$0")/common.sh"

need_root "the multi-host launch test"
need sshd:openssh-server ssh:openssh-client ssh-keygen:openssh-client \
  ip:iproute2 ss:iproute2 rsync:rsync faketime:faketime ps:procps python3:python3
need_bins
faketime_lib=$(dpkg -L libfaketime 2>/dev/null | grep '/libfaketime\.so\.1$' | head -n 1)
[[ -n $faketime_lib ]] || fail "libfaketime.so.1 not found (dpkg -L libfaketime)"

started=$SECONDS
T=$(mktemp -d /tmp/libratory-netns.XXXXXX)
P=lbt$$
sshd_pids=()
keep=0

cleanup() {
  local rc=$?
  set +e
  if [[ -f $T/cluster.toml ]]; then
    ip netns exec "$P-mgr" env LIBRATORY_BIN_DIR="$t_bin" LIBRATORY_STATE_DIR="$T/state" \
      "$t_root/scripts/stop.sh" "$T/cluster.toml" --grace 2 >/dev/null 2>&1
  fi
  for p in "${sshd_pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${sshd_pids[@]}"; do wait "$p" 2>/dev/null; done
  t_cleanup_namespaces
  if ((rc != 0)); then
    keep=1
    echo "netns test failed; its files (configs, run directories, sshd logs) are in $T" >&2
  fi
  ((keep)) || rm -rf "$T"
  exit "$rc"
}
trap cleanup EXIT

# ---- namespaces and addresses
say "namespaces $P-{br,mgr,h1..h4} on a bridge, addresses 10.77.0.x"
t_bridge "$P"
t_addnode "$P-mgr" 10.77.0.1 vmgr
for k in 1 2 3 4; do t_addnode "$P-h$k" "10.77.0.1$k" "vh$k"; done

# ---- sshd in every host namespace
mkdir -p /run/sshd "$T/state"
chmod 700 "$T"
ssh-keygen -q -t ed25519 -N '' -C libratory-test -f "$T/id" </dev/null
ssh-keygen -q -t ed25519 -N '' -C libratory-test-skewed -f "$T/id-skewed" </dev/null
{
  cat "$T/id.pub"
  # Sessions opened with this key see a clock 30 s ahead (PermitUserEnvironment
  # is on only for h2's sshd).
  printf 'environment="LD_PRELOAD=%s",environment="FAKETIME=+30s" %s\n' "$faketime_lib" "$(cat "$T/id-skewed.pub")"
} >"$T/authorized_keys"
for k in 1 2 3 4; do
  h=h$k
  mkdir -p "$T/$h"
  ssh-keygen -q -t ed25519 -N '' -f "$T/$h/host_key" </dev/null
  cat >"$T/$h/sshd_config" <<EOF
Port 220$k
ListenAddress 10.77.0.1$k
HostKey $T/$h/host_key
PidFile none
AuthorizedKeysFile $T/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PermitUserEnvironment $([[ $h == h2 ]] && echo yes || echo no)
Subsystem sftp internal-sftp
EOF
  ip netns exec "$P-$h" /usr/sbin/sshd -D -f "$T/$h/sshd_config" -E "$T/$h/sshd.log" &
  sshd_pids+=($!)
done

ssh_opts="\"IdentityFile=$T/id\", \"UserKnownHostsFile=$T/known_hosts\", \"StrictHostKeyChecking=accept-new\""
# config FILE MANAGER-EXTRA SSH-OPTIONS HOST-EXTRA: a cluster config over
# the four hosts (h4 runs two node processes) and m0, a host without ssh:
# the manager's own machine, as in a lab where it also runs nodes.
config() {
  local file=$1 manager_extra=$2 opts=$3 host_extra=$4 k
  {
    cat <<EOF
[manager]
listen = "10.77.0.1:7878"
$manager_extra
certs = "certs"
time_scale = 0.02
start_timeout_s = 30
link_timeout_s = 3
report_ms = 100
heartbeat_ms = 200

[workload]
preset = "libra"
policy = "libra"
set = { jobs = 24, nodes = 12, synthetic_arrival_max = 25 }

[launch]
ssh_options = [$opts]
ssh_timeout_s = 5
max_clock_skew_ms = 1000
probe_timeout_s = 2
stop_grace_s = 5
EOF
    for k in 1 2 3 4; do
      cat <<EOF

[[hosts]]
name = "h$k"
ssh = "root@10.77.0.1$k"
ssh_port = 220$k
work_dir = "$T/h$k/work"
processes = $([[ $k == 4 ]] && echo 2 || echo 1)
nodes_per_process = 2
capacity = 0.1
executors = 1
$host_extra
EOF
    done
    cat <<EOF

[[hosts]]
name = "m0"
work_dir = "m0/work"   # relative: to this configuration's directory, $T
nodes_per_process = 2
capacity = 0.1
executors = 1
EOF
  } >"$file"
}
config "$T/cluster.toml" "" "$ssh_opts" ""

# The node processes of this test (not their wrappers): the command is a
# work directory's libratory-node.
test_nodes() {
  ps -eo pid=,stat=,args= | awk -v t="$T/" '$2 !~ /^Z/ && index($3, t) == 1 && $3 ~ /\/work\/bin\/libratory-node$/'
}

in_mgr() {
  ip netns exec "$P-mgr" env LIBRATORY_BIN_DIR="$t_bin" LIBRATORY_STATE_DIR="$T/state" "$@"
}

# Listening? (asked of the socket table: a test connection would leave a
# pre-auth sshd child behind for a while)
for k in 1 2 3 4; do
  for _ in $(seq 100); do
    [[ -n $(ip netns exec "$P-h$k" ss -Htln "sport = :220$k") ]] && break
    sleep 0.05
  done
  [[ -n $(ip netns exec "$P-h$k" ss -Htln "sport = :220$k") ]] || fail "h$k's sshd is not listening: $(cat "$T/h$k/sshd.log")"
done
say "four sshd up ($((SECONDS - started)) s)"

# ---- pre-flight failures name the host and what to do
config "$T/unreachable.toml" "" "$ssh_opts" ""
sed -i 's/^ssh_port = 2203$/ssh_port = 2299/' "$T/unreachable.toml"
if out=$(in_mgr "$t_root/scripts/preflight.sh" "$T/unreachable.toml" --reach-only 2>&1); then
  fail "pre-flight passed with h3's ssh port wrong: $out"
fi
grep -q 'FAIL  h3 (root@10.77.0.13 port 2299): ssh failed' <<<"$out" ||
  fail "pre-flight did not name h3 and its ssh port: $out"
grep -q 'ok    h1 (root@10.77.0.11 port 2201): ssh answers' <<<"$out" ||
  fail "pre-flight did not pass h1: $out"
say "pre-flight names an unreachable host"

skew_opts="\"IdentityFile=$T/id-skewed\", \"UserKnownHostsFile=$T/known_hosts\", \"StrictHostKeyChecking=accept-new\""
config "$T/skewed.toml" "" "$skew_opts" ""
if out=$(in_mgr "$t_root/scripts/preflight.sh" "$T/skewed.toml" --reach-only 2>&1); then
  fail "pre-flight passed a host whose clock is 30 s ahead: $out"
fi
grep -Eq 'FAIL  h2 .*: clock \+(29|30)[0-9]{3}\.[0-9]{3} ms .*max_clock_skew_ms' <<<"$out" ||
  fail "pre-flight did not refuse h2's clock 30 s ahead: $out"
grep -Eq 'ok    h1 .*: clock [+-]' <<<"$out" || fail "pre-flight did not report h1's clock: $out"
say "pre-flight refuses a host whose clock is off by 30 s"

# ---- a launch over ssh
say "scripts/launch.sh over ssh to four hosts"
t0=$SECONDS
if ! in_mgr timeout 150 "$t_root/scripts/launch.sh" "$T/cluster.toml" --out "$T/run" >"$T/launch.log" 2>&1; then
  cat "$T/launch.log" >&2
  fail "scripts/launch.sh failed (exit above)"
fi
launch_s=$((SECONDS - t0))
run=$T/run
[[ -f $run/summary.json ]] || fail "no summary.json in $run"
python3 - "$run/summary.json" <<'EOF' || fail "summary.json of the ssh launch is wrong"
import json, sys
s = json.load(open(sys.argv[1]))
p = s["policies"][0]
assert p["submitted"] == 24, p
assert p["accepted"] > 0, p
assert p["completed"] == p["accepted"], p
assert p["lost"] == 0, p
hosts = sorted(h.split(" ")[0] for h, _ in s["node_processes"])
assert hosts == ["h1-0", "h2-0", "h3-0", "h4-0", "h4-1", "m0-0"], hosts
EOF
for h in h1 h2 h3 h4 m0; do
  cmp -s "$t_bin/libratory-node" "$T/$h/work/bin/libratory-node" || fail "$h: binary not copied to its work dir"
  [[ -f $T/$h/work/certs/node-$h.key && -f $T/$h/work/certs/ca.pem ]] || fail "$h: certificates not copied"
  labels=("$h-0")
  [[ $h == h4 ]] && labels+=("$h-1")
  for l in "${labels[@]}"; do
    log=$run/hosts/$h/logs/node-$l.log
    grep -q "admitted by 10.77.0.1:7878" "$log" || fail "$log: not collected, or the node was not admitted"
    [[ $(cat "$run/hosts/$h/run/$l.exit") == 0 ]] || fail "$l did not exit 0"
  done
done
grep -q 'results and logs of every host' "$T/launch.log" || fail "launch did not say where results are"
say "launch over ssh: 24 jobs, 6 node processes on 4 hosts and the manager's, logs collected ($launch_s s)"

# ---- nothing left, status and stop agree
left=$(test_nodes)
[[ -z $left ]] || fail "node processes left after the launch: $left"
if out=$(in_mgr "$t_root/scripts/status.sh" "$T/cluster.toml" 2>&1); then
  fail "status says something runs after the launch: $out"
fi
[[ $(grep -c ': 0 node process(es) running' <<<"$out") == 5 ]] || fail "status did not report the five hosts: $out"
in_mgr "$t_root/scripts/stop.sh" "$T/cluster.toml" >"$T/stop.log" 2>&1 || fail "stop.sh failed: $(cat "$T/stop.log")"

# ---- a fault scenario: a node process on h2 crashed over ssh
# The configuration names the scenario ([workload] faults, relative to it);
# launch.sh starts `libratory inject`, which kills h2-0 through h2's agent
# over ssh at +20 trace seconds and reports it to the manager.
cat >"$T/faults.toml" <<'EOF'
[[fault]]
at = 20.0
kind = "crash"
process = 1
duration = 180.0
EOF
sed 's/^policy = "libra"$/&\nfaults = "faults.toml"/' "$T/cluster.toml" >"$T/faulty.toml"
grep -q '^faults = "faults.toml"$' "$T/faulty.toml" || fail "could not name the scenario in the configuration"
t0=$SECONDS
rc=0
in_mgr timeout 150 "$t_root/scripts/launch.sh" "$T/faulty.toml" --out "$T/run3" >"$T/launch3.log" 2>&1 || rc=$?
# 3: h2-0 did not exit cleanly (killed, and the run ended before its
# restart), which the launcher reports.
[[ $rc == 0 || $rc == 3 ]] || {
  cat "$T/launch3.log" >&2
  fail "the launch with faults failed ($rc)"
}
fault='fault 1 (crash of node process 1 at +20 s, line 3)'
grep -qF "fault: $fault: SIGKILL to node process h2-0 (pid" "$T/run3/logs/inject.log" ||
  fail "the injector did not kill h2-0: $(cat "$T/run3/logs/inject.log")"
grep -qF "(host h2, over ssh, root@10.77.0.12)" "$T/run3/logs/inject.log" ||
  fail "the kill did not go over ssh: $(cat "$T/run3/logs/inject.log")"
python3 - "$T/run3" "$fault" <<'EOF' || fail "the crash over ssh was not journaled or not blamed"
import json, sys
run, fault = sys.argv[1], sys.argv[2]
journal = [json.loads(l) for l in open(run + "/journal.jsonl")]
kills = [e for e in journal if e["e"] == "fault" and e["act"] == "kill"]
assert [(e["process"], e["fault"]) for e in kills] == [("h2-0", fault)], kills
jobs = [json.loads(l) for l in open(run + "/jobs-libra.jsonl")]
assert len(jobs) == 24 and len({j["id"] for j in jobs}) == 24, len(jobs)
lost = [j for j in jobs if j["lost"]]
assert lost, "no job lost to the crash"
for j in lost:
    assert "node process h2-0" in j["detail"] and j["detail"].endswith("after " + fault), j["detail"]
print(f"{len(lost)} jobs lost to the crash over ssh, each naming it")
EOF
grep -q '"faults"' "$T/run3/manifest.json" || fail "the run's manifest does not list its fault scenario"
left=$(test_nodes)
[[ -z $left ]] || fail "node processes left after the launch with faults: $left"
say "a crash over ssh: executed on h2 by the injector, journaled, its lost jobs name it ($((SECONDS - t0)) s)"

# ---- the UDP check: hosts dial a port nobody answers on
config "$T/wrong-port.toml" 'advertise = "10.77.0.1:7879"' "$ssh_opts" ""
if out=$(in_mgr "$t_root/scripts/preflight.sh" "$T/wrong-port.toml" 2>&1); then
  fail "pre-flight passed with the hosts dialling the wrong port: $out"
fi
[[ $(grep -Ec 'FAIL  (h[1-4]|m0) .*no answer from 10.77.0.1:7879 over UDP' <<<"$out") == 5 ]] ||
  fail "pre-flight did not name each host that cannot reach the manager's UDP port: $out"
say "pre-flight names hosts that cannot reach the manager's UDP port"

# ---- a host whose installed libratory-node is another version
# shellcheck disable=SC2016  # the script's own $1
printf '#!/bin/sh\n[ "$1" = --version ] || exit 1\necho "libratory-node 0.0.9 (protocol 0)"\n' >"$T/old-node"
chmod +x "$T/old-node"
config "$T/old.toml" "" "$ssh_opts" ""
sed -i "s|^work_dir = \"$T/h2/work\"\$|&\nnode_binary = \"$T/old-node\"|" "$T/old.toml"
grep -q "node_binary = \"$T/old-node\"" "$T/old.toml" || fail "could not set h2's node_binary"
if out=$(in_mgr "$t_root/scripts/preflight.sh" "$T/old.toml" 2>&1); then
  fail "pre-flight passed a host with another libratory-node version: $out"
fi
grep -qF "FAIL  h2 (root@10.77.0.12 port 2202): $T/old-node is 'libratory-node 0.0.9 (protocol 0)', this machine has 'libratory-node" <<<"$out" ||
  fail "pre-flight did not name h2's version: $out"
[[ $(grep -c 'FAIL' <<<"$out") == 2 ]] || fail "pre-flight failed more than h2's version and probe: $out"
say "pre-flight names a host with another libratory-node version"

# ---- a host holding a key that is not its own (the CA's, copied over)
cp "$T/certs/ca.key" "$T/h3/work/certs/ca.key"
if out=$(in_mgr "$t_root/scripts/preflight.sh" "$T/cluster.toml" 2>&1); then
  fail "pre-flight passed a host holding the CA's key: $out"
fi
grep -qF "FAIL  h3 (root@10.77.0.13 port 2203): this host holds key(s) that are not its own (node-h3)" <<<"$out" ||
  fail "pre-flight did not name h3's foreign key: $out"
grep -qF "$T/h3/work/certs/ca.key: the CA's private key" <<<"$out" || fail "pre-flight did not name the file: $out"
[[ $(grep -c 'FAIL' <<<"$out") == 1 ]] || fail "pre-flight failed more than h3's keys: $out"
rm "$T/h3/work/certs/ca.key"
say "pre-flight names a host holding a key that is not its own"

# ---- a launch stopped mid-run (SIGTERM, as Ctrl-C or a batch system would)
config "$T/cluster.toml" "" "$ssh_opts" ""
sed -i 's/^time_scale = 0.02$/time_scale = 0.5/' "$T/cluster.toml"
# Not through in_mgr: $! must be the launcher itself (ip netns exec and env
# exec it), not a subshell running a function.
ip netns exec "$P-mgr" env LIBRATORY_BIN_DIR="$t_bin" LIBRATORY_STATE_DIR="$T/state" \
  "$t_root/scripts/launch.sh" "$T/cluster.toml" --out "$T/run2" >"$T/launch2.log" 2>&1 &
launch=$!
for _ in $(seq 600); do
  grep -q 'replay started' "$T/run2/logs/manager.log" 2>/dev/null && break
  kill -0 "$launch" 2>/dev/null || break
  sleep 0.1
done
grep -q 'replay started' "$T/run2/logs/manager.log" || {
  cat "$T/launch2.log" >&2
  fail "the second launch did not start its replay"
}
sleep 1
running=$(test_nodes | wc -l)
[[ $running == 6 ]] || fail "expected 6 node processes mid-run, found $running"
kill -TERM "$launch"
# A second signal while it stops everything (Ctrl-C pressed twice) does
# not cut the cleanup short: sent once the launcher says it was
# interrupted, while it stops the manager and the node processes.
for _ in $(seq 100); do
  grep -q 'interrupted' "$T/launch2.log" && break
  sleep 0.05
done
kill -TERM "$launch" 2>/dev/null || true
rc=0
wait "$launch" || rc=$?
[[ $rc == 130 ]] || fail "the interrupted launch exited $rc, not 130: $(tail -n 20 "$T/launch2.log")"
left=$(test_nodes)
[[ -z $left ]] || fail "node processes left after an interrupted launch: $left"
[[ -z $(alive_matching "libratory run --config $T") ]] || fail "the manager outlived the interrupted launch"
grep -q 'run stopped early' "$T/run2/summary.json" || fail "the interrupted run wrote no summary"
for h in h1 h2 h3 h4 m0; do
  [[ -f $T/run2/hosts/$h/logs/node-$h-0.log ]] || fail "$h's log not collected after the interruption"
done
say "an interrupted launch stops every node process and collects every log"

# ---- tear down and make sure nothing is left
for p in "${sshd_pids[@]}"; do kill "$p" 2>/dev/null || true; done
for p in "${sshd_pids[@]}"; do wait "$p" 2>/dev/null || true; done
sshd_pids=()
t_delete_namespaces
[[ -z $(ip netns list | grep "^$P-" || true) ]] || fail "namespaces left: $(ip netns list)"
left=$(alive_matching "$T")
[[ -z $left ]] || fail "processes of the test left running: $left"
say "netns launch test passed in $((SECONDS - started)) s (launch over ssh: $launch_s s)"
