//! A live run: the QUIC server, one link actor per node connection, the
//! manager actor that drives the [`ManagerCore`], the workload replay and
//! the collection of records and latency histograms.
//!
//! The actors hold no policy logic: each handler feeds an event to the core
//! with `now` from the [`TraceClock`] and forwards what the core returns.
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
mod gate;
mod link;
mod messages;
mod rejoin;
mod server;

pub use config::{FaultNotes, LiveConfig, LiveOutcome, NodeHistogram, MANAGER_HISTOGRAMS};
pub use messages::Abort;
pub use server::{run, Threads};
