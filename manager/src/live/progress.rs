//! How a live run shows its progress on stderr, and the positive
//! durations the live commands take on their command lines.

use std::time::Duration;

use anyhow::{bail, Result};

/// How `libratory run` reports progress on stderr.
#[derive(Debug, Clone, Copy)]
pub enum Progress {
    /// Nothing until the end.
    Quiet,
    /// A live progress bar (stderr is a terminal).
    Bar,
    /// A plain line every so often, and one per registration (for logs
    /// and launch scripts).
    Lines(Duration),
}

impl Progress {
    /// Lines every `every` seconds when given, else a bar on a terminal,
    /// else nothing.
    pub fn choose(every: Option<f64>, terminal: bool) -> Result<Progress> {
        Ok(match every {
            Some(s) => Progress::Lines(seconds("--progress-every", s)?),
            None if terminal => Progress::Bar,
            None => Progress::Quiet,
        })
    }
}

/// A positive number of seconds from the command line, or an error naming
/// the option.
pub fn seconds(option: &str, s: f64) -> Result<Duration> {
    if !(s > 0.0 && s.is_finite()) {
        bail!("{option} must be a number of seconds > 0, got {s}");
    }
    Ok(Duration::from_secs_f64(s))
}
