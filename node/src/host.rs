//! One process hosting many emulated nodes over one executor pool.
//!
//! The host is where the capacity rule lives: the capacities of the nodes
//! in a process add up to at most the number of executor threads, because
//! each executor is one host core's worth of burning. Beyond that the nodes
//! would silently get less than their capacity.

use std::sync::Arc;

use actix::prelude::*;
use thiserror::Error;

use crate::actor::{NodeActor, NodeReport};
use crate::core::NodeEngine;
use crate::exec::ExecutorPool;
use crate::spec::{EmulatedNodeSpec, NodeId, SliceConfig, SpecError};
use net::TraceClock;

/// Why a host or node could not be set up.
#[derive(Debug, Error)]
pub enum HostError {
    /// The node's or slicer's configuration is invalid.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// Adding the node would oversubscribe the executors.
    #[error(
        "node {node}: capacity {capacity} would bring this process's nodes to {total:.3} \
         cores, more than its {executors} executor threads; lower the capacity or the \
         number of nodes, or add executors (at most one per host core makes sense)"
    )]
    OverCapacity {
        /// The node refused.
        node: NodeId,
        /// Its capacity.
        capacity: f64,
        /// Total capacity with it.
        total: f64,
        /// Executor threads in the process.
        executors: usize,
    },
    /// The executor threads could not be started.
    #[error("starting {threads} executor threads: {source}")]
    Threads {
        /// How many were asked for.
        threads: usize,
        /// The OS error.
        source: std::io::Error,
    },
}

/// Executor pool, trace clock and slicer settings shared by the nodes of
/// one process.
#[derive(Debug)]
pub struct NodeHost {
    pool: Arc<ExecutorPool>,
    clock: TraceClock,
    slice: SliceConfig,
    capacity_used: f64,
}

/// Lets the calling thread, the one running the node actors, wait for the
/// scheduler instead of preempting a burning executor each time a burn
/// report arrives (`SCHED_BATCH`: no wake-up preemption, same share of the
/// CPU otherwise).
///
/// Why: on a host whose cores the executors keep busy, every report would
/// otherwise cost two context switches on a core that was burning; with
/// 64 small nodes on 2 cores that was 5% of the work, and ~1.5% with this.
/// The delay is harmless because each node keeps one slice queued behind
/// its burning one, and when a core is idle the thread runs there at once.
/// Executors set their own policy back to normal, so it does not matter
/// whether they are started before or after this call.
pub fn batch_dispatch_thread() -> std::io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: pid 0 is the calling thread; param is a valid struct.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &param) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// [`batch_dispatch_thread`], logging rather than failing: it is an
/// optimisation, and a node runs correctly without it.
pub fn batch_dispatch_or_warn() {
    if let Err(e) = batch_dispatch_thread() {
        tracing::warn!("could not set SCHED_BATCH on the node actors' thread: {e}");
    }
}

/// Capacities are floats; a sum that is over the limit by less than this is
/// taken as exactly at it (64 x 1/32 must fit 2 executors).
const CAPACITY_EPS: f64 = 1e-9;

impl NodeHost {
    /// A host with `executors` burner threads (0: one per host core).
    pub fn new(executors: usize, slice: SliceConfig, clock: TraceClock) -> Result<Self, HostError> {
        Self::with_nice(executors, 0, slice, clock)
    }

    /// A host whose executors (0: one per host core) run at niceness
    /// `nice` (see [`ExecutorPool::with_nice`]).
    pub fn with_nice(
        executors: usize,
        nice: i32,
        slice: SliceConfig,
        clock: TraceClock,
    ) -> Result<Self, HostError> {
        slice.validate()?;
        let threads = if executors == 0 {
            ExecutorPool::host_cores()
        } else {
            executors
        };
        let pool = ExecutorPool::with_nice(threads, nice)
            .map_err(|source| HostError::Threads { threads, source })?;
        Self::with_pool(pool, slice, clock)
    }

    /// A host over an executor pool built by the caller (e.g. with
    /// [`ExecutorPool::with_nice`]).
    pub fn with_pool(
        pool: ExecutorPool,
        slice: SliceConfig,
        clock: TraceClock,
    ) -> Result<Self, HostError> {
        slice.validate()?;
        Ok(NodeHost {
            pool: Arc::new(pool),
            clock,
            slice,
            capacity_used: 0.0,
        })
    }

    /// The executor pool (for its burned-CPU counter).
    pub fn pool(&self) -> &Arc<ExecutorPool> {
        &self.pool
    }

    /// The trace clock every node of this host reads.
    pub fn clock(&self) -> TraceClock {
        self.clock
    }

    /// Sum of the capacities of the nodes started so far (cores).
    pub fn capacity_used(&self) -> f64 {
        self.capacity_used
    }

    /// Checks that a node of this capacity still fits, without starting it.
    pub fn check_fits(&self, spec: &EmulatedNodeSpec) -> Result<(), HostError> {
        spec.validate()?;
        let total = self.capacity_used + spec.capacity;
        if total > self.pool.size() as f64 + CAPACITY_EPS {
            return Err(HostError::OverCapacity {
                node: spec.id,
                capacity: spec.capacity,
                total,
                executors: self.pool.size(),
            });
        }
        Ok(())
    }

    /// Starts a node actor on the current actix arbiter.
    pub fn spawn_node(
        &mut self,
        spec: EmulatedNodeSpec,
        reports: Option<Recipient<NodeReport>>,
    ) -> Result<Addr<NodeActor>, HostError> {
        self.check_fits(&spec)?;
        let core = NodeEngine::new(spec, self.slice)?;
        self.capacity_used += spec.capacity;
        Ok(NodeActor::new(core, self.clock, Arc::clone(&self.pool), reports).start())
    }

    /// Starts a node actor on the current actix arbiter whose reports go
    /// to `sink`, called on this thread (see [`crate::actor::LocalSink`]).
    pub fn spawn_node_local(
        &mut self,
        spec: EmulatedNodeSpec,
        sink: crate::actor::LocalSink,
    ) -> Result<Addr<NodeActor>, HostError> {
        self.check_fits(&spec)?;
        let core = NodeEngine::new(spec, self.slice)?;
        self.capacity_used += spec.capacity;
        Ok(NodeActor::with_local_sink(core, self.clock, Arc::clone(&self.pool), sink).start())
    }
}
