//! `libratory run`: a configuration run live. It sets the run up
//! ([`crate::live::setup`]), starts local node processes when asked, hands
//! the run to [`crate::live::manager::run`], and writes the run directory
//! ([`crate::live::run_files`]).

use std::collections::BTreeMap;
use std::fs;
use std::io::{IsTerminal, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{bail, Context, Result};

use crate::cluster::config::{ClusterConfig, HostSection};
use crate::environment::Environment;
use crate::live::journal::{JournalWriter, JOURNAL};
use crate::live::local_nodes::LocalNodes;
use crate::live::manager::{self as live, LiveConfig, LiveOutcome};
use crate::live::progress::Progress;
use crate::live::{inject, recover, run_files, setup, supervise};
use crate::results::calibration;
use crate::results::histograms::Percentiles;
use crate::results::rundir::{self, Invocation, Log, Manifest};

/// What a live run takes besides its configuration and where it goes.
#[derive(Default)]
pub struct RunExtras<'a> {
    /// The live view's address and token (`--http`, `--http-token`).
    pub http: Option<crate::live::liveview::ViewAddr>,
    /// A fault scenario (`--faults FILE`) executed on the local node
    /// processes (see [`crate::live::inject`]).
    pub faults: Option<&'a Path>,
    /// The external scheduler of the `batsim` policy.
    pub batsim: crate::batsim::BatsimArgs,
}

/// `libratory run`: the results go to `out`, else the configuration's
/// `[output] dir`, else `runs/<config file stem>`.
// The command's options one by one, as `main` parses them.
#[allow(clippy::too_many_arguments)]
pub fn from_file(
    config: &Path,
    spawn_local: bool,
    out: Option<PathBuf>,
    serve: bool,
    progress_every: Option<f64>,
    http: Option<crate::live::liveview::ViewAddr>,
    faults: Option<&Path>,
    batsim: &crate::batsim::BatsimArgs,
    env: &Environment,
) -> Result<()> {
    let cfg = ClusterConfig::load(config)?;
    let out = out.or_else(|| cfg.output.dir.clone()).unwrap_or_else(|| {
        let stem = config
            .file_stem()
            .map_or("run".into(), |s| s.to_string_lossy().to_string());
        PathBuf::from("runs").join(stem)
    });
    let progress = Progress::choose(progress_every, std::io::stderr().is_terminal())?;
    // `--faults` wins over the configuration's `[workload] faults`.
    let faults = faults.or(cfg.workload.faults.as_deref());
    let extras = RunExtras {
        http,
        faults,
        batsim: batsim.clone(),
    };
    run(&cfg, &out, spawn_local, progress, serve, extras, env).map(drop)
}

/// What a live run returns beside its run directory: what `calibrate`
/// compares with the simulator.
pub struct LiveRun {
    /// The manager's outcome: records, parts, histograms.
    pub outcome: LiveOutcome,
    /// The node processes' histograms merged by name, as percentiles
    /// (`summary.json`'s `node_latency_us`).
    pub node_latency_us: BTreeMap<String, Percentiles>,
}

/// Runs the configuration live and writes its run directory into `out`;
/// when `spawn_local` is set, starts the node processes of every host
/// without an ssh target on this machine. A fault scenario that crashes
/// the manager makes this process the run's supervisor
/// ([`crate::live::supervise`]): the run goes on in child processes, and
/// this returns `None` once they are done.
pub fn run(
    cfg: &ClusterConfig,
    out: &Path,
    spawn_local: bool,
    progress: Progress,
    serve: bool,
    extras: RunExtras<'_>,
    env: &Environment,
) -> Result<Option<LiveRun>> {
    let inv = Invocation::capture();
    let RunExtras {
        http,
        faults,
        batsim,
    } = extras;
    // Read first: a bad scenario is refused before anything starts.
    let scenario = faults.map(crate::faults::ScenarioFile::load).transpose()?;
    // The live view binds first, so a taken port fails before anything runs.
    let view = http.map(crate::live::liveview::Server::start).transpose()?;
    if let Some(v) = &view {
        eprintln!("live view: {}", v.url());
    }
    let (exp, wl) = setup::experiment_of(cfg)?;
    let seed = exp.params.seed;
    let listen: SocketAddr = cfg.manager.listen.parse()?;
    // Local node processes dial the advertised address, else loopback.
    let local_dial = cfg.local_dial_address();
    fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let mut log = Log::new();
    recover::recover_interrupted(out, &mut log)?;
    // Before the journal: a scenario a live run cannot execute leaves
    // nothing behind.
    let supervised = std::env::var_os(supervise::SUPERVISED).is_some();
    let hosts_of = setup::process_hosts(cfg);
    let reaches = |p: usize| match hosts_of.get(p) {
        // Without --spawn-local the node processes are started elsewhere
        // (the launch scripts), and so are their faults (`inject`).
        _ if !spawn_local => Ok(()),
        Some(h) if h.is_local() => Ok(()),
        Some(h) => Err(format!(
            "node process {p} runs on host {} ({}), which this run does not start: \
             scripts/launch.sh --faults executes the faults of node processes on other hosts",
            h.name,
            h.ssh.as_deref().unwrap_or_default()
        )),
        None => Err(format!("the configuration has no node process {p}")),
    };
    let faults = scenario
        .as_ref()
        .map(|sf| setup::fault_plan(sf, cfg, reaches, &wl, seed, &mut log))
        .transpose()?;
    let first_submit = wl.jobs.first().map_or(0.0, |j| j.spec.details.submit_time);
    if let Some((plan, _)) = &faults {
        let node_faults = !crate::live::inject::steps(plan).is_empty();
        if node_faults && spawn_local {
            crate::live::inject::cmd::check_operator(&cfg.manager.certs)?;
        }
        if node_faults && !spawn_local && !supervised {
            log.say(format_args!(
                "faults: this run starts no node process: its node faults are executed by \
                 `libratory inject --config CONFIG --faults FILE --run {}` (scripts/launch.sh --faults starts it)",
                out.display()
            ));
        }
        if supervise::needed(plan) && !supervised {
            let st = supervise::run(
                plan,
                supervise::Context {
                    cfg,
                    out,
                    spawn_local,
                    first_submit,
                },
                &mut log,
            )?;
            if !st.success() {
                bail!("the supervised run ended with {st}");
            }
            return Ok(None);
        }
    }
    let trace = wl.trace.clone();
    let trace_facts = trace.as_deref().map(rundir::trace_facts).transpose()?;
    // The manager's certificates before the journal and the node
    // processes: a run that cannot listen leaves nothing behind.
    net::check_server_identity(&cfg.manager.certs).with_context(|| {
        format!(
            "the manager's certificates in {} (make them with `libratory certs --out {} --nodes NAME,...`; \
             the launch scripts make them when the directory does not exist)",
            cfg.manager.certs.display(),
            cfg.manager.certs.display()
        )
    })?;
    let writer = JournalWriter::create(
        &out.join(JOURNAL),
        setup::journal_header(
            &inv,
            cfg,
            &exp,
            &wl,
            trace_facts.as_ref(),
            faults.as_ref().map(|(_, facts)| facts),
        )?,
    )?;
    log.say(format_args!(
        "libratory run: policy {}, preset {}, seed {seed}, {} jobs, time scale {} ({} real s per trace s), {} emulated nodes expected",
        cfg.workload.policy,
        exp.params.preset,
        wl.jobs.len(),
        cfg.manager.time_scale,
        cfg.manager.time_scale,
        cfg.total_nodes()
    ));
    setup::warn_short_jobs(&wl, cfg.manager.time_scale);
    if let Some(w) = calibration::below_safe_scale(cfg.manager.time_scale, env) {
        eprintln!("warning: {w}");
    }
    let actuals: Vec<f64> = wl.jobs.iter().map(|j| j.actual_runtime).collect();
    if let Some(w) = setup::tiny_parts(cfg, &actuals, cfg.manager.time_scale) {
        eprintln!("warning: {w}");
    }
    let live_cfg = LiveConfig {
        serve,
        view: view.as_ref().map(|v| v.publisher.clone()),
        batsim,
        ..setup::live_config(cfg, &exp, listen, progress, writer.journal(), env)?
    };
    // (faults) The injector runs beside the manager, unless the run's
    // supervisor holds the node processes and runs it.
    let injector_plan = faults
        .as_ref()
        .filter(|_| spawn_local && !supervised)
        .map(|(p, _)| p.clone());
    let reporting = (local_dial, cfg.manager.certs.clone(), out.join(JOURNAL));
    let fault_control = faults.is_some();
    let jobs = wl.jobs.clone();
    let local_hosts: Vec<&HostSection> = cfg.hosts.iter().filter(|h| h.is_local()).collect();
    let logs = out.join("logs");
    // The manager's histograms count from here (the logs' StartTime).
    let started = SystemTime::now();
    let (outcome, exits, manager_seconds): (LiveOutcome, Vec<(String, String)>, f64) =
        actix_rt::System::new().block_on(async move {
            // Under a supervisor, the supervisor starts them (they outlive
            // the manager it kills).
            let nodes = if spawn_local && !supervised {
                Some(LocalNodes::spawn(
                    cfg,
                    &local_hosts,
                    local_dial,
                    &logs,
                    fault_control,
                )?)
            } else {
                None
            };
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let injector = match (&nodes, injector_plan) {
                (Some(n), Some(plan)) => Some(inject::spawn(
                    plan,
                    cfg.manager.time_scale,
                    first_submit,
                    reporting.2,
                    Box::new(crate::live::inject::exec::Children::of(n)),
                    inject::report::Reporter::start(reporting.0, reporting.1).quiet(),
                    stop.clone(),
                )),
                _ => None,
            };
            let shutdown = stop_signal();
            let outcome = live::run(live_cfg, jobs, shutdown).await;
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            if let Some(h) = injector {
                let _ = h.join();
            }
            let manager_seconds = started.elapsed().unwrap_or_default().as_secs_f64();
            let mut exits = Vec::new();
            if let Some(n) = nodes {
                for (label, status) in n.finish(Duration::from_secs(5)) {
                    if !status.contains("exit status: 0") {
                        eprintln!("node process {label}: {status}");
                    }
                    exits.push((label, status));
                }
            }
            outcome.map(|o| (o, exits, manager_seconds))
        })?;
    let node_facts = run_files::node_process_facts(&outcome, &exits);
    let (files, node_latency_us) = run_files::write_live_results(
        out,
        &exp,
        &wl,
        cfg.manager.time_scale,
        &outcome,
        (started, manager_seconds),
        &mut log,
    )?;
    // The result files are written: the journal is complete.
    let files = run_files::end_journal(writer, outcome.wall_seconds, &mut log, files);
    let config = run_files::LiveRunConfig {
        experiment: &exp,
        cluster: cfg,
    };
    let manifest =
        Manifest::new("run", &inv, seed, &config, trace_facts.as_ref(), &files).live(&node_facts);
    let manifest = match &faults {
        Some((_, facts)) => manifest.with_faults(facts),
        None => manifest,
    };
    rundir::finish(
        out,
        manifest,
        &mut log,
        format_args!(
            "\nresults in {o} (summary.json, jobs-{p}.csv/.jsonl, out_jobs-{p}.csv, schedule-{p}.swf, parts-{p}.csv, histograms/*.hlog, journal.jsonl, logs/, manifest.json, log.txt; see it: libratory report {o})",
            o = out.display(),
            p = cfg.workload.policy
        ),
    )?;
    std::io::stdout().flush()?;
    Ok(Some(LiveRun {
        outcome,
        node_latency_us,
    }))
}

/// Resolves on Ctrl-C (SIGINT) or SIGTERM (`kill`, `scancel`, a batch
/// system's time limit), naming which: either ends the run early and the
/// results so far are still written.
pub(crate) async fn stop_signal() -> String {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("warning: SIGTERM will not stop the run cleanly: {e}");
            let _ = tokio::signal::ctrl_c().await;
            return "interrupted (Ctrl-C)".into();
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => "interrupted (Ctrl-C)".into(),
        _ = term.recv() => "terminated (SIGTERM)".into(),
    }
}
