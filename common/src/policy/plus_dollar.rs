//! Libra+$ (its paper's Algorithm 1): Libra's resource and deadline filters,
//! then a dynamic price per node, P_ij = alpha PBase + beta PUtil_ij, with
//! PUtil_ij = RESMax_j / RESFree_ij x PBase over the job's window
//! [AT_i, DT_i], and best fit by RESFree within the budget.

use serde::{Deserialize, Serialize};

use std::collections::BinaryHeap;

use super::steps::{
    bounds_apply, load_if_fits, resource_deadline_filter, resource_deadline_filter_indexed,
    too_few_in_time, too_many_processors, top_k, Better, SHARE_SUM_EPS,
};
use super::{Accept, AdmissionPolicy, BoundedReads, Decision, PolicyConfig, RejectReason};
use crate::busy_index::{Agg, BusyIndex, CapWindow};
use crate::job::JobSpec;
use crate::node_model::NodeState;
use crate::share::SpareRule;
use crate::time::{Time, KEY_TIE_EPS};

/// The price one node would charge a job now.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PriceQuote {
    /// The node: its id in a quote, its snapshot index inside a decision.
    pub node: usize,
    /// Processor time left free in the window after the job (RESFree).
    pub res_free: f64,
    /// The utilisation price PUtil.
    pub putil: f64,
    /// The price per second P = alpha PBase + beta PUtil.
    pub price: f64,
    /// The cost RE x P the job would pay on this node.
    pub cost: f64,
}

/// Libra+$'s admission control.
pub struct LibraPlusDollar {
    cfg: PolicyConfig,
    cands: Vec<(usize, f64)>,
    quotes: Vec<PriceQuote>,
    /// The busy candidates `filter_bounded` priced, by node: (node,
    /// committed time), so that the pricing after it does not add up
    /// their parts again.
    priced: Vec<(usize, f64)>,
}

impl LibraPlusDollar {
    /// Libra+$ with these knobs (alpha, beta, PBase, spare rule).
    pub fn new(cfg: PolicyConfig) -> LibraPlusDollar {
        LibraPlusDollar {
            cfg,
            cands: Vec::new(),
            quotes: Vec::new(),
            priced: Vec::new(),
        }
    }

    /// The processor time node's on-track parts need inside a window of
    /// `window` seconds from `now`: each part k's q_k x min(rd_k, window).
    /// Overdue parts commit nothing (the share rule gives them only spare
    /// or pool time).
    pub fn committed(now: Time, node: &NodeState, window: f64) -> f64 {
        node.parts
            .iter()
            .map(|p| {
                let s = p.share_input(now);
                if s.on_track() {
                    s.required() * s.rd.min(window)
                } else {
                    0.0
                }
            })
            .sum()
    }

    /// RESFree_ij: the window's processor time D_i, less what every
    /// on-track part needs inside the window ([`Self::committed`]), less
    /// the job's own RE_i / s_j.
    pub fn res_free(now: Time, node: &NodeState, job: &JobSpec) -> f64 {
        let window = job.qos.deadline;
        window - LibraPlusDollar::committed(now, node, window) - node.est_cpu(job)
    }

    /// The quote of one node, or `None` if the job would leave no free
    /// processor time in its window (the node is priced out).
    pub fn quote(
        cfg: &PolicyConfig,
        now: Time,
        node: &NodeState,
        job: &JobSpec,
    ) -> Option<PriceQuote> {
        let res_free = LibraPlusDollar::res_free(now, node, job);
        LibraPlusDollar::quote_of(cfg, job, node.spec.id, res_free)
    }

    /// The quote of node `node` for `job` given its RESFree.
    fn quote_of(
        cfg: &PolicyConfig,
        job: &JobSpec,
        node: usize,
        res_free: f64,
    ) -> Option<PriceQuote> {
        if res_free <= 0.0 {
            return None;
        }
        let putil = job.qos.deadline / res_free * cfg.pbase;
        let price = cfg.alpha * cfg.pbase + cfg.beta * putil;
        Some(PriceQuote {
            node,
            res_free,
            putil,
            price,
            cost: job.estimate() * price,
        })
    }

    /// Quotes of every node that passes the resource and deadline filters,
    /// in node order (what `libratory quote` shows).
    pub fn quotes(&self, now: Time, nodes: &[NodeState], job: &JobSpec) -> Vec<PriceQuote> {
        nodes
            .iter()
            .filter(|n| n.has_resources(job) && load_if_fits(n, job, now).is_some())
            .filter_map(|n| LibraPlusDollar::quote(&self.cfg, now, n, job))
            .collect()
    }
}

impl AdmissionPolicy for LibraPlusDollar {
    fn name(&self) -> &'static str {
        "libra-plus-dollar"
    }

    fn spare_rule(&self) -> SpareRule {
        self.cfg.spare_rule
    }

    fn price_quotes(&self, now: Time, nodes: &[NodeState], job: &JobSpec) -> Vec<PriceQuote> {
        self.quotes(now, nodes, job)
    }

    fn decide(&mut self, now: Time, nodes: &[NodeState], job: &JobSpec) -> Decision {
        let window = job.qos.deadline;
        self.decide_with(
            nodes,
            job,
            |_, cands| resource_deadline_filter(now, nodes, job, cands, None),
            now,
            |k| {
                let n = &nodes[k];
                (!n.parts.is_empty())
                    .then(|| window - LibraPlusDollar::committed(now, n, window) - n.est_cpu(job))
            },
        )
    }

    /// [`Self::decide`] on the busy nodes of `index` and the first `P`
    /// idle nodes of each speed: every idle node of a speed has the same
    /// quote (its free share of the window is the whole window less the
    /// part), so equal keys rank the later ones after `P` earlier ones in
    /// `top_k` and they never change the choice. The counts in a
    /// rejection are the walk's: the filter counts every idle node, and
    /// fewer than `P` within budget means no speed group within budget had
    /// more than `P` nodes (it would fill them); the cheapest cost is one
    /// of the kept quotes, the members of a group quoting alike.
    fn decide_indexed(
        &mut self,
        now: Time,
        nodes: &[NodeState],
        index: &BusyIndex,
        job: &JobSpec,
    ) -> Decision {
        let window = job.qos.deadline;
        self.decide_with(
            nodes,
            job,
            |_, cands| {
                resource_deadline_filter_indexed(now, nodes, index, job, cands, job.processors())
            },
            now,
            |k| {
                let n = &nodes[k];
                (!n.parts.is_empty())
                    .then(|| window - LibraPlusDollar::committed(now, n, window) - n.est_cpu(job))
            },
        )
    }

    fn bounded_reads(&self) -> Option<BoundedReads> {
        Some(BoundedReads::LoadTree)
    }

    /// [`Self::decide_indexed`] on the few candidates the busy index's
    /// load bounds leave open (`filter_bounded`), each busy one priced
    /// from the index's own record of its parts at `now`, none brought up
    /// to date in the view.
    fn decide_bounded(
        &mut self,
        now: Time,
        nodes: &[NodeState],
        index: &BusyIndex,
        job: &JobSpec,
    ) -> Option<Decision> {
        if !bounds_apply(nodes, index, job) || !index.load_tree_kept() {
            return None;
        }
        let window = job.qos.deadline;
        let est = nodes[0].est_cpu(job);
        // Filled by the filter, read by the pricing: every busy candidate
        // is among them (the filter prices a busy node it keeps), each with
        // the very float `exact_committed` gives.
        let priced = std::cell::RefCell::new(std::mem::take(&mut self.priced));
        let d = self.decide_with(
            nodes,
            job,
            |cfg, cands| {
                filter_bounded(cfg, now, nodes, index, job, cands, &mut priced.borrow_mut())
            },
            now,
            |k| {
                let priced = priced.borrow();
                // Every busy candidate was priced, so a node missing there
                // is idle; a busy node's RESFree from its committed time
                // and the job's processor time on any node (one speed),
                // without a read of the node itself (elsewhere in memory).
                priced
                    .binary_search_by_key(&k, |p| p.0)
                    .ok()
                    .map(|i| window - priced[i].1 - est)
            },
        );
        self.priced = priced.into_inner();
        Some(d)
    }
}

impl LibraPlusDollar {
    /// The decision with `filter` for the resource and deadline filters
    /// (candidates in node order with their load after the part), then
    /// each candidate priced: a busy one from `res_free`, its RESFree
    /// ([`Self::res_free`] at `now`), which is `None` for an idle one.
    fn decide_with(
        &mut self,
        nodes: &[NodeState],
        job: &JobSpec,
        filter: impl FnOnce(&PolicyConfig, &mut Vec<(usize, f64)>) -> Option<Decision>,
        now: Time,
        res_free: impl Fn(usize) -> Option<f64>,
    ) -> Decision {
        if let Some(d) = too_many_processors(nodes, job) {
            return d;
        }
        let p = job.processors();
        if let Some(d) = filter(&self.cfg, &mut self.cands) {
            return d;
        }
        self.quotes.clear();
        // An empty node's quote depends on its speed alone (no parts, so
        // nothing committed): computed again only when the speed differs
        // from the last empty node's; the very same value.
        let mut empty: Option<(f64, Option<PriceQuote>)> = None;
        for &(k, _) in &self.cands {
            let quote = match res_free(k) {
                Some(res_free) => LibraPlusDollar::quote_of(&self.cfg, job, k, res_free),
                None => {
                    let n = &nodes[k];
                    debug_assert!(n.parts.is_empty(), "busy node {k} priced as idle");
                    match empty {
                        Some((speed, q)) if speed == n.spec.speed => q,
                        _ => {
                            let q = LibraPlusDollar::quote(&self.cfg, now, n, job);
                            empty = Some((n.spec.speed, q));
                            q
                        }
                    }
                }
            };
            if let Some(mut q) = quote {
                // Decisions name nodes by their index in the snapshot (a
                // live snapshot leaves out dead nodes, so it may differ
                // from the node's id).
                q.node = k;
                self.quotes.push(q);
            }
        }
        // Walking the nodes in ascending RESFree and taking those within
        // budget until P are taken is the same as taking the P smallest
        // RESFree among the nodes within budget.
        let budget = job.qos.budget;
        self.cands.clear();
        self.cands.extend(
            self.quotes
                .iter()
                .filter(|q| q.cost <= budget)
                .map(|q| (q.node, q.res_free)),
        );
        if self.cands.len() < p {
            let cheapest = self
                .quotes
                .iter()
                .map(|q| q.cost)
                .fold(f64::INFINITY, f64::min);
            return Decision::reject(
                RejectReason::Budget,
                format!(
                    "needs {p} nodes within budget {budget:.2}, {} are (cheapest cost {cheapest:.2})",
                    self.cands.len()
                ),
            );
        }
        top_k(&mut self.cands, p, Better::Lower);
        let mut cost: f64 = 0.0;
        let chosen: Vec<usize> = self.cands.iter().map(|c| c.0).collect();
        for &k in &chosen {
            // Quotes are in node order (the filters keep it): a binary
            // search, not a scan of every quote per part.
            let q = self
                .quotes
                .binary_search_by_key(&k, |q| q.node)
                .map(|i| &self.quotes[i])
                .expect("quoted");
            cost = cost.max(q.cost);
        }
        Decision::Accept(Accept {
            nodes: chosen,
            cost,
        })
    }
}

/// Libra+$'s share test over the bounds of `index` ([`BusyIndex::rebound`],
/// up to date at `now`), with the outcome of
/// [`resource_deadline_filter_indexed`] as far as the rest of Libra+$'s
/// decision goes: into `out`, a subset of that filter's candidates (in
/// node order) on which the pricing, the budget and the best fit by
/// RESFree choose the very same nodes at the same cost; the same
/// rejections with the same counts and cheapest cost. A busy node's exact
/// load and committed time are computed from the index's record of its
/// parts ([`BusyIndex::exact_load`], [`BusyIndex::exact_committed`]), only
/// for the nodes whose bounds leave the outcome open.
///
/// Why: a part's committed time `q min(rd, D)` is at most `q D` and at
/// most what it has left, so a node's committed time is at most `D` times
/// the upper bound of its load and at most its remaining time, and its
/// RESFree at least `D` less the smaller, less `RE / s` (with room for
/// rounding: `under` below). The walk goes down Libra+$'s order by lower
/// bound of load ([`BusyIndex::load_tree_desc`], from the highest that can
/// pass the share test) and passes over every subtree whose largest upper
/// bound of load and largest caps on committed time (the remaining time
/// among them) leave all its nodes beyond [`KEY_TIE_EPS`] of the
/// `P`-th smallest RESFree within budget found so far; inside the buckets
/// it opens, it settles each node from its bound and line where they
/// suffice and prices the rest. `top_k` (lower is better) depends only on
/// the candidates within the tolerance of the `P`-th best key, and the
/// whole set's is at most the subset's (it only falls as the walk goes),
/// so every node left out ranks below the choice, ties included. Nothing
/// is left out by its price before `P` within budget are known, so a
/// rejection (fewer than `P` within budget or that fit) comes from a walk
/// that saw every node that fits: the counts and the cheapest cost are
/// the walk's over every node (idle nodes by the stand-in argument of
/// [`resource_deadline_filter_indexed`]). The proof in full is in
/// docs/policies.md ("Libra+$ from the same bounds").
///
/// Into `priced`, by node, every busy candidate of `out` with its
/// committed time ([`BusyIndex::exact_committed`]), for the pricing.
///
/// The caller checks the job needs no memory or disk and every node has
/// one speed (`index` has seen one) and that `index` keeps Libra+$'s
/// order.
#[allow(clippy::too_many_arguments)]
fn filter_bounded(
    cfg: &PolicyConfig,
    now: Time,
    nodes: &[NodeState],
    index: &BusyIndex,
    job: &JobSpec,
    out: &mut Vec<(usize, f64)>,
    priced: &mut Vec<(usize, f64)>,
) -> Option<Decision> {
    let k = job.processors();
    let window = job.qos.deadline;
    priced.clear();
    // Every node of one speed: the job's processor time and share on any.
    let est = nodes[0].est_cpu(job);
    let add = est / window;
    let limit = 1.0 + SHARE_SUM_EPS;
    out.clear();
    let mut fit = 0;
    // The `k` smallest RESFree within budget so far, as a max-heap of
    // their bits (within budget means quoted, so RESFree > 0, and the
    // bits of positive floats order as the floats do): the `k`-th on top.
    let mut best: BinaryHeap<u64> = BinaryHeap::with_capacity(k + 1);
    let within = |res_free: f64| {
        LibraPlusDollar::quote_of(cfg, job, 0, res_free).is_some_and(|q| q.cost <= job.qos.budget)
    };
    let take = |best: &mut BinaryHeap<u64>, res_free: f64| {
        let bits = res_free.to_bits();
        if best.len() < k {
            best.push(bits);
        } else if best.peek().is_some_and(|&top| bits < top) {
            best.pop();
            best.push(bits);
        }
    };
    let kth_of = |best: &BinaryHeap<u64>| {
        (best.len() == k).then(|| best.peek().map_or(f64::NAN, |&b| f64::from_bits(b)))
    };
    for (_, group) in index.idle_by_speed() {
        let Some(first) = group.first() else {
            continue;
        };
        // Computed on a member, as the walk computes it on each.
        let Some(l) = load_if_fits(&nodes[first], job, now) else {
            continue;
        };
        fit += group.len();
        let res_free = LibraPlusDollar::res_free(now, &nodes[first], job);
        for n in group.iter().take(k) {
            out.push((n, l));
            if within(res_free) {
                take(&mut best, res_free);
            }
        }
    }
    // A busy node that fits: a candidate, priced exactly.
    let mut exact = |n: usize, best: &mut BinaryHeap<u64>| {
        #[cfg(test)]
        PRICED_EXACTLY.with(|c| c.set(c.get() + 1));
        let load = index.exact_load(n, now) + add;
        if load > limit {
            return;
        }
        fit += 1;
        out.push((n, load));
        let committed = index.exact_committed(n, now, window);
        priced.push((n, committed));
        let res_free = window - committed - est;
        if within(res_free) {
            take(best, res_free);
        }
    };
    // The wide nodes up to the walk's start below: one whose lower bound
    // fails the share test fails it (most of them: a part near its
    // deadline needs more than the node). A wide bound's lower bound has
    // no room for the rounding of the load's sum (a few ulps of it); the
    // start's 1e-9 covers that.
    let start = limit - add + 1e-9;
    let mut wide = index.wide();
    for (lo, n) in wide.by_ref() {
        if lo > start {
            #[cfg(debug_assertions)]
            debug_assert!(
                index.exact_load(n, now) + add > limit,
                "wide node {n} of lower bound {lo} passed over at {now}, but it fits"
            );
            break;
        }
        exact(n, &mut best);
    }
    #[cfg(debug_assertions)]
    for (lo, n) in wide.take(super::steps::DEBUG_WIDE_CHECKS) {
        debug_assert!(
            index.exact_load(n, now) + add > limit,
            "wide node {n} of lower bound {lo} passed over at {now}, but it fits"
        );
    }
    // A node whose committed time is at most `c` has a RESFree of at
    // least `window - c (1 + 1e-9) - est - 1e-9 (1 + window + est)`
    // (room for rounding: the committed time and RESFree are sums of a
    // node's parts' floats, each off by a few ulps). It surely ranks
    // beyond the tolerance of the `k`-th smallest RESFree when that is
    // above `kth + KEY_TIE_EPS`, that is when `c` is below `under`, solved
    // once per `k`-th (a decision asks it of some hundred bounds), less
    // `1e-12` of the operands for the solving's own rounding. Nothing is
    // beyond before `k` within budget are known.
    let under_of = |kth: Option<f64>| {
        kth.map_or(f64::NEG_INFINITY, |kth| {
            (window - est - 1e-9 * (1.0 + window + est) - kth - KEY_TIE_EPS) / (1.0 + 1e-9)
                - 1e-12 * (1.0 + window + est + kth.abs())
        })
    };
    let mut kth = kth_of(&best);
    let mut under = under_of(kth);
    let cap_window = CapWindow::of(window);
    // Room for rounding in the share test's start, as Libra's walk.
    let mut walk = index
        .load_tree_desc(start)
        .expect("the caller checks the index keeps Libra+$'s order");
    // Debug builds check every node of the subtrees passed over, up to a
    // count per decision (the property tests' clusters stay under it).
    #[cfg(debug_assertions)]
    let mut checked = 0usize;
    loop {
        // A subtree whose every node commits at most `D` times the
        // largest upper bound of load under it, and at most the largest
        // caps under it (the remaining time among them): passed over
        // whole when that is beyond the `k`-th smallest (the `k`-th only
        // falls, so it stays beyond).
        let skip = |i: usize, agg: &Agg| {
            // Cheapest first.
            let skip = window * agg.hi < under || agg.committed_cap(cap_window) < under;
            #[cfg(debug_assertions)]
            if skip {
                for e in index
                    .load_tree_under(i)
                    .take(4096usize.saturating_sub(checked))
                {
                    checked += 1;
                    #[cfg(test)]
                    count_checked();
                    let res_free = window - index.exact_committed(e.node, now, window) - est;
                    debug_assert!(
                        kth.is_some_and(|kth| res_free > kth + KEY_TIE_EPS),
                        "node {} passed over in subtree {i} ({agg:?}) with RESFree {res_free} \
                         within the tolerance of the k-th {kth:?} at {now}",
                        e.node
                    );
                }
            }
            #[cfg(test)]
            if skip {
                SUBTREES_PASSED.with(|c| c.set(c.get() + 1));
            }
            #[cfg(not(debug_assertions))]
            let _ = i;
            skip
        };
        let Some(e) = walk.next(skip) else {
            break;
        };
        #[cfg(test)]
        ENTRIES_MET.with(|c| c.set(c.get() + 1));
        let (n, line) = (e.node, e.line);
        if e.lo + add > limit {
            // Its load is at least `lo`: it fails the share test.
            continue;
        }
        // Its load is at most `hi` over the bound's window (within a
        // bucket the entries are in no order, so this settles the one
        // node, where the walk by load stopped).
        if window * e.hi < under {
            continue;
        }
        // Its parts' committed time one by one (each at most what it has
        // left and at most its largest share times `D`), from the entry.
        if e.committed_cap(cap_window) < under {
            debug_assert!(
                kth.is_some_and(|kth| {
                    window - index.exact_committed(n, now, window) - est > kth + KEY_TIE_EPS
                }),
                "node {n} settled by its caps {:?} at {now}",
                e.caps
            );
            #[cfg(test)]
            CAP_SETTLED.with(|c| c.set(c.get() + 1));
            continue;
        }
        // The node's line settles most nodes the walk meets from its
        // entry alone: surely above the share test's limit, or (once
        // `k` within budget are known) a RESFree surely beyond the
        // tolerance of the `k`-th smallest.
        if let Some((l, h)) = line.band(now) {
            // Committed time is also at most the remaining time, the
            // tighter bound when the job's window reaches past the
            // node's parts' deadlines.
            debug_assert!(
                index.exact_committed(n, now, f64::INFINITY)
                    <= line.rem_bound(now) * (1.0 + 1e-9) + 1e-9,
                "node {n}: remaining time above its bound {} at {now}",
                line.rem_bound(now)
            );
            let committed = (window * h.max(0.0)).min(line.rem_bound(now));
            if l + add > limit || committed < under {
                #[cfg(test)]
                LINE_PRICED.with(|c| c.set(c.get() + 1));
                continue;
            }
        }
        exact(n, &mut best);
        kth = kth_of(&best);
        under = under_of(kth);
    }
    out.sort_unstable_by_key(|c| c.0);
    priced.sort_unstable_by_key(|c| c.0);
    (fit < k).then(|| too_few_in_time(job, fit))
}

#[cfg(test)]
thread_local! {
    /// Nodes [`filter_bounded`] settled from their line alone (tests
    /// check the path ran).
    pub(crate) static LINE_PRICED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Entries of the order by lower bound [`filter_bounded`] met: the
    /// walk's length, which its stop keeps short (tests check where it
    /// stops).
    static ENTRIES_MET: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Busy nodes [`filter_bounded`] priced from their parts (the work
    /// its bounds save).
    static PRICED_EXACTLY: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Nodes [`filter_bounded`] settled by their parts' caps
    /// ([`crate::busy_index::Entry::committed_cap`]).
    static CAP_SETTLED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Subtrees of Libra+$'s order [`filter_bounded`] passed over whole.
    static SUBTREES_PASSED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Nodes of passed-over subtrees the debug build's check priced
    /// exactly (tests check its count per decision stops at the cap).
    #[cfg(debug_assertions)]
    static NODES_CHECKED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Counts one node in [`NODES_CHECKED`]: a test-only function, out of the
/// walk, so that the mutation run (which skips `#[cfg(test)]` items)
/// mutates the check's own count, not this one.
#[cfg(test)]
#[cfg(debug_assertions)]
fn count_checked() {
    NODES_CHECKED.with(|c| c.set(c.get() + 1));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::test_util::{busy, job, nodes};

    #[test]
    fn paper_putil_2_00_and_1_25() {
        // The Libra+$ paper section V.B: PBase 1, 100 free units per hour, 90 units
        // committed, the job needs 10. Deadline 2 h: PUtil = 200/(200-90-10)
        // = 2.00; deadline 5 h: 500/(500-90-10) = 1.25.
        // In processor seconds (1 unit = 36 s): the committed part needs
        // 90 x 36 = 3240 s with 7200 s to its deadline (q 0.45), inside
        // both windows; the job needs 10 x 36 = 360 s.
        let mut n = nodes(1);
        busy(&mut n[0], 10, 3240.0, 7200.0);
        let cfg = PolicyConfig::default();
        let q2 = LibraPlusDollar::quote(&cfg, 0.0, &n[0], &job(1, 360.0, 1, 7200.0, 1e9)).unwrap();
        assert!((q2.putil - 2.00).abs() < 1e-12, "{q2:?}");
        let q5 = LibraPlusDollar::quote(&cfg, 0.0, &n[0], &job(1, 360.0, 1, 18000.0, 1e9)).unwrap();
        assert!((q5.putil - 1.25).abs() < 1e-12, "{q5:?}");
        // P = 1.0 x 1 + 0.1 x 2.00 = 1.2; cost = 360 x 1.2 = 432.
        assert!((q2.price - 1.2).abs() < 1e-12);
        assert!((q2.cost - 432.0).abs() < 1e-9);
        // The same node priced with PBase 3, alpha 2, beta 0.5 (equation
        // 1 with every factor away from 1): PUtil = 2.00 x 3 = 6, P =
        // 2 x 3 + 0.5 x 6 = 9, cost 360 x 9 = 3240.
        let cfg = PolicyConfig {
            pbase: 3.0,
            alpha: 2.0,
            beta: 0.5,
            ..PolicyConfig::default()
        };
        let q = LibraPlusDollar::quote(&cfg, 0.0, &n[0], &job(1, 360.0, 1, 7200.0, 1e9)).unwrap();
        assert!((q.putil - 6.0).abs() < 1e-12, "{q:?}");
        assert!((q.price - 9.0).abs() < 1e-12, "{q:?}");
        assert!((q.cost - 3240.0).abs() < 1e-9, "{q:?}");
    }

    /// `libratory quote` lists only the nodes that pass both filters. Job
    /// RE 50, D 100 (q 0.5), 1 KB of memory: node 0 has no memory; node
    /// 1 holds a part of q 0.9 due in 10 s (0.9 + 0.5 > 1: it fails the
    /// deadline filter, though its RESFree, 100 - 9 - 50 = 41, would
    /// price it); node 2 is empty: RESFree 50, PUtil 2, P 1.2.
    #[test]
    fn quotes_list_the_nodes_that_pass_both_filters() {
        let mut n = nodes(3);
        n[0].spec.memory_kb = 0;
        busy(&mut n[1], 10, 9.0, 10.0);
        let mut j = job(1, 50.0, 1, 100.0, 1e9);
        j.resources.memory_kb = 1;
        let q = LibraPlusDollar::new(PolicyConfig::default()).quotes(0.0, &n, &j);
        let got: Vec<(usize, f64, f64)> = q.iter().map(|q| (q.node, q.res_free, q.price)).collect();
        assert_eq!(got.len(), 1, "{q:?}");
        assert_eq!(got[0].0, 2);
        assert!((got[0].1 - 50.0).abs() < 1e-12 && (got[0].2 - 1.2).abs() < 1e-12);
        assert!((LibraPlusDollar::res_free(0.0, &n[1], &j) - 41.0).abs() < 1e-12);
    }

    #[test]
    fn committed_work_is_clipped_to_the_window() {
        // A part with q 0.5 and 1000 s to its deadline commits only
        // 0.5 x 100 = 50 s inside a 100 s window. Job RE 10:
        // RESFree = 100 - 50 - 10 = 40.
        let mut n = nodes(1);
        busy(&mut n[0], 10, 500.0, 1000.0);
        let r = LibraPlusDollar::res_free(0.0, &n[0], &job(1, 10.0, 1, 100.0, 1e9));
        assert!((r - 40.0).abs() < 1e-12);
    }

    #[test]
    fn best_fit_within_budget_and_highest_cost_charged() {
        // Job RE 10, D 100, P 2. n0 committed 60 (q 0.6 over 100 s): RESFree
        // 30, PUtil 100/30, P = 1 + 0.1 x 3.333 = 1.3333, cost 13.333.
        // n1 committed 40: RESFree 50, PUtil 2, P 1.2, cost 12.
        // n2 empty: RESFree 90, PUtil 1.111, P 1.1111, cost 11.111.
        let mut n = nodes(3);
        busy(&mut n[0], 10, 60.0, 100.0);
        busy(&mut n[1], 11, 40.0, 100.0);
        let mut p = LibraPlusDollar::new(PolicyConfig::default());
        // Budget 20: all within; best fit = smallest RESFree: n0, n1; the
        // cost is the higher of theirs, 13.333.
        match p.decide(0.0, &n, &job(1, 10.0, 2, 100.0, 20.0)) {
            Decision::Accept(a) => {
                assert_eq!(a.nodes, vec![0, 1]);
                assert!((a.cost - 40.0 / 3.0).abs() < 1e-9, "{}", a.cost);
            }
            d => panic!("{d:?}"),
        }
        // Budget 12.5: n0 too dear; walk takes n1 then n2, cost 12.
        match p.decide(0.0, &n, &job(1, 10.0, 2, 100.0, 12.5)) {
            Decision::Accept(a) => {
                assert_eq!(a.nodes, vec![1, 2]);
                assert!((a.cost - 12.0).abs() < 1e-9);
            }
            d => panic!("{d:?}"),
        }
        // Budget 11.5: only n2 within budget, P 2: rejected for budget.
        match p.decide(0.0, &n, &job(1, 10.0, 2, 100.0, 11.5)) {
            Decision::Reject(r) => assert_eq!(r.reason, RejectReason::Budget),
            d => panic!("{d:?}"),
        }
        // RE 50 in 100 s: n0 would need 1.1, so only n1 and n2 pass the
        // deadline filter, P 3: rejected for deadline.
        match p.decide(0.0, &n, &job(1, 50.0, 3, 100.0, 1e9)) {
            Decision::Reject(r) => assert_eq!(r.reason, RejectReason::Deadline),
            d => panic!("{d:?}"),
        }
    }

    /// An empty node's price depends on its speed: job RE 50, D 100 on
    /// an empty node of speed 2 needs 25 s (RESFree 75) and on one of
    /// speed 1 needs 50 s (RESFree 50, PUtil 2, P 1.2). Best fit takes
    /// the smaller RESFree, node 1 (speed 1, after the speed-2 node 0),
    /// and charges 50 x 1.2 = 60.
    #[test]
    fn empty_nodes_of_two_speeds_are_priced_apart() {
        let mut n = nodes(2);
        n[0].spec.speed = 2.0;
        let mut p = LibraPlusDollar::new(PolicyConfig::default());
        let a = match p.decide(0.0, &n, &job(1, 50.0, 1, 100.0, 1e9)) {
            Decision::Accept(a) => a,
            d => panic!("{d:?}"),
        };
        assert_eq!(a.nodes, [1]);
        assert!((a.cost - 60.0).abs() < 1e-9, "{a:?}");
    }

    /// Libra+$'s walk from the bounds, worked by hand: which nodes it
    /// meets, settles from their line, prices exactly, and which subtrees
    /// of its order it passes over. Job RE 10, D 100, P 1 on speed-1
    /// nodes: its share is `add` = 0.1, the share test's limit 1 + 1e-9,
    /// RESFree = 90 - committed. Every bound and line is exact unless said
    /// (lo = hi = line = the load, remaining-time bound = the remaining
    /// time), so the walk's floors are the RESFree less the rounding room
    /// (~1e-7). The order's buckets are 1.25 / 4096 of load wide: node
    /// `n`'s is `floor(lo x 3276.8)`, under tree node `4096 + bucket`.
    /// Node by node, in the walk's order (highest bucket first):
    /// - n0, load 0.95 (bucket 3112): above the walk's start (`limit -
    ///   add + 1e-9`, bucket 2949), never met.
    /// - n10, idle: RESFree 90 is the k-th (P = 1) before the walk; no
    ///   committed time (at least 0) has a floor above 90, so nothing is
    ///   passed over until the k-th falls.
    /// - n1 (bucket 2949): a lower bound 5e-10 past `limit - add` (inside
    ///   the start's 1e-9 of room, so met) with load 0.900001: it fails the
    ///   share test on its lower bound (met, nothing else).
    /// - n2 (bucket 2949): load exactly `limit - add` (1 s to its
    ///   deadline, so its load is its remaining time): with the job
    ///   exactly at the limit, which passes. Priced exactly: committed
    ///   0.9, RESFree 89.1, the k-th now.
    /// - n9 (bucket 2916): bound [0.89, 0.905], line 0.901 +- 0.0005,
    ///   90.1 s left: the line's lowest load, 0.9005, fails the share
    ///   test: settled from its line.
    /// - n3 (bucket 2785, alone in tree node 26, buckets 2560-2815):
    ///   load 0.85, 8.5 s left in 10 s: committed at most min(85, 8.5),
    ///   floor 81.5, not above 89.1: the subtree is opened and n3 priced:
    ///   committed 8.5 (all of it inside the window), RESFree 81.5, the
    ///   k-th now.
    /// - n4 (bucket 2129, alone in tree node 12, buckets 2048-2559): load
    ///   0.65, 6.5 s left: the subtree's bound min(100 x 0.65, 6.5) = 6.5
    ///   has floor 83.5 > 81.5: passed over, n4 never met.
    /// - Tree node 2 (buckets 0-2047: n5, n8, n6, n7): the largest upper
    ///   bound 0.604 (n8's) and remaining time 119.1 (n8's): min(60.4,
    ///   119.1) has floor 29.6, not above 81.5: opened, and down to n5
    ///   (bucket 1966), then n8 (1949), then n6 (1638), then n7 (983).
    /// - n5: load 0.6 with its deadline at 100 s: committed 60, RESFree
    ///   30, priced, the k-th now.
    /// - n8 (alone in tree node 188, buckets 1920-1951): bound [0.595,
    ///   0.604], line 0.5955 +- 0.0005, 119.1 s left by 200 s: the
    ///   subtree's floor, 100 - 60.4 - 10 = 29.6, does not pass it over,
    ///   but its line's, 100 - 100 x 0.596 - 10 = 30.4 (the window, not
    ///   its 119.1 s left, binding), settles it (its RESFree is 30.45).
    /// - n6 (alone in tree node 22, buckets 1536-1791): load 0.5, 50 s
    ///   left: floor 100 - 50 - 10 = 40 > 30: passed over.
    /// - n7 (alone in tree node 4, buckets 0-1023): load 0.3, 30 s left:
    ///   floor 60 > 30: passed over.
    ///
    /// So: 6 entries met (n1, n2, n9, n3, n5, n8), 2 settled from the line
    /// (n9, n8), 3 priced exactly (n2, n3, n5), 3 subtrees passed over
    /// (n4's, n6's, n7's); candidates the idle n10 and n2, n3, n5; the
    /// choice n5 at 10 x (1 + 0.1 x 100 / 30) = 13.333, the plain scan's.
    #[test]
    fn the_bounded_walk_prices_only_what_can_matter() {
        use crate::busy_index::{LoadBound, LoadLine};
        use crate::policy::steps::SHARE_SUM_EPS;
        let j = job(1, 10.0, 1, 100.0, 1e9);
        let (add, limit) = (0.1, 1.0 + SHARE_SUM_EPS);
        let at_limit = limit - add;
        let past_start = at_limit + 5e-10;
        // The float cases the walk's edges are about, as they stand.
        assert_eq!(at_limit + add, limit);
        assert!(past_start + add > limit && past_start <= at_limit + 1e-9);
        let mut n = nodes(11);
        // (remaining, deadline) of each busy node's one part.
        let parts = [
            (95.0, 100.0),
            (90.0001, 100.0),
            (at_limit, 1.0),
            (8.5, 10.0),
            (6.5, 10.0),
            (60.0, 100.0),
            (50.0, 100.0),
            (30.0, 100.0),
            (119.1, 200.0),
            (90.1, 100.0),
        ];
        for (k, &(rem, dt)) in parts.iter().enumerate() {
            busy(&mut n[k], k as u64, rem, dt);
        }
        // (lo, hi, line's load, line's half width) where not exact.
        let bound = |k: usize| match k {
            1 => (past_start, 0.900001, 0.900001, 0.0),
            8 => (0.595, 0.604, 0.5955, 0.0005),
            9 => (0.89, 0.905, 0.901, 0.0005),
            _ => {
                let l = n[k].required_share(0.0);
                (l, l, l, 0.0)
            }
        };
        let mut ix = BusyIndex::of(&n);
        ix.keep_load_tree(true);
        ix.rebound(0.0, |k, _, _, fns| {
            crate::policy::test_util::still_part_fns(&n[k], fns);
            let (lo, hi, v0, err) = bound(k);
            LoadBound {
                lo,
                hi,
                line: LoadLine {
                    t0: 0.0,
                    v0,
                    slope: 0.0,
                    err,
                    rem0: n[k].parts[0].est_cpu,
                    rem_slope: 0.0,
                },
            }
        });
        for k in 0..10 {
            let (lo, hi, _, _) = bound(k);
            let load = ix.exact_load(k, 0.0);
            assert!(
                lo <= load && load <= hi,
                "node {k}: {load} outside its bound"
            );
        }
        let (met, line, exact, passed) = (
            ENTRIES_MET.with(|c| c.get()),
            LINE_PRICED.with(|c| c.get()),
            PRICED_EXACTLY.with(|c| c.get()),
            SUBTREES_PASSED.with(|c| c.get()),
        );
        let mut out = Vec::new();
        let cfg = PolicyConfig::default();
        let mut priced = Vec::new();
        assert_eq!(
            filter_bounded(&cfg, 0.0, &n, &ix, &j, &mut out, &mut priced),
            None
        );
        assert_eq!(ENTRIES_MET.with(|c| c.get()) - met, 6, "entries met");
        assert_eq!(
            LINE_PRICED.with(|c| c.get()) - line,
            2,
            "settled from the line"
        );
        assert_eq!(
            PRICED_EXACTLY.with(|c| c.get()) - exact,
            3,
            "priced exactly"
        );
        assert_eq!(
            SUBTREES_PASSED.with(|c| c.get()) - passed,
            3,
            "subtrees passed over"
        );
        let got: Vec<usize> = out.iter().map(|c| c.0).collect();
        assert_eq!(got, [2, 3, 5, 10]);
        assert_eq!(out[0].1, limit);
        let mut p = LibraPlusDollar::new(cfg);
        let bounded = p
            .decide_bounded(0.0, &n, &ix, &j)
            .expect("the bounds apply");
        match &bounded {
            Decision::Accept(a) => {
                assert_eq!(a.nodes, [5]);
                assert!((a.cost - 40.0 / 3.0).abs() < 1e-9, "{a:?}");
            }
            d => panic!("{d:?}"),
        }
        assert_eq!(bounded, p.decide(0.0, &n, &j));
    }

    /// A subtree of Libra+$'s order is passed over whole when `D` times
    /// its largest upper bound of load or its largest caps
    /// (`Entry::committed_cap`, the remaining time among them) leave
    /// every node under it beyond the
    /// `k`-th smallest RESFree. Worked by hand: job RE 1, D 100, P 1 on
    /// speed-1 nodes (share 0.01, RESFree = 99 - committed, floors ~1e-7
    /// below). Buckets 1.25 / 4096 wide (`floor(lo x 3276.8)`); `D` = 100
    /// is below the first cap window, so a node's cap is its cap at 256 s:
    /// `min(R, Q x 256)` per part, `R` its time left, `Q` its largest share
    /// over the bound's window [0, 10].
    /// - n0: a wide bound [0.5, 0.99] (priced before the walk), load 0.9
    ///   due at 100 s: committed 90, RESFree 9, the k-th (idle n3's 99
    ///   before it).
    /// - n1 (load 0.3, 3 s left, due at 10 s, bucket 983) and n2 (load
    ///   0.2, 2 s left, bucket 655), alone under tree node 2 (buckets
    ///   0-2047): largest upper bound 0.3, largest cap 3 (n1's time
    ///   left): min(30, 3) = 3, floor 96 > 9: passed over, neither met.
    /// - n4: load 0.95, 9.5 s left, due at 10 s (bucket 3112, under node
    ///   3), its line starting at `t0`; due at the window's end, so its
    ///   share is unbounded there and its cap is its 9.5 s left.
    /// - n5: load 1.5 (15 s left, due at 10 s), a wide bound [1.2, 1.6]:
    ///   its lower bound fails the share test (1.21 > 1 + 1e-9), so it is
    ///   never priced, though it is as wide as n0.
    ///
    /// The root's bound is min(100 x 0.95, 9.5) = 9.5 (n4's cap), floor
    /// 89.5 > 9: the whole order is passed over at its root, nothing met.
    /// So it is with `t0` = 0 (the decision's instant) and with `t0` = 5
    /// (after the decision: no band from the line yet): the caps are
    /// taken from the parts at the bound's start, whatever the line.
    /// Either way the choice is n0 at 1 x (1 + 0.1 x 100 / 9) = 2.111,
    /// the scan's.
    #[test]
    fn a_subtree_is_passed_over_when_every_node_under_it_commits_too_little() {
        use crate::busy_index::{LoadBound, LoadLine};
        let j = job(1, 1.0, 1, 100.0, 1e9);
        let mut n = nodes(6);
        for (k, rem, dt) in [
            (0, 90.0, 100.0),
            (1, 3.0, 10.0),
            (2, 2.0, 10.0),
            (4, 9.5, 10.0),
            (5, 15.0, 10.0),
        ] {
            busy(&mut n[k], k as u64, rem, dt);
        }
        let cfg = PolicyConfig::default();
        // (t0 of n4's line, entries met, subtrees passed over, priced).
        for (t0, met_want, passed_want, priced_want) in [(0.0, 0, 1, 1), (5.0, 0, 1, 1)] {
            let mut ix = BusyIndex::of(&n);
            ix.keep_load_tree(true);
            ix.rebound(0.0, |k, _, _, fns| {
                crate::policy::test_util::still_part_fns(&n[k], fns);
                let load = n[k].required_share(0.0);
                let (lo, hi) = match k {
                    0 => (0.5, 0.99),
                    5 => (1.2, 1.6),
                    _ => (load, load),
                };
                LoadBound {
                    lo,
                    hi,
                    line: LoadLine {
                        t0: if k == 4 { t0 } else { 0.0 },
                        v0: load,
                        slope: 0.0,
                        err: 0.0,
                        rem0: n[k].parts[0].est_cpu,
                        rem_slope: 0.0,
                    },
                }
            });
            let (met, passed, exact) = (
                ENTRIES_MET.with(|c| c.get()),
                SUBTREES_PASSED.with(|c| c.get()),
                PRICED_EXACTLY.with(|c| c.get()),
            );
            let mut p = LibraPlusDollar::new(cfg.clone());
            let bounded = p
                .decide_bounded(0.0, &n, &ix, &j)
                .expect("the bounds apply");
            assert_eq!(
                ENTRIES_MET.with(|c| c.get()) - met,
                met_want,
                "t0 {t0}: met"
            );
            assert_eq!(
                SUBTREES_PASSED.with(|c| c.get()) - passed,
                passed_want,
                "t0 {t0}: passed over"
            );
            assert_eq!(
                PRICED_EXACTLY.with(|c| c.get()) - exact,
                priced_want,
                "t0 {t0}: priced"
            );
            match &bounded {
                Decision::Accept(a) => {
                    assert_eq!(a.nodes, [0]);
                    assert!((a.cost - (1.0 + 0.1 * 100.0 / 9.0)).abs() < 1e-9, "{a:?}");
                }
                d => panic!("{d:?}"),
            }
            assert_eq!(bounded, p.decide(0.0, &n, &j));
        }
    }

    /// Libra+$'s walk reads the wide nodes up to its start alone, and the
    /// debug build's check of the others bites: job RE 10, D 100 (share
    /// 0.1), 1 processor; n0 idle; n1's load is 0.3 but its wide bound
    /// claims [0.95, 1.3]: past the start 1 + 1e-9 - 0.1 + 1e-9, so it is
    /// never priced, and the check finds that it fits.
    #[cfg(debug_assertions)]
    #[test]
    #[should_panic(expected = "wide node 1 of lower bound 0.95 passed over at 0, but it fits")]
    fn a_wide_node_passed_over_on_a_lying_lower_bound_fails_the_debug_check() {
        use crate::busy_index::{LoadBound, LoadLine};
        let mut n = nodes(2);
        busy(&mut n[1], 11, 30.0, 100.0);
        let mut ix = BusyIndex::of(&n);
        ix.keep_load_tree(true);
        ix.rebound(0.0, |k, _, _, fns| {
            crate::policy::test_util::still_part_fns(&n[k], fns);
            LoadBound {
                lo: 0.95,
                hi: 1.3,
                line: LoadLine::NONE,
            }
        });
        let mut p = LibraPlusDollar::new(PolicyConfig::default());
        p.decide_bounded(0.0, &n, &ix, &job(1, 10.0, 1, 100.0, 1e9));
    }

    /// The debug build's check of the subtrees the walk passes over bites:
    /// a bound function that lies about one node's load makes the walk
    /// pass over a node the plain scan would choose, and the check, pricing
    /// that node exactly, panics. Job RE 10, D 100, P 1 on speed-1 nodes
    /// (share 0.1, RESFree = 100 - committed - 10):
    /// - n2, idle: RESFree 90, the k-th before the walk.
    /// - n0: 75 s left, due at 100 s: load 0.75 (bound exact, bucket
    ///   floor(0.75 x 3276.8) = 2457, under tree node 3), committed 75,
    ///   RESFree 15.
    /// - n1: 80 s left, due at 100 s: load 0.8, committed 80, RESFree 10,
    ///   the scan's choice. Its bound claims [0.05, 0.05] (bucket 163,
    ///   under tree node 2, buckets 0-2047).
    ///
    /// The walk opens tree node 3 (its floor, ~ 100 - 100 x 0.75 - 10 =
    /// 15, is not above 90) and prices n0: the k-th is 15. Tree node 2's bounds: D x hi = 100 x 0.05 = 5 (the line is
    /// none: no remaining-time bound; its cap, from n1's true parts, is
    /// min(80, 80/90 x 256) = 80), floor ~ 100 - 5 - 10 = 85 > 15: passed
    /// over. The check prices n1: RESFree 10, not above 15 + 1e-9: it
    /// panics. With the check's RESFree made `window + committed - est`
    /// (100 + 80 - 10 = 170) or `window - committed + est` (100 - 80 + 10
    /// = 30), both above 15, it would not.
    #[cfg(debug_assertions)]
    #[test]
    #[should_panic(expected = "node 1 passed over in subtree 2")]
    fn a_node_passed_over_on_a_lying_bound_fails_the_debug_check() {
        let j = job(1, 10.0, 1, 100.0, 1e9);
        let mut n = nodes(3);
        busy(&mut n[0], 0, 75.0, 100.0);
        busy(&mut n[1], 1, 80.0, 100.0);
        let mut ix = BusyIndex::of(&n);
        ix.keep_load_tree(true);
        crate::policy::test_util::rebound_lying(&mut ix, &n, 0.0, 1, 0.05);
        let mut p = LibraPlusDollar::new(PolicyConfig::default());
        let d = p.decide_bounded(0.0, &n, &ix, &j);
        unreachable!("the check let the walk pass over node 1: {d:?}");
    }

    /// The debug build's check stops at 4,096 nodes a decision (it prices
    /// each one: a large cluster in a debug build would otherwise pay for
    /// every node the walk saves). Job RE 10, D 100, P 1 (RESFree = 90 -
    /// committed), every bound exact, no line:
    /// - n4101, idle: RESFree 90, the k-th before the walk; no floor
    ///   below is above it, so nothing is passed over until n0 is priced.
    /// - n0: 80 s left, due at 100 s (load 0.8, bucket 2621, tree node 13,
    ///   buckets 2560-3071): committed 80, RESFree 10.
    /// - n1-n2100: 70 s left each (load 0.7, bucket 2293, tree node 12,
    ///   buckets 2048-2559): RESFree 20.
    /// - n2101-n4100: 1 s left each (load 0.01, bucket 32, tree node 2):
    ///   RESFree 89.
    ///
    /// The walk opens node 13 first (its floor ~ 10) and prices n0: the
    /// k-th is 10. Node 12: min(100 x 0.7, caps min(70, 70/90 x 256) = 70) =
    /// 70, floor ~ 20 > 10: passed over, its 2,100 nodes checked. Node 2:
    /// min(100 x 0.01, 1) = 1, floor ~ 89 > 10: passed over, 4,096 - 2,100
    /// = 1,996 of its 2,000 nodes checked. 4,096 in all (a count per
    /// subtree instead would check all 4,100). The choice: n0 at 10 x (1 +
    /// 0.1 x 100 / 10) = 20, the plain scan's.
    #[cfg(debug_assertions)]
    #[test]
    fn the_debug_check_of_passed_over_subtrees_stops_at_its_cap() {
        let j = job(1, 10.0, 1, 100.0, 1e9);
        let mut n = nodes(4102);
        busy(&mut n[0], 0, 80.0, 100.0);
        for (k, node) in n.iter_mut().enumerate().take(4101).skip(1) {
            let rem = if k <= 2100 { 70.0 } else { 1.0 };
            busy(node, k as u64, rem, 100.0);
        }
        let mut ix = BusyIndex::of(&n);
        ix.keep_load_tree(true);
        crate::policy::test_util::rebound_exact_at_zero(&mut ix, &n);
        let (passed, checked) = (
            SUBTREES_PASSED.with(|c| c.get()),
            NODES_CHECKED.with(|c| c.get()),
        );
        let mut p = LibraPlusDollar::new(PolicyConfig::default());
        let bounded = p
            .decide_bounded(0.0, &n, &ix, &j)
            .expect("the bounds apply");
        assert_eq!(
            SUBTREES_PASSED.with(|c| c.get()) - passed,
            2,
            "subtrees passed over"
        );
        assert_eq!(
            NODES_CHECKED.with(|c| c.get()) - checked,
            4096,
            "nodes checked"
        );
        match &bounded {
            Decision::Accept(a) => {
                assert_eq!(a.nodes, [0]);
                assert!((a.cost - 20.0).abs() < 1e-9, "{a:?}");
            }
            d => panic!("{d:?}"),
        }
        assert_eq!(bounded, p.decide(0.0, &n, &j));
    }
}
