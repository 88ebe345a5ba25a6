//! What a live run sets up before it starts: the experiment and workload
//! its configuration describes, the journal's header, the fault plan of
//! `--faults`, and the warnings about a time scale too small for the
//! workload.

use anyhow::{Context, Result};
use common::experiment::Experiment;
use common::workload;

use crate::cluster::config::ClusterConfig;
use crate::faults::ScenarioFile;
use crate::live::journal::{self, Header};
use crate::results::rundir::{self, Invocation, Log};

/// The host of each node process in launch order.
pub fn process_hosts(cfg: &ClusterConfig) -> Vec<&crate::cluster::config::HostSection> {
    cfg.hosts
        .iter()
        .flat_map(|h| std::iter::repeat_n(h, h.processes))
        .collect()
}

/// Builds the experiment and workload a config describes.
pub fn experiment_of(cfg: &ClusterConfig) -> Result<(Experiment, workload::Workload)> {
    let pairs = cfg.set_pairs();
    let mut exp = Experiment::configured(
        &cfg.workload.preset,
        cfg.workload.seed,
        pairs.iter().map(String::as_str),
        "[workload] set",
    )?;
    exp.policies = vec![cfg.workload.policy.clone()];
    let trace = match exp.params.source {
        workload::Source::Trace => Some(
            cfg.workload
                .trace
                .clone()
                .context("the preset reads a trace: give [workload] trace = \"FILE.swf.gz\"")?,
        ),
        workload::Source::SyntheticLibra => {
            if let Some(t) = &cfg.workload.trace {
                anyhow::bail!(
                    "[workload] trace = {:?}: preset '{}' generates its workload and reads no trace; remove the line or use a preset that reads one",
                    t.display().to_string(),
                    exp.params.preset
                );
            }
            None
        }
    };
    let wl = workload::build(&exp.params, trace.as_deref())?;
    Ok((exp, wl))
}

/// The journal's header: everything `recover` needs to rebuild the result
/// files without the configuration file, the trace or this process.
pub fn journal_header(
    inv: &Invocation,
    cfg: &ClusterConfig,
    exp: &Experiment,
    wl: &workload::Workload,
    trace: Option<&rundir::TraceFacts>,
    faults: Option<&serde_json::Value>,
) -> Result<Header> {
    Ok(Header {
        format: journal::FORMAT.into(),
        command_line: inv.command_line.clone(),
        working_dir: inv.working_dir.clone(),
        started_unix: inv.started_unix,
        started_utc: inv.started_utc.clone(),
        seed: exp.params.seed,
        policy: cfg.workload.policy.clone(),
        time_scale: cfg.manager.time_scale,
        cluster: cfg.clone(),
        experiment: exp.clone(),
        trace: trace.map(serde_json::to_value).transpose()?,
        workload: journal::JournalWorkload {
            facts: rundir::WorkloadFacts::of(wl, exp.params.nodes),
            duplicates: wl.duplicates,
        },
        faults: faults.cloned(),
    })
}

/// Warns on stderr about jobs a time scale compresses to a few slicing
/// periods.
pub fn warn_short_jobs(wl: &workload::Workload, time_scale: f64) {
    // A job compressed to a few slicing periods (10 ms by default) cannot
    // be sliced faithfully: say how many there are.
    let period = 0.010;
    let short = wl
        .jobs
        .iter()
        .filter(|j| j.actual_runtime * time_scale < 10.0 * period)
        .count();
    if short > 0 {
        eprintln!(
            "warning: {short} of {} jobs last less than 10 slicing periods ({} ms) of real time at time_scale {time_scale}; \
             their shares are coarse (raise time_scale to compress less)",
            wl.jobs.len(),
            (10.0 * period * 1000.0) as u64
        );
    }
}

/// The plan of a fault scenario (`--faults`) for a live run, and the
/// manifest's facts about it, logged fault by fault. `executes(p)` says
/// whether the run's injector reaches node process `p` (launch order),
/// else why not: a fault of a process it does not reach is refused.
pub fn fault_plan(
    sf: &ScenarioFile,
    cfg: &ClusterConfig,
    executes: impl Fn(usize) -> Result<(), String>,
    wl: &workload::Workload,
    seed: u64,
    log: &mut Log,
) -> Result<(common::faults::Plan, serde_json::Value)> {
    let mut ranges = Vec::new();
    let mut n = 0;
    for h in &cfg.hosts {
        for _ in 0..h.processes {
            ranges.push(n..n + h.nodes_per_process);
            n += h.nodes_per_process;
        }
    }
    let shape = common::faults::ClusterShape { processes: ranges };
    let horizon = match (wl.jobs.first(), wl.jobs.last()) {
        (Some(f), Some(l)) => l.spec.details.submit_time - f.spec.details.submit_time,
        _ => 0.0,
    };
    let plan = sf.expand(&shape, horizon, seed)?;
    check_live(&plan, executes)?;
    log.say(format_args!(
        "faults: {} (seed {}{}), {} faults",
        sf.path.display(),
        plan.seed,
        if sf.scenario.seed.is_some() {
            ""
        } else {
            ", the workload's"
        },
        plan.faults.len()
    ));
    for line in crate::faults::describe(&plan, horizon) {
        log.say(format_args!("  {line}"));
    }
    let facts = sf.facts(&plan, &shape);
    Ok((plan, facts))
}

/// The node's minimum slice (node/src/spec.rs `SliceConfig::min_slice`).
const MIN_SLICE_S: f64 = 250e-6;

/// A warning when some jobs' whole processor time on the smallest
/// configured node (`actual / speed x time_scale x capacity` real seconds)
/// is under ten minimum slices, so that the node burns it in a few slices
/// at once instead of spreading it over the job's run.
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

/// `libratory config check`: parse and check a cluster configuration,
/// print a one-line summary. The fault scenario it names is read and
/// expanded for this cluster as a run would (errors name the scenario's
/// file, line and key), which is why this lives here and not in
/// `cluster`: it needs the run's workload.
pub fn config_check(path: &std::path::Path) -> Result<()> {
    let cfg = ClusterConfig::load(path)?;
    if let Some(f) = &cfg.workload.faults {
        let sf = ScenarioFile::load(f)?;
        let (exp, wl) = experiment_of(&cfg)?;
        let mut log = Log::new();
        fault_plan(&sf, &cfg, |_| Ok(()), &wl, exp.params.seed, &mut log)?;
    }
    println!("{}: ok: {}", path.display(), cfg.summary());
    Ok(())
}

/// Refuses the faults a live run cannot execute (none the scenario format
/// allows, today) and faults of processes `executes` says no executor
/// reaches (`Err(why)`).
fn check_live(
    plan: &common::faults::Plan,
    executes: impl Fn(usize) -> Result<(), String>,
) -> Result<()> {
    for f in &plan.faults {
        match (f.kind, f.target) {
            // Executed by the run's supervisor (`live::supervise`).
            (common::faults::FaultKind::ManagerCrash, common::faults::Target::Manager) => {}
            (common::faults::FaultKind::ManagerCrash, _) | (_, common::faults::Target::Manager) => {
                anyhow::bail!(
                    "{f}: live runs do not execute {} of {}",
                    f.kind.name(),
                    f.target
                )
            }
            _ => {
                let Some((p, _)) = plan.process_and_node(f) else {
                    anyhow::bail!("{f}: the cluster has no {}", f.target);
                };
                if let Err(why) = executes(p) {
                    anyhow::bail!("{f}: {why}");
                }
            }
        }
    }
    Ok(())
}

/// The live manager's configuration of a run of `cfg` (`run` and
/// `resume` alike): its settings from the cluster configuration, the
/// journal `journal`, no web view, no external scheduler, not serving,
/// not resuming; callers set what differs with struct update syntax.
pub fn live_config(
    cfg: &ClusterConfig,
    exp: &Experiment,
    listen: std::net::SocketAddr,
    progress: crate::live::progress::Progress,
    journal: journal::Journal,
    env: &crate::environment::Environment,
) -> Result<crate::live::manager::LiveConfig> {
    use crate::live::progress::Progress;
    use std::time::Duration;
    Ok(crate::live::manager::LiveConfig {
        listen,
        certs: cfg.manager.certs.clone(),
        time_scale: cfg.manager.time_scale,
        expect_nodes: cfg.total_nodes(),
        start_timeout: Duration::from_secs_f64(cfg.manager.start_timeout_s),
        policy: cfg.workload.policy.clone(),
        policy_config: exp.policy.clone(),
        report_ms: cfg.manager.report_ms,
        heartbeat_ms: cfg.manager.heartbeat_ms,
        histogram_ms: cfg.manager.histogram_ms,
        link_timeout: Duration::from_secs_f64(cfg.manager.link_timeout_s),
        histogram_timeout: Duration::from_secs(5),
        progress: matches!(progress, Progress::Bar),
        progress_lines: match progress {
            Progress::Lines(every) => Some(every),
            Progress::Quiet | Progress::Bar => None,
        },
        serve: false,
        journal: Some(journal),
        view: None,
        threads: crate::live::manager::Threads::parse(env.manager_threads().as_deref())?,
        replay_started: None,
        batsim: Default::default(),
        resume: None,
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

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
}
