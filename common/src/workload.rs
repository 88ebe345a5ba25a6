//! Workloads: turning an SWF trace (or a generator) into jobs with QoS, the
//! way the papers do, and the named presets of the five papers.
//!
//! Everything random here comes from one seed. Each job draws from its own
//! ChaCha stream (stream = the job's position in the window), in a fixed
//! order (class, deadline, budget, penalty), so changing one knob (say the
//! share of high-urgency jobs) never shifts the draws of other jobs, and the
//! same seed always gives the same jobs on every platform.
//!
//! Not here: reading SWF text (see [`crate::swf`]) and anything that runs
//! jobs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::job::{
    DeadlineType, JobDetails, JobError, JobId, JobSpec, QosConstraints, QosOptimization,
    ResourceRequirements, Urgency,
};
use crate::node_model::NodeSpec;
use crate::swf::{self, SwfError, SwfRecord};
use crate::time::Time;

/// The seed used when the user gives none. Printed and stored with results
/// like any other seed.
pub const DEFAULT_SEED: u64 = 20_061_995;

/// How the runtime estimate RE is derived from the actual runtime R.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InaccuracyForm {
    /// Seed 002: RE = R + x (trace estimate - R); x = 0 is accurate, x = 1
    /// the trace's own requested time.
    TowardTrace,
    /// Seed 000: RE = R (1 - x), an under-estimate by x.
    Under,
    /// As `toward-trace`, but never below the actual runtime:
    /// RE = max(R, R + x (trace estimate - R)). With x = 1 this is
    /// max(requested, run), the estimate of classic EASY simulations (a
    /// job that ran past its request was not killed at it, so the
    /// scheduler could not have planned on less).
    TowardTraceAtLeastActual,
}

/// Where the jobs come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// The last `jobs` lines of an SWF trace, annotated with QoS.
    Trace,
    /// Seed 003's synthetic batch (uniform arrivals, lengths, deadlines).
    Synthetic003,
}

/// What a deadline is a factor of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeadlineBasis {
    /// D = factor x actual runtime R (seeds 000-002), factor drawn per class.
    Actual,
    /// D = `deadline_estimate_factor` x RE (seed 004).
    Estimate,
}

/// How budgets are set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BudgetBasis {
    /// B = factor x PBase x R, the factor drawn per class (seeds 000-002).
    Runtime,
    /// Seed 004: B = PBase x P x RE, times `urgent_price_factor` for an
    /// urgent (high-urgency) job: the job's maximum price per
    /// processor-second of its estimate.
    ProcessorSeconds,
}

/// Job numbers of duplicated jobs (seed 004's high load) are the
/// original's plus this, so they never collide with trace job numbers.
pub const DUPLICATE_ID_OFFSET: JobId = 1_000_000_000;

/// Every knob of a workload and of the cluster it runs on. Any field can be
/// overridden by name (`--set key=value`, see [`Params::set`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The preset these parameters started from.
    pub preset: String,
    /// Seed of every random draw.
    pub seed: u64,
    /// Trace or generator.
    pub source: Source,
    /// Number of jobs: the last N trace lines, or the batch size.
    pub jobs: usize,
    /// Number of nodes in the cluster.
    pub nodes: usize,
    /// Speed of every node (1.0 = the reference node of the trace).
    pub node_speed: f64,
    /// Memory per node (KB).
    pub node_memory_kb: u64,
    /// Disk per node (MB).
    pub node_disk_mb: u64,
    /// Base price PBase of one second of processor time.
    pub pbase: f64,
    /// Share of jobs in the high-urgency class.
    pub high_urgency_fraction: f64,
    /// Mean D/R of the high-urgency class (tight deadlines: the "low mean").
    pub deadline_low_mean: f64,
    /// Ratio of the low-urgency class's mean D/R to the high-urgency one's.
    pub deadline_high_low_ratio: f64,
    /// Smallest D/R a draw may give (truncated normal, redrawn below).
    pub min_deadline_factor: f64,
    /// D = this x RE when `deadline_basis` is `estimate` (seed 004).
    pub deadline_estimate_factor: f64,
    /// What deadlines are a factor of.
    pub deadline_basis: DeadlineBasis,
    /// Whether jobs carry budgets at all (seed 002 has none: unlimited).
    pub budgets: bool,
    /// How budgets are set.
    pub budget_basis: BudgetBasis,
    /// Seed 004: price factor C of urgent jobs over normal ones (with
    /// `budget_basis = processor-seconds`).
    pub urgent_price_factor: f64,
    /// Seed 004's high load: each trace job is duplicated (same arrival,
    /// estimate, runtime, deadline, class) with this probability.
    pub duplicate_fraction: f64,
    /// Mean B/f(R) of the low-urgency class (the "low mean"), f(R) = PBase R.
    pub budget_low_mean: f64,
    /// Ratio of the high-urgency class's mean B/f(R) to the low one's.
    pub budget_high_low_ratio: f64,
    /// Mean PR/g(R) of the low-urgency class, g(R) = PBase (see docs).
    pub penalty_low_mean: f64,
    /// Ratio of the high-urgency class's mean PR/g(R) to the low one's.
    pub penalty_high_low_ratio: f64,
    /// Standard deviation of every class draw, as a fraction of its mean.
    pub spread: f64,
    /// Deadline type of high-urgency jobs.
    pub high_deadline_type: DeadlineType,
    /// Deadline type of low-urgency jobs.
    pub low_deadline_type: DeadlineType,
    /// Arrival delay factor f: inter-arrival times are multiplied by f.
    pub arrival_delay_factor: f64,
    /// Runtime-estimate inaccuracy x in [0, 1].
    pub inaccuracy: f64,
    /// Which inaccuracy model `inaccuracy` feeds.
    pub inaccuracy_form: InaccuracyForm,
    /// Leave out the window's jobs that never ran (run time -1 or 0)
    /// instead of keeping them with R = 1 s; they are still counted in
    /// `never_ran`. Off in every preset (the papers kept them).
    #[serde(default)]
    pub drop_never_ran: bool,
    /// Seed 003 batch: arrivals uniform over [1, this].
    pub synthetic_arrival_max: f64,
    /// Seed 003 batch: job length range (million instructions).
    pub synthetic_length_min_mi: f64,
    /// Upper end of the length range (MI).
    pub synthetic_length_max_mi: f64,
    /// Seed 003 batch: node rating (MIPS); R = length / rating.
    pub synthetic_mips: f64,
    /// Seed 003 batch: deadlines uniform over [min, max] seconds.
    pub synthetic_deadline_min: f64,
    /// Upper end of the deadline range (s).
    pub synthetic_deadline_max: f64,
    /// Seed 003 batch: the budget of the common jobs.
    pub synthetic_budget_base: f64,
    /// Seed 003 batch: share of jobs with a random budget (uniform between
    /// base and max); they are labelled high urgency.
    pub synthetic_rich_fraction: f64,
    /// Upper end of the random budgets.
    pub synthetic_budget_max: f64,
}

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

/// The named presets: one per paper set-up.
pub const PRESETS: &[(&str, &str)] = &[
    (
        "libra",
        "seed 003 (Libra): synthetic batch of 100 jobs on 10 nodes; --set jobs=200 nodes=20 for the others",
    ),
    (
        "libra-plus-dollar",
        "seed 000 (Libra+$): last 5000 SDSC SP2 jobs, 20% high urgency, deadline & budget high:low 4 low mean 2, f=0.5",
    ),
    (
        "libra-risk",
        "seed 002 (LibraRisk): last 3000 SDSC SP2 jobs, deadline high:low 4 low mean 4, f=1, trace estimates (inaccuracy 1)",
    ),
    (
        "libra-sla",
        "seed 001 (LibraSLA): last 1000 SDSC SP2 jobs, 20% hard/80% soft, deadline & budget high:low 7, penalty 4, f=0.01",
    ),
    (
        "vqops",
        "seed 004 (QoPS family): last 10000 SDSC SP2 jobs, deadline 5x estimate, 20% urgent at 10x the normal 0.1 per processor-second, exact estimates",
    ),
];

impl Params {
    /// The parameters of a named preset.
    pub fn preset(name: &str) -> Result<Params, WorkloadError> {
        let base = Params {
            preset: name.to_string(),
            seed: DEFAULT_SEED,
            source: Source::Trace,
            jobs: 5000,
            nodes: 128,
            node_speed: 1.0,
            node_memory_kb: 256 * 1024,
            node_disk_mb: 4096,
            pbase: 1.0,
            high_urgency_fraction: 0.2,
            deadline_low_mean: 2.0,
            deadline_high_low_ratio: 4.0,
            min_deadline_factor: 1.05,
            deadline_estimate_factor: 5.0,
            deadline_basis: DeadlineBasis::Actual,
            budgets: true,
            budget_basis: BudgetBasis::Runtime,
            urgent_price_factor: 10.0,
            duplicate_fraction: 0.0,
            budget_low_mean: 2.0,
            budget_high_low_ratio: 4.0,
            penalty_low_mean: 2.0,
            penalty_high_low_ratio: 4.0,
            spread: 0.25,
            high_deadline_type: DeadlineType::Hard,
            low_deadline_type: DeadlineType::Hard,
            arrival_delay_factor: 0.5,
            inaccuracy: 0.0,
            inaccuracy_form: InaccuracyForm::Under,
            drop_never_ran: false,
            synthetic_arrival_max: 102.0,
            synthetic_length_min_mi: 1000.0,
            synthetic_length_max_mi: 10900.0,
            synthetic_mips: 100.0,
            synthetic_deadline_min: 1.0,
            synthetic_deadline_max: 1200.0,
            synthetic_budget_base: 1000.0,
            synthetic_rich_fraction: 0.2,
            synthetic_budget_max: 12000.0,
        };
        let p = match name {
            "libra-plus-dollar" => base,
            "libra" => Params {
                source: Source::Synthetic003,
                jobs: 100,
                nodes: 10,
                arrival_delay_factor: 1.0,
                ..base
            },
            "libra-risk" => Params {
                jobs: 3000,
                deadline_low_mean: 4.0,
                budgets: false,
                arrival_delay_factor: 1.0,
                inaccuracy: 1.0,
                inaccuracy_form: InaccuracyForm::TowardTrace,
                ..base
            },
            "libra-sla" => Params {
                jobs: 1000,
                deadline_high_low_ratio: 7.0,
                budget_high_low_ratio: 7.0,
                penalty_high_low_ratio: 4.0,
                low_deadline_type: DeadlineType::Soft,
                arrival_delay_factor: 0.01,
                ..base
            },
            "vqops" => Params {
                jobs: 10000,
                deadline_basis: DeadlineBasis::Estimate,
                arrival_delay_factor: 1.0,
                // Exact estimates, the paper's main set; inaccuracy=1 gives
                // the trace's own (its section 5.3).
                inaccuracy: 0.0,
                inaccuracy_form: InaccuracyForm::TowardTrace,
                budget_basis: BudgetBasis::ProcessorSeconds,
                pbase: 0.1,
                urgent_price_factor: 10.0,
                ..base
            },
            _ => {
                return Err(WorkloadError::UnknownPreset {
                    name: name.to_string(),
                    known: PRESETS.iter().map(|p| p.0).collect::<Vec<_>>().join(", "),
                })
            }
        };
        Ok(p)
    }

    /// Overrides one parameter by name, parsing `value` as the field's type.
    /// Unknown keys and ill-typed values are errors naming the key.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), WorkloadError> {
        set_by_name(self, key, value)
    }

    /// Applies `key=value` strings in order.
    pub fn set_all<'a>(
        &mut self,
        pairs: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), WorkloadError> {
        for_each_key_value(pairs, |k, v| self.set(k, v))
    }

    /// Checks ranges that serde cannot.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        let bad = |key: &'static str, why: &str| {
            Err(WorkloadError::Invalid {
                key,
                why: why.to_string(),
            })
        };
        if self.jobs == 0 {
            return bad("jobs", "must be at least 1");
        }
        if self.nodes == 0 {
            return bad("nodes", "must be at least 1");
        }
        if self.node_speed.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
            return bad("node_speed", "must be > 0");
        }
        if !(0.0..=1.0).contains(&self.high_urgency_fraction) {
            return bad("high_urgency_fraction", "must be within [0, 1]");
        }
        if !(0.0..=1.0).contains(&self.duplicate_fraction) {
            return bad("duplicate_fraction", "must be within [0, 1]");
        }
        if !at_least(self.urgent_price_factor, 0.0) {
            return bad("urgent_price_factor", "must be >= 0");
        }
        if !(0.0..=1.0).contains(&self.inaccuracy) {
            return bad("inaccuracy", "must be within [0, 1]");
        }
        if self.inaccuracy_form == InaccuracyForm::Under && self.inaccuracy >= 1.0 {
            return bad(
                "inaccuracy",
                "an under-estimate of 100% would make every estimate 0; use < 1",
            );
        }
        if !at_least(self.arrival_delay_factor, 0.0) {
            return bad("arrival_delay_factor", "must be >= 0");
        }
        if !at_least(self.spread, 0.0) {
            return bad("spread", "must be >= 0");
        }
        if !at_least(self.min_deadline_factor, 1.0) {
            return bad("min_deadline_factor", "must be >= 1");
        }
        for (key, v) in [
            ("deadline_low_mean", self.deadline_low_mean),
            ("deadline_high_low_ratio", self.deadline_high_low_ratio),
            ("budget_low_mean", self.budget_low_mean),
            ("budget_high_low_ratio", self.budget_high_low_ratio),
            ("pbase", self.pbase),
            ("deadline_estimate_factor", self.deadline_estimate_factor),
        ] {
            if !above(v, 0.0) {
                return bad(key, "must be > 0");
            }
        }
        if !(self.penalty_low_mean >= 0.0 && self.penalty_high_low_ratio > 0.0) {
            return bad(
                "penalty_low_mean",
                "penalty means must be >= 0 and ratio > 0",
            );
        }
        if self.source == Source::Synthetic003
            && !(self.synthetic_mips > 0.0
                && self.synthetic_length_min_mi > 0.0
                && self.synthetic_length_max_mi >= self.synthetic_length_min_mi
                && self.synthetic_deadline_min > 0.0
                && self.synthetic_deadline_max >= self.synthetic_deadline_min
                && self.synthetic_arrival_max >= 1.0)
        {
            return bad(
                "synthetic_*",
                "ranges must be positive with min <= max (and arrival max >= 1)",
            );
        }
        Ok(())
    }

    /// The nodes of the cluster these parameters describe.
    pub fn node_specs(&self) -> Vec<NodeSpec> {
        (0..self.nodes)
            .map(|id| NodeSpec {
                id,
                speed: self.node_speed,
                memory_kb: self.node_memory_kb,
                disk_mb: self.node_disk_mb,
            })
            .collect()
    }
}

/// Splits each `key=value` string and hands the trimmed halves to `set`,
/// in order; a string without `=` is an error naming it.
pub fn for_each_key_value<'a>(
    pairs: impl IntoIterator<Item = &'a str>,
    mut set: impl FnMut(&str, &str) -> Result<(), WorkloadError>,
) -> Result<(), WorkloadError> {
    for kv in pairs {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| WorkloadError::NotKeyValue(kv.to_string()))?;
        set(k.trim(), v.trim())?;
    }
    Ok(())
}

/// Sets the field `key` of any flat serde struct from a string, parsing it
/// as the field's current JSON type (number, bool, string or enum name, or
/// a list of numbers written `0,0.05,0.1`).
/// An unknown key is [`WorkloadError::UnknownParam`] listing the known ones.
pub fn set_by_name<T: Serialize + serde::de::DeserializeOwned>(
    target: &mut T,
    key: &str,
    value: &str,
) -> Result<(), WorkloadError> {
    let serde_json::Value::Object(mut map) =
        serde_json::to_value(&*target).expect("a flat struct serialises to JSON")
    else {
        unreachable!("set_by_name is only used on structs")
    };
    let Some(old) = map.get(key) else {
        return Err(WorkloadError::UnknownParam {
            key: key.to_string(),
            known: map.keys().cloned().collect::<Vec<_>>().join(", "),
        });
    };
    let bad = |why: String| WorkloadError::BadValue {
        key: key.to_string(),
        value: value.to_string(),
        why,
    };
    let new = match old {
        serde_json::Value::String(_) => serde_json::Value::String(value.to_string()),
        serde_json::Value::Bool(_) => serde_json::Value::Bool(
            value
                .parse::<bool>()
                .map_err(|_| bad("expected true or false".into()))?,
        ),
        serde_json::Value::Number(_) => {
            let n: serde_json::Number =
                value.parse().map_err(|_| bad("expected a number".into()))?;
            serde_json::Value::Number(n)
        }
        serde_json::Value::Array(_) => serde_json::Value::Array(
            value
                .split(',')
                .map(|v| {
                    v.trim()
                        .parse::<serde_json::Number>()
                        .map(serde_json::Value::Number)
                        .map_err(|_| bad("expected comma-separated numbers".into()))
                })
                .collect::<Result<_, _>>()?,
        ),
        _ => return Err(bad("not settable from the command line".into())),
    };
    map.insert(key.to_string(), new);
    *target =
        serde_json::from_value(serde_json::Value::Object(map)).map_err(|e| bad(e.to_string()))?;
    Ok(())
}

/// `v >= min`, false for NaN (so NaN parameters are refused).
fn at_least(v: f64, min: f64) -> bool {
    v >= min
}

/// `v > min`, false for NaN.
fn above(v: f64, min: f64) -> bool {
    v > min
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
struct QosDraw {
    urgency: Urgency,
    deadline_factor: f64,
    budget_factor: f64,
    penalty_factor: f64,
}

fn draw_qos(p: &Params, index: u64) -> QosDraw {
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

/// Whether trace job `index` is duplicated (seed 004's high load). Drawn
/// from its own stream family, so the knob shifts no other draw.
fn duplicate_draw(p: &Params, index: u64) -> bool {
    let mut rng = ChaCha8Rng::seed_from_u64(p.seed ^ 0x0d0b_1e00_d0b1_e000);
    rng.set_stream(index);
    rng.random::<f64>() < p.duplicate_fraction
}

/// Builds the workload the parameters describe. `trace` is required for
/// trace sources and ignored otherwise.
pub fn build(params: &Params, trace: Option<&Path>) -> Result<Workload, WorkloadError> {
    params.validate()?;
    match params.source {
        Source::Synthetic003 => Ok(synthetic_003(params)),
        Source::Trace => {
            let path = trace.ok_or_else(|| WorkloadError::NoTrace(params.preset.clone()))?;
            let (_header, records) = swf::read_last(path, params.jobs)?;
            from_records(params, path, &records)
        }
    }
}

/// Annotates SWF records with QoS (the scheme of spec/workloads.md).
pub fn from_records(
    p: &Params,
    path: &Path,
    records: &[SwfRecord],
) -> Result<Workload, WorkloadError> {
    p.validate()?;
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

/// Seed 003's synthetic batch: arrivals uniform over [1, arrival_max],
/// lengths uniform over [min, max] MI run on nodes of `synthetic_mips`,
/// deadlines uniform over [min, max] s, 80% of budgets at the base value
/// and the rest uniform between base and max. Estimates are exact (seed 003
/// assumes correct estimates) unless `inaccuracy` says otherwise.
pub fn synthetic_003(p: &Params) -> Workload {
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
    use super::*;

    #[test]
    fn every_preset_builds_params() {
        for (name, _) in PRESETS {
            let p = Params::preset(name).unwrap();
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
        // Seed 000: high-urgency D/R mean 2 and low-urgency 8; low-urgency
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
    fn seed_004_prices_and_deadlines() {
        // Seed 004: D = 5 x RE; B = 0.1 per processor-second of the
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
        let w = synthetic_003(&p);
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
        assert_eq!(synthetic_003(&p).jobs, w.jobs);
    }
}
