//! The run journal: a live run's records, appended as they happen, so that
//! a manager killed by SIGKILL, the OOM killer or a power cut loses at most
//! the last second of its run instead of all of it.
//!
//! `journal.jsonl` in the run directory is JSON lines (format in
//! docs/output-formats.md): a header with everything needed to rebuild the
//! result files (configuration, experiment, workload facts, seed, policy),
//! then one line per event: a node process registered, the replay started,
//! a job was submitted, decided, a part started, a job is over (completed,
//! rejected or lost), and `end` once the run's own result files are
//! written. A submission, decision or rejection or loss carries the job's
//! whole record as it stands; a start carries the job's id only, and a
//! completion its id and finish (neither changes anything else in the
//! record). Rebuilding is "the last record of each job wins", with a
//! completion's finish put in; jobs whose last event is not final get an
//! honest status (see [`rebuild`]).
//!
//! Writing is off the actor's thread: events go down a channel to a
//! dedicated writer thread that writes whole lines, hands them to the OS
//! after every batch (what was handed over survives a killed process),
//! gathers for [`GATHER`] before the next batch (fewer, bigger writes and
//! no wake-up call per event under load) and
//! fsyncs at least once a second while events arrive (what survives a power
//! cut), so a decision waits for neither.
//!
//! One module per reason to change: [`format`] (the entries and how a
//! line is spelled), [`writer`] (the thread, batching and fsync),
//! [`reader`] (lines back to entries, a torn end tolerated), [`rebuild`]
//! (entries back to one record per job).

use std::path::{Path, PathBuf};

use thiserror::Error;

pub mod format;
pub mod reader;
pub mod rebuild;
pub mod writer;

pub use format::{Entry, FaultAct, Header, JournalWorkload};
pub use reader::{parse, read, Contents};
pub use rebuild::{rebuild, Rebuilt, UNDECIDED, UNFINISHED};
pub use writer::{Journal, JournalWriter, FSYNC_EVERY, GATHER};

/// File name of the journal in a run directory.
pub const JOURNAL: &str = "journal.jsonl";
/// Format tag of the header, bumped when the layout changes.
pub const FORMAT: &str = "libratory-journal/1";

/// Errors of writing or reading a journal.
#[derive(Debug, Error)]
pub enum JournalError {
    /// The file could not be created, written or read.
    #[error("{path}: {source}")]
    Io {
        /// The journal.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// A complete line that is not a journal entry.
    #[error("{path}, line {line}: {message}")]
    Corrupt {
        /// The journal.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
    /// The writer thread stopped.
    #[error("{path}: the journal writer thread panicked")]
    WriterPanicked {
        /// The journal.
        path: PathBuf,
    },
}

/// Whether a live manager holds the journal at `path` (its writer's
/// lock): such a run is still going, and its journal must not be moved,
/// rebuilt or resumed from.
pub fn in_use(path: &Path) -> bool {
    std::fs::File::open(path)
        .is_ok_and(|f| matches!(f.try_lock_shared(), Err(std::fs::TryLockError::WouldBlock)))
}

#[cfg(test)]
pub(crate) mod testkit {
    //! Journals for the tests of the modules above.
    use std::path::{Path, PathBuf};

    use common::experiment::Experiment;
    use common::job::{DeadlineType, JobId};
    use common::metrics::JobRecord;
    use common::workload::OddRecords;

    use super::*;
    use crate::cluster::config::ClusterConfig;

    pub fn record(id: JobId) -> JobRecord {
        JobRecord {
            id,
            class: None,
            submit: 10.0 + id as f64,
            estimate: 5.0,
            actual: 4.0,
            processors: 1,
            deadline: 20.0,
            budget: f64::INFINITY,
            penalty_rate: 0.0,
            deadline_type: DeadlineType::Hard,
            accepted: false,
            reason: None,
            detail: String::new(),
            decided_at: 0.0,
            nodes: vec![],
            start: None,
            finish: None,
            cost: 0.0,
            lost: false,
        }
    }

    pub fn header() -> Header {
        let cluster = ClusterConfig::parse(
            Path::new("<test>"),
            "[manager]\nlisten = \"127.0.0.1:1\"\ncerts = \"c\"\ntime_scale = 0.01\n[workload]\npreset = \"libra\"\npolicy = \"libra\"\n[[hosts]]\nname = \"h\"\nnodes_per_process = 2\ncapacity = 1.0\n",
        )
        .unwrap();
        Header {
            format: FORMAT.into(),
            command_line: vec!["libratory".into()],
            working_dir: "/".into(),
            started_unix: 0,
            started_utc: "1970-01-01T00:00:00Z".into(),
            seed: 7,
            policy: "libra".into(),
            time_scale: 0.01,
            cluster,
            experiment: Experiment::preset("libra").unwrap(),
            trace: None,
            workload: JournalWorkload {
                facts: crate::results::rundir::WorkloadFacts {
                    jobs: 4,
                    nodes: 2,
                    first_arrival: 0.0,
                    last_arrival: 3.0,
                    odd_records: OddRecords::default(),
                },
                duplicates: 0,
            },
            faults: None,
        }
    }

    /// A journal of 4 jobs as the writer thread writes it: job 1 completed,
    /// job 2 rejected (its `finished` line lost), job 3 running, job 4
    /// submitted only.
    pub fn sample() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(JOURNAL);
        let w = JournalWriter::create(&path, header()).unwrap();
        let j = w.journal();
        j.send(Entry::Node {
            t: 0.1,
            host: "h-0 (127.0.0.1:9)".into(),
            nodes: 2,
            pid: Some(41),
        });
        j.send(Entry::Replay {
            t: 0.2,
            offset: 10.0,
        });
        let mut r1 = record(1);
        j.send(Entry::Submitted {
            t: 0.3,
            record: r1.clone(),
            spec: None,
        });
        r1.accepted = true;
        r1.decided_at = 11.0;
        r1.start = Some(11.0);
        r1.nodes = vec![0];
        j.send(Entry::Decided {
            t: 0.3,
            record: r1.clone(),
        });
        j.send(Entry::Started {
            t: 0.4,
            part: 0,
            id: Some(r1.id),
            record: None,
        });
        j.send(Entry::Finished {
            t: 0.5,
            id: Some(r1.id),
            finish: Some(15.0),
            record: None,
        });
        let mut r2 = record(2);
        r2.reason = Some(common::policy::RejectReason::ALL[0]);
        r2.decided_at = 12.0;
        j.send(Entry::Decided { t: 0.6, record: r2 });
        let mut r3 = record(3);
        r3.accepted = true;
        r3.start = Some(13.0);
        j.send(Entry::Decided { t: 0.7, record: r3 });
        j.send(Entry::Submitted {
            t: 0.8,
            record: record(4),
            spec: None,
        });
        j.send(Entry::Warning {
            t: 0.8,
            text: "h-1 left: lost".into(),
        });
        w.close().unwrap();
        (dir, path)
    }
}
