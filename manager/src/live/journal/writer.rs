//! The journal's writer: a dedicated thread that writes whole lines,
//! hands them to the OS after every batch, gathers for [`GATHER`] before
//! the next, and fsyncs at least every [`FSYNC_EVERY`] while entries
//! arrive; the senders never block and never wait for the disk.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::format::{entry_json, Entry, Header};
use super::JournalError;

/// How long the writer gathers events after writing a batch.
pub const GATHER: Duration = Duration::from_millis(1);
/// The longest a written event waits for its fsync.
pub const FSYNC_EVERY: Duration = Duration::from_secs(1);

enum Msg {
    Entry(Entry),
    /// Entries gathered by the sender (one channel message, one wake-up
    /// of the writer thread, for a burst of decisions).
    Entries(Vec<Entry>),
    /// Answered once everything sent before it is written to the file
    /// (handed to the OS: it survives the manager's being killed).
    Written(tokio::sync::oneshot::Sender<()>),
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

    /// Told (the receiver gets `()`) once every entry sent before is
    /// written to the file; a journal that failed or closed never tells
    /// (the receiver sees its sender gone).
    pub fn written(&self) -> tokio::sync::oneshot::Receiver<()> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let _ = self.tx.send(Msg::Written(tx));
        rx
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
        // Opened without truncating, locked, then emptied: a journal
        // another manager is writing is left whole.
        let file = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(io)?;
        lock(path, &file)?;
        file.set_len(0).map_err(io)?;
        JournalWriter::start(path, file, Some(header), Instant::now())
    }

    /// Opens the journal of an unfinished run at `path` to go on writing
    /// it (`libratory resume`): entries' `t` continue from `t0` seconds on
    /// its clock. A torn last line (the previous manager killed mid-write)
    /// is cut off first, so the next entry starts a line of its own; a
    /// whole entry missing only its newline gets it.
    pub fn append(path: &Path, t0: f64) -> Result<JournalWriter, JournalError> {
        let io = |source| JournalError::Io {
            path: path.to_path_buf(),
            source,
        };
        let bytes = fs::read(path).map_err(io)?;
        let whole = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let mut file = fs::OpenOptions::new().write(true).open(path).map_err(io)?;
        lock(path, &file)?;
        let died = file.metadata().and_then(|m| m.modified()).ok();
        if whole < bytes.len() {
            // A last line without its newline: an entry the reader takes
            // (the crash came between the line and its newline) is ended;
            // anything else is the torn line the reader left out, cut.
            if serde_json::from_slice::<Entry>(&bytes[whole..]).is_ok() {
                std::io::Seek::seek(&mut file, std::io::SeekFrom::End(0)).map_err(io)?;
                file.write_all(b"\n").map_err(io)?;
            } else {
                file.set_len(whole as u64).map_err(io)?;
            }
            // The file's time stays the dead manager's last write, which
            // `resume` reads as when it died: a resume that fails after
            // this (its address taken) leaves the next one the same clock.
            if let Some(t) = died {
                let _ = file.set_modified(t);
            }
        }
        // Nothing is changed on a whole file: its time is the last entry's,
        // which `resume` reads as when the manager died.
        std::io::Seek::seek(&mut file, std::io::SeekFrom::End(0)).map_err(io)?;
        let now = Instant::now();
        let born = now
            .checked_sub(std::time::Duration::from_secs_f64(t0.max(0.0)))
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
                writer_loop(out, rx, &back).map_err(|source| {
                    // Said now, not only at the run's end: from here a
                    // crash of the manager cannot be resumed.
                    eprintln!(
                        "warning: the run journal {} cannot be written ({source}): the run goes on, but a crash of this manager from now on cannot be resumed, and `libratory recover` would find less than the run did",
                        p.display()
                    );
                    JournalError::Io { path: p, source }
                })
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

/// Writes `e` as one journal line (also the deterministic harness's journal,
/// which keeps its lines in memory).
pub(crate) fn write_entry(
    out: &mut impl Write,
    line: &mut Vec<u8>,
    e: &Entry,
) -> std::io::Result<()> {
    line.clear();
    entry_json(line, e)?;
    line.push(b'\n');
    out.write_all(line)
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
        let mut acks = Vec::new();
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
                Msg::Written(ack) => acks.push(ack),
                Msg::Close => {
                    closing = true;
                    break;
                }
            }
            next = rx.try_recv().ok();
        }
        // To the OS after every batch: survives a killed process.
        out.flush()?;
        for ack in acks {
            let _ = ack.send(());
        }
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
/// Takes the journal's exclusive lock, held while `file` stays open (the
/// writer's life): another process writing it is refused, and readers
/// that would move or rebuild it can tell a live run's journal
/// ([`super::in_use`]).
fn lock(path: &Path, file: &fs::File) -> Result<(), JournalError> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(fs::TryLockError::WouldBlock) => Err(JournalError::Io {
            path: path.to_path_buf(),
            source: std::io::Error::other(
                "another manager is writing this journal (a run still going): give another --out",
            ),
        }),
        Err(fs::TryLockError::Error(source)) => Err(JournalError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::journal::testkit::{header, record};
    use crate::live::journal::{read, rebuild, JOURNAL};
    use common::job::JobId;

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
            spec: None,
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

    /// Going on with a journal: a last entry whole but for its newline is
    /// kept (the reader counted it), a torn one is cut, and either way the
    /// file keeps the dead manager's time (what `resume` measures the
    /// downtime from), also when nothing needs mending.
    #[test]
    fn append_keeps_a_whole_last_entry_cuts_a_torn_one_and_keeps_the_time() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(JOURNAL);
        let w = JournalWriter::create(&path, header()).unwrap();
        w.journal().send(Entry::Submitted {
            t: 0.1,
            record: record(9),
            spec: None,
        });
        drop(w);
        let whole = std::fs::read(&path).unwrap();
        let long_ago = std::time::SystemTime::now() - Duration::from_secs(300);
        let set = |bytes: &[u8]| {
            std::fs::write(&path, bytes).unwrap();
            let f = std::fs::File::options().write(true).open(&path).unwrap();
            f.set_modified(long_ago).unwrap();
        };
        let time = || std::fs::metadata(&path).unwrap().modified().unwrap();
        for (bytes, entries) in [
            (&whole[..whole.len() - 1], 1),
            (&whole[..whole.len() - 5], 0),
            (&whole[..], 1),
        ] {
            set(bytes);
            drop(JournalWriter::append(&path, 1.0).unwrap());
            assert_eq!(time(), long_ago, "{entries}");
            let c = read(&path).unwrap();
            assert_eq!((c.entries.len(), c.torn_line), (entries, None));
            assert!(std::fs::read(&path).unwrap().ends_with(b"\n"));
        }
    }

    /// `written` tells once what was sent before it is in the file (the
    /// manager answers a fault report only then).
    #[test]
    fn written_tells_once_the_entries_before_it_are_in_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(JOURNAL);
        let w = JournalWriter::create(&path, header()).unwrap();
        let j = w.journal();
        j.send_all(vec![Entry::Warning {
            t: 0.2,
            text: "fault: fault 1 (...): done".into(),
        }]);
        let told = j.written();
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(told)
            .expect("the writer tells");
        let c = read(&path).unwrap();
        assert!(
            matches!(&c.entries[..], [Entry::Warning { text, .. }] if text.starts_with("fault: fault 1")),
            "{:?}",
            c.entries.len()
        );
        drop(w);
    }
}
