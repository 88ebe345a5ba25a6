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

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::experiment::Experiment;
use common::job::JobId;
use common::metrics::JobRecord;
use common::time::Time;
use common::workload::OddRecords;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::cluster::config::ClusterConfig;

/// File name of the journal in a run directory.
pub const JOURNAL: &str = "journal.jsonl";
/// Format tag of the header, bumped when the layout changes.
pub const FORMAT: &str = "libratory-journal/1";
/// How long the writer gathers events after writing a batch.
pub const GATHER: Duration = Duration::from_millis(1);
/// The longest a written event waits for its fsync.
pub const FSYNC_EVERY: Duration = Duration::from_secs(1);

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

/// Facts of the workload a run replayed (summary.json's `workload`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadFacts {
    /// Jobs in the workload.
    pub jobs: usize,
    /// Nodes of the cluster.
    pub nodes: usize,
    /// First arrival (trace seconds).
    pub first_arrival: f64,
    /// Last arrival.
    pub last_arrival: f64,
    /// How odd records were handled.
    pub odd_records: OddRecords,
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
    pub workload: WorkloadFacts,
}

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
    },
    /// The replay started; records are on the clock axis, `offset` trace
    /// seconds ahead of the workload's.
    Replay {
        /// When.
        t: f64,
        /// Trace seconds from the clock's start to the replay start.
        offset: Time,
    },
    /// A job was handed to the policy.
    Submitted {
        /// When.
        t: f64,
        /// Its record after the submission.
        record: JobRecord,
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
    /// Something the user should know (a lost node process, a late
    /// start, a refused part), journaled within a heartbeat.
    Warning {
        /// When it was journaled.
        t: f64,
        /// The warning.
        text: String,
    },
    /// The run ended and wrote its own result files.
    End {
        /// When.
        t: f64,
        /// Real seconds from the replay start to the end.
        wall_seconds: f64,
    },
}

enum Msg {
    Entry(Entry),
    /// Entries gathered by the sender (one channel message, one wake-up
    /// of the writer thread, for a burst of decisions).
    Entries(Vec<Entry>),
    Close,
}

/// The sending side of a journal: cheap to clone, never blocks, never
/// fails (a write error is reported when the journal is closed).
#[derive(Clone)]
pub struct Journal {
    tx: mpsc::Sender<Msg>,
    born: Instant,
    /// Hand-overs written and sent back, entries and all (see
    /// [`Journal::recycled`]).
    spent: Arc<Mutex<Vec<Vec<Entry>>>>,
}

/// Written hand-overs kept for the sender to take back; more are dropped
/// by the writer.
const SPENT_KEPT: usize = 8;

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Journal")
    }
}

impl Journal {
    /// Real seconds since the journal was created (the manager's start).
    pub fn t(&self) -> f64 {
        self.born.elapsed().as_secs_f64()
    }

    /// Appends an entry (asynchronously).
    pub fn send(&self, e: Entry) {
        let _ = self.tx.send(Msg::Entry(e));
    }

    /// An empty vector for the next hand-over: one the writer has written
    /// and sent back, if any, emptied here. The entries were allocated by
    /// the sender's thread and are freed on it: freed by the writer, each
    /// went to the sender's allocator arena under its lock (glibc), which
    /// the sender held for its own allocations at the same time (~0.27
    /// futex calls a job over a flood and its rejections; freeing was
    /// ~14% of the writer's time). And the vector keeps its capacity.
    pub fn recycled(&self) -> Vec<Entry> {
        let spent = self.spent.lock().map(|mut v| v.pop()).unwrap_or(None);
        spent
            .map(|mut v| {
                v.clear();
                v
            })
            .unwrap_or_default()
    }

    /// Appends entries in order (asynchronously), as one hand-over.
    pub fn send_all(&self, entries: Vec<Entry>) {
        if !entries.is_empty() {
            let _ = self.tx.send(Msg::Entries(entries));
        }
    }
}

/// The writer thread of a journal.
pub struct JournalWriter {
    journal: Journal,
    thread: Option<JoinHandle<Result<(), JournalError>>>,
    path: PathBuf,
}

impl JournalWriter {
    /// Creates (truncating) the journal at `path`, writes and fsyncs the
    /// header, and starts the writer thread.
    pub fn create(path: &Path, header: Header) -> Result<JournalWriter, JournalError> {
        let io = |source| JournalError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = fs::File::create(path).map_err(io)?;
        JournalWriter::start(path, file, Some(header), Instant::now())
    }

    /// Opens the journal of an unfinished run at `path` to go on writing
    /// it (`libratory resume`): entries' `t` continue from `t0` seconds on
    /// its clock. A torn last line (the previous manager killed mid-write)
    /// is cut off first, so the next entry starts a line of its own.
    pub fn append(path: &Path, t0: f64) -> Result<JournalWriter, JournalError> {
        let io = |source| JournalError::Io {
            path: path.to_path_buf(),
            source,
        };
        let bytes = fs::read(path).map_err(io)?;
        let whole = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let file = fs::OpenOptions::new().write(true).open(path).map_err(io)?;
        file.set_len(whole as u64).map_err(io)?;
        let mut file = file;
        std::io::Seek::seek(&mut file, std::io::SeekFrom::End(0)).map_err(io)?;
        let now = Instant::now();
        let born = now
            .checked_sub(Duration::from_secs_f64(t0.max(0.0)))
            .unwrap_or(now);
        JournalWriter::start(path, file, None, born)
    }

    fn start(
        path: &Path,
        file: fs::File,
        header: Option<Header>,
        born: Instant,
    ) -> Result<JournalWriter, JournalError> {
        let io = |source| JournalError::Io {
            path: path.to_path_buf(),
            source,
        };
        // Large enough that a busy batch is a few writes, not hundreds.
        let mut out = BufWriter::with_capacity(256 * 1024, file);
        if let Some(header) = header {
            write_entry(&mut out, &mut Vec::new(), &Entry::Header(Box::new(header))).map_err(io)?;
        }
        out.flush().map_err(io)?;
        out.get_ref().sync_all().map_err(io)?;
        // The directory entry too, so the journal itself survives a crash.
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if let Ok(d) = fs::File::open(dir) {
                let _ = d.sync_all();
            }
        }
        let (tx, rx) = mpsc::channel();
        let p = path.to_path_buf();
        let spent = Arc::new(Mutex::new(Vec::new()));
        let back = Arc::clone(&spent);
        let thread = std::thread::Builder::new()
            .name("journal".into())
            .spawn(move || {
                writer_loop(out, rx, &back).map_err(|source| JournalError::Io { path: p, source })
            })
            .map_err(io)?;
        Ok(JournalWriter {
            journal: Journal { tx, born, spent },
            thread: Some(thread),
            path: path.to_path_buf(),
        })
    }

    /// A sender for the manager.
    pub fn journal(&self) -> Journal {
        self.journal.clone()
    }

    /// Writes what is queued, fsyncs and stops the thread; reports the
    /// first write error, if any.
    pub fn close(mut self) -> Result<(), JournalError> {
        self.stop()
    }

    fn stop(&mut self) -> Result<(), JournalError> {
        let Some(t) = self.thread.take() else {
            return Ok(());
        };
        let _ = self.journal.tx.send(Msg::Close);
        t.join().map_err(|_| JournalError::WriterPanicked {
            path: self.path.clone(),
        })?
    }
}

impl Drop for JournalWriter {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

fn write_entry(out: &mut impl Write, line: &mut Vec<u8>, e: &Entry) -> std::io::Result<()> {
    line.clear();
    entry_json(line, e)?;
    line.push(b'\n');
    out.write_all(line)
}

/// An entry's JSON text, as `serde_json` writes it (a test holds the two
/// equal). The job events, nearly every line of a run, are written by
/// hand: serde's formatting took most of the writer thread's time at
/// 10,000 jobs/s, beside the manager's own threads on the same cores.
fn entry_json(line: &mut Vec<u8>, e: &Entry) -> std::io::Result<()> {
    let (tag, t, part, record) = match e {
        Entry::Submitted { t, record } => ("submitted", *t, None::<u32>, record),
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

fn writer_loop(
    mut out: BufWriter<fs::File>,
    rx: mpsc::Receiver<Msg>,
    spent: &Mutex<Vec<Vec<Entry>>>,
) -> std::io::Result<()> {
    let mut line = Vec::with_capacity(512);
    let mut last_sync = Instant::now();
    let mut unsynced = false;
    loop {
        // Block until an event, or until the next fsync is due.
        let first = if unsynced {
            let wait = FSYNC_EVERY.saturating_sub(last_sync.elapsed());
            match rx.recv_timeout(wait) {
                Ok(m) => Some(m),
                Err(mpsc::RecvTimeoutError::Timeout) => None,
                Err(mpsc::RecvTimeoutError::Disconnected) => Some(Msg::Close),
            }
        } else {
            Some(rx.recv().unwrap_or(Msg::Close))
        };
        let mut closing = false;
        // This event and whatever queued behind it, as one batch.
        let mut next = first;
        while let Some(m) = next {
            match m {
                Msg::Entry(e) => {
                    write_entry(&mut out, &mut line, &e)?;
                    unsynced = true;
                }
                Msg::Entries(es) => {
                    for e in &es {
                        write_entry(&mut out, &mut line, e)?;
                    }
                    unsynced = true;
                    // Back to the sender, to be freed on its thread.
                    if let Ok(mut v) = spent.lock() {
                        if v.len() < SPENT_KEPT {
                            v.push(es);
                        }
                    }
                }
                Msg::Close => {
                    closing = true;
                    break;
                }
            }
            next = rx.try_recv().ok();
        }
        // To the OS after every batch: survives a killed process.
        out.flush()?;
        // Gather for a moment before looking again: while this thread
        // sleeps (rather than waits on the channel) a sender's hand-over is
        // a queue push with no wake-up call, and the next batch is bigger.
        // A killed manager loses at most this much more of its last events.
        if !closing {
            std::thread::sleep(GATHER);
        }
        if unsynced && (closing || last_sync.elapsed() >= FSYNC_EVERY) {
            out.get_ref().sync_data()?;
            last_sync = Instant::now();
            unsynced = false;
        }
        if closing {
            return Ok(());
        }
    }
}

/// A journal as read back.
#[derive(Debug, Clone)]
pub struct Contents {
    /// The header.
    pub header: Header,
    /// Every entry after it, in order.
    pub entries: Vec<Entry>,
    /// The 1-based number of a last line cut short by a crash (no newline,
    /// not JSON), which was left out.
    pub torn_line: Option<usize>,
}

/// Reads the journal at `path`. A torn last line (a crash in the middle of
/// a write: no final newline) is left out and reported in
/// [`Contents::torn_line`]; any other line that is not an entry is an
/// error naming the file and line.
pub fn read(path: &Path) -> Result<Contents, JournalError> {
    let bytes = fs::read(path).map_err(|source| JournalError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse(path, &bytes)
}

/// [`read`] on bytes already read (`path` names them in errors).
pub fn parse(path: &Path, bytes: &[u8]) -> Result<Contents, JournalError> {
    let corrupt = |line: usize, message: String| JournalError::Corrupt {
        path: path.to_path_buf(),
        line,
        message,
    };
    let ends_whole = bytes.last() == Some(&b'\n');
    let lines: Vec<&[u8]> = bytes
        .strip_suffix(b"\n")
        .unwrap_or(bytes)
        .split(|&b| b == b'\n')
        .collect();
    let n = lines.len();
    let mut header = None;
    let mut entries = Vec::new();
    let mut torn_line = None;
    for (i, line) in lines.into_iter().enumerate() {
        let no = i + 1;
        if bytes.is_empty() {
            break;
        }
        let parsed: Result<Entry, String> = std::str::from_utf8(line)
            .map_err(|e| e.to_string())
            .and_then(|s| serde_json::from_str(s).map_err(|e| e.to_string()));
        let entry = match parsed {
            Ok(e) => e,
            Err(_) if no == n && !ends_whole && no > 1 => {
                torn_line = Some(no);
                break;
            }
            Err(e) => return Err(corrupt(no, e)),
        };
        match (no, entry) {
            (1, Entry::Header(h)) => {
                if h.format != FORMAT {
                    return Err(corrupt(
                        1,
                        format!("format {:?}, this binary reads {FORMAT:?}", h.format),
                    ));
                }
                header = Some(*h);
            }
            (1, _) => return Err(corrupt(1, "the first line is not the header".into())),
            (_, Entry::Header(_)) => return Err(corrupt(no, "a second header".into())),
            (
                _,
                Entry::Finished {
                    id, finish, record, ..
                },
            ) if !matches!(
                (id.is_some(), finish.is_some(), record.is_some()),
                (true, true, false) | (false, false, true)
            ) =>
            {
                return Err(corrupt(
                    no,
                    "a `finished` entry needs either `record`, or `id` and `finish`".into(),
                ))
            }
            (_, e) => entries.push(e),
        }
    }
    let header = header.ok_or_else(|| corrupt(1, "empty journal: no header".into()))?;
    Ok(Contents {
        header,
        entries,
        torn_line,
    })
}

/// How far a job got, by its last journal entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Stage {
    Submitted,
    Decided,
    Started,
    Finished,
}

/// The records of a run rebuilt from its journal.
#[derive(Debug, Clone)]
pub struct Rebuilt {
    /// One record per submitted job, in job-id order, on the workload's
    /// axis (as a finished run's).
    pub records: Vec<JobRecord>,
    /// Jobs submitted but not decided when the journal ends: recorded as
    /// not accepted and lost, with the reason in `detail`.
    pub undecided: Vec<JobId>,
    /// Jobs accepted but not over when the journal ends: recorded as lost
    /// (no finish), with the reason in `detail`.
    pub unfinished: Vec<JobId>,
    /// Node processes that registered: (label, emulated nodes).
    pub node_processes: Vec<(String, usize)>,
    /// Trace seconds from the clock's start to the replay start.
    pub replay_offset: Time,
    /// Real seconds from the replay start to the last entry (to the end,
    /// for a run that ended).
    pub wall_seconds: f64,
    /// Whether the run ended by itself (an `end` entry).
    pub ended: bool,
    /// The run's warnings, in order.
    pub warnings: Vec<String>,
}

/// `detail` of a job the manager never decided.
pub const UNDECIDED: &str =
    "undecided: the manager stopped before deciding (record recovered from the journal)";
/// `detail` of an accepted job that was not over.
pub const UNFINISHED: &str =
    "running when the manager stopped: outcome unknown (record recovered from the journal)";

/// Rebuilds every submitted job's record: the last record journaled for
/// each job wins; a job whose last entry is not final is marked lost with
/// [`UNDECIDED`] or [`UNFINISHED`] in `detail` (a job rejected at its
/// decision is final even if its `finished` entry was lost).
pub fn rebuild(c: &Contents) -> Rebuilt {
    let mut jobs: BTreeMap<JobId, (Stage, JobRecord)> = BTreeMap::new();
    let mut nodes = Vec::new();
    let mut offset = 0.0;
    let mut replay_t = None;
    let mut last_t: f64 = 0.0;
    let mut end = None;
    let mut warnings = Vec::new();
    for e in &c.entries {
        let (t, stage, record) = match e {
            Entry::Header(_) => continue,
            Entry::Node { t, host, nodes: n } => {
                nodes.push((host.clone(), *n));
                (*t, None, None)
            }
            Entry::Replay { t, offset: o } => {
                offset = *o;
                replay_t = Some(*t);
                (*t, None, None)
            }
            Entry::Submitted { t, record } => (*t, Some(Stage::Submitted), Some(record)),
            Entry::Decided { t, record } => (*t, Some(Stage::Decided), Some(record)),
            Entry::Started {
                t,
                record: Some(record),
                ..
            } => (*t, Some(Stage::Started), Some(&**record)),
            Entry::Started {
                t, id: Some(id), ..
            } => {
                // The job's record stands; only its stage moves on (never
                // back from `finished`: a start can be reported after the
                // part's end).
                if let Some(slot) = jobs.get_mut(id) {
                    slot.0 = slot.0.max(Stage::Started);
                }
                (*t, None, None)
            }
            Entry::Started { t, .. } => (*t, None, None),
            Entry::Finished {
                t,
                record: Some(record),
                ..
            } => (*t, Some(Stage::Finished), Some(&**record)),
            Entry::Finished {
                t,
                id: Some(id),
                finish,
                ..
            } => {
                // The decided record, finished. The writer uses this form
                // only after the job's `decided` entry.
                match jobs.get_mut(id) {
                    Some(slot) => {
                        slot.0 = Stage::Finished;
                        slot.1.finish = *finish;
                    }
                    None => warnings.push(format!(
                        "journal: job {id} finished with no record journaled before: left out"
                    )),
                }
                (*t, None, None)
            }
            Entry::Finished { t, .. } => (*t, None, None),
            Entry::Warning { t, text } => {
                warnings.push(text.clone());
                (*t, None, None)
            }
            Entry::End { t, wall_seconds } => {
                end = Some(*wall_seconds);
                (*t, None, None)
            }
        };
        last_t = last_t.max(t);
        if let (Some(stage), Some(r)) = (stage, record) {
            let slot = jobs.entry(r.id).or_insert((stage, r.clone()));
            // Entries are in order; a late `started` never undoes a
            // `finished`.
            if stage >= slot.0 || slot.0 != Stage::Finished {
                *slot = (stage.max(slot.0), r.clone());
            }
        }
    }
    let mut undecided = Vec::new();
    let mut unfinished = Vec::new();
    let mut records = Vec::with_capacity(jobs.len());
    for (id, (stage, mut r)) in jobs {
        let rejected = !r.accepted && r.reason.is_some();
        if stage == Stage::Finished || rejected {
            // final
        } else if stage == Stage::Submitted && !r.accepted {
            undecided.push(id);
            r.lost = true;
            r.detail = UNDECIDED.into();
        } else {
            unfinished.push(id);
            r.lost = true;
            r.finish = None;
            r.detail = UNFINISHED.into();
        }
        r.submit -= offset;
        r.decided_at -= offset;
        r.start = r.start.map(|t| t - offset);
        r.finish = r.finish.map(|t| t - offset);
        records.push(r);
    }
    let wall_seconds = end.unwrap_or_else(|| replay_t.map_or(0.0, |r| (last_t - r).max(0.0)));
    Rebuilt {
        records,
        undecided,
        unfinished,
        node_processes: nodes,
        replay_offset: offset,
        wall_seconds,
        ended: end.is_some(),
        warnings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use common::job::DeadlineType;

    fn record(id: JobId) -> JobRecord {
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

    fn header() -> Header {
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
            workload: WorkloadFacts {
                jobs: 4,
                nodes: 2,
                first_arrival: 0.0,
                last_arrival: 3.0,
                odd_records: OddRecords::default(),
                duplicates: 0,
            },
        }
    }

    /// A journal of 4 jobs as the writer thread writes it: job 1 completed,
    /// job 2 rejected (its `finished` line lost), job 3 running, job 4
    /// submitted only.
    fn sample() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(JOURNAL);
        let w = JournalWriter::create(&path, header()).unwrap();
        let j = w.journal();
        j.send(Entry::Node {
            t: 0.1,
            host: "h-0 (127.0.0.1:9)".into(),
            nodes: 2,
        });
        j.send(Entry::Replay {
            t: 0.2,
            offset: 10.0,
        });
        let mut r1 = record(1);
        j.send(Entry::Submitted {
            t: 0.3,
            record: r1.clone(),
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
        });
        j.send(Entry::Warning {
            t: 0.8,
            text: "h-1 left: lost".into(),
        });
        w.close().unwrap();
        (dir, path)
    }

    #[test]
    fn written_hand_overs_come_back_empty_with_their_capacity() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(JOURNAL);
        let w = JournalWriter::create(&path, header()).unwrap();
        let j = w.journal();
        assert_eq!(j.recycled().capacity(), 0, "nothing written yet");
        let mut entries = Vec::with_capacity(64);
        for id in 1..=3 {
            let mut r = record(id);
            r.nodes = vec![id as usize];
            entries.push(Entry::Decided { t: 0.5, record: r });
        }
        j.send_all(entries);
        // The writer hands the vector back once its entries are written.
        let t0 = Instant::now();
        let back = loop {
            let v = j.recycled();
            if v.capacity() > 0 || t0.elapsed() > Duration::from_secs(10) {
                break v;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        assert!(
            back.is_empty() && back.capacity() >= 64,
            "{}",
            back.capacity()
        );
        w.close().unwrap();
        let c = read(&path).unwrap();
        let ids: Vec<JobId> = rebuild(&c).records.iter().map(|r| r.id).collect();
        assert_eq!(ids, [1, 2, 3]);
    }

    #[test]
    fn rebuilds_one_record_per_job_with_honest_statuses() {
        let (_d, path) = sample();
        let c = read(&path).unwrap();
        assert_eq!(c.torn_line, None);
        assert_eq!(c.header.seed, 7);
        let r = rebuild(&c);
        let ids: Vec<JobId> = r.records.iter().map(|r| r.id).collect();
        assert_eq!(ids, vec![1, 2, 3, 4]);
        // Shifted to the workload's axis by the replay offset (10).
        assert_eq!(r.records[0].submit, 1.0);
        assert_eq!(r.records[0].finish, Some(5.0));
        assert!(r.records[0].completed());
        assert!(!r.records[1].lost && !r.records[1].accepted);
        assert_eq!(r.unfinished, vec![3]);
        assert!(r.records[2].lost && r.records[2].finish.is_none());
        assert_eq!(r.records[2].detail, UNFINISHED);
        assert_eq!(r.undecided, vec![4]);
        assert_eq!(r.records[3].detail, UNDECIDED);
        assert_eq!(r.node_processes, vec![("h-0 (127.0.0.1:9)".into(), 2)]);
        assert!(!r.ended);
        assert_eq!(r.warnings, vec!["h-1 left: lost".to_string()]);
        assert!((r.wall_seconds - 0.6).abs() < 1e-9);
    }

    /// An entry of the sample's job 1 written the way journals did before
    /// ids replaced records: `head`, then the job's `decided` record.
    fn with_decided_record(text: &str, head: &str) -> String {
        let decided = text
            .lines()
            .find(|l| l.contains("\"decided\"") && l.contains("\"id\":1,"))
            .unwrap();
        format!("{head}{}", &decided[decided.find("\"record\":").unwrap()..])
    }

    /// The journal at `path` and `other` rebuild the same records.
    fn assert_rebuilt_alike(path: &Path, other: &str) {
        let ours = rebuild(&read(path).unwrap());
        let theirs = rebuild(&parse(path, other.as_bytes()).unwrap());
        assert_eq!(
            serde_json::to_string(&ours.records).unwrap(),
            serde_json::to_string(&theirs.records).unwrap()
        );
    }

    /// Journals written before `started` lines lost their record still
    /// read and rebuild the same; a start reported after the part's end
    /// does not reopen the job.
    #[test]
    fn started_lines_of_either_shape_rebuild_alike() {
        let (_d, path) = sample();
        let text = std::fs::read_to_string(&path).unwrap();
        let new_line = text.lines().find(|l| l.contains("\"started\"")).unwrap();
        assert_eq!(new_line, r#"{"e":"started","t":0.4,"part":0,"id":1}"#);
        let old_line = with_decided_record(&text, "{\"e\":\"started\",\"t\":0.4,\"part\":0,");
        assert_rebuilt_alike(&path, &text.replacen(new_line, &old_line, 1));
        // Job 1's start arriving after its end (a node can report both in
        // one batch, the start second).
        let late = format!("{text}{new_line}\n");
        let r = rebuild(&parse(&path, late.as_bytes()).unwrap());
        assert!(r.records[0].completed() && !r.unfinished.contains(&1));
    }

    /// Every time a journal holds reads back to the very same `f64`, so a
    /// rebuilt record is the run's own bit for bit (serde_json's default
    /// float parser can land one ulp off: 230.25714961999998 read back as
    /// 230.25714962 in a demo's rebuild; the `float_roundtrip` feature
    /// parses exactly).
    #[test]
    fn times_read_back_bit_for_bit() {
        let (_d, path) = sample();
        let mut text = std::fs::read_to_string(&path).unwrap();
        let mut want = Vec::new();
        for i in 1..2_000u64 {
            // Times of every magnitude with 15-17 significant digits.
            let finish = 230.257_149_62 * i as f64 / 7.0 + 1e-9 * (i * i) as f64;
            want.push(finish);
            let mut r = record(1_000 + i);
            r.accepted = true;
            r.decided_at = finish / 3.0;
            r.start = Some(finish / 3.0);
            let mut line = Vec::new();
            entry_json(&mut line, &Entry::Decided { t: 1.0, record: r }).unwrap();
            text.push_str(std::str::from_utf8(&line).unwrap());
            text.push('\n');
            line.clear();
            entry_json(
                &mut line,
                &Entry::Finished {
                    t: 1.0,
                    id: Some(1_000 + i),
                    finish: Some(finish),
                    record: None,
                },
            )
            .unwrap();
            text.push_str(std::str::from_utf8(&line).unwrap());
            text.push('\n');
        }
        // The sample's replay offset (10) is taken off, as the run does.
        let r = rebuild(&parse(&path, text.as_bytes()).unwrap());
        let got: Vec<&JobRecord> = r.records.iter().filter(|r| r.id > 1_000).collect();
        assert_eq!(got.len(), want.len());
        for (r, w) in got.iter().zip(&want) {
            assert_eq!(
                r.finish.map(f64::to_bits),
                Some((w - 10.0).to_bits()),
                "job {}",
                r.id
            );
            assert_eq!(
                r.decided_at.to_bits(),
                (w / 3.0 - 10.0).to_bits(),
                "job {}",
                r.id
            );
        }
    }

    /// A completion journaled with its id and finish rebuilds as the
    /// decided record with that finish: what a whole final record would
    /// give (journals written before carry it).
    #[test]
    fn finished_lines_of_either_shape_rebuild_alike() {
        let (_d, path) = sample();
        let text = std::fs::read_to_string(&path).unwrap();
        let new_line = text.lines().find(|l| l.contains("\"finished\"")).unwrap();
        assert_eq!(new_line, r#"{"e":"finished","t":0.5,"id":1,"finish":15.0}"#);
        let old_line = with_decided_record(&text, "{\"e\":\"finished\",\"t\":0.5,")
            .replace("\"finish\":null", "\"finish\":15.0");
        assert_rebuilt_alike(&path, &text.replacen(new_line, &old_line, 1));
        assert_eq!(rebuild(&read(&path).unwrap()).records[0].finish, Some(5.0));
        // One with neither shape, or both, is an error naming its line.
        let n = text.lines().position(|l| l == new_line).unwrap() + 1;
        for bad in [
            r#"{"e":"finished","t":0.5,"id":1}"#,
            r#"{"e":"finished","t":0.5}"#,
        ] {
            let e = parse(&path, text.replacen(new_line, bad, 1).as_bytes())
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(&format!("line {n}:")) && e.contains("`finished`"),
                "{e}"
            );
        }
        // One for a job never journaled before is left out, with a
        // warning, not taken for a record.
        let stray = format!("{text}{}\n", new_line.replace("\"id\":1", "\"id\":99"));
        let r = rebuild(&parse(&path, stray.as_bytes()).unwrap());
        assert_eq!(r.records.len(), 4);
        assert!(
            r.warnings.iter().any(|w| w.contains("job 99")),
            "{:?}",
            r.warnings
        );
    }

    /// Entries reach the file while the writer is still open: a process
    /// killed now would leave them behind.
    #[test]
    fn entries_are_in_the_file_before_the_journal_closes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(JOURNAL);
        let w = JournalWriter::create(&path, header()).unwrap();
        w.journal().send(Entry::Submitted {
            t: 0.1,
            record: record(9),
        });
        let start = Instant::now();
        loop {
            let c = read(&path).unwrap();
            if c.entries.len() == 1 {
                break;
            }
            assert!(start.elapsed() < Duration::from_secs(5), "never flushed");
            std::thread::sleep(Duration::from_millis(5));
        }
        drop(w);
    }

    #[test]
    fn a_torn_last_line_is_left_out_and_reported() {
        let (_d, path) = sample();
        let mut bytes = fs::read(&path).unwrap();
        let lines = bytes.iter().filter(|&&b| b == b'\n').count();
        bytes.extend_from_slice(b"{\"e\":\"finished\",\"t\":0.9,\"rec");
        let c = parse(&path, &bytes).unwrap();
        assert_eq!(c.torn_line, Some(lines + 1));
        assert_eq!(rebuild(&c).records.len(), 4);
    }

    #[test]
    fn a_corrupt_line_is_an_error_naming_file_and_line() {
        let (_d, path) = sample();
        let text = fs::read_to_string(&path).unwrap();
        let mut lines: Vec<&str> = text.lines().collect();
        lines[3] = "{\"e\":\"decided\",\"t\":oops}";
        let bad = lines.join("\n") + "\n";
        let e = parse(&path, bad.as_bytes()).unwrap_err().to_string();
        assert!(e.contains("journal.jsonl, line 4:"), "{e}");
        // A cut line followed by more lines is corruption, not a torn end.
        let cut = format!("{}\n{{\"e\":\"dec\n{}\n", lines[0], lines[1]);
        let e = parse(&path, cut.as_bytes()).unwrap_err().to_string();
        assert!(e.contains("line 2:"), "{e}");
        // No header.
        let e = parse(&path, format!("{}\n", lines[1]).as_bytes())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 1: the first line is not the header"),
            "{e}"
        );
    }
}
