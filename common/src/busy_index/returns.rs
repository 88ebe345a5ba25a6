//! LibraSLA's order of the busy nodes: by the sum of their parts' returns.
//!
//! A node's return with a new part is the sum over its parts of `ret -
//! delay x ret_penalty`, plus the new part's, with every delay and penalty
//! rate `>= 0`; so it is at most the sum of the parts' `ret` plus the new
//! part's `ret` (float addition is monotone, so the projection's own sum
//! is at most that one). The sum does not change with time, only when a
//! part is placed, completes, is lost or cancelled (progress reports
//! leave it as it is), so it is kept in an order (a B-tree) updated where
//! the index learns that a node changed, and LibraSLA walks the busy
//! nodes from the highest sum down, stopping once no node left can reach
//! the `P` best new returns found (see
//! [`crate::policy::LibraSla`]'s `decide_by_returns`).
//!
//! Kept only while a policy reads it ([`BusyIndex::keep_returns`]): its
//! upkeep is a B-tree update per change of a node.

use std::collections::BTreeSet;

use super::{order_key, BusyIndex, Filed, PartFn};
use crate::node_model::NodeState;
use crate::time::Time;

/// The levels of a node's hard load due late for which it keeps the
/// latest deadline ([`BusyIndex::late_deadline`]): twenty steps of 0.05
/// to a full node, then over-committed ones.
pub const LATE_LEVELS: [f64; 24] = [
    0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85,
    0.9, 0.95, 1.0, 1.25, 1.5, 2.0, 3.0,
];

/// Least required share a part counts with in [`late_deadlines`]: that of
/// LibraSLA's lateness certificate (a part at or above it keeps more
/// than `TIME_EPS` of work until a millisecond before its deadline).
pub const LATE_MIN_SHARE: f64 = 1e-3;

/// Relative room [`late_deadlines`] takes off its sums.
const LATE_SUM_ROOM: f64 = 1e-9;

/// The order of the busy nodes by their parts' returns.
#[derive(Debug, Clone, Default)]
pub(super) struct Returns {
    /// Whether the order is kept.
    on: bool,
    /// Per node: its sum of returns and its key in the order (NaN: not
    /// in the order).
    of: Vec<(f64, f64)>,
    /// `(order key of the key, node)` for every busy node.
    order: BTreeSet<(u64, usize)>,
    /// Per node: [`late_deadlines`] of its parts when last bounded, and
    /// its load's lower bound over that bound's window (read together:
    /// the walk by return reads both of every node it meets).
    late: Vec<LateRecord>,
    /// Per node: its counted parts when last bounded (see
    /// [`BusyIndex::late_parts`]).
    counted: Vec<Vec<(f64, f64)>>,
    /// Scratch for [`late_deadlines`].
    parts: Vec<(f64, f64)>,
}

/// What [`Returns`] keeps of a bounded node for LibraSLA's walk.
#[derive(Debug, Clone, Copy)]
struct LateRecord {
    /// [`late_deadlines`].
    deadlines: [f32; LATE_LEVELS.len()],
    /// The lower bound of its load over its bound's window, as an `f32`
    /// rounded down (`-inf`: none).
    load_lo: f32,
}

impl LateRecord {
    const NONE: LateRecord = LateRecord {
        deadlines: [f32::NEG_INFINITY; LATE_LEVELS.len()],
        load_lo: f32::NEG_INFINITY,
    };
}

/// `x` as an `f32` no larger.
fn down(x: f64) -> f32 {
    let y = x as f32;
    if f64::from(y) > x {
        y.next_down()
    } else {
        y
    }
}

/// Per level `l` of [`LATE_LEVELS`], the latest deadline `T` such that the
/// node's hard parts due at or after `T` need at least `l` of it at every
/// instant of its bound's window `[t0, t1)` (`-inf` when they never do):
/// a part's required share `q = rem / rd` as the index carries its
/// progress forward (at the share of its last report, or standing still
/// before it) is monotone on either side of the report's instant and can
/// only rise before it, so its least over the window is at one of the
/// window's ends; a part counts with that least if it is at least
/// `LATE_MIN_SHARE` (LibraSLA's lateness certificate's own threshold).
/// Each `T` is an `f32` rounded down. So at a decision inside the window,
/// the hard parts due at or after `T` need at least `l`: LibraSLA reads it
/// as the load `c` its certificate counts for a job due by `T`.
fn late_deadlines(
    fns: &[PartFn],
    t0: Time,
    t1: Time,
    parts: &mut Vec<(f64, f64)>,
) -> [f32; LATE_LEVELS.len()] {
    parts.clear();
    for f in fns {
        if f.hard {
            let q = f.required(t0).min(f.required(t1));
            if q >= LATE_MIN_SHARE {
                parts.push((f.deadline, q));
            }
        }
    }
    // Latest deadline first: a prefix is every part due at or after its
    // last one.
    parts.sort_unstable_by(|a, b| b.0.total_cmp(&a.0));
    let mut out = [f32::NEG_INFINITY; LATE_LEVELS.len()];
    let mut sum = 0.0;
    let mut level = 0;
    for &(deadline, q) in parts.iter() {
        sum += q;
        while level < LATE_LEVELS.len() && sum * (1.0 - LATE_SUM_ROOM) >= LATE_LEVELS[level] {
            let mut t = deadline as f32;
            if f64::from(t) > deadline {
                t = t.next_down();
            }
            out[level] = t;
            level += 1;
        }
    }
    out
}

impl Returns {
    /// The sum of `node`'s parts' returns, bit for bit the one LibraSLA's
    /// shortcut adds up (the same sum in the same order), and its key: the
    /// sum itself when it bounds the node's return from above, else
    /// `+inf` (walked first, never a reason to stop): a penalty rate that
    /// is not `>= 0` (a part taken over from a node process may carry
    /// anything) would let a delay raise the return, and a NaN sum has no
    /// place in an order.
    fn sum_and_key(node: &NodeState) -> (f64, f64) {
        let sum: f64 = node.parts.iter().map(|p| p.ret).sum();
        let bounded = !sum.is_nan() && node.parts.iter().all(|p| p.ret_penalty >= 0.0);
        (sum, if bounded { sum } else { f64::INFINITY })
    }

    /// Files node `k` by what it holds now (out of the order when empty).
    pub(super) fn note(&mut self, k: usize, node: &NodeState) {
        if !self.on {
            return;
        }
        self.take_out(k);
        if !node.parts.is_empty() {
            let (sum, key) = Returns::sum_and_key(node);
            self.of[k] = (sum, key);
            self.order.insert((order_key(key), k));
        }
    }

    /// Keeps node `k`'s [`late_deadlines`] from its parts' record `fns`
    /// over its bound's window `[t0, t1)`, and `load_lo`, the lower bound
    /// of its load there.
    pub(super) fn file_late(&mut self, k: usize, fns: &[PartFn], t0: Time, t1: Time, load_lo: f64) {
        if !self.on {
            return;
        }
        if k >= self.late.len() {
            self.late.resize(k + 1, LateRecord::NONE);
        }
        let deadlines = late_deadlines(fns, t0, t1, &mut self.parts);
        if k >= self.counted.len() {
            self.counted.resize_with(k + 1, Vec::new);
        }
        // The scratch holds them latest first.
        let counted = &mut self.counted[k];
        counted.clear();
        counted.extend(self.parts.iter().rev());
        self.late[k] = LateRecord {
            deadlines,
            // A NaN bound (inputs out of range) says nothing.
            load_lo: if load_lo.is_nan() {
                f32::NEG_INFINITY
            } else {
                down(load_lo)
            },
        };
    }

    /// Takes node `k` out of the order.
    pub(super) fn take_out(&mut self, k: usize) {
        if !self.on {
            return;
        }
        if k >= self.of.len() {
            self.of.resize(k + 1, (f64::NAN, f64::NAN));
        }
        let key = self.of[k].1;
        if !key.is_nan() {
            self.order.remove(&(order_key(key), k));
            self.of[k] = (f64::NAN, f64::NAN);
        }
    }
}

impl BusyIndex {
    /// Whether the order of the busy nodes by their parts' returns is kept
    /// (LibraSLA reads it): switching it on files every busy node of
    /// `view`, from then on the index's hooks ([`Self::add`],
    /// [`Self::update`], [`Self::remove`]) keep it.
    pub fn keep_returns(&mut self, on: bool, view: &[NodeState]) {
        if self.returns.on == on {
            return;
        }
        self.returns = Returns {
            on,
            ..Returns::default()
        };
        if on {
            self.returns.of.resize(view.len(), (f64::NAN, f64::NAN));
            let latest = self.bounds.latest;
            for k in self.busy.iter() {
                self.returns.note(k, &view[k]);
                // A node bounded already: its late deadlines from its
                // record, from the latest bounding (no decision is before
                // it) to the end of its bound's window.
                if let Some(&(lb, until, Filed::Ordered | Filed::Wide)) = self.bounds.of.get(k) {
                    let (start, count) = self.bounds.fn_at[k];
                    let fns = &self.bounds.fns[start as usize..(start + count) as usize];
                    self.returns.file_late(k, fns, latest, until, lb.lo);
                }
            }
        }
    }

    /// Whether [`Self::keep_returns`] is on.
    pub fn returns_kept(&self) -> bool {
        self.returns.on
    }

    /// The busy nodes by their key, highest first: `(key, node, sum)`,
    /// where `sum` is the sum of the node's parts' returns (bit for bit
    /// LibraSLA's shortcut's) and `key` is `sum` or, when a part's penalty
    /// rate is not `>= 0`, `+inf`. The node's return with any new part of
    /// return `r` is at most `key + r` (in floats).
    pub fn by_return_desc(&self) -> impl Iterator<Item = (f64, usize, f64)> + Clone + '_ {
        self.returns.order.iter().rev().map(|&(_, k)| {
            let (sum, key) = self.returns.of[k];
            (key, k, sum)
        })
    }

    /// Node `k`'s latest deadline `T` such that its hard parts due at or
    /// after `T` need at least `LATE_LEVELS[level]` of it from its last
    /// bounding on (`-inf`: none known; see `late_deadlines`). Up to date
    /// for every busy node while the bounds are ([`Self::bounded`]).
    pub fn late_deadline(&self, k: usize, level: usize) -> f64 {
        self.returns
            .late
            .get(k)
            .map_or(f64::NEG_INFINITY, |l| f64::from(l.deadlines[level]))
    }

    /// Busy node `k`'s hard parts as LibraSLA's lateness certificate
    /// counts them, from its last bounding on: `(deadline, q)` for each
    /// whose required share's least over its bound's window, `q`, is at
    /// least [`LATE_MIN_SHARE`], by deadline (empty: none known). Up to
    /// date for every busy node while the bounds are.
    pub fn late_parts(&self, k: usize) -> &[(f64, f64)] {
        self.returns.counted.get(k).map_or(&[], |c| c.as_slice())
    }

    /// A lower bound of busy node `k`'s load from its last bounding on
    /// (`-inf`: none known): its bound's, as an `f32` rounded down, kept
    /// beside its late deadlines so that LibraSLA's walk reads both at
    /// once. Up to date for every busy node while the bounds are.
    pub fn load_floor(&self, k: usize) -> f64 {
        self.returns
            .late
            .get(k)
            .map_or(f64::NEG_INFINITY, |l| f64::from(l.load_lo))
    }

    /// How many nodes the order holds (every busy node while it is kept).
    pub fn returns_len(&self) -> usize {
        self.returns.order.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node_model::PartView;
    use crate::policy::test_util::nodes;

    fn part(job: u64, ret: f64, ret_penalty: f64) -> PartView {
        PartView {
            job,
            est_cpu: 10.0,
            cpu_done: 0.0,
            deadline: 100.0,
            memory_kb: 0,
            disk_mb: 0,
            ret,
            ret_penalty,
            hard: false,
        }
    }

    /// A part standing still: `est` estimated work, `done` of it done.
    fn still(est: f64, done: f64, deadline: f64, hard: bool) -> PartFn {
        PartFn {
            est_cpu: est,
            cpu_done: done,
            share: 0.0,
            at: f64::NAN,
            deadline,
            hard,
        }
    }

    /// The parts A, B, C, D, E, G of the late deadlines' test.
    fn sample_fns() -> [PartFn; 6] {
        [
            still(60.0, 26.0, 100.0, true),
            still(46.0, 0.0, 200.0, true),
            still(50.0, 0.0, 100.0, false),
            PartFn {
                share: 0.5,
                at: 0.0,
                ..still(132.0, 0.0, 300.0, true)
            },
            still(0.05, 0.0, 100.0, true),
            still(5.0, 0.0, 8.0, true),
        ]
    }

    fn order(ix: &BusyIndex) -> Vec<(f64, usize)> {
        ix.by_return_desc().map(|(key, k, _)| (key, k)).collect()
    }

    #[test]
    fn late_deadlines_count_each_hard_part_at_its_least_over_the_window() {
        // Window [0, 10). A hard, 34 of 60 left by 100, standing still: q
        // 0.34 at 0, 34 / 90 at 10 (least 0.34). B hard, 46 by 200: 0.23
        // at 0. C soft, q 0.5: not counted. D hard, 132 by 300, carried
        // forward at 0.5 from 0: 0.44 at 0, 127 / 290 = 0.43793 at 10
        // (least). E hard, q 5e-4: below LATE_MIN_SHARE. G hard, 5 by 8:
        // due inside the window (0 at 10): not counted. Latest first: D
        // 0.43793 (levels to 0.4 at 300), B 0.66793 (0.45 to 0.65 at 200),
        // A 1.00793 (0.7 to 1.0 at 100); 1.25 is never reached (it would
        // be, at 8, if G counted). A sum exactly at a level does not reach
        // it: it is taken with 1e-9 of room.
        let fns = sample_fns();
        let f = still;
        let t = late_deadlines(&fns, 0.0, 10.0, &mut Vec::new());
        let level = |l: f64| t[LATE_LEVELS.iter().position(|&x| x == l).unwrap()];
        assert_eq!(level(0.05), 300.0);
        assert_eq!(level(0.4), 300.0);
        assert_eq!(level(0.45), 200.0);
        assert_eq!(level(0.65), 200.0);
        assert_eq!(level(0.7), 100.0);
        assert_eq!(level(1.0), 100.0);
        assert_eq!(level(1.25), f32::NEG_INFINITY);
        // Taken at 0 alone (a window of no length), D counts 0.44 and so
        // reaches 0.4 but, with B, 0.67 reaches 0.65 at 200 all the same;
        // and G counts: 1.635 reaches 1.5 at 8.
        let t = late_deadlines(&fns, 0.0, 0.0, &mut Vec::new());
        let level = |l: f64| t[LATE_LEVELS.iter().position(|&x| x == l).unwrap()];
        assert_eq!(level(1.5), 8.0);
        // A deadline no f32 holds is rounded down: the f32s next to
        // 100.000006 are 100 and 100.0000076 (the nearest, above it).
        let odd = [f(50.0, 0.0, 100.000_006, true)];
        let t = late_deadlines(&odd, 0.0, 10.0, &mut Vec::new());
        assert_eq!(t[0], 100.0);
    }

    #[test]
    fn a_filed_node_keeps_its_counted_parts_by_deadline_and_its_load_floor() {
        // The parts of the test above, window [0, 10): A (hard, 34 left by
        // 100) counts its least share 0.34 (at 0), B (46 by 200) 0.23, D
        // (127 left by 300 at 10) 127 / 290; C is soft, E below
        // LATE_MIN_SHARE, G due inside the window. By deadline: A, B, D.
        let mut fns = sample_fns();
        // In another order than the test above's: the list is by deadline
        // whatever the parts' order.
        fns.reverse();
        let mut r = Returns {
            on: true,
            ..Returns::default()
        };
        // A load floor no f32 holds is rounded down: the f32 nearest
        // 1.1 is 1.1000000238, above it.
        r.file_late(2, &fns, 0.0, 10.0, 1.1);
        let want = [(100.0, 0.34), (200.0, 0.23), (300.0, 127.0 / 290.0)];
        let got = &r.counted[2];
        assert_eq!(got.len(), 3, "{got:?}");
        for (g, w) in got.iter().zip(want) {
            assert_eq!(g.0, w.0, "{got:?}");
            assert!((g.1 - w.1).abs() < 1e-12, "{got:?}");
        }
        let floor = f64::from(r.late[2].load_lo);
        assert!(floor <= 1.1 && floor > 1.1 - 1e-6, "{floor}");
        // One an f32 holds is kept as it is.
        r.file_late(1, &fns, 0.0, 10.0, 0.75);
        assert_eq!(r.late[1].load_lo, 0.75);
        // Nodes never filed have none; a NaN floor says nothing.
        assert!(r.counted[0].is_empty());
        assert_eq!(r.late[0].load_lo, f32::NEG_INFINITY);
        r.file_late(2, &fns[3..4], 0.0, 10.0, f64::NAN);
        assert!(r.counted[2].is_empty());
        assert_eq!(r.late[2].load_lo, f32::NEG_INFINITY);
    }

    #[test]
    fn busy_nodes_are_ordered_by_their_sum_of_returns_as_they_change() {
        // Node 0 holds returns 0.25 + 0.5, node 2 holds 1.0, node 1 is
        // idle: 2 (1.0) before 0 (0.75).
        let mut view = nodes(4);
        view[0].parts.push(part(1, 0.25, 0.0));
        view[0].parts.push(part(2, 0.5, 1.0));
        view[2].parts.push(part(3, 1.0, 0.0));
        let mut ix = BusyIndex::of(&view);
        assert!(!ix.returns_kept());
        ix.keep_returns(true, &view);
        assert_eq!(order(&ix), [(1.0, 2), (0.75, 0)]);
        // Node 1 gains a part of return 2; node 2's completes.
        view[1].parts.push(part(4, 2.0, 0.0));
        ix.update(1, &view[1]);
        view[2].parts.clear();
        ix.update(2, &view[2]);
        assert_eq!(order(&ix), [(2.0, 1), (0.75, 0)]);
        // A negative penalty rate (a delay would raise the return): the
        // sum no longer bounds it, node 3 goes first, with its sum kept.
        view[3].parts.push(part(5, 0.1, -1.0));
        ix.update(3, &view[3]);
        let first = ix.by_return_desc().next().unwrap();
        assert_eq!(first, (f64::INFINITY, 3, 0.1));
        // Node 0 is lost.
        ix.remove(0, &view[0]);
        assert_eq!(order(&ix), [(f64::INFINITY, 3), (2.0, 1)]);
        assert_eq!(ix.returns_len(), ix.busy_len());
        // Switched off and on again: filed from the view afresh.
        ix.keep_returns(false, &view);
        assert_eq!(ix.returns_len(), 0);
        view[0].parts.clear();
        ix.keep_returns(true, &view);
        assert_eq!(order(&ix), [(f64::INFINITY, 3), (2.0, 1)]);
    }
}
