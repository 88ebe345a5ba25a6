//! `run --faults` / `demo --faults`: executes a fault scenario's faults on
//! the real local node processes of a live run, at their trace times, and
//! journals each one when it happens.
//!
//! What is executed, on node processes: `crash` (SIGKILL; with a duration
//! the same command is started again and registers as new), `hang`
//! (SIGSTOP, then SIGCONT); made by the node process itself from a command
//! written to its `--fault-control` file, then SIGUSR1 ([`told`]):
//! `partition` and `delay` (its link layer, `node::linkfault`), `slow` of
//! the process or of one node and `crash` and `hang` of one node
//! (`node::nodefault`). A process the manager gave up on during a hang or
//! a partition is told so when it wakes (the manager's last word, or its
//! answer to the process's rejoin), drops its parts and registers again as
//! new by itself (docs/node.md); one that exits after its fault instead is
//! started again. `manager-crash` is the run's supervisor's
//! (`live::supervise`).

use std::path::PathBuf;
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use common::faults::{Fault, FaultKind, Plan, Target};

use crate::live::journal::{Entry, FaultAct, Journal};
use crate::live::local_nodes::start_node;
use crate::live::manager::FaultNotes;

/// Refuses the faults a live run cannot execute (see the module docs).
pub fn check_live(plan: &Plan, local_processes: usize) -> Result<()> {
    for f in &plan.faults {
        match (f.kind, f.target) {
            (_, Target::Process(p)) if f.kind != FaultKind::ManagerCrash => {
                if p >= local_processes {
                    bail!(
                        "{f}: live runs signal only node processes started on this machine \
                         (--spawn-local, demo); there are {local_processes}"
                    );
                }
            }
            // Executed by the run's supervisor (`live::supervise`).
            (FaultKind::ManagerCrash, Target::Manager) => {}
            // One node: its process makes it (`told`); the expansion
            // checked the node exists.
            (FaultKind::Crash | FaultKind::Hang | FaultKind::Slow { .. }, Target::Node(_)) => {}
            _ => bail!(
                "{f}: live runs do not execute {} of {}",
                f.kind.name(),
                f.target
            ),
        }
    }
    Ok(())
}

/// What the injector does at an instant.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Act {
    Kill,
    Restart,
    Stop,
    Cont,
    /// Write the fault's command ([`told`]) and signal SIGUSR1.
    Tell,
    /// A fault the node process made is over (it ends it itself).
    Over,
}

/// What a node process is told for a fault it makes itself: the command
/// written to its `--fault-control` file at the fault's start, and how
/// the journal names the start and the end (none: not journaled).
#[derive(Debug, Clone, PartialEq)]
struct Told {
    /// The node process (launch order).
    process: usize,
    /// The one node (local index), if not the whole process.
    node: Option<u32>,
    command: String,
    start: FaultAct,
    end: Option<FaultAct>,
    /// Noted for the manager (which fault a loss is blamed on) from the
    /// start until the end: a partition, a crash or hang of one node.
    blamed: bool,
}

/// The node process's `--fault-control` command for fault `f`, if its
/// process makes it (`node::linkfault`, `node::nodefault`; durations in
/// real seconds). `nodes[p]` is how many nodes process `p` has (a node's
/// number counts over the processes in launch order).
fn told(f: &Fault, seed: u64, time_scale: f64, nodes: &[usize]) -> Option<Told> {
    let secs = f.duration.map(|d| d * time_scale);
    let s = secs.unwrap_or(0.0);
    let (process, node) = match f.target {
        Target::Process(p) => (p, None),
        Target::Node(n) => {
            let mut first = 0;
            let p = nodes.iter().position(|&k| {
                first += k;
                n < first
            })?;
            (p, Some((n - (first - nodes[p])) as u32))
        }
        Target::Manager => return None,
    };
    let on = |cmd: String| match node {
        Some(k) => format!("node {k} {cmd}"),
        None => cmd,
    };
    let (command, start, end, blamed) = match (f.kind, node) {
        (FaultKind::Partition, None) => (
            format!("partition {s}"),
            FaultAct::Link,
            Some(FaultAct::Heal),
            true,
        ),
        (
            FaultKind::Delay {
                delay_ms,
                jitter_ms,
            },
            None,
        ) => (
            format!("delay {delay_ms} {jitter_ms} {s} {}", seed ^ f.id as u64),
            FaultAct::Link,
            Some(FaultAct::Heal),
            false,
        ),
        (FaultKind::Slow { factor }, _) => (
            on(format!("slow {factor} {s}")),
            FaultAct::Slow,
            Some(FaultAct::Restore),
            false,
        ),
        (FaultKind::Hang, Some(_)) => (
            on(format!("hang {s}")),
            FaultAct::Stop,
            Some(FaultAct::Cont),
            true,
        ),
        // Back after its time once the manager gave it up (the manager's
        // warning says when): not journaled as a restart.
        (FaultKind::Crash, Some(_)) => (
            on(secs.map_or("crash".into(), |s| format!("crash {s}"))),
            FaultAct::Kill,
            None,
            true,
        ),
        _ => return None,
    };
    Some(Told {
        process,
        node,
        command,
        start,
        end,
        blamed,
    })
}

/// The number of nodes a node process's command starts (`--nodes N`).
fn nodes_of(cmd: &(PathBuf, Vec<std::ffi::OsString>, PathBuf)) -> usize {
    let args = &cmd.1;
    args.iter()
        .position(|a| a == "--nodes")
        .and_then(|k| args.get(k + 1))
        .and_then(|n| n.to_str()?.parse().ok())
        .unwrap_or(0)
}

/// The local node processes and how to start each again.
pub struct Procs {
    /// (label, child) in launch order, shared with `LocalNodes`.
    pub children: Arc<Mutex<Vec<(String, Child)>>>,
    /// (program, arguments, log) of each.
    pub commands: Vec<(PathBuf, Vec<std::ffi::OsString>, PathBuf)>,
    /// Where each fault is recorded when it happens.
    pub journal: Option<Journal>,
    /// Shared with the manager: which fault a lost link is blamed on.
    pub notes: FaultNotes,
}

/// Runs the plan's faults on `procs` in a thread: waits for the replay's
/// start (instant, trace offset) on `started`, then executes each fault
/// at `started + (first_submit + at) x time_scale`. Stops when `stop` is
/// set (the run ended), first resuming any process it stopped.
pub fn spawn(
    plan: Plan,
    procs: Procs,
    time_scale: f64,
    first_submit: f64,
    started: Receiver<(Instant, f64)>,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let (journal, notes) = (&procs.journal, &procs.notes);
        let t0 = loop {
            match started.recv_timeout(Duration::from_millis(100)) {
                Ok((at, _offset)) => break at,
                Err(RecvTimeoutError::Timeout) if !stop.load(Ordering::Relaxed) => continue,
                _ => return,
            }
        };
        let real =
            |trace: f64| t0 + Duration::from_secs_f64((first_submit + trace).max(0.0) * time_scale);
        let nodes: Vec<usize> = procs.commands.iter().map(nodes_of).collect();
        let tells: Vec<Option<Told>> = plan
            .faults
            .iter()
            .map(|f| told(f, plan.seed, time_scale, &nodes))
            .collect();
        let mut acts: Vec<(Instant, Act, usize)> = Vec::new();
        for (i, f) in plan.faults.iter().enumerate() {
            if tells[i].is_some() {
                acts.push((real(f.at), Act::Tell, i));
                if let Some(end) = f.end() {
                    acts.push((real(end), Act::Over, i));
                }
                continue;
            }
            match f.kind {
                FaultKind::Crash => {
                    acts.push((real(f.at), Act::Kill, i));
                    if let Some(end) = f.end() {
                        acts.push((real(end), Act::Restart, i));
                    }
                }
                FaultKind::Hang => {
                    acts.push((real(f.at), Act::Stop, i));
                    acts.push((real(f.end().expect("hang has a duration")), Act::Cont, i));
                }
                _ => {}
            }
        }
        acts.sort_by_key(|a| a.0);
        let mut stopped: Vec<usize> = Vec::new();
        // Processes woken from a hang: restarted if they exit soon after
        // (the manager lost them meanwhile).
        let mut woken: Vec<(usize, Instant, usize)> = Vec::new();
        // The warning for people, and (when something was done to a
        // process) the structured entry `replay` reads.
        let say = |text: String, done: Option<(FaultAct, &str, usize)>| {
            eprintln!("{text}");
            if let Some(j) = journal {
                let t = j.t();
                if let Some((act, process, i)) = done {
                    let f = &plan.faults[i];
                    j.send(Entry::Fault {
                        t,
                        act,
                        process: process.to_string(),
                        fault: f.to_string(),
                        node: tells[i].as_ref().and_then(|w| w.node),
                        factor: match (f.kind, act) {
                            (FaultKind::Slow { factor }, FaultAct::Slow) => Some(factor),
                            _ => None,
                        },
                    });
                }
                j.send(Entry::Warning { t, text });
            }
        };
        let mut next = 0;
        while !stop.load(Ordering::Relaxed) {
            let now = Instant::now();
            while next < acts.len() && acts[next].0 <= now {
                let (_, act, i) = acts[next];
                next += 1;
                let f = &plan.faults[i];
                let tell = tells[i].as_ref();
                let p = match (tell, f.target) {
                    (Some(w), _) => w.process,
                    (None, Target::Process(p)) => p,
                    _ => continue,
                };
                let mut children = procs.children.lock().unwrap_or_else(|e| e.into_inner());
                let (label, child) = &mut children[p];
                let pid = child.id();
                // The manager's key for what it loses: the process, or
                // one of its nodes (`LABEL node K`).
                let key = match tell.and_then(|w| w.node) {
                    Some(k) => format!("{label} node {k}"),
                    None => label.clone(),
                };
                let note = |on: bool| {
                    let mut n = notes.lock().unwrap_or_else(|e| e.into_inner());
                    n.retain(|(l, _)| *l != key);
                    if on {
                        n.push((key.clone(), f.to_string()));
                    }
                };
                let blamed = tell.is_some_and(|w| w.blamed);
                // Partitions and delays are the process's link's.
                let link = if matches!(f.kind, FaultKind::Partition | FaultKind::Delay { .. }) {
                    "'s link"
                } else {
                    ""
                };
                match act {
                    Act::Kill | Act::Stop => note(true),
                    Act::Tell if blamed => note(true),
                    // A hang or partition that ended with the link (or the
                    // node) alive blames nothing later; a loss was blamed
                    // meanwhile.
                    Act::Cont => note(false),
                    // A crashed node is lost in any case: the loss takes
                    // the note.
                    Act::Over if blamed && f.kind != FaultKind::Crash => note(false),
                    Act::Restart | Act::Tell | Act::Over => {}
                }
                let mut failed = false;
                let what = match act {
                    Act::Kill => {
                        let _ = child.kill();
                        let _ = child.wait();
                        format!("SIGKILL to node process {label} (pid {pid})")
                    }
                    Act::Restart => match restart(&procs.commands[p]) {
                        Ok(c) => {
                            let new = c.id();
                            *child = c;
                            format!("node process {label} started again (pid {new})")
                        }
                        Err(e) => {
                            failed = true;
                            format!("node process {label} could not be started again: {e:#}")
                        }
                    },
                    Act::Stop => {
                        signal(pid, libc::SIGSTOP);
                        stopped.push(p);
                        format!("SIGSTOP to node process {label} (pid {pid})")
                    }
                    Act::Cont => {
                        signal(pid, libc::SIGCONT);
                        stopped.retain(|&q| q != p);
                        woken.push((p, Instant::now(), i));
                        format!("SIGCONT to node process {label} (pid {pid})")
                    }
                    Act::Tell => {
                        let cmd = &tell.expect("planned from a told fault").command;
                        let file = control_file(&procs.commands[p]);
                        match file.map(|file| std::fs::write(&file, format!("{cmd}\n"))) {
                            Some(Ok(())) => {
                                signal(pid, libc::SIGUSR1);
                                format!(
                                    "`{cmd}` (real seconds) to node process {label}{link} (pid {pid})"
                                )
                            }
                            Some(Err(e)) => {
                                failed = true;
                                format!("could not write the fault command of {label}: {e}")
                            }
                            None => {
                                failed = true;
                                format!("node process {label} has no --fault-control file")
                            }
                        }
                    }
                    Act::Over => {
                        if f.kind == FaultKind::Partition {
                            woken.push((p, Instant::now(), i));
                        }
                        match link {
                            "" => format!("node process {label}'s {} is over", f.kind.name()),
                            _ => format!("node process {label}'s link {} is over", f.kind.name()),
                        }
                    }
                };
                let done = match act {
                    Act::Kill => Some(FaultAct::Kill),
                    Act::Restart if failed => None,
                    Act::Restart => Some(FaultAct::Restart),
                    Act::Stop => Some(FaultAct::Stop),
                    Act::Cont => Some(FaultAct::Cont),
                    Act::Tell if failed => None,
                    Act::Tell => tell.map(|w| w.start),
                    Act::Over => tell.and_then(|w| w.end),
                };
                let label = label.clone();
                drop(children);
                say(
                    format!("fault: {f}: {what}"),
                    done.map(|a| (a, label.as_str(), i)),
                );
            }
            // A process woken from a long hang rejoins by itself; one that
            // exits with an error instead is started again so it rejoins
            // as new. Exit 0 is the manager's shutdown at the run's end.
            woken.retain(|&(p, since, i)| {
                let mut children = procs.children.lock().unwrap_or_else(|e| e.into_inner());
                let (label, child) = &mut children[p];
                match child.try_wait() {
                    Ok(Some(st)) if st.success() => false,
                    Ok(Some(st)) => {
                        let label = label.clone();
                        let restarted = restart(&procs.commands[p]);
                        let done = restarted.is_ok().then_some((FaultAct::Restart, label.as_str(), i));
                        let text = match restarted {
                            Ok(c) => {
                                let new = c.id();
                                *child = c;
                                format!(
                                    "fault: {}: node process {label} exited after its {} ({st}); started again (pid {new})",
                                    plan.faults[i],
                                    plan.faults[i].kind.name()
                                )
                            }
                            Err(e) => format!("fault: {}: node process {label} exited after its hang and could not be started again: {e:#}", plan.faults[i]),
                        };
                        drop(children);
                        say(text, done);
                        false
                    }
                    _ => since.elapsed() < Duration::from_secs(30),
                }
            });
            std::thread::sleep(Duration::from_millis(10));
        }
        // The run is over: a stopped process must be able to leave.
        let children = procs.children.lock().unwrap_or_else(|e| e.into_inner());
        for p in stopped {
            signal(children[p].1.id(), libc::SIGCONT);
        }
    })
}

/// The `--fault-control` file of a node process's command.
fn control_file(cmd: &(PathBuf, Vec<std::ffi::OsString>, PathBuf)) -> Option<PathBuf> {
    let args = &cmd.1;
    let k = args.iter().position(|a| a == "--fault-control")?;
    args.get(k + 1).map(PathBuf::from)
}

fn restart(cmd: &(PathBuf, Vec<std::ffi::OsString>, PathBuf)) -> Result<Child> {
    start_node(&cmd.0, &cmd.1, &cmd.2)
}

fn signal(pid: u32, sig: libc::c_int) {
    // SAFETY: kill(2) on a child's pid we still hold (not yet reaped, so
    // the pid cannot have been reused); no memory is involved.
    unsafe {
        libc::kill(pid as libc::pid_t, sig);
    }
}
