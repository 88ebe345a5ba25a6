//! Policy-core benchmarks (issue: foundation). Run with
//! `cargo bench -p libratory-benches --bench policy_core`.
//!
//! 1. The 5000-job SDSC SP2 preset of the Libra+$ paper on 128 nodes: jobs simulated
//!    per second for each Libra-family policy, and the ratio to a baseline
//!    measured in the same run: the same engine with a policy that rejects
//!    everything (the cost of the engine and workload walk alone).
//! 2. Admission decision cost at 128, 1024 and 8192 nodes, each node
//!    holding 4 parts: the per-decision time and its growth against the
//!    node count (target: growth ratio <= node ratio).

use common::experiment::Experiment;
use common::job::JobSpec;
use common::node_model::{NodeSpec, NodeState, PartView};
use common::policy::{self, AdmissionPolicy, Decision, Policy, PolicyConfig};
use common::share::SpareRule;
use common::sim::simulate;
use common::workload;
use libratory_benches::{median_secs, sdsc_trace};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The baseline: admits nothing, so the engine does the least work.
struct RejectAll;

impl AdmissionPolicy for RejectAll {
    fn name(&self) -> &'static str {
        "reject-all"
    }
    fn decide(&mut self, _: f64, _: &[NodeState], _: &JobSpec) -> Decision {
        Decision::reject(policy::RejectReason::Deadline, "")
    }
    fn spare_rule(&self) -> SpareRule {
        SpareRule::Proportional
    }
}

fn cluster(n: usize, seed: u64) -> Vec<NodeState> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|id| {
            let mut s = NodeState::new(NodeSpec {
                id,
                speed: 1.0,
                memory_kb: 1 << 20,
                disk_mb: 1 << 10,
            });
            for k in 0..4 {
                // Four parts needing 10-20% each: room for more, as a busy
                // but admitting cluster.
                let rd: f64 = rng.random_range(1000.0..10000.0);
                let q: f64 = rng.random_range(0.10..0.20);
                s.parts.push(PartView {
                    job: (id * 4 + k) as u64,
                    est_cpu: q * rd,
                    cpu_done: 0.0,
                    deadline: rd,
                    memory_kb: 0,
                    disk_mb: 0,
                    ret: 0.0,
                    ret_penalty: 0.0,
                    hard: false,
                });
            }
            s
        })
        .collect()
}

fn main() {
    println!("seed 20061995 (workload default) / 42 (synthetic clusters)\n");
    println!("== 5000-job SDSC SP2 preset (the Libra+$ paper), 128 nodes ==");
    let exp = Experiment::preset("libra-plus-dollar").unwrap();
    let wl = workload::build(&exp.params, Some(&sdsc_trace())).unwrap();
    let specs = exp.params.node_specs();
    let jobs = wl.jobs.len() as f64;
    let base = median_secs(5, || {
        simulate(&wl.jobs, &specs, Policy::Admission(Box::new(RejectAll)));
    });
    println!(
        "{:<18} {:>9.4} s {:>11.0} jobs/s  (baseline)",
        "reject-all",
        base,
        jobs / base
    );
    for name in ["libra", "libra-plus-dollar", "libra-risk"] {
        let t = median_secs(5, || {
            simulate(
                &wl.jobs,
                &specs,
                policy::build(name, &exp.policy, &specs).unwrap(),
            );
        });
        println!(
            "{:<18} {:>9.4} s {:>11.0} jobs/s  {:>6.1}x baseline  target < 1 s: {}",
            name,
            t,
            jobs / t,
            t / base,
            if t < 1.0 { "met" } else { "MISSED" }
        );
    }

    println!("\n== Admission decision cost (4 parts per node, P = 16) ==");
    let job = JobSpec::new(1, 0.0, 500.0, 16, 5000.0, 1e9);
    for name in ["libra", "libra-plus-dollar", "libra-risk"] {
        let mut first: Option<(usize, f64)> = None;
        for n in [128usize, 1024, 8192] {
            let nodes = cluster(n, 42);
            let specs: Vec<NodeSpec> = nodes.iter().map(|s| s.spec.clone()).collect();
            let Policy::Admission(mut p) =
                policy::build(name, &PolicyConfig::default(), &specs).unwrap()
            else {
                unreachable!()
            };
            assert!(matches!(p.decide(0.0, &nodes, &job), Decision::Accept(_)));
            let reps = (200_000 / n).max(20);
            let t = median_secs(7, || {
                for _ in 0..reps {
                    std::hint::black_box(p.decide(0.0, &nodes, &job));
                }
            }) / reps as f64;
            match first {
                None => {
                    first = Some((n, t));
                    println!("{name:<18} {n:>5} nodes {:>10.2} us/decision", t * 1e6);
                }
                Some((n0, t0)) => println!(
                    "{name:<18} {n:>5} nodes {:>10.2} us/decision  growth {:>6.1}x for {:>3}x nodes ({})",
                    t * 1e6,
                    t / t0,
                    n / n0,
                    if t / t0 <= (n / n0) as f64 * 1.25 { "linear or better" } else { "SUPERLINEAR" }
                ),
            }
        }
    }
}
