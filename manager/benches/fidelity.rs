//! Fidelity of the live emulation against the simulator (issue 8). Run with
//! `cargo build --release --workspace --bins && cargo bench -p libratory-manager --bench fidelity`.
//!
//! The same workload (the Libra paper's synthetic batch: 100 jobs on 10 nodes by
//! default, Libra) runs twice with the same policy and seed:
//! - live: the real `libratory run --spawn-local` and one real
//!   `libratory-node` process hosting the 10 emulated nodes (0.05 of a
//!   core each, half a core in all, so that the node process keeps its CPU
//!   on a shared 2-core machine), over QUIC on loopback, trace time mapped
//!   to real time by `time_scale`;
//! - simulated: `libratory simulate` in virtual time.
//!
//! Then it compares the two run directories with the compare code
//! (`libratory_manager::lab::compare`) and prints the share of identical
//! admission decisions (target >= 95%) and the QoS satisfaction difference
//! (target <= 2 percentage points), with every job that differs and why.
//! One node process, so the live node ids are the simulator's (0..n-1 in
//! registration order).
//!
//! Knobs (environment): `FIDELITY_JOBS` (100), `FIDELITY_NODES` (10),
//! `FIDELITY_CORES` (0.5: host cores shared by the emulated nodes),
//! `FIDELITY_TIME_SCALE` (0.03 real s per trace s: the shortest job, 10
//! trace s, lasts at least 30 slicing periods of 10 ms; the run takes
//! ~25 s), `FIDELITY_RUNS` (1: live runs, each compared with the one
//! simulation), `FIDELITY_SEED` (the preset's), `FIDELITY_REPORT_MS` (100:
//! the nodes' progress report period), `FIDELITY_SET` (more `key=value`
//! settings for both runs, `;`-separated, e.g. `placement=best-fit`).
//! Results are left in
//! `target/fidelity/` (printed).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

use common::experiment::Experiment;
use common::job::{JobId, JobSpec};
use common::node_model::{NodeState, PartValue};
use common::policy::{self, AdmissionPolicy, Decision, Policy};
use common::share::SpareRule;
use common::time::Time;
use libratory_benches::env_or;
use libratory_manager::lab::compare;

/// What the simulator's policy saw at one decision: every node's load
/// after taking the job (`None`: the job does not fit there).
type Seen = BTreeMap<JobId, Vec<Option<f64>>>;

/// Wraps the registered policy and records, at each decision, the load
/// each node would have with the job: the quantity Libra's placement
/// ranks. Decisions are the inner policy's, unchanged.
struct Recorder {
    inner: Box<dyn AdmissionPolicy>,
    seen: Arc<Mutex<Seen>>,
}

impl AdmissionPolicy for Recorder {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn decide(&mut self, now: Time, nodes: &[NodeState], job: &JobSpec) -> Decision {
        let loads = nodes
            .iter()
            .map(|n| policy::steps::load_if_fits(n, job, now))
            .collect();
        self.seen.lock().unwrap().insert(job.id, loads);
        self.inner.decide(now, nodes, job)
    }
    fn spare_rule(&self) -> SpareRule {
        self.inner.spare_rule()
    }
    fn part_value(&self, job: &JobSpec) -> PartValue {
        self.inner.part_value(job)
    }
}

/// Replays the simulation with the recorder (the same experiment as the
/// `simulate` run: same preset, seed and sets).
fn replay_loads(s: &Setup) -> (Seen, bool) {
    let mut exp = Experiment::preset("libra").unwrap();
    if let Some(seed) = s.seed {
        exp.params.seed = seed;
    }
    let sets = s.sets();
    exp.set_all(sets.iter().map(String::as_str)).unwrap();
    let wl = common::workload::build(&exp.params, None).unwrap();
    let specs = exp.params.node_specs();
    let Policy::Admission(inner) = policy::build("libra", &exp.policy, &specs).unwrap() else {
        panic!("libra is an admission policy");
    };
    let seen = Arc::new(Mutex::new(Seen::new()));
    let rec = Recorder {
        inner,
        seen: seen.clone(),
    };
    let _ = common::sim::simulate(&wl.jobs, &specs, Policy::Admission(Box::new(rec)));
    let out = seen.lock().unwrap().clone();
    (out, exp.policy.placement == policy::Placement::BestFit)
}

/// Gap between the node the placement chose and the best node it did not
/// choose, in load (share of a node): how close the decision was to a tie.
/// Least loaded ranks low loads first, best fit high ones.
fn margin(loads: &[Option<f64>], chosen: &[usize], best_fit: bool) -> Option<f64> {
    let sign = if best_fit { -1.0 } else { 1.0 };
    let worst_chosen = chosen
        .iter()
        .filter_map(|&k| loads.get(k).copied().flatten())
        .map(|l| sign * l)
        .fold(f64::NEG_INFINITY, f64::max);
    let best_other = loads
        .iter()
        .enumerate()
        .filter(|(k, _)| !chosen.contains(k))
        .filter_map(|(_, l)| l.map(|l| sign * l))
        .fold(f64::INFINITY, f64::min);
    (worst_chosen.is_finite() && best_other.is_finite()).then_some(best_other - worst_chosen)
}

fn bin(name: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_BIN_EXE_libratory")).with_file_name(name);
    assert!(
        p.is_file(),
        "{} is missing: build every binary first with `cargo build --release --workspace --bins` \
         (cargo bench -p libratory-manager does not build the node crate's libratory-node)",
        p.display()
    );
    p
}

fn run(cmd: &mut Command, what: &str) {
    let o = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    if !o.status.success() {
        panic!(
            "{what} failed ({})\nstdout:\n{}\nstderr:\n{}",
            o.status,
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

struct Setup {
    jobs: usize,
    nodes: usize,
    time_scale: f64,
    seed: Option<u64>,
    report_ms: u32,
    cores: f64,
    extra: Vec<String>,
}

impl Setup {
    fn sets(&self) -> Vec<String> {
        // The preset's arrival window scaled with the job count, as the
        // demo does (the Libra paper: 100 jobs over 102 s).
        let mut v = vec![
            format!("jobs={}", self.jobs),
            format!("nodes={}", self.nodes),
            format!("synthetic_arrival_max={}", self.jobs as f64 * 1.02),
        ];
        v.extend(self.extra.iter().cloned());
        v
    }
}

fn live(dir: &Path, s: &Setup, k: usize) -> PathBuf {
    let libratory = bin("libratory");
    let _ = bin("libratory-node");
    let certs = dir.join("certs");
    if !certs.join("ca.pem").is_file() {
        run(
            Command::new(&libratory)
                .args(["certs", "--out"])
                .arg(&certs)
                .args(["--nodes", "local"]),
            "libratory certs",
        );
    }
    let capacity = s.cores / s.nodes as f64;
    let sets = s
        .sets()
        .iter()
        .map(|kv| {
            let (k, v) = kv.split_once('=').expect("key=value");
            if v.parse::<f64>().is_ok() || v == "true" || v == "false" {
                format!("{k} = {v}")
            } else {
                format!("{k} = \"{v}\"")
            }
        })
        .collect::<Vec<_>>()
        .join(", ");
    let seed = s.seed.map_or(String::new(), |x| format!("seed = {x}\n"));
    let cfg = format!(
        r#"[manager]
listen = "127.0.0.1:{port}"
certs = "certs"
time_scale = {ts}
start_timeout_s = 30
link_timeout_s = 5
report_ms = {report}

[workload]
preset = "libra"
policy = "libra"
{seed}set = {{ {sets} }}

[[hosts]]
name = "local"
processes = 1
nodes_per_process = {nodes}
capacity = {capacity}
"#,
        port = net::free_udp_port().unwrap(),
        ts = s.time_scale,
        report = s.report_ms,
        nodes = s.nodes,
    );
    let path = dir.join(format!("live-{k}.toml"));
    std::fs::write(&path, cfg).unwrap();
    let out = dir.join(format!("live-{k}"));
    let _ = std::fs::remove_dir_all(&out);
    run(
        Command::new(&libratory)
            .args(["run", "--spawn-local", "--config"])
            .arg(&path)
            .arg("--out")
            .arg(&out),
        "libratory run --spawn-local",
    );
    out
}

fn simulate(dir: &Path, s: &Setup) -> PathBuf {
    let out = dir.join("sim");
    let mut cmd = Command::new(bin("libratory"));
    cmd.args(["simulate", "--preset", "libra", "--policies", "libra"]);
    if let Some(seed) = s.seed {
        cmd.args(["--seed", &seed.to_string()]);
    }
    for kv in s.sets() {
        cmd.args(["--set", &kv]);
    }
    cmd.arg("--out").arg(&out);
    run(&mut cmd, "libratory simulate");
    out
}

/// For the first job placed differently: how close the simulator's own
/// choice was to a tie, and the simulator's loads of the two nodes.
fn explain(c: &compare::Comparison, seen: &Seen, sim: &compare::RunJobs, best_fit: bool) {
    let Some(first) = c.jobs.iter().find(|j| j.difference.is_decision()) else {
        println!("every decision identical: nothing to explain");
        return;
    };
    let Some(loads) = seen.get(&first.id) else {
        return;
    };
    let r = sim.records.iter().find(|r| r.id == first.id).unwrap();
    let show = |nodes: &[usize]| {
        nodes
            .iter()
            .map(|&k| {
                format!(
                    "node {k} {}",
                    loads
                        .get(k)
                        .copied()
                        .flatten()
                        .map_or("(does not fit)".into(), |l| format!("{l:.4}"))
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!(
        "first divergence: job {} ({}) at {:.2}: the simulator placed it on {} and the live manager on {} (loads with the job in the simulator's exact view); the simulator's runner-up was {:.4} of a node behind its choice",
        first.id,
        serde_json::to_value(first.difference).unwrap(),
        first.submit,
        show(&first.a.nodes),
        show(&first.b.nodes),
        margin(loads, &r.nodes, best_fit).unwrap_or(f64::NAN)
    );
}

fn main() {
    // `cargo bench` passes --bench; nothing else is taken.
    let s = Setup {
        jobs: env_or("FIDELITY_JOBS", 100),
        nodes: env_or("FIDELITY_NODES", 10),
        time_scale: env_or("FIDELITY_TIME_SCALE", 0.03),
        seed: std::env::var("FIDELITY_SEED")
            .ok()
            .map(|v| v.parse().expect("FIDELITY_SEED: an integer")),
        report_ms: env_or("FIDELITY_REPORT_MS", 100),
        cores: env_or("FIDELITY_CORES", 0.5),
        extra: std::env::var("FIDELITY_SET")
            .map(|v| {
                v.split(';')
                    .filter(|x| !x.trim().is_empty())
                    .map(|x| x.trim().to_string())
                    .collect()
            })
            .unwrap_or_default(),
    };
    let runs: usize = env_or("FIDELITY_RUNS", 1);
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/fidelity");
    std::fs::create_dir_all(&dir).unwrap();
    let sim = simulate(&dir, &s);
    let simrun = compare::read_run(&sim, Some("libra")).unwrap();
    let shortest = simrun
        .records
        .iter()
        .map(|r| r.actual)
        .fold(f64::INFINITY, f64::min);
    println!(
        "fidelity: the Libra paper's batch, {} jobs on {} nodes (one node process, {:.3} core each), Libra, time scale {} \
         (shortest job {:.1} trace s = {:.0} slicing periods of 10 ms at share 1), progress reports every {} ms, sets {:?}; results in {}",
        s.jobs,
        s.nodes,
        s.cores / s.nodes as f64,
        s.time_scale,
        shortest,
        shortest * s.time_scale / 0.010,
        s.report_ms,
        s.sets(),
        dir.display()
    );
    let (seen, best_fit) = replay_loads(&s);
    let margins: Vec<f64> = simrun
        .records
        .iter()
        .filter(|r| r.accepted)
        .filter_map(|r| margin(seen.get(&r.id)?, &r.nodes, best_fit))
        .collect();
    let close = |eps: f64| margins.iter().filter(|m| **m < eps).count();
    println!(
        "simulator's placements ({}): {} accepted; the runner-up node was within 0.001 / 0.01 / 0.05 of a node's share of the chosen one in {} / {} / {} of them",
        if best_fit { "best fit" } else { "least loaded, as in the Libra paper" },
        margins.len(),
        close(0.001),
        close(0.01),
        close(0.05)
    );
    let mut shares = Vec::new();
    for k in 0..runs {
        let t = std::time::Instant::now();
        let live = live(&dir, &s, k);
        let liverun = compare::read_run(&live, Some("libra")).unwrap();
        let c = compare::compare(&simrun, &liverun);
        println!(
            "\n== live run {} of {runs} ({:.0} s wall), A = simulator, B = live\n",
            k + 1,
            t.elapsed().as_secs_f64()
        );
        print!("{}", compare::render(&c, 20));
        let share = 100.0 * c.identical_share;
        let qos = c.qos_satisfaction_diff_pp;
        println!(
            "\nidentical admission decisions {share:.1}% (target >= 95%: {}); QoS satisfaction difference {qos:+.2} pp (target <= 2 pp: {})",
            if share >= 95.0 { "met" } else { "MISSED" },
            if qos.abs() <= 2.0 { "met" } else { "MISSED" }
        );
        shares.push((share, qos));
        explain(&c, &seen, &simrun, best_fit);
    }
    if runs > 1 {
        let n = shares.len() as f64;
        let mean = shares.iter().map(|x| x.0).sum::<f64>() / n;
        let min = shares.iter().map(|x| x.0).fold(f64::INFINITY, f64::min);
        let worst = shares.iter().map(|x| x.1.abs()).fold(0.0, f64::max);
        println!(
            "\nover {runs} live runs: identical decisions mean {mean:.1}%, worst {min:.1}%; QoS difference worst {worst:.2} pp"
        );
    }
}
