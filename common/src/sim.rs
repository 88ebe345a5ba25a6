//! The discrete-event engine in virtual time: runs a workload through a
//! policy on simulated nodes, as fast as the machine allows.
//!
//! Time-shared policies run on a [`FluidCluster`]: at each arrival every
//! node is advanced exactly to the arrival time (completions at that
//! instant are handled first), the policy decides on the snapshot, and the
//! accepted parts are placed. Space-shared policies run on an event queue of
//! arrivals and completions; the policy starts and drops jobs at each
//! instant after its completions and arrivals.
//!
//! The engine calls the same policy objects the live manager calls.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use crate::job::JobId;
use crate::metrics::JobRecord;
use crate::node_model::{FluidCluster, NodeSpec, PartFinished};
use crate::policy::{AdmissionPolicy, Decision, Policy, QueueAction, QueuePolicy};
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

/// One part of a job on one node, as it ran.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PartRecord {
    /// The job.
    pub job: JobId,
    /// The node.
    pub node: usize,
    /// When it was placed or started.
    pub start: Time,
    /// When it finished (infinite if it never did).
    pub finish: Time,
    /// Processor seconds it took on that node (the actual runtime over the
    /// node's speed), so `cpu / (finish - start)` is its mean share.
    pub cpu: f64,
}

/// A new record for a job that has not been decided yet.
pub fn blank_record(j: &WorkloadJob) -> JobRecord {
    let s = &j.spec;
    JobRecord {
        id: s.id,
        class: s.urgency,
        submit: s.details.submit_time,
        estimate: s.estimate(),
        actual: j.actual_runtime,
        processors: s.resources.processors,
        deadline: s.qos.deadline,
        budget: s.qos.budget,
        penalty_rate: s.qos.penalty_rate,
        deadline_type: s.qos.deadline_type,
        accepted: false,
        reason: None,
        detail: String::new(),
        decided_at: s.details.submit_time,
        nodes: Vec::new(),
        start: None,
        finish: None,
        cost: 0.0,
        lost: false,
    }
}

/// Runs `jobs` (in arrival order) through `policy` on nodes `specs`.
pub fn simulate(jobs: &[WorkloadJob], specs: &[NodeSpec], policy: Policy) -> SimOutcome {
    match policy {
        Policy::Admission(p) => simulate_time_shared(jobs, specs, p),
        Policy::Queue(p) => simulate_space_shared(jobs, specs, p),
    }
}

fn simulate_time_shared(
    jobs: &[WorkloadJob],
    specs: &[NodeSpec],
    mut policy: Box<dyn AdmissionPolicy>,
) -> SimOutcome {
    let start = jobs.first().map_or(0.0, |j| j.spec.details.submit_time);
    let mut cluster = FluidCluster::new(specs, policy.spare_rule(), start);
    let mut records: Vec<JobRecord> = jobs.iter().map(blank_record).collect();
    let index: HashMap<JobId, usize> = jobs
        .iter()
        .enumerate()
        .map(|(k, j)| (j.spec.id, k))
        .collect();
    let mut parts_left: Vec<usize> = vec![0; jobs.len()];
    let mut finished: Vec<PartFinished> = Vec::new();
    let mut events = 0u64;
    let mut makespan = start;
    let mut parts: Vec<PartRecord> = Vec::new();
    // Per job, the indices of its parts in `parts`.
    let mut parts_of: Vec<Vec<usize>> = vec![Vec::new(); jobs.len()];
    let mut settle = |finished: &mut Vec<PartFinished>,
                      records: &mut [JobRecord],
                      parts_left: &mut [usize],
                      parts: &mut [PartRecord],
                      parts_of: &[Vec<usize>]| {
        for f in finished.drain(..) {
            let k = index[&f.job];
            if let Some(&p) = parts_of[k]
                .iter()
                .find(|&&p| parts[p].node == f.node && parts[p].finish.is_infinite())
            {
                parts[p].finish = f.at;
            }
            parts_left[k] -= 1;
            let r = &mut records[k];
            r.finish = Some(r.finish.map_or(f.at, |x: Time| x.max(f.at)));
            makespan = makespan.max(f.at);
            events += 1;
        }
    };
    for (k, j) in jobs.iter().enumerate() {
        let now = j.spec.details.submit_time;
        cluster.advance_to(now, &mut finished);
        settle(
            &mut finished,
            &mut records,
            &mut parts_left,
            &mut parts,
            &parts_of,
        );
        let decision = policy.decide(now, &cluster.states, &j.spec);
        let r = &mut records[k];
        r.decided_at = now;
        match decision {
            Decision::Accept(a) => {
                r.accepted = true;
                r.start = Some(now);
                r.cost = a.cost;
                parts_left[k] = a.nodes.len();
                let value = policy.part_value(&j.spec);
                for &n in &a.nodes {
                    let part = cluster.states[n].new_valued_part(&j.spec, value);
                    let actual_cpu = j.actual_runtime / specs[n].speed;
                    cluster.place(n, part, actual_cpu);
                    parts_of[k].push(parts.len());
                    parts.push(PartRecord {
                        job: j.spec.id,
                        node: n,
                        start: now,
                        finish: Time::INFINITY,
                        cpu: actual_cpu,
                    });
                }
                r.nodes = a.nodes;
            }
            Decision::Reject(rej) => {
                r.reason = Some(rej.reason);
                r.detail = rej.detail;
            }
        }
    }
    cluster.advance_to(Time::INFINITY, &mut finished);
    settle(
        &mut finished,
        &mut records,
        &mut parts_left,
        &mut parts,
        &parts_of,
    );
    debug_assert!(parts_left.iter().all(|&p| p == 0));
    let busy_time = (0..specs.len()).map(|k| cluster.extra(k).busy_time()).sum();
    SimOutcome {
        records,
        events: events + jobs.len() as u64,
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

fn simulate_space_shared(
    jobs: &[WorkloadJob],
    specs: &[NodeSpec],
    mut policy: Box<dyn QueuePolicy>,
) -> SimOutcome {
    let mut records: Vec<JobRecord> = jobs.iter().map(blank_record).collect();
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
    let mut makespan = jobs.first().map_or(0.0, |j| j.spec.details.submit_time);
    let mut actions = Vec::new();
    let mut parts: Vec<PartRecord> = Vec::new();
    loop {
        let t_arrival = jobs.get(next_arrival).map(|j| j.spec.details.submit_time);
        let t_done = heap.peek().map(|c| c.0.at);
        let now = match (t_arrival, t_done) {
            (None, None) => break,
            (Some(a), None) => a,
            (None, Some(d)) => d,
            (Some(a), Some(d)) => a.min(d),
        };
        // Completions first, then arrivals, then one scheduling pass.
        while heap.peek().is_some_and(|c| c.0.at <= now) {
            let Reverse(c) = heap.pop().expect("peeked");
            records[c.job].finish = Some(c.at);
            makespan = makespan.max(c.at);
            policy.finished(now, jobs[c.job].spec.id);
            events += 1;
        }
        while jobs
            .get(next_arrival)
            .is_some_and(|j| j.spec.details.submit_time <= now)
        {
            let j = &jobs[next_arrival];
            if let Some(rej) = policy.submit(now, &j.spec) {
                let r = &mut records[next_arrival];
                r.reason = Some(rej.reason);
                r.detail = rej.detail;
                r.decided_at = now;
            }
            next_arrival += 1;
            events += 1;
        }
        actions.clear();
        policy.schedule(now, &mut actions);
        for a in actions.drain(..) {
            match a {
                QueueAction::Start { job, nodes, cost } => {
                    let k = index[&job];
                    let speed = nodes
                        .iter()
                        .map(|&n| specs[n].speed)
                        .fold(f64::INFINITY, f64::min);
                    let run = jobs[k].actual_runtime / speed;
                    busy_time += run * nodes.len() as f64;
                    seq += 1;
                    heap.push(Reverse(Completion {
                        at: now + run,
                        seq,
                        job: k,
                    }));
                    parts.extend(nodes.iter().map(|&node| PartRecord {
                        job,
                        node,
                        start: now,
                        finish: now + run,
                        cpu: run,
                    }));
                    let r = &mut records[k];
                    r.accepted = true;
                    r.decided_at = now;
                    r.start = Some(now);
                    r.cost = cost;
                    r.nodes = nodes;
                }
                QueueAction::Drop { job, reject } => {
                    let r = &mut records[index[&job]];
                    r.reason = Some(reject.reason);
                    r.detail = reject.detail;
                    r.decided_at = now;
                }
            }
        }
    }
    SimOutcome {
        records,
        events,
        busy_time,
        makespan,
        parts,
    }
}
