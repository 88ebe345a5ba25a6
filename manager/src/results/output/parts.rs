//! `parts-<policy>.csv`: one row per part in placement order, written and
//! read from `PartRecord`'s one declaration (see `record`): its fields in
//! order (`job` as `job_id`; a finish that never came as an empty cell)
//! and the derived `mean_share` = cpu / (finish - start).

use std::io::Write;
use std::path::Path;
use std::sync::OnceLock;

use anyhow::{Context, Result};
use common::metrics::PartRecord;

use super::record::{self, Bits, CsvLayout, CsvPlan, Derived, DerivedField};
use super::{in_memory, spill_text, write_with, CHUNK};

/// The parts CSV: the record's fields, `job` as `job_id`, then
/// `mean_share` (empty for a part that never finished; 1 for one that
/// took no time).
pub static PARTS_CSV: CsvLayout<PartRecord> = CsvLayout {
    renames: &[("job", "job_id")],
    derived: &[DerivedField {
        name: "mean_share",
        value: |p| {
            Derived::OptReal(p.finish.is_finite().then(|| {
                let span = p.finish - p.start;
                if span > 0.0 {
                    p.cpu / span
                } else {
                    1.0
                }
            }))
        },
    }],
    before: &[],
    last: &[],
};

/// The field that differs between the parts of one space-shared job.
const VARYING: &str = "node";

/// [`PARTS_CSV`] resolved once, and the position of [`VARYING`].
fn schema() -> &'static (CsvPlan<PartRecord>, usize) {
    static S: OnceLock<(CsvPlan<PartRecord>, usize)> = OnceLock::new();
    S.get_or_init(|| {
        let node = record::field_names::<PartRecord>()
            .iter()
            .position(|f| *f == VARYING)
            .expect("PartRecord has the field VARYING");
        (CsvPlan::new(&PARTS_CSV), node)
    })
}

/// Writes `parts-<policy>.csv`: one row per part in placement order,
/// `job_id, node, start, finish, cpu, mean_share` (cpu = processor
/// seconds on that node; mean_share = cpu / (finish - start)); an empty
/// finish and share for a part that never finished.
pub fn write_parts_csv(path: &Path, parts: &[PartRecord]) -> Result<()> {
    write_with(path, |f| parts_csv_to(f, parts))
}

/// `parts-<policy>.csv` as text, formatted straight into one buffer. The
/// parts of a space-shared job (often dozens) differ only in their node:
/// the row's text around the node is formatted once per run of parts
/// equal in every other field ([`Bits`]) and copied for the others.
pub fn parts_csv(parts: &[PartRecord]) -> String {
    let bytes = in_memory(|out| parts_csv_to(out, parts)).expect("writing to memory cannot fail");
    String::from_utf8(bytes).expect("the writer writes text")
}

/// [`parts_csv`] into `out`, a chunk at a time.
pub fn parts_csv_to(out: &mut dyn Write, parts: &[PartRecord]) -> Result<()> {
    let (plan, node) = schema();
    let node = *node;
    let mut t = String::with_capacity(CHUNK + 1024);
    t.push_str(&plan.columns().join(","));
    t.push('\n');
    let mut head = String::with_capacity(24);
    let mut tail = String::with_capacity(80);
    let mut last = Vec::new();
    let (mut key, mut last_key) = (Vec::with_capacity(16), Vec::with_capacity(16));
    for p in parts {
        key.clear();
        let mut bits = Bits(&mut key);
        record::walk(p, 0..node, &mut bits).expect("a supported record");
        record::walk(p, node + 1..usize::MAX, &mut bits).expect("a supported record");
        if key != last_key || last_key.is_empty() {
            std::mem::swap(&mut key, &mut last_key);
            head.clear();
            plan.push_cells(&mut head, &mut last, p, 0..node, true);
            tail.clear();
            plan.push_cells(&mut tail, &mut last, p, node + 1..usize::MAX, false);
            plan.finish_row(&mut tail, &mut last, p);
        }
        t.push_str(&head);
        plan.push_cells(&mut t, &mut last, p, node..node + 1, node == 0);
        t.push_str(&tail);
        spill_text(out, &mut t)?;
    }
    out.write_all(t.as_bytes())?;
    Ok(())
}

/// Reads `parts-<policy>.csv` (columns by name, each read by its field's
/// `Deserialize`; errors name the file, line and column).
pub fn read_parts_csv(path: &Path) -> Result<Vec<PartRecord>> {
    let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    record::read_csv(file, &path.display().to_string(), &schema().0)
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
        // Read back by the same schema, never-finished parts included.
        let text = super::parts_csv(&parts);
        let back: Vec<PartRecord> =
            super::record::read_csv(text.as_bytes(), "parts.csv", &super::schema().0).unwrap();
        assert_eq!(back, parts);
        // Past several chunks.
        let many = parts.repeat(3000);
        assert_eq!(super::parts_csv(&many), reference(&many));
    }
}
