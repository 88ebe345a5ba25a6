//! The small steps policies are built from (in the spirit of a scheduler
//! framework's Filter / Score / Permit plug-ins): each paper's algorithm is a
//! particular chain of these, on a snapshot (`&[NodeState]`) that does not
//! change during the decision. A step that refuses returns the
//! [`Decision::Reject`] with its reason; a refusal is a normal outcome.
//!
//! | step | kind | used by |
//! |---|---|---|
//! | [`too_many_processors`], [`resource_filter`] ([`with_resources`]) | resources filter | Libra, LibraRisk, Libra+$, LibraSLA |
//! | [`deadline_filter`] ([`load_if_fits`]); [`resource_deadline_filter`] (both filters in one pass) | deadline/share filter | Libra, Libra+$ (LibraRisk's shortcut) |
//! | `LibraRisk::zero_risk` (risk.rs) | risk filter | LibraRisk |
//! | [`budget_permit`] ([`static_cost`]) | price/budget permit | Libra, LibraRisk |
//! | `LibraPlusDollar::quote` (plus_dollar.rs) | price/budget permit | Libra+$ |
//! | `LibraSla::node_return` (sla.rs) | return filter | LibraSLA |
//! | [`top_k`] | best-fit / RESFree / return score | all four |
//!
//! The steps that belong to one paper only stay beside it.

use super::{Decision, PolicyConfig, RejectReason};
use crate::busy_index::{class_width, BusyIndex, LoadLine, WIDTH_CLASSES};
use crate::job::JobSpec;
use crate::node_model::NodeState;
use crate::time::{Time, KEY_TIE_EPS};

/// Share sums may exceed 1 by this much and still fit: a share sum is a
/// sum of ratios, and an admission that is exactly full must not be refused
/// for the last bit of rounding.
pub const SHARE_SUM_EPS: f64 = 1e-9;

/// Whether a decision from the busy index's bounds can stand for the
/// plain scan's for `job`: the bounds and lines are kept for one node
/// speed, for a job that needs no memory or disk (whose checks differ
/// from node to node), and only while they are up to date. Otherwise the
/// policy decides on the snapshot brought up to date.
pub fn bounds_apply(nodes: &[NodeState], index: &BusyIndex, job: &JobSpec) -> bool {
    job.resources.memory_kb == 0
        && job.resources.disk_mb == 0
        && index.speeds() == 1
        && !nodes.is_empty()
        && index.bounded()
}

/// Filter: indices of the nodes with the memory and disk one part needs.
pub fn with_resources(nodes: &[NodeState], job: &JobSpec, out: &mut Vec<usize>) {
    #[cfg(test)]
    count_read(nodes.len());
    out.clear();
    out.extend(
        nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.has_resources(job))
            .map(|(k, _)| k),
    );
}

/// Resources filter: more parts than the cluster has nodes.
pub fn too_many_processors(nodes: &[NodeState], job: &JobSpec) -> Option<Decision> {
    (job.processors() > nodes.len()).then(|| {
        Decision::reject(
            RejectReason::Resources,
            format!(
                "needs {} processors, the cluster has {} nodes",
                job.processors(),
                nodes.len()
            ),
        )
    })
}

/// Resources filter: the nodes with the memory and disk one part needs into
/// `res`; a rejection unless there are enough of them.
pub fn resource_filter(
    nodes: &[NodeState],
    job: &JobSpec,
    res: &mut Vec<usize>,
) -> Option<Decision> {
    with_resources(nodes, job, res);
    (res.len() < job.processors()).then(|| too_few_with_resources(job, res.len()))
}

fn too_few_with_resources(job: &JobSpec, have: usize) -> Decision {
    Decision::reject(
        RejectReason::Resources,
        format!(
            "needs {} nodes with {} KB memory and {} MB disk free, {} have them",
            job.processors(),
            job.resources.memory_kb,
            job.resources.disk_mb,
            have
        ),
    )
}

pub(super) fn too_few_in_time(job: &JobSpec, can: usize) -> Decision {
    Decision::reject(
        RejectReason::Deadline,
        format!(
            "needs {} nodes that can finish RE {:.0} s within D {:.0} s, {} can",
            job.processors(),
            job.estimate(),
            job.qos.deadline,
            can
        ),
    )
}

/// A node's load after one part of `job`, if the part fits by its
/// deadline, as [`load_if_fits`] computes it. The job's share on a node,
/// RE / speed / D, depends on the speed alone: it is computed once per run
/// of equal speeds (a homogeneous cluster: once), the very same value,
/// without two divisions per node.
struct LoadAfter<'a> {
    job: &'a JobSpec,
    speed: f64,
    add: f64,
}

impl<'a> LoadAfter<'a> {
    fn new(job: &'a JobSpec) -> Self {
        LoadAfter {
            job,
            speed: f64::NAN,
            add: 0.0,
        }
    }

    fn load_if_fits(&mut self, n: &NodeState, now: Time) -> Option<f64> {
        self.fits(n, n.required_share(now))
    }

    /// [`Self::load_if_fits`] with the node's load `required` (its
    /// [`NodeState::required_share`] at the instant) already known.
    fn fits(&mut self, n: &NodeState, required: f64) -> Option<f64> {
        if n.spec.speed != self.speed {
            self.new_speed(n);
        }
        let load = required + self.add;
        if load > 1.0 + SHARE_SUM_EPS {
            None
        } else {
            Some(load)
        }
    }

    /// Out of line and cold on purpose: inlined into the walk, the
    /// compiler computed both divisions for every node and selected the
    /// result without a branch, which is the very cost this type exists to
    /// avoid (two dependent divisions per node: ~40% of the indexed walk's
    /// samples under a flood).
    #[cold]
    #[inline(never)]
    fn new_speed(&mut self, n: &NodeState) {
        self.speed = n.spec.speed;
        self.add = n.est_cpu(self.job) / self.job.qos.deadline;
    }
}

/// Speeds whose idle nodes [`resource_deadline_filter`] trims (more
/// speeds than this: every idle node of the others stays a candidate).
const IDLE_SLOTS: usize = 8;

/// [`resource_filter`] then [`deadline_filter`] in one pass over the
/// nodes, with the same outcome: the nodes with the resources that can
/// finish one part by the deadline, with their load after it, into `out`
/// in node order; the resources rejection if fewer than `P` nodes have the
/// resources, else the deadline rejection if fewer than `P` fit. One pass
/// and no list of node indices in between: this runs over every node for
/// every decision.
pub fn resource_deadline_filter(
    now: Time,
    nodes: &[NodeState],
    job: &JobSpec,
    out: &mut Vec<(usize, f64)>,
    idle_keep: Option<usize>,
) -> Option<Decision> {
    #[cfg(test)]
    count_read(nodes.len());
    out.clear();
    let mut with_res = 0;
    let mut fit = 0;
    let mut after = LoadAfter::new(job);
    // `idle_keep = Some(k)`: of the nodes holding no part, only the first k
    // of each speed become candidates (all are counted). They all have the
    // same load after the part (0 + RE / speed / D), and equal keys rank by
    // node index in `top_k`, so a later one can never be ranked above k
    // earlier ones: the choice is the same as with all of them, and the
    // candidates (and the ranking) shrink from every node to the busy ones
    // plus k. For policies that pick by that load alone (Libra).
    let mut idle_kept: [(f64, usize); IDLE_SLOTS] = [(f64::NAN, 0); IDLE_SLOTS];
    let mut idle_speeds = 0;
    for (k, n) in nodes.iter().enumerate() {
        if !n.has_resources(job) {
            continue;
        }
        with_res += 1;
        let Some(load) = after.load_if_fits(n, now) else {
            continue;
        };
        let speed = n.spec.speed;
        fit += 1;
        if let (Some(keep), true) = (idle_keep, n.parts.is_empty()) {
            let slot = match idle_kept[..idle_speeds].iter().position(|s| s.0 == speed) {
                Some(i) => Some(i),
                None if idle_speeds < idle_kept.len() => {
                    idle_kept[idle_speeds] = (speed, 0);
                    idle_speeds += 1;
                    Some(idle_speeds - 1)
                }
                // More speeds than slots: keep every such node (more
                // candidates never change the choice).
                None => None,
            };
            if let Some(i) = slot {
                if idle_kept[i].1 >= keep {
                    continue;
                }
                idle_kept[i].1 += 1;
            }
        }
        out.push((k, load));
    }
    if with_res < job.processors() {
        return Some(too_few_with_resources(job, with_res));
    }
    (fit < job.processors()).then(|| too_few_in_time(job, fit))
}

/// Whether a decision on `job` may stand one idle node for its whole speed
/// group of `index` (the walk over every node gives each of them the same
/// answer): the job needs no memory or disk, whose check differs per node,
/// and the idle nodes have at most a handful of speeds. Otherwise the
/// policies walk every node.
pub fn idle_groups_stand_in(index: &BusyIndex, job: &JobSpec) -> bool {
    job.resources.memory_kb == 0 && job.resources.disk_mb == 0 && index.speeds() <= IDLE_SLOTS
}

/// The first `keep` idle nodes of each speed group of `index` whose one
/// member `answer` accepts, with the key `answer` gives that member (every
/// member's, an idle node's answer depending on its speed alone), into
/// `out` in node order; `answer` also sees the group's size, to count it.
/// Candidates of equal keys rank by node index in [`top_k`], so a later
/// member can never be ranked above `keep` earlier ones: with `keep` the
/// job's processors the choice is the walk's over every idle node.
pub fn idle_stand_ins(
    nodes: &[NodeState],
    index: &BusyIndex,
    keep: usize,
    out: &mut Vec<(usize, f64)>,
    mut answer: impl FnMut(&NodeState, usize) -> Option<f64>,
) {
    out.clear();
    for (_, group) in index.idle_by_speed() {
        let Some(first) = group.first() else {
            continue;
        };
        #[cfg(test)]
        count_read(1);
        if let Some(key) = answer(&nodes[first], group.len()) {
            out.extend(group.iter().take(keep).map(|k| (k, key)));
        }
    }
    out.sort_unstable_by_key(|c| c.0);
}

/// [`resource_deadline_filter`] with `idle_keep = Some(keep)`, over the
/// busy nodes of `index` and the first `keep` idle nodes of each speed
/// instead of every node: the same candidates in the same (index) order,
/// the same counts and so the same verdict, at a cost that follows the
/// busy nodes. An idle node's load after the part is `0 + RE / speed / D`
/// whatever its index, so one computation stands for its whole speed
/// group. Jobs that need memory or disk (whose check differs per node),
/// and views of more speeds than the filter keeps slots for, take the walk
/// over every node.
pub fn resource_deadline_filter_indexed(
    now: Time,
    nodes: &[NodeState],
    index: &BusyIndex,
    job: &JobSpec,
    out: &mut Vec<(usize, f64)>,
    keep: usize,
) -> Option<Decision> {
    if !idle_groups_stand_in(index, job) {
        return resource_deadline_filter(now, nodes, job, out, Some(keep));
    }
    out.clear();
    // Every node has what a job without memory or disk needs.
    let with_res = nodes.len();
    let mut fit = 0;
    let mut after = LoadAfter::new(job);
    for k in index.busy() {
        #[cfg(test)]
        count_read(1);
        let Some(load) = after.fits(&nodes[k], index.load(k, &nodes[k], now)) else {
            continue;
        };
        fit += 1;
        out.push((k, load));
    }
    let busy_end = out.len();
    for (_, group) in index.idle_by_speed() {
        let Some(first) = group.first() else {
            continue;
        };
        #[cfg(test)]
        count_read(1);
        // Computed on a member, as the walk computes it on each.
        let Some(load) = LoadAfter::new(job).load_if_fits(&nodes[first], now) else {
            continue;
        };
        fit += group.len();
        out.extend(group.iter().take(keep).map(|k| (k, load)));
    }
    // The busy nodes came in node order; the idle stand-ins are merged in.
    into_node_order(out, busy_end);
    if with_res < job.processors() {
        return Some(too_few_with_resources(job, with_res));
    }
    (fit < job.processors()).then(|| too_few_in_time(job, fit))
}

/// Longest tail [`into_node_order`] merges without sorting the whole.
const MERGED_TAIL: usize = 32;

/// Puts candidates in node order (as [`top_k`] ranks ties) where
/// `v[..head]` already is and the rest is a short tail (a few idle
/// stand-ins): the tail is sorted alone and merged in from the back.
/// On a walk over hundreds of busy candidates, a sort of the whole took a
/// third of a live manager's time at 158,976 nodes (the `live_latency`
/// bench's sustained step, Libra least loaded before it decided from the
/// bounds); the merge moves only the candidates after the tail's first
/// node, none when the idle nodes lie past the busy ones (best fit packs
/// the busy nodes low). Node indices
/// are distinct, so the order is the sort's. A longer tail is merged by
/// the standard library's stable sort. The caller's head is in node order (the busy set is walked in
/// it; debug builds check).
pub(crate) fn into_node_order(v: &mut [(usize, f64)], head: usize) {
    debug_assert!(
        v[..head].is_sorted_by_key(|c| c.0),
        "head out of node order"
    );
    let m = v.len() - head;
    if m == 0 {
        return;
    }
    if m > MERGED_TAIL {
        // A wide job's many stand-ins: the tail sorted, then the standard
        // library's stable sort, which finds the two runs and merges them
        // (O(n), with a buffer it allocates) rather than sorting anew.
        v[head..].sort_unstable_by_key(|c| c.0);
        v.sort_by_key(|c| c.0);
        return;
    }
    let mut buf = [(0, 0.0); MERGED_TAIL];
    let tail = &mut buf[..m];
    tail.copy_from_slice(&v[head..]);
    tail.sort_unstable_by_key(|c| c.0);
    // From the back: the larger of the head's last and the tail's last
    // goes to the last free place; the head's smaller nodes stay put.
    let (mut i, mut j, mut w) = (head, m, v.len());
    while j > 0 {
        w -= 1;
        if i > 0 && v[i - 1].0 > tail[j - 1].0 {
            v[w] = v[i - 1];
            i -= 1;
        } else {
            v[w] = tail[j - 1];
            j -= 1;
        }
    }
}

/// Debug builds: how many of the wide nodes a bounded walk passes over
/// by their lower bound it checks against their exact load, per decision
/// (the property tests' clusters stay under it).
#[cfg(debug_assertions)]
pub(crate) const DEBUG_WIDE_CHECKS: usize = 4096;

/// Libra's share test and placement (`better`: best fit, `Higher`; least
/// loaded, `Lower`) over the bounds of `index` ([`BusyIndex::rebound`],
/// up to date at `now`), with the outcome of
/// [`resource_deadline_filter_indexed`] followed by [`top_k`] (`keep` =
/// P): into `out`, a subset of that filter's candidates from which
/// `top_k` chooses the very same nodes, in node order; the same
/// rejection, with the same count, when fewer than P nodes fit. A busy
/// node's exact load at `now` (its [`NodeState::required_share`] as the
/// live core dead-reckons it, [`BusyIndex::exact_load`]) is computed only
/// for the nodes whose bounds leave the outcome open; `nodes` is read for
/// speeds and emptiness only.
///
/// Why the subset chooses the same: `top_k` keeps the k best keys and
/// breaks ties within [`KEY_TIE_EPS`] by node index, so its choice depends
/// only on the candidates whose key is at least as good as the k-th best
/// key give or take the tolerance. Best fit walks the busy nodes by lower
/// bound, highest first, from the highest that can pass the share test (a
/// node whose lower bound fails it fails it), and stops once k candidates
/// are known and no node left can come within the tolerance of the k-th
/// best of them (its key is at most its lower bound plus the widest bound
/// plus the job's share). Least loaded walks them lowest first and stops
/// once no node left can come within the tolerance from above (its key is
/// at least its lower bound plus the job's share); with k idle nodes of
/// one speed, whose key is the job's share alone, that is at the first
/// busy node whose lower bound is above the tolerance, so a decision
/// reads a few entries of the order whatever the busy nodes' number. The
/// k-th best key of the whole set is at least as good as that of the
/// subset, so every node left out ranks below the choice. When the walk
/// never stops early, every node that can fit was looked at, so the count
/// of those that fit is exact.
///
/// `None` (decide another way) unless the job needs no memory or disk and
/// every node has one speed (`index` has seen one).
pub fn share_filter_bounded(
    now: Time,
    nodes: &[NodeState],
    index: &BusyIndex,
    job: &JobSpec,
    out: &mut Vec<(usize, f64)>,
    better: Better,
) -> Option<Option<Decision>> {
    // One copy per end, so that each compiles to its own walk (a runtime
    // end cost best fit ~6% more instructions a decision).
    match better {
        Better::Higher => filter_bounded::<false>(now, nodes, index, job, out),
        Better::Lower => filter_bounded::<true>(now, nodes, index, job, out),
    }
}

/// Room for rounding in the walk's stopping tests (bounds already hold
/// their own).
const WALK_SLACK: f64 = 1e-9;

/// [`share_filter_bounded`] for least loaded (`LOWER`) or best fit.
fn filter_bounded<const LOWER: bool>(
    now: Time,
    nodes: &[NodeState],
    index: &BusyIndex,
    job: &JobSpec,
    out: &mut Vec<(usize, f64)>,
) -> Option<Option<Decision>> {
    if !bounds_apply(nodes, index, job) {
        return None;
    }
    let k = job.processors();
    out.clear();
    let mut fit = 0;
    let mut after = LoadAfter::new(job);
    // `TopKeys` keeps the highest: least loaded gives it the keys negated
    // (exactly), and `kth` below is the k-th best key itself.
    let sign = if LOWER { -1.0 } else { 1.0 };
    let mut best = TopKeys::default();
    best.reset(k);
    for (_, group) in index.idle_by_speed() {
        let Some(first) = group.first() else {
            continue;
        };
        // Computed on a member, as the walk computes it on each.
        let Some(l) = LoadAfter::new(job).load_if_fits(&nodes[first], now) else {
            continue;
        };
        fit += group.len();
        for n in group.iter().take(k) {
            out.push((n, l));
            best.take(sign * l);
        }
    }
    // Every node of one speed: the job's share on any node.
    let add = nodes[0].est_cpu(job) / job.qos.deadline;
    let top = 1.0 + SHARE_SUM_EPS - add + WALK_SLACK;
    // Whether a node whose load is at least `lo` and at most `hi` cannot
    // be chosen, nor tie, against `kth`, the k-th best key known (which
    // only gets better as candidates come, so a stop on an earlier one is
    // safe).
    let out_of_reach = |lo: f64, hi: f64, kth: f64| {
        if LOWER {
            lo + add - WALK_SLACK > kth + KEY_TIE_EPS
        } else {
            hi + add + WALK_SLACK < kth - KEY_TIE_EPS
        }
    };
    let mut kth = best.kth().map(|s| sign * s);
    // The wide nodes up to the same start as the walks by lower bound
    // below: one whose lower bound fails the share test by more than the
    // slack fails it (most of them: a part near its deadline needs more
    // than the node). A wide bound's lower bound has no room for the
    // rounding of the load's sum (a few ulps of it); the slack covers it.
    // They come lowest lower bound first, so least loaded also stops at
    // the first out of reach from below.
    let mut wide = index.wide();
    for (lo, n) in wide.by_ref() {
        if lo > top {
            #[cfg(debug_assertions)]
            debug_assert!(
                after.fits(&nodes[n], index.exact_load(n, now)).is_none(),
                "wide node {n} of lower bound {lo} passed over at {now}, but it fits"
            );
            break;
        }
        if LOWER && kth.is_some_and(|kth| out_of_reach(lo, f64::NAN, kth)) {
            break;
        }
        if let Some(v) = after.fits(&nodes[n], index.exact_load(n, now)) {
            fit += 1;
            out.push((n, v));
            best.take(sign * v);
            kth = best.kth().map(|s| sign * s);
        }
    }
    #[cfg(debug_assertions)]
    if !LOWER {
        for (lo, n) in wide.take(DEBUG_WIDE_CHECKS) {
            debug_assert!(
                after.fits(&nodes[n], index.exact_load(n, now)).is_none(),
                "wide node {n} of lower bound {lo} passed over at {now}, but it fits"
            );
        }
    }
    // One entry of the order (the same body for both ends, each walk its
    // own loop so that each compiles as a plain loop): `break` once it
    // and the rest of its class are out of reach.
    macro_rules! entry {
        ($lo:expr, $n:expr, $line:expr, $widest:expr) => {{
            let (lo, n, line): (f64, usize, LoadLine) = ($lo, $n, $line);
            if kth.is_some_and(|kth| out_of_reach(lo, lo + $widest, kth)) {
                break;
            }
            // The node's line, from its entry, settles most nodes the
            // walk meets without their exact load (their parts are
            // elsewhere in memory): one whose load is surely above the
            // share test's limit fails it (float addition is monotone, so
            // the sum the test takes is at least this one), and once k
            // nodes fit one surely out of reach of the k-th best key
            // cannot be chosen (the count of nodes that fit then no longer
            // matters: at least k do).
            if let Some((l, h)) = line.band(now) {
                debug_assert!(
                    (l..=h).contains(&index.exact_load(n, now)),
                    "node {n}: exact load {} outside its line's band [{l}, {h}] at {now}",
                    index.exact_load(n, now)
                );
                if l + add > 1.0 + SHARE_SUM_EPS || kth.is_some_and(|kth| out_of_reach(l, h, kth)) {
                    #[cfg(test)]
                    LINE_SETTLED.with(|c| c.set(c.get() + 1));
                    continue;
                }
            }
            if let Some(v) = after.fits(&nodes[n], index.exact_load(n, now)) {
                fit += 1;
                out.push((n, v));
                best.take(sign * v);
                kth = best.kth().map(|s| sign * s);
            }
        }};
    }
    // Narrow classes first: their good fits improve the k-th best key, so
    // the wider classes' walks stop sooner. Entries come with `lo <= top`:
    // a node whose lower bound fails the share test by more than the
    // slack is never met.
    for class in 0..WIDTH_CLASSES {
        let widest = class_width(class);
        if LOWER {
            for (lo, n, line) in index.by_lower_bound(class, top) {
                entry!(lo, n, line, widest);
            }
        } else {
            for (lo, n, line) in index.by_lower_bound(class, top).rev() {
                entry!(lo, n, line, widest);
            }
        }
    }
    out.sort_unstable_by_key(|c| c.0);
    Some((fit < k).then(|| too_few_in_time(job, fit)))
}

#[cfg(test)]
thread_local! {
    /// Nodes [`share_filter_bounded`] settled from their line alone
    /// (tests check the path ran).
    pub static LINE_SETTLED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Busy nodes LibraRisk's bounded walk settled by a certificate
    /// (`LibraRisk::decide_certified`, risk.rs), alone or by whole blocks.
    pub static RISK_SETTLED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Busy nodes the walks over nodes as they stand (LibraRisk's, in
    /// `LibraRisk::zero_risk_certified`; LibraSLA's, in
    /// `LibraSla::classify_standing`) settled by a certificate without a
    /// projection.
    pub static STANDING_SETTLED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Nodes whose state the walks over every node ([`with_resources`],
    /// [`resource_deadline_filter`]) and the indexed walks (over the busy
    /// nodes, one stand-in per idle speed group) read: a decision's cost in
    /// nodes, which tests pin. The bounded walks add here the idle
    /// stand-ins they read ([`idle_stand_ins`]); their busy nodes have
    /// counters of their own.
    pub static NODES_READ: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Counts one node in [`STANDING_SETTLED`] (test-only, as [`count_read`]).
#[cfg(test)]
pub(crate) fn count_standing_settled() {
    STANDING_SETTLED.with(|c| c.set(c.get() + 1));
}

/// Counts `n` nodes read in [`NODES_READ`]: a test-only function, out of
/// the walks, so that the mutation run (which skips `#[cfg(test)]` items)
/// mutates the decision and not this count.
#[cfg(test)]
pub(crate) fn count_read(n: usize) {
    NODES_READ.with(|c| c.set(c.get() + n as u64));
}

/// The `k` highest keys seen so far, the `k`-th best at hand: a min-heap
/// (the walks from bounds stop on it; reset keeps its allocation).
#[derive(Debug, Default)]
pub struct TopKeys {
    heap: std::collections::BinaryHeap<std::cmp::Reverse<KeyOrd>>,
    k: usize,
}

impl TopKeys {
    /// Empties it to keep the `k` highest keys.
    pub fn reset(&mut self, k: usize) {
        self.heap.clear();
        self.k = k;
    }

    /// Takes `key` in if it is among the `k` highest so far.
    pub fn take(&mut self, key: f64) {
        if self.heap.len() < self.k {
            self.heap.push(std::cmp::Reverse(KeyOrd(key)));
        } else if self.heap.peek().is_some_and(|b| key > b.0 .0) {
            self.heap.pop();
            self.heap.push(std::cmp::Reverse(KeyOrd(key)));
        }
    }

    /// The `k`-th highest key, once `k` were taken.
    pub fn kth(&self) -> Option<f64> {
        (self.heap.len() == self.k).then(|| self.heap.peek().map_or(f64::NAN, |b| b.0 .0))
    }
}

/// An `f64` key ordered by `total_cmp` (keys here are finite).
#[derive(Debug, Clone, Copy, PartialEq)]
struct KeyOrd(f64);

impl Eq for KeyOrd {}

impl PartialOrd for KeyOrd {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for KeyOrd {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// Deadline filter (Libra's share test over the nodes `res`): the nodes
/// that can finish one part by the deadline, with their load after it
/// ([`load_if_fits`]), into `out` in the order of `res`; a rejection
/// unless there are enough of them.
pub fn deadline_filter(
    now: Time,
    nodes: &[NodeState],
    res: &[usize],
    job: &JobSpec,
    out: &mut Vec<(usize, f64)>,
) -> Option<Decision> {
    out.clear();
    out.extend(
        res.iter()
            .filter_map(|&k| load_if_fits(&nodes[k], job, now).map(|load| (k, load))),
    );
    (out.len() < job.processors()).then(|| too_few_in_time(job, out.len()))
}

/// Libra's static cost C = gamma RE + delta RE / D: longer jobs pay
/// more, and a relaxed deadline is rewarded.
pub fn static_cost(cfg: &PolicyConfig, job: &JobSpec) -> f64 {
    cfg.gamma * job.estimate() + cfg.delta * job.estimate() / job.qos.deadline
}

/// Budget permit on the static cost: the cost, or a rejection if the
/// budget is below it.
pub fn budget_permit(cfg: &PolicyConfig, job: &JobSpec) -> Result<f64, Decision> {
    let cost = static_cost(cfg, job);
    if job.qos.budget < cost {
        return Err(Decision::reject(
            RejectReason::Budget,
            format!(
                "cost {cost:.2} exceeds budget {:.2} (cost = {} RE + {} RE/D)",
                job.qos.budget, cfg.gamma, cfg.delta
            ),
        ));
    }
    Ok(cost)
}

/// Filter (Libra's share test): the node's load after accepting one part
/// of `job` (sum of on-track required shares plus RE / speed / D), if it
/// is at most 1.
pub fn load_if_fits(node: &NodeState, job: &JobSpec, now: Time) -> Option<f64> {
    let load = node.required_share(now) + node.est_cpu(job) / job.qos.deadline;
    (load <= 1.0 + SHARE_SUM_EPS).then_some(load)
}

/// Which end of a key is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    /// Higher keys first.
    Higher,
    /// Lower keys first.
    Lower,
}

/// Score: keeps the `k` best `(node, key)` candidates in rank order. Keys
/// within [`KEY_TIE_EPS`] of the first key of their group are a tie, broken
/// by the lower node index, so float rounding cannot flip decisions between
/// two correct implementations. Runs in O(n + m log m), m the number of
/// candidates near the k-th key, so decisions grow linearly with nodes.
pub fn top_k(cands: &mut Vec<(usize, f64)>, k: usize, better: Better) {
    if k == 0 {
        cands.clear();
        return;
    }
    let sign = match better {
        Better::Higher => 1.0,
        Better::Lower => -1.0,
    };
    if !top_k_by_groups(cands, k, sign) {
        top_k_sorted(cands, k, sign);
    }
}

/// [`top_k`] by selection and sorting, for any candidates.
fn top_k_sorted(cands: &mut Vec<(usize, f64)>, k: usize, sign: f64) {
    // Internally: descending by s = sign * key, then by index.
    let exact = |a: &(usize, f64), b: &(usize, f64)| {
        (sign * b.1).total_cmp(&(sign * a.1)).then(a.0.cmp(&b.0))
    };
    if cands.len() > k {
        cands.select_nth_unstable_by(k - 1, exact);
        let kth = sign * cands[k - 1].1;
        // Anything within the tie tolerance of the k-th may still belong to
        // its tie group; everything further down cannot be ranked above it.
        cands.retain(|c| sign * c.1 >= kth - KEY_TIE_EPS);
    }
    cands.sort_by(exact);
    // Re-rank tie groups by node index.
    let mut start = 0;
    while start < cands.len() {
        let head = sign * cands[start].1;
        let mut end = start + 1;
        while end < cands.len() && head - sign * cands[end].1 <= KEY_TIE_EPS {
            end += 1;
        }
        cands[start..end].sort_by_key(|c| c.0);
        start = end;
    }
    cands.truncate(k);
}

/// Tie groups [`top_k`] may peel off one by one before sorting instead.
const PEEL_GROUPS: usize = 4;

/// [`top_k`] without sorting, for the common case: candidates in ascending
/// node order (as the filters produce them) whose best few tie groups hold
/// the `k` winners. The ranking is by tie groups from the top: the best key
/// heads a group of every key within [`KEY_TIE_EPS`] of it, in node order;
/// the best key left heads the next group, and so on. Each group is found
/// in one pass (its head is the best key left; its members, in node order,
/// are those within the tolerance), so a large group of equal keys (the
/// empty nodes of a big cluster) costs two passes instead of a sort. Gives
/// exactly what the sort does, or returns false (nothing changed) when
/// the candidates are not in node order, a key is not finite, or the `k`
/// winners lie beyond [`PEEL_GROUPS`] groups.
fn top_k_by_groups(cands: &mut Vec<(usize, f64)>, k: usize, sign: f64) -> bool {
    // The previous group's head: the rest is what lies beyond its tolerance
    // (keys within it belong to it or to a better group).
    let mut prev: Option<f64> = None;
    let mut out = Vec::with_capacity(k.min(cands.len()));
    for g in 0..PEEL_GROUPS {
        let in_rest = |s: f64| prev.is_none_or(|h| h - s > KEY_TIE_EPS);
        // The head of the next group: the best key left. The first pass
        // also checks the candidates are in node order with finite keys,
        // without branches (it runs over every candidate node).
        let mut head = f64::NEG_INFINITY;
        if g == 0 {
            let mut ok = true;
            let mut last = None::<usize>;
            for c in cands.iter() {
                ok &= c.1.is_finite() & last.is_none_or(|l| l < c.0);
                last = Some(c.0);
                head = head.max(sign * c.1);
            }
            if !ok {
                return false;
            }
        } else {
            for c in cands.iter() {
                let s = sign * c.1;
                if in_rest(s) && s > head {
                    head = s;
                }
            }
        }
        // Its members, in node order, up to `k` taken in all.
        for c in cands.iter() {
            if out.len() == k {
                break;
            }
            let s = sign * c.1;
            if in_rest(s) && head - s <= KEY_TIE_EPS {
                out.push(*c);
            }
        }
        if out.len() == k.min(cands.len()) {
            // Copied back rather than swapped in: `cands` keeps its
            // capacity, so the next decision's filter does not grow a
            // fresh vector to every node again.
            cands.clear();
            cands.extend_from_slice(&out);
            return true;
        }
        prev = Some(head);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_k_breaks_near_ties_by_index() {
        // Keys 0.5 and 0.5 + 1e-12 are a tie: the lower index (3) wins even
        // though its key is the smaller.
        let mut c = vec![(5, 0.5 + 1e-12), (3, 0.5), (1, 0.2), (0, 0.9)];
        top_k(&mut c, 2, Better::Higher);
        assert_eq!(c, vec![(0, 0.9), (3, 0.5)]);
        let mut c = vec![(5, 0.5 + 1e-12), (3, 0.5), (1, 0.2), (0, 0.9)];
        top_k(&mut c, 3, Better::Lower);
        assert_eq!(c.iter().map(|x| x.0).collect::<Vec<_>>(), vec![1, 3, 5]);
    }

    #[test]
    fn a_short_tail_is_merged_into_node_order() {
        // Busy candidates 2, 5, 9 in node order; idle stand-ins 7, 0, 12
        // after them: 0 goes first, 7 between 5 and 9, 12 last.
        let mut v = vec![(2, 0.2), (5, 0.5), (9, 0.9), (7, 0.1), (0, 0.1), (12, 0.1)];
        into_node_order(&mut v, 3);
        assert_eq!(
            v,
            vec![(0, 0.1), (2, 0.2), (5, 0.5), (7, 0.1), (9, 0.9), (12, 0.1)]
        );
        // Against the sort: random sorted heads and tails up to past the
        // longest merged one (which then takes the sort). Seeded, so a
        // failure repeats.
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(20261127);
        for _ in 0..3000 {
            let n = rng.random_range(0..120);
            let mut ids: Vec<usize> = (0..n).map(|i| 3 * i + rng.random_range(0..3)).collect();
            // Distinct node indices, shuffled, then a head of them sorted.
            for i in (1..ids.len()).rev() {
                ids.swap(i, rng.random_range(0..=i));
            }
            let head = rng.random_range(0..=n);
            ids[..head].sort_unstable();
            let mut v: Vec<(usize, f64)> = ids.iter().map(|&k| (k, k as f64 * 0.5)).collect();
            let mut want = v.clone();
            want.sort_unstable_by_key(|c| c.0);
            into_node_order(&mut v, head);
            assert_eq!(v, want, "head {head} of {n}");
        }
    }

    #[test]
    fn peeling_tie_groups_agrees_with_sorting() {
        // Keys from a few levels, each spread below, at and beyond the tie
        // tolerance, so groups chain and split; both ways must agree on
        // every k, both directions. Seeded, so a failure repeats.
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(13);
        let levels = [0.25, 0.5, 0.5 + 3.0 * KEY_TIE_EPS, 0.75, 1.0];
        let nudges = [0.0, 0.0, 0.3, -0.6, 0.9, 1.0, -1.0, 1.5, -2.5];
        let mut peeled = 0;
        for _ in 0..3000 {
            let n = rng.random_range(1..40);
            let cands: Vec<(usize, f64)> = (0..n)
                .map(|i| {
                    let l = levels[rng.random_range(0..levels.len())];
                    let d = nudges[rng.random_range(0..nudges.len())];
                    (3 * i + rng.random_range(0..3), l + d * KEY_TIE_EPS)
                })
                .collect();
            for sign in [1.0, -1.0] {
                for k in 1..=n + 1 {
                    let mut a = cands.clone();
                    let mut b = cands.clone();
                    top_k_sorted(&mut b, k, sign);
                    if top_k_by_groups(&mut a, k, sign) {
                        peeled += 1;
                        assert_eq!(a, b, "k {k}, sign {sign}, {cands:?}");
                    } else {
                        assert_eq!(a, cands, "left alone when it declines");
                    }
                }
            }
        }
        // The comparison must have run, not declined every time.
        assert!(peeled > 10_000, "{peeled}");
    }

    #[test]
    fn top_k_agrees_with_a_full_sort() {
        // Against a plain stable sort on (key desc, index) with keys that
        // are far apart, for every k.
        let keys = [0.3, 0.7, 0.1, 0.9, 0.5, 0.7, 0.2, 0.8];
        for k in 0..=keys.len() {
            let mut c: Vec<(usize, f64)> = keys.iter().copied().enumerate().collect();
            top_k(&mut c, k, Better::Higher);
            let mut want: Vec<(usize, f64)> = keys.iter().copied().enumerate().collect();
            want.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            want.truncate(k);
            assert_eq!(c, want, "k = {k}");
        }
    }

    /// `n` seeded nodes of `speeds` (one in ten short of memory); of every
    /// `busy_in` nodes about three are busy: a part of tiny required share
    /// (tying the empty nodes within the tie tolerance), one of random
    /// load, one of near-full load.
    fn random_cluster(
        rng: &mut rand_chacha::ChaCha8Rng,
        n: usize,
        speeds: &[f64],
        busy_in: u32,
    ) -> Vec<NodeState> {
        use crate::policy::test_util::busy;
        use rand::Rng;
        let mut nodes: Vec<NodeState> = (0..n)
            .map(|id| {
                NodeState::new(crate::node_model::NodeSpec {
                    id,
                    speed: speeds[rng.random_range(0..speeds.len())],
                    memory_kb: if rng.random_range(0..10) == 0 {
                        10
                    } else {
                        1 << 20
                    },
                    disk_mb: 1 << 10,
                })
            })
            .collect();
        for (i, node) in nodes.iter_mut().enumerate() {
            match rng.random_range(0..busy_in) {
                0 => busy(node, i as u64, 1e-13, 100.0),
                1 => busy(node, i as u64, rng.random_range(1.0..90.0), 100.0),
                2 => busy(node, i as u64, 99.0, 100.0),
                _ => {}
            }
        }
        nodes
    }

    #[test]
    fn keeping_k_idle_nodes_per_speed_chooses_as_keeping_all() {
        // Seeded clusters: idle nodes of two or three speeds (some of them
        // short of memory), busy nodes whose load after the part ties or
        // nearly ties the idle nodes' (a part of tiny required share), and
        // busy nodes that do not fit. With k idle nodes kept per speed, the
        // filter's verdict and the top-k choice must equal those with every
        // node a candidate, for best fit and least loaded.
        use crate::policy::test_util::job;
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(29);
        for case in 0..400 {
            let n = rng.random_range(1..60);
            let kinds = rng.random_range(1..=3);
            let nodes = random_cluster(&mut rng, n, &[1.0, 2.0, 0.5][..kinds], 4);
            let p = rng.random_range(1..=n.min(8) as u32);
            let mut j = job(1, rng.random_range(0.5..20.0), p, 100.0, 1e9);
            if rng.random_range(0..4) == 0 {
                j.resources.memory_kb = 100;
            }
            for better in [Better::Higher, Better::Lower] {
                let mut all = Vec::new();
                let mut kept = Vec::new();
                let a = resource_deadline_filter(0.0, &nodes, &j, &mut all, None);
                let b = resource_deadline_filter(0.0, &nodes, &j, &mut kept, Some(p as usize));
                assert_eq!(a, b, "case {case}: verdicts differ");
                assert!(kept.len() <= all.len());
                if a.is_none() {
                    top_k(&mut all, p as usize, better);
                    top_k(&mut kept, p as usize, better);
                    assert_eq!(all, kept, "case {case} {better:?}");
                }
            }
        }
    }
    #[test]
    fn the_bounded_best_fit_keeps_a_tie_below_the_first_fit() {
        // Loads at 0: n0 0.5 - 5e-10, n1 0.5 (a tie within KEY_TIE_EPS),
        // n2 0.2, n3 idle; exact bounds. Job share 0.3: keys 0.8 - 5e-10,
        // 0.8, 0.5, 0.3. Best fit of one: the tie group {n1, n0} heads
        // the ranking and the lower index wins, n0, although the walk by
        // lower bound meets n1 first; it must not stop there.
        use crate::busy_index::BusyIndex;
        use crate::policy::test_util::{busy, job, nodes};
        let mut n = nodes(4);
        busy(&mut n[0], 10, 50.0 - 5e-8, 100.0);
        busy(&mut n[1], 11, 50.0, 100.0);
        busy(&mut n[2], 12, 20.0, 100.0);
        let mut ix = BusyIndex::of(&n);
        crate::policy::test_util::rebound_exact_at_zero(&mut ix, &n);
        let j = job(1, 30.0, 1, 100.0, 1e9);
        let mut got = Vec::new();
        let v = share_filter_bounded(0.0, &n, &ix, &j, &mut got, Better::Higher);
        assert_eq!(v, Some(None));
        top_k(&mut got, 1, Better::Higher);
        assert_eq!(got.iter().map(|c| c.0).collect::<Vec<_>>(), [0]);
        let mut all = Vec::new();
        assert_eq!(resource_deadline_filter(0.0, &n, &j, &mut all, None), None);
        top_k(&mut all, 1, Better::Higher);
        assert_eq!(all, got);
        // A share of 0.6 fits only n2 (0.8) and the idle n3 (0.6); two
        // processors take both, three are refused with the count, 2.
        let mut got = Vec::new();
        let v = share_filter_bounded(
            0.0,
            &n,
            &ix,
            &job(2, 60.0, 3, 100.0, 1e9),
            &mut got,
            Better::Higher,
        );
        match v {
            Some(Some(Decision::Reject(r))) => {
                assert_eq!(r.reason, RejectReason::Deadline);
                assert!(r.detail.ends_with(", 2 can"), "{}", r.detail);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_bounded_least_loaded_keeps_a_busy_node_tied_with_the_idle_ones() {
        // Loads at 0: n0 5e-10 (a part of 5e-5 s due at 1e5: more work
        // than the 1e-6 s below which a part counts as done), n1 idle, n2
        // 0.2, n3 0.65; exact bounds. Job share 0.3: keys 0.3 + 5e-10,
        // 0.3, 0.5, 0.95. Least loaded of one: n0 and n1 tie within
        // KEY_TIE_EPS and the lower index wins, n0, although the idle
        // stand-in n1 already holds the best key when the walk meets n0.
        // n2 and n3 lie beyond the tie: the walk stops before them.
        use crate::busy_index::BusyIndex;
        use crate::policy::test_util::{busy, job, nodes};
        let mut n = nodes(4);
        busy(&mut n[0], 10, 5e-5, 1e5);
        busy(&mut n[2], 12, 20.0, 100.0);
        busy(&mut n[3], 13, 65.0, 100.0);
        assert!((n[0].required_share(0.0) - 5e-10).abs() < 1e-20);
        let mut ix = BusyIndex::of(&n);
        crate::policy::test_util::rebound_exact_at_zero(&mut ix, &n);
        let j = job(1, 30.0, 1, 100.0, 1e9);
        let mut got = Vec::new();
        assert_eq!(
            share_filter_bounded(0.0, &n, &ix, &j, &mut got, Better::Lower),
            Some(None)
        );
        assert_eq!(got.iter().map(|c| c.0).collect::<Vec<_>>(), [0, 1]);
        top_k(&mut got, 1, Better::Lower);
        assert_eq!(got.iter().map(|c| c.0).collect::<Vec<_>>(), [0]);
        let mut all = Vec::new();
        assert_eq!(resource_deadline_filter(0.0, &n, &j, &mut all, None), None);
        top_k(&mut all, 1, Better::Lower);
        assert_eq!(all, got);
        // Three processors: the tie group by index, n0 then n1, and n2
        // (0.5); n3 (0.95) is beyond the third best and not met.
        let j = job(2, 30.0, 3, 100.0, 1e9);
        let mut got = Vec::new();
        assert_eq!(
            share_filter_bounded(0.0, &n, &ix, &j, &mut got, Better::Lower),
            Some(None)
        );
        assert_eq!(got.iter().map(|c| c.0).collect::<Vec<_>>(), [0, 1, 2]);
        top_k(&mut got, 3, Better::Lower);
        assert_eq!(got.iter().map(|c| c.0).collect::<Vec<_>>(), [0, 1, 2]);
        // A share of 0.6 fits n0, n1 and n2 (0.8), not n3 (1.25): four
        // processors are refused with the count, 3, the walk having met
        // every node that can fit.
        let mut got = Vec::new();
        match share_filter_bounded(
            0.0,
            &n,
            &ix,
            &job(3, 60.0, 4, 100.0, 1e9),
            &mut got,
            Better::Lower,
        ) {
            Some(Some(Decision::Reject(r))) => {
                assert_eq!(r.reason, RejectReason::Deadline);
                assert!(r.detail.ends_with(", 3 can"), "{}", r.detail);
            }
            other => panic!("{other:?}"),
        }
    }

    /// A decision on a big, mostly idle cluster reads its busy nodes and
    /// one idle node per speed group, never every node: at the size of
    /// Fugaku (158,976 nodes, most of them idle) a walk over every node is
    /// what made a decision grow with the cluster, and the `decide`
    /// benchmark's targets (docs/benchmarks.md: p50 at 158,976 nodes
    /// within 3x of that at 10,000) rest on this. Each policy that stands
    /// one idle node for its speed group ([`idle_groups_stand_in`]) is
    /// checked on its indexed walk, with its choice worked by hand, so
    /// that the count is of a real decision.
    ///
    /// 10,000 nodes: 0-4999 of speed 1, 5000-9999 of speed 2. Busy, all
    /// of speed 1 (share q = rem / (dt - 0)): node 0 rem 50 due at 50
    /// (q 1.0), node 1 rem 50 due at 100 (q 0.5, LibraSLA return 2),
    /// node 2 rem 80 due at 100 (q 0.8, return 3). The job: RE 10, 2
    /// processors, D 100, budget 1e9 (a hard deadline, no penalty); its
    /// share is 10 / 100 = 0.1 on speed 1, 0.05 on speed 2.
    /// - Libra (best fit): loads after it n0 1.1 (over 1: out), n1 0.6,
    ///   n2 0.9, idle 0.1 and 0.05: the two highest, [2, 1].
    /// - Libra+$: RESFree = D - committed - RE / s: n1 100 - 50 - 10 = 40,
    ///   n2 100 - 80 - 10 = 10, idle 90 and 95 (n0 fails the share test):
    ///   the two smallest, [2, 1].
    /// - LibraRisk (node order): n0 is short (1.1): its part ends at 55
    ///   (delay 5), then the new one alone by 60 (delay 0): sigma 2.5, not
    ///   zero-risk. n1 and n2 fit (0.6, 0.9): zero-risk, the first two in
    ///   node order before any idle node: [1, 2].
    /// - LibraSLA: new returns n1 2 + 1e9 / (10 x 100) = 1e6 + 2, n2
    ///   1e6 + 3, idle 1e6 (n0 at most 1e6): the two highest, [2, 1].
    ///
    /// Each reads the 3 busy nodes and one node of each of the 2 idle
    /// groups: 5 nodes (the walk over every node reads 10,000).
    #[test]
    fn a_decision_on_a_big_idle_cluster_reads_its_busy_nodes_and_one_per_speed() {
        use crate::busy_index::BusyIndex;
        use crate::policy::test_util::{busy, job, nodes};
        use crate::policy::{AdmissionPolicy, Libra, LibraPlusDollar, LibraRisk, LibraSla};
        let mut n = nodes(10_000);
        for node in &mut n[5000..] {
            node.spec.speed = 2.0;
        }
        busy(&mut n[0], 10, 50.0, 50.0);
        busy(&mut n[1], 11, 50.0, 100.0);
        busy(&mut n[2], 12, 80.0, 100.0);
        n[1].parts[0].ret = 2.0;
        n[2].parts[0].ret = 3.0;
        let ix = BusyIndex::of(&n);
        let j = job(1, 10.0, 2, 100.0, 1e9);
        let cfg = PolicyConfig::default();
        let policies: [(Box<dyn AdmissionPolicy>, Vec<usize>); 4] = [
            (Box::new(Libra::new(cfg.clone())), vec![2, 1]),
            (Box::new(LibraPlusDollar::new(cfg.clone())), vec![2, 1]),
            (Box::new(LibraRisk::new(cfg.clone())), vec![1, 2]),
            (Box::new(LibraSla::new(cfg)), vec![2, 1]),
        ];
        for (mut p, chosen) in policies {
            NODES_READ.with(|c| c.set(0));
            match p.decide_indexed(0.0, &n, &ix, &j) {
                Decision::Accept(a) => assert_eq!(a.nodes, chosen, "{}", p.name()),
                other => panic!("{}: {other:?}", p.name()),
            }
            assert_eq!(NODES_READ.with(|c| c.get()), 5, "{}", p.name());
        }
    }

    #[test]
    fn the_busy_index_gives_the_candidates_of_the_walk() {
        // Seeded clusters as above, with up to ten speeds (more than the
        // filter keeps slots for), nodes short of memory, jobs with and
        // without memory: the filter over the busy index must give the
        // walk's verdict and exactly its candidates, in its order.
        use crate::busy_index::BusyIndex;
        use crate::policy::test_util::job;
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(31);
        let speeds = [1.0, 2.0, 0.5, 1.5, 3.0, 0.25, 4.0, 0.75, 1.25, 5.0];
        let mut idle_groups_used = 0;
        for case in 0..600 {
            let n = rng.random_range(1..80);
            let kinds = if rng.random_range(0..5) == 0 {
                10
            } else {
                rng.random_range(1..=3)
            };
            let nodes = random_cluster(&mut rng, n, &speeds[..kinds], 5);
            let index = BusyIndex::of(&nodes);
            let p = rng.random_range(1..=n.min(8) as u32);
            let mut j = job(1, rng.random_range(0.5..60.0), p, 100.0, 1e9);
            if rng.random_range(0..4) == 0 {
                j.resources.memory_kb = 100;
            }
            let mut walk = Vec::new();
            let mut indexed = Vec::new();
            let now = rng.random_range(0.0..50.0);
            let a = resource_deadline_filter(now, &nodes, &j, &mut walk, Some(p as usize));
            let b =
                resource_deadline_filter_indexed(now, &nodes, &index, &j, &mut indexed, p as usize);
            assert_eq!(a, b, "case {case}: verdicts differ");
            assert_eq!(walk, indexed, "case {case}: candidates differ");
            idle_groups_used += usize::from(index.speeds() <= 8 && j.resources.memory_kb == 0);
        }
        assert!(
            idle_groups_used > 300,
            "the indexed path itself must be exercised"
        );
    }

    #[test]
    fn a_load_of_exactly_one_plus_the_tolerance_fits() {
        // Node 0 is full at 0 (one part, rem 100 s to its deadline at
        // 100: share 1); node 1 holds a part of share 0.5. The job's share
        // is RE / D = 1e-9 / 1 = 1e-9 = SHARE_SUM_EPS, so node 0's load
        // after it is 1 + 1e-9, the very float of the limit: it fits (the
        // test is `load > 1 + SHARE_SUM_EPS`), as does node 1 (0.5 +
        // 1e-9). A job of twice that share fits only node 1.
        use crate::policy::test_util::{busy, job, nodes};
        let mut n = nodes(2);
        busy(&mut n[0], 10, 100.0, 100.0);
        busy(&mut n[1], 11, 50.0, 100.0);
        let mut out = Vec::new();
        let j = job(1, 1e-9, 1, 1.0, 1e9);
        assert_eq!(1.0 + n[0].est_cpu(&j) / j.qos.deadline, 1.0 + SHARE_SUM_EPS);
        assert!(resource_deadline_filter(0.0, &n, &j, &mut out, None).is_none());
        assert_eq!(out, vec![(0, 1.0 + 1e-9), (1, 0.5 + 1e-9)]);
        assert_eq!(load_if_fits(&n[0], &j, 0.0), Some(1.0 + 1e-9));
        let j = job(1, 2e-9, 1, 1.0, 1e9);
        assert!(resource_deadline_filter(0.0, &n, &j, &mut out, None).is_none());
        assert_eq!(out, vec![(1, 0.5 + 2e-9)]);
        assert_eq!(load_if_fits(&n[0], &j, 0.0), None);
    }

    #[test]
    fn a_job_needing_memory_or_disk_is_checked_on_every_idle_node() {
        // Three idle nodes and a busy one; idle node 0 has no memory and
        // no disk, nodes 1-3 have 1 GiB and 1 GiB. A job asking for 1 KB
        // of memory (or 1 MB of disk) fits nodes 1-3 only, so one idle
        // node cannot stand for its speed group: Libra (best fit, the
        // fullest node first) takes busy node 3, then idle node 1, never
        // node 0. A job asking for neither may stand node 0 for the group
        // and takes 3 and 0.
        use crate::busy_index::BusyIndex;
        use crate::policy::test_util::{busy, job, nodes};
        use crate::policy::{AdmissionPolicy, Libra};
        let mut n = nodes(4);
        n[0].spec.memory_kb = 0;
        n[0].spec.disk_mb = 0;
        busy(&mut n[3], 10, 50.0, 100.0);
        let ix = BusyIndex::of(&n);
        let mut libra = Libra::new(PolicyConfig::default());
        let chosen = |libra: &mut Libra, j: &JobSpec| match libra.decide_indexed(0.0, &n, &ix, j) {
            Decision::Accept(a) => a.nodes,
            other => panic!("{other:?}"),
        };
        let mut mem = job(1, 10.0, 2, 100.0, 1e9);
        mem.resources.memory_kb = 1;
        assert!(!idle_groups_stand_in(&ix, &mem));
        assert_eq!(chosen(&mut libra, &mem), vec![3, 1]);
        let mut disk = job(2, 10.0, 2, 100.0, 1e9);
        disk.resources.disk_mb = 1;
        assert!(!idle_groups_stand_in(&ix, &disk));
        assert_eq!(chosen(&mut libra, &disk), vec![3, 1]);
        let plain = job(3, 10.0, 2, 100.0, 1e9);
        assert!(idle_groups_stand_in(&ix, &plain));
        assert_eq!(chosen(&mut libra, &plain), vec![3, 0]);
    }

    #[test]
    fn the_bounded_best_fit_stops_once_no_node_left_can_rank() {
        // Busy loads at 0 (exact bounds, no line): n0 0.3, n1 0.85, n2
        // 0.9000000005, n3 0.6, n4 0.8, n5 0.1, n6 0.95; n7, n8 idle.
        // Job: RE 10, D 100 (share 0.1), 2 processors. n6 fails the share
        // test (1.05 > 1 + 1e-9); n2 passes it (1.0000000005 <= 1 +
        // 1e-9), so the walk must start from the top 1 + 1e-9 - 0.1 +
        // 1e-9 (its rounding room), not below n2's lower bound. The idle
        // group gives n7 and n8 (0.1 each): the 2nd best key is 0.1. Walked
        // by lower bound, highest first: n2 (key 1.0000000005), n1 (0.95:
        // the 2nd best is now 0.95), then n4, whose key is at most 0.8 +
        // the class's width (0.02 / 512) + 0.1 + 1e-9 < 0.95 - 1e-9: the
        // walk stops there. The candidates are n1, n2, n7, n8 (node
        // order), not n0, n3, n4 or n5, and best fit takes n2 and n1.
        use crate::busy_index::BusyIndex;
        use crate::policy::test_util::{busy, job, nodes};
        let mut n = nodes(9);
        for (k, rem) in [30.0, 85.0, 90.00000005, 60.0, 80.0, 10.0, 95.0]
            .into_iter()
            .enumerate()
        {
            busy(&mut n[k], 10 + k as u64, rem, 100.0);
        }
        let mut ix = BusyIndex::of(&n);
        crate::policy::test_util::rebound_exact_at_zero(&mut ix, &n);
        let j = job(1, 10.0, 2, 100.0, 1e9);
        let mut got = Vec::new();
        assert_eq!(
            share_filter_bounded(0.0, &n, &ix, &j, &mut got, Better::Higher),
            Some(None)
        );
        assert_eq!(got.iter().map(|c| c.0).collect::<Vec<_>>(), [1, 2, 7, 8]);
        assert!((got[1].1 - 1.0000000005).abs() < 1e-15, "{:?}", got[1]);
        top_k(&mut got, 2, Better::Higher);
        assert_eq!(got.iter().map(|c| c.0).collect::<Vec<_>>(), [2, 1]);
    }

    /// The wide nodes are read in the order of their lower bounds, up to
    /// the walk's start: job RE 10, D 100 (share 0.1), 1 processor, the
    /// start 1 + 1e-9 - 0.1 + 1e-9. n0: load 0.85, wide bound [0.5, 0.95]
    /// (read: 0.95, the best fit over idle n2's 0.1). n1: a wide bound
    /// [0.95, 1.3] that lies (its load is 0.3): its lower bound is past
    /// the start, so its load is never read, and the debug build's check
    /// of the nodes passed over finds that it fits.
    #[cfg(debug_assertions)]
    #[test]
    #[should_panic(expected = "wide node 1 of lower bound 0.95 passed over at 0, but it fits")]
    fn a_wide_node_passed_over_on_a_lying_lower_bound_fails_the_debug_check() {
        use crate::busy_index::{BusyIndex, LoadBound};
        use crate::policy::test_util::{busy, job, nodes, still_part_fns};
        let mut n = nodes(3);
        busy(&mut n[0], 10, 85.0, 100.0);
        busy(&mut n[1], 11, 30.0, 100.0);
        let mut ix = BusyIndex::of(&n);
        ix.rebound(0.0, |k, _, _, fns| {
            still_part_fns(&n[k], fns);
            let (lo, hi) = if k == 0 { (0.5, 0.95) } else { (0.95, 1.3) };
            LoadBound {
                lo,
                hi,
                line: LoadLine::NONE,
            }
        });
        let mut got = Vec::new();
        share_filter_bounded(
            0.0,
            &n,
            &ix,
            &job(1, 10.0, 1, 100.0, 1e9),
            &mut got,
            Better::Higher,
        );
    }

    #[test]
    fn the_bounded_best_fit_settles_nodes_from_their_lines() {
        // Six busy nodes at 0, each with bounds [lo, hi] and a line
        // (flat, half-width 0.001) around its exact load q:
        //   n0 q 0.905 [0.895, 0.91]   n1 q 0.8 [0.79, 0.805]
        //   n2 q 0.6 [0.597, 0.603]    n3 q 0.79 [0.785, 0.8]
        //   n4 q 0.61 [0.6, 0.615]     n5 q 0.95 [0.94, 0.955]
        // n2's width 0.006 files it in class 8 (widest 0.02/2 = 0.01), the
        // others' 0.015 in class 9 (widest 0.02); n6 is idle. Job: share
        // 0.1, 1 processor. The walk starts at 1 + 1e-9 - 0.1 + 1e-9:
        // n5's lower bound is above it (it cannot fit), so n5 is never
        // met. n6 gives the first best, 0.1. Class 8 first:
        // n2 (0.597 + 0.01 + 0.1 is not below 0.1), priced exactly: 0.7,
        // the best so far. Class 9 by lower bound: n0 (0.895 + 0.02 + 0.1
        // is not below 0.7: walked), its line's low end 0.904 + 0.1 > 1 +
        // 1e-9: settled, fails. n1: priced, 0.9, now the best. n3: 0.785 +
        // 0.02 + 0.1 = 0.905 is not below 0.9 - 1e-9 (walked), but its
        // line's high end 0.791 + 0.1 + 1e-9 is: settled, cannot rank. n4:
        // 0.6 + 0.02 + 0.1 < 0.9: the walk stops. Candidates n1, n2 and
        // n6, two nodes settled from their lines, and n1 chosen.
        use crate::busy_index::{BusyIndex, LoadBound};
        use crate::policy::test_util::{busy, job, nodes};
        let q = [0.905, 0.8, 0.6, 0.79, 0.61, 0.95];
        let b = [
            (0.895, 0.91),
            (0.79, 0.805),
            (0.597, 0.603),
            (0.785, 0.8),
            (0.6, 0.615),
            (0.94, 0.955),
        ];
        let mut n = nodes(7);
        for (k, q) in q.into_iter().enumerate() {
            busy(&mut n[k], 10 + k as u64, q * 100.0, 100.0);
        }
        let mut ix = BusyIndex::of(&n);
        ix.rebound(0.0, |k, _, _, fns| {
            crate::policy::test_util::still_part_fns(&n[k], fns);
            LoadBound {
                lo: b[k].0,
                hi: b[k].1,
                line: LoadLine {
                    t0: 0.0,
                    v0: q[k],
                    slope: 0.0,
                    err: 0.001,
                    rem0: f64::INFINITY,
                    rem_slope: 0.0,
                },
            }
        });
        let j = job(1, 10.0, 1, 100.0, 1e9);
        let settled = LINE_SETTLED.with(|c| c.get());
        let mut got = Vec::new();
        assert_eq!(
            share_filter_bounded(0.0, &n, &ix, &j, &mut got, Better::Higher),
            Some(None)
        );
        assert_eq!(LINE_SETTLED.with(|c| c.get()) - settled, 2);
        assert_eq!(got.iter().map(|c| c.0).collect::<Vec<_>>(), [1, 2, 6]);
        top_k(&mut got, 1, Better::Higher);
        assert_eq!(got[0].0, 1);
        // Two processors: the 2nd best is 0.1 (n6) after n2, 0.7 after n1;
        // n3 (0.785 + 0.02 + 0.1 and its line's 0.791 + 0.1 both above
        // 0.7) is priced, 0.89, now the 2nd best; n4 (0.72 < 0.89) stops
        // the walk. Only n0 is settled from its line; n1 and n3 chosen.
        let settled = LINE_SETTLED.with(|c| c.get());
        let j = job(2, 10.0, 2, 100.0, 1e9);
        assert_eq!(
            share_filter_bounded(0.0, &n, &ix, &j, &mut got, Better::Higher),
            Some(None)
        );
        assert_eq!(LINE_SETTLED.with(|c| c.get()) - settled, 1);
        assert_eq!(got.iter().map(|c| c.0).collect::<Vec<_>>(), [1, 2, 3, 6]);
        top_k(&mut got, 2, Better::Higher);
        assert_eq!(got.iter().map(|c| c.0).collect::<Vec<_>>(), [1, 3]);
    }

    #[test]
    fn the_one_pass_filter_is_the_two_filters_in_turn() {
        // resource_deadline_filter is resource_filter then deadline_filter
        // fused into one pass: on seeded clusters (some nodes short of
        // memory, busy nodes that fit, tie or do not), the two steps in
        // turn give the same verdict, the same candidates with the same
        // loads in the same order, and the same rejection text.
        use crate::policy::test_util::job;
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(31);
        let (mut rejected, mut accepted) = (0, 0);
        for case in 0..300 {
            let n = rng.random_range(1..40);
            let kinds = rng.random_range(1..=3);
            let nodes = random_cluster(&mut rng, n, &[1.0, 2.0, 0.5][..kinds], 3);
            let p = rng.random_range(1..=n.min(12) as u32);
            let mut j = job(1, rng.random_range(0.5..60.0), p, 100.0, 1e9);
            if rng.random_range(0..3) == 0 {
                j.resources.memory_kb = 100;
            }
            let mut fused = Vec::new();
            let one = resource_deadline_filter(0.0, &nodes, &j, &mut fused, None);
            let mut res = Vec::new();
            let mut two = Vec::new();
            let steps = resource_filter(&nodes, &j, &mut res)
                .or_else(|| deadline_filter(0.0, &nodes, &res, &j, &mut two));
            assert_eq!(one, steps, "case {case}: verdicts differ");
            if one.is_none() {
                assert_eq!(fused, two, "case {case}: candidates differ");
                accepted += 1;
            } else {
                rejected += 1;
            }
        }
        assert!(
            accepted > 50 && rejected > 50,
            "{accepted} passed, {rejected} refused"
        );
    }

    #[test]
    fn a_line_just_under_the_share_limit_does_not_settle_its_node() {
        // n0's exact load at 0 is 0.9000000005 and its line's band is
        // +-1e-12 around it (bounds [0.895, 0.9001]); n1 is idle. Job:
        // share 0.1, 1 processor. The line's low end plus the share,
        // 1.0000000005 - 1e-12, is within 1 + 1e-9: the line does not
        // settle n0 as failing, its exact load is priced, 1.0000000005
        // fits, and best fit takes n0 over the idle n1 (0.1).
        use crate::busy_index::{BusyIndex, LoadBound};
        use crate::policy::test_util::{busy, job, nodes};
        let mut n = nodes(2);
        busy(&mut n[0], 10, 90.00000005, 100.0);
        let q = n[0].required_share(0.0);
        let mut ix = BusyIndex::of(&n);
        ix.rebound(0.0, |k, _, _, fns| {
            crate::policy::test_util::still_part_fns(&n[k], fns);
            LoadBound {
                lo: 0.895,
                hi: 0.9001,
                line: LoadLine {
                    t0: 0.0,
                    v0: q,
                    slope: 0.0,
                    err: 1e-12,
                    rem0: f64::INFINITY,
                    rem_slope: 0.0,
                },
            }
        });
        let mut got = Vec::new();
        let j = job(1, 10.0, 1, 100.0, 1e9);
        assert_eq!(
            share_filter_bounded(0.0, &n, &ix, &j, &mut got, Better::Higher),
            Some(None)
        );
        top_k(&mut got, 1, Better::Higher);
        assert_eq!(got[0].0, 0);
    }

    #[test]
    fn peeling_declines_candidates_out_of_node_order() {
        // Two candidates tied at 0.5 (within KEY_TIE_EPS) but listed node
        // 3 first: peeling takes a group's members in the order given, so
        // it must decline and leave them to the sort, which ranks the tie
        // by node index: node 1. Taken as given, node 3 would win.
        let c = vec![(3, 0.5), (1, 0.5 + 1e-12)];
        let mut a = c.clone();
        assert!(!top_k_by_groups(&mut a, 1, 1.0));
        assert_eq!(a, c);
        let mut a = c.clone();
        top_k(&mut a, 1, Better::Higher);
        assert_eq!(a, vec![(1, 0.5 + 1e-12)]);
    }
}
