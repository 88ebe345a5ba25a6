//! Every knob of a workload and of the cluster it runs on ([`Params`]),
//! the checks serde cannot make, and setting any field by name (`--set
//! key=value`).

use serde::{Deserialize, Serialize};

use super::WorkloadError;
use crate::job::DeadlineType;
use crate::node_model::NodeSpec;

/// How the runtime estimate RE is derived from the actual runtime R.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InaccuracyForm {
    /// The LibraRisk paper: RE = R + x (trace estimate - R); x = 0 is accurate, x = 1
    /// the trace's own requested time.
    TowardTrace,
    /// The Libra+$ paper: RE = R (1 - x), an under-estimate by x.
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
    /// The Libra paper's synthetic batch (uniform arrivals, lengths, deadlines).
    /// `synthetic003` is what run manifests and journals written before
    /// this name recorded: they still read.
    #[serde(alias = "synthetic003")]
    SyntheticLibra,
}

/// What a deadline is a factor of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeadlineBasis {
    /// D = factor x actual runtime R (the Libra+$, LibraSLA and LibraRisk
    /// papers), factor drawn per class.
    Actual,
    /// D = `deadline_estimate_factor` x RE (the VQoPS paper).
    Estimate,
}

/// How budgets are set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BudgetBasis {
    /// B = factor x PBase x R, the factor drawn per class (the Libra+$,
    /// LibraSLA and LibraRisk papers).
    Runtime,
    /// The VQoPS paper: B = PBase x P x RE, times `urgent_price_factor` for an
    /// urgent (high-urgency) job: the job's maximum price per
    /// processor-second of its estimate.
    ProcessorSeconds,
}

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
    /// D = this x RE when `deadline_basis` is `estimate` (the VQoPS paper).
    pub deadline_estimate_factor: f64,
    /// What deadlines are a factor of.
    pub deadline_basis: DeadlineBasis,
    /// Whether jobs carry budgets at all (the LibraRisk paper has none: unlimited).
    pub budgets: bool,
    /// How budgets are set.
    pub budget_basis: BudgetBasis,
    /// The VQoPS paper: price factor C of urgent jobs over normal ones (with
    /// `budget_basis = processor-seconds`).
    pub urgent_price_factor: f64,
    /// The VQoPS paper's high load: each trace job is duplicated (same arrival,
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
    /// The Libra paper's batch: arrivals uniform over [1, this].
    pub synthetic_arrival_max: f64,
    /// The Libra paper's batch: job length range (million instructions).
    pub synthetic_length_min_mi: f64,
    /// Upper end of the length range (MI).
    pub synthetic_length_max_mi: f64,
    /// The Libra paper's batch: node rating (MIPS); R = length / rating.
    pub synthetic_mips: f64,
    /// The Libra paper's batch: deadlines uniform over [min, max] seconds.
    pub synthetic_deadline_min: f64,
    /// Upper end of the deadline range (s).
    pub synthetic_deadline_max: f64,
    /// The Libra paper's batch: the budget of the common jobs.
    pub synthetic_budget_base: f64,
    /// The Libra paper's batch: share of jobs with a random budget (uniform between
    /// base and max); they are labelled high urgency.
    pub synthetic_rich_fraction: f64,
    /// Upper end of the random budgets.
    pub synthetic_budget_max: f64,
}

impl Params {
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
        if self.source == Source::SyntheticLibra
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
        if self.node_memory_kb == 0 {
            return bad("node_memory_kb", "must be at least 1");
        }
        if self.node_disk_mb == 0 {
            return bad("node_disk_mb", "must be at least 1");
        }
        if !(at_least(self.synthetic_budget_base, 0.0)
            && self.synthetic_budget_max.is_finite()
            && self.synthetic_budget_max >= self.synthetic_budget_base)
        {
            return bad(
                "synthetic_budget_base",
                "budgets must be >= 0 and finite, with synthetic_budget_max >= synthetic_budget_base",
            );
        }
        if !(0.0..=1.0).contains(&self.synthetic_rich_fraction) {
            return bad("synthetic_rich_fraction", "must be within [0, 1]");
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
