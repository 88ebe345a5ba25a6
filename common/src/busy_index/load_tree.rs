//! Libra+$'s order of the busy nodes: by the lower bound of their load,
//! with every subtree's largest upper bound of load and of committed time
//! at a few job windows (caps), the last of them unbounded (the remaining
//! time).
//!
//! Libra+$ ranks a node by the processor time its parts commit inside the
//! job's window `D`, which is at most `D` times its load and at most its
//! remaining time. Walking the order by load alone meets every node whose
//! load is high (~700 a decision at 158,976 nodes), though most of them
//! have parts that end inside the window, so that their remaining time
//! settles them. Here each subtree also knows the largest bounds of its
//! nodes, so that the walk passes over a whole subtree whose every node
//! commits too little to matter; and each node's parts are capped one by
//! one ([`committed_caps`]), which settles the nodes whose parts end some
//! inside the window and some past it. Why it chooses the same nodes as
//! the plain scan: docs/policies.md, "Libra+$ from the same bounds".
//!
//! The shape is fixed: the range of lower bounds `[0, LO_SPAN)` cut into
//! [`LEAVES`] equal buckets (the last also takes everything above), each
//! an unordered run of entries, under an implicit binary tree of their
//! aggregates (node `i`'s children are `2i` and `2i + 1`, bucket `b` is
//! node `LEAVES + b`). Nothing is ever rebalanced: a node filed or taken
//! out costs one bucket's entries (a handful) and one path to the root.
//! No well-kept crate offers an ordered tree with custom subtree
//! aggregates that walks this fast (`augmented-rbtree` chases a pointer
//! per node), and the structure is small.
//!
//! Kept only while a policy reads it ([`BusyIndex::keep_load_tree`]); the
//! B-trees by lower bound are then not kept (Libra+$ does not read them).

use super::{BusyIndex, LoadLine};
use crate::time::Time;

impl BusyIndex {
    /// Whether the ordered nodes are kept in Libra+$'s order
    /// ([`Self::load_tree_desc`]) rather than in the B-trees by lower bound
    /// per class of width ([`Self::by_lower_bound`]), which Libra
    /// reads; switching computes every bound again at the next
    /// [`Self::rebound`].
    pub fn keep_load_tree(&mut self, on: bool) {
        if self.bounds.tree.is_some() != on {
            self.bounds = super::Bounds {
                risk_on: self.bounds.risk_on,
                tree: on.then(LoadTree::default),
                ..super::Bounds::default()
            };
        }
    }

    /// The ordered busy nodes with lower bound at most `at_most` in
    /// Libra+$'s order ([`Self::keep_load_tree`]; empty when not kept): a
    /// walk from the highest bucket of lower bounds down that passes over
    /// the subtrees its caller names ([`Desc::next`]).
    pub fn load_tree_desc(&self, at_most: f64) -> Option<Desc<'_>> {
        self.bounds.tree.as_ref().map(|t| t.desc(at_most))
    }

    /// Whether Libra+$'s order is kept ([`Self::keep_load_tree`]).
    pub fn load_tree_kept(&self) -> bool {
        self.bounds.tree.is_some()
    }

    /// The entries under node `i` of Libra+$'s order (debug checks of a
    /// subtree a walk passed over).
    pub fn load_tree_under(&self, i: usize) -> impl Iterator<Item = &Entry> + '_ {
        self.bounds.tree.iter().flat_map(move |t| t.under(i))
    }
}

/// Buckets of the tree (a power of two). At 158,976 nodes (26,000 busy)
/// on the `decide` bench 4,096 were faster than 2,048, 8,192 or 16,384: finer
/// buckets hold fewer nodes the walk must settle one by one, but give it
/// more subtrees to ask about.
pub const LEAVES: usize = 1 << 12;

/// The lower bounds the buckets cut (the last bucket also holds every
/// larger one).
pub const LO_SPAN: f64 = 1.25;

/// One busy node in the order: its bounds over its window and its line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Entry {
    /// Lower bound of its load.
    pub lo: f64,
    /// Upper bound of its load.
    pub hi: f64,
    /// The node (the view's index).
    pub node: usize,
    /// Its load and remaining time as lines ([`LoadLine`]).
    pub line: LoadLine,
    /// Upper bounds on its committed time in windows of [`CAP_WINDOWS`]
    /// seconds, over its bound's window ([`committed_caps`]).
    pub caps: [f32; CAP_WINDOWS.len()],
}

/// The job windows `D` (seconds) an entry's [`Entry::caps`] are taken at:
/// each twice the one before, then an unbounded one, where the cap is the
/// node's remaining time (what bounds a job window past the last finite
/// one, where the cap at that one times `D` over it grows without limit).
pub const CAP_WINDOWS: [f64; 9] = [
    256.0,
    512.0,
    1024.0,
    2048.0,
    4096.0,
    8192.0,
    16384.0,
    32768.0,
    f64::INFINITY,
];

/// Upper bounds on the processor time a node's parts `fns` commit in a
/// window of each of [`CAP_WINDOWS`], at any instant of `[from, to]`:
/// `g(D) = sum over parts of min(R_k, Q_k D)`, with `R_k` the part's
/// remaining time at `from` (done time only grows, so the most over the
/// window) and `Q_k` its largest required share over the window (at the
/// window's ends and its report's instant, the share being monotone on
/// either side of that; unbounded for a part that may leave the track
/// inside it). A part's committed time `q min(rd, D)` is at most both
/// `q rd` = what it has left and `q D`, so at most `min(R_k, Q_k D)`: per
/// part, which is much tighter than the node's `min(D x load, remaining
/// time)` when some parts end inside the window and others past it.
/// Rounded up (a relative `1e-12` for the arithmetic, then to `f32`).
pub fn committed_caps(fns: &[super::PartFn], from: Time, to: Time) -> [f32; CAP_WINDOWS.len()] {
    let mut g = [0.0f64; CAP_WINDOWS.len()];
    for f in fns {
        let (qa, qb) = (f.required(from), f.required(to));
        if qa == 0.0 && qb == 0.0 {
            // Off track throughout: commits nothing.
            continue;
        }
        let mut q = qa.max(qb);
        if f.at > from && f.at < to {
            q = q.max(f.required(f.at));
        }
        if qb == 0.0 {
            // May leave the track inside the window, its share growing
            // without bound on the way: only what it has left bounds it.
            q = f64::INFINITY;
        }
        let r = (f.est_cpu - f.cpu_done_at(from)).max(0.0);
        // `q > 0` here, so `q x inf` is infinite, not NaN.
        for (g, d) in g.iter_mut().zip(CAP_WINDOWS) {
            *g += r.min(q * d);
        }
    }
    g.map(|g| up(g * (1.0 + 1e-12)))
}

/// `x` as an `f32` no smaller.
fn up(x: f64) -> f32 {
    let y = x as f32;
    if f64::from(y) < x {
        y.next_up()
    } else {
        y
    }
}

/// Where a job window `d` falls among [`CAP_WINDOWS`], worked out once per
/// decision for [`Entry::committed_cap`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CapWindow {
    /// The first of [`CAP_WINDOWS`] at least `d` (its count if none).
    above: usize,
    /// `d` over the window before it (0 if none).
    ratio: f64,
}

impl CapWindow {
    /// `d`'s place among [`CAP_WINDOWS`].
    pub fn of(d: f64) -> CapWindow {
        let above = CAP_WINDOWS.partition_point(|&w| w < d);
        CapWindow {
            above,
            ratio: above.checked_sub(1).map_or(0.0, |i| d / CAP_WINDOWS[i]),
        }
    }
}

impl Entry {
    /// An upper bound on the node's committed time in a window of `d`
    /// seconds (`w = CapWindow::of(d)`; at any instant of its bound's
    /// window): `g` is non-decreasing, and concave with `g(0) = 0` so
    /// `g(D) / D` does not grow; between two of [`CAP_WINDOWS`] it is at
    /// most the cap at the larger and at most the cap at the smaller times
    /// `d` over it.
    pub fn committed_cap(&self, w: CapWindow) -> f64 {
        cap_of(&self.caps, w)
    }
}

fn cap_of(caps: &[f32; CAP_WINDOWS.len()], w: CapWindow) -> f64 {
    let above = caps.get(w.above).map_or(f64::INFINITY, |&c| f64::from(c));
    let below = match w.above.checked_sub(1) {
        Some(i) => f64::from(caps[i]) * w.ratio,
        None => f64::INFINITY,
    };
    above.min(below)
}

/// What every node of a subtree is bounded by: each field the largest of
/// its nodes' (`-inf` in an empty subtree).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Agg {
    /// The largest upper bound of load ([`Entry::hi`]).
    pub hi: f64,
    /// The largest [`Entry::caps`] (the last, at an unbounded window, is
    /// the largest remaining time). They hold over every entry's bound
    /// window, whatever the instant: no line start to wait for.
    pub caps: [f32; CAP_WINDOWS.len()],
}

impl Agg {
    /// The aggregate of no node.
    pub const EMPTY: Agg = Agg {
        hi: f64::NEG_INFINITY,
        caps: [f32::NEG_INFINITY; CAP_WINDOWS.len()],
    };

    fn of(e: &Entry) -> Agg {
        Agg {
            hi: e.hi,
            caps: e.caps,
        }
    }

    fn max(mut self, o: Agg) -> Agg {
        // A loop: `std::array::from_fn` over the nine caps made rustc
        // 1.95's LLVM crash (SIGSEGV in instruction selection) at
        // opt-level 3.
        self.hi = self.hi.max(o.hi);
        for (c, o) in self.caps.iter_mut().zip(o.caps) {
            *c = c.max(o);
        }
        self
    }

    /// An upper bound on every node's committed time in a window `w`
    /// ([`Entry::committed_cap`] of the largest caps).
    pub fn committed_cap(&self, w: CapWindow) -> f64 {
        cap_of(&self.caps, w)
    }

    /// Whether the subtree holds no node.
    pub fn is_empty(&self) -> bool {
        self.hi == f64::NEG_INFINITY
    }
}

/// The order (see the module's doc).
#[derive(Debug, Clone)]
pub struct LoadTree {
    buckets: Vec<Vec<Entry>>,
    /// Per node: its bucket and place there (`u32::MAX`: not filed).
    at: Vec<(u32, u32)>,
    /// The tree of aggregates, `2 x LEAVES` (node 0 unused).
    agg: Vec<Agg>,
}

impl Default for LoadTree {
    fn default() -> Self {
        LoadTree {
            buckets: vec![Vec::new(); LEAVES],
            at: Vec::new(),
            agg: vec![Agg::EMPTY; 2 * LEAVES],
        }
    }
}

/// The bucket of lower bound `lo`: monotone in `lo` (float
/// multiplication and the saturating conversion both are), so every node
/// of lower bound at most `x` is in a bucket at most `bucket(x)`.
fn bucket(lo: f64) -> usize {
    ((lo * (LEAVES as f64 / LO_SPAN)) as usize).min(LEAVES - 1)
}

impl LoadTree {
    /// Files `e` (its node not filed).
    pub fn insert(&mut self, e: Entry) {
        let b = bucket(e.lo);
        if e.node >= self.at.len() {
            self.at.resize(e.node + 1, (u32::MAX, u32::MAX));
        }
        debug_assert_eq!(self.at[e.node].0, u32::MAX, "node {} filed twice", e.node);
        self.at[e.node] = (b as u32, self.buckets[b].len() as u32);
        self.buckets[b].push(e);
        let a = Agg::of(&e);
        let mut i = LEAVES + b;
        while i > 0 {
            let m = self.agg[i].max(a);
            if m == self.agg[i] {
                break;
            }
            self.agg[i] = m;
            i /= 2;
        }
    }

    /// Takes node `k` out (if filed).
    pub fn remove(&mut self, k: usize) {
        let Some(&(b, p)) = self.at.get(k) else {
            return;
        };
        if b == u32::MAX {
            return;
        }
        let (b, p) = (b as usize, p as usize);
        self.at[k] = (u32::MAX, u32::MAX);
        let run = &mut self.buckets[b];
        run.swap_remove(p);
        if let Some(moved) = run.get(p) {
            self.at[moved.node].1 = p as u32;
        }
        let mut i = LEAVES + b;
        let mut a = run.iter().map(Agg::of).fold(Agg::EMPTY, Agg::max);
        // Up the path while the aggregate changes: a parent is the larger
        // of its children.
        while i > 0 && self.agg[i] != a {
            self.agg[i] = a;
            let sibling = self.agg[i ^ 1];
            a = a.max(sibling);
            i /= 2;
        }
    }

    /// The filed entries with `lo <= at_most`, from the highest bucket
    /// down (in no order within a bucket), passing over every subtree
    /// for which `skip` (called with its tree node and aggregate, when the
    /// walk reaches it) says so.
    pub fn desc(&self, at_most: f64) -> Desc<'_> {
        let mut d = Desc {
            tree: self,
            at_most,
            last: bucket(at_most),
            stack: [0; STACK],
            len: 0,
            run: &[],
        };
        d.push(1);
        d
    }

    /// Node `i`'s leaves: buckets `[first, end)`.
    fn leaves(i: usize) -> (usize, usize) {
        let depth = i.ilog2();
        let shift = LEAVES.ilog2() - depth;
        ((i << shift) - LEAVES, ((i + 1) << shift) - LEAVES)
    }

    /// The entries under tree node `i` (debug checks of a skipped
    /// subtree).
    pub fn under(&self, i: usize) -> impl Iterator<Item = &Entry> + '_ {
        let (first, end) = LoadTree::leaves(i);
        self.buckets[first..end].iter().flatten()
    }

    /// Whether every aggregate is what its subtree's entries give, and
    /// every node's place is right (tests).
    #[cfg(test)]
    pub fn consistent(&self) -> bool {
        (1..2 * LEAVES).all(|i| {
            let want = self.under(i).map(Agg::of).fold(Agg::EMPTY, Agg::max);
            want == self.agg[i]
        }) && self.buckets.iter().enumerate().all(|(b, run)| {
            run.iter()
                .enumerate()
                .all(|(p, e)| self.at[e.node] == (b as u32, p as u32) && bucket(e.lo) == b)
        })
    }
}

/// Room for the walk's stack: one pending sibling per level and the one
/// being opened.
const STACK: usize = 2 * 17 + 2;

/// A walk down the order ([`BusyIndex::load_tree_desc`]).
pub struct Desc<'a> {
    tree: &'a LoadTree,
    at_most: f64,
    /// The bucket of `at_most`: later ones are never opened.
    last: usize,
    /// Tree nodes still to open, the next on top.
    stack: [u32; STACK],
    len: usize,
    /// What is left of the bucket being walked.
    run: &'a [Entry],
}

impl<'a> Desc<'a> {
    fn push(&mut self, i: usize) {
        self.stack[self.len] = i as u32;
        self.len += 1;
    }

    /// The next entry, or `None` at the end. `skip(i, agg)` is asked of
    /// every non-empty subtree (tree node `i`) before it is opened, with
    /// the caller's state as it is then.
    pub fn next(&mut self, mut skip: impl FnMut(usize, &Agg) -> bool) -> Option<&'a Entry> {
        loop {
            if let Some((e, rest)) = self.run.split_first() {
                self.run = rest;
                if e.lo <= self.at_most {
                    return Some(e);
                }
                continue;
            }
            if self.len == 0 {
                return None;
            }
            self.len -= 1;
            let i = self.stack[self.len] as usize;
            let a = &self.tree.agg[i];
            if a.is_empty() || LoadTree::leaves(i).0 > self.last || skip(i, a) {
                continue;
            }
            if i >= LEAVES {
                self.run = &self.tree.buckets[i - LEAVES];
            } else {
                // The right child (higher bounds) on top.
                self.push(2 * i);
                self.push(2 * i + 1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An entry whose remaining time is `rem0` (its cap at the unbounded
    /// window; the others unbounded).
    fn entry(node: usize, lo: f64, hi: f64, rem0: f64, t0: Time) -> Entry {
        let mut caps = [f32::INFINITY; CAP_WINDOWS.len()];
        caps[CAP_WINDOWS.len() - 1] = rem0 as f32;
        Entry {
            lo,
            hi,
            node,
            line: LoadLine {
                t0,
                v0: lo,
                slope: 0.0,
                err: hi - lo,
                rem0,
                rem_slope: 0.0,
            },
            caps,
        }
    }

    /// The caps of a node with two parts, by hand, over the window [0,
    /// 10]: part A has 10 s left and is due at 20 s (share 0.5 at 0, 1.0
    /// at 10), part B 500 s left, due at 1,000 s (0.5 at 0, 500 / 990 at
    /// 10). Caps: at 256 s, min(10, 1.0 x 256) + min(500, 0.50505 x 256)
    /// = 10 + 129.29 = 139.29; at 512 s, 10 + 258.59 = 268.59. For a job
    /// of D = 300 s the cap is min(268.59, 139.29 x 300 / 256 = 163.23)
    /// = 163.23, against a committed time at 0 of 0.5 x 20 + 0.5 x 300 =
    /// 160 (at 10: 10 + 151.5 = 161.5); the node's own bounds give min(300
    /// x 1.0, 510) = 300.
    #[test]
    fn caps_bound_each_part_by_its_time_left_and_its_share() {
        use crate::busy_index::PartFn;
        let part = |est_cpu: f64, deadline: f64| PartFn {
            est_cpu,
            cpu_done: 0.0,
            share: 0.0,
            at: f64::NAN,
            deadline,
            hard: false,
        };
        let fns = [part(10.0, 20.0), part(500.0, 1000.0)];
        let caps = committed_caps(&fns, 0.0, 10.0);
        let q_b = 500.0 / 990.0;
        let close = |a: f64, b: f64| (a - b).abs() < 1e-4 * b;
        assert!(close(f64::from(caps[0]), 10.0 + q_b * 256.0), "{caps:?}");
        assert!(close(f64::from(caps[1]), 10.0 + q_b * 512.0), "{caps:?}");
        // From 2,048 s on, part B's 500 s left bind: 510.
        assert!(close(f64::from(caps[3]), 510.0), "{caps:?}");
        let e = Entry {
            caps,
            ..entry(0, 0.9, 1.0, 510.0, 0.0)
        };
        let cap = e.committed_cap(CapWindow::of(300.0));
        assert!(close(cap, (10.0 + q_b * 256.0) * 300.0 / 256.0), "{cap}");
        assert!((161.5..300.0).contains(&cap));
        // Below the first window: the cap at 256 s. The unbounded window's
        // cap is the time left, 510; above the last finite window the cap
        // is the least of it and the cap at 32,768 s times D over it (510
        // x 2 at 65,536 s).
        assert_eq!(e.committed_cap(CapWindow::of(100.0)), f64::from(caps[0]));
        assert!(close(f64::from(caps[8]), 510.0), "{caps:?}");
        let big = e.committed_cap(CapWindow::of(65536.0));
        assert_eq!(big, f64::from(caps[8]));
        assert!(f64::from(caps[7]) * 2.0 > big);
        // Far past the last finite window (2^20 s, 32x it), still the
        // time left, not the cap at 32,768 s times 32.
        let far = e.committed_cap(CapWindow::of(1_048_576.0));
        assert_eq!(far, f64::from(caps[8]));
        // Rounded up, never down.
        assert!(caps.iter().all(|&c| f64::from(c) >= 10.0));
    }

    /// Filing, taking out and walking keep every aggregate the largest of
    /// its subtree's, and the walk goes from the highest bucket down,
    /// leaving out what is above `at_most` and the subtrees `skip` names.
    #[test]
    fn aggregates_follow_the_entries_and_the_walk_skips_subtrees() {
        let mut t = LoadTree::default();
        // Bucket width 1.25 / 4096 = 3.05e-4: 0.5 and 0.50001 share one.
        let es = [
            entry(0, 0.9, 0.91, 50.0, 1.0),
            entry(1, 0.5, 0.5, 400.0, 2.0),
            entry(2, 0.50001, 0.501, 10.0, 0.0),
            entry(3, 0.2, 0.2, 900.0, 0.0),
            entry(4, 2.0, 2.0, 5.0, 0.0),
        ];
        for e in es {
            t.insert(e);
        }
        assert!(t.consistent());
        let rem = |a: &Agg| a.caps[CAP_WINDOWS.len() - 1];
        let root = t.agg[1];
        assert_eq!((root.hi, rem(&root)), (2.0, 900.0));
        fn walk(t: &LoadTree, at_most: f64, skip: &dyn Fn(&Agg) -> bool) -> Vec<usize> {
            let mut d = t.desc(at_most);
            let mut got = Vec::new();
            while let Some(e) = d.next(|_, a| skip(a)) {
                got.push(e.node);
            }
            got
        }
        // Node 4 (lo 2, past LO_SPAN, in the last bucket) is above 1.
        let all = walk(&t, 1.0, &|_| false);
        assert_eq!(&all[..1], [0]);
        let mut mid = all[1..3].to_vec();
        mid.sort();
        assert_eq!(mid, [1, 2]);
        assert_eq!(all[3..], [3]);
        // Skipping every subtree whose remaining time is under 100 leaves
        // out node 0; node 2 (remaining 10) comes with node 1 (400), whose
        // bucket it shares.
        assert_eq!(walk(&t, 1.0, &|a| rem(a) < 100.0), [1, 2, 3]);
        // Taking out the node of the largest remaining time lowers the
        // root's to the next.
        t.remove(3);
        t.remove(3);
        assert!(t.consistent());
        assert_eq!(rem(&t.agg[1]), 400.0);
        t.remove(1);
        assert!(t.consistent());
        assert_eq!(walk(&t, 1.0, &|_| false), [0, 2]);
        // A node whose remaining time is unbounded.
        t.insert(Entry {
            line: LoadLine::NONE,
            ..entry(5, 0.3, 0.3, f64::INFINITY, 0.0)
        });
        assert!(t.consistent());
        assert_eq!(rem(&t.agg[1]), f32::INFINITY);
        assert_eq!(walk(&t, 1.0, &|a| rem(a) < 100.0), [5]);
    }
}
