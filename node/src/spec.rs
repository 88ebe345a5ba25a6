//! What a node is and what runs on it: the node's configuration
//! ([`EmulatedNodeSpec`], [`SliceConfig`]) and the unit of work placed on it
//! ([`PartSpec`]).
//!
//! These are plain values with validation and no behaviour; the accounting
//! lives in [`crate::core`]. Times are trace seconds ([`Time`]) except the
//! slicer's knobs, which are real durations because they describe how the
//! host's processor is cut up, not the workload.

use std::time::Duration;

use common::share::SpareRule;
use common::{JobId, Time};
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Identity of a part on the node it is placed on: a node-local number,
/// unique on that node. Not the manager's [`common::protocol::PartId`]
/// (job, index): the node link numbers the parts it places and maps its
/// numbers back to the manager's ids in reports; standalone runs number
/// them themselves.
pub type NodePartId = u64;

/// Identity of an emulated node within a cluster.
pub type NodeId = u32;

/// One emulated compute node: a processor of some speed, of which the node
/// may use only a fraction of one host core. (The policies' view of a node
/// is [`common::node_model::NodeSpec`]; the node link announces this one to
/// the manager as a [`common::protocol::NodeInfo`], memory in the same KB.)
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EmulatedNodeSpec {
    /// The node's identity (its index in the cluster).
    pub id: NodeId,
    /// Processor speed relative to the reference node (1.0): a part needs
    /// `runtime / speed` of this node's processor time.
    pub speed: f64,
    /// Fraction of one host core the node's processor stands for (0 < c).
    /// Many nodes of small capacity share a host's cores; progress is the
    /// processor time burned divided by this.
    pub capacity: f64,
    /// Memory of the node (KB, the unit of SWF traces and of the policies'
    /// [`common::node_model::NodeSpec`]); parts' memory must fit.
    pub memory_kb: u64,
    /// Disk of the node (MB); parts' disk must fit.
    pub disk_mb: u64,
}

impl EmulatedNodeSpec {
    /// Checks speed and capacity are finite and positive.
    pub fn validate(&self) -> Result<(), SpecError> {
        let node = self.id;
        for (field, value) in [("speed", self.speed), ("capacity", self.capacity)] {
            if !(value.is_finite() && value > 0.0) {
                return Err(SpecError::Node { node, field, value });
            }
        }
        Ok(())
    }
}

/// One part of a job (one processor's worth) as placed on a node.
///
/// `estimate` and `actual` are in seconds of the *reference* node (speed
/// 1.0), the way traces state runtimes; on a node of speed `s` the part needs
/// `actual / s` of that node's processor time. The Job Control rule only
/// ever sees `estimate`; `actual` decides when the burning stops.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartSpec {
    /// Identity, unique on the node.
    pub part_id: NodePartId,
    /// The job this part belongs to.
    pub job_id: JobId,
    /// Runtime estimate RE (reference seconds).
    pub estimate: Time,
    /// Actual runtime R (reference seconds), hidden from the share rule.
    pub actual: Time,
    /// Absolute deadline DT (trace seconds, on the node's trace clock).
    pub deadline_abs: Time,
    /// Memory the part holds while it runs (KB).
    #[serde(default)]
    pub memory_kb: u64,
    /// Disk the part holds while it runs (MB).
    #[serde(default)]
    pub disk_mb: u64,
    /// The job's return, used only by [`SpareRule::HighestReturn`].
    #[serde(default)]
    pub ret: f64,
    /// Whether the job has a hard deadline (the LibraSLA share rule never
    /// delays such a part to make room for others).
    #[serde(default)]
    pub hard: bool,
}

impl PartSpec {
    /// Checks the numbers: estimate and actual finite and > 0, deadline
    /// finite, return finite.
    pub fn validate(&self) -> Result<(), SpecError> {
        let part = self.part_id;
        let checks = [
            ("estimate", self.estimate, true),
            ("actual", self.actual, true),
            ("deadline_abs", self.deadline_abs, false),
            ("ret", self.ret, false),
        ];
        for (field, value, positive) in checks {
            if !value.is_finite() || (positive && value <= 0.0) {
                return Err(SpecError::Part { part, field, value });
            }
        }
        Ok(())
    }
}

/// How the node cuts the host's processor up among its parts. All knobs are
/// real (host) durations, independent of the trace's time scale.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SliceConfig {
    /// Real seconds per trace second (real = trace x time_scale).
    pub time_scale: f64,
    /// Slicing period: each part is granted `share x capacity x period` of
    /// processor time per period and usually runs once per period.
    pub period: Duration,
    /// Control tick: compares delivered with assigned shares, bounds the
    /// credit backlog and records telemetry. It never re-plans shares.
    pub tick: Duration,
    /// What happens to capacity the on-track parts do not need.
    pub spare_rule: SpareRule,
    /// Shortest slice handed to an executor (except a part's last bit of
    /// work): shorter slices cost more in dispatch than they burn.
    pub min_slice: Duration,
    /// Longest slice, so that one part cannot hold the node for long even
    /// when it has piled up credit.
    pub max_slice: Duration,
    /// How many periods' worth of unspent credit the node may carry; beyond
    /// that the tick forgives the excess in proportion to shares (the node
    /// could not get its capacity from the host, e.g. under contention).
    pub backlog_periods: f64,
    /// Emit a progress report every this many ticks (0: never).
    pub progress_ticks: u32,
    /// Emit a [`crate::NodeEvent::SharesChanged`] at every recompute. Each
    /// one copies the node's shares and share inputs; a node fed tens of
    /// thousands of parts a second by a manager that never reads them
    /// turns this off.
    pub share_events: bool,
    /// Slices this short (or shorter) burn on the node actor's own thread
    /// when nothing else of the node is burning, instead of going to an
    /// executor: handing one over and back costs two thread wake-ups,
    /// ~10 us of processor time in all, more than such a slice burns. Only
    /// a part's last bit of work or a tiny part is this short (slices are
    /// at least `min_slice` otherwise). Zero: every slice goes to an
    /// executor.
    pub inline_slice: Duration,
}

impl Default for SliceConfig {
    fn default() -> Self {
        SliceConfig {
            time_scale: 1e-3,
            period: Duration::from_millis(10),
            tick: Duration::from_millis(100),
            spare_rule: SpareRule::default(),
            min_slice: Duration::from_micros(250),
            max_slice: Duration::from_millis(10),
            backlog_periods: 2.0,
            progress_ticks: 10,
            share_events: true,
            inline_slice: Duration::from_micros(20),
        }
    }
}

impl SliceConfig {
    /// Checks every knob is positive and consistent.
    pub fn validate(&self) -> Result<(), SpecError> {
        let bad = |field: &'static str, value: f64| Err(SpecError::Config { field, value });
        // At most 10^4 real seconds per trace second: beyond, a second of
        // work is hours of real time and the clock's instants run out.
        if !(self.time_scale.is_finite() && self.time_scale > 0.0 && self.time_scale <= 1e4) {
            return bad("time_scale", self.time_scale);
        }
        for (field, d) in [
            ("period", self.period),
            ("tick", self.tick),
            ("min_slice", self.min_slice),
            ("max_slice", self.max_slice),
        ] {
            if d.is_zero() {
                return bad(field, 0.0);
            }
        }
        if self.min_slice > self.max_slice {
            return bad("min_slice", self.min_slice.as_secs_f64());
        }
        if !(self.backlog_periods.is_finite() && self.backlog_periods >= 1.0) {
            return bad("backlog_periods", self.backlog_periods);
        }
        Ok(())
    }
}

/// An invalid node, part or slicer configuration; each variant names what
/// it is about.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum SpecError {
    /// A node field out of range.
    #[error("node {node}: field {field} must be finite and > 0, got {value}")]
    Node {
        /// The node.
        node: NodeId,
        /// The field.
        field: &'static str,
        /// The offending value.
        value: f64,
    },
    /// A part field out of range.
    #[error("part {part}: field {field} out of range (got {value})")]
    Part {
        /// The part.
        part: NodePartId,
        /// The field.
        field: &'static str,
        /// The offending value.
        value: f64,
    },
    /// A slicer knob out of range.
    #[error("slicer config: field {field} out of range (got {value})")]
    Config {
        /// The knob.
        field: &'static str,
        /// The offending value (seconds for durations).
        value: f64,
    },
}
