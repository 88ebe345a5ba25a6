//! LibraSLA (its paper's Algorithms 1 and 2): admission by the return of
//! nodes. A job's utility is its budget less its penalty for delay,
//! `utility_i = B_i - max(0, delay_i) PR_i`; its return on node j is
//! `utility_ij / RE_i / D_i`; a node's return is the sum over its jobs. A
//! node is suitable if its return does not drop when the new job joins
//! (and, for a hard deadline, the new job is not delayed there); the job
//! goes to the `P_i` suitable nodes with the highest new return.
//!
//! Delays come from the same fluid node model the simulator runs
//! ([`crate::node_model::project_finishes`]), on estimates, under the node
//! rule LibraSLA runs with, [`SpareRule::Sla`]: spare capacity to the
//! highest-return job; on a short node the soft-deadline jobs other than
//! the highest-return one share the shortfall, hard-deadline jobs keep
//! their share. So what the admission projects is what the nodes do.

use super::steps::{
    bounds_apply, idle_groups_stand_in, idle_stand_ins, resource_filter, too_many_processors,
    top_k, Better, TopKeys, SHARE_SUM_EPS,
};
use super::{Accept, AdmissionPolicy, BoundedReads, Decision, PolicyConfig, RejectReason};
use crate::busy_index::{BusyIndex, PartFn, LATE_LEVELS, LATE_MIN_SHARE};
use crate::job::{DeadlineType, JobSpec};
use crate::node_model::{
    delay_past, project_finishes_unless_late, project_finishes_with, NodeState, PartValue,
    PartView, Projection,
};
use crate::share::{ShareInput, SpareRule};
use crate::time::{Time, DEADLINE_TOLERANCE, KEY_TIE_EPS, TIME_EPS};

/// A new node return counts as "not lower" than the old one when it is
/// below by at most this fraction of the larger of the two: both are sums
/// of the same terms plus one, and rounding must not refuse a job whose
/// return is exactly zero (budget 0).
pub const RETURN_REL_EPS: f64 = 1e-9;

/// What LibraSLA projects for one node.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NodeReturn {
    /// The node's return now (without the new job).
    pub old: f64,
    /// Its return with the new job.
    pub new: f64,
    /// The new job's projected delay there.
    pub new_delay: Time,
}

/// LibraSLA's admission control.
pub struct LibraSla {
    cfg: PolicyConfig,
    res: Vec<usize>,
    cands: Vec<(usize, f64)>,
    /// Idle nodes standing in for their speed group (indexed decisions).
    idle: Vec<(usize, f64)>,
    finish: Vec<Time>,
    proj: Projection,
    /// The `P` best new returns of a walk by return (the `P`-th on top).
    best: TopKeys,
    /// A busy node brought up to the instant from the index's record of
    /// its parts (walks by return).
    scratch: Option<NodeState>,
    /// The busy nodes a walk by return found the job late on without
    /// telling why they are no candidate (the index's late deadlines,
    /// [`LateCheck::late_for_certain_counted`], the projection with the
    /// job).
    late: Vec<usize>,
    late_check: LateCheck,
    /// A node's parts as they stand, for the lateness certificate.
    fns: Vec<PartFn>,
}

/// Room on a node's bound `sum + r` in the walk's stop: the bound holds in
/// floats as it is (see [`LibraSla::decide_by_returns`]), this is a margin
/// against a slip in that argument, at the cost of walking the nodes
/// within `1e-12` of the stop.
const BOUND_ROOM: f64 = 1e-12;

/// Debug builds check every busy node a walk by return left out against
/// its projection (that its new return ranks below the choice) up to this
/// many busy nodes: the check projects each of them.
#[cfg(debug_assertions)]
const DEBUG_CHECK_UP_TO: usize = 4096;

/// How long before the new part's deadline the certificate's argument may
/// stop holding (`TIME_EPS / LATE_MIN_SHARE`): in that window a counted
/// part may snap to overdue and the new part get up to the whole node.
const LATE_WINDOW: Time = TIME_EPS / LATE_MIN_SHARE;

/// Work (seconds) the certificate must leave the new part at its deadline
/// beyond [`LATE_WINDOW`]: it covers the finish's snap ([`TIME_EPS`]), the
/// delay's tolerance ([`DEADLINE_TOLERANCE`]) and the rounding of the
/// projection's event loop, with room to spare.
const LATE_ABS_ROOM: Time = 1e3 * (TIME_EPS + DEADLINE_TOLERANCE);

/// Relative room the certificate takes off each of its inputs and its
/// result (it is monotone in each), and, times the deadline, off the work
/// left (the projection's times are absolute).
const LATE_REL_ROOM: f64 = 1e-9;

#[cfg(test)]
thread_local! {
    /// Busy nodes the walk by return left out by its stop (tests check
    /// that the walk stops early).
    pub static RETURN_LEFT: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Nodes whose new return `node_return` took from its shortcut.
    static NEW_SHORTCUTS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Nodes whose old return alone `node_return` took from the shortcut.
    static OLD_SHORTCUTS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Nodes the walk by return did not try the shortcut on, their load
    /// floor leaving no room for the job.
    static FLOOR_SKIPS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Nodes the walk by return classified from the index's shortcut.
    static INDEX_SHORTCUTS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Nodes the walk by return settled from the lateness certificate.
    pub static LATE_CERTAIN: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Nodes the walk by return settled from the index's late deadlines.
    pub static LATE_SUMMARY: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Nodes the walk by return settled from their projection with the
    /// job alone (the job late there).
    pub static LATE_PROJECTED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Counts one shortcut taken in `counter` (test builds; out of the
/// decision's code, which the mutation run mutates).
#[cfg(test)]
fn count_shortcut(counter: &'static std::thread::LocalKey<std::cell::Cell<u64>>) {
    counter.with(|c| c.set(c.get() + 1));
}

/// Counts in [`RETURN_LEFT`] the node the stop met and the `rest` after
/// it: a test-only function, out of the walk, so that the mutation run
/// (which skips `#[cfg(test)]` items) mutates the walk, not this count.
#[cfg(test)]
fn count_left<T>(rest: impl Iterator<Item = T>) {
    RETURN_LEFT.with(|c| c.set(c.get() + 1 + rest.count() as u64));
}

impl LibraSla {
    /// LibraSLA with these knobs (`sla_return_per_part`, and the shortcut
    /// switch shared with LibraRisk; its node rule is always
    /// [`SpareRule::Sla`], whatever `spare_rule` says).
    pub fn new(cfg: PolicyConfig) -> LibraSla {
        LibraSla {
            cfg,
            res: Vec::new(),
            cands: Vec::new(),
            idle: Vec::new(),
            finish: Vec::new(),
            proj: Projection::default(),
            best: TopKeys::default(),
            scratch: None,
            late: Vec::new(),
            late_check: LateCheck::default(),
            fns: Vec::new(),
        }
    }

    /// The job's return when on time, `B / RE / D`, and the return it
    /// loses per second of delay, `PR / RE / D` (equation 5 with equation
    /// 1 for the utility). With `per_part`, both are divided by `P`: each
    /// of the job's `P` nodes then counts its share of the job's utility
    /// rather than all of it (see `sla_return_per_part`).
    pub fn value(job: &JobSpec, per_part: bool) -> PartValue {
        let mut scale = job.estimate() * job.qos.deadline;
        if per_part {
            scale *= job.processors() as f64;
        }
        PartValue {
            ret: job.qos.budget / scale,
            ret_penalty: job.qos.penalty_rate / scale,
        }
    }

    /// Sum of the parts' returns on `node`, each `ret - delay x
    /// ret_penalty` with the delay projected for `node`'s parts plus `new`
    /// (if any); and the delay of `new`.
    fn projected(&mut self, now: Time, node: &NodeState, new: Option<&PartView>) -> (f64, Time) {
        project_finishes_with(
            node,
            new,
            now,
            SpareRule::Sla,
            &mut self.proj,
            &mut self.finish,
        );
        self.returns_of(node, new)
    }

    /// [`Self::projected`] with `new`, or `None` where the projection
    /// stopped on `new` certainly late
    /// ([`project_finishes_unless_late`]).
    fn projected_unless_late(
        &mut self,
        now: Time,
        node: &NodeState,
        new: &PartView,
    ) -> Option<(f64, Time)> {
        let whole = project_finishes_unless_late(
            node,
            new,
            now,
            SpareRule::Sla,
            &mut self.proj,
            &mut self.finish,
        );
        whole.then(|| self.returns_of(node, Some(new)))
    }

    /// The sum of the returns and the delay of `new` from the finishes
    /// projected in `self.finish` (see [`Self::projected`]).
    fn returns_of(&self, node: &NodeState, new: Option<&PartView>) -> (f64, Time) {
        let mut total = 0.0;
        let mut last_delay = 0.0;
        for (p, &f) in node.parts.iter().chain(new).zip(&self.finish) {
            let delay = delay_past(f, p.deadline);
            total += p.ret - delay * p.ret_penalty;
            last_delay = delay;
        }
        (total, if new.is_some() { last_delay } else { 0.0 })
    }

    /// Algorithm 2 for one node: its return without and with one part of
    /// `job`, and the job's delay there.
    pub fn node_return(&mut self, now: Time, node: &NodeState, job: &JobSpec) -> NodeReturn {
        self.node_return_unless_late(now, node, job, false)
            .expect("goes on when late")
    }

    /// [`Self::node_return`], or `None` when `stop_if_late` and the job's
    /// part would be late on the node (`new_delay > 0`): such a node is no
    /// candidate of a hard job whatever its returns, so its projection
    /// without the job is spared.
    fn node_return_unless_late(
        &mut self,
        now: Time,
        node: &NodeState,
        job: &JobSpec,
        stop_if_late: bool,
    ) -> Option<NodeReturn> {
        let new = node.new_valued_part(job, LibraSla::value(job, self.cfg.sla_return_per_part));
        let no_deadline_passed = node.parts.iter().all(|p| p.deadline - now > TIME_EPS);
        let q_old = node.required_share(now);
        let q_new = q_old + node.est_cpu(job) / job.qos.deadline;
        if self.cfg.risk_shortcut && no_deadline_passed && q_new <= 1.0 + SHARE_SUM_EPS {
            // Not short even with the new job: every part gets at least
            // its q and finishes by its deadline, so every utility is the
            // budget and the return only grows by the new job's.
            #[cfg(test)]
            count_shortcut(&NEW_SHORTCUTS);
            let old: f64 = node.parts.iter().map(|p| p.ret).sum();
            return Some(NodeReturn {
                old,
                new: old + new.ret,
                new_delay: 0.0,
            });
        }
        // The two projections are independent: the one with the job first,
        // stopped where the job is sure to be late if that is all that
        // matters.
        let (new_ret, new_delay) = if stop_if_late {
            self.projected_unless_late(now, node, &new)?
        } else {
            self.projected(now, node, Some(&new))
        };
        if stop_if_late && new_delay > 0.0 {
            return None;
        }
        let old = if self.cfg.risk_shortcut && no_deadline_passed && q_old <= 1.0 + SHARE_SUM_EPS {
            #[cfg(test)]
            count_shortcut(&OLD_SHORTCUTS);
            node.parts.iter().map(|p| p.ret).sum()
        } else {
            self.projected(now, node, None).0
        };
        Some(NodeReturn {
            old,
            new: new_ret,
            new_delay,
        })
    }
}

/// Whether `new` is not lower than `old` (see [`RETURN_REL_EPS`]).
fn not_lower(new: f64, old: f64) -> bool {
    new >= old - RETURN_REL_EPS * old.abs().max(new.abs())
}

/// A node's verdict from its returns: its new return (`Ok`), or why it is
/// not a candidate (`Err(true)`: its return would drop; `Err(false)`: the
/// job's hard deadline would be missed there).
fn verdict(r: NodeReturn, hard: bool) -> Result<f64, bool> {
    if !not_lower(r.new, r.old) {
        Err(true)
    } else if hard && r.new_delay > 0.0 {
        Err(false)
    } else {
        Ok(r.new)
    }
}

/// LibraSLA's certificate that a hard job's part would be late on a
/// node, from the index's record of the node's parts without projecting
/// it (a projection costs microseconds; this, a pass or a few over the
/// parts).
#[derive(Debug, Clone, Default)]
struct LateCheck {
    /// The counted parts due before the new one, by deadline, as
    /// gathered, and their shares added up.
    early0: Vec<Counted>,
    q_early0: f64,
    /// The counted parts due with it or after it, and their sum.
    long0: Vec<Counted>,
    q_long0: f64,
    /// A pass's copies of the two, their shares grown phase by phase.
    early: Vec<Counted>,
    long: Vec<Counted>,
}

/// A part [`LateCheck`] counts: its deadline (an offset from the
/// instant) and a lower bound on its required share at the instant (the
/// share itself on nodes as they stand, its least over the node's bound's
/// window on the walk by return), so one on it from then on.
#[derive(Debug, Clone, Copy)]
struct Counted {
    d: f64,
    q: f64,
}

impl Counted {
    /// The shares of `cs` added up, in their order.
    fn sum(cs: &[Counted]) -> f64 {
        cs.iter().map(|c| c.q).sum()
    }
}

impl LateCheck {
    /// Whether hard part `new`, placed at `now` on a node whose parts the
    /// index records as `fns`, is certain to end more than
    /// [`DEADLINE_TOLERANCE`] past its deadline in LibraSLA's projection
    /// ([`crate::node_model::project_finishes`] under [`SpareRule::Sla`],
    /// from the node brought to `now`).
    ///
    /// Why (in real numbers; the constants' room covers the floats). Count
    /// the node's hard parts that are on-track with a required share `q`
    /// of at least [`LATE_MIN_SHARE`], and the new part:
    /// 1. **Short stays short.** These parts are protected
    ///    ([`SpareRule::Sla`]: hard parts keep their share unless the
    ///    protected parts need more than the node's `cap <= 1`). While the
    ///    counted parts' `q` add up to more than 1, each gets its `q` times
    ///    `cap / q_protected < 1`, so none gets its `q`: every one's `q =
    ///    rem / rd` only grows between the node's events (and is continuous
    ///    across them), so the sum stays above 1 until a counted part
    ///    leaves the track, which happens only at its deadline (it cannot
    ///    finish early). A counted part keeps more than [`TIME_EPS`] of
    ///    work until [`LATE_WINDOW`] before its deadline, so it is counted
    ///    until then.
    /// 2. **Phases.** Between the deadlines (less [`LATE_WINDOW`]) of the
    ///    counted parts due before the new one, with `Q > 1` the counted
    ///    sum at a phase's start, the new part gets at most `q / Q` of the
    ///    node, and its `q` only grows while shares stand still between
    ///    events, so its work left is at least the solution of `R' = -R /
    ///    (rd Q)`: `rem (rd_end / rd_start)^(1 / Q)` at the phase's end (a
    ///    supersolution of a Lipschitz equation against its solution).
    ///    Once the work left exceeds the time left (step 4's room
    ///    included), it is late whatever comes next. Each other counted
    ///    part's `q` is, by the same argument on its own work left, at
    ///    least `q (rd_start / rd_end)^(1 - 1 / Q)` at the phase's end. A
    ///    first pass takes each power at a cheaper lower bound,
    ///    [`at_least_power`]; a second, when the first does not settle the
    ///    node, the powers themselves.
    /// 3. **The last stretch.** With `x` the new part's `q` and `c` the
    ///    counted parts due with it or after it, while `x + c > 1` its share
    ///    is at most `g(x) = x / (x + c)`, and its work left at its deadline
    ///    is at least the limit of the solution of `R' = -g(R / rd)`:
    ///    `rem (x / (x + c - 1))^(1 / (c - 1))` ([`work_left_bound`]).
    /// 4. **The snaps.** From [`LATE_WINDOW`] before its deadline on the
    ///    new part gets at most the whole node, so it ends at least the
    ///    bound less `LATE_WINDOW + TIME_EPS` late, which [`LATE_ABS_ROOM`]
    ///    keeps above the tolerance. (Also, trivially, it has at least `rem
    ///    - rd` left at its deadline.)
    fn late_for_certain(&mut self, now: Time, fns: &[PartFn], new: &PartView) -> bool {
        let b = new.share_input(now);
        if !new.hard || b.required() <= 0.0 {
            return false;
        }
        self.gather(now, fns, new);
        self.passes(new, &b)
    }

    /// Gathers the counted parts of a node whose parts at `now` are
    /// `fns`, for hard part `new`.
    fn gather(&mut self, now: Time, fns: &[PartFn], new: &PartView) {
        self.early0.clear();
        self.long0.clear();
        for f in fns {
            // An early part within LATE_WINDOW of its deadline may leave
            // the track at any moment: not counted.
            let long = f.deadline >= new.deadline;
            if f.hard && (long || f.deadline - now - LATE_WINDOW > 0.0) {
                let q = f.required(now);
                if q >= LATE_MIN_SHARE {
                    self.count(now, f.deadline, q, long);
                }
            }
        }
        // Summed in the parts' order; the phases end at the early parts'
        // deadlines, in turn.
        self.q_early0 = Counted::sum(&self.early0);
        self.q_long0 = Counted::sum(&self.long0);
        self.early0.sort_unstable_by(|a, b| a.d.total_cmp(&b.d));
    }

    /// Counts a part due at `deadline` whose share is at least `q` at
    /// `now`, among the long ones (due with the new part or after it) or
    /// the early ones.
    fn count(&mut self, now: Time, deadline: Time, q: f64, long: bool) {
        let c = Counted {
            d: deadline - now,
            q,
        };
        if long {
            self.long0.push(c);
        } else {
            self.early0.push(c);
        }
    }

    /// [`Self::late_for_certain`] on the index's record of a node's
    /// counted parts, `counted` ([`BusyIndex::late_parts`]: its hard
    /// parts' deadlines and the least required share each has over the
    /// node's bound's window, those at least [`LATE_MIN_SHARE`], by
    /// deadline), rather than on its parts at `now`. The argument holds
    /// for any subset of the hard parts on track with lower bounds of
    /// their shares at `now` (the sums only need lower bounds, and the new
    /// part's share is bounded above by its own over them), and a share's
    /// least over the window is at most its share at `now` (in floats to
    /// an ulp or so, which the 1e-9 rooms cover), so the certificate holds
    /// as it is. It is usually a little weaker (smaller shares; a part
    /// whose least is below [`LATE_MIN_SHARE`] is not counted, nor its
    /// phase), and reads 16 bytes a part, already in order, where the
    /// parts are 48 and each share a division.
    fn late_for_certain_counted(
        &mut self,
        now: Time,
        counted: &[(f64, f64)],
        new: &PartView,
    ) -> bool {
        let b = new.share_input(now);
        if !new.hard || b.required() <= 0.0 {
            return false;
        }
        self.early0.clear();
        self.long0.clear();
        for &(deadline, q) in counted {
            let long = deadline >= new.deadline;
            if long || deadline - now - LATE_WINDOW > 0.0 {
                self.count(now, deadline, q, long);
            }
        }
        self.q_early0 = Counted::sum(&self.early0);
        self.q_long0 = Counted::sum(&self.long0);
        debug_assert!(self.early0.is_sorted_by(|a, b| a.d <= b.d));
        self.passes(new, &b)
    }

    /// The certificate on the counted parts gathered: the powers' harmonic-mean
    /// bounds settle most nodes at a division a part and phase; the powers
    /// themselves (a `powf` each) most of the rest.
    fn passes(&mut self, new: &PartView, b: &ShareInput) -> bool {
        let short = (b.required() + self.q_long0 + self.q_early0) * (1.0 - LATE_REL_ROOM) > 1.0;
        if !short {
            // Never short: no phase, and the last stretch's x + c <= 1.
            return false;
        }
        self.late_bound(new, b, false) || self.late_bound(new, b, true)
    }

    /// [`Self::late_for_certain`] for `b`, `new`'s share input, on the
    /// counted parts gathered, with the powers taken `exact` or at their
    /// lower bound [`at_least_power`].
    fn late_bound(&mut self, new: &PartView, b: &ShareInput, exact: bool) -> bool {
        // Times are offsets from `now`; each time to a deadline is taken
        // an upper bound (or a lower one, where that is the safe side),
        // with room for the rounding of the subtraction.
        let rd_hi = |d: f64, tau: f64| (d - tau) + LATE_REL_ROOM * (d + tau);
        let rd_lo = |d: f64, tau: f64| (d - tau) - LATE_REL_ROOM * (d + tau);
        let d_b = b.rd;
        // The work the new part must have left at its deadline (step 4).
        let need = LATE_WINDOW + LATE_ABS_ROOM + LATE_REL_ROOM * new.deadline.abs();
        // Each pass grows its own copy of the counted shares.
        self.early.clone_from(&self.early0);
        self.long.clone_from(&self.long0);
        // The counted shares of the early parts still counted, and of the
        // long ones.
        let mut q_early = self.q_early0;
        let mut q_long = self.q_long0;
        let mut rem_b = b.rem;
        let mut tau = 0.0;
        let mut first = 0;
        while first < self.early.len() {
            let next = self.early[first].d - LATE_WINDOW;
            if next >= d_b - LATE_WINDOW {
                break;
            }
            let q_sum = rem_b / rd_hi(d_b, tau) + q_long + q_early;
            let q_lo = q_sum * (1.0 - LATE_REL_ROOM);
            let short = q_lo > 1.0;
            if !short {
                break;
            }
            // next > tau: every early part left is further than
            // LATE_WINDOW from its deadline at tau.
            let ratio = rd_lo(d_b, next) / rd_hi(d_b, tau);
            rem_b *= at_least_power(ratio.max(0.0), 1.0 / q_lo, exact) * (1.0 - LATE_REL_ROOM);
            if rem_b - rd_hi(d_b, next) > need {
                // More work left than time: late whatever comes next.
                return true;
            }
            while first < self.early.len() && self.early[first].d - LATE_WINDOW <= next {
                first += 1;
            }
            // The others' shares grow as their work left shrinks at most
            // as fast: q (rd_start / rd_end)^(1 - 1 / Q) at the end.
            let grow = 1.0 - 1.0 / q_lo;
            let grown = |cs: &mut [Counted]| {
                let mut q = 0.0;
                for c in cs {
                    let ratio = rd_lo(c.d, tau) / rd_hi(c.d, next);
                    c.q *= at_least_power(ratio.max(1.0), grow, exact) * (1.0 - LATE_REL_ROOM);
                    q += c.q;
                }
                q
            };
            q_early = grown(&mut self.early[first..]);
            q_long = grown(&mut self.long);
            tau = next;
        }
        let rd_b = rd_hi(d_b, tau);
        rem_b - rd_b.max(0.0) > need
            || (rd_b > LATE_WINDOW && work_left_bound(rem_b, rem_b / rd_b, q_long) > need)
    }
}

/// A lower bound on `r^a` for `r > 0` and `a` in `[0, 1]`: the power
/// itself (`exact`), or, at a division rather than a `powf`, the weighted
/// harmonic mean of `r` and 1 (weights `a`, `1 - a`), which is at most
/// their geometric mean `r^a`.
fn at_least_power(r: f64, a: f64, exact: bool) -> f64 {
    if exact {
        r.powf(a)
    } else {
        r / (a + (1.0 - a) * r)
    }
}

/// A lower bound on the work a part of `rem0` left and required share
/// `x0` still has at its deadline when it shares the node with protected
/// parts whose required shares, `c` at the start, only grow:
/// `rem0 (x0 / (x0 + c - 1))^(1 / (c - 1))` (see [`LateCheck::late_for_certain`]), 0
/// unless `x0 + c > 1`. The bound grows with each input, so it is taken
/// from each less [`LATE_REL_ROOM`].
fn work_left_bound(rem0: f64, x0: f64, c: f64) -> f64 {
    let x = x0 * (1.0 - LATE_REL_ROOM);
    let d = c * (1.0 - LATE_REL_ROOM) - 1.0;
    // Not short, or a NaN.
    let short = x + d > 0.0;
    if !short {
        return 0.0;
    }
    // ln of the factor: -ln(1 + d / x) / d, whose limit at d = 0 is -1/x;
    // ln_1p keeps it accurate for d near 0.
    let ln = if d == 0.0 {
        -1.0 / x
    } else {
        -(d / x).ln_1p() / d
    };
    rem0 * (1.0 - LATE_REL_ROOM) * ln.exp() * (1.0 - LATE_REL_ROOM)
}

impl AdmissionPolicy for LibraSla {
    fn name(&self) -> &'static str {
        "libra-sla"
    }

    fn spare_rule(&self) -> SpareRule {
        SpareRule::Sla
    }

    fn part_value(&self, job: &JobSpec) -> PartValue {
        LibraSla::value(job, self.cfg.sla_return_per_part)
    }

    /// The walk by return only with the shortcut (`decide_by_returns`).
    fn bounded_reads(&self) -> Option<BoundedReads> {
        self.cfg.risk_shortcut.then_some(BoundedReads::ReturnOrder)
    }

    fn decide_bounded(
        &mut self,
        now: Time,
        nodes: &[NodeState],
        index: &BusyIndex,
        job: &JobSpec,
    ) -> Option<Decision> {
        self.decide_by_returns(now, nodes, index, job)
    }

    fn decide_indexed(
        &mut self,
        now: Time,
        nodes: &[NodeState],
        index: &BusyIndex,
        job: &JobSpec,
    ) -> Decision {
        if !idle_groups_stand_in(index, job) {
            return self.decide(now, nodes, job);
        }
        if let Some(d) = self.precheck(nodes, job) {
            return d;
        }
        // Every node has what the job needs (no memory or disk), and there
        // are at least P of them: the resource filter passes.
        let hard = job.qos.deadline_type == DeadlineType::Hard;
        let (mut lower, mut delayed) = (0, 0);
        self.cands.clear();
        let mut late = std::mem::take(&mut self.late);
        late.clear();
        for k in index.busy() {
            #[cfg(test)]
            super::steps::count_read(1);
            match self.classify_standing(now, &nodes[k], job, hard) {
                Some(Ok(ret)) => self.cands.push((k, ret)),
                Some(Err(true)) => lower += 1,
                Some(Err(false)) => delayed += 1,
                None => late.push(k),
            }
        }
        let busy_end = self.cands.len();
        let (idle_lower, idle_delayed) = self.classify_idle(now, nodes, index, job, hard);
        if !self.idle.is_empty() {
            self.cands.extend_from_slice(&self.idle);
        }
        (lower, delayed) = self.count_late(now, nodes, job, hard, &late, (lower, delayed));
        self.late = late;
        // The busy nodes came in node order; the idle stand-ins (and any
        // late node the certificate missed) are merged in.
        super::steps::into_node_order(&mut self.cands, busy_end);
        self.choose(job, hard, lower + idle_lower, delayed + idle_delayed)
    }

    fn decide(&mut self, now: Time, nodes: &[NodeState], job: &JobSpec) -> Decision {
        if let Some(d) = self.precheck(nodes, job) {
            return d;
        }
        let mut res = std::mem::take(&mut self.res);
        if let Some(d) = resource_filter(nodes, job, &mut res) {
            self.res = res;
            return d;
        }
        let hard = job.qos.deadline_type == DeadlineType::Hard;
        let (mut lower, mut delayed) = (0, 0);
        self.cands.clear();
        let mut late = std::mem::take(&mut self.late);
        late.clear();
        for &k in &res {
            match self.classify_standing(now, &nodes[k], job, hard) {
                Some(Ok(ret)) => self.cands.push((k, ret)),
                Some(Err(true)) => lower += 1,
                Some(Err(false)) => delayed += 1,
                None => late.push(k),
            }
        }
        self.res = res;
        (lower, delayed) = self.count_late(now, nodes, job, hard, &late, (lower, delayed));
        self.late = late;
        self.cands.sort_unstable_by_key(|c| c.0);
        self.choose(job, hard, lower, delayed)
    }
}

impl LibraSla {
    /// The checks before any node is looked at: processors, a finite
    /// budget, an estimate within the deadline.
    fn precheck(&self, nodes: &[NodeState], job: &JobSpec) -> Option<Decision> {
        if let Some(d) = too_many_processors(nodes, job) {
            return Some(d);
        }
        if !job.qos.budget.is_finite() {
            return Some(Decision::reject(
                RejectReason::Budget,
                "LibraSLA needs a finite budget: utility is the budget less penalties",
            ));
        }
        if job.estimate() > job.qos.deadline {
            // The LibraSLA paper: "the deadline given by a user for the job must be
            // more than its run time; otherwise it is not accepted".
            return Some(Decision::reject(
                RejectReason::Deadline,
                format!(
                    "runtime estimate {:.0} s exceeds the deadline {:.0} s",
                    job.estimate(),
                    job.qos.deadline
                ),
            ));
        }
        None
    }

    /// The idle nodes' verdicts into `self.idle`: an idle node's return
    /// depends on its speed alone, so one stand-in per speed group
    /// ([`idle_stand_ins`]), counted for the whole group. Returns how many
    /// idle nodes would lose return and how many would delay the job.
    fn classify_idle(
        &mut self,
        now: Time,
        nodes: &[NodeState],
        index: &BusyIndex,
        job: &JobSpec,
        hard: bool,
    ) -> (usize, usize) {
        let (mut lower, mut delayed) = (0, 0);
        let mut idle = std::mem::take(&mut self.idle);
        idle_stand_ins(
            nodes,
            index,
            job.processors(),
            &mut idle,
            |n, members| match self.classify(now, n, job, hard) {
                Ok(ret) => Some(ret),
                Err(true) => {
                    lower += members;
                    None
                }
                Err(false) => {
                    delayed += members;
                    None
                }
            },
        );
        self.idle = idle;
        (lower, delayed)
    }

    /// Node `node`'s verdict: its return with the part (`Ok`), or why it
    /// is not a candidate (`Err(true)`: its return would drop; `Err(false)`:
    /// the job's hard deadline would be missed there).
    fn classify(
        &mut self,
        now: Time,
        node: &NodeState,
        job: &JobSpec,
        hard: bool,
    ) -> Result<f64, bool> {
        verdict(self.node_return(now, node, job), hard)
    }

    /// [`Self::classify`] for the walks over nodes as they stand at `now`
    /// (the plain scan, the walk over the busy index: the simulator's,
    /// and a live core's without bounds), as [`Self::classify_indexed`]
    /// does it from the index's record: `None` when a hard job's part is
    /// certainly late on `node`, by the lateness certificate on its parts
    /// as they stand (exact there) or by its projection with the job,
    /// stopped there, without telling whether its return would drop first.
    /// Such a node is no candidate; a rejection, whose counts tell the two
    /// apart, asks [`Self::classify`] ([`Self::count_late`]).
    fn classify_standing(
        &mut self,
        now: Time,
        node: &NodeState,
        job: &JobSpec,
        hard: bool,
    ) -> Option<Result<f64, bool>> {
        if !hard || node.parts.is_empty() {
            return Some(self.classify(now, node, job, hard));
        }
        // Where `node_return` takes its shortcut (the job's share as
        // submitted), its answer is the scan's, late or not.
        let no_deadline_passed = node.parts.iter().all(|p| p.deadline - now > TIME_EPS);
        let q_new = node.required_share(now) + node.est_cpu(job) / job.qos.deadline;
        if self.cfg.risk_shortcut && no_deadline_passed && q_new <= 1.0 + SHARE_SUM_EPS {
            return Some(self.classify(now, node, job, hard));
        }
        let new = node.new_valued_part(job, self.part_value(job));
        self.fns.clear();
        self.fns.extend(node.parts.iter().map(PartFn::standing));
        if self.late_check.late_for_certain(now, &self.fns, &new) {
            #[cfg(test)]
            super::steps::count_standing_settled();
            debug_assert!(
                self.node_return(now, node, job).new_delay > 0.0,
                "node {}: certified late at {now}, the projection says on time",
                node.spec.id
            );
            return None;
        }
        self.node_return_unless_late(now, node, job, true)
            .map(|r| verdict(r, hard))
    }

    /// The counts of a decision whose walk set the nodes `late` aside
    /// ([`Self::classify_standing`]), `counts` being the others': a
    /// rejection (fewer than `P` candidates, which the walk found in
    /// full) counts each of them as [`Self::classify`] does; an accepted
    /// job's decision does not read them.
    fn count_late(
        &mut self,
        now: Time,
        nodes: &[NodeState],
        job: &JobSpec,
        hard: bool,
        late: &[usize],
        counts: (usize, usize),
    ) -> (usize, usize) {
        let (mut lower, mut delayed) = counts;
        if self.cands.len() < job.processors() {
            for &k in late {
                match self.classify(now, &nodes[k], job, hard) {
                    Err(true) => lower += 1,
                    Err(false) => delayed += 1,
                    // Never (the debug check of the certificate): the
                    // scan's candidate, should it be one.
                    Ok(ret) => self.cands.push((k, ret)),
                }
            }
        }
        (lower, delayed)
    }

    /// [`AdmissionPolicy::decide_bounded`]: [`AdmissionPolicy::decide_indexed`]
    /// without bringing every busy node up to `now` nor looking at every
    /// one. The busy nodes are walked by the sum of their parts' returns,
    /// highest first ([`BusyIndex::by_return_desc`]), each classified
    /// exactly ([`Self::classify_indexed`]), the idle nodes by one
    /// stand-in per speed as on the indexed walk; the walk stops once `P`
    /// candidates are known and the next node's bound, its sum plus the
    /// new part's return, is below the `P`-th best new return by more than
    /// [`KEY_TIE_EPS`].
    ///
    /// Why the choice is the plain scan's: a node's new return is the sum
    /// over its parts of `ret - delay x ret_penalty`, plus the new part's,
    /// each delay and penalty rate `>= 0` (penalty rates and budgets of
    /// jobs are validated `>= 0`; a node holding a part whose penalty rate
    /// is not, or whose sum is NaN, is keyed `+inf` and walked first). So
    /// each term is at most its `ret` (`ret - x <= ret` in floats for
    /// `x >= 0`) and, float addition being monotone, the projection's sum (in
    /// the order of the parts, from 0) is at most the sum of the `ret`s
    /// plus the new part's, which the shortcut computes exactly; a NaN
    /// return is never a candidate. Nodes are walked by that sum, so every
    /// node not walked has a new return below the stop's `P`-th best less
    /// the tolerance. `top_k` depends only on the candidates within
    /// [`KEY_TIE_EPS`] of the `P`-th best key, and the whole set's `P`-th
    /// best is at least the walked subset's, so the nodes left out rank
    /// below the choice, ties included. A rejection needs fewer than `P`
    /// candidates, so the walk never stopped: it classified every busy
    /// node and the counts (`lower`, `delayed`) are the scan's (idle
    /// groups as on the indexed walk).
    ///
    /// `None` (decide another way) without the shortcut, unless the job
    /// needs no memory or disk, every node has one speed and the bounds
    /// and the order are up to date ([`bounds_apply`]).
    fn decide_by_returns(
        &mut self,
        now: Time,
        nodes: &[NodeState],
        index: &BusyIndex,
        job: &JobSpec,
    ) -> Option<Decision> {
        if !self.cfg.risk_shortcut || !bounds_apply(nodes, index, job) || !index.returns_kept() {
            return None;
        }
        debug_assert_eq!(index.returns_len(), index.busy_len());
        if let Some(d) = self.precheck(nodes, job) {
            return Some(d);
        }
        // Every node has what the job needs (no memory or disk), and there
        // are at least P of them: the resource filter passes.
        let hard = job.qos.deadline_type == DeadlineType::Hard;
        let p = job.processors();
        // The job's part, the same on every node (one speed).
        let new = nodes[0].new_valued_part(job, self.part_value(job));
        let ret_new = new.ret;
        let (mut lower, mut delayed) = self.classify_idle(now, nodes, index, job, hard);
        self.cands.clear();
        self.cands.extend_from_slice(&self.idle);
        let mut best = std::mem::take(&mut self.best);
        best.reset(p);
        for c in &self.cands {
            best.take(c.1);
        }
        let mut late = std::mem::take(&mut self.late);
        late.clear();
        let mut walk = index.by_return_desc();
        let mut stop = None;
        let level = self.late_level(now, job, &new);
        for (key, k, sum) in walk.by_ref() {
            if let Some(kth) = best.kth() {
                let bound = key + ret_new;
                // A bound of -inf plus its room is NaN: never a stop (the
                // node is walked, which is always safe).
                if bound + BOUND_ROOM * bound.abs() < kth - KEY_TIE_EPS {
                    stop = Some((kth, k));
                    break;
                }
            }
            if level.is_some_and(|l| index.late_deadline(k, l) >= new.deadline) {
                // Its hard parts due with the job or after it need at
                // least the level's share: certain to be late there.
                #[cfg(test)]
                count_shortcut(&LATE_SUMMARY);
                #[cfg(debug_assertions)]
                self.debug_check_late(now, nodes, index, k, job);
                late.push(k);
                continue;
            }
            match self.classify_indexed(now, nodes, index, k, sum, job, &new) {
                Some(Ok(ret)) => {
                    self.cands.push((k, ret));
                    best.take(ret);
                }
                Some(Err(true)) => lower += 1,
                Some(Err(false)) => delayed += 1,
                None => late.push(k),
            }
        }
        if self.cands.len() < p {
            // A rejection: the walk went over every busy node, and its
            // counts tell the nodes that would lose return from those that
            // would delay the job, which the certificate does not.
            for &k in &late {
                match self.exact_classify(now, nodes, index, k, job, hard) {
                    Err(true) => lower += 1,
                    Err(false) => delayed += 1,
                    // Never (the debug check of the certificate): the
                    // scan's candidate, should it be one.
                    Ok(ret) => self.cands.push((k, ret)),
                }
            }
        }
        self.late = late;
        if let Some((_kth, _first_left)) = stop {
            #[cfg(test)]
            count_left(walk.clone());
            // Every node left out ranks below the choice.
            #[cfg(debug_assertions)]
            if index.busy_len() <= DEBUG_CHECK_UP_TO {
                for k in std::iter::once(_first_left).chain(walk.map(|w| w.1)) {
                    let r = self.exact_classify(now, nodes, index, k, job, hard);
                    debug_assert!(
                        r.is_err() || r.is_ok_and(|r| r < _kth - KEY_TIE_EPS),
                        "node {k}: left out of the walk by return at {now} with the {p}-th best {_kth}, its new return is {r:?}"
                    );
                }
            }
        }
        self.best = best;
        // In node order, as the scan yields its candidates.
        self.cands.sort_unstable_by_key(|c| c.0);
        Some(self.choose(job, hard, lower, delayed))
    }

    /// [`Self::classify`] for bounded busy node `k` (its parts' returns
    /// adding up to `sum`) as if brought up to `now`, bit for bit: the
    /// shortcut from the index's record of its parts (deadlines, and the
    /// exact load, [`BusyIndex::exact_load`], the refresh's
    /// [`NodeState::required_share`]) when it holds, else the projection
    /// of the node brought to `now` ([`Self::exact_classify`]; for a hard
    /// job, the one with the job first). The shortcut is not tried where
    /// the node's load floor ([`BusyIndex::load_floor`]) already leaves no
    /// room for the job's share. `None`: a hard job's part is late there,
    /// certain by [`LateCheck::late_for_certain_counted`] or
    /// projected so, so the node is no candidate, without telling whether
    /// its return would drop first (`Err(true)`) or the delay rule it out
    /// (`Err(false)`); a rejection, whose counts tell them apart, asks
    /// [`Self::exact_classify`]. `new` is the job's part on any node
    /// (they all have one speed: [`bounds_apply`]), so that only the
    /// index's record of node `k` is read, not the node.
    #[allow(clippy::too_many_arguments)]
    fn classify_indexed(
        &mut self,
        now: Time,
        nodes: &[NodeState],
        index: &BusyIndex,
        k: usize,
        sum: f64,
        job: &JobSpec,
        new: &PartView,
    ) -> Option<Result<f64, bool>> {
        let hard = new.hard;
        debug_assert_eq!(
            sum.to_bits(),
            nodes[k].parts.iter().map(|p| p.ret).sum::<f64>().to_bits(),
            "node {k}: its sum of returns in the order is out of date"
        );
        let share = new.est_cpu / job.qos.deadline;
        // The shortcut fails on a node whose load's lower bound already
        // leaves no room for the job's share: its parts are not read for
        // it. The 1e-9 covers the rounding of the load's sum (a few ulps),
        // which not every bound allows for, as in Libra's walk.
        let surely_over = index.load_floor(k) - 1e-9 + share > 1.0 + SHARE_SUM_EPS;
        #[cfg(test)]
        if surely_over {
            count_shortcut(&FLOOR_SKIPS);
        }
        debug_assert!(
            !surely_over || index.exact_load(k, now) + share > 1.0 + SHARE_SUM_EPS,
            "node {k}: its load's lower bound says the shortcut fails at {now}, its load says it holds"
        );
        let fns = index.part_fns(k);
        if !surely_over && fns.iter().all(|f| f.deadline - now > TIME_EPS) {
            let q_new = index.exact_load(k, now) + share;
            if q_new <= 1.0 + SHARE_SUM_EPS {
                #[cfg(test)]
                count_shortcut(&INDEX_SHORTCUTS);
                // `node_return`'s shortcut: the old return is the sum, the
                // new one adds the new part's.
                let r = NodeReturn {
                    old: sum,
                    new: sum + new.ret,
                    new_delay: 0.0,
                };
                let v = verdict(r, hard);
                debug_assert_eq!(
                    v.map(f64::to_bits),
                    self.exact_classify(now, nodes, index, k, job, hard)
                        .map(f64::to_bits),
                    "node {k}: the shortcut from the index disagrees with the node at {now}"
                );
                return Some(v);
            }
        }
        if hard {
            debug_assert_eq!(*new, nodes[k].new_valued_part(job, self.part_value(job)));
            if self
                .late_check
                .late_for_certain_counted(now, index.late_parts(k), new)
            {
                #[cfg(test)]
                count_shortcut(&LATE_CERTAIN);
                #[cfg(debug_assertions)]
                self.debug_check_late(now, nodes, index, k, job);
                return None;
            }
        }
        if hard {
            // Only a candidate's verdict is needed: a node where the job
            // would be late is settled as by the certificate.
            let r = self.with_carried(now, nodes, index, k, |p, node| {
                p.node_return_unless_late(now, node, job, true)
            });
            #[cfg(test)]
            if r.is_none() {
                count_shortcut(&LATE_PROJECTED);
            }
            return r.map(|r| verdict(r, hard));
        }
        Some(self.exact_classify(now, nodes, index, k, job, hard))
    }

    /// Debug builds: checks a node settled as late against its projection
    /// brought to `now`.
    #[cfg(debug_assertions)]
    fn debug_check_late(
        &mut self,
        now: Time,
        nodes: &[NodeState],
        index: &BusyIndex,
        k: usize,
        job: &JobSpec,
    ) {
        let mut node = nodes[k].clone();
        index.carried_to(k, now, &nodes[k], &mut node);
        let r = self.node_return(now, &node, job);
        debug_assert!(
            r.new_delay > 0.0,
            "node {k}: settled as late at {now}, the projection says {r:?}"
        );
    }

    /// The least of [`LATE_LEVELS`] at which a node is certain to make
    /// hard part `new` late, placed at `now`, when its hard parts due with
    /// it or after it need at least that much of it
    /// ([`BusyIndex::late_deadline`]): the last stretch of
    /// [`LateCheck::late_for_certain`] with `c` the level. Also above the
    /// level less the job's share by the shortcut's reckoning (`est / D`,
    /// with room), so that no node the shortcut takes (load plus that
    /// share within `1 + 1e-9`) is settled so. `None` for a soft job or
    /// when no level does.
    fn late_level(&self, now: Time, job: &JobSpec, new: &PartView) -> Option<usize> {
        let b = new.share_input(now);
        let x0 = b.required();
        if !new.hard || x0 <= 0.0 || b.rd <= LATE_WINDOW {
            return None;
        }
        let need = LATE_WINDOW + LATE_ABS_ROOM + LATE_REL_ROOM * new.deadline.abs();
        let share = new.est_cpu / job.qos.deadline;
        LATE_LEVELS
            .iter()
            .position(|&l| l + share > 1.0 + 1e-6 && work_left_bound(b.rem, x0, l) > need)
    }

    /// [`Self::classify`] on bounded busy node `k` brought to `now` from
    /// the index's record of its parts (bit for bit the refresh's dead
    /// reckoning).
    fn exact_classify(
        &mut self,
        now: Time,
        nodes: &[NodeState],
        index: &BusyIndex,
        k: usize,
        job: &JobSpec,
        hard: bool,
    ) -> Result<f64, bool> {
        self.with_carried(now, nodes, index, k, |p, node| {
            p.classify(now, node, job, hard)
        })
    }

    /// `f` on bounded busy node `k` brought to `now` from the index's
    /// record of its parts, in the policy's scratch node.
    fn with_carried<R>(
        &mut self,
        now: Time,
        nodes: &[NodeState],
        index: &BusyIndex,
        k: usize,
        f: impl FnOnce(&mut Self, &NodeState) -> R,
    ) -> R {
        let mut node = self.scratch.take().unwrap_or_else(|| nodes[k].clone());
        index.carried_to(k, now, &nodes[k], &mut node);
        let r = f(self, &node);
        self.scratch = Some(node);
        r
    }

    /// The decision on the candidates in `self.cands` (node order), with
    /// the counts of the nodes turned down.
    fn choose(&mut self, job: &JobSpec, hard: bool, lower: usize, delayed: usize) -> Decision {
        let p = job.processors();
        if self.cands.len() < p {
            return Decision::reject(
                RejectReason::Return,
                format!(
                    "needs {p} nodes whose return does not drop{}, {} have it ({lower} would lose return{})",
                    if hard { " and where its hard deadline is met" } else { "" },
                    self.cands.len(),
                    if hard { format!(", {delayed} would delay it") } else { String::new() }
                ),
            );
        }
        top_k(&mut self.cands, p, Better::Higher);
        Decision::Accept(Accept {
            nodes: self.cands.iter().map(|c| c.0).collect(),
            // The user pays the full budget if the deadline is met; a late
            // job's penalty shows in the utility metric.
            cost: job.qos.budget,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::JobId;
    use crate::policy::test_util::{job, nodes};
    use crate::policy::Libra;

    fn soft(id: JobId, re: f64, d: f64, b: f64, pr: f64) -> JobSpec {
        job(id, re, 1, d, b).with_deadline_type(DeadlineType::Soft, pr)
    }

    fn hard(id: JobId, re: f64, d: f64, b: f64, pr: f64) -> JobSpec {
        job(id, re, 1, d, b).with_deadline_type(DeadlineType::Hard, pr)
    }

    /// Places `j` on `node` as LibraSLA would (its value attached).
    fn place(node: &mut NodeState, j: &JobSpec) {
        let part = node.new_valued_part(j, LibraSla::value(j, false));
        node.parts.push(part);
    }

    fn decide(p: &mut LibraSla, n: &[NodeState], j: &JobSpec) -> Result<Vec<usize>, RejectReason> {
        match p.decide(0.0, n, j) {
            Decision::Accept(a) => Ok(a.nodes),
            Decision::Reject(r) => Err(r.reason),
        }
    }

    #[test]
    fn return_is_budget_over_runtime_over_deadline() {
        // B 300, RE 100, D 200: 300 / 100 / 200 = 0.015; PR 1 loses
        // 1 / 100 / 200 = 5e-5 of return per second of delay.
        let mut j = soft(1, 100.0, 200.0, 300.0, 1.0);
        let v = LibraSla::value(&j, false);
        assert!((v.ret - 0.015).abs() < 1e-15);
        assert!((v.ret_penalty - 5e-5).abs() < 1e-18);
        // Per part, a 3-processor job counts a third on each node.
        j.resources.processors = 3;
        assert!((LibraSla::value(&j, true).ret - 0.005).abs() < 1e-15);
        assert!((LibraSla::value(&j, false).ret - 0.015).abs() < 1e-15);
    }

    #[test]
    fn a_soft_job_that_raises_the_node_return_is_accepted_despite_a_delay() {
        // n0 holds A: soft, RE 100, D 200, B 300, PR 1 (return 0.015).
        // Alone it gets the whole node and is on time: old return 0.015.
        // New N: soft, RE 150, D 200, B 600, PR 2 (return 0.02, the
        // highest). Q = 0.5 + 0.75 = 1.25 > 1: N keeps 0.75, A gets 0.25.
        // N finishes at 200 (on time); A has 50 done then, gets the node
        // alone and finishes at 250: 50 s late. A's utility 300 - 50 x 1 =
        // 250, return 250/100/200 = 0.0125. New node return 0.0125 + 0.02
        // = 0.0325 >= 0.015: suitable.
        let mut n = nodes(1);
        place(&mut n[0], &soft(10, 100.0, 200.0, 300.0, 1.0));
        let mut p = LibraSla::new(PolicyConfig::default());
        let j = soft(1, 150.0, 200.0, 600.0, 2.0);
        let r = p.node_return(0.0, &n[0], &j);
        assert!((r.old - 0.015).abs() < 1e-12, "{r:?}");
        assert!((r.new - 0.0325).abs() < 1e-12, "{r:?}");
        assert_eq!(r.new_delay, 0.0);
        assert_eq!(decide(&mut p, &n, &j), Ok(vec![0]));
        // Libra would refuse it: 0.5 + 0.75 > 1.
        let mut l = Libra::new(PolicyConfig::default());
        assert!(matches!(l.decide(0.0, &n, &j), Decision::Reject(_)));
    }

    #[test]
    fn a_job_whose_delays_cost_more_than_it_brings_is_refused_for_return() {
        // As above but A's penalty rate is 10: A's utility 300 - 50 x 10 =
        // -200, return -200/100/200 = -0.01. New node return -0.01 + 0.02
        // = 0.01 < 0.015: the node's return would drop. Rejected (return).
        let mut n = nodes(1);
        place(&mut n[0], &soft(10, 100.0, 200.0, 300.0, 10.0));
        let mut p = LibraSla::new(PolicyConfig::default());
        let j = soft(1, 150.0, 200.0, 600.0, 2.0);
        let r = p.node_return(0.0, &n[0], &j);
        assert!((r.new - 0.01).abs() < 1e-12, "{r:?}");
        assert_eq!(decide(&mut p, &n, &j), Err(RejectReason::Return));
    }

    #[test]
    fn a_hard_job_is_not_placed_where_it_would_be_late() {
        // n0 holds H: hard, RE 100, D 125 (q 0.8), B 1000, PR 5. New N:
        // hard, RE 50, D 100 (q 0.5). Q = 1.3 and both are hard (both
        // protected): scaled to 0.8/1.3 and 0.5/1.3; N would need
        // 50 x 1.3/0.5 = 130 s > 100. Delayed: n0 is unsuitable. The
        // empty n1 takes it (return 1000/50/100 = 0.2 there, on time).
        let mut n = nodes(2);
        place(&mut n[0], &hard(10, 100.0, 125.0, 1000.0, 5.0));
        let mut p = LibraSla::new(PolicyConfig::default());
        let j = hard(1, 50.0, 100.0, 1000.0, 5.0);
        assert!(p.node_return(0.0, &n[0], &j).new_delay > 0.0);
        assert_eq!(decide(&mut p, &n, &j), Ok(vec![1]));
        // With only n0, the hard job is refused (reason return).
        assert_eq!(decide(&mut p, &n[..1], &j), Err(RejectReason::Return));
    }

    #[test]
    fn nodes_are_ranked_by_new_return() {
        // n0 holds X (soft, RE 10, D 100, B 10: return 0.01, q 0.1); n1
        // holds Y (RE 10, D 100, B 30: return 0.03, q 0.1); n2 is empty.
        // New N: soft RE 10, D 100, B 20 (return 0.02, q 0.1). Nobody is
        // delayed anywhere: new returns 0.03, 0.05, 0.02. Best first: n1,
        // then n0.
        let mut n = nodes(3);
        place(&mut n[0], &soft(10, 10.0, 100.0, 10.0, 1.0));
        place(&mut n[1], &soft(11, 10.0, 100.0, 30.0, 1.0));
        let mut p = LibraSla::new(PolicyConfig::default());
        let mut j = soft(1, 10.0, 100.0, 20.0, 1.0);
        assert_eq!(decide(&mut p, &n, &j), Ok(vec![1]));
        j.resources.processors = 2;
        assert_eq!(decide(&mut p, &n, &j), Ok(vec![1, 0]));
    }

    /// The index of `view` at 0 with its bounds (each node's exact load;
    /// no reports, so the parts stand still) and its order by return.
    fn indexed(view: &[NodeState]) -> BusyIndex {
        let mut ix = BusyIndex::of(view);
        crate::policy::test_util::rebound_exact_at_zero(&mut ix, view);
        ix.keep_returns(true, view);
        ix
    }

    #[test]
    fn the_walk_by_return_stops_below_the_pth_best_and_decides_as_the_scan() {
        // New N: soft, RE 10, D 100, B 20, PR 10: return 20/10/100 =
        // 0.02, 0.01 lost per second late, q 0.1. Busy nodes by their sum
        // of returns:
        // - n0 holds A (soft, RE 95, D 100, B 950, PR 1): return 0.1, q
        //   0.95. With N, Q = 1.05 > 1: short, projected. A has the higher
        //   return and keeps 0.95; N gets the 0.05 left until A ends at
        //   100, with 5 of its 10 done; then alone it ends at 105, 5 s
        //   late: 0.02 - 5 x 0.01 = -0.03. New return 0.1 - 0.03 = 0.07 <
        //   0.1: n0 would lose return.
        // - n1 holds B (RE 10, D 100, B 50): 0.05, q 0.1 + 0.1 fits:
        //   new return 0.05 + 0.02 = 0.07.
        // - n2 holds C (RE 10, D 100, B 20): 0.02; new return 0.04.
        // n3 and n4 are idle: new return 0.02.
        let mut n = nodes(5);
        place(&mut n[0], &soft(10, 95.0, 100.0, 950.0, 1.0));
        place(&mut n[1], &soft(11, 10.0, 100.0, 50.0, 1.0));
        place(&mut n[2], &soft(12, 10.0, 100.0, 20.0, 1.0));
        let mut p = LibraSla::new(PolicyConfig::default());
        let mut j = soft(1, 10.0, 100.0, 20.0, 10.0);
        let r = p.node_return(0.0, &n[0], &j);
        assert!(
            (r.old - 0.1).abs() < 1e-12 && (r.new - 0.07).abs() < 1e-9,
            "{r:?}"
        );
        let ix = indexed(&n);
        let left = || RETURN_LEFT.with(|c| c.get());
        // P = 1: the idle n3 starts the P best at 0.02; n0 (bound 0.1 +
        // 0.02) is projected and would lose return; n1 gives 0.07; n2's
        // bound 0.02 + 0.02 = 0.04 is below 0.07: the walk stops there,
        // n2 left out. n1, as the plain scan.
        let before = left();
        bounded_as_scan(&mut p, &n, &ix, &j);
        assert_eq!(left() - before, 1);
        assert_eq!(decide(&mut p, &n, &j), Ok(vec![1]));
        // P = 3: the 3rd best is 0.02 (n1, n3, n4): n2's bound 0.04 is
        // above it, so n2 is walked (0.04) and nothing is left out: n1,
        // n2, then n3 (ties n4 at 0.02; the lower index).
        j.resources.processors = 3;
        let before = left();
        bounded_as_scan(&mut p, &n, &ix, &j);
        assert_eq!(left() - before, 0);
        assert_eq!(decide(&mut p, &n, &j), Ok(vec![1, 2, 3]));
        // P = 5: four candidates; the walk went over every busy node, so
        // the rejection counts n0 as the scan does.
        j.resources.processors = 5;
        let detail = rejection(bounded_as_scan(&mut p, &n, &ix, &j));
        assert_eq!(
            detail,
            "needs 5 nodes whose return does not drop, 4 have it (1 would lose return)"
        );
        // Without the shortcut, or with a job that needs memory, the walk
        // does not apply.
        j.resources.processors = 1;
        let mut long = LibraSla::new(PolicyConfig {
            risk_shortcut: false,
            ..PolicyConfig::default()
        });
        assert!(long.decide_bounded(0.0, &n, &ix, &j).is_none());
        j.resources.memory_kb = 1;
        assert!(p.decide_bounded(0.0, &n, &ix, &j).is_none());
    }

    #[test]
    fn the_work_left_bound_is_the_closed_form() {
        // rem (x / (x + c - 1))^(1 / (c - 1)), with x = 0.5, rem = 100:
        // c = 2: 100 x 0.5 / 1.5 = 33.333; c = 1 (the limit): 100 e^-2 =
        // 13.5335; x = 0.6, c = 0.5: (0.6 / 0.1)^-2 = 1/36, 2.7778. At
        // x + c = 1 the node is not short: 0.
        let close = |a: f64, b: f64| (a - b).abs() < 1e-4 * b;
        assert!(close(work_left_bound(100.0, 0.5, 2.0), 33.3333));
        assert!(close(work_left_bound(100.0, 0.5, 1.0), 13.5335));
        assert!(close(work_left_bound(100.0, 0.6, 0.5), 2.7778));
        assert_eq!(work_left_bound(100.0, 0.5, 0.5), 0.0);
        assert_eq!(work_left_bound(100.0, f64::NAN, 0.5), 0.0);
        // Each input counts less its room: never above the closed form.
        assert!(work_left_bound(100.0, 0.5, 2.0) < 100.0 / 3.0);
    }

    /// Node n0 of the certificate's tests at 0 (speed 1, every part hard,
    /// none started): A (RE 60, D 100, q 0.6) and L (RE 120, D 300, q 0.4),
    /// budgets high enough to put n0 first in the order by return.
    fn short_with(view: &mut [NodeState]) {
        place(&mut view[0], &hard(10, 60.0, 100.0, 6e4, 1.0));
        place(&mut view[0], &hard(11, 120.0, 300.0, 6e4, 1.0));
    }

    #[test]
    fn a_hard_job_certain_to_be_late_is_settled_without_a_projection() {
        // New N: hard, RE 100, D 200, q 0.5, on n0 (short_with). The
        // certificate: until A's deadline (less 1 ms) the counted parts
        // need 0.5 + 0.6 + 0.4 = 1.5, so N gets at most q / 1.5. Its first
        // pass (the powers' harmonic-mean bounds) keeps 100 x 0.5 / (2/3 +
        // 1/3 x 0.5) = 60 of N's work and grows L's share to 0.4 x 1.5 /
        // (1/3 + 2/3 x 1.5) = 0.45; against L alone, x = 0.6: 60 x (0.6 /
        // 0.05)^(-1 / 0.55) = 0.655 s left at its deadline, above the ~3
        // ms needed: late. (The second, exact, pass keeps 100 x (100 /
        // 200)^(1 / 1.5) = 62.996 and grows L's to 0.4 x 1.5^(1 / 3) =
        // 0.4579: 62.996 x (0.62996 / 0.08785)^(-1 / 0.5421) = 1.66 s.)
        // The projection: to 100 each part gets q / 1.5, N has 66.67 left
        // (q 0.6667), L 93.33 (q 0.4667) and A, overdue, 20 at the pool's
        // 0.05. N and L share 0.95 in proportion: N 0.5588, L 0.3912; at
        // 200 N has 10.784 left. Then L gets its 0.5422 and the overdue A
        // and N split 0.4578: N ends 10.784 / 0.2289 = 47.11 s late.
        let mut n = nodes(2);
        short_with(&mut n);
        let j = hard(1, 100.0, 200.0, 10.0, 1.0);
        let mut p = LibraSla::new(PolicyConfig::default());
        let r = p.node_return(0.0, &n[0], &j);
        assert!((r.new_delay - 47.11).abs() < 0.01, "{r:?}");
        let ix = indexed(&n);
        let new = part_on(&n[0], &j);
        let mut check = LateCheck::default();
        assert!(check.late_for_certain(0.0, ix.part_fns(0), &new));
        let b = new.share_input(0.0);
        check.gather(0.0, ix.part_fns(0), &new);
        assert!(check.late_bound(&new, &b, false));
        // A soft job is never settled so (the rule does not protect it).
        let soft_new = n[0].new_valued_part(&soft(2, 100.0, 200.0, 10.0, 1.0), new_value());
        assert!(!check.late_for_certain(0.0, ix.part_fns(0), &soft_new));
        // The walk settles n0 from it and takes the idle n1, as the scan.
        let late = || LATE_CERTAIN.with(|c| c.get());
        let before = late();
        bounded_as_scan(&mut p, &n, &ix, &j);
        assert_eq!(late() - before, 1);
        assert_eq!(decide(&mut p, &n, &j), Ok(vec![1]));
        // P = 2: a rejection, whose counts tell apart why n0 is out, which
        // the certificate does not: its projection, asked again, has n0's
        // return drop first (A ends late: it got 0.4 of the node, not its
        // 0.6, to 100; and N's own 5e-4 less 47.11 x 5e-5 is negative
        // against n0's old return, every part on time).
        let mut j2 = j.clone();
        j2.resources.processors = 2;
        let detail = rejection(bounded_as_scan(&mut p, &n, &ix, &j2));
        assert!(
            detail.ends_with("1 have it (1 would lose return, 0 would delay it)"),
            "{detail}"
        );
    }

    #[test]
    fn the_exact_pass_settles_what_the_harmonic_bounds_leave() {
        // As above with L lighter (RE 105, D 300: q 0.35). Until A's
        // deadline the counted parts need 0.5 + 0.6 + 0.35 = 1.45. The
        // first pass keeps r / (a + (1 - a) r) with r = 0.5, a = 1 / 1.45:
        // x = 0.59184 of N, and grows L's share by 1.5 / (g + (1 - g) 1.5),
        // g = 1 - 1 / 1.45, to 0.39038: x + c = 0.98 <= 1, no bound. The
        // exact pass: x = 0.5^(1 / 1.45) = 0.62000, c = 0.35 x 1.5^g =
        // 0.39693, x + c = 1.01693: 62.0 x (0.62 / 0.01693)^(-1 / 0.60307)
        // = 0.158 s left at N's deadline, above the ~3 ms: late.
        let mut n = nodes(2);
        place(&mut n[0], &hard(10, 60.0, 100.0, 6e4, 1.0));
        place(&mut n[0], &hard(11, 105.0, 300.0, 6e4, 1.0));
        let j = hard(1, 100.0, 200.0, 10.0, 1.0);
        let ix = indexed(&n);
        let new = part_on(&n[0], &j);
        let b = new.share_input(0.0);
        let mut check = LateCheck::default();
        check.gather(0.0, ix.part_fns(0), &new);
        assert!(!check.late_bound(&new, &b, false));
        assert!(check.late_bound(&new, &b, true));
        assert!(check.late_for_certain(0.0, ix.part_fns(0), &new));
        let mut p = LibraSla::new(PolicyConfig::default());
        assert!(p.node_return(0.0, &n[0], &j).new_delay > 0.0);
        bounded_as_scan(&mut p, &n, &ix, &j);
    }

    #[test]
    fn a_node_whose_late_load_fills_it_is_settled_from_the_index() {
        // n0 holds L (hard, RE 180, D 300: q 0.6), n1 is idle. The index
        // keeps, for every level below 0.6 (a level is reached with 1e-9
        // of room), 300 as the latest deadline such that n0's hard parts
        // due then or later need that much.
        let mut n = nodes(2);
        place(&mut n[0], &hard(10, 180.0, 300.0, 6e4, 1.0));
        let ix = indexed(&n);
        assert_eq!(ix.late_deadline(0, level(0.55)), 300.0);
        assert_eq!(ix.late_deadline(0, level(0.6)), f64::NEG_INFINITY);
        assert_eq!(ix.late_deadline(1, level(0.05)), f64::NEG_INFINITY);
        // New N: hard, RE 100, D 200, q 0.5. The least level above 1 - 0.5
        // is 0.55: with c = 0.55 the last stretch leaves 100 x (0.5 /
        // 0.05)^(-1 / 0.45) = 0.60 s, above the ~3 ms needed. L is due
        // after N, 300 >= 200: n0 is settled from the index.
        let j = hard(1, 100.0, 200.0, 10.0, 1.0);
        let mut p = LibraSla::new(PolicyConfig::default());
        let new = part_on(&n[0], &j);
        assert_eq!(p.late_level(0.0, &j, &new), Some(level(0.55)));
        // The projection: N and L need 1.1, each gets q / 1.1 to 200: N
        // has 100 - 90.909 = 9.091 left, L 180 - 109.091 = 70.909 (q
        // 0.70909); then L keeps its q and the overdue N gets 0.29091: N
        // ends 9.091 / 0.29091 = 31.25 s late.
        let r = p.node_return(0.0, &n[0], &j);
        assert!((r.new_delay - 31.25).abs() < 0.01, "{r:?}");
        let settled = || LATE_SUMMARY.with(|c| c.get());
        let before = settled();
        bounded_as_scan(&mut p, &n, &ix, &j);
        assert_eq!(settled() - before, 1);
        assert_eq!(decide(&mut p, &n, &j), Ok(vec![1]));
        // A soft job has no level (the rule does not protect it), nor a
        // hard one too short to be late by the ~3 ms needed (RE 1e-4: no
        // level's bound exceeds its work). The level's guard against the
        // shortcut has its own test below.
        let s = soft(2, 100.0, 200.0, 10.0, 1.0);
        let soft_new = part_on(&n[0], &s);
        assert_eq!(p.late_level(0.0, &s, &soft_new), None);
        let tiny = hard(3, 1e-4, 200.0, 10.0, 1.0);
        let tiny_new = part_on(&n[0], &tiny);
        assert_eq!(p.late_level(0.0, &tiny, &tiny_new), None);
    }

    #[test]
    fn a_soft_part_is_not_counted_against_a_hard_job() {
        // n0 holds S: soft, RE 240, D 300 (q 0.8), its return 10 / (240 x
        // 300) = 1.4e-4 below the new N's: hard, RE 100, D 200 (q 0.5),
        // return 5e-4. Together they need 1.3: the rule protects N (hard,
        // and the highest return), which keeps its 0.5 and ends on time;
        // S gets the 0.5 left. Counting S would put c = 0.8 against x =
        // 0.5 and "prove" N 100 x (0.5 / 0.3)^(1 / -0.2) = 7.8 s late.
        let mut n = nodes(1);
        place(&mut n[0], &soft(10, 240.0, 300.0, 10.0, 1.0));
        let ix = on_time_and_not_settled(&n, &hard(1, 100.0, 200.0, 10.0, 1.0));
        // Nor do the index's late deadlines count it.
        assert_eq!(ix.late_deadline(0, 0), f64::NEG_INFINITY);
    }

    #[test]
    fn a_node_the_shortcut_takes_is_never_settled_from_the_index() {
        // N: hard, RE 60, D 200, submitted at -100 and decided at 0: 100 s
        // left, so its required share is 0.6, while the shortcut reckons
        // the share it was submitted with, 60 / 200 = 0.3. n0 holds L
        // (hard, 130 by 200: q 0.65, standing still, so its late deadline
        // is 200 at every level to 0.6). The shortcut takes n0: 0.65 + 0.3
        // = 0.95 <= 1, on time, return 0.5 + N's. A level must be above 1 -
        // 0.3: 0.75, which n0 does not meet, so the walk takes n0 as the
        // scan does (without that guard, level 0.45 leaves N 60 x (0.6 /
        // 0.05)^(-1 / 0.55) = 0.65 s at its deadline against c = 0.45, and
        // n0 would be settled).
        let mut n = nodes(2);
        place(&mut n[0], &hard(10, 130.0, 200.0, 1.3e4, 1.0));
        let ix = indexed(&n);
        assert_eq!(ix.late_deadline(0, level(0.6)), 200.0);
        let j = JobSpec::new(1, -100.0, 60.0, 1, 200.0, 10.0)
            .with_deadline_type(DeadlineType::Hard, 1.0);
        let mut p = LibraSla::new(PolicyConfig::default());
        let new = part_on(&n[0], &j);
        assert_eq!(p.late_level(0.0, &j, &new), Some(level(0.75)));
        assert_eq!(bounded_as_scan(&mut p, &n, &ix, &j), p.decide(0.0, &n, &j));
        assert_eq!(decide(&mut p, &n, &j), Ok(vec![0]));
    }

    #[test]
    fn a_node_whose_load_floor_leaves_no_room_is_not_read_for_the_shortcut() {
        // n0 holds L: hard, 95 by 100 (q 0.95, its bound exactly that at
        // 0); n1 is idle. N: hard, RE 10, D 100 (share 0.1). 0.95 - 1e-9
        // + 0.1 > 1 + 1e-9: the shortcut is not tried on n0. N's level is
        // 1.25 (at 1.0 its bound leaves 10 e^-10 = 4.5e-4 s, below the ~3
        // ms; at 1.25, 10 x 3.5^-4 = 0.067 s), which L alone does not
        // reach; the certificate, with L's 0.95 due with N, leaves N 10 x
        // 2^-20 s: not settled. The projection: both protected, each at q
        // / 1.05, so N ends late; n1 is chosen, as the scan chooses.
        let mut n = nodes(2);
        place(&mut n[0], &hard(10, 95.0, 100.0, 950.0, 1.0));
        let ix = indexed(&n);
        assert_eq!(ix.load_floor(0), 0.95f32 as f64);
        let j = hard(1, 10.0, 100.0, 10.0, 1.0);
        let mut p = LibraSla::new(PolicyConfig::default());
        let new = part_on(&n[0], &j);
        assert_eq!(p.late_level(0.0, &j, &new), Some(level(1.25)));
        let skips = || FLOOR_SKIPS.with(|c| c.get());
        let before = skips();
        bounded_as_scan(&mut p, &n, &ix, &j);
        assert_eq!(skips() - before, 1);
        assert_eq!(decide(&mut p, &n, &j), Ok(vec![1]));
        // With room for N (L 85 by 100), the shortcut is tried and taken.
        let mut n = nodes(2);
        place(&mut n[0], &hard(10, 85.0, 100.0, 850.0, 1.0));
        let ix = indexed(&n);
        let before = skips();
        bounded_as_scan(&mut p, &n, &ix, &j);
        assert_eq!(skips() - before, 0);
    }

    #[test]
    fn the_walk_by_return_counts_a_part_at_its_least_share_over_the_window() {
        // n0 holds L: hard, 100 to do by 200, reported at 0 running at the
        // whole node, so its share falls over the bound's window [0, 10]:
        // 0.5 at 0, 95 / 195 = 0.48718 at 5, 90 / 190 = 0.47368 at 10.
        // n1 is idle. N arrives at 5: hard, RE 52.233, D 100 (due at 105,
        // before L), x = 0.52233. With L's share at 5 the certificate's
        // last stretch leaves N 52.233 x (0.0095 / 0.52233)^(1 / 0.51282)
        // = 0.021 s at its deadline, above the ~3 ms: late. With L's least
        // over the window, 0.47368 + 0.52233 = 0.996 <= 1: no bound, so
        // the walk projects n0 (both protected at q / 1.0095: N ends
        // late) and decides as the scan does on the nodes at 5: n1. N's
        // level is 0.5 (0.02233 over the node: 52.233 x (0.02233 /
        // 0.52233)^2 = 0.095 s), which L's least does not reach.
        use crate::busy_index::{LoadBound, LoadLine};
        let mut n = nodes(2);
        place(&mut n[0], &hard(10, 100.0, 200.0, 1e3, 1.0));
        let mut ix = BusyIndex::of(&n);
        ix.rebound(0.0, |_, from, to, fns| {
            assert_eq!((from, to), (0.0, 10.0));
            fns.push(PartFn {
                est_cpu: 100.0,
                cpu_done: 0.0,
                share: 1.0,
                at: 0.0,
                deadline: 200.0,
                hard: true,
            });
            LoadBound {
                lo: 90.0 / 190.0,
                hi: 0.5,
                line: LoadLine::NONE,
            }
        });
        ix.keep_returns(true, &n);
        assert_eq!(ix.late_parts(0), [(200.0, 90.0 / 190.0)]);
        let j = JobSpec::new(1, 5.0, 52.233, 1, 100.0, 10.0)
            .with_deadline_type(DeadlineType::Hard, 1.0);
        let new = part_on(&n[0], &j);
        let mut p = LibraSla::new(PolicyConfig::default());
        assert_eq!(p.late_level(5.0, &j, &new), Some(level(0.5)));
        assert!(LateCheck::default().late_for_certain(5.0, ix.part_fns(0), &new));
        assert!(!LateCheck::default().late_for_certain_counted(5.0, ix.late_parts(0), &new));
        let count = |c: &'static std::thread::LocalKey<std::cell::Cell<u64>>| c.with(|c| c.get());
        let before = (count(&LATE_CERTAIN), count(&LATE_PROJECTED));
        let d = p.decide_bounded(5.0, &n, &ix, &j).unwrap();
        assert_eq!(
            (count(&LATE_CERTAIN), count(&LATE_PROJECTED)),
            (before.0, before.1 + 1)
        );
        let mut at5 = n.clone();
        at5[0].parts[0].cpu_done = 5.0;
        assert_eq!(d, p.decide(5.0, &at5, &j));
        assert!(
            matches!(d, Decision::Accept(ref a) if a.nodes == [1]),
            "{d:?}"
        );
    }

    #[cfg(debug_assertions)]
    #[test]
    #[should_panic(expected = "its load's lower bound says the shortcut fails")]
    fn a_node_whose_load_floor_lies_fails_the_debug_check() {
        // n0 holds L (hard, 30 by 100: load 0.3), but its bound claims
        // 0.95: the walk would skip the shortcut that takes n0 for N
        // (share 0.1), and the debug check says so.
        let mut n = nodes(2);
        place(&mut n[0], &hard(10, 30.0, 100.0, 300.0, 1.0));
        let mut ix = BusyIndex::of(&n);
        crate::policy::test_util::rebound_lying(&mut ix, &n, 0.0, 0, 0.95);
        ix.keep_returns(true, &n);
        let j = hard(1, 10.0, 100.0, 10.0, 1.0);
        let mut p = LibraSla::new(PolicyConfig::default());
        p.decide_bounded(0.0, &n, &ix, &j);
    }

    /// `j`'s part on `node`, valued as LibraSLA values it (whole-job
    /// returns).
    fn part_on(node: &NodeState, j: &JobSpec) -> PartView {
        node.new_valued_part(j, LibraSla::value(j, false))
    }

    /// Where level `l` is in [`LATE_LEVELS`].
    fn level(l: f64) -> usize {
        LATE_LEVELS.iter().position(|&x| x == l).unwrap()
    }

    /// The walk by return's decision at 0, checked against the plain
    /// scan's.
    fn bounded_as_scan(p: &mut LibraSla, n: &[NodeState], ix: &BusyIndex, j: &JobSpec) -> Decision {
        let d = p.decide_bounded(0.0, n, ix, j).unwrap();
        assert_eq!(d, p.decide(0.0, n, j));
        d
    }

    /// A rejection's detail.
    fn rejection(d: Decision) -> String {
        let Decision::Reject(r) = d else {
            panic!("{d:?}")
        };
        r.detail
    }

    fn new_value() -> PartValue {
        PartValue {
            ret: 0.005,
            ret_penalty: 0.0,
        }
    }

    #[test]
    fn an_over_committed_node_where_the_job_still_ends_on_time_is_not_settled() {
        // n0 holds two hard parts of RE 60, D 100 (q 0.6 each: 1.2, short
        // already). New N: hard, RE 100, D 10,000, q 0.01. To 100 the
        // three need 1.21, so N falls behind (at least 100 x (9,900 /
        // 10,000)^(1 / 1.21) = 99.17 left), but then no counted part is
        // due with or after it (c = 0, x + c < 1) and it has far less
        // work than time: no certificate. Indeed, once both parts are
        // overdue N is on-track alone and gets its share (the overdue
        // ones split the rest): it ends on time.
        let mut n = nodes(1);
        place(&mut n[0], &hard(10, 60.0, 100.0, 600.0, 1.0));
        place(&mut n[0], &hard(11, 60.0, 100.0, 600.0, 1.0));
        on_time_and_not_settled(&n, &hard(1, 100.0, 10_000.0, 10.0, 1.0));
    }

    /// Checks that `j` placed on node 0 of `n` at 0 ends on time in the
    /// projection and that the certificate does not settle the node;
    /// returns the index of `n`.
    fn on_time_and_not_settled(n: &[NodeState], j: &JobSpec) -> BusyIndex {
        let mut p = LibraSla::new(PolicyConfig::default());
        assert_eq!(p.node_return(0.0, &n[0], j).new_delay, 0.0);
        let ix = indexed(n);
        let new = part_on(&n[0], j);
        assert!(!LateCheck::default().late_for_certain(0.0, ix.part_fns(0), &new));
        ix
    }

    #[test]
    fn estimate_beyond_deadline_is_refused_for_deadline() {
        let mut p = LibraSla::new(PolicyConfig::default());
        assert_eq!(
            decide(&mut p, &nodes(1), &soft(1, 150.0, 100.0, 1e3, 1.0)),
            Err(RejectReason::Deadline)
        );
    }

    #[test]
    fn shortcut_changes_nothing_on_small_cases() {
        let mut with = LibraSla::new(PolicyConfig::default());
        let mut without = LibraSla::new(PolicyConfig {
            risk_shortcut: false,
            ..PolicyConfig::default()
        });
        for (re_a, d_a, re, d) in [
            (50.0, 100.0, 20.0, 100.0),
            (50.0, 100.0, 50.0, 100.0),
            (50.0, 100.0, 60.0, 100.0),
            (10.0, 40.0, 90.0, 120.0),
        ] {
            let mut n = nodes(1);
            place(&mut n[0], &soft(10, re_a, d_a, 2.0 * re_a, 1.0));
            let j = soft(1, re, d, 2.0 * re, 1.0);
            let (a, b) = (
                with.node_return(0.0, &n[0], &j),
                without.node_return(0.0, &n[0], &j),
            );
            assert!((a.old - b.old).abs() < 1e-15, "{a:?} {b:?}");
            assert!((a.new - b.new).abs() < 1e-15, "{a:?} {b:?}");
            assert_eq!(a.new_delay, b.new_delay);
        }
    }

    #[test]
    fn the_shortcut_is_not_taken_on_a_node_with_a_deadline_passed() {
        // Decided at 10. n0 holds A: soft, RE 5, D 5, B 100, PR 19
        // (return 100/5/5 = 4, penalty 19/5/5 = 0.76 per s), which ran
        // its whole estimate (nothing left: share 0) and is 5 s past its
        // deadline: it ends now, 5 s late, its return 4 - 5 x 0.76 = 0.2.
        // n1 holds B: soft, RE 10, D 110, B 330 (return 0.3, share 10/100
        // = 0.1), on time. New N, submitted at 10: soft, RE 10, D 100, B
        // 20 (return 0.02, share 0.1). The shortcut (no delay: the sum of
        // the returns) holds on n1 only, as a deadline passed on n0: new
        // returns 0.22 on n0 and 0.32 on n1, which takes it. Taken on n0
        // too, it would count A's 4 in full and choose n0.
        let mut n = nodes(2);
        place(&mut n[0], &soft(10, 5.0, 5.0, 100.0, 19.0));
        n[0].parts[0].cpu_done = 5.0;
        place(&mut n[1], &soft(11, 10.0, 110.0, 330.0, 1.0));
        let mut p = LibraSla::new(PolicyConfig::default());
        let j =
            JobSpec::new(1, 10.0, 10.0, 1, 100.0, 20.0).with_deadline_type(DeadlineType::Soft, 1.0);
        let r0 = p.node_return(10.0, &n[0], &j);
        assert!(
            (r0.old - 0.2).abs() < 1e-12 && (r0.new - 0.22).abs() < 1e-12,
            "{r0:?}"
        );
        let r1 = p.node_return(10.0, &n[1], &j);
        assert!(
            (r1.old - 0.3).abs() < 1e-12 && (r1.new - 0.32).abs() < 1e-12,
            "{r1:?}"
        );
        match p.decide(10.0, &n, &j) {
            Decision::Accept(a) => assert_eq!(a.nodes, vec![1]),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_job_whose_estimate_equals_its_deadline_makes_a_busy_node_short() {
        // n0 holds H: hard, RE 50, D 100 (share 0.5), B 100, PR 1 (return
        // 100/50/100 = 0.02, penalty 2e-4 per s). New N: hard, RE 100 = D
        // 100 (share 1; the estimate may equal the deadline), B 100, PR 1
        // (return 0.01, penalty 1e-4). Load 1.5 > 1: no shortcut.
        // Projected, both protected: shares 1/3 and 2/3 until 100, when H
        // has 50/3 s left and N 100/3. Both overdue, they split the node:
        // H ends at 100 + 100/3 (100/3 s late), then N alone at 150 (50 s
        // late). New return 0.02 - 100/3 x 2e-4 + 0.01 - 50 x 1e-4 =
        // 0.0183 < 0.02: n0 would lose return (tested before the hard
        // deadline).
        // With the shortcut (no delay) it would be 0.03 and N accepted.
        let mut n = nodes(1);
        place(&mut n[0], &hard(10, 50.0, 100.0, 100.0, 1.0));
        let mut p = LibraSla::new(PolicyConfig::default());
        let j = hard(1, 100.0, 100.0, 100.0, 1.0);
        let r = p.node_return(0.0, &n[0], &j);
        assert!(
            (r.old - 0.02).abs() < 1e-12
                && (r.new - (0.02 - 100.0 / 3.0 * 2e-4 + 0.005)).abs() < 1e-12,
            "{r:?}"
        );
        assert!((r.new_delay - 50.0).abs() < 1e-6, "{r:?}");
        match p.decide(0.0, &n, &j) {
            Decision::Reject(r) => {
                assert_eq!(r.reason, RejectReason::Return);
                assert!(
                    r.detail
                        .ends_with("(1 would lose return, 0 would delay it)"),
                    "{}",
                    r.detail
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_job_of_budget_zero_is_accepted_where_the_return_stays() {
        // n0 holds X: soft, RE 10, D 100, B 10 (return 0.01, share 0.1).
        // New N: soft, RE 10, D 100, budget 0 (return 0, share 0.1): no
        // one is delayed, the new return 0.01 + 0 equals the old: not
        // lower, so n0 takes it. A return must drop by more than 1e-9 of
        // itself to count as lower; equal is never lower.
        let mut n = nodes(1);
        place(&mut n[0], &soft(10, 10.0, 100.0, 10.0, 1.0));
        let mut p = LibraSla::new(PolicyConfig::default());
        let j = soft(1, 10.0, 100.0, 0.0, 1.0);
        let r = p.node_return(0.0, &n[0], &j);
        assert_eq!((r.old, r.new), (0.01, 0.01));
        assert_eq!(decide(&mut p, &n, &j), Ok(vec![0]));
        assert!(not_lower(0.01 - 0.5e-11, 0.01) && !not_lower(0.01 - 2e-11, 0.01));
    }

    #[test]
    fn the_indexed_walk_checks_memory_and_counts_idle_nodes_in_a_rejection() {
        // Memory: n0 idle with no memory, n1 idle, n2 holding X (soft, RE
        // 10, D 100, B 10: return 0.01). New N: soft, RE 10, D 100, B 20
        // (return 0.02), 1 KB of memory, 2 processors. No one is delayed:
        // new returns 0.03 on n2, 0.02 on n1; n0 lacks the memory. One
        // idle node cannot stand for its group: n2 and n1, not n0.
        use crate::busy_index::BusyIndex;
        let mut n = nodes(3);
        n[0].spec.memory_kb = 0;
        place(&mut n[2], &soft(10, 10.0, 100.0, 10.0, 1.0));
        let ix = BusyIndex::of(&n);
        let mut p = LibraSla::new(PolicyConfig::default());
        let mut j = soft(1, 10.0, 100.0, 20.0, 1.0);
        j.resources.processors = 2;
        j.resources.memory_kb = 1;
        match p.decide_indexed(0.0, &n, &ix, &j) {
            Decision::Accept(a) => assert_eq!(a.nodes, vec![2, 1]),
            other => panic!("{other:?}"),
        }
        // Counts: two idle nodes of speed 0.5 and a hard job of RE 60, D
        // 100 (within its deadline on a reference node): 120 s on either,
        // 20 s late. Both idle nodes count as delaying it.
        let mut n = nodes(2);
        for node in &mut n {
            node.spec.speed = 0.5;
        }
        let ix = BusyIndex::of(&n);
        match p.decide_indexed(0.0, &n, &ix, &hard(2, 60.0, 100.0, 100.0, 1.0)) {
            Decision::Reject(r) => assert!(
                r.detail
                    .ends_with("0 have it (0 would lose return, 2 would delay it)"),
                "{}",
                r.detail
            ),
            other => panic!("{other:?}"),
        }
        // A soft job there, B 100, PR 10 (return 100/60/100 = 0.0167,
        // penalty 10/60/100 = 0.00167 per s): 20 s late, its return 0.0167
        // - 0.0333 < 0, below the idle node's 0: both lose return.
        match p.decide_indexed(0.0, &n, &ix, &soft(3, 60.0, 100.0, 100.0, 10.0)) {
            Decision::Reject(r) => assert!(
                r.detail.ends_with("0 have it (2 would lose return)"),
                "{}",
                r.detail
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_walk_by_return_does_not_take_the_shortcut_for_a_job_as_long_as_its_deadline() {
        // n0 holds H (hard, RE 50, D 100, B 100, PR 1: share 0.5), n1 is
        // idle. N: hard, RE = D = 100, B 100 (share 1): on n0 the load
        // would be 1.5, so the index's shortcut does not apply and the
        // projection says n0 would lose return (0.0183 < 0.02, worked out
        // in a_job_whose_estimate_equals_its_deadline_makes_a_busy_node_short);
        // on the idle n1 N is on time (return 0.01): n1, as the scan.
        let mut n = nodes(2);
        place(&mut n[0], &hard(10, 50.0, 100.0, 100.0, 1.0));
        let ix = indexed(&n);
        let mut p = LibraSla::new(PolicyConfig::default());
        let j = hard(1, 100.0, 100.0, 100.0, 1.0);
        let d = p
            .decide_bounded(0.0, &n, &ix, &j)
            .expect("the walk by return applies");
        assert_eq!(d, p.decide(0.0, &n, &j));
        match d {
            Decision::Accept(a) => assert_eq!(a.nodes, vec![1]),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_shortcuts_are_taken_wherever_the_node_is_not_short() {
        // n0 holds A (soft, RE 50, D 100: share 0.5), n1 holds B (RE 100,
        // D 100: share 1), n2 is idle. N: soft, RE 50, D 100 (share 0.5).
        // On n0 the load with N is exactly 1 (within 1 + 1e-9): no part
        // is delayed, so both returns come from the shortcut. On n1 it is
        // 1.5: the new return is projected, but the old load, 1, is not
        // short, so the old return alone is the sum. The walk by return
        // takes n0 from the index's shortcut.
        let mut n = nodes(3);
        place(&mut n[0], &soft(10, 50.0, 100.0, 10.0, 1.0));
        place(&mut n[1], &soft(11, 100.0, 100.0, 10.0, 1.0));
        let mut p = LibraSla::new(PolicyConfig::default());
        let j = soft(1, 50.0, 100.0, 10.0, 1.0);
        let count = |c: &'static std::thread::LocalKey<std::cell::Cell<u64>>| c.with(|c| c.get());
        for (k, new, old) in [(0, 1, 0), (1, 0, 1)] {
            let before = (count(&NEW_SHORTCUTS), count(&OLD_SHORTCUTS));
            let r = p.node_return(0.0, &n[k], &j);
            assert_eq!(
                (
                    count(&NEW_SHORTCUTS) - before.0,
                    count(&OLD_SHORTCUTS) - before.1
                ),
                (new, old),
                "n{k}: {r:?}"
            );
        }
        let ix = indexed(&n);
        let before = count(&INDEX_SHORTCUTS);
        assert!(p.decide_bounded(0.0, &n, &ix, &j).is_some());
        assert_eq!(count(&INDEX_SHORTCUTS) - before, 1);
    }

    /// The debug build's check of the nodes the walk by return leaves out
    /// bites: an order that keeps a stale sum of returns for one node (its
    /// part changed and the index was not told) makes the walk stop before
    /// a node the plain scan would choose, and the check, projecting that
    /// node, panics. The nodes of
    /// `the_walk_by_return_stops_below_the_pth_best_and_decides_as_the_scan`
    /// and N (return 0.02, q 0.1), P 1: the idle n3 starts the P best at
    /// 0.02; n0 (bound 0.1 + 0.02) would lose return; n1 gives 0.07, the
    /// P-th best. n2's C is then replaced by C' (B 200: return 200 / 10 /
    /// 100 = 0.2, the same work and deadline), and the order still files
    /// n2 at C's 0.02: its bound 0.02 + 0.02 = 0.04 is below 0.07, so the
    /// walk stops there. On the node as it is, 0.1 + 0.1 fits: its new
    /// return is 0.2 + 0.02 = 0.22, above 0.07, and the check panics. With
    /// the check run only on clusters above its size limit (`<=` made
    /// `>`), these 3 busy nodes are not checked and the walk chooses n1.
    /// Debug builds check every node settled as late against its
    /// projection: an index filed when n0's L (RE 180, D 300, q 0.6) was
    /// hard keeps 300 as its late deadline to level 0.55, which settles n0
    /// for N (hard, RE 100, D 200, q 0.5: `a_node_whose_late_load_fills_it_is_settled_from_the_index`).
    /// The node as it is holds L soft (the same work, deadline and return,
    /// 1 / 180 / 300 = 1.9e-5, below N's 5e-4): the rule protects N (hard,
    /// and the highest return) and not L, so N keeps its 0.5 and ends on
    /// time, and the check panics. Without the check the walk settles n0
    /// and takes n1.
    #[cfg(debug_assertions)]
    #[test]
    #[should_panic(expected = "node 0: settled as late at 0")]
    fn a_node_settled_late_on_a_stale_record_fails_the_debug_check() {
        let mut n = nodes(2);
        place(&mut n[0], &hard(10, 180.0, 300.0, 1.0, 1.0));
        let ix = indexed(&n);
        n[0].parts[0].hard = false;
        let j = hard(1, 100.0, 200.0, 10.0, 1.0);
        let mut p = LibraSla::new(PolicyConfig::default());
        assert_eq!(p.node_return(0.0, &n[0], &j).new_delay, 0.0);
        let d = p.decide_bounded(0.0, &n, &ix, &j);
        unreachable!("the check let n0 be settled as late: {d:?}");
    }

    #[cfg(debug_assertions)]
    #[test]
    #[should_panic(expected = "node 2: left out of the walk by return at 0")]
    fn a_node_left_out_on_a_stale_return_fails_the_debug_check() {
        let mut n = nodes(5);
        place(&mut n[0], &soft(10, 95.0, 100.0, 950.0, 1.0));
        place(&mut n[1], &soft(11, 10.0, 100.0, 50.0, 1.0));
        place(&mut n[2], &soft(12, 10.0, 100.0, 20.0, 1.0));
        let ix = indexed(&n);
        n[2].parts.clear();
        place(&mut n[2], &soft(12, 10.0, 100.0, 200.0, 1.0));
        let mut p = LibraSla::new(PolicyConfig::default());
        let j = soft(1, 10.0, 100.0, 20.0, 10.0);
        let d = p.decide_bounded(0.0, &n, &ix, &j);
        unreachable!("the check let the walk leave out node 2: {d:?}");
    }

    /// The plain scan as it was before it set certainly late nodes aside:
    /// every node resource-filtered and classified by its returns.
    fn scan_classifying_all(p: &mut LibraSla, now: Time, n: &[NodeState], j: &JobSpec) -> Decision {
        if let Some(d) = p.precheck(n, j) {
            return d;
        }
        let mut res = Vec::new();
        if let Some(d) = resource_filter(n, j, &mut res) {
            return d;
        }
        let hard = j.qos.deadline_type == DeadlineType::Hard;
        let (mut lower, mut delayed) = (0, 0);
        p.cands.clear();
        for &k in &res {
            match p.classify(now, &n[k], j, hard) {
                Ok(ret) => p.cands.push((k, ret)),
                Err(true) => lower += 1,
                Err(false) => delayed += 1,
            }
        }
        p.choose(j, hard, lower, delayed)
    }

    /// The walks over nodes as they stand set aside the nodes where a hard
    /// job is certainly late (the certificate, or the projection with the
    /// job stopped there) and classify them only for a rejection's counts.
    /// On seeded clusters of hard and soft parts (part-done, some past
    /// their estimate or their deadline), hard and soft jobs submitted up
    /// to 200 s before the decision (so the shortcut's share differs from
    /// the required one), one and several processors, the
    /// decision (nodes, or the rejection with its counts) must be the scan
    /// that classifies every node, for the plain scan and the walk over the
    /// busy index alike; and both ways of setting nodes aside must have
    /// been taken, with rejections among the decisions.
    #[test]
    fn setting_late_nodes_aside_decides_as_classifying_every_node() {
        use crate::policy::steps::STANDING_SETTLED;
        use rand::{Rng, SeedableRng};
        let seed = 20261129;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let (mut rejected, mut certified, mut projected) = (0, 0, 0);
        STANDING_SETTLED.with(|c| c.set(0));
        for case in 0..1500 {
            let now = 1000.0;
            let mut n = nodes(rng.random_range(2..10));
            for node in n.iter_mut() {
                for id in 0..rng.random_range(0..6) {
                    let re = rng.random_range(5.0..150.0);
                    let d = re * rng.random_range(1.0..4.0);
                    let b = rng.random_range(1.0..100.0);
                    let mut jp = if rng.random_bool(0.6) {
                        hard(id, re, d, b, 1.0)
                    } else {
                        soft(id, re, d, b, rng.random_range(0.0..5.0))
                    };
                    jp.details.submit_time = now - rng.random_range(0.0..1.3 * d);
                    let mut part = part_on(node, &jp);
                    part.cpu_done = re * rng.random_range(0.0..1.2f64);
                    node.parts.push(part);
                }
            }
            let re = rng.random_range(5.0..150.0);
            let d = re * rng.random_range(1.0..3.0);
            let mut j = if rng.random_bool(0.8) {
                hard(1000, re, d, rng.random_range(1.0..100.0), 1.0)
            } else {
                soft(1000, re, d, rng.random_range(1.0..100.0), 1.0)
            };
            j.resources.processors = rng.random_range(1..=3);
            j.details.submit_time = now - rng.random_range(0.0..(d - re).min(200.0));
            let mut p = LibraSla::new(PolicyConfig::default());
            let want = scan_classifying_all(&mut p, now, &n, &j);
            let what = format!("seed {seed}, case {case}: {n:?} {j:?}");
            assert_eq!(p.decide(now, &n, &j), want, "{what}");
            let ix = BusyIndex::of(&n);
            assert_eq!(p.decide_indexed(now, &n, &ix, &j), want, "{what}");
            rejected += usize::from(matches!(want, Decision::Reject(_)));
            if j.qos.deadline_type == DeadlineType::Hard && p.precheck(&n, &j).is_none() {
                // Both walks (the scan and the index's) met every busy
                // node: each one the certificate proves late, where
                // `node_return` takes no shortcut, settled there twice.
                for node in n.iter().filter(|x| !x.parts.is_empty()) {
                    let before = NEW_SHORTCUTS.with(|c| c.get());
                    p.node_return(now, node, &j);
                    if NEW_SHORTCUTS.with(|c| c.get()) > before {
                        continue;
                    }
                    let new = part_on(node, &j);
                    let fns: Vec<PartFn> = node.parts.iter().map(PartFn::standing).collect();
                    if LateCheck::default().late_for_certain(now, &fns, &new) {
                        certified += 2;
                    } else if p.classify_standing(now, node, &j, true).is_none() {
                        projected += 1;
                    }
                }
            }
        }
        assert!(rejected > 100, "{rejected} rejected");
        // The walks took the certificate's word on exactly those nodes.
        assert_eq!(STANDING_SETTLED.with(|c| c.get()), certified);
        assert!(
            certified > 100 && projected > 100,
            "{certified} certified, {projected} projected late"
        );
    }
}
