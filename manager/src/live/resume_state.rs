//! What `libratory resume` takes back from an unfinished run's journal:
//! the records of the jobs that were over (final), the jobs accepted and
//! not finished (their parts may still run on node processes that rode
//! out the crash), the jobs submitted and not decided yet, and where the
//! run's trace clock stood. Pure: the journal is read by the caller.
//!
//! Unlike [`journal::rebuild`] (which writes the results of a run that
//! will not go on, so every open job is recorded lost), nothing here is
//! lost yet: the resumed manager learns from the node processes that
//! come back which of the open jobs' parts still run or finished
//! meanwhile.

use std::collections::{BTreeMap, BTreeSet};

use common::job::{JobId, JobSpec};
use common::metrics::JobRecord;
use common::time::Time;

use crate::live::journal::{Contents, Entry};

/// A job accepted and not finished when the manager stopped.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenJob {
    /// Its decided record (the clock axis, as the journal holds it).
    pub record: JobRecord,
    /// Its parts whose start on their node the journal holds (their
    /// dispatch arrived), by index.
    pub started: BTreeSet<u32>,
    /// Its parts the journal holds over (`ended` lines), by index, with
    /// their finish (the record's axis).
    pub ended: BTreeMap<u32, Time>,
}

/// The journal's state of an unfinished run (see the module header).
#[derive(Debug, Clone)]
pub struct ResumeState {
    /// Jobs over before the manager stopped (completed, rejected, lost),
    /// final, on the clock axis, by id.
    pub done: Vec<JobRecord>,
    /// Jobs accepted whose end the journal does not hold, by id.
    pub open: Vec<OpenJob>,
    /// Jobs submitted and not decided (a queue policy's queue), by id.
    pub undecided: Vec<JobRecord>,
    /// The specifications of clients' jobs the journal holds (their
    /// `submitted` entries'), by id.
    pub client_specs: BTreeMap<JobId, JobSpec>,
    /// The managers' latency histograms as last journaled (the last
    /// `histograms` entry: name -> encoded), cumulative over the run.
    pub histograms: BTreeMap<String, String>,
    /// Trace seconds from the clock's start to the replay start (None:
    /// the replay had not started).
    pub replay_offset: Option<Time>,
    /// The trace time of the journal's last entry (the clock's position
    /// when the manager stopped, give or take the last entry's gather).
    pub last_trace: Time,
    /// The journal clock's last entry (seconds since the first manager
    /// started).
    pub last_t: f64,
    /// The node processes that registered, in order (label, nodes).
    pub node_processes: Vec<(String, usize)>,
    /// Their process ids, in the same order (None: a journal written
    /// before they were).
    pub node_pids: Vec<Option<u32>>,
    /// How many times the run was resumed before (its `warning` entries
    /// that start with [`RESUMED`]).
    pub resumed_before: usize,
    /// The run had ended (its `end` entry): nothing to resume.
    pub ended: bool,
    /// The journal time of each registration of `node_processes`.
    pub node_times: Vec<f64>,
    /// Its `fault` entries (journal time, what identifies the report), in
    /// order.
    pub faults: Vec<(f64, crate::live::manager::FaultKey)>,
    /// Its warnings of lost node processes and nodes (journal time,
    /// text), in order.
    pub losses: Vec<(f64, String)>,
}

/// How the resumed manager's first journal entry starts.
pub const RESUMED: &str = "resumed:";

impl ResumeState {
    /// Reads the state out of a journal's entries.
    pub fn from_journal(c: &Contents) -> ResumeState {
        #[derive(PartialEq, Eq, PartialOrd, Ord, Clone, Copy)]
        enum Stage {
            Submitted,
            Decided,
            Finished,
        }
        let scale = c.header.time_scale;
        let mut jobs: BTreeMap<JobId, (Stage, JobRecord)> = BTreeMap::new();
        let mut replay: Option<(f64, Time)> = None;
        let mut last_t: f64 = 0.0;
        let mut nodes = Vec::new();
        let mut pids = Vec::new();
        let mut node_times = Vec::new();
        let mut faults = Vec::new();
        let mut losses = Vec::new();
        let mut started: BTreeMap<JobId, BTreeSet<u32>> = BTreeMap::new();
        let mut parts_over: BTreeMap<JobId, BTreeMap<u32, Time>> = BTreeMap::new();
        let mut resumed_before = 0;
        let mut ended = false;
        let mut client_specs = BTreeMap::new();
        let mut histograms = BTreeMap::new();
        let put = |jobs: &mut BTreeMap<JobId, (Stage, JobRecord)>, s, r: &JobRecord| {
            let slot = jobs.entry(r.id).or_insert((s, r.clone()));
            if slot.0 != Stage::Finished {
                *slot = (s.max(slot.0), r.clone());
            }
        };
        for e in &c.entries {
            let t = match e {
                Entry::Header(_) => continue,
                Entry::Node {
                    t,
                    host,
                    nodes: n,
                    pid,
                } => {
                    nodes.push((host.clone(), *n));
                    pids.push(*pid);
                    node_times.push(*t);
                    *t
                }
                Entry::Replay { t, offset } => {
                    replay = Some((*t, *offset));
                    *t
                }
                Entry::Submitted { t, record, spec } => {
                    put(&mut jobs, Stage::Submitted, record);
                    if let Some(spec) = spec {
                        client_specs.insert(record.id, (**spec).clone());
                    }
                    *t
                }
                Entry::Decided { t, record } => {
                    put(&mut jobs, Stage::Decided, record);
                    *t
                }
                Entry::Started {
                    t,
                    record,
                    id,
                    part,
                } => {
                    if let Some(r) = record {
                        put(&mut jobs, Stage::Decided, r);
                    }
                    if let Some(job) = id.or(record.as_ref().map(|r| r.id)) {
                        started.entry(job).or_default().insert(*part);
                    }
                    *t
                }
                Entry::Ended {
                    t,
                    id,
                    part,
                    finish,
                } => {
                    parts_over.entry(*id).or_default().insert(*part, *finish);
                    *t
                }
                Entry::Finished {
                    t,
                    id,
                    finish,
                    record,
                } => {
                    match (record, id) {
                        (Some(r), _) => {
                            jobs.insert(r.id, (Stage::Finished, (**r).clone()));
                        }
                        (None, Some(id)) => {
                            if let Some(slot) = jobs.get_mut(id) {
                                slot.0 = Stage::Finished;
                                slot.1.finish = *finish;
                            }
                        }
                        (None, None) => {}
                    }
                    *t
                }
                Entry::Warning { t, text } => {
                    if text.starts_with(RESUMED) {
                        resumed_before += 1;
                    }
                    if text.starts_with("lost node ") {
                        losses.push((*t, text.clone()));
                    }
                    *t
                }
                Entry::End { t, .. } => {
                    ended = true;
                    *t
                }
                Entry::Fault {
                    t,
                    act,
                    process,
                    fault,
                    node,
                    ..
                } => {
                    let key = crate::live::manager::FaultKey {
                        fault: fault.clone(),
                        act: *act,
                        process: process.clone(),
                        node: *node,
                    };
                    faults.push((*t, key));
                    *t
                }
                Entry::Restart { t, .. } => *t,
                Entry::Histograms { t, manager } => {
                    histograms = manager.clone();
                    *t
                }
            };
            last_t = last_t.max(t);
        }
        let mut done = Vec::new();
        let mut open = Vec::new();
        let mut undecided = Vec::new();
        for (_, (stage, r)) in jobs {
            let rejected = !r.accepted && r.reason.is_some();
            match stage {
                Stage::Finished => done.push(r),
                _ if rejected => done.push(r),
                Stage::Submitted if !r.accepted => undecided.push(r),
                _ => open.push(OpenJob {
                    started: started.remove(&r.id).unwrap_or_default(),
                    ended: parts_over.remove(&r.id).unwrap_or_default(),
                    record: r,
                }),
            }
        }
        // The trace clock runs `1 / scale` trace seconds per journal
        // second, and the `replay` entry pins one instant on both.
        let last_trace = replay.map_or(0.0, |(t, off)| off + (last_t - t) / scale);
        ResumeState {
            done,
            open,
            undecided,
            client_specs,
            histograms,
            replay_offset: replay.map(|(_, off)| off),
            last_trace,
            last_t,
            node_processes: nodes,
            node_pids: pids,
            resumed_before,
            ended,
            node_times,
            faults,
            losses,
        }
    }

    /// Ids with a record: the replay does not submit them again.
    pub fn recorded(&self) -> impl Iterator<Item = JobId> + '_ {
        self.done
            .iter()
            .chain(self.open.iter().map(|o| &o.record))
            .chain(&self.undecided)
            .map(|r| r.id)
    }
}

/// Why a run directory cannot be resumed (the caller names the directory).
pub fn check_resumable(c: &Contents, s: &ResumeState) -> Result<(), String> {
    if s.ended {
        return Err(format!(
            "the run ended and wrote its results (started {}): nothing to resume",
            c.header.started_utc
        ));
    }
    if s.replay_offset.is_none() {
        return Err(format!(
            "the run (started {}) stopped before its replay started: nothing ran yet; start it again with `libratory run` (a run into this directory moves its journal and logs aside)",
            c.header.started_utc
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::journal;
    use common::job::DeadlineType;

    fn record(id: JobId, accepted: bool) -> JobRecord {
        JobRecord {
            id,
            class: None,
            submit: 10.0 + id as f64,
            estimate: 5.0,
            actual: 4.0,
            processors: 1,
            deadline: 50.0,
            budget: f64::INFINITY,
            penalty_rate: 0.0,
            deadline_type: DeadlineType::Hard,
            accepted,
            reason: None,
            detail: String::new(),
            decided_at: 10.0 + id as f64,
            nodes: if accepted { vec![0] } else { vec![] },
            start: accepted.then_some(10.0 + id as f64),
            finish: None,
            cost: 0.0,
            lost: false,
        }
    }

    fn contents(entries: Vec<Entry>) -> Contents {
        let cluster = crate::cluster::config::ClusterConfig::parse(
            std::path::Path::new("<test>"),
            "[manager]\nlisten = \"127.0.0.1:1\"\ncerts = \"c\"\ntime_scale = 0.5\n[workload]\npreset = \"libra\"\npolicy = \"libra\"\n[[hosts]]\nname = \"h\"\nnodes_per_process = 2\ncapacity = 1.0\n",
        )
        .unwrap();
        Contents {
            header: journal::Header {
                format: journal::FORMAT.into(),
                command_line: vec!["libratory".into()],
                working_dir: "/".into(),
                started_unix: 0,
                started_utc: "1970-01-01T00:00:00Z".into(),
                seed: 7,
                policy: "libra".into(),
                time_scale: 0.5,
                cluster,
                experiment: common::experiment::Experiment::preset("libra").unwrap(),
                trace: None,
                workload: journal::JournalWorkload {
                    facts: crate::results::rundir::WorkloadFacts {
                        jobs: 4,
                        nodes: 2,
                        first_arrival: 0.0,
                        last_arrival: 3.0,
                        odd_records: common::workload::OddRecords::default(),
                    },
                    duplicates: 0,
                },
                faults: None,
            },
            entries,
            torn_line: None,
        }
    }

    /// Job 1 completed, job 2 rejected, job 3 running (its `finished` not
    /// journaled; part 0 started, part 1 over at 13.5, part 2 neither),
    /// job 4 queued: each lands where it belongs, and the
    /// clock's position is worked out from the replay entry: the replay
    /// began at journal 2.0 = trace 10 (offset), the last entry is at
    /// journal 5.0, so trace 10 + 3 / 0.5 = 16.
    #[test]
    fn open_done_and_undecided_jobs_and_the_clock() {
        let mut rejected = record(2, false);
        rejected.reason = Some(common::policy::RejectReason::Deadline);
        let mut finished1 = record(1, true);
        finished1.finish = Some(14.0);
        let c = contents(vec![
            Entry::Node {
                t: 1.0,
                host: "h-0".into(),
                nodes: 2,
                pid: Some(77),
            },
            Entry::Replay {
                t: 2.0,
                offset: 10.0,
            },
            Entry::Decided {
                t: 2.1,
                record: record(1, true),
            },
            Entry::Finished {
                t: 2.2,
                id: None,
                finish: None,
                record: Some(Box::new(rejected.clone())),
            },
            Entry::Decided {
                t: 2.3,
                record: record(3, true),
            },
            Entry::Started {
                t: 2.4,
                part: 0,
                id: Some(3),
                record: None,
            },
            Entry::Started {
                t: 2.41,
                part: 1,
                id: Some(3),
                record: None,
            },
            Entry::Ended {
                t: 2.45,
                id: 3,
                part: 1,
                finish: 13.5,
            },
            Entry::Submitted {
                t: 2.5,
                record: record(4, false),
                spec: None,
            },
            Entry::Finished {
                t: 4.0,
                id: Some(1),
                finish: Some(14.0),
                record: None,
            },
            Entry::Warning {
                t: 5.0,
                text: format!("{RESUMED} once"),
            },
        ]);
        let s = ResumeState::from_journal(&c);
        assert_eq!(s.done, vec![finished1, rejected]);
        assert_eq!(
            s.open,
            vec![OpenJob {
                record: record(3, true),
                started: [0, 1].into(),
                ended: [(1, 13.5)].into(),
            }]
        );
        assert_eq!(s.node_pids, vec![Some(77)]);
        assert_eq!(s.undecided, vec![record(4, false)]);
        assert_eq!(s.replay_offset, Some(10.0));
        assert_eq!(s.last_trace, 16.0);
        assert_eq!(s.resumed_before, 1);
        assert!(!s.ended);
        let mut ids: Vec<JobId> = s.recorded().collect();
        ids.sort_unstable();
        assert_eq!(ids, vec![1, 2, 3, 4]);
        assert!(check_resumable(&c, &s).is_ok());
    }

    /// A client's job queued at the crash whose `submitted` entry carries
    /// its specification: undecided, with the specification at hand.
    #[test]
    fn a_queued_clients_specification_is_taken_back() {
        let id = 1 << 40;
        let spec = JobSpec::new(id, 12.0, 5.0, 1, 50.0, 9.0);
        let c = contents(vec![
            Entry::Replay {
                t: 1.0,
                offset: 0.0,
            },
            Entry::Submitted {
                t: 2.0,
                record: record(id, false),
                spec: Some(Box::new(spec.clone())),
            },
        ]);
        let s = ResumeState::from_journal(&c);
        assert_eq!(s.undecided, vec![record(id, false)]);
        assert_eq!(s.client_specs.get(&id), Some(&spec));
    }

    /// A journal that ended, or whose replay never began, is refused with
    /// why.
    #[test]
    fn ended_or_unstarted_runs_are_not_resumable() {
        let c = contents(vec![Entry::Node {
            t: 1.0,
            host: "h-0".into(),
            nodes: 2,
            pid: None,
        }]);
        let s = ResumeState::from_journal(&c);
        assert!(check_resumable(&c, &s)
            .unwrap_err()
            .contains("before its replay started"));
        let c = contents(vec![
            Entry::Replay {
                t: 1.0,
                offset: 0.0,
            },
            Entry::End {
                t: 2.0,
                wall_seconds: 1.0,
            },
        ]);
        let s = ResumeState::from_journal(&c);
        assert!(check_resumable(&c, &s).unwrap_err().contains("ended"));
    }
}
