//! QoPS, VQoPS and DVQoPS (the VQoPS paper): deadline-guaranteeing admission over a
//! space-shared schedule, then opportunity cost, then its self-tuning.
//!
//! - **QoPS** keeps a plan: every accepted job that has not started has a
//!   reservation (start time and width) in a profile of free processors,
//!   built on runtime estimates. A new job is accepted only if some order
//!   of the queue gives every accepted job, and the new one, a finish by
//!   its deadline. Orders tried: the new job inserted at positions N, 7N/8,
//!   3N/4, N/2, 0 of the queue (N queued jobs; the log N points the
//!   paper's complexity counts); the jobs ahead of it keep their
//!   reservations, the new job and those behind it are placed greedily
//!   (each at its earliest slot). A job behind the new one that would miss
//!   its deadline is a *violation*: it is moved ahead of the new job and
//!   the placement restarts; more than `qops_k` violations fail that
//!   position. QoPS takes the first feasible position, from the end.
//! - **VQoPS** builds every feasible position, keeps the one with the
//!   highest revenue, and accepts only if the revenue gain over the current
//!   plan beats the job's opportunity cost, `oc_factor x P x RE`.
//! - **DVQoPS** is VQoPS whose OC-Factor is re-chosen every rollback window
//!   by what-if replays of the jobs that arrived since the last choice, one
//!   per candidate OC-Factor, from the state of the plan then; and whose
//!   rollback window is re-chosen every `max_rollback_window_hours` the same
//!   way (a replay of DVQoPS itself per candidate window). Replays run this
//!   same code in virtual time on the estimates, with no clock.
//!
//! Revenue (the VQoPS paper): a job's price is its budget B (its maximum cost:
//! 0.1 per processor-second of estimate, C times that if urgent; see the
//! `vqops` preset), decaying linearly from full at AT + RE (the earliest
//! finish) to zero at the deadline. The plan prices each job at its planned
//! finish; the cost charged is fixed when the job starts, at the finish
//! its estimate promises. Readings and knobs: docs/policies.md.

use super::space::NodePool;
use super::{PolicyConfig, QueueAction, QueuePolicy, Reject, RejectReason, RETURN_REL_EPS};
use crate::job::{JobId, JobSpec};
use crate::node_model::NodeSpec;
use crate::time::{Time, DEADLINE_TOLERANCE, TIME_EPS};

/// Seconds in an hour: the papers give rollback windows in hours of trace
/// time.
const HOUR: f64 = 3600.0;

/// Free processors over time from some instant on: `free[k]` processors
/// on `[t[k], t[k + 1])`, the last step lasting for ever.
#[derive(Debug, Clone, Default)]
struct Profile {
    t: Vec<Time>,
    free: Vec<i64>,
}

impl Profile {
    /// `total` processors at `now`, less what the running jobs hold until
    /// their estimated ends (a job past its estimate is expected to end
    /// now).
    fn reset(&mut self, now: Time, total: i64, running: &[Run]) {
        self.t.clear();
        self.free.clear();
        let mut ends: Vec<(Time, i64)> = running
            .iter()
            .map(|r| (r.est_end.max(now), r.nodes.len() as i64))
            .collect();
        ends.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut free = total - ends.iter().map(|e| e.1).sum::<i64>();
        self.t.push(now);
        self.free.push(free);
        for (t, n) in ends {
            free += n;
            if t == *self.t.last().expect("not empty") {
                *self.free.last_mut().expect("not empty") = free;
            } else {
                self.t.push(t);
                self.free.push(free);
            }
        }
    }

    /// Index of the step holding `x` (`x >= t[0]`).
    fn step_of(&self, x: Time) -> usize {
        self.t.partition_point(|&s| s <= x).saturating_sub(1)
    }

    /// Makes `x` a step boundary; returns its index.
    fn split(&mut self, x: Time) -> usize {
        let k = self.step_of(x);
        if self.t[k] == x {
            return k;
        }
        self.t.insert(k + 1, x);
        self.free.insert(k + 1, self.free[k]);
        k + 1
    }

    /// Adds `delta` processors over `[s, e)` (clamped to the profile's
    /// start).
    fn add(&mut self, s: Time, e: Time, delta: i64) {
        let s = s.max(self.t[0]);
        if e <= s {
            return;
        }
        let a = self.split(s);
        let b = self.split(e);
        for f in &mut self.free[a..b] {
            *f += delta;
        }
    }

    /// The earliest start at or after `from` with `p` processors free for
    /// `d` seconds. The last step has every processor free, so there is
    /// always one for `p` up to the cluster size.
    fn earliest(&self, from: Time, p: i64, d: f64) -> Time {
        let mut cand: Option<Time> = None;
        for k in self.step_of(from)..self.t.len() {
            if self.free[k] < p {
                cand = None;
                continue;
            }
            let c = *cand.get_or_insert(self.t[k].max(from));
            let end = self.t.get(k + 1).copied().unwrap_or(Time::INFINITY);
            if c + d <= end {
                return c;
            }
        }
        cand.unwrap_or(Time::INFINITY)
    }
}

/// An accepted job that has not started, with its reservation.
#[derive(Debug, Clone)]
struct Planned {
    id: JobId,
    procs: usize,
    /// Planned runtime: RE on the slowest node.
    est: f64,
    /// Runtime estimate RE (reference node).
    re: f64,
    submit: Time,
    /// Absolute deadline DT.
    deadline: Time,
    /// Maximum price (the budget B).
    price: f64,
    /// Reserved start.
    start: Time,
}

impl Planned {
    /// The VQoPS paper's price for a finish at `f`: full up to AT + RE, falling
    /// linearly to zero at the deadline.
    fn value(&self, f: Time) -> f64 {
        decayed_price(self.price, self.submit, self.re, self.deadline, f)
    }

    fn finish(&self) -> Time {
        self.start + self.est
    }

    fn meets(&self, by: Time) -> bool {
        self.finish() <= by + DEADLINE_TOLERANCE
    }
}

/// The VQoPS paper's decaying price: `price` for a finish by `submit + re`, zero
/// from the deadline on, linear in between.
pub fn decayed_price(price: f64, submit: Time, re: f64, deadline: Time, finish: Time) -> f64 {
    let full = submit + re;
    if finish <= full + TIME_EPS {
        price
    } else if finish >= deadline {
        0.0
    } else {
        price * (deadline - finish) / (deadline - full)
    }
}

/// A started job.
#[derive(Debug, Clone)]
struct Run {
    id: JobId,
    nodes: Vec<usize>,
    est_end: Time,
}

/// The plan and the nodes: everything QoPS, VQoPS and DVQoPS share. Cheap
/// to clone, which is how DVQoPS snapshots it for its replays.
#[derive(Debug, Clone)]
struct Planner {
    /// Most violations per insertion position.
    k: u32,
    /// Artificial slack: the new job must fit by AT + est + (D - est) /
    /// slack; 1 is none.
    slack: f64,
    /// `None`: plain QoPS. `Some(oc)`: VQoPS with this OC-Factor.
    oc: Option<f64>,
    pool: NodePool,
    slowest: f64,
    running: Vec<Run>,
    /// In plan order.
    queue: Vec<Planned>,
    prof: Profile,
    /// The instant of the last scheduling pass: a reservation after it is
    /// a time to be called again ([`Planner::next_reservation`]).
    last_pass: Time,
}

/// A candidate plan: the queue in its new order with reservations.
type Plan = Vec<Planned>;

impl Planner {
    fn new(cfg: &PolicyConfig, nodes: &[NodeSpec], oc: Option<f64>) -> Planner {
        Planner {
            k: cfg.qops_k,
            slack: cfg.qops_slack_factor,
            oc,
            pool: NodePool::new(nodes.len()),
            slowest: nodes.iter().map(|n| n.speed).fold(f64::INFINITY, f64::min),
            running: Vec::new(),
            queue: Vec::new(),
            prof: Profile::default(),
            last_pass: f64::NEG_INFINITY,
        }
    }

    fn total(&self) -> i64 {
        self.pool.usable_count() as i64
    }

    /// A live node died (or joined): it leaves (or enters) the pool. Plans
    /// are recompressed at the next event against the new total; jobs
    /// already accepted keep their place but lose the guarantee if the
    /// cluster shrank under them.
    fn set_available(&mut self, node: usize, available: bool) {
        let busy = self.running.iter().any(|r| r.nodes.contains(&node));
        self.pool.set_available(node, available, busy);
        if available && self.slowest.is_infinite() {
            self.slowest = 1.0;
        }
    }

    /// Moves every reservation to its earliest slot, in plan order, with
    /// all the others in place. A job never moves later (its old slot is
    /// still free: only running jobs ended), unless it could not start at
    /// its reservation because a running job overran its estimate.
    fn compress(&mut self, now: Time) {
        let total = self.total();
        self.prof.reset(now, total, &self.running);
        for j in &self.queue {
            self.prof.add(j.start, j.start + j.est, -(j.procs as i64));
        }
        for j in &mut self.queue {
            self.prof.add(j.start, j.start + j.est, j.procs as i64);
            j.start = self.prof.earliest(now, j.procs as i64, j.est);
            self.prof.add(j.start, j.start + j.est, -(j.procs as i64));
        }
    }

    /// The plan with `new` inserted at position `p`, or `None` if no order
    /// reachable with at most `k` violations meets every deadline.
    fn try_position(&self, now: Time, p: usize, new: &Planned, admit_by: Time) -> Option<Plan> {
        let mut base = Profile::default();
        base.reset(now, self.total(), &self.running);
        // The jobs ahead keep their reservations: they are feasible already.
        for j in &self.queue[..p] {
            base.add(j.start, j.start + j.est, -(j.procs as i64));
        }
        let mut behind: Vec<Planned> = self.queue[p..].to_vec();
        let mut moved: Vec<Planned> = Vec::new();
        let mut violations = 0u32;
        'order: loop {
            let mut prof = base.clone();
            let mut plan: Plan = Vec::with_capacity(self.queue.len() + 1);
            plan.extend_from_slice(&self.queue[..p]);
            let place = |j: &Planned, prof: &mut Profile| {
                let mut j = j.clone();
                j.start = prof.earliest(now, j.procs as i64, j.est);
                prof.add(j.start, j.start + j.est, -(j.procs as i64));
                j
            };
            for m in &moved {
                let m = place(m, &mut prof);
                if !m.meets(m.deadline) {
                    return None;
                }
                plan.push(m);
            }
            let n = place(new, &mut prof);
            if !n.meets(admit_by) {
                return None;
            }
            plan.push(n);
            for i in 0..behind.len() {
                let b = place(&behind[i], &mut prof);
                if !b.meets(b.deadline) {
                    violations += 1;
                    if violations > self.k {
                        return None;
                    }
                    moved.push(behind.remove(i));
                    continue 'order;
                }
                plan.push(b);
            }
            return Some(plan);
        }
    }

    /// Revenue of a plan: every queued job priced at its planned finish.
    fn revenue(plan: &[Planned]) -> f64 {
        plan.iter().map(|j| j.value(j.finish())).sum()
    }

    /// Admission of `job` at `now`.
    fn admit(&mut self, now: Time, job: &JobSpec) -> Result<(), Reject> {
        let total = self.total() as usize;
        if job.processors() > total {
            return Err(Reject {
                reason: RejectReason::Resources,
                detail: format!(
                    "needs {} processors, the cluster has {total}",
                    job.processors()
                ),
            });
        }
        self.compress(now);
        let est = job.estimate() / self.slowest;
        let new = Planned {
            id: job.id,
            procs: job.processors(),
            est,
            re: job.estimate(),
            submit: job.details.submit_time,
            deadline: job.deadline_abs(),
            price: job.qos.budget,
            start: now,
        };
        let slack = job.qos.deadline - est;
        let admit_by = if slack > 0.0 && self.slack > 1.0 {
            new.submit + est + slack / self.slack
        } else {
            new.deadline
        };
        let mut best: Option<(f64, Plan)> = None;
        for p in positions(self.queue.len()) {
            let Some(plan) = self.try_position(now, p, &new, admit_by) else {
                continue;
            };
            if self.oc.is_none() {
                self.queue = plan;
                return Ok(());
            }
            let r = Planner::revenue(&plan);
            // Strictly better only: among equal plans the one nearer the
            // end (tried first) wins, disturbing fewer jobs.
            if best.as_ref().is_none_or(|b| r > b.0) {
                best = Some((r, plan));
            }
        }
        let Some((best_rev, plan)) = best else {
            return Err(Reject {
                reason: RejectReason::Deadline,
                detail: format!(
                    "no schedule of the {} queued jobs with at most {} moved meets every deadline with it",
                    self.queue.len(),
                    self.k
                ),
            });
        };
        let oc = self.oc.unwrap_or(0.0);
        let gain = best_rev - Planner::revenue(&self.queue);
        let opportunity = oc * job.processors() as f64 * job.estimate();
        if gain > opportunity {
            self.queue = plan;
            Ok(())
        } else {
            Err(Reject {
                reason: RejectReason::Return,
                detail: format!(
                    "revenue gain {gain:.2} does not beat the opportunity cost {opportunity:.2} (OC-Factor {oc} x {} processors x RE {:.0} s)",
                    job.processors(),
                    job.estimate()
                ),
            })
        }
    }

    /// An adopted job's part holds `node` (see
    /// [`QueuePolicy::hold_node`]): the plan sees it busy until `est_end`.
    fn hold(&mut self, job: JobId, node: usize, est_end: Time) -> bool {
        if !self.pool.take(node) {
            return false;
        }
        match self.running.iter_mut().find(|r| r.id == job) {
            Some(r) => {
                r.nodes.push(node);
                r.est_end = r.est_end.max(est_end);
            }
            None => self.running.push(Run {
                id: job,
                nodes: vec![node],
                est_end,
            }),
        }
        true
    }

    fn finished(&mut self, job: JobId) {
        if let Some(k) = self.running.iter().position(|r| r.id == job) {
            let r = self.running.swap_remove(k);
            self.pool.release(&r.nodes);
        }
    }

    /// Compresses the plan and starts every job whose reservation is now,
    /// on the lowest-index free nodes. The cost is fixed here: the price
    /// at the finish the job's estimate promises.
    fn schedule(&mut self, now: Time, out: &mut Vec<QueueAction>) {
        self.last_pass = now;
        if self.queue.is_empty() {
            return;
        }
        self.compress(now);
        let mut k = 0;
        while k < self.queue.len() {
            let j = &self.queue[k];
            // A job whose reservation is now but whose nodes are still held
            // by a job running past its estimate waits for the next event.
            if j.start > now + TIME_EPS || j.procs > self.pool.n_free() {
                k += 1;
                continue;
            }
            let j = self.queue.remove(k);
            let nodes = self.pool.take_lowest(j.procs);
            self.running.push(Run {
                id: j.id,
                nodes: nodes.clone(),
                est_end: now + j.est,
            });
            out.push(QueueAction::Start {
                job: j.id,
                nodes,
                cost: j.value(now + j.est),
            });
        }
    }

    /// The earliest reservation after the last pass: the plan starts a
    /// job then, and nothing else may happen at that instant (a job
    /// running past its estimate ends no earlier than its reservation's
    /// nodes were planned free, so no completion comes to start it).
    fn next_reservation(&self) -> Option<Time> {
        self.queue
            .iter()
            .map(|j| j.start)
            .filter(|&t| t.is_finite() && t > self.last_pass + TIME_EPS)
            .min_by(f64::total_cmp)
    }

    /// When the next started job ends by its estimate (not before `now`).
    fn next_end(&self, now: Time) -> Option<Time> {
        self.running
            .iter()
            .map(|r| r.est_end.max(now))
            .min_by(|a, b| a.total_cmp(b))
    }
}

/// Insertion positions for a queue of `n`: n, n - n/8, n - n/4, n - n/2, 0
/// and so on (n(1 - 2^-k) for k = 0, 1, ...), from the end forwards,
/// without repeats.
fn positions(n: usize) -> Vec<usize> {
    let mut out = vec![n];
    let mut d = 1;
    while d <= n {
        out.push(n - n / d);
        d *= 2;
    }
    out.sort_unstable_by(|a, b| b.cmp(a));
    out.dedup();
    out
}

/// Replays `jobs` (in arrival order, all arriving at or after the planner's
/// state) through `planner` in virtual time, every job running exactly its
/// estimate, until every accepted job has finished. Returns the revenue of
/// every job started. With `tuner`, the OC-Factor is re-chosen along the
/// way as DVQoPS does (a replay of DVQoPS with that rollback window).
fn replay(
    planner: &mut Planner,
    start: Time,
    jobs: &[JobSpec],
    mut tuner: Option<&mut Tuner>,
) -> f64 {
    let mut revenue = 0.0;
    let mut next = 0;
    let mut clock = start;
    let mut actions = Vec::new();
    loop {
        let t_arrival = jobs.get(next).map(|j| j.details.submit_time.max(clock));
        let t_end = planner.next_end(clock);
        let t_plan = planner
            .queue
            .iter()
            .map(|j| j.start.max(clock))
            .min_by(|a, b| a.total_cmp(b));
        let Some(now) = [t_arrival, t_end, t_plan]
            .into_iter()
            .flatten()
            .min_by(|a, b| a.total_cmp(b))
        else {
            break;
        };
        clock = now;
        let mut progressed = false;
        let mut k = 0;
        while k < planner.running.len() {
            if planner.running[k].est_end <= now {
                let id = planner.running[k].id;
                planner.finished(id);
                progressed = true;
            } else {
                k += 1;
            }
        }
        if let Some(t) = tuner.as_deref_mut() {
            if jobs.get(next).is_some_and(|j| j.details.submit_time <= now) {
                t.tick(now, planner, &jobs[..next]);
            }
        }
        while jobs.get(next).is_some_and(|j| j.details.submit_time <= now) {
            let _ = planner.admit(now, &jobs[next]);
            next += 1;
            progressed = true;
        }
        actions.clear();
        planner.schedule(now, &mut actions);
        for a in &actions {
            if let QueueAction::Start { cost, .. } = a {
                revenue += cost;
                progressed = true;
            }
        }
        if !progressed {
            // Only a reservation that cannot start (its nodes held past an
            // estimate) could stall here, and replays run on estimates.
            debug_assert!(false, "replay made no progress at {now}");
            break;
        }
    }
    revenue
}

/// The candidate with the highest revenue; among ties (within
/// [`RETURN_REL_EPS`]), `current` if it is one, else the first in order.
fn pick(cands: &[f64], current: f64, mut revenue: impl FnMut(f64) -> f64) -> f64 {
    let revs: Vec<f64> = cands.iter().map(|&c| revenue(c)).collect();
    let max = revs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let tied = |r: f64| r >= max - RETURN_REL_EPS * max.abs();
    if cands
        .iter()
        .zip(&revs)
        .any(|(&c, &r)| c == current && tied(r))
    {
        return current;
    }
    cands
        .iter()
        .zip(&revs)
        .find(|(_, &r)| tied(r))
        .map_or(current, |(&c, _)| c)
}

/// DVQoPS's OC-Factor tuning: every `window` seconds, the OC-Factor that
/// would have earned most on the arrivals since the last tuning, replayed
/// from the plan as it was then.
#[derive(Debug, Clone)]
struct Tuner {
    window: f64,
    next: Time,
    snap: Planner,
    snap_at: Time,
    /// Index of the first arrival after the snapshot in the caller's
    /// history.
    snap_from: usize,
    candidates: Vec<f64>,
}

impl Tuner {
    fn new(now: Time, window: f64, planner: &Planner, from: usize, candidates: &[f64]) -> Tuner {
        Tuner {
            window,
            next: now + window,
            snap: planner.clone(),
            snap_at: now,
            snap_from: from,
            candidates: candidates.to_vec(),
        }
    }

    /// If due at `now`, re-chooses `planner`'s OC-Factor from `history`
    /// (every arrival so far, in order) and starts a new period.
    fn tick(&mut self, now: Time, planner: &mut Planner, history: &[JobSpec]) {
        if now < self.next {
            return;
        }
        let jobs = &history[self.snap_from..];
        if !jobs.is_empty() && !self.candidates.is_empty() {
            let current = planner.oc.unwrap_or(0.0);
            let (snap, at) = (&self.snap, self.snap_at);
            planner.oc = Some(pick(&self.candidates, current, |oc| {
                let mut c = snap.clone();
                c.oc = Some(oc);
                replay(&mut c, at, jobs, None)
            }));
        }
        self.snap = planner.clone();
        self.snap_at = now;
        self.snap_from = history.len();
        self.next = now + self.window;
    }
}

/// Which member of the VQoPS paper's family a [`Qops`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QopsVariant {
    /// QoPS: deadline guarantees, blind to prices.
    Qops,
    /// VQoPS: QoPS that picks the plan with the highest revenue and accepts
    /// only if the gain beats `oc_factor x P x RE`.
    Vqops,
    /// DVQoPS: VQoPS re-choosing its OC-Factor and its rollback window by
    /// what-if replays of the recent past.
    Dvqops,
}

/// The VQoPS paper's QoPS family as one policy: a [`Planner`] (plain for QoPS,
/// with an OC-Factor for VQoPS and DVQoPS) and, for DVQoPS only, the
/// [`Tuning`] that re-chooses the OC-Factor and the rollback window before
/// each admission.
pub struct Qops {
    variant: QopsVariant,
    planner: Planner,
    tuning: Option<Tuning>,
}

impl Qops {
    /// The `variant` on these nodes (`qops_k`, `qops_slack_factor`; for
    /// VQoPS and DVQoPS the initial `oc_factor`; for DVQoPS
    /// `rollback_window_hours`, the candidates `oc_candidates` and
    /// `rollback_candidates_hours`, re-chosen every
    /// `max_rollback_window_hours` if `adapt_rollback_window`).
    pub fn new(variant: QopsVariant, cfg: &PolicyConfig, nodes: &[NodeSpec]) -> Qops {
        let oc = match variant {
            QopsVariant::Qops => None,
            QopsVariant::Vqops | QopsVariant::Dvqops => Some(cfg.oc_factor),
        };
        Qops {
            variant,
            planner: Planner::new(cfg, nodes, oc),
            tuning: (variant == QopsVariant::Dvqops).then(|| Tuning::new(cfg)),
        }
    }

    /// Plain QoPS on these nodes (blind to prices).
    pub fn plain(cfg: &PolicyConfig, nodes: &[NodeSpec]) -> Qops {
        Qops::new(QopsVariant::Qops, cfg, nodes)
    }

    /// VQoPS on these nodes with a static `oc_factor`.
    pub fn vqops(cfg: &PolicyConfig, nodes: &[NodeSpec]) -> Qops {
        Qops::new(QopsVariant::Vqops, cfg, nodes)
    }

    /// DVQoPS on these nodes.
    pub fn dvqops(cfg: &PolicyConfig, nodes: &[NodeSpec]) -> Qops {
        Qops::new(QopsVariant::Dvqops, cfg, nodes)
    }

    /// Which member of the family this is.
    pub fn variant(&self) -> QopsVariant {
        self.variant
    }

    /// The OC-Factor in use (0 for QoPS).
    pub fn oc_factor(&self) -> f64 {
        self.planner.oc.unwrap_or(0.0)
    }
}

/// DVQoPS's self-tuning: the arrivals since the older of its two
/// snapshots and the two periodic re-choices (OC-Factor, rollback window).
struct Tuning {
    /// Every arrival since the older of the two snapshots.
    history: Vec<JobSpec>,
    oc: Option<Tuner>,
    /// Snapshot for the rollback window's tuning: (time, plan, index).
    window_snap: Option<(Time, Planner, usize)>,
    next_window: Time,
    window_candidates: Vec<f64>,
    max_window: f64,
    adapt_window: bool,
    initial_window: f64,
    oc_candidates: Vec<f64>,
}

impl Tuning {
    fn new(cfg: &PolicyConfig) -> Tuning {
        Tuning {
            history: Vec::new(),
            oc: None,
            window_snap: None,
            next_window: Time::INFINITY,
            window_candidates: cfg
                .rollback_candidates_hours
                .iter()
                .map(|h| h * HOUR)
                .collect(),
            max_window: cfg.max_rollback_window_hours * HOUR,
            adapt_window: cfg.adapt_rollback_window,
            initial_window: cfg.rollback_window_hours * HOUR,
            oc_candidates: cfg.oc_candidates.clone(),
        }
    }

    /// The rollback window in use (seconds).
    fn rollback_window(&self) -> f64 {
        self.oc.as_ref().map_or(self.initial_window, |t| t.window)
    }

    /// Everything DVQoPS does before admitting `job` at `now`: starts both
    /// periods at the first arrival, re-chooses the rollback window and the
    /// OC-Factor if due (both look at arrivals before this one, from plans
    /// without it), then remembers the arrival.
    fn before_admit(&mut self, now: Time, planner: &mut Planner, job: &JobSpec) {
        if self.oc.is_none() {
            // The first arrival starts both periods.
            self.oc = Some(Tuner::new(
                now,
                self.initial_window,
                planner,
                0,
                &self.oc_candidates,
            ));
            if self.adapt_window && !self.window_candidates.is_empty() {
                self.window_snap = Some((now, planner.clone(), 0));
                self.next_window = now + self.max_window;
            }
        }
        self.tune_window(now, planner);
        if let Some(t) = &mut self.oc {
            t.tick(now, planner, &self.history);
        }
        self.history.push(job.clone());
        self.prune();
    }

    /// Re-chooses the rollback window if due: for each candidate, DVQoPS
    /// with that window replayed from the snapshot, and the best kept.
    fn tune_window(&mut self, now: Time, planner: &Planner) {
        let Some((at, snap, from)) = &self.window_snap else {
            return;
        };
        if now < self.next_window {
            return;
        }
        let jobs = &self.history[*from..];
        let current = self.rollback_window();
        let best = if jobs.is_empty() {
            current
        } else {
            pick(&self.window_candidates, current, |w| {
                let mut c = snap.clone();
                let mut t = Tuner::new(*at, w, &c, 0, &self.oc_candidates);
                replay(&mut c, *at, jobs, Some(&mut t))
            })
        };
        if let Some(t) = &mut self.oc {
            t.window = best;
            t.next = t.snap_at + best;
        }
        self.window_snap = Some((now, planner.clone(), self.history.len()));
        self.next_window = now + self.max_window;
    }

    /// Drops the arrivals no snapshot needs any more.
    fn prune(&mut self) {
        let oldest = self
            .oc
            .as_ref()
            .map_or(0, |t| t.snap_from)
            .min(self.window_snap.as_ref().map_or(usize::MAX, |s| s.2));
        if oldest > 1024 && oldest * 2 > self.history.len() {
            self.history.drain(..oldest);
            if let Some(t) = &mut self.oc {
                t.snap_from -= oldest;
            }
            if let Some(s) = &mut self.window_snap {
                s.2 -= oldest;
            }
        }
    }
}

impl QueuePolicy for Qops {
    fn name(&self) -> &'static str {
        match self.variant {
            QopsVariant::Qops => "qops",
            QopsVariant::Vqops => "vqops",
            QopsVariant::Dvqops => "dvqops",
        }
    }

    fn submit(&mut self, now: Time, job: &JobSpec) -> Option<Reject> {
        if let Some(t) = &mut self.tuning {
            t.before_admit(now, &mut self.planner, job);
        }
        self.planner.admit(now, job).err()
    }

    fn finished(&mut self, _now: Time, job: JobId) {
        self.planner.finished(job);
    }

    fn schedule(&mut self, now: Time, out: &mut Vec<QueueAction>) {
        self.planner.schedule(now, out);
    }

    fn queued(&self) -> usize {
        self.planner.queue.len()
    }

    /// A reservation between events (the nodes it waits for held by a job
    /// running past its estimate, whose planned end was the reservation)
    /// is a time to start it: without a call then, it started at the next
    /// arrival or completion only.
    fn wakeup(&self) -> Option<Time> {
        self.planner.next_reservation()
    }

    fn set_node_available(&mut self, node: usize, available: bool) {
        self.planner.set_available(node, available);
    }

    fn hold_node(&mut self, job: JobId, node: usize, est_end: Time) -> bool {
        self.planner.hold(job, node, est_end)
    }

    /// Drops the planned jobs wider than the nodes left (the others lost
    /// for good: they can never start). Nothing waited behind them: the
    /// plan gives such a job no slot (`Profile::earliest` answers never),
    /// so it reserves no processor and the last pass started what fits.
    fn end(&mut self, _now: Time, out: &mut Vec<QueueAction>) {
        let usable = self.planner.pool.usable_count();
        self.planner.queue.retain(|p| {
            let fits = p.procs <= usable;
            if !fits {
                out.push(QueueAction::Drop {
                    job: p.id,
                    reject: Reject {
                        reason: RejectReason::Resources,
                        detail: super::space::too_wide(p.procs, usable),
                    },
                });
            }
            fits
        });
    }

    fn would_submit(&self, now: Time, job: &JobSpec, _usable: usize) -> Option<Reject> {
        // Admission on a copy of the plan as it stands.
        self.planner.clone().admit(now, job).err()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::test_util::specs;

    /// Job `id` arriving at `at`: RE, P, relative deadline D, price B.
    fn j(id: JobId, at: Time, re: f64, p: u32, d: f64, b: f64) -> JobSpec {
        JobSpec::new(id, at, re, p, d, b)
    }

    fn starts(out: &[QueueAction]) -> Vec<(JobId, f64)> {
        out.iter()
            .filter_map(|a| match a {
                QueueAction::Start { job, cost, .. } => Some((*job, *cost)),
                _ => None,
            })
            .collect()
    }

    fn reason(r: Option<Reject>) -> Option<RejectReason> {
        r.map(|r| r.reason)
    }

    /// A reservation between events is a time to be called. Four nodes:
    /// job 1 (RE 50) starts on node 0 at 0 and runs past its estimate;
    /// job 4 (RE 150) on node 1 at 10, job 6 (RE 100) on node 2 at 20. At
    /// 40 job 9 (P 2, RE 20, D 75) is planned at 40 on the two nodes free
    /// by the estimates (job 1's was due at 50, taken as over now), but
    /// job 1 still holds node 0: it waits. At 60 it is planned at 60,
    /// and job 11 (P 1, RE 35, D 105) behind it at 80, when job 9's two
    /// nodes are free again by the plan. Nothing arrives or completes at 80 (job
    /// 1 runs to 100, job 6 ends at 120): the policy asks to be called
    /// then. At 80 job 9 keeps its reservation at 60 (compression never
    /// moves one later; it still waits for node 0), so by the plan two
    /// nodes are free from 80, and job 11 starts at 80 on node 3, the
    /// one free. Without the call it waited for job 1's completion at
    /// 100 and missed its deadline (the workload `w2` of the independent
    /// reference, docs/testing.md).
    #[test]
    fn a_reservation_between_events_is_a_time_to_be_called() {
        let cfg = PolicyConfig::default();
        let mut q = Qops::plain(&cfg, &specs(4));
        let mut out = Vec::new();
        for (at, job) in [
            (0.0, j(1, 0.0, 50.0, 1, 150.0, 1.0)),
            (10.0, j(4, 10.0, 150.0, 1, 300.0, 1.0)),
            (20.0, j(6, 20.0, 100.0, 1, 150.0, 1.0)),
            (40.0, j(9, 40.0, 20.0, 2, 75.0, 1.0)),
        ] {
            assert!(q.submit(at, &job).is_none(), "job {} refused", job.id);
            q.schedule(at, &mut out);
        }
        assert_eq!(
            starts(&out).iter().map(|s| s.0).collect::<Vec<_>>(),
            vec![1, 4, 6]
        );
        assert!(q.submit(60.0, &j(11, 60.0, 35.0, 1, 105.0, 1.0)).is_none());
        out.clear();
        q.schedule(60.0, &mut out);
        assert!(starts(&out).is_empty(), "{out:?}");
        assert_eq!(q.wakeup(), Some(80.0));
        q.schedule(80.0, &mut out);
        let started: Vec<_> = out
            .iter()
            .filter_map(|a| match a {
                QueueAction::Start { job, nodes, .. } => Some((*job, nodes.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(started, vec![(11, vec![3])]);
    }

    #[test]
    fn positions_from_the_end_forwards() {
        assert_eq!(positions(0), vec![0]);
        assert_eq!(positions(1), vec![1, 0]);
        // n - n/d for d = 1, 2, 4: 0, 3, 4; and n itself.
        assert_eq!(positions(5), vec![5, 4, 3, 0]);
        assert_eq!(positions(8), vec![8, 7, 6, 4, 0]);
    }

    #[test]
    fn decayed_price_by_hand() {
        // Price 10, AT 0, RE 100, DT 500: full until 100, zero at 500,
        // linear between: a finish at 300 earns 10 x 200/400 = 5.
        for (f, want) in [
            (50.0, 10.0),
            (100.0, 10.0),
            (300.0, 5.0),
            (500.0, 0.0),
            (600.0, 0.0),
        ] {
            assert!(
                (decayed_price(10.0, 0.0, 100.0, 500.0, f) - want).abs() < 1e-12,
                "{f}"
            );
        }
        // A finish within TIME_EPS (1e-9) after AT + RE is a finish at it
        // (the rounding of a sum of times): the full price, exactly, not
        // 10 x (400 - 5e-10) / 400 = 10 - 1.25e-11 from the slope.
        assert_eq!(decayed_price(10.0, 0.0, 100.0, 500.0, 100.0 + 5e-10), 10.0);
    }

    /// QoPS told that an adopted job (9) holds its nodes: node 0 until
    /// 100 and node 1 until 80, so the job holds both until 100 (one run,
    /// its latest end). A node already held cannot be held again. Job 1
    /// (RE 10, D 95 at 0) would end at 110 > 95: refused (had node 1 been
    /// free at 80, it would end at 90). Job 2 (RE 10, D 200) is planned at
    /// 100 and starts when job 9 is over.
    #[test]
    fn held_nodes_are_planned_busy_until_the_adopted_jobs_end() {
        let cfg = PolicyConfig::default();
        let mut q = Qops::plain(&cfg, &specs(2));
        assert!(q.hold_node(9, 0, 100.0));
        assert!(q.hold_node(9, 1, 80.0));
        assert!(!q.hold_node(8, 0, 50.0), "node 0 is held already");
        assert!(q.submit(0.0, &j(1, 0.0, 10.0, 1, 95.0, 1.0)).is_some());
        assert!(q.submit(0.0, &j(2, 0.0, 10.0, 1, 200.0, 1.0)).is_none());
        let mut out = Vec::new();
        q.schedule(0.0, &mut out);
        assert!(starts(&out).is_empty());
        q.finished(100.0, 9);
        q.schedule(100.0, &mut out);
        // Its price decayed to its finish at 110: 1 x (200 - 110) / (200 - 10).
        assert_eq!(starts(&out), vec![(2, 90.0 / 190.0)]);
    }

    /// QoPS plans on the slowest node's pace, and a node that leaves
    /// and comes back does not change it: one node of speed 2; job 1 (RE
    /// 100, D 60) takes 100 / 2 = 50 s there, within its deadline, so it
    /// is accepted after the node was lost and back (planned at the
    /// reference pace, 100 s, it would be refused).
    #[test]
    fn a_node_back_keeps_the_plans_pace() {
        let cfg = PolicyConfig::default();
        let fast: Vec<NodeSpec> = specs(1)
            .into_iter()
            .map(|n| NodeSpec { speed: 2.0, ..n })
            .collect();
        let mut q = Qops::plain(&cfg, &fast);
        q.set_node_available(0, false);
        q.set_node_available(0, true);
        assert!(q.submit(0.0, &j(1, 0.0, 100.0, 1, 60.0, 1.0)).is_none());
        let mut out = Vec::new();
        q.schedule(0.0, &mut out);
        // Started at once, at its price (1).
        assert_eq!(starts(&out), vec![(1, 1.0)]);
        // At the reference pace the same job misses its deadline.
        let mut slow = Qops::plain(&cfg, &specs(1));
        assert!(slow.submit(0.0, &j(1, 0.0, 100.0, 1, 60.0, 1.0)).is_some());
    }

    #[test]
    fn profile_finds_the_earliest_hole() {
        // 4 processors; a running job holds 3 until 100. One processor is
        // free from 0 on (and all four from 100): a 1-wide job starts at 0
        // however long it is; a 2-wide one waits for 100.
        let running = [Run {
            id: 1,
            nodes: vec![0, 1, 2],
            est_end: 100.0,
        }];
        let mut pr = Profile::default();
        pr.reset(0.0, 4, &running);
        assert_eq!(pr.earliest(0.0, 1, 100.0), 0.0);
        assert_eq!(pr.earliest(0.0, 1, 1e6), 0.0);
        assert_eq!(pr.earliest(0.0, 2, 1.0), 100.0);
        // Reserve 4 processors on [100, 150): the next 1-wide job of 50 s
        // fits at 0 (its 100 s hole), one of 150 s only at 150.
        pr.add(100.0, 150.0, -4);
        assert_eq!(pr.earliest(0.0, 1, 50.0), 0.0);
        assert_eq!(pr.earliest(0.0, 1, 150.0), 150.0);
    }

    #[test]
    fn qops_accepts_what_it_can_guarantee_and_pushes_jobs_within_their_slack() {
        // 4 processors. A (4 procs, RE 100) starts at 0 and holds the
        // machine until 100.
        let cfg = PolicyConfig::default();
        let mut q = Qops::plain(&cfg, &specs(4));
        let mut out = Vec::new();
        assert!(q.submit(0.0, &j(1, 0.0, 100.0, 4, 1000.0, 1.0)).is_none());
        q.schedule(0.0, &mut out);
        // B (4 procs, RE 50, DT 250): planned [100, 150). Accepted.
        assert!(q.submit(0.0, &j(2, 0.0, 50.0, 4, 250.0, 1.0)).is_none());
        // C (4 procs, RE 100, DT 180): after B, [150, 250) misses 180;
        // ahead of B, [100, 200) misses too. Refused for deadline.
        assert_eq!(
            reason(q.submit(0.0, &j(3, 0.0, 100.0, 4, 180.0, 1.0))),
            Some(RejectReason::Deadline)
        );
        // C' (RE 60, DT 180): after B [150, 210) misses; ahead of B
        // [100, 160) meets 180, and B moves to [160, 210), still within its
        // 250. Accepted.
        assert!(q.submit(0.0, &j(4, 0.0, 60.0, 4, 180.0, 1.0)).is_none());
        out.clear();
        q.finished(100.0, 1);
        q.schedule(100.0, &mut out);
        assert_eq!(
            starts(&out).iter().map(|s| s.0).collect::<Vec<_>>(),
            vec![4]
        );
        out.clear();
        q.finished(160.0, 4);
        q.schedule(160.0, &mut out);
        assert_eq!(
            starts(&out).iter().map(|s| s.0).collect::<Vec<_>>(),
            vec![2]
        );
    }

    #[test]
    fn a_violation_moves_a_queued_job_ahead_of_the_new_one() {
        // 1 processor, R0 runs until 100. Queue: C (RE 10, DT 300) at
        // [100, 110), then B (RE 10, DT 125) at [110, 120).
        // New N (RE 20, DT 130), positions 2, 1, 0:
        // - 2: N at [120, 140) misses 130.
        // - 1: N [110, 130) meets; B [130, 140) misses 125: violation, B
        //   moves ahead of N: B [110, 120), N [120, 140) misses. Fails.
        // - 0: N [100, 120); C [120, 130); B [130, 140) misses: violation,
        //   B ahead of N: B [100, 110), N [110, 130) meets 130, C [130, 140)
        //   meets 300. Feasible with one violation.
        let run = |k: u32| {
            let cfg = PolicyConfig {
                qops_k: k,
                ..PolicyConfig::default()
            };
            let mut q = Qops::plain(&cfg, &specs(1));
            let mut out = Vec::new();
            assert!(q.submit(0.0, &j(1, 0.0, 100.0, 1, 1000.0, 1.0)).is_none());
            q.schedule(0.0, &mut out);
            assert!(q.submit(0.0, &j(2, 0.0, 10.0, 1, 300.0, 1.0)).is_none());
            assert!(q.submit(0.0, &j(3, 0.0, 10.0, 1, 125.0, 1.0)).is_none());
            (q.submit(0.0, &j(4, 0.0, 20.0, 1, 130.0, 1.0)), q)
        };
        let (r, _) = run(0);
        assert_eq!(reason(r), Some(RejectReason::Deadline));
        let (r, mut q) = run(1);
        assert!(r.is_none());
        // The plan runs B, N, C from 100.
        let mut order = Vec::new();
        for (t, done) in [(100.0, 1), (110.0, 3), (130.0, 4), (140.0, 2)] {
            let mut out = Vec::new();
            q.finished(t, done);
            q.schedule(t, &mut out);
            order.extend(starts(&out).into_iter().map(|s| (t, s.0)));
        }
        assert_eq!(order, vec![(100.0, 3), (110.0, 4), (130.0, 2)]);
    }

    #[test]
    fn vqops_weighs_the_revenue_gain_against_the_opportunity_cost() {
        // 1 processor, R0 (RE 100, price 1000) runs until 100. New N: RE
        // 100, DT 500, price 10. Planned [100, 200): full value until
        // AT + RE = 100, zero at 500, so it earns 10 x (500 - 200)/400 =
        // 7.5. The queue was empty: gain 7.5.
        // OC-Factor 0.05: opportunity 0.05 x 1 x 100 = 5 < 7.5: accepted.
        // 0.1: 10 > 7.5: refused (return). 0.075: 7.5 is not > 7.5:
        // refused.
        for (oc, accepted) in [(0.05, true), (0.1, false), (0.075, false)] {
            let cfg = PolicyConfig {
                oc_factor: oc,
                ..PolicyConfig::default()
            };
            let mut v = Qops::vqops(&cfg, &specs(1));
            let mut out = Vec::new();
            assert!(v
                .submit(0.0, &j(1, 0.0, 100.0, 1, 1000.0, 1000.0))
                .is_none());
            v.schedule(0.0, &mut out);
            let r = v.submit(0.0, &j(2, 0.0, 100.0, 1, 500.0, 10.0));
            if accepted {
                assert!(r.is_none(), "{oc}: {r:?}");
            } else {
                assert_eq!(reason(r), Some(RejectReason::Return), "{oc}");
            }
        }
    }

    #[test]
    fn vqops_takes_the_highest_revenue_plan_qops_the_first_feasible() {
        // 1 processor, R0 until 100. A: normal, RE 100, DT 500, price 10,
        // planned [100, 200). U: urgent, RE 100, DT 500, price 100.
        // Behind A: U [200, 300) earns 100 x 200/400 = 50, A 7.5: 57.5.
        // Ahead of A: U [100, 200) earns 75, A [200, 300) 10 x 200/400 = 5:
        // 80. VQoPS takes the second (gain 80 - 7.5 = 72.5 > 0); QoPS the
        // first feasible from the end (U behind A). Costs are fixed at the
        // start, for the finish the estimate promises.
        let cfg = PolicyConfig {
            oc_factor: 0.0,
            ..PolicyConfig::default()
        };
        let run = |mut p: Box<dyn QueuePolicy>| {
            let mut out = Vec::new();
            assert!(p
                .submit(0.0, &j(1, 0.0, 100.0, 1, 1000.0, 1000.0))
                .is_none());
            p.schedule(0.0, &mut out);
            assert!(p.submit(0.0, &j(2, 0.0, 100.0, 1, 500.0, 10.0)).is_none());
            assert!(p.submit(0.0, &j(3, 0.0, 100.0, 1, 500.0, 100.0)).is_none());
            let mut got = Vec::new();
            for (t, done) in [(100.0, 1), (200.0, 0), (300.0, 0)] {
                out.clear();
                p.finished(t, done);
                if done == 0 {
                    // Whatever started last finishes now.
                    let last: JobId = got.last().map_or(0, |g: &(JobId, f64)| g.0);
                    p.finished(t, last);
                }
                p.schedule(t, &mut out);
                got.extend(starts(&out));
            }
            got
        };
        assert_eq!(
            run(Box::new(Qops::vqops(&cfg, &specs(1)))),
            vec![(3, 75.0), (2, 5.0)]
        );
        assert_eq!(
            run(Box::new(Qops::plain(&cfg, &specs(1)))),
            vec![(2, 7.5), (3, 50.0)]
        );
    }

    /// VQoPS keeps the first of equally good plans, the insertion nearest
    /// the end, which moves no queued job: OC-Factor 0, 1 processor, R (RE
    /// 100) runs [0, 100). A (RE 10, D 1000, price 1, at 0) is planned
    /// [100, 110). N, the same as A, can go after A (A ends at 110, N at
    /// 120) or before it (N at 110, A at 120): each plan earns
    /// 1 x (1000 - 110) / 990 + 1 x (1000 - 120) / 990, the same two
    /// terms added in the same order, so neither is strictly better and N
    /// goes after A: at 100, A starts.
    #[test]
    fn vqops_keeps_the_queued_order_among_equal_plans() {
        let cfg = PolicyConfig {
            oc_factor: 0.0,
            ..PolicyConfig::default()
        };
        let mut q = Qops::vqops(&cfg, &specs(1));
        let mut out = Vec::new();
        assert!(q.submit(0.0, &j(1, 0.0, 100.0, 1, 1000.0, 1.0)).is_none());
        q.schedule(0.0, &mut out);
        assert!(q.submit(0.0, &j(2, 0.0, 10.0, 1, 1000.0, 1.0)).is_none());
        assert!(q.submit(0.0, &j(3, 0.0, 10.0, 1, 1000.0, 1.0)).is_none());
        assert_eq!(q.queued(), 2);
        q.finished(100.0, 1);
        out.clear();
        q.schedule(100.0, &mut out);
        assert_eq!(starts(&out).first().map(|s| s.0), Some(2));
        assert_eq!(q.queued(), 1);
    }

    #[test]
    fn slack_factor_tightens_the_new_jobs_test() {
        // 1 processor busy until 250. N: RE 100, DT 500. Planned
        // [250, 350). Without slack (factor 1) it meets 500. With factor 2
        // it must fit by 0 + 100 + (500 - 100)/2 = 300: refused. Busy
        // only until 150, it ends at 250 <= 300: accepted. A factor below
        // 1 is none too: busy until 450, N ends at 550 > 500, refused
        // (not let through to 100 + 400 / 0.5 = 900).
        for (busy, slack, ok) in [
            (250.0, 1.0, true),
            (250.0, 2.0, false),
            (150.0, 2.0, true),
            (450.0, 0.5, false),
        ] {
            let cfg = PolicyConfig {
                qops_slack_factor: slack,
                ..PolicyConfig::default()
            };
            let mut q = Qops::plain(&cfg, &specs(1));
            let mut out = Vec::new();
            assert!(q.submit(0.0, &j(1, 0.0, busy, 1, 1000.0, 1.0)).is_none());
            q.schedule(0.0, &mut out);
            assert_eq!(
                q.submit(0.0, &j(2, 0.0, 100.0, 1, 500.0, 1.0)).is_none(),
                ok
            );
        }
    }

    #[test]
    fn pick_prefers_the_current_among_ties_then_the_first() {
        let rev = |c: f64| if c >= 0.1 { 5.0 } else { 1.0 };
        assert_eq!(pick(&[0.0, 0.1, 0.2], 0.2, rev), 0.2);
        assert_eq!(pick(&[0.0, 0.1, 0.2], 0.0, rev), 0.1);
        // Ties are relative (RETURN_REL_EPS = 1e-9 of the best): revenues
        // of 1e6 and 1e6 - 1e-4 tie (1e-4 <= 1e-3), so the one in use
        // stays.
        let near = |c: f64| if c == 0.1 { 1e6 - 1e-4 } else { 1e6 };
        assert_eq!(pick(&[0.0, 0.1], 0.1, near), 0.1);
    }

    #[test]
    fn dvqops_forgets_arrivals_no_replay_needs() {
        // A window of 3.6 s and one arrival a second: after 5000 arrivals
        // the history holds far fewer than 5000 (only those since the last
        // tuning are needed; it is trimmed in batches).
        for adapt in [false, true] {
            let cfg = PolicyConfig {
                rollback_window_hours: 0.001,
                rollback_candidates_hours: vec![0.001, 0.002],
                max_rollback_window_hours: 0.004,
                adapt_rollback_window: adapt,
                ..PolicyConfig::default()
            };
            let mut d = Qops::dvqops(&cfg, &specs(2));
            let mut out = Vec::new();
            for k in 0..5000u64 {
                let t = k as f64;
                let _ = d.submit(t, &j(k + 1, t, 0.5, 1, 5.0, 1.0));
                // Trimmed consistently: each snapshot's first arrival is
                // still the one that came at its instant.
                let tuning = d.tuning.as_ref().expect("dvqops tunes");
                let oc = tuning.oc.as_ref().expect("started");
                assert_eq!(tuning.history[oc.snap_from].details.submit_time, oc.snap_at);
                if let Some((at, _, from)) = &tuning.window_snap {
                    assert_eq!(tuning.history[*from].details.submit_time, *at);
                }
                assert_eq!(tuning.window_snap.is_some(), adapt);
                out.clear();
                d.schedule(t, &mut out);
                for s in starts(&out) {
                    d.finished(t + 0.5, s.0);
                }
            }
            let kept = d.tuning.as_ref().expect("dvqops tunes").history.len();
            assert!(kept < 2100, "{adapt}: {kept}");
        }
    }

    /// DVQoPS keeps its rollback window when the candidates tie: windows
    /// of 1 h and 2 h, starting at 2 h, re-chosen every 4 h from the first
    /// arrival. Job 1 (RE 10, D 100, price 1) arrives at 10 s and starts
    /// the periods: the next choice is due at 4 h + 10 s, and an arrival at
    /// 1 h does not move it. The arrival at 4 h + 10 s is due: replayed
    /// under either window, the jobs earn their prices, 2: a tie, so the
    /// window in use, 2 h, stays (the first candidate, 1 h, only if the
    /// current one were not among the tied), and the next choice is 4 h
    /// later, at 8 h + 10 s. Without `adapt_rollback_window` no choice is ever due.
    #[test]
    fn dvqops_keeps_its_rollback_window_on_a_tie() {
        for adapt in [true, false] {
            let cfg = PolicyConfig {
                rollback_window_hours: 2.0,
                rollback_candidates_hours: vec![1.0, 2.0],
                max_rollback_window_hours: 4.0,
                adapt_rollback_window: adapt,
                ..PolicyConfig::default()
            };
            let mut d = Qops::dvqops(&cfg, &specs(1));
            let mut out = Vec::new();
            let due = |d: &Qops| d.tuning.as_ref().expect("dvqops tunes").next_window;
            let never = Time::INFINITY;
            for (id, t, next) in [
                (1, 10.0, if adapt { 4.0 * HOUR + 10.0 } else { never }),
                (2, HOUR, if adapt { 4.0 * HOUR + 10.0 } else { never }),
                (
                    3,
                    4.0 * HOUR + 10.0,
                    if adapt { 8.0 * HOUR + 10.0 } else { never },
                ),
            ] {
                assert!(d.submit(t, &j(id, t, 10.0, 1, 100.0, 1.0)).is_none());
                out.clear();
                d.schedule(t, &mut out);
                d.finished(t + 10.0, id);
                assert_eq!(due(&d), next, "adapt {adapt}, job {id}");
            }
            let tuning = d.tuning.as_ref().expect("dvqops tunes");
            assert_eq!(tuning.rollback_window(), 2.0 * HOUR, "adapt {adapt}");
        }
    }

    #[test]
    fn dvqops_chooses_the_oc_factor_the_recent_past_rewards() {
        // 1 processor, candidates 0, 0.05, 0.1, starting at 0, window 1 h.
        // t = 0: A normal, RE 1000, DT 5000, price 100. t = 10: U urgent,
        // RE 1000, DT 1110, price 1000.
        // With OC 0 (and 0.05: 100 > 0.05 x 1000 = 50) A is taken and runs
        // [0, 1000) at full price 100; U cannot finish by 1110 behind it:
        // revenue 100. With 0.1 A's gain 100 is not > 0.1 x 1000 = 100: A
        // is refused, U runs [10, 1010), its earliest finish: 1000. So at
        // the first arrival after 1 h, DVQoPS switches to 0.1.
        let cfg = PolicyConfig {
            oc_factor: 0.0,
            oc_candidates: vec![0.0, 0.05, 0.1],
            rollback_window_hours: 1.0,
            adapt_rollback_window: false,
            ..PolicyConfig::default()
        };
        let mut d = Qops::dvqops(&cfg, &specs(1));
        let mut out = Vec::new();
        assert!(d
            .submit(0.0, &j(1, 0.0, 1000.0, 1, 5000.0, 100.0))
            .is_none());
        d.schedule(0.0, &mut out);
        assert_eq!(
            reason(d.submit(10.0, &j(2, 10.0, 1000.0, 1, 1100.0, 1000.0))),
            Some(RejectReason::Deadline)
        );
        d.schedule(10.0, &mut out);
        d.finished(1000.0, 1);
        d.schedule(1000.0, &mut out);
        assert_eq!(d.oc_factor(), 0.0);
        let _ = d.submit(3600.0, &j(3, 3600.0, 1.0, 1, 5.0, 0.1));
        assert_eq!(d.oc_factor(), 0.1);
        // The replays behind it, by hand.
        let planner = Planner::new(&cfg, &specs(1), Some(0.0));
        let jobs = [
            j(1, 0.0, 1000.0, 1, 5000.0, 100.0),
            j(2, 10.0, 1000.0, 1, 1100.0, 1000.0),
        ];
        for (oc, want) in [(0.0, 100.0), (0.05, 100.0), (0.1, 1000.0)] {
            let mut c = planner.clone();
            c.oc = Some(oc);
            assert!(
                (replay(&mut c, 0.0, &jobs, None) - want).abs() < 1e-9,
                "{oc}"
            );
        }
    }

    /// A rollback window of 0 re-chooses the OC-Factor at every arrival,
    /// and the first choice has no arrival before it to replay: the factor
    /// stays `oc_factor`, here 1, though it is not a candidate (the
    /// candidates are 0 only). 1 processor. A (RE 100, P 1, D 1000, price
    /// 10) at 0: the choice is due at once (0 >= 0 + 0), nothing to replay,
    /// OC 1: A would end at 100 = AT + RE, full price, a gain of 10, not
    /// above 1 x 1 x 100 = 100: refused (Return). B, the same at 10: due
    /// again, and the replay of A under the one candidate, 0, earns A's 10:
    /// 0 is chosen (1, not a candidate, cannot be kept), and B's gain of 10
    /// beats 0 x 100: accepted. Re-choosing over no arrival would make
    /// every candidate tie at revenue 0 and take the first, 0, before A.
    #[test]
    fn dvqops_keeps_its_initial_oc_factor_until_an_arrival_is_replayed() {
        let cfg = PolicyConfig {
            oc_factor: 1.0,
            oc_candidates: vec![0.0],
            rollback_window_hours: 0.0,
            adapt_rollback_window: false,
            ..PolicyConfig::default()
        };
        let mut d = Qops::dvqops(&cfg, &specs(1));
        assert_eq!(
            reason(d.submit(0.0, &j(1, 0.0, 100.0, 1, 1000.0, 10.0))),
            Some(RejectReason::Return)
        );
        assert_eq!(d.oc_factor(), 1.0);
        assert!(d
            .submit(10.0, &j(2, 10.0, 100.0, 1, 1000.0, 10.0))
            .is_none());
        assert_eq!(d.oc_factor(), 0.0);
        let mut out = Vec::new();
        d.schedule(10.0, &mut out);
        assert_eq!(starts(&out), vec![(2, 10.0)]);
    }

    /// The window's replays re-choose the OC-Factor at arrivals, as DVQoPS
    /// does, and that choice can decide the window. 1 processor,
    /// `oc_factor` 1, OC candidates 0 only; windows 4 h (in use) and 1 h,
    /// re-chosen every 2 h. A at 0 and B at 5000 (each RE 100, P 1, D
    /// 1000, price 10): neither choice is due (4 h = 14400 s, 2 h = 7200
    /// s), and under OC 1 each gain of 10 is not above 1 x 1 x 100 = 100:
    /// both refused (Return). C, the same at 8000: the window's choice is
    /// due, replaying A and B from the empty plan at 0:
    /// - window 4 h: no OC choice falls due before 14400, A and B are
    ///   refused as they were: revenue 0;
    /// - window 1 h: at B's arrival (5000 >= 3600) the OC choice replays A
    ///   under 0 (A runs [0, 100) at full price, 10) and takes 0, so B is
    ///   accepted and runs [5000, 5100) at full price: revenue 10.
    ///
    /// 1 h wins (10 > 0). Its OC choice is due from 0 + 3600, so at 8000
    /// the OC-Factor is re-chosen over A and B (0 earns 20): 0, and C is
    /// accepted. Had the window's replays re-chosen the OC-Factor only
    /// between arrivals, both windows would earn 0, 4 h would stay and C
    /// would be refused under OC 1.
    #[test]
    fn dvqops_chooses_the_window_whose_oc_choices_earn_most() {
        let cfg = PolicyConfig {
            oc_factor: 1.0,
            oc_candidates: vec![0.0],
            rollback_window_hours: 4.0,
            rollback_candidates_hours: vec![4.0, 1.0],
            max_rollback_window_hours: 2.0,
            adapt_rollback_window: true,
            ..PolicyConfig::default()
        };
        let mut d = Qops::dvqops(&cfg, &specs(1));
        let job = |id, t| j(id, t, 100.0, 1, 1000.0, 10.0);
        assert_eq!(
            reason(d.submit(0.0, &job(1, 0.0))),
            Some(RejectReason::Return)
        );
        assert_eq!(
            reason(d.submit(5000.0, &job(2, 5000.0))),
            Some(RejectReason::Return)
        );
        assert!(d.submit(8000.0, &job(3, 8000.0)).is_none());
        assert_eq!(d.tuning.as_ref().map(Tuning::rollback_window), Some(HOUR));
        assert_eq!(d.oc_factor(), 0.0);
        // The replays behind the window's choice, by hand.
        let planner = Planner::new(&cfg, &specs(1), Some(1.0));
        let jobs = [job(1, 0.0), job(2, 5000.0)];
        for (w, want) in [(4.0 * HOUR, 0.0), (HOUR, 10.0)] {
            let mut c = planner.clone();
            let mut t = Tuner::new(0.0, w, &c, 0, &cfg.oc_candidates);
            assert_eq!(replay(&mut c, 0.0, &jobs, Some(&mut t)), want, "{w}");
        }
    }
}
