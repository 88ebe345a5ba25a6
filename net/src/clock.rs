//! The trace clock: the one mapping between wall-clock instants and trace
//! seconds ([`common::Time`]) in a live run.
//!
//! The core in `common` never reads a clock; the live manager and the node
//! actors read this one and pass `now` in. The simulator needs no clock at
//! all: it jumps from event to event in virtual time.

use std::time::{Duration, Instant};

use common::Time;

/// Maps wall-clock instants to trace time: `trace = origin_trace +
/// (wall - origin_wall) / time_scale`. Cheap to copy; every node of a
/// process shares one so that their trace times agree, and a node starts
/// its clock at the trace time the manager's welcome states.
#[derive(Debug, Clone, Copy)]
pub struct TraceClock {
    origin_wall: Instant,
    origin_trace: Time,
    time_scale: f64,
}

impl TraceClock {
    /// A clock that reads `origin_trace` now and advances by one trace
    /// second every `time_scale` real seconds.
    pub fn new(origin_trace: Time, time_scale: f64) -> Self {
        TraceClock {
            origin_wall: Instant::now(),
            origin_trace,
            time_scale,
        }
    }

    /// Real seconds per trace second.
    pub fn time_scale(&self) -> f64 {
        self.time_scale
    }

    /// The trace time of a wall-clock instant.
    pub fn at(&self, wall: Instant) -> Time {
        let real = if wall >= self.origin_wall {
            (wall - self.origin_wall).as_secs_f64()
        } else {
            -(self.origin_wall - wall).as_secs_f64()
        };
        self.origin_trace + real / self.time_scale
    }

    /// The trace time now.
    pub fn now(&self) -> Time {
        self.at(Instant::now())
    }

    /// The wall instant of trace time `t`; a time before the clock's origin
    /// maps to the origin (an `Instant` before the clock started is of no
    /// use to a timer).
    pub fn instant_of(&self, t: Time) -> Instant {
        let real = far(((t - self.origin_trace) * self.time_scale).max(0.0));
        self.origin_wall
            .checked_add(real)
            .unwrap_or_else(|| self.origin_wall + FAR)
    }

    /// How long from now (real) until trace time `t`; zero if it has passed.
    pub fn until(&self, t: Time) -> Duration {
        let real = (t - self.now()) * self.time_scale;
        if real > 0.0 {
            far(real)
        } else {
            Duration::ZERO
        }
    }
}

/// Further than any run goes (about 31 years): what an instant beyond a
/// `Duration` or an `Instant` (a time or scale out of every range) maps
/// to, rather than a panic.
const FAR: Duration = Duration::from_secs(1 << 30);

/// `secs` (>= 0, maybe infinite) as a duration, at most [`FAR`].
fn far(secs: f64) -> Duration {
    Duration::try_from_secs_f64(secs).map_or(FAR, |d| d.min(FAR))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_scales_beyond_any_run_are_far_not_a_panic() {
        let c = TraceClock::new(0.0, 1e300);
        assert_eq!(c.until(1e10), FAR);
        assert!(c.instant_of(1e10) >= c.origin_wall + FAR);
        let c = TraceClock::new(0.0, 1e-3);
        assert_eq!(c.until(f64::INFINITY), FAR);
        assert_eq!(c.until(f64::NAN), Duration::ZERO);
    }

    #[test]
    fn trace_clock_scales() {
        let c = TraceClock::new(100.0, 1e-3);
        let t0 = c.origin_wall;
        assert!((c.at(t0) - 100.0).abs() < 1e-9);
        assert!((c.at(t0 + Duration::from_millis(5)) - 105.0).abs() < 1e-6);
        assert!((c.at(t0 - Duration::from_millis(5)) - 95.0).abs() < 1e-6);
    }

    #[test]
    fn instant_of_inverts_at() {
        let c = TraceClock::new(100.0, 1e-3);
        let w = c.instant_of(107.0);
        assert_eq!(w - c.origin_wall, Duration::from_millis(7));
        assert!((c.at(w) - 107.0).abs() < 1e-6);
        // Before the origin: the origin itself.
        assert_eq!(c.instant_of(50.0), c.origin_wall);
    }
}
