//! Result files: `summary.json` and the per-job CSV of each policy, and the
//! comparison table printed at the end of a run. The formats are described
//! in docs/output-formats.md; keep the two in step.

use std::fs;
use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use common::metrics::{JobRecord, Summary};
use serde::Serialize;

/// Writes `value` as pretty JSON to `path` (newline-terminated).
pub fn write_json(path: &Path, value: &impl Serialize) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

fn opt(v: Option<f64>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}

/// The per-job CSV columns, in order.
pub const JOB_COLUMNS: &[&str] = &[
    "job_id",
    "class",
    "submit",
    "estimate",
    "actual",
    "processors",
    "deadline",
    "deadline_abs",
    "budget",
    "penalty_rate",
    "deadline_type",
    "accepted",
    "reason",
    "decided_at",
    "nodes",
    "start",
    "finish",
    "met",
    "qos_satisfied",
    "delay",
    "cost",
    "utility",
    "slowdown",
    "lost",
    "detail",
];

/// Writes one row per job.
pub fn write_jobs_csv(path: &Path, records: &[JobRecord]) -> Result<()> {
    let mut w =
        csv::Writer::from_path(path).with_context(|| format!("creating {}", path.display()))?;
    w.write_record(JOB_COLUMNS)?;
    for r in records {
        let nodes = r
            .nodes
            .iter()
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(" ");
        let budget = if r.budget.is_finite() {
            r.budget.to_string()
        } else {
            "unlimited".to_string()
        };
        w.write_record([
            r.id.to_string(),
            r.class.map(|c| c.name().to_string()).unwrap_or_default(),
            r.submit.to_string(),
            r.estimate.to_string(),
            r.actual.to_string(),
            r.processors.to_string(),
            r.deadline.to_string(),
            r.deadline_abs().to_string(),
            budget,
            r.penalty_rate.to_string(),
            format!("{:?}", r.deadline_type).to_lowercase(),
            r.accepted.to_string(),
            r.reason.map(|x| x.name().to_string()).unwrap_or_default(),
            r.decided_at.to_string(),
            nodes,
            opt(r.start),
            opt(r.finish),
            r.met().to_string(),
            r.qos_satisfied().to_string(),
            r.delay().to_string(),
            r.cost.to_string(),
            r.utility().to_string(),
            opt(r.slowdown()),
            r.lost.to_string(),
            r.detail.clone(),
        ])?;
    }
    w.flush()
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

fn cell(v: Option<f64>, prec: usize) -> String {
    v.map(|x| format!("{x:.prec$}"))
        .unwrap_or_else(|| "-".into())
}

/// The comparison table, one line per policy.
pub fn print_table(out: &mut impl Write, summaries: &[Summary]) -> std::io::Result<()> {
    writeln!(
        out,
        "{:<18} {:>6} {:>6} {:>6} {:>7} {:>7} {:>7} {:>8} {:>9} {:>12}  rejected (res/dl/bud/risk/ret/exp)",
        "policy", "jobs", "accept", "met", "%met", "QoS", "profit", "slowdown", "utility", "revenue"
    )?;
    for s in summaries {
        let r = |k: &str| s.rejected_by_reason.get(k).copied().unwrap_or(0);
        writeln!(
            out,
            "{:<18} {:>6} {:>6} {:>6} {:>7.2} {:>7.4} {:>7} {:>8} {:>9.3e} {:>12.4e}  {}/{}/{}/{}/{}/{}",
            s.policy,
            s.submitted,
            s.accepted,
            s.deadlines_met,
            s.pct_deadlines_met,
            s.qos_satisfaction,
            cell(s.profitability, 4),
            cell(s.avg_slowdown, 2),
            s.utility,
            s.revenue,
            r("resources"),
            r("deadline"),
            r("budget"),
            r("risk"),
            r("return"),
            r("expired"),
        )?;
    }
    Ok(())
}
