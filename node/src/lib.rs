//! Libratory's emulated compute nodes: they really burn CPU, time-sliced by
//! the Job Control shares.
//!
//! - [`spec`]: what a node and a part are ([`NodeSpec`], [`PartSpec`],
//!   [`SliceConfig`]).
//! - [`core`]: the pure node ([`NodeCore`]): share bookkeeping, credit
//!   accounting, which part runs next, the control tick. Takes `now`.
//! - [`clock`]: the trace clock and the thread CPU clock.
pub mod clock;
pub mod core;
pub mod spec;
pub mod telemetry;

pub use crate::core::{NodeCore, NodeEvent, PartCompletion, PartProgress, PlaceError, Slice};
pub use crate::spec::{NodeId, NodeSpec, PartId, PartSpec, SliceConfig, SpecError};
pub use crate::telemetry::{NodeTelemetry, PartTelemetry};
