//! An external Batsim scheduler as a space-shared queue policy.
//!
//! [`BatsimQueue`] turns the engine's calls (`submit`, `finished`,
//! `schedule(now)`) into Batsim events and the scheduler's replies into
//! [`QueueAction`]s. The exchange itself (a ZeroMQ REQ socket in the
//! manager) sits behind the [`Exchange`] trait, so this crate still does no
//! I/O. Decisions take effect at their own timestamps: a reply dated later
//! than the request is held and applied when the engine reaches that time
//! ([`QueuePolicy::wakeup`]).
//!
//! A scheduler that fails (no answer, malformed JSON, an impossible
//! decision) is given up: every job it has not decided is dropped with
//! reason `scheduler` and the failure's text, jobs already running finish,
//! later arrivals are dropped the same way, and [`Exchange::failed`] is
//! told once so the caller can report it.

pub mod protocol;

use std::collections::{BTreeSet, HashMap};

use crate::job::{JobId, JobSpec};
use crate::policy::{QueueAction, QueuePolicy, Reject, RejectReason};
use crate::time::Time;
use protocol::{Decision, OutEvent};

/// One request/reply round trip with the scheduler.
pub trait Exchange: Send {
    /// Sends `request` and waits for the reply's text.
    fn exchange(&mut self, request: &str) -> Result<String, String>;

    /// The scheduler is given up for `why` (told once).
    fn failed(&mut self, why: &str);
}

/// An exchange with no scheduler behind it: every request fails. The
/// registry's `batsim` entry builds on it; the CLI replaces it with a real
/// endpoint.
pub struct NoScheduler;

impl Exchange for NoScheduler {
    fn exchange(&mut self, _request: &str) -> Result<String, String> {
        Err("no Batsim scheduler is connected (the batsim policy needs --batsim-endpoint)".into())
    }

    fn failed(&mut self, _why: &str) {}
}

/// Where a job is, as far as the scheduler's decisions go.
#[derive(Debug, Clone, PartialEq)]
enum State {
    /// Submitted, not decided.
    Waiting,
    /// Started on these nodes.
    Running(Vec<usize>),
    /// Over (completed, rejected or dropped).
    Over,
}

/// Most request rounds at one instant (REQUESTED_CALL answered with
/// CALL_ME_LATER at the same instant, again and again) before the
/// scheduler is taken for livelocked.
const MAX_ROUNDS_PER_INSTANT: usize = 10_000;

/// An external scheduler speaking Batsim's protocol, as a queue policy.
pub struct BatsimQueue {
    ex: Box<dyn Exchange>,
    /// Free or the job holding each node.
    nodes: Vec<Option<JobId>>,
    usable: Vec<bool>,
    /// State, processors asked for, estimate.
    jobs: HashMap<JobId, (State, usize, Time)>,
    /// Jobs not yet decided, in submission order.
    waiting: BTreeSet<(u64, JobId)>,
    seq: u64,
    /// Events for the next request.
    outbox: Vec<OutEvent>,
    /// Decisions dated after the instant they were received at.
    held: Vec<(Time, u64, Decision)>,
    held_seq: u64,
    /// CALL_ME_LATER times.
    calls: Vec<Time>,
    /// The scheduler's latest now (messages never go back before it).
    last_now: Time,
    /// Jobs that will arrive in all (NOTIFY no_more_static_job_to_submit
    /// after the last).
    total_jobs: usize,
    submitted: usize,
    workload: String,
    pbase: f64,
    begun: bool,
    ended: bool,
    fault: Option<String>,
    /// Request/reply round trips so far.
    pub round_trips: u64,
}

impl BatsimQueue {
    /// A scheduler on `nodes` nodes behind `ex`, for a workload of
    /// `total_jobs` jobs named `workload`; accepted jobs cost
    /// `pbase` x their estimate, as the built-in queue policies charge.
    pub fn new(
        ex: Box<dyn Exchange>,
        nodes: usize,
        total_jobs: usize,
        workload: &str,
        pbase: f64,
    ) -> BatsimQueue {
        BatsimQueue {
            ex,
            nodes: vec![None; nodes],
            usable: vec![true; nodes],
            jobs: HashMap::new(),
            waiting: BTreeSet::new(),
            seq: 0,
            outbox: Vec::new(),
            held: Vec::new(),
            held_seq: 0,
            calls: Vec::new(),
            last_now: 0.0,
            total_jobs,
            submitted: 0,
            workload: workload.to_string(),
            pbase,
            begun: false,
            ended: false,
            fault: None,
            round_trips: 0,
        }
    }

    /// Why the scheduler was given up, if it was.
    pub fn fault(&self) -> Option<&str> {
        self.fault.as_deref()
    }

    fn reject(detail: String) -> Reject {
        Reject {
            reason: RejectReason::Scheduler,
            detail,
        }
    }

    /// Gives the scheduler up: every undecided job is dropped.
    fn give_up(&mut self, why: String, out: &mut Vec<QueueAction>) {
        if self.fault.is_some() {
            return;
        }
        self.ex.failed(&why);
        for (_, job) in std::mem::take(&mut self.waiting) {
            if let Some(j) = self.jobs.get_mut(&job) {
                j.0 = State::Over;
            }
            out.push(QueueAction::Drop {
                job,
                reject: Self::reject(format!("the scheduler failed: {why}")),
            });
        }
        self.held.clear();
        self.calls.clear();
        self.outbox.clear();
        self.fault = Some(why);
    }

    /// One request with `events` at `now`; the reply's decisions are held.
    fn round(&mut self, now: Time, events: &[OutEvent]) -> Result<(), String> {
        let now = now.max(self.last_now);
        let text = protocol::encode(now, events);
        let reply = self.ex.exchange(&text)?;
        self.round_trips += 1;
        let reply = protocol::decode_reply(&reply, now).map_err(|e| e.to_string())?;
        self.last_now = reply.now;
        for (t, d) in reply.decisions {
            self.held_seq += 1;
            self.held.push((t, self.held_seq, d));
        }
        Ok(())
    }

    fn job_of(&self, name: &str) -> Result<JobId, String> {
        protocol::parse_job_name(name)
            .filter(|j| self.jobs.contains_key(j))
            .ok_or_else(|| format!("the scheduler named an unknown job '{name}'"))
    }

    /// Applies one held decision at `now`.
    fn apply(&mut self, now: Time, d: Decision, out: &mut Vec<QueueAction>) -> Result<(), String> {
        match d {
            Decision::Execute { job: name, alloc } => {
                let job = self.job_of(&name)?;
                let (state, procs, _) = &self.jobs[&job];
                if *state != State::Waiting {
                    return Err(format!("EXECUTE_JOB of job '{name}', which is not waiting"));
                }
                if alloc.len() != *procs {
                    return Err(format!(
                        "EXECUTE_JOB of job '{name}' on {} resources; it asks for {procs}",
                        alloc.len()
                    ));
                }
                for &n in &alloc {
                    match self.nodes.get(n) {
                        None => {
                            return Err(format!(
                                "EXECUTE_JOB of job '{name}' names resource {n}; there are {} (ids 0-{})",
                                self.nodes.len(),
                                self.nodes.len().saturating_sub(1)
                            ))
                        }
                        Some(Some(other)) => {
                            return Err(format!(
                                "EXECUTE_JOB of job '{name}' on resource {n}, which job '{}' is running on",
                                protocol::job_name(*other)
                            ))
                        }
                        Some(None) if !self.usable[n] => {
                            return Err(format!(
                                "EXECUTE_JOB of job '{name}' on resource {n}, which is down"
                            ))
                        }
                        Some(None) => {}
                    }
                }
                for &n in &alloc {
                    self.nodes[n] = Some(job);
                }
                self.waiting.retain(|&(_, j)| j != job);
                let estimate = self.jobs[&job].2;
                self.jobs.get_mut(&job).expect("known").0 = State::Running(alloc.clone());
                out.push(QueueAction::Start {
                    job,
                    nodes: alloc,
                    cost: estimate * self.pbase,
                });
            }
            Decision::Reject { job: name } => {
                let job = self.job_of(&name)?;
                if self.jobs[&job].0 != State::Waiting {
                    return Err(format!("REJECT_JOB of job '{name}', which is not waiting"));
                }
                self.waiting.retain(|&(_, j)| j != job);
                self.jobs.get_mut(&job).expect("known").0 = State::Over;
                out.push(QueueAction::Drop {
                    job,
                    reject: Self::reject("rejected by the scheduler (REJECT_JOB)".into()),
                });
            }
            Decision::CallMeLater { at } => self.calls.push(at.max(now)),
            Decision::Kill { jobs } => {
                let mut ids = Vec::new();
                for name in jobs {
                    let job = self.job_of(&name)?;
                    if matches!(self.jobs[&job].0, State::Running(_)) {
                        return Err(format!(
                            "KILL_JOB of running job '{name}': killing a running job is not supported yet (see docs/batsim.md)"
                        ));
                    }
                    ids.push(name);
                }
                // Jobs already over: Batsim answers with an empty progress.
                self.outbox.push(protocol::job_killed(now, &ids, &[]));
            }
            Decision::Notify { .. } => {}
        }
        Ok(())
    }

    /// Applies the held decisions due at `now`, in time then message order.
    fn apply_due(&mut self, now: Time, out: &mut Vec<QueueAction>) -> Result<(), String> {
        self.held
            .sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let due = self.held.partition_point(|h| h.0 <= now);
        let mut ready: Vec<_> = self.held.drain(..due).collect();
        for (_, _, d) in ready.drain(..) {
            self.apply(now, d, out)?;
        }
        Ok(())
    }

    fn schedule_inner(&mut self, now: Time, out: &mut Vec<QueueAction>) -> Result<(), String> {
        if !self.begun {
            self.begun = true;
            let begins = protocol::simulation_begins(now, self.nodes.len(), &self.workload);
            self.round(now, &[begins])?;
        }
        for _ in 0..MAX_ROUNDS_PER_INSTANT {
            self.apply_due(now, out)?;
            let before = self.calls.len();
            self.calls.retain(|&t| t > now);
            for _ in self.calls.len()..before {
                self.outbox.push(protocol::requested_call(now));
            }
            if self.outbox.is_empty() {
                return Ok(());
            }
            let events = std::mem::take(&mut self.outbox);
            self.round(now, &events)?;
        }
        Err(format!(
            "more than {MAX_ROUNDS_PER_INSTANT} requests at time {now}: the scheduler keeps asking to be called at once"
        ))
    }
}

impl QueuePolicy for BatsimQueue {
    fn name(&self) -> &'static str {
        "batsim"
    }

    fn submit(&mut self, now: Time, job: &JobSpec) -> Option<Reject> {
        if let Some(f) = &self.fault {
            return Some(Self::reject(format!("the scheduler failed: {f}")));
        }
        self.seq += 1;
        self.jobs
            .insert(job.id, (State::Waiting, job.processors(), job.estimate()));
        self.waiting.insert((self.seq, job.id));
        self.outbox.push(protocol::job_submitted(
            now,
            job.id,
            job.processors(),
            job.estimate(),
            job.details.submit_time,
        ));
        self.submitted += 1;
        if self.submitted == self.total_jobs {
            self.outbox
                .push(protocol::notify(now, "no_more_static_job_to_submit"));
        }
        None
    }

    fn finished(&mut self, now: Time, job: JobId) {
        let Some((state, _, _)) = self.jobs.get_mut(&job) else {
            return;
        };
        let State::Running(alloc) = std::mem::replace(state, State::Over) else {
            return;
        };
        for &n in &alloc {
            self.nodes[n] = None;
        }
        if self.fault.is_none() {
            self.outbox
                .push(protocol::job_completed(now, job, &alloc, false));
        }
    }

    fn schedule(&mut self, now: Time, out: &mut Vec<QueueAction>) {
        if self.fault.is_some() || self.ended {
            return;
        }
        if let Err(e) = self.schedule_inner(now, out) {
            self.give_up(e, out);
        }
    }

    fn queued(&self) -> usize {
        self.waiting.len()
    }

    fn set_node_available(&mut self, node: usize, available: bool) {
        if node == self.usable.len() {
            self.usable.push(available);
            self.nodes.push(None);
        } else if let Some(u) = self.usable.get_mut(node) {
            *u = available;
        }
    }

    fn wakeup(&self) -> Option<Time> {
        if self.fault.is_some() || self.ended {
            return None;
        }
        self.held
            .iter()
            .map(|h| h.0)
            .chain(self.calls.iter().copied())
            .min_by(f64::total_cmp)
    }

    fn end(&mut self, now: Time, out: &mut Vec<QueueAction>) {
        if self.fault.is_some() || self.ended {
            return;
        }
        // Events not yet sent (none after a scheduling pass) go first.
        if let Err(e) = self.schedule_inner(now, out) {
            self.give_up(e, out);
            return;
        }
        if !self.waiting.is_empty() {
            let n = self.waiting.len();
            self.give_up(
                format!(
                    "the simulation ran out of events with {n} jobs the scheduler never started or rejected"
                ),
                out,
            );
            return;
        }
        self.ended = true;
        let ends = protocol::simulation_ends(now.max(self.last_now));
        if let Err(e) = self.round(now, &[ends]) {
            // Every job is decided: nothing is lost, but say so.
            self.ex.failed(&format!("at SIMULATION_ENDS: {e}"));
            self.fault = Some(e);
        }
    }
}
