//! Workloads: turning an SWF trace (or a generator) into jobs with QoS, the
//! way the papers do, and the named presets of the five papers.
//!
//! Everything random here comes from one seed. Each job draws from its own
//! ChaCha stream (stream = the job's position in the window), in a fixed
//! order (class, deadline, budget, penalty), so changing one knob (say the
//! share of high-urgency jobs) never shifts the draws of other jobs, and the
//! same seed always gives the same jobs on every platform.
//!
//! The pieces: [`params`] (every knob, checks, `--set` by name),
//! [`presets`] (the papers' set-ups), [`annotate`] (SWF records to jobs
//! with QoS, duplicates), [`synthetic`] (the Libra paper's generated batch). This
//! module holds what they share: the built [`Workload`], its jobs, the
//! errors, and [`build`].
//!
//! Not here: reading SWF text (see [`crate::swf`]) and anything that runs
//! jobs.

mod annotate;
pub mod batsim_json;
mod params;
mod presets;
mod synthetic;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::job::{JobError, JobSpec};
use crate::swf::{self, SwfError};
use crate::time::Time;

pub use annotate::{from_records, DUPLICATE_ID_OFFSET};
pub use params::{
    for_each_key_value, set_by_name, BudgetBasis, DeadlineBasis, InaccuracyForm, Params, Source,
};
pub use presets::{Preset, PRESETS};
pub use synthetic::synthetic_libra;

/// The seed used when the user gives none. Printed and stored with results
/// like any other seed.
pub const DEFAULT_SEED: u64 = 20_061_995;

/// An error in the parameters or in building a workload.
#[derive(Debug, Error)]
pub enum WorkloadError {
    /// No preset of that name.
    #[error("unknown preset '{name}'; known presets: {known}")]
    UnknownPreset {
        /// What was asked for.
        name: String,
        /// The names that exist.
        known: String,
    },
    /// `--set` named a key that does not exist.
    #[error("unknown parameter '{key}'; known parameters: {known}")]
    UnknownParam {
        /// What was asked for.
        key: String,
        /// The names that exist.
        known: String,
    },
    /// `--set key=value` with a value of the wrong kind.
    #[error("parameter '{key}': cannot use value '{value}': {why}")]
    BadValue {
        /// The key.
        key: String,
        /// The value given.
        value: String,
        /// Why not.
        why: String,
    },
    /// A `--set` argument without `=`.
    #[error("expected key=value, got '{0}'")]
    NotKeyValue(String),
    /// Parameters that are each fine but do not make sense.
    #[error("parameter '{key}': {why}")]
    Invalid {
        /// The key.
        key: &'static str,
        /// Why.
        why: String,
    },
    /// The trace could not be read.
    #[error(transparent)]
    Swf(#[from] SwfError),
    /// A trace with no job line.
    #[error("{0}: no job lines: nothing to run")]
    NoJobs(String),
    /// A source needing a trace was given none.
    #[error("preset '{0}' reads a trace: give one with --trace FILE.swf[.gz]")]
    NoTrace(String),
    /// A built job failed validation (a bug in the annotation or a trace
    /// value no rule covers).
    #[error("{origin}: {source}")]
    Job {
        /// Where the job came from (file and line).
        origin: String,
        /// What is wrong.
        source: JobError,
    },
}

/// A job of a workload: what the user declared plus what it really needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadJob {
    /// What every policy sees.
    pub spec: JobSpec,
    /// The actual runtime R on the reference node (hidden from policies).
    pub actual_runtime: Time,
}

/// How the odd records of a trace window were handled; each is counted, and
/// none is dropped unless `drop_never_ran` says so (see docs/workloads.md
/// for the rules).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OddRecords {
    /// Run time -1 or 0 (cancelled before starting): kept with R = 1 s, or
    /// left out with `drop_never_ran`.
    pub never_ran: usize,
    /// Requested time -1: the estimate falls back to the actual runtime.
    pub no_requested_time: usize,
    /// Requested time < run time: kept as an under-estimate.
    pub overran_request: usize,
    /// Requested processors (field 8) missing: field 5 used instead.
    pub procs_from_allocated: usize,
    /// Neither field 8 nor field 5 > 0: one processor assumed.
    pub procs_unknown: usize,
    /// More processors than the cluster has: kept (rejected for resources).
    pub procs_over_machine: usize,
    /// Estimates that the inaccuracy model brought below 1 s: raised to 1 s.
    pub estimate_floored: usize,
}

/// A built workload, ready to simulate or replay.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Workload {
    /// The parameters it was built with (seed included).
    pub params: Params,
    /// The trace it came from, if any.
    pub trace: Option<PathBuf>,
    /// Jobs in arrival order (ties in trace order).
    pub jobs: Vec<WorkloadJob>,
    /// How odd records were handled.
    pub odd: OddRecords,
    /// Jobs added as duplicates (`duplicate_fraction`).
    #[serde(default)]
    pub duplicates: usize,
}

/// Builds the workload the parameters describe. `trace` is required for
/// trace sources and ignored otherwise.
pub fn build(params: &Params, trace: Option<&Path>) -> Result<Workload, WorkloadError> {
    params.validate()?;
    match params.source {
        Source::SyntheticLibra => Ok(synthetic_libra(params)),
        Source::Trace => {
            let path = trace.ok_or_else(|| WorkloadError::NoTrace(params.preset.clone()))?;
            let (_header, records) = swf::read_last(path, params.jobs)?;
            from_records(params, path, &records)
        }
    }
}

fn sort_by_arrival(jobs: &mut [WorkloadJob]) {
    // Stable: equal arrivals keep trace (or generation) order.
    jobs.sort_by(|a, b| {
        a.spec
            .details
            .submit_time
            .total_cmp(&b.spec.details.submit_time)
    });
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::annotate::draw_qos;
    use super::*;
    use crate::job::Urgency;
    use crate::swf::SwfRecord;

    #[test]
    fn every_preset_builds_params() {
        for preset in PRESETS {
            let p = Params::preset(preset.name).unwrap();
            p.validate().unwrap();
        }
        assert!(Params::preset("nope")
            .unwrap_err()
            .to_string()
            .contains("libra-plus-dollar"));
    }

    #[test]
    fn set_overrides_by_name_and_type() {
        let mut p = Params::preset("libra-plus-dollar").unwrap();
        p.set_all(["arrival_delay_factor=0.25", "budgets=false", "jobs=10"])
            .unwrap();
        assert_eq!(p.arrival_delay_factor, 0.25);
        assert!(!p.budgets);
        assert_eq!(p.jobs, 10);
        p.set("inaccuracy_form", "toward-trace").unwrap();
        assert_eq!(p.inaccuracy_form, InaccuracyForm::TowardTrace);
        let e = p.set("arival_delay_factor", "1").unwrap_err().to_string();
        assert!(e.contains("unknown parameter 'arival_delay_factor'"), "{e}");
        let e = p.set("jobs", "many").unwrap_err().to_string();
        assert!(e.contains("parameter 'jobs'"), "{e}");
        assert!(p.set_all(["jobs"]).is_err());
    }

    #[test]
    fn class_means_follow_the_high_low_ratios() {
        // The Libra+$ paper: high-urgency D/R mean 2 and low-urgency 8; low-urgency
        // B/f(R) mean 2 and high-urgency 8. With 20000 draws the sample
        // means are within 1% of these.
        let p = Params::preset("libra-plus-dollar").unwrap();
        let mut sums: BTreeMap<Urgency, (f64, f64, usize)> = BTreeMap::new();
        for i in 0..20000 {
            let d = draw_qos(&p, i);
            let e = sums.entry(d.urgency).or_default();
            e.0 += d.deadline_factor;
            e.1 += d.budget_factor;
            e.2 += 1;
        }
        let (hd, hb, hn) = sums[&Urgency::High];
        let (ld, lb, ln) = sums[&Urgency::Low];
        let frac = hn as f64 / (hn + ln) as f64;
        assert!((frac - 0.2).abs() < 0.01, "{frac}");
        // The truncation at 1.05 lifts the high-urgency deadline mean a
        // little: mean 2, sd 0.5, cut at z = -1.9 raises it by about
        // 0.5 * phi(1.9)/(1 - Phi(-1.9)) = 0.5 * 0.0656/0.9713 = 0.034.
        assert!((hd / hn as f64 - 2.034).abs() < 0.02, "{}", hd / hn as f64);
        assert!((ld / ln as f64 - 8.0).abs() < 0.08);
        assert!((lb / ln as f64 - 2.0).abs() < 0.02);
        assert!((hb / hn as f64 - 8.0).abs() < 0.08);
    }

    #[test]
    fn draws_do_not_depend_on_other_knobs() {
        let a = Params::preset("libra-plus-dollar").unwrap();
        let mut b = a.clone();
        b.set("arrival_delay_factor", "0.1").unwrap();
        for i in 0..100 {
            let (x, y) = (draw_qos(&a, i), draw_qos(&b, i));
            assert_eq!(x.deadline_factor, y.deadline_factor);
            assert_eq!(x.budget_factor, y.budget_factor);
        }
    }

    fn rec(job: u64, submit: i64, run: i64, procs: i64, req: i64) -> SwfRecord {
        SwfRecord {
            line: job,
            job_number: job,
            submit_time: submit,
            wait_time: 0,
            run_time: run,
            allocated_procs: procs,
            avg_cpu_time: -1.0,
            used_memory: -1.0,
            requested_procs: procs,
            requested_time: req,
            requested_memory: -1,
            status: 1,
            user_id: 1,
            group_id: 1,
            executable: 1,
            queue: 1,
            partition: 1,
            preceding_job: -1,
            think_time: -1,
        }
    }

    #[test]
    fn vqops_paper_prices_and_deadlines() {
        // The VQoPS paper: D = 5 x RE; B = 0.1 per processor-second of the
        // estimate, 10x for urgent jobs. Exact estimates: RE = R = 100,
        // 4 processors: D 500, B 0.1 x 4 x 100 = 40 (normal) or 400.
        let p = Params::preset("vqops").unwrap();
        let records: Vec<SwfRecord> = (0..200)
            .map(|k| rec(k + 1, 10 * k as i64, 100, 4, 300))
            .collect();
        let w = from_records(&p, Path::new("t.swf"), &records).unwrap();
        assert_eq!(w.jobs.len(), 200);
        for j in &w.jobs {
            assert_eq!(j.spec.estimate(), 100.0);
            assert_eq!(j.spec.qos.deadline, 500.0);
            let want = match j.spec.urgency {
                Some(Urgency::High) => 400.0,
                _ => 40.0,
            };
            assert!((j.spec.qos.budget - want).abs() < 1e-9);
        }
        // The trace's own estimates: RE = 300, D = 1500, B = 120 / 1200.
        let mut q = p.clone();
        q.set("inaccuracy", "1").unwrap();
        let w = from_records(&q, Path::new("t.swf"), &records).unwrap();
        assert_eq!(w.jobs[0].spec.qos.deadline, 1500.0);
    }

    #[test]
    fn duplicates_copy_jobs_under_new_numbers() {
        // About 40% of 1000 jobs duplicated: each copy keeps arrival,
        // estimate, runtime, deadline and class, with the number offset.
        let mut p = Params::preset("vqops").unwrap();
        p.set("duplicate_fraction", "0.4").unwrap();
        let records: Vec<SwfRecord> = (0..1000)
            .map(|k| rec(k + 1, 10 * k as i64, 50 + k as i64, 1, 600))
            .collect();
        let w = from_records(&p, Path::new("t.swf"), &records).unwrap();
        assert_eq!(w.jobs.len(), 1000 + w.duplicates);
        assert!((350..450).contains(&w.duplicates), "{}", w.duplicates);
        for pair in w.jobs.windows(2) {
            if pair[1].spec.id > DUPLICATE_ID_OFFSET {
                assert_eq!(pair[1].spec.id, pair[0].spec.id + DUPLICATE_ID_OFFSET);
                let mut copy = pair[1].spec.clone();
                copy.id = pair[0].spec.id;
                assert_eq!(copy, pair[0].spec);
                assert_eq!(pair[1].actual_runtime, pair[0].actual_runtime);
            }
        }
        // The other draws do not move.
        let q = Params::preset("vqops").unwrap();
        let v = from_records(&q, Path::new("t.swf"), &records).unwrap();
        let originals: Vec<&WorkloadJob> = w
            .jobs
            .iter()
            .filter(|j| j.spec.id < DUPLICATE_ID_OFFSET)
            .collect();
        assert_eq!(originals.len(), v.jobs.len());
        for (a, b) in originals.iter().zip(&v.jobs) {
            assert_eq!(a.spec, b.spec);
        }
    }

    #[test]
    fn synthetic_batch_matches_its_ranges() {
        let p = Params::preset("libra").unwrap();
        let w = synthetic_libra(&p);
        assert_eq!(w.jobs.len(), 100);
        for j in &w.jobs {
            assert!((1.0..=102.0).contains(&j.spec.details.submit_time));
            assert!((10.0..=109.0).contains(&j.actual_runtime));
            assert!((1.0..=1200.0).contains(&j.spec.qos.deadline));
            assert!(j.spec.qos.budget >= 1000.0 && j.spec.qos.budget <= 12000.0);
        }
        let rich = w
            .jobs
            .iter()
            .filter(|j| j.spec.urgency == Some(Urgency::High))
            .count();
        assert!((10..=30).contains(&rich), "{rich}");
        // Same seed, same jobs.
        assert_eq!(synthetic_libra(&p).jobs, w.jobs);
    }
}
