//! Result file formats: `summary.json`, the per-job CSV and JSON lines of
//! each policy, the Batsim-style `out_jobs` CSV, the executed schedule as
//! SWF, and the comparison table printed at the end of a run. The formats
//! are described in docs/output-formats.md; keep the two in step.
//!
//! Not here: which files a run directory holds and the manifest (see
//! `rundir`).

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use common::job::{DeadlineType, Urgency};
use common::metrics::{JobRecord, Summary};
use common::Time;
use serde::Serialize;

use crate::results::num;

/// Writes `value` as pretty JSON to `path` (newline-terminated).
pub fn write_json(path: &Path, value: &impl Serialize) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// Writes `text` to `path` in one call.
fn write_file(path: &Path, text: impl AsRef<[u8]>) -> Result<()> {
    fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// Creates `path` and lets `write` fill it; errors name the file.
fn write_with(path: &Path, write: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<()> {
    let mut f = fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    write(&mut f).with_context(|| format!("writing {}", path.display()))
}

/// The large files are formatted into a buffer of about this size that is
/// handed to the file whenever it is full: its pages stay mapped and in
/// cache, where formatting a whole file first touched megabytes of fresh
/// memory (a page fault every 4 kB, ~1,300 per run of the SDSC window).
const CHUNK: usize = 1 << 16;

/// Hands `buf` to `out` once it holds a chunk.
fn spill(out: &mut dyn Write, buf: &mut Vec<u8>) -> std::io::Result<()> {
    if buf.len() >= CHUNK {
        out.write_all(buf)?;
        buf.clear();
    }
    Ok(())
}

/// [`spill`] for text.
fn spill_text(out: &mut dyn Write, buf: &mut String) -> std::io::Result<()> {
    if buf.len() >= CHUNK {
        out.write_all(buf.as_bytes())?;
        buf.clear();
    }
    Ok(())
}

/// Runs a chunked writer into memory.
fn in_memory(write: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<Vec<u8>> {
    let mut v = Vec::new();
    write(&mut v)?;
    Ok(v)
}

/// Bytes per job line to reserve up front (the lines are 150-450 bytes):
/// one allocation per file instead of a few dozen growths.
const LINE_GUESS: usize = 320;

/// Lowercase name of a deadline type (its `Debug` name, lowercased).
fn deadline_type_name(t: DeadlineType) -> &'static str {
    match t {
        DeadlineType::Hard => "hard",
        DeadlineType::Soft => "soft",
    }
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
    write_jobs_csv_with(path, records, None)
}

/// [`write_jobs_csv`] with the rows' leading fields from `heads`.
pub fn write_jobs_csv_with(
    path: &Path,
    records: &[JobRecord],
    heads: Option<&JobHeads>,
) -> Result<()> {
    write_with(path, |f| jobs_csv_with(f, records, heads))
}

/// What a record's leading fields are formatted from: the job as the
/// workload gave it (id to deadline type), bit for bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct HeadKey {
    id: u64,
    class: Option<Urgency>,
    times: [u64; 6],
    processors: u32,
    deadline_type: DeadlineType,
}

impl HeadKey {
    fn of(r: &JobRecord) -> HeadKey {
        HeadKey {
            id: r.id,
            class: r.class,
            times: [
                r.submit.to_bits(),
                r.estimate.to_bits(),
                r.actual.to_bits(),
                r.deadline.to_bits(),
                r.budget.to_bits(),
                r.penalty_rate.to_bits(),
            ],
            processors: r.processors,
            deadline_type: r.deadline_type,
        }
    }
}

/// The leading fields of every job's row in `jobs-<policy>.csv` and line
/// in `jobs-<policy>.jsonl` (`job_id` to `deadline_type`): what the
/// workload fixes, the same for every policy, so they can be formatted
/// while the simulation runs rather than after it. Each is used only for
/// a record whose fields are bit for bit those it was formatted from; any
/// other record's are formatted on the spot, so the files never depend on
/// whether heads were given.
#[derive(Debug, Default)]
pub struct JobHeads {
    keys: Vec<HeadKey>,
    csv: String,
    csv_ends: Vec<usize>,
    jsonl: Vec<u8>,
    jsonl_ends: Vec<usize>,
}

impl JobHeads {
    /// The heads of `records` (e.g. each workload job's record before it
    /// ran, [`JobRecord::new`]), in order: head `k` serves row `k`.
    pub fn of<'a>(records: impl ExactSizeIterator<Item = &'a JobRecord>) -> JobHeads {
        let n = records.len();
        let mut h = JobHeads {
            keys: Vec::with_capacity(n),
            csv: String::with_capacity(n * 64),
            csv_ends: Vec::with_capacity(n),
            jsonl: Vec::with_capacity(n * 192),
            jsonl_ends: Vec::with_capacity(n),
        };
        for r in records {
            h.keys.push(HeadKey::of(r));
            jobs_csv_head(&mut h.csv, r);
            h.csv_ends.push(h.csv.len());
            jobs_jsonl_head(&mut h.jsonl, r);
            h.jsonl_ends.push(h.jsonl.len());
        }
        h
    }

    /// Whether head `k` was formatted from fields equal to `r`'s.
    fn serves(&self, k: usize, r: &JobRecord) -> bool {
        self.keys.get(k) == Some(&HeadKey::of(r))
    }

    fn csv(&self, k: usize, r: &JobRecord) -> Option<&str> {
        let start = if k == 0 { 0 } else { self.csv_ends[k - 1] };
        self.serves(k, r)
            .then(|| &self.csv[start..self.csv_ends[k]])
    }

    fn jsonl(&self, k: usize, r: &JobRecord) -> Option<&[u8]> {
        let start = if k == 0 { 0 } else { self.jsonl_ends[k - 1] };
        self.serves(k, r)
            .then(|| &self.jsonl[start..self.jsonl_ends[k]])
    }
}

/// The per-job CSV as bytes, formatted straight into one buffer: numbers
/// as `Display` prints them (see `num`), text quoted as the `csv` crate
/// quotes it (see [`push_csv_field`]).
pub fn jobs_csv(records: &[JobRecord]) -> Result<Vec<u8>> {
    in_memory(|out| jobs_csv_to(out, records))
}

/// [`jobs_csv`] into `out`, a chunk at a time.
pub fn jobs_csv_to(out: &mut dyn Write, records: &[JobRecord]) -> Result<()> {
    jobs_csv_with(out, records, None)
}

/// The fields of a row of `jobs-<policy>.csv` that the workload fixes
/// (`job_id` to `deadline_type`), each followed by its comma.
fn jobs_csv_head(t: &mut String, r: &JobRecord) {
    macro_rules! f64s {
        ($($v:expr),*) => {{ $(num::push_f64(t, $v); t.push(',');)* }};
    }
    macro_rules! texts {
        ($($v:expr),*) => {{ $(t.push_str($v); t.push(',');)* }};
    }
    num::push_int(t, r.id);
    t.push(',');
    texts!(r.class.map_or("", Urgency::name));
    f64s!(r.submit, r.estimate, r.actual);
    num::push_int(t, r.processors);
    t.push(',');
    f64s!(r.deadline, r.deadline_abs());
    if r.budget.is_finite() {
        f64s!(r.budget);
    } else {
        texts!("unlimited");
    }
    f64s!(r.penalty_rate);
    texts!(deadline_type_name(r.deadline_type));
}

/// [`jobs_csv_to`] with the rows' leading fields taken from `heads` where
/// it has them for the record.
pub fn jobs_csv_with(
    out: &mut dyn Write,
    records: &[JobRecord],
    heads: Option<&JobHeads>,
) -> Result<()> {
    let mut t = String::with_capacity(CHUNK + 4 * LINE_GUESS);
    t.push_str(&JOB_COLUMNS.join(","));
    t.push('\n');
    let flag = |b: bool| if b { "true" } else { "false" };
    for (k, r) in records.iter().enumerate() {
        let t = &mut t;
        // Every field is followed by a comma but the last.
        macro_rules! f64s {
            ($($v:expr),*) => {{ $(num::push_f64(t, $v); t.push(',');)* }};
        }
        macro_rules! texts {
            ($($v:expr),*) => {{ $(t.push_str($v); t.push(',');)* }};
        }
        match heads.and_then(|h| h.csv(k, r)) {
            Some(head) => t.push_str(head),
            None => jobs_csv_head(t, r),
        }
        texts!(flag(r.accepted), r.reason.map_or("", |x| x.name()));
        f64s!(r.decided_at);
        for (k, n) in r.nodes.iter().enumerate() {
            if k > 0 {
                t.push(' ');
            }
            num::push_int(t, *n);
        }
        t.push(',');
        num::push_opt_f64(t, r.start);
        t.push(',');
        num::push_opt_f64(t, r.finish);
        t.push(',');
        texts!(flag(r.met()), flag(r.qos_satisfied()));
        f64s!(r.delay(), r.cost, r.utility());
        num::push_opt_f64(t, r.slowdown());
        t.push(',');
        texts!(flag(r.lost));
        push_csv_field(t, &r.detail);
        t.push('\n');
        spill_text(out, t)?;
    }
    out.write_all(t.as_bytes())?;
    Ok(())
}

/// Appends a text field as the `csv` crate's default writer does: in
/// double quotes, inner quotes doubled, when it holds a comma, a quote,
/// `\r` or `\n`; as it is otherwise. (The other text fields are names
/// that never need quotes.)
pub fn push_csv_field(out: &mut String, field: &str) {
    if field.contains([',', '"', '\r', '\n']) {
        out.push('"');
        for (k, part) in field.split('"').enumerate() {
            if k > 0 {
                out.push_str("\"\"");
            }
            out.push_str(part);
        }
        out.push('"');
    } else {
        out.push_str(field);
    }
}

/// Writes one JSON object per job and line, in arrival order: every field
/// of the record plus the derived ones (deadline_abs, met, qos_satisfied,
/// delay, utility, slowdown).
pub fn write_jobs_jsonl(path: &Path, records: &[JobRecord]) -> Result<()> {
    write_jobs_jsonl_with(path, records, None)
}

/// [`write_jobs_jsonl`] with the lines' leading fields from `heads`.
pub fn write_jobs_jsonl_with(
    path: &Path,
    records: &[JobRecord],
    heads: Option<&JobHeads>,
) -> Result<()> {
    write_with(path, |f| jobs_jsonl_with(f, records, heads))
}

/// The JSON lines as bytes: the record's fields in declaration order, as
/// serde writes the record, then the derived fields (byte for byte what a
/// `#[serde(flatten)]` wrapper gives). Written field by field into one
/// buffer; the numbers and the free text still go through `serde_json`
/// (its float format and its string escaping), the keys and names do not
/// (they need no escaping). A test checks it against serde's own output.
pub fn jobs_jsonl(records: &[JobRecord]) -> Result<Vec<u8>> {
    in_memory(|out| jobs_jsonl_to(out, records))
}

/// [`jobs_jsonl`] into `sink`, a chunk at a time.
pub fn jobs_jsonl_to(sink: &mut dyn Write, records: &[JobRecord]) -> Result<()> {
    jobs_jsonl_with(sink, records, None)
}

/// `serde_json`'s text of a name (`None`: `null`); names need no escaping.
fn json_name(out: &mut Vec<u8>, n: Option<&str>) {
    match n {
        Some(n) => {
            out.push(b'"');
            out.extend_from_slice(n.as_bytes());
            out.push(b'"');
        }
        None => out.extend_from_slice(b"null"),
    }
}

/// The fields of a line of `jobs-<policy>.jsonl` that the workload fixes
/// (from the opening brace to `deadline_type`).
fn jobs_jsonl_head(o: &mut Vec<u8>, r: &JobRecord) {
    let mut int = itoa::Buffer::new();
    o.extend_from_slice(b"{\"id\":");
    o.extend_from_slice(int.format(r.id).as_bytes());
    o.extend_from_slice(b",\"class\":");
    json_name(o, r.class.map(Urgency::name));
    o.extend_from_slice(b",\"submit\":");
    num::push_json_f64(o, r.submit);
    o.extend_from_slice(b",\"estimate\":");
    num::push_json_f64(o, r.estimate);
    o.extend_from_slice(b",\"actual\":");
    num::push_json_f64(o, r.actual);
    o.extend_from_slice(b",\"processors\":");
    o.extend_from_slice(int.format(r.processors).as_bytes());
    o.extend_from_slice(b",\"deadline\":");
    num::push_json_f64(o, r.deadline);
    o.extend_from_slice(b",\"budget\":");
    if r.budget == f64::INFINITY {
        o.extend_from_slice(b"\"unlimited\"");
    } else {
        num::push_json_f64(o, r.budget);
    }
    o.extend_from_slice(b",\"penalty_rate\":");
    num::push_json_f64(o, r.penalty_rate);
    o.extend_from_slice(b",\"deadline_type\":");
    json_name(o, Some(deadline_type_name(r.deadline_type)));
}

/// `serde_json`'s text of a record, `{` to `}`: what the run journal's
/// lines carry, written by hand (the journal's writer formats every event
/// of a live run; serde took most of its thread at 10,000 jobs/s).
pub fn push_record_json(o: &mut Vec<u8>, r: &JobRecord) {
    jobs_jsonl_head(o, r);
    record_json_rest(o, r);
    o.push(b'}');
}

/// A record's fields after `deadline_type`, up to `lost`, as `serde_json`
/// writes them (no closing brace).
fn record_json_rest(o: &mut Vec<u8>, r: &JobRecord) {
    let flag = |b: bool| if b { &b"true"[..] } else { &b"false"[..] };
    let opt = |o: &mut Vec<u8>, x: Option<f64>| match x {
        Some(x) => num::push_json_f64(o, x),
        None => o.extend_from_slice(b"null"),
    };
    let mut int = itoa::Buffer::new();
    o.extend_from_slice(b",\"accepted\":");
    o.extend_from_slice(flag(r.accepted));
    o.extend_from_slice(b",\"reason\":");
    json_name(o, r.reason.map(|x| x.name()));
    o.extend_from_slice(b",\"detail\":");
    serde_json::to_writer(&mut *o, &r.detail).expect("a string serializes into memory");
    o.extend_from_slice(b",\"decided_at\":");
    num::push_json_f64(o, r.decided_at);
    o.extend_from_slice(b",\"nodes\":[");
    for (k, n) in r.nodes.iter().enumerate() {
        if k > 0 {
            o.push(b',');
        }
        o.extend_from_slice(int.format(*n).as_bytes());
    }
    o.extend_from_slice(b"],\"start\":");
    opt(o, r.start);
    o.extend_from_slice(b",\"finish\":");
    opt(o, r.finish);
    o.extend_from_slice(b",\"cost\":");
    num::push_json_f64(o, r.cost);
    o.extend_from_slice(b",\"lost\":");
    o.extend_from_slice(flag(r.lost));
}

/// [`jobs_jsonl_to`] with the lines' leading fields taken from `heads`
/// where it has them for the record.
pub fn jobs_jsonl_with(
    sink: &mut dyn Write,
    records: &[JobRecord],
    heads: Option<&JobHeads>,
) -> Result<()> {
    let mut out = Vec::with_capacity(CHUNK + 4 * (LINE_GUESS + 128));
    // `serde_json`'s number: shortest round-trip text, `.0` on integral
    // values, `null` for NaN and infinities.
    fn f64_(out: &mut Vec<u8>, x: f64) -> Result<()> {
        num::push_json_f64(out, x);
        Ok(())
    }
    fn opt(out: &mut Vec<u8>, x: Option<f64>) -> Result<()> {
        match x {
            Some(x) => f64_(out, x),
            None => {
                out.extend_from_slice(b"null");
                Ok(())
            }
        }
    }
    let flag = |b: bool| if b { &b"true"[..] } else { &b"false"[..] };
    for (k, r) in records.iter().enumerate() {
        let o = &mut out;
        match heads.and_then(|h| h.jsonl(k, r)) {
            Some(head) => o.extend_from_slice(head),
            None => jobs_jsonl_head(o, r),
        }
        record_json_rest(o, r);
        o.extend_from_slice(b",\"deadline_abs\":");
        f64_(o, r.deadline_abs())?;
        o.extend_from_slice(b",\"met\":");
        o.extend_from_slice(flag(r.met()));
        o.extend_from_slice(b",\"qos_satisfied\":");
        o.extend_from_slice(flag(r.qos_satisfied()));
        o.extend_from_slice(b",\"delay\":");
        f64_(o, r.delay())?;
        o.extend_from_slice(b",\"utility\":");
        f64_(o, r.utility())?;
        o.extend_from_slice(b",\"slowdown\":");
        opt(o, r.slowdown())?;
        o.extend_from_slice(b"}\n");
        spill(sink, o)?;
    }
    sink.write_all(&out)?;
    Ok(())
}

/// Reads `jobs-<policy>.jsonl` back into records (the derived fields are
/// ignored: they are recomputed from the record).
pub fn read_jobs_jsonl(path: &Path) -> Result<Vec<JobRecord>> {
    let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    parse_jobs_jsonl(&text, &path.display().to_string())
}

/// [`jobs_jsonl`]'s lines back into records; errors name `source` and the
/// line.
pub fn parse_jobs_jsonl(text: &str, source: &str) -> Result<Vec<JobRecord>> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(k, l)| {
            serde_json::from_str(l)
                .with_context(|| format!("{source}: line {}: not a job record", k + 1))
        })
        .collect()
}

/// Reads `jobs-<policy>.csv` back into records (columns by name, see
/// docs/output-formats.md).
pub fn read_jobs_csv(path: &Path) -> Result<Vec<JobRecord>> {
    let file = fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    parse_jobs_csv(file, &path.display().to_string())
}

/// The columns [`parse_jobs_csv`] needs: the record's own fields (the
/// other columns of [`JOB_COLUMNS`] are derived from them).
const RECORD_COLUMNS: &[&str] = &[
    "job_id",
    "class",
    "submit",
    "estimate",
    "actual",
    "processors",
    "deadline",
    "budget",
    "penalty_rate",
    "deadline_type",
    "accepted",
    "reason",
    "decided_at",
    "nodes",
    "start",
    "finish",
    "cost",
    "lost",
    "detail",
];

/// [`jobs_csv`]'s bytes back into records; errors name `source`, the line
/// and the column. Exact: the writer prints numbers with `Display`, the
/// shortest text that parses back to the same `f64`.
pub fn parse_jobs_csv(input: impl std::io::Read, source: &str) -> Result<Vec<JobRecord>> {
    let mut r = csv::Reader::from_reader(input);
    let headers = r
        .headers()
        .with_context(|| format!("{source}: no header"))?
        .clone();
    let col = |name: &str| -> Result<usize> {
        headers
            .iter()
            .position(|h| h == name)
            .with_context(|| format!("{source}: no column '{name}'"))
    };
    let idx: HashMap<&str, usize> = RECORD_COLUMNS
        .iter()
        .map(|n| col(n).map(|k| (*n, k)))
        .collect::<Result<_>>()?;
    let mut out = Vec::new();
    for (k, row) in r.records().enumerate() {
        let line = k + 2;
        let row = row.with_context(|| format!("{source}: line {line}"))?;
        let get = |n: &str| row.get(idx[n]).unwrap_or("");
        let num = |n: &str| -> Result<f64> {
            get(n).parse::<f64>().with_context(|| {
                format!(
                    "{source}: line {line}, column {n}: '{}' is not a number",
                    get(n)
                )
            })
        };
        let opt = |n: &str| -> Result<Option<f64>> {
            if get(n).is_empty() {
                Ok(None)
            } else {
                num(n).map(Some)
            }
        };
        let named = |n: &str| -> Result<Option<serde_json::Value>> {
            Ok((!get(n).is_empty()).then(|| serde_json::Value::String(get(n).to_string())))
        };
        let bad = |n: &str| {
            format!(
                "{source}: line {line}, column {n}: unknown value '{}'",
                get(n)
            )
        };
        let class = match named("class")? {
            Some(v) => Some(serde_json::from_value(v).with_context(|| bad("class"))?),
            None => None,
        };
        let reason = match named("reason")? {
            Some(v) => Some(serde_json::from_value(v).with_context(|| bad("reason"))?),
            None => None,
        };
        let deadline_type =
            serde_json::from_value(serde_json::Value::String(get("deadline_type").to_string()))
                .with_context(|| bad("deadline_type"))?;
        let budget = match get("budget") {
            "unlimited" => f64::INFINITY,
            _ => num("budget")?,
        };
        let nodes = get("nodes")
            .split_whitespace()
            .map(|n| n.parse::<usize>().with_context(|| bad("nodes")))
            .collect::<Result<Vec<_>>>()?;
        out.push(JobRecord {
            id: get("job_id").parse().with_context(|| bad("job_id"))?,
            class,
            submit: num("submit")?,
            estimate: num("estimate")?,
            actual: num("actual")?,
            processors: get("processors")
                .parse()
                .with_context(|| bad("processors"))?,
            deadline: num("deadline")?,
            budget,
            penalty_rate: num("penalty_rate")?,
            deadline_type,
            accepted: get("accepted") == "true",
            reason,
            detail: get("detail").to_string(),
            decided_at: num("decided_at")?,
            nodes,
            start: opt("start")?,
            finish: opt("finish")?,
            cost: num("cost")?,
            lost: get("lost") == "true",
        });
    }
    Ok(out)
}

#[cfg(test)]
mod jobs_file_round_trip {
    use common::job::{DeadlineType, Urgency};
    use common::metrics::JobRecord;
    use common::policy::RejectReason;

    use super::RECORD_COLUMNS;
    use super::{jobs_csv, parse_jobs_csv, JOB_COLUMNS};

    /// Records covering every field's shapes: classes and none, unlimited
    /// and finite budgets, every reject reason, empty and several nodes,
    /// unfinished jobs, text that needs quoting, and floats whose shortest
    /// text is long (0.1 + 0.2, 1/3, tiny and huge magnitudes).
    fn records() -> Vec<JobRecord> {
        let mut out = Vec::new();
        for (k, reason) in std::iter::once(None)
            .chain(RejectReason::ALL.into_iter().map(Some))
            .enumerate()
        {
            let k64 = k as f64;
            let accepted = reason.is_none();
            out.push(JobRecord {
                id: 1000 + k as u64,
                class: [None, Some(Urgency::High), Some(Urgency::Low)][k % 3],
                submit: 0.1 + 0.2 + k64,
                estimate: 1.0 / 3.0 * (k64 + 1.0),
                actual: 7.25e-7 + k64,
                processors: 1 + k as u32 * 5,
                deadline: 86_400.0 * 365.0 + k64 / 7.0,
                budget: if k % 2 == 0 {
                    f64::INFINITY
                } else {
                    1.5e12 / (k64 + 1.0)
                },
                penalty_rate: 0.0,
                deadline_type: if k % 2 == 0 {
                    DeadlineType::Hard
                } else {
                    DeadlineType::Soft
                },
                accepted,
                reason,
                detail: if accepted {
                    String::new()
                } else {
                    format!("needs \"{k}\" nodes, has 0, see: a,b\nsecond line")
                },
                decided_at: 0.1 * k64,
                nodes: (0..k).map(|n| n * 3).collect(),
                start: accepted.then_some(12.000_000_000_1),
                finish: (k == 0).then_some(f64::MAX / 3.0),
                cost: -0.0 + k64 * std::f64::consts::PI,
                lost: k == 3,
            });
        }
        out
    }

    /// The per-job CSV as the `csv` crate writes it, every number through
    /// `format!("{}")`: what [`jobs_csv`] must give byte for byte.
    fn jobs_csv_reference(records: &[JobRecord]) -> Vec<u8> {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(JOB_COLUMNS).unwrap();
        let opt = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x}"));
        for r in records {
            let nodes: Vec<String> = r.nodes.iter().map(|n| format!("{n}")).collect();
            w.write_record([
                format!("{}", r.id),
                r.class.map_or("", Urgency::name).to_string(),
                format!("{}", r.submit),
                format!("{}", r.estimate),
                format!("{}", r.actual),
                format!("{}", r.processors),
                format!("{}", r.deadline),
                format!("{}", r.deadline_abs()),
                if r.budget.is_finite() {
                    format!("{}", r.budget)
                } else {
                    "unlimited".into()
                },
                format!("{}", r.penalty_rate),
                format!("{:?}", r.deadline_type).to_lowercase(),
                format!("{}", r.accepted),
                r.reason.map_or("", |x| x.name()).to_string(),
                format!("{}", r.decided_at),
                nodes.join(" "),
                opt(r.start),
                opt(r.finish),
                format!("{}", r.met()),
                format!("{}", r.qos_satisfied()),
                format!("{}", r.delay()),
                format!("{}", r.cost),
                format!("{}", r.utility()),
                opt(r.slowdown()),
                format!("{}", r.lost),
                r.detail.clone(),
            ])
            .unwrap();
        }
        w.into_inner().unwrap()
    }

    /// The JSON lines as serde writes them: the record, its closing brace
    /// replaced by the derived fields. What [`jobs_jsonl`] must give.
    fn jobs_jsonl_reference(records: &[JobRecord]) -> Vec<u8> {
        let mut out = Vec::new();
        for r in records {
            let mut v = serde_json::to_value(r).unwrap();
            let m = v.as_object_mut().unwrap();
            m.insert("deadline_abs".into(), serde_json::json!(r.deadline_abs()));
            m.insert("met".into(), serde_json::json!(r.met()));
            m.insert("qos_satisfied".into(), serde_json::json!(r.qos_satisfied()));
            m.insert("delay".into(), serde_json::json!(r.delay()));
            m.insert("utility".into(), serde_json::json!(r.utility()));
            m.insert("slowdown".into(), serde_json::json!(r.slowdown()));
            let mut line = serde_json::to_string(r).unwrap();
            line.pop();
            for k in [
                "deadline_abs",
                "met",
                "qos_satisfied",
                "delay",
                "utility",
                "slowdown",
            ] {
                line.push_str(&format!(",{}:{}", serde_json::json!(k), m[k]));
            }
            line.push_str("}\n");
            out.extend_from_slice(line.as_bytes());
        }
        out
    }

    #[test]
    fn the_json_lines_are_what_serde_writes() {
        let mut recs: Vec<JobRecord> = (0..300).flat_map(|_| records()).collect();
        // Free text that needs escaping, and values JSON cannot hold.
        recs[1].detail = "tab\t, quote \", backslash \\, bell \u{7}, é".into();
        recs[2].cost = f64::NAN;
        let ours = String::from_utf8(super::jobs_jsonl(&recs).unwrap()).unwrap();
        let theirs = String::from_utf8(jobs_jsonl_reference(&recs)).unwrap();
        assert_eq!(ours, theirs);
    }

    #[test]
    fn the_csv_is_what_the_csv_crate_and_display_write() {
        // Repeated past several chunks, so the hand-overs are checked too.
        let recs: Vec<JobRecord> = (0..500).flat_map(|_| records()).collect();
        let ours = String::from_utf8(jobs_csv(&recs).unwrap()).unwrap();
        let theirs = String::from_utf8(jobs_csv_reference(&recs)).unwrap();
        assert_eq!(ours, theirs);
    }

    proptest::proptest! {
        /// Text fields are quoted as the csv crate quotes them.
        #[test]
        fn text_fields_are_quoted_as_the_csv_crate_quotes_them(
            s in "[a-z ,\"\r\n;:'#=-]{0,12}"
        ) {
            let mut ours = String::new();
            super::push_csv_field(&mut ours, &s);
            let mut w = csv::Writer::from_writer(Vec::new());
            w.write_record([s.as_str(), "x"]).unwrap();
            let theirs = String::from_utf8(w.into_inner().unwrap()).unwrap();
            proptest::prop_assert_eq!(format!("{ours},x\n"), theirs);
        }
    }

    #[test]
    fn the_csv_reads_back_the_records_it_was_written_from() {
        let recs = records();
        let bytes = jobs_csv(&recs).unwrap();
        let back = parse_jobs_csv(bytes.as_slice(), "test.csv").unwrap();
        assert_eq!(back, recs);
    }

    #[test]
    fn the_reader_needs_only_columns_the_writer_writes() {
        for c in RECORD_COLUMNS {
            assert!(JOB_COLUMNS.contains(c), "{c}");
        }
    }

    #[test]
    fn a_bad_cell_is_named_by_file_line_and_column() {
        let mut text = String::from_utf8(jobs_csv(&records()).unwrap()).unwrap();
        text = text.replacen(",hard,", ",firm,", 1);
        let err = parse_jobs_csv(text.as_bytes(), "runs/x/jobs-libra.csv").unwrap_err();
        let msg = format!("{err:#}");
        assert!(
            msg.contains(
                "runs/x/jobs-libra.csv: line 2, column deadline_type: unknown value 'firm'"
            ),
            "{msg}"
        );
    }
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

/// `out_jobs-<policy>.csv` as text, formatted straight into one buffer.
pub fn batsim_csv(workload_name: &str, records: &[JobRecord]) -> String {
    let bytes = in_memory(|out| batsim_csv_to(out, workload_name, records))
        .expect("writing to memory cannot fail");
    String::from_utf8(bytes).expect("the writer writes text")
}

/// [`batsim_csv`] into `out`, a chunk at a time.
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

/// Writes `parts-<policy>.csv`: one row per part in placement order,
/// `job_id, node, start, finish, cpu, mean_share` (cpu = processor
/// seconds on that node; mean_share = cpu / (finish - start)); an empty
/// finish and share for a part that never finished.
pub fn write_parts_csv(path: &Path, parts: &[common::sim::PartRecord]) -> Result<()> {
    write_with(path, |f| parts_csv_to(f, parts))
}

/// `parts-<policy>.csv` as text, formatted straight into one buffer. The
/// parts of a space-shared job (often dozens) differ only in their node:
/// the row's text after the node is formatted once per run of equal
/// values and copied for the others.
pub fn parts_csv(parts: &[common::sim::PartRecord]) -> String {
    let bytes = in_memory(|out| parts_csv_to(out, parts)).expect("writing to memory cannot fail");
    String::from_utf8(bytes).expect("the writer writes text")
}

/// [`parts_csv`] into `out`, a chunk at a time.
pub fn parts_csv_to(out: &mut dyn Write, parts: &[common::sim::PartRecord]) -> Result<()> {
    let mut t = String::with_capacity(CHUNK + 1024);
    t.push_str("job_id,node,start,finish,cpu,mean_share\n");
    let mut head = String::with_capacity(24);
    let mut tail = String::with_capacity(80);
    let mut last: Option<(u64, [u64; 3])> = None;
    for p in parts {
        let key = (
            p.job,
            [p.start.to_bits(), p.finish.to_bits(), p.cpu.to_bits()],
        );
        if last != Some(key) {
            last = Some(key);
            head.clear();
            num::push_int(&mut head, p.job);
            head.push(',');
            tail.clear();
            tail.push(',');
            num::push_f64(&mut tail, p.start);
            tail.push(',');
            if p.finish.is_finite() {
                let span = p.finish - p.start;
                let share = if span > 0.0 { p.cpu / span } else { 1.0 };
                num::push_f64(&mut tail, p.finish);
                tail.push(',');
                num::push_f64(&mut tail, p.cpu);
                tail.push(',');
                num::push_f64(&mut tail, share);
            } else {
                tail.push(',');
                num::push_f64(&mut tail, p.cpu);
                tail.push(',');
            }
            tail.push('\n');
        }
        t.push_str(&head);
        num::push_int(&mut t, p.node);
        t.push_str(&tail);
        spill_text(out, &mut t)?;
    }
    out.write_all(t.as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod parts_file {
    use common::sim::PartRecord;

    /// Rows as `format!` writes them, one by one.
    fn reference(parts: &[PartRecord]) -> String {
        let mut t = String::from("job_id,node,start,finish,cpu,mean_share\n");
        for p in parts {
            let (finish, share) = if p.finish.is_finite() {
                let span = p.finish - p.start;
                let share = if span > 0.0 { p.cpu / span } else { 1.0 };
                (p.finish.to_string(), share.to_string())
            } else {
                (String::new(), String::new())
            };
            t.push_str(&format!(
                "{},{},{},{finish},{},{share}\n",
                p.job, p.node, p.start, p.cpu
            ));
        }
        t
    }

    #[test]
    fn rows_are_what_format_writes() {
        let part = |job, node, start, finish, cpu| PartRecord {
            job,
            node,
            start,
            finish,
            cpu,
        };
        let parts = [
            // A space-shared job: equal values on several nodes.
            part(7, 0, 10.0, 20.0, 10.0),
            part(7, 1, 10.0, 20.0, 10.0),
            part(7, 5, 10.0, 20.0, 10.0),
            // Same job, other values (time-shared parts).
            part(7, 6, 10.0, 31.5, 1.0 / 3.0),
            part(7, 6, 10.0, 31.5, 1.0 / 3.0),
            // Another job with the same values: its own id.
            part(8, 2, 10.0, 31.5, 1.0 / 3.0),
            // Never finished; zero span.
            part(9, 3, 0.1 + 0.2, f64::INFINITY, 5.0),
            part(9, 4, 0.1 + 0.2, f64::INFINITY, 5.0),
            part(10, 0, 4.0, 4.0, 0.0),
        ];
        assert_eq!(super::parts_csv(&parts), reference(&parts));
        // Past several chunks.
        let many = parts.repeat(3000);
        assert_eq!(super::parts_csv(&many), reference(&many));
    }
}

fn cell(v: Option<f64>, prec: usize) -> String {
    v.map(|x| format!("{x:.prec$}"))
        .unwrap_or_else(|| "-".into())
}

/// The comparison table, one line per policy.
pub fn print_table(out: &mut impl Write, summaries: &[Summary]) -> std::io::Result<()> {
    writeln!(
        out,
        "{:<18} {:>6} {:>6} {:>6} {:>7} {:>7} {:>7} {:>8} {:>9} {:>12}  rejected (res/dl/bud/risk/ret/exp/sched)",
        "policy", "jobs", "accept", "met", "%met", "QoS", "profit", "slowdown", "utility", "revenue"
    )?;
    for s in summaries {
        let r = |k: &str| s.rejected_by_reason.get(k).copied().unwrap_or(0);
        writeln!(
            out,
            "{:<18} {:>6} {:>6} {:>6} {:>7.2} {:>7.4} {:>7} {:>8} {:>9.3e} {:>12.4e}  {}/{}/{}/{}/{}/{}/{}",
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
            r("scheduler"),
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod job_heads {
    use common::experiment::Experiment;
    use common::metrics::JobRecord;
    use common::workload;

    use super::{jobs_csv_to, jobs_csv_with, jobs_jsonl_to, jobs_jsonl_with, JobHeads};

    fn files(records: &[JobRecord], heads: Option<&JobHeads>) -> (Vec<u8>, Vec<u8>) {
        let (mut csv, mut jsonl) = (Vec::new(), Vec::new());
        match heads {
            Some(h) => {
                jobs_csv_with(&mut csv, records, Some(h)).unwrap();
                jobs_jsonl_with(&mut jsonl, records, Some(h)).unwrap();
            }
            None => {
                jobs_csv_to(&mut csv, records).unwrap();
                jobs_jsonl_to(&mut jsonl, records).unwrap();
            }
        }
        (csv, jsonl)
    }

    #[test]
    fn rows_with_heads_formatted_ahead_are_the_rows_without() {
        // A simulated run (accepted, rejected, classes, budgets) and heads
        // from its workload's records before it ran, as `simulate` makes
        // them.
        let exp = Experiment::preset("libra").unwrap();
        let wl = workload::build(&exp.params, None).unwrap();
        let (outcome, _) = exp.run_policy("libra", &wl).unwrap();
        let records = &outcome.records;
        assert!(records.iter().any(|r| r.accepted) && records.iter().any(|r| !r.accepted));
        let before: Vec<JobRecord> = wl.jobs.iter().map(JobRecord::new).collect();
        let heads = JobHeads::of(before.iter());
        for (k, r) in records.iter().enumerate() {
            assert!(heads.serves(k, r), "head {k} is of job {}", r.id);
        }
        assert_eq!(files(records, Some(&heads)), files(records, None));

        // Heads of other jobs (one estimate changed, one job missing at the
        // front so every later head is one row off): not used, same files.
        let mut other = before.clone();
        other[3].estimate += 1.0;
        let changed = JobHeads::of(other.iter());
        assert!(!changed.serves(3, &records[3]) && changed.serves(4, &records[4]));
        assert_eq!(files(records, Some(&changed)), files(records, None));
        let shifted = JobHeads::of(before[1..].iter());
        assert!(!shifted.serves(0, &records[0]));
        assert!(!shifted.serves(records.len() - 1, &records[records.len() - 1]));
        assert_eq!(files(records, Some(&shifted)), files(records, None));
    }
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
