//! Reports by exception: which parts' progress a node process tells the
//! manager.
//!
//! The manager dead-reckons every part from its last report (common's
//! admission core): `work_done(t) = work_done(r) + share(r) x speed x (t -
//! at(r))`, exact while the share holds and the node gets its capacity.
//! Sending each running part every report period therefore mostly repeats
//! what the manager already knows, and its cost grows with the busy nodes
//! instead of with what changes. The relay sends a part's progress only
//! when
//! - the manager has none yet (the part's first report after it started),
//! - its share differs from the one last sent by enough to carry it a
//!   tenth of the tolerance away from the manager's extrapolation within
//!   one report period ([`SHARE_DRIFT`]: a node-local event changed the
//!   shares, so the extrapolation is off from then on), or
//! - its work done departs from the manager's extrapolation by more than
//!   [`TOLERANCE`] of the node's whole processor (the host did not give
//!   the node its capacity, the slices ran late, a share change too small
//!   to go out at once added up, ...).
//!
//! Completions and heartbeats go out as before. A part whose report is
//! held is where the manager puts it, within the tolerance, at every
//! report. docs/node.md states the tolerance and why it is what it is.

use std::time::Duration;

use common::protocol::{NodeProgress, PartId, PartProgress};
use common::time::Time;
use rustc_hash::FxHashMap;

/// How far (in real time of the node's whole processor) a part's work
/// done may be from the manager's extrapolation before it is reported:
/// two slicing periods (2 x 10 ms). A part's reported work excludes the
/// slice it is burning, and a node carries up to two periods of unspent
/// credit before its tick forgives it, so a part on schedule already
/// swings by up to that much around the line the manager draws; reporting
/// below it would send that swing, not departures.
pub const TOLERANCE: Duration = Duration::from_millis(20);

/// The share change that goes out at once, as a fraction of the
/// tolerance it would carry a part within one report period: a tenth.
/// Every event on a node moves every part's share a little (the rule's
/// `rem / rd` moves with time), so sending every change sends every part
/// at every event: with 190,000 parts on one node (best fit under a
/// flood of tiny jobs) each completion made the whole node's reports go
/// out. A change below this adds up in the extrapolation until the
/// departure test sends it, within the tolerance.
pub const SHARE_DRIFT: f64 = 0.1;

/// Overrides [`TOLERANCE`] (milliseconds of real time; `0` sends every
/// running part every report period, as before reports by exception), for
/// comparing the two on the same build.
pub const TOLERANCE_ENV: &str = "LIBRATORY_REPORT_TOLERANCE_MS";

/// The tolerance for nodes of `capacity` (of one core) whose slices are
/// at least `min_slice` of processor time: [`TOLERANCE`], or two of the
/// shortest slices in the node's own time when that is longer. A node of
/// 0.00002 of a core burns a 250 us slice in 12.5 s of real time; its
/// reported work moves in steps that large, so a tolerance below them
/// would send every report.
pub fn tolerance_for(capacity: f64, min_slice: Duration) -> Duration {
    let step = min_slice.as_secs_f64() / capacity.max(f64::MIN_POSITIVE);
    TOLERANCE.max(Duration::from_secs_f64((2.0 * step).min(1e9)))
}

/// [`TOLERANCE_ENV`]'s value read by `main` once: a number of ms >= 0,
/// or an error naming the variable and the value.
pub fn tolerance_override(value: &str) -> Result<Duration, String> {
    match value.trim().parse::<f64>() {
        Ok(ms) if ms.is_finite() && ms >= 0.0 => Ok(Duration::from_secs_f64(ms / 1000.0)),
        _ => Err(format!(
            "{TOLERANCE_ENV}={value:?} is not a number of ms >= 0"
        )),
    }
}

/// Applies `rule` to a batch of node reports: each keeps the parts the
/// manager needs; nodes left with none are dropped.
pub fn retain_reports(rule: &mut ExceptionRule, reports: &mut Vec<NodeProgress>) {
    for r in reports.iter_mut() {
        rule.retain(r.at, &mut r.parts);
    }
    reports.retain(|r| !r.parts.is_empty());
}

/// What the manager was last told of a part.
#[derive(Debug, Clone, Copy)]
struct Sent {
    work_done: f64,
    share: f64,
    at: Time,
}

/// The rule, with what was last sent of every running part of a node
/// process.
#[derive(Debug)]
pub struct ExceptionRule {
    /// The tolerance in the reports' unit (reference seconds of work).
    tolerance: f64,
    /// The process's nodes' speed (they share one spec).
    speed: f64,
    /// The share change sent at once (see [`SHARE_DRIFT`]).
    share_step: f64,
    last: FxHashMap<PartId, Sent>,
    /// Part reports sent and held back, for the process's log.
    pub sent: u64,
    /// Part reports held back (the manager's extrapolation was within the
    /// tolerance).
    pub held: u64,
}

impl ExceptionRule {
    /// For nodes of `speed` whose trace runs at `time_scale` real seconds
    /// per trace second, with the tolerance `tolerance` of real time,
    /// reporting every `period` of real time.
    pub fn new(tolerance: Duration, time_scale: f64, speed: f64, period: Duration) -> Self {
        // |change| x speed x period (trace s) against a tenth of the
        // tolerance (reference s): the speed and the time scale cancel.
        let period = period.as_secs_f64().max(1e-3);
        ExceptionRule {
            tolerance: tolerance.as_secs_f64() / time_scale * speed,
            speed,
            share_step: SHARE_DRIFT * tolerance.as_secs_f64() / period,
            last: FxHashMap::default(),
            sent: 0,
            held: 0,
        }
    }

    /// The tolerance in reference seconds of work.
    pub fn tolerance(&self) -> f64 {
        self.tolerance
    }

    /// Keeps in `parts` (progress as of `at`) only the reports the manager
    /// needs, and remembers them as sent.
    pub fn retain(&mut self, at: Time, parts: &mut Vec<PartProgress>) {
        parts.retain(|p| {
            let send = match self.last.get(&p.part) {
                None => true,
                Some(s) => {
                    let predicted = s.work_done + s.share * self.speed * (at - s.at).max(0.0);
                    // A zero tolerance sends every part (the rule off).
                    self.tolerance == 0.0
                        || (p.share - s.share).abs() > self.share_step
                        || (p.work_done - predicted).abs() > self.tolerance
                }
            };
            if send {
                self.last.insert(
                    p.part,
                    Sent {
                        work_done: p.work_done,
                        share: p.share,
                        at,
                    },
                );
                self.sent += 1;
            } else {
                self.held += 1;
            }
            send
        });
    }

    /// The part ended (completed, refused, withdrawn): nothing more is
    /// predicted of it.
    pub fn forget(&mut self, part: PartId) {
        self.last.remove(&part);
    }

    /// Parts remembered (running parts reported at least once).
    pub fn tracked(&self) -> usize {
        self.last.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(job: u64, work_done: f64, share: f64) -> PartProgress {
        PartProgress {
            part: PartId { job, index: 0 },
            node: 0,
            work_done,
            share,
        }
    }

    #[test]
    fn first_reports_share_changes_and_departures_go_out_the_rest_is_held() {
        // time_scale 0.01: 20 ms real is 2 trace s; speed 2: 4 reference s.
        // Reports every 100 ms real (10 trace s): a share change goes out
        // at once above 0.1 x 20 / 100 = 0.02 (0.02 x 2 x 10 = 0.4, a
        // tenth of the tolerance).
        let mut r = ExceptionRule::new(TOLERANCE, 0.01, 2.0, Duration::from_millis(100));
        assert!((r.tolerance() - 4.0).abs() < 1e-12);
        // First report of two parts: both go.
        let mut v = vec![part(1, 0.0, 0.5), part(2, 1.0, 0.25)];
        r.retain(10.0, &mut v);
        assert_eq!(v.len(), 2);
        // 10 trace s later: part 1 predicted 0 + 0.5 x 2 x 10 = 10, at 13
        // (3 off: held); part 2 predicted 1 + 0.25 x 2 x 10 = 6, at 10.5
        // (4.5 off: sent).
        let mut v = vec![part(1, 13.0, 0.5), part(2, 10.5, 0.25)];
        r.retain(20.0, &mut v);
        assert_eq!(v, vec![part(2, 10.5, 0.25)]);
        // Part 1 is still predicted from its first report: at 30, 20; it is
        // at 20 but its share changed to 1: sent.
        let mut v = vec![part(1, 20.0, 1.0), part(2, 15.5, 0.25)];
        r.retain(30.0, &mut v);
        assert_eq!(v, vec![part(1, 20.0, 1.0)]);
        assert_eq!((r.sent, r.held), (4, 2));
        // Part 2, predicted from 10.5 at 20 at 0.25: at 40 its share is
        // 0.26 (0.01 off: held, on its line at 20.5); at 50 it ran at 0.26
        // to 25.7 (0.2 off the line's 25.5: held); at 60 its share is 0.28
        // (0.03 off: sent).
        for (t, done, share, sent) in [
            (40.0, 20.5, 0.26, false),
            (50.0, 25.7, 0.26, false),
            (60.0, 30.5, 0.28, true),
        ] {
            let mut v = vec![part(2, done, share)];
            r.retain(t, &mut v);
            assert_eq!(v.len(), usize::from(sent), "at {t}");
        }
        assert_eq!((r.sent, r.held), (5, 4));
        // A forgotten part is new again.
        r.forget(PartId { job: 1, index: 0 });
        assert_eq!(r.tracked(), 1);
        let mut v = vec![part(1, 0.0, 1.0)];
        r.retain(31.0, &mut v);
        assert_eq!(v.len(), 1);
    }

    #[test]
    fn the_tolerance_covers_two_of_the_shortest_slices_of_a_small_node() {
        let us250 = Duration::from_micros(250);
        // A node of a whole core: 250 us slices are well under 20 ms.
        assert_eq!(tolerance_for(1.0, us250), TOLERANCE);
        // 0.01 core: a slice lasts 25 ms of real time, two 50 ms.
        assert_eq!(tolerance_for(0.01, us250), Duration::from_millis(50));
        // Fugaku-scale nodes of 0.00002 core: 12.5 s a slice, 25 s.
        assert_eq!(tolerance_for(0.00002, us250), Duration::from_secs(25));
    }

    #[test]
    fn a_report_before_the_last_one_predicts_no_negative_work() {
        let mut r = ExceptionRule::new(TOLERANCE, 1.0, 1.0, Duration::from_millis(100));
        let mut v = vec![part(1, 5.0, 1.0)];
        r.retain(10.0, &mut v);
        // An earlier instant (reports of one process are not ordered by
        // node): the prediction stays at the last report.
        let mut v = vec![part(1, 5.0, 1.0)];
        r.retain(9.0, &mut v);
        assert!(v.is_empty());
    }
}
