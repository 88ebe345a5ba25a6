//! The listing commands: `libratory policies`, `presets` and `trace-stats`.

use std::path::Path;

use anyhow::Result;
use common::experiment::Experiment;
use common::swf::{SwfReader, WindowStats};
use common::workload::PRESETS;

/// `libratory policies`: every registered policy and what it is.
pub fn policies() {
    for e in common::policy::REGISTRY {
        println!("{:<18} {}", e.name, e.about);
    }
}

/// `libratory presets [NAME]`: the presets, or every parameter of one.
pub fn presets(name: Option<&str>) -> Result<()> {
    match name {
        None => {
            for p in PRESETS {
                println!("{:<18} {}", p.name, p.about);
            }
        }
        Some(n) => {
            let e = Experiment::preset(n)?;
            println!("{}", serde_json::to_string_pretty(&e)?);
        }
    }
    Ok(())
}

/// `libratory trace-stats`: the trace's header, then the statistics of its
/// last `n` jobs for each window size.
pub fn trace_stats(trace: &Path, last: &[usize]) -> Result<()> {
    let reader = SwfReader::open(trace)?;
    for (k, v) in &reader.header().fields {
        println!("; {k}: {v}");
    }
    let max = last.iter().copied().max().unwrap_or(0);
    let (_, records) = reader.into_last(max)?;
    for &n in last {
        let window = &records[records.len().saturating_sub(n)..];
        println!(
            "\nlast {n} jobs of {}:\n{}",
            trace.display(),
            WindowStats::compute(window)
        );
    }
    Ok(())
}
