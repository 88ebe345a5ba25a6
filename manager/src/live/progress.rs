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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_positive_and_finite_or_the_option_is_named() {
        assert_eq!(seconds("--x", 0.25).unwrap(), Duration::from_millis(250));
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let e = seconds("--every", bad).unwrap_err().to_string();
            assert!(e.starts_with("--every must be"), "{e}");
        }
    }

    #[test]
    fn lines_when_asked_else_a_bar_on_a_terminal_else_quiet() {
        assert!(matches!(
            Progress::choose(Some(2.0), true).unwrap(),
            Progress::Lines(d) if d == Duration::from_secs(2)
        ));
        assert!(matches!(
            Progress::choose(None, true).unwrap(),
            Progress::Bar
        ));
        assert!(matches!(
            Progress::choose(None, false).unwrap(),
            Progress::Quiet
        ));
        assert!(Progress::choose(Some(0.0), false).is_err());
    }
}
