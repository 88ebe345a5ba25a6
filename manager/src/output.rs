//! Result file formats: `summary.json`, the per-job CSV and JSON lines of
//! each policy, the Batsim-style `out_jobs` CSV, the executed schedule as
//! SWF, and the comparison table printed at the end of a run. The formats
//! are described in docs/output-formats.md; keep the two in step.
//!
//! Not here: which files a run directory holds and the manifest (see
//! `rundir`).

use std::fs;
use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use common::job::Urgency;
use common::metrics::{JobRecord, Summary};
use common::Time;
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

/// One line of `jobs-<policy>.jsonl`: the record with every derived field.
#[derive(Serialize)]
struct JobLine<'a> {
    #[serde(flatten)]
    record: &'a JobRecord,
    deadline_abs: Time,
    met: bool,
    qos_satisfied: bool,
    delay: Time,
    utility: f64,
    slowdown: Option<f64>,
}

/// Writes one JSON object per job and line, in arrival order: every field
/// of the record plus the derived ones (deadline_abs, met, qos_satisfied,
/// delay, utility, slowdown).
pub fn write_jobs_jsonl(path: &Path, records: &[JobRecord]) -> Result<()> {
    let mut text = String::new();
    for r in records {
        let line = JobLine {
            record: r,
            deadline_abs: r.deadline_abs(),
            met: r.met(),
            qos_satisfied: r.qos_satisfied(),
            delay: r.delay(),
            utility: r.utility(),
            slowdown: r.slowdown(),
        };
        text.push_str(&serde_json::to_string(&line)?);
        text.push('\n');
    }
    fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// The columns of Batsim's `out_jobs.csv`, in Batsim's order (its
/// `JobsTracer`), so that evalys and other Batsim tooling read our files
/// unchanged.
pub const BATSIM_COLUMNS: &[&str] = &[
    "job_id",
    "workload_name",
    "profile",
    "submission_time",
    "requested_number_of_resources",
    "requested_time",
    "success",
    "final_state",
    "starting_time",
    "execution_time",
    "finish_time",
    "waiting_time",
    "turnaround_time",
    "stretch",
    "allocated_resources",
    "consumed_energy",
    "metadata",
];

/// Batsim's final state of a job: it ran to completion (deadline met or
/// not: that is QoS, not execution), lost parts to a node failure, or was
/// never started (rejected at submission or dropped from a queue).
pub fn batsim_final_state(r: &JobRecord) -> &'static str {
    if r.lost {
        "COMPLETED_KILLED"
    } else if r.completed() {
        "COMPLETED_SUCCESSFULLY"
    } else {
        "REJECTED"
    }
}

/// Node indices as a Batsim interval set: sorted, runs of consecutive
/// indices as `a-b`, separated by spaces (`"0-3 7"`); empty for none.
pub fn interval_set(nodes: &[usize]) -> String {
    let mut v = nodes.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            v[i].to_string()
        } else {
            format!("{}-{}", v[i], v[j])
        });
        i = j + 1;
    }
    parts.join(" ")
}

/// Writes `out_jobs-<policy>.csv` in Batsim's layout. Times are the run's
/// trace seconds in Rust's shortest round-trip form (so waiting, turnaround
/// and stretch recompute exactly from the other columns). A rejected job
/// has empty time columns, as in Batsim; `consumed_energy` is -1 (not
/// modelled) for jobs that ran. `profile` is the urgency class, and
/// `metadata` (always quoted, as Batsim writes it) carries the QoS
/// outcome: `class=..;deadline_abs=..;met=..;qos_satisfied=..;cost=..;reason=..`.
pub fn write_batsim_csv(path: &Path, workload_name: &str, records: &[JobRecord]) -> Result<()> {
    let mut text = BATSIM_COLUMNS.join(",");
    text.push('\n');
    let workload_name = workload_name.replace([',', '"', '\n'], "_");
    for r in records {
        let class = r.class.map_or("none", Urgency::name);
        let state = batsim_final_state(r);
        let times = match (r.start, r.finish) {
            (Some(start), Some(finish)) if !r.lost => {
                let exec = finish - start;
                let turnaround = finish - r.submit;
                [
                    start.to_string(),
                    exec.to_string(),
                    finish.to_string(),
                    (start - r.submit).to_string(),
                    turnaround.to_string(),
                    (turnaround / exec).to_string(),
                ]
            }
            (Some(start), _) => [
                start.to_string(),
                String::new(),
                String::new(),
                (start - r.submit).to_string(),
                String::new(),
                String::new(),
            ],
            _ => Default::default(),
        };
        let energy = if r.accepted { "-1" } else { "" };
        let metadata = format!(
            "class={class};deadline_abs={};met={};qos_satisfied={};cost={};reason={}",
            r.deadline_abs(),
            r.met(),
            r.qos_satisfied(),
            r.cost,
            r.reason.map_or("", |x| x.name())
        );
        text.push_str(&format!(
            "{},{workload_name},{class},{},{},{},{},{state},{},{},{},\"{}\"\n",
            r.id,
            r.submit,
            r.processors,
            r.estimate,
            u8::from(state == "COMPLETED_SUCCESSFULLY"),
            times.join(","),
            interval_set(&r.nodes),
            energy,
            metadata.replace('"', "\"\""),
        ));
    }
    fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// What the SWF header of an executed schedule says about the run.
pub struct SwfRun<'a> {
    /// The policy whose schedule it is.
    pub policy: &'a str,
    /// The preset.
    pub preset: &'a str,
    /// The seed.
    pub seed: u64,
    /// Nodes of the cluster (MaxNodes, MaxProcs).
    pub nodes: usize,
}

/// SWF status of a job in an executed schedule: 1 ran to completion
/// (deadline met or not), 0 lost to a node failure, 5 never started
/// (rejected, or dropped from a queue), as the archive marks jobs cancelled
/// before they ran.
pub fn swf_status(r: &JobRecord) -> i64 {
    if r.lost {
        0
    } else if r.completed() {
        1
    } else {
        5
    }
}

fn secs(t: Time) -> i64 {
    t.round() as i64
}

/// Writes the executed schedule as SWF: 18 fields, one line per job in
/// arrival order, whole seconds (SWF's integer fields; the exact times are
/// in the CSV and JSON lines). Submit, start and finish are rounded first
/// and wait and run time computed from the rounded instants, so the fields
/// stay consistent. A job that never started has the archive's convention
/// for cancelled jobs: status 5, wait time = time until the decision, run
/// time, processors and CPU time -1. Queue 1 = high urgency, 2 = low.
pub fn write_schedule_swf(path: &Path, run: &SwfRun, records: &[JobRecord]) -> Result<()> {
    let n = records.len();
    let mut text = format!(
        "; Version: 2.2\n\
         ; Computer: libratory virtual cluster ({nodes} nodes)\n\
         ; Installation: libratory {version}, policy {policy}\n\
         ; Conversion: executed schedule of policy {policy}, preset {preset}, seed {seed}\n\
         ; MaxJobs: {n}\n\
         ; MaxRecords: {n}\n\
         ; MaxNodes: {nodes}\n\
         ; MaxProcs: {nodes}\n\
         ; MaxQueues: 2\n\
         ; Queue: 1 high urgency\n\
         ; Queue: 2 low urgency\n\
         ; Note: times are trace seconds after the window's first arrival (arrival delay factor applied), rounded to whole seconds\n\
         ; Note: status 1 = ran to completion (deadline met or not), 5 = rejected or dropped before it started, 0 = lost to a node failure\n\
         ; Note: field 6 is the actual runtime on the reference node; fields 7, 10, 12-14, 16-18 are unknown (-1)\n",
        nodes = run.nodes,
        version = env!("CARGO_PKG_VERSION"),
        policy = run.policy,
        preset = run.preset,
        seed = run.seed,
    );
    for r in records {
        let submit = secs(r.submit);
        let status = swf_status(r);
        let (wait, run_time, alloc, cpu) = match r.start {
            Some(start) => {
                let run_time = r.finish.map_or(-1, |f| secs(f) - secs(start));
                (
                    secs(start) - submit,
                    run_time,
                    r.nodes.len() as i64,
                    secs(r.actual),
                )
            }
            None => ((secs(r.decided_at) - submit).max(0), -1, -1, -1),
        };
        let queue = match r.class {
            Some(Urgency::High) => 1,
            Some(Urgency::Low) => 2,
            None => -1,
        };
        text.push_str(&format!(
            "{} {submit} {wait} {run_time} {alloc} {cpu} -1 {} {} -1 {status} -1 -1 -1 {queue} -1 -1 -1\n",
            r.id,
            r.processors,
            secs(r.estimate).max(1),
        ));
    }
    fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// Writes `parts-<policy>.csv`: one row per part in placement order,
/// `job_id, node, start, finish, cpu, mean_share` (cpu = processor
/// seconds on that node; mean_share = cpu / (finish - start)); an empty
/// finish and share for a part that never finished.
pub fn write_parts_csv(path: &Path, parts: &[common::sim::PartRecord]) -> Result<()> {
    let mut text = String::from("job_id,node,start,finish,cpu,mean_share\n");
    for p in parts {
        let (finish, share) = if p.finish.is_finite() {
            let span = p.finish - p.start;
            let share = if span > 0.0 { p.cpu / span } else { 1.0 };
            (p.finish.to_string(), share.to_string())
        } else {
            (String::new(), String::new())
        };
        text.push_str(&format!(
            "{},{},{},{finish},{},{share}\n",
            p.job, p.node, p.start, p.cpu
        ));
    }
    fs::write(path, text).with_context(|| format!("writing {}", path.display()))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_sets_as_batsim_writes_them() {
        assert_eq!(interval_set(&[]), "");
        assert_eq!(interval_set(&[5]), "5");
        assert_eq!(interval_set(&[3, 0, 1, 2, 7]), "0-3 7");
        assert_eq!(interval_set(&[1, 3, 4, 9, 10, 11]), "1 3-4 9-11");
    }
}
