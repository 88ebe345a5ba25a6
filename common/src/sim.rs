//! The discrete-event engine in virtual time: runs a workload through a
//! policy on simulated nodes, as fast as the machine allows.
//!
//! The engine drives the same admission core the live manager drives
//! ([`ManagerCore`], with simulated tracking), so both keep their books
//! with one piece of code. Time-shared policies: at each arrival the core
//! advances the exact fluid model of every node to the arrival time
//! (completions at that instant are booked first), the policy decides on
//! that snapshot and the accepted parts are placed. Space-shared policies
//! run on this engine's event queue of arrivals and completions: every
//! completion and arrival of an instant is fed to the core, then one
//! scheduling pass starts and drops jobs.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use crate::admission::{ManagerCore, Output};
use crate::job::JobId;
use crate::metrics::JobRecord;
pub use crate::metrics::PartRecord;
use crate::node_model::NodeSpec;
use crate::policy::{Decision, Policy};
use crate::protocol::PartId;
use crate::time::Time;
use crate::workload::WorkloadJob;

/// What a simulation produced.
#[derive(Debug, Clone)]
pub struct SimOutcome {
    /// One record per job, in arrival order.
    pub records: Vec<JobRecord>,
    /// Events processed (arrivals, part completions, node events).
    pub events: u64,
    /// Total processor time given to parts (node-seconds).
    pub busy_time: f64,
    /// Time of the last completion.
    pub makespan: Time,
    /// Every part that ran, in placement order.
    pub parts: Vec<PartRecord>,
}

/// Runs `jobs` (in arrival order) through `policy` on nodes `specs`.
///
/// # Panics
/// If a job fails validation (workloads are validated when built).
pub fn simulate(jobs: &[WorkloadJob], specs: &[NodeSpec], policy: Policy) -> SimOutcome {
    match policy {
        Policy::Admission(_) => simulate_time_shared(jobs, specs, policy),
        Policy::Queue(_) => simulate_space_shared(jobs, specs, policy),
    }
}

fn arrive(core: &mut ManagerCore, now: Time, j: &WorkloadJob, out: &mut Vec<Output>) {
    if let Err(e) = core.arrive(now, j.clone(), out) {
        panic!("simulate: {e}");
    }
}

fn simulate_time_shared(jobs: &[WorkloadJob], specs: &[NodeSpec], policy: Policy) -> SimOutcome {
    let start = jobs.first().map_or(0.0, |j| j.spec.details.submit_time);
    let mut core = ManagerCore::simulated(policy, specs, start);
    let mut out = Vec::new();
    for j in jobs {
        arrive(&mut core, j.spec.details.submit_time, j, &mut out);
        out.clear();
    }
    core.run_to_end();
    let busy_time = core.busy_time();
    let (records, parts) = core.into_books();
    // Every placed part runs to its end in the fluid model: one event per
    // arrival and one per part.
    let makespan = records
        .iter()
        .filter_map(|r| r.finish)
        .fold(start, Time::max);
    SimOutcome {
        events: (jobs.len() + parts.len()) as u64,
        records,
        busy_time,
        makespan,
        parts,
    }
}

/// A completion in the event queue, ordered by time then sequence.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Completion {
    at: Time,
    seq: u64,
    job: usize,
    parts: u32,
}

impl Eq for Completion {}

impl Ord for Completion {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.at.total_cmp(&other.at).then(self.seq.cmp(&other.seq))
    }
}

impl PartialOrd for Completion {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

fn simulate_space_shared(jobs: &[WorkloadJob], specs: &[NodeSpec], policy: Policy) -> SimOutcome {
    let start = jobs.first().map_or(0.0, |j| j.spec.details.submit_time);
    let mut core = ManagerCore::simulated(policy, specs, start);
    let index: HashMap<JobId, usize> = jobs
        .iter()
        .enumerate()
        .map(|(k, j)| (j.spec.id, k))
        .collect();
    let mut heap: BinaryHeap<Reverse<Completion>> = BinaryHeap::new();
    let mut next_arrival = 0;
    let mut seq = 0u64;
    let mut events = 0u64;
    let mut busy_time = 0.0;
    let mut makespan = start;
    let mut out = Vec::new();
    loop {
        let t_arrival = jobs.get(next_arrival).map(|j| j.spec.details.submit_time);
        let t_done = heap.peek().map(|c| c.0.at);
        let now = match (t_arrival, t_done) {
            (None, None) => break,
            (Some(a), None) => a,
            (None, Some(d)) => d,
            (Some(a), Some(d)) => a.min(d),
        };
        // Completions first, then arrivals, then one scheduling pass (every
        // instant: a queue policy also drops jobs whose time has passed).
        while heap.peek().is_some_and(|c| c.0.at <= now) {
            let Reverse(c) = heap.pop().expect("peeked");
            let id = jobs[c.job].spec.id;
            for index in 0..c.parts {
                let part = PartId { job: id, index };
                core.part_completed(now, 0, part, c.at, &mut out)
                    .expect("the simulator completes only parts it started");
            }
            makespan = makespan.max(c.at);
            events += 1;
        }
        while jobs
            .get(next_arrival)
            .is_some_and(|j| j.spec.details.submit_time <= now)
        {
            arrive(&mut core, now, &jobs[next_arrival], &mut out);
            next_arrival += 1;
            events += 1;
        }
        core.tick(now, &mut out);
        for o in out.drain(..) {
            let Output::Decided {
                job,
                decision: Decision::Accept(a),
            } = o
            else {
                continue;
            };
            let k = index[&job];
            let speed = a
                .nodes
                .iter()
                .map(|&n| specs[n].speed)
                .fold(f64::INFINITY, f64::min);
            let run = jobs[k].actual_runtime / speed;
            busy_time += run * a.nodes.len() as f64;
            seq += 1;
            heap.push(Reverse(Completion {
                at: now + run,
                seq,
                job: k,
                parts: a.nodes.len() as u32,
            }));
        }
    }
    let (records, parts) = core.into_books();
    SimOutcome {
        records,
        events,
        busy_time,
        makespan,
        parts,
    }
}
