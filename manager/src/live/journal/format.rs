//! The journal's entries (docs/output-formats.md, "journal.jsonl") and
//! how a line is spelled: every entry as `serde_json` writes it, the job
//! events by hand (the same bytes, faster).

use common::experiment::Experiment;
use common::job::{JobId, JobSpec};
use common::metrics::JobRecord;
use common::time::Time;
use serde::{Deserialize, Serialize};

use crate::cluster::config::ClusterConfig;
use crate::results::rundir::WorkloadFacts;

/// The workload a run replayed, as its header keeps it: the run
/// directory's facts (summary.json's `workload`, written the same way by a
/// rebuild) and the duplicates added.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalWorkload {
    /// summary.json's facts (their fields at the top level of the JSON, as
    /// journals have always written them).
    #[serde(flatten)]
    pub facts: WorkloadFacts,
    /// Jobs added as duplicates.
    pub duplicates: usize,
}

/// The first line: what ran, so the result files can be rebuilt without
/// anything else.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Header {
    /// [`FORMAT`].
    pub format: String,
    /// The command line of the run, program name first.
    pub command_line: Vec<String>,
    /// Its working directory.
    pub working_dir: String,
    /// Start, Unix seconds.
    pub started_unix: u64,
    /// Start, ISO 8601 UTC.
    pub started_utc: String,
    /// Seed of every draw.
    pub seed: u64,
    /// The policy that decided.
    pub policy: String,
    /// Real seconds per trace second.
    pub time_scale: f64,
    /// The cluster configuration as read.
    pub cluster: ClusterConfig,
    /// The experiment (preset, knobs, policy).
    pub experiment: Experiment,
    /// The trace read, if any (path, file name, bytes, SHA-256).
    pub trace: Option<serde_json::Value>,
    /// Facts of the workload.
    pub workload: JournalWorkload,
    /// The fault scenario of `run`/`demo --faults` (the manifest's
    /// `faults`: file, seed, every fault as expanded), so that a resumed
    /// run's manifest lists it too. Journals written before, and runs
    /// without one, have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faults: Option<serde_json::Value>,
}

/// What the fault injector did to a node process (on the wire in
/// `ClientMsg::FaultApplied`, and in the journal).
pub use common::protocol::FaultAct;

/// One line of the journal. `t` is real seconds since the manager started.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "e", rename_all = "snake_case")]
pub enum Entry {
    /// The first line.
    Header(Box<Header>),
    /// A node process registered.
    Node {
        /// When.
        t: f64,
        /// Its label and address.
        host: String,
        /// Emulated nodes it hosts.
        nodes: usize,
        /// Its process id, as it registered: with `host`, which
        /// registrations (under several managers of a resumed run) were
        /// one process. Journals written before have none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pid: Option<u32>,
    },
    /// The replay started; records are on the clock axis, `offset` trace
    /// seconds ahead of the workload's.
    Replay {
        /// When.
        t: f64,
        /// Trace seconds from the clock's start to the replay start.
        offset: Time,
    },
    /// A job was handed to the policy (written when the policy did not
    /// decide it at once: a queue policy's).
    Submitted {
        /// When.
        t: f64,
        /// Its record after the submission.
        record: JobRecord,
        /// A client's job: its whole specification (submit time on the
        /// record's axis), so that a resumed manager can decide it if it
        /// was still queued at a crash. The workload's jobs are rebuilt
        /// from the run's configuration instead. Journals written before
        /// do not have it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        spec: Option<Box<JobSpec>>,
    },
    /// A job was decided.
    Decided {
        /// When.
        t: f64,
        /// Its record with the decision.
        record: JobRecord,
    },
    /// A part of a job started on its node. Written with the job's id
    /// only: the record is its `decided` one (a start changes nothing in
    /// it), and leaving it out is a third of the journal's bytes. Journals
    /// written before carry the `record` instead; both are read.
    Started {
        /// When.
        t: f64,
        /// Which part.
        part: u32,
        /// The job.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<JobId>,
        /// Its record (journals written before the `id` form).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        record: Option<Box<JobRecord>>,
    },
    /// A part of a job completed on its node and the job goes on (its
    /// other parts run): a manager that resumes the run knows the part
    /// over. The job's last part is not written so: its `finished` line
    /// says it. Journals written before have none (a part's end was known
    /// only with its job's).
    Ended {
        /// When.
        t: f64,
        /// The job.
        id: JobId,
        /// Which part.
        part: u32,
        /// Its finish, on the record's axis.
        finish: Time,
    },
    /// A job is over (completed, rejected, lost): its record is final.
    /// A job that completed after its `decided` entry is written with its
    /// id and finish only: its final record is the decided one with that
    /// finish (nothing else changes in between), and leaving the record
    /// out is a third of the journal's bytes under a flood. Rejected and
    /// lost jobs, and journals written before, carry the `record`.
    Finished {
        /// When.
        t: f64,
        /// The job (the id form).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<JobId>,
        /// Its finish, on the record's axis (the id form).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        finish: Option<Time>,
        /// The final record (the record form).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        record: Option<Box<JobRecord>>,
    },
    /// The fault injector acted on a node process (`run`/`demo
    /// --faults`), written when it did, beside its `warning`. Journals
    /// written before have the warning only.
    Fault {
        /// When.
        t: f64,
        /// What it did.
        act: FaultAct,
        /// The node process's label (the first word of its `node` entry's
        /// `host`).
        process: String,
        /// The fault's name (`fault 1 (crash of node process 1 at +30 s,
        /// line 12)`).
        fault: String,
        /// The one node it acted on (local index in the process), if not
        /// the whole process (`kill`, `stop`, `cont`, `slow`, `restore`
        /// of single nodes).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        node: Option<u32>,
        /// `slow`: the capacity factor.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        factor: Option<f64>,
    },
    /// Something the user should know (a lost node process, a late
    /// start, a refused part), journaled within a heartbeat.
    Warning {
        /// When it was journaled.
        t: f64,
        /// The warning.
        text: String,
    },
    /// A resumed manager (`libratory resume`) decides again: the manager
    /// before it was down from `crashed` (the journal's last entry before
    /// the restart, the earliest the crash can have been) and the new one
    /// started at `restarted`; it decided nothing until `t`, when its node
    /// processes were back and the replay went on. Journals written before
    /// have the `resumed:` warning only.
    Restart {
        /// When the replay went on.
        t: f64,
        /// The journal's last entry before the crash.
        crashed: f64,
        /// When the resumed manager started.
        restarted: f64,
    },
    /// The manager's latency histograms so far (every few seconds), so
    /// that a manager resuming the run after a crash adds them to its
    /// own: each histogram of `manager.hlog`, by name, in the compressed
    /// V2 encoding, base64 (as in the `.hlog` files). Cumulative over
    /// every manager of the run: only the last entry counts.
    Histograms {
        /// When.
        t: f64,
        /// Name -> encoded histogram.
        manager: std::collections::BTreeMap<String, String>,
    },
    /// The run ended and wrote its own result files.
    End {
        /// When.
        t: f64,
        /// Real seconds from the replay start to the end.
        wall_seconds: f64,
    },
}

/// An entry's JSON text, as `serde_json` writes it (a test holds the two
/// equal). The job events, nearly every line of a run, are written by
/// hand: serde's formatting took most of the writer thread's time at
/// 10,000 jobs/s, beside the manager's own threads on the same cores.
pub(super) fn entry_json(line: &mut Vec<u8>, e: &Entry) -> std::io::Result<()> {
    let (tag, t, part, record) = match e {
        Entry::Submitted {
            t,
            record,
            spec: None,
        } => ("submitted", *t, None::<u32>, record),
        Entry::Decided { t, record } => ("decided", *t, None, record),
        Entry::Started {
            t,
            part,
            id: Some(id),
            record: None,
        } => {
            push_head(line, "started", *t);
            push_uint(line, b"part", u64::from(*part));
            push_uint(line, b"id", *id);
            line.push(b'}');
            return Ok(());
        }
        Entry::Finished {
            t,
            id: Some(id),
            finish: Some(finish),
            record: None,
        } => {
            push_head(line, "finished", *t);
            push_uint(line, b"id", *id);
            line.extend_from_slice(b",\"finish\":");
            crate::results::num::push_json_f64(line, *finish);
            line.push(b'}');
            return Ok(());
        }
        Entry::Finished {
            t,
            id: None,
            finish: None,
            record: Some(record),
        } => ("finished", *t, None, &**record),
        other => return serde_json::to_writer(&mut *line, other).map_err(std::io::Error::other),
    };
    push_head(line, tag, t);
    if let Some(p) = part {
        push_uint(line, b"part", u64::from(p));
    }
    line.extend_from_slice(b",\"record\":");
    crate::results::output::push_record_json(line, record);
    line.push(b'}');
    Ok(())
}

/// `{"e":"TAG","t":T` of a job line.
fn push_head(line: &mut Vec<u8>, tag: &str, t: f64) {
    line.extend_from_slice(b"{\"e\":\"");
    line.extend_from_slice(tag.as_bytes());
    line.extend_from_slice(b"\",\"t\":");
    crate::results::num::push_json_f64(line, t);
}

/// `,"KEY":N`.
fn push_uint(line: &mut Vec<u8>, key: &[u8], n: u64) {
    line.extend_from_slice(b",\"");
    line.extend_from_slice(key);
    line.extend_from_slice(b"\":");
    line.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::journal::testkit::record;
    use common::job::DeadlineType;

    /// The hand-written job lines are the bytes `serde_json` writes, for
    /// records of every shape: unset and set options, an unlimited and a
    /// finite budget, text that needs escaping, values JSON cannot hold
    /// (NaN cost, infinite finish), and times of every magnitude.
    #[test]
    fn job_lines_are_what_serde_writes() {
        use common::job::Urgency;
        use common::policy::RejectReason;
        let mut recs = vec![record(1)];
        let mut r = record(2);
        r.class = Some(Urgency::High);
        r.accepted = true;
        r.nodes = vec![0, 7, 1023];
        r.start = Some(12.25);
        r.finish = Some(f64::INFINITY);
        r.cost = f64::NAN;
        r.budget = 1e21;
        r.penalty_rate = 0.1 + 0.2;
        r.deadline_type = DeadlineType::Soft;
        recs.push(r);
        let mut r = record(1 << 40);
        r.class = Some(Urgency::Low);
        r.reason = Some(RejectReason::Deadline);
        r.detail = "needs 2 nodes \"quoted\", tab\t, back\\slash, bell \u{7}, é".into();
        r.decided_at = -0.0;
        r.submit = 1e-7;
        r.estimate = 123456789.125;
        recs.push(r);
        for (k, r) in recs.iter().enumerate() {
            let t = [0.0, 1.5e-9, 3600.000001][k % 3];
            for e in [
                Entry::Submitted {
                    t,
                    record: r.clone(),
                    spec: None,
                },
                Entry::Decided {
                    t,
                    record: r.clone(),
                },
                Entry::Started {
                    t,
                    part: k as u32 * 1000,
                    id: Some(r.id),
                    record: None,
                },
                Entry::Finished {
                    t,
                    id: None,
                    finish: None,
                    record: Some(Box::new(r.clone())),
                },
                Entry::Finished {
                    t,
                    id: Some(r.id),
                    finish: Some([3.25, 1e-7, 86_400.125][k % 3]),
                    record: None,
                },
                Entry::Warning {
                    t,
                    text: "a \"warning\"".into(),
                },
            ] {
                let mut ours = Vec::new();
                entry_json(&mut ours, &e).unwrap();
                let theirs = serde_json::to_vec(&e).unwrap();
                assert_eq!(
                    String::from_utf8(ours).unwrap(),
                    String::from_utf8(theirs).unwrap()
                );
            }
        }
    }

    /// A client's `submitted` line carries its whole specification and
    /// reads back; a line without one (as journals before wrote them, and
    /// as the workload's jobs are still written) reads with none.
    #[test]
    fn a_clients_specification_is_journaled_and_lines_without_it_still_read() {
        let mut spec = JobSpec::new(1 << 40, 3.5, 10.0, 2, 100.0, 50.0);
        spec.resources.memory_kb = 4096;
        let e = Entry::Submitted {
            t: 1.0,
            record: record(1 << 40),
            spec: Some(Box::new(spec.clone())),
        };
        let mut line = Vec::new();
        entry_json(&mut line, &e).unwrap();
        let back: Entry = serde_json::from_slice(&line).unwrap();
        assert!(matches!(back, Entry::Submitted { spec: Some(s), .. } if *s == spec));
        let old = br#"{"e":"submitted","t":0.5,"record":{"id":1,"class":null,"submit":10.0,"estimate":5.0,"actual":4.0,"processors":1,"deadline":50.0,"budget":"unlimited","penalty_rate":0.0,"deadline_type":"hard","accepted":false,"reason":null,"detail":"","decided_at":10.0,"nodes":[],"start":null,"finish":null,"cost":0.0,"lost":false}}"#;
        let back: Entry = serde_json::from_slice(old).unwrap();
        assert!(
            matches!(back, Entry::Submitted { spec: None, ref record, .. } if record.id == 1),
            "{back:?}"
        );
    }
}
