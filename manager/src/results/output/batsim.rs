//! Batsim's `out_jobs-<policy>.csv`: Batsim's own columns (its
//! `JobsTracer`), derived from the job records, so that evalys and other
//! Batsim tooling read our files unchanged. Its layout is Batsim's, not
//! the record's: a field added to `JobRecord` does not change it.

use std::io::Write;
use std::path::Path;

use anyhow::Result;
use common::job::Urgency;
use common::metrics::JobRecord;

use super::{spill_text, write_with, CHUNK, LINE_GUESS};
use crate::results::num;

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
#[cfg(test)]
fn interval_set(nodes: &[usize]) -> String {
    let mut s = String::new();
    push_interval_set(&mut s, nodes);
    s
}

/// Appends [`interval_set`] of `nodes` to `out`.
fn push_interval_set(out: &mut String, nodes: &[usize]) {
    // Allocation lists are nearly always sorted already.
    let sorted;
    let v: &[usize] = if nodes.windows(2).all(|w| w[0] < w[1]) {
        nodes
    } else {
        let mut c = nodes.to_vec();
        c.sort_unstable();
        c.dedup();
        sorted = c;
        &sorted
    };
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        if i > 0 {
            out.push(' ');
        }
        num::push_int(out, v[i]);
        if i != j {
            out.push('-');
            num::push_int(out, v[j]);
        }
        i = j + 1;
    }
}

/// Writes `out_jobs-<policy>.csv` in Batsim's layout. Times are the run's
/// trace seconds in Rust's shortest round-trip form (so waiting, turnaround
/// and stretch recompute exactly from the other columns). A rejected job
/// has empty time columns, as in Batsim; `consumed_energy` is -1 (not
/// modelled) for jobs that ran. `profile` is the urgency class, and
/// `metadata` (always quoted, as Batsim writes it) carries the QoS
/// outcome: `class=..;deadline_abs=..;met=..;qos_satisfied=..;cost=..;reason=..`.
pub fn write_batsim_csv(path: &Path, workload_name: &str, records: &[JobRecord]) -> Result<()> {
    write_with(path, |f| batsim_csv_to(f, workload_name, records))
}

/// [`write_batsim_csv`] into `out`, a chunk at a time.
pub fn batsim_csv_to(
    out: &mut dyn Write,
    workload_name: &str,
    records: &[JobRecord],
) -> Result<()> {
    let mut text = String::with_capacity(CHUNK + 4 * LINE_GUESS);
    text.push_str(&BATSIM_COLUMNS.join(","));
    text.push('\n');
    let workload_name = workload_name.replace([',', '"', '\n'], "_");
    let mut metadata = String::with_capacity(160);
    let flag = |b: bool| if b { "true" } else { "false" };
    for r in records {
        let class = r.class.map_or("none", Urgency::name);
        let state = batsim_final_state(r);
        let t = &mut text;
        num::push_int(t, r.id);
        t.push(',');
        t.push_str(&workload_name);
        t.push(',');
        t.push_str(class);
        t.push(',');
        num::push_f64(t, r.submit);
        t.push(',');
        num::push_int(t, r.processors);
        t.push(',');
        num::push_f64(t, r.estimate);
        t.push_str(if state == "COMPLETED_SUCCESSFULLY" {
            ",1,"
        } else {
            ",0,"
        });
        t.push_str(state);
        t.push(',');
        match (r.start, r.finish) {
            (Some(start), Some(finish)) if !r.lost => {
                let exec = finish - start;
                let turnaround = finish - r.submit;
                for (k, x) in [
                    start,
                    exec,
                    finish,
                    start - r.submit,
                    turnaround,
                    turnaround / exec,
                ]
                .into_iter()
                .enumerate()
                {
                    if k > 0 {
                        t.push(',');
                    }
                    num::push_f64(t, x);
                }
            }
            (Some(start), _) => {
                num::push_f64(t, start);
                t.push_str(",,,");
                num::push_f64(t, start - r.submit);
                t.push_str(",,");
            }
            _ => t.push_str(",,,,,"),
        }
        t.push(',');
        push_interval_set(t, &r.nodes);
        t.push_str(if r.accepted { ",-1,\"" } else { ",,\"" });
        let m = &mut metadata;
        m.clear();
        m.push_str("class=");
        m.push_str(class);
        m.push_str(";deadline_abs=");
        num::push_f64(m, r.deadline_abs());
        m.push_str(";met=");
        m.push_str(flag(r.met()));
        m.push_str(";qos_satisfied=");
        m.push_str(flag(r.qos_satisfied()));
        m.push_str(";cost=");
        num::push_f64(m, r.cost);
        m.push_str(";reason=");
        m.push_str(r.reason.map_or("", |x| x.name()));
        if metadata.contains('"') {
            text.push_str(&metadata.replace('"', "\"\""));
        } else {
            text.push_str(&metadata);
        }
        text.push_str("\"\n");
        spill_text(out, &mut text)?;
    }
    out.write_all(text.as_bytes())?;
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
