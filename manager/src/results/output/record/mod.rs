//! One schema per record type: a record's fields are its serde
//! declaration (names, order, types: `JobRecord` and `PartRecord` in
//! `common::metrics`), and every writer and reader of the record files
//! follows from it. A record is walked by its own `Serialize` into a
//! [`Sink`] (the jobs and parts CSV, the jobs JSON lines and the run
//! journal's records), and read back by its own `Deserialize` (the JSON
//! lines and the journal through `serde_json`, the CSV files through
//! [`read_csv`], which maps columns to fields by name). So a field added
//! to a record appears in every file and is read back from every file with
//! no edit here; the one thing a format adds is its [`CsvLayout`]:
//! column renames, derived columns and where they go, and columns moved
//! last.
//!
//! Numbers go through `num` exactly as `Display` (CSV) and `serde_json`
//! (JSON) print them; tests hold the files byte for byte against the `csv`
//! crate and `serde_json`.
//!
//! Not here: which files a run writes (`rundir`), the layouts of Batsim's
//! `out_jobs` and of SWF (fixed by those tools, derived from the record
//! rather than listing its fields: see `batsim` and `swf`).

use std::fmt;

use serde::de::{self, DeserializeOwned, Visitor};
use serde::ser::{self, Serialize};

use crate::results::num;

mod read;
mod walk;

pub use read::read_csv;

/// A record shape the walk does not support (a map, a tuple, bytes): a
/// bug in a record type, named by the message.
#[derive(Debug)]
pub struct SchemaError(String);

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SchemaError {}

impl ser::Error for SchemaError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        SchemaError(msg.to_string())
    }
}

impl de::Error for SchemaError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        SchemaError(msg.to_string())
    }
}

/// What a file does with the values of a record's fields, in the record's
/// order: each field is announced, then its value given as one of these
/// shapes (an `Option` is its value or [`Sink::null`]; a list is
/// [`Sink::seq_item`] before each element).
pub trait Sink {
    /// Field `k` (0-based, in declaration order) called `name` begins.
    fn field(&mut self, k: usize, name: &'static str);
    /// An unsigned integer.
    fn int(&mut self, v: u64);
    /// A signed integer.
    fn signed(&mut self, v: i64);
    /// A float.
    fn real(&mut self, v: f64);
    /// No value (`None`).
    fn null(&mut self);
    /// A boolean.
    fn flag(&mut self, v: bool);
    /// Free text (escaped or quoted as the format needs).
    fn text(&mut self, v: &str);
    /// The name of a unit variant (an urgency, a reason): needs no
    /// escaping.
    fn name(&mut self, v: &'static str);
    /// Before element `i` of a list.
    fn seq_item(&mut self, i: usize);
    /// A list begins.
    fn seq_start(&mut self) {}
    /// A list ends.
    fn seq_end(&mut self) {}
}

/// A value a format computes from a record rather than stores (a derived
/// column: `deadline_abs`, `met`, ...).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Derived {
    /// A float.
    Real(f64),
    /// A float or nothing.
    OptReal(Option<f64>),
    /// A boolean.
    Flag(bool),
}

impl Derived {
    /// Gives the value to `sink` in the shapes a field's would take.
    pub fn emit(self, sink: &mut impl Sink) {
        match self {
            Derived::Real(v) | Derived::OptReal(Some(v)) => sink.real(v),
            Derived::OptReal(None) => sink.null(),
            Derived::Flag(b) => sink.flag(b),
        }
    }
}

/// A derived column: its name and how it is computed.
pub struct DerivedField<R> {
    /// Column (or key) name.
    pub name: &'static str,
    /// Its value for a record.
    pub value: fn(&R) -> Derived,
}

/// Walks the fields `range` (positions in declaration order) of `record`
/// into `sink`.
pub fn walk<R: Serialize + ?Sized>(
    record: &R,
    range: std::ops::Range<usize>,
    sink: &mut impl Sink,
) -> Result<(), SchemaError> {
    record.serialize(walk::Fields { sink, k: 0, range })
}

/// The names of a record type's fields, in declaration order, as its
/// `Deserialize` declares them (serde hands them to the deserializer).
pub fn field_names<R: DeserializeOwned>() -> &'static [&'static str] {
    struct Capture(Option<&'static [&'static str]>);
    impl<'de> de::Deserializer<'de> for &mut Capture {
        type Error = SchemaError;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, SchemaError> {
            Err(SchemaError("not a struct".into()))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, SchemaError> {
            self.0 = Some(fields);
            Err(SchemaError("captured".into()))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
            bytes byte_buf option unit unit_struct newtype_struct seq tuple
            tuple_struct map enum identifier ignored_any
        }
    }
    let mut c = Capture(None);
    let _ = R::deserialize(&mut c);
    c.0.expect("a record type is a struct with named fields")
}

/// A record's fields as `serde_json` writes them (`"key":value`, commas
/// between), into a line; the braces are the caller's.
pub struct JsonSink<'o> {
    /// The line.
    pub out: &'o mut Vec<u8>,
    /// No field written yet (so no comma before the next).
    pub first: bool,
}

impl JsonSink<'_> {
    /// A key of one of the format's own (a derived field).
    pub fn key(&mut self, name: &str) {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        self.out.push(b'"');
        self.out.extend_from_slice(name.as_bytes());
        self.out.extend_from_slice(b"\":");
    }
}

impl Sink for JsonSink<'_> {
    fn field(&mut self, _: usize, name: &'static str) {
        // Field names are identifiers: nothing to escape.
        self.key(name);
    }
    fn int(&mut self, v: u64) {
        self.out
            .extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
    }
    fn signed(&mut self, v: i64) {
        self.out
            .extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
    }
    fn real(&mut self, v: f64) {
        num::push_json_f64(self.out, v);
    }
    fn null(&mut self) {
        self.out.extend_from_slice(b"null");
    }
    fn flag(&mut self, v: bool) {
        self.out
            .extend_from_slice(if v { b"true" } else { b"false" });
    }
    fn text(&mut self, v: &str) {
        serde_json::to_writer(&mut *self.out, v).expect("a string serializes into memory");
    }
    fn name(&mut self, v: &'static str) {
        self.out.push(b'"');
        self.out.extend_from_slice(v.as_bytes());
        self.out.push(b'"');
    }
    fn seq_start(&mut self) {
        self.out.push(b'[');
    }
    fn seq_item(&mut self, i: usize) {
        if i > 0 {
            self.out.push(b',');
        }
    }
    fn seq_end(&mut self) {
        self.out.push(b']');
    }
}

/// `serde_json`'s text of a whole record, `{` to `}` (what the journal's
/// lines carry).
pub fn push_json<R: Serialize>(out: &mut Vec<u8>, r: &R) {
    out.push(b'{');
    walk(r, 0..usize::MAX, &mut JsonSink { out, first: true })
        .expect("a record type the schema supports");
    out.push(b'}');
}

/// How a record type is laid out in a CSV file: its fields in declaration
/// order, and what the format adds.
pub struct CsvLayout<R: 'static> {
    /// Columns named otherwise than their field: (field, column).
    pub renames: &'static [(&'static str, &'static str)],
    /// Derived columns, computed from the record.
    pub derived: &'static [DerivedField<R>],
    /// Where each derived column goes: (derived column, the field it
    /// precedes); one not listed goes at the end.
    pub before: &'static [(&'static str, &'static str)],
    /// Fields written as the last columns, in this order (free text,
    /// which may need quotes, reads best last).
    pub last: &'static [&'static str],
}

/// A [`CsvLayout`] resolved against the record type's fields: what to do
/// at each field position.
pub struct CsvPlan<R: 'static> {
    /// Per field position: the derived columns written before it.
    before: Vec<Vec<&'static DerivedField<R>>>,
    /// Derived columns written after every field (before the `last`
    /// ones).
    end: Vec<&'static DerivedField<R>>,
    /// Per field position: its index in `last`, if it is written last.
    last: Vec<Option<usize>>,
    /// The header's columns, in order.
    columns: Vec<&'static str>,
    /// Per field position: its column name.
    field_columns: Vec<&'static str>,
}

impl<R: Serialize + DeserializeOwned + 'static> CsvPlan<R> {
    /// Resolves `layout` against `R`'s fields; panics on a layout naming
    /// a field `R` does not have (a bug caught by the format's tests).
    pub fn new(layout: &'static CsvLayout<R>) -> CsvPlan<R> {
        let fields = field_names::<R>();
        let pos = |name: &str| {
            fields
                .iter()
                .position(|f| *f == name)
                .unwrap_or_else(|| panic!("the CSV layout names '{name}', not a field"))
        };
        let mut before = vec![Vec::new(); fields.len()];
        let mut end = Vec::new();
        for d in layout.derived {
            match layout.before.iter().find(|(c, _)| *c == d.name) {
                Some((_, f)) => before[pos(f)].push(d),
                None => end.push(d),
            }
        }
        let mut last = vec![None; fields.len()];
        for (i, f) in layout.last.iter().enumerate() {
            last[pos(f)] = Some(i);
        }
        let field_columns: Vec<&'static str> = fields
            .iter()
            .map(|f| {
                layout
                    .renames
                    .iter()
                    .find(|(from, _)| from == f)
                    .map_or(*f, |(_, to)| *to)
            })
            .collect();
        let mut columns = Vec::new();
        for (k, c) in field_columns.iter().enumerate() {
            columns.extend(before[k].iter().map(|d| d.name));
            if last[k].is_none() {
                columns.push(*c);
            }
        }
        columns.extend(end.iter().map(|d| d.name));
        columns.extend(layout.last.iter().map(|f| field_columns[pos(f)]));
        CsvPlan {
            before,
            end,
            last,
            columns,
            field_columns,
        }
    }

    /// The header's columns, in order.
    pub fn columns(&self) -> &[&'static str] {
        &self.columns
    }

    /// Appends the cells of `r`'s fields `range` to `out` (derived
    /// columns placed before one of them included), each preceded by a
    /// comma unless `first`; fields written last are kept in `tail` (one
    /// comma-led cell each, in `last` order) for [`CsvPlan::finish_row`].
    pub fn push_cells(
        &self,
        out: &mut String,
        tail: &mut Vec<String>,
        r: &R,
        range: std::ops::Range<usize>,
        first: bool,
    ) {
        let mut sink = CsvSink {
            plan: self,
            record: r,
            out,
            tail,
            first,
            into_tail: None,
        };
        walk(r, range, &mut sink).expect("a record type the schema supports");
    }

    /// Ends a row whose every field was given to [`CsvPlan::push_cells`]:
    /// the derived columns at the end, the fields written last, the
    /// newline.
    pub fn finish_row(&self, out: &mut String, tail: &mut [String], r: &R) {
        let mut sink = CsvSink {
            plan: self,
            record: r,
            out,
            tail: &mut Vec::new(),
            first: false,
            into_tail: None,
        };
        for d in &self.end {
            sink.comma();
            (d.value)(r).emit(&mut sink);
        }
        for t in tail.iter_mut() {
            out.push_str(t);
            t.clear();
        }
        out.push('\n');
    }
}

/// Writes CSV cells: numbers as `Display` prints them, text quoted as the
/// `csv` crate quotes it, a list as its elements separated by spaces, no
/// value as an empty cell.
struct CsvSink<'a, R: 'static> {
    plan: &'a CsvPlan<R>,
    record: &'a R,
    out: &'a mut String,
    tail: &'a mut Vec<String>,
    first: bool,
    /// The `last` slot the current field goes to, if any.
    into_tail: Option<usize>,
}

impl<R> CsvSink<'_, R> {
    fn comma(&mut self) {
        if !self.first {
            self.out.push(',');
        }
        self.first = false;
    }

    /// Where the current field's text goes.
    fn cell(&mut self) -> &mut String {
        match self.into_tail {
            Some(i) => &mut self.tail[i],
            None => self.out,
        }
    }
}

impl<R> Sink for CsvSink<'_, R> {
    fn field(&mut self, k: usize, _: &'static str) {
        let plan = self.plan;
        for d in &plan.before[k] {
            self.into_tail = None;
            self.comma();
            let v = (d.value)(self.record);
            v.emit(self);
        }
        self.into_tail = plan.last[k];
        match self.into_tail {
            Some(i) => {
                if self.tail.len() <= i {
                    self.tail.resize(i + 1, String::new());
                }
                self.tail[i].clear();
                self.tail[i].push(',');
            }
            None => self.comma(),
        }
    }
    fn int(&mut self, v: u64) {
        num::push_int(self.cell(), v);
    }
    fn signed(&mut self, v: i64) {
        num::push_int(self.cell(), v);
    }
    fn real(&mut self, v: f64) {
        num::push_f64(self.cell(), v);
    }
    fn null(&mut self) {}
    fn flag(&mut self, v: bool) {
        self.cell().push_str(if v { "true" } else { "false" });
    }
    fn text(&mut self, v: &str) {
        push_csv_field(self.cell(), v);
    }
    fn name(&mut self, v: &'static str) {
        self.cell().push_str(v);
    }
    fn seq_item(&mut self, i: usize) {
        if i > 0 {
            self.cell().push(' ');
        }
    }
}

/// Appends a text field as the `csv` crate's default writer does: in
/// double quotes, inner quotes doubled, when it holds a comma, a quote,
/// `\r` or `\n`; as it is otherwise.
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

/// Where [`Bits`] puts its words.
pub trait Words {
    /// One word of the encoding.
    fn word(&mut self, w: u64);
}

impl<W: Words + ?Sized> Words for &mut W {
    fn word(&mut self, w: u64) {
        (**self).word(w);
    }
}

impl Words for Vec<u64> {
    fn word(&mut self, w: u64) {
        self.push(w);
    }
}

/// Compares the words given with `want`, in order.
pub struct SameWords<'w> {
    /// The words to match.
    pub want: &'w [u64],
    /// Words seen so far.
    pub pos: usize,
    /// Every word so far matched.
    pub same: bool,
}

impl Words for SameWords<'_> {
    fn word(&mut self, w: u64) {
        self.same &= self.want.get(self.pos) == Some(&w);
        self.pos += 1;
    }
}

/// Fields as words, exactly (a float by its bits, text byte for byte, each
/// value tagged by its shape): two walks give the same words exactly when
/// they give every format the same text, so text formatted from one
/// record can stand for another's.
pub struct Bits<W>(pub W);

impl<W: Words> Bits<W> {
    fn bytes(&mut self, tag: u64, b: &[u8]) {
        self.0.word(tag);
        self.0.word(b.len() as u64);
        for c in b.chunks(8) {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            self.0.word(u64::from_le_bytes(w));
        }
    }
}

impl<W: Words> Sink for Bits<W> {
    fn field(&mut self, _: usize, _: &'static str) {}
    fn int(&mut self, v: u64) {
        self.0.word(1);
        self.0.word(v);
    }
    fn signed(&mut self, v: i64) {
        self.0.word(2);
        self.0.word(v as u64);
    }
    fn real(&mut self, v: f64) {
        self.0.word(3);
        self.0.word(v.to_bits());
    }
    fn null(&mut self) {
        self.0.word(4);
    }
    fn flag(&mut self, v: bool) {
        self.0.word(5 + u64::from(v));
    }
    fn text(&mut self, v: &str) {
        self.bytes(7, v.as_bytes());
    }
    fn name(&mut self, v: &'static str) {
        self.bytes(8, v.as_bytes());
    }
    fn seq_item(&mut self, _: usize) {
        self.0.word(9);
    }
    fn seq_start(&mut self) {
        self.0.word(10);
    }
    fn seq_end(&mut self) {
        self.0.word(11);
    }
}

#[cfg(test)]
mod tests {
    use common::job::Urgency;
    use serde::{Deserialize, Serialize};

    use super::*;

    /// A record type as a file sees one: every shape the schema supports.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Before {
        id: u64,
        class: Option<Urgency>,
        at: f64,
        nodes: Vec<usize>,
        done: Option<f64>,
        note: String,
    }

    /// `Before` with one field added, `weight`: the one edit. Everything
    /// below treats the two alike.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct After {
        id: u64,
        class: Option<Urgency>,
        at: f64,
        weight: f64,
        nodes: Vec<usize>,
        done: Option<f64>,
        note: String,
    }

    /// The same layout for either type (a layout names fields, derived
    /// columns and renames, never the list of fields).
    macro_rules! layout {
        ($t:ty) => {{
            static L: CsvLayout<$t> = CsvLayout {
                renames: &[("id", "row")],
                derived: &[DerivedField {
                    name: "twice",
                    value: |r| Derived::Real(2.0 * r.at),
                }],
                before: &[("twice", "nodes")],
                last: &["note"],
            };
            CsvPlan::new(&L)
        }};
    }

    fn csv<R: Serialize + DeserializeOwned>(plan: &CsvPlan<R>, records: &[R]) -> String {
        let mut t = plan.columns().join(",") + "\n";
        let mut tail = Vec::new();
        for r in records {
            plan.push_cells(&mut t, &mut tail, r, 0..usize::MAX, true);
            plan.finish_row(&mut t, &mut tail, r);
        }
        t
    }

    fn json<R: Serialize>(r: &R) -> String {
        let mut o = Vec::new();
        push_json(&mut o, r);
        String::from_utf8(o).unwrap()
    }

    fn afters() -> Vec<After> {
        vec![
            After {
                id: 1,
                class: Some(Urgency::High),
                at: 0.1 + 0.2,
                weight: 1.0 / 3.0,
                nodes: vec![0, 7, 9],
                done: Some(12.5),
                note: "a, \"quoted\"\nnote".into(),
            },
            After {
                id: u64::MAX,
                class: None,
                at: -0.0,
                weight: 1e300,
                nodes: vec![],
                done: None,
                note: String::new(),
            },
        ]
    }

    #[test]
    fn a_field_added_to_a_record_is_in_every_file_and_read_back() {
        let before = layout!(Before);
        let after = layout!(After);
        assert_eq!(
            before.columns(),
            ["row", "class", "at", "twice", "nodes", "done", "note"]
        );
        assert_eq!(
            after.columns(),
            ["row", "class", "at", "weight", "twice", "nodes", "done", "note"]
        );
        let recs = afters();
        // The CSV: the new column at its place, as Display and the csv
        // crate write it, and read back.
        let text = csv(&after, &recs);
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(after.columns()).unwrap();
        for r in &recs {
            let nodes: Vec<String> = r.nodes.iter().map(|n| n.to_string()).collect();
            w.write_record([
                r.id.to_string(),
                r.class.map_or("", Urgency::name).to_string(),
                r.at.to_string(),
                r.weight.to_string(),
                (2.0 * r.at).to_string(),
                nodes.join(" "),
                r.done.map_or(String::new(), |d| d.to_string()),
                r.note.clone(),
            ])
            .unwrap();
        }
        assert_eq!(text, String::from_utf8(w.into_inner().unwrap()).unwrap());
        let back: Vec<After> = read_csv(text.as_bytes(), "t.csv", &after).unwrap();
        assert_eq!(back, recs);
        // JSON: serde_json's bytes, read back by serde_json.
        for r in &recs {
            let line = json(r);
            assert_eq!(line, serde_json::to_string(r).unwrap());
            assert!(line.contains("\"weight\":"), "{line}");
            assert_eq!(&serde_json::from_str::<After>(&line).unwrap(), r);
        }
        // A file written before the field was added lacks its column: an
        // error naming the file and the column.
        let old: Vec<Before> = recs
            .iter()
            .map(|r| Before {
                id: r.id,
                class: r.class,
                at: r.at,
                nodes: r.nodes.clone(),
                done: r.done,
                note: r.note.clone(),
            })
            .collect();
        let old_text = csv(&before, &old);
        let e = read_csv(old_text.as_bytes(), "old.csv", &after).unwrap_err();
        assert_eq!(e.to_string(), "old.csv: no column 'weight'");
        assert_eq!(
            read_csv(old_text.as_bytes(), "old.csv", &before).unwrap(),
            old
        );
    }

    #[test]
    fn a_bad_cell_is_named_by_line_and_column() {
        let after = layout!(After);
        let text = csv(&after, &afters()).replacen(",high,", ",urgent,", 1);
        let e = read_csv(text.as_bytes(), "t.csv", &after).unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.csv: line 2, column class: unknown value 'urgent'"
        );
        let text = csv(&after, &afters()).replacen("0 7 9", "0 x 9", 1);
        let e = read_csv(text.as_bytes(), "t.csv", &after).unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.csv: line 2, column nodes: 'x' is not a whole number"
        );
    }

    #[test]
    fn equal_bits_are_equal_fields() {
        let recs = afters();
        let bits = |r: &After| {
            let mut w = Vec::new();
            walk(r, 0..usize::MAX, &mut Bits(&mut w)).unwrap();
            w
        };
        assert_eq!(bits(&recs[0]), bits(&recs[0].clone()));
        let mut other = recs[1].clone();
        other.at = 0.0;
        // -0 and 0 are equal floats but not equal text.
        assert_ne!(bits(&recs[1]), bits(&other));
        let mut other = recs[0].clone();
        other.note.push('x');
        assert_ne!(bits(&recs[0]), bits(&other));
        let mut same = Bits(SameWords {
            want: &bits(&recs[0]),
            pos: 0,
            same: true,
        });
        walk(&recs[0], 0..usize::MAX, &mut same).unwrap();
        assert!(same.0.same);
    }
}
