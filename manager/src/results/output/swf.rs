//! The executed schedule as SWF (`schedule-<policy>.swf`): the
//! archive's 18 fields, whole seconds, derived from the job records.

use std::path::Path;

use anyhow::Result;
use common::job::Urgency;
use common::metrics::JobRecord;
use common::Time;

use super::write_file;
use crate::results::num;

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
    write_file(path, schedule_swf(run, records))
}

/// The executed schedule as SWF text, formatted straight into one buffer.
pub fn schedule_swf(run: &SwfRun, records: &[JobRecord]) -> String {
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
    text.reserve(n * 64);
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
        let t = &mut text;
        num::push_int(t, r.id);
        for v in [submit, wait, run_time, alloc, cpu] {
            t.push(' ');
            num::push_int(t, v);
        }
        t.push_str(" -1 ");
        num::push_int(t, r.processors);
        t.push(' ');
        num::push_int(t, secs(r.estimate).max(1));
        t.push_str(" -1 ");
        num::push_int(t, status);
        t.push_str(" -1 -1 -1 ");
        num::push_int(t, queue);
        t.push_str(" -1 -1 -1\n");
    }
    text
}
