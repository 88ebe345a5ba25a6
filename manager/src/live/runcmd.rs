//! The live commands: `libratory certs`, `libratory run` and
//! `libratory demo`. They set up a live run (certificates, configuration,
//! local node processes), hand it to [`crate::live::manager::run`], and write the
//! same run directory as `simulate` (through `rundir`, `mode: "live"`),
//! plus the latency histograms and the node processes' logs.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime};

use anyhow::{bail, Context, Result};
use common::experiment::Experiment;
use common::metrics::Summary;
use common::workload;
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::Histogram;
use serde::Serialize;

use crate::cluster::config::{ClusterConfig, HostSection};
use crate::environment::Environment;
use crate::live::journal::{self, Entry, Header, JournalWriter, JOURNAL};
use crate::live::manager::{self as live, LiveConfig, LiveOutcome, Threads};

use crate::results::output;
use crate::results::rundir::{self, Invocation, Log, Manifest, NodeProcessFact, PolicyResult, Run};

/// `libratory certs`: a cluster CA, the manager's certificate, the client's
/// and the viewer's, and one per node name; or more node certificates
/// (`add`); or revocations.
pub fn certs(out: &Path, nodes: &[String], manager_names: &[String], add: bool) -> Result<()> {
    certs_or_revoke(out, nodes, manager_names, add, &[])
}

/// `libratory certs` with `--revoke`: revocation goes alone.
pub fn certs_or_revoke(
    out: &Path,
    nodes: &[String],
    manager_names: &[String],
    add: bool,
    revoke: &[String],
) -> Result<()> {
    if !revoke.is_empty() {
        if add || !nodes.is_empty() {
            bail!("--revoke goes alone: revoke first, then --add new node certificates");
        }
        for name in revoke {
            let id = net::roles::revoke(out, name)?;
            println!(
                "revoked {id}, serial {}, in {}",
                id.serial_hex(),
                net::roles::crl_path(out).display()
            );
        }
        println!("a running manager refuses it once it re-reads the list: kill -HUP <manager pid>");
        return Ok(());
    }
    if add {
        net::add_node_certs(out, nodes)?;
        println!(
            "added {} node certificate(s) to {}",
            nodes.len(),
            out.display()
        );
    } else {
        net::make_cluster_certs(out, manager_names, nodes)?;
        println!(
            "made a cluster CA, the manager, client and viewer certificates and {} node certificate(s) in {}\n\
             copy ca.pem and node-NAME.pem/.key (only its own) to each node host; keep ca.key on this machine",
            nodes.len(),
            out.display()
        );
    }
    Ok(())
}

/// Local node processes started for a run; killed if still alive on drop.
/// Shared with the fault injector (`--faults`), which signals and
/// restarts them by their position in launch order.
pub struct LocalNodes {
    children: std::sync::Arc<std::sync::Mutex<Vec<(String, Child)>>>,
    /// How each was started (program, arguments, log file), to start it
    /// again after a crash fault.
    commands: Vec<(PathBuf, Vec<std::ffi::OsString>, PathBuf)>,
}

impl LocalNodes {
    /// Starts one `libratory-node` per process of every host in `hosts`
    /// on this machine, logging to `logs/`.
    pub fn spawn(
        cfg: &ClusterConfig,
        hosts: &[&HostSection],
        manager: SocketAddr,
        logs: &Path,
        fault_control: bool,
    ) -> Result<LocalNodes> {
        let exe = node_binary()?;
        fs::create_dir_all(logs).with_context(|| format!("creating {}", logs.display()))?;
        let mut children = Vec::new();
        let mut commands = Vec::new();
        for h in hosts {
            for p in 0..h.processes {
                let label = ClusterConfig::process_label(h, p);
                let log = logs.join(format!("node-{label}.log"));
                fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
                let mut args: Vec<std::ffi::OsString> = vec![
                    "--manager".into(),
                    manager.to_string().into(),
                    "--certs".into(),
                    cfg.manager.certs.clone().into(),
                    "--label".into(),
                    label.clone().into(),
                ];
                args.extend(cfg.node_args(h).into_iter().map(Into::into));
                if fault_control {
                    // (faults) Where the injector writes link faults.
                    args.push("--fault-control".into());
                    args.push(logs.join(format!("fault-control-{label}")).into());
                }
                let child = start_node(&exe, &args, &log)?;
                children.push((label, child));
                commands.push((exe.clone(), args, log));
            }
        }
        Ok(LocalNodes {
            children: std::sync::Arc::new(std::sync::Mutex::new(children)),
            commands,
        })
    }

    /// The processes, for the fault injector.
    pub fn shared(&self) -> std::sync::Arc<std::sync::Mutex<Vec<(String, Child)>>> {
        self.children.clone()
    }

    /// How process `p` was started (program, arguments, log file).
    pub fn command(&self, p: usize) -> Option<&(PathBuf, Vec<std::ffi::OsString>, PathBuf)> {
        self.commands.get(p)
    }

    /// Waits up to `grace` for the processes to leave, then kills the rest.
    /// Returns (label, exit status text) per process.
    pub fn finish(self, grace: Duration) -> Vec<(String, String)> {
        let deadline = std::time::Instant::now() + grace;
        let mut out = Vec::new();
        let mut children = self.children.lock().unwrap_or_else(|e| e.into_inner());
        for (label, child) in children.iter_mut() {
            loop {
                match child.try_wait() {
                    Ok(Some(st)) => {
                        out.push((label.clone(), st.to_string()));
                        break;
                    }
                    Ok(None) if std::time::Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    _ => {
                        let _ = child.kill();
                        let _ = child.wait();
                        out.push((label.clone(), "killed after the grace period".into()));
                        break;
                    }
                }
            }
        }
        children.clear();
        out
    }
}

/// Starts one node process, appending to its log (a process started again
/// after a crash fault keeps the first one's lines).
pub fn start_node(exe: &Path, args: &[std::ffi::OsString], log: &Path) -> Result<Child> {
    let file = fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(log)
        .with_context(|| format!("opening {}", log.display()))?;
    Command::new(exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(file.try_clone()?)
        .stderr(file)
        .spawn()
        .with_context(|| format!("starting {}", exe.display()))
}

impl Drop for LocalNodes {
    fn drop(&mut self) {
        let mut children = self.children.lock().unwrap_or_else(|e| e.into_inner());
        for (_, c) in children.iter_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The `libratory-node` binary beside this one.
pub fn node_binary() -> Result<PathBuf> {
    let me = std::env::current_exe().context("locating the libratory binary")?;
    let exe = me.with_file_name("libratory-node");
    if !exe.is_file() {
        bail!(
            "{} not found: build it with `cargo build --release` (it is installed beside libratory)",
            exe.display()
        );
    }
    Ok(exe)
}

/// Percentiles of one histogram, for `summary.json`.
#[derive(Debug, Clone, Serialize)]
pub struct Percentiles {
    /// Samples.
    pub count: u64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Largest.
    pub max: u64,
    /// Mean.
    pub mean: f64,
}

/// Percentiles of `h`.
pub fn percentiles(h: &Histogram<u64>) -> Percentiles {
    Percentiles {
        count: h.len(),
        p50: h.value_at_quantile(0.5),
        p90: h.value_at_quantile(0.9),
        p99: h.value_at_quantile(0.99),
        p999: h.value_at_quantile(0.999),
        max: h.max(),
        mean: h.mean(),
    }
}

/// Writes histograms as one HdrHistogram interval log (the standard
/// format: other HdrHistogram tools read it), one tagged interval each,
/// all starting at `start` and lasting `seconds`.
pub fn write_hlog(
    path: &Path,
    start: SystemTime,
    hists: &[(String, &Histogram<u64>)],
    seconds: f64,
) -> Result<()> {
    let spans: Vec<(String, &Histogram<u64>, f64, f64)> = hists
        .iter()
        .map(|(n, h)| (n.clone(), *h, 0.0, seconds))
        .collect();
    write_hlog_intervals(path, start, &spans)
}

/// Writes tagged histogram intervals `(tag, histogram, start s, length s)`
/// as one HdrHistogram interval log, interval times in seconds since
/// `start` (the log's StartTime and BaseTime).
///
/// The layout is the one Java's `HistogramLogWriter` writes and every
/// reader expects (Java `HistogramLogReader`, HistogramLogAnalyzer, the
/// Python `hdrhistogram` package): the format version, StartTime and
/// BaseTime comments, the legend line, then one line per interval with the
/// histogram in the compressed V2 encoding (cookie 0x1c849314), base64.
pub fn write_hlog_intervals(
    path: &Path,
    start: SystemTime,
    hists: &[(String, &Histogram<u64>, f64, f64)],
) -> Result<()> {
    let file = fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut file = std::io::BufWriter::new(file);
    let mut ser = V2DeflateSerializer::new();
    let io_err =
        |e: std::io::Error| anyhow::Error::from(e).context(format!("writing {}", path.display()));
    IntervalLogWriterBuilder::new()
        .add_comment("[Histogram log format version 1.3]")
        .add_comment(
            "[Libratory latency histograms, values in microseconds (ppm for share_error_ppm)]",
        )
        .with_start_time(start)
        .with_base_time(start)
        .with_max_value_divisor(1.0)
        .begin_log_with(&mut file, &mut ser)
        .map_err(io_err)?;
    // The builder writes no legend line; readers skip it but Java's
    // writer always puts it here, so do the same.
    file.write_all(
        b"\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n",
    )
    .map_err(io_err)?;
    // A builder without headers writes nothing: this one only carries the
    // interval lines on.
    let mut w = IntervalLogWriterBuilder::new()
        .begin_log_with(&mut file, &mut ser)
        .map_err(io_err)?;
    for (name, h, start, len) in hists {
        // Tags may not contain spaces or commas.
        let tag: String = name
            .chars()
            .map(|c| {
                if c.is_whitespace() || c == ',' {
                    '_'
                } else {
                    c
                }
            })
            .collect();
        w.write_histogram(
            *h,
            Duration::from_secs_f64(start.max(0.0)),
            Duration::from_secs_f64(len.max(0.0)),
            Tag::new(&tag),
        )
        .map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?;
    }
    file.flush().map_err(io_err)?;
    Ok(())
}

/// What only a live run's summary.json has, beside the simulated run's
/// fields.
#[derive(Serialize)]
struct LiveFacts<'a> {
    mode: &'static str,
    time_scale: f64,
    replay_offset: f64,
    node_processes: Vec<(String, usize)>,
    wall_seconds: f64,
    warnings: &'a [String],
    latency_us: BTreeMap<String, Percentiles>,
    node_latency_us: BTreeMap<String, Percentiles>,
}

/// The configuration a live run's manifest records.
#[derive(Serialize)]
struct LiveRunConfig<'a> {
    experiment: &'a Experiment,
    cluster: &'a ClusterConfig,
}

/// Builds the experiment and workload a config describes.
fn experiment_of(cfg: &ClusterConfig) -> Result<(Experiment, workload::Workload)> {
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

/// How `libratory run` reports progress on stderr.
#[derive(Debug, Clone, Copy)]
pub enum Progress {
    /// Nothing until the end.
    Quiet,
    /// A live progress bar (stderr is a terminal).
    Bar,
    /// A plain line every so often, and one per registration (for logs
    /// and launch scripts).
    Lines(Duration),
}

impl Progress {
    /// Lines every `every` seconds when given, else a bar on a terminal,
    /// else nothing.
    pub fn choose(every: Option<f64>, terminal: bool) -> Result<Progress> {
        Ok(match every {
            Some(s) => Progress::Lines(seconds("--progress-every", s)?),
            None if terminal => Progress::Bar,
            None => Progress::Quiet,
        })
    }
}

/// A positive number of seconds from the command line, or an error naming
/// the option.
pub fn seconds(option: &str, s: f64) -> Result<Duration> {
    if !(s > 0.0 && s.is_finite()) {
        bail!("{option} must be a number of seconds > 0, got {s}");
    }
    Ok(Duration::from_secs_f64(s))
}

/// What a live run takes besides its configuration and where it goes.
#[derive(Default)]
pub struct RunExtras<'a> {
    /// The live view's address and token (`--http`, `--http-token`).
    pub http: Option<crate::live::liveview::ViewAddr>,
    /// A fault scenario (`--faults FILE`) executed on the local node
    /// processes (see [`crate::live::faultinject`]).
    pub faults: Option<&'a Path>,
    /// The external scheduler of the `batsim` policy.
    pub batsim: crate::batsim::BatsimArgs,
}

/// Runs the configuration live; when `spawn_local` is set, starts the node
/// processes of every host without an ssh target on this machine.
pub fn run(
    cfg: &ClusterConfig,
    out: &Path,
    spawn_local: bool,
    progress: Progress,
    serve: bool,
    extras: RunExtras<'_>,
    env: &Environment,
) -> Result<()> {
    let inv = Invocation::capture();
    let RunExtras {
        http,
        faults,
        batsim,
    } = extras;
    // Read first: a bad scenario is refused before anything starts.
    let scenario = faults
        .map(crate::lab::faults::ScenarioFile::load)
        .transpose()?;
    // The live view binds first, so a taken port fails before anything runs.
    let view = http.map(crate::live::liveview::Server::start).transpose()?;
    if let Some(v) = &view {
        eprintln!("live view: {}", v.url());
    }
    let (exp, wl) = experiment_of(cfg)?;
    let seed = exp.params.seed;
    let listen: SocketAddr = cfg.manager.listen.parse()?;
    // Local node processes dial the advertised address, else loopback.
    let local_dial = cfg.local_dial_address();
    fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let mut log = Log::new();
    recover_interrupted(out, &mut log)?;
    // Before the journal: a scenario a live run cannot execute leaves
    // nothing behind.
    let faults = match &scenario {
        Some(sf) => {
            if !spawn_local || cfg.hosts.iter().any(|h| !h.is_local()) {
                bail!(
                    "--faults: live runs execute faults on node processes they start on this \
                     machine: every host must be local and --spawn-local given (demo does both)"
                );
            }
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
            crate::live::faultinject::check_live(&plan, shape.processes.len())?;
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
            for line in crate::lab::faults::describe(&plan) {
                log.say(format_args!("  {line}"));
            }
            let facts = sf.facts(&plan, &shape);
            Some((plan, facts))
        }
        None => None,
    };
    let trace = wl.trace.clone();
    let trace_facts = trace.as_deref().map(rundir::trace_facts).transpose()?;
    let writer = JournalWriter::create(
        &out.join(JOURNAL),
        journal_header(&inv, cfg, &exp, &wl, trace_facts.as_ref())?,
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
    warn_short_jobs(&wl, cfg.manager.time_scale);
    if let Some(w) = crate::live::calibrate::below_safe_scale(cfg.manager.time_scale, env) {
        eprintln!("warning: {w}");
    }
    let actuals: Vec<f64> = wl.jobs.iter().map(|j| j.actual_runtime).collect();
    if let Some(w) = crate::live::calibrate::tiny_parts(cfg, &actuals, cfg.manager.time_scale) {
        eprintln!("warning: {w}");
    }
    let live_cfg = LiveConfig {
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
        serve,
        journal: Some(writer.journal()),
        view: view.as_ref().map(|v| v.publisher.clone()),
        threads: Threads::parse(env.manager_threads().as_deref())?,
        replay_started: None,
        fault_notes: None,
        batsim,
    };
    let mut live_cfg = live_cfg;
    let replay_rx = faults.as_ref().map(|_| {
        let (tx, rx) = std::sync::mpsc::channel();
        live_cfg.replay_started = Some(tx);
        rx
    });
    let notes = faults.as_ref().map(|_| {
        let notes = crate::live::manager::FaultNotes::default();
        live_cfg.fault_notes = Some(notes.clone());
        notes
    });
    let first_submit = wl.jobs.first().map_or(0.0, |j| j.spec.details.submit_time);
    let injector_journal = writer.journal();
    let plan = faults.as_ref().map(|(p, _)| p.clone());
    let jobs = wl.jobs.clone();
    let local_hosts: Vec<&HostSection> = cfg.hosts.iter().filter(|h| h.is_local()).collect();
    let logs = out.join("logs");
    // The manager's histograms count from here (the logs' StartTime).
    let started = SystemTime::now();
    let (outcome, exits, manager_seconds): (LiveOutcome, Vec<(String, String)>, f64) =
        actix_rt::System::new().block_on(async move {
            let nodes = if spawn_local {
                Some(LocalNodes::spawn(
                    cfg,
                    &local_hosts,
                    local_dial,
                    &logs,
                    plan.is_some(),
                )?)
            } else {
                None
            };
            // (faults) The injector signals the processes from its own
            // thread, timed from the replay's start.
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let injector = match (&nodes, plan, replay_rx) {
                (Some(n), Some(plan), Some(rx)) => Some(crate::live::faultinject::spawn(
                    plan,
                    crate::live::faultinject::Procs {
                        children: n.shared(),
                        commands: (0..).map_while(|p| n.command(p).cloned()).collect(),
                        journal: Some(injector_journal),
                        notes: notes.unwrap_or_default(),
                    },
                    cfg.manager.time_scale,
                    first_submit,
                    rx,
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
    let node_facts = node_process_facts(&outcome, &exits);
    let files = write_live_results(
        out,
        &exp,
        &wl,
        cfg.manager.time_scale,
        &outcome,
        (started, manager_seconds),
        &mut log,
    )?;
    // The result files are written: the journal is complete.
    let j = writer.journal();
    j.send(Entry::End {
        t: j.t(),
        wall_seconds: outcome.wall_seconds,
    });
    if let Err(e) = writer.close() {
        log.say(format_args!("warning: the run journal is incomplete: {e}"));
    }
    let mut files = files;
    files.push(JOURNAL.into());
    let files = rundir::with_manifest_and_log(files);
    let config = LiveRunConfig {
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
    Ok(())
}

/// The journal's header: everything `recover` needs to rebuild the result
/// files without the configuration file, the trace or this process.
fn journal_header(
    inv: &Invocation,
    cfg: &ClusterConfig,
    exp: &Experiment,
    wl: &workload::Workload,
    trace: Option<&rundir::TraceFacts>,
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
        workload: journal::WorkloadFacts {
            jobs: wl.jobs.len(),
            nodes: exp.params.nodes,
            first_arrival: wl.jobs.first().map_or(0.0, |j| j.spec.details.submit_time),
            last_arrival: wl.jobs.last().map_or(0.0, |j| j.spec.details.submit_time),
            odd_records: wl.odd.clone(),
            duplicates: wl.duplicates,
        },
    })
}

/// Before a run writes into `out`: if an earlier run there left a journal
/// without its `end` (the manager was killed), moves that journal and the
/// node logs into `out/interrupted-<start time>/` and rebuilds that run's
/// result files there, so the new run overwrites nothing of it.
fn recover_interrupted(out: &Path, log: &mut Log) -> Result<()> {
    let path = out.join(JOURNAL);
    if !path.is_file() {
        return Ok(());
    }
    let c = journal::read(&path).with_context(|| {
        format!(
            "an earlier run's journal in {} is unreadable: move it away or use another --out",
            out.display()
        )
    })?;
    if journal::rebuild(&c).ended {
        return Ok(());
    }
    let stamp = c.header.started_utc.replace(':', "-");
    let dir = out.join(format!("interrupted-{stamp}"));
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    for name in [JOURNAL, "logs"] {
        let from = out.join(name);
        if from.exists() {
            fs::rename(&from, dir.join(name))
                .with_context(|| format!("moving {} to {}", from.display(), dir.display()))?;
        }
    }
    log.say(format_args!(
        "{} holds the journal of an interrupted run (started {}): rebuilding its results in {}",
        out.display(),
        c.header.started_utc,
        dir.display()
    ));
    recover(&dir, false)
}

/// What a recovered run's manifest and summary say about the recovery.
#[derive(Serialize)]
struct RecoveryFacts<'a> {
    journal: &'static str,
    recovered_utc: String,
    recovered_by: Vec<String>,
    /// Whether the run had ended by itself (its `end` entry).
    complete: bool,
    /// A last line cut short by the crash, left out.
    torn_line: Option<usize>,
    /// Jobs with a record (submitted before the journal ends).
    submitted: usize,
    undecided: &'a [common::job::JobId],
    unfinished: &'a [common::job::JobId],
    /// Jobs of the workload never submitted (the run stopped first).
    never_submitted: usize,
    /// What the journal does not hold.
    lost: &'static [&'static str],
}

/// `libratory recover RUN`: rebuilds a live run's result files
/// (summary.json, the job files, the manifest, log.txt) from
/// `RUN/journal.jsonl`, with the jobs the run had not decided or finished
/// marked as such. A run that ended wrote better results itself (with
/// its histograms): it is left alone unless `force`.
pub fn recover(dir: &Path, force: bool) -> Result<()> {
    let me = Invocation::capture();
    let path = dir.join(JOURNAL);
    let c = journal::read(&path)?;
    let r = journal::rebuild(&c);
    if r.ended && !force && dir.join(rundir::MANIFEST).is_file() {
        bail!(
            "{}: the run ended and wrote its results; nothing to recover (--force rebuilds them from the journal, without the latency histograms)",
            path.display()
        );
    }
    let h = &c.header;
    let mut log = Log::new();
    log.say(format_args!(
        "libratory recover: {} (run started {}, policy {}, seed {}): {} entries{}",
        path.display(),
        h.started_utc,
        h.policy,
        h.seed,
        c.entries.len(),
        c.torn_line.map_or(String::new(), |l| format!(
            ", torn last line {l} left out (the manager stopped mid-write)"
        ))
    ));
    let trace_facts: Option<rundir::TraceFacts> = h
        .trace
        .clone()
        .map(serde_json::from_value)
        .transpose()
        .with_context(|| format!("{}: the header's trace facts", path.display()))?;
    let trace = trace_facts.as_ref().map(|t| PathBuf::from(&t.path));
    // Client jobs (ids from 2^40) are not the workload's.
    let from_workload = r.records.iter().filter(|x| x.id < 1 << 40).count();
    let facts = RecoveryFacts {
        journal: JOURNAL,
        recovered_utc: me.started_utc.clone(),
        recovered_by: me.command_line.clone(),
        complete: r.ended,
        torn_line: c.torn_line,
        submitted: r.records.len(),
        undecided: &r.undecided,
        unfinished: &r.unfinished,
        never_submitted: h.workload.jobs.saturating_sub(from_workload),
        lost: &[
            "latency histograms (histograms/*.hlog, latency_us, node_latency_us)",
            "node process exit statuses",
            "warnings of the last heartbeat",
        ],
    };
    let facts = serde_json::to_value(&facts)?;
    let summary = Summary::compute(&h.policy, &r.records);
    let mut table = Vec::new();
    output::print_table(&mut table, std::slice::from_ref(&summary))?;
    log.say("");
    log.block(&String::from_utf8_lossy(&table));
    for w in &r.warnings {
        log.say(format_args!("note: {w}"));
    }
    if !r.ended {
        log.say(format_args!(
            "the run did not end: {} job(s) undecided, {} accepted but unfinished (recorded as lost), {} never submitted",
            r.undecided.len(),
            r.unfinished.len(),
            h.workload.jobs.saturating_sub(from_workload)
        ));
    }
    let mut live = serde_json::to_value(LiveFacts {
        mode: "live",
        time_scale: h.time_scale,
        replay_offset: r.replay_offset,
        node_processes: r.node_processes.clone(),
        wall_seconds: r.wall_seconds,
        warnings: &r.warnings,
        latency_us: BTreeMap::new(),
        node_latency_us: BTreeMap::new(),
    })?;
    live["recovered"] = facts.clone();
    let wl = workload::Workload {
        params: h.experiment.params.clone(),
        trace: trace.clone(),
        jobs: Vec::new(),
        odd: h.workload.odd_records.clone(),
        duplicates: h.workload.duplicates,
    };
    let mut files = rundir::write_run_files_with(
        dir,
        &Run {
            experiment: &h.experiment,
            workload: &wl,
            trace: trace.as_deref(),
            policies: &[PolicyResult {
                summary: &summary,
                records: &r.records,
                parts: None,
            }],
            live: Some(&live),
        },
        rundir::WorkloadFacts {
            jobs: h.workload.jobs,
            nodes: h.workload.nodes,
            first_arrival: h.workload.first_arrival,
            last_arrival: h.workload.last_arrival,
            odd_records: &h.workload.odd_records,
        },
        &rundir::OutputKind::ALL,
    )?;
    files.push(JOURNAL.into());
    let logs = dir.join("logs");
    if logs.is_dir() {
        files.push("logs/".into());
    }
    let node_facts: Vec<NodeProcessFact> = r
        .node_processes
        .iter()
        .map(|(host, nodes)| {
            let label = host.split(' ').next().unwrap_or(host);
            let log = format!("logs/node-{label}.log");
            NodeProcessFact {
                host: host.clone(),
                nodes: *nodes,
                log: dir.join(&log).is_file().then_some(log),
                exit: None,
            }
        })
        .collect();
    let files = rundir::with_manifest_and_log(files);
    // The manifest is the run's: its command line, start and wall time.
    let inv = Invocation {
        command_line: h.command_line.clone(),
        working_dir: h.working_dir.clone(),
        started_unix: h.started_unix,
        started_utc: h.started_utc.clone(),
        clock: std::time::Instant::now()
            .checked_sub(Duration::from_secs_f64(r.wall_seconds))
            .unwrap_or_else(std::time::Instant::now),
    };
    let config = LiveRunConfig {
        experiment: &h.experiment,
        cluster: &h.cluster,
    };
    let manifest = Manifest::new("run", &inv, h.seed, &config, trace_facts.as_ref(), &files)
        .live(&node_facts)
        .recovered(&facts);
    rundir::finish(
        dir,
        manifest,
        &mut log,
        format_args!(
            "\nresults rebuilt in {} (summary.json, jobs-{p}.csv/.jsonl, out_jobs-{p}.csv, schedule-{p}.swf, manifest.json, log.txt)",
            dir.display(),
            p = h.policy
        ),
    )?;
    std::io::stdout().flush()?;
    Ok(())
}

/// The node processes of a run for its manifest: every one that
/// registered, with its log and exit status when this command started it
/// (`--label LABEL` registers as `LABEL (address)`).
fn node_process_facts(o: &LiveOutcome, exits: &[(String, String)]) -> Vec<NodeProcessFact> {
    let mut facts: Vec<NodeProcessFact> = o
        .node_processes
        .iter()
        .map(|(host, nodes)| {
            let mine = exits
                .iter()
                .find(|(label, _)| host.starts_with(&format!("{label} (")));
            NodeProcessFact {
                host: host.clone(),
                nodes: *nodes,
                log: mine.map(|(label, _)| format!("logs/node-{label}.log")),
                exit: mine.map(|(_, st)| st.clone()),
            }
        })
        .collect();
    // Started here but never registered: listed too, so that a missing
    // process shows.
    for (label, st) in exits {
        if !o
            .node_processes
            .iter()
            .any(|(h, _)| h.starts_with(&format!("{label} (")))
        {
            facts.push(NodeProcessFact {
                host: format!("{label} (never registered)"),
                nodes: 0,
                log: Some(format!("logs/node-{label}.log")),
                exit: Some(st.clone()),
            });
        }
    }
    facts.sort_by(|a, b| a.host.cmp(&b.host));
    facts
}

/// Resolves on Ctrl-C (SIGINT) or SIGTERM (`kill`, `scancel`, a batch
/// system's time limit), naming which: either ends the run early and the
/// results so far are still written.
async fn stop_signal() -> String {
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

fn warn_short_jobs(wl: &workload::Workload, time_scale: f64) {
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

/// Writes the data files of a live run (summary.json, the per-job CSV and
/// JSON lines, the Batsim CSV, the schedule as SWF, the histogram logs),
/// prints the table and the latency percentiles into `log`, and returns
/// the file names written. `manager_span` is when the manager started and
/// how many seconds it ran: the time axis of the histogram logs.
pub fn write_live_results(
    out: &Path,
    exp: &Experiment,
    wl: &workload::Workload,
    time_scale: f64,
    o: &LiveOutcome,
    manager_span: (SystemTime, f64),
    log: &mut Log,
) -> Result<Vec<String>> {
    let policy = exp.policies[0].clone();
    let summary = Summary::compute(&policy, &o.records);
    log.say("");
    let mut table = Vec::new();
    output::print_table(&mut table, std::slice::from_ref(&summary))?;
    log.block(&String::from_utf8_lossy(&table));
    for w in &o.warnings {
        log.say(format_args!("note: {w}"));
    }
    let mut latency = BTreeMap::new();
    for (name, h) in &o.histograms {
        latency.insert(name.clone(), percentiles(h));
    }
    let mut node_latency = BTreeMap::new();
    let mut merged: BTreeMap<String, Histogram<u64>> = BTreeMap::new();
    for nh in &o.node_histograms {
        let (name, h) = (&nh.name, &nh.hist);
        // Auto-resizing at the node's precision: a histogram decoded off the
        // wire is fixed to its own range, and adding a later interval with
        // larger values to a copy of the first one's range would fail (and
        // ignoring that error would drop those samples from the summary).
        let m = match merged.entry(name.clone()) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(e) => {
                e.insert(Histogram::new(h.sigfig()).context("a node histogram's precision")?)
            }
        };
        m.add(h)
            .with_context(|| format!("merging the node histograms {name}"))?;
    }
    for (name, h) in &merged {
        node_latency.insert(name.clone(), percentiles(h));
    }
    log.say("\nlatency (us)                 count      p50      p99    max");
    for (name, p) in latency.iter().chain(node_latency.iter()) {
        log.say(format_args!(
            "{name:<28} {:>6} {:>8} {:>8} {:>6}",
            p.count, p.p50, p.p99, p.max
        ));
    }
    let facts = LiveFacts {
        mode: "live",
        time_scale,
        replay_offset: o.replay_offset,
        node_processes: o.node_processes.clone(),
        wall_seconds: o.wall_seconds,
        warnings: &o.warnings,
        latency_us: latency,
        node_latency_us: node_latency,
    };
    let facts = serde_json::to_value(&facts)?;
    let mut files = rundir::write_run_files(
        out,
        &Run {
            experiment: exp,
            workload: wl,
            trace: wl.trace.as_deref(),
            policies: &[PolicyResult {
                summary: &summary,
                records: &o.records,
                parts: Some(&o.parts),
            }],
            live: Some(&facts),
        },
    )?;
    let hdir = out.join("histograms");
    fs::create_dir_all(&hdir).with_context(|| format!("creating {}", hdir.display()))?;
    let mine: Vec<(String, &Histogram<u64>)> =
        o.histograms.iter().map(|(n, h)| (n.clone(), h)).collect();
    let (started, manager_seconds) = manager_span;
    write_hlog(&hdir.join("manager.hlog"), started, &mine, manager_seconds)?;
    let nodes: Vec<(String, &Histogram<u64>, f64, f64)> = o
        .node_histograms
        .iter()
        .map(|nh| {
            let host = nh.host.split(' ').next().unwrap_or(&nh.host);
            (
                format!("{host}/{}", nh.name),
                &nh.hist,
                nh.start_s,
                nh.end_s - nh.start_s,
            )
        })
        .collect();
    write_hlog_intervals(&hdir.join("nodes.hlog"), started, &nodes)?;
    files.push("histograms/manager.hlog".into());
    files.push("histograms/nodes.hlog".into());
    if out.join("logs").is_dir() {
        files.push("logs/".into());
    }
    Ok(files)
}

/// The built-in demo configuration: one host, `processes` node processes
/// of `per_process` nodes each, the Libra paper's batch scaled to a short run.
pub fn demo_config(
    certs: &Path,
    port: u16,
    processes: usize,
    per_process: usize,
    jobs: usize,
) -> ClusterConfig {
    let capacity = (num_cpus_f64() / (processes * per_process) as f64).min(1.0);
    // Port 0 means any free port; the node processes need to know which,
    // so take one now (bound and released; a race with another process
    // taking it in between only fails the run with a clear bind error).
    let port = if port == 0 {
        net::free_udp_port().unwrap_or(0)
    } else {
        port
    };
    let text = format!(
        r#"
[manager]
listen = "127.0.0.1:{port}"
certs = "{certs}"
time_scale = 0.05
start_timeout_s = 20
link_timeout_s = 5

[workload]
preset = "libra"
policy = "libra"
set = {{ jobs = {jobs}, nodes = {nodes}, synthetic_arrival_max = {arrival} }}

[[hosts]]
name = "local"
processes = {processes}
nodes_per_process = {per_process}
capacity = {capacity}
"#,
        certs = certs.display(),
        nodes = processes * per_process,
        arrival = (jobs as f64 * 1.02).max(2.0),
    );
    ClusterConfig::parse(Path::new("<demo>"), &text).expect("the demo configuration is valid")
}

fn num_cpus_f64() -> f64 {
    std::thread::available_parallelism().map_or(1, |n| n.get()) as f64
}
