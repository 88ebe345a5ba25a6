//! Node state as the policies see it, and the fluid model of a time-shared
//! node that the simulator (and LibraRisk's projection) integrate exactly.
//!
//! [`NodeState`] is the cluster snapshot a policy decides on: per node, its
//! resources and the parts it holds with their estimated work left and
//! deadlines. The live manager builds it from node reports; the simulator
//! keeps it inside each [`FluidNode`]. Neither the actual runtime of a part
//! nor anything else a policy must not know is in it.
//!
//! [`FluidNode`] runs the Job Control rule of [`crate::share`] between
//! node-local events (a part placed, a part finishing its actual work, an
//! on-track part reaching its deadline or using up its estimate). Between
//! events shares are constant, so progress is linear and the next event time
//! is found in closed form: no time steps, no integration error.

use serde::{Deserialize, Serialize};

use crate::job::{DeadlineType, JobId, JobSpec};
use crate::share::{job_control_shares, ShareInput, SpareRule};
use crate::time::{Time, DEADLINE_TOLERANCE, TIME_EPS};

/// A node's fixed description.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeSpec {
    /// Index of the node in the cluster (0-based; ties go to lower indices).
    pub id: usize,
    /// Processor speed: 1.0 is the reference node runtimes were measured on;
    /// a job needs RE / speed of processor time here.
    pub speed: f64,
    /// Memory (KB).
    pub memory_kb: u64,
    /// Disk (MB).
    pub disk_mb: u64,
}

/// One part of a job placed on a node, as policies see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartView {
    /// The job this part belongs to.
    pub job: JobId,
    /// Estimated processor time on this node (RE / speed).
    pub est_cpu: f64,
    /// Processor time done so far on this node.
    pub cpu_done: f64,
    /// Absolute deadline DT of the job.
    pub deadline: Time,
    /// Memory held (KB).
    pub memory_kb: u64,
    /// Disk held (MB).
    pub disk_mb: u64,
    /// Return of the job when on time (LibraSLA: B / RE / D); 0 for other
    /// policies. The share rule hands spare capacity by it.
    pub ret: f64,
    /// Return lost per second of delay past the deadline (LibraSLA:
    /// PR / RE / D); 0 for other policies.
    #[serde(default)]
    pub ret_penalty: f64,
    /// Whether the job has a hard deadline ([`crate::share::SpareRule::Sla`]
    /// never delays such a part to make room for others).
    #[serde(default)]
    pub hard: bool,
}

/// What a policy says one part of a job is worth to the node holding it
/// (see [`PartView::ret`] and [`PartView::ret_penalty`]).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct PartValue {
    /// Return when on time.
    pub ret: f64,
    /// Return lost per second of delay.
    pub ret_penalty: f64,
}

impl PartView {
    /// Remaining estimated processor time (may be <= 0 once past the
    /// estimate).
    pub fn rem(&self) -> f64 {
        self.est_cpu - self.cpu_done
    }

    /// What the share rule needs at `now`. Values within [`TIME_EPS`] of
    /// zero are snapped to zero, so that a part that is a rounding error
    /// away from its deadline or estimate counts as overdue and the event
    /// loops below always make progress.
    pub fn share_input(&self, now: Time) -> ShareInput {
        let snap = |v: f64| if v <= TIME_EPS { 0.0 } else { v };
        ShareInput {
            rem: snap(self.rem()),
            rd: snap(self.deadline - now),
            ret: self.ret,
            hard: self.hard,
        }
    }
}

/// A node and the parts it holds: the snapshot a policy decides on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeState {
    /// The node.
    pub spec: NodeSpec,
    /// Parts placed on it and not yet finished.
    pub parts: Vec<PartView>,
}

impl NodeState {
    /// An empty node.
    pub fn new(spec: NodeSpec) -> NodeState {
        NodeState {
            spec,
            parts: Vec::new(),
        }
    }

    /// Where the part of job `job` is in `parts`. Parts are appended in
    /// the order they are decided, which for an admission policy is the
    /// order of the jobs' ids, so a binary search finds it; parts held in
    /// another order (a queue's backfilled jobs) are found by a scan. A
    /// node may hold tens of thousands of parts, and a report names many.
    pub fn find_part(&self, job: JobId) -> Option<usize> {
        self.parts
            .binary_search_by_key(&job, |p| p.job)
            .ok()
            .or_else(|| self.parts.iter().position(|p| p.job == job))
    }

    /// Sum of the required shares of the on-track parts at `now` (Libra's
    /// load; overdue parts count 0).
    pub fn required_share(&self, now: Time) -> f64 {
        self.parts
            .iter()
            .map(|p| p.share_input(now).required())
            .sum()
    }

    /// Memory not held by any part.
    pub fn free_memory_kb(&self) -> u64 {
        let used: u64 = self.parts.iter().map(|p| p.memory_kb).sum();
        self.spec.memory_kb.saturating_sub(used)
    }

    /// Disk not held by any part.
    pub fn free_disk_mb(&self) -> u64 {
        let used: u64 = self.parts.iter().map(|p| p.disk_mb).sum();
        self.spec.disk_mb.saturating_sub(used)
    }

    /// Whether the node has the memory and disk one part of `job` needs.
    pub fn has_resources(&self, job: &JobSpec) -> bool {
        if job.resources.memory_kb == 0 && job.resources.disk_mb == 0 {
            // Nothing to check; skipping the walk over the parts matters on
            // large clusters, where this runs for every node per decision.
            return true;
        }
        self.free_memory_kb() >= job.resources.memory_kb
            && self.free_disk_mb() >= job.resources.disk_mb
    }

    /// Estimated processor time of one part of `job` on this node.
    pub fn est_cpu(&self, job: &JobSpec) -> f64 {
        job.estimate() / self.spec.speed
    }

    /// The part `job` would place here, with nothing done yet.
    pub fn new_part(&self, job: &JobSpec, ret: f64) -> PartView {
        self.new_valued_part(
            job,
            PartValue {
                ret,
                ret_penalty: 0.0,
            },
        )
    }

    /// The part `job` would place here, worth `value` to the node.
    pub fn new_valued_part(&self, job: &JobSpec, value: PartValue) -> PartView {
        PartView {
            job: job.id,
            est_cpu: self.est_cpu(job),
            cpu_done: 0.0,
            deadline: job.deadline_abs(),
            memory_kb: job.resources.memory_kb,
            disk_mb: job.resources.disk_mb,
            ret: value.ret,
            ret_penalty: value.ret_penalty,
            hard: job.qos.deadline_type == DeadlineType::Hard,
        }
    }
}

/// A part that finished its actual work.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PartFinished {
    /// The part's job.
    pub job: JobId,
    /// The node it ran on.
    pub node: usize,
    /// When it finished.
    pub at: Time,
}

/// The execution side of a time-shared node: what policies must not see
/// (actual work) and the current shares. Kept apart from [`NodeState`] so a
/// whole cluster's states form one slice a policy can read.
#[derive(Debug, Clone)]
pub struct FluidExtra {
    /// Actual processor time each part needs (parallel to the parts).
    actual_cpu: Vec<f64>,
    /// Current shares (parallel to the parts), valid until the next event.
    shares: Vec<f64>,
    now: Time,
    /// Processor time handed to parts since the start (for utilisation).
    busy: f64,
    /// Work done per unit of share and time: 1 normally, the factor of a
    /// `slow` fault, 0 while the node is stopped (crash, hang). Multiplying
    /// by exactly 1.0 changes no bit, so fault-free runs are unchanged.
    rate: f64,
}

impl Default for FluidExtra {
    fn default() -> Self {
        FluidExtra {
            actual_cpu: Vec::new(),
            shares: Vec::new(),
            now: 0.0,
            busy: 0.0,
            rate: 1.0,
        }
    }
}

impl FluidExtra {
    /// An idle node's execution side at time `now`.
    pub fn starting_at(now: Time) -> FluidExtra {
        FluidExtra {
            now,
            ..FluidExtra::default()
        }
    }

    /// Processor time given to parts so far.
    pub fn busy_time(&self) -> f64 {
        self.busy
    }

    /// Current shares, parallel to the node's parts.
    pub fn shares(&self) -> &[f64] {
        &self.shares
    }
}

/// Scratch space reused across calls so the hot loop does not allocate.
#[derive(Debug, Clone, Default)]
pub struct FluidScratch {
    inputs: Vec<ShareInput>,
}

fn recompute(state: &NodeState, x: &mut FluidExtra, rule: SpareRule, s: &mut FluidScratch) {
    let now = x.now;
    s.inputs.clear();
    s.inputs
        .extend(state.parts.iter().map(|p| p.share_input(now)));
    job_control_shares(&s.inputs, rule, &mut x.shares);
}

/// Time from now to the next node-local event, if any part is running.
fn next_event_in(state: &NodeState, x: &FluidExtra) -> Option<f64> {
    let mut best: Option<f64> = None;
    let mut consider = |dt: f64| {
        if best.is_none_or(|b| dt < b) {
            best = Some(dt);
        }
    };
    for ((p, &a), &actual) in state.parts.iter().zip(&x.shares).zip(&x.actual_cpu) {
        let input = p.share_input(x.now);
        // Work per time at this share (`a` itself unless a fault slowed
        // the node; the caller never integrates a stopped node).
        let a = a * x.rate;
        if a > 0.0 {
            consider(((actual - p.cpu_done) / a).max(0.0));
            if input.on_track() {
                consider(input.rem / a);
            }
        }
        // A part waiting with no share (SpareRule::Sla) still changes the
        // shares when its deadline passes.
        if input.on_track() {
            consider(input.rd);
        }
    }
    best
}

/// Places a part at the node's current time (advance first). The part
/// needs `actual_cpu` of processor time there to really finish.
pub fn fluid_place(
    state: &mut NodeState,
    x: &mut FluidExtra,
    part: PartView,
    actual_cpu: f64,
    rule: SpareRule,
    s: &mut FluidScratch,
) {
    state.parts.push(part);
    x.actual_cpu.push(actual_cpu);
    recompute(state, x, rule, s);
}

/// Advances a node to `t`, integrating progress exactly and recomputing
/// shares at every event on the way. Parts finishing at or before `t` are
/// removed and reported in `finished` (so completions at `t` are handled
/// before any arrival at `t`).
pub fn fluid_advance(
    state: &mut NodeState,
    x: &mut FluidExtra,
    t: Time,
    rule: SpareRule,
    s: &mut FluidScratch,
    finished: &mut Vec<PartFinished>,
) {
    fluid_advance_while(state, x, t, rule, s, finished, |_, _, _| true);
}

/// [`fluid_advance`], asking `go_on` after each of the node's own events
/// (with the parts still running, the node's time and every part finished
/// so far) whether to go on. Where it says no, the node stops there, at
/// the event, and this returns false; every step up to it is the very
/// step [`fluid_advance`] takes.
fn fluid_advance_while(
    state: &mut NodeState,
    x: &mut FluidExtra,
    t: Time,
    rule: SpareRule,
    s: &mut FluidScratch,
    finished: &mut Vec<PartFinished>,
    mut go_on: impl FnMut(&NodeState, Time, &[PartFinished]) -> bool,
) -> bool {
    if x.rate == 0.0 {
        // Stopped (a crash or hang fault): no progress, no events.
        x.now = x.now.max(t);
        return true;
    }
    while !state.parts.is_empty() && x.now < t {
        // Shares change only at this node's own events (a part placed,
        // finished, past its deadline or its estimate), as on a real node:
        // a stop at `t` that is no event here (an arrival elsewhere in the
        // cluster) leaves them as they are.
        let (step, at_event) = match next_event_in(state, x) {
            Some(dt) if dt <= t - x.now => (dt, true),
            _ => (t - x.now, false),
        };
        for (p, &a) in state.parts.iter_mut().zip(&x.shares) {
            p.cpu_done += a * x.rate * step;
            x.busy += a * x.rate * step;
        }
        x.now = if step == t - x.now { t } else { x.now + step };
        // Remove parts whose actual work is done (within rounding), keeping
        // placement order: the share rule's tie-breaks follow it.
        let mut k = 0;
        let before = state.parts.len();
        while k < state.parts.len() {
            if x.actual_cpu[k] - state.parts[k].cpu_done <= TIME_EPS {
                finished.push(PartFinished {
                    job: state.parts[k].job,
                    node: state.spec.id,
                    at: x.now,
                });
                state.parts.remove(k);
                x.actual_cpu.remove(k);
                x.shares.remove(k);
            } else {
                k += 1;
            }
        }
        if at_event || state.parts.len() != before {
            recompute(state, x, rule, s);
            if !go_on(state, x.now, finished) {
                return false;
            }
        }
    }
    if x.now < t {
        x.now = t;
    }
    true
}

/// Sets a node's work rate from its current time on (advance it first):
/// the capacity factor of a `slow` fault, 0 to stop it, 1 to restore it.
pub fn fluid_set_rate(
    state: &NodeState,
    x: &mut FluidExtra,
    rate: f64,
    rule: SpareRule,
    s: &mut FluidScratch,
) {
    x.rate = rate;
    recompute(state, x, rule, s);
}

/// Takes job `job`'s part off a node (cancelled or lost) at the node's
/// current time (advance it first); the others' shares are recomputed.
pub fn fluid_remove(
    state: &mut NodeState,
    x: &mut FluidExtra,
    job: JobId,
    rule: SpareRule,
    s: &mut FluidScratch,
) {
    let mut k = 0;
    while k < state.parts.len() {
        if state.parts[k].job == job {
            state.parts.remove(k);
            x.actual_cpu.remove(k);
            x.shares.remove(k);
        } else {
            k += 1;
        }
    }
    recompute(state, x, rule, s);
}

/// A whole time-shared cluster for the simulator: every node's state as
/// one slice (what policies read) plus the execution side.
#[derive(Debug, Clone)]
pub struct FluidCluster {
    /// What policies see, one per node.
    pub states: Vec<NodeState>,
    extras: Vec<FluidExtra>,
    scratch: FluidScratch,
    rule: SpareRule,
}

impl FluidCluster {
    /// Empty nodes at time `now`.
    pub fn new(specs: &[NodeSpec], rule: SpareRule, now: Time) -> FluidCluster {
        FluidCluster {
            states: specs.iter().cloned().map(NodeState::new).collect(),
            extras: specs
                .iter()
                .map(|_| FluidExtra {
                    now,
                    ..FluidExtra::default()
                })
                .collect(),
            scratch: FluidScratch::default(),
            rule,
        }
    }

    /// Advances every node to `t`.
    pub fn advance_to(&mut self, t: Time, finished: &mut Vec<PartFinished>) {
        for (st, x) in self.states.iter_mut().zip(&mut self.extras) {
            fluid_advance(st, x, t, self.rule, &mut self.scratch, finished);
        }
    }

    /// Places a part on node `k` at the cluster's current time.
    pub fn place(&mut self, k: usize, part: PartView, actual_cpu: f64) {
        fluid_place(
            &mut self.states[k],
            &mut self.extras[k],
            part,
            actual_cpu,
            self.rule,
            &mut self.scratch,
        );
    }
}

/// One time-shared node integrated exactly between events (a cluster of
/// one; used by LibraRisk's projection and in tests).
#[derive(Debug, Clone)]
pub struct FluidNode {
    /// What policies see.
    pub state: NodeState,
    /// The execution side.
    pub extra: FluidExtra,
    scratch: FluidScratch,
    rule: SpareRule,
}

impl FluidNode {
    /// An empty node at time `now`.
    pub fn new(spec: NodeSpec, rule: SpareRule, now: Time) -> FluidNode {
        FluidNode {
            state: NodeState::new(spec),
            extra: FluidExtra {
                now,
                ..FluidExtra::default()
            },
            scratch: FluidScratch::default(),
            rule,
        }
    }

    /// Places a part at the node's current time.
    pub fn place(&mut self, part: PartView, actual_cpu: f64) {
        fluid_place(
            &mut self.state,
            &mut self.extra,
            part,
            actual_cpu,
            self.rule,
            &mut self.scratch,
        );
    }

    /// Advances to `t`; see [`fluid_advance`].
    pub fn advance_to(&mut self, t: Time, finished: &mut Vec<PartFinished>) {
        fluid_advance(
            &mut self.state,
            &mut self.extra,
            t,
            self.rule,
            &mut self.scratch,
            finished,
        );
    }

    /// The node's current time.
    pub fn now(&self) -> Time {
        self.extra.now
    }

    /// Processor time given to parts so far.
    pub fn busy_time(&self) -> f64 {
        self.extra.busy
    }
}

/// The projection LibraRisk and LibraSLA decide on: when every part of
/// `node`, then `new` (if any), would finish if it were placed now and
/// every part then needed exactly its estimated work, under Job Control
/// rule `rule`. Writes one finish time per part, `new` last. A part with no
/// estimated work left (it ran past its estimate) is projected as finishing
/// now. The same fluid model as the simulator's nodes, run on estimates.
pub fn project_finishes(
    node: &NodeState,
    new: Option<&PartView>,
    now: Time,
    rule: SpareRule,
    out: &mut Vec<Time>,
) {
    project_finishes_with(node, new, now, rule, &mut Projection::default(), out);
}

/// Buffers a projection works in, kept by a policy between projections:
/// LibraRisk and LibraSLA project a node per candidate node per decision,
/// and a fresh fluid node for each cost several allocations.
#[derive(Debug, Clone)]
pub struct Projection {
    sim: FluidNode,
    done: Vec<PartFinished>,
    finish: Vec<Time>,
}

impl Projection {
    /// Runs the projection's fluid node from where [`projection_start`]
    /// set it, its finishes into `self.done`, asking `go_on` after each of
    /// its events as [`fluid_advance_while`] does: false where it stopped,
    /// true at the end of all the work. Every step up to a stop is the
    /// whole projection's.
    fn run_while(&mut self, go_on: impl FnMut(&NodeState, Time, &[PartFinished]) -> bool) -> bool {
        self.done.clear();
        let sim = &mut self.sim;
        fluid_advance_while(
            &mut sim.state,
            &mut sim.extra,
            Time::INFINITY,
            sim.rule,
            &mut sim.scratch,
            &mut self.done,
            go_on,
        )
    }
}

impl Default for Projection {
    fn default() -> Projection {
        let spec = NodeSpec {
            id: 0,
            speed: 1.0,
            memory_kb: 0,
            disk_mb: 0,
        };
        Projection {
            sim: FluidNode::new(spec, SpareRule::default(), 0.0),
            done: Vec::new(),
            finish: Vec::new(),
        }
    }
}

#[cfg(test)]
impl Projection {
    /// The instant where the last projection in these buffers stopped on
    /// a known spread; infinite when it ran to its end.
    pub(crate) fn stopped_at(&self) -> Time {
        self.sim.now()
    }
}

/// [`project_finishes`] in the buffers of `proj` (the same result; no
/// allocation once the buffers have grown).
pub fn project_finishes_with(
    node: &NodeState,
    new: Option<&PartView>,
    now: Time,
    rule: SpareRule,
    proj: &mut Projection,
    out: &mut Vec<Time>,
) {
    projection_start(node, new, now, rule, proj, out);
    proj.done.clear();
    proj.sim.advance_to(Time::INFINITY, &mut proj.done);
    for f in &proj.done {
        out[f.job as usize] = f.at;
    }
}

/// [`project_finishes_with`] for a part `new` that only counts on time:
/// stops at the first of the node's events more than
/// [`DEADLINE_TOLERANCE`] past `new`'s deadline with `new` still running,
/// and returns false there (`out` then holds the finishes known so far).
/// `new` finishes at that event or later, and float subtraction is
/// monotone, so [`delay_past`] of its finish is positive: it is late in
/// the whole projection. Otherwise the very projection
/// [`project_finishes_with`] makes (the same steps: `fluid_advance_while`),
/// and true.
pub fn project_finishes_unless_late(
    node: &NodeState,
    new: &PartView,
    now: Time,
    rule: SpareRule,
    proj: &mut Projection,
    out: &mut Vec<Time>,
) -> bool {
    projection_start(node, Some(new), now, rule, proj, out);
    // The fluid node knows a part by its index; the new part came last,
    // and a part's removal keeps the others' order, so while it runs it
    // is the last part.
    let id = node.parts.len() as JobId;
    let whole = proj.run_while(|running, t, _| {
        let late = t - new.deadline > DEADLINE_TOLERANCE;
        !(late && running.parts.last().is_some_and(|p| p.job == id))
    });
    for f in &proj.done {
        out[f.job as usize] = f.at;
    }
    whole
}

/// Sets `proj`'s fluid node to `node`'s parts and `new` at `now`, with
/// every part's finish in `out` at `now` (the finish of the parts with no
/// estimated work left, which are not put on the fluid node).
fn projection_start(
    node: &NodeState,
    new: Option<&PartView>,
    now: Time,
    rule: SpareRule,
    proj: &mut Projection,
    out: &mut Vec<Time>,
) {
    out.clear();
    // The state of a fresh FluidNode::new(node.spec, rule, now).
    let sim = &mut proj.sim;
    sim.state.spec.clone_from(&node.spec);
    sim.state.parts.clear();
    sim.extra.actual_cpu.clear();
    sim.extra.shares.clear();
    sim.extra.now = now;
    sim.extra.busy = 0.0;
    sim.rule = rule;
    for p in node.parts.iter().chain(new) {
        let k = out.len();
        out.push(now);
        if p.rem() > TIME_EPS {
            let mut q = p.clone();
            q.job = k as JobId; // index as identity
                                // Its actual work is taken to be exactly its estimate.
            sim.extra.actual_cpu.push(q.est_cpu);
            sim.state.parts.push(q);
        }
    }
    // One share computation for the whole set; the callers then run the
    // events in one call (the projection is on the hot path of every
    // LibraRisk and LibraSLA decision).
    recompute(&sim.state, &mut sim.extra, rule, &mut sim.scratch);
}

/// Delay past `deadline` of a finish at `finish` (0 within
/// [`DEADLINE_TOLERANCE`]).
pub fn delay_past(finish: Time, deadline: Time) -> Time {
    let late = finish - deadline;
    if late <= DEADLINE_TOLERANCE {
        0.0
    } else {
        late
    }
}

/// LibraRisk's projection: the deadline delays every part on `node` would
/// see if `new` were placed there now and every part then needed exactly
/// its estimated work (Job Control rule `rule`; see [`project_finishes`]).
///
/// Returns `None` when some part's deadline has already passed (such a node
/// is never zero-risk), else `deadline_delay_k = (delay_k + rd_k) / rd_k`
/// for every part, the new one last. A part that ran past its estimate but
/// not its deadline is projected as finishing now (deadline delay 1).
pub fn project_deadline_delays(
    node: &NodeState,
    new: &PartView,
    now: Time,
    rule: SpareRule,
    out: &mut Vec<f64>,
) -> Option<()> {
    project_deadline_delays_with(node, new, now, rule, &mut Projection::default(), out)
}

/// [`project_deadline_delays`] in the buffers of `proj`.
pub fn project_deadline_delays_with(
    node: &NodeState,
    new: &PartView,
    now: Time,
    rule: SpareRule,
    proj: &mut Projection,
    out: &mut Vec<f64>,
) -> Option<()> {
    out.clear();
    if node
        .parts
        .iter()
        .chain(std::iter::once(new))
        .any(|p| p.deadline - now <= TIME_EPS)
    {
        return None;
    }
    let mut finish = std::mem::take(&mut proj.finish);
    project_finishes_with(node, Some(new), now, rule, proj, &mut finish);
    out.extend(
        node.parts
            .iter()
            .chain(std::iter::once(new))
            .zip(&finish)
            .map(|(p, &f)| deadline_delay(f, p.deadline, now)),
    );
    proj.finish = finish;
    Some(())
}

/// A part's deadline delay, `(delay + rd) / rd`, for a finish at `finish`
/// projected at `now`. It never decreases as `finish` grows, in floats too
/// (each operation is monotone and `rd > 0`).
fn deadline_delay(finish: Time, deadline: Time, now: Time) -> f64 {
    let rd = deadline - now;
    (delay_past(finish, deadline) + rd) / rd
}

/// [`project_deadline_delays_with`] that stops as soon as two of the
/// deadline delays are known to lie more than `spread` apart, and then
/// returns `Some(true)` (with `out` cleared). Known: a finished part's
/// delay, and at least the delay a running part would have if it finished
/// at the projection's current time (it finishes then or later). The
/// delays known are bit for bit those of the whole projection, since the
/// projection runs the same steps up to where it stops. Else, as
/// [`project_deadline_delays_with`], with `Some(false)`.
pub fn project_deadline_delays_spread(
    node: &NodeState,
    new: &PartView,
    now: Time,
    rule: SpareRule,
    proj: &mut Projection,
    spread: f64,
    out: &mut Vec<f64>,
) -> Option<bool> {
    out.clear();
    let parts = || node.parts.iter().chain(std::iter::once(new));
    if parts().any(|p| p.deadline - now <= TIME_EPS) {
        return None;
    }
    let mut finish = std::mem::take(&mut proj.finish);
    projection_start(node, Some(new), now, rule, proj, &mut finish);
    // The deadlines by part (the fluid node knows a part by its index),
    // and the least and most delays of the parts finished, starting with
    // the ones that have no estimated work left (finished at `now`).
    out.extend(parts().map(|p| p.deadline));
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for (p, &d) in parts().zip(out.iter()) {
        if p.rem() <= TIME_EPS {
            let r = deadline_delay(now, d, now);
            (lo, hi) = (lo.min(r), hi.max(r));
        }
    }
    let mut seen = 0;
    let whole = proj.run_while(|running, t, done| {
        for f in &done[seen..] {
            let r = deadline_delay(f.at, out[f.job as usize], now);
            (lo, hi) = (lo.min(r), hi.max(r));
        }
        seen = done.len();
        let top = running
            .parts
            .iter()
            .map(|p| deadline_delay(t, p.deadline, now))
            .fold(hi, f64::max);
        // Stops only on a proven spread: a NaN goes on.
        let apart = top - lo > spread;
        !apart
    });
    for f in &proj.done {
        finish[f.job as usize] = f.at;
    }
    out.clear();
    if whole {
        out.extend(
            parts()
                .zip(&finish)
                .map(|(p, &f)| deadline_delay(f, p.deadline, now)),
        );
    }
    proj.finish = finish;
    Some(!whole)
}

/// Population standard deviation, two-pass (the paper's
/// sqrt(mean(x^2) - mean^2) cancels badly when all values are near 1).
pub fn population_sd(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    (xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> NodeSpec {
        NodeSpec {
            id: 0,
            speed: 1.0,
            memory_kb: 1024,
            disk_mb: 10,
        }
    }

    fn part(job: JobId, est: f64, deadline: Time) -> PartView {
        PartView {
            job,
            est_cpu: est,
            cpu_done: 0.0,
            deadline,
            memory_kb: 0,
            disk_mb: 0,
            ret: 0.0,
            ret_penalty: 0.0,
            hard: false,
        }
    }

    #[test]
    fn two_parts_share_proportionally_and_finish_exactly() {
        // A: est = actual = 20, D = 100 (q 0.2); B: est = actual = 30,
        // D = 100 (q 0.3). Proportional spare: shares 0.4/0.6, both finish
        // at t = 50 (20/0.4 = 30/0.6 = 50).
        let mut n = FluidNode::new(spec(), SpareRule::Proportional, 0.0);
        n.place(part(1, 20.0, 100.0), 20.0);
        n.place(part(2, 30.0, 100.0), 30.0);
        let mut fin = Vec::new();
        n.advance_to(1000.0, &mut fin);
        assert_eq!(fin.len(), 2);
        for f in &fin {
            assert!((f.at - 50.0).abs() < 1e-9, "{f:?}");
        }
        assert!((n.busy_time() - 50.0).abs() < 1e-9);
    }

    /// A `slow` fault's rate scales the work done and the processor time
    /// counted alike: alone on the node (proportional spare: share 1), a
    /// part of 20 s of work at rate 0.5 finishes at 40, and the node gave
    /// 20 s of processor time, not 40 or 80.
    #[test]
    fn a_slowed_node_counts_the_work_it_did() {
        let mut n = FluidNode::new(spec(), SpareRule::Proportional, 0.0);
        n.place(part(1, 20.0, 100.0), 20.0);
        fluid_set_rate(
            &n.state,
            &mut n.extra,
            0.5,
            SpareRule::Proportional,
            &mut n.scratch,
        );
        let mut fin = Vec::new();
        n.advance_to(10.0, &mut fin);
        assert!(fin.is_empty());
        assert!((n.state.parts[0].cpu_done - 5.0).abs() < 1e-9);
        assert!((n.busy_time() - 5.0).abs() < 1e-9, "{}", n.busy_time());
        n.advance_to(1000.0, &mut fin);
        assert_eq!(fin.len(), 1);
        assert!((fin[0].at - 40.0).abs() < 1e-9, "{:?}", fin[0]);
        assert!((n.busy_time() - 20.0).abs() < 1e-9, "{}", n.busy_time());
    }

    #[test]
    fn idle_rule_finishes_at_the_deadline() {
        // Alone with q = 0.5 under the idle rule, a part finishes exactly at
        // its deadline.
        let mut n = FluidNode::new(spec(), SpareRule::Idle, 0.0);
        n.place(part(1, 50.0, 100.0), 50.0);
        let mut fin = Vec::new();
        n.advance_to(1000.0, &mut fin);
        assert!((fin[0].at - 100.0).abs() < 1e-9);
    }

    #[test]
    fn under_estimate_runs_on_past_the_estimate() {
        // est 10, actual 30, D 100, alone, proportional: share 1 until the
        // estimate is used up at t = 10, then overdue alone: share 1, done
        // at t = 30.
        let mut n = FluidNode::new(spec(), SpareRule::Proportional, 0.0);
        n.place(part(1, 10.0, 100.0), 30.0);
        let mut fin = Vec::new();
        n.advance_to(1000.0, &mut fin);
        assert!((fin[0].at - 30.0).abs() < 1e-9);
    }

    #[test]
    fn overdue_part_gets_the_pool() {
        // Part A: est 10 actual 40 D 1000; part B: est 90 actual 90 D 100.
        // t=0: qA = 0.01, qB = 0.9, Q = 0.91: shares 0.011/0.989.
        // A uses its estimate at t = 10/(0.01/0.91) = 910 — later than B's
        // finish at 90/(0.9/0.91) = 91. After B: A alone, share 1.
        // At 91, A has done 91 * 0.01/0.91 = 1; needs 39 more: done at 130.
        let mut n = FluidNode::new(spec(), SpareRule::Proportional, 0.0);
        n.place(part(1, 10.0, 1000.0), 40.0);
        n.place(part(2, 90.0, 100.0), 90.0);
        let mut fin = Vec::new();
        n.advance_to(1000.0, &mut fin);
        assert_eq!(fin[0].job, 2);
        assert!((fin[0].at - 91.0).abs() < 1e-9, "{fin:?}");
        assert!((fin[1].at - 130.0).abs() < 1e-9, "{fin:?}");
    }

    #[test]
    fn stopping_between_events_changes_nothing() {
        // Shares change only at the node's own events: advancing in one go
        // or with stops in between (arrivals elsewhere in the cluster)
        // gives the same finish times. Parts: est 20/actual 30 (runs past
        // its estimate), est 30 deadline 100, est 10 deadline 40.
        let run = |stops: &[f64]| {
            let mut n = FluidNode::new(spec(), SpareRule::Proportional, 0.0);
            n.place(part(1, 20.0, 200.0), 30.0);
            n.place(part(2, 30.0, 100.0), 30.0);
            n.place(part(3, 10.0, 40.0), 10.0);
            let shares = n.extra.shares().to_vec();
            // Required shares 20/200, 30/100 and 10/40 (0.65 in all),
            // the spare handed out in proportion: each q / 0.65.
            assert_eq!(shares.len(), 3);
            for (got, q) in shares.iter().zip([0.1, 0.3, 0.25]) {
                assert!((got - q / 0.65).abs() < 1e-12, "{shares:?}");
            }
            let mut fin = Vec::new();
            for &t in stops {
                n.advance_to(t, &mut fin);
                if fin.is_empty() {
                    // No event yet: the shares are still the first ones.
                    assert_eq!(n.extra.shares(), &shares[..]);
                }
            }
            n.advance_to(1000.0, &mut fin);
            fin.iter().map(|f| (f.job, f.at)).collect::<Vec<_>>()
        };
        let straight = run(&[]);
        let stopped = run(&[1.5, 3.25, 7.0, 12.5, 33.3]);
        assert_eq!(straight.len(), 3);
        for (a, b) in straight.iter().zip(&stopped) {
            assert_eq!(a.0, b.0);
            assert!((a.1 - b.1).abs() < 1e-9, "{straight:?} vs {stopped:?}");
        }
    }

    #[test]
    fn completions_at_t_are_reported_by_advance_to_t() {
        let mut n = FluidNode::new(spec(), SpareRule::Proportional, 0.0);
        n.place(part(1, 10.0, 100.0), 10.0);
        let mut fin = Vec::new();
        n.advance_to(10.0, &mut fin);
        assert_eq!(fin.len(), 1);
        assert!(n.state.parts.is_empty());
    }

    #[test]
    fn paper_deadline_delay_examples() {
        // The LibraRisk paper section 3.2: delay 20 s, remaining deadline 5 s ->
        // deadline delay 5; delay 20 s, remaining deadline 10 s -> 3.
        // Built as lone parts whose estimate overruns the deadline by 20 s
        // on an empty node: est 25, D 5 finishes at 25 (delay 20) -> 5.
        let node = NodeState::new(spec());
        let mut out = Vec::new();
        project_deadline_delays(
            &node,
            &part(1, 25.0, 5.0),
            0.0,
            SpareRule::Proportional,
            &mut out,
        )
        .unwrap();
        assert!((out[0] - 5.0).abs() < 1e-12, "{out:?}");
        project_deadline_delays(
            &node,
            &part(1, 30.0, 10.0),
            0.0,
            SpareRule::Proportional,
            &mut out,
        )
        .unwrap();
        assert!((out[0] - 3.0).abs() < 1e-12, "{out:?}");
    }

    fn sla_part(job: JobId, est: f64, deadline: Time, ret: f64, hard: bool) -> PartView {
        PartView {
            ret,
            hard,
            ..part(job, est, deadline)
        }
    }

    #[test]
    fn sla_projection_delays_the_soft_part_only() {
        // A soft: est 100, DT 200, return 0.015; new N soft: est 150,
        // DT 200, return 0.02 (the highest). Q = 0.5 + 0.75 = 1.25: N keeps
        // 0.75, A gets 0.25. N finishes at 150/0.75 = 200 (on time); A has
        // 50 done then, its deadline passes, and alone it gets the whole
        // node: 50 more, done at 250 (50 s late).
        let mut node = NodeState::new(spec());
        node.parts.push(sla_part(1, 100.0, 200.0, 0.015, false));
        let mut out = Vec::new();
        project_finishes(
            &node,
            Some(&sla_part(2, 150.0, 200.0, 0.02, false)),
            0.0,
            SpareRule::Sla,
            &mut out,
        );
        assert!((out[0] - 250.0).abs() < 1e-9, "{out:?}");
        assert!((out[1] - 200.0).abs() < 1e-9, "{out:?}");
    }

    #[test]
    fn a_waiting_part_reaching_its_deadline_is_an_event() {
        // Hard H: est 100, DT 100 (q 1, return 1); soft S: est 10, DT 50
        // (return 0). Q = 1.2, the protected H needs the whole node: S
        // waits with share 0. At t = 50 S's deadline passes: S is overdue
        // and gets the pool floor 0.05, H the other 0.95. At t = 100 H has
        // 50 + 0.95 x 50 = 97.5 done and reaches its deadline: both overdue,
        // 0.5 each. H's last 2.5 take 5 s (done at 105); S has 2.5 + 2.5 =
        // 5 done then and alone finishes its last 5 at 110. (Without the
        // event at 50, S would wait until H finished at 100.)
        let mut node = NodeState::new(spec());
        node.parts.push(sla_part(1, 100.0, 100.0, 1.0, true));
        let mut out = Vec::new();
        project_finishes(
            &node,
            Some(&sla_part(2, 10.0, 50.0, 0.0, false)),
            0.0,
            SpareRule::Sla,
            &mut out,
        );
        assert!((out[0] - 105.0).abs() < 1e-9, "{out:?}");
        assert!((out[1] - 110.0).abs() < 1e-9, "{out:?}");
    }

    /// Found by binary search in job order, by the scan in any other, and
    /// not at all when absent, whatever the order.
    #[test]
    fn a_part_is_found_in_job_order_and_in_any_other() {
        let mut node = NodeState::new(spec());
        for job in [2, 5, 9, 14, 20] {
            node.parts.push(part(job, 1.0, 10.0));
        }
        let found: Vec<_> = [2, 5, 9, 14, 20, 1, 7, 21]
            .map(|j| node.find_part(j))
            .to_vec();
        let ok = [
            Some(0),
            Some(1),
            Some(2),
            Some(3),
            Some(4),
            None,
            None,
            None,
        ];
        assert_eq!(found, ok);
        // A backfilled job placed after a later one: out of order.
        node.parts.swap(1, 3);
        node.parts.push(part(3, 1.0, 10.0));
        for (k, p) in node.parts.iter().enumerate() {
            assert_eq!(node.find_part(p.job), Some(k), "job {}", p.job);
        }
        assert_eq!(node.find_part(7), None);
    }

    #[test]
    fn passed_deadline_is_never_zero_risk() {
        let mut node = NodeState::new(spec());
        node.parts.push(part(1, 100.0, 5.0));
        let mut out = Vec::new();
        assert!(project_deadline_delays(
            &node,
            &part(2, 1.0, 100.0),
            10.0,
            SpareRule::Proportional,
            &mut out
        )
        .is_none());
    }

    /// P0 has used its estimate (done at 0, delay 1); P1 (100 s, due at
    /// 50, q 2) and the new part (20 s, due at 100, q 0.2) share the node
    /// 2/2.2 and 0.2/2.2 until P1's deadline at 50. Then P1 is overdue
    /// with 54.545 s left and the pool `1 - 0.30909` (the new part's q:
    /// 15.4545 s over 50 s); the new part finishes on time at 100. There
    /// P1 is 50 s late already: its delay is at least (50 + 50) / 50 = 2
    /// against the others' 1. It finishes at 120 (20 s left alone): delay
    /// (70 + 50) / 50 = 2.4.
    fn late_beside_on_time() -> (NodeState, PartView) {
        let mut node = NodeState::new(spec());
        let mut p0 = part(1, 10.0, 500.0);
        p0.cpu_done = 10.0;
        node.parts.push(p0);
        node.parts.push(part(2, 100.0, 50.0));
        (node, part(3, 20.0, 100.0))
    }

    /// The node of [`late_beside_on_time`] projected 1,000 s later, every
    /// deadline 1,000 s later too: the same delays, each taken against its
    /// distance from `now` (P1's 70 s late over 50 s: 2.4).
    #[test]
    fn deadline_delays_are_taken_from_now() {
        let (mut node, mut new) = late_beside_on_time();
        for p in node.parts.iter_mut().chain(std::iter::once(&mut new)) {
            p.deadline += 1000.0;
        }
        let mut out = Vec::new();
        project_deadline_delays(&node, &new, 1000.0, SpareRule::Proportional, &mut out)
            .expect("no deadline passed");
        for (d, want) in out.iter().zip([1.0, 2.4, 1.0]) {
            assert!((d - want).abs() < 1e-9, "{out:?}");
        }
        let mut spread = Vec::new();
        let stopped = project_deadline_delays_spread(
            &node,
            &new,
            1000.0,
            SpareRule::Proportional,
            &mut Projection::default(),
            1.5,
            &mut spread,
        );
        assert_eq!((stopped, spread), (Some(false), out));
    }

    #[test]
    fn a_spread_stops_the_projection_where_it_is_known() {
        let (node, new) = late_beside_on_time();
        let rule = SpareRule::Proportional;
        let mut full = Vec::new();
        project_deadline_delays(&node, &new, 0.0, rule, &mut full).expect("no deadline passed");
        for (d, want) in full.iter().zip([1.0, 2.4, 1.0]) {
            assert!((d - want).abs() < 1e-9, "{full:?}");
        }
        let mut proj = Projection::default();
        let mut out = Vec::new();
        // Known apart by 1 at 100, when the new part finishes: stops there.
        let stopped =
            project_deadline_delays_spread(&node, &new, 0.0, rule, &mut proj, 1e-6, &mut out);
        assert_eq!(stopped, Some(true));
        assert!(out.is_empty());
        assert!((proj.sim.now() - 100.0).abs() < 1e-6, "{}", proj.sim.now());
        // Apart by 1.4 only once P1 finishes, at 120.
        let stopped =
            project_deadline_delays_spread(&node, &new, 0.0, rule, &mut proj, 1.2, &mut out);
        assert_eq!(stopped, Some(true));
        assert!((proj.sim.now() - 120.0).abs() < 1e-6, "{}", proj.sim.now());
        // Never that far apart: the whole projection, bit for bit.
        for spread in [1.5, f64::INFINITY, f64::NAN] {
            let stopped =
                project_deadline_delays_spread(&node, &new, 0.0, rule, &mut proj, spread, &mut out);
            assert_eq!(stopped, Some(false));
            assert_eq!(out, full);
        }
        // A passed deadline is refused as by the whole projection.
        assert_eq!(
            project_deadline_delays_spread(&node, &new, 60.0, rule, &mut proj, 1.5, &mut out),
            None
        );
    }

    /// Hard parts A (100 s of work), B (20 s) and the new part N (80 s),
    /// all due at 100, under LibraSLA's rule: they need 1 + 0.2 + 0.8 = 2
    /// of the node, so each gets half its need (0.5, 0.1, 0.4) until 100,
    /// leaving 50, 10 and 40 s. Past their deadline they share the node
    /// equally: B ends at 130 with A and N at 40 and 30 left, then A and N
    /// at a half each: N ends at 190, A at 200.
    #[test]
    fn a_part_sure_to_be_late_stops_the_projection() {
        let mut node = NodeState::new(spec());
        for (job, est) in [(1, 100.0), (2, 20.0)] {
            let mut p = part(job, est, 100.0);
            p.hard = true;
            node.parts.push(p);
        }
        let mut new = part(3, 80.0, 100.0);
        new.hard = true;
        let rule = SpareRule::Sla;
        let mut full = Vec::new();
        let mut proj = Projection::default();
        project_finishes_with(&node, Some(&new), 0.0, rule, &mut proj, &mut full);
        for (f, want) in full.iter().zip([200.0, 130.0, 190.0]) {
            assert!((f - want).abs() < 1e-9, "{full:?}");
        }
        // At 100, N still runs but is not yet sure to be late (it could
        // end within the tolerance): the projection goes on to B's end at
        // 130, where N is 30 s past its deadline and running: it stops
        // there, with B's finish as the whole projection has it.
        let mut out = Vec::new();
        assert!(!project_finishes_unless_late(
            &node, &new, 0.0, rule, &mut proj, &mut out
        ));
        assert_eq!(out[1].to_bits(), full[1].to_bits());
        assert!((proj.sim.now() - 130.0).abs() < 1e-9, "{}", proj.sim.now());
        // Due at 200 instead, N keeps its required share once A and B are
        // overdue and ends by its deadline: nothing to stop on; the whole
        // projection, bit for bit.
        new.deadline = 200.0;
        project_finishes_with(&node, Some(&new), 0.0, rule, &mut proj, &mut full);
        assert!(project_finishes_unless_late(
            &node, &new, 0.0, rule, &mut proj, &mut out
        ));
        assert_eq!(out, full);
        assert_eq!(delay_past(out[2], new.deadline), 0.0);
        // Without B, due at 100: A and N need 1.8, get 1/1.8 and 0.8/1.8
        // until 100 (44.4 and 35.6 s left), then a half each: N ends at
        // 171.1, late, but no event of the node comes between its
        // deadline and its end: the whole projection, bit for bit.
        node.parts.pop();
        new.deadline = 100.0;
        project_finishes_with(&node, Some(&new), 0.0, rule, &mut proj, &mut full);
        for (f, want) in full.iter().zip([180.0, 100.0 + 2.0 * (80.0 - 80.0 / 1.8)]) {
            assert!((f - want).abs() < 1e-9, "{full:?}");
        }
        assert!(project_finishes_unless_late(
            &node, &new, 0.0, rule, &mut proj, &mut out
        ));
        assert_eq!(out, full);
        assert!(delay_past(out[1], new.deadline) > 0.0);
    }

    #[test]
    fn population_sd_is_the_paper_sigma() {
        // deadline delays 1, 1, 3: mean 5/3; sigma = sqrt((1+1+9)/3 - 25/9)
        // = sqrt(33/9 - 25/9) = sqrt(8)/3.
        assert!((population_sd(&[1.0, 1.0, 3.0]) - 8f64.sqrt() / 3.0).abs() < 1e-12);
        assert_eq!(population_sd(&[1.0, 1.0]), 0.0);
    }

    /// Deadline delays all near 1 (the usual case) keep their spread:
    /// 1, 1 + 1e-9, 1 + 3e-9 have mean 1 + 4/3e-9, squared deviations
    /// (16 + 1 + 25)/9 e-18, so sigma = sqrt(14)/3 e-9. The one-pass
    /// `mean(x^2) - mean^2` loses it to cancellation (here it comes out
    /// negative).
    #[test]
    fn population_sd_keeps_a_tiny_spread_near_one() {
        let sd = population_sd(&[1.0, 1.0 + 1e-9, 1.0 + 3e-9]);
        assert!((sd - 14f64.sqrt() / 3.0 * 1e-9).abs() < 1e-15, "{sd}");
    }

    /// A part within `TIME_EPS` (1e-6 s) of its estimate is over: the
    /// projection finishes it at the instant itself. Here it has exactly
    /// 1e-6 s left (2e-6 - 1e-6, exact); projected, alone at share 1, it
    /// would finish 1e-6 s later.
    #[test]
    fn a_part_within_the_tolerance_of_its_estimate_is_over_at_once() {
        let mut node = NodeState::new(spec());
        let mut a = part(1, 2e-6, 100.0);
        a.cpu_done = 1e-6;
        node.parts.push(a);
        let mut out = Vec::new();
        project_finishes(&node, None, 10.0, SpareRule::Proportional, &mut out);
        assert_eq!(out, [10.0]);
    }
}
