//! The `manager-crash` fault, executed from outside the manager: a run or
//! demo whose scenario holds one becomes a supervisor. It starts the run
//! itself as a child process (the same command line, marked
//! [`SUPERVISED`]: that child is the manager), starts the local node
//! processes itself (`--spawn-local`) and runs the node faults' injector
//! ([`crate::live::inject`]), watches the run's journal for the replay's
//! start, and at each manager crash sends the child SIGKILL, waits the
//! fault's duration, and starts `libratory resume OUT` as the next child.
//! The node processes ride the crashes out (`manager_grace_s`) and
//! reconnect to each new manager; the injector goes on executing node
//! faults whatever the manager's state, and its reports wait for the next
//! manager while none runs. The supervisor ends with the last child's exit
//! status, after the node processes.

use std::path::Path;
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};
use common::faults::{Fault, FaultKind, Plan};

use crate::cluster::config::ClusterConfig;
use crate::live::inject;
use crate::live::journal::JOURNAL;
use crate::live::local_nodes::LocalNodes;
use crate::results::rundir::Log;

/// The environment variable marking the supervised child: the manager
/// only (its supervisor starts the node processes and runs the
/// injector).
pub const SUPERVISED: &str = "LIBRATORY_SUPERVISED";

/// Whether `plan` needs a supervisor (it holds a manager crash).
pub fn needed(plan: &Plan) -> bool {
    plan.faults
        .iter()
        .any(|f| f.kind == FaultKind::ManagerCrash)
}

/// The current manager's pid (0: none runs), for [`forward`].
static MANAGER: AtomicI32 = AtomicI32::new(0);
/// Set when the supervisor was told to stop (SIGINT, SIGTERM).
static STOPPED: AtomicBool = AtomicBool::new(false);

/// SIGINT and SIGTERM go on to the manager, which ends the run early and
/// writes its results as an unsupervised one does (the launch scripts'
/// stop signals the supervisor only); no manager is restarted after.
extern "C" fn forward(sig: libc::c_int) {
    STOPPED.store(true, Ordering::SeqCst);
    let pid = MANAGER.load(Ordering::SeqCst);
    if pid > 0 {
        // SAFETY: kill(2) is async-signal-safe; the pid is our child's,
        // cleared before that child is reaped.
        unsafe {
            libc::kill(pid, sig);
        }
    }
}

fn forward_stops() {
    let handler = forward as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler only touches atomics and calls kill(2).
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}

/// Kills the child on drop (a failed supervisor leaves no manager behind).
struct Guard(Option<Child>);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Guard {
    fn child(&mut self) -> &mut Child {
        self.0.as_mut().expect("a child runs")
    }
}

/// What the supervisor needs of the run.
pub struct Context<'a> {
    /// The configuration.
    pub cfg: &'a ClusterConfig,
    /// The run directory.
    pub out: &'a Path,
    /// Start the node processes of the local hosts (`--spawn-local`).
    pub spawn_local: bool,
    /// The workload's first submit time (faults are timed from it).
    pub first_submit: f64,
}

/// Runs the supervised run (see the module header).
pub fn run(plan: &Plan, cx: Context<'_>, log: &mut Log) -> Result<ExitStatus> {
    let Context {
        cfg,
        out,
        spawn_local,
        first_submit,
    } = cx;
    let time_scale = cfg.manager.time_scale;
    let exe = std::env::current_exe().context("finding this program to supervise the run")?;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let journal = out.join(JOURNAL);
    log.say(format_args!(
        "faults: the scenario crashes the manager: this process supervises the run (the manager runs as its child and is killed and resumed as the scenario says; the node processes and the node faults' injector run here)"
    ));
    // A journal left by an earlier run must not pass for this one's.
    let _ = std::fs::remove_file(&journal);
    let mut g = Guard(Some(
        Command::new(&exe)
            .args(&args)
            .env(SUPERVISED, "1")
            .spawn()
            .context("starting the supervised run")?,
    ));
    MANAGER.store(g.child().id() as i32, Ordering::SeqCst);
    forward_stops();
    // The node processes dial the manager once its journal exists (it
    // binds right after writing the header; QUIC retries the handshake's
    // first packets meanwhile, as for `run --spawn-local`).
    wait_for(g.child(), || crate::live::journal::read(&journal).is_ok())?;
    // The manager's own configuration, as its journal's header keeps it:
    // a demo's port 0 is a free port the child chose, not ours.
    let header = crate::live::journal::read(&journal)
        .with_context(|| format!("reading {}", journal.display()))?
        .header;
    let cfg = &header.cluster;
    let stop = Arc::new(AtomicBool::new(false));
    let mut nodes = None;
    let mut injector = None;
    if spawn_local {
        let local: Vec<_> = cfg.hosts.iter().filter(|h| h.is_local()).collect();
        let n = LocalNodes::spawn(
            cfg,
            &local,
            cfg.local_dial_address(),
            &out.join("logs"),
            true,
        )?;
        if !inject::steps(plan).is_empty() {
            injector = Some(inject::spawn(
                plan.clone(),
                time_scale,
                first_submit,
                journal.clone(),
                Box::new(crate::live::inject::exec::Children::of(&n)),
                inject::report::Reporter::start(
                    cfg.local_dial_address(),
                    cfg.manager.certs.clone(),
                )
                .quiet(),
                stop.clone(),
            ));
        }
        nodes = Some(n);
    }
    let st = crashes(plan, &mut g, out, &exe, first_submit, time_scale, log);
    // The run is over (or failed): the injector stops, the node processes
    // leave (the last manager told them to) or are killed.
    stop.store(true, Ordering::Relaxed);
    if let Some(h) = injector {
        let _ = h.join();
    }
    if let Some(n) = nodes {
        for (label, status) in n.finish(Duration::from_secs(5)) {
            if !status.contains("exit status: 0") {
                log.say(format_args!("node process {label}: {status}"));
            }
        }
    }
    st
}

/// Executes the plan's manager crashes on the supervised child `g`, timed
/// from the replay's start, and returns the last child's exit status.
fn crashes(
    plan: &Plan,
    g: &mut Guard,
    out: &Path,
    exe: &Path,
    first_submit: f64,
    time_scale: f64,
    log: &mut Log,
) -> Result<ExitStatus> {
    let journal = out.join(JOURNAL);
    let start = inject::wait_replay(&journal, || g.child().try_wait().ok().flatten().is_some())
        .context("the supervised run ended before its replay started")?;
    let real =
        |trace: f64| start + Duration::from_secs_f64((first_submit + trace).max(0.0) * time_scale);
    let crashes: Vec<&Fault> = plan
        .faults
        .iter()
        .filter(|f| f.kind == FaultKind::ManagerCrash)
        .collect();
    for f in crashes {
        let at = real(f.at);
        // The run may end before the fault is due.
        while Instant::now() < at {
            if let Some(st) = g.child().try_wait()? {
                MANAGER.store(0, Ordering::SeqCst);
                log.say(format_args!("fault: {f}: not applied, the run ended first"));
                return Ok(st);
            }
            std::thread::sleep((at - Instant::now()).min(Duration::from_millis(20)));
        }
        let pid = g.child().id();
        MANAGER.store(0, Ordering::SeqCst);
        g.child().kill().context("SIGKILL to the manager")?;
        g.child().wait()?;
        log.say(format_args!(
            "fault: {f}: SIGKILL to the manager (pid {pid})"
        ));
        let back = real(f.end().expect("a manager crash has a duration"));
        while Instant::now() < back && !STOPPED.load(Ordering::SeqCst) {
            std::thread::sleep((back - Instant::now()).min(Duration::from_millis(20)));
        }
        if STOPPED.load(Ordering::SeqCst) {
            log.say(format_args!(
                "fault: {f}: stopped while no manager ran: not restarted (`libratory recover {}` writes the results from the journal, `libratory resume {}` goes on)",
                out.display(),
                out.display()
            ));
            bail!("stopped while no manager ran");
        }
        let child = Command::new(exe)
            .arg("resume")
            .arg(out)
            .args(["--progress-every", "2", "--after-fault"])
            .arg(f.to_string())
            .env(SUPERVISED, "1")
            .spawn()
            .context("starting `libratory resume`")?;
        log.say(format_args!(
            "fault: {f}: manager started again as `libratory resume {}` (pid {})",
            out.display(),
            child.id()
        ));
        MANAGER.store(child.id() as i32, Ordering::SeqCst);
        g.0 = Some(child);
        // A stop that came while it started reaches it too.
        if STOPPED.load(Ordering::SeqCst) {
            // SAFETY: kill(2) on our child, not yet reaped.
            unsafe {
                libc::kill(g.child().id() as i32, libc::SIGTERM);
            }
        }
    }
    let st = g.child().wait()?;
    MANAGER.store(0, Ordering::SeqCst);
    g.0 = None;
    Ok(st)
}

/// Waits until `ready` says so, or fails if the child ends first.
fn wait_for(child: &mut Child, ready: impl Fn() -> bool) -> Result<()> {
    while !ready() {
        if let Some(st) = child.try_wait()? {
            bail!("the supervised run ended before it started ({st})");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}
