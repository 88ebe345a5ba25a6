//! The comparison table printed at the end of a run, one line per
//! policy.

use std::io::Write;

use common::metrics::Summary;

fn cell(v: Option<f64>, prec: usize) -> String {
    v.map(|x| format!("{x:.prec$}"))
        .unwrap_or_else(|| "-".into())
}

/// The comparison table, one line per policy.
pub fn print_table(out: &mut impl Write, summaries: &[Summary]) -> std::io::Result<()> {
    writeln!(
        out,
        "{:<18} {:>6} {:>6} {:>6} {:>7} {:>7} {:>7} {:>8} {:>9} {:>12}  rejected (res/dl/bud/risk/ret/exp/sched)",
        "policy", "jobs", "accept", "met", "%met", "QoS", "profit", "slowdown", "utility", "revenue"
    )?;
    for s in summaries {
        let r = |k: &str| s.rejected_by_reason.get(k).copied().unwrap_or(0);
        writeln!(
            out,
            "{:<18} {:>6} {:>6} {:>6} {:>7.2} {:>7.4} {:>7} {:>8} {:>9.3e} {:>12.4e}  {}/{}/{}/{}/{}/{}/{}",
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
            r("scheduler"),
        )?;
    }
    Ok(())
}
