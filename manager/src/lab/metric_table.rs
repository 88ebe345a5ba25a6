//! Every metric of a [`Summary`] as a named number with an axis label, in
//! one table: the columns of a sweep's tidy CSV, the plots, and `report`
//! all iterate it, so a metric added here appears everywhere.

use common::metrics::Summary;

/// One metric: a stable column name, a label with its unit, and how to read
/// it from a summary (`None`: undefined for this run, e.g. profitability
/// with unlimited budgets).
pub struct Metric {
    /// Column name (snake case, as in summary.json where it exists there).
    pub name: &'static str,
    /// Axis label, with the unit.
    pub label: &'static str,
    /// Reads the value.
    pub get: fn(&Summary) -> Option<f64>,
}

fn class(s: &Summary, c: &str, f: fn(&common::metrics::ClassSummary) -> f64) -> Option<f64> {
    Some(s.per_class.get(c).map_or(0.0, f))
}

fn reason(s: &Summary, r: &str) -> Option<f64> {
    Some(s.rejected_by_reason.get(r).copied().unwrap_or(0) as f64)
}

/// Every metric, headline ones first.
pub const METRICS: &[Metric] = &[
    Metric {
        name: "qos_satisfaction",
        label: "Job QoS satisfaction (share of submitted jobs)",
        get: |s| Some(s.qos_satisfaction),
    },
    Metric {
        name: "profitability",
        label: "Cluster profitability (revenue / total budget)",
        get: |s| s.profitability,
    },
    Metric {
        name: "pct_deadlines_met",
        label: "Jobs with deadline fulfilled (% of submitted)",
        get: |s| Some(s.pct_deadlines_met),
    },
    Metric {
        name: "avg_slowdown",
        label: "Average slowdown of jobs that met their deadline (response / runtime)",
        get: |s| s.avg_slowdown,
    },
    Metric {
        name: "utility",
        label: "Utility achieved (budget units)",
        get: |s| Some(s.utility),
    },
    Metric {
        name: "revenue",
        label: "Revenue earned (budget units)",
        get: |s| Some(s.revenue),
    },
    Metric {
        name: "submitted",
        label: "Jobs submitted",
        get: |s| Some(s.submitted as f64),
    },
    Metric {
        name: "accepted",
        label: "Jobs accepted or started",
        get: |s| Some(s.accepted as f64),
    },
    Metric {
        name: "rejected",
        label: "Jobs rejected or dropped",
        get: |s| Some(s.rejected as f64),
    },
    Metric {
        name: "completed",
        label: "Jobs completed",
        get: |s| Some(s.completed as f64),
    },
    Metric {
        name: "deadlines_met",
        label: "Jobs completed by their deadline",
        get: |s| Some(s.deadlines_met as f64),
    },
    Metric {
        name: "qos_satisfied",
        label: "Jobs with deadline met and cost within budget",
        get: |s| Some(s.qos_satisfied as f64),
    },
    Metric {
        name: "rejected_resources",
        label: "Jobs rejected for resources",
        get: |s| reason(s, "resources"),
    },
    Metric {
        name: "rejected_deadline",
        label: "Jobs rejected for their deadline",
        get: |s| reason(s, "deadline"),
    },
    Metric {
        name: "rejected_budget",
        label: "Jobs rejected for their budget",
        get: |s| reason(s, "budget"),
    },
    Metric {
        name: "rejected_risk",
        label: "Jobs rejected for risk",
        get: |s| reason(s, "risk"),
    },
    Metric {
        name: "rejected_return",
        label: "Jobs rejected for return",
        get: |s| reason(s, "return"),
    },
    Metric {
        name: "rejected_expired",
        label: "Jobs dropped from the queue past their deadline",
        get: |s| reason(s, "expired"),
    },
    Metric {
        name: "rejected_scheduler",
        label: "Jobs rejected by an external (Batsim) scheduler",
        get: |s| reason(s, "scheduler"),
    },
    Metric {
        name: "high_submitted",
        label: "High-urgency jobs submitted",
        get: |s| class(s, "high", |c| c.submitted as f64),
    },
    Metric {
        name: "high_accepted",
        label: "High-urgency jobs accepted",
        get: |s| class(s, "high", |c| c.accepted as f64),
    },
    Metric {
        name: "high_deadlines_met",
        label: "High-urgency jobs that met their deadline",
        get: |s| class(s, "high", |c| c.deadlines_met as f64),
    },
    Metric {
        name: "high_qos_satisfied",
        label: "High-urgency jobs with QoS satisfied",
        get: |s| class(s, "high", |c| c.qos_satisfied as f64),
    },
    Metric {
        name: "high_pct_deadlines_met",
        label: "High-urgency jobs with deadline fulfilled (% of class)",
        get: |s| {
            s.per_class
                .get("high")
                .filter(|c| c.submitted > 0)
                .map(|c| c.pct_deadlines_met)
        },
    },
    Metric {
        name: "low_submitted",
        label: "Low-urgency jobs submitted",
        get: |s| class(s, "low", |c| c.submitted as f64),
    },
    Metric {
        name: "low_accepted",
        label: "Low-urgency jobs accepted",
        get: |s| class(s, "low", |c| c.accepted as f64),
    },
    Metric {
        name: "low_deadlines_met",
        label: "Low-urgency jobs that met their deadline",
        get: |s| class(s, "low", |c| c.deadlines_met as f64),
    },
    Metric {
        name: "low_qos_satisfied",
        label: "Low-urgency jobs with QoS satisfied",
        get: |s| class(s, "low", |c| c.qos_satisfied as f64),
    },
    Metric {
        name: "low_pct_deadlines_met",
        label: "Low-urgency jobs with deadline fulfilled (% of class)",
        get: |s| {
            s.per_class
                .get("low")
                .filter(|c| c.submitted > 0)
                .map(|c| c.pct_deadlines_met)
        },
    },
    Metric {
        name: "accepted_estimate_over_deadline",
        label: "Accepted jobs whose estimate exceeds their deadline",
        get: |s| Some(s.accepted_estimate_over_deadline as f64),
    },
    Metric {
        name: "accepted_estimate_over_deadline_met",
        label: "Of those, jobs that met their deadline",
        get: |s| Some(s.accepted_estimate_over_deadline_met as f64),
    },
    Metric {
        name: "lost",
        label: "Jobs with parts lost to node failures",
        get: |s| Some(s.lost as f64),
    },
];

/// The metric called `name`, or an error listing the known names.
pub fn metric(name: &str) -> anyhow::Result<&'static Metric> {
    METRICS.iter().find(|m| m.name == name).ok_or_else(|| {
        anyhow::anyhow!(
            "unknown metric '{name}'; known metrics: {}",
            METRICS
                .iter()
                .map(|m| m.name)
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
}

/// A label for a parameter axis: what it means and its unit, or the key.
pub fn param_label(key: &str) -> String {
    match key {
        "arrival_delay_factor" => "Arrival delay factor f (lower = heavier load)".into(),
        "beta" => "Dynamic pricing factor beta (Libra+$)".into(),
        "alpha" => "Static pricing factor alpha (Libra+$)".into(),
        "inaccuracy" => "Runtime estimate inaccuracy x (0 = accurate)".into(),
        "high_urgency_fraction" => "Share of high-urgency jobs".into(),
        "deadline_high_low_ratio" => "Deadline high:low ratio".into(),
        "deadline_low_mean" => "Deadline mean factor (high-urgency D/R mean)".into(),
        "budget_low_mean" => "Budget mean factor (low-urgency B/f(R) mean)".into(),
        "budget_high_low_ratio" => "Budget high:low ratio (cost of urgent jobs)".into(),
        "penalty_low_mean" => "Penalty rate mean factor (low-urgency PR/g(R) mean)".into(),
        "spread" => "Class spread (standard deviation / mean)".into(),
        "jobs" => "Jobs".into(),
        "nodes" => "Nodes".into(),
        "oc_factor" => "OC-Factor".into(),
        "case" => "Case".into(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_found() {
        let mut names: Vec<_> = METRICS.iter().map(|m| m.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), METRICS.len());
        assert!(metric("profitability").is_ok());
        let e = metric("profit").err().unwrap().to_string();
        assert!(e.contains("'profit'") && e.contains("profitability"), "{e}");
    }

    /// Every rejection reason of summary.json has its column.
    #[test]
    fn every_rejection_reason_has_a_metric() {
        for r in common::policy::RejectReason::ALL {
            let name = format!("rejected_{}", r.name());
            assert!(metric(&name).is_ok(), "no metric {name}");
        }
    }
}
