//! Property tests: invariants every policy (or a named family) must keep on
//! random small workloads.

use common::job::*;
use common::node_model::{FluidCluster, NodeSpec, PartFinished, PartView};
use common::policy::{self, Decision, LibraRisk, LibraSla, Policy, PolicyConfig, REGISTRY};
use common::share::SpareRule;
use common::sim::simulate;
use common::workload::{self, Params, WorkloadJob};
use proptest::prelude::*;

fn specs(n: usize) -> Vec<NodeSpec> {
    (0..n)
        .map(|id| NodeSpec {
            id,
            speed: 1.0,
            memory_kb: 1 << 20,
            disk_mb: 1 << 10,
        })
        .collect()
}

/// A job with an accurate estimate (RE = R).
fn job(id: u64, submit: f64, runtime: f64, procs: u32, slack: f64, budget: f64) -> WorkloadJob {
    let urgency = if id.is_multiple_of(5) {
        Urgency::High
    } else {
        Urgency::Low
    };
    WorkloadJob {
        spec: JobSpec::new(id, submit, runtime, procs, runtime * slack, budget)
            .with_urgency(urgency),
        actual_runtime: runtime,
    }
}

/// Random workloads of up to 40 jobs on up to 6 nodes, accurate estimates.
fn workloads() -> impl Strategy<Value = (Vec<WorkloadJob>, usize)> {
    (
        prop::collection::vec(
            (
                0.0..50.0f64,
                1.0..100.0f64,
                1u32..4,
                1.05..6.0f64,
                0.5..4.0f64,
            ),
            1..40,
        ),
        1usize..6,
    )
        .prop_map(|(raw, nodes)| {
            let mut t = 0.0;
            let jobs = raw
                .into_iter()
                .enumerate()
                .map(|(k, (gap, r, p, slack, bf))| {
                    t += gap;
                    if k == 0 {
                        // Job 1 fits any policy's admission on the idle
                        // cluster (one processor, twice its runtime to its
                        // deadline, four times its runtime as budget: Libra
                        // charges r + 1/2, Libra+$ r (1 + 0.1 x 2)), so
                        // the properties over accepted jobs never hold
                        // vacuously.
                        return job(1, t, r, 1, slack.max(2.0), 4.0 * r);
                    }
                    job(k as u64 + 1, t, r, p, slack, bf * r)
                })
                .collect();
            (jobs, nodes)
        })
}

/// The suite's count of random cases, or `PROPTEST_CASES` when it is set
/// (as for a plain proptest config): scripts/mutants.sh runs fewer per
/// mutant, the suite keeps its count.
fn cases(full: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(full)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(128)))]

    /// Under accurate estimates no job accepted by Libra or Libra+$ misses
    /// its deadline (whatever the spare rule).
    #[test]
    fn accurate_estimates_meet_every_accepted_deadline((jobs, n) in workloads(), idle in any::<bool>()) {
        for name in ["libra", "libra-plus-dollar"] {
            let cfg = PolicyConfig {
                spare_rule: if idle { SpareRule::Idle } else { SpareRule::Proportional },
                ..PolicyConfig::default()
            };
            let p = policy::build(name, &cfg, &specs(n)).unwrap();
            let out = simulate(&jobs, &specs(n), p);
            prop_assert!(out.records.iter().any(|r| r.id == 1 && r.accepted), "{name}: job 1 rejected");
            for r in &out.records {
                if r.accepted {
                    prop_assert!(r.met(), "{name}: job {} accepted but finished {:?} after DT {}", r.id, r.finish, r.deadline_abs());
                }
            }
        }
    }

    /// After every Libra-family admission, no node's required shares
    /// exceed 1 (LibraRisk excepted: it may take a lone late part).
    #[test]
    fn admission_keeps_required_shares_within_one((jobs, n) in workloads()) {
        for name in ["libra", "libra-plus-dollar"] {
            let Policy::Admission(mut p) = policy::build(name, &PolicyConfig::default(), &specs(n)).unwrap() else {
                unreachable!()
            };
            let mut cluster = FluidCluster::new(&specs(n), p.spare_rule(), 0.0);
            let mut fin: Vec<PartFinished> = Vec::new();
            let mut placed = 0;
            for j in &jobs {
                let now = j.spec.details.submit_time;
                cluster.advance_to(now, &mut fin);
                let d = p.decide(now, &cluster.states, &j.spec);
                // Job 1 fits the idle cluster: a policy rejecting all
                // would pass the share check vacuously.
                prop_assert!(j.spec.id != 1 || matches!(d, Decision::Accept(_)), "{name}: job 1 rejected");
                if let Decision::Accept(a) = d {
                    prop_assert_eq!(a.nodes.len(), j.spec.processors());
                    for &k in &a.nodes {
                        let part = cluster.states[k].new_part(&j.spec, 0.0);
                        cluster.place(k, part, j.actual_runtime);
                        placed += 1;
                        let q = cluster.states[k].required_share(now);
                        prop_assert!(q <= 1.0 + 1e-9, "{name}: node {k} at {q}");
                    }
                }
            }
            // The cluster ran what was placed: every part ends (a cluster
            // that dropped or froze its parts would pass the check above
            // vacuously).
            cluster.advance_to(1e12, &mut fin);
            prop_assert_eq!(fin.len(), placed, "{}: parts finished of those placed", name);
        }
    }

    /// Every registered policy gives every job exactly one outcome:
    /// accepted with one node per processor (distinct nodes), or rejected
    /// with a reason and never run; accepted jobs finish.
    #[test]
    fn every_policy_accounts_for_every_job((jobs, n) in workloads()) {
        for e in REGISTRY {
            let out = simulate(&jobs, &specs(n), (e.build)(&PolicyConfig::default(), &specs(n)));
            prop_assert_eq!(out.records.len(), jobs.len());
            // Built here `batsim` has no scheduler and drops every job
            // (reason `scheduler`); every other policy takes job 1.
            prop_assert!(e.name == "batsim" || out.records.iter().any(|r| r.id == 1 && r.accepted), "{}: job 1 rejected", e.name);
            for (r, j) in out.records.iter().zip(&jobs) {
                prop_assert_eq!(r.id, j.spec.id);
                if r.accepted {
                    prop_assert!(r.reason.is_none());
                    prop_assert_eq!(r.nodes.len(), j.spec.processors());
                    let mut ns = r.nodes.clone();
                    ns.sort_unstable();
                    ns.dedup();
                    prop_assert_eq!(ns.len(), r.nodes.len());
                    prop_assert!(r.finish.is_some(), "{}: job {} never finished", e.name, r.id);
                    prop_assert!(r.start.unwrap() >= r.submit);
                } else {
                    prop_assert!(r.reason.is_some(), "{}: job {} has no outcome", e.name, r.id);
                    prop_assert!(r.finish.is_none());
                }
            }
        }
    }

    /// Space-shared policies never run two jobs on one node at once.
    #[test]
    fn space_shared_nodes_run_one_job_at_a_time((jobs, n) in workloads()) {
        for name in ["fcfs-bf", "sjf-bf", "edf-bf", "edf", "fifo"] {
            let out = simulate(&jobs, &specs(n), policy::build(name, &PolicyConfig::default(), &specs(n)).unwrap());
            prop_assert!(out.records.iter().any(|r| r.id == 1 && r.accepted), "{name}: job 1 rejected");
            let mut by_node: Vec<Vec<(f64, f64)>> = vec![Vec::new(); n];
            for r in out.records.iter().filter(|r| r.accepted) {
                for &k in &r.nodes {
                    by_node[k].push((r.start.unwrap(), r.finish.unwrap()));
                }
            }
            for iv in &mut by_node {
                iv.sort_by(|a, b| a.0.total_cmp(&b.0));
                for w in iv.windows(2) {
                    prop_assert!(w[1].0 >= w[0].1 - 1e-9, "{name}: overlap {w:?}");
                }
            }
        }
    }

    /// Under accurate estimates no job accepted by QoPS, VQoPS or DVQoPS
    /// misses its deadline (DVQoPS with windows of seconds, so that its
    /// what-if replays run), and no node runs two jobs at once.
    #[test]
    fn qops_family_meets_every_accepted_deadline((jobs, n) in workloads(), oc in 0.0..0.3f64, k in 0u32..3) {
        let cfg = PolicyConfig {
            qops_k: k,
            oc_factor: oc,
            rollback_window_hours: 0.005,
            rollback_candidates_hours: vec![0.002, 0.005, 0.01],
            max_rollback_window_hours: 0.02,
            ..PolicyConfig::default()
        };
        for name in ["qops", "vqops", "dvqops"] {
            let out = simulate(&jobs, &specs(n), policy::build(name, &cfg, &specs(n)).unwrap());
            prop_assert!(out.records.iter().any(|r| r.id == 1 && r.accepted), "{name}: job 1 rejected");
            let mut by_node: Vec<Vec<(f64, f64)>> = vec![Vec::new(); n];
            for r in &out.records {
                if r.accepted {
                    prop_assert!(r.met(), "{name}: job {} accepted but finished {:?} after DT {}", r.id, r.finish, r.deadline_abs());
                    // The price never exceeds the budget (the full price).
                    prop_assert!(r.cost <= r.budget + 1e-9);
                    for &k in &r.nodes {
                        by_node[k].push((r.start.unwrap(), r.finish.unwrap()));
                    }
                }
            }
            for iv in &mut by_node {
                iv.sort_by(|a, b| a.0.total_cmp(&b.0));
                for w in iv.windows(2) {
                    prop_assert!(w[1].0 >= w[0].1 - 1e-9, "{name}: overlap {w:?}");
                }
            }
        }
    }

    /// LibraSLA's shortcut (skip the projections when the node is not
    /// short even with the new job) never changes a node's returns.
    #[test]
    fn sla_shortcut_changes_nothing(
        parts in prop::collection::vec((0.0..100.0f64, 1.0..200.0f64, 0.0..3.0f64, any::<bool>()), 0..5),
        re in 1.0..150.0f64,
        d in 1.0..200.0f64,
    ) {
        let mut node = common::node_model::NodeState::new(specs(1).remove(0));
        for (k, (rem, rd, v, hard)) in parts.into_iter().enumerate() {
            node.parts.push(PartView { job: k as u64, est_cpu: rem, cpu_done: 0.0, deadline: rd, memory_kb: 0, disk_mb: 0, ret: v, ret_penalty: v / 100.0, hard });
        }
        let mut j = job(99, 0.0, re, 1, d / re, 2.0 * re).spec;
        j.qos.deadline_type = DeadlineType::Soft;
        j.qos.penalty_rate = 1.0;
        let mut with = LibraSla::new(PolicyConfig::default());
        let mut without = LibraSla::new(PolicyConfig { risk_shortcut: false, ..PolicyConfig::default() });
        let (a, b) = (with.node_return(0.0, &node, &j), without.node_return(0.0, &node, &j));
        prop_assert!((a.old - b.old).abs() <= 1e-9 * a.old.abs().max(1.0), "{a:?} {b:?}");
        prop_assert!((a.new - b.new).abs() <= 1e-9 * a.new.abs().max(1.0), "{a:?} {b:?}");
        prop_assert_eq!(a.new_delay, b.new_delay);
    }

    /// LibraRisk's shortcut (skip the projection when the share test
    /// passes and no deadline has passed) never changes a decision.
    #[test]
    fn risk_shortcut_changes_nothing(
        parts in prop::collection::vec((0.0..100.0f64, 1.0..200.0f64), 0..5),
        re in 1.0..150.0f64,
        d in 1.0..200.0f64,
    ) {
        let mut node = common::node_model::NodeState::new(specs(1).remove(0));
        for (k, (rem, rd)) in parts.into_iter().enumerate() {
            node.parts.push(PartView { job: k as u64, est_cpu: rem, cpu_done: 0.0, deadline: rd, memory_kb: 0, disk_mb: 0, ret: 0.0, ret_penalty: 0.0, hard: false });
        }
        let j = job(99, 0.0, re, 1, d / re, 1e12).spec;
        let mut with = LibraRisk::new(PolicyConfig::default());
        let mut without = LibraRisk::new(PolicyConfig { risk_shortcut: false, ..PolicyConfig::default() });
        prop_assert_eq!(with.zero_risk(0.0, &node, &j), without.zero_risk(0.0, &node, &j));
    }
}

/// Identical seeds give identical workloads and identical runs; another
/// seed gives another workload.
#[test]
fn identical_seeds_give_identical_runs() {
    let p = Params::preset("libra").unwrap();
    let a = workload::build(&p, None).unwrap();
    let b = workload::build(&p, None).unwrap();
    assert_eq!(a.jobs, b.jobs);
    for e in REGISTRY {
        let specs = p.node_specs();
        let x = simulate(&a.jobs, &specs, (e.build)(&PolicyConfig::default(), &specs));
        let y = simulate(&b.jobs, &specs, (e.build)(&PolicyConfig::default(), &specs));
        assert_eq!(x.records, y.records, "{}", e.name);
    }
    let mut q = p.clone();
    q.seed += 1;
    assert_ne!(workload::build(&q, None).unwrap().jobs, a.jobs);
}
