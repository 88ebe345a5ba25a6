//! SWF records to jobs with QoS, the papers' way (spec/workloads.md):
//! classes, deadlines, budgets and penalties drawn per job from its own
//! stream, estimates from the inaccuracy model, odd records counted, and
//! the VQoPS paper's duplicated jobs.

use std::collections::BTreeMap;
use std::path::Path;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

use super::params::{BudgetBasis, DeadlineBasis, InaccuracyForm, Params};
use super::{sort_by_arrival, OddRecords, Workload, WorkloadError, WorkloadJob};
use crate::job::{
    JobDetails, JobId, JobSpec, QosConstraints, QosOptimization, ResourceRequirements, Urgency,
};
use crate::swf::SwfRecord;

/// Job numbers of duplicated jobs (the VQoPS paper's high load) are the
/// original's plus this, so they never collide with trace job numbers.
pub const DUPLICATE_ID_OFFSET: JobId = 1_000_000_000;

/// A draw from a normal distribution with mean `mean` and standard
/// deviation `spread * mean`, redrawn until it is at least `min` (and > 0).
/// After 1000 rejected draws (only for means far below `min`) it returns
/// `min`: the count of such fall-backs would be astronomically rare with the
/// presets, and a bounded loop is worth more than a faithful tail.
fn truncated_normal(rng: &mut ChaCha8Rng, mean: f64, spread: f64, min: f64) -> f64 {
    let sd = spread * mean;
    for _ in 0..1000 {
        let z: f64 = StandardNormal.sample(rng);
        let v = mean + sd * z;
        if v >= min && v > 0.0 {
            return v;
        }
    }
    min.max(f64::MIN_POSITIVE)
}

/// The QoS of one job from its class and its per-job random stream.
pub(super) struct QosDraw {
    pub(super) urgency: Urgency,
    pub(super) deadline_factor: f64,
    pub(super) budget_factor: f64,
    pub(super) penalty_factor: f64,
}

pub(super) fn draw_qos(p: &Params, index: u64) -> QosDraw {
    let mut rng = ChaCha8Rng::seed_from_u64(p.seed);
    rng.set_stream(index);
    // Fixed draw order: class, deadline, budget, penalty.
    let u: f64 = rng.random();
    let urgency = if u < p.high_urgency_fraction {
        Urgency::High
    } else {
        Urgency::Low
    };
    let (d_mean, b_mean, pr_mean) = match urgency {
        Urgency::High => (
            p.deadline_low_mean,
            p.budget_low_mean * p.budget_high_low_ratio,
            p.penalty_low_mean * p.penalty_high_low_ratio,
        ),
        Urgency::Low => (
            p.deadline_low_mean * p.deadline_high_low_ratio,
            p.budget_low_mean,
            p.penalty_low_mean,
        ),
    };
    let deadline_factor = truncated_normal(&mut rng, d_mean, p.spread, p.min_deadline_factor);
    let budget_factor = truncated_normal(&mut rng, b_mean, p.spread, 0.0);
    let penalty_factor = if pr_mean > 0.0 {
        truncated_normal(&mut rng, pr_mean, p.spread, 0.0)
    } else {
        0.0
    };
    QosDraw {
        urgency,
        deadline_factor,
        budget_factor,
        penalty_factor,
    }
}

/// Whether trace job `index` is duplicated (the VQoPS paper's high load). Drawn
/// from its own stream family, so the knob shifts no other draw.
fn duplicate_draw(p: &Params, index: u64) -> bool {
    let mut rng = ChaCha8Rng::seed_from_u64(p.seed ^ 0x0d0b_1e00_d0b1_e000);
    rng.set_stream(index);
    rng.random::<f64>() < p.duplicate_fraction
}

/// Annotates SWF records with QoS (the scheme of spec/workloads.md).
pub fn from_records(
    p: &Params,
    path: &Path,
    records: &[SwfRecord],
) -> Result<Workload, WorkloadError> {
    p.validate()?;
    if records.is_empty() {
        return Err(WorkloadError::NoJobs(path.display().to_string()));
    }
    let mut odd = OddRecords::default();
    let mut jobs = Vec::with_capacity(records.len());
    let mut duplicates = 0;
    let first_submit = records.first().map_or(0, |r| r.submit_time) as f64;
    for (index, r) in records.iter().enumerate() {
        let actual = if r.run_time > 0 {
            r.run_time as f64
        } else {
            odd.never_ran += 1;
            if p.drop_never_ran {
                continue;
            }
            1.0
        };
        let trace_estimate = if r.requested_time > 0 {
            if (r.requested_time as f64) < actual {
                odd.overran_request += 1;
            }
            r.requested_time as f64
        } else {
            odd.no_requested_time += 1;
            actual
        };
        let mut estimate = match p.inaccuracy_form {
            InaccuracyForm::TowardTrace => actual + p.inaccuracy * (trace_estimate - actual),
            InaccuracyForm::Under => actual * (1.0 - p.inaccuracy),
            InaccuracyForm::TowardTraceAtLeastActual => {
                actual.max(actual + p.inaccuracy * (trace_estimate - actual))
            }
        };
        if estimate < 1.0 {
            odd.estimate_floored += 1;
            estimate = 1.0;
        }
        let processors = if r.requested_procs > 0 {
            r.requested_procs
        } else if r.allocated_procs > 0 {
            odd.procs_from_allocated += 1;
            r.allocated_procs
        } else {
            odd.procs_unknown += 1;
            1
        };
        if processors as usize > p.nodes {
            odd.procs_over_machine += 1;
        }
        let memory_kb = u64::try_from(r.requested_memory.max(0)).unwrap_or(0);
        let draw = draw_qos(p, index as u64);
        let deadline = match p.deadline_basis {
            DeadlineBasis::Actual => draw.deadline_factor * actual,
            DeadlineBasis::Estimate => p.deadline_estimate_factor * estimate,
        };
        let budget = if !p.budgets {
            f64::INFINITY
        } else {
            match p.budget_basis {
                BudgetBasis::Runtime => draw.budget_factor * p.pbase * actual,
                BudgetBasis::ProcessorSeconds => {
                    let c = match draw.urgency {
                        Urgency::High => p.urgent_price_factor,
                        Urgency::Low => 1.0,
                    };
                    c * p.pbase * processors as f64 * estimate
                }
            }
        };
        let spec = JobSpec {
            id: r.job_number as JobId,
            details: JobDetails {
                runtime_estimate: estimate,
                submit_time: p.arrival_delay_factor * (r.submit_time as f64 - first_submit),
                name: None,
            },
            resources: ResourceRequirements {
                processors: u32::try_from(processors).unwrap_or(u32::MAX),
                memory_kb,
                disk_mb: 0,
            },
            qos: QosConstraints {
                deadline,
                budget,
                deadline_type: match draw.urgency {
                    Urgency::High => p.high_deadline_type,
                    Urgency::Low => p.low_deadline_type,
                },
                penalty_rate: draw.penalty_factor * p.pbase,
            },
            optimization: QosOptimization::default(),
            urgency: Some(draw.urgency),
            extra_segments: BTreeMap::new(),
        };
        spec.validate().map_err(|source| WorkloadError::Job {
            origin: format!("{}:{}", path.display(), r.line),
            source,
        })?;
        let duplicate = p.duplicate_fraction > 0.0 && duplicate_draw(p, index as u64);
        if duplicate {
            let mut copy = spec.clone();
            copy.id += DUPLICATE_ID_OFFSET;
            jobs.push(WorkloadJob {
                spec,
                actual_runtime: actual,
            });
            jobs.push(WorkloadJob {
                spec: copy,
                actual_runtime: actual,
            });
            duplicates += 1;
        } else {
            jobs.push(WorkloadJob {
                spec,
                actual_runtime: actual,
            });
        }
    }
    sort_by_arrival(&mut jobs);
    Ok(Workload {
        params: p.clone(),
        trace: Some(path.to_path_buf()),
        jobs,
        odd,
        duplicates,
    })
}
