//! The two clocks a real node reads, kept out of the core: the trace clock
//! (wall time scaled by `time_scale`) and the calling thread's CPU clock.
//!
//! [`crate::core::NodeCore`] never reads either; the actor reads the trace
//! clock and passes `now` in, the executors read the CPU clock and report
//! nanoseconds burned.

use std::time::{Duration, Instant};

use common::Time;

/// Maps wall-clock instants to trace time: `trace = origin_trace +
/// (wall - origin_wall) / time_scale`. Cheap to copy; every node of a
/// process shares one so that their trace times agree.
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

    /// How long from now (real) until trace time `t`; zero if it has passed.
    pub fn until(&self, t: Time) -> Duration {
        let real = (t - self.now()) * self.time_scale;
        if real > 0.0 && real.is_finite() {
            Duration::from_secs_f64(real)
        } else {
            Duration::ZERO
        }
    }
}

fn read_clock(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock ids used here
    // exist on every Linux since 2.6.12, so the call cannot fail.
    let rc = unsafe { libc::clock_gettime(id, &mut ts) };
    debug_assert_eq!(rc, 0);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Processor time the calling thread has consumed (ns), from
/// `CLOCK_THREAD_CPUTIME_ID`: advances only while the thread really runs, so
/// time spent preempted by other processes is not counted as work.
pub fn thread_cpu_ns() -> u64 {
    read_clock(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// Processor time the whole calling process has consumed (ns), from
/// `CLOCK_PROCESS_CPUTIME_ID`.
pub fn process_cpu_ns() -> u64 {
    read_clock(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// The monotonic clock (ns); usable after `fork` where `Instant` is too.
pub fn monotonic_ns() -> u64 {
    read_clock(libc::CLOCK_MONOTONIC)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_clock_scales() {
        let c = TraceClock::new(100.0, 1e-3);
        let t0 = c.origin_wall;
        assert!((c.at(t0) - 100.0).abs() < 1e-9);
        assert!((c.at(t0 + Duration::from_millis(5)) - 105.0).abs() < 1e-6);
    }

    #[test]
    fn thread_clock_advances_with_work() {
        let a = thread_cpu_ns();
        let mut x = 1u64;
        for i in 0..2_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
        }
        assert!(thread_cpu_ns() > a, "{x}");
    }
}
