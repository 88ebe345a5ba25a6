//! Result file formats, one module per format: `summary.json`
//! (`summary`), the per-job CSV and JSON lines of each policy (`jobs`),
//! the parts of each job (`parts`), the Batsim-style `out_jobs` CSV
//! (`batsim`), the executed schedule as SWF (`swf`), and the comparison
//! table printed at the end of a run (`table`). The record files follow
//! from the records' one declaration (`record`). The formats are
//! described in docs/output-formats.md; keep the two in step.
//!
//! Not here: which files a run directory holds and the manifest (see
//! `rundir`).

use std::fs;
use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};

mod batsim;
mod jobs;
mod parts;
pub mod record;
mod summary;
mod swf;
mod table;

pub use batsim::{batsim_csv_to, batsim_final_state, write_batsim_csv, BATSIM_COLUMNS};
pub use jobs::{
    job_columns, jobs_csv, jobs_csv_to, jobs_csv_with, jobs_jsonl, jobs_jsonl_to, jobs_jsonl_with,
    parse_jobs_csv, parse_jobs_jsonl, push_record_json, read_jobs_csv, read_jobs_jsonl,
    write_jobs_csv_with, write_jobs_jsonl_with, JobHeads, JOBS_CSV, JOB_DERIVED,
};
pub use parts::{parts_csv, parts_csv_to, read_parts_csv, write_parts_csv, PARTS_CSV};
pub use record::push_csv_field;
pub use summary::write_json;
pub use swf::{schedule_swf, swf_status, write_schedule_swf, SwfRun};
pub use table::print_table;

/// Writes `text` to `path` in one call.
pub(crate) fn write_file(path: &Path, text: impl AsRef<[u8]>) -> Result<()> {
    fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// Creates `path` and lets `write` fill it; errors name the file.
pub(crate) fn write_with(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> Result<()>,
) -> Result<()> {
    let mut f = fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    write(&mut f).with_context(|| format!("writing {}", path.display()))
}

/// The large files are formatted into a buffer of about this size that is
/// handed to the file whenever it is full: its pages stay mapped and in
/// cache, where formatting a whole file first touched megabytes of fresh
/// memory (a page fault every 4 kB, ~1,300 per run of the SDSC window).
pub(crate) const CHUNK: usize = 1 << 16;

/// Hands `buf` to `out` once it holds a chunk.
pub(crate) fn spill(out: &mut dyn Write, buf: &mut Vec<u8>) -> std::io::Result<()> {
    if buf.len() >= CHUNK {
        out.write_all(buf)?;
        buf.clear();
    }
    Ok(())
}

/// [`spill`] for text.
pub(crate) fn spill_text(out: &mut dyn Write, buf: &mut String) -> std::io::Result<()> {
    if buf.len() >= CHUNK {
        out.write_all(buf.as_bytes())?;
        buf.clear();
    }
    Ok(())
}

/// Runs a chunked writer into memory.
pub(crate) fn in_memory(write: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<Vec<u8>> {
    let mut v = Vec::new();
    write(&mut v)?;
    Ok(v)
}

/// Bytes per job line to reserve up front (the lines are 150-450 bytes):
/// one allocation per file instead of a few dozen growths.
pub(crate) const LINE_GUESS: usize = 320;
