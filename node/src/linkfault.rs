//! Faults of the link to the manager, made by the node itself (`tc netem`
//! is not available on every host, and a fault scenario must run the same
//! everywhere): a partition holds every frame, both ways, until it heals;
//! a delay holds every frame for a fixed time plus a seeded uniform jitter.
//!
//! What it is for: `libratory run --faults` (docs/faults.md). The manager's
//! fault injector writes one command line to the file given as
//! `--fault-control FILE` and sends SIGUSR1; the link reads it and applies
//! it to the frames it sends and receives from then on:
//!
//! ```text
//! partition SECONDS
//! delay DELAY_MS JITTER_MS SECONDS SEED
//! ```
//!
//! Frames are held, never dropped: QUIC would deliver them after a real
//! partition heals too. A partition longer than the manager's link timeout
//! makes the manager give the process up (no heartbeat arrives); when it
//! heals, the process finds its link closed and exits, and is started
//! again as new.

use std::path::Path;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::time::Instant;

/// The link's current faults.
#[derive(Debug, Default)]
pub struct LinkFaults {
    partition_until: Option<Instant>,
    delay: Option<Delay>,
}

#[derive(Debug)]
struct Delay {
    fixed: Duration,
    jitter: Duration,
    until: Instant,
    rng: ChaCha8Rng,
}

impl LinkFaults {
    /// Applies one command line (see the module docs) at `now`.
    pub fn apply(&mut self, line: &str, now: Instant) -> Result<String, String> {
        let w: Vec<&str> = line.split_whitespace().collect();
        let num = |s: &str| -> Result<f64, String> {
            s.parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| format!("{line:?}: {s:?} is not a number >= 0"))
        };
        match w.as_slice() {
            ["partition", secs] => {
                let until = now + Duration::from_secs_f64(num(secs)?);
                self.partition_until = Some(until);
                Ok(format!("link partitioned for {secs} s"))
            }
            ["delay", d, j, secs, seed] => {
                let seed: u64 = seed
                    .parse()
                    .map_err(|_| format!("{line:?}: seed {seed:?} is not an integer"))?;
                self.delay = Some(Delay {
                    fixed: Duration::from_secs_f64(num(d)? / 1000.0),
                    jitter: Duration::from_secs_f64(num(j)? / 1000.0),
                    until: now + Duration::from_secs_f64(num(secs)?),
                    rng: ChaCha8Rng::seed_from_u64(seed),
                });
                Ok(format!(
                    "link delayed by {d} ms + up to {j} ms for {secs} s"
                ))
            }
            _ => Err(format!(
                "{line:?}: expected `partition SECONDS` or `delay MS JITTER_MS SECONDS SEED`"
            )),
        }
    }

    /// When a frame sent or received at `at` may go on: `None` if at once.
    pub fn due(&mut self, at: Instant) -> Option<Instant> {
        let mut due = None;
        if let Some(until) = self.partition_until {
            if at < until {
                due = Some(until);
            } else {
                self.partition_until = None;
            }
        }
        if let Some(d) = &mut self.delay {
            if at < d.until {
                let jitter = d.jitter.mul_f64(d.rng.random::<f64>());
                let t = at + d.fixed + jitter;
                due = Some(due.map_or(t, |u: Instant| u.max(t)));
            } else {
                self.delay = None;
            }
        }
        due
    }
}

/// The commands appended to the control file at `path` since the
/// `applied` lines read before (then counted in): the injector appends one
/// line per fault and signals once each, but signals that come together
/// are one, so every new line is read at each. The injector empties the
/// file when it starts the process again.
pub fn read_new_commands(path: &Path, applied: &mut usize) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let lines: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    // A file shorter than what was read is a new one: all of it is new.
    let from = if lines.len() < *applied { 0 } else { *applied };
    *applied = lines.len();
    Ok(lines[from..].to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_appended_since_the_last_read_is_read_once() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("ctl");
        let mut applied = 0;
        std::fs::write(&f, "partition 2\n").unwrap();
        assert_eq!(
            read_new_commands(&f, &mut applied).unwrap(),
            ["partition 2"]
        );
        // Two appended before one signal is read: both, in order.
        std::fs::write(&f, "partition 2\nnode 1 slow 0.5 3\nnode 2 hang 1\n").unwrap();
        assert_eq!(
            read_new_commands(&f, &mut applied).unwrap(),
            ["node 1 slow 0.5 3", "node 2 hang 1"]
        );
        assert!(read_new_commands(&f, &mut applied).unwrap().is_empty());
        // Emptied for a new process and written again.
        std::fs::write(&f, "delay 50 0 10 1\n").unwrap();
        assert_eq!(
            read_new_commands(&f, &mut applied).unwrap(),
            ["delay 50 0 10 1"]
        );
    }

    #[test]
    fn a_partition_holds_frames_until_it_heals_and_a_delay_adds_its_time() {
        let t0 = Instant::now();
        let mut f = LinkFaults::default();
        assert_eq!(f.due(t0), None);
        f.apply("partition 2", t0).unwrap();
        assert_eq!(
            f.due(t0 + Duration::from_secs(1)),
            Some(t0 + Duration::from_secs(2))
        );
        assert_eq!(f.due(t0 + Duration::from_secs(3)), None);
        f.apply("delay 50 0 10 1", t0).unwrap();
        let at = t0 + Duration::from_secs(4);
        assert_eq!(f.due(at), Some(at + Duration::from_millis(50)));
        f.apply("delay 50 20 10 1", t0).unwrap();
        for _ in 0..100 {
            let d = f.due(at).unwrap() - at;
            assert!(
                d >= Duration::from_millis(50) && d <= Duration::from_millis(70),
                "{d:?}"
            );
        }
        assert_eq!(f.due(t0 + Duration::from_secs(11)), None);
        assert!(f.apply("partition x", t0).unwrap_err().contains("\"x\""));
        assert!(f.apply("explode", t0).is_err());
    }
}
