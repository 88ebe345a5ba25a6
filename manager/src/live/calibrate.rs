//! `libratory calibrate`: how far this host can compress trace time before
//! live results stop matching the simulator.
//!
//! One preset's workload runs live (local node processes, as `demo` or
//! `run --spawn-local`) at several time scales and once in the simulator;
//! each live run is compared with the simulation by the compare code. The
//! recommended scale is the smallest tested one at which it, and every
//! larger tested scale, meets the fidelity targets (a noisy host can pass
//! a small scale by luck after failing a larger one: that is not trusted).
//! The result goes to `calibration.json` in the output directory and to a
//! host-level file that `libratory run` reads to warn about smaller scales.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::cluster::config::ClusterConfig;
use crate::environment::Environment;
use crate::lab::compare;
use anyhow::{bail, Context as _, Result};
use serde::{Deserialize, Serialize};

use crate::lab::simulate::{self, SimulateArgs};
use crate::live::runcmd;
use crate::results::plot::{self, Chart, Line, Point, XAxis};

/// Share of jobs with the same accept/reject decision, at least.
pub const TARGET_ADMISSION: f64 = 0.98;
/// Share of jobs with the same deadline outcome (met or not), at least.
pub const TARGET_OUTCOME: f64 = 0.95;
/// QoS satisfaction difference, at most (percentage points).
pub const TARGET_QOS_PP: f64 = 1.0;

/// Arguments of `libratory calibrate`.
#[derive(clap::Args, Debug)]
pub struct CalibrateArgs {
    /// Cluster configuration whose local hosts and workload to use
    /// (default: the demo's: one host, the Libra paper's batch).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Time scales to try (real seconds per trace second).
    #[arg(long, value_delimiter = ',', default_value = "0.1,0.05,0.02,0.01")]
    pub scales: Vec<f64>,
    /// Without --config: node processes to start.
    #[arg(long, default_value_t = 1)]
    pub processes: usize,
    /// Without --config: emulated nodes per process.
    #[arg(long, default_value_t = 10)]
    pub nodes: usize,
    /// Without --config: jobs of the Libra paper's batch.
    #[arg(long, default_value_t = 100)]
    pub jobs: usize,
    /// Without --config: host cores the emulated nodes share in all (each
    /// node gets cores / nodes). Below the host's cores, so that the node
    /// processes keep their CPU beside the manager and the rest of the host.
    #[arg(long, default_value_t = 0.5)]
    pub cores: f64,
    /// Results directory.
    #[arg(long, default_value = "runs/calibrate")]
    pub out: PathBuf,
    /// Host-level calibration file to write (default: $LIBRATORY_CALIBRATION,
    /// else ~/.config/libratory/calibration.json).
    #[arg(long)]
    pub host_file: Option<PathBuf>,
}

/// One tested time scale.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScalePoint {
    /// Real seconds per trace second.
    pub time_scale: f64,
    /// Jobs in both runs.
    pub jobs: usize,
    /// Share of jobs accepted in both or rejected in both.
    pub admission_agreement: f64,
    /// Share of jobs whose deadline outcome (met, or not) is the same.
    pub outcome_agreement: f64,
    /// Live QoS satisfaction less the simulator's (percentage points).
    pub qos_diff_pp: f64,
    /// Share error the nodes measured (delivered vs assigned share, ppm):
    /// median and 99th percentile.
    pub share_error_ppm_p50: Option<f64>,
    /// See `share_error_ppm_p50`.
    pub share_error_ppm_p99: Option<f64>,
    /// Whether the three targets are met.
    pub meets_targets: bool,
    /// The live run's directory.
    pub run_dir: String,
}

/// What `calibrate` found, as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Calibration {
    /// Host name.
    pub host: String,
    /// Host cores.
    pub cores: usize,
    /// When (seconds since the Unix epoch).
    pub at_unix_s: u64,
    /// Preset, policy and seed of the workload.
    pub preset: String,
    /// Policy.
    pub policy: String,
    /// Seed.
    pub seed: u64,
    /// Emulated nodes.
    pub nodes: usize,
    /// The targets (admission share, outcome share, QoS pp).
    pub targets: (f64, f64, f64),
    /// Every tested scale, largest first.
    pub points: Vec<ScalePoint>,
    /// The smallest safe scale (None: no tested scale met the targets).
    pub safe_time_scale: Option<f64>,
    /// Where the full results are.
    pub out: String,
}

/// The host-level calibration file: the one given, else the
/// environment's ([`Environment::calibration_file`]).
pub fn host_file(given: Option<&Path>, env: &Environment) -> Option<PathBuf> {
    match given {
        Some(p) => Some(p.to_path_buf()),
        None => env.calibration_file(),
    }
}

/// For `libratory run`: a warning when `time_scale` is below the safe
/// scale this host measured (None when it is not, or nothing was measured).
pub fn below_safe_scale(time_scale: f64, env: &Environment) -> Option<String> {
    below_safe_scale_in(&host_file(None, env)?, time_scale)
}

/// [`below_safe_scale`] with the calibration file `path` (absent: None).
fn below_safe_scale_in(path: &Path, time_scale: f64) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let c: Calibration = match serde_json::from_str(&text) {
        Ok(c) => c,
        Err(e) => {
            return Some(format!(
                "{}: unreadable calibration ({e}); rerun libratory calibrate",
                path.display()
            ))
        }
    };
    match c.safe_time_scale {
        Some(safe) if time_scale < safe * (1.0 - 1e-9) => Some(format!(
            "time_scale {time_scale} is below {safe}, the smallest scale at which live runs matched \
             the simulator on this host ({}; preset {}, policy {}, {} nodes; {}): live results may \
             differ from the simulator's",
            c.host,
            c.preset,
            c.policy,
            c.nodes,
            path.display()
        )),
        None => Some(format!(
            "no tested time scale matched the simulator on this host ({}): live results may differ \
             from the simulator's",
            path.display()
        )),
        Some(_) => None,
    }
}

/// The node's minimum slice (node/src/spec.rs `SliceConfig::min_slice`).
const MIN_SLICE_S: f64 = 250e-6;

/// For `libratory run`: a warning when some jobs' whole processor time on
/// the smallest configured node (`actual / speed x time_scale x capacity`
/// real seconds) is under ten minimum slices, so that the node burns it in
/// a few slices at once instead of spreading it over the job's run.
pub fn tiny_parts(cfg: &ClusterConfig, actuals: &[f64], time_scale: f64) -> Option<String> {
    let per_trace_s = cfg
        .hosts
        .iter()
        .map(|h| h.capacity / h.speed)
        .fold(f64::INFINITY, f64::min);
    if !per_trace_s.is_finite() {
        return None;
    }
    let short = actuals
        .iter()
        .filter(|a| *a * time_scale * per_trace_s < 10.0 * MIN_SLICE_S)
        .count();
    (short > 0).then(|| {
        format!(
            "{short} of {} jobs need less than 10 minimum slices ({} ms) of processor time on the \
             smallest node (capacity / speed {per_trace_s}) at time_scale {time_scale}: they run in a \
             few slices, not spread over their runtime (raise time_scale or the capacity)",
            actuals.len(),
            10.0 * MIN_SLICE_S * 1e3
        )
    })
}

/// The calibration's own statistics of a live run against the simulation.
fn point(
    sim: &compare::RunJobs,
    live: &compare::RunJobs,
    scale: f64,
    dir: &Path,
) -> Result<ScalePoint> {
    let c = compare::compare(sim, live);
    // Per-job deadline outcome, whatever the nodes: rejected jobs count as
    // not met on both sides.
    let sim_met: std::collections::HashMap<_, _> =
        sim.records.iter().map(|r| (r.id, r.met())).collect();
    let mut same = 0usize;
    let mut both = 0usize;
    for r in &live.records {
        if let Some(&m) = sim_met.get(&r.id) {
            both += 1;
            same += usize::from(m == r.met());
        }
    }
    let outcome = if both == 0 {
        1.0
    } else {
        same as f64 / both as f64
    };
    let summary: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.join("summary.json"))
            .with_context(|| format!("reading {}/summary.json", dir.display()))?,
    )
    .with_context(|| format!("{}/summary.json", dir.display()))?;
    let share = &summary["node_latency_us"]["share_error_ppm"];
    let admission = c.identical_admission_share;
    let qos = c.qos_satisfaction_diff_pp;
    Ok(ScalePoint {
        time_scale: scale,
        jobs: both,
        admission_agreement: admission,
        outcome_agreement: outcome,
        qos_diff_pp: qos,
        share_error_ppm_p50: share["p50"].as_f64(),
        share_error_ppm_p99: share["p99"].as_f64(),
        meets_targets: admission >= TARGET_ADMISSION
            && outcome >= TARGET_OUTCOME
            && qos.abs() <= TARGET_QOS_PP,
        run_dir: dir.display().to_string(),
    })
}

/// The smallest scale that passes along with every larger one.
fn safe_scale(points: &[ScalePoint]) -> Option<f64> {
    let mut safe = None;
    for p in points {
        // Largest first.
        if !p.meets_targets {
            break;
        }
        safe = Some(p.time_scale);
    }
    safe
}

/// Runs the calibration (`env`: the trace cache, the host file's default
/// place, the manager's threads).
pub fn run(a: CalibrateArgs, env: &Environment) -> Result<ExitCode> {
    let mut scales = a.scales.clone();
    if scales.is_empty() || scales.iter().any(|s| !(*s > 0.0 && s.is_finite())) {
        bail!("--scales must be numbers > 0, got {:?}", a.scales);
    }
    scales.sort_by(|x, y| y.total_cmp(x));
    scales.dedup();
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let mut cfg = match &a.config {
        Some(p) => ClusterConfig::load(p)?,
        None => {
            let certs = a.out.join("certs");
            if !certs.join("ca.key").exists() {
                runcmd::certs(&certs, &["local".to_string()], &[], false)?;
            }
            if !(a.cores > 0.0 && a.cores.is_finite()) {
                bail!("--cores must be > 0, got {}", a.cores);
            }
            let mut c = runcmd::demo_config(
                &std::fs::canonicalize(&certs)?,
                0,
                a.processes,
                a.nodes,
                a.jobs,
            );
            for h in &mut c.hosts {
                h.capacity = (a.cores / (a.processes * a.nodes) as f64).min(1.0);
            }
            c
        }
    };
    if cfg.hosts.iter().any(|h| !h.is_local()) {
        bail!("calibrate measures this host: the configuration names remote hosts (ssh)");
    }
    let policy = cfg.workload.policy.clone();
    // The simulation, once.
    let sim_dir = a.out.join("simulated");
    simulate::run(
        SimulateArgs {
            trace: cfg.workload.trace.clone(),
            preset: cfg.workload.preset.clone(),
            policies: Some(vec![policy.clone()]),
            seed: cfg.workload.seed,
            sets: cfg.set_pairs(),
            out: Some(sim_dir.clone()),
            outputs: None,
            faults: None,
            batsim: Default::default(),
            workload: None,
            workload_flops: 1e9,
        },
        env,
    )
    .context("the simulation")?;
    let sim = compare::read_run(&sim_dir, Some(&policy))?;
    let mut points = Vec::new();
    for &s in &scales {
        cfg.manager.time_scale = s;
        let host = cfg
            .manager
            .listen
            .rsplit_once(':')
            .map_or("127.0.0.1", |(h, _)| h)
            .to_string();
        cfg.manager.listen = format!(
            "{host}:{}",
            net::free_udp_port().context("finding a free UDP port on loopback")?
        );
        let dir = a.out.join(format!("live-{s}"));
        eprintln!("calibrate: time scale {s}: live run into {}", dir.display());
        runcmd::run(
            &cfg,
            &dir,
            true,
            runcmd::Progress::Quiet,
            false,
            runcmd::RunExtras::default(),
            env,
        )
        .with_context(|| format!("the live run at time scale {s}"))?;
        let live = compare::read_run(&dir, Some(&policy))?;
        points.push(point(&sim, &live, s, &dir)?);
    }
    let safe = safe_scale(&points);
    let usage = crate::live::procstat::own_usage();
    let cal = Calibration {
        host: usage.hostname,
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        at_unix_s: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        preset: sim.preset.clone(),
        policy: policy.clone(),
        seed: sim.seed,
        nodes: cfg.total_nodes(),
        targets: (TARGET_ADMISSION, TARGET_OUTCOME, TARGET_QOS_PP),
        points,
        safe_time_scale: safe,
        out: a.out.display().to_string(),
    };
    print!("{}", render(&cal));
    let json = serde_json::to_string_pretty(&cal)?;
    let local = a.out.join("calibration.json");
    std::fs::write(&local, &json).with_context(|| format!("writing {}", local.display()))?;
    let svg = a.out.join("calibration.svg");
    plot::write_svg(&svg, &chart(&cal))?;
    println!("wrote {} and {}", local.display(), svg.display());
    if let Some(hf) = host_file(a.host_file.as_deref(), env) {
        if let Some(d) = hf.parent() {
            std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
        }
        std::fs::write(&hf, &json).with_context(|| format!("writing {}", hf.display()))?;
        println!(
            "host calibration stored in {} (libratory run warns below the safe scale)",
            hf.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn opt(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{x:.0}"))
}

/// The table and the recommendation.
pub fn render(c: &Calibration) -> String {
    let mut s = format!(
        "calibration on {} ({} cores): preset {}, policy {}, seed {}, {} nodes\n\
         targets: accept/reject >= {:.0}% identical, deadline outcome >= {:.0}% identical, |QoS diff| <= {} pp\n\n\
         {:>10} {:>6} {:>10} {:>10} {:>9} {:>12} {:>12}  ok\n",
        c.host,
        c.cores,
        c.preset,
        c.policy,
        c.seed,
        c.nodes,
        c.targets.0 * 100.0,
        c.targets.1 * 100.0,
        c.targets.2,
        "time_scale",
        "jobs",
        "accept %",
        "outcome %",
        "QoS pp",
        "share p50",
        "share p99",
    );
    for p in &c.points {
        s += &format!(
            "{:>10} {:>6} {:>10.2} {:>10.2} {:>+9.2} {:>12} {:>12}  {}\n",
            p.time_scale,
            p.jobs,
            p.admission_agreement * 100.0,
            p.outcome_agreement * 100.0,
            p.qos_diff_pp,
            opt(p.share_error_ppm_p50),
            opt(p.share_error_ppm_p99),
            if p.meets_targets { "yes" } else { "no" }
        );
    }
    s += &match c.safe_time_scale {
        Some(x) => format!(
            "\nrecommended: time_scale >= {x} (the smallest tested scale that meets the targets, as do all larger ones)\n"
        ),
        None => "\nno tested time scale meets the targets on this host: try larger scales\n".into(),
    };
    s
}

fn chart(c: &Calibration) -> Chart {
    let line = |label: &str, f: &dyn Fn(&ScalePoint) -> f64| Line {
        label: label.into(),
        points: c
            .points
            .iter()
            .rev()
            .map(|p| {
                let v = f(p);
                Point {
                    x: p.time_scale,
                    mean: v,
                    min: v,
                    max: v,
                }
            })
            .collect(),
    };
    Chart {
        title: "Live vs simulated, by time compression".into(),
        subtitle: format!(
            "{} on {} ({} nodes, {} cores); targets 98% / 95% / 1 pp",
            c.policy, c.host, c.nodes, c.cores
        ),
        x_label: "time_scale (real s per trace s)".into(),
        y_label: "% of jobs identical; QoS difference in pp".into(),
        x_axis: XAxis::Numeric,
        lines: vec![
            line("accept/reject identical (%)", &|p| {
                p.admission_agreement * 100.0
            }),
            line("deadline outcome identical (%)", &|p| {
                p.outcome_agreement * 100.0
            }),
            line("|QoS difference| (pp)", &|p| p.qos_diff_pp.abs()),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(scale: f64, ok: bool) -> ScalePoint {
        ScalePoint {
            time_scale: scale,
            jobs: 10,
            admission_agreement: 1.0,
            outcome_agreement: 1.0,
            qos_diff_pp: 0.0,
            share_error_ppm_p50: None,
            share_error_ppm_p99: None,
            meets_targets: ok,
            run_dir: String::new(),
        }
    }

    #[test]
    fn run_warns_below_the_stored_safe_scale_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("calibration.json");
        assert_eq!(
            below_safe_scale_in(&path, 0.01),
            None,
            "no file, no warning"
        );
        let mut c = Calibration {
            host: "h".into(),
            cores: 2,
            at_unix_s: 0,
            preset: "libra".into(),
            policy: "libra".into(),
            seed: 1,
            nodes: 4,
            targets: (TARGET_ADMISSION, TARGET_OUTCOME, TARGET_QOS_PP),
            points: vec![p(0.05, true), p(0.02, false)],
            safe_time_scale: Some(0.05),
            out: String::new(),
        };
        std::fs::write(&path, serde_json::to_string(&c).unwrap()).unwrap();
        let w = below_safe_scale_in(&path, 0.02).expect("0.02 < 0.05 warns");
        assert!(w.contains("0.05") && w.contains("calibration.json"), "{w}");
        assert_eq!(below_safe_scale_in(&path, 0.05), None);
        assert_eq!(below_safe_scale_in(&path, 0.1), None);
        c.safe_time_scale = None;
        std::fs::write(&path, serde_json::to_string(&c).unwrap()).unwrap();
        assert!(below_safe_scale_in(&path, 1.0).is_some());
        std::fs::write(&path, "{").unwrap();
        assert!(below_safe_scale_in(&path, 1.0)
            .unwrap()
            .contains("unreadable"));
    }

    #[test]
    fn run_warns_about_parts_shorter_than_ten_minimum_slices() {
        let cfg = ClusterConfig::parse(
            Path::new("t.toml"),
            "[manager]\nlisten = \"127.0.0.1:1\"\ncerts = \"c\"\ntime_scale = 0.01\n\
             [workload]\npreset = \"libra\"\npolicy = \"libra\"\n\
             [[hosts]]\nname = \"a\"\nnodes_per_process = 2\ncapacity = 0.002\n",
        )
        .unwrap();
        // 2.5 ms of processor time at capacity 0.002 and scale 0.01 is
        // 2.5e-3 / (0.002 x 0.01) = 125 trace seconds of work.
        let w = tiny_parts(&cfg, &[100.0, 130.0, 10.0], 0.01).unwrap();
        assert!(w.starts_with("2 of 3 jobs"), "{w}");
        // At scale 0.1 the bound is 12.5 trace seconds.
        let w = tiny_parts(&cfg, &[100.0, 130.0, 10.0], 0.1).unwrap();
        assert!(w.starts_with("1 of 3 jobs"), "{w}");
        assert_eq!(tiny_parts(&cfg, &[100.0, 130.0], 0.1), None);
    }

    #[test]
    fn the_safe_scale_is_the_smallest_passing_one_with_all_larger_passing() {
        assert_eq!(
            safe_scale(&[p(0.1, true), p(0.05, true), p(0.02, false)]),
            Some(0.05)
        );
        // A pass below a failure is luck, not safety.
        assert_eq!(
            safe_scale(&[p(0.1, true), p(0.05, false), p(0.02, true)]),
            Some(0.1)
        );
        assert_eq!(safe_scale(&[p(0.1, false), p(0.05, true)]), None);
    }
}
