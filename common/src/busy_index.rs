//! Which nodes of the core's view (live or simulated) hold parts.
//!
//! A decision over a large, mostly idle cluster need not look at every
//! node: an idle node's load is zero, so every idle node of one speed
//! gives the same answer, and Libra ranks equal loads by node index. The
//! core, live or simulated, keeps this index as parts come and go, and the Libra family
//! decides on the busy nodes plus the first few idle nodes of each speed
//! ([`crate::policy::steps::resource_deadline_filter_indexed`] for the
//! share test, [`crate::policy::steps::idle_stand_ins`] for LibraRisk's
//! zero risk and LibraSLA's return, which an idle node's speed alone
//! decides): the same decision as a walk over every node, at a cost that
//! follows the busy nodes, not the cluster's size.
//!
//! The index also remembers each busy node's load (Libra's required
//! share) at the instant the live core last brought the node up to date:
//! the decisions of one burst of submissions, taken at one instant, then
//! add up the parts of a node only when it changed since the previous
//! decision (the node the previous job went to), not every part of every
//! busy node for every decision. A remembered load is the very value
//! [`NodeState::required_share`] gives at that instant (the same sum in
//! the same order); any change to the node forgets it.
//!
//! For Libra's share test and best fit it also keeps every busy node's
//! load *bounded* over a window of time ([`LoadBound`]): an order of the
//! busy nodes by the lower bound of their load (a B-tree), so that a
//! decision computes the exact load of the few nodes whose bounds reach
//! the band that can matter (between the job's share test and the best
//! fits found so far) and no other (see
//! [`crate::policy::steps::share_filter_bounded`]). A node's bounds are
//! computed again only when it changes, is reported on, or its window
//! runs out: the cost follows the events, not the cluster's size. Libra+$
//! walks the same bounds in an order of its own (module `load_tree`: a
//! node's committed time in any window is at most the window times its
//! load and at most its remaining time, [`LoadLine::rem_bound`], and
//! per part at most its time left and its share times the window, kept as
//! caps at a few windows; each subtree of that order knows the largest of
//! them, so that the walk passes over whole subtrees). For LibraRisk in node order
//! the bounds also keep, per node and per block of 64 nodes, the numbers
//! its certificates of zero risk and non-zero risk need (module `risk`),
//! so that its walk projects only the few nodes they leave open. For
//! LibraSLA it keeps the busy nodes ordered by the sum of their parts'
//! returns (module `returns`), a bound on a node's return with a new part.
//!
//! Indices are the view's (`ManagerCore`'s snapshot), not global node ids.

use std::collections::{BTreeMap, BTreeSet};

use fixedbitset::FixedBitSet;

mod load_tree;
mod returns;
mod risk;
use load_tree::LoadTree;
pub use load_tree::{committed_caps, Agg, CapWindow, Desc, Entry, CAP_WINDOWS};
use returns::Returns;
pub use returns::{LATE_LEVELS, LATE_MIN_SHARE};
pub use risk::{
    refined_verdict, BlockRisk, RiskJob, RiskSummary, Verdict, RISK_BLOCK, RISK_MARGIN,
};

use crate::node_model::NodeState;
use crate::share::ON_TRACK_EPS;
use crate::time::{Time, TIME_EPS};

/// A set of node indices, walked in ascending order: a bit per node of the
/// view. Libra's walk goes over the busy nodes for every decision; under a
/// flood that is every node, and a tree's walk (a B-tree set before) cost
/// several times a bit scan's. A second level, a bit per word of the
/// first, tells which words hold a node: a set whose low indices are
/// empty (the idle nodes, where best fit packs the busy ones low) yields
/// its first nodes after a pass over a 64th of the words (at 158,976
/// nodes, ~1,700 instructions a decision less for Libra's).
#[derive(Debug, Clone, Default)]
pub struct NodeSet {
    bits: FixedBitSet,
    /// Bit `w` set: word `w` of `bits` holds a node.
    words: FixedBitSet,
    len: usize,
}

/// Bits in a word of a [`FixedBitSet`].
const WORD_BITS: usize = fixedbitset::Block::BITS as usize;

/// The same nodes, however far each set's bits have grown.
impl PartialEq for NodeSet {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl NodeSet {
    /// Adds `k`; false if it was there.
    fn insert(&mut self, k: usize) -> bool {
        if k >= self.bits.len() {
            self.bits.grow(k + 1);
            self.words.grow(k / WORD_BITS + 1);
        }
        let had = self.bits.put(k);
        if !had {
            self.len += 1;
            self.words.insert(k / WORD_BITS);
        }
        !had
    }

    /// Takes `k` out; false if it was not there.
    fn remove(&mut self, k: usize) -> bool {
        let had = self.contains(k);
        if had {
            self.bits.set(k, false);
            self.len -= 1;
            if self.bits.as_slice()[k / WORD_BITS] == 0 {
                self.words.set(k / WORD_BITS, false);
            }
        }
        had
    }

    /// Whether `k` is in the set.
    pub fn contains(&self, k: usize) -> bool {
        self.bits.contains(k)
    }

    /// How many nodes the set holds.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The lowest node index in the set.
    pub fn first(&self) -> Option<usize> {
        self.iter().next()
    }

    /// The nodes, ascending.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        NodeSetIter {
            words: self.words.ones(),
            bits: self.bits.as_slice(),
            word: 0,
            base: 0,
        }
    }
}

/// [`NodeSet::iter`]: the words that hold a node, and each one's bits.
struct NodeSetIter<'a> {
    words: fixedbitset::Ones<'a>,
    bits: &'a [fixedbitset::Block],
    /// The bits of the current word not yet yielded.
    word: fixedbitset::Block,
    /// The index of the current word's first bit.
    base: usize,
}

impl Iterator for NodeSetIter<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        while self.word == 0 {
            let w = self.words.next()?;
            self.word = self.bits[w];
            self.base = w * WORD_BITS;
        }
        let at = self.word.trailing_zeros() as usize;
        // Clears the lowest set bit.
        self.word &= self.word - 1;
        Some(self.base + at)
    }
}

/// The busy nodes of a view and its idle nodes by speed, both by index.
#[derive(Debug, Clone)]
pub struct BusyIndex {
    /// Nodes holding at least one part, ascending.
    busy: NodeSet,
    /// Idle nodes, grouped by speed (groups in the order their speed was
    /// first seen), each group ascending.
    idle: Vec<(f64, NodeSet)>,
    /// Per node: the instant its load was last computed and that load
    /// (NaN instant: not known). Not part of the index's identity.
    loads: Vec<(Time, f64)>,
    /// The instant [`Self::renew_loads`] last brought every busy node up
    /// to (NaN: none since a change it could not follow).
    renewed_at: Time,
    /// Nodes whose load was forgotten since then: at that same instant
    /// again, only these need renewing (a burst's decisions change one
    /// node each), not a walk over every busy node.
    stale: Vec<usize>,
    /// Bounds on the busy nodes' loads (kept once [`Self::rebound`] was
    /// first called; the simulator never does).
    bounds: Bounds,
    /// The busy nodes by their parts' returns (LibraSLA's walk; kept once
    /// [`Self::keep_returns`] switched it on).
    returns: Returns,
}

impl Default for BusyIndex {
    fn default() -> Self {
        BusyIndex {
            busy: NodeSet::default(),
            idle: Vec::new(),
            loads: Vec::new(),
            renewed_at: Time::NAN,
            stale: Vec::new(),
            bounds: Bounds::default(),
            returns: Returns::default(),
        }
    }
}

/// How long a node's load bounds hold (seconds of the core's time) before
/// they are computed again. Longer windows cost fewer renewals but wider
/// bounds, so more exact loads per decision; progress reports (every few
/// seconds live) renew a busy node's bounds anyway.
pub const BOUND_WINDOW: Time = 10.0;

/// Bounds wider than this put a node among the few whose load every
/// decision computes exactly (a part near its deadline, whose required
/// share may grow without bound): the walk by lower bound must stop
/// within the widest bound of the order.
pub const WIDE_BOUND: f64 = 0.02;

/// One part's load as the live core dead-reckons it, in a few numbers:
/// kept in the index beside the bounds so that a decision computes a
/// node's exact load from one contiguous run of memory rather than from
/// the node, its parts and their reports (four places in memory: at
/// 158,976 nodes, each a cache miss).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PartFn {
    /// Estimated processor time on the node.
    pub est_cpu: f64,
    /// Processor time done at the last report (or as the view holds it,
    /// without one).
    pub cpu_done: f64,
    /// The share reported (0 without a report).
    pub share: f64,
    /// When the report was taken (NaN without one).
    pub at: Time,
    /// The part's absolute deadline.
    pub deadline: Time,
    /// Whether its job's deadline is hard (LibraSLA's node rule protects
    /// it; its lateness certificate reads it).
    pub hard: bool,
}

impl PartFn {
    /// Part `p` as it stands, with no report: its processor time done
    /// stays as the part holds it.
    pub fn standing(p: &crate::node_model::PartView) -> PartFn {
        PartFn {
            est_cpu: p.est_cpu,
            cpu_done: p.cpu_done,
            share: 0.0,
            at: Time::NAN,
            deadline: p.deadline,
            hard: p.hard,
        }
    }

    /// Processor time done at `t`: the report carried forward at its
    /// share.
    pub fn cpu_done_at(&self, t: Time) -> f64 {
        if self.at.is_nan() {
            self.cpu_done
        } else {
            self.cpu_done + self.share * (t - self.at).max(0.0)
        }
    }

    /// The required share at `t`: bit for bit what
    /// [`crate::node_model::PartView::share_input`]`(t).required()` gives
    /// for the part with [`Self::cpu_done_at`]`(t)` done (the same operations
    /// in the same order).
    pub fn required(&self, t: Time) -> f64 {
        let snap = |v: f64| if v <= TIME_EPS { 0.0 } else { v };
        let rem = snap(self.est_cpu - self.cpu_done_at(t));
        let rd = snap(self.deadline - t);
        if rem > ON_TRACK_EPS && rd > ON_TRACK_EPS {
            rem / rd
        } else {
            0.0
        }
    }
}

impl PartFn {
    /// The processor time the part commits inside a window of `window`
    /// seconds from `t`: bit for bit the term Libra+$'s
    /// `LibraPlusDollar::committed` (policy/plus_dollar.rs) adds up
    /// for the part with [`Self::cpu_done_at`]`(t)` done (its required
    /// share times `min(rd, window)`, 0 off track). At most `window`
    /// times [`Self::required`]`(t)`, which is what lets Libra+$ walk the
    /// order by load.
    pub fn committed(&self, t: Time, window: f64) -> f64 {
        let snap = |v: f64| if v <= TIME_EPS { 0.0 } else { v };
        let rem = snap(self.est_cpu - self.cpu_done_at(t));
        let rd = snap(self.deadline - t);
        if rem > ON_TRACK_EPS && rd > ON_TRACK_EPS {
            rem / rd * rd.min(window)
        } else {
            0.0
        }
    }
}

/// The width of the slots bounds run out by (seconds).
pub const EXPIRY_SLOT: Time = BOUND_WINDOW / 64.0;

/// The slot a bound ending at `to` runs out in: the one that starts before
/// `to`.
fn expiry_slot(to: Time) -> i64 {
    (to / EXPIRY_SLOT).floor() as i64
}

/// Classes of bound width: the order by lower bound is kept per class,
/// class `c` holding the widths up to [`class_width`]`(c)` (half the next
/// class's), so that a walk stops within its own class's width
/// rather than the widest bound of all: the nodes a decision looks at
/// follow the typical width, not the worst.
pub const WIDTH_CLASSES: usize = 10;

/// The widest `hi - lo` of class `c` (the last: [`WIDE_BOUND`]).
pub fn class_width(c: usize) -> f64 {
    WIDE_BOUND / f64::from(1u32 << (WIDTH_CLASSES - 1 - c))
}

/// The class of a bound of width `w` (at most [`WIDE_BOUND`]).
fn width_class(w: f64) -> usize {
    (0..WIDTH_CLASSES)
        .find(|&c| w <= class_width(c))
        .unwrap_or(WIDTH_CLASSES - 1)
}

/// A busy node's load over `[from, to]`: every value
/// [`NodeState::required_share`] gives at an instant of the window, as
/// the live core dead-reckons the node there, lies in `[lo, hi]`
/// (rounding included), and from `line.t0` on within `line`'s band.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoadBound {
    /// Lower bound (>= 0).
    pub lo: f64,
    /// Upper bound (may be infinite).
    pub hi: f64,
    /// The load as a line over the rest of the window, much narrower than
    /// `[lo, hi]` (which spans the drift over the whole window):
    /// [`LoadLine::NONE`] when there is none.
    pub line: LoadLine,
}

/// A busy node's load from `t0` to the end of its bound's window, as a
/// line with a band around it: the exact load at `t` (the very float
/// [`BusyIndex::exact_load`] gives) lies within `err` of `v0 + slope (t -
/// t0)` (evaluated in floats; rounding included in `err`). Kept with the
/// node's entry in the order by lower bound, so that a decision tells
/// from the entry it walks whether the node can matter, and computes the
/// exact load (from the node's parts, elsewhere in memory) only then.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoadLine {
    /// Where the line starts (NaN: no line).
    pub t0: Time,
    /// The load at `t0`.
    pub v0: f64,
    /// Its change per second.
    pub slope: f64,
    /// Half the band's width.
    pub err: f64,
    /// An upper bound on the node's remaining processor time (its parts'
    /// `max(0, est - done)` added up, rounding included) at `t0`: the
    /// most any window can commit of the node (Libra+$'s committed time).
    pub rem0: f64,
    /// The bound's change per second (<= 0): the remaining time of each
    /// part is linear from `t0` on, so its `max(0, .)`, convex, lies
    /// under its chord over the window, and so does their sum.
    pub rem_slope: f64,
}

impl LoadLine {
    /// No line: every decision computes the exact load.
    pub const NONE: LoadLine = LoadLine {
        t0: Time::NAN,
        v0: 0.0,
        slope: 0.0,
        err: f64::INFINITY,
        rem0: f64::INFINITY,
        rem_slope: 0.0,
    };

    /// An upper bound on the node's remaining processor time at `t`
    /// (within the bound's window), infinite before the line starts or
    /// when there is none.
    pub fn rem_bound(&self, t: Time) -> f64 {
        if t >= self.t0 && self.rem0.is_finite() {
            self.rem0 + self.rem_slope * (t - self.t0)
        } else {
            f64::INFINITY
        }
    }

    /// The band the exact load lies in at `t` (within the bound's window),
    /// `None` before the line starts or when there is none.
    pub fn band(&self, t: Time) -> Option<(f64, f64)> {
        // NaN compares false: no line.
        if t >= self.t0 && self.err.is_finite() {
            let v = self.v0 + self.slope * (t - self.t0);
            Some((v - self.err, v + self.err))
        } else {
            None
        }
    }
}

/// Where a node's bound is filed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Filed {
    /// Not busy, or bounds not kept.
    #[default]
    None,
    /// Changed since its bound was computed: waiting for [`BusyIndex::rebound`].
    Dirty,
    /// In the order by lower bound.
    Ordered,
    /// Among the wide ones.
    Wide,
}

/// The bounds of the busy nodes, ordered.
#[derive(Debug, Clone, Default)]
struct Bounds {
    /// Whether bounds are kept at all.
    on: bool,
    /// Per node: its bound, until when it holds, and where it is filed.
    of: Vec<(LoadBound, Time, Filed)>,
    /// Per node: where its parts' [`PartFn`]s are in `fns` (start, count),
    /// in the order of its parts.
    fn_at: Vec<(u32, u32)>,
    /// The [`PartFn`]s of the bounded nodes; a node bounded again appends
    /// its own, and the space left behind is reclaimed when it outgrows
    /// what is in use.
    fns: Vec<PartFn>,
    /// [`PartFn`]s in use in `fns`.
    fns_live: usize,
    /// Scratch of [`Self::compact`]: `(start in fns, node)` of the nodes
    /// in use.
    fns_ranges: Vec<(u32, u32)>,
    /// Per class of width (see [`width_class`]): `(order key of lo,
    /// node)` for every node filed `Ordered` in it, with its line.
    by_lo: [BTreeMap<(u64, usize), LoadLine>; WIDTH_CLASSES],
    /// `(order key of lo, node)` for every node filed `Wide`: a few per
    /// thousand busy nodes (a part near its deadline), so their count
    /// grows with the cluster, but most of them are overloaded. In the
    /// order of their lower bounds, a decision reads only the ones whose
    /// lower bound can pass its share test.
    wide: BTreeSet<(u64, usize)>,
    /// When bounds run out: per slot of [`EXPIRY_SLOT`] seconds (by the
    /// slot's number), the `(node, filing)` pairs (see `filing`) of the
    /// bounds whose window ends in it. A slot is taken as soon as it
    /// starts, a little early, which is safe: a node bounded again early
    /// only costs its computation. Slots rather than a heap: every report
    /// bounds its nodes again, and the entries it leaves behind cost a
    /// look each, not a heap's pop.
    expiry: BTreeMap<i64, Vec<(u32, u32)>>,
    /// Per node: a count of its filings, moved on when a filing ends
    /// ([`Self::mark`]), so that an expiry entry holding the count its
    /// bound was filed at is the node's bound still exactly when the two
    /// are equal. (It wraps after 2^32 filings of one node, years of
    /// reports.) Four bytes a node apart from `of` (80): at 158,976 nodes
    /// the look at each entry a report left behind, ~120 a decision on
    /// the `decide` bench, read `of` and missed the cache for nearly each.
    filing: Vec<u32>,
    /// The emptied slots of `expiry`, for the slots to come: a slot
    /// filled afresh grew its room by doublings at each decision.
    spare_slots: Vec<Vec<(u32, u32)>>,
    /// Nodes filed `Dirty`.
    dirty: Vec<usize>,
    /// The latest instant bounds were computed from: a decision before it
    /// (time never runs back in the live core, but the index must not rely
    /// on it) computes every bound again.
    latest: Time,
    /// Per node (parallel to `of`): what LibraRisk's certificates need.
    risk: Vec<RiskSummary>,
    /// Per block of [`RISK_BLOCK`] nodes: the same, aggregated.
    blocks: Vec<BlockRisk>,
    /// Blocks whose nodes changed since they were aggregated.
    blocks_dirty: Vec<usize>,
    /// Whether `risk` and `blocks` are kept (only LibraRisk reads them).
    risk_on: bool,
    /// Libra+$'s order ([`BusyIndex::keep_load_tree`]): when kept, the
    /// ordered nodes are filed there instead of in `by_lo`.
    tree: Option<LoadTree>,
}

/// A key whose integer order is the order of the (non-NaN) `f64`s.
fn order_key(x: f64) -> u64 {
    let b = x.to_bits();
    if b >> 63 == 1 {
        !b
    } else {
        b | (1 << 63)
    }
}

/// The `f64` of an [`order_key`].
fn from_order_key(k: u64) -> f64 {
    if k >> 63 == 1 {
        f64::from_bits(k & !(1 << 63))
    } else {
        f64::from_bits(!k)
    }
}

impl Bounds {
    /// Moves the [`PartFn`]s in use to the front of `fns`, in place, in
    /// the order they are stored (each range moves down, never over one
    /// still to move), and keeps room for four times what is in use (plus
    /// 1,024): the appends until the next compaction (due past four
    /// times) then grow the buffer only if what is in use grew meanwhile,
    /// or one rebound appends more than the 1,024 spare. A buffer more
    /// than twice that size (the cluster drained) is shrunk to it. A
    /// fresh buffer each time would cost its pages' first touch and a
    /// doubling on the way to the next compaction: at 158,976 nodes on
    /// the `decide` bench, 2.2-3.3 ms a compaction that way, 1.2-1.3 ms in
    /// place.
    fn compact(&mut self) {
        let mut ranges = std::mem::take(&mut self.fns_ranges);
        ranges.clear();
        for (k, &(_, _, filed)) in self.of.iter().enumerate() {
            if matches!(filed, Filed::Ordered | Filed::Wide) {
                ranges.push((self.fn_at[k].0, k as u32));
            }
        }
        ranges.sort_unstable();
        let mut to = 0u32;
        for &(start, k) in &ranges {
            let count = self.fn_at[k as usize].1;
            self.fns
                .copy_within(start as usize..(start + count) as usize, to as usize);
            self.fn_at[k as usize] = (to, count);
            to += count;
        }
        debug_assert_eq!(to as usize, self.fns_live);
        self.fns.truncate(to as usize);
        let room = 4 * self.fns_live + 1024;
        if self.fns.capacity() > 2 * room {
            self.fns.shrink_to(room);
        }
        self.fns.reserve_exact(room - self.fns.len());
        self.fns_ranges = ranges;
    }

    /// Takes node `k` out of wherever it was filed and marks it dirty.
    fn mark(&mut self, k: usize) {
        if !self.on {
            return;
        }
        if k >= self.of.len() {
            self.of.resize(
                k + 1,
                (
                    LoadBound {
                        lo: 0.0,
                        hi: 0.0,
                        line: LoadLine::NONE,
                    },
                    Time::NAN,
                    Filed::None,
                ),
            );
            self.risk.resize(k + 1, RiskSummary::NONE);
            self.filing.resize(k + 1, 0);
        }
        self.risk_dirty(k);
        let (b, _, filed) = self.of[k];
        match filed {
            Filed::Dirty => return,
            Filed::Ordered => match &mut self.tree {
                Some(t) => t.remove(k),
                None => {
                    self.by_lo[width_class(b.hi - b.lo)].remove(&(order_key(b.lo), k));
                }
            },
            Filed::Wide => {
                self.wide.remove(&(order_key(b.lo), k));
            }
            Filed::None => {}
        }
        if matches!(filed, Filed::Ordered | Filed::Wide) {
            self.fns_live -= self.fn_at[k].1 as usize;
            // Its expiry entry is stale from now on.
            self.filing[k] = self.filing[k].wrapping_add(1);
        }
        self.of[k].2 = Filed::Dirty;
        self.dirty.push(k);
    }
}

impl PartialEq for BusyIndex {
    fn eq(&self, other: &Self) -> bool {
        self.busy == other.busy && self.idle == other.idle
    }
}

impl BusyIndex {
    /// The index of `view` as it stands.
    pub fn of(view: &[NodeState]) -> BusyIndex {
        let mut ix = BusyIndex::default();
        for (k, n) in view.iter().enumerate() {
            ix.add(k, n);
        }
        ix
    }

    /// Takes node `k` (new, or after [`Self::remove`]) into the index.
    pub fn add(&mut self, k: usize, node: &NodeState) {
        // The index may have held another node at `k` before.
        self.forget_load(k);
        self.returns.note(k, node);
        // The node's speed group, made if new, whether the node is idle or
        // not: the bounded walks read [`Self::speeds`] as the speeds of
        // the whole view (a busy node's included).
        let group = self.idle_group(node.spec.speed);
        if node.parts.is_empty() {
            group.insert(k);
        } else {
            self.busy.insert(k);
        }
    }

    /// Takes node `k` out of the index.
    pub fn remove(&mut self, k: usize, node: &NodeState) {
        self.bounds.mark(k);
        self.returns.take_out(k);
        if !self.busy.remove(k) {
            self.idle_group(node.spec.speed).remove(k);
        }
    }

    /// Node `k` changed (gained or lost a part, possibly its last): files
    /// it by what it holds now and forgets its load.
    pub fn update(&mut self, k: usize, node: &NodeState) {
        self.forget_load(k);
        self.returns.note(k, node);
        if node.parts.is_empty() {
            if self.busy.remove(k) {
                self.idle_group(node.spec.speed).insert(k);
            }
        } else if self.busy.insert(k) {
            self.idle_group(node.spec.speed).remove(k);
        }
    }

    /// Node `k`'s parts changed in place (a progress report): its load
    /// must be computed again.
    pub fn forget_load(&mut self, k: usize) {
        self.bounds.mark(k);
        if let Some(l) = self.loads.get_mut(k) {
            l.0 = Time::NAN;
        }
        if self.stale.len() < self.busy.len() {
            self.stale.push(k);
        } else {
            // More changes than busy nodes (or loads never renewed, as in
            // the simulator): the next renewal walks them all anyway.
            self.renewed_at = Time::NAN;
            self.stale.clear();
        }
    }

    /// Calls `renew` for every busy node whose load is not known at `now`;
    /// `renew` brings the node up to `now` and returns its
    /// [`NodeState::required_share`] there, which is remembered.
    pub fn renew_loads(&mut self, now: Time, mut renew: impl FnMut(usize) -> f64) {
        // NaN never equals: an unknown load is always renewed.
        if now == self.renewed_at {
            // Every busy node was known at `now`; since then only these
            // changed (busy ones among them: an idle node's load is not
            // remembered).
            for k in self.stale.drain(..) {
                if !self.busy.contains(k) {
                    continue;
                }
                if k >= self.loads.len() {
                    self.loads.resize(k + 1, (Time::NAN, 0.0));
                }
                if self.loads[k].0 != now {
                    self.loads[k] = (now, renew(k));
                }
            }
            return;
        }
        self.stale.clear();
        self.renewed_at = now;
        for k in self.busy.iter() {
            if k >= self.loads.len() {
                self.loads.resize(k + 1, (Time::NAN, 0.0));
            }
            let l = &mut self.loads[k];
            if l.0 != now {
                *l = (now, renew(k));
            }
        }
    }

    /// Node `k`'s load at `now`: remembered if known at `now`, else added
    /// up.
    pub fn load(&self, k: usize, node: &NodeState, now: Time) -> f64 {
        match self.loads.get(k) {
            Some(&(at, load)) if at == now => {
                debug_assert_eq!(
                    load.to_bits(),
                    node.required_share(now).to_bits(),
                    "node {k}: a remembered load was not forgotten when the node changed"
                );
                load
            }
            _ => node.required_share(now),
        }
    }

    /// Brings the bounds of the busy nodes up to `now`: from the first
    /// call on, the index keeps them. Every busy node changed since its
    /// bound was computed, or whose bound runs out before `now`, gets
    /// `bound(k, now, now + BOUND_WINDOW)`, which must hold over that
    /// window (see [`LoadBound`]).
    pub fn rebound(
        &mut self,
        now: Time,
        bound: impl FnMut(usize, Time, Time, &mut Vec<PartFn>) -> LoadBound,
    ) {
        let b = &mut self.bounds;
        if !b.on || now < b.latest {
            // First use, or time ran back: every busy node, from scratch.
            // (`latest` is set just below.)
            *b = Bounds {
                on: true,
                risk_on: b.risk_on,
                tree: b.tree.as_ref().map(|_| LoadTree::default()),
                ..Bounds::default()
            };
            for k in self.busy.iter() {
                b.mark(k);
            }
        }
        b.latest = now;
        while let Some(entry) = b.expiry.first_entry() {
            if *entry.key() as f64 * EXPIRY_SLOT > now {
                break;
            }
            let _slot = *entry.key();
            let mut slot = entry.remove();
            for &(k, filing) in &slot {
                let k = k as usize;
                if b.filing[k] == filing {
                    debug_assert!(matches!(b.of[k].2, Filed::Ordered | Filed::Wide));
                    debug_assert_eq!(expiry_slot(b.of[k].1), _slot, "node {k}: filed elsewhere");
                    b.mark(k);
                }
            }
            slot.clear();
            b.spare_slots.push(slot);
        }
        self.bound_dirty(now, now + BOUND_WINDOW, bound);
    }

    /// Computes the bounds of the nodes changed since (a progress report
    /// on them, taken at `at`), if bounds are kept: over the window from
    /// the last decision's instant to `BOUND_WINDOW` (and one expiry slot)
    /// past `at`, so that the
    /// next decisions find them ready (a report is the node process's
    /// cost; a decision then does not pay for a whole report period's).
    pub fn settle(
        &mut self,
        at: Time,
        bound: impl FnMut(usize, Time, Time, &mut Vec<PartFn>) -> LoadBound,
    ) {
        if !self.bounds.on || self.bounds.dirty.is_empty() {
            return;
        }
        let from = self.bounds.latest;
        // One expiry slot more than the window: a slot is taken as soon as
        // it starts, so a window of exactly `BOUND_WINDOW` would run out a
        // little before the next report of a node process reporting every
        // `BOUND_WINDOW` seconds, and one decision would bound again every
        // node that process (or every process reporting at that instant)
        // holds, only for the report to bound them again.
        let to = at.max(from) + BOUND_WINDOW + EXPIRY_SLOT;
        self.bound_dirty(from, to, bound);
    }

    /// Whether the bounds also keep LibraRisk's certificates
    /// ([`RiskSummary`], [`BlockRisk`]): their upkeep would cost the
    /// other policies' decisions for nothing. Switching them on computes
    /// every bound again at the next [`Self::rebound`].
    pub fn keep_risk(&mut self, on: bool) {
        if self.bounds.risk_on != on {
            self.bounds = Bounds {
                risk_on: on,
                tree: self.bounds.tree.take().map(|_| LoadTree::default()),
                ..Bounds::default()
            };
        }
    }

    /// Whether [`Self::keep_risk`] is on.
    pub fn risk_kept(&self) -> bool {
        self.bounds.risk_on
    }

    /// Whether bounds are kept: from the first [`Self::rebound`] until
    /// [`Self::stop_bounds`].
    pub fn bounds_kept(&self) -> bool {
        self.bounds.on
    }

    /// Stops keeping bounds (a small cluster decides faster without them).
    pub fn stop_bounds(&mut self) {
        if self.bounds.on {
            self.bounds = Bounds::default();
        }
    }

    fn bound_dirty(
        &mut self,
        now: Time,
        to: Time,
        mut bound: impl FnMut(usize, Time, Time, &mut Vec<PartFn>) -> LoadBound,
    ) {
        let b = &mut self.bounds;
        if b.fns.len() > 1024 && b.fns.len() > 4 * b.fns_live {
            b.compact();
        }
        if b.fn_at.len() < b.of.len() {
            b.fn_at.resize(b.of.len(), (0, 0));
        }
        // Taken and given back, so that its room is kept from one
        // decision to the next (nothing here marks a node).
        let dirty = std::mem::take(&mut b.dirty);
        for &k in &dirty {
            if !self.busy.contains(k) {
                b.of[k].2 = Filed::None;
                continue;
            }
            let start = b.fns.len();
            let lb = bound(k, now, to, &mut b.fns);
            let count = b.fns.len() - start;
            b.fn_at[k] = (start as u32, count as u32);
            b.fns_live += count;
            debug_assert!(lb.lo >= 0.0 && lb.lo <= lb.hi, "node {k}: {lb:?}");
            let width = lb.hi - lb.lo;
            let filed = if width <= WIDE_BOUND {
                match &mut b.tree {
                    Some(t) => t.insert(Entry {
                        lo: lb.lo,
                        hi: lb.hi,
                        node: k,
                        line: lb.line,
                        caps: load_tree::committed_caps(&b.fns[start..], now, to),
                    }),
                    None => {
                        b.by_lo[width_class(width)].insert((order_key(lb.lo), k), lb.line);
                    }
                }
                Filed::Ordered
            } else {
                b.wide.insert((order_key(lb.lo), k));
                Filed::Wide
            };
            if b.risk_on {
                b.risk[k] = RiskSummary::of(&b.fns[start..], now, to, &lb);
            }
            self.returns.file_late(k, &b.fns[start..], now, to, lb.lo);
            b.of[k] = (lb, to, filed);
            b.expiry
                .entry(expiry_slot(to))
                .or_insert_with(|| b.spare_slots.pop().unwrap_or_default())
                .push((k as u32, b.filing[k]));
        }
        debug_assert!(b.dirty.is_empty(), "a node marked while bounding");
        b.dirty = dirty;
        b.dirty.clear();
        if b.risk_on {
            b.risk_blocks_renew();
        }
    }

    /// Whether [`Self::rebound`] keeps bounds (and they are up to date
    /// after its last call, unless nodes changed since).
    pub fn bounded(&self) -> bool {
        self.bounds.on && self.bounds.dirty.is_empty()
    }

    /// The ordered busy nodes of width class `class` whose lower bound is
    /// at most `at_most`, lowest lower bound first (`.rev()`: highest
    /// first, as best fit walks them; least loaded walks them as they
    /// come): `(lo, node, line)`. Their bounds are at most
    /// [`class_width`]`(class)` wide.
    pub fn by_lower_bound(
        &self,
        class: usize,
        at_most: f64,
    ) -> impl DoubleEndedIterator<Item = (f64, usize, LoadLine)> + '_ {
        debug_assert!(
            self.bounds.tree.is_none(),
            "the ordered nodes are in the tree"
        );
        self.bounds.by_lo[class]
            .range(..=(order_key(at_most), usize::MAX))
            .map(|(&(lo, k), &line)| (from_order_key(lo), k, line))
    }

    /// How many busy nodes have bounds too wide for the order.
    pub fn wide_len(&self) -> usize {
        self.bounds.wide.len()
    }

    /// The busy nodes whose bounds are too wide for the order, lowest
    /// lower bound first: `(lo, node)`. A decision computes the exact load
    /// of those whose lower bound can pass its share test, and stops at
    /// the first that cannot.
    pub fn wide(&self) -> impl Iterator<Item = (f64, usize)> + '_ {
        self.bounds
            .wide
            .iter()
            .map(|&(lo, k)| (from_order_key(lo), k))
    }

    /// Bounded node `k`'s exact load at `t` (within its window): the sum of
    /// its parts' [`PartFn::required`] in the order of its parts, so bit
    /// for bit the [`NodeState::required_share`] of the node brought to
    /// `t`.
    pub fn exact_load(&self, k: usize, t: Time) -> f64 {
        debug_assert!(matches!(self.bounds.of[k].2, Filed::Ordered | Filed::Wide));
        let (start, count) = self.bounds.fn_at[k];
        self.bounds.fns[start as usize..(start + count) as usize]
            .iter()
            .map(|f| f.required(t))
            .sum()
    }

    /// Bounded node `k`'s processor time committed inside `window`
    /// seconds from `t` (within its bound's window): the sum of its parts'
    /// [`PartFn::committed`] in the order of its parts, so bit for bit
    /// Libra+$'s committed time of the node brought to `t`.
    pub fn exact_committed(&self, k: usize, t: Time, window: f64) -> f64 {
        debug_assert!(matches!(self.bounds.of[k].2, Filed::Ordered | Filed::Wide));
        let (start, count) = self.bounds.fn_at[k];
        self.bounds.fns[start as usize..(start + count) as usize]
            .iter()
            .map(|f| f.committed(t, window))
            .sum()
    }

    /// Node `k`'s bound, if it has one on file.
    pub fn bound(&self, k: usize) -> Option<LoadBound> {
        match self.bounds.of.get(k) {
            Some(&(b, _, Filed::Ordered | Filed::Wide)) => Some(b),
            _ => None,
        }
    }

    fn idle_group(&mut self, speed: f64) -> &mut NodeSet {
        // Compared bit for bit, as the filter compares speeds (`!=`); a
        // handful of distinct speeds at most, so a scan is cheapest.
        let at = match self
            .idle
            .iter()
            .position(|(s, _)| s.to_bits() == speed.to_bits())
        {
            Some(i) => i,
            None => {
                self.idle.push((speed, NodeSet::default()));
                self.idle.len() - 1
            }
        };
        &mut self.idle[at].1
    }

    /// How many nodes are busy.
    pub fn busy_len(&self) -> usize {
        self.busy.len()
    }

    /// Busy nodes, ascending.
    pub fn busy(&self) -> impl Iterator<Item = usize> + '_ {
        self.busy.iter()
    }

    /// Idle nodes by speed: each speed with its idle nodes, ascending
    /// (groups may be empty).
    pub fn idle_by_speed(&self) -> impl Iterator<Item = (f64, &NodeSet)> + '_ {
        self.idle.iter().map(|(s, g)| (*s, g))
    }

    /// Distinct speeds seen among the nodes taken in, busy or idle (empty
    /// groups included).
    pub fn speeds(&self) -> usize {
        self.idle.len()
    }

    /// The same nodes in the same places as [`Self::of`] would give
    /// (empty speed groups aside): for tests and debug checks.
    pub fn agrees_with(&self, view: &[NodeState]) -> bool {
        let fresh = BusyIndex::of(view);
        let groups = |ix: &BusyIndex| {
            let mut g: Vec<(u64, Vec<usize>)> = ix
                .idle
                .iter()
                .filter(|(_, s)| !s.is_empty())
                .map(|(sp, s)| (sp.to_bits(), s.iter().collect()))
                .collect();
            g.sort();
            g
        };
        self.busy == fresh.busy && groups(self) == groups(&fresh)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::test_util::{busy, nodes};

    /// Renews at `now`, returning the nodes renewed, in order.
    fn renewed(ix: &mut BusyIndex, view: &[NodeState], now: Time) -> Vec<usize> {
        let mut seen = Vec::new();
        ix.renew_loads(now, |k| {
            seen.push(k);
            view[k].required_share(now)
        });
        seen
    }

    #[test]
    fn at_one_instant_only_changed_busy_nodes_are_renewed() {
        // Nodes 1, 2 and 4 busy (required shares 0.5, 0.25, 0.1 at 0).
        let mut view = nodes(5);
        busy(&mut view[1], 10, 50.0, 100.0);
        busy(&mut view[2], 11, 25.0, 100.0);
        busy(&mut view[4], 12, 10.0, 100.0);
        let mut ix = BusyIndex::of(&view);
        assert_eq!(renewed(&mut ix, &view, 0.0), [1, 2, 4]);
        assert_eq!(renewed(&mut ix, &view, 0.0), [] as [usize; 0]);
        assert_eq!(ix.load(2, &view[2], 0.0), 0.25);
        // Node 2 gains a part (0.25 + 30/100), idle node 3 becomes busy:
        // at the same instant only these two are added up again.
        busy(&mut view[2], 13, 30.0, 100.0);
        ix.update(2, &view[2]);
        busy(&mut view[3], 14, 20.0, 100.0);
        ix.update(3, &view[3]);
        assert_eq!(renewed(&mut ix, &view, 0.0), [2, 3]);
        assert_eq!(ix.load(2, &view[2], 0.0), 0.25 + 0.3);
        assert_eq!(ix.load(3, &view[3], 0.0), 0.2);
        // Node 1 empties: it leaves the busy nodes and is not renewed.
        view[1].parts.clear();
        ix.update(1, &view[1]);
        assert_eq!(renewed(&mut ix, &view, 0.0), [] as [usize; 0]);
        // A new instant renews every busy node.
        assert_eq!(renewed(&mut ix, &view, 10.0), [2, 3, 4]);
        // A progress report on node 4 at that instant.
        ix.forget_load(4);
        assert_eq!(renewed(&mut ix, &view, 10.0), [4]);
    }

    #[test]
    fn order_keys_sort_floats_as_they_compare_and_give_them_back() {
        // LibraSLA's order by return files sums that penalties can make
        // negative: the keys must order those too.
        let xs = [
            f64::NEG_INFINITY,
            -2.5,
            -1e-300,
            -0.0,
            0.0,
            1e-300,
            2.5,
            f64::INFINITY,
        ];
        let keys: Vec<u64> = xs.iter().map(|&x| order_key(x)).collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:x?}");
        for x in xs {
            assert_eq!(from_order_key(order_key(x)).to_bits(), x.to_bits(), "{x}");
        }
    }

    #[test]
    fn a_node_set_counts_walks_in_order_and_compares_by_members() {
        let mut a = NodeSet::default();
        assert!(a.is_empty() && a.first().is_none());
        for k in [70, 3, 129, 3] {
            a.insert(k);
        }
        assert_eq!(a.len(), 3);
        assert!(!a.is_empty());
        assert_eq!(a.iter().collect::<Vec<_>>(), [3, 70, 129]);
        assert_eq!(a.first(), Some(3));
        assert!(a.remove(129) && !a.remove(129) && !a.contains(129));
        assert_eq!(a.len(), 2);
        // Grown to 130 bits, against one grown to 71: the same members.
        let mut b = NodeSet::default();
        b.insert(70);
        b.insert(3);
        assert_eq!(a, b);
        b.remove(3);
        assert_ne!(a, b);
        // As many members, not the same ones.
        b.insert(4);
        assert_eq!(b.len(), a.len());
        assert_ne!(a, b);
    }

    #[test]
    fn a_node_set_walks_its_members_in_order_whatever_words_empty() {
        // Seeded inserts and removals over 2,000 indices (32 words), more
        // removals than inserts in the first half of the steps and the
        // reverse after, so that words empty and fill again, low ones
        // (as the idle nodes under best fit) included; against a B-tree
        // set, and the second level against the first after every step.
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(20261127);
        let mut set = NodeSet::default();
        let mut reference = BTreeSet::new();
        for step in 0..20_000 {
            let low = rng.random_bool(0.5);
            let k = if low {
                rng.random_range(0..200)
            } else {
                rng.random_range(0..2000)
            };
            let add = rng.random_bool(if step < 10_000 { 0.3 } else { 0.7 });
            if add {
                assert_eq!(set.insert(k), reference.insert(k), "step {step}");
            } else {
                assert_eq!(set.remove(k), reference.remove(&k), "step {step}");
            }
            assert_eq!(set.len(), reference.len(), "step {step}");
            assert_eq!(set.first(), reference.first().copied(), "step {step}");
            for (w, &word) in set.bits.as_slice().iter().enumerate() {
                assert_eq!(set.words.contains(w), word != 0, "word {w}, step {step}");
            }
            if step % 97 == 0 {
                assert!(set.iter().eq(reference.iter().copied()), "step {step}");
            }
        }
        assert!(set.iter().eq(reference.iter().copied()));
    }

    /// A flat bound at node `k`'s load at 0 (its parts standing still).
    fn flat(view: &[NodeState], k: usize, fns: &mut Vec<PartFn>) -> LoadBound {
        crate::policy::test_util::still_part_fns(&view[k], fns);
        let q = view[k].required_share(0.0);
        LoadBound {
            lo: q,
            hi: q,
            line: LoadLine::NONE,
        }
    }

    /// The nodes [`BusyIndex::rebound`] bounds at `now`, flat.
    fn rebound_flat(ix: &mut BusyIndex, view: &[NodeState], now: Time) -> Vec<usize> {
        let mut bounded = Vec::new();
        ix.rebound(now, |k, _, _, fns| {
            bounded.push(k);
            flat(view, k, fns)
        });
        bounded
    }

    #[test]
    fn only_a_bound_still_on_file_is_bounded_again_when_its_window_ends() {
        // Nodes 0, 1 and 2 busy, bounded at 0 (window to BOUND_WINDOW, the
        // slot starting at 10). A report on node 1 at 4 bounds it again
        // (to 4 + BOUND_WINDOW + EXPIRY_SLOT, the slot starting at
        // 14.0625). Node 2 empties at 5 and takes a part again: bounded
        // again at 5 (to 15, the slot starting at 15). Past the first
        // window only node 0 is bounded again (the entries nodes 1 and 2
        // left behind are no longer their bounds); past the second, node
        // 1; past the third, node 2.
        let mut view = nodes(3);
        busy(&mut view[0], 10, 50.0, 1000.0);
        busy(&mut view[1], 11, 25.0, 1000.0);
        busy(&mut view[2], 12, 25.0, 1000.0);
        let mut ix = BusyIndex::of(&view);
        assert_eq!(rebound_flat(&mut ix, &view, 0.0), [0, 1, 2]);
        assert_eq!(rebound_flat(&mut ix, &view, 1.0), [] as [usize; 0]);
        ix.forget_load(1);
        ix.settle(4.0, |k, _, _, fns| {
            assert_eq!(k, 1);
            flat(&view, k, fns)
        });
        view[2].parts.clear();
        ix.update(2, &view[2]);
        busy(&mut view[2], 13, 25.0, 1000.0);
        ix.update(2, &view[2]);
        assert_eq!(rebound_flat(&mut ix, &view, 5.0), [2]);
        let t = BOUND_WINDOW + EXPIRY_SLOT;
        assert_eq!(rebound_flat(&mut ix, &view, t), [0]);
        let t = 4.0 + BOUND_WINDOW + 2.0 * EXPIRY_SLOT;
        assert_eq!(rebound_flat(&mut ix, &view, t), [1]);
        let t = 5.0 + BOUND_WINDOW + EXPIRY_SLOT;
        assert_eq!(rebound_flat(&mut ix, &view, t), [2]);
    }

    #[test]
    fn a_busy_nodes_speed_counts_among_the_speeds() {
        // Two speeds, every node of speed 2 busy: the index of the view
        // knows both speeds, so the bounded walks (which take every node
        // to have one speed) do not apply.
        let mut view = nodes(4);
        view[2].spec.speed = 2.0;
        view[3].spec.speed = 2.0;
        busy(&mut view[2], 10, 50.0, 100.0);
        busy(&mut view[3], 11, 50.0, 100.0);
        let mut ix = BusyIndex::of(&view);
        assert_eq!(ix.speeds(), 2);
        crate::policy::test_util::rebound_exact_at_zero(&mut ix, &view);
        let j = crate::policy::test_util::job(1, 10.0, 1, 100.0, 1e9);
        assert!(!crate::policy::steps::bounds_apply(&view, &ix, &j));
    }

    #[test]
    fn compaction_keeps_every_nodes_parts_in_place_without_growing() {
        // 300 busy nodes of one to three parts (600 in all), each part's
        // estimate naming its node and place. Reports on ten of them at
        // every step append their parts again: past 1,024 entries and
        // four times those in use, the buffer is compacted.
        let mut view = nodes(300);
        for (k, n) in view.iter_mut().enumerate() {
            for i in 0..1 + k % 3 {
                busy(n, (10 * k + i) as u64, (1000 * k + i + 1) as f64, 1e6);
            }
        }
        let mut ix = BusyIndex::of(&view);
        crate::policy::test_util::rebound_exact_at_zero(&mut ix, &view);
        // No room to spare before the first compaction: the room after it
        // is the compaction's own.
        ix.bounds.fns.shrink_to_fit();
        let check = |ix: &BusyIndex, view: &[NodeState], step: usize| {
            for (k, n) in view.iter().enumerate().filter(|(_, n)| !n.parts.is_empty()) {
                let fns = ix.part_fns(k);
                assert_eq!(fns.len(), n.parts.len(), "node {k} at step {step}");
                for (f, p) in fns.iter().zip(&n.parts) {
                    assert_eq!(f.est_cpu.to_bits(), p.est_cpu.to_bits(), "node {k}");
                }
            }
        };
        let (mut compactions, mut capacity) = (0, 0);
        for step in 0..400 {
            // Ten distinct nodes, scattered: the buffer's order drifts far
            // from the nodes' order.
            for k in (0..10).map(|i| (step * 37 + i * 53 + step * step) % 300) {
                ix.forget_load(k);
            }
            let before = ix.bounds.fns.len();
            crate::policy::test_util::rebound_exact_at_zero(&mut ix, &view);
            if ix.bounds.fns.len() < before {
                compactions += 1;
                // Those in use moved down (the ten nodes reported on are
                // not in use: their parts are bound again after), then the
                // ten nodes' appended: every node's parts once.
                assert_eq!(ix.bounds.fns.len(), 600, "step {step}");
                // Room for four times those in use at the compaction (570
                // to 581) and 1,024, never the doubling of a growth; and
                // with as many in use as before, the room is not given
                // back (no shrink, then a growth, from one compaction to
                // the next).
                assert!(ix.bounds.fns.capacity() >= capacity, "step {step}");
                capacity = ix.bounds.fns.capacity();
                assert!(
                    (4 * 570 + 1024..=4 * 600 + 1024).contains(&capacity),
                    "{capacity} at step {step}"
                );
            } else if compactions > 0 {
                // Between compactions the appends fit the room kept.
                assert_eq!(ix.bounds.fns.capacity(), capacity, "step {step}");
            }
            check(&ix, &view, step);
        }
        assert!(compactions >= 3, "{compactions}");
        // The cluster drains to its first five nodes (9 parts): reports on
        // them refill the buffer past 1,024, and the compaction shrinks
        // its room to at most theirs, 4 x 9 + 1,024 (those reported on at
        // that instant are not in use then).
        for (k, n) in view.iter_mut().enumerate().skip(5) {
            n.parts.clear();
            ix.update(k, n);
        }
        let mut step = 400;
        while ix.bounds.fns.capacity() > 4 * 9 + 1024 {
            assert!(step < 2000, "no compaction shrank the buffer");
            for k in 0..5 {
                ix.forget_load(k);
            }
            crate::policy::test_util::rebound_exact_at_zero(&mut ix, &view);
            check(&ix, &view, step);
            step += 1;
        }
        assert!(ix.bounds.fns.capacity() >= 1024);
    }

    #[test]
    fn more_changes_than_busy_nodes_fall_back_to_the_walk() {
        let mut view = nodes(3);
        busy(&mut view[0], 10, 50.0, 100.0);
        busy(&mut view[2], 11, 25.0, 100.0);
        let mut ix = BusyIndex::of(&view);
        assert_eq!(renewed(&mut ix, &view, 0.0), [0, 2]);
        for _ in 0..3 {
            ix.forget_load(0);
        }
        // The third change overflowed the list: node 2's load is still
        // known at 0, node 0's is not, so the walk renews node 0 alone.
        assert_eq!(renewed(&mut ix, &view, 0.0), [0]);
        assert_eq!(ix.load(0, &view[0], 0.0), 0.5);
    }
}
