//! The `manager-crash` fault, executed from outside the manager: a run or
//! demo whose scenario holds one becomes a supervisor. It starts the run
//! itself as a child process (the same command line, marked
//! [`SUPERVISED`]: that child starts the node processes and executes the
//! node faults, as any run with `--faults`), watches the run's journal for
//! the replay's start, and at each manager crash sends the child SIGKILL,
//! waits the fault's duration, and starts `libratory resume OUT` as the
//! next child. The node processes, whose parent was the first child, ride
//! the crashes out (`manager_grace_s`) and reconnect to each new manager.
//! The supervisor ends with the last child's exit status.
//!
//! Faults of node processes due after the first manager crash are not
//! executed (their injector ran in the killed process); a scenario with
//! one is refused before anything starts.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use common::faults::{Fault, FaultKind, Plan};

use crate::live::journal::JOURNAL;
use crate::results::rundir::Log;

/// The environment variable marking the supervised child (it executes
/// the node faults and leaves the manager crashes to its supervisor).
pub const SUPERVISED: &str = "LIBRATORY_SUPERVISED";

/// Whether `plan` needs a supervisor (it holds a manager crash).
pub fn needed(plan: &Plan) -> bool {
    plan.faults
        .iter()
        .any(|f| f.kind == FaultKind::ManagerCrash)
}

/// Refuses node faults due after the first manager crash (see the module
/// header).
pub fn check(plan: &Plan) -> Result<()> {
    let Some(first) = plan
        .faults
        .iter()
        .find(|f| f.kind == FaultKind::ManagerCrash)
    else {
        return Ok(());
    };
    for f in &plan.faults {
        if f.kind == FaultKind::ManagerCrash {
            continue;
        }
        let last = f.end().unwrap_or(f.at).max(f.at);
        if last >= first.at {
            bail!(
                "{f}: node faults must be over before the first manager crash ({first}): \
                 their injector runs in the manager process that the crash kills"
            );
        }
    }
    Ok(())
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

/// Runs the supervised run (see the module header). `first_submit` is the
/// workload's first submit time (faults are timed from it, as the node
/// faults' injector times them).
pub fn run(
    plan: &Plan,
    out: &Path,
    time_scale: f64,
    first_submit: f64,
    log: &mut Log,
) -> Result<ExitStatus> {
    let exe = std::env::current_exe().context("finding this program to supervise the run")?;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let journal = out.join(JOURNAL);
    log.say(format_args!(
        "faults: the scenario crashes the manager: this process supervises the run (the manager runs as its child and is killed and resumed as the scenario says)"
    ));
    let mut g = Guard(Some(
        Command::new(&exe)
            .args(&args)
            .env(SUPERVISED, "1")
            .spawn()
            .context("starting the supervised run")?,
    ));
    let start = wait_replay(&journal, g.child())?;
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
                log.say(format_args!("fault: {f}: not applied, the run ended first"));
                return Ok(st);
            }
            std::thread::sleep((at - Instant::now()).min(Duration::from_millis(20)));
        }
        let pid = g.child().id();
        g.child().kill().context("SIGKILL to the manager")?;
        g.child().wait()?;
        log.say(format_args!(
            "fault: {f}: SIGKILL to the manager (pid {pid})"
        ));
        let back = real(f.end().expect("a manager crash has a duration"));
        std::thread::sleep(back.saturating_duration_since(Instant::now()));
        let child = Command::new(&exe)
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
        g.0 = Some(child);
    }
    let st = g.child().wait()?;
    g.0 = None;
    Ok(st)
}

/// Waits for the journal's `replay` entry (the replay's start), or fails
/// if the child ends first.
fn wait_replay(journal: &Path, child: &mut Child) -> Result<Instant> {
    let mut buf = Vec::new();
    loop {
        if let Ok(mut f) = std::fs::File::open(journal) {
            buf.clear();
            f.read_to_end(&mut buf)?;
            const REPLAY: &[u8] = b"{\"e\":\"replay\",";
            if buf.windows(REPLAY.len()).any(|w| w == REPLAY) {
                return Ok(Instant::now());
            }
        }
        if let Some(st) = child.try_wait()? {
            bail!("the supervised run ended before its replay started ({st})");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
