//! `run --faults` / `demo --faults`: executes a fault scenario's faults on
//! the real local node processes of a live run, at their trace times, and
//! journals each one when it happens.
//!
//! What is executed, on node processes: `crash` (SIGKILL; with a duration
//! the same command is started again and registers as new), `hang`
//! (SIGSTOP, then SIGCONT), `partition` and `delay` (made by the node's
//! own link layer, `node::linkfault`: the command is written to the
//! process's `--fault-control` file, then SIGUSR1). A process the manager
//! gave up on during a hang or a partition is told so when it wakes (the
//! manager's last word, or its answer to the process's rejoin), drops its
//! parts and registers again as new by itself (docs/node.md); one that
//! exits after its fault instead is started again. The other kinds
//! (`slow`, faults of single nodes, `manager-crash`) are not executed
//! live: a scenario with them is refused before the run starts, naming
//! the fault, rather than run as something else.

use std::path::PathBuf;
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use common::faults::{FaultKind, Plan, Target};

use crate::live::journal::{Entry, FaultAct, Journal};
use crate::live::local_nodes::start_node;
use crate::live::manager::FaultNotes;

/// Refuses the faults a live run cannot execute (see the module docs).
pub fn check_live(plan: &Plan, local_processes: usize) -> Result<()> {
    for f in &plan.faults {
        match (f.kind, f.target) {
            (
                FaultKind::Crash | FaultKind::Hang | FaultKind::Partition | FaultKind::Delay { .. },
                Target::Process(p),
            ) => {
                if p >= local_processes {
                    bail!(
                        "{f}: live runs signal only node processes started on this machine \
                         (--spawn-local, demo); there are {local_processes}"
                    );
                }
            }
            // Executed by the run's supervisor (`live::supervise`).
            (FaultKind::ManagerCrash, Target::Manager) => {}
            _ => bail!(
                "{f}: live runs execute crash, hang, partition and delay of node processes \
                 only; {} of {} is \
                 modelled by `libratory simulate --faults` but not executed live",
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
    /// Write the link command (partition, delay) and signal SIGUSR1.
    Link,
    /// A partition or delay is over (the node lifts it itself).
    Heal,
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
        let mut acts: Vec<(Instant, Act, usize)> = Vec::new();
        for (i, f) in plan.faults.iter().enumerate() {
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
                FaultKind::Partition | FaultKind::Delay { .. } => {
                    acts.push((real(f.at), Act::Link, i));
                    acts.push((
                        real(f.end().expect("checked: has a duration")),
                        Act::Heal,
                        i,
                    ));
                }
                FaultKind::Slow { .. } | FaultKind::ManagerCrash => {}
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
                    j.send(Entry::Fault {
                        t,
                        act,
                        process: process.to_string(),
                        fault: plan.faults[i].to_string(),
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
                let Target::Process(p) = f.target else {
                    continue;
                };
                let mut children = procs.children.lock().unwrap_or_else(|e| e.into_inner());
                let (label, child) = &mut children[p];
                let pid = child.id();
                let note = |on: bool| {
                    let mut n = notes.lock().unwrap_or_else(|e| e.into_inner());
                    n.retain(|(l, _)| l != label);
                    if on {
                        n.push((label.clone(), f.to_string()));
                    }
                };
                match act {
                    Act::Kill | Act::Stop => note(true),
                    Act::Link if matches!(f.kind, FaultKind::Partition) => note(true),
                    // A hang or partition that ended with the link alive
                    // blames nothing later; a lost link was blamed
                    // meanwhile.
                    Act::Cont | Act::Heal => note(false),
                    Act::Restart | Act::Link => {}
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
                    Act::Link => {
                        let secs = f.duration.unwrap_or(0.0) * time_scale;
                        let cmd = match f.kind {
                            FaultKind::Delay {
                                delay_ms,
                                jitter_ms,
                            } => format!(
                                "delay {delay_ms} {jitter_ms} {secs} {}",
                                plan.seed ^ f.id as u64
                            ),
                            _ => format!("partition {secs}"),
                        };
                        let file = control_file(&procs.commands[p]);
                        match file.map(|file| std::fs::write(&file, format!("{cmd}\n"))) {
                            Some(Ok(())) => {
                                signal(pid, libc::SIGUSR1);
                                format!("`{cmd}` (real seconds) to node process {label}'s link (pid {pid})")
                            }
                            Some(Err(e)) => {
                                format!("could not write the link fault of {label}: {e}")
                            }
                            None => format!("node process {label} has no --fault-control file"),
                        }
                    }
                    Act::Heal => {
                        if f.kind == FaultKind::Partition {
                            woken.push((p, Instant::now(), i));
                        }
                        format!("node process {label}'s link {} is over", f.kind.name())
                    }
                };
                let done = match act {
                    Act::Kill => Some(FaultAct::Kill),
                    Act::Restart if failed => None,
                    Act::Restart => Some(FaultAct::Restart),
                    Act::Stop => Some(FaultAct::Stop),
                    Act::Cont => Some(FaultAct::Cont),
                    Act::Link => Some(FaultAct::Link),
                    Act::Heal => Some(FaultAct::Heal),
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
