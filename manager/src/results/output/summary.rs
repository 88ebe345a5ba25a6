//! `summary.json` (and the run's other pretty JSON files: the manifest,
//! `loadtest.json`): serde's pretty JSON, newline-terminated.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;

/// Writes `value` as pretty JSON to `path` (newline-terminated).
pub fn write_json(path: &Path, value: &impl Serialize) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}
