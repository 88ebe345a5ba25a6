//! The deterministic harness: the live manager's core ([`LiveCore`]) and
//! node processes running the real node engines ([`node`]), connected by
//! a simulated network, in virtual time, driven by one discrete-event
//! queue. Everything random (the workload, the policy, frame delays, the
//! fault schedule, burn overshoots) comes from one seed, so a run is a
//! function of its seed and a failure replays exactly.
//!
//! The network carries the real frames: every message is encoded with
//! `common::protocol::encode` and decoded on the other side by a
//! `protocol::Decoder` fed in two pieces, so a codec mistake fails here.
//! A link is a reliable ordered stream (QUIC's): frames are delayed (a
//! seeded latency, with spikes) but never reordered; a frame is lost only
//! with its link. Faults, each named "fault #k" in the reason the manager
//! is given:
//! - a node process crashes: its engines and parts are gone at once; the
//!   manager learns it one link timeout later (the idle timeout); the
//!   process restarts and registers again (its nodes join as new nodes);
//! - a connection reset: both ends see the link closed at once; the node
//!   process exits (as `libratory-node` does) and restarts;
//! - a partition of one process's link: shorter than the link timeout, the
//!   frames wait for its end (retransmission); longer, the node process
//!   gives the link up at start + timeout and restarts, and the manager
//!   up to 0.5 s later (their timers are not in step).
//!
//! Faults fall anywhere in the first 1,500 trace seconds after the
//! replay's start (during the replay, as the last jobs end, or while the
//! manager collects the histograms), or, one in six, while the node
//! processes register.
//!
//! The manager process does not restart here: the harness does not yet
//! drive `LiveCore::resumed` (the chaos test covers manager crashes live).
//!
//! After each run `check` verifies the invariants (see there).

mod check;
mod node;
mod world;

#[cfg(test)]
mod tests;
