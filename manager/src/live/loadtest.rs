//! `libratory loadtest`: drives a serving manager (`libratory run --serve`)
//! with submissions at stepped rates over one QUIC client connection and
//! reports, per rate: submit-to-decision latency percentiles, the achieved
//! throughput, an echo round trip on the same connection as the baseline
//! (answered by the manager's connection task, not its actors), and the CPU
//! and memory the manager and the node processes used during the step.
//!
//! Submissions are pipelined: a reader task takes the answers while the
//! sender keeps to the schedule, as `manager/benches/live_latency.rs` does.
//! The manager reports its own CPU time and memory in every `status`
//! answer (so it is measured wherever it runs); node processes are read
//! from /proc only when they run on this host (their address as the
//! manager sees it is loopback), and any process named with `--pids`.
//!
//! Writes `loadtest.json`, `loadtest.csv`, `saturation.svg` (achieved
//! against offered rate) and `latency.svg` (percentiles against offered
//! rate) with a manifest and the log into `--out`.
//!
//! Not here: the manager (it must already be serving); anything but the
//! address given (load goes to that one manager only).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::live::procstat;
use anyhow::{bail, Context, Result};
use common::job::JobSpec;
use common::policy::Decision;
use common::protocol::{ClientMsg, ClientReply, NodeProcess, ProcessUsage, StatusQuery};
use hdrhistogram::Histogram;
use net::FrameReceiver;
use serde::Serialize;

use crate::live::client::{self, ConnArgs};
use crate::results::histograms::{percentiles, Percentiles};
use crate::results::plot::{self, Chart, Line, Point, XAxis};
use crate::results::rundir::{self, Invocation, Log, Manifest};

/// Arguments of `libratory loadtest`.
#[derive(clap::Args, Clone)]
pub struct LoadtestArgs {
    #[command(flatten)]
    conn: ConnArgs,
    /// Offered submission rates, per second, one step each.
    #[arg(long, value_delimiter = ',', default_value = "100,1000,5000")]
    rates: Vec<f64>,
    /// Seconds of submissions per step.
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// Processors P of every job.
    #[arg(long, default_value_t = 1)]
    processors: u32,
    /// Runtime estimate RE of every job (trace seconds; also its actual
    /// work). Short jobs leave the cluster quickly so it does not fill.
    #[arg(long, default_value_t = 0.01)]
    estimate: f64,
    /// Relative deadline D of every job (trace seconds).
    #[arg(long, default_value_t = 100.0)]
    deadline: f64,
    /// Echo round trips measured one at a time before each step.
    #[arg(long, default_value_t = 200)]
    echoes: usize,
    /// Seconds of echoes sent at each step's rate before it (the baseline
    /// its p99 is compared with: paced, sent and read as the submissions
    /// are); 0 skips them.
    #[arg(long, default_value_t = 1.0)]
    echo_seconds: f64,
    /// More processes of this host to read CPU and memory of (comma-
    /// separated pids), e.g. node processes the manager cannot tell are
    /// local.
    #[arg(long, value_delimiter = ',')]
    pids: Vec<u32>,
    /// Seconds to wait for the last answers of a step.
    #[arg(long, default_value_t = 30.0)]
    answer_timeout: f64,
    /// Output directory.
    #[arg(long, default_value = "runs/loadtest")]
    out: PathBuf,
}

/// CPU and memory of one process over a step.
#[derive(Debug, Clone, Serialize)]
pub struct ProcStep {
    /// Process id.
    pub pid: u32,
    /// What it is (`manager`, the node process label, `--pids`).
    pub what: String,
    /// CPU time used during the step over its wall time, % of one core.
    pub cpu_percent: f64,
    /// Resident memory at the end of the step (KiB).
    pub rss_kb: u64,
    /// Peak resident memory so far (KiB).
    pub peak_rss_kb: u64,
}

/// One step of the load test.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    /// Offered submissions per second.
    pub offered_rate: f64,
    /// Submissions sent.
    pub sent: u64,
    /// Answers received (decided or queued).
    pub answered: u64,
    /// Of which accepted (or queued).
    pub accepted: u64,
    /// Of which rejected.
    pub rejected: u64,
    /// Error answers or answers that never came.
    pub errors: u64,
    /// Seconds from the first submission to the last answer.
    pub seconds: f64,
    /// Answers per second over that time.
    pub achieved_rate: f64,
    /// Submit-to-decision latency at the client (us).
    pub latency_us: Percentiles,
    /// Echo round trip on the same connection just before the step, one
    /// at a time (us).
    pub echo_us: Percentiles,
    /// p99 latency over that echo's p99.
    pub p99_over_echo_p99: f64,
    /// Echo round trip at the step's rate (echoes paced, sent and read as
    /// the submissions are, `--echo-seconds` long, just before the step;
    /// us). Empty with `--echo-seconds 0`.
    pub echo_at_rate_us: Percentiles,
    /// p99 latency over the echo-at-rate p99 (0 without it).
    pub p99_over_echo_at_rate_p99: f64,
    /// The manager's own view of the step (its histograms before and after,
    /// `ClientMsg::Latency`): policy compute per decision (us).
    pub policy_compute_us: Percentiles,
    /// Dispatch of a part to its node's start, on the manager's clock
    /// (us), for the parts started during the step.
    pub dispatch_to_start_us: Percentiles,
    /// The manager (from its own `status` answers, wherever it runs).
    pub manager: ProcStep,
    /// Node processes on this host, and `--pids`.
    pub local: Vec<ProcStep>,
    /// Sum of `local` CPU, % of one core (`None` when none was readable).
    pub nodes_cpu_percent: Option<f64>,
}

/// The whole report (`loadtest.json`).
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The manager's address.
    pub manager: String,
    /// Its policy.
    pub policy: String,
    /// Its host name.
    pub manager_host: String,
    /// Live nodes at the start.
    pub nodes: usize,
    /// Node processes at the start: label, pid, nodes, whether on this
    /// host (read from /proc) or not.
    pub node_processes: Vec<(String, u32, u32, bool)>,
    /// Every job: (processors, estimate, deadline).
    pub job: (u32, f64, f64),
    /// The steps, in the order run.
    pub steps: Vec<Step>,
}

fn job(p: u32, estimate: f64, deadline: f64) -> JobSpec {
    JobSpec::new(0, 0.0, estimate, p, deadline, f64::INFINITY)
}

/// Whether a node process label `NAME (ip:port)` names an address of this
/// host as the manager saw it: only loopback is taken as proof.
fn is_local(host: &str) -> bool {
    host.rsplit_once('(')
        .and_then(|(_, a)| a.strip_suffix(')'))
        .and_then(|a| a.parse::<SocketAddr>().ok())
        .is_some_and(|a| a.ip().is_loopback())
}

struct StatusFacts {
    policy: String,
    nodes: usize,
    manager: ProcessUsage,
    processes: Vec<NodeProcess>,
}

/// One request-reply on the connection (nothing else in flight).
async fn status(
    tx: &mut net::FrameSender,
    rx: &mut FrameReceiver,
    token: u64,
) -> Result<StatusFacts> {
    // The summary alone: the load test needs counts and processes, not
    // the nodes.
    tx.send(&ClientMsg::Status {
        token,
        query: StatusQuery::default(),
    })
    .await?;
    loop {
        let r = tokio::time::timeout(Duration::from_secs(30), rx.recv::<ClientReply>("reply"))
            .await
            .context("no status answer within 30 s")??
            .context("the manager closed the connection")?;
        match r {
            ClientReply::Status {
                token: t,
                policy,
                summary,
                manager,
                processes,
                ..
            } if t == token => {
                return Ok(StatusFacts {
                    policy,
                    nodes: summary.nodes.total,
                    manager,
                    processes,
                })
            }
            ClientReply::Error { message, .. } => bail!("the manager refused status: {message}"),
            // A late answer of the previous step: skip it.
            _ => {}
        }
    }
}

/// The manager's histograms as they stand (one request-reply).
async fn manager_histograms(
    tx: &mut net::FrameSender,
    rx: &mut FrameReceiver,
    token: u64,
) -> Result<HashMap<String, Histogram<u64>>> {
    tx.send(&ClientMsg::Latency { token }).await?;
    loop {
        let r = tokio::time::timeout(Duration::from_secs(30), rx.recv::<ClientReply>("reply"))
            .await
            .context("no latency answer within 30 s")??
            .context("the manager closed the connection")?;
        match r {
            ClientReply::Latency {
                token: t,
                histograms,
            } if t == token => {
                let mut out = HashMap::new();
                for (name, bytes) in histograms {
                    let h = crate::results::histograms::from_peer(&bytes)
                        .map_err(|e| anyhow::anyhow!("the manager's {name} histogram: {e}"))?;
                    out.insert(name, h);
                }
                return Ok(out);
            }
            ClientReply::Error { message, .. } => bail!("the manager refused latency: {message}"),
            _ => {}
        }
    }
}

/// `after - before` of one of the manager's histograms: the step's own.
fn step_percentiles(
    before: &HashMap<String, Histogram<u64>>,
    after: &HashMap<String, Histogram<u64>>,
    name: &str,
) -> Percentiles {
    match (before.get(name), after.get(name)) {
        (Some(b), Some(a)) => {
            let mut h = a.clone();
            match h.subtract(b) {
                Ok(()) => percentiles(&h),
                Err(_) => percentiles(&Histogram::new(3).expect("valid")),
            }
        }
        _ => percentiles(&Histogram::new(3).expect("valid")),
    }
}

async fn echoes(
    tx: &mut net::FrameSender,
    rx: &mut FrameReceiver,
    n: usize,
    token0: u64,
) -> Result<Histogram<u64>> {
    let mut h = Histogram::<u64>::new(3).expect("valid");
    for k in 0..n as u64 {
        let t = Instant::now();
        tx.send(&ClientMsg::Echo { token: token0 + k }).await?;
        loop {
            let r = tokio::time::timeout(Duration::from_secs(10), rx.recv::<ClientReply>("reply"))
                .await
                .context("no echo answer within 10 s")??
                .context("the manager closed the connection")?;
            if matches!(r, ClientReply::Echo { token } if token == token0 + k) {
                break;
            }
        }
        let _ = h.record(t.elapsed().as_micros() as u64);
    }
    Ok(h)
}

struct LoadResult {
    hist: Histogram<u64>,
    answered: u64,
    accepted: u64,
    rejected: u64,
    errors: u64,
    last_answer: Option<Instant>,
}

/// Submits `total` jobs at `rate` per second, pipelined; a reader task
/// times each answer against its send instant.
async fn load(
    tx: &mut net::FrameSender,
    rx: FrameReceiver,
    a: &LoadtestArgs,
    rate: f64,
    token0: u64,
    echo: bool,
) -> Result<(FrameReceiver, LoadResult, u64, Instant)> {
    let secs = if echo { a.echo_seconds } else { a.seconds };
    let total = (rate * secs).round().max(1.0) as u64;
    let sent_at: Arc<Mutex<Vec<Option<Instant>>>> =
        Arc::new(Mutex::new(vec![None; total as usize]));
    let sent2 = sent_at.clone();
    let timeout = Duration::from_secs_f64(a.answer_timeout);
    let reader = tokio::spawn(async move {
        let mut rx = rx;
        let mut r = LoadResult {
            hist: Histogram::new(3).expect("valid"),
            answered: 0,
            accepted: 0,
            rejected: 0,
            errors: 0,
            last_answer: None,
        };
        while r.answered + r.errors < total {
            let got = tokio::time::timeout(timeout, rx.recv::<ClientReply>("reply")).await;
            let Ok(Ok(Some(reply))) = got else { break };
            let (token, ok) = match reply {
                ClientReply::Decided {
                    token, decision, ..
                } => (token, Some(matches!(decision, Decision::Accept(_)))),
                ClientReply::Queued { token, .. } => (token, Some(true)),
                ClientReply::Echo { token } => (token, Some(false)),
                ClientReply::Error { token, .. } => (token, None),
                _ => continue,
            };
            let Some(k) = token.checked_sub(token0).filter(|k| *k < total) else {
                continue;
            };
            let now = Instant::now();
            match ok {
                Some(acc) => {
                    if let Some(t) = sent2.lock().expect("not poisoned")[k as usize] {
                        let _ = r.hist.record(now.duration_since(t).as_micros() as u64);
                    }
                    r.answered += 1;
                    if acc {
                        r.accepted += 1;
                    } else {
                        r.rejected += 1;
                    }
                }
                None => r.errors += 1,
            }
            r.last_answer = Some(now);
        }
        (rx, r)
    });
    let spec = job(a.processors, a.estimate, a.deadline);
    let wire: common::protocol::WireJob = (&spec).into();
    let t0 = Instant::now();
    for k in 0..total {
        let due = t0 + Duration::from_secs_f64(k as f64 / rate);
        let now = Instant::now();
        if due > now {
            tokio::time::sleep(due - now).await;
        }
        sent_at.lock().expect("not poisoned")[k as usize] = Some(Instant::now());
        let msg = if echo {
            ClientMsg::Echo { token: token0 + k }
        } else {
            ClientMsg::Submit {
                token: token0 + k,
                job: wire.clone(),
                actual: Some(a.estimate),
            }
        };
        tx.send(&msg).await.context("sending a submission")?;
    }
    let (rx, r) = reader.await.context("the answer reader failed")?;
    Ok((rx, r, total, t0))
}

fn proc_step(
    what: &str,
    pid: u32,
    before: Option<procstat::ProcSample>,
    after: Option<procstat::ProcSample>,
    wall: f64,
) -> Option<ProcStep> {
    let (b, a) = (before?, after?);
    Some(ProcStep {
        pid,
        what: what.to_string(),
        cpu_percent: 100.0 * (a.cpu_seconds - b.cpu_seconds) / wall.max(1e-9),
        rss_kb: a.rss_kb,
        peak_rss_kb: a.peak_rss_kb,
    })
}

/// Runs `libratory loadtest`.
pub fn run(a: LoadtestArgs) -> Result<ExitCode> {
    if a.rates.is_empty() || a.rates.iter().any(|r| !r.is_finite() || *r <= 0.0) {
        bail!("--rates: give positive rates, e.g. 100,1000,5000");
    }
    if !a.seconds.is_finite() || a.seconds <= 0.0 {
        bail!("--seconds must be > 0, got {}", a.seconds);
    }
    crate::live::progress::seconds("--echo-seconds", a.echo_seconds)?;
    crate::live::progress::seconds("--answer-timeout", a.answer_timeout)?;
    job(a.processors, a.estimate, a.deadline).validate()?;
    let inv = Invocation::capture();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut log = Log::new();
    let report = rt.block_on(drive(&a, &mut log))?;
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let mut files = vec!["loadtest.json".to_string(), "loadtest.csv".to_string()];
    crate::results::output::write_json(&a.out.join("loadtest.json"), &report)?;
    let csv_path = a.out.join("loadtest.csv");
    std::fs::write(&csv_path, csv(&report))
        .with_context(|| format!("writing {}", csv_path.display()))?;
    for (f, chart) in [
        ("saturation.svg", saturation_chart(&report)),
        ("latency.svg", latency_chart(&report)),
    ] {
        plot::write_svg(&a.out.join(f), &chart)?;
        files.push(f.to_string());
    }
    let files = rundir::with_manifest_and_log(files);
    let manifest = Manifest::new("loadtest", &inv, 0, &report.job, None, &files);
    rundir::finish(
        &a.out,
        manifest,
        &mut log,
        format_args!(
            "\nresults in {} (loadtest.json, loadtest.csv, saturation.svg, latency.svg)",
            a.out.display()
        ),
    )?;
    Ok(ExitCode::SUCCESS)
}

async fn drive(a: &LoadtestArgs, log: &mut Log) -> Result<Report> {
    let c = client::connect(&a.conn)
        .await
        .with_context(|| format!("connecting to the manager at {}", a.conn.manager))?;
    let (mut tx, mut rx) = c.stream.split();
    let mut token: u64 = 1;
    let first = status(&mut tx, &mut rx, token).await?;
    token += 1;
    let mut node_processes = Vec::new();
    let mut watched: Vec<(String, u32)> = Vec::new();
    for p in &first.processes {
        let local = is_local(&p.host) && procstat::sample(p.pid).is_some();
        node_processes.push((p.host.clone(), p.pid, p.nodes, local));
        if local {
            watched.push((p.host.clone(), p.pid));
        }
    }
    for &pid in &a.pids {
        if procstat::sample(pid).is_none() {
            bail!("--pids: no process {pid} on this host (/proc/{pid} unreadable)");
        }
        watched.push((format!("pid {pid}"), pid));
    }
    log.say(format_args!(
        "libratory loadtest: manager {} (pid {} on {}), policy {}, {} nodes in {} node process(es); jobs P {} RE {} D {}; {} s per step",
        a.conn.manager,
        first.manager.pid,
        first.manager.hostname,
        first.policy,
        first.nodes,
        first.processes.len(),
        a.processors,
        a.estimate,
        a.deadline,
        a.seconds
    ));
    for (host, pid, nodes, local) in &node_processes {
        log.say(format_args!(
            "  node process {host}: pid {pid}, {nodes} nodes, {}",
            if *local {
                "on this host: CPU and memory read from /proc"
            } else {
                "not on this host (or not readable): not measured here (run the load test on its host, or give --pids there)"
            }
        ));
    }
    let mut steps = Vec::new();
    for &rate in &a.rates {
        let echo = echoes(&mut tx, &mut rx, a.echoes, token).await?;
        token += a.echoes as u64;
        let echo_at_rate = if a.echo_seconds > 0.0 {
            let (back, r, total, _) = load(&mut tx, rx, a, rate, token, true).await?;
            token += total;
            rx = back;
            r.hist
        } else {
            Histogram::new(3).expect("valid")
        };
        let m0 = status(&mut tx, &mut rx, token).await?.manager;
        token += 1;
        let h0 = manager_histograms(&mut tx, &mut rx, token).await?;
        token += 1;
        let w0 = Instant::now();
        let before: Vec<_> = watched
            .iter()
            .map(|(_, pid)| procstat::sample(*pid))
            .collect();
        let (back, r, total, t0) = load(&mut tx, rx, a, rate, token, false).await?;
        token += total;
        rx = back;
        let wall = w0.elapsed().as_secs_f64();
        let after: Vec<_> = watched
            .iter()
            .map(|(_, pid)| procstat::sample(*pid))
            .collect();
        let m1 = status(&mut tx, &mut rx, token).await?.manager;
        token += 1;
        // The starts of the step's last dispatches arrive a little later.
        tokio::time::sleep(Duration::from_millis(200)).await;
        let h1 = manager_histograms(&mut tx, &mut rx, token).await?;
        token += 1;
        let mwall = w0.elapsed().as_secs_f64();
        let local: Vec<ProcStep> = watched
            .iter()
            .zip(before.iter().zip(&after))
            .filter_map(|((what, pid), (b, a))| proc_step(what, *pid, *b, *a, wall))
            .collect();
        let nodes_cpu = (!local.is_empty()).then(|| local.iter().map(|p| p.cpu_percent).sum());
        let secs = r
            .last_answer
            .map_or(t0.elapsed(), |l| l.duration_since(t0))
            .as_secs_f64();
        let lat = percentiles(&r.hist);
        let echo_p = percentiles(&echo);
        let echo_rate_p = percentiles(&echo_at_rate);
        let over_echo_at_rate = if echo_rate_p.count > 0 {
            lat.p99 as f64 / echo_rate_p.p99.max(1) as f64
        } else {
            0.0
        };
        let step = Step {
            offered_rate: rate,
            sent: total,
            answered: r.answered,
            accepted: r.accepted,
            rejected: r.rejected,
            errors: total - r.answered,
            seconds: secs,
            achieved_rate: r.answered as f64 / secs.max(1e-9),
            p99_over_echo_p99: lat.p99 as f64 / echo_p.p99.max(1) as f64,
            latency_us: lat,
            echo_us: echo_p,
            p99_over_echo_at_rate_p99: over_echo_at_rate,
            echo_at_rate_us: echo_rate_p,
            policy_compute_us: step_percentiles(&h0, &h1, "policy_compute_us"),
            dispatch_to_start_us: step_percentiles(&h0, &h1, "dispatch_to_start_us"),
            manager: ProcStep {
                pid: m1.pid,
                what: "manager".into(),
                cpu_percent: 100.0 * (m1.cpu_seconds - m0.cpu_seconds) / mwall.max(1e-9),
                rss_kb: m1.rss_kb,
                peak_rss_kb: m1.peak_rss_kb,
            },
            local,
            nodes_cpu_percent: nodes_cpu,
        };
        steps.push(step);
    }
    tx.finish();
    c.conn.close(0u32.into(), b"load test done");
    c.endpoint.wait_idle().await;
    log.say("");
    log.block(&table(&steps));
    Ok(Report {
        manager: a.conn.manager.to_string(),
        policy: first.policy,
        manager_host: first.manager.hostname,
        nodes: first.nodes,
        node_processes,
        job: (a.processors, a.estimate, a.deadline),
        steps,
    })
}

/// The per-step table.
pub fn table(steps: &[Step]) -> String {
    let mut t = format!(
        "{:>8} {:>6} {:>8} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>7} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>8}\n",
        "offered",
        "sent",
        "answered",
        "achieved",
        "p50 us",
        "p99 us",
        "max us",
        "echo p50",
        "echo p99",
        "p99/echo",
        "echo@r99",
        "p99/e@r",
        "d2s p50",
        "d2s p99",
        "mgr CPU%",
        "mgr RSS MB",
        "nodes CPU%"
    );
    for s in steps {
        t.push_str(&format!(
            "{:>8.0} {:>6} {:>8} {:>9.0} {:>8} {:>8} {:>8} {:>8} {:>8} {:>7.2} {:>8} {:>8.2} {:>8} {:>8} {:>8.1} {:>9.1} {:>8}\n",
            s.offered_rate,
            s.sent,
            s.answered,
            s.achieved_rate,
            s.latency_us.p50,
            s.latency_us.p99,
            s.latency_us.max,
            s.echo_us.p50,
            s.echo_us.p99,
            s.p99_over_echo_p99,
            s.echo_at_rate_us.p99,
            s.p99_over_echo_at_rate_p99,
            s.dispatch_to_start_us.p50,
            s.dispatch_to_start_us.p99,
            s.manager.cpu_percent,
            s.manager.rss_kb as f64 / 1024.0,
            s.nodes_cpu_percent
                .map_or("-".to_string(), |c| format!("{c:.1}"))
        ));
    }
    t
}

fn csv(r: &Report) -> String {
    let mut t = String::from(
        "offered_rate,sent,answered,accepted,rejected,errors,seconds,achieved_rate,p50_us,p90_us,p99_us,p999_us,max_us,mean_us,echo_p50_us,echo_p99_us,p99_over_echo_p99,policy_compute_p50_us,policy_compute_p99_us,dispatch_to_start_p50_us,dispatch_to_start_p99_us,manager_cpu_percent,manager_rss_kb,manager_peak_rss_kb,nodes_cpu_percent,echo_at_rate_p50_us,echo_at_rate_p99_us,p99_over_echo_at_rate_p99\n",
    );
    for s in &r.steps {
        let l = &s.latency_us;
        t.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
            s.offered_rate,
            s.sent,
            s.answered,
            s.accepted,
            s.rejected,
            s.errors,
            s.seconds,
            s.achieved_rate,
            l.p50,
            l.p90,
            l.p99,
            l.p999,
            l.max,
            l.mean,
            s.echo_us.p50,
            s.echo_us.p99,
            s.p99_over_echo_p99,
            s.policy_compute_us.p50,
            s.policy_compute_us.p99,
            s.dispatch_to_start_us.p50,
            s.dispatch_to_start_us.p99,
            s.manager.cpu_percent,
            s.manager.rss_kb,
            s.manager.peak_rss_kb,
            s.nodes_cpu_percent.map_or(String::new(), |c| c.to_string()),
            s.echo_at_rate_us.p50,
            s.echo_at_rate_us.p99,
            s.p99_over_echo_at_rate_p99
        ));
    }
    t
}

fn line(label: &str, r: &Report, f: impl Fn(&Step) -> f64) -> Line {
    Line {
        label: label.to_string(),
        points: r
            .steps
            .iter()
            .map(|s| {
                let v = f(s);
                Point {
                    x: s.offered_rate,
                    mean: v,
                    min: v,
                    max: v,
                }
            })
            .collect(),
    }
}

fn saturation_chart(r: &Report) -> Chart {
    Chart {
        title: "Admission throughput against offered rate".into(),
        subtitle: format!(
            "manager {} ({}, {} nodes); jobs P {} RE {} D {}",
            r.manager, r.policy, r.nodes, r.job.0, r.job.1, r.job.2
        ),
        x_label: "Offered submissions per second".into(),
        y_label: "Decisions per second".into(),
        x_axis: XAxis::Numeric,
        lines: vec![
            line("achieved", r, |s| s.achieved_rate),
            line("offered (no saturation)", r, |s| s.offered_rate),
        ],
    }
}

fn latency_chart(r: &Report) -> Chart {
    Chart {
        title: "Submit-to-decision latency against offered rate".into(),
        subtitle: format!(
            "manager {} ({}, {} nodes); echo = QUIC round trip on the same connection",
            r.manager, r.policy, r.nodes
        ),
        x_label: "Offered submissions per second".into(),
        y_label: "Latency (us)".into(),
        x_axis: XAxis::Numeric,
        lines: vec![
            line("p50", r, |s| s.latency_us.p50 as f64),
            line("p99", r, |s| s.latency_us.p99 as f64),
            line("echo p99, one at a time", r, |s| s.echo_us.p99 as f64),
            line("echo p99 at the rate", r, |s| s.echo_at_rate_us.p99 as f64),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_labels_are_local() {
        assert!(is_local("local-0 (127.0.0.1:4000)"));
        assert!(is_local("a (b) ([::1]:4000)"));
        assert!(!is_local("lab1@x (10.0.0.2:4000)"));
        assert!(!is_local("no address"));
    }
}
