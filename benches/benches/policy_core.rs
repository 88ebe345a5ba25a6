//! Policy-core benchmarks (issue: foundation). Run with
//! `cargo bench -p libratory-benches --bench policy_core`.
//!
//! The 5000-job SDSC SP2 preset of the Libra+$ paper on 128 nodes: jobs simulated
//! per second for each Libra-family policy, and the ratio to a baseline
//! measured in the same run: the same engine with a policy that rejects
//! everything (the cost of the engine and workload walk alone).
//!
//! The cost of one admission decision against the cluster size is the
//! `decide` bench's (the live core, 128 to 10,000 nodes).

use common::experiment::Experiment;
use common::job::JobSpec;
use common::node_model::NodeState;
use common::policy::{self, AdmissionPolicy, Decision, Policy};
use common::share::SpareRule;
use common::sim::simulate;
use common::workload;
use libratory_benches::{median_secs, sdsc_trace};

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

fn main() {
    println!("seed 20061995 (workload default)\n");
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
}
