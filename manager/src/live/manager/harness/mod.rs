//! The deterministic harness: the live manager's core ([`LiveCore`]) and
//! node processes running `libratory-node`'s own link logic (its
//! `LinkMachine`) in front of the real node engines ([`node`]), connected
//! by a simulated network, in virtual time, driven by one discrete-event
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
//!   process keeps its parts (the grace period), reconnects and rejoins;
//! - a partition of one process's link: shorter than the link timeout, the
//!   frames wait for its end (retransmission); longer, the node process
//!   gives the link up at start + timeout and reconnects, and the manager
//!   gives it up to 0.5 s later (their timers are not in step);
//! - the manager crashes (`manager.rs`): its core is dropped, frames to it
//!   and those a partition held in its buffers are lost, every process
//!   notices (a reset, or its idle timeout) and keeps its parts while it
//!   retries; after 0.5-10 s a new core takes the run over from the
//!   journal the old one wrote, through `libratory resume`'s own steps,
//!   and the processes rejoin it with their parts.
//!
//! Faults fall anywhere in the first 1,500 trace seconds after the
//! replay's start (during the replay, as the last jobs end, or while the
//! manager collects the histograms), or, one in six, while the node
//! processes register (a manager crash: always after the replay's start).
//!
//! After each run `check` verifies the invariants (see there).

mod check;
mod manager;
mod node;
mod scenario;
mod world;

#[cfg(test)]
mod tests;
