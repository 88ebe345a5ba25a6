//! A live run: the QUIC server, one link actor per node connection, and
//! the manager actor carrying messages and timers for the live core
//! (`core::LiveCore`), which decides everything the run does around the
//! admission core (`common::admission::ManagerCore`): the workload replay,
//! the phases, the records, the latency histograms, the journal entries.
//!
//! The actors hold no run logic: each handler turns a message or a timer
//! into a core event with the time from the `net::TraceClock` and carries
//! out the actions the core returns.
//!
//! Lifecycle: bind, accept node processes until the expected number of
//! emulated nodes has registered (or the start timeout passes), replay the
//! workload (trace time mapped to real time by `time_scale`), wait until
//! every job is over, collect the nodes' histograms, tell the nodes to shut
//! down, return the outcome.
//!
//! Time axes: the trace clock starts when the first node process registers
//! (each node is told the mapping in its welcome), and the replay starts
//! only once every node has registered, `offset` trace seconds later. A
//! job of submit time `t` is submitted at clock time `offset + t`, so the
//! first jobs are not late by the registration time, and the records
//! handed back are shifted by `-offset`: they are on the workload's own
//! axis, as the simulator's are, and the two compare job by job.
//!
//! A shutdown signal (Ctrl-C, or the future given
//! by a test) ends the run early; jobs still open are then recorded as
//! lost with that reason.

mod actor;
mod config;
mod core;
mod gate;
#[cfg(test)]
mod harness;
mod link;
mod messages;
mod server;

pub use self::core::{FaultKey, Takeover};
pub use config::{LiveConfig, LiveOutcome, NodeHistogram, MANAGER_HISTOGRAMS};
pub use messages::Abort;
pub use server::{run, Threads};
