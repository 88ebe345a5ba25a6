//! Libratory's emulated compute nodes: they really burn CPU, time-sliced by
//! the Job Control shares.
//!
//! - [`spec`]: what a node and a part are ([`EmulatedNodeSpec`], [`PartSpec`],
//!   [`SliceConfig`]).
//! - [`core`]: the pure node ([`NodeEngine`]): share bookkeeping, credit
//!   accounting, which part runs next, the control tick. Takes `now`.
//! - [`clock`]: the trace clock and the thread CPU clock.
//! - [`exec`]: the executor threads that burn CPU for every node.
//! - [`actor`]: the node actor that drives a core with real clocks, and
//!   its messages ([`PlacePart`], [`NodeReport`], [`GetTelemetry`], ...).
//! - [`host`]: many nodes in one process over one executor pool.
//! - [`telemetry`]: assigned versus delivered share, overrun, jitter.
//! - [`standalone`]: run nodes against a local list of parts.
//! - [`kernel`]: the baseline under the kernel's CPU bandwidth control.
//! - [`link`]: the QUIC link to the manager.
//! - [`exception`]: reports by exception (which parts' progress the link
//!   sends).
//! - [`probe`]: the pre-flight check that this host reaches the manager.
pub mod actor;
pub mod clock;
pub mod core;
pub mod exception;
pub mod exec;
pub mod host;
pub mod kernel;
pub mod link;
pub mod linkfault;
pub mod nodefault;
pub mod probe;
pub mod spec;
pub mod standalone;
pub mod telemetry;

pub use crate::actor::{
    report_channel, GetStatus, GetTelemetry, NodeActor, NodeReport, NodeSnapshot, PlacePart,
    PlaceReported, SetReportSink, WithdrawPart,
};
pub use crate::core::{
    NodeEngine, NodeEvent, PartCompletion, PartStanding, PlaceError, ShareReason, Slice,
};
pub use crate::host::{HostError, NodeHost};
pub use crate::spec::{EmulatedNodeSpec, NodeId, NodePartId, PartSpec, SliceConfig, SpecError};
pub use crate::telemetry::{NodeTelemetry, PartTelemetry};
