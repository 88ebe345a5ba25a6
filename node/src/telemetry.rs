//! What a node records about how well it kept its promises: the assigned
//! versus delivered share of each part per control tick, the slice overrun
//! and the control tick's jitter, in HDR histograms per node, and each
//! part's lifetime processor time assigned and burned.
//!
//! The node hands a [`NodeTelemetry`] out on request (the actor's
//! `GetTelemetry` message); the manager link ships it over QUIC. Shares
//! are recorded in parts per million of the node's capacity, times in real
//! nanoseconds.

use common::JobId;
use hdrhistogram::Histogram;

use crate::spec::{NodeId, NodePartId};

/// Shares are recorded as integers in this unit (1e6 = the whole node).
pub const PPM: f64 = 1e6;

/// Significant decimal digits the histograms keep: 2 means values are
/// recorded within 1% of themselves (a share of 0.5 as 0.5 +- 0.005, an
/// error of 0.01 as 0.01 +- 0.0001). 3 digits would cost ~8x the memory,
/// ~100 KB per histogram once it spans a million.
pub const SIGNIFICANT_DIGITS: u8 = 2;

pub(crate) fn new_hist() -> Histogram<u64> {
    // Auto-resizing: it grows to the largest value seen, so an idle node's
    // histograms stay tiny.
    Histogram::new(SIGNIFICANT_DIGITS).expect("2 significant figures is a valid histogram")
}

pub(crate) fn record(h: &mut Histogram<u64>, v: f64) {
    let v = if v.is_finite() && v > 0.0 {
        v.round() as u64
    } else {
        0
    };
    // Auto-resizing histograms only fail on u64 overflow, impossible here.
    let _ = h.record(v);
}

/// Telemetry of one part on one node.
#[derive(Debug, Clone)]
pub struct PartTelemetry {
    /// The part.
    pub part_id: NodePartId,
    /// Its job.
    pub job_id: JobId,
    /// Control-tick windows it was on the node for (recorded in the node's
    /// share histograms).
    pub windows: u64,
    /// Processor time assigned over the part's life: the integral of
    /// share x capacity over real time (ns).
    pub assigned_ns: f64,
    /// Processor time really burned (ns).
    pub burned_ns: u64,
    /// Whether the part has finished.
    pub finished: bool,
}

impl PartTelemetry {
    pub(crate) fn new(part_id: NodePartId, job_id: JobId) -> Self {
        PartTelemetry {
            part_id,
            job_id,
            windows: 0,
            assigned_ns: 0.0,
            burned_ns: 0,
            finished: false,
        }
    }
}

/// Telemetry of one node: its parts (finished ones kept until reset) and
/// the node-wide histograms.
#[derive(Debug, Clone)]
pub struct NodeTelemetry {
    /// The node.
    pub node_id: NodeId,
    /// One entry per part placed since the last reset, in placement order.
    pub parts: Vec<PartTelemetry>,
    /// Time-averaged assigned share of each part in each control-tick
    /// window (ppm).
    pub assigned_ppm: Histogram<u64>,
    /// Delivered share of each part (processor time burned / (capacity x
    /// window)) in each window (ppm). Lumpy per window: a slice is counted
    /// when it ends.
    pub delivered_ppm: Histogram<u64>,
    /// |delivered - assigned| of each part in each window (ppm). Kept per
    /// node, not per part: three histograms per part cost ~40 KB of
    /// allocation and zeroing each, which was a third of a node process's
    /// time with tens of thousands of short parts a second.
    pub error_ppm: Histogram<u64>,
    /// Processor time burned beyond the slice asked for (ns), per slice.
    pub slice_overrun_ns: Histogram<u64>,
    /// How late the control tick ran after its scheduled instant (real ns).
    pub tick_jitter_ns: Histogram<u64>,
    /// Credit the tick forgave because the node could not get its capacity
    /// from the host (ns of processor time, summed over parts).
    pub forgiven_ns: f64,
    /// Slices handed to executors.
    pub slices: u64,
    /// Times the shares were recomputed (node-local events).
    pub recomputes: u64,
}

impl NodeTelemetry {
    pub(crate) fn new(node_id: NodeId) -> Self {
        NodeTelemetry {
            node_id,
            parts: Vec::new(),
            assigned_ppm: new_hist(),
            delivered_ppm: new_hist(),
            error_ppm: new_hist(),
            slice_overrun_ns: new_hist(),
            tick_jitter_ns: new_hist(),
            forgiven_ns: 0.0,
            slices: 0,
            recomputes: 0,
        }
    }
}
