//! Admission policies: pure functions of a cluster snapshot and a job.
//!
//! Two kinds, as in the papers:
//! - [`AdmissionPolicy`] (time-shared, the Libra family): decides at
//!   submission, on a snapshot of every node ([`NodeState`]), and places one
//!   part per chosen node, which then runs at once under Job Control.
//! - [`QueuePolicy`] (space-shared baselines): keeps a queue, and at each
//!   event says which jobs start on which free nodes, and which it drops.
//!
//! Every policy is a sequence of small steps (resource filter, deadline
//! filter, risk filter, price/budget permit, best-fit score; see
//! [`steps`]), and a rejection is a normal [`Decision`] with a reason, never
//! an error. Policies are registered by stable names in [`REGISTRY`]; the
//! CLI, configs and tests use those names.
//!
//! Nothing here does I/O, reads a clock or knows about actix or quinn: the
//! live manager and the simulator call the same code with `now` as an
//! argument.

use std::fmt;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::job::{JobId, JobSpec};
use crate::node_model::{NodeSpec, NodeState, PartValue};
use crate::share::SpareRule;
use crate::time::Time;

mod libra;
mod plus_dollar;
mod qops;
mod risk;
mod sla;
mod space;
pub mod steps;

pub use libra::Libra;
pub use plus_dollar::{LibraPlusDollar, PriceQuote};
pub use qops::{decayed_price, Qops, QopsVariant};
pub use risk::LibraRisk;
pub use sla::{LibraSla, NodeReturn, RETURN_REL_EPS};
pub use space::{Backfill, BackfillOrder, Edf, Fifo};

/// Why a job was not accepted. Stable names appear in every output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RejectReason {
    /// Fewer nodes with the memory/disk (or processors) than it needs.
    Resources,
    /// Fewer nodes than it needs can meet its deadline.
    Deadline,
    /// Its budget does not cover the cost.
    Budget,
    /// Accepting it would expose nodes to deadline delay (LibraRisk).
    Risk,
    /// Accepting it would not return enough: it would lower the nodes'
    /// return (LibraSLA), or its revenue gain does not beat its opportunity
    /// cost (VQoPS, DVQoPS).
    Return,
    /// Dropped from a queue after its deadline lapsed (space-shared).
    Expired,
    /// Rejected by an external Batsim scheduler (REJECT_JOB), or left
    /// undecided by one that failed.
    Scheduler,
}

impl RejectReason {
    /// Every reason, in report order.
    pub const ALL: [RejectReason; 7] = [
        RejectReason::Resources,
        RejectReason::Deadline,
        RejectReason::Budget,
        RejectReason::Risk,
        RejectReason::Return,
        RejectReason::Expired,
        RejectReason::Scheduler,
    ];

    /// Stable lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            RejectReason::Resources => "resources",
            RejectReason::Deadline => "deadline",
            RejectReason::Budget => "budget",
            RejectReason::Risk => "risk",
            RejectReason::Return => "return",
            RejectReason::Expired => "expired",
            RejectReason::Scheduler => "scheduler",
        }
    }
}

impl fmt::Display for RejectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A rejection: the reason and a sentence a user can act on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reject {
    /// Why.
    pub reason: RejectReason,
    /// Details (how many nodes qualified, the cheapest price, ...).
    pub detail: String,
}

/// An acceptance: where the parts go and what the user pays.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Accept {
    /// One node index per part.
    pub nodes: Vec<usize>,
    /// The cost C charged (earned only if the job's QoS is met).
    pub cost: f64,
}

/// The outcome of an admission decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Decision {
    /// Accepted onto these nodes at this cost.
    Accept(Accept),
    /// Rejected for this reason.
    Reject(Reject),
}

impl Decision {
    /// A rejection with a formatted detail.
    pub fn reject(reason: RejectReason, detail: impl Into<String>) -> Decision {
        Decision::Reject(Reject {
            reason,
            detail: detail.into(),
        })
    }
}

/// A time-shared admission policy (the Libra family).
pub trait AdmissionPolicy: Send {
    /// The registered name.
    fn name(&self) -> &'static str;

    /// Decides on `job` at `now`, given every node's state at `now`. The
    /// snapshot is not changed during the decision.
    fn decide(&mut self, now: Time, nodes: &[NodeState], job: &JobSpec) -> Decision;

    /// [`Self::decide`], given also which nodes hold parts (`index`, kept
    /// up to date by the live core), which a policy may use to skip idle
    /// nodes it can account for as groups. Must answer exactly as
    /// `decide`; by default it is `decide`.
    fn decide_indexed(
        &mut self,
        now: Time,
        nodes: &[NodeState],
        _index: &crate::busy_index::BusyIndex,
        job: &JobSpec,
    ) -> Decision {
        self.decide(now, nodes, job)
    }

    /// What [`Self::decide_bounded`] reads from the busy index, `None`
    /// when it never answers: the caller keeps the bounds, and beside
    /// them the one structure named, only for a policy that reads them
    /// (their upkeep on every change of a node would cost the others'
    /// decisions for nothing). A policy that wraps another must forward
    /// it, as the decide bench's warm-up wrapper does, or the wrapped
    /// policy decides without its structure, on the slower indexed walk.
    fn bounded_reads(&self) -> Option<BoundedReads> {
        None
    }

    /// [`Self::decide`] without a snapshot brought up to `now`: `nodes`
    /// is the live view with busy nodes possibly behind `now` (read for
    /// speeds and which nodes hold parts), and `index` keeps every busy
    /// node's load bounded (up to date at `now`) and gives its exact
    /// [`NodeState::required_share`] at `now`
    /// ([`crate::busy_index::BusyIndex::exact_load`]). A policy that
    /// can decide on the few nodes the bounds leave open answers exactly
    /// as `decide` would on the snapshot at `now`; `None` (the default)
    /// asks the caller to bring the snapshot up to date and call
    /// [`Self::decide_indexed`].
    fn decide_bounded(
        &mut self,
        _now: Time,
        _nodes: &[NodeState],
        _index: &crate::busy_index::BusyIndex,
        _job: &JobSpec,
    ) -> Option<Decision> {
        None
    }

    /// The Job Control spare-capacity rule nodes should run with.
    fn spare_rule(&self) -> SpareRule;

    /// What each part of an accepted `job` is worth to the node holding it
    /// (the return the node's share rule ranks parts by). Nothing, unless
    /// the policy ranks parts (LibraSLA).
    fn part_value(&self, _job: &JobSpec) -> PartValue {
        PartValue::default()
    }

    /// The price each node would charge `job` now, for policies that price
    /// per node (Libra+$); none otherwise.
    fn price_quotes(&self, _now: Time, _nodes: &[NodeState], _job: &JobSpec) -> Vec<PriceQuote> {
        Vec::new()
    }
}

/// What a space-shared policy wants done.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum QueueAction {
    /// Start the job now on these nodes (exclusively), charging `cost` if
    /// it meets its deadline.
    Start {
        /// The job.
        job: JobId,
        /// One node per processor.
        nodes: Vec<usize>,
        /// The cost.
        cost: f64,
    },
    /// End a started job now, as if it completed (an external scheduler's
    /// KILL_JOB); a live run cancels its parts on their nodes.
    Kill {
        /// The job.
        job: JobId,
    },
    /// Remove the job from the queue without running it.
    Drop {
        /// The job.
        job: JobId,
        /// Why.
        reject: Reject,
    },
}

/// A space-shared queueing policy: one job per processor at a time.
pub trait QueuePolicy: Send {
    /// The registered name.
    fn name(&self) -> &'static str;

    /// A job arrives at `now`. Returns a rejection if it can never run
    /// (more processors than the cluster); otherwise it is queued.
    fn submit(&mut self, now: Time, job: &JobSpec) -> Option<Reject>;

    /// A started job finished at `now` and freed its nodes.
    fn finished(&mut self, now: Time, job: JobId);

    /// A started job was lost at `now` (a node of it died) and freed its
    /// nodes: to the queue what [`Self::finished`] is, unless it tells
    /// someone how the job ended (the Batsim scheduler hears
    /// `COMPLETED_FAILED`).
    fn failed(&mut self, now: Time, job: JobId) {
        self.finished(now, job);
    }

    /// Decides what to start and what to drop at `now` (called after the
    /// arrivals and completions of an instant). Appends to `out`.
    fn schedule(&mut self, now: Time, out: &mut Vec<QueueAction>);

    /// Jobs waiting in the queue.
    fn queued(&self) -> usize;

    /// Marks a node as (un)usable: a live node that died is taken out of
    /// the pool for good, one that (re)joined is put in. Nodes are indexed
    /// as at construction; `node == len` appends a new node.
    fn set_node_available(&mut self, node: usize, available: bool);

    /// A job this policy never started (a live manager took it over from
    /// an earlier one of the same run) runs a part on `node` until about
    /// `est_end`: the policy books the node busy with it until its
    /// [`QueuePolicy::finished`]. False if the policy cannot: the caller
    /// then takes the node out of the pool while the part runs.
    fn hold_node(&mut self, _job: JobId, _node: usize, _est_end: Time) -> bool {
        false
    }

    /// The next time the policy must be called although nothing arrives
    /// or completes (a decision it holds for later); none by default.
    fn wakeup(&self) -> Option<Time> {
        None
    }

    /// Nothing is left to arrive, run or wake for: last decisions (drops)
    /// go to `out`. Nothing by default.
    fn end(&mut self, _now: Time, _out: &mut Vec<QueueAction>) {}

    /// What [`QueuePolicy::submit`] would answer for `job` at `now`,
    /// without queueing it (`libratory quote`), given `usable` nodes.
    /// Policies that queue whatever fits the cluster refuse only a job
    /// wider than it; those that admit at submission (QoPS) say whether
    /// the job would enter their plan.
    fn would_submit(&self, _now: Time, job: &JobSpec, usable: usize) -> Option<Reject> {
        (job.processors() > usable).then(|| Reject {
            reason: RejectReason::Resources,
            detail: format!(
                "needs {} processors, the cluster has {usable}",
                job.processors()
            ),
        })
    }
}

/// What a policy's [`AdmissionPolicy::decide_bounded`] reads from the
/// busy index ([`crate::busy_index::BusyIndex`]) beside every busy
/// node's load bounds: the index keeps that structure, and no other,
/// while the policy decides from the bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoundedReads {
    /// The B-trees by lower bound of load per class of width (Libra).
    WidthClasses,
    /// The order by lower bound of load with each subtree's largest
    /// bounds, in place of the B-trees (Libra+$:
    /// [`crate::busy_index::BusyIndex::keep_load_tree`]).
    LoadTree,
    /// The B-trees and LibraRisk's certificates
    /// ([`crate::busy_index::BusyIndex::keep_risk`]).
    RiskCertificates,
    /// The B-trees and the order of the busy nodes by their parts'
    /// returns (LibraSLA: [`crate::busy_index::BusyIndex::keep_returns`]).
    ReturnOrder,
}

/// A built policy of either kind.
pub enum Policy {
    /// Time-shared admission at submission.
    Admission(Box<dyn AdmissionPolicy>),
    /// Space-shared queueing.
    Queue(Box<dyn QueuePolicy>),
}

impl Policy {
    /// The registered name.
    pub fn name(&self) -> &'static str {
        match self {
            Policy::Admission(p) => p.name(),
            Policy::Queue(p) => p.name(),
        }
    }
}

/// Where Libra puts a job among the suitable nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    /// Highest load after acceptance first (the version the LibraSLA and LibraRisk papers
    /// compare against).
    #[default]
    BestFit,
    /// Lowest load after acceptance first (the Libra paper's original).
    LeastLoaded,
}

/// The order LibraRisk walks its zero-risk nodes in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum RiskOrder {
    /// Node index order (the paper's loop).
    #[default]
    NodeOrder,
    /// Best fit among the zero-risk nodes.
    BestFit,
}

/// Knobs of the policies. Defaults are the papers' (Table I of the Libra+$ paper
/// for alpha and beta; gamma = delta = 1 for Libra's cost).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PolicyConfig {
    /// Libra+$ static pricing factor.
    pub alpha: f64,
    /// Libra+$ dynamic pricing factor.
    pub beta: f64,
    /// Libra cost factor on RE.
    pub gamma: f64,
    /// Libra cost factor on RE / D.
    pub delta: f64,
    /// Base price per second of processor time.
    pub pbase: f64,
    /// Libra's placement.
    pub placement: Placement,
    /// LibraRisk's node order.
    pub risk_order: RiskOrder,
    /// sigma_j at most this counts as zero risk.
    pub risk_tolerance: f64,
    /// Whether LibraRisk may skip the projection when no part can be
    /// delayed (a valid shortcut; tests check it changes nothing).
    pub risk_shortcut: bool,
    /// Spare-capacity rule of the nodes' Job Control (LibraSLA always
    /// runs its own, `sla`).
    pub spare_rule: SpareRule,
    /// LibraSLA: count a P-processor job's return on each of its nodes as
    /// 1/P of its return (its share of the job's utility) instead of the
    /// whole (Algorithm 2's literal `budget_i / runtime_i / deadline_i` on
    /// every node). Off by default; see docs/reproducing.md (LibraSLA).
    pub sla_return_per_part: bool,
    /// QoPS family: most violations (queued jobs moved ahead of the new
    /// one) per insertion position.
    pub qops_k: u32,
    /// QoPS family: artificial slack. A new job must fit by
    /// AT + RE + (D - RE) / this; 1 (the default) is none.
    pub qops_slack_factor: f64,
    /// VQoPS: the static OC-Factor (opportunity cost = this x P x RE, in
    /// price units per processor-second); DVQoPS's initial one.
    pub oc_factor: f64,
    /// DVQoPS: the OC-Factors its what-if replays try.
    pub oc_candidates: Vec<f64>,
    /// DVQoPS: initial rollback window (hours of trace time).
    pub rollback_window_hours: f64,
    /// DVQoPS: the rollback windows its replays try (hours).
    pub rollback_candidates_hours: Vec<f64>,
    /// DVQoPS: how often the rollback window is re-chosen, over how much
    /// history (hours).
    pub max_rollback_window_hours: f64,
    /// DVQoPS: whether the rollback window adapts (else it stays at
    /// `rollback_window_hours`).
    pub adapt_rollback_window: bool,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        PolicyConfig {
            alpha: 1.0,
            beta: 0.1,
            gamma: 1.0,
            delta: 1.0,
            pbase: 1.0,
            placement: Placement::BestFit,
            risk_order: RiskOrder::NodeOrder,
            risk_tolerance: 1e-9,
            risk_shortcut: true,
            spare_rule: SpareRule::Proportional,
            sla_return_per_part: false,
            qops_k: 2,
            qops_slack_factor: 1.0,
            oc_factor: 0.05,
            oc_candidates: vec![0.0, 0.05, 0.1, 0.2, 0.4],
            rollback_window_hours: 16.0,
            rollback_candidates_hours: vec![1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0],
            max_rollback_window_hours: 128.0,
            adapt_rollback_window: true,
        }
    }
}

impl PolicyConfig {
    /// Checks every knob's range, naming the first one out of it: a price
    /// factor below 0 would pay a user for their job, a tolerance below 0
    /// would find no node zero-risk, a slack factor below 1 would let a
    /// deadline slip past itself.
    pub fn validate(&self) -> Result<(), crate::workload::WorkloadError> {
        let bad = |key: &'static str, why: &str| {
            Err(crate::workload::WorkloadError::Invalid {
                key,
                why: why.to_string(),
            })
        };
        let at_least = |v: f64, min: f64| v.is_finite() && v >= min;
        for (key, v) in [
            ("alpha", self.alpha),
            ("beta", self.beta),
            ("gamma", self.gamma),
            ("delta", self.delta),
            ("risk_tolerance", self.risk_tolerance),
            ("oc_factor", self.oc_factor),
        ] {
            if !at_least(v, 0.0) {
                return bad(key, "must be >= 0 and finite");
            }
        }
        if !(self.pbase.is_finite() && self.pbase > 0.0) {
            return bad("pbase", "must be > 0");
        }
        if !at_least(self.qops_slack_factor, 1.0) {
            return bad("qops_slack_factor", "must be >= 1 (1: no artificial slack)");
        }
        if self.oc_candidates.is_empty() || !self.oc_candidates.iter().all(|&v| at_least(v, 0.0)) {
            return bad("oc_candidates", "must be one or more numbers >= 0");
        }
        let hours = |v: f64| v.is_finite() && v > 0.0;
        if !hours(self.rollback_window_hours) {
            return bad("rollback_window_hours", "must be > 0");
        }
        if !hours(self.max_rollback_window_hours) {
            return bad("max_rollback_window_hours", "must be > 0");
        }
        if self.rollback_candidates_hours.is_empty()
            || !self.rollback_candidates_hours.iter().all(|&v| hours(v))
        {
            return bad(
                "rollback_candidates_hours",
                "must be one or more numbers > 0",
            );
        }
        Ok(())
    }
}

/// A registered policy.
pub struct PolicyEntry {
    /// Stable name used by configs and the CLI.
    pub name: &'static str,
    /// Which paper it comes from and what it does, in one line.
    pub about: &'static str,
    /// Builds it for a cluster of these nodes.
    pub build: fn(&PolicyConfig, &[NodeSpec]) -> Policy,
}

/// Every policy, by stable name.
pub const REGISTRY: &[PolicyEntry] = &[
    PolicyEntry {
        name: "libra",
        about: "Libra paper: deadline-based proportional share, static cost, best fit",
        build: |c, _| Policy::Admission(Box::new(Libra::new(c.clone()))),
    },
    PolicyEntry {
        name: "libra-risk",
        about: "LibraRisk paper: Libra admitting only onto nodes with zero risk of deadline delay",
        build: |c, _| Policy::Admission(Box::new(LibraRisk::new(c.clone()))),
    },
    PolicyEntry {
        name: "libra-plus-dollar",
        about: "Libra+$ paper: Libra with dynamic pricing P = alpha PBase + beta PUtil",
        build: |c, _| Policy::Admission(Box::new(LibraPlusDollar::new(c.clone()))),
    },
    PolicyEntry {
        name: "libra-sla",
        about: "LibraSLA paper: admission by node return (utility less penalties), spare to the highest return",
        build: |c, _| Policy::Admission(Box::new(LibraSla::new(c.clone()))),
    },
    PolicyEntry {
        name: "edf",
        about: "LibraRisk paper: space-shared non-preemptive EDF without backfilling",
        build: |c, n| Policy::Queue(Box::new(Edf::new(c, n))),
    },
    PolicyEntry {
        name: "fcfs-bf",
        about: "Libra+$ paper: EASY backfilling in arrival order, lapsed jobs dropped",
        build: |c, n| Policy::Queue(Box::new(Backfill::new(BackfillOrder::Fcfs, c, n))),
    },
    PolicyEntry {
        name: "sjf-bf",
        about: "Libra+$ paper: EASY backfilling, shortest estimate first, lapsed jobs dropped",
        build: |c, n| Policy::Queue(Box::new(Backfill::new(BackfillOrder::Sjf, c, n))),
    },
    PolicyEntry {
        name: "edf-bf",
        about: "Libra+$ paper: EASY backfilling, earliest deadline first, lapsed jobs dropped",
        build: |c, n| Policy::Queue(Box::new(Backfill::new(BackfillOrder::Edf, c, n))),
    },
    PolicyEntry {
        name: "qops",
        about: "VQoPS paper: space-shared admission guaranteeing every accepted deadline (K violations)",
        build: |c, n| Policy::Queue(Box::new(Qops::plain(c, n))),
    },
    PolicyEntry {
        name: "vqops",
        about: "VQoPS paper: QoPS taking the highest-revenue plan if its gain beats OC-Factor x P x RE",
        build: |c, n| Policy::Queue(Box::new(Qops::vqops(c, n))),
    },
    PolicyEntry {
        name: "dvqops",
        about: "VQoPS paper: VQoPS re-choosing OC-Factor and rollback window by what-if replays",
        build: |c, n| Policy::Queue(Box::new(Qops::dvqops(c, n))),
    },
    PolicyEntry {
        name: "batsim",
        about: "an external Batsim scheduler (pybatsim, batsched) over ZeroMQ, space-shared; see docs/batsim.md",
        // The CLI connects it (--batsim-endpoint); built here it has no
        // scheduler and drops every job with reason `scheduler`.
        build: |c, n| {
            Policy::Queue(Box::new(crate::batsim::BatsimQueue::new(
                Box::new(crate::batsim::NoScheduler),
                n.len(),
                usize::MAX,
                "w0",
                c.pbase,
            )))
        },
    },
    PolicyEntry {
        name: "fifo",
        about: "Libra paper: PBS FIFO, space-shared, no admission control",
        build: |c, n| Policy::Queue(Box::new(Fifo::new(c, n))),
    },
];

/// No policy of that name.
#[derive(Debug, Clone, Error)]
#[error("unknown policy '{name}'; known policies: {known}")]
pub struct UnknownPolicy {
    /// What was asked for.
    pub name: String,
    /// What exists.
    pub known: String,
}

/// Looks a policy up by name.
pub fn entry(name: &str) -> Result<&'static PolicyEntry, UnknownPolicy> {
    REGISTRY
        .iter()
        .find(|e| e.name == name)
        .ok_or_else(|| UnknownPolicy {
            name: name.to_string(),
            known: REGISTRY
                .iter()
                .map(|e| e.name)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// Builds a policy by name.
pub fn build(name: &str, cfg: &PolicyConfig, nodes: &[NodeSpec]) -> Result<Policy, UnknownPolicy> {
    Ok((entry(name)?.build)(cfg, nodes))
}

/// How many nodes Libra+$'s bounded walk settled from their line alone
/// on this thread (tests check the path ran).
#[cfg(test)]
pub(crate) fn plus_dollar_line_priced() -> u64 {
    plus_dollar::LINE_PRICED.with(|c| c.get())
}

/// How many busy nodes LibraSLA's walk by return left out by its stop on
/// this thread (tests check the walk stops early).
#[cfg(test)]
pub(crate) fn sla_return_left() -> u64 {
    sla::RETURN_LEFT.with(|c| c.get())
}

/// How many busy nodes LibraSLA's walks by return settled from the
/// lateness certificate on this thread.
#[cfg(test)]
pub(crate) fn sla_late_certain() -> u64 {
    sla::LATE_CERTAIN.with(|c| c.get())
}

/// How many busy nodes LibraSLA's walks by return settled from the
/// index's late deadlines on this thread.
#[cfg(test)]
pub(crate) fn sla_late_summary() -> u64 {
    sla::LATE_SUMMARY.with(|c| c.get())
}

/// How many busy nodes LibraSLA's walks by return settled from their
/// projection with the job alone on this thread.
#[cfg(test)]
pub(crate) fn sla_late_projected() -> u64 {
    sla::LATE_PROJECTED.with(|c| c.get())
}

#[cfg(test)]
pub(crate) mod test_util {
    use crate::job::*;
    use crate::node_model::{NodeSpec, NodeState, PartView};

    pub fn job(id: JobId, re: f64, p: u32, d: f64, b: f64) -> JobSpec {
        JobSpec::new(id, 0.0, re, p, d, b)
    }

    /// `n` reference nodes (speed 1), for the space-shared policies.
    pub fn specs(n: usize) -> Vec<NodeSpec> {
        (0..n)
            .map(|id| NodeSpec {
                id,
                speed: 1.0,
                memory_kb: 0,
                disk_mb: 0,
            })
            .collect()
    }

    pub fn nodes(n: usize) -> Vec<NodeState> {
        (0..n)
            .map(|id| {
                NodeState::new(NodeSpec {
                    id,
                    speed: 1.0,
                    memory_kb: 1 << 20,
                    disk_mb: 1 << 10,
                })
            })
            .collect()
    }

    /// Bounds for every busy node of `view` in `ix` (built from it), each
    /// its exact load at 0 with no line, and the index's record of its
    /// parts with no reports (the parts stand still): for tests that
    /// decide at 0 from the bounds.
    pub fn rebound_exact_at_zero(ix: &mut crate::busy_index::BusyIndex, view: &[NodeState]) {
        use crate::busy_index::{LoadBound, LoadLine};
        ix.rebound(0.0, |k, _, _, fns| {
            still_part_fns(&view[k], fns);
            let q = view[k].required_share(0.0);
            LoadBound {
                lo: q,
                hi: q,
                line: LoadLine::NONE,
            }
        });
    }

    /// The index's record of `node`'s parts with no reports (they stand
    /// still), appended to `fns`: for tests that bound nodes by hand.
    pub fn still_part_fns(node: &NodeState, fns: &mut Vec<crate::busy_index::PartFn>) {
        fns.extend(node.parts.iter().map(crate::busy_index::PartFn::standing));
    }

    /// Bounds every busy node of `n` in `ix` at `now` at its exact load
    /// (a flat band, no line), except node `liar`, bounded at `q`: a bound
    /// that lies, for tests that show a debug check bites.
    #[cfg(debug_assertions)]
    pub fn rebound_lying(
        ix: &mut crate::busy_index::BusyIndex,
        n: &[NodeState],
        now: f64,
        liar: usize,
        q: f64,
    ) {
        use crate::busy_index::{LoadBound, LoadLine};
        ix.rebound(now, |k, _, _, fns| {
            still_part_fns(&n[k], fns);
            let q = if k == liar {
                q
            } else {
                n[k].required_share(now)
            };
            LoadBound {
                lo: q,
                hi: q,
                line: LoadLine::NONE,
            }
        });
    }

    /// A running part with `rem` estimated work left and deadline `dt`.
    pub fn busy(node: &mut NodeState, job: JobId, rem: f64, dt: f64) {
        node.parts.push(PartView {
            job,
            est_cpu: rem,
            cpu_done: 0.0,
            deadline: dt,
            memory_kb: 0,
            disk_mb: 0,
            ret: 0.0,
            ret_penalty: 0.0,
            hard: false,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::RejectReason;

    /// Every registered policy answers to the name it is registered by
    /// (what runs, results and the manager's status name it by), and the
    /// registry lists the thirteen of docs/policies.md once each. The
    /// external scheduler (`batsim`) needs a scheduler to be built: its
    /// name is checked in `batsim`'s tests.
    #[test]
    fn every_policy_answers_to_its_registered_name() {
        let specs = super::test_util::specs(4);
        let names: Vec<&str> = super::REGISTRY.iter().map(|e| e.name).collect();
        assert_eq!(
            names,
            [
                "libra",
                "libra-risk",
                "libra-plus-dollar",
                "libra-sla",
                "edf",
                "fcfs-bf",
                "sjf-bf",
                "edf-bf",
                "qops",
                "vqops",
                "dvqops",
                "batsim",
                "fifo"
            ]
        );
        for name in names.into_iter().filter(|&n| n != "batsim") {
            let p = super::build(name, &super::PolicyConfig::default(), &specs).unwrap();
            assert_eq!(p.name(), name);
        }
    }

    #[test]
    fn a_reject_reason_prints_as_its_stable_name() {
        // What the reports, the CLI and the protocol show, in report order.
        let shown: Vec<String> = RejectReason::ALL.iter().map(|r| r.to_string()).collect();
        assert_eq!(
            shown,
            [
                "resources",
                "deadline",
                "budget",
                "risk",
                "return",
                "expired",
                "scheduler"
            ]
        );
    }
}
