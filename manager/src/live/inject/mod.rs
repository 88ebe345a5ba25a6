//! The fault injector: executes a fault scenario's faults of node
//! processes at their trace times, and reports each one to the manager
//! over the client protocol ([`report`]: `FaultApplied`, with the
//! `operator` identity), which journals it and names it in the reasons of
//! what the fault loses.
//!
//! It runs outside the manager's actors and talks to the manager only
//! over the protocol and through the run's journal (it waits for the
//! journal's `replay` entry to time the faults), so it survives the
//! manager: in `run --spawn-local --faults` it is a thread of the run; when
//! the scenario crashes the manager it runs in the run's supervisor
//! ([`crate::live::supervise`]), which also owns the node processes; and
//! `libratory inject` ([`cmd`]) runs it as its own process for the node
//! processes the launch scripts start on remote hosts. While no manager
//! runs, reports wait and go to the next one, which journals each at the
//! time the fault happened.
//!
//! How a fault is made is said once, by [`action`]: a signal (SIGKILL for
//! a crash, SIGSTOP/SIGCONT for a hang), a restart with the same command
//! line, or a line for the node's `--fault-control` file followed by
//! SIGUSR1 (partition, delay; made by the node's own link layer,
//! `node::linkfault`). An [`exec::Executor`] carries the action out: on
//! the node processes this process started ([`exec::Children`]) or
//! through the launch scripts' agent on each host, over ssh
//! ([`exec::Agent`]).
//!
//! A process the manager gave up on during a hang or a partition is told
//! so when it wakes, drops its parts and registers again as new by itself
//! (docs/node.md); one that exits with an error after its fault instead is
//! started again.

pub mod cmd;
pub mod exec;
pub mod report;

use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::faults::{Fault, FaultKind, Plan};
use common::protocol::FaultAct;

use exec::Executor;
use report::{Report, Reporter};

/// A signal the injector sends a node process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sig {
    /// A crash.
    Kill,
    /// A hang starts.
    Stop,
    /// A hang ends.
    Cont,
}

impl Sig {
    /// The signal's number.
    pub fn number(self) -> libc::c_int {
        match self {
            Sig::Kill => libc::SIGKILL,
            Sig::Stop => libc::SIGSTOP,
            Sig::Cont => libc::SIGCONT,
        }
    }

    /// Its name without `SIG` (as `kill -NAME` takes it).
    pub fn name(self) -> &'static str {
        match self {
            Sig::Kill => "KILL",
            Sig::Stop => "STOP",
            Sig::Cont => "CONT",
        }
    }
}

/// What executing a fault's act means for its node process.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Send the process this signal.
    Signal(Sig),
    /// Start the process again with its command line (logging on).
    Restart,
    /// Write this line to the process's `--fault-control` file, then
    /// SIGUSR1: its link layer applies it.
    Control(String),
    /// Nothing: the node lifts a link fault itself when its time is up.
    Nothing,
}

/// How act `act` of fault `f` of `plan` is made, at `time_scale` real
/// seconds per trace second: the one place that says it. A `slow` fault
/// and the faults of one node are made by the node process itself
/// (`node::nodefault`), from a line naming the node (`node K ...`) or not;
/// their ends need nothing (the node process ends them on time).
pub fn action(plan: &Plan, f: &Fault, act: FaultAct, time_scale: f64) -> Action {
    // Real seconds: the node process knows no trace time.
    let secs = f.duration.map(|d| d * time_scale);
    let s = secs.unwrap_or(0.0);
    let node = plan.process_and_node(f).and_then(|(_, n)| n);
    let on = |cmd: String| match node {
        Some(k) => format!("node {k} {cmd}"),
        None => cmd,
    };
    match (f.kind, node, act) {
        (FaultKind::Slow { factor }, _, FaultAct::Slow) => {
            return Action::Control(on(format!("slow {factor} {s}")))
        }
        (FaultKind::Hang, Some(_), FaultAct::Stop) => {
            return Action::Control(on(format!("hang {s}")))
        }
        // Back after its time once the manager gave it up (the manager's
        // warning says when): the node process brings it back.
        (FaultKind::Crash, Some(_), FaultAct::Kill) => {
            return Action::Control(on(secs.map_or("crash".into(), |s| format!("crash {s}"))))
        }
        (FaultKind::Slow { .. }, _, _) | (FaultKind::Hang | FaultKind::Crash, Some(_), _) => {
            return Action::Nothing
        }
        _ => {}
    }
    match act {
        FaultAct::Slow | FaultAct::Restore => Action::Nothing,
        FaultAct::Kill => Action::Signal(Sig::Kill),
        FaultAct::Stop => Action::Signal(Sig::Stop),
        FaultAct::Cont => Action::Signal(Sig::Cont),
        FaultAct::Restart => Action::Restart,
        FaultAct::Heal => Action::Nothing,
        FaultAct::Link => {
            // Real seconds: the link layer knows no trace time.
            let secs = f.duration.unwrap_or(0.0) * time_scale;
            Action::Control(match f.kind {
                FaultKind::Delay {
                    delay_ms,
                    jitter_ms,
                } => format!(
                    "delay {delay_ms} {jitter_ms} {secs} {}",
                    plan.seed ^ f.id as u64
                ),
                _ => format!("partition {secs}"),
            })
        }
    }
}

/// The acts of a plan's node-process faults in time order: (trace
/// seconds after the first arrival, act, the fault's index).
pub fn steps(plan: &Plan) -> Vec<(f64, FaultAct, usize)> {
    let mut out = Vec::new();
    for (i, f) in plan.faults.iter().enumerate() {
        let Some((_, node)) = plan.process_and_node(f) else {
            continue;
        };
        let end = f.end();
        match f.kind {
            FaultKind::Crash => {
                out.push((f.at, FaultAct::Kill, i));
                // A crashed node comes back by itself.
                if let (Some(end), None) = (end, node) {
                    out.push((end, FaultAct::Restart, i));
                }
            }
            FaultKind::Hang => {
                out.push((f.at, FaultAct::Stop, i));
                out.extend(end.map(|e| (e, FaultAct::Cont, i)));
            }
            FaultKind::Partition | FaultKind::Delay { .. } => {
                out.push((f.at, FaultAct::Link, i));
                out.extend(end.map(|e| (e, FaultAct::Heal, i)));
            }
            FaultKind::Slow { .. } => {
                out.push((f.at, FaultAct::Slow, i));
                out.extend(end.map(|e| (e, FaultAct::Restore, i)));
            }
            FaultKind::ManagerCrash => {}
        }
    }
    // Stable: acts at one instant keep the plan's order.
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out
}

/// Waits for the journal's `replay` entry (the replay's start) and
/// returns the instant it was seen; `None` when `give_up` says so first
/// (asked every 10 ms: the run ended, or was stopped).
pub fn wait_replay(journal: &Path, mut give_up: impl FnMut() -> bool) -> Option<Instant> {
    const REPLAY: &[u8] = b"{\"e\":\"replay\",";
    let mut buf = Vec::new();
    loop {
        if let Ok(mut f) = std::fs::File::open(journal) {
            buf.clear();
            if f.read_to_end(&mut buf).is_ok() && buf.windows(REPLAY.len()).any(|w| w == REPLAY) {
                return Some(Instant::now());
            }
        }
        if give_up() {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// What the injector needs besides its executor.
pub struct Setup<'a> {
    /// The scenario expanded for the cluster.
    pub plan: &'a Plan,
    /// Real seconds per trace second.
    pub time_scale: f64,
    /// The workload's first submit time (faults are timed from it).
    pub first_submit: f64,
    /// The run's journal, whose `replay` entry starts the clock.
    pub journal: &'a Path,
}

/// Runs the plan's node faults on `exec` (see the module header): waits
/// for the replay's start, executes each act at `start + (first_submit +
/// at) x time_scale`, and hands each one applied to `reporter`. Returns
/// when every act is done and no woken process is watched any more, or
/// when `stop` is set (the run ended), first resuming any process it
/// stopped.
pub fn run(s: Setup<'_>, exec: &mut dyn Executor, reporter: &Reporter, stop: &AtomicBool) {
    let plan = s.plan;
    let Some(t0) = wait_replay(s.journal, || stop.load(Ordering::Relaxed)) else {
        return;
    };
    let real =
        |trace: f64| t0 + Duration::from_secs_f64((s.first_submit + trace).max(0.0) * s.time_scale);
    let acts: Vec<(Instant, FaultAct, usize)> = steps(plan)
        .into_iter()
        .map(|(at, act, i)| (real(at), act, i))
        .collect();
    let mut stopped: Vec<usize> = Vec::new();
    // Processes woken from a hang or a partition: started again if they
    // exit with an error soon after (the manager lost them meanwhile).
    let mut woken: Vec<(usize, Instant, usize)> = Vec::new();
    let mut last_poll = Instant::now();
    let mut next = 0;
    while !stop.load(Ordering::Relaxed) && (next < acts.len() || !woken.is_empty()) {
        while next < acts.len() && acts[next].0 <= Instant::now() {
            let (_, act, i) = acts[next];
            next += 1;
            let f = &plan.faults[i];
            let Some((p, node)) = plan.process_and_node(f) else {
                continue;
            };
            // A later fault of a woken process is its own: an exit it
            // causes is not the earlier fault's to restart.
            woken.retain(|w| w.0 != p);
            let a = action(plan, f, act, s.time_scale);
            match exec.apply(p, &a) {
                Ok(what) => {
                    // Signals are the whole process's; a node's faults
                    // are made and ended by its process.
                    match act {
                        _ if node.is_some() => {}
                        FaultAct::Stop => stopped.push(p),
                        FaultAct::Cont => {
                            stopped.retain(|&q| q != p);
                            woken.push((p, Instant::now(), i));
                        }
                        FaultAct::Heal if f.kind == FaultKind::Partition => {
                            woken.push((p, Instant::now(), i));
                        }
                        _ => {}
                    }
                    say(reporter, f, exec.label(p), node, act, what);
                }
                Err(e) => eprintln!("fault: {f}: {e:#}"),
            }
        }
        // Each executor polls as often as its checks cost.
        if !woken.is_empty() && last_poll.elapsed() >= exec.poll_every() {
            last_poll = Instant::now();
            woken.retain(|&(p, since, i)| {
                let f = &plan.faults[i];
                match exec.failed(p) {
                    Some(st) => {
                        match exec.apply(p, &Action::Restart) {
                            Ok(what) => say(
                                reporter,
                                f,
                                exec.label(p),
                                None,
                                FaultAct::Restart,
                                format!(
                                    "node process {} exited after its {} ({st}); {what}",
                                    exec.label(p),
                                    f.kind.name()
                                ),
                            ),
                            Err(e) => eprintln!(
                                "fault: {f}: node process {} exited after its {} ({st}) and could not be started again: {e:#}",
                                exec.label(p),
                                f.kind.name()
                            ),
                        }
                        false
                    }
                    None => since.elapsed() < Duration::from_secs(30),
                }
            });
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    // The run is over: a stopped process must be able to leave.
    for p in stopped {
        let _ = exec.apply(p, &Action::Signal(Sig::Cont));
    }
}

/// Prints what was done and hands the report to the manager.
fn say(
    reporter: &Reporter,
    f: &Fault,
    process: String,
    node: Option<u32>,
    act: FaultAct,
    what: String,
) {
    if reporter.echo() {
        eprintln!("fault: {f}: {what}");
    }
    let factor = match (f.kind, act) {
        (FaultKind::Slow { factor }, FaultAct::Slow) => Some(factor),
        _ => None,
    };
    reporter.send(Report {
        fault: f.to_string(),
        kind: f.kind.name().to_string(),
        process,
        act,
        what,
        node,
        factor,
        at: Instant::now(),
    });
}

/// Starts [`run`] in a thread with its reporter; `stop` ends both.
pub fn spawn(
    plan: Plan,
    time_scale: f64,
    first_submit: f64,
    journal: std::path::PathBuf,
    mut exec: Box<dyn Executor + Send>,
    reporter: Reporter,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let setup = Setup {
            plan: &plan,
            time_scale,
            first_submit,
            journal: &journal,
        };
        run(setup, exec.as_mut(), &reporter, &stop);
        reporter.finish(&stop);
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use common::faults::{Origin, Plan, Target};

    fn fault(id: usize, at: f64, kind: FaultKind, duration: Option<f64>) -> Fault {
        Fault {
            id,
            at,
            kind,
            target: Target::Process(0),
            duration,
            origin: Origin::Line(1),
        }
    }

    /// Each kind's acts and actions, worked out from docs/faults.md's
    /// table: the schedule in time order, the delay's seed the scenario's
    /// xor the fault's number, durations in real seconds.
    #[test]
    fn each_fault_maps_to_its_acts_and_actions() {
        let plan = Plan {
            seed: 7,
            faults: vec![
                fault(1, 10.0, FaultKind::Crash, Some(60.0)),
                fault(2, 5.0, FaultKind::Hang, Some(20.0)),
                fault(3, 30.0, FaultKind::Partition, Some(40.0)),
                fault(
                    4,
                    1.0,
                    FaultKind::Delay {
                        delay_ms: 150.0,
                        jitter_ms: 10.0,
                    },
                    Some(2.0),
                ),
                fault(5, 2.0, FaultKind::Crash, None),
            ],
            link_timeout: 5.0,
            processes: vec![0..4, 4..8],
            left_out: 0,
        };
        let s = steps(&plan);
        let got: Vec<(f64, FaultAct, usize)> = s.clone();
        assert_eq!(
            got,
            vec![
                (1.0, FaultAct::Link, 3),
                (2.0, FaultAct::Kill, 4),
                (3.0, FaultAct::Heal, 3),
                (5.0, FaultAct::Stop, 1),
                (10.0, FaultAct::Kill, 0),
                (25.0, FaultAct::Cont, 1),
                (30.0, FaultAct::Link, 2),
                (70.0, FaultAct::Restart, 0),
                (70.0, FaultAct::Heal, 2),
            ]
        );
        let a = |i: usize, act| action(&plan, &plan.faults[i], act, 0.05);
        assert_eq!(a(0, FaultAct::Kill), Action::Signal(Sig::Kill));
        assert_eq!(a(0, FaultAct::Restart), Action::Restart);
        assert_eq!(a(1, FaultAct::Stop), Action::Signal(Sig::Stop));
        assert_eq!(a(1, FaultAct::Cont), Action::Signal(Sig::Cont));
        // 40 trace s x 0.05 = 2 real s.
        assert_eq!(a(2, FaultAct::Link), Action::Control("partition 2".into()));
        // 2 x 0.05 = 0.1 s; seed 7 ^ 4 = 3.
        assert_eq!(
            a(3, FaultAct::Link),
            Action::Control("delay 150 10 0.1 3".into())
        );
        assert_eq!(a(3, FaultAct::Heal), Action::Nothing);
        assert_eq!((Sig::Kill.name(), Sig::Kill.number()), ("KILL", 9));
    }

    /// `slow` and the faults of one node are lines for the node process
    /// (`node K ...`, K the node's index in its process: node 5 of
    /// processes of 4 nodes is process 1's node 1); their ends need nothing
    /// and a crashed node is not restarted by the injector.
    #[test]
    fn slow_and_single_node_faults_are_control_lines() {
        let on = |mut f: Fault, target| {
            f.target = target;
            f
        };
        let plan = Plan {
            seed: 7,
            faults: vec![
                fault(1, 1.0, FaultKind::Slow { factor: 0.5 }, Some(20.0)),
                on(fault(2, 2.0, FaultKind::Hang, Some(10.0)), Target::Node(5)),
                on(fault(3, 3.0, FaultKind::Crash, Some(40.0)), Target::Node(5)),
                on(fault(4, 4.0, FaultKind::Crash, None), Target::Node(2)),
            ],
            link_timeout: 5.0,
            processes: vec![0..4, 4..8],
            left_out: 0,
        };
        assert_eq!(
            steps(&plan),
            vec![
                (1.0, FaultAct::Slow, 0),
                (2.0, FaultAct::Stop, 1),
                (3.0, FaultAct::Kill, 2),
                (4.0, FaultAct::Kill, 3),
                (12.0, FaultAct::Cont, 1),
                (21.0, FaultAct::Restore, 0),
            ]
        );
        let a = |i: usize, act| action(&plan, &plan.faults[i], act, 0.05);
        // 20 x 0.05 = 1 real s.
        assert_eq!(a(0, FaultAct::Slow), Action::Control("slow 0.5 1".into()));
        assert_eq!(a(0, FaultAct::Restore), Action::Nothing);
        assert_eq!(
            a(1, FaultAct::Stop),
            Action::Control("node 1 hang 0.5".into())
        );
        assert_eq!(a(1, FaultAct::Cont), Action::Nothing);
        assert_eq!(
            a(2, FaultAct::Kill),
            Action::Control("node 1 crash 2".into())
        );
        assert_eq!(a(3, FaultAct::Kill), Action::Control("node 2 crash".into()));
        assert_eq!(plan.process_and_node(&plan.faults[3]), Some((0, Some(2))));
    }
}
