//! The Libra paper's synthetic batch (its generated workload).

use std::collections::BTreeMap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::params::{InaccuracyForm, Params};
use super::{sort_by_arrival, OddRecords, Workload, WorkloadJob};
use crate::job::{
    DeadlineType, JobDetails, JobId, JobSpec, QosConstraints, QosOptimization,
    ResourceRequirements, Urgency,
};

/// The Libra paper's synthetic batch: arrivals uniform over [1, arrival_max],
/// lengths uniform over [min, max] MI run on nodes of `synthetic_mips`,
/// deadlines uniform over [min, max] s, 80% of budgets at the base value
/// and the rest uniform between base and max. Estimates are exact (the Libra paper
/// assumes correct estimates) unless `inaccuracy` says otherwise.
pub fn synthetic_libra(p: &Params) -> Workload {
    let mut jobs = Vec::with_capacity(p.jobs);
    let mut odd = OddRecords::default();
    for index in 0..p.jobs {
        let mut rng = ChaCha8Rng::seed_from_u64(p.seed);
        rng.set_stream(index as u64);
        let arrival = rng.random_range(1.0..=p.synthetic_arrival_max);
        let length = rng.random_range(p.synthetic_length_min_mi..=p.synthetic_length_max_mi);
        let deadline = rng.random_range(p.synthetic_deadline_min..=p.synthetic_deadline_max);
        let rich = rng.random::<f64>() < p.synthetic_rich_fraction;
        let rich_budget = rng.random_range(p.synthetic_budget_base..=p.synthetic_budget_max);
        let actual = length / p.synthetic_mips;
        let mut estimate = match p.inaccuracy_form {
            InaccuracyForm::TowardTrace | InaccuracyForm::TowardTraceAtLeastActual => actual,
            InaccuracyForm::Under => actual * (1.0 - p.inaccuracy),
        };
        if estimate < 1.0 {
            odd.estimate_floored += 1;
            estimate = 1.0;
        }
        let spec = JobSpec {
            id: index as JobId + 1,
            details: JobDetails {
                runtime_estimate: estimate,
                submit_time: arrival * p.arrival_delay_factor.max(0.0),
                name: Some(format!("{length:.0}MI")),
            },
            resources: ResourceRequirements {
                processors: 1,
                memory_kb: 0,
                disk_mb: 0,
            },
            qos: QosConstraints {
                deadline,
                budget: if rich {
                    rich_budget
                } else {
                    p.synthetic_budget_base
                },
                deadline_type: DeadlineType::Hard,
                penalty_rate: 0.0,
            },
            optimization: QosOptimization::default(),
            urgency: Some(if rich { Urgency::High } else { Urgency::Low }),
            extra_segments: BTreeMap::new(),
        };
        jobs.push(WorkloadJob {
            spec,
            actual_runtime: actual,
        });
    }
    sort_by_arrival(&mut jobs);
    Workload {
        params: p.clone(),
        trace: None,
        jobs,
        odd,
        duplicates: 0,
    }
}
