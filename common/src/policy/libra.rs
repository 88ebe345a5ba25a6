//! Libra (its own paper, as compared in the Libra+$, LibraSLA and
//! LibraRisk papers): a static cost, then the
//! deadline-based proportional-share test on every node, then best fit.

use super::steps::{
    bounds_apply, budget_permit, resource_deadline_filter, resource_deadline_filter_indexed,
    share_filter_bounded, too_many_processors, top_k, Better,
};
use super::{Accept, AdmissionPolicy, BoundedReads, Decision, Placement, PolicyConfig};
use crate::busy_index::BusyIndex;
use crate::job::JobSpec;
use crate::node_model::NodeState;
use crate::share::SpareRule;
use crate::time::Time;

/// Least loaded decides on the indexed walk rather than from the bounds
/// while more than one busy node in this many is wide and more than
/// [`WIDE_WALK_MIN`] are (see `decide_bounded`).
const WIDE_SHARE_FOR_THE_WALK: usize = 8;

/// Wide nodes a least-loaded decision walks from the bounds whatever
/// their share of the busy nodes.
const WIDE_WALK_MIN: usize = 64;

/// Libra's admission control.
pub struct Libra {
    cfg: PolicyConfig,
    cands: Vec<(usize, f64)>,
}

impl Libra {
    /// Libra with these knobs (gamma, delta, placement, spare rule).
    pub fn new(cfg: PolicyConfig) -> Libra {
        Libra {
            cfg,
            cands: Vec::new(),
        }
    }
}

impl AdmissionPolicy for Libra {
    fn name(&self) -> &'static str {
        "libra"
    }

    fn spare_rule(&self) -> SpareRule {
        self.cfg.spare_rule
    }

    fn decide(&mut self, now: Time, nodes: &[NodeState], job: &JobSpec) -> Decision {
        self.decide_with(nodes, job, |cands| {
            resource_deadline_filter(now, nodes, job, cands, Some(job.processors()))
        })
    }

    fn decide_indexed(
        &mut self,
        now: Time,
        nodes: &[NodeState],
        index: &BusyIndex,
        job: &JobSpec,
    ) -> Decision {
        self.decide_with(nodes, job, |cands| {
            resource_deadline_filter_indexed(now, nodes, index, job, cands, job.processors())
        })
    }

    fn bounded_reads(&self) -> Option<BoundedReads> {
        Some(BoundedReads::WidthClasses)
    }

    fn decide_bounded(
        &mut self,
        now: Time,
        nodes: &[NodeState],
        index: &BusyIndex,
        job: &JobSpec,
    ) -> Option<Decision> {
        if !bounds_apply(nodes, index, job) {
            return None;
        }
        let better = self.better();
        // Least loaded computes the exact load of every wide node whose
        // lower bound is within the tolerance of an idle node's (a part
        // near its deadline, which may finish inside the window, has a
        // lower bound of 0), one random read of the index's record each,
        // where the indexed walk reads the busy nodes in sequence.
        // `live_latency` at 158,976 nodes, its cluster-full step (~900 to
        // 2,800 busy nodes, nearly all wide): policy compute p50 17 us
        // from the bounds against 5 us on the indexed walk. Where more
        // than an eighth of the busy nodes are wide, and enough of them to
        // matter (64), the indexed walk is the cheaper plan (the same
        // decision either way).
        let wide = index.wide_len();
        if better == Better::Lower
            && wide > WIDE_WALK_MIN
            && wide * WIDE_SHARE_FOR_THE_WALK > index.busy_len()
        {
            return None;
        }
        let d = self.decide_with(nodes, job, |cands| {
            share_filter_bounded(now, nodes, index, job, cands, better)
                .expect("the same conditions were checked above")
        });
        Some(d)
    }
}

impl Libra {
    /// The end of the load after the job that its placement takes.
    fn better(&self) -> Better {
        match self.cfg.placement {
            Placement::BestFit => Better::Higher,
            Placement::LeastLoaded => Better::Lower,
        }
    }

    /// Libra's steps, with `filter` (over every node, or over an index of
    /// the busy ones: the same candidates) filling the candidates.
    fn decide_with(
        &mut self,
        nodes: &[NodeState],
        job: &JobSpec,
        filter: impl FnOnce(&mut Vec<(usize, f64)>) -> Option<Decision>,
    ) -> Decision {
        if let Some(d) = too_many_processors(nodes, job) {
            return d;
        }
        let cost = match budget_permit(&self.cfg, job) {
            Ok(c) => c,
            Err(d) => return d,
        };
        if let Some(d) = filter(&mut self.cands) {
            return d;
        }
        let better = self.better();
        top_k(&mut self.cands, job.processors(), better);
        Decision::Accept(Accept {
            nodes: self.cands.iter().map(|c| c.0).collect(),
            cost,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::test_util::{busy, job, nodes};
    use crate::policy::RejectReason;

    fn accept(d: Decision) -> Accept {
        match d {
            Decision::Accept(a) => a,
            Decision::Reject(r) => panic!("rejected: {r:?}"),
        }
    }

    fn reason(d: Decision) -> RejectReason {
        match d {
            Decision::Reject(r) => r.reason,
            Decision::Accept(a) => panic!("accepted: {a:?}"),
        }
    }

    #[test]
    fn cost_is_re_plus_re_over_d() {
        // RE 100, D 400: C = 100 + 100/400 = 100.25.
        let c = crate::policy::steps::static_cost(
            &PolicyConfig::default(),
            &job(1, 100.0, 1, 400.0, 1e9),
        );
        assert!((c - 100.25).abs() < 1e-12);
    }

    #[test]
    fn budget_below_cost_is_rejected_for_budget() {
        let mut l = Libra::new(PolicyConfig::default());
        let n = nodes(2);
        assert_eq!(
            reason(l.decide(0.0, &n, &job(1, 100.0, 1, 400.0, 100.2))),
            RejectReason::Budget
        );
        // Exactly the cost is enough.
        accept(l.decide(0.0, &n, &job(1, 100.0, 1, 400.0, 100.25)));
    }

    /// Least loaded takes the indexed walk when wide nodes are many: 1,000
    /// nodes, 300 busy at 0.4 each; bounded with every busy node exact
    /// (none wide), then with 65 or 37 of them bounded over [0, 0.5] (wide:
    /// a part that may finish inside the window). 65 wide of 300 is more
    /// than 64 and more than an eighth: the bounds are not used (the
    /// caller walks the busy nodes); 37 is neither. Best fit uses them in
    /// every case. Where the bounds are used, the choice is node 300, the
    /// first idle one (load after 0.1).
    #[test]
    fn least_loaded_walks_the_busy_nodes_when_wide_ones_are_many() {
        use crate::busy_index::{BusyIndex, LoadBound, LoadLine};
        use crate::policy::test_util::still_part_fns;
        let mut n = nodes(1000);
        for (k, node) in n.iter_mut().enumerate().take(300) {
            busy(node, 10 + k as u64, 40.0, 100.0);
        }
        let least = PolicyConfig {
            placement: Placement::LeastLoaded,
            ..PolicyConfig::default()
        };
        let j = job(1, 10.0, 1, 100.0, 1e9);
        for (wide, bounded) in [(0, true), (37, true), (65, false)] {
            let mut ix = BusyIndex::of(&n);
            ix.rebound(0.0, |k, _, _, fns| {
                still_part_fns(&n[k], fns);
                let q = n[k].required_share(0.0);
                LoadBound {
                    lo: if k < wide { 0.0 } else { q },
                    hi: if k < wide { 0.5 } else { q },
                    line: LoadLine::NONE,
                }
            });
            assert_eq!(ix.wide_len(), wide);
            let mut ll = Libra::new(least.clone());
            let d = ll.decide_bounded(0.0, &n, &ix, &j);
            assert_eq!(d.is_some(), bounded, "{wide} wide");
            if let Some(d) = d {
                assert_eq!(accept(d).nodes, vec![300]);
            }
            let mut bf = Libra::new(PolicyConfig::default());
            assert!(bf.decide_bounded(0.0, &n, &ix, &j).is_some());
        }
    }

    #[test]
    fn best_fit_takes_the_fullest_node_that_fits() {
        // Node loads at now = 0: n0 0.5 (rem 50 / rd 100), n1 0.7, n2 0.1.
        // New job RE 20, D 100 adds 0.2: loads after 0.7, 0.9, 0.3. All fit;
        // best fit takes n1, then n0 for a second processor.
        let mut n = nodes(3);
        busy(&mut n[0], 10, 50.0, 100.0);
        busy(&mut n[1], 11, 70.0, 100.0);
        busy(&mut n[2], 12, 10.0, 100.0);
        let mut l = Libra::new(PolicyConfig::default());
        assert_eq!(
            accept(l.decide(0.0, &n, &job(1, 20.0, 1, 100.0, 1e9))).nodes,
            vec![1]
        );
        assert_eq!(
            accept(l.decide(0.0, &n, &job(1, 20.0, 2, 100.0, 1e9))).nodes,
            vec![1, 0]
        );
        // RE 40 adds 0.4: n1 would reach 1.1 and is unsuitable; best fit
        // among n0 (0.9) and n2 (0.5) is n0.
        assert_eq!(
            accept(l.decide(0.0, &n, &job(1, 40.0, 1, 100.0, 1e9))).nodes,
            vec![0]
        );
        // Least loaded picks n2 instead.
        let mut ll = Libra::new(PolicyConfig {
            placement: Placement::LeastLoaded,
            ..PolicyConfig::default()
        });
        assert_eq!(
            accept(ll.decide(0.0, &n, &job(1, 40.0, 1, 100.0, 1e9))).nodes,
            vec![2]
        );
    }

    #[test]
    fn too_few_suitable_nodes_is_a_deadline_rejection() {
        // RE 60 in D 100 needs 0.6: only n2 (0.1) has room; P = 2 fails.
        let mut n = nodes(3);
        busy(&mut n[0], 10, 50.0, 100.0);
        busy(&mut n[1], 11, 70.0, 100.0);
        busy(&mut n[2], 12, 10.0, 100.0);
        let mut l = Libra::new(PolicyConfig::default());
        assert_eq!(
            reason(l.decide(0.0, &n, &job(1, 60.0, 2, 100.0, 1e9))),
            RejectReason::Deadline
        );
        // An estimate beyond the deadline never fits (0 + 1.5 > 1).
        assert_eq!(
            reason(l.decide(0.0, &nodes(1), &job(1, 150.0, 1, 100.0, 1e9))),
            RejectReason::Deadline
        );
        // More processors than nodes: resources.
        assert_eq!(
            reason(l.decide(0.0, &n, &job(1, 1.0, 4, 100.0, 1e9))),
            RejectReason::Resources
        );
    }

    #[test]
    fn overdue_parts_count_zero() {
        // A part past its estimate (rem <= 0) with a deadline ahead is
        // overdue: Libra counts it 0, so a full-size job still fits. This
        // is the blind spot LibraRisk addresses.
        let mut n = nodes(1);
        busy(&mut n[0], 10, 0.0, 500.0);
        let mut l = Libra::new(PolicyConfig::default());
        accept(l.decide(0.0, &n, &job(1, 100.0, 1, 100.0, 1e9)));
    }

    #[test]
    fn memory_filter_rejects_for_resources() {
        let mut n = nodes(2);
        n[0].spec.memory_kb = 10;
        let mut j = job(1, 10.0, 2, 100.0, 1e9);
        j.resources.memory_kb = 100;
        let mut l = Libra::new(PolicyConfig::default());
        assert_eq!(reason(l.decide(0.0, &n, &j)), RejectReason::Resources);
    }

    /// Libra's nodes (and those of Libra+$ and LibraRisk, which take the
    /// rule the same way) run the spare rule it is configured with: a lone
    /// job (RE 50, D 100, q 0.5) on one node finishes at 50 when the spare
    /// goes to it (proportional) and at its deadline, 100, when the spare
    /// stays idle.
    #[test]
    fn nodes_run_the_configured_spare_rule() {
        use crate::node_model::NodeSpec;
        use crate::policy::PolicyConfig;
        use crate::sim::simulate;
        use crate::workload::WorkloadJob;
        let node = [NodeSpec {
            id: 0,
            speed: 1.0,
            memory_kb: 0,
            disk_mb: 0,
        }];
        let jobs = [WorkloadJob {
            spec: job(1, 50.0, 1, 100.0, 1e9),
            actual_runtime: 50.0,
        }];
        for name in ["libra", "libra-plus-dollar", "libra-risk"] {
            for (rule, finish) in [(SpareRule::Proportional, 50.0), (SpareRule::Idle, 100.0)] {
                let cfg = PolicyConfig {
                    spare_rule: rule,
                    ..PolicyConfig::default()
                };
                let o = simulate(
                    &jobs,
                    &node,
                    crate::policy::build(name, &cfg, &node).unwrap(),
                );
                let end = o.records[0].finish.unwrap();
                assert!(
                    (end - finish).abs() < 1e-6,
                    "{name}, {rule:?}: finished at {end}"
                );
            }
        }
    }
}
