//! `libratory calibrate`: how far this host can compress trace time before
//! live results stop matching the simulator.
//!
//! One preset's workload runs live (local node processes, as `demo` or
//! `run --spawn-local`) at several time scales and once in the simulator;
//! each live run is compared with the simulation, in memory, by the
//! compare code. The recommended scale is the smallest tested one at
//! which it, and every larger tested scale, meets the fidelity targets (a
//! noisy host can pass a small scale by luck after failing a larger one:
//! that is not trusted). The result goes to `calibration.json` in the
//! output directory and to a host-level file that `libratory run` reads
//! to warn about smaller scales.
//!
//! It sits above both `live` and `lab`: it drives one of each.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context as _, Result};

use crate::cluster::config::ClusterConfig;
use crate::environment::Environment;
use crate::lab::{compare, simulate};
use crate::live::{certs, demo, progress::Progress, run as live_run};
use crate::results::calibration::{
    host_file, Calibration, ScalePoint, TARGET_ADMISSION, TARGET_OUTCOME, TARGET_QOS_PP,
};
use crate::results::plot::{self, Chart, Line, Point, XAxis};

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

/// The calibration's own statistics of a live run against the simulation;
/// `share` is the nodes' share error (p50, p99 in ppm) when they measured
/// it.
fn point(
    sim: &compare::RunJobs,
    live: &compare::RunJobs,
    scale: f64,
    share: (Option<f64>, Option<f64>),
    dir: &Path,
) -> ScalePoint {
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
    let admission = c.identical_admission_share;
    let qos = c.qos_satisfaction_diff_pp;
    ScalePoint {
        time_scale: scale,
        jobs: both,
        admission_agreement: admission,
        outcome_agreement: outcome,
        qos_diff_pp: qos,
        share_error_ppm_p50: share.0,
        share_error_ppm_p99: share.1,
        meets_targets: admission >= TARGET_ADMISSION
            && outcome >= TARGET_OUTCOME
            && qos.abs() <= TARGET_QOS_PP,
        run_dir: dir.display().to_string(),
    }
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
                certs::certs(&certs, &["local".to_string()], &[], false)?;
            }
            if !(a.cores > 0.0 && a.cores.is_finite()) {
                bail!("--cores must be > 0, got {}", a.cores);
            }
            let mut c = demo::demo_config(
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
    // The simulation, once, in memory; its run directory is written for
    // the reader.
    let sim = simulate::simulate_policy(
        &cfg.workload.preset,
        cfg.workload.seed,
        &cfg.set_pairs(),
        cfg.workload.trace.clone(),
        &policy,
        env,
    )
    .context("the simulation")?;
    let sim_dir = a.out.join("simulated");
    sim.write(&sim_dir).context("the simulation")?;
    let preset = sim.experiment.params.preset.clone();
    let seed = sim.experiment.params.seed;
    let sim = compare::RunJobs::in_memory(
        &sim_dir,
        "simulated",
        &preset,
        seed,
        None,
        sim.run.summary,
        sim.run.outcome.records,
    );
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
        let live = live_run::run(
            &cfg,
            &dir,
            true,
            Progress::Quiet,
            false,
            live_run::RunExtras::default(),
            env,
        )
        .with_context(|| format!("the live run at time scale {s}"))?
        .context("a calibration run is not supervised (it has no faults)")?;
        let share = live.node_latency_us.get("share_error_ppm");
        let share = (share.map(|p| p.p50 as f64), share.map(|p| p.p99 as f64));
        let records = live.outcome.records;
        let summary = common::metrics::Summary::compute(&policy, &records);
        let live =
            compare::RunJobs::in_memory(&dir, "live", &preset, seed, Some(s), summary, records);
        points.push(point(&sim, &live, s, share, &dir));
    }
    let safe = safe_scale(&points);
    let usage = crate::live::procstat::own_usage();
    let cal = Calibration {
        host: usage.hostname,
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        at_unix_s: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        preset,
        policy: policy.clone(),
        seed,
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

    /// What calibrate compares in memory is what `libratory compare`
    /// finds in the files the same runs write: two policies of one
    /// workload, held in memory, then written and read back.
    #[test]
    fn comparing_in_memory_is_comparing_the_written_runs() {
        let env = Environment::from_pairs(&[("LIBRATORY_CACHE_DIR", "off")]);
        let sets = ["jobs=40".to_string(), "nodes=8".to_string()];
        let dir = tempfile::tempdir().unwrap();
        let mut mem = Vec::new();
        let mut disk = Vec::new();
        for policy in ["libra", "edf"] {
            let s = simulate::simulate_policy("libra", Some(7), &sets, None, policy, &env).unwrap();
            let out = dir.path().join(policy);
            s.write(&out).unwrap();
            disk.push(compare::read_run(&out, Some(policy)).unwrap());
            mem.push(compare::RunJobs::in_memory(
                &out,
                "simulated",
                &s.experiment.params.preset,
                s.experiment.params.seed,
                None,
                s.run.summary,
                s.run.outcome.records,
            ));
        }
        let json = |c: compare::Comparison| {
            let mut v = serde_json::to_value(c).unwrap();
            for side in ["a", "b"] {
                v[side]["jobs_file"] = serde_json::Value::Null;
            }
            v
        };
        let from_mem = compare::compare(&mem[0], &mem[1]);
        // The two policies place jobs differently: the comparison has
        // jobs to list, not only equal counts.
        assert!(
            from_mem.common_jobs == 40 && from_mem.identical_decisions < 40,
            "{} of {} decisions identical",
            from_mem.identical_decisions,
            from_mem.common_jobs
        );
        assert_eq!(json(from_mem), json(compare::compare(&disk[0], &disk[1])));
    }

    /// A point's verdict follows from its comparison: a live run that
    /// decided as the simulation did meets the targets; one that decided
    /// otherwise (another policy's run of the same workload standing in
    /// for a live run gone wrong) does not. The integration test in
    /// manager/tests/scale.rs cannot choose which way a real host's runs
    /// go; this one can.
    #[test]
    fn a_point_meets_the_targets_only_when_the_runs_agree() {
        let env = Environment::from_pairs(&[("LIBRATORY_CACHE_DIR", "off")]);
        let sets = ["jobs=40".to_string(), "nodes=2".to_string()];
        let run = |policy: &str| {
            let s = simulate::simulate_policy("libra", Some(7), &sets, None, policy, &env).unwrap();
            compare::RunJobs::in_memory(
                Path::new(policy),
                "simulated",
                &s.experiment.params.preset,
                s.experiment.params.seed,
                None,
                s.run.summary,
                s.run.outcome.records,
            )
        };
        let (libra, easy) = (run("libra"), run("fcfs-bf"));
        let same = point(&libra, &libra, 0.05, (None, None), Path::new("x"));
        assert_eq!(same.jobs, 40);
        assert_eq!(same.admission_agreement, 1.0);
        assert_eq!(same.outcome_agreement, 1.0);
        assert_eq!(same.qos_diff_pp, 0.0);
        assert!(same.meets_targets, "{same:?}");
        let c = compare::compare(&libra, &easy);
        let other = point(&libra, &easy, 0.05, (None, None), Path::new("x"));
        assert_eq!(other.admission_agreement, c.identical_admission_share);
        assert_eq!(other.qos_diff_pp, c.qos_satisfaction_diff_pp);
        // Libra rejects jobs that cannot meet their deadlines on 2 nodes;
        // EASY backfilling admits every job: the share of identical
        // admissions is below the 0.98 target, so the point fails.
        assert!(other.admission_agreement < TARGET_ADMISSION, "{other:?}");
        assert!(!other.meets_targets, "{other:?}");
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
