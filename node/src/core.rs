//! The node's brain with no threads and no clock: the Job Control share
//! bookkeeping, the credit (deficit) accounting that turns shares into
//! slices, and the control tick.
//!
//! [`NodeEngine`] takes `now` (trace seconds) as an argument everywhere and is
//! driven like a sans-I/O protocol state machine: feed it events
//! ([`NodeEngine::place`], [`NodeEngine::on_burned`],
//! [`NodeEngine::handle_timeout`]), then drain what it wants done
//! ([`NodeEngine::poll_slice`], [`NodeEngine::poll_event`]) and arm one timer
//! for [`NodeEngine::poll_timeout`]. The actor in [`crate::actor`] does exactly
//! that with real clocks and real executors; the unit tests do it with a
//! fake clock and pretend burns.
//!
//! # Accounting
//! Every processor time figure here is *real host CPU nanoseconds*. A node
//! of capacity `c` is entitled to `c` ns of CPU per real ns. Each part earns
//! credit continuously at `share x c`; a slice burned is subtracted, so
//! credit is "assigned minus delivered" since the part was placed, and a
//! slice that overran is paid back out of the next one. Whenever the node
//! as a whole has earned processor time it runs the part furthest ahead in
//! credit relative to its quantum (`share x c x period`) for about one
//! quantum, so each part runs about once per period and its CPU converges
//! to its share exactly. One extra slice may be issued to queue behind the
//! burning ones, so a fully loaded node does not idle while a report makes
//! its way back. Progress in the trace's terms is CPU ns / (c x time_scale)
//! of this node's processor, times the node's speed in reference seconds.
//!
//! # When shares change
//! Only at the node-local events of docs/policies.md: a part placed, a part
//! finished its actual work, an on-track part reached its deadline, an
//! on-track part used up its estimate. Slices are cut at the estimate so
//! that the last event is seen when it happens. The control tick does not
//! re-plan: it records delivered versus assigned share and, when the node
//! could not get its capacity from the host, forgives the excess credit in
//! proportion to the shares (so the shortfall is shared as the shares say,
//! and a node that fell behind does not burst above its capacity later).

use std::collections::VecDeque;

use common::share::{job_control_shares, ShareInput};
use common::time::DEADLINE_TOLERANCE;
use common::{JobId, Time};
use rustc_hash::FxHashSet;
use thiserror::Error;

use crate::spec::{EmulatedNodeSpec, NodeId, NodePartId, PartSpec, SliceConfig, SpecError};
use crate::telemetry::{record, NodeTelemetry, PartTelemetry, PPM};

/// A part is complete when its burns are within this of its work (ns):
/// work is fractional, burns are whole nanoseconds. `poll_slice` issues a
/// slice for any remainder above it, so the two rules meet exactly.
const COMPLETION_SLACK_NS: f64 = 0.5;

/// Why the shares were recomputed (the first of the events that coincided).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShareReason {
    /// A part was placed on the node.
    Placed,
    /// A part finished its actual work and left.
    Finished,
    /// An on-track part reached its deadline.
    DeadlineReached,
    /// An on-track part used up its runtime estimate.
    EstimateUsed,
    /// A part was withdrawn before its end (its job was cancelled).
    Withdrawn,
}

/// A request to burn processor time for one part. Hand it back to
/// [`NodeEngine::on_burned`] when it is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slice {
    /// The part to run.
    pub part_id: NodePartId,
    /// The node's sequence number for this slice (unique per node).
    pub seq: u64,
    /// Thread CPU time to burn (real ns).
    pub ns: u64,
}

/// A part that finished its actual work.
#[derive(Debug, Clone, PartialEq)]
pub struct PartCompletion {
    /// The node it ran on.
    pub node_id: NodeId,
    /// The part.
    pub part_id: NodePartId,
    /// Its job.
    pub job_id: JobId,
    /// When it was placed (trace s).
    pub placed_at: Time,
    /// When it finished (trace s).
    pub finished_at: Time,
    /// Its absolute deadline (trace s).
    pub deadline_abs: Time,
    /// Whether it finished by its deadline (within
    /// [`DEADLINE_TOLERANCE`]).
    pub met_deadline: bool,
    /// Processor time it burned (real ns).
    pub burned_ns: u64,
    /// Processor time it was assigned over its life (real ns).
    pub assigned_ns: f64,
}

/// Where a running part stands.
#[derive(Debug, Clone, PartialEq)]
pub struct PartStanding {
    /// The part.
    pub part_id: NodePartId,
    /// Its job.
    pub job_id: JobId,
    /// Work done so far (reference seconds, comparable to the part's
    /// `actual` and `estimate`). Excludes a slice still burning.
    pub work_done: Time,
    /// Its current share of the node.
    pub share: f64,
    /// Whether it is on-track (estimated work left and deadline ahead).
    pub on_track: bool,
}

/// What the node wants the outside world to know.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeEvent {
    /// A part finished its actual work.
    Completed(PartCompletion),
    /// The shares were recomputed.
    SharesChanged {
        /// When (trace s).
        at: Time,
        /// Which node-local event caused it.
        reason: ShareReason,
        /// The new share of every part on the node, in placement order.
        shares: Vec<(NodePartId, f64)>,
        /// What the share rule saw, in the same order (so anyone can check
        /// the shares against `job_control_shares`).
        inputs: Vec<ShareInput>,
    },
    /// Periodic progress of every part on the node.
    Progress {
        /// When (trace s).
        at: Time,
        /// One entry per part, in placement order.
        parts: Vec<PartStanding>,
    },
    /// A part sent with [`crate::PlaceReported`] is on the node (reported
    /// by the node actor, before any other event of that part).
    Placed {
        /// The part.
        part_id: NodePartId,
        /// When (trace s).
        at: Time,
    },
    /// A part sent with [`crate::PlaceReported`] was refused; the node is
    /// unchanged.
    Refused {
        /// The part.
        part_id: NodePartId,
        /// Why.
        error: PlaceError,
    },
}

/// A part could not be placed. A normal refusal, with what was lacking.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum PlaceError {
    /// The part's numbers are invalid.
    #[error(transparent)]
    Invalid(#[from] SpecError),
    /// A part with this id is already on the node.
    #[error("node {node}: part {part} is already placed")]
    Duplicate {
        /// The node.
        node: NodeId,
        /// The part.
        part: NodePartId,
    },
    /// Not enough free memory or disk.
    #[error("node {node}: part {part} needs {need} {unit} of {resource}, {free} {unit} free")]
    NoRoom {
        /// The node.
        node: NodeId,
        /// The part.
        part: NodePartId,
        /// "memory" or "disk".
        resource: &'static str,
        /// The unit of `need` and `free`: "KB" (memory) or "MB" (disk).
        unit: &'static str,
        /// What the part needs.
        need: u64,
        /// What is free.
        free: u64,
    },
}

#[derive(Debug)]
struct PartState {
    spec: PartSpec,
    placed_at: Time,
    /// CPU ns that finish the actual work / use up the estimate.
    work_ns: f64,
    est_ns: f64,
    burned_ns: u64,
    /// Assigned minus delivered (ns); negative after an overrun.
    credit_ns: f64,
    share: f64,
    /// On-track as of the last recompute; a change triggers one.
    on_track: bool,
    /// Slices issued and not yet reported: (seq, ns asked for). At most
    /// one burning and one queued behind it.
    in_flight: Vec<(u64, u64)>,
    win_burned_ns: u64,
    win_assigned_ns: f64,
    tel: PartTelemetry,
}

/// A debt of a part no longer on its node (see `NodeEngine::debt`).
#[derive(Debug, Clone, Copy)]
struct Debt {
    /// CPU still to pay back (ns).
    ns: f64,
    /// The share its part last had, at which it is paid back.
    share: f64,
}

/// What the share rule sees of part `p` at `now`; `cpu_per_s` is the
/// node's capacity times the time scale ([`NodeEngine::node_cpu`]'s
/// divisor, the same arithmetic).
fn input_of(p: &PartState, now: Time, cpu_per_s: f64) -> ShareInput {
    ShareInput {
        rem: (p.est_ns - p.burned_ns as f64) * 1e-9 / cpu_per_s,
        rd: p.spec.deadline_abs - now,
        ret: p.spec.ret,
        hard: p.spec.hard,
    }
}

impl PartState {
    /// Credits `g` ns of assigned processor time (the part's share of
    /// what the node earned).
    fn earn(&mut self, g: f64) {
        self.credit_ns += g;
        self.win_assigned_ns += g;
        self.tel.assigned_ns += g;
    }

    /// CPU asked for by this part's slices not yet reported (ns).
    fn in_flight_ns(&self) -> f64 {
        self.in_flight.iter().map(|f| f.1 as f64).sum()
    }
}

/// The pure core of one emulated node. See the module docs.
#[derive(Debug)]
pub struct NodeEngine {
    spec: EmulatedNodeSpec,
    cfg: SliceConfig,
    /// In placement order (ties go to the earlier part). A deque: the part
    /// that ends is most often the oldest, and removing it from a vector
    /// moved every other part (~200 bytes each; 4.6% of a node process
    /// with dozens of parts queued per node under the live flood).
    parts: VecDeque<PartState>,
    /// The ids in `parts`, for the duplicate check of a placement.
    ids: FxHashSet<NodePartId>,
    /// Whether `parts` is in increasing id order (as the link numbers
    /// them), so a burn report finds its part by binary search.
    ids_ascending: bool,
    /// Capacity (CPU ns) per unit of share earned since the parts' credit
    /// was last brought up to date ([`NodeEngine::settle`]): each part's
    /// credit is `credit_ns + share x unsettled_ns`. Shares hold between
    /// recomputes, so an accrual is one addition here rather than one per
    /// part, and the parts are settled when their shares change.
    unsettled_ns: f64,
    /// The sum of the parts' settled `credit_ns`, brought back to the
    /// exact sum at each settle.
    credit_sum: f64,
    /// The sum of the parts' shares (set at each recompute).
    share_sum: f64,
    /// CPU (ns) asked for by the slices of parts on the node that are not
    /// back yet (orphans' not included).
    in_flight_ns: u64,
    /// The earliest deadline of an on-track part (set at each recompute;
    /// infinite with none): no part can reach its deadline before it.
    next_deadline: Time,
    inputs: Vec<ShareInput>,
    shares: Vec<f64>,
    last_accrual: Time,
    last_tick: Time,
    next_tick: Option<Time>,
    ticks: u64,
    /// Slices issued and not yet reported (including orphans).
    in_flight: usize,
    /// Slices that may burn at once: ceil(capacity).
    max_running: usize,
    /// Slices of parts that finished before these came back, with the
    /// share their part last had.
    orphans: Vec<(u64, f64)>,
    /// CPU (ns) the node burned beyond its entitlement for parts no longer
    /// on it, each with the share of the part that ran it: what a part
    /// still owed when it ended (it borrowed its last slice, or overshot
    /// its last burn) and slices that came back after their part ended.
    /// Each is paid back at its share of the capacity, as if its part
    /// were still on the node taking its share until it had earned what it
    /// burned: the time it would have ended had it not run ahead. So the
    /// node's long-run rate is its capacity whatever its parts' lengths,
    /// and the parts it shares with get what they would have had in the
    /// fluid model. (If a part's debt left with it, a stream of parts of a
    /// slice or less each would run at the executor's speed, 4x the
    /// capacity of a 0.25 node. Paying debts back with the whole capacity
    /// at once would hold the other parts back instead: in `libratory
    /// calibrate` a tight job then misses its deadline by up to 0.8 trace s.)
    /// The debts of several parts are kept as one, at the sum of their
    /// shares until all is paid: one entry, not one per ended part (a node
    /// under a flood of short parts holds dozens; kept apart, walking them
    /// at every accrual cost more than the parts' own work).
    debt: Debt,
    /// The fraction of its capacity the node runs at (a `slow` fault's
    /// factor; 0 while a `hang` holds it; 1 otherwise): credit is earned
    /// at `share x capacity x rate`, so the burners get that fraction of
    /// the node's CPU time and its parts progress that much slower.
    run_rate: f64,
    next_seq: u64,
    mem_used: u64,
    disk_used: u64,
    events: VecDeque<NodeEvent>,
    /// Made at the first thing recorded: its five histograms cost ~10 KB,
    /// most of an idle node's memory (a Fugaku-sized cluster keeps
    /// 158,976 nodes, most of them idle, in eight processes).
    tel: Option<Box<NodeTelemetry>>,
}

impl NodeEngine {
    /// A node with nothing on it.
    pub fn new(spec: EmulatedNodeSpec, cfg: SliceConfig) -> Result<Self, SpecError> {
        spec.validate()?;
        cfg.validate()?;
        Ok(NodeEngine {
            spec,
            cfg,
            parts: VecDeque::new(),
            ids: FxHashSet::default(),
            ids_ascending: true,
            unsettled_ns: 0.0,
            credit_sum: 0.0,
            share_sum: 0.0,
            in_flight_ns: 0,
            next_deadline: f64::INFINITY,
            inputs: Vec::new(),
            shares: Vec::new(),
            last_accrual: 0.0,
            debt: Debt {
                ns: 0.0,
                share: 0.0,
            },
            last_tick: 0.0,
            next_tick: None,
            ticks: 0,
            in_flight: 0,
            // A node of capacity c never burns on more than ceil(c) host
            // cores at once, so a fraction of a core stays a fraction.
            max_running: spec.capacity.ceil().max(1.0) as usize,
            orphans: Vec::new(),
            run_rate: 1.0,
            next_seq: 0,
            mem_used: 0,
            disk_used: 0,
            events: VecDeque::new(),
            tel: None,
        })
    }

    /// The node's configuration.
    pub fn spec(&self) -> &EmulatedNodeSpec {
        &self.spec
    }

    /// The slicer's configuration.
    pub fn config(&self) -> &SliceConfig {
        &self.cfg
    }

    /// How many slices of this node may burn at the same time (ceil of
    /// the capacity). The executor pool enforces it; the node issues at
    /// most one slice more, queued behind the burning ones.
    pub fn max_running(&self) -> usize {
        self.max_running
    }

    /// Slices issued and not yet reported (orphans included).
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Whether no part is on the node.
    pub fn is_idle(&self) -> bool {
        self.parts.is_empty()
    }

    /// Number of parts on the node.
    pub fn len(&self) -> usize {
        self.parts.len()
    }

    /// Whether the node has no parts (same as [`NodeEngine::is_idle`]).
    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    /// CPU per real ns the node may use now: its capacity times its rate.
    fn cap(&self) -> f64 {
        self.spec.capacity * self.run_rate
    }

    /// Runs the node at `rate` of its capacity from `now` on (`slow`
    /// faults: `libratory run --faults`; 0 holds it still, as a hang
    /// does: no credit is earned and no slice starts). What was earned
    /// until `now` is credited at the old rate first.
    pub fn set_rate(&mut self, rate: f64, now: Time) {
        self.accrue(now);
        self.run_rate = rate.clamp(0.0, 1.0);
    }

    /// The fraction of its capacity the node runs at.
    pub fn rate_now(&self) -> f64 {
        self.run_rate
    }

    fn real_ns(&self, dt: Time) -> f64 {
        dt * self.cfg.time_scale * 1e9
    }

    fn trace_dt(&self, real_ns: f64) -> Time {
        real_ns / (self.cfg.time_scale * 1e9)
    }

    /// CPU ns burned -> seconds of this node's processor in trace time.
    fn node_cpu(&self, ns: f64) -> Time {
        ns * 1e-9 / (self.spec.capacity * self.cfg.time_scale)
    }

    /// Seconds of this node's processor in trace time -> CPU ns to burn.
    fn cpu_ns(&self, node_cpu: Time) -> f64 {
        node_cpu * self.spec.capacity * self.cfg.time_scale * 1e9
    }

    fn input(&self, p: &PartState, now: Time) -> ShareInput {
        input_of(p, now, self.spec.capacity * self.cfg.time_scale)
    }

    /// What the share rule sees for every part at `now`, in placement order
    /// (for tests and for the simulator conformance check).
    pub fn share_inputs(&self, now: Time) -> Vec<ShareInput> {
        self.parts.iter().map(|p| self.input(p, now)).collect()
    }

    /// The current share of every part, in placement order.
    pub fn shares(&self) -> Vec<(NodePartId, f64)> {
        self.parts
            .iter()
            .map(|p| (p.spec.part_id, p.share))
            .collect()
    }

    /// Progress of every part (work done excludes slices still burning).
    pub fn progress(&self) -> Vec<PartStanding> {
        self.parts
            .iter()
            .map(|p| PartStanding {
                part_id: p.spec.part_id,
                job_id: p.spec.job_id,
                work_done: self.node_cpu(p.burned_ns as f64) * self.spec.speed,
                share: p.share,
                on_track: p.on_track,
            })
            .collect()
    }

    /// Places a part at `now` and recomputes the shares.
    pub fn place(&mut self, part: PartSpec, now: Time) -> Result<(), PlaceError> {
        self.admit(part, now)?;
        self.recompute(now, ShareReason::Placed);
        Ok(())
    }

    /// Places parts that arrived together (one dispatch frame's) at `now`,
    /// telling `each` what became of each part in order, and recomputes
    /// the shares once. The shares that result are those of placing them
    /// one by one at `now`: the ones in between would hold for no time.
    /// A node holding thousands of parts then pays one recompute a burst,
    /// not one a part.
    pub fn place_batch(
        &mut self,
        parts: impl IntoIterator<Item = PartSpec>,
        now: Time,
        mut each: impl FnMut(NodePartId, Result<(), PlaceError>),
    ) {
        let mut placed = false;
        for part in parts {
            let id = part.part_id;
            let r = self.admit(part, now);
            placed |= r.is_ok();
            each(id, r);
        }
        if placed {
            self.recompute(now, ShareReason::Placed);
        }
    }

    /// Checks a part and puts it on the node at share 0 (the caller
    /// recomputes).
    fn admit(&mut self, part: PartSpec, now: Time) -> Result<(), PlaceError> {
        part.validate()?;
        let node = self.spec.id;
        if self.ids.contains(&part.part_id) {
            return Err(PlaceError::Duplicate {
                node,
                part: part.part_id,
            });
        }
        for (resource, unit, need, used, total) in [
            (
                "memory",
                "KB",
                part.memory_kb,
                self.mem_used,
                self.spec.memory_kb,
            ),
            (
                "disk",
                "MB",
                part.disk_mb,
                self.disk_used,
                self.spec.disk_mb,
            ),
        ] {
            let free = total.saturating_sub(used);
            if need > free {
                return Err(PlaceError::NoRoom {
                    node,
                    part: part.part_id,
                    resource,
                    unit,
                    need,
                    free,
                });
            }
        }
        if self.parts.is_empty() {
            // The idle time since the last part left pays the node's debt.
            self.accrue(now);
            self.last_accrual = now;
            self.last_tick = now;
            self.next_tick = Some(now + self.trace_dt(self.cfg.tick.as_nanos() as f64));
        } else {
            self.accrue(now);
        }
        self.mem_used += part.memory_kb;
        self.disk_used += part.disk_mb;
        let speed = self.spec.speed;
        let state = PartState {
            // At least a nanosecond: every part burns one slice, and only a
            // burn completes a part (a part of ~0 ns would wait forever).
            work_ns: self.cpu_ns(part.actual / speed).max(1.0),
            est_ns: self.cpu_ns(part.estimate / speed),
            placed_at: now,
            burned_ns: 0,
            credit_ns: 0.0,
            share: 0.0,
            on_track: true,
            in_flight: Vec::new(),
            win_burned_ns: 0,
            win_assigned_ns: 0.0,
            tel: PartTelemetry::new(part.part_id, part.job_id),
            spec: part,
        };
        self.ids_ascending &= self
            .parts
            .back()
            .is_none_or(|last| last.spec.part_id < state.spec.part_id);
        self.ids.insert(state.spec.part_id);
        self.parts.push_back(state);
        Ok(())
    }

    /// Credits every part with its share of the capacity since the last
    /// accrual. Shares are constant between calls, so this is exact. Debts
    /// of ended parts are paid at their shares beside the parts' (all in
    /// proportion when together they ask for more than the node has, and
    /// the whole node goes to the debts when no part is on it).
    fn accrue(&mut self, now: Time) {
        let dt = now - self.last_accrual;
        if dt <= 0.0 {
            return;
        }
        let mut cap_ns = self.real_ns(dt) * self.cap();
        if self.debt.ns > 0.0 {
            let parts = self.share_sum;
            let total = parts + self.debt.share;
            if total > 1.0 || parts <= 0.0 {
                cap_ns /= total;
            }
            self.debt.ns -= self.debt.share * cap_ns;
            if self.debt.ns <= 0.0 {
                self.debt = Debt {
                    ns: 0.0,
                    share: 0.0,
                };
            }
        }
        self.unsettled_ns += cap_ns;
        self.last_accrual = now;
    }

    /// Brings every part's credit (and what it was assigned) up to date
    /// with the accruals since the last settle, and `credit_sum` back to
    /// the exact sum.
    fn settle(&mut self) {
        let u = std::mem::take(&mut self.unsettled_ns);
        let mut sum = 0.0;
        for p in &mut self.parts {
            p.earn(p.share * u);
            sum += p.credit_ns;
        }
        self.credit_sum = sum;
    }

    /// A part's credit now (ns): settled plus earned since.
    fn credit(&self, p: &PartState) -> f64 {
        p.credit_ns + p.share * self.unsettled_ns
    }

    /// Where part `id` is in `parts`.
    fn position(&self, id: NodePartId) -> Option<usize> {
        if self.ids_ascending {
            self.parts
                .binary_search_by_key(&id, |p| p.spec.part_id)
                .ok()
        } else {
            self.parts.iter().position(|p| p.spec.part_id == id)
        }
    }

    /// Takes part `k` off the node, its credit settled. The caller
    /// recomputes the shares (or finds the node empty).
    fn take(&mut self, k: usize) -> PartState {
        let mut p = self.parts.remove(k).expect("k is a part's position");
        let g = p.share * self.unsettled_ns;
        p.earn(g);
        self.credit_sum += g - p.credit_ns;
        self.in_flight_ns -= p.in_flight.iter().map(|f| f.1).sum::<u64>();
        self.ids.remove(&p.spec.part_id);
        if self.parts.is_empty() {
            self.ids_ascending = true;
            self.unsettled_ns = 0.0;
            self.credit_sum = 0.0;
            self.share_sum = 0.0;
            self.next_deadline = f64::INFINITY;
        }
        p
    }

    fn recompute(&mut self, now: Time, reason: ShareReason) {
        // One pass over the parts to settle what was earned at the old
        // shares and read what the rule needs, one to set the new shares:
        // a node holding thousands of parts recomputes at every event.
        let mut inputs = std::mem::take(&mut self.inputs);
        inputs.clear();
        let u = std::mem::take(&mut self.unsettled_ns);
        let mut credit_sum = 0.0;
        let cpu_per_s = self.spec.capacity * self.cfg.time_scale;
        for p in &mut self.parts {
            p.earn(p.share * u);
            credit_sum += p.credit_ns;
            inputs.push(input_of(p, now, cpu_per_s));
        }
        self.credit_sum = credit_sum;
        job_control_shares(&inputs, self.cfg.spare_rule, &mut self.shares);
        let mut next_deadline = f64::INFINITY;
        let mut share_sum = 0.0;
        for ((p, s), i) in self.parts.iter_mut().zip(&self.shares).zip(&inputs) {
            p.share = *s;
            share_sum += *s;
            p.on_track = i.on_track();
            if p.on_track {
                next_deadline = next_deadline.min(p.spec.deadline_abs);
            }
        }
        self.next_deadline = next_deadline;
        self.share_sum = share_sum;
        self.tel_mut().recomputes += 1;
        if self.cfg.share_events {
            self.events.push_back(NodeEvent::SharesChanged {
                at: now,
                reason,
                shares: self.shares(),
                inputs: inputs.clone(),
            });
        }
        self.inputs = inputs;
    }

    /// Recomputes if an on-track part became overdue since the last
    /// recompute (overdue parts never become on-track again: both the
    /// remaining estimate and the time to the deadline only shrink).
    ///
    /// Only a part that burned (`burned`, its position) can have used up
    /// its estimate, and only a part whose deadline is within reach can
    /// have reached it, so away from `next_deadline` the one part is
    /// looked at, not every part.
    fn check_transitions(&mut self, now: Time, burned: Option<usize>) {
        // Far wider than the rule's ON_TRACK_EPS and the rounding of
        // `deadline - now` at any trace time.
        let reach = 1e-6 * (1.0 + now.abs());
        let near = now + reach >= self.next_deadline;
        let looked_at = match (near, burned) {
            (true, _) => 0..self.parts.len(),
            (false, Some(k)) => k..k + 1,
            (false, None) => 0..0,
        };
        let mut reason = None;
        for p in self.parts.range(looked_at) {
            if !p.on_track {
                continue;
            }
            let i = self.input(p, now);
            if !i.on_track() {
                let r = if i.rd <= common::share::ON_TRACK_EPS {
                    ShareReason::DeadlineReached
                } else {
                    ShareReason::EstimateUsed
                };
                reason.get_or_insert(r);
            }
        }
        if let Some(r) = reason {
            self.recompute(now, r);
        }
    }

    fn quantum_ns(&self, p: &PartState) -> f64 {
        let q = p.share * self.cap() * self.cfg.period.as_nanos() as f64;
        q.clamp(
            self.cfg.min_slice.as_nanos() as f64,
            self.cfg.max_slice.as_nanos() as f64,
        )
    }

    /// Credit the node as a whole has earned and not yet spent (slices
    /// still burning count as spent). The node starts a slice only when
    /// this is above a small allowance ([`NodeEngine::borrow_ns`]), which
    /// holds it to its capacity in the long run.
    fn node_credit_ns(&self) -> f64 {
        self.credit_sum + self.share_sum * self.unsettled_ns
            - self.in_flight_ns as f64
            - self.debt.ns
    }

    /// A part left the node owing `ns` (or a slice of it came back late).
    fn owe(&mut self, ns: f64, share: f64) {
        if ns > 0.0 {
            // At a thousandth of the node at least: a debt at a share of
            // ~0 would stay on the node's books for ever.
            self.debt.ns += ns;
            self.debt.share += share.max(1e-3);
        }
    }

    /// How far into debt the node may be and still start a slice: one
    /// minimum slice (once past it, the node waits until it owes nothing:
    /// [`NodeEngine::poll_timeout`]). Every burn overshoots its slice by a little (the
    /// clock is read every few us), so without this allowance a node whose
    /// shares sum to one would be a few hundred ns short after each slice
    /// and sleep for a whole timer tick (1 ms in tokio) to earn it back,
    /// losing ~10% of its capacity. The debt is paid back like any other
    /// overrun, so the long-run rate stays exactly the capacity.
    fn borrow_ns(&self) -> f64 {
        self.cfg.min_slice.as_nanos() as f64
    }

    /// The next slice to burn, if the node has earned processor time.
    /// Call repeatedly until `None`.
    ///
    /// The slice goes to the part furthest ahead in credit relative to its
    /// quantum (`share x capacity x period`) and is one quantum long, or
    /// longer if the part has more credit (up to `max_slice`). It may
    /// borrow against the part's future credit: that keeps slices chunky on
    /// small-capacity nodes and the node busy when its shares sum to one,
    /// and the borrowed time is paid back before the part runs again.
    ///
    /// Besides the [`NodeEngine::max_running`] slices that may burn, the node
    /// issues one more to wait behind them in the executor pool when it will
    /// have earned it by the time a burning slice ends. That hides the
    /// round trip (executor -> node -> executor, two thread wake-ups) that
    /// would otherwise leave a fully loaded node idle after every slice.
    pub fn poll_slice(&mut self, now: Time) -> Option<Slice> {
        if self.in_flight > self.max_running || self.parts.is_empty() || self.run_rate <= 0.0 {
            return None;
        }
        self.accrue(now);
        let ahead = self.in_flight == self.max_running;
        let mut budget = self.node_credit_ns();
        if ahead {
            // The queued slice starts when a burning one ends; burning
            // slices keep earning the node credit at its rate meanwhile.
            budget += self.rate() * self.in_flight_ns as f64;
        }
        if budget < -self.borrow_ns() {
            return None;
        }
        let min_slice = self.cfg.min_slice.as_nanos() as f64;
        let mut best: Option<(usize, f64)> = None;
        for (k, p) in self.parts.iter().enumerate() {
            if p.share <= 0.0 {
                continue;
            }
            // A part is one sequential thread of work: a second slice of it
            // may only queue behind its first, which the pool serialises
            // only for nodes that run one slice at a time.
            let n = p.in_flight.len();
            let queue_behind = ahead && self.max_running == 1 && n == 1;
            if n > 0 && !queue_behind {
                continue;
            }
            let left = p.work_ns - p.burned_ns as f64 - p.in_flight_ns();
            // Work within the completion slack of `on_burned` is done once
            // the slices in flight return; anything more gets a slice
            // (ceil'd to >= 1 ns), so no part is left short of its end.
            if left <= COMPLETION_SLACK_NS || (n > 0 && left < min_slice) {
                continue;
            }
            // Ties go to the earlier part.
            let key = (self.credit(p) - p.in_flight_ns()) / self.quantum_ns(p);
            if best.is_none_or(|(_, b)| key > b) {
                best = Some((k, key));
            }
        }
        let (k, _) = best?;
        let max_slice = self.cfg.max_slice.as_nanos() as f64;
        let p = &self.parts[k];
        let done = p.burned_ns as f64 + p.in_flight_ns();
        let left = p.work_ns - done;
        let credit = self.credit(p) - p.in_flight_ns();
        let mut ns = credit.max(self.quantum_ns(p)).min(max_slice).min(left);
        let est_left = p.est_ns - done;
        if p.on_track && est_left > 0.0 && est_left < ns {
            // Stop at the estimate: using it up is a share-changing event.
            ns = est_left;
        }
        let ns = ns.ceil().max(1.0) as u64;
        let seq = self.next_seq;
        self.next_seq += 1;
        self.tel_mut().slices += 1;
        let p = &mut self.parts[k];
        p.in_flight.push((seq, ns));
        self.in_flight += 1;
        self.in_flight_ns += ns;
        Some(Slice {
            part_id: p.spec.part_id,
            seq,
            ns,
        })
    }

    /// Rate at which the node as a whole earns credit (ns per real ns).
    fn rate(&self) -> f64 {
        self.share_sum * self.cap()
    }

    /// An executor burned `burned_ns` of `slice`. Slices this node did not
    /// issue are ignored; those of parts that already finished (a queued
    /// slice whose part completed on an overshoot) only free their slot.
    pub fn on_burned(&mut self, slice: Slice, burned_ns: u64, now: Time) {
        let found = self
            .position(slice.part_id)
            .filter(|&k| self.parts[k].in_flight.iter().any(|f| f.0 == slice.seq));
        let Some(k) = found else {
            if let Some(i) = self.orphans.iter().position(|&(s, _)| s == slice.seq) {
                let (_, share) = self.orphans.swap_remove(i);
                self.in_flight -= 1;
                // Burned for a part that had ended: the node's CPU all the
                // same.
                self.accrue(now);
                self.owe(burned_ns as f64, share);
            }
            return;
        };
        let asked: u64 = self.parts[k]
            .in_flight
            .iter()
            .filter(|f| f.0 == slice.seq)
            .map(|f| f.1)
            .sum();
        self.parts[k].in_flight.retain(|f| f.0 != slice.seq);
        self.in_flight -= 1;
        self.in_flight_ns -= asked;
        self.accrue(now);
        record(
            &mut self.tel_mut().slice_overrun_ns,
            burned_ns.saturating_sub(slice.ns) as f64,
        );
        self.credit_sum -= burned_ns as f64;
        let p = &mut self.parts[k];
        p.credit_ns -= burned_ns as f64;
        p.burned_ns += burned_ns;
        p.win_burned_ns += burned_ns;
        p.tel.burned_ns += burned_ns;
        if p.burned_ns as f64 + COMPLETION_SLACK_NS >= p.work_ns {
            let p = self.take(k);
            self.owe(-p.credit_ns, p.share);
            self.orphans
                .extend(p.in_flight.iter().map(|f| (f.0, p.share)));
            self.mem_used -= p.spec.memory_kb;
            self.disk_used -= p.spec.disk_mb;
            let mut tel = p.tel;
            tel.finished = true;
            let assigned_ns = tel.assigned_ns;
            self.tel_mut().parts.push(tel);
            self.events.push_back(NodeEvent::Completed(PartCompletion {
                node_id: self.spec.id,
                part_id: p.spec.part_id,
                job_id: p.spec.job_id,
                placed_at: p.placed_at,
                finished_at: now,
                deadline_abs: p.spec.deadline_abs,
                met_deadline: now <= p.spec.deadline_abs + DEADLINE_TOLERANCE,
                burned_ns: p.burned_ns,
                assigned_ns,
            }));
            if self.parts.is_empty() {
                self.next_tick = None;
            } else {
                self.recompute(now, ShareReason::Finished);
            }
            return;
        }
        self.check_transitions(now, Some(k));
    }

    /// Withdraws a part before its end (its job was cancelled): it leaves
    /// the node at once, its slices still burning only free their slots
    /// when they come back, and the remaining parts' shares are re-planned
    /// by the Job Control rule. Returns the CPU ns it had burned, or `None`
    /// if no such part is on the node (it completed meanwhile).
    pub fn withdraw(&mut self, part: NodePartId, now: Time) -> Option<u64> {
        let k = self.position(part)?;
        self.accrue(now);
        let p = self.take(k);
        self.owe(-p.credit_ns, p.share);
        self.orphans
            .extend(p.in_flight.iter().map(|f| (f.0, p.share)));
        self.mem_used -= p.spec.memory_kb;
        self.disk_used -= p.spec.disk_mb;
        self.tel_mut().parts.push(p.tel);
        if self.parts.is_empty() {
            self.next_tick = None;
        } else {
            self.recompute(now, ShareReason::Withdrawn);
        }
        Some(p.burned_ns)
    }

    /// Handles whatever is due at `now`: the control tick, deadlines.
    pub fn handle_timeout(&mut self, now: Time) {
        if self.parts.is_empty() {
            return;
        }
        self.accrue(now);
        if let Some(t) = self.next_tick {
            if now >= t {
                let jitter = self.real_ns(now - t);
                record(&mut self.tel_mut().tick_jitter_ns, jitter);
                self.tick(now);
                let step = self.trace_dt(self.cfg.tick.as_nanos() as f64);
                // Skip ticks missed entirely rather than running a burst.
                let missed = ((now - t) / step).floor() + 1.0;
                self.next_tick = Some(t + missed * step);
            }
        }
        self.check_transitions(now, None);
    }

    fn tick(&mut self, now: Time) {
        self.settle();
        let window = self.real_ns(now - self.last_tick) * self.spec.capacity;
        if window > 0.0 {
            let id = self.spec.id;
            let tel = self
                .tel
                .get_or_insert_with(|| Box::new(NodeTelemetry::new(id)));
            for p in &mut self.parts {
                let assigned = p.win_assigned_ns / window;
                let delivered = p.win_burned_ns as f64 / window;
                record(&mut tel.assigned_ppm, assigned * PPM);
                record(&mut tel.delivered_ppm, delivered * PPM);
                record(&mut tel.error_ppm, (delivered - assigned).abs() * PPM);
                p.tel.windows += 1;
                p.win_assigned_ns = 0.0;
                p.win_burned_ns = 0;
            }
        }
        self.last_tick = now;
        // Unspent credit beyond the allowance means the host did not give
        // the node its capacity; forgive it in proportion to the shares so
        // the loss falls on the parts as the shares say. Slices still
        // burning are counted as spent.
        let backlog = self.credit_sum - self.in_flight_ns as f64;
        let allowance =
            self.spec.capacity * self.cfg.period.as_nanos() as f64 * self.cfg.backlog_periods;
        let total_share = self.share_sum;
        if backlog > allowance && total_share > 0.0 {
            let excess = backlog - allowance;
            let mut sum = 0.0;
            for p in &mut self.parts {
                p.credit_ns -= excess * p.share / total_share;
                sum += p.credit_ns;
            }
            self.credit_sum = sum;
            self.tel_mut().forgiven_ns += excess;
        }
        self.ticks += 1;
        if self.cfg.progress_ticks > 0
            && self
                .ticks
                .is_multiple_of(u64::from(self.cfg.progress_ticks))
        {
            self.events.push_back(NodeEvent::Progress {
                at: now,
                parts: self.progress(),
            });
        }
    }

    /// The next instant (trace s) at which [`NodeEngine::handle_timeout`] or
    /// [`NodeEngine::poll_slice`] has something to do, or `None` when the node
    /// only waits for burns to finish or is idle (an idle node needs no
    /// timer at all).
    pub fn poll_timeout(&self) -> Option<Time> {
        if self.parts.is_empty() {
            return None;
        }
        let mut t = self
            .next_tick
            .unwrap_or(f64::INFINITY)
            .min(self.next_deadline);
        // With every running slot busy, the next burn report drives the
        // node; otherwise wake when the node owes nothing: held back by its
        // allowance ([`NodeEngine::borrow_ns`]), it waits until the debt
        // is paid and then runs slices until the allowance stops it again,
        // so a node held back wakes once per allowance's worth of slices
        // (waking as soon as one slice's credit was earned cost a stream of
        // short parts a timer wake each: the live flood's node processes
        // spent 9.3 us per 3.9 us job).
        if self.in_flight < self.max_running
            && self
                .parts
                .iter()
                .any(|p| p.in_flight.is_empty() && p.share > 0.0)
        {
            // Debts are paid at their shares beside the parts' (a wait
            // that outlasts a debt ends early, and the next call waits the
            // rest at the rate then).
            let debts = if self.debt.ns > 0.0 {
                self.debt.share
            } else {
                0.0
            };
            let rate = (self.rate() + debts * self.cap()).min(self.cap());
            if rate > 0.0 {
                let need = -self.node_credit_ns();
                // At least 1 us ahead, so the wake-up always earns credit.
                let wait = (need / rate).max(1_000.0);
                t = t.min(self.last_accrual + self.trace_dt(wait));
            }
        }
        t.is_finite().then_some(t)
    }

    /// The next event for the outside world, oldest first.
    pub fn poll_event(&mut self) -> Option<NodeEvent> {
        self.events.pop_front()
    }

    /// The node's telemetry, made when first needed.
    fn tel_mut(&mut self) -> &mut NodeTelemetry {
        let id = self.spec.id;
        self.tel
            .get_or_insert_with(|| Box::new(NodeTelemetry::new(id)))
    }

    /// A snapshot of the node's telemetry: finished parts since the last
    /// reset, then the running ones.
    pub fn telemetry(&self) -> NodeTelemetry {
        let mut t = match &self.tel {
            Some(t) => NodeTelemetry::clone(t),
            None => NodeTelemetry::new(self.spec.id),
        };
        t.parts.extend(self.parts.iter().map(|p| {
            let mut tel = p.tel.clone();
            tel.assigned_ns += p.share * self.unsettled_ns;
            tel
        }));
        t
    }

    /// Forgets finished parts' telemetry and clears every histogram (after
    /// the telemetry was shipped).
    pub fn reset_telemetry(&mut self) {
        self.settle();
        self.tel = None;
        for p in &mut self.parts {
            let (a, b) = (p.tel.assigned_ns, p.tel.burned_ns);
            p.tel = PartTelemetry::new(p.spec.part_id, p.spec.job_id);
            // Lifetime totals survive a reset; only histograms restart.
            p.tel.assigned_ns = a;
            p.tel.burned_ns = b;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use common::share::SpareRule;
    use rand::seq::IndexedRandom;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use std::time::Duration;

    const TS: f64 = 1e-3;

    fn cfg(rule: SpareRule) -> SliceConfig {
        SliceConfig {
            time_scale: TS,
            spare_rule: rule,
            progress_ticks: 0,
            ..SliceConfig::default()
        }
    }

    fn node(capacity: f64) -> EmulatedNodeSpec {
        EmulatedNodeSpec {
            id: 3,
            speed: 1.0,
            capacity,
            memory_kb: 1000,
            disk_mb: 1000,
        }
    }

    fn part(id: NodePartId, estimate: f64, actual: f64, deadline_abs: f64) -> PartSpec {
        PartSpec {
            part_id: id,
            job_id: id * 10,
            estimate,
            actual,
            deadline_abs,
            memory_kb: 0,
            disk_mb: 0,
            ret: 0.0,
            hard: false,
        }
    }

    /// Drives a core with one pretend executor that burns exactly what it
    /// is asked (times `overrun`) in as much wall time as CPU time.
    struct Sim {
        core: NodeEngine,
        now: Time,
        events: Vec<NodeEvent>,
        overrun: f64,
        queue: VecDeque<Slice>,
    }

    impl Sim {
        fn new(core: NodeEngine) -> Self {
            Sim {
                core,
                now: 0.0,
                events: Vec::new(),
                overrun: 1.0,
                queue: VecDeque::new(),
            }
        }

        fn drain(&mut self) {
            while let Some(e) = self.core.poll_event() {
                self.events.push(e);
            }
        }

        /// Runs until trace time `until` or until the node is idle.
        fn run(&mut self, until: Time) {
            while self.now < until && !self.core.is_idle() {
                self.core.handle_timeout(self.now);
                self.drain();
                while let Some(s) = self.core.poll_slice(self.now) {
                    self.queue.push_back(s);
                }
                // One executor: slices burn one after another, in order.
                if let Some(s) = self.queue.pop_front() {
                    let burned = (s.ns as f64 * self.overrun) as u64;
                    self.now += burned as f64 / (TS * 1e9);
                    self.core.on_burned(s, burned, self.now);
                } else {
                    let t = self.core.poll_timeout().expect("busy node has a timer");
                    assert!(
                        t >= self.now - 1e-9,
                        "timer in the past: {t} < {}",
                        self.now
                    );
                    self.now = t.max(self.now);
                }
                self.drain();
            }
        }

        fn burned(&self) -> Vec<u64> {
            self.core
                .telemetry()
                .parts
                .iter()
                .map(|p| p.burned_ns)
                .collect()
        }
    }

    fn fractions(v: &[u64]) -> Vec<f64> {
        let total: u64 = v.iter().sum();
        v.iter().map(|&b| b as f64 / total as f64).collect()
    }

    /// The last completion of `n` parts of 1 ms each on a node of
    /// capacity 0.25 (time scale 1e-3: 250 ns of CPU each), placed
    /// `every` trace s apart, with a minimum slice of 10 us (the debt a
    /// node may run into before it waits: 0.04 trace s of its time).
    fn last_of_short_parts(n: u64, every: f64) -> f64 {
        let mut c = cfg(SpareRule::Proportional);
        c.min_slice = Duration::from_micros(10);
        let core = NodeEngine::new(node(0.25), c).unwrap();
        let mut sim = Sim::new(core);
        for id in 1..=n {
            let t = (id - 1) as f64 * every;
            sim.run(t);
            sim.now = sim.now.max(t);
            sim.core
                .place(part(id, 0.001, 0.001, 100.0), sim.now)
                .unwrap();
        }
        sim.run(1e3);
        let ends: Vec<f64> = sim
            .events
            .iter()
            .filter_map(|e| match e {
                NodeEvent::Completed(c) => Some(c.finished_at),
                _ => None,
            })
            .collect();
        assert_eq!(ends.len() as u64, n);
        ends.into_iter().fold(0.0, f64::max)
    }

    /// Parts of a slice or less each: every one borrows its only slice,
    /// and the node must pay that back even though the part is gone. 200
    /// parts of 1 ms need 0.2 s of the node's time; it may finish them
    /// one allowance (0.04 s) early, no more. Before the node kept the
    /// debts of ended parts, each part left its debt behind and the pretend
    /// executor ran them back to back at a whole core, 4x the capacity:
    /// the last ended at 0.05 s.
    #[test]
    fn a_stream_of_short_parts_runs_at_the_nodes_capacity() {
        for every in [0.0, 0.0005] {
            let last = last_of_short_parts(200, every);
            assert!(
                (0.155..0.21).contains(&last),
                "parts every {every} s: last ended at {last} s"
            );
        }
        // Arriving slower than the node runs them, each runs at once.
        let last = last_of_short_parts(50, 0.002);
        assert!(
            (0.098..0.1005).contains(&last),
            "parts every 2 ms: last ended at {last} s"
        );
    }

    #[test]
    fn idle_node_needs_no_timer() {
        let core = NodeEngine::new(node(0.5), cfg(SpareRule::Proportional)).unwrap();
        assert_eq!(core.poll_timeout(), None);
    }

    #[test]
    fn fixed_targets_are_delivered_in_cpu_time() {
        // q = E / D with D = 10_000: 0.5, 0.3, 0.2 stay constant while each
        // part gets exactly q (d/dt rem/rd = 0 when the share equals q).
        let mut core = NodeEngine::new(node(1.0), cfg(SpareRule::Idle)).unwrap();
        for (id, q) in [(1, 0.5), (2, 0.3), (3, 0.2)] {
            core.place(part(id, q * 10_000.0, 1e6, 10_000.0), 0.0)
                .unwrap();
        }
        let mut sim = Sim::new(core);
        sim.overrun = 1.07; // burns overshoot; the credit pays it back
        sim.run(2_000.0);
        let f = fractions(&sim.burned());
        for (got, want) in f.iter().zip([0.5, 0.3, 0.2]) {
            assert!((got - want).abs() < 0.005, "{f:?}");
        }
        // One slice per part per period, roughly: 2 s real / 10 ms x 3.
        let slices = sim.core.telemetry().slices;
        assert!((300..=700).contains(&slices), "{slices} slices");
    }

    /// `slow` and `hang` of one node (`set_rate`), the simulator's model
    /// (docs/faults.md): 1000 s of work from 0 at capacity 0.25; half
    /// the rate from 100 to 500 (100 done by 100, 200 more by 500), held
    /// still from 600 to 700 (100 more by 600, none until 700), so the
    /// 600 left end at 1300 instead of 1000.
    #[test]
    fn a_slowed_node_earns_its_factor_and_a_held_one_nothing() {
        let mut core = NodeEngine::new(node(0.25), cfg(SpareRule::Proportional)).unwrap();
        core.place(part(1, 1000.0, 1000.0, 1e6), 0.0).unwrap();
        let mut sim = Sim::new(core);
        sim.run(100.0);
        let t = sim.now;
        sim.core.set_rate(0.5, t);
        sim.run(500.0);
        let t = sim.now;
        sim.core.set_rate(1.0, t);
        sim.run(600.0);
        let (t, before) = (sim.now, sim.burned()[0]);
        sim.core.set_rate(0.0, t);
        assert_eq!(sim.core.poll_slice(t), None, "a held node starts no slice");
        sim.run(700.0);
        assert_eq!(sim.burned()[0], before, "a held node burns nothing");
        let t = sim.now;
        sim.core.set_rate(1.0, t);
        sim.run(1e6);
        let Some(NodeEvent::Completed(done)) = sim
            .events
            .iter()
            .find(|e| matches!(e, NodeEvent::Completed(_)))
        else {
            panic!("no completion")
        };
        // Up to one quantum (10 trace s here) ahead of the rate, as in
        // `small_capacity_node_burns_its_fraction`.
        assert!(
            done.finished_at >= 1289.0 && done.finished_at < 1303.0,
            "{}",
            done.finished_at
        );
    }

    #[test]
    fn small_capacity_node_burns_its_fraction() {
        let mut core = NodeEngine::new(node(0.25), cfg(SpareRule::Proportional)).unwrap();
        core.place(part(1, 100.0, 100.0, 1e6), 0.0).unwrap();
        let mut sim = Sim::new(core);
        sim.run(1e6);
        let done = match sim
            .events
            .iter()
            .find(|e| matches!(e, NodeEvent::Completed(_)))
        {
            Some(NodeEvent::Completed(c)) => c.clone(),
            _ => panic!("no completion"),
        };
        // 100 trace s of work at capacity 0.25 = 25 ms of CPU at ts 1e-3,
        // spread over 100 trace s of node time (the pretend executor idles
        // between slices). The node may run up to one quantum (2.5 ms of
        // CPU = 10 trace s here) ahead of its capacity, never more.
        assert!(
            (done.burned_ns as f64 - 25e6).abs() < 1e5,
            "{}",
            done.burned_ns
        );
        assert!(
            done.finished_at >= 89.9 && done.finished_at < 103.0,
            "{}",
            done.finished_at
        );
    }

    #[test]
    fn long_part_outlives_its_estimate_and_short_part_frees_its_share() {
        let mut core = NodeEngine::new(node(1.0), cfg(SpareRule::Proportional)).unwrap();
        // Part 1 needs 3x its estimate; part 2 finishes at a tenth of it.
        core.place(part(1, 100.0, 300.0, 10_000.0), 0.0).unwrap();
        core.place(part(2, 1000.0, 100.0, 10_000.0), 0.0).unwrap();
        let mut sim = Sim::new(core);
        sim.run(1e5);
        assert!(sim.core.is_idle());
        let reasons: Vec<_> = sim
            .events
            .iter()
            .filter_map(|e| match e {
                NodeEvent::SharesChanged { reason, shares, .. } => Some((*reason, shares.clone())),
                _ => None,
            })
            .collect();
        let done: Vec<_> = sim
            .events
            .iter()
            .filter_map(|e| match e {
                NodeEvent::Completed(c) => Some((c.part_id, c.finished_at)),
                _ => None,
            })
            .collect();
        assert_eq!(done.len(), 2);
        assert_eq!(done[0].0, 2, "short part finishes first: {done:?}");
        // Part 2 finished -> part 1 alone gets the whole node.
        let after = reasons
            .iter()
            .find(|(r, _)| *r == ShareReason::Finished)
            .unwrap();
        assert_eq!(after.1, vec![(1, 1.0)]);
        // Part 1 used up its estimate, became overdue and still finished,
        // having burned its actual 300 s of work.
        assert!(reasons.iter().any(|(r, _)| *r == ShareReason::EstimateUsed));
        let total: u64 = sim.burned().iter().sum();
        assert!((total as f64 - 400e6).abs() < 1e5, "{total}");
        assert!(done[1].1 >= 400.0 && done[1].1 < 405.0, "{done:?}");
    }

    #[test]
    fn withdrawn_part_stops_burning_and_the_others_are_replanned() {
        let mut core = NodeEngine::new(node(1.0), cfg(SpareRule::Proportional)).unwrap();
        // q 0.5 and 0.3; proportional spare: 0.625 and 0.375.
        core.place(part(1, 5_000.0, 1e6, 10_000.0), 0.0).unwrap();
        core.place(part(2, 3_000.0, 1e6, 10_000.0), 0.0).unwrap();
        let mut sim = Sim::new(core);
        sim.run(1_000.0);
        let t = sim.now;
        let burned_1 = sim.core.withdraw(1, t).expect("part 1 is on the node");
        assert_eq!(sim.core.withdraw(1, t), None, "withdrawn only once");
        assert_eq!(sim.core.withdraw(9, t), None, "unknown part");
        sim.drain();
        // Re-planned by the rule for part 2 alone: the whole node.
        let last = sim.events.iter().rev().find_map(|e| match e {
            NodeEvent::SharesChanged { reason, shares, .. } => Some((*reason, shares.clone())),
            _ => None,
        });
        assert_eq!(last, Some((ShareReason::Withdrawn, vec![(2, 1.0)])));
        let before_2 = sim.burned()[1];
        sim.run(t + 1_000.0);
        // Part 1 burned nothing more (a slice of it still queued only
        // frees its slot); part 2 got the node's capacity: 1000 trace s
        // x 1 core = 1 s of CPU at time scale 1e-3.
        let b = sim.burned();
        assert_eq!(b[0], burned_1);
        let gained = (b[1] - before_2) as f64;
        assert!((gained - 1e9).abs() < 0.02e9, "{gained}");
        assert!(!sim
            .events
            .iter()
            .any(|e| matches!(e, NodeEvent::Completed(c) if c.part_id == 1)));
    }

    #[test]
    fn shares_follow_job_control_as_deadlines_approach() {
        let mut core = NodeEngine::new(node(1.0), cfg(SpareRule::Proportional)).unwrap();
        // Part 1 cannot meet its deadline (q > 1): it reaches it on-track,
        // turns overdue and shares the overdue pool; part 2 then gets q.
        core.place(part(1, 200.0, 250.0, 150.0), 0.0).unwrap();
        core.place(part(2, 500.0, 500.0, 5_000.0), 0.0).unwrap();
        let mut sim = Sim::new(core);
        sim.run(1e6);
        let changes: Vec<_> = sim
            .events
            .iter()
            .filter_map(|e| match e {
                NodeEvent::SharesChanged {
                    at, reason, shares, ..
                } => Some((*at, *reason, shares.clone())),
                _ => None,
            })
            .collect();
        let (at, _, shares) = changes
            .iter()
            .find(|c| c.1 == ShareReason::DeadlineReached)
            .unwrap_or_else(|| panic!("{changes:?}"));
        // Seen at the end of the slice that crossed it (<= max_slice, 10
        // trace s here) at the latest; the real node's timer is exact-ish.
        assert!((150.0..160.0).contains(at), "{at}");
        // Part 2 has done about 150 x its share so far; its q is rem / rd,
        // and part 1 (overdue) gets the rest of the node.
        let q2 = shares[1].1;
        assert!((shares[0].1 + q2 - 1.0).abs() < 1e-9, "{shares:?}");
        assert!(q2 > 0.05 && q2 < 0.2, "{shares:?}");
    }

    #[test]
    fn shares_equal_the_rule_on_the_same_state_at_every_event() {
        // Check directly: after each event, the core's shares equal the rule
        // applied to the core's own state at that instant.
        let mut core = NodeEngine::new(node(1.0), cfg(SpareRule::Proportional)).unwrap();
        core.place(part(1, 200.0, 250.0, 300.0), 0.0).unwrap();
        core.place(part(2, 100.0, 50.0, 3_000.0), 0.0).unwrap();
        core.place(part(3, 400.0, 400.0, 2_000.0), 0.0).unwrap();
        while core.poll_event().is_some() {}
        let mut now = 0.0;
        let mut events = 0;
        let mut queue = VecDeque::new();
        while !core.is_idle() {
            core.handle_timeout(now);
            while let Some(s) = core.poll_slice(now) {
                queue.push_back(s);
            }
            if let Some(s) = queue.pop_front() {
                now += s.ns as f64 / (TS * 1e9);
                core.on_burned(s, s.ns, now);
            } else {
                now = core.poll_timeout().unwrap().max(now);
                continue;
            }
            while let Some(e) = core.poll_event() {
                if let NodeEvent::SharesChanged { at, shares, .. } = e {
                    assert_eq!(at, now);
                    let mut want = Vec::new();
                    job_control_shares(&core.share_inputs(now), SpareRule::Proportional, &mut want);
                    let got: Vec<f64> = shares.iter().map(|s| s.1).collect();
                    assert_eq!(got, want);
                    events += 1;
                }
            }
        }
        assert!(events >= 3, "{events}");
    }

    #[test]
    fn backlog_is_forgiven_in_proportion_to_shares() {
        let mut core = NodeEngine::new(node(1.0), cfg(SpareRule::Idle)).unwrap();
        core.place(part(1, 5000.0, 1e6, 10_000.0), 0.0).unwrap();
        core.place(part(2, 5000.0, 1e6, 10_000.0), 0.0).unwrap();
        // Nothing burned for a whole second of real time (host starved).
        core.handle_timeout(1000.0);
        let t = core.telemetry();
        assert!(t.forgiven_ns > 0.9e9, "{}", t.forgiven_ns);
        let jitter = t.tick_jitter_ns.max();
        assert!(jitter > 800_000_000, "{jitter}");
    }

    #[test]
    fn one_slice_queues_behind_and_an_orphan_only_frees_its_slot() {
        let mut core = NodeEngine::new(node(1.0), cfg(SpareRule::Proportional)).unwrap();
        // 10.3 ms of CPU at time scale 1e-3 and capacity 1.
        core.place(part(1, 100.0, 10.3, 1e6), 0.0).unwrap();
        let first = core.poll_slice(0.0).unwrap();
        let second = core.poll_slice(0.0).expect("one slice queues behind");
        assert_eq!((first.ns, second.ns), (10_000_000, 300_000));
        assert!(core.poll_slice(0.0).is_none(), "never more than one queued");
        // The first burn overshoots past the part's actual work: it is done,
        // and the queued slice comes back for a part that has left.
        core.on_burned(first, 10_400_000, 10.4);
        let done: Vec<_> = std::iter::from_fn(|| core.poll_event())
            .filter(|e| matches!(e, NodeEvent::Completed(_)))
            .collect();
        assert_eq!(done.len(), 1);
        assert!(core.is_idle());
        core.on_burned(second, 300_000, 10.7);
        assert!(core.poll_event().is_none());
        // Its slot is free again: a new part runs at once.
        core.place(part(2, 100.0, 5.0, 1e6), 11.0).unwrap();
        assert!(core.poll_slice(11.0).is_some());
    }

    /// Liveness under a shared, late, preempted executor: every part placed
    /// on a node completes, whatever the capacity, time scale, slice
    /// overshoot, queueing delay in the pool, timer lateness and the
    /// mix of overrunning, underrunning and tiny parts. The executor is one
    /// FIFO shared with other nodes (a random delay before each slice
    /// starts), burns what it is asked plus an overshoot, in up to three
    /// times that in wall time (preemption), and its report arrives late.
    /// The actor loop is the real one's: after every input, due timeouts,
    /// then slices until none, then the one timer.
    #[test]
    fn every_part_completes_under_a_shared_late_executor() {
        for seed in 1..=500u64 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let capacity = *[0.0002, 0.003, 0.25, 1.0, 1.7].choose(&mut rng).unwrap();
            let ts = *[0.1, 0.01, 1e-3].choose(&mut rng).unwrap();
            let mut c = cfg(*[SpareRule::Proportional, SpareRule::Idle]
                .choose(&mut rng)
                .unwrap());
            c.time_scale = ts;
            c.progress_ticks = *[0, 3].choose(&mut rng).unwrap();
            let mut core = NodeEngine::new(node(capacity), c).unwrap();
            let real = |dt_ns: f64| dt_ns / (ts * 1e9);
            // Parts to place, by arrival time.
            let mut arrivals: Vec<(f64, PartSpec)> = Vec::new();
            let mut t = 0.0;
            for id in 1..=*[1u64, 3, 12].choose(&mut rng).unwrap() {
                t += rng.random_range(0.0..30.0);
                let est = *[1e-6, 3e-5, 0.5, 20.0, 100.5].choose(&mut rng).unwrap()
                    * rng.random_range(0.5..1.5);
                let actual = est * *[1.0, 1.0, 0.3, 1.4, 1e-4].choose(&mut rng).unwrap();
                let deadline = t + est * rng.random_range(0.9..5.0);
                arrivals.push((t, part(id, est, actual, deadline)));
            }
            let n = arrivals.len();
            let mut now: f64 = 0.0;
            let mut free_at: f64 = 0.0; // when the shared executor is next free
            let mut reports: Vec<(f64, Slice, u64)> = Vec::new();
            let mut timer: Option<f64> = None;
            let mut done = 0;
            let horizon = 1e6;
            while done < n {
                // The earliest input: a placement, a report or the timer.
                let next_place = arrivals.first().map(|a| a.0);
                let next_report = reports.iter().map(|r| r.0).fold(f64::INFINITY, f64::min);
                let next = [
                    next_place.unwrap_or(f64::INFINITY),
                    next_report,
                    timer.unwrap_or(f64::INFINITY),
                ]
                .into_iter()
                .fold(f64::INFINITY, f64::min);
                assert!(
                    next.is_finite() && next < horizon,
                    "seed {seed}: {done} of {n} parts completed and nothing more will happen \
                     (capacity {capacity}, time scale {ts}, now {now}): {:#?}",
                    core.parts
                );
                now = next.max(now);
                if next_place == Some(next) {
                    let (_, p) = arrivals.remove(0);
                    core.place(p, now).unwrap();
                } else if next_report == next {
                    let k = reports.iter().position(|r| r.0 == next).unwrap();
                    let (_, s, burned) = reports.remove(k);
                    core.on_burned(s, burned, now);
                }
                // (Otherwise the timer fired.) The actor's drive().
                core.handle_timeout(now);
                while let Some(s) = core.poll_slice(now) {
                    let burned = s.ns + rng.random_range(0..20_000u64);
                    let start = free_at.max(now) + real(rng.random_range(0.0..5e6));
                    let end = start + real(burned as f64 * rng.random_range(1.0..3.0));
                    free_at = end;
                    reports.push((end + real(rng.random_range(0.0..1e6)), s, burned));
                }
                while let Some(e) = core.poll_event() {
                    if matches!(e, NodeEvent::Completed(_)) {
                        done += 1;
                    }
                }
                timer = core
                    .poll_timeout()
                    .map(|t| t.max(now) + real(rng.random_range(0.0..2e6)));
            }
            assert!(core.is_idle(), "seed {seed}");
        }
    }

    #[test]
    fn placement_is_checked() {
        let mut core = NodeEngine::new(node(1.0), cfg(SpareRule::Idle)).unwrap();
        core.place(part(1, 10.0, 10.0, 100.0), 0.0).unwrap();
        assert!(matches!(
            core.place(part(1, 10.0, 10.0, 100.0), 0.0),
            Err(PlaceError::Duplicate { .. })
        ));
        let mut big = part(2, 10.0, 10.0, 100.0);
        big.memory_kb = 5000;
        let e = core.place(big, 0.0).unwrap_err().to_string();
        assert_eq!(e, "node 3: part 2 needs 5000 KB of memory, 1000 KB free");
        assert!(core.place(part(4, -1.0, 10.0, 100.0), 0.0).is_err());
        let _ = Duration::ZERO;
    }
}
