//! The discrete-event engine in virtual time: runs a workload through a
//! policy on simulated nodes, as fast as the machine allows.
//!
//! The engine drives the same admission core the live manager drives
//! ([`ManagerCore`], with simulated tracking), so both keep their books
//! with one piece of code. Time-shared policies: at each arrival the core
//! advances the exact fluid model of every busy node to the arrival time
//! (completions at that instant are booked first; an idle node is brought
//! there when a part is placed on it), the policy decides through the
//! core's index of busy nodes, as on the walk over every node, and the
//! accepted parts are placed. Space-shared policies
//! run on this engine's event queue of arrivals and completions: every
//! completion and arrival of an instant is fed to the core, then one
//! scheduling pass starts and drops jobs.
//!
//! With faults the same engine runs with `sim_faults`'s hook: node events
//! are applied at their times (after completions, before arrivals),
//! arrivals wait through the manager's downtimes, and space-shared runs
//! are re-timed when their nodes change pace.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::admission::{ManagerCore, Output};
use crate::metrics::JobRecord;
pub use crate::metrics::PartRecord;
use crate::node_model::NodeSpec;
use crate::policy::{Decision, Policy};
use crate::sim_faults::Hook;
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
    run(jobs, specs, policy, None)
}

/// The engine, with the fault hook of `sim_faults` when there are faults
/// (node events applied as their times come, arrivals held through the
/// manager's downtimes); without one it takes no fault path at all.
pub(crate) fn run(
    jobs: &[WorkloadJob],
    specs: &[NodeSpec],
    policy: Policy,
    hook: Option<&mut Hook<'_>>,
) -> SimOutcome {
    match policy {
        Policy::Admission(_) => simulate_time_shared(jobs, specs, policy, hook),
        Policy::Queue(_) => simulate_space_shared(jobs, specs, policy, hook),
    }
}

/// When job `j` arrives at the policy: its submit time, or the end of a
/// manager downtime covering it.
fn arrival(hook: &Option<&mut Hook<'_>>, j: &WorkloadJob) -> Time {
    let t = j.spec.details.submit_time;
    match hook {
        Some(h) => h.decided_at(t),
        None => t,
    }
}

fn arrive(core: &mut ManagerCore, now: Time, j: &WorkloadJob, out: &mut Vec<Output>) {
    if let Err(e) = core.arrive(now, j.clone(), out) {
        panic!("simulate: {e}");
    }
}

/// A core for `jobs` with its books sized for them: one record per job and
/// at most one part per processor asked for.
fn core_for(jobs: &[WorkloadJob], specs: &[NodeSpec], policy: Policy, start: Time) -> ManagerCore {
    let mut core = ManagerCore::simulated(policy, specs, start);
    let parts = jobs
        .iter()
        .map(|j| (j.spec.resources.processors as usize).min(specs.len()))
        .sum();
    core.reserve(jobs.len(), parts);
    core
}

fn simulate_time_shared(
    jobs: &[WorkloadJob],
    specs: &[NodeSpec],
    policy: Policy,
    mut hook: Option<&mut Hook<'_>>,
) -> SimOutcome {
    let start = jobs.first().map_or(0.0, |j| j.spec.details.submit_time);
    let mut core = core_for(jobs, specs, policy, start);
    let mut out = Vec::new();
    let mut events = 0u64;
    let mut next_job = 0;
    loop {
        let t_job = jobs.get(next_job).map(|j| arrival(&hook, j));
        let t_ev = hook.as_ref().and_then(|h| h.next_at());
        let Some(now) = [t_job, t_ev].into_iter().flatten().reduce(Time::min) else {
            break;
        };
        // Node events first, then arrivals.
        if let Some(h) = hook.as_deref_mut() {
            events += h.apply_due(&mut core, now, &mut out, |_, _| {});
        }
        while jobs.get(next_job).is_some_and(|j| arrival(&hook, j) <= now) {
            arrive(&mut core, now, &jobs[next_job], &mut out);
            next_job += 1;
            events += 1;
        }
        out.clear();
    }
    core.run_to_end();
    let busy_time = core.busy_time();
    let (records, parts) = core.into_books();
    // Every placed part runs to its end (or its loss) in the fluid model:
    // one event per arrival, per node event and per part.
    let makespan = records
        .iter()
        .filter_map(|r| r.finish)
        .fold(start, Time::max);
    SimOutcome {
        events: events + parts.len() as u64,
        records,
        busy_time,
        makespan,
        parts,
    }
}

/// A space-shared job in flight under faults: its work left at rate 1
/// since `updated`, its rate (its slowest node's), and the sequence number
/// of its live completion in the heap (older entries are stale).
#[derive(Debug, Clone)]
struct Run {
    nodes: Vec<usize>,
    left: f64,
    started: Time,
    updated: Time,
    rate: f64,
    seq: u64,
}

/// Space-shared runs on `nodes` change pace from `now` on (`rate` of each
/// node after a node event).
fn rerate(
    runs: &mut [Option<Run>],
    heap: &mut BinaryHeap<Reverse<Completion>>,
    seq: &mut u64,
    now: Time,
    nodes: &[u32],
    rate: impl Fn(usize) -> f64,
) {
    for (k, slot) in runs.iter_mut().enumerate() {
        let Some(run) = slot else { continue };
        if !run.nodes.iter().any(|&g| nodes.contains(&(g as u32))) {
            continue;
        }
        let r = run
            .nodes
            .iter()
            .map(|&g| rate(g))
            .fold(f64::INFINITY, f64::min);
        run.left = (run.left - (now - run.updated) * run.rate).max(0.0);
        run.updated = now;
        run.rate = r;
        *seq += 1;
        run.seq = *seq;
        if r > 0.0 {
            heap.push(Reverse(Completion {
                at: now + run.left / r,
                seq: run.seq,
                job: k,
            }));
        }
    }
}

/// A completion in the event queue, ordered by time then sequence.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Completion {
    at: Time,
    seq: u64,
    job: usize,
}

impl Completion {
    /// The job was ended at or before this completion (an external
    /// scheduler's KILL_JOB): its record is already final. At the same
    /// instant too: a job of no work started and killed in one pass ends
    /// at its start, and so does its completion.
    fn killed_before(&self, core: &ManagerCore, jobs: &[WorkloadJob]) -> bool {
        core.record(jobs[self.job].spec.id)
            .and_then(|r| r.finish)
            .is_some_and(|f| f <= self.at)
    }
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
    policy: Policy,
    mut hook: Option<&mut Hook<'_>>,
) -> SimOutcome {
    let start = jobs.first().map_or(0.0, |j| j.spec.details.submit_time);
    let mut core = core_for(jobs, specs, policy, start);
    let mut heap: BinaryHeap<Reverse<Completion>> = BinaryHeap::new();
    // Under faults, each started job's run, re-timed when its nodes
    // change pace.
    let mut runs: Vec<Option<Run>> = match hook {
        Some(_) => vec![None; jobs.len()],
        None => Vec::new(),
    };
    let mut next_arrival = 0;
    let mut seq = 0u64;
    let mut events = 0u64;
    let mut busy_time = 0.0;
    let mut makespan = start;
    let mut out = Vec::new();
    let (mut last, mut ended) = (start, false);
    loop {
        let t_arrival = jobs.get(next_arrival).map(|j| arrival(&hook, j));
        let t_done = heap.peek().map(|c| c.0.at);
        // A policy holding a decision for later (an external scheduler's,
        // a QoPS reservation) is called at that time too; not while the
        // manager is down (no pass then: the wake-up would come again and
        // again), where the manager's return makes the pass.
        let t_wake = core
            .queue_wakeup()
            .filter(|&t| !hook.as_ref().is_some_and(|h| h.is_down(t)));
        let t_ev = hook.as_ref().and_then(|h| h.next_at());
        let next = [t_arrival, t_done, t_wake, t_ev]
            .into_iter()
            .flatten()
            .min_by(f64::total_cmp);
        let now = match next {
            Some(t) => t,
            // Nothing left: the policy's last word (jobs it never decided),
            // once.
            None if ended => break,
            None => {
                ended = true;
                core.end_queue(last, &mut out);
                last
            }
        };
        last = now;
        // Completions first, then node events, then arrivals, then one
        // scheduling pass (every instant: a queue policy also drops jobs
        // whose time has passed; none while the manager is down).
        while heap.peek().is_some_and(|c| c.0.at <= now) {
            let Reverse(c) = heap.pop().expect("peeked");
            let id = jobs[c.job].spec.id;
            if hook.is_some() {
                // A stale completion (the run changed pace), or a job lost
                // to a fault while it ran.
                if runs[c.job].as_ref().is_none_or(|r| r.seq != c.seq) {
                    continue;
                }
                let run = runs[c.job].take().expect("checked");
                if core.job_over(id) {
                    continue;
                }
                // Processor time held: the nodes are the job's for its
                // whole run, whatever their pace.
                busy_time += (c.at - run.started) * run.nodes.len() as f64;
            } else if c.killed_before(&core, jobs) {
                continue;
            }
            // Every part of a space-shared job ends with its slowest node.
            core.job_completed(now, 0, id, c.at, &mut out)
                .expect("the simulator completes only parts it started");
            makespan = makespan.max(c.at);
            events += 1;
        }
        if let Some(h) = hook.as_deref_mut() {
            events += h.apply_due(&mut core, now, &mut out, |h, nodes| {
                rerate(&mut runs, &mut heap, &mut seq, now, nodes, |g| h.rate(g))
            });
        }
        while jobs
            .get(next_arrival)
            .is_some_and(|j| arrival(&hook, j) <= now)
        {
            arrive(&mut core, now, &jobs[next_arrival], &mut out);
            next_arrival += 1;
            events += 1;
        }
        if next.is_some() && !hook.as_ref().is_some_and(|h| h.is_down(now)) {
            core.tick(now, &mut out);
        }
        for o in out.drain(..) {
            let Output::Decided {
                job,
                decision: Decision::Accept(a),
            } = o
            else {
                continue;
            };
            // The core keeps the jobs in submission order, which is the
            // workload's order here.
            let k = core.job_position(job).expect("a decided job was submitted");
            let speed = a
                .nodes
                .iter()
                .map(|&n| specs[n].speed)
                .fold(f64::INFINITY, f64::min);
            let run = jobs[k].actual_runtime / speed;
            seq += 1;
            match hook.as_deref() {
                None => {
                    busy_time += run * a.nodes.len() as f64;
                    heap.push(Reverse(Completion {
                        at: now + run,
                        seq,
                        job: k,
                    }));
                }
                Some(h) => {
                    let rate = a
                        .nodes
                        .iter()
                        .map(|&g| h.rate(g))
                        .fold(f64::INFINITY, f64::min);
                    if rate > 0.0 {
                        heap.push(Reverse(Completion {
                            at: now + run / rate,
                            seq,
                            job: k,
                        }));
                    }
                    runs[k] = Some(Run {
                        nodes: a.nodes,
                        left: run,
                        started: now,
                        updated: now,
                        rate,
                        seq,
                    });
                }
            }
        }
    }
    let (records, parts) = core.into_books();
    if hook.is_some() {
        // Lost jobs end at their loss, which no completion marks.
        makespan = records
            .iter()
            .filter_map(|r| r.finish)
            .fold(makespan, Time::max);
    }
    SimOutcome {
        records,
        events,
        busy_time,
        makespan,
        parts,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::HashMap;

    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;
    use crate::job::{JobId, JobSpec};
    use crate::policy::{self, PolicyConfig};
    use crate::protocol::PartId;

    /// The space-shared loop the general way: every part completed on its
    /// own through [`ManagerCore::part_completed`], the workload indexed
    /// by a map of its own, no capacity reserved. [`simulate`] must book
    /// exactly the same.
    fn general(jobs: &[WorkloadJob], specs: &[NodeSpec], policy: Policy) -> SimOutcome {
        let start = jobs.first().map_or(0.0, |j| j.spec.details.submit_time);
        let mut core = ManagerCore::simulated(policy, specs, start);
        let index: HashMap<JobId, usize> = jobs
            .iter()
            .enumerate()
            .map(|(k, j)| (j.spec.id, k))
            .collect();
        // (end, sequence, job index, parts)
        let mut heap: BinaryHeap<Reverse<(u64, u64, usize, u32)>> = BinaryHeap::new();
        let (mut next, mut seq, mut events) = (0, 0u64, 0u64);
        let (mut busy_time, mut makespan) = (0.0, start);
        let mut out = Vec::new();
        loop {
            let t_arrival = jobs.get(next).map(|j| j.spec.details.submit_time);
            let t_done = heap.peek().map(|c| f64::from_bits(c.0 .0));
            // A policy's wake-up (a QoPS reservation between events).
            let t_wake = core.queue_wakeup();
            let Some(now) = [t_arrival, t_done, t_wake]
                .into_iter()
                .flatten()
                .min_by(f64::total_cmp)
            else {
                break;
            };
            while heap.peek().is_some_and(|c| f64::from_bits(c.0 .0) <= now) {
                let Reverse((at, _, k, parts)) = heap.pop().unwrap();
                let at = f64::from_bits(at);
                for index in 0..parts {
                    let part = PartId {
                        job: jobs[k].spec.id,
                        index,
                    };
                    core.part_completed(now, 0, part, at, &mut out).unwrap();
                }
                makespan = makespan.max(at);
                events += 1;
            }
            while jobs
                .get(next)
                .is_some_and(|j| j.spec.details.submit_time <= now)
            {
                core.arrive(now, jobs[next].clone(), &mut out).unwrap();
                next += 1;
                events += 1;
            }
            core.tick(now, &mut out);
            for o in out.drain(..) {
                if let Output::Decided {
                    job,
                    decision: Decision::Accept(a),
                } = o
                {
                    let k = index[&job];
                    let speed = a
                        .nodes
                        .iter()
                        .map(|&n| specs[n].speed)
                        .fold(f64::INFINITY, f64::min);
                    let run = jobs[k].actual_runtime / speed;
                    busy_time += run * a.nodes.len() as f64;
                    seq += 1;
                    // Times are >= 0, so their bits order like the times.
                    let end = (now + run).to_bits();
                    heap.push(Reverse((end, seq, k, a.nodes.len() as u32)));
                }
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

    /// A seeded workload that keeps a queue: bursts of arrivals, jobs of 1
    /// to all 16 processors (some more than the cluster), estimates above
    /// and below the actual runtimes, deadlines some jobs miss.
    fn workload(seed: u64) -> Vec<WorkloadJob> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut t = 0.0;
        (0..400)
            .map(|id| {
                if rng.random_bool(0.3) {
                    t += rng.random_range(0.0..200.0f64).floor();
                }
                let actual = rng.random_range(1.0..500.0f64).floor();
                let estimate = (actual * rng.random_range(0.5..3.0)).ceil();
                let procs = if rng.random_bool(0.02) {
                    17
                } else {
                    rng.random_range(1..=16)
                };
                let deadline = (estimate * rng.random_range(1.0..20.0)).ceil();
                WorkloadJob {
                    spec: JobSpec::new(id, t, estimate, procs, deadline, 1e9),
                    actual_runtime: actual,
                }
            })
            .collect()
    }

    #[test]
    fn space_shared_fast_path_books_what_the_general_path_books() {
        // Mixed speeds: a job's parts all end with its slowest node.
        let specs: Vec<NodeSpec> = (0..16)
            .map(|id| NodeSpec {
                id,
                speed: [1.0, 1.5, 2.0][id % 3],
                memory_kb: 0,
                disk_mb: 0,
            })
            .collect();
        for seed in [1, 2, 3] {
            let jobs = workload(seed);
            for name in ["fcfs-bf", "sjf-bf", "edf-bf", "edf", "fifo", "qops"] {
                let build = || policy::build(name, &PolicyConfig::default(), &specs).unwrap();
                let fast = simulate(&jobs, &specs, build());
                let slow = general(&jobs, &specs, build());
                let what = format!("{name}, seed {seed}");
                assert_eq!(fast.records, slow.records, "{what}");
                assert_eq!(fast.parts, slow.parts, "{what}");
                assert_eq!(fast.events, slow.events, "{what}");
                assert_eq!(fast.busy_time.to_bits(), slow.busy_time.to_bits(), "{what}");
                assert_eq!(fast.makespan.to_bits(), slow.makespan.to_bits(), "{what}");
                // The workload exercises what it is meant to: jobs waited,
                // several parts each, and some were turned away.
                let started = fast.records.iter().filter(|r| r.accepted).count();
                assert!(started > 100, "{what}: {started} started");
                assert!(fast.parts.len() > 2 * started, "{what}");
                assert!(
                    fast.records
                        .iter()
                        .any(|r| r.start.is_some_and(|s| s > r.submit)),
                    "{what}: no job waited"
                );
            }
        }
    }

    #[test]
    fn the_event_count_is_one_per_arrival_and_one_per_part() {
        // Two reference nodes, Libra. J0: 1 processor, RE 10, D 100 (one
        // part); J1 at 5: 2 processors, RE 10, D 100 (two parts, share
        // 0.1 beside J0's); J2 at 6: 3 processors, more than the cluster
        // has: refused, no part. Events: 3 arrivals + 3 parts = 6.
        let specs = crate::policy::test_util::specs(2);
        let job = |id, t, p| WorkloadJob {
            spec: JobSpec::new(id, t, 10.0, p, 100.0, 1e9),
            actual_runtime: 10.0,
        };
        let jobs = [job(0, 0.0, 1), job(1, 5.0, 2), job(2, 6.0, 3)];
        let out = simulate(
            &jobs,
            &specs,
            policy::build("libra", &PolicyConfig::default(), &specs).unwrap(),
        );
        assert_eq!(out.parts.len(), 3);
        assert_eq!(out.records.iter().filter(|r| r.accepted).count(), 2);
        assert_eq!(out.events, 6);
    }

    /// An external (Batsim) scheduler for the tests below: it starts every
    /// submitted job at once, in submission order, each on the next node
    /// (0, 1, ...), and with `kill` kills it in the same reply. It logs
    /// every request.
    struct StartAll {
        next: usize,
        kill: bool,
        log: std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>>,
    }

    impl crate::batsim::Exchange for StartAll {
        fn exchange(&mut self, request: &str) -> Result<String, String> {
            use serde_json::{json, Value};
            let msg: Value = serde_json::from_str(request).unwrap();
            self.log.lock().unwrap().push(msg.clone());
            let now = msg["now"].as_f64().unwrap();
            let mut out = Vec::new();
            for e in msg["events"].as_array().unwrap() {
                if e["type"] != "JOB_SUBMITTED" {
                    continue;
                }
                let job = &e["data"]["job_id"];
                out.push(json!({"timestamp": now, "type": "EXECUTE_JOB",
                    "data": {"job_id": job, "alloc": self.next.to_string()}}));
                self.next += 1;
                if self.kill {
                    out.push(json!({"timestamp": now, "type": "KILL_JOB",
                        "data": {"job_ids": [job]}}));
                }
            }
            Ok(json!({"now": now, "events": out}).to_string())
        }

        fn failed(&mut self, why: &str) {
            panic!("the scheduler was given up: {why}");
        }
    }

    /// `jobs` through [`StartAll`] on `nodes` reference nodes: the outcome
    /// and every request the scheduler got.
    fn start_all(
        jobs: &[WorkloadJob],
        nodes: usize,
        kill: bool,
    ) -> (SimOutcome, Vec<serde_json::Value>) {
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let ex = StartAll {
            next: 0,
            kill,
            log: log.clone(),
        };
        let q = crate::batsim::BatsimQueue::new(Box::new(ex), nodes, jobs.len(), "test", 1.0);
        let out = simulate(
            jobs,
            &policy::test_util::specs(nodes),
            Policy::Queue(Box::new(q)),
        );
        let log = log.lock().unwrap().clone();
        (out, log)
    }

    #[test]
    fn a_job_killed_at_the_instant_it_completes_ends_once() {
        // A job of no work (actual runtime 0: valid) that the scheduler
        // starts and kills in one reply at 0: the kill ends it at 0, and
        // its own completion, also at 0, is the end of a job already
        // over, not a second end (the core refuses one as a duplicate
        // completion, which the engine must never send). Its
        // record: started and finished at 0. Events: the arrival only (a
        // killed job's completion is not one, as for any kill); nothing
        // completed, so the makespan stays at the first arrival, 0.
        let jobs = [WorkloadJob {
            spec: JobSpec::new(1, 0.0, 10.0, 1, 100.0, 1e9),
            actual_runtime: 0.0,
        }];
        let (out, log) = start_all(&jobs, 1, true);
        let r = &out.records[0];
        assert!(r.accepted && !r.lost, "{r:?}");
        assert_eq!((r.start, r.finish), (Some(0.0), Some(0.0)));
        assert_eq!(out.events, 1);
        assert_eq!(out.makespan, 0.0);
        // The scheduler hears of it once, as killed.
        let ends: Vec<&serde_json::Value> = log
            .iter()
            .flat_map(|m| m["events"].as_array().unwrap())
            .filter(|e| e["type"] == "JOB_COMPLETED")
            .collect();
        assert_eq!(ends.len(), 1, "{ends:?}");
        assert_eq!(ends[0]["data"]["job_state"], "COMPLETED_KILLED");
    }

    #[test]
    fn completions_at_one_instant_reach_the_scheduler_in_start_order() {
        // Four nodes; jobs 1-4 arrive at 0 and start at 0 in that order
        // (nodes 0-3). Job 1 runs 5 s; jobs 2, 3 and 4 run 10 s and end
        // together at 10 (Batsim time 11). The request at 11 reports the
        // three completions in the order the jobs started: 2, 3, 4. (The
        // queue orders completions by time, then by a sequence number
        // given at each start; without it the heap returns equal entries
        // in an order of its own: here 3, 2, 4.)
        let job = |id, run| WorkloadJob {
            spec: JobSpec::new(id, 0.0, run, 1, 100.0, 1e9),
            actual_runtime: run,
        };
        let jobs = [job(1, 5.0), job(2, 10.0), job(3, 10.0), job(4, 10.0)];
        let (out, log) = start_all(&jobs, 4, false);
        let finish: Vec<Option<f64>> = out.records.iter().map(|r| r.finish).collect();
        assert_eq!(finish, [Some(5.0), Some(10.0), Some(10.0), Some(10.0)]);
        let at_11: Vec<&str> = log
            .iter()
            .flat_map(|m| m["events"].as_array().unwrap())
            .filter(|e| e["type"] == "JOB_COMPLETED" && e["timestamp"] == 11.0)
            .map(|e| e["data"]["job_id"].as_str().unwrap())
            .collect();
        assert_eq!(at_11, ["w0!2", "w0!3", "w0!4"]);
    }

    /// The time-shared engine the straightforward way, as the simulator
    /// ran before it kept the busy index: at each arrival every node
    /// advanced by the fluid model, the policy's plain `decide` over every
    /// node, the accepted parts placed. Each job's chosen nodes (`None`:
    /// rejected) and every part's finish, `(job, node, finish bits)`
    /// sorted.
    #[allow(clippy::type_complexity)]
    fn walked(
        jobs: &[WorkloadJob],
        specs: &[NodeSpec],
        policy: Policy,
    ) -> (Vec<Option<Vec<usize>>>, Vec<(JobId, usize, u64)>) {
        use crate::node_model::{fluid_advance, fluid_place, FluidExtra, FluidScratch, NodeState};
        let Policy::Admission(mut p) = policy else {
            panic!("a time-shared policy")
        };
        let rule = p.spare_rule();
        let start = jobs[0].spec.details.submit_time;
        let mut nodes: Vec<NodeState> = specs.iter().map(|s| NodeState::new(s.clone())).collect();
        let mut xs: Vec<FluidExtra> = specs
            .iter()
            .map(|_| FluidExtra::starting_at(start))
            .collect();
        let (mut scratch, mut finished) = (FluidScratch::default(), Vec::new());
        let mut chosen = Vec::new();
        for j in jobs {
            let now = j.spec.details.submit_time;
            for (st, x) in nodes.iter_mut().zip(&mut xs) {
                fluid_advance(st, x, now, rule, &mut scratch, &mut finished);
            }
            match p.decide(now, &nodes, &j.spec) {
                Decision::Accept(a) => {
                    for &n in &a.nodes {
                        let part = nodes[n].new_valued_part(&j.spec, p.part_value(&j.spec));
                        let cpu = j.actual_runtime / nodes[n].spec.speed;
                        fluid_place(&mut nodes[n], &mut xs[n], part, cpu, rule, &mut scratch);
                    }
                    chosen.push(Some(a.nodes));
                }
                _ => chosen.push(None),
            }
        }
        for (st, x) in nodes.iter_mut().zip(&mut xs) {
            fluid_advance(st, x, Time::INFINITY, rule, &mut scratch, &mut finished);
        }
        let mut ends: Vec<(JobId, usize, u64)> = finished
            .iter()
            .map(|f| (f.job, f.node, f.at.to_bits()))
            .collect();
        ends.sort_unstable();
        (chosen, ends)
    }

    /// `n` nodes, every fifth of speed 2, the others of speed 1.
    pub(crate) fn two_speeds(n: usize) -> Vec<NodeSpec> {
        (0..n)
            .map(|id| NodeSpec {
                id,
                speed: if id % 5 == 0 { 2.0 } else { 1.0 },
                memory_kb: 0,
                disk_mb: 0,
            })
            .collect()
    }

    /// `n` seeded jobs for the time-shared engine: arriving in bursts, of
    /// 1-8 processors, half with hard deadlines, with penalties and
    /// budgets some jobs cannot pay.
    pub(crate) fn mixed_jobs(rng: &mut ChaCha8Rng, n: u64) -> Vec<WorkloadJob> {
        use crate::job::DeadlineType;
        let mut t = 0.0;
        (0..n)
            .map(|id| {
                if rng.random_bool(0.4) {
                    t += rng.random_range(0.0..30.0f64).floor();
                }
                let actual = rng.random_range(1.0..400.0f64).floor();
                let estimate = (actual * rng.random_range(0.5..2.0)).ceil();
                let deadline = (estimate * rng.random_range(0.8..6.0)).ceil();
                let budget = rng.random_range(0.0..4.0) * estimate;
                let procs = rng.random_range(1..=8);
                let mut spec = JobSpec::new(id, t, estimate, procs, deadline, budget);
                if rng.random_bool(0.5) {
                    spec.qos.deadline_type = DeadlineType::Hard;
                }
                spec.qos.penalty_rate = rng.random_range(0.0..3.0);
                WorkloadJob {
                    spec,
                    actual_runtime: actual,
                }
            })
            .collect()
    }

    #[test]
    fn time_shared_runs_decide_and_finish_as_the_walk_over_every_node() {
        // 200 nodes of two speeds, most of them idle at any time; seeded
        // jobs of 1-8 processors arriving in bursts, hard and soft
        // deadlines with penalties, budgets some jobs cannot pay: the
        // engine, which advances only the busy nodes and decides from the
        // busy index, must choose the same nodes for every job and finish
        // every part at the same instant, bit for bit, as the walk over
        // every node ([`walked`]), for each policy of the Libra family.
        let specs = two_speeds(200);
        for seed in [1, 2] {
            let jobs = mixed_jobs(&mut ChaCha8Rng::seed_from_u64(seed), 600);
            for name in ["libra", "libra-risk", "libra-plus-dollar", "libra-sla"] {
                let build = || policy::build(name, &PolicyConfig::default(), &specs).unwrap();
                let out = simulate(&jobs, &specs, build());
                let (chosen, ends) = walked(&jobs, &specs, build());
                let what = format!("{name}, seed {seed}");
                let got: Vec<Option<Vec<usize>>> = out
                    .records
                    .iter()
                    .map(|r| r.accepted.then(|| r.nodes.clone()))
                    .collect();
                assert_eq!(got, chosen, "{what}");
                let mut got_ends: Vec<(JobId, usize, u64)> = out
                    .parts
                    .iter()
                    .map(|p| (p.job, p.node, p.finish.to_bits()))
                    .collect();
                got_ends.sort_unstable();
                assert_eq!(got_ends, ends, "{what}");
                // Both accepted and rejected jobs, and parts that shared
                // nodes.
                let accepted = chosen.iter().flatten().count();
                assert!(
                    accepted > 50 && accepted < jobs.len(),
                    "{what}: {accepted} accepted"
                );
            }
        }
    }
}
