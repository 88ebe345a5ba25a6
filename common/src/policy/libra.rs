//! Libra (its own paper, as compared in the Libra+$, LibraSLA and
//! LibraRisk papers): a static cost, then the
//! deadline-based proportional-share test on every node, then best fit.

use super::steps::{
    best_fit_filter_bounded, bounds_apply, budget_permit, resource_deadline_filter,
    resource_deadline_filter_indexed, too_many_processors, top_k, Better,
};
use super::{Accept, AdmissionPolicy, BoundedReads, Decision, Placement, PolicyConfig};
use crate::busy_index::BusyIndex;
use crate::job::JobSpec;
use crate::node_model::NodeState;
use crate::share::SpareRule;
use crate::time::Time;

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

    /// The bounded best fit only (`decide_bounded` checks the placement
    /// too).
    fn bounded_reads(&self) -> Option<BoundedReads> {
        (self.cfg.placement == Placement::BestFit).then_some(BoundedReads::WidthClasses)
    }

    fn decide_bounded(
        &mut self,
        now: Time,
        nodes: &[NodeState],
        index: &BusyIndex,
        job: &JobSpec,
    ) -> Option<Decision> {
        // Least loaded would walk the other end of the order; it keeps the
        // indexed walk.
        if self.cfg.placement != Placement::BestFit || !bounds_apply(nodes, index, job) {
            return None;
        }
        let d = self.decide_with(nodes, job, |cands| {
            best_fit_filter_bounded(now, nodes, index, job, cands)
                .expect("the same conditions were checked above")
        });
        Some(d)
    }
}

impl Libra {
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
        let better = match self.cfg.placement {
            Placement::BestFit => Better::Higher,
            Placement::LeastLoaded => Better::Lower,
        };
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
