//! Per-job records and the metrics of the papers, overall and per urgency
//! class.
//!
//! One [`JobRecord`] per submitted job, whatever happened to it; the
//! [`Summary`] is computed from the records alone, so a simulated run and a
//! real run are summarised by the same code.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::job::{DeadlineType, JobId, Urgency};
use crate::policy::RejectReason;
use crate::time::{Time, DEADLINE_TOLERANCE};
use crate::workload::WorkloadJob;

/// Everything known about one job at the end of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    /// The job.
    pub id: JobId,
    /// Urgency class, if the workload has classes.
    pub class: Option<Urgency>,
    /// Arrival time AT.
    pub submit: Time,
    /// Runtime estimate RE.
    pub estimate: Time,
    /// Actual runtime R (reference node).
    pub actual: Time,
    /// Processors P.
    pub processors: u32,
    /// Relative deadline D.
    pub deadline: Time,
    /// Budget B (+inf: unlimited, "unlimited" in JSON).
    #[serde(with = "crate::job::budget_serde")]
    pub budget: f64,
    /// Penalty rate PR.
    pub penalty_rate: f64,
    /// Hard or soft.
    pub deadline_type: DeadlineType,
    /// Whether the job was accepted (time-shared) or started (space-shared).
    pub accepted: bool,
    /// Why not, if not.
    pub reason: Option<RejectReason>,
    /// The policy's explanation of a rejection.
    pub detail: String,
    /// When the decision was taken.
    pub decided_at: Time,
    /// The nodes its parts ran on.
    pub nodes: Vec<usize>,
    /// When it started (parts placed or started).
    pub start: Option<Time>,
    /// When its last part finished.
    pub finish: Option<Time>,
    /// The cost C the policy set (earned only if the QoS is met).
    pub cost: f64,
    /// Parts lost to a node failure (live runs); the job did not complete.
    #[serde(default)]
    pub lost: bool,
}

/// One part of a job on one node, as it ran. Its fields, in this order,
/// are the columns of the parts files (see the manager's
/// `results::output::record`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PartRecord {
    /// The job.
    pub job: JobId,
    /// The node (global id).
    pub node: usize,
    /// When it was placed or started.
    pub start: Time,
    /// When it finished (infinite if it never did: lost, refused, or the
    /// run ended first; no value in the files).
    #[serde(with = "finish_serde")]
    pub finish: Time,
    /// Processor seconds it takes on that node (the actual runtime over the
    /// node's speed), so `cpu / (finish - start)` is its mean share.
    pub cpu: f64,
}

/// A finish that never came (infinite) is no value in the files.
mod finish_serde {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if v.is_finite() {
            s.serialize_some(v)
        } else {
            s.serialize_none()
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::INFINITY))
    }
}

impl JobRecord {
    /// The record of a job just submitted: nothing decided yet.
    pub fn new(j: &WorkloadJob) -> JobRecord {
        let s = &j.spec;
        JobRecord {
            id: s.id,
            class: s.urgency,
            submit: s.details.submit_time,
            estimate: s.estimate(),
            actual: j.actual_runtime,
            processors: s.resources.processors,
            deadline: s.qos.deadline,
            budget: s.qos.budget,
            penalty_rate: s.qos.penalty_rate,
            deadline_type: s.qos.deadline_type,
            accepted: false,
            reason: None,
            detail: String::new(),
            decided_at: s.details.submit_time,
            nodes: Vec::new(),
            start: None,
            finish: None,
            cost: 0.0,
            lost: false,
        }
    }

    /// The job as submitted, from what its record keeps: what a policy
    /// sees (estimate, processors, deadline, budget, class, penalty) and
    /// its actual runtime, at its submit time. A specification's memory,
    /// disk and further segments are not in a record.
    pub fn submitted(&self) -> WorkloadJob {
        let mut spec = crate::job::JobSpec::new(
            self.id,
            self.submit,
            self.estimate,
            self.processors,
            self.deadline,
            self.budget,
        );
        spec.urgency = self.class;
        spec.qos.deadline_type = self.deadline_type;
        spec.qos.penalty_rate = self.penalty_rate;
        WorkloadJob {
            spec,
            actual_runtime: self.actual,
        }
    }

    /// Accepted (time-shared) or started (space-shared) at `now` on
    /// `nodes` for `cost`.
    pub fn accept(&mut self, now: Time, nodes: Vec<usize>, cost: f64) {
        self.accepted = true;
        self.decided_at = now;
        self.start = Some(now);
        self.cost = cost;
        self.nodes = nodes;
    }

    /// Rejected (or dropped from a queue) at `now`.
    pub fn reject(&mut self, now: Time, reason: RejectReason, detail: String) {
        self.reason = Some(reason);
        self.detail = detail;
        self.decided_at = now;
    }

    /// One of its parts finished at `at`: the job finishes with its last
    /// part.
    pub fn part_finished(&mut self, at: Time) {
        self.finish = Some(self.finish.map_or(at, |f| f.max(at)));
    }

    /// Lost with a node (live runs): it will not complete; `detail` says
    /// where and why.
    pub fn lose(&mut self, detail: String) {
        self.lost = true;
        self.finish = None;
        self.detail = detail;
    }

    /// Absolute deadline DT.
    pub fn deadline_abs(&self) -> Time {
        self.submit + self.deadline
    }

    /// Whether it finished.
    pub fn completed(&self) -> bool {
        self.finish.is_some() && !self.lost
    }

    /// Whether it finished by its deadline (within [`DEADLINE_TOLERANCE`]).
    pub fn met(&self) -> bool {
        matches!(self.finish, Some(f) if !self.lost && f <= self.deadline_abs() + DEADLINE_TOLERANCE)
    }

    /// Whether its QoS was satisfied: deadline met and cost within budget.
    pub fn qos_satisfied(&self) -> bool {
        self.met() && self.cost <= self.budget
    }

    /// Delay past the deadline (0 if on time or not finished).
    pub fn delay(&self) -> Time {
        match self.finish {
            Some(f) if f > self.deadline_abs() + DEADLINE_TOLERANCE => f - self.deadline_abs(),
            _ => 0.0,
        }
    }

    /// Utility (the LibraSLA paper, equation 1): budget less delay x penalty rate for
    /// a completed job, hard or soft deadline alike (it may be negative);
    /// 0 for one that never ran. With an unlimited budget there is no
    /// utility to speak of: 0.
    pub fn utility(&self) -> f64 {
        if !self.completed() || !self.budget.is_finite() {
            return 0.0;
        }
        self.budget - self.delay() * self.penalty_rate
    }

    /// Slowdown: response time over actual runtime, for completed jobs.
    pub fn slowdown(&self) -> Option<f64> {
        self.finish
            .filter(|_| !self.lost)
            .map(|f| (f - self.submit) / self.actual)
    }
}

/// Counts of one urgency class (service differentiation).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClassSummary {
    /// Jobs submitted.
    pub submitted: usize,
    /// Jobs accepted.
    pub accepted: usize,
    /// Jobs that met their deadline.
    pub deadlines_met: usize,
    /// Jobs whose QoS was satisfied.
    pub qos_satisfied: usize,
    /// Percentage of submitted jobs that met their deadline.
    pub pct_deadlines_met: f64,
}

/// The metrics of one run of one policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// The policy.
    pub policy: String,
    /// Jobs submitted.
    pub submitted: usize,
    /// Jobs accepted (time-shared) or started (space-shared).
    pub accepted: usize,
    /// Jobs rejected or dropped.
    pub rejected: usize,
    /// Jobs that finished.
    pub completed: usize,
    /// Jobs finished by their deadline.
    pub deadlines_met: usize,
    /// Jobs with deadline met and cost within budget.
    pub qos_satisfied: usize,
    /// Job QoS Satisfaction = qos_satisfied / submitted (the Libra+$ paper).
    pub qos_satisfaction: f64,
    /// Cluster Profitability = sum of C over QoS-satisfied jobs / sum of B
    /// over all submitted jobs (the Libra+$ paper); null when budgets are unlimited.
    pub profitability: Option<f64>,
    /// Sum of C over QoS-satisfied jobs (the revenue actually earned).
    pub revenue: f64,
    /// % of submitted jobs finished by their deadline (the LibraRisk paper).
    pub pct_deadlines_met: f64,
    /// Mean slowdown of the jobs that met their deadline (the LibraRisk paper).
    pub avg_slowdown: Option<f64>,
    /// Sum of utility over completed jobs (the LibraSLA paper).
    pub utility: f64,
    /// Rejections by reason (every reason listed, zeros included).
    pub rejected_by_reason: BTreeMap<String, usize>,
    /// Per urgency class.
    pub per_class: BTreeMap<String, ClassSummary>,
    /// Accepted jobs whose estimate exceeded their deadline (LibraRisk's
    /// lone late parts; see docs/policies.md).
    pub accepted_estimate_over_deadline: usize,
    /// Of those, how many met their deadline after all.
    pub accepted_estimate_over_deadline_met: usize,
    /// Jobs with parts lost to node failures (live runs).
    pub lost: usize,
}

fn pct(n: usize, d: usize) -> f64 {
    if d == 0 {
        0.0
    } else {
        100.0 * n as f64 / d as f64
    }
}

impl Summary {
    /// Computes every metric from the records.
    pub fn compute(policy: &str, records: &[JobRecord]) -> Summary {
        let submitted = records.len();
        let accepted = records.iter().filter(|r| r.accepted).count();
        let completed = records.iter().filter(|r| r.completed()).count();
        let met: Vec<&JobRecord> = records.iter().filter(|r| r.met()).collect();
        let qos: Vec<&JobRecord> = records.iter().filter(|r| r.qos_satisfied()).collect();
        // `+ 0.0`: f64's sum of nothing is -0.0 (printed "-0"); a run
        // with no job earns 0.
        let revenue: f64 = qos.iter().map(|r| r.cost).sum::<f64>() + 0.0;
        let total_budget: f64 = records.iter().map(|r| r.budget).sum();
        let profitability =
            (total_budget.is_finite() && total_budget > 0.0).then(|| revenue / total_budget);
        let slowdowns: Vec<f64> = met.iter().filter_map(|r| r.slowdown()).collect();
        let avg_slowdown =
            (!slowdowns.is_empty()).then(|| slowdowns.iter().sum::<f64>() / slowdowns.len() as f64);
        let mut rejected_by_reason: BTreeMap<String, usize> = RejectReason::ALL
            .iter()
            .map(|r| (r.name().to_string(), 0))
            .collect();
        for r in records {
            if let Some(reason) = r.reason {
                *rejected_by_reason
                    .entry(reason.name().to_string())
                    .or_default() += 1;
            }
        }
        let mut per_class: BTreeMap<String, ClassSummary> = BTreeMap::new();
        for r in records {
            let Some(class) = r.class else { continue };
            let c = per_class.entry(class.name().to_string()).or_default();
            c.submitted += 1;
            c.accepted += usize::from(r.accepted);
            c.deadlines_met += usize::from(r.met());
            c.qos_satisfied += usize::from(r.qos_satisfied());
        }
        for c in per_class.values_mut() {
            c.pct_deadlines_met = pct(c.deadlines_met, c.submitted);
        }
        let over: Vec<&JobRecord> = records
            .iter()
            .filter(|r| r.accepted && r.estimate > r.deadline)
            .collect();
        Summary {
            policy: policy.to_string(),
            submitted,
            accepted,
            rejected: submitted - accepted,
            completed,
            deadlines_met: met.len(),
            qos_satisfied: qos.len(),
            qos_satisfaction: if submitted == 0 {
                0.0
            } else {
                qos.len() as f64 / submitted as f64
            },
            profitability,
            revenue,
            pct_deadlines_met: pct(met.len(), submitted),
            avg_slowdown,
            utility: records.iter().map(JobRecord::utility).sum::<f64>() + 0.0,
            rejected_by_reason,
            per_class,
            accepted_estimate_over_deadline: over.len(),
            accepted_estimate_over_deadline_met: over.iter().filter(|r| r.met()).count(),
            lost: records.iter().filter(|r| r.lost).count(),
        }
    }
}

#[cfg(test)]
mod tests {
    /// A run with no job earns 0, not -0 (f64's empty sum), in the table
    /// and summary.json.
    #[test]
    fn nothing_earned_is_a_positive_zero() {
        let s = Summary::compute("x", &[]);
        assert!(
            s.utility == 0.0 && s.utility.is_sign_positive(),
            "{}",
            s.utility
        );
        assert!(
            s.revenue == 0.0 && s.revenue.is_sign_positive(),
            "{}",
            s.revenue
        );
    }

    use super::*;

    fn rec(id: JobId, accepted: bool, finish: Option<Time>, cost: f64, budget: f64) -> JobRecord {
        JobRecord {
            id,
            class: Some(if id.is_multiple_of(2) {
                Urgency::High
            } else {
                Urgency::Low
            }),
            submit: 10.0,
            estimate: 50.0,
            actual: 40.0,
            processors: 1,
            deadline: 100.0,
            budget,
            penalty_rate: 2.0,
            deadline_type: DeadlineType::Soft,
            accepted,
            reason: (!accepted).then_some(RejectReason::Deadline),
            detail: String::new(),
            decided_at: 10.0,
            nodes: vec![],
            start: accepted.then_some(10.0),
            finish,
            cost,
            lost: false,
        }
    }

    #[test]
    fn metrics_by_hand() {
        // Four jobs, D = 100 from submit 10, so DT = 110:
        // 1: finished 90 (met), cost 60 <= budget 100: QoS.
        // 2: finished 130 (20 s late), cost 60, budget 100: no QoS.
        // 3: finished 110 (met, exactly on time), cost 120 > budget 100:
        //    met but no QoS.
        // 4: rejected (deadline), budget 100.
        let r = vec![
            rec(1, true, Some(90.0), 60.0, 100.0),
            rec(2, true, Some(130.0), 60.0, 100.0),
            rec(3, true, Some(110.0), 120.0, 100.0),
            rec(4, false, None, 0.0, 100.0),
        ];
        let s = Summary::compute("x", &r);
        assert_eq!(s.submitted, 4);
        assert_eq!(s.accepted, 3);
        assert_eq!(s.deadlines_met, 2);
        assert_eq!(s.qos_satisfied, 1);
        assert!((s.qos_satisfaction - 0.25).abs() < 1e-12);
        // Profitability = 60 / 400.
        assert!((s.profitability.unwrap() - 0.15).abs() < 1e-12);
        assert!((s.pct_deadlines_met - 50.0).abs() < 1e-12);
        // Slowdowns of met jobs: (90-10)/40 = 2, (110-10)/40 = 2.5.
        assert!((s.avg_slowdown.unwrap() - 2.25).abs() < 1e-12);
        // Utility: 100 + (100 - 20 x 2) + 100 + 0 = 260.
        assert!((s.utility - 260.0).abs() < 1e-12);
        assert_eq!(s.rejected_by_reason["deadline"], 1);
        assert_eq!(s.rejected_by_reason["risk"], 0);
        assert_eq!(s.per_class["high"].submitted, 2);
        assert_eq!(s.per_class["high"].deadlines_met, 0);
        assert_eq!(s.per_class["low"].deadlines_met, 2);
    }

    #[test]
    fn utility_of_a_late_job_by_hand() {
        // Submitted at 10, D 100: DT 110. Finished at 160: 50 s late. B 100,
        // PR 2: utility 100 - 50 x 2 = 0. Finished at 210 (100 s late):
        // 100 - 200 = -100, a penalty. A hard deadline changes nothing:
        // equation 1 of the LibraSLA paper applies to every job.
        let mut r = rec(1, true, Some(160.0), 60.0, 100.0);
        assert_eq!(r.delay(), 50.0);
        assert_eq!(r.utility(), 0.0);
        r.finish = Some(210.0);
        assert_eq!(r.utility(), -100.0);
        r.deadline_type = DeadlineType::Hard;
        assert_eq!(r.utility(), -100.0);
        // Rejected: never ran, utility 0.
        assert_eq!(rec(2, false, None, 0.0, 100.0).utility(), 0.0);
    }

    #[test]
    fn unlimited_budgets_have_no_profitability() {
        let r = vec![rec(1, true, Some(90.0), 60.0, f64::INFINITY)];
        let s = Summary::compute("x", &r);
        assert_eq!(s.profitability, None);
        assert_eq!(s.qos_satisfied, 1);
        assert_eq!(s.utility, 0.0);
    }
}
