//! The per-job files: `jobs-<policy>.csv` and `jobs-<policy>.jsonl`,
//! written and read from `JobRecord`'s one declaration (see `record`):
//! the CSV is the record's fields in order plus the columns of
//! [`JOBS_CSV`], the JSON lines are the record as serde writes it plus
//! [`JOB_DERIVED`]. Also the rows' leading fields formatted ahead
//! ([`JobHeads`]).

use std::fs;
use std::io::Write;
use std::path::Path;
use std::sync::OnceLock;

use anyhow::{Context, Result};
use common::metrics::JobRecord;

use super::record::{self, Bits, CsvLayout, CsvPlan, Derived, DerivedField, JsonSink, SameWords};
use super::{in_memory, spill, spill_text, write_with, CHUNK, LINE_GUESS};

/// What the files add to a record: values computed from it, in the order
/// the JSON lines append them.
pub const JOB_DERIVED: &[DerivedField<JobRecord>] = &[
    DerivedField {
        name: "deadline_abs",
        value: |r| Derived::Real(r.deadline_abs()),
    },
    DerivedField {
        name: "met",
        value: |r| Derived::Flag(r.met()),
    },
    DerivedField {
        name: "qos_satisfied",
        value: |r| Derived::Flag(r.qos_satisfied()),
    },
    DerivedField {
        name: "delay",
        value: |r| Derived::Real(r.delay()),
    },
    DerivedField {
        name: "utility",
        value: |r| Derived::Real(r.utility()),
    },
    DerivedField {
        name: "slowdown",
        value: |r| Derived::OptReal(r.slowdown()),
    },
];

/// The per-job CSV: the record's fields in declaration order, `id` as
/// `job_id`, each derived column before the field named here, and the free
/// text (`detail`) last. A field added to `JobRecord` gets its column at
/// its place with no edit here.
pub static JOBS_CSV: CsvLayout<JobRecord> = CsvLayout {
    renames: &[("id", "job_id")],
    derived: JOB_DERIVED,
    before: &[
        ("deadline_abs", "budget"),
        ("met", "cost"),
        ("qos_satisfied", "cost"),
        ("delay", "cost"),
        ("utility", "lost"),
        ("slowdown", "lost"),
    ],
    last: &["detail"],
};

/// The last of the leading fields the workload fixes (the same for every
/// policy), which [`JobHeads`] formats ahead.
const HEAD_LAST: &str = "deadline_type";

/// [`JOBS_CSV`] resolved once, and how many leading fields the heads hold.
struct Schema {
    csv: CsvPlan<JobRecord>,
    head: usize,
}

fn schema() -> &'static Schema {
    static S: OnceLock<Schema> = OnceLock::new();
    S.get_or_init(|| Schema {
        csv: CsvPlan::new(&JOBS_CSV),
        head: record::field_names::<JobRecord>()
            .iter()
            .position(|f| *f == HEAD_LAST)
            .expect("JobRecord has the field HEAD_LAST")
            + 1,
    })
}

/// The per-job CSV columns, in order.
pub fn job_columns() -> &'static [&'static str] {
    schema().csv.columns()
}

/// Writes one row per job, the rows' leading fields from `heads` when
/// given.
pub fn write_jobs_csv_with(
    path: &Path,
    records: &[JobRecord],
    heads: Option<&JobHeads>,
) -> Result<()> {
    write_with(path, |f| jobs_csv_with(f, records, heads))
}

/// The leading fields of every job's row in `jobs-<policy>.csv` and line
/// in `jobs-<policy>.jsonl` (`id` to `deadline_type`): what the workload
/// fixes, the same for every policy, so they can be formatted while the
/// simulation runs rather than after it. Each is used only for a record
/// whose leading fields are bit for bit those it was formatted from
/// ([`Bits`]); any other record's are formatted on the spot, so the files
/// never depend on whether heads were given.
#[derive(Debug, Default)]
pub struct JobHeads {
    keys: Vec<u64>,
    key_ends: Vec<usize>,
    csv: String,
    csv_ends: Vec<usize>,
    jsonl: Vec<u8>,
    jsonl_ends: Vec<usize>,
}

impl JobHeads {
    /// The heads of `records` (e.g. each workload job's record before it
    /// ran, [`JobRecord::new`]), in order: head `k` serves row `k`.
    pub fn of<'a>(records: impl ExactSizeIterator<Item = &'a JobRecord>) -> JobHeads {
        let s = schema();
        let n = records.len();
        let mut h = JobHeads {
            keys: Vec::with_capacity(n * 4 * s.head),
            key_ends: Vec::with_capacity(n),
            csv: String::with_capacity(n * 64),
            csv_ends: Vec::with_capacity(n),
            jsonl: Vec::with_capacity(n * 192),
            jsonl_ends: Vec::with_capacity(n),
        };
        let mut tail = Vec::new();
        for r in records {
            record::walk(r, 0..s.head, &mut Bits(&mut h.keys)).expect("a supported record");
            h.key_ends.push(h.keys.len());
            s.csv.push_cells(&mut h.csv, &mut tail, r, 0..s.head, true);
            h.csv_ends.push(h.csv.len());
            h.jsonl.push(b'{');
            let mut sink = JsonSink {
                out: &mut h.jsonl,
                first: true,
            };
            record::walk(r, 0..s.head, &mut sink).expect("a supported record");
            h.jsonl_ends.push(h.jsonl.len());
        }
        h
    }

    /// Whether head `k` was formatted from fields equal to `r`'s.
    fn serves(&self, k: usize, r: &JobRecord) -> bool {
        let Some(&end) = self.key_ends.get(k) else {
            return false;
        };
        let start = if k == 0 { 0 } else { self.key_ends[k - 1] };
        let mut same = Bits(SameWords {
            want: &self.keys[start..end],
            pos: 0,
            same: true,
        });
        record::walk(r, 0..schema().head, &mut same).expect("a supported record");
        same.0.same && same.0.pos == end - start
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
/// quotes it (see [`record::push_csv_field`]).
pub fn jobs_csv(records: &[JobRecord]) -> Result<Vec<u8>> {
    in_memory(|out| jobs_csv_to(out, records))
}

/// [`jobs_csv`] into `out`, a chunk at a time.
pub fn jobs_csv_to(out: &mut dyn Write, records: &[JobRecord]) -> Result<()> {
    jobs_csv_with(out, records, None)
}

/// [`jobs_csv_to`] with the rows' leading fields taken from `heads` where
/// it has them for the record.
pub fn jobs_csv_with(
    out: &mut dyn Write,
    records: &[JobRecord],
    heads: Option<&JobHeads>,
) -> Result<()> {
    let s = schema();
    let mut t = String::with_capacity(CHUNK + 4 * LINE_GUESS);
    t.push_str(&s.csv.columns().join(","));
    t.push('\n');
    let mut tail = Vec::new();
    for (k, r) in records.iter().enumerate() {
        match heads.and_then(|h| h.csv(k, r)) {
            Some(head) => {
                t.push_str(head);
                s.csv
                    .push_cells(&mut t, &mut tail, r, s.head..usize::MAX, false);
            }
            None => s.csv.push_cells(&mut t, &mut tail, r, 0..usize::MAX, true),
        }
        s.csv.finish_row(&mut t, &mut tail, r);
        spill_text(out, &mut t)?;
    }
    out.write_all(t.as_bytes())?;
    Ok(())
}

/// Writes one JSON object per job and line, in arrival order: every field
/// of the record plus the derived ones ([`JOB_DERIVED`]); the lines'
/// leading fields from `heads` when given.
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
/// buffer by the record's own `Serialize` (see `record`); the numbers and
/// the free text still come out as `serde_json` writes them. A test checks
/// it against serde's own output.
pub fn jobs_jsonl(records: &[JobRecord]) -> Result<Vec<u8>> {
    in_memory(|out| jobs_jsonl_to(out, records))
}

/// [`jobs_jsonl`] into `sink`, a chunk at a time.
pub fn jobs_jsonl_to(sink: &mut dyn Write, records: &[JobRecord]) -> Result<()> {
    jobs_jsonl_with(sink, records, None)
}

/// `serde_json`'s text of a record, `{` to `}`: what the run journal's
/// lines carry, written by the record's own `Serialize` into a buffer
/// (the journal's writer formats every event of a live run; `serde_json`
/// took most of its thread at 10,000 jobs/s).
pub fn push_record_json(o: &mut Vec<u8>, r: &JobRecord) {
    record::push_json(o, r);
}

/// [`jobs_jsonl_to`] with the lines' leading fields taken from `heads`
/// where it has them for the record.
pub fn jobs_jsonl_with(
    sink: &mut dyn Write,
    records: &[JobRecord],
    heads: Option<&JobHeads>,
) -> Result<()> {
    let s = schema();
    let mut out = Vec::with_capacity(CHUNK + 4 * (LINE_GUESS + 128));
    for (k, r) in records.iter().enumerate() {
        let o = &mut out;
        let (from, first) = match heads.and_then(|h| h.jsonl(k, r)) {
            Some(head) => {
                o.extend_from_slice(head);
                (s.head, false)
            }
            None => {
                o.push(b'{');
                (0, true)
            }
        };
        let mut line = JsonSink { out: o, first };
        record::walk(r, from..usize::MAX, &mut line).expect("a supported record");
        for d in JOB_DERIVED {
            line.key(d.name);
            (d.value)(r).emit(&mut line);
        }
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

/// [`jobs_csv`]'s bytes back into records, each field's column read by
/// the field's own `Deserialize` ([`record::read_csv`]); errors name
/// `source`, the line and the column.
pub fn parse_jobs_csv(input: impl std::io::Read, source: &str) -> Result<Vec<JobRecord>> {
    record::read_csv(input, source, &schema().csv)
}

#[cfg(test)]
mod jobs_file_round_trip {
    use common::job::{DeadlineType, Urgency};
    use common::metrics::JobRecord;
    use common::policy::RejectReason;

    use super::{job_columns, jobs_csv, parse_jobs_csv};

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
        w.write_record(job_columns()).unwrap();
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
            super::record::push_csv_field(&mut ours, &s);
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

    /// The header is the schema: the record's fields in declaration
    /// order (`id` as `job_id`), the derived columns where the layout puts
    /// them, `detail` last; these are the columns the files have always
    /// had, in their order.
    #[test]
    fn the_header_is_the_records_fields_with_the_layouts_columns() {
        assert_eq!(
            job_columns(),
            [
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
            ]
        );
        let fields = super::record::field_names::<JobRecord>();
        let stored: Vec<&str> = job_columns()
            .iter()
            .copied()
            .filter(|c| !super::JOB_DERIVED.iter().any(|d| d.name == *c))
            .map(|c| if c == "job_id" { "id" } else { c })
            .collect();
        let mut sorted_fields = fields.to_vec();
        let mut sorted_stored = stored.clone();
        sorted_fields.sort_unstable();
        sorted_stored.sort_unstable();
        assert_eq!(sorted_fields, sorted_stored, "every field has one column");
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
