//! Time as a value the project owns.
//!
//! All policy and model code works in *trace seconds* ([`Time`], an `f64`).
//! The simulator advances it as fast as it can; the live manager maps it to
//! wall-clock time through `time_scale`. Nothing in this crate reads a clock.

/// Seconds of trace time (absolute instants and durations alike).
pub type Time = f64;

/// Two instants closer than this are the same instant for event ordering,
/// and a part with less than this much work left is finished. Chosen far
/// below one microsecond of trace time and far above f64 rounding on the
/// ~1e8 s magnitudes of trace timestamps (ulp there is ~1.5e-8 s).
pub const TIME_EPS: Time = 1e-6;

/// A deadline is met when the finish is no later than this after it.
pub const DEADLINE_TOLERANCE: Time = 1e-6;

/// Sort keys (best-fit load, RESFree, return) closer than this are a tie,
/// and a tie goes to the lower node index (see docs/policies.md, Numerics).
pub const KEY_TIE_EPS: f64 = 1e-9;
