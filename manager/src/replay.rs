//! `libratory replay RUN`: a live run's simulated twin. The journal says
//! what really happened: which jobs arrived when, which node processes
//! registered, which the fault injector killed, stopped and woke, which
//! the manager lost and when. [`observe`] turns that into the simulator's
//! inputs (jobs, nodes, a [`Timeline`] of node events) and [`run`] runs
//! the live run's policy and settings through the fault engine
//! (`common::sim_faults`, as `simulate --faults`), writing a normal run
//! directory that `compare` and `report` read.
//!
//! Time: journal entries carry real seconds since the manager started; a
//! run's records are on the workload's axis, `(t - replay start) /
//! time_scale` trace seconds. A loss is taken from the lost jobs' records
//! when one names it (`lost at T: node process H (link N) gone`, exact),
//! else from the warning that journaled it (within one heartbeat).

use std::ops::Range;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use common::metrics::{JobRecord, Summary};
use common::node_model::NodeSpec;
use common::sim_faults::{simulate_timeline, NodeAct, NodeEvent, Timeline};
use common::time::Time;
use common::workload::{Workload, WorkloadJob};
use serde::Serialize;
use thiserror::Error;

use crate::cluster::config::ClusterConfig;
use crate::live::journal::{self, Contents, Entry, FaultAct, Rebuilt, JOURNAL};
use crate::results::output;
use crate::results::rundir::{self, Invocation, Log, Manifest, PolicyRun, Run};

/// A journal that cannot be replayed.
#[derive(Debug, Error, PartialEq)]
pub enum ReplayError {
    /// The replay never started (no `replay` entry): nothing arrived.
    #[error("{0}: the run never started its replay (no `replay` entry): nothing to replay")]
    NeverStarted(String),
    /// A record that is not a valid job.
    #[error("{file}: job {job}: {why}")]
    BadJob {
        /// The journal.
        file: String,
        /// The job.
        job: u64,
        /// What is wrong.
        why: String,
    },
}

/// A node process as the journal saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct Process {
    /// Its label (`local-1`).
    pub label: String,
    /// Its nodes in the replay (global ids, in order of first
    /// registration, as the live manager numbered them).
    pub nodes: Range<usize>,
}

/// What a live run's journal observed, as the simulator's inputs.
#[derive(Debug, Clone)]
pub struct Observed {
    /// Every job the run submitted, with its observed submit time, in
    /// arrival order.
    pub jobs: Vec<WorkloadJob>,
    /// The nodes of every node process that registered.
    pub specs: Vec<NodeSpec>,
    /// Node processes in order of first registration.
    pub processes: Vec<Process>,
    /// What happened to them, on the jobs' axis.
    pub timeline: Timeline,
}

/// The label of a node process from its `host` (`local-1 (127.0.0.1:9)`).
fn label_of(host: &str) -> &str {
    host.split(' ').next().unwrap_or(host)
}

/// Exact loss times the lost jobs' records name (`lost at T: node process
/// H (link N) gone: ...`, common::admission): `H (link N)` to `T`, the
/// trace time of the loss on the clock's axis.
fn losses_in_records(records: &[JobRecord]) -> Vec<(String, Time)> {
    let mut out = Vec::new();
    for r in records.iter().filter(|r| r.lost) {
        let Some(rest) = r.detail.strip_prefix("lost at ") else {
            continue;
        };
        let Some((at, what)) = rest.split_once(": ") else {
            continue;
        };
        let (Ok(at), Some(who)) = (at.parse::<f64>(), what.split_once(") gone")) else {
            continue;
        };
        let who = format!("{})", who.0.strip_prefix("node process ").unwrap_or(who.0));
        if !out.iter().any(|(w, _)| *w == who) {
            out.push((who, at));
        }
    }
    out
}

/// The manager's words for a lost link (`lost node process HOST (link
/// N): REASON`, manager/actor.rs): `HOST (link N)` and the reason.
fn lost_warning(text: &str) -> Option<(String, &str)> {
    let rest = text.strip_prefix("lost node process ")?;
    let (who, reason) = rest.split_once("): ")?;
    Some((format!("{who})"), reason))
}

/// The manager's words for a single node lost or back (`lost node G of
/// node process HOST (link N) at T: REASON`, `node G of node process HOST
/// (link N) back at T, idle`: live/manager/core/silent.rs): whether it is
/// a loss, the node's live id, `HOST` (its current incarnation), `T` (on
/// the clock's axis) and what to name as the cause.
fn node_warning(text: &str) -> Option<(bool, u32, &str, Time, String)> {
    let (lost, rest) = match text.strip_prefix("lost node ") {
        Some(r) => (true, r),
        None => (false, text.strip_prefix("node ")?),
    };
    let (g, rest) = rest.split_once(" of node process ")?;
    let (who, rest) = rest
        .split_once(") at ")
        .or_else(|| rest.split_once(") back at "))?;
    let host = who.rsplit_once(" (link ")?.0;
    let (at, reason) = match lost {
        true => rest.split_once(": ")?,
        false => (rest.strip_suffix(", idle")?, ""),
    };
    let cause = match lost {
        true => format!("node {g} of node process {who}) gone: {reason}"),
        false => format!("node {g} of node process {who}) back"),
    };
    Some((lost, g.parse().ok()?, host, at.parse().ok()?, cause))
}

/// Translates a journal (read and rebuilt) into the simulator's inputs.
/// `speed` gives a node process's node speed from its label (the cluster
/// configuration's), `base` the memory and disk of every node.
pub fn observe(
    c: &Contents,
    r: &Rebuilt,
    file: &str,
    speed: impl Fn(&str) -> f64,
    base: &NodeSpec,
) -> Result<Observed, ReplayError> {
    let scale = c.header.time_scale;
    let replay_t = c
        .entries
        .iter()
        .find_map(|e| match e {
            Entry::Replay { t, .. } => Some(*t),
            _ => None,
        })
        .ok_or_else(|| ReplayError::NeverStarted(file.to_string()))?;
    let axis = |t: f64| (t - replay_t) / scale;

    let mut jobs: Vec<WorkloadJob> = Vec::with_capacity(r.records.len());
    for rec in &r.records {
        let j = rec.submitted();
        j.spec.validate().map_err(|e| ReplayError::BadJob {
            file: file.to_string(),
            job: rec.id,
            why: e.to_string(),
        })?;
        jobs.push(j);
    }
    // Arrival order; ties in id order.
    jobs.sort_by(|a, b| {
        a.spec
            .details
            .submit_time
            .total_cmp(&b.spec.details.submit_time)
            .then(a.spec.id.cmp(&b.spec.id))
    });
    let first = jobs.first().map_or(0.0, |j| j.spec.details.submit_time);

    // Every loss, by the incarnation it lost (`HOST (link N)`): its time
    // and its cause. Read ahead: a process woken from a hang can register
    // again before the warning of its loss is journaled (warnings wait
    // for the next heartbeat tick).
    let exact = losses_in_records(&r.records);
    let losses: Vec<(String, Time, String)> = c
        .entries
        .iter()
        .filter_map(|e| match e {
            Entry::Warning { t, text } => {
                let (who, reason) = lost_warning(text)?;
                let at = exact
                    .iter()
                    .find(|(w, _)| *w == who)
                    .map_or(axis(*t), |(_, at)| at - r.replay_offset);
                Some((
                    who.clone(),
                    at,
                    format!("node process {who} gone: {reason}"),
                ))
            }
            _ => None,
        })
        .collect();
    let loss_of = |host: &str| {
        losses
            .iter()
            .find(|(who, _, _)| who.rsplit_once(" (link ").is_some_and(|(h, _)| h == host))
    };
    // The manager's downtimes (`restart` entries, journal clock): from the
    // crash until the resumed manager decided again. Read ahead: the node
    // processes that rode a crash out register again before the entry.
    let restarts: Vec<(f64, f64)> = c
        .entries
        .iter()
        .filter_map(|e| match e {
            Entry::Restart { t, crashed, .. } => Some((*crashed, *t)),
            _ => None,
        })
        .collect();
    let down: Vec<(Time, Time)> = restarts
        .iter()
        .map(|&(from, until)| (axis(from), axis(until)))
        .collect();
    // Each process's current incarnation (`LABEL (ADDRESS)`), and when it
    // registered (journal clock).
    let mut current: Vec<String> = Vec::new();
    let mut registered: Vec<f64> = Vec::new();
    let mut processes: Vec<Process> = Vec::new();
    let mut specs: Vec<NodeSpec> = Vec::new();
    // Per process: lost (out of the pool), stopped by the injector.
    let mut lost: Vec<bool> = Vec::new();
    let mut stopped: Vec<bool> = Vec::new();
    let mut events: Vec<NodeEvent> = Vec::new();
    // The live id of each process's current incarnation's first node (the
    // live manager numbers nodes in order of registration): a single
    // node's loss names its live id.
    let mut live_first: Vec<u32> = Vec::new();
    let mut live_next: u32 = 0;
    let ids = |p: &Process| p.nodes.clone().map(|n| n as u32).collect::<Vec<u32>>();
    for e in &c.entries {
        match e {
            Entry::Node { t, host, nodes, .. } => {
                let label = label_of(host);
                let first_live = live_next;
                live_next += *nodes as u32;
                match processes.iter().position(|p| p.label == label) {
                    None => {
                        let from = specs.len();
                        let s = speed(label);
                        specs.extend((from..from + nodes).map(|id| NodeSpec {
                            id,
                            speed: s,
                            ..base.clone()
                        }));
                        let p = Process {
                            label: label.to_string(),
                            nodes: from..from + nodes,
                        };
                        if *t > replay_t {
                            // Joined after the start: out of the pool
                            // until then.
                            let cause = format!("node process {host} not registered yet");
                            events.push(NodeEvent {
                                at: first,
                                act: NodeAct::Lose,
                                nodes: ids(&p),
                                cause: cause.clone(),
                            });
                            events.push(NodeEvent {
                                at: axis(*t),
                                act: NodeAct::Rejoin,
                                nodes: ids(&p),
                                cause: format!("node process {host} registered"),
                            });
                        }
                        processes.push(p);
                        live_first.push(first_live);
                        current.push(host.clone());
                        registered.push(*t);
                        lost.push(false);
                        stopped.push(false);
                    }
                    Some(k) if !lost[k] && rode_out(&restarts, registered[k], *t) => {
                        // A process that rode a manager crash out
                        // registers with the resumed manager: its nodes
                        // and their parts went on.
                        current[k] = host.clone();
                        registered[k] = *t;
                    }
                    Some(k) => {
                        let at = axis(*t);
                        registered[k] = *t;
                        if !lost[k] {
                            // Registered again before its loss was
                            // journaled, or with none: its old self is
                            // gone, when the manager lost it if it says.
                            let (when, cause) = match loss_of(&current[k]) {
                                Some((_, l, cause)) => (l.min(at), cause.clone()),
                                None => (at, format!("node process {host} registered again")),
                            };
                            events.push(NodeEvent {
                                at: when,
                                act: NodeAct::Lose,
                                nodes: ids(&processes[k]),
                                cause,
                            });
                        }
                        current[k] = host.clone();
                        live_first[k] = first_live;
                        events.push(NodeEvent {
                            at,
                            act: NodeAct::Rejoin,
                            nodes: ids(&processes[k]),
                            cause: format!("node process {host} registered again"),
                        });
                        lost[k] = false;
                        stopped[k] = false;
                    }
                }
            }
            Entry::Fault {
                t,
                act,
                process,
                fault,
                node,
                factor,
            } => {
                let Some(k) = processes.iter().position(|p| p.label == *process) else {
                    continue;
                };
                // One node of the process, or all.
                let nodes = match node {
                    Some(n) if (*n as usize) < processes[k].nodes.len() => {
                        vec![(processes[k].nodes.start + *n as usize) as u32]
                    }
                    Some(_) => continue,
                    None => ids(&processes[k]),
                };
                let what = match act {
                    FaultAct::Slow => NodeAct::Rate(factor.unwrap_or(1.0)),
                    FaultAct::Restore => NodeAct::Rate(1.0),
                    // A single node's stop and wake (its loss and return
                    // are the manager's warnings).
                    FaultAct::Kill | FaultAct::Stop if node.is_some() && !lost[k] => NodeAct::Stop,
                    FaultAct::Cont if node.is_some() && !lost[k] => NodeAct::Resume,
                    FaultAct::Kill | FaultAct::Stop if !lost[k] => {
                        stopped[k] = true;
                        NodeAct::Stop
                    }
                    FaultAct::Cont if !lost[k] && stopped[k] => {
                        stopped[k] = false;
                        NodeAct::Resume
                    }
                    // A restart registers (a `node` entry); a partition
                    // or delay only matters if the manager lost the
                    // process (a loss entry).
                    _ => continue,
                };
                events.push(NodeEvent {
                    at: axis(*t),
                    act: what,
                    nodes,
                    cause: fault.clone(),
                });
            }
            Entry::Warning { text, .. } if node_warning(text).is_some() => {
                let (lose, g, host, at, cause) = node_warning(text).expect("just matched");
                let Some(k) = current.iter().position(|h| h == host) else {
                    continue;
                };
                let local = g.wrapping_sub(live_first[k]) as usize;
                if local >= processes[k].nodes.len() || lost[k] {
                    continue;
                }
                events.push(NodeEvent {
                    at: at - r.replay_offset,
                    act: if lose { NodeAct::Lose } else { NodeAct::Rejoin },
                    nodes: vec![(processes[k].nodes.start + local) as u32],
                    cause,
                });
            }
            Entry::Warning { text, .. } => {
                let Some((who, _)) = lost_warning(text) else {
                    continue;
                };
                // Only a loss of a process's current incarnation: an older
                // one's was applied when it registered again.
                let host = who.rsplit_once(" (link ").map_or(who.as_str(), |(h, _)| h);
                let Some(k) = current.iter().position(|h| h == host) else {
                    continue;
                };
                if lost[k] {
                    continue;
                }
                let (_, at, cause) = loss_of(host).expect("read ahead from the same entries");
                lost[k] = true;
                stopped[k] = false;
                events.push(NodeEvent {
                    at: *at,
                    act: NodeAct::Lose,
                    nodes: ids(&processes[k]),
                    cause: cause.clone(),
                });
            }
            _ => {}
        }
    }
    // A loss taken from a record can be earlier than the entries journaled
    // before its warning; the sort is stable, so ties keep journal order.
    events.sort_by(|a, b| a.at.total_cmp(&b.at));
    Ok(Observed {
        jobs,
        specs,
        processes,
        timeline: Timeline { events, down },
    })
}

/// Whether a process that registered at `before` and registers again at
/// `now` (journal clock) did so because the manager crashed in between
/// (one of `restarts`' crashes lies between the two).
fn rode_out(restarts: &[(f64, f64)], before: f64, now: f64) -> bool {
    restarts
        .iter()
        .any(|&(crashed, _)| before <= crashed && crashed < now)
}

/// The node speed of a process label under `cfg` (`HOST-P`).
fn speed_in(cfg: &ClusterConfig, label: &str, default: f64) -> f64 {
    cfg.hosts
        .iter()
        .find(|h| (0..h.processes).any(|p| ClusterConfig::process_label(h, p) == label))
        .map_or(default, |h| h.speed)
}

/// What the manifest says a replay ran: the live run's experiment and
/// cluster, and where the journal was.
#[derive(Serialize)]
struct ReplayConfig<'a> {
    experiment: &'a common::experiment::Experiment,
    cluster: &'a ClusterConfig,
    replay_of: ReplayOf<'a>,
}

#[derive(Serialize)]
struct ReplayOf<'a> {
    journal: String,
    live_run_started_utc: &'a str,
    time_scale: f64,
    node_processes: Vec<(String, usize)>,
    node_events: Vec<String>,
    manager_down: Vec<String>,
}

/// `libratory replay RUN [--out DIR]`: the live run in `run`, simulated
/// with what its journal observed (default output: `RUN-replay`).
pub fn run(dir: &Path, out: Option<PathBuf>) -> Result<()> {
    let inv = Invocation::capture();
    let path = dir.join(JOURNAL);
    if !path.is_file() {
        // A simulated run has no journal: say so rather than "no such
        // file".
        let manifest = dir.join(crate::results::rundir::MANIFEST);
        let mode = std::fs::read(&manifest)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .and_then(|m| m.get("mode").and_then(|v| v.as_str()).map(str::to_string));
        match mode.as_deref() {
            Some("simulated") => anyhow::bail!(
                "{} is a simulated run ({} says mode simulated): replay reads the journal of a live run (`libratory run`, `demo`)",
                dir.display(),
                manifest.display()
            ),
            _ => anyhow::bail!(
                "{}: no journal; replay reads the journal of a live run (`libratory run`, `demo`)",
                path.display()
            ),
        }
    }
    let c = journal::read(&path)?;
    let r = journal::rebuild(&c);
    let h = &c.header;
    let mut exp = h.experiment.clone();
    exp.policies = vec![h.policy.clone()];
    let base = NodeSpec {
        id: 0,
        speed: exp.params.node_speed,
        memory_kb: exp.params.node_memory_kb,
        disk_mb: exp.params.node_disk_mb,
    };
    let file = path.display().to_string();
    let obs = observe(
        &c,
        &r,
        &file,
        |l| speed_in(&h.cluster, l, base.speed),
        &base,
    )?;
    if obs.specs.is_empty() {
        bail!("{file}: no node process registered: nothing to replay");
    }
    exp.params.nodes = obs.specs.len();
    let mut log = Log::new();
    log.say(format_args!(
        "libratory replay: {file} (live run started {}, policy {}, seed {}): {} jobs, {} node processes, {} nodes, {} node events",
        h.started_utc,
        h.policy,
        h.seed,
        obs.jobs.len(),
        obs.processes.len(),
        obs.specs.len(),
        obs.timeline.events.len()
    ));
    let node_events: Vec<String> = obs
        .timeline
        .events
        .iter()
        .map(|e| {
            let n = (e.nodes.first(), e.nodes.last());
            let nodes = match n {
                (Some(a), Some(b)) if a != b => format!("nodes {a}-{b}"),
                (Some(a), _) => format!("node {a}"),
                _ => "no node".into(),
            };
            format!("{:.3}: {:?} {nodes}: {}", e.at, e.act, e.cause)
        })
        .collect();
    for e in &node_events {
        log.say(format_args!("  {e}"));
    }
    let manager_down: Vec<String> = obs
        .timeline
        .down
        .iter()
        .map(|(from, until)| {
            format!(
                "{from:.3} to {until:.3}: manager down ({:.3} trace s: arrivals wait, running parts go on)",
                until - from
            )
        })
        .collect();
    for d in &manager_down {
        log.say(format_args!("  {d}"));
    }
    let p = common::policy::build(&h.policy, &exp.policy, &obs.specs)
        .with_context(|| format!("{file}: the run's policy"))?;
    let f = simulate_timeline(&obs.jobs, &obs.specs, p, &obs.timeline);
    let summary = Summary::compute(&h.policy, &f.outcome.records);
    let lost = f.outcome.records.iter().filter(|r| r.lost).count();
    log.say(format_args!(
        "{}: {} node events applied, {lost} jobs lost",
        h.policy,
        f.notes.len()
    ));
    let mut table = Vec::new();
    output::print_table(&mut table, std::slice::from_ref(&summary))?;
    log.say("");
    log.block(&String::from_utf8_lossy(&table));

    let trace_facts: Option<rundir::TraceFacts> = h
        .trace
        .clone()
        .map(serde_json::from_value)
        .transpose()
        .with_context(|| format!("{file}: the header's trace facts"))?;
    let trace = trace_facts.as_ref().map(|t| PathBuf::from(&t.path));
    let wl = Workload {
        params: exp.params.clone(),
        trace: trace.clone(),
        jobs: obs.jobs,
        odd: h.workload.facts.odd_records.clone(),
        duplicates: h.workload.duplicates,
    };
    let out = out.unwrap_or_else(|| {
        let mut name = dir.file_name().unwrap_or_default().to_os_string();
        name.push("-replay");
        dir.with_file_name(name)
    });
    let runs = [PolicyRun {
        outcome: f.outcome,
        summary,
    }];
    let files = rundir::write_run_files(
        &out,
        &Run {
            experiment: &exp,
            workload: &wl,
            trace: trace.as_deref(),
            policies: &runs.iter().map(PolicyRun::result).collect::<Vec<_>>(),
            live: None,
        },
    )?;
    let files = rundir::with_manifest_and_log(files);
    let config = ReplayConfig {
        experiment: &exp,
        cluster: &h.cluster,
        replay_of: ReplayOf {
            journal: std::path::absolute(&path)
                .unwrap_or(path.clone())
                .display()
                .to_string(),
            live_run_started_utc: &h.started_utc,
            time_scale: h.time_scale,
            node_processes: obs
                .processes
                .iter()
                .map(|p| (p.label.clone(), p.nodes.len()))
                .collect(),
            node_events,
            manager_down,
        },
    };
    let manifest = Manifest::new(
        "replay",
        &inv,
        h.seed,
        &config,
        trace_facts.as_ref(),
        &files,
    );
    rundir::finish(
        &out,
        manifest,
        &mut log,
        format_args!(
            "\nresults in {o} (compare with the live run: libratory compare {d} {o})",
            o = out.display(),
            d = dir.display()
        ),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::journal::testkit::{header, record};
    use crate::live::journal::{rebuild, Contents, Header};

    fn node(t: f64, host: &str, nodes: usize) -> Entry {
        Entry::Node {
            t,
            host: host.into(),
            nodes,
            pid: None,
        }
    }

    fn fault(t: f64, act: FaultAct, process: &str) -> Entry {
        Entry::Fault {
            t,
            act,
            process: process.into(),
            fault: "fault 1 (crash of node process 1 at +10 s, line 4)".into(),
            node: None,
            factor: None,
        }
    }

    fn warning(t: f64, text: &str) -> Entry {
        Entry::Warning {
            t,
            text: text.into(),
        }
    }

    fn contents(h: Header, entries: Vec<Entry>) -> Contents {
        Contents {
            header: h,
            entries,
            torn_line: None,
        }
    }

    fn base() -> NodeSpec {
        NodeSpec {
            id: 0,
            speed: 1.0,
            memory_kb: 0,
            disk_mb: 0,
        }
    }

    /// A hand-made journal at time scale 0.01 (1 real s = 100 trace s),
    /// the replay starting at real second 2.0 with trace offset 50: two
    /// processes of 2 nodes at the start, a third joining late; process
    /// b killed, lost and back; process a stopped and woken before any
    /// loss; the late process lost with no fault. Times worked out by
    /// hand: trace = (t - 2.0) / 0.01 on the jobs' axis.
    #[test]
    fn journal_entries_become_the_jobs_and_node_events_observed() {
        let mut h = header();
        h.time_scale = 0.01;
        let mut j1 = record(1);
        j1.submit = 50.0 + 3.0;
        let mut j2 = record(2);
        j2.submit = 50.0 + 1.5;
        j2.class = Some(common::job::Urgency::High);
        // Job 2 was lost with the exact time of b's loss in its detail.
        let mut j2_lost = j2.clone();
        j2_lost.accepted = true;
        j2_lost.nodes = vec![2];
        j2_lost.lost = true;
        j2_lost.detail =
            "lost at 81.250: node process b-0 (127.0.0.1:2) (link 2) gone: silent for more than 1s"
                .into();
        let c = contents(
            h,
            vec![
                node(1.0, "a-0 (127.0.0.1:1)", 2),
                node(1.5, "b-0 (127.0.0.1:2)", 2),
                Entry::Replay { t: 2.0, offset: 50.0 },
                Entry::Submitted { t: 2.015, record: j2.clone(), spec: None },
                Entry::Submitted { t: 2.03, record: j1, spec: None },
                fault(2.1, FaultAct::Kill, "b-0"),
                fault(2.15, FaultAct::Stop, "a-0"),
                fault(2.2, FaultAct::Cont, "a-0"),
                node(2.25, "c-0 (127.0.0.1:3)", 1),
                Entry::Finished { t: 2.31, id: None, finish: None, record: Some(Box::new(j2_lost)) },
                // Journaled a heartbeat after the loss (2.3125 real).
                warning(2.4, "lost node process b-0 (127.0.0.1:2) (link 2): silent for more than 1s, after fault 1"),
                fault(2.5, FaultAct::Restart, "b-0"),
                node(2.6, "b-0 (127.0.0.1:4)", 2),
                warning(2.7, "lost node process c-0 (127.0.0.1:3) (link 3): connection closed"),
                warning(2.8, "b-0 (127.0.0.1:4) left: run complete"),
            ],
        );
        let r = rebuild(&c);
        let o = observe(&c, &r, "j", |l| if l == "c-0" { 2.0 } else { 1.0 }, &base()).unwrap();
        // Jobs: ids and observed submit times (offset taken off), in
        // arrival order, with what the policy sees.
        let subs: Vec<(u64, f64)> = o
            .jobs
            .iter()
            .map(|j| (j.spec.id, j.spec.details.submit_time))
            .collect();
        assert_eq!(subs, [(2, 1.5), (1, 3.0)]);
        assert_eq!(o.jobs[0].spec.urgency, Some(common::job::Urgency::High));
        assert_eq!(
            (o.jobs[0].spec.estimate(), o.jobs[0].actual_runtime),
            (5.0, 4.0)
        );
        // Nodes: a 0-1, b 2-3, c 4 (speed 2).
        let labels: Vec<(&str, Range<usize>)> = o
            .processes
            .iter()
            .map(|p| (p.label.as_str(), p.nodes.clone()))
            .collect();
        assert_eq!(labels, [("a-0", 0..2), ("b-0", 2..4), ("c-0", 4..5)]);
        assert_eq!(
            o.specs.iter().map(|s| s.speed).collect::<Vec<_>>(),
            [1.0, 1.0, 1.0, 1.0, 2.0]
        );
        let ev: Vec<(f64, NodeAct, Vec<u32>)> = o
            .timeline
            .events
            .iter()
            .map(|e| ((e.at * 1e6).round() / 1e6, e.act.clone(), e.nodes.clone()))
            .collect();
        assert_eq!(
            ev,
            [
                // c not registered at the start: out until it joins.
                (1.5, NodeAct::Lose, vec![4]),
                (10.0, NodeAct::Stop, vec![2, 3]),
                (15.0, NodeAct::Stop, vec![0, 1]),
                (20.0, NodeAct::Resume, vec![0, 1]),
                (25.0, NodeAct::Rejoin, vec![4]),
                // b's loss at 81.25 - 50 (the record), not 40 (the warning).
                (31.25, NodeAct::Lose, vec![2, 3]),
                (60.0, NodeAct::Rejoin, vec![2, 3]),
                (70.0, NodeAct::Lose, vec![4]),
            ]
        );
        let b_lost = &o.timeline.events[5].cause;
        assert_eq!(
            b_lost,
            "node process b-0 (127.0.0.1:2) (link 2) gone: silent for more than 1s, after fault 1"
        );
        assert!(o.timeline.down.is_empty());
    }

    /// A hand-made journal of a run whose manager crashed, at time scale
    /// 0.1 (1 real s = 10 trace s), the replay starting at real second
    /// 1.0: the last entry before the crash at 3.0, the resumed manager
    /// started at 4.0, both processes (which rode the crash out) register
    /// with it at 4.2 and 4.3, and it decides again at 4.4 (`restart`).
    /// Worked out by hand: the manager is down from (3.0 - 1.0) / 0.1 =
    /// 20 to (4.4 - 1.0) / 0.1 = 34; the re-registrations lose nothing.
    /// Process b is killed later (5.0), lost (5.6) and back (6.0): a
    /// registration with no crash since the last is a rejoin as before,
    /// at 40, 46 and 50.
    #[test]
    fn a_manager_restart_is_a_downtime_and_its_reregistrations_lose_nothing() {
        let mut h = header();
        h.time_scale = 0.1;
        let mut j1 = record(1);
        j1.submit = 2.0;
        let c = contents(
            h,
            vec![
                node(0.5, "a-0 (127.0.0.1:1)", 2),
                node(0.6, "b-0 (127.0.0.1:2)", 1),
                Entry::Replay {
                    t: 1.0,
                    offset: 0.0,
                },
                Entry::Submitted {
                    t: 1.2,
                    record: j1,
                    spec: None,
                },
                warning(3.0, "the last entry before the crash"),
                node(4.2, "a-0 (127.0.0.1:1)", 2),
                node(4.3, "b-0 (127.0.0.1:2)", 1),
                warning(4.4, "resumed: the manager was down 1.000 s"),
                Entry::Restart {
                    t: 4.4,
                    crashed: 3.0,
                    restarted: 4.0,
                },
                fault(5.0, FaultAct::Kill, "b-0"),
                warning(
                    5.6,
                    "lost node process b-0 (127.0.0.1:2) (link 5): connection closed",
                ),
                node(6.0, "b-0 (127.0.0.1:3)", 1),
            ],
        );
        let r = rebuild(&c);
        let o = observe(&c, &r, "j", |_| 1.0, &base()).unwrap();
        let round = |x: f64| (x * 1e6).round() / 1e6;
        let down: Vec<(f64, f64)> = o
            .timeline
            .down
            .iter()
            .map(|&(a, b)| (round(a), round(b)))
            .collect();
        assert_eq!(down, [(20.0, 34.0)]);
        let ev: Vec<(f64, NodeAct, Vec<u32>)> = o
            .timeline
            .events
            .iter()
            .map(|e| (round(e.at), e.act.clone(), e.nodes.clone()))
            .collect();
        assert_eq!(
            ev,
            [
                (40.0, NodeAct::Stop, vec![2]),
                (46.0, NodeAct::Lose, vec![2]),
                (50.0, NodeAct::Rejoin, vec![2]),
            ]
        );
    }

    /// A process woken from a hang that registers again before the
    /// warning of its loss is journaled: lost then (at the registration,
    /// the earlier of the two), back at once, and the late warning (of
    /// its old incarnation) loses nothing more.
    #[test]
    fn a_loss_journaled_after_the_process_came_back_is_applied_once() {
        let mut h = header();
        h.time_scale = 0.01;
        let c = contents(
            h,
            vec![
                node(1.0, "a-0 (127.0.0.1:1)", 2),
                Entry::Replay {
                    t: 2.0,
                    offset: 0.0,
                },
                Entry::Submitted {
                    t: 2.0,
                    record: record(1),
                    spec: None,
                },
                fault(2.1, FaultAct::Stop, "a-0"),
                fault(2.2, FaultAct::Cont, "a-0"),
                node(2.3, "a-0 (127.0.0.1:5)", 2),
                warning(
                    2.4,
                    "lost node process a-0 (127.0.0.1:1) (link 1): silent for more than 1s",
                ),
            ],
        );
        let o = observe(&c, &rebuild(&c), "j", |_| 1.0, &base()).unwrap();
        let ev: Vec<(f64, NodeAct)> = o
            .timeline
            .events
            .iter()
            .map(|e| ((e.at * 1e6).round() / 1e6, e.act.clone()))
            .collect();
        assert_eq!(
            ev,
            [
                (10.0, NodeAct::Stop),
                (20.0, NodeAct::Resume),
                (30.0, NodeAct::Lose),
                (30.0, NodeAct::Rejoin),
            ]
        );
        assert_eq!(
            o.timeline.events[2].cause,
            "node process a-0 (127.0.0.1:1) (link 1) gone: silent for more than 1s"
        );
    }

    /// A slow fault of a process, and a crash of its node 1 that the
    /// manager lost and took back (its warnings carry their times):
    /// trace = (t - 2.0) / 0.01 on the jobs' axis, and the warnings' times
    /// less the offset 50.
    #[test]
    fn slow_faults_and_single_node_losses_become_rates_and_node_events() {
        let mut h = header();
        h.time_scale = 0.01;
        let one = |t, act, node, factor| Entry::Fault {
            t,
            act,
            process: "a-0".into(),
            fault: "fault 2 (x)".into(),
            node,
            factor,
        };
        let c = contents(
            h,
            vec![
                node(1.0, "a-0 (127.0.0.1:1)", 2),
                Entry::Replay { t: 2.0, offset: 50.0 },
                Entry::Submitted {
                    t: 2.0,
                    record: record(1),
                    spec: None,
                },
                one(2.1, FaultAct::Slow, None, Some(0.5)),
                one(2.2, FaultAct::Restore, None, None),
                one(2.3, FaultAct::Kill, Some(1), None),
                warning(2.5, "lost node 1 of node process a-0 (127.0.0.1:1) (link 1) at 91.000: silent for more than 1s (no heartbeat vouched for it), after fault 2 (x)"),
                warning(2.6, "node 1 of node process a-0 (127.0.0.1:1) (link 1) back at 101.000, idle"),
            ],
        );
        let o = observe(&c, &rebuild(&c), "j", |_| 1.0, &base()).unwrap();
        let ev: Vec<(f64, NodeAct, Vec<u32>)> = o
            .timeline
            .events
            .iter()
            .map(|e| ((e.at * 1e6).round() / 1e6, e.act.clone(), e.nodes.clone()))
            .collect();
        assert_eq!(
            ev,
            [
                (10.0, NodeAct::Rate(0.5), vec![0, 1]),
                (20.0, NodeAct::Rate(1.0), vec![0, 1]),
                (30.0, NodeAct::Stop, vec![1]),
                (41.0, NodeAct::Lose, vec![1]),
                (51.0, NodeAct::Rejoin, vec![1]),
            ]
        );
        assert_eq!(
            o.timeline.events[3].cause,
            "node 1 of node process a-0 (127.0.0.1:1) (link 1) gone: silent for more than 1s \
             (no heartbeat vouched for it), after fault 2 (x)"
        );
    }

    #[test]
    fn a_journal_without_its_replay_start_is_refused_naming_it() {
        let c = contents(header(), vec![node(1.0, "a-0 (x)", 2)]);
        let e = observe(&c, &rebuild(&c), "runs/x/journal.jsonl", |_| 1.0, &base()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "runs/x/journal.jsonl: the run never started its replay (no `replay` entry): nothing to replay"
        );
    }
}
