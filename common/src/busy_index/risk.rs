//! LibraRisk's certificates from the busy index: per busy node and per
//! block of 64 node indices, a few numbers kept when the node's bounds are
//! computed, from which LibraRisk's walk in node order tells at `now`,
//! without bringing the node up to `now` or projecting it, that the node is
//! certainly zero-risk for a job, or certainly not (see docs/policies.md,
//! "LibraRisk from the busy index", for the proof and its margins). Nodes
//! neither certificate settles are projected exactly.

use super::{BusyIndex, Filed, LoadBound, PartFn};
use crate::policy::steps::SHARE_SUM_EPS;
use crate::time::{Time, TIME_EPS};

/// Node indices per block: one word of the busy nodes' bitset.
pub const RISK_BLOCK: usize = usize::BITS as usize;

/// Seconds of room the not-zero-risk certificate keeps against the
/// projection's own numerics: its finish tolerance (1e-6 s), parts taken
/// as finished within 1e-6 s of their work, and the rounding of event
/// times (an ulp of ~1e-8 s at trace timestamps of ~1e8 s, per event).
pub const RISK_MARGIN: Time = 1e-3;

/// Instants beyond this (seconds) make the projection's rounding of event
/// times too coarse for [`RISK_MARGIN`]: such decisions take the exact path.
const RISK_TIME_LIMIT: Time = 1e9;

/// Parts beyond this on a node: the projection's events and the
/// deviation's sum could round beyond the margins; the node is projected.
const RISK_PARTS_LIMIT: u32 = 1000;

/// What a busy node's certificates need, valid at every instant of its
/// bound's window `[from, to]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RiskSummary {
    /// Lower bound of the load (the bound's `lo`).
    lo: f64,
    /// Earliest and latest absolute deadline of its parts.
    dl_min: Time,
    dl_max: Time,
    /// Lower bound of the remaining estimated work of an earliest-deadline
    /// part (at `to`: it only shrinks), 0 when none is positive.
    rem_e: f64,
    /// Lower bound of that part's required share (`rem_e` over its
    /// deadline's distance from `from`).
    q_e: f64,
    /// Upper bound of the required shares of all the parts due at
    /// `dl_min`, added up (their remaining work at `from` over their
    /// deadline's distance from `to`; infinite when that is not positive).
    q_tie: f64,
    /// The next deadline after `dl_min` among its parts (infinite: none).
    dl_2: Time,
    /// Upper bound of the node's remaining estimated work (at `from`,
    /// rounding included).
    w: f64,
    /// Parts on the node.
    parts: u32,
    /// An earliest deadline already within `TIME_EPS` of `from`: past at
    /// every instant of the window.
    expired: bool,
}

impl RiskSummary {
    /// No node.
    pub const NONE: RiskSummary = RiskSummary {
        lo: 0.0,
        dl_min: Time::INFINITY,
        dl_max: Time::NEG_INFINITY,
        rem_e: 0.0,
        q_e: 0.0,
        q_tie: f64::INFINITY,
        dl_2: Time::INFINITY,
        w: Time::INFINITY,
        parts: 0,
        expired: false,
    };

    /// The summary of a node with parts `fns` bounded by `lb` over
    /// `[from, to]`.
    pub fn of(fns: &[PartFn], from: Time, to: Time, lb: &LoadBound) -> RiskSummary {
        let (mut dl_min, mut dl_max, mut w) = (Time::INFINITY, Time::NEG_INFINITY, 0.0f64);
        for f in fns {
            dl_min = dl_min.min(f.deadline);
            dl_max = dl_max.max(f.deadline);
            // Done time only grows (shares are >= 0), so the remaining
            // work is largest at `from`.
            w += (f.est_cpu - f.cpu_done_at(from)).max(0.0);
        }
        // Float subtraction is monotone: `est - done(now)` is at least
        // `est - done(to)` for any `now <= to`, bit for bit.
        let rem_e = fns
            .iter()
            .filter(|f| f.deadline == dl_min)
            .map(|f| f.est_cpu - f.cpu_done_at(to))
            .fold(0.0f64, f64::max);
        let rd = dl_min - from;
        let q_e = if rd > TIME_EPS { rem_e / rd } else { 0.0 };
        let rd_to = dl_min - to;
        let q_tie = if rd_to > TIME_EPS {
            let rem: f64 = fns
                .iter()
                .filter(|f| f.deadline == dl_min)
                .map(|f| (f.est_cpu - f.cpu_done_at(from)).max(0.0))
                .sum();
            rem / rd_to * (1.0 + 1e-9)
        } else {
            f64::INFINITY
        };
        let dl_2 = fns
            .iter()
            .map(|f| f.deadline)
            .filter(|&d| d > dl_min)
            .fold(Time::INFINITY, f64::min);
        RiskSummary {
            lo: lb.lo,
            dl_min,
            dl_max,
            rem_e,
            q_e,
            q_tie,
            dl_2,
            w: w * (1.0 + 1e-12) + 1e-9,
            parts: fns.len() as u32,
            expired: rd <= TIME_EPS,
        }
    }
}

/// The numbers of a job the certificates use, computed once per decision.
#[derive(Debug, Clone, Copy)]
pub struct RiskJob {
    /// The decision's instant.
    pub now: Time,
    /// The job's share on a node, `RE / s / D`, as the shortcut adds it.
    pub add: f64,
    /// The new part's required share in the projection, `RE / s / (DT - now)`.
    pub x: f64,
    /// The new part's estimated work on a node, `RE / s`.
    pub est: f64,
    /// The new part's absolute deadline.
    pub dn: Time,
    /// LibraRisk's risk tolerance.
    pub tol: f64,
    /// Whether the shortcut is on (the zero-risk certificate is the
    /// shortcut's test; without it every node is projected).
    pub shortcut: bool,
    /// Whether the spare rule hands out the whole node whenever a part
    /// has work (proportional, highest return) and scales every part by
    /// the same factor when the node is over-committed: what the
    /// not-zero-risk certificate's proof needs.
    pub conserving: bool,
}

impl RiskJob {
    /// `None` when the instant or the numbers are out of the range the
    /// margins were chosen for (the caller decides exactly).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        now: Time,
        est: f64,
        deadline: f64,
        dn: Time,
        tol: f64,
        shortcut: bool,
        conserving: bool,
    ) -> Option<RiskJob> {
        let ok = now.abs() < RISK_TIME_LIMIT
            && dn - now > RISK_MARGIN
            && dn < RISK_TIME_LIMIT
            && tol.is_finite()
            && tol >= 0.0
            && est.is_finite()
            && est >= 0.0;
        ok.then(|| RiskJob {
            now,
            add: est / deadline,
            x: est / (dn - now),
            est,
            dn,
            tol,
            shortcut,
            // A new part with work of the margin's order may not enter the
            // projection at all (below 1e-6 s): no certificate from it.
            conserving: conserving && est > RISK_MARGIN,
        })
    }
}

/// `sqrt(2 n)` for the population of `n` deadline delays a certificate
/// compares, from a table up to [`RISK_PARTS_LIMIT`]` + 1` (the
/// certificates' every check needs it, and a square root is among the
/// slowest of their operations).
fn sqrt_twice(n: u32) -> f64 {
    static TABLE: std::sync::LazyLock<Vec<f64>> = std::sync::LazyLock::new(|| {
        (0..=RISK_PARTS_LIMIT + 1)
            .map(|n| (2.0 * f64::from(n)).sqrt())
            .collect()
    });
    TABLE
        .get(n as usize)
        .copied()
        .unwrap_or_else(|| (2.0 * f64::from(n)).sqrt())
}

/// `a > b`, false for NaN: every test a certificate passes is one of these
/// (or [`at_least`]), so that a NaN anywhere fails it.
fn above(a: f64, b: f64) -> bool {
    a > b
}

/// `a >= b`, false for NaN (see [`above`]).
fn at_least(a: f64, b: f64) -> bool {
    a >= b
}

/// What a certificate says of a busy node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Certainly zero-risk (the shortcut holds).
    Zero,
    /// Certainly not zero-risk.
    NotZero,
    /// Not settled: project the node.
    Open,
}

/// Bounds shared by one node or a block of nodes, from which "not
/// zero-risk" is proven (see [`Late::certain`]).
#[derive(Debug, Clone, Copy)]
struct Late {
    lo: f64,
    dl_min_lo: Time,
    dl_min_hi: Time,
    q_e: f64,
    rem_e: f64,
    /// Most of [`RiskSummary::q_tie`].
    q_tie: f64,
    /// Least `dl_2 - dl_min`.
    gap_2: Time,
    dl_max_lo: Time,
    dl_max_hi: Time,
    w: f64,
    /// Least `dl_max - w`: how long before its latest deadline a node
    /// would be done with the work it has.
    slack: Time,
    parts: u32,
}

impl Late {
    /// Whether every node these bounds cover, if no deadline of its parts
    /// has passed at `now`, has a deviation of deadline delays above the
    /// tolerance. The projection then starts over-committed (`Q' > 1`:
    /// every part at `q / Q'`), so the earliest deadline `e` comes first
    /// with `rem_e (1 - 1/Q')` of work left: its ratio is at least
    /// `1 + q_e (1 - 1/Q')` (less the margin). The node is
    /// work-conserving, so the latest-deadline part `L` finishes by
    /// `now + W'` (all the work): its ratio is at most
    /// `1 + max(0, W'/rd_L - 1)`. Two values `gap` apart among `n` give a
    /// population deviation of at least `gap / sqrt(2n)`. After the first
    /// event the parts still on track, needing `Q_on` of the node, get at
    /// most their `q` (their need only grows), and `e` with the parts due
    /// with it share the overdue pool `s = max(1 - Q_on, 0.05)` until the
    /// next deadline (`Delta` later): `e`'s delay is then at least
    /// `min(R / s, R + (1 - s) Delta)`, `R` its work left at its deadline.
    fn certain(&self, j: &RiskJob) -> bool {
        self.certain_inline(j)
    }

    /// [`Self::certain`] for one node's summary, `s` with `lo` for its
    /// load's lower bound: inlined where the bounds are one node's, so
    /// that the compiler sees each low end equal its high end and drops
    /// the branches and sums that only ranges need.
    fn certain_one(s: &RiskSummary, lo: f64, j: &RiskJob) -> bool {
        Late::one(s, lo).certain_inline(j)
    }

    /// The body of [`Self::certain`].
    #[inline(always)]
    fn certain_inline(&self, j: &RiskJob) -> bool {
        if !j.conserving || self.parts > RISK_PARTS_LIMIT {
            return false;
        }
        // The shortcut fails (float addition is monotone: the exact sum is
        // at least this one)...
        if !above(self.lo + j.add, 1.0 + SHARE_SUM_EPS + 1e-6) {
            return false;
        }
        // ... and the projection starts over-committed.
        let qs = (self.lo + j.x) * (1.0 - 1e-9);
        if !above(qs, 1.0 + 1e-6) {
            return false;
        }
        let c = (1.0 - 1.0 / qs) * (1.0 - 1e-9);
        // The earliest deadline: the new part's, or an old part's.
        let (mut q_e, mut rem_e) = (f64::INFINITY, f64::INFINITY);
        if j.dn <= self.dl_min_hi {
            q_e = q_e.min(j.x);
            rem_e = rem_e.min(j.est);
        }
        if j.dn > self.dl_min_lo {
            q_e = q_e.min(self.q_e);
            rem_e = rem_e.min(self.rem_e);
        }
        let (q_e, rem_e) = (q_e * (1.0 - 1e-9), rem_e * (1.0 - 1e-9));
        // Its delay, at least R = rem_e c less the margin, is beyond the
        // finish tolerance.
        let r = rem_e * c;
        if !at_least(r, 2.0 * RISK_MARGIN) {
            return false;
        }
        // r_e - 1 >= (R - margin) / rd_e = q_e c (1 - margin / R).
        let lift = q_e * c * (1.0 - RISK_MARGIN / r);
        let rd_l = self.dl_max_lo.max(j.dn) - j.now;
        if !above(rd_l, RISK_MARGIN) {
            return false;
        }
        // r_L - 1 <= max(0, W' + margin - rd_L) / rd_L, with W' + margin
        // - rd_L = est + margin + now + min(w - dl_max, w - dn) on each
        // node: at most this.
        let excess = j.est + RISK_MARGIN + j.now + (-self.slack).min(self.w - j.dn);
        let over = (excess.max(0.0) / rd_l) * (1.0 + 1e-9);
        let n1 = f64::from(self.parts + 1);
        // The deviation must exceed twice the tolerance: `gap / sqrt(2 n)
        // > 2 tol + 1e-12`, compared as `gap > (2 tol + 1e-12) sqrt(2 n)`
        // (the 1e-12 covers the product's rounding as it covered the
        // quotient's).
        let need = (2.0 * j.tol + 1e-12) * sqrt_twice(self.parts + 1);
        // Whether a lower bound `lift` of r_e - 1 proves it (increasing in
        // `lift`), with room for the ratios' and the deviation's own
        // rounding.
        let proves = |lift: f64| {
            let slack = 1e-12 * n1 * (2.0 + lift + over);
            lift - over - slack > need
        };
        if proves(lift) {
            return true;
        }
        // The parts due with `e` (the new part where it may be among them,
        // the old ones where they may be) and the time to the next
        // deadline after theirs.
        let (new_due, old_due) = (j.dn <= self.dl_min_hi, j.dn >= self.dl_min_lo);
        let mut q_tie = 0.0;
        let mut delta = Time::INFINITY;
        if new_due {
            q_tie += j.x * (1.0 + 1e-9);
            if j.dn < self.dl_min_hi {
                delta = delta.min(self.dl_min_lo - j.dn);
            }
        }
        if old_due {
            q_tie += self.q_tie;
            delta = delta.min(self.gap_2);
            if j.dn > self.dl_min_lo {
                delta = delta.min(j.dn - self.dl_min_hi);
            }
        }
        let rd_e_lo = j.dn.min(self.dl_min_lo) - j.now;
        let rd_e_hi = (j.dn.min(self.dl_min_hi) - j.now) * (1.0 + 1e-12);
        let rd_l_hi = self.dl_max_hi.max(j.dn) - j.now;
        // The on-track parts after the first event: each ran at q/Q' <
        // q, so its required share grew by the factor (rd - rd_e/Q') /
        // (rd - rd_e) >= 1 + c rd_e / rd_L.
        let on_track = (qs - q_tie) * (1.0 + c * rd_e_lo / rd_l_hi) * (1.0 - 1e-9);
        if qs > q_tie && delta > 0.0 && rd_e_lo > 0.0 {
            // Until then the on-track parts get at most their q (their
            // need only grows) and `e` at most the overdue pool, max(1 -
            // their need, 0.05) (rounding included).
            let share = (1.0 - on_track).max(0.05) * (1.0 + 1e-9) + 1e-12;
            if share < 1.0 {
                let delay = (r / share).min(r + (1.0 - share) * delta);
                return proves((delay - RISK_MARGIN) / rd_e_hi * (1.0 - 1e-9));
            }
        }
        false
    }
}

impl Late {
    /// No node: the identity of [`Self::add`].
    const EMPTY: Late = Late {
        lo: f64::INFINITY,
        dl_min_lo: Time::INFINITY,
        dl_min_hi: Time::NEG_INFINITY,
        q_e: f64::INFINITY,
        rem_e: f64::INFINITY,
        q_tie: 0.0,
        gap_2: Time::INFINITY,
        dl_max_lo: Time::INFINITY,
        dl_max_hi: Time::NEG_INFINITY,
        w: 0.0,
        slack: Time::INFINITY,
        parts: 0,
    };

    /// The bounds of node summary `s` alone, with `lo` for its load's
    /// lower bound.
    fn one(s: &RiskSummary, lo: f64) -> Late {
        Late {
            lo,
            dl_min_lo: s.dl_min,
            dl_min_hi: s.dl_min,
            q_e: s.q_e,
            rem_e: s.rem_e,
            q_tie: s.q_tie,
            gap_2: s.dl_2 - s.dl_min,
            dl_max_lo: s.dl_max,
            dl_max_hi: s.dl_max,
            w: s.w,
            slack: s.dl_max - s.w,
            parts: s.parts,
        }
    }

    /// Widens these bounds to cover node summary `s` too.
    fn add(&mut self, s: &RiskSummary) {
        self.lo = self.lo.min(s.lo);
        self.dl_min_lo = self.dl_min_lo.min(s.dl_min);
        self.dl_min_hi = self.dl_min_hi.max(s.dl_min);
        self.q_e = self.q_e.min(s.q_e);
        self.rem_e = self.rem_e.min(s.rem_e);
        self.q_tie = self.q_tie.max(s.q_tie);
        self.gap_2 = self.gap_2.min(s.dl_2 - s.dl_min);
        self.dl_max_lo = self.dl_max_lo.min(s.dl_max);
        self.dl_max_hi = self.dl_max_hi.max(s.dl_max);
        self.w = self.w.max(s.w);
        self.slack = self.slack.min(s.dl_max - s.w);
        self.parts = self.parts.max(s.parts);
    }

    /// [`Self::add`] for a node whose work with the new part is done by
    /// the new part's deadline ([`fits_by_new_deadline`]): its bound of
    /// `r_L - 1` is 0, which every other node's bound is at least, so the
    /// two numbers that enter only that bound (`w`, `slack`) are left as
    /// they are.
    fn add_fitting(&mut self, s: &RiskSummary) {
        let (w, slack) = (self.w, self.slack);
        self.add(s);
        (self.w, self.slack) = (w, slack);
    }
}

/// Whether all of node `s`'s work and the new part's, with the margin, is
/// done by the new part's deadline: `w + E + m <= dn - now`, computed as
/// [`Late::certain`] computes a node's excess (`E + m + now + min(w -
/// dl_max, w - dn)`, which float addition keeps at most this sum), so that
/// its bound of the latest-deadline part's ratio, `1 + max(0, excess) /
/// rd_L`, is exactly 1 (`rd_L >= dn - now`: the part finishing last is
/// done by `now + W'`, within its deadline).
fn fits_by_new_deadline(s: &RiskSummary, j: &RiskJob) -> bool {
    j.est + RISK_MARGIN + j.now + (s.w - j.dn) <= 0.0
}

/// Whether node `s`'s load's lower bound passes [`Late::certain`]'s first
/// two tests for `j` (the shortcut fails, the projection starts
/// over-committed), so that bounds widened by it may still pass them
/// (float addition and multiplication are monotone: the least `lo` of
/// nodes that pass, passes).
fn overcommits(s: &RiskSummary, j: &RiskJob) -> bool {
    above(s.lo + j.add, 1.0 + SHARE_SUM_EPS + 1e-6)
        && above((s.lo + j.x) * (1.0 - 1e-9), 1.0 + 1e-6)
}

/// The not-zero-risk bounds of a block of nodes, so that a job's walk
/// settles the block's busy nodes with one check and a few. A block's
/// bounds are only as strong as its weakest node, and what weakens them
/// most is a node whose work with the new part would run past its latest
/// deadline (`W' > rd_L`, which only the weaker half of the certificate
/// covers): the nodes are kept sorted by their slack `dl_max - w`, with
/// the bounds of every suffix of that order. A job of `E` seconds of work
/// at `now` checks one by one the nodes whose slack is below `now + E +
/// margin` (those may run past, unless their work with the new part is
/// done by its deadline) and the rest, for which `W' <= rd_L`, at once.
#[derive(Debug, Clone)]
pub struct BlockRisk {
    /// Busy nodes of the block not certainly past a deadline.
    live: usize,
    /// Those nodes by ascending slack, and their slacks.
    order: [u32; RISK_BLOCK],
    slack: [Time; RISK_BLOCK],
    /// `suffix[i]`: the bounds of `order[i..live]`.
    suffix: [Late; RISK_BLOCK],
    /// The nodes changed since it was computed (bit `k % RISK_BLOCK`):
    /// not 0 while it waits to be computed again.
    changed: usize,
}

impl Default for BlockRisk {
    fn default() -> Self {
        BlockRisk {
            live: 0,
            order: [0; RISK_BLOCK],
            slack: [0.0; RISK_BLOCK],
            suffix: [Late::EMPTY; RISK_BLOCK],
            changed: 0,
        }
    }
}

impl super::Bounds {
    /// Block of node `k` must be computed again.
    pub(super) fn risk_dirty(&mut self, k: usize) {
        if !self.risk_on {
            return;
        }
        let b = k / RISK_BLOCK;
        if b >= self.blocks.len() {
            self.blocks.resize(b + 1, BlockRisk::default());
        }
        if self.blocks[b].changed == 0 {
            self.blocks_dirty.push(b);
        }
        self.blocks[b].changed |= 1 << (k % RISK_BLOCK);
    }

    /// Computes the blocks changed since from their bounded nodes.
    pub(super) fn risk_blocks_renew(&mut self) {
        for b in std::mem::take(&mut self.blocks_dirty) {
            let end = ((b + 1) * RISK_BLOCK).min(self.of.len());
            let block = &mut self.blocks[b];
            let changed = std::mem::take(&mut block.changed);
            // The live nodes in their previous order first, then the new
            // ones: nearly sorted already (a decision or a report changes
            // a few nodes of a block), so an insertion sort is cheap.
            let eligible = |k: usize| {
                matches!(self.of[k].2, Filed::Ordered | Filed::Wide) && !self.risk[k].expired
            };
            let mut live = [(0.0f64, 0u32); RISK_BLOCK];
            let mut n = 0;
            let mut seen = 0u64;
            let mut take = |k: usize, n: &mut usize, seen: &mut u64| {
                let s = &self.risk[k];
                // A NaN slack (infinite work and deadline, from inputs out
                // of range) is taken as below every job's: its node is then
                // checked alone, where its infinite excess fails the
                // certificate, rather than joining bounds that `min` would
                // let it slip out of.
                let slack = s.dl_max - s.w;
                live[*n] = (
                    if slack.is_nan() {
                        Time::NEG_INFINITY
                    } else {
                        slack
                    },
                    k as u32,
                );
                *n += 1;
                *seen |= 1 << (k % RISK_BLOCK);
            };
            for &k in &block.order[..block.live] {
                let k = k as usize;
                if k < end && eligible(k) {
                    take(k, &mut n, &mut seen);
                }
            }
            for k in b * RISK_BLOCK..end {
                if seen & (1 << (k % RISK_BLOCK)) == 0 && eligible(k) {
                    take(k, &mut n, &mut seen);
                }
            }
            let live = &mut live[..n];
            for i in 1..n {
                let mut at = i;
                while at > 0 && live[at - 1].0.total_cmp(&live[at].0).is_gt() {
                    live.swap(at - 1, at);
                    at -= 1;
                }
            }
            // From `keep` on, the order holds the same nodes as before,
            // none changed: their suffix bounds stand as computed (the same
            // additions in the same order), and the rest go on from them.
            let mut keep = n;
            if n == block.live {
                while keep > 0
                    && block.order[keep - 1] == live[keep - 1].1
                    && changed & (1 << (live[keep - 1].1 as usize % RISK_BLOCK)) == 0
                {
                    keep -= 1;
                }
            }
            let mut acc = if keep < n {
                block.suffix[keep]
            } else {
                Late::EMPTY
            };
            for (i, &(slack, k)) in live[..keep].iter().enumerate().rev() {
                acc.add(&self.risk[k as usize]);
                block.suffix[i] = acc;
                block.order[i] = k;
                block.slack[i] = slack;
            }
            block.live = n;
            #[cfg(debug_assertions)]
            {
                let mut all = Late::EMPTY;
                for (i, &(_, k)) in live.iter().enumerate().rev() {
                    all.add(&self.risk[k as usize]);
                    debug_assert_eq!(
                        format!("{:?}", block.suffix[i]),
                        format!("{all:?}"),
                        "block {b}: the suffix bounds at {i} kept from before differ from computing them anew"
                    );
                }
            }
        }
    }
}

impl BusyIndex {
    /// Blocks of [`RISK_BLOCK`] node indices (the last may be partial).
    pub fn risk_blocks(&self) -> usize {
        self.busy.bits.len().div_ceil(RISK_BLOCK)
    }

    /// The busy nodes of block `b`, a bit each (node `b * RISK_BLOCK + i`
    /// at bit `i`).
    pub fn busy_word(&self, b: usize) -> usize {
        self.busy.bits.as_slice().get(b).copied().unwrap_or(0)
    }

    /// Settles the busy nodes of block `b` for `j` (bounds up to date:
    /// [`Self::bounded`]) from the block's bounds: `false` when they do
    /// not hold (the caller settles every node of the block alone), else
    /// every busy node of the block is certainly not zero-risk except the
    /// ones put into `open` with their own verdict (not [`Verdict::NotZero`]),
    /// ascending: the very verdict [`Self::risk_verdict`] gives them, so
    /// the caller need not ask again. The nodes whose slack is below the job's work are
    /// settled with the rest at once when their work with the new part is
    /// done by the new part's deadline ([`fits_by_new_deadline`]), else
    /// one by one.
    pub fn risk_block(&self, b: usize, j: &RiskJob, open: &mut Vec<(usize, Verdict)>) -> bool {
        open.clear();
        let Some(block) = self.bounds.blocks.get(b) else {
            return true;
        };
        let n = block.live;
        // The nodes from `i` on have slack enough for the new part's work
        // (`W' <= rd_L`): their bounds hold together.
        // A scan from the start rather than a binary search: the nodes
        // below are a few (~6 of a block's ~64 at 158,976 nodes), so it
        // reads the first few slacks in sequence where a search makes six
        // probes across the array.
        let below = j.now + j.est + RISK_MARGIN;
        let i = block.slack[..n]
            .iter()
            .position(|s| !s.lt(&below))
            .unwrap_or(n);
        let suffix = if i < n { block.suffix[i] } else { Late::EMPTY };
        let whole = i == n || suffix.certain(j);
        // Should the suffix's bounds not hold, a node whose load's lower
        // bound leaves room for the job (the one that may be zero-risk,
        // and whose `lo` weakens the bounds of all) is taken out, and the
        // rest are bounded anew below, on the fly.
        let mut joint = if whole { suffix } else { Late::EMPTY };
        // Nodes (bits by rank in the slack order) settled one by one, and
        // the nodes the joint bounds cover.
        let (mut alone, mut joined) = (0usize, 0usize);
        for (at, &k) in block.order[..n].iter().enumerate() {
            if whole && at >= i {
                break;
            }
            let s = &self.bounds.risk[k as usize];
            if !whole && !overcommits(s, j) {
                alone |= 1 << at;
            } else if at >= i {
                joint.add(s);
                joined |= 1 << at;
            } else if fits_by_new_deadline(s, j) {
                // Of the nodes below the slack the new part's work needs,
                // those whose work with the new part is done by the new
                // part's deadline have their latest part on time too.
                joint.add_fitting(s);
                joined |= 1 << at;
            } else {
                alone |= 1 << at;
            }
        }
        if joined != 0 && !joint.certain(j) {
            if !whole {
                return false;
            }
            // Every node below the suffix, one by one.
            alone |= joined;
        }
        if !whole && joined == 0 {
            return false;
        }
        while alone != 0 {
            let at = alone.trailing_zeros() as usize;
            let k = block.order[at] as usize;
            alone &= alone - 1;
            // Its summary's own bounds first: they settle most such nodes
            // without a read of its load's bound. The certificate's proof
            // assumes no deadline of the node's has passed at `now`; if one
            // has, the projection refuses the node, which is not zero-risk
            // either: so the node is not zero-risk in both cases.
            let s = &self.bounds.risk[k];
            if Late::certain_one(s, s.lo, j) {
                continue;
            }
            let v = self.verdict_past(k, j, s.lo);
            if v != Verdict::NotZero {
                open.push((k, v));
            }
        }
        open.sort_unstable_by_key(|o| o.0);
        true
    }

    /// What the certificates say of bounded busy node `k` for `j`.
    pub fn risk_verdict(&self, k: usize, j: &RiskJob) -> Verdict {
        self.verdict_past(k, j, f64::NAN)
    }

    /// [`Self::risk_verdict`], knowing that the late certificate already
    /// failed on the node's kept numbers with `tried` for the load's lower
    /// bound (NaN: not tried): it is not computed again on the very same
    /// inputs.
    fn verdict_past(&self, k: usize, j: &RiskJob, tried: f64) -> Verdict {
        let s = &self.bounds.risk[k];
        let lb = &self.bounds.of[k].0;
        let now = j.now;
        // A part's deadline already passed: the projection refuses the
        // node (never zero-risk).
        if s.dl_min - now <= TIME_EPS {
            return Verdict::NotZero;
        }
        let (mut lo, mut hi) = (lb.lo, lb.hi);
        if let Some((l, h)) = lb.line.band(now) {
            lo = lo.max(l);
            hi = hi.min(h);
        }
        // The shortcut's own test on an upper bound of the load (float
        // addition is monotone): it holds.
        if j.shortcut && hi + j.add <= 1.0 + SHARE_SUM_EPS {
            return Verdict::Zero;
        }
        if lo != tried && Late::certain_one(s, lo, j) {
            Verdict::NotZero
        } else {
            Verdict::Open
        }
    }

    /// [`Self::risk_verdict`] for a node it leaves open, from the node's
    /// parts at `now` (its [`PartFn`]s, exact) rather than from bounds:
    /// the shortcut's own test on the exact load, and the late certificate
    /// with the overdue pool followed deadline by deadline. After the
    /// first deadline `e` is overdue, so every part on track gets at most
    /// its `q` (its need only grows) and leaves the track only at its
    /// deadline: until `e` is done, the parts due after an instant need
    /// at least their `q` at `now` added up, `S`, and `e` gets at most
    /// `max(1 - S, 0.05)`. Its work left at its deadline, `rem_e (1 -
    /// 1/Q')`, then takes at least the time this share bound allows,
    /// segment by segment between the deadlines.
    pub fn risk_refined(&self, k: usize, j: &RiskJob) -> Verdict {
        refined_verdict(self.part_fns(k), j)
    }

    /// Bounded node `k`'s parts' [`PartFn`]s, in the order of its parts.
    pub fn part_fns(&self, k: usize) -> &[PartFn] {
        debug_assert!(matches!(self.bounds.of[k].2, Filed::Ordered | Filed::Wide));
        let (start, count) = self.bounds.fn_at[k];
        &self.bounds.fns[start as usize..(start + count) as usize]
    }

    /// Bounded node `k`, whose view is `from`, into `node` as brought to
    /// `now` from the index's record of its parts ([`PartFn::cpu_done_at`]:
    /// bit for bit the refresh's dead reckoning), for an exact check.
    pub fn carried_to(
        &self,
        k: usize,
        now: Time,
        from: &crate::node_model::NodeState,
        node: &mut crate::node_model::NodeState,
    ) {
        node.clone_from(from);
        for (p, f) in node.parts.iter_mut().zip(self.part_fns(k)) {
            p.cpu_done = f.cpu_done_at(now);
        }
    }
}

/// [`BusyIndex::risk_refined`]'s verdict for a node whose parts at `j.now`
/// are `fns` (exact there: the index's record brought to the instant, or
/// a node's parts as they stand, [`PartFn::standing`]).
pub fn refined_verdict(fns: &[PartFn], j: &RiskJob) -> Verdict {
    let now = j.now;
    if fns.iter().any(|f| f.deadline - now <= TIME_EPS) {
        return Verdict::NotZero;
    }
    // Bit for bit the node's required share at `now`.
    let load: f64 = fns.iter().map(|f| f.required(now)).sum();
    if j.shortcut && load + j.add <= 1.0 + SHARE_SUM_EPS {
        return Verdict::Zero;
    }
    if !j.conserving {
        return Verdict::Open;
    }
    // The parts' numbers are kept on the stack: in a short array for
    // the usual node (the long one costs its zeroing on every call).
    if fns.len() < 16 {
        refined_late::<16>(fns, load, j)
    } else if fns.len() < 64 {
        refined_late::<64>(fns, load, j)
    } else {
        Verdict::Open
    }
}

/// The late certificate of [`BusyIndex::risk_refined`] on a node with
/// parts `fns` (fewer than `N`) whose required share at `now` is `load`.
fn refined_late<const N: usize>(fns: &[PartFn], load: f64, j: &RiskJob) -> Verdict {
    let now = j.now;
    let qs = (load + j.x) * (1.0 - 1e-12);
    if !above(qs, 1.0 + 1e-6) {
        return Verdict::Open;
    }
    let c = (1.0 - 1.0 / qs) * (1.0 - 1e-9);
    // The projection's parts (work left above 1e-6 s) and the new one:
    // (deadline, q, work left).
    let mut parts = [(0.0f64, 0.0f64, 0.0f64); N];
    let mut n = 0;
    let mut w = j.est;
    for f in fns {
        let rem = f.est_cpu - f.cpu_done_at(now);
        if rem > TIME_EPS {
            parts[n] = (f.deadline, f.required(now), rem);
            n += 1;
            w += rem;
        }
    }
    parts[n] = (j.dn, j.x, j.est);
    n += 1;
    let parts = &mut parts[..n];
    parts.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
    let d_e = parts[0].0;
    let due = parts.iter().take_while(|p| p.0 == d_e).count();
    let rem_e = parts[..due].iter().map(|p| p.2).fold(0.0f64, f64::max);
    let mut need = rem_e * c;
    if !at_least(need, 2.0 * RISK_MARGIN) {
        return Verdict::Open;
    }
    need *= 1.0 - 1e-9;
    // The share bound, segment by segment.
    let mut on_track: f64 = parts[due..].iter().map(|p| p.1).sum();
    let (mut at, mut i, mut late) = (d_e, due, 0.0f64);
    loop {
        let share = ((1.0 - on_track * (1.0 - 1e-9)).max(0.05) * (1.0 + 1e-9) + 1e-12).min(1.0);
        let next = if i < n { parts[i].0 } else { Time::INFINITY };
        let span = next - at;
        if share * span >= need {
            late += need / share;
            break;
        }
        need -= share * span;
        late += span;
        at = next;
        while i < n && parts[i].0 == next {
            on_track -= parts[i].1;
            i += 1;
        }
        if i == n {
            on_track = 0.0;
        }
    }
    let rd_e = (d_e - now) * (1.0 + 1e-12);
    let lift = (late - RISK_MARGIN) / rd_e * (1.0 - 1e-9);
    let rd_l = parts[n - 1].0 - now;
    let over = ((w + RISK_MARGIN - rd_l).max(0.0) / rd_l) * (1.0 + 1e-9);
    let n1 = (fns.len() + 1) as f64;
    let slack = 1e-12 * n1 * (2.0 + lift + over);
    if lift - over - slack > (2.0 * j.tol + 1e-12) * sqrt_twice(fns.len() as u32 + 1) {
        Verdict::NotZero
    } else {
        Verdict::Open
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::JobSpec;
    use crate::node_model::NodeState;
    use crate::policy::test_util::{busy, job, nodes};
    use crate::policy::{LibraRisk, PolicyConfig};

    /// The index of `view` with bounds from each node's exact load at 0
    /// (no reports: the parts stand still; the tests decide at 0 only).
    fn bounded(view: &[NodeState]) -> BusyIndex {
        let mut ix = BusyIndex::of(view);
        ix.keep_risk(true);
        crate::policy::test_util::rebound_exact_at_zero(&mut ix, view);
        ix
    }

    fn at_zero(j: &JobSpec) -> RiskJob {
        at_zero_within(j, 1e-9)
    }

    /// [`at_zero`] at risk tolerance `tol`.
    fn at_zero_within(j: &JobSpec, tol: f64) -> RiskJob {
        RiskJob::new(
            0.0,
            j.estimate(),
            j.qos.deadline,
            j.deadline_abs(),
            tol,
            true,
            true,
        )
        .expect("numbers in range")
    }

    #[test]
    fn an_over_committed_node_is_certainly_not_zero_risk() {
        // Node 0 holds A: 100 s of work, deadline 250 (q = 0.4). Job B:
        // RE 120, D 150 (q = 0.8). The shortcut fails (0.4 + 0.8 > 1) and
        // the projection starts over-committed, Q' = 1.2: A gets 1/3 and B
        // 2/3 until B's deadline, the earliest, at 150, where B has done
        // 100 and has 120 (1 - 1/1.2) = 20 s left: its delay is at least
        // 20 s, its ratio at least 1 + 0.8 (1 - 1/1.2) = 1.1333. All the
        // work, 220 s, is done by 220 < 250: A, the latest deadline, is on
        // time (ratio 1). Two values 0.1333 apart among 2: sigma >= 0.1333
        // / sqrt(4) = 0.0667, far above 1e-9: not zero-risk.
        let mut view = nodes(2);
        busy(&mut view[0], 10, 100.0, 250.0);
        let ix = bounded(&view);
        let b = job(1, 120.0, 1, 150.0, 1e9);
        assert_eq!(ix.risk_verdict(0, &at_zero(&b)), Verdict::NotZero);
        // The projection: from 150, B (overdue) gets the pool 1 - 0.5 and
        // A its q = 50/100, so B's 20 s end at 190 (ratio 190/150) and A,
        // alone from then on at share 1, ends at 220 (ratio 1): sigma =
        // (190/150 - 1) / 2 = 0.1333.
        let mut r = LibraRisk::new(PolicyConfig::default());
        let s = r.risk(0.0, &view[0], &b).expect("no deadline passed");
        assert!((s - (190.0 / 150.0 - 1.0) / 2.0).abs() < 1e-9, "{s}");
        // Node 1 is idle: the block's one busy node is settled whole, by
        // the block's bounds (its slack, 250 - 100, covers B's 120 s).
        let mut open = Vec::new();
        assert!(ix.risk_block(0, &at_zero(&b), &mut open) && open.is_empty());
        // From the parts, segment by segment: after 150 A needs at least
        // its 0.4, so B gets at most 0.6 and its 20 s take at least 33.3 s:
        // ratio >= 1 + 33.3/150.
        assert_eq!(ix.risk_refined(0, &at_zero(&b)), Verdict::NotZero);

        // A job of q = 0.5 fits beside A (0.4 + 0.5 <= 1): the shortcut,
        // zero-risk.
        let c = job(2, 75.0, 1, 150.0, 1e9);
        assert_eq!(ix.risk_verdict(0, &at_zero(&c)), Verdict::Zero);
        assert!(r.zero_risk(0.0, &view[0], &c));
        assert!(!ix.risk_block(0, &at_zero(&c), &mut open));
        assert_eq!(ix.risk_refined(0, &at_zero(&c)), Verdict::Zero);
    }

    /// A node's kept numbers over a window that does not start at 0 (the
    /// other tests bound at 0), [100, 110]. Part A: 100 s of work, 40 done
    /// when reported at 100 at share 0.5 (so 45 done at 110), due at 400.
    /// Part B: 50 s, none done, no report, due at 500. Each number is
    /// taken at the end of the window that makes it safe: the work left
    /// `w` at 100 (60 + 50, with its rounding room), A's work left at 110
    /// (55) over its deadline's distance from 100 for the least share it
    /// needs, q_e = 55 / 300, and its work left at 100 over the distance
    /// from 110 for the most, q_tie = 60 / 290 (with 1e-9 of room). The
    /// next deadline after A's is B's. A part due within `TIME_EPS` of the
    /// window's start (here exactly 1e-6 s after it) is past at every
    /// instant of the window and gives no share.
    #[test]
    fn a_nodes_kept_numbers_are_those_of_its_window() {
        let a = PartFn {
            est_cpu: 100.0,
            cpu_done: 40.0,
            share: 0.5,
            at: 100.0,
            deadline: 400.0,
            hard: false,
        };
        let b = PartFn {
            est_cpu: 50.0,
            cpu_done: 0.0,
            share: 0.0,
            at: Time::NAN,
            deadline: 500.0,
            hard: false,
        };
        let lb = LoadBound {
            lo: 0.3,
            hi: 0.31,
            line: super::super::LoadLine::NONE,
        };
        let s = RiskSummary::of(&[a, b], 100.0, 110.0, &lb);
        assert_eq!(s.rem_e, 55.0);
        assert!((s.q_e - 55.0 / 300.0).abs() < 1e-12, "{}", s.q_e);
        assert!(
            (s.q_tie - 60.0 / 290.0 * (1.0 + 1e-9)).abs() < 1e-12,
            "{}",
            s.q_tie
        );
        assert!(
            (s.w - (110.0 * (1.0 + 1e-12) + 1e-9)).abs() < 1e-12,
            "{}",
            s.w
        );
        assert_eq!((s.dl_min, s.dl_2, s.dl_max), (400.0, 500.0, 500.0));
        assert_eq!((s.parts, s.expired, s.lo), (2, false, 0.3));
        // 1e-6 - 0 is TIME_EPS exactly.
        let due = PartFn {
            deadline: 1e-6,
            ..b
        };
        let s = RiskSummary::of(&[due], 0.0, 0.0, &lb);
        assert!(s.expired);
        assert_eq!(
            (s.q_e, s.q_tie, s.dl_2),
            (0.0, f64::INFINITY, f64::INFINITY)
        );
    }

    #[test]
    fn sqrt_twice_is_the_square_root_of_twice_n_beyond_its_table_too() {
        for n in 0..RISK_PARTS_LIMIT + 100 {
            assert_eq!(
                sqrt_twice(n).to_bits(),
                (2.0 * f64::from(n)).sqrt().to_bits(),
                "{n}"
            );
        }
    }

    #[test]
    fn the_deviation_is_the_gap_over_the_root_of_twice_the_parts() {
        // The node and job B of the test above, at a tolerance where the
        // factor sqrt(2n) = 2 (A and B) decides. From the kept numbers:
        // B's ratio is at least 1 + 0.1333 from its work left (20 s), and
        // after B's deadline A needs 0.4 (1 + (1 - 1/1.2) 150/250) = 0.44
        // at least, so B gets at most 0.56 and its 20 s take 35.71 s (the
        // next deadline, A's, 100 s on): ratio >= 1 + 35.71/150 = 1.2381.
        // A ends by 220 < 250: ratio 1. A gap of 0.2381 proves a deviation
        // above 2 tol when 0.2381 / 2 > 2 tol: at tol 0.05, not at 0.07.
        // From the parts, B gets at most 1 - 0.4 = 0.6: 33.33 s, a gap of
        // 0.2222, proven at 0.05 (0.1111 > 0.1), not at 0.07.
        let mut view = nodes(1);
        busy(&mut view[0], 10, 100.0, 250.0);
        let ix = bounded(&view);
        let b = job(1, 120.0, 1, 150.0, 1e9);
        let at = |tol: f64| at_zero_within(&b, tol);
        assert_eq!(ix.risk_verdict(0, &at(0.05)), Verdict::NotZero);
        assert_eq!(ix.risk_refined(0, &at(0.05)), Verdict::NotZero);
        assert_eq!(ix.risk_verdict(0, &at(0.07)), Verdict::Open);
        assert_eq!(ix.risk_refined(0, &at(0.07)), Verdict::Open);
        // The projection's deviation, 0.1333 (above), is above both: the
        // certificates only fail to prove it at 0.07.
        let mut r = LibraRisk::new(PolicyConfig {
            risk_tolerance: 0.07,
            ..PolicyConfig::default()
        });
        assert!(!r.zero_risk(0.0, &view[0], &b));
    }

    /// The kept numbers of node 0 of `view`, bounded at 0.
    fn kept(view: &[NodeState]) -> RiskSummary {
        bounded(view).bounds.risk[0]
    }

    #[test]
    fn the_certificate_needs_a_conserving_rule_and_at_most_its_parts_limit() {
        // Node A and job B of the first test, proven not zero-risk. The
        // proof takes the node to hand all of its capacity to its parts
        // (the proportional and highest-return spare rules), and its
        // rounding margins to hold for up to RISK_PARTS_LIMIT parts: under
        // another spare rule, or with one part more, it proves nothing and
        // the node is projected.
        let mut view = nodes(1);
        busy(&mut view[0], 10, 100.0, 250.0);
        let s = kept(&view);
        let j = at_zero(&job(1, 120.0, 1, 150.0, 1e9));
        assert!(Late::certain_one(&s, s.lo, &j));
        let idle = RiskJob {
            conserving: false,
            ..j
        };
        assert!(!Late::certain_one(&s, s.lo, &idle));
        let at_limit = RiskSummary {
            parts: RISK_PARTS_LIMIT,
            ..s
        };
        assert!(Late::certain_one(&at_limit, s.lo, &j));
        let beyond = RiskSummary {
            parts: RISK_PARTS_LIMIT + 1,
            ..s
        };
        assert!(!Late::certain_one(&beyond, s.lo, &j));
    }

    #[test]
    fn a_job_the_shortcut_admits_is_never_proven_not_zero_risk() {
        // Node A: a part with 95 s of work left, due at 200; at 10 it needs
        // 95 / 190 = 0.5 of the node. Job B, submitted at 0: RE 50, D 100,
        // so the shortcut adds 50 / 100 = 0.5: 0.5 + 0.5 = 1, zero-risk.
        // Decided at 10, B's part needs 50 / 90 = 0.556 to make its
        // deadline, so the projection starts over-committed (Q' = 1.056)
        // and the rest of the certificate would prove B late by at least
        // 50 (1 - 1/1.056) = 2.6 s, A on time (all 145 s of work done by
        // 155 < 200). Only its first test, the shortcut failing on the
        // load's lower bound, keeps it off a node that is zero-risk.
        let (node, fns) = standing_node(&[(95.0, 200.0)]);
        let s = kept_of(&fns, 10.0, 0.5);
        let b = job(1, 50.0, 1, 100.0, 1e9);
        let j = RiskJob::new(10.0, 50.0, 100.0, b.deadline_abs(), 1e-9, true, true)
            .expect("numbers in range");
        assert!((j.add, j.x) == (0.5, 50.0 / 90.0));
        assert!(!Late::certain_one(&s, s.lo, &j));
        let mut r = LibraRisk::new(PolicyConfig::default());
        assert!(r.zero_risk(10.0, &node, &b));
        // Nor where the load may be 5e-10 more: the shortcut admits a sum
        // within SHARE_SUM_EPS (1e-9) of 1.
        assert!(!Late::certain_one(&s, 0.5 + 5e-10, &j));
        // With a load of at least 0.51 the shortcut fails for certain
        // (1.01 > 1), Q' = 1.066, and the same numbers prove B late.
        assert!(Late::certain_one(&s, 0.51, &j));
    }

    #[test]
    fn an_earliest_delay_within_twice_the_margin_proves_nothing() {
        // Node A: 99 s of work due at 100 (q = 0.99). Job C: RE 12.5 ms,
        // D 0.1 s (q = 0.125). Q' = 1.115: C gets 0.125 / 1.115 of the node
        // until its deadline and is left with 12.5 ms (1 - 1/1.115) = 1.29
        // ms of work, so it is late. The certificate wants that work
        // beyond twice its 1 ms margin before it takes a ratio from it
        // (its lower bound of C's delay, the work less the margin, is
        // 0.29 ms here): it leaves the node to the projection, which finds
        // C late and the node not zero-risk (A, all 99.0125 s done by
        // 100, is on time).
        let mut view = nodes(1);
        busy(&mut view[0], 10, 99.0, 100.0);
        let s = kept(&view);
        let c = job(2, 0.0125, 1, 0.1, 1e9);
        let j = at_zero(&c);
        assert!(!Late::certain_one(&s, s.lo, &j));
        let ix = bounded(&view);
        assert_eq!(ix.risk_verdict(0, &j), Verdict::Open);
        let mut r = LibraRisk::new(PolicyConfig::default());
        assert!(!r.zero_risk(0.0, &view[0], &c));
    }

    #[test]
    fn a_new_part_due_with_an_old_one_proves_it_with_its_own_share() {
        // Node A: part A, 10 s due at 150 (q = 0.0667), and part C, 50 s
        // due at 1000 (q = 0.05). Job B: RE 141, D 150 (q = 0.94), due with
        // A. Q' = 1.0567, so by 150 B is left with 141 (1 - 1/1.0567) =
        // 7.56 s: its ratio is at least 1 + 0.94 (1 - 1/1.0567) = 1.0504.
        // All 201 s of work are done by 201 < 1000: C, the latest, is on
        // time. A gap of 0.0504 among 3 parts proves a deviation above
        // twice a tolerance of 0.005 (0.0504 > 0.01 sqrt(6) = 0.0245).
        // Either part due at 150 may stand for the earliest deadline: A,
        // with 10 (1 - 1/1.0567) = 0.54 s left, would prove only 0.0036
        // (and its pool bound 0.0038): not enough.
        let mut view = nodes(1);
        busy(&mut view[0], 10, 10.0, 150.0);
        busy(&mut view[0], 11, 50.0, 1000.0);
        let ix = bounded(&view);
        let b = job(1, 141.0, 1, 150.0, 1e9);
        let j = at_zero_within(&b, 0.005);
        assert_eq!(ix.risk_verdict(0, &j), Verdict::NotZero);
        let mut r = LibraRisk::new(PolicyConfig {
            risk_tolerance: 0.005,
            ..PolicyConfig::default()
        });
        assert!(!r.zero_risk(0.0, &view[0], &b));
        // After 150, with A and B both overdue, C needs at least 0.05 (1 +
        // (1 - 1/1.0567) 150/1000) = 0.0504, so B gets at most 0.9496 until
        // C's deadline, 850 s on: its delay is at least 7.56 / 0.9496 =
        // 7.96 s, a ratio of 1 + (7.96 - 0.001) / 150 = 1.0531. That
        // proves tolerances below 0.0531 / (2 sqrt(6)) = 0.01083, where
        // B's work left at 150 alone proves those below 0.01029: 0.0105
        // is proven from the next deadline after the tie's.
        assert_eq!(
            ix.risk_verdict(0, &at_zero_within(&b, 0.0105)),
            Verdict::NotZero
        );
        assert_eq!(
            ix.risk_verdict(0, &at_zero_within(&b, 0.011)),
            Verdict::Open
        );
    }

    #[test]
    fn a_latest_part_run_late_narrows_the_gap_from_now_on() {
        // Decided at 100, not 0. Node A: part A, 10.4 s of work due at 204
        // (q = 0.1). Job B, submitted at 100: RE 95, D 100 (x = 0.95), due at
        // 200. Q' = 1.05: by 200 B is left with 95 (1 - 1/1.05) = 4.524 s.
        // After 200 A needs at least 0.1 (1 + (1 - 1/1.05) 100/104) =
        // 0.1046, so B gets at most 0.8954 until A's deadline, 4 s on: its
        // delay is at least min(4.524 / 0.8954, 4.524 + 0.1046 x 4) =
        // 4.942 s, its ratio at least 1 + (4.942 - 0.001) / 100 = 1.0494.
        // All 105.4 s of work end by 205.4: A, the latest, may be late by
        // 1.4 s (and the 1 ms margin), a ratio of at most 1 + 1.401 / 104 =
        // 1.0135. A gap of 0.0359 among 2 parts proves a deviation above
        // twice the tolerance below 0.0359 / 4 = 0.00898: at 0.0085, not
        // at 0.0095.
        let (_, fns) = standing_node(&[(10.4, 204.0)]);
        let s = kept_of(&fns, 100.0, 0.1);
        let at = |tol: f64| {
            RiskJob::new(100.0, 95.0, 100.0, 200.0, tol, true, true).expect("numbers in range")
        };
        assert!(Late::certain_one(&s, s.lo, &at(0.0085)));
        assert!(!Late::certain_one(&s, s.lo, &at(0.0095)));
        // From the parts, A's need as it is at 100, 0.1: B gets 0.9 for the
        // 4 s to A's deadline (3.6 of its 4.524 s) and then the whole node:
        // a delay of 4.924 s, a ratio of 1 + 4.923 / 100 = 1.04923, a gap of
        // 0.03576: proven below 0.00894, at 0.0085, not at 0.0095.
        assert_eq!(refined_verdict(&fns, &at(0.0085)), Verdict::NotZero);
        assert_eq!(refined_verdict(&fns, &at(0.0095)), Verdict::Open);
    }

    /// A node holding parts `(work left, deadline)` that stand still (no
    /// report), and the index's record of them.
    fn standing_node(parts: &[(f64, Time)]) -> (NodeState, Vec<PartFn>) {
        let mut view = nodes(1);
        for (i, &(rem, dl)) in parts.iter().enumerate() {
            busy(&mut view[0], 10 + i as u64, rem, dl);
        }
        let node = view.remove(0);
        let fns = node.parts.iter().map(PartFn::standing).collect();
        (node, fns)
    }

    /// The kept numbers of parts `fns` at `now` under a flat load bound
    /// `lo`.
    fn kept_of(fns: &[PartFn], now: Time, lo: f64) -> RiskSummary {
        let lb = LoadBound {
            lo,
            hi: lo,
            line: super::super::LoadLine::NONE,
        };
        RiskSummary::of(fns, now, now, &lb)
    }

    /// [`kept_of`] a [`standing_node`].
    fn kept_at(now: Time, parts: &[(f64, Time)], lo: f64) -> RiskSummary {
        kept_of(&standing_node(parts).1, now, lo)
    }

    #[test]
    fn the_new_part_overdue_takes_the_pool_until_the_next_deadline() {
        // Decided at 100. Node A: part A, 55 s of work due at 210 (q = 0.5).
        // Job B, submitted at 100: RE 60, D 100 (x = 0.6), due at 200. Q' =
        // 1.1: by 200 B is left with 60 (1 - 1/1.1) = 5.4545 s. After 200
        // A needs at least 0.5 (1 + (1 - 1/1.1) 100/110) = 0.5413, so B
        // gets at most 0.4587 until A's deadline, 10 s on: B's delay is
        // at least min(5.4545 / 0.4587, 5.4545 + 0.5413 x 10) = min(11.89,
        // 10.868) = 10.868 s, its ratio at least 1 + (10.868 - 0.001) / 100
        // = 1.10867. All 115 s of work end by 215: A may be late by 5 s,
        // a ratio of at most 1 + 5.001 / 110 = 1.04546. A gap of 0.06320
        // among 2 parts proves a deviation above twice a tolerance below
        // 0.0158: at 0.0157, not at 0.017 (which the pool's bound without
        // A's deadline, 11.89 s, would prove).
        let s = kept_at(100.0, &[(55.0, 210.0)], 0.5);
        let at = |tol: f64| {
            RiskJob::new(100.0, 60.0, 100.0, 200.0, tol, true, true).expect("numbers in range")
        };
        assert!(Late::certain_one(&s, s.lo, &at(0.0157)));
        assert!(!Late::certain_one(&s, s.lo, &at(0.017)));
    }

    #[test]
    fn an_old_part_overdue_takes_the_pool_until_the_new_deadline() {
        // Decided at 100. Node A: part A, 30 s due at 150 (q = 0.6), and
        // part C, 20 s due at 300 (q = 0.1). Job B, submitted at 100: RE
        // 20.8, D 52 (x = 0.4), due at 152. Q' = 1.1: A, the earliest, is
        // left with 30 (1 - 1/1.1) = 2.727 s at 150. After 150 the parts
        // on track, B and C, need at least (0.4 + 0.1) (1 + (1 - 1/1.1)
        // 50/200) = 0.5114, so A gets at most 0.4886 until B's deadline,
        // 2 s on: its delay is at least min(2.727 / 0.4886, 2.727 + 0.5114
        // x 2) = min(5.58, 3.75) = 3.75 s, its ratio at least 1 + (3.75 -
        // 0.001) / 50 = 1.07498. All 70.8 s of work end by 170.8 < 300: C,
        // the latest, is on time. A gap of 0.07498 among 3 parts proves a
        // deviation above twice a tolerance below 0.07498 / (2 sqrt(6)) =
        // 0.01531: at 0.015, not at 0.016 (which the pool's bound until
        // C's deadline would prove).
        let s = kept_at(100.0, &[(30.0, 150.0), (20.0, 300.0)], 0.7);
        let at = |tol: f64| {
            RiskJob::new(100.0, 20.8, 52.0, 152.0, tol, true, true).expect("numbers in range")
        };
        assert!(Late::certain_one(&s, s.lo, &at(0.015)));
        assert!(!Late::certain_one(&s, s.lo, &at(0.016)));
        // From the parts, their needs as they are at 100: A gets 1 - (0.4 +
        // 0.1) = 0.5 for the 2 s to B's deadline (1 of its 2.727 s), then
        // 1 - 0.1 = 0.9 while C is on track, for the 1.727 s left: 1.919 s.
        // A delay of 3.919 s, a ratio of 1 + 3.918 / 50 = 1.07836: proven
        // below 0.07836 / (2 sqrt(6)) = 0.0160, at 0.0155, not at 0.0165.
        let (_, fns) = standing_node(&[(30.0, 150.0), (20.0, 300.0)]);
        assert_eq!(refined_verdict(&fns, &at(0.0155)), Verdict::NotZero);
        assert_eq!(refined_verdict(&fns, &at(0.0165)), Verdict::Open);
    }

    #[test]
    fn a_block_whose_earliest_deadlines_straddle_the_new_one_is_settled_whole() {
        // Node 0: a part of 0.1 s due at 0.2 (q = 0.5) and one of 150 s due
        // at 1000 (q = 0.15); node 1: 0.11 s due at 0.22 (q = 0.5) and the
        // same 150 s. Job C: RE 84 ms, D 0.21 s (q = 0.4), due between the
        // nodes' earliest deadlines, so the pool's bound (which needs the
        // time from the earliest deadline to the next) does not apply to
        // the block's bounds, only the first half. Least load 0.65: Q' >=
        // 1.05 on both. The earliest deadline's least share and least work
        // left among C's and the nodes' own: 0.4 and 84 ms, so at its
        // deadline it is left with R = 84 ms (1 - 1/1.05) = 4 ms at least,
        // a delay of at least R less the 1 ms margin: a ratio of at least 1
        // + 0.4 (1 - 1/1.05) (1 - 1/4) = 1.01429. All ~150.3 s of work end
        // long before 1000: the latest is on time. A gap of 0.01429 among
        // 3 parts proves a deviation above twice a tolerance below 0.01429
        // / (2 sqrt(6)) = 0.00292: at 0.0027 the block is settled whole,
        // at 0.0031 it is not (the 1 ms margin taken off R is a quarter of
        // it here).
        let mut view = nodes(2);
        busy(&mut view[0], 10, 0.1, 0.2);
        busy(&mut view[0], 11, 150.0, 1000.0);
        busy(&mut view[1], 12, 0.11, 0.22);
        busy(&mut view[1], 13, 150.0, 1000.0);
        let ix = bounded(&view);
        let c = job(1, 0.084, 1, 0.21, 1e9);
        let mut open = Vec::new();
        assert!(ix.risk_block(0, &at_zero_within(&c, 0.0027), &mut open));
        assert!(open.is_empty(), "{open:?}");
        assert!(!ix.risk_block(0, &at_zero_within(&c, 0.0031), &mut open));
    }

    #[test]
    fn the_margin_comes_off_the_pools_delay() {
        // The test above at a thousandth of the scale, where the 1 ms
        // margin is a tenth of the delay. Node A: 55 ms of work due at
        // 110 ms (q = 0.5). Job C: RE 60 ms, D 100 ms (x = 0.6). Q' = 1.1: C
        // is left with 5.4545 ms at 100 ms; A then needs at least 0.5413, so
        // C's delay is at least min(5.4545 / 0.4587, 5.4545 + 0.5413 x 10)
        // = 10.868 ms, its ratio at least 1 + (10.868 - 1) / 100 =
        // 1.09868. All 115 ms of work end at 115 ms: A may be late by 5 ms
        // and the margin, a ratio of at most 1 + 6 / 110 = 1.05455. A gap
        // of 0.04413 proves tolerances below 0.01103: at 0.0105, not at
        // 0.0125 (the delay without the margin taken off would: 0.016).
        let s = kept_at(0.0, &[(0.055, 0.11)], 0.5);
        let at = |tol: f64| {
            RiskJob::new(0.0, 0.06, 0.1, 0.1, tol, true, true).expect("numbers in range")
        };
        assert!(Late::certain_one(&s, s.lo, &at(0.0105)));
        assert!(!Late::certain_one(&s, s.lo, &at(0.0125)));
        // From the parts at 0, A's need is taken as it is now, 0.5, so C
        // gets 0.5 for 10 ms (5 of its 5.4545 ms) and then the whole node
        // for the 0.4545 ms left: a delay of 10.4545 ms, a ratio of 1 +
        // (10.4545 - 1) / 100 = 1.094545, a gap of 0.04: proven below
        // 0.01, at 0.0095, not at 0.0105.
        let (_, fns) = standing_node(&[(0.055, 0.11)]);
        assert_eq!(refined_verdict(&fns, &at(0.0095)), Verdict::NotZero);
        assert_eq!(refined_verdict(&fns, &at(0.0105)), Verdict::Open);
    }

    #[test]
    fn a_node_past_a_deadline_is_never_zero_risk_from_its_parts() {
        // Decided at 100: a part of 10 s left was due at 90, or is due
        // within TIME_EPS of now. The projection refuses such a node, so it
        // is never zero-risk, though its load at 100 (the past part needs
        // nothing) leaves room for any job under the shortcut.
        let b = JobSpec::new(1, 100.0, 10.0, 1, 200.0, 1e9);
        let j =
            RiskJob::new(100.0, 10.0, 200.0, 300.0, 1e-9, true, true).expect("numbers in range");
        for due in [90.0, 100.0 + 1e-6] {
            let (node, fns) = standing_node(&[(10.0, due)]);
            assert_eq!(refined_verdict(&fns, &j), Verdict::NotZero, "{due}");
            let mut r = LibraRisk::new(PolicyConfig::default());
            assert!(!r.zero_risk(100.0, &node, &b), "{due}");
        }
    }

    #[test]
    fn a_node_of_up_to_63_parts_is_certified_from_its_parts() {
        // The first test's node with A's 100 s split into `n` parts, all
        // due at 250 (together q = 0.4), and job B: RE 120, D 150 (q = 0.8).
        // Q' = 1.2, so B is left with 20 s at 150; then A's parts need 0.4,
        // B gets 0.6 and takes 33.3 s more: ratio 1.2222, while A's parts
        // end by 220 < 250. Proven for any `n` the certificate's stack
        // arrays hold (up to 63 parts and the new one); from 64 parts on
        // it leaves the node to the projection.
        let b = job(1, 120.0, 1, 150.0, 1e9);
        for (n, v) in [
            (1, Verdict::NotZero),
            (20, Verdict::NotZero),
            (63, Verdict::NotZero),
            (64, Verdict::Open),
        ] {
            let (_, fns) = standing_node(&vec![(100.0 / n as f64, 250.0); n]);
            assert_eq!(refined_verdict(&fns, &at_zero(&b)), v, "{n} parts");
        }
    }

    #[test]
    fn an_old_part_overdue_takes_the_pool_until_the_next_old_deadline() {
        // Node A: part A, 30 s due at 150 (q = 0.2), and part C, 20 s due
        // at 152 (q = 0.1316). Job B: RE 225, D 300 (x = 0.75). Q' =
        // 1.08158: A, the earliest, is left with 30 (1 - 1/1.08158) =
        // 2.2628 s at 150. After 150 the parts on track, C and B, need at
        // least 0.88158 (1 + 0.075426 x 150/300) = 0.91483, so A gets at
        // most 0.08517 until C's deadline, 2 s on: its delay is at least
        // min(2.2628 / 0.08517, 2.2628 + 0.91483 x 2) = min(26.57, 4.0925)
        // = 4.0925 s, its ratio at least 1 + (4.0925 - 0.001) / 150 =
        // 1.027277. All 275 s of work end by 275 < 300: B, the latest, is
        // on time. A gap of 0.027277 among 3 parts proves tolerances below
        // 0.027277 / (2 sqrt(6)) = 0.005568: at 0.0052, not at 0.006.
        // The same from the node's block: its slack, 102 s, is below B's
        // work, but its work and B's end by B's deadline, so it joins the
        // block's bounds; where they prove nothing it is settled alone,
        // open.
        let mut view = nodes(1);
        busy(&mut view[0], 10, 30.0, 150.0);
        busy(&mut view[0], 11, 20.0, 152.0);
        let ix = bounded(&view);
        let b = job(1, 225.0, 1, 300.0, 1e9);
        let mut open = Vec::new();
        for (tol, proven) in [(0.0052, true), (0.006, false)] {
            let j = at_zero_within(&b, tol);
            let v = if proven {
                Verdict::NotZero
            } else {
                Verdict::Open
            };
            assert_eq!(ix.risk_verdict(0, &j), v, "{tol}");
            assert!(ix.risk_block(0, &j, &mut open), "{tol}");
            let left = if proven { vec![] } else { vec![(0, v)] };
            assert_eq!(open, left, "{tol}");
        }
    }

    /// The index of `view` bounded at `now` at each node's exact load
    /// there, its parts standing still.
    fn bounded_at(view: &[NodeState], now: Time) -> BusyIndex {
        let mut ix = BusyIndex::of(view);
        ix.keep_risk(true);
        ix.rebound(now, |k, _, _, fns| {
            crate::policy::test_util::still_part_fns(&view[k], fns);
            let q = view[k].required_share(now);
            LoadBound {
                lo: q,
                hi: q,
                line: super::super::LoadLine::NONE,
            }
        });
        ix
    }

    #[test]
    fn a_block_joins_only_the_nodes_that_fail_the_shortcut() {
        // Decided at 10. Job B, submitted at 0: RE 60, D 300, so the
        // shortcut adds 0.2, and its part needs 60 / 290 = 0.2069 to make
        // its deadline at 300. Node 0: 348.5 s due at 443.5 (q = 0.8039 at
        // 10): the shortcut fails (1.0039), Q' = 1.0108, and B, due first,
        // is left with 60 (1 - 1/1.0108) = 0.64 s, while all 408.5 s of
        // work end by 418.5 < 443.5: not zero-risk. Node 1: 320 s due at
        // 410 (q = 0.8): the shortcut holds (0.8 + 0.2 = 1), zero-risk,
        // though its projection would start over-committed (0.8 + 0.2069).
        // Node 2: q = 0.800001, a sum of 1.000001, which fails the
        // shortcut but is within the certificate's 1e-6 of it. Every slack
        // is above B's 60 s (node 0's the most, 95 s, so it comes last in
        // the block's order), and the block's bounds would cover all
        // three; with nodes 1 and 2 in them they prove nothing, so the walk
        // takes them out and settles them alone (zero-risk; open), node 0
        // from the bounds of the rest.
        let mut view = nodes(3);
        busy(&mut view[0], 10, 348.5, 443.5);
        busy(&mut view[1], 11, 320.0, 410.0);
        busy(&mut view[2], 12, 320.0004, 410.0);
        let ix = bounded_at(&view, 10.0);
        let b = job(1, 60.0, 1, 300.0, 1e9);
        let j = RiskJob::new(10.0, 60.0, 300.0, b.deadline_abs(), 1e-9, true, true)
            .expect("numbers in range");
        let risk = &ix.bounds.risk;
        assert!(overcommits(&risk[0], &j));
        assert!(!overcommits(&risk[1], &j) && !overcommits(&risk[2], &j));
        let mut open = Vec::new();
        assert!(ix.risk_block(0, &j, &mut open));
        assert_eq!(open, vec![(1, Verdict::Zero), (2, Verdict::Open)]);
        let mut r = LibraRisk::new(PolicyConfig::default());
        assert!(r.zero_risk(10.0, &view[1], &b) && !r.zero_risk(10.0, &view[0], &b));
        // Below B's slack, a node joins the bounds as one whose latest
        // part is on time only when all its work and B's, with the margin,
        // end by B's deadline: w + 60 + 0.001 <= 300 - 10.
        let late = kept_at(10.0, &[(235.0, 250.0)], 0.94);
        let done = kept_at(10.0, &[(229.0, 250.0)], 0.94);
        assert!(!fits_by_new_deadline(&late, &j) && fits_by_new_deadline(&done, &j));
    }

    #[test]
    fn a_blocks_nodes_are_kept_by_ascending_slack() {
        // Four busy nodes of one block, each with 50 s of work, their slack
        // (latest deadline less work) falling with the index: 400, 300,
        // 200 and 100 s. The block keeps them from the least slack up, so
        // that the nodes a job's work may run past are a prefix.
        let mut view = nodes(4);
        for (k, slack) in [400.0, 300.0, 200.0, 100.0].into_iter().enumerate() {
            busy(&mut view[k], 10 + k as u64, 50.0, 50.0 + slack);
        }
        let ix = bounded(&view);
        let block = &ix.bounds.blocks[0];
        assert_eq!(&block.order[..block.live], &[3, 2, 1, 0]);
        let slack: Vec<f64> = block.slack[..4].iter().map(|s| s.round()).collect();
        assert_eq!(slack, vec![100.0, 200.0, 300.0, 400.0]);
    }

    #[test]
    fn a_fitting_node_that_breaks_the_blocks_bounds_is_settled_alone() {
        // Job B: RE 60, D 300 (q = 0.2), at 0. Node 0: A0, 330 s due at 400
        // (slack 70, above B's 60 s): proven not zero-risk by the block's
        // bounds from it on (the test above). Nodes 1 to 3 have slack below
        // 60 s. The work of nodes 1 and 2 and B's ends by B's deadline, so
        // they join those bounds as fitting nodes. Node 1: A1, 100 s due at
        // 120 (slack 20; not zero-risk, the test above). Node 2: 40 s due
        // at 85 (slack 45, q = 0.47): B fits beside it (0.67 <= 1),
        // zero-risk, and its load brings the bounds' least load down to
        // where they prove nothing. Node 3: 250 s due at 300 (slack 50, q
        // = 0.833), with B's 60 s past B's deadline: settled alone. Its
        // parts are both due at 300, so the latest is as late as the
        // earliest and nothing proves it not zero-risk: open. So every
        // node below the slack is settled alone: node 1 by its own
        // numbers, node 2 open with the shortcut's verdict, node 3 open.
        let mut view = nodes(4);
        busy(&mut view[0], 10, 330.0, 400.0);
        busy(&mut view[1], 11, 100.0, 120.0);
        busy(&mut view[2], 12, 40.0, 85.0);
        busy(&mut view[3], 13, 250.0, 300.0);
        let ix = bounded(&view);
        let j = at_zero(&job(1, 60.0, 1, 300.0, 1e9));
        let block = &ix.bounds.blocks[0];
        assert_eq!(&block.order[..block.live], &[1, 2, 3, 0]);
        let mut open = Vec::new();
        assert!(ix.risk_block(0, &j, &mut open));
        assert_eq!(open, vec![(2, Verdict::Zero), (3, Verdict::Open)]);
    }

    #[test]
    fn a_part_starved_by_the_overdue_pool_is_certainly_late() {
        // Node 0 holds A (140 s of work) and C (155 s), both due at 300
        // (q = 0.4667 + 0.5167 = 0.9833). Job B: RE 20, D 100 (q = 0.2).
        // Q' = 1.1833, 1 - 1/Q' = 0.1549: B is due first and has 20 x
        // 0.1549 = 3.10 s left at 100. All the work, 315 s, may end 15 s
        // past the latest deadline: A or C may have a ratio of 1.05, more
        // than B's first bound, 1 + 0.2 x 0.1549 = 1.031. But A and C then
        // need (each ran at q/Q' < q, its share growing by at least 1 +
        // 0.1549 x 100/300) at least 0.9833 x 1.0516 = 1.034 > 0.95 of the
        // node: B, overdue, gets the pool's 0.05 until their deadline 200
        // s later, so its delay is at least min(20 x 3.10, 3.10 + 0.95 x
        // 200) = 62 s, its ratio at least 1.62: 0.57 above 1.05, sigma >=
        // 0.57 / sqrt(6) = 0.23.
        let mut view = nodes(1);
        busy(&mut view[0], 10, 140.0, 300.0);
        busy(&mut view[0], 11, 155.0, 300.0);
        let ix = bounded(&view);
        let b = job(1, 20.0, 1, 100.0, 1e9);
        assert_eq!(ix.risk_verdict(0, &at_zero(&b)), Verdict::NotZero);
        assert_eq!(ix.risk_refined(0, &at_zero(&b)), Verdict::NotZero);
        // The projection: B's 3.10 s at 0.05 take 62 s, so it ends at
        // 162, ratio 1.62 (A and C then end by 315: ratios <= 1.05).
        let mut delays = Vec::new();
        crate::node_model::project_deadline_delays(
            &view[0],
            &view[0].new_part(&b, 0.0),
            0.0,
            crate::share::SpareRule::Proportional,
            &mut delays,
        )
        .expect("no deadline passed");
        let q = 0.2 + 140.0 / 300.0 + 155.0 / 300.0;
        let left = 20.0 * (1.0 - 1.0 / q);
        assert!(
            (delays[2] - (100.0 + left / 0.05) / 100.0).abs() < 1e-6,
            "{delays:?}"
        );
        assert!(
            delays[..2]
                .iter()
                .all(|&r| (1.0..=1.05 + 1e-9).contains(&r)),
            "{delays:?}"
        );
        let s = crate::node_model::population_sd(&delays);
        assert!(s > 0.23, "{s}");
    }

    #[test]
    fn a_node_done_by_the_new_deadline_joins_its_blocks_bounds() {
        // Job B: RE 60, D 300 (q = 0.2), at 0: the nodes whose slack
        // (latest deadline - work) is below 60 + m may run past their
        // latest deadline with B's work and would be settled one by one.
        // Node 0 holds A0: 330 s of work due at 400 (q = 0.825, slack 70,
        // above). Q' = 1.025: B, due first, has 60 (1 - 1/1.025) = 1.46 s
        // left at 300 (ratio >= 1.0049); all 390 s are done by 400: A0 on
        // time. Node 1 holds A1: 100 s due at 120 (q = 0.833, slack 20,
        // below). Q' = 1.033: A1, due first, has 100 (1 - 1/1.033) = 3.2 s
        // left at 120 (ratio >= 1 + 0.833 x 0.0323 = 1.027); its work and
        // B's, 160 s, are done by B's deadline 300, the latest: B on time.
        let mut view = nodes(2);
        busy(&mut view[0], 10, 330.0, 400.0);
        busy(&mut view[1], 11, 100.0, 120.0);
        let ix = bounded(&view);
        let b = job(1, 60.0, 1, 300.0, 1e9);
        let j = at_zero(&b);
        let (s0, s1) = (&ix.bounds.risk[0], &ix.bounds.risk[1]);
        // 60 + m + 100 - 300 <= 0 for node 1; 60 + m + 330 - 300 > 0.
        assert!(fits_by_new_deadline(s1, &j) && !fits_by_new_deadline(s0, &j));
        // Plainly widened by node 1's slack, the bounds would let the
        // latest part run 60 + m - 20 = 40 s late out of 300 (r_L - 1 <=
        // 0.133), more than the earliest part's lift, 0.2 x 0.0244 =
        // 0.0049 (the least q_e, B's, at the least Q', node 0's): no
        // proof. Node 1's latest part is on time, so joined as a fitting
        // node the bounds keep node 0's excess (60 + m - 70 < 0: r_L = 1)
        // and the lift proves both: (0.0049 - 0) / sqrt(2 x 2) > 2e-9.
        let mut plain = Late::EMPTY;
        plain.add(s0);
        plain.add(s1);
        assert!(!plain.certain(&j));
        let mut joint = Late::EMPTY;
        joint.add(s0);
        joint.add_fitting(s1);
        assert!(joint.certain(&j));
        let mut open = Vec::new();
        assert!(ix.risk_block(0, &j, &mut open) && open.is_empty());
        // Each alone, and the projection: neither is zero-risk, sigma at
        // least (1.0049 - 1) / 2 and (1.027 - 1) / 2.
        assert_eq!(ix.risk_verdict(0, &j), Verdict::NotZero);
        assert_eq!(ix.risk_verdict(1, &j), Verdict::NotZero);
        let mut r = LibraRisk::new(PolicyConfig::default());
        let s = r.risk(0.0, &view[0], &b).expect("no deadline passed");
        assert!(s > 0.0024, "{s}");
        let s = r.risk(0.0, &view[1], &b).expect("no deadline passed");
        assert!(s > 0.013, "{s}");
    }

    #[test]
    fn a_node_with_room_for_the_job_is_taken_out_of_its_blocks_bounds() {
        // The nodes of the test above, and node 2 holding A2: 40 s due at
        // 400 (q = 0.1, slack 360: above B's 60 s + m). B (q = 0.2) fits
        // beside A2 (0.1 + 0.2 <= 1): the shortcut, zero-risk. Its load,
        // the least of the suffix's (nodes 0 and 2), lets B fit everywhere
        // as far as the suffix's bounds know, so they prove nothing. With
        // node 2 taken out (0.1 + 0.2 is not above 1 + 1e-6), nodes 0 and
        // 1 are bounded as in the test above (proved), and node 2 is
        // settled alone: open, zero-risk.
        let mut view = nodes(3);
        busy(&mut view[0], 10, 330.0, 400.0);
        busy(&mut view[1], 11, 100.0, 120.0);
        busy(&mut view[2], 12, 40.0, 400.0);
        let ix = bounded(&view);
        let b = job(1, 60.0, 1, 300.0, 1e9);
        let j = at_zero(&b);
        let risk = &ix.bounds.risk;
        assert!(overcommits(&risk[0], &j) && overcommits(&risk[1], &j));
        assert!(!overcommits(&risk[2], &j));
        let mut suffix = Late::EMPTY;
        suffix.add(&risk[0]);
        suffix.add(&risk[2]);
        assert!(!suffix.certain(&j));
        let mut open = Vec::new();
        assert!(ix.risk_block(0, &j, &mut open));
        assert_eq!(open, vec![(2, Verdict::Zero)]);
        let mut r = LibraRisk::new(PolicyConfig::default());
        assert!(r.zero_risk(0.0, &view[2], &b));
        assert!(!r.zero_risk(0.0, &view[0], &b) && !r.zero_risk(0.0, &view[1], &b));
    }

    #[test]
    fn identical_delays_and_past_deadlines_are_told_apart() {
        // Node 0 holds A: 100 s of work, deadline 100 (q = 1); job B the
        // same. Both are delayed alike (sigma 0, zero-risk by the paper's
        // definition): the late certificate cannot hold (all the work,
        // 200 s, ends past the latest deadline by 100 s: A's ratio may be
        // as high as 2, B's as low as 1.5), so the node is projected.
        let mut view = nodes(3);
        busy(&mut view[0], 10, 100.0, 100.0);
        // Node 2's part has no time left: past its deadline at 0.
        busy(&mut view[2], 11, 10.0, 1e-7);
        let ix = bounded(&view);
        let b = job(1, 100.0, 1, 100.0, 1e9);
        assert_eq!(ix.risk_verdict(0, &at_zero(&b)), Verdict::Open);
        assert_eq!(ix.risk_refined(0, &at_zero(&b)), Verdict::Open);
        let mut r = LibraRisk::new(PolicyConfig::default());
        assert!(r.zero_risk(0.0, &view[0], &b));
        assert_eq!(ix.risk_verdict(2, &at_zero(&b)), Verdict::NotZero);
        assert!(!r.zero_risk(0.0, &view[2], &b));
    }
}
