//! Libra+$ (its paper's Algorithm 1): Libra's resource and deadline filters,
//! then a dynamic price per node, P_ij = alpha PBase + beta PUtil_ij, with
//! PUtil_ij = RESMax_j / RESFree_ij x PBase over the job's window
//! [AT_i, DT_i], and best fit by RESFree within the budget.

use serde::{Deserialize, Serialize};

use super::steps::{
    load_if_fits, resource_deadline_filter, resource_deadline_filter_indexed, too_many_processors,
    top_k, Better,
};
use super::{Accept, AdmissionPolicy, Decision, PolicyConfig, RejectReason};
use crate::busy_index::BusyIndex;
use crate::job::JobSpec;
use crate::node_model::NodeState;
use crate::share::SpareRule;
use crate::time::Time;

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
}

impl LibraPlusDollar {
    /// Libra+$ with these knobs (alpha, beta, PBase, spare rule).
    pub fn new(cfg: PolicyConfig) -> LibraPlusDollar {
        LibraPlusDollar {
            cfg,
            cands: Vec::new(),
            quotes: Vec::new(),
        }
    }

    /// RESFree_ij: the window's processor time D_i, less what every
    /// on-track part k needs inside the window at its required share,
    /// q_k x min(rd_k, D_i), less the job's own RE_i / s_j. Overdue parts
    /// commit nothing (the share rule gives them only spare or pool time).
    pub fn res_free(now: Time, node: &NodeState, job: &JobSpec) -> f64 {
        let window = job.qos.deadline;
        let committed: f64 = node
            .parts
            .iter()
            .map(|p| {
                let s = p.share_input(now);
                if s.on_track() {
                    s.required() * s.rd.min(window)
                } else {
                    0.0
                }
            })
            .sum();
        window - committed - node.est_cpu(job)
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
        if res_free <= 0.0 {
            return None;
        }
        let putil = job.qos.deadline / res_free * cfg.pbase;
        let price = cfg.alpha * cfg.pbase + cfg.beta * putil;
        Some(PriceQuote {
            node: node.spec.id,
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
        self.decide_with(
            nodes,
            job,
            |cands| resource_deadline_filter(now, nodes, job, cands, None),
            now,
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
        self.decide_with(
            nodes,
            job,
            |cands| {
                resource_deadline_filter_indexed(now, nodes, index, job, cands, job.processors())
            },
            now,
        )
    }
}

impl LibraPlusDollar {
    /// The decision with `filter` for the resource and deadline filters
    /// (candidates in node order with their load after the part), then
    /// each candidate priced.
    fn decide_with(
        &mut self,
        nodes: &[NodeState],
        job: &JobSpec,
        filter: impl FnOnce(&mut Vec<(usize, f64)>) -> Option<Decision>,
        now: Time,
    ) -> Decision {
        if let Some(d) = too_many_processors(nodes, job) {
            return d;
        }
        let p = job.processors();
        if let Some(d) = filter(&mut self.cands) {
            return d;
        }
        self.quotes.clear();
        // An empty node's quote depends on its speed alone (no parts, so
        // nothing committed): computed again only when the speed differs
        // from the last empty node's; the very same value.
        let mut empty: Option<(f64, Option<PriceQuote>)> = None;
        for &(k, _) in &self.cands {
            let n = &nodes[k];
            let quote = if n.parts.is_empty() {
                match empty {
                    Some((speed, q)) if speed == n.spec.speed => q,
                    _ => {
                        let q = LibraPlusDollar::quote(&self.cfg, now, n, job);
                        empty = Some((n.spec.speed, q));
                        q
                    }
                }
            } else {
                LibraPlusDollar::quote(&self.cfg, now, n, job)
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
}
