//! The virtual-time engine with a fault scenario ([`crate::faults::Plan`]):
//! the same admission core and fluid model as [`crate::sim`], plus node
//! processes and nodes that stop, are lost, come back, slow down, and a
//! manager that is down for a while. Kept apart from [`crate::sim`] so
//! that a run without faults takes exactly the code it always took.
//!
//! How each fault is modelled (docs/faults.md, "In the simulator"), with
//! `L` the scenario's `link_timeout` (trace seconds):
//! - `crash` at `t`: the nodes stop computing at `t`; at `t + L` the
//!   manager notices, every unfinished job with a part there is lost
//!   (its reason names the fault) and the nodes leave the pool; with a
//!   `duration` `d` they rejoin, idle, at `t + max(d, L)`.
//! - `hang` for `d`: the nodes stop at `t`; if `d < L` they go on at
//!   `t + d` where they were (nothing lost); else as a crash that comes
//!   back at `t + d`.
//! - `slow` for `d`: the nodes work at `factor` times their capacity
//!   from `t` to `t + d` (the policy sees the slower progress, as it
//!   would in reports).
//! - `partition` for `d`: the nodes go on computing, but if `d >= L` the
//!   manager loses them at `t + L` (their jobs are lost) and they rejoin
//!   at `t + d`; a shorter partition changes nothing in virtual time.
//! - `delay`: nothing; the simulator has no network.
//! - `manager-crash` for `d`: no decision in `[t, t + d)`: arrivals wait
//!   and are decided at `t + d` (their submit time stays), nodes go on
//!   running and completing their parts.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::admission::{ManagerCore, Output};
use crate::faults::{ClusterShape, FaultKind, Plan};
use crate::node_model::NodeSpec;
use crate::policy::{Decision, Policy};
use crate::sim::{Completion, SimOutcome};
use crate::time::Time;
use crate::workload::WorkloadJob;

/// What happens to nodes at an instant: the engine's fault hook. A
/// scenario ([`Plan`]) is turned into these by its model (module docs,
/// [`timeline`]); `libratory replay` builds them from what a live run's
/// journal observed.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeAct {
    /// Stop computing (crash, hang).
    Stop,
    /// Compute again where it stopped (a short hang ends).
    Resume,
    /// The manager loses the nodes (detection): their unfinished jobs are
    /// lost, the nodes leave the pool.
    Lose,
    /// The nodes come back, idle.
    Rejoin,
    /// Capacity times this (1 ends a slow fault).
    Rate(f64),
    /// The manager is back after a crash.
    ManagerUp,
}

/// One node event at a time (trace seconds, the jobs' axis).
#[derive(Debug, Clone, PartialEq)]
pub struct NodeEvent {
    /// When.
    pub at: Time,
    /// What.
    pub act: NodeAct,
    /// The nodes (global ids) it applies to.
    pub nodes: Vec<u32>,
    /// What caused it: the name lost jobs' reasons and the notes carry.
    pub cause: String,
}

/// Everything that happens to the nodes and the manager during a run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timeline {
    /// Node events, in time order (ties: applied in this order).
    pub events: Vec<NodeEvent>,
    /// The manager's downtimes `[from, until)`, ordered by start: no
    /// decision in them (arrivals wait until `until`).
    pub down: Vec<(Time, Time)>,
}

/// What happened, for the run's log: one line per fault event applied.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultNote {
    /// When (trace seconds, absolute).
    pub at: Time,
    /// What, naming the fault.
    pub what: String,
}

/// The outcome of a simulation with faults.
#[derive(Debug, Clone)]
pub struct FaultedOutcome {
    /// As without faults.
    pub outcome: SimOutcome,
    /// Every fault event applied, in time order.
    pub notes: Vec<FaultNote>,
}

/// The scenario's faults as node events under the model of the module
/// docs (`start`: the first arrival, which fault times count from).
pub fn timeline(plan: &Plan, shape: &ClusterShape, start: Time) -> Timeline {
    let l = plan.link_timeout;
    let mut evs = Vec::new();
    let mut down = Vec::new();
    for f in &plan.faults {
        let t = start + f.at;
        let nodes: Vec<u32> = shape.nodes_of(f.target).map(|n| n as u32).collect();
        let cause = f.to_string();
        let mut ev = |at: Time, act: NodeAct| {
            evs.push(NodeEvent {
                at,
                act,
                nodes: nodes.clone(),
                cause: cause.clone(),
            })
        };
        match f.kind {
            FaultKind::Crash => {
                ev(t, NodeAct::Stop);
                ev(t + l, NodeAct::Lose);
                if let Some(d) = f.duration {
                    ev(t + d.max(l), NodeAct::Rejoin);
                }
            }
            FaultKind::Hang => {
                let d = f.duration.expect("checked: hang has a duration");
                ev(t, NodeAct::Stop);
                if d < l {
                    ev(t + d, NodeAct::Resume);
                } else {
                    ev(t + l, NodeAct::Lose);
                    ev(t + d, NodeAct::Rejoin);
                }
            }
            FaultKind::Slow { factor } => {
                let d = f.duration.expect("checked: slow has a duration");
                ev(t, NodeAct::Rate(factor));
                ev(t + d, NodeAct::Rate(1.0));
            }
            FaultKind::Partition => {
                let d = f.duration.expect("checked: partition has a duration");
                if d >= l {
                    ev(t + l, NodeAct::Lose);
                    ev(t + d, NodeAct::Rejoin);
                }
            }
            FaultKind::Delay { .. } => {}
            FaultKind::ManagerCrash => {
                let d = f.duration.expect("checked: manager-crash has a duration");
                down.push((t, t + d));
                ev(t + d, NodeAct::ManagerUp);
            }
        }
    }
    // Stable: at one instant, events keep the plan's order.
    evs.sort_by(|a, b| a.at.total_cmp(&b.at));
    down.sort_by(|a, b| a.0.total_cmp(&b.0));
    Timeline { events: evs, down }
}

/// When an arrival at `t` is decided: `t`, or the end of the manager's
/// downtime covering it (chained downtimes end at the last one).
fn decided_at(t: Time, down: &[(Time, Time)]) -> Time {
    let mut at = t;
    for &(from, until) in down {
        if from <= at && at < until {
            at = until;
        }
    }
    at
}

fn is_down(t: Time, down: &[(Time, Time)]) -> bool {
    down.iter().any(|&(from, until)| from <= t && t < until)
}

/// Per-node fault state: stopped, and the capacity factor.
struct NodeFaults {
    stopped: Vec<bool>,
    factor: Vec<f64>,
}

impl NodeFaults {
    fn rate(&self, g: usize) -> f64 {
        if self.stopped[g] {
            0.0
        } else {
            self.factor[g]
        }
    }
}

/// Runs `jobs` through `policy` on `specs` with the faults of `plan`
/// (times relative to the first arrival; processes grouped as `shape`).
///
/// # Panics
/// If a job fails validation (workloads are validated when built), or
/// `shape` does not cover `specs` (the plan was expanded for it).
pub fn simulate_with_faults(
    jobs: &[WorkloadJob],
    specs: &[NodeSpec],
    policy: Policy,
    plan: &Plan,
    shape: &ClusterShape,
) -> FaultedOutcome {
    assert_eq!(
        shape.nodes(),
        specs.len(),
        "the plan's cluster is the simulated one"
    );
    let start = jobs.first().map_or(0.0, |j| j.spec.details.submit_time);
    simulate_timeline(jobs, specs, policy, &timeline(plan, shape, start))
}

/// Runs `jobs` through `policy` on `specs` with the node events and
/// manager downtimes of `tl` (absolute times, the jobs' axis).
///
/// # Panics
/// If a job fails validation (workloads are validated when built), or an
/// event names a node `specs` does not have.
pub fn simulate_timeline(
    jobs: &[WorkloadJob],
    specs: &[NodeSpec],
    policy: Policy,
    tl: &Timeline,
) -> FaultedOutcome {
    let start = jobs.first().map_or(0.0, |j| j.spec.details.submit_time);
    let (evs, down) = (&tl.events, &tl.down);
    let space = matches!(policy, Policy::Queue(_));
    let mut core = ManagerCore::simulated(policy, specs, start);
    let mut engine = Engine {
        jobs,
        specs,
        nf: NodeFaults {
            stopped: vec![false; specs.len()],
            factor: vec![1.0; specs.len()],
        },
        notes: Vec::new(),
        runs: vec![None; jobs.len()],
        heap: BinaryHeap::new(),
        seq: 0,
        busy_time: 0.0,
        makespan: start,
        events: 0,
        out: Vec::new(),
    };
    let mut next_job = 0;
    let mut next_ev = 0;
    loop {
        let t_job = jobs
            .get(next_job)
            .map(|j| decided_at(j.spec.details.submit_time, down));
        let t_ev = evs.get(next_ev).map(|e| e.at);
        let t_done = if space {
            engine.heap.peek().map(|c| c.0.at)
        } else {
            None
        };
        let Some(now) = [t_job, t_ev, t_done]
            .into_iter()
            .flatten()
            .reduce(Time::min)
        else {
            break;
        };
        // Completions first (space-shared; the fluid model books its own
        // inside the core), then node events, then arrivals.
        if space {
            engine.complete_until(&mut core, now);
        }
        while evs.get(next_ev).is_some_and(|e| e.at <= now) {
            engine.apply(&mut core, now, &evs[next_ev]);
            next_ev += 1;
        }
        while jobs
            .get(next_job)
            .is_some_and(|j| decided_at(j.spec.details.submit_time, down) <= now)
        {
            if let Err(e) = core.arrive(now, jobs[next_job].clone(), &mut engine.out) {
                panic!("simulate: {e}");
            }
            next_job += 1;
            engine.events += 1;
        }
        if space {
            if !is_down(now, down) {
                core.tick(now, &mut engine.out);
            }
            engine.start_runs(&mut core, now);
        }
        engine.out.clear();
    }
    let FaultedOutcome { outcome, notes } = engine.finish(core, space);
    FaultedOutcome { outcome, notes }
}

/// A space-shared job in flight: its work left at rate 1 since
/// `updated`, its rate (its slowest node's), and the sequence number of
/// its live completion in the heap (older entries are stale).
#[derive(Debug, Clone)]
struct Run {
    nodes: Vec<usize>,
    left: f64,
    started: Time,
    updated: Time,
    rate: f64,
    seq: u64,
}

struct Engine<'a> {
    jobs: &'a [WorkloadJob],
    specs: &'a [NodeSpec],
    nf: NodeFaults,
    notes: Vec<FaultNote>,
    runs: Vec<Option<Run>>,
    /// (end, sequence, job position)
    heap: BinaryHeap<Reverse<Completion>>,
    seq: u64,
    busy_time: f64,
    makespan: Time,
    events: u64,
    out: Vec<Output>,
}

impl Engine<'_> {
    fn apply(&mut self, core: &mut ManagerCore, now: Time, ev: &NodeEvent) {
        let fault = &ev.cause;
        self.events += 1;
        let what = match &ev.act {
            NodeAct::Stop => {
                for &g in &ev.nodes {
                    self.nf.stopped[g as usize] = true;
                }
                format!("{fault}: stopped")
            }
            NodeAct::Resume => {
                for &g in &ev.nodes {
                    self.nf.stopped[g as usize] = false;
                }
                format!("{fault}: resumed")
            }
            NodeAct::Lose => {
                core.sim_nodes_lost(now, &ev.nodes, fault, &mut self.out);
                format!("{fault}: lost by the manager")
            }
            NodeAct::Rejoin => {
                let specs: Vec<NodeSpec> = ev
                    .nodes
                    .iter()
                    .map(|&g| self.specs[g as usize].clone())
                    .collect();
                for &g in &ev.nodes {
                    self.nf.stopped[g as usize] = false;
                }
                core.sim_nodes_rejoin(now, &specs);
                format!("{fault}: rejoined")
            }
            NodeAct::Rate(r) => {
                for &g in &ev.nodes {
                    self.nf.factor[g as usize] = *r;
                }
                if *r == 1.0 {
                    format!("{fault}: full capacity again")
                } else {
                    format!("{fault}: capacity x{r}")
                }
            }
            NodeAct::ManagerUp => format!("{fault}: manager restarted"),
        };
        if matches!(
            ev.act,
            NodeAct::Stop | NodeAct::Resume | NodeAct::Rejoin | NodeAct::Rate(_)
        ) {
            for &g in &ev.nodes {
                if core.node_alive(g) {
                    core.sim_set_rate(now, &[g], self.nf.rate(g as usize));
                }
            }
            self.rerate(now, &ev.nodes);
        }
        self.notes.push(FaultNote { at: now, what });
    }

    /// Space-shared runs on `nodes` change pace from `now` on.
    fn rerate(&mut self, now: Time, nodes: &[u32]) {
        for k in 0..self.runs.len() {
            let Some(run) = &self.runs[k] else { continue };
            if !run.nodes.iter().any(|&g| nodes.contains(&(g as u32))) {
                continue;
            }
            let rate = run
                .nodes
                .iter()
                .map(|&g| self.nf.rate(g))
                .fold(f64::INFINITY, f64::min);
            let run = self.runs[k].as_mut().expect("checked");
            run.left = (run.left - (now - run.updated) * run.rate).max(0.0);
            run.updated = now;
            run.rate = rate;
            self.seq += 1;
            run.seq = self.seq;
            if rate > 0.0 {
                self.heap.push(Reverse(Completion {
                    at: now + run.left / rate,
                    seq: run.seq,
                    job: k,
                }));
            }
        }
    }

    /// Books the space-shared completions due by `now`.
    fn complete_until(&mut self, core: &mut ManagerCore, now: Time) {
        while self.heap.peek().is_some_and(|c| c.0.at <= now) {
            let Reverse(c) = self.heap.pop().expect("peeked");
            let live = self.runs[c.job].as_ref().is_some_and(|r| r.seq == c.seq);
            if !live {
                continue;
            }
            let run = self.runs[c.job].take().expect("checked");
            let id = self.jobs[c.job].spec.id;
            if core.job_over(id) {
                // Lost to a fault while it ran.
                continue;
            }
            core.job_completed(now, 0, id, c.at, &mut self.out)
                .expect("the simulator completes only parts it started");
            // Processor time held: the nodes are the job's for its whole
            // run, whatever their pace.
            self.busy_time += (c.at - run.started) * run.nodes.len() as f64;
            self.makespan = self.makespan.max(c.at);
            self.events += 1;
        }
    }

    /// Starts the runs of the jobs a queue policy just started.
    fn start_runs(&mut self, core: &mut ManagerCore, now: Time) {
        for o in self.out.drain(..) {
            let Output::Decided {
                job,
                decision: Decision::Accept(a),
            } = o
            else {
                continue;
            };
            let k = core.job_position(job).expect("a decided job was submitted");
            let speed = a
                .nodes
                .iter()
                .map(|&n| self.specs[n].speed)
                .fold(f64::INFINITY, f64::min);
            let run = self.jobs[k].actual_runtime / speed;
            let rate = a
                .nodes
                .iter()
                .map(|&g| self.nf.rate(g))
                .fold(f64::INFINITY, f64::min);
            self.seq += 1;
            if rate > 0.0 {
                self.heap.push(Reverse(Completion {
                    at: now + run / rate,
                    seq: self.seq,
                    job: k,
                }));
            }
            self.runs[k] = Some(Run {
                nodes: a.nodes,
                left: run,
                started: now,
                updated: now,
                rate,
                seq: self.seq,
            });
        }
    }

    fn finish(mut self, mut core: ManagerCore, space: bool) -> FaultedOutcome {
        let busy_time = if space {
            self.busy_time
        } else {
            core.run_to_end();
            core.busy_time()
        };
        let (records, parts) = core.into_books();
        let start = records.first().map_or(0.0, |r| r.submit);
        let makespan = records
            .iter()
            .filter_map(|r| r.finish)
            .fold(self.makespan.max(start), Time::max);
        if !space {
            // One event per part, as without faults (arrivals and fault
            // events are counted as they happen).
            self.events += parts.len() as u64;
        }
        FaultedOutcome {
            outcome: SimOutcome {
                records,
                events: self.events,
                busy_time,
                makespan,
                parts,
            },
            notes: self.notes,
        }
    }
}
