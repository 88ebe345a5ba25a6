//! Faults in virtual time: the fault hook of [`crate::sim`]'s engine
//! (node processes and nodes that stop, are lost, come back, slow down,
//! and a manager that is down for a while), as a [`Timeline`] of node
//! events and downtimes, and the model that makes a timeline from a
//! fault scenario ([`crate::faults::Plan`], [`timeline`]). The engine is
//! the one of runs without faults, which run it with no hook and take no
//! fault path; `libratory replay` builds its timeline from a live run's
//! journal instead.
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

use crate::admission::{ManagerCore, Output};
use crate::faults::{ClusterShape, FaultKind, Plan};
use crate::node_model::NodeSpec;
use crate::policy::Policy;
use crate::sim::SimOutcome;
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

/// The engine's fault hook ([`crate::sim`] runs with one when there are
/// faults): the timeline's events applied as their times come, each
/// node's state (stopped, capacity factor), the manager's downtimes, and
/// a note per event applied.
pub(crate) struct Hook<'a> {
    tl: &'a Timeline,
    specs: &'a [NodeSpec],
    next: usize,
    stopped: Vec<bool>,
    factor: Vec<f64>,
    notes: Vec<FaultNote>,
}

impl<'a> Hook<'a> {
    fn new(tl: &'a Timeline, specs: &'a [NodeSpec]) -> Hook<'a> {
        Hook {
            tl,
            specs,
            next: 0,
            stopped: vec![false; specs.len()],
            factor: vec![1.0; specs.len()],
            notes: Vec::new(),
        }
    }

    /// Node `g`'s work rate: 0 stopped, else its capacity factor.
    pub(crate) fn rate(&self, g: usize) -> f64 {
        if self.stopped[g] {
            0.0
        } else {
            self.factor[g]
        }
    }

    /// When the next node event is due.
    pub(crate) fn next_at(&self) -> Option<Time> {
        self.tl.events.get(self.next).map(|e| e.at)
    }

    /// When an arrival at `t` is decided (after a downtime covering it).
    pub(crate) fn decided_at(&self, t: Time) -> Time {
        decided_at(t, &self.tl.down)
    }

    /// Whether the manager is down at `t` (no scheduling pass).
    pub(crate) fn is_down(&self, t: Time) -> bool {
        is_down(t, &self.tl.down)
    }

    /// Applies the events due by `now`, in order; `rerate` is told the
    /// nodes whose pace changed (the engine's space-shared runs on them
    /// change pace). Returns the events applied.
    pub(crate) fn apply_due(
        &mut self,
        core: &mut ManagerCore,
        now: Time,
        out: &mut Vec<Output>,
        mut rerate: impl FnMut(&Hook<'a>, &[u32]),
    ) -> u64 {
        let mut applied = 0;
        while let Some(ev) = self.tl.events.get(self.next).filter(|e| e.at <= now) {
            self.next += 1;
            applied += 1;
            let fault = &ev.cause;
            let what = match &ev.act {
                NodeAct::Stop => {
                    for &g in &ev.nodes {
                        self.stopped[g as usize] = true;
                    }
                    format!("{fault}: stopped")
                }
                NodeAct::Resume => {
                    for &g in &ev.nodes {
                        self.stopped[g as usize] = false;
                    }
                    format!("{fault}: resumed")
                }
                NodeAct::Lose => {
                    core.sim_nodes_lost(now, &ev.nodes, fault, out);
                    format!("{fault}: lost by the manager")
                }
                NodeAct::Rejoin => {
                    let specs: Vec<NodeSpec> = ev
                        .nodes
                        .iter()
                        .map(|&g| self.specs[g as usize].clone())
                        .collect();
                    for &g in &ev.nodes {
                        self.stopped[g as usize] = false;
                    }
                    core.sim_nodes_rejoin(now, &specs);
                    format!("{fault}: rejoined")
                }
                NodeAct::Rate(r) => {
                    for &g in &ev.nodes {
                        self.factor[g as usize] = *r;
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
                        core.sim_set_rate(now, &[g], self.rate(g as usize));
                    }
                }
                rerate(self, &ev.nodes);
            }
            self.notes.push(FaultNote { at: now, what });
        }
        applied
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
/// manager downtimes of `tl` (absolute times, the jobs' axis): the
/// engine of [`crate::sim`] with its fault hook.
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
    let mut hook = Hook::new(tl, specs);
    let outcome = crate::sim::run(jobs, specs, policy, Some(&mut hook));
    FaultedOutcome {
        outcome,
        notes: hook.notes,
    }
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;
    use crate::admission::WALK_EVERY_NODE;
    use crate::policy::{self, PolicyConfig};
    use crate::share::SpareRule;

    /// Everything a faulted run gives, bit for bit.
    fn everything(o: &FaultedOutcome) -> String {
        let mut s = String::new();
        for r in &o.outcome.records {
            s += &format!("{r:?}\n");
        }
        for p in &o.outcome.parts {
            s += &format!(
                "{} {} {} {} {}\n",
                p.job,
                p.node,
                p.start.to_bits(),
                p.finish.to_bits(),
                p.cpu.to_bits()
            );
        }
        s += &format!(
            "busy {} makespan {} events {}\n",
            o.outcome.busy_time.to_bits(),
            o.outcome.makespan.to_bits(),
            o.outcome.events
        );
        for n in &o.notes {
            s += &format!("{} {}\n", n.at.to_bits(), n.what);
        }
        s
    }

    /// The simulated core's busy-index path (busy nodes advanced, idle
    /// nodes caught up when a part is placed, decisions through the
    /// index) against the walk over every node ([`WALK_EVERY_NODE`]),
    /// under faults: seeded timelines of crashes lost and rejoined, short
    /// hangs, slow nodes, losses without a stop and the manager's
    /// downtimes, on 120 nodes of two speeds, the Libra family with its
    /// default rules and the highest-return spare rule, and LibraRisk
    /// with its shortcut off. Every record (reasons and counts included),
    /// part, busy time, makespan and note must be the same.
    #[test]
    fn faulted_runs_on_the_busy_index_equal_the_walk_over_every_node() {
        let n_nodes = 120;
        let specs = crate::sim::tests::two_speeds(n_nodes);
        let mut configs: Vec<(&str, PolicyConfig)> = Vec::new();
        for name in ["libra", "libra-risk", "libra-plus-dollar", "libra-sla"] {
            configs.push((name, PolicyConfig::default()));
        }
        for name in ["libra", "libra-risk", "libra-plus-dollar"] {
            let cfg = PolicyConfig {
                spare_rule: SpareRule::HighestReturn,
                ..PolicyConfig::default()
            };
            configs.push((name, cfg));
        }
        let no_shortcut = PolicyConfig {
            risk_shortcut: false,
            ..PolicyConfig::default()
        };
        configs.push(("libra-risk", no_shortcut));
        let (mut lost, mut rejected) = (0, 0);
        for seed in 1..=3u64 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let jobs = crate::sim::tests::mixed_jobs(&mut rng, 400);
            let t = jobs.last().map_or(0.0, |j| j.spec.details.submit_time);
            let (mut events, mut down) = (Vec::new(), Vec::<(Time, Time)>::new());
            for f in 0..40 {
                let at = rng.random_range(0.0..t).floor();
                let k = rng.random_range(1..6);
                let nodes: Vec<u32> = (0..k)
                    .map(|_| rng.random_range(0..n_nodes as u32))
                    .collect();
                let cause = format!("f{f}");
                let ev = |at: f64, act: NodeAct| NodeEvent {
                    at,
                    act,
                    nodes: nodes.clone(),
                    cause: cause.clone(),
                };
                match rng.random_range(0..5) {
                    0 => {
                        events.push(ev(at, NodeAct::Stop));
                        events.push(ev(at + 20.0, NodeAct::Lose));
                        if rng.random_bool(0.7) {
                            let back = at + 20.0 + rng.random_range(0.0..300.0f64).floor();
                            events.push(ev(back, NodeAct::Rejoin));
                        }
                    }
                    1 => {
                        events.push(ev(at, NodeAct::Stop));
                        let resume = at + rng.random_range(1.0..19.0f64).floor();
                        events.push(ev(resume, NodeAct::Resume));
                    }
                    2 => {
                        events.push(ev(at, NodeAct::Rate(0.5)));
                        let end = at + rng.random_range(1.0..300.0f64).floor();
                        events.push(ev(end, NodeAct::Rate(1.0)));
                    }
                    3 => {
                        events.push(ev(at + 20.0, NodeAct::Lose));
                        let back = at + 20.0 + rng.random_range(0.0..300.0f64).floor();
                        events.push(ev(back, NodeAct::Rejoin));
                    }
                    _ => {
                        if down.iter().all(|&(a, b)| at + 50.0 < a || at > b) {
                            down.push((at, at + 50.0));
                        }
                    }
                }
            }
            events.sort_by(|a, b| a.at.total_cmp(&b.at));
            down.sort_by(|a, b| a.0.total_cmp(&b.0));
            let tl = Timeline { events, down };
            for (name, cfg) in &configs {
                let build = || policy::build(name, cfg, &specs).unwrap();
                let on_index = simulate_timeline(&jobs, &specs, build(), &tl);
                WALK_EVERY_NODE.with(|c| c.set(true));
                let walked = simulate_timeline(&jobs, &specs, build(), &tl);
                WALK_EVERY_NODE.with(|c| c.set(false));
                let (a, b) = (everything(&on_index), everything(&walked));
                if let Some((x, y)) = a.lines().zip(b.lines()).find(|(x, y)| x != y) {
                    panic!("{name} {cfg:?}, seed {seed}: {x} against {y}");
                }
                assert_eq!(a, b, "{name} {cfg:?}, seed {seed}");
                lost += on_index.outcome.records.iter().filter(|r| r.lost).count();
                rejected += on_index
                    .outcome
                    .records
                    .iter()
                    .filter(|r| !r.accepted)
                    .count();
            }
        }
        assert!(
            lost > 100 && rejected > 100,
            "{lost} lost, {rejected} rejected"
        );
    }
}
