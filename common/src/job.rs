//! The job model: the user-level job submission specification of the Libra+$ paper
//! (segments JobDetails, ResourceRequirements, QoSConstraints,
//! QoSOptimization, extensible), plus the deadline type and penalty rate of
//! the LibraSLA paper and the urgency class of the workload model.
//!
//! A [`JobSpec`] is what a user declares and what every policy sees. The
//! actual runtime is *not* part of it: it lives in
//! [`crate::workload::WorkloadJob`], hidden from policies, and only the
//! execution models (the simulator's nodes, the real nodes' burners) use it.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::time::Time;

/// A job's identity (the trace's job number, or a generator's counter).
pub type JobId = u64;

/// Hard deadlines must be met to be worth anything; soft deadlines may be
/// missed at a penalty (the LibraSLA paper).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum DeadlineType {
    /// The job must not be delayed: LibraSLA accepts it only where it is
    /// projected on time, and protects its share on a short node. If it is
    /// late all the same (inaccurate estimates, or a later job delaying
    /// it), its utility follows the same equation as a soft job's (the
    /// LibraSLA paper, equation 1): budget less delay x penalty rate.
    #[default]
    Hard,
    /// Lateness costs `penalty_rate` per second of delay.
    Soft,
}

/// Urgency class of the workload model: high urgency means a tight deadline
/// and a large budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Urgency {
    /// Tight deadline, high budget and penalty.
    High,
    /// Relaxed deadline, low budget and penalty.
    Low,
}

impl Urgency {
    /// Stable lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            Urgency::High => "high",
            Urgency::Low => "low",
        }
    }
}

/// What the user wants optimised within the constraints (the Libra+$ paper's fourth
/// segment). Policies of the Libra family do not use it yet; it is carried
/// so that submissions round-trip.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Objective {
    /// Finish as early as possible within the budget.
    FinishTime,
    /// Pay as little as possible within the deadline.
    Cost,
}

/// Segment JobDetails.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobDetails {
    /// Runtime estimate RE (seconds on the reference node of speed 1.0).
    pub runtime_estimate: Time,
    /// Arrival time AT at the cluster (trace seconds).
    pub submit_time: Time,
    /// Free-form name (the trace's job number, or what the user typed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// Segment ResourceRequirements.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceRequirements {
    /// Number of processors: one part per node, all parts the same length.
    pub processors: u32,
    /// Memory per processor (KB); 0 when the trace does not say.
    #[serde(default)]
    pub memory_kb: u64,
    /// Disk per processor (MB); 0 when unknown.
    #[serde(default)]
    pub disk_mb: u64,
}

/// Segment QoSConstraints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QosConstraints {
    /// Relative deadline D (seconds after submission).
    pub deadline: Time,
    /// Budget B the user will pay at most (+inf: unlimited, written as
    /// the string "unlimited" in JSON).
    #[serde(with = "budget_serde")]
    pub budget: f64,
    /// Hard or soft deadline (the LibraSLA paper).
    #[serde(default)]
    pub deadline_type: DeadlineType,
    /// Penalty per second of delay past the deadline (the LibraSLA paper).
    #[serde(default)]
    pub penalty_rate: f64,
}

/// JSON has no infinity: an unlimited budget is written "unlimited".
pub(crate) mod budget_serde {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if *v == f64::INFINITY {
            s.serialize_str("unlimited")
        } else {
            s.serialize_f64(*v)
        }
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Budget {
        Num(f64),
        Word(String),
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        match Budget::deserialize(d)? {
            Budget::Num(v) => Ok(v),
            Budget::Word(w) if w == "unlimited" => Ok(f64::INFINITY),
            Budget::Word(w) => Err(serde::de::Error::custom(format!(
                "budget must be a number or \"unlimited\", got \"{w}\""
            ))),
        }
    }
}

/// Segment QoSOptimization.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct QosOptimization {
    /// What to optimise, if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objective: Option<Objective>,
}

/// A job as submitted: `job_i([JobDetails][ResourceRequirements]
/// [QoSConstraints][QoSOptimization] ...)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobSpec {
    /// Identity.
    pub id: JobId,
    /// JobDetails segment.
    pub details: JobDetails,
    /// ResourceRequirements segment.
    pub resources: ResourceRequirements,
    /// QoSConstraints segment.
    pub qos: QosConstraints,
    /// QoSOptimization segment.
    #[serde(default)]
    pub optimization: QosOptimization,
    /// Urgency class (workload model); `None` for hand-submitted jobs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub urgency: Option<Urgency>,
    /// Further segments, as the specification is meant to be extensible
    /// (e.g. a workflow job's data dependencies): segment -> key -> value.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra_segments: BTreeMap<String, BTreeMap<String, String>>,
}

/// An invalid job specification. Every variant names the job and the field.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum JobError {
    /// A field that must be strictly positive is not.
    #[error("job {job}: field {field} must be > 0, got {value}")]
    NotPositive {
        /// The job.
        job: JobId,
        /// Segment-qualified field name.
        field: &'static str,
        /// The offending value.
        value: f64,
    },
    /// A field that must be >= 0 is negative.
    #[error("job {job}: field {field} must be >= 0, got {value}")]
    Negative {
        /// The job.
        job: JobId,
        /// Segment-qualified field name.
        field: &'static str,
        /// The offending value.
        value: f64,
    },
    /// A number that is NaN or infinite.
    #[error("job {job}: field {field} must be a finite number, got {value}")]
    NotFinite {
        /// The job.
        job: JobId,
        /// Segment-qualified field name.
        field: &'static str,
        /// The offending value.
        value: f64,
    },
}

impl JobSpec {
    /// The common case of a submission: job `id` arriving at `submit`,
    /// estimate `estimate` on `processors` nodes, relative deadline
    /// `deadline`, budget `budget` (+inf: unlimited); a hard deadline with
    /// no penalty, no memory or disk, no urgency class, no name. The
    /// `with_*` methods set the rest.
    pub fn new(
        id: JobId,
        submit: Time,
        estimate: Time,
        processors: u32,
        deadline: Time,
        budget: f64,
    ) -> JobSpec {
        JobSpec {
            id,
            details: JobDetails {
                runtime_estimate: estimate,
                submit_time: submit,
                name: None,
            },
            resources: ResourceRequirements {
                processors,
                memory_kb: 0,
                disk_mb: 0,
            },
            qos: QosConstraints {
                deadline,
                budget,
                deadline_type: DeadlineType::Hard,
                penalty_rate: 0.0,
            },
            optimization: QosOptimization::default(),
            urgency: None,
            extra_segments: BTreeMap::new(),
        }
    }

    /// With deadline type `t` and penalty rate `penalty_rate`.
    pub fn with_deadline_type(mut self, t: DeadlineType, penalty_rate: f64) -> JobSpec {
        self.qos.deadline_type = t;
        self.qos.penalty_rate = penalty_rate;
        self
    }

    /// With urgency class `u`.
    pub fn with_urgency(mut self, u: Urgency) -> JobSpec {
        self.urgency = Some(u);
        self
    }

    /// Absolute deadline DT = AT + D.
    pub fn deadline_abs(&self) -> Time {
        self.details.submit_time + self.qos.deadline
    }

    /// Runtime estimate RE.
    pub fn estimate(&self) -> Time {
        self.details.runtime_estimate
    }

    /// Processors P.
    pub fn processors(&self) -> usize {
        self.resources.processors as usize
    }

    /// Checks the specification: runtime estimate, deadline and processors
    /// must be > 0; budget and penalty rate >= 0; all numbers finite.
    ///
    /// A deadline shorter than the runtime estimate is *not* an error here:
    /// it is a legitimate submission that admission control rejects (reason
    /// deadline), or that LibraRisk may take alone onto an empty node.
    pub fn validate(&self) -> Result<(), JobError> {
        let job = self.id;
        let finite = |field: &'static str, value: f64| {
            if value.is_finite() {
                Ok(())
            } else {
                Err(JobError::NotFinite { job, field, value })
            }
        };
        let positive = |field: &'static str, value: f64| {
            finite(field, value)?;
            if value > 0.0 {
                Ok(())
            } else {
                Err(JobError::NotPositive { job, field, value })
            }
        };
        let non_negative = |field: &'static str, value: f64| {
            finite(field, value)?;
            if value >= 0.0 {
                Ok(())
            } else {
                Err(JobError::Negative { job, field, value })
            }
        };
        finite("JobDetails.submit_time", self.details.submit_time)?;
        positive("JobDetails.runtime_estimate", self.details.runtime_estimate)?;
        positive(
            "ResourceRequirements.processors",
            f64::from(self.resources.processors),
        )?;
        positive("QoSConstraints.deadline", self.qos.deadline)?;
        // An unlimited budget (+inf) is how a workload without budgets (the
        // LibraRisk paper) says "never binding"; NaN and negative budgets are errors.
        if self.qos.budget != f64::INFINITY {
            non_negative("QoSConstraints.budget", self.qos.budget)?;
        }
        non_negative("QoSConstraints.penalty_rate", self.qos.penalty_rate)?;
        Ok(())
    }
}

impl fmt::Display for JobSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "job {} (RE {} s, P {}, D {} s, B {})",
            self.id,
            self.details.runtime_estimate,
            self.resources.processors,
            self.qos.deadline,
            self.qos.budget
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn spec() -> JobSpec {
        JobSpec::new(7, 0.0, 100.0, 2, 400.0, 10.0)
    }

    #[test]
    fn valid_spec_passes() {
        spec().validate().unwrap();
    }

    #[test]
    fn errors_name_job_and_field() {
        let mut s = spec();
        s.details.runtime_estimate = 0.0;
        let e = s.validate().unwrap_err().to_string();
        assert_eq!(
            e,
            "job 7: field JobDetails.runtime_estimate must be > 0, got 0"
        );

        let mut s = spec();
        s.qos.deadline = -5.0;
        assert!(s
            .validate()
            .unwrap_err()
            .to_string()
            .contains("QoSConstraints.deadline"));

        let mut s = spec();
        s.resources.processors = 0;
        assert!(s
            .validate()
            .unwrap_err()
            .to_string()
            .contains("ResourceRequirements.processors"));

        let mut s = spec();
        s.qos.budget = -1.0;
        assert_eq!(
            s.validate().unwrap_err().to_string(),
            "job 7: field QoSConstraints.budget must be >= 0, got -1"
        );

        let mut s = spec();
        s.details.runtime_estimate = f64::NAN;
        assert!(s.validate().unwrap_err().to_string().contains("finite"));
    }

    #[test]
    fn extra_segments_round_trip() {
        let mut s = spec();
        s.extra_segments.insert(
            "DataDependencies".into(),
            BTreeMap::from([("input".to_string(), "job 3".to_string())]),
        );
        let j = serde_json::to_string(&s).unwrap();
        let back: JobSpec = serde_json::from_str(&j).unwrap();
        assert_eq!(back, s);
    }
}
