//! Offline experiments: workloads through policies in virtual time, sweeps,
//! the papers' figures, and comparisons of run directories.

pub mod compare;
pub mod figures;
pub mod info;
pub mod metric_table;
pub mod replay;
pub mod report;
pub mod simulate;
pub mod sweep;
pub mod trace_cache;
