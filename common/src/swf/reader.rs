//! The streaming SWF reader: job lines into [`SwfRecord`]s, the `;`
//! header, the last N lines of a trace (parsing rules: see the parent
//! module).

use std::collections::VecDeque;
use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use flate2::read::MultiGzDecoder;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Number of fields in an SWF job line.
pub const SWF_FIELD_COUNT: usize = 18;

/// The SWF field names, index 0 = field 1, as used in error messages.
pub const SWF_FIELD_NAMES: [&str; SWF_FIELD_COUNT] = [
    "job number",
    "submit time",
    "wait time",
    "run time",
    "allocated processors",
    "average CPU time",
    "used memory",
    "requested processors",
    "requested time",
    "requested memory",
    "status",
    "user id",
    "group id",
    "executable number",
    "queue number",
    "partition number",
    "preceding job number",
    "think time",
];

/// Buffer size for reading traces; large enough that decompression and line
/// splitting are not dominated by small reads.
const READ_BUFFER: usize = 64 * 1024;

/// [`SwfReader::into_last`] preallocates at most this many records, so that a
/// caller asking for "the last `usize::MAX`" does not abort on allocation.
const MAX_PREALLOC: usize = 1 << 16;

/// What is wrong with one field of a job line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldProblem {
    /// Not a number at all (`12x`, empty after splitting, `1e3` in an integer field).
    InvalidNumber,
    /// A number with a non-zero fractional part in an integer field (`12.5`).
    NotIntegral,
    /// `inf` or `NaN` in a fractional field.
    NotFinite,
    /// A negative job number (field 1 is the only field where `-1` is not allowed).
    Negative,
    /// Below -1, the value the format keeps for "unknown".
    BelowUnknown,
    /// A submit time of -1: a job line cannot leave it unknown.
    NoSubmitTime,
    /// Beyond what the field can mean (the limit, as words).
    TooLarge(&'static str),
}

impl fmt::Display for FieldProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FieldProblem::InvalidNumber => "invalid number",
            FieldProblem::NotIntegral => "not an integer",
            FieldProblem::NotFinite => "not a finite number",
            FieldProblem::Negative => "negative job number",
            FieldProblem::BelowUnknown => "negative (only -1, unknown, may be)",
            FieldProblem::NoSubmitTime => "unknown submit time (a job line needs one)",
            FieldProblem::TooLarge(limit) => limit,
        })
    }
}

/// The fields in seconds (2, 3, 4, 9, 18, 0-based here) and their bound:
/// 10^10 s is 317 years, beyond any log, and keeps every time exact in
/// an f64 with room to add deadlines to it.
const SECONDS_FIELDS: [usize; 5] = [1, 2, 3, 8, 17];
const MAX_SECONDS: i64 = 10_000_000_000;
/// The processor fields (5 and 8): 10^9 is beyond any machine.
const PROCESSOR_FIELDS: [usize; 2] = [4, 7];
const MAX_PROCESSORS: i64 = 1_000_000_000;

/// Errors of the SWF reader. Every variant names the file (as given to
/// [`SwfReader::open`] or [`SwfReader::from_reader`]), and every variant about
/// a line names its 1-based line number.
#[derive(Debug, Error)]
pub enum SwfError {
    /// The file could not be opened. (The reason is in the message and is
    /// not the error's `source`, so that a printed chain says it once.)
    #[error("{file}: cannot open: {cause}")]
    Open {
        /// The file.
        file: String,
        /// The operating system's reason.
        cause: io::Error,
    },
    /// Reading (or decompressing) failed; the rest of the file is unreadable
    /// and iteration stops after this error.
    #[error("{file}:{line}: read error: {cause}")]
    Read {
        /// The file.
        file: String,
        /// The line being read when the error happened.
        line: u64,
        /// The underlying error (a corrupt gzip stream shows up here).
        cause: io::Error,
    },
    /// A job line does not have 18 fields.
    #[error("{file}:{line}: expected {SWF_FIELD_COUNT} fields, found {found}")]
    FieldCount {
        /// The file.
        file: String,
        /// The line.
        line: u64,
        /// How many whitespace-separated fields the line has.
        found: usize,
    },
    /// Job lines out of submit-time order (the format keeps them sorted).
    #[error("{file}:{line}: submit time {submit} is before line {previous_line}'s {previous_submit} (SWF job lines are sorted by submit time)")]
    OutOfOrder {
        /// The file.
        file: String,
        /// The line.
        line: u64,
        /// Its submit time.
        submit: i64,
        /// The job line before it.
        previous_line: u64,
        /// That line's submit time.
        previous_submit: i64,
    },
    /// A job number already used by an earlier line.
    #[error(
        "{file}:{line}: job number {job} is already line {first_line}'s (job numbers are unique)"
    )]
    DuplicateJob {
        /// The file.
        file: String,
        /// The line.
        line: u64,
        /// The job number.
        job: u64,
        /// The line that has it first.
        first_line: u64,
    },
    /// One field of a job line could not be read.
    #[error("{file}:{line}: field {field} ({name}): {problem} \"{value}\"")]
    Field {
        /// The file.
        file: String,
        /// The line.
        line: u64,
        /// The 1-based SWF field number.
        field: usize,
        /// The SWF field name (from [`SWF_FIELD_NAMES`]).
        name: &'static str,
        /// What is wrong with it.
        problem: FieldProblem,
        /// The text of the field as written.
        value: String,
    },
}

/// The `;` comment lines of a trace.
///
/// The archive's header is a block of `; Key: value` lines at the top. Every
/// comment line is kept verbatim in [`comments`](Self::comments); those that
/// have the `Key: value` shape are also split into [`fields`](Self::fields),
/// in file order and with repeats kept (a header has one `Queue:` line per
/// queue). Continuation lines (`;   more text`) are not joined to the key
/// above them; they are only in `comments`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwfHeader {
    /// `(key, value)` pairs in file order; the value is trimmed.
    pub fields: Vec<(String, String)>,
    /// Every comment line as written (with its `;`, without the line end).
    pub comments: Vec<String>,
}

impl SwfHeader {
    /// The value of the first `key` line (keys are case-sensitive, as in
    /// the archive's format definition).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// `MaxNodes`, if present and a non-negative integer.
    pub fn max_nodes(&self) -> Option<u64> {
        self.number("MaxNodes")
    }

    /// `MaxProcs`, if present and a non-negative integer.
    pub fn max_procs(&self) -> Option<u64> {
        self.number("MaxProcs")
    }

    /// `MaxRecords` (the number of job lines), if present and a non-negative integer.
    pub fn max_records(&self) -> Option<u64> {
        self.number("MaxRecords")
    }

    /// `UnixStartTime` (the epoch second of submit time 0), if present and an integer.
    pub fn unix_start_time(&self) -> Option<i64> {
        self.number("UnixStartTime")
    }

    fn number<T: std::str::FromStr>(&self, key: &str) -> Option<T> {
        self.get(key)?.parse().ok()
    }

    /// Records one comment line (already known to start with `;`).
    fn push_comment(&mut self, line: &str) {
        self.comments.push(line.to_owned());
        let body = line.trim_start().trim_start_matches(';').trim_start();
        if let Some((key, value)) = body.split_once(':') {
            // A key is one word followed by ':' and a space or the line end;
            // this keeps "http://..." continuation lines from becoming keys.
            let is_word = !key.is_empty()
                && key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            let then_space = value.is_empty() || value.starts_with(char::is_whitespace);
            if is_word && then_space {
                self.fields.push((key.to_owned(), value.trim().to_owned()));
            }
        }
    }
}

/// One SWF job line, all 18 fields as written (`-1` means unknown).
///
/// Field numbers in the docs are the SWF ones (1-based).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SwfRecord {
    /// 1-based line number in the file (comments and blank lines count).
    pub line: u64,
    /// 1: job number.
    pub job_number: u64,
    /// 2: submit time, seconds since the trace's start.
    pub submit_time: i64,
    /// 3: wait time in the queue (s).
    pub wait_time: i64,
    /// 4: run time (s); `-1` for jobs that never ran.
    pub run_time: i64,
    /// 5: number of allocated processors.
    pub allocated_procs: i64,
    /// 6: average CPU time used per processor (s); fractional in real traces.
    pub avg_cpu_time: f64,
    /// 7: used memory (KB per processor); may be fractional.
    pub used_memory: f64,
    /// 8: requested number of processors.
    pub requested_procs: i64,
    /// 9: requested time (s), the user's runtime estimate.
    pub requested_time: i64,
    /// 10: requested memory (KB per processor).
    pub requested_memory: i64,
    /// 11: status (1 completed, 0 failed, 5 cancelled, ...).
    pub status: i64,
    /// 12: user id.
    pub user_id: i64,
    /// 13: group id.
    pub group_id: i64,
    /// 14: executable (application) number.
    pub executable: i64,
    /// 15: queue number.
    pub queue: i64,
    /// 16: partition number.
    pub partition: i64,
    /// 17: preceding job number.
    pub preceding_job: i64,
    /// 18: think time from the preceding job (s).
    pub think_time: i64,
}

/// Parses an integer field, accepting an all-zero fractional part.
fn parse_int(s: &str) -> Result<i64, FieldProblem> {
    if let Ok(v) = s.parse::<i64>() {
        return Ok(v);
    }
    if let Some((int, frac)) = s.split_once('.') {
        if !frac.is_empty() && frac.bytes().all(|b| b == b'0') {
            if let Ok(v) = int.parse::<i64>() {
                return Ok(v);
            }
        }
    }
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && s.contains('.') => Err(FieldProblem::NotIntegral),
        _ => Err(FieldProblem::InvalidNumber),
    }
}

fn parse_float(s: &str) -> Result<f64, FieldProblem> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        Ok(_) => Err(FieldProblem::NotFinite),
        Err(_) => Err(FieldProblem::InvalidNumber),
    }
}

/// Parses a (non-comment, non-blank) job line.
fn parse_record(file: &str, line: u64, text: &str) -> Result<SwfRecord, SwfError> {
    let mut raw = [""; SWF_FIELD_COUNT];
    let mut found = 0;
    for tok in text.split_ascii_whitespace() {
        if found < SWF_FIELD_COUNT {
            raw[found] = tok;
        }
        found += 1;
    }
    if found != SWF_FIELD_COUNT {
        return Err(SwfError::FieldCount {
            file: file.to_owned(),
            line,
            found,
        });
    }
    let err = |i: usize, problem| SwfError::Field {
        file: file.to_owned(),
        line,
        field: i + 1,
        name: SWF_FIELD_NAMES[i],
        problem,
        value: raw[i].to_owned(),
    };
    let int = |i: usize| parse_int(raw[i]).map_err(|p| err(i, p));
    let float = |i: usize| parse_float(raw[i]).map_err(|p| err(i, p));
    let job_number = int(0)?;
    let job_number = u64::try_from(job_number).map_err(|_| err(0, FieldProblem::Negative))?;
    let r = SwfRecord {
        line,
        job_number,
        submit_time: int(1)?,
        wait_time: int(2)?,
        run_time: int(3)?,
        allocated_procs: int(4)?,
        avg_cpu_time: float(5)?,
        used_memory: float(6)?,
        requested_procs: int(7)?,
        requested_time: int(8)?,
        requested_memory: int(9)?,
        status: int(10)?,
        user_id: int(11)?,
        group_id: int(12)?,
        executable: int(13)?,
        queue: int(14)?,
        partition: int(15)?,
        preceding_job: int(16)?,
        think_time: int(17)?,
    };
    // The ranges: -1 is the only negative value (unknown), and a job line
    // has a submit time; times and processor counts stay within what a
    // log can hold.
    for (i, v) in [(5, r.avg_cpu_time), (6, r.used_memory)] {
        if v < 0.0 && v != -1.0 {
            return Err(err(i, FieldProblem::BelowUnknown));
        }
    }
    let ints = [
        (1, r.submit_time),
        (2, r.wait_time),
        (3, r.run_time),
        (4, r.allocated_procs),
        (7, r.requested_procs),
        (8, r.requested_time),
        (9, r.requested_memory),
        (10, r.status),
        (11, r.user_id),
        (12, r.group_id),
        (13, r.executable),
        (14, r.queue),
        (15, r.partition),
        (16, r.preceding_job),
        (17, r.think_time),
    ];
    for (i, v) in ints {
        if v < -1 {
            return Err(err(i, FieldProblem::BelowUnknown));
        }
        if SECONDS_FIELDS.contains(&i) && v > MAX_SECONDS {
            return Err(err(i, FieldProblem::TooLarge("beyond 10^10 s (317 years)")));
        }
        if PROCESSOR_FIELDS.contains(&i) && v > MAX_PROCESSORS {
            return Err(err(i, FieldProblem::TooLarge("beyond 10^9 processors")));
        }
    }
    if r.submit_time < 0 {
        return Err(err(1, FieldProblem::NoSubmitTime));
    }
    Ok(r)
}

/// Streaming SWF reader: an iterator of job lines.
///
/// The header comments at the top are read when the reader is created, so
/// [`header`](Self::header) is complete before the first record is returned;
/// comment lines found later are appended to the same header as they are
/// passed. A malformed line yields an `Err` and iteration can go on with the
/// next line; a read error (I/O, corrupt gzip) yields one `Err` and ends the
/// iteration.
pub struct SwfReader {
    name: String,
    input: Box<dyn BufRead + Send>,
    compressed: bool,
    header: SwfHeader,
    /// Lines consumed so far (= the 1-based number of the last line read).
    line_no: u64,
    buf: Vec<u8>,
    /// The first job line, read while collecting the header.
    pending: Option<Result<SwfRecord, SwfError>>,
    done: bool,
    /// The last job line read whole: its line and submit time.
    last: Option<(u64, i64)>,
    /// The line of each job number read.
    seen: std::collections::HashMap<u64, u64>,
}

impl fmt::Debug for SwfReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SwfReader")
            .field("name", &self.name)
            .field("compressed", &self.compressed)
            .field("line", &self.line_no)
            .finish_non_exhaustive()
    }
}

impl SwfReader {
    /// Opens a trace file, plain or gzip-compressed. Compression is detected
    /// from the gzip magic bytes, not from the file name, so a misnamed file
    /// still reads. Error messages name the file as `path` displays.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, SwfError> {
        let path = path.as_ref();
        let name = path.display().to_string();
        match File::open(path) {
            Ok(file) => Self::from_reader(name, file),
            Err(cause) => Err(SwfError::Open { file: name, cause }),
        }
    }

    /// Reads a trace from any byte source (plain or gzip, detected as in
    /// [`open`](Self::open)); `name` stands for the file in error messages.
    pub fn from_reader(
        name: impl Into<String>,
        mut source: impl Read + Send + 'static,
    ) -> Result<Self, SwfError> {
        let name = name.into();
        let read_err = |cause| SwfError::Read {
            file: name.clone(),
            line: 1,
            cause,
        };
        // Peek at the first two bytes and put them back in front, so that
        // detection works on any `Read`, not only on seekable files.
        let mut magic = [0u8; 2];
        let mut got = 0;
        while got < magic.len() {
            match source.read(&mut magic[got..]) {
                Ok(0) => break,
                Ok(k) => got += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(read_err(e)),
            }
        }
        let compressed = got == 2 && magic == [0x1f, 0x8b];
        let whole = io::Cursor::new(magic).take(got as u64).chain(source);
        // Multi-member: concatenated gzip streams are one valid .gz file,
        // and a single-member decoder would silently stop after the first.
        let input: Box<dyn BufRead + Send> = if compressed {
            Box::new(BufReader::with_capacity(
                READ_BUFFER,
                MultiGzDecoder::new(whole),
            ))
        } else {
            Box::new(BufReader::with_capacity(READ_BUFFER, whole))
        };
        let mut reader = SwfReader {
            name,
            input,
            compressed,
            header: SwfHeader::default(),
            line_no: 0,
            buf: Vec::new(),
            pending: None,
            done: false,
            last: None,
            seen: std::collections::HashMap::new(),
        };
        match reader.advance() {
            // The header could not even be read: nothing useful to return.
            Some(Err(e @ SwfError::Read { .. })) => Err(e),
            first => {
                reader.pending = first;
                Ok(reader)
            }
        }
    }

    /// The name used for the file in error messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the input was gzip-compressed.
    pub fn is_compressed(&self) -> bool {
        self.compressed
    }

    /// The comment lines read so far: the whole top header from the start,
    /// plus any later comment lines already passed.
    pub fn header(&self) -> &SwfHeader {
        &self.header
    }

    /// Reads to the end and returns the header and the last `n` job lines in
    /// file order (fewer if the file has fewer). Only `n` records are held
    /// at any time. The first error of any kind is returned: a window of a
    /// trace with a malformed line in it is not trusted.
    pub fn into_last(mut self, n: usize) -> Result<(SwfHeader, Vec<SwfRecord>), SwfError> {
        let mut ring = VecDeque::with_capacity(n.min(MAX_PREALLOC));
        for rec in &mut self {
            let rec = rec?;
            if n == 0 {
                continue;
            }
            if ring.len() == n {
                ring.pop_front();
            }
            ring.push_back(rec);
        }
        Ok((self.header, ring.into()))
    }

    /// Reads up to the next job line, collecting comments on the way.
    fn advance(&mut self) -> Option<Result<SwfRecord, SwfError>> {
        while !self.done {
            self.buf.clear();
            match self.input.read_until(b'\n', &mut self.buf) {
                Ok(0) => self.done = true,
                Ok(_) => {
                    self.line_no += 1;
                    // The strict check first: it is much faster than the
                    // lossy decoder's chunking, and traces are ASCII.
                    let text = match std::str::from_utf8(&self.buf) {
                        Ok(t) => std::borrow::Cow::Borrowed(t),
                        Err(_) => String::from_utf8_lossy(&self.buf),
                    };
                    // A byte-order mark some editors put first.
                    let text = if self.line_no == 1 {
                        text.trim_start_matches('\u{feff}')
                    } else {
                        &text
                    };
                    let text = text.trim();
                    if text.is_empty() {
                        continue;
                    }
                    if text.starts_with(';') {
                        self.header.push_comment(text);
                        continue;
                    }
                    return Some(
                        parse_record(&self.name, self.line_no, text).and_then(|r| self.order(r)),
                    );
                }
                Err(cause) => {
                    self.done = true;
                    return Some(Err(SwfError::Read {
                        file: self.name.clone(),
                        line: self.line_no + 1,
                        cause,
                    }));
                }
            }
        }
        None
    }
}

impl SwfReader {
    /// Record `r`, read whole, if it keeps the file's order (submit times
    /// not decreasing) and its job number is new.
    fn order(&mut self, r: SwfRecord) -> Result<SwfRecord, SwfError> {
        if let Some((previous_line, previous_submit)) = self.last {
            if r.submit_time < previous_submit {
                return Err(SwfError::OutOfOrder {
                    file: self.name.clone(),
                    line: r.line,
                    submit: r.submit_time,
                    previous_line,
                    previous_submit,
                });
            }
        }
        if let Some(&first_line) = self.seen.get(&r.job_number) {
            return Err(SwfError::DuplicateJob {
                file: self.name.clone(),
                line: r.line,
                job: r.job_number,
                first_line,
            });
        }
        self.seen.insert(r.job_number, r.line);
        self.last = Some((r.line, r.submit_time));
        Ok(r)
    }
}

impl Iterator for SwfReader {
    type Item = Result<SwfRecord, SwfError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.pending.take() {
            Some(first) => Some(first),
            None => self.advance(),
        }
    }
}

/// The header and the last `n` job lines of the trace at `path`, in file
/// order, read in one streaming pass (see [`SwfReader::into_last`]).
pub fn read_last(
    path: impl AsRef<Path>,
    n: usize,
) -> Result<(SwfHeader, Vec<SwfRecord>), SwfError> {
    SwfReader::open(path)?.into_last(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::GzEncoder;
    use flate2::Compression;
    use std::io::Write;

    /// Two jobs under a small header; job 2 was cancelled before it started.
    const TEXT: &str = "\
; Version: 2.2
; Computer: Test box
; Acknowledge: someone
;   continuation line with a URL http://example.invalid/x
; MaxNodes: 8
; MaxProcs: 16
; MaxRecords: 2
; UnixStartTime: 893466664
; Queue:  0  interactive
; Queue:  1  batch
;
  1   10  5  100  4  95.25  1024.5  4  200  2048  1  7  3  9  1  2  -1  -1
  2   70 -1   -1 -1     -1     -1   8  600    -1  5  8  3  9  0  2   1  30
";

    fn reader(text: &str) -> SwfReader {
        SwfReader::from_reader("trace.swf", io::Cursor::new(text.as_bytes().to_vec())).unwrap()
    }

    fn all(text: &str) -> Vec<Result<SwfRecord, SwfError>> {
        reader(text).collect()
    }

    fn gzip(text: &str) -> Vec<u8> {
        let mut enc = GzEncoder::new(Vec::new(), Compression::default());
        enc.write_all(text.as_bytes()).unwrap();
        enc.finish().unwrap()
    }

    /// The error message of the only line of `line` (prefixed by nothing).
    fn error_of(line: &str) -> String {
        match all(line).pop() {
            Some(Err(e)) => e.to_string(),
            other => panic!("expected an error, got {other:?}"),
        }
    }

    /// A job line with field `i` (1-based) replaced by `value`.
    fn line_with(i: usize, value: &str) -> String {
        let mut fields = vec!["1"; SWF_FIELD_COUNT];
        fields[i - 1] = value;
        fields.join(" ")
    }

    #[test]
    fn header_is_read_before_the_first_record() {
        let r = reader(TEXT);
        let h = r.header();
        assert_eq!(h.comments.len(), 11);
        assert_eq!(
            h.comments[3],
            ";   continuation line with a URL http://example.invalid/x"
        );
        // The continuation line and the bare ";" are not keys.
        let keys: Vec<&str> = h.fields.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "Version",
                "Computer",
                "Acknowledge",
                "MaxNodes",
                "MaxProcs",
                "MaxRecords",
                "UnixStartTime",
                "Queue",
                "Queue"
            ]
        );
        assert_eq!(h.get("Computer"), Some("Test box"));
        assert_eq!(
            h.get("Queue"),
            Some("0  interactive"),
            "first of the repeats"
        );
        assert_eq!(h.fields[8].1, "1  batch");
        assert_eq!(h.max_nodes(), Some(8));
        assert_eq!(h.max_procs(), Some(16));
        assert_eq!(h.max_records(), Some(2));
        assert_eq!(h.unix_start_time(), Some(893_466_664));
        assert_eq!(h.get("MaxJobs"), None);
    }

    #[test]
    fn header_numbers_that_are_not_numbers_are_none() {
        let r = reader("; MaxNodes: many\n; MaxProcs:\n; UnixStartTime: -5\n");
        assert_eq!(r.header().get("MaxNodes"), Some("many"));
        assert_eq!(r.header().max_nodes(), None);
        assert_eq!(r.header().get("MaxProcs"), Some(""));
        assert_eq!(r.header().max_procs(), None);
        assert_eq!(r.header().unix_start_time(), Some(-5));
    }

    #[test]
    fn all_18_fields_are_read() {
        let recs: Vec<SwfRecord> = reader(TEXT).map(Result::unwrap).collect();
        assert_eq!(
            recs[0],
            SwfRecord {
                line: 12,
                job_number: 1,
                submit_time: 10,
                wait_time: 5,
                run_time: 100,
                allocated_procs: 4,
                avg_cpu_time: 95.25,
                used_memory: 1024.5,
                requested_procs: 4,
                requested_time: 200,
                requested_memory: 2048,
                status: 1,
                user_id: 7,
                group_id: 3,
                executable: 9,
                queue: 1,
                partition: 2,
                preceding_job: -1,
                think_time: -1,
            }
        );
        let r = &recs[1];
        assert_eq!((r.line, r.job_number, r.run_time), (13, 2, -1));
        assert_eq!((r.avg_cpu_time, r.used_memory), (-1.0, -1.0));
        assert_eq!((r.requested_procs, r.status), (8, 5));
        assert_eq!((r.queue, r.preceding_job, r.think_time), (0, 1, 30));
    }

    #[test]
    fn integer_fields_accept_only_a_zero_fraction() {
        let r = all(&line_with(4, "12.0")).pop().unwrap().unwrap();
        assert_eq!(r.run_time, 12);
        let r = all(&line_with(9, "-1.00")).pop().unwrap().unwrap();
        assert_eq!(r.requested_time, -1);
        assert_eq!(
            error_of(&line_with(4, "12.5")),
            "trace.swf:1: field 4 (run time): not an integer \"12.5\""
        );
        assert_eq!(
            error_of(&line_with(5, "1e3")),
            "trace.swf:1: field 5 (allocated processors): invalid number \"1e3\""
        );
        assert_eq!(
            error_of(&line_with(11, "1.")),
            "trace.swf:1: field 11 (status): not an integer \"1.\""
        );
    }

    #[test]
    fn fractional_fields_must_be_finite() {
        let r = all(&line_with(7, "3.5")).pop().unwrap().unwrap();
        assert_eq!(r.used_memory, 3.5);
        assert_eq!(
            error_of(&line_with(6, "NaN")),
            "trace.swf:1: field 6 (average CPU time): not a finite number \"NaN\""
        );
    }

    #[test]
    fn errors_name_file_line_and_field() {
        let text = format!("; Version: 2.2\n\n{}\n", line_with(4, "12x"));
        let err = all(&text).pop().unwrap().unwrap_err();
        assert_eq!(
            err.to_string(),
            "trace.swf:3: field 4 (run time): invalid number \"12x\""
        );
        match err {
            SwfError::Field {
                line,
                field,
                name,
                problem,
                ..
            } => assert_eq!(
                (line, field, name, problem),
                (3, 4, "run time", FieldProblem::InvalidNumber)
            ),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            error_of(&line_with(1, "-3")),
            "trace.swf:1: field 1 (job number): negative job number \"-3\""
        );
        assert_eq!(
            error_of(&line_with(18, "x")),
            "trace.swf:1: field 18 (think time): invalid number \"x\""
        );
    }

    #[test]
    fn values_out_of_the_formats_ranges_are_errors_naming_line_and_field() {
        assert_eq!(
            error_of(&line_with(4, "-50")),
            "trace.swf:1: field 4 (run time): negative (only -1, unknown, may be) \"-50\""
        );
        assert_eq!(
            error_of(&line_with(7, "-0.5")),
            "trace.swf:1: field 7 (used memory): negative (only -1, unknown, may be) \"-0.5\""
        );
        assert_eq!(
            error_of(&line_with(2, "-1")),
            "trace.swf:1: field 2 (submit time): unknown submit time (a job line needs one) \"-1\""
        );
        assert_eq!(
            error_of(&line_with(4, "9223372036854775807")),
            "trace.swf:1: field 4 (run time): beyond 10^10 s (317 years) \"9223372036854775807\""
        );
        assert_eq!(
            error_of(&line_with(8, "2000000000")),
            "trace.swf:1: field 8 (requested processors): beyond 10^9 processors \"2000000000\""
        );
        // The bounds themselves are taken, and -1 anywhere but field 2.
        for (i, v) in [(4, "10000000000"), (5, "1000000000"), (6, "-1"), (18, "-1")] {
            assert!(all(&line_with(i, v))[0].is_ok(), "field {i} = {v}");
        }
    }

    #[test]
    fn lines_out_of_submit_order_and_repeated_job_numbers_are_errors() {
        let job = |n: &str, submit: &str| {
            let mut f = vec!["1"; SWF_FIELD_COUNT];
            f[0] = n;
            f[1] = submit;
            f.join(" ")
        };
        let text = [job("1", "10"), job("2", "10"), job("3", "5")].join("\n");
        assert_eq!(
            all(&text).pop().unwrap().unwrap_err().to_string(),
            "trace.swf:3: submit time 5 is before line 2's 10 (SWF job lines are sorted by submit time)"
        );
        let text = format!("; c\n{}\n{}\n", job("7", "10"), job("7", "12"));
        assert_eq!(
            all(&text).pop().unwrap().unwrap_err().to_string(),
            "trace.swf:3: job number 7 is already line 2's (job numbers are unique)"
        );
        // A line in error does not become the reference: the next in order
        // is taken.
        let text = [job("1", "10"), job("2", "5"), job("3", "11")].join("\n");
        let r = all(&text);
        assert!(r[0].is_ok() && r[1].is_err() && r[2].is_ok(), "{r:?}");
    }

    #[test]
    fn a_byte_order_mark_before_the_header_is_skipped() {
        let text = format!("\u{feff}; Version: 2.2\n{}\n", line_with(1, "1"));
        let r = reader(&text);
        assert_eq!(r.header().fields, vec![("Version".into(), "2.2".into())]);
        assert_eq!(r.count(), 1);
    }

    #[test]
    fn wrong_field_count() {
        let short = vec!["1"; 17].join(" ");
        assert_eq!(
            error_of(&short),
            "trace.swf:1: expected 18 fields, found 17"
        );
        let long = format!("{} 1", line_with(1, "1"));
        assert!(matches!(
            all(&long).pop().unwrap(),
            Err(SwfError::FieldCount {
                line: 1,
                found: 19,
                ..
            })
        ));
    }

    #[test]
    fn blank_lines_crlf_trailing_space_and_late_comments() {
        let text = format!(
            "; MaxNodes: 4\r\n\r\n{}   \t\r\n   \n; Note: a late comment\n{}\n",
            line_with(1, "5"),
            line_with(1, "6")
        );
        let mut r = reader(&text);
        assert_eq!(r.header().comments.len(), 1);
        let a = r.next().unwrap().unwrap();
        let b = r.next().unwrap().unwrap();
        assert!(r.next().is_none());
        assert_eq!((a.job_number, a.line, a.think_time), (5, 3, 1));
        assert_eq!((b.job_number, b.line), (6, 6));
        assert_eq!(r.header().max_nodes(), Some(4));
        assert_eq!(r.header().get("Note"), Some("a late comment"));
        assert_eq!(r.header().comments.len(), 2);
    }

    #[test]
    fn iteration_goes_on_after_a_malformed_line() {
        let text = format!("{}\n1 2 3\n{}\n", line_with(1, "1"), line_with(1, "3"));
        let got = all(&text);
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].as_ref().unwrap().job_number, 1);
        assert!(matches!(
            got[1],
            Err(SwfError::FieldCount {
                line: 2,
                found: 3,
                ..
            })
        ));
        assert_eq!(got[2].as_ref().unwrap().job_number, 3);
    }

    #[test]
    fn empty_input() {
        let mut r = reader("");
        assert_eq!(r.header(), &SwfHeader::default());
        assert!(r.next().is_none());
        assert!(r.next().is_none());
    }

    #[test]
    fn gzip_is_detected_by_its_magic_bytes() {
        let plain = reader(TEXT);
        assert!(!plain.is_compressed());
        let gz = SwfReader::from_reader("trace.swf.gz", io::Cursor::new(gzip(TEXT))).unwrap();
        assert!(gz.is_compressed());
        assert_eq!(gz.header(), plain.header());
        let a: Vec<SwfRecord> = plain.map(Result::unwrap).collect();
        let b: Vec<SwfRecord> = gz.map(Result::unwrap).collect();
        assert_eq!(a, b);
        assert_eq!(b.len(), 2);
    }

    #[test]
    fn concatenated_gzip_members_are_one_stream() {
        let (head, tail) = TEXT.split_at(TEXT.find("  2   70").unwrap());
        let mut bytes = gzip(head);
        bytes.extend(gzip(tail));
        let r = SwfReader::from_reader("two.gz", io::Cursor::new(bytes)).unwrap();
        let ids: Vec<u64> = r.map(|r| r.unwrap().job_number).collect();
        assert_eq!(ids, [1, 2]);
    }

    #[test]
    fn a_corrupt_gzip_stream_is_a_read_error_that_ends_iteration() {
        let mut bytes = gzip(TEXT);
        let n = bytes.len();
        bytes[n / 2..].iter_mut().for_each(|b| *b = !*b);
        let got: Vec<_> = match SwfReader::from_reader("bad.swf.gz", io::Cursor::new(bytes)) {
            Ok(r) => r.collect(),
            Err(e) => vec![Err(e)],
        };
        let last = got.last().expect("an error");
        match last {
            Err(e @ SwfError::Read { .. }) => assert!(e.to_string().starts_with("bad.swf.gz:")),
            other => panic!("expected a read error, got {other:?}"),
        }
    }

    /// A file in the system temp dir, removed when dropped.
    struct TempFile(std::path::PathBuf);

    impl TempFile {
        fn new(name: &str, bytes: &[u8]) -> Self {
            let path =
                std::env::temp_dir().join(format!("libratory-swf-{}-{name}", std::process::id()));
            std::fs::write(&path, bytes).unwrap();
            TempFile(path)
        }
    }

    impl Drop for TempFile {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    #[test]
    fn open_detects_compression_by_content_not_name() {
        let gz_named_swf = TempFile::new("really-gz.swf", &gzip(TEXT));
        let plain_named_gz = TempFile::new("really-plain.swf.gz", TEXT.as_bytes());
        let a = SwfReader::open(&gz_named_swf.0).unwrap();
        let b = SwfReader::open(&plain_named_gz.0).unwrap();
        assert!(a.is_compressed());
        assert!(!b.is_compressed());
        assert_eq!(a.name(), gz_named_swf.0.display().to_string());
        assert_eq!(a.count(), 2);
        assert_eq!(b.count(), 2);
        let (h, recs) = read_last(&gz_named_swf.0, 1).unwrap();
        assert_eq!(h.max_records(), Some(2));
        assert_eq!(recs[0].job_number, 2);
    }

    #[test]
    fn open_names_a_missing_file() {
        let err = SwfReader::open("/nonexistent/dir/trace.swf").unwrap_err();
        assert!(matches!(err, SwfError::Open { .. }));
        assert!(err
            .to_string()
            .starts_with("/nonexistent/dir/trace.swf: cannot open: "));
    }

    #[test]
    fn last_n_keeps_the_tail_in_file_order() {
        let text: String = (1..=5)
            .map(|i| line_with(1, &i.to_string()) + "\n")
            .collect();
        let text = format!("; MaxRecords: 5\n{text}; Note: trailer\n");
        let ids = |n| {
            let (h, recs) = reader(&text).into_last(n).unwrap();
            assert_eq!(h.comments.len(), 2, "late comments are collected too");
            recs.iter().map(|r| r.job_number).collect::<Vec<_>>()
        };
        assert_eq!(ids(0), Vec::<u64>::new());
        assert_eq!(ids(1), [5]);
        assert_eq!(ids(3), [3, 4, 5]);
        assert_eq!(ids(5), [1, 2, 3, 4, 5]);
        assert_eq!(ids(usize::MAX), [1, 2, 3, 4, 5]);
    }

    #[test]
    fn last_n_fails_on_any_malformed_line() {
        let text = format!("{}\n{}\n", line_with(1, "1"), line_with(3, "?"));
        let err = reader(&text).into_last(1).unwrap_err();
        assert_eq!(
            err.to_string(),
            "trace.swf:2: field 3 (wait time): invalid number \"?\""
        );
    }
}
