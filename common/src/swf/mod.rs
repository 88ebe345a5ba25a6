//! Standard Workload Format (SWF): the reader (`reader`) and the
//! statistics of a window of records (`stats`).
//!
//! What it is for: reading Parallel Workloads Archive traces (`.swf`, or
//! gzip-compressed `.swf.gz`) line by line into [`SwfRecord`]s that keep all
//! 18 SWF fields as they are written, keeping the `;` header, taking the last
//! N job lines of a trace ([`read_last`]) and summarising a window of records
//! ([`WindowStats`]) with exactly the conventions of
//! `shared/traces/README.md`, so that our numbers can be checked against the
//! published ones.
//!
//! What it is not: it does not turn records into jobs. It drops, clamps and
//! repairs nothing: a `-1` (unknown) stays `-1`, a cancelled job stays in the
//! stream, and deciding what a never-started job means is the workload
//! builder's business. It never reads a whole trace into memory either; the
//! traces are tens of megabytes once decompressed and only a window is kept.
//!
//! Parsing rules, decided here once:
//! - A job line has exactly 18 whitespace-separated fields; leading and
//!   trailing whitespace (including a `\r` of CRLF files) is ignored.
//! - Integer fields must be integers. Because some converters print integers
//!   as `12.0`, a value whose fractional part is all zeros (`12.0`, `-1.00`)
//!   is accepted as that integer; `12.5` is an error ([`FieldProblem::NotIntegral`]).
//! - Fields 6 (average CPU time) and 7 (used memory) are fractional in real
//!   traces (e.g. `40.25`) and are read as `f64`; they must be finite.
//! - Lines starting with `;` are comments, wherever they appear; blank lines
//!   are skipped. Both still count for line numbers.
//! - -1 is the only negative value (unknown), never in field 2 (a job line
//!   needs its submit time); times above 10^10 s and processor counts
//!   above 10^9 are errors; job lines are in submit-time order with unique
//!   job numbers (the format's own rules), each checked as the line is read.
//! - Bytes that are not UTF-8 are replaced (lossy decoding): the archive's
//!   traces are ASCII, and a stray byte in a comment should not make a trace
//!   unreadable. In a job line it makes that field an invalid number.

mod reader;
mod stats;

pub use reader::{
    read_last, FieldProblem, SwfError, SwfHeader, SwfReader, SwfRecord, SWF_FIELD_COUNT,
    SWF_FIELD_NAMES,
};
pub use stats::WindowStats;
