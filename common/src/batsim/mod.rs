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
use std::sync::{Arc, Mutex};

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

/// A live run's asynchronous exchange, in memory: the policy leaves its
/// request here, the live core carries it to the scheduler's transport and
/// brings the reply back (time runs while the scheduler thinks). Shared
/// between the policy and the core; no I/O.
#[derive(Clone, Default)]
pub struct Mailbox(Arc<Mutex<Slots>>);

#[derive(Default)]
struct Slots {
    request: Option<String>,
    reply: Option<Result<String, String>>,
}

impl Mailbox {
    fn slots(&self) -> std::sync::MutexGuard<'_, Slots> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The request the policy wants sent, if any.
    pub fn take_request(&self) -> Option<String> {
        self.slots().request.take()
    }

    /// The reply (or the transport's failure) to the request sent last.
    pub fn replied(&self, reply: Result<String, String>) {
        self.slots().reply = Some(reply);
    }

    fn post(&self, request: String) {
        self.slots().request = Some(request);
    }

    fn take_reply(&self) -> Option<Result<String, String>> {
        self.slots().reply.take()
    }
}

/// How a live run talks to its scheduler.
struct Live {
    /// An empty request goes out when none went for this long (trace s).
    keepalive: Time,
    mailbox: Mailbox,
    /// A request is out and its reply not back.
    outstanding: bool,
    /// NOTIFY no_more_static_job_to_submit went.
    notified: bool,
}

/// Where a job is, as far as the scheduler's decisions go.
#[derive(Debug, Clone, PartialEq)]
enum State {
    /// Submitted, not decided.
    Waiting,
    /// Started on these nodes, at this time.
    Running(Vec<usize>, Time),
    /// Over (completed, rejected or dropped).
    Over,
}

/// Batsim time is the simulator's plus this: no job arrives at Batsim
/// time 0 (pybatsim's `batsim.sched` refuses an allocation starting at 0).
pub const EPOCH: Time = 1.0;

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
    /// The scheduler's latest now, Batsim time (messages never go back
    /// before it).
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
    /// Live: one request at a time through a [`Mailbox`], events that
    /// happen meanwhile go in the next; decisions take effect when they
    /// arrive (time ran while the scheduler thought), and an empty request
    /// goes out when none went for a while (pybatsim gives Batsim up
    /// after 2 s of silence).
    live: Option<Live>,
    last_request: Time,
    /// The `now` of the latest request (Batsim time).
    last_sent: Time,
    /// Jobs a KILL_JOB is ending.
    killing: std::collections::HashSet<JobId>,
    /// The KILL_JOBs not answered yet.
    kills: Vec<KillRequest>,
    /// Resources announced in SIMULATION_BEGINS.
    announced: usize,
    /// Availability changes of announced resources since the last pass,
    /// told at the next (NOTIFY `event_machine_(un)available`).
    availability: Vec<(usize, bool)>,
    /// The instant of the latest scheduling pass (simulator time).
    now: Time,
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
            live: None,
            last_request: 0.0,
            last_sent: 0.0,
            killing: Default::default(),
            kills: Vec::new(),
            announced: 0,
            availability: Vec::new(),
            now: 0.0,
        }
    }

    /// For a live run: requests go to `mailbox` without waiting, one at a
    /// time; decisions take effect on arrival, and an empty request keeps
    /// the scheduler company after `keepalive` trace seconds of silence.
    pub fn live(mut self, keepalive: Time, mailbox: Mailbox) -> BatsimQueue {
        self.live = Some(Live {
            keepalive: keepalive.max(1e-9),
            mailbox,
            outstanding: false,
            notified: false,
        });
        self
    }

    /// Whether a request is out and its reply not back (live).
    pub fn outstanding(&self) -> bool {
        self.live.as_ref().is_some_and(|l| l.outstanding)
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

    /// One request with `events` (Batsim times) at simulator time `now`;
    /// the reply's decisions are held, in simulator time.
    fn round(&mut self, now: Time, events: &[OutEvent]) -> Result<(), String> {
        let bs_now = (now + EPOCH).max(self.last_now);
        let text = protocol::encode(bs_now, events);
        self.last_request = now;
        if let Some(l) = &mut self.live {
            // Answered later, by `replied`.
            l.mailbox.post(text);
            l.outstanding = true;
            self.last_sent = bs_now;
            return Ok(());
        }
        let reply = self.ex.exchange(&text)?;
        self.replied(now, bs_now, &reply)
    }

    /// Holds the decisions of the reply `text` to a request dated `bs_now`
    /// (Batsim time), received at simulator time `now`.
    fn replied(&mut self, now: Time, bs_now: Time, reply: &str) -> Result<(), String> {
        self.round_trips += 1;
        let reply =
            protocol::decode_reply(reply, bs_now, self.nodes.len()).map_err(|e| e.to_string())?;
        self.last_now = reply.now;
        for (t, d) in reply.decisions {
            // A decision dated the request's now is taken at `now` exactly
            // (t - EPOCH could be an ulp off); a later one at its own time.
            let at = if t <= now + EPOCH || self.live.is_some() {
                now
            } else {
                t - EPOCH
            };
            let d = match d {
                Decision::CallMeLater { at } => Decision::CallMeLater { at: at - EPOCH },
                d => d,
            };
            self.held_seq += 1;
            self.held.push((at, self.held_seq, d));
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
                self.jobs.get_mut(&job).expect("known").0 = State::Running(alloc.clone(), now);
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
            // Batsim refuses a call in the past ("You asked to be awaken
            // in the past!"); live, a call the scheduler meant for soon may
            // arrive after its time, and is made at once.
            // (Both in simulator time here; said in Batsim's.)
            Decision::CallMeLater { at } if self.live.is_none() && at < now - 1e-9 => {
                return Err(format!(
                    "CALL_ME_LATER at {}, before the decision's time {}",
                    at + EPOCH,
                    now + EPOCH
                ))
            }
            Decision::CallMeLater { at } => self.calls.push(at.max(now)),
            Decision::Kill { jobs } => {
                // One JOB_KILLED answers the whole KILL_JOB, once every job
                // of it still running has ended (`finished`); jobs already
                // over are named in it with no progress.
                let mut waiting = std::collections::HashSet::new();
                for name in &jobs {
                    let job = self.job_of(name)?;
                    match self.jobs[&job].0 {
                        State::Running(..) => {
                            if self.killing.insert(job) {
                                out.push(QueueAction::Kill { job });
                            }
                            waiting.insert(job);
                        }
                        State::Waiting => {
                            return Err(format!(
                                "KILL_JOB of job '{name}', which has not started (REJECT_JOB it)"
                            ))
                        }
                        State::Over => {}
                    }
                }
                let request = KillRequest {
                    names: jobs,
                    waiting,
                    killed: Vec::new(),
                };
                if request.waiting.is_empty() {
                    self.outbox
                        .push(protocol::job_killed(now + EPOCH, &request.names, &[]));
                } else {
                    self.kills.push(request);
                }
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

    /// A live scheduling pass: takes the reply in, if one came, and sends
    /// the next request if none is out and there is something to say.
    fn schedule_live(&mut self, now: Time, out: &mut Vec<QueueAction>) -> Result<(), String> {
        let l = self.live.as_mut().expect("live");
        if l.outstanding {
            let Some(reply) = l.mailbox.take_reply() else {
                return Ok(());
            };
            l.outstanding = false;
            self.replied(now, self.last_sent, &reply?)?;
        }
        if !self.begun {
            self.begun = true;
            self.announced = self.nodes.len();
            let begins = protocol::simulation_begins(now + EPOCH, self.nodes.len(), &self.workload);
            return self.round(now, &[begins]);
        }
        self.apply_due(now, out)?;
        let before = self.calls.len();
        self.calls.retain(|&t| t > now);
        for _ in self.calls.len()..before {
            self.outbox.push(protocol::requested_call(now + EPOCH));
        }
        let keepalive = self.live.as_ref().expect("live").keepalive;
        if !self.outbox.is_empty() || now - self.last_request >= keepalive {
            let events = std::mem::take(&mut self.outbox);
            self.round(now, &events)?;
        }
        Ok(())
    }

    fn schedule_inner(&mut self, now: Time, out: &mut Vec<QueueAction>) -> Result<(), String> {
        if self.live.is_some() {
            return self.schedule_live(now, out);
        }
        if !self.begun {
            self.begun = true;
            self.announced = self.nodes.len();
            let begins = protocol::simulation_begins(now + EPOCH, self.nodes.len(), &self.workload);
            self.round(now, &[begins])?;
        }
        for _ in 0..MAX_ROUNDS_PER_INSTANT {
            self.apply_due(now, out)?;
            let before = self.calls.len();
            self.calls.retain(|&t| t > now);
            for _ in self.calls.len()..before {
                self.outbox.push(protocol::requested_call(now + EPOCH));
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

impl BatsimQueue {
    /// Running job `job` ended at `now` (`failed`: lost with its node):
    /// its JOB_COMPLETED, and the JOB_KILLED of a KILL_JOB it completes.
    fn ended_job(&mut self, now: Time, job: JobId, failed: bool) {
        let Some((state, _, estimate)) = self.jobs.get_mut(&job) else {
            return;
        };
        let estimate = *estimate;
        let State::Running(alloc, started) = std::mem::replace(state, State::Over) else {
            return;
        };
        for &n in &alloc {
            self.nodes[n] = None;
        }
        if self.fault.is_some() {
            return;
        }
        let killed = self.killing.remove(&job);
        let outcome = if killed {
            protocol::Outcome::Killed
        } else if failed {
            protocol::Outcome::Failed
        } else {
            protocol::Outcome::Success
        };
        self.outbox
            .push(protocol::job_completed(now + EPOCH, job, &alloc, outcome));
        if !killed {
            return;
        }
        // Its progress: the share of its estimate it ran, within ]0, 1[
        // as Batsim gives it (the scheduler knows no other length).
        let progress = ((now - started) / estimate).clamp(1e-9, 1.0 - 1e-9);
        let mut done = Vec::new();
        for (i, k) in self.kills.iter_mut().enumerate() {
            if k.waiting.remove(&job) {
                k.killed.push((job, progress));
                if k.waiting.is_empty() {
                    done.push(i);
                }
            }
        }
        for i in done.into_iter().rev() {
            let k = self.kills.remove(i);
            self.outbox
                .push(protocol::job_killed(now + EPOCH, &k.names, &k.killed));
        }
    }
}

/// A KILL_JOB waiting for its running jobs to end.
#[derive(Debug)]
struct KillRequest {
    /// The jobs it named, as it named them.
    names: Vec<String>,
    /// Those still running.
    waiting: std::collections::HashSet<JobId>,
    /// Those it killed, with their progress.
    killed: Vec<(JobId, f64)>,
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
            now + EPOCH,
            job.id,
            job.processors(),
            job.estimate(),
            job.details.submit_time + EPOCH,
        ));
        self.submitted += 1;
        if self.submitted == self.total_jobs {
            if let Some(l) = &mut self.live {
                l.notified = true;
            }
            self.outbox.push(protocol::notify(
                now + EPOCH,
                "no_more_static_job_to_submit",
            ));
        }
        None
    }

    fn finished(&mut self, now: Time, job: JobId) {
        self.ended_job(now, job, false);
    }

    fn failed(&mut self, now: Time, job: JobId) {
        self.ended_job(now, job, true);
    }

    fn schedule(&mut self, now: Time, out: &mut Vec<QueueAction>) {
        if self.fault.is_some() || self.ended {
            return;
        }
        self.now = now;
        for (node, up) in std::mem::take(&mut self.availability) {
            self.outbox.push(protocol::notify_resources(
                now + EPOCH,
                if up {
                    "event_machine_available"
                } else {
                    "event_machine_unavailable"
                },
                &[node],
            ));
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
            // Said to the scheduler if it knows the resource and the state
            // changes (a node appended later is beyond what SIMULATION_BEGINS
            // announced, which Batsim's protocol cannot grow).
            if *u != available && self.begun && node < self.announced {
                self.availability.push((node, available));
            }
            *u = available;
        }
    }

    fn wakeup(&self) -> Option<Time> {
        if self.fault.is_some() || self.ended {
            return None;
        }
        // Events left after a pass (a kill's completion) go at once; live,
        // they go with the next request, when the reply is in.
        let pending = (!self.outbox.is_empty() && !self.outstanding()).then_some(self.now);
        self.held
            .iter()
            .map(|h| h.0)
            .chain(self.calls.iter().copied())
            .chain(pending)
            .min_by(f64::total_cmp)
    }

    fn end(&mut self, now: Time, out: &mut Vec<QueueAction>) {
        if self.fault.is_some() || self.ended {
            return;
        }
        if let Some(l) = &mut self.live {
            // The run is over (its jobs decided and done, or stopped): the
            // scheduler is told, after whatever it was not told yet. The
            // transport sends this after the reply to a request still out,
            // which is not read (nothing can happen any more).
            self.ended = true;
            if !self.begun {
                return;
            }
            let mut events = std::mem::take(&mut self.outbox);
            if !l.notified {
                l.notified = true;
                events.push(protocol::notify(
                    now + EPOCH,
                    "no_more_static_job_to_submit",
                ));
            }
            let bs_now = (now + EPOCH).max(self.last_now);
            events.push(protocol::simulation_ends(bs_now));
            l.mailbox.post(protocol::encode(bs_now, &events));
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
        let ends = protocol::simulation_ends((now + EPOCH).max(self.last_now));
        if let Err(e) = self.round(now, &[ends]) {
            // Every job is decided: nothing is lost, but say so.
            self.ex.failed(&format!("at SIMULATION_ENDS: {e}"));
            self.fault = Some(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use serde_json::{json, Value};

    use super::*;
    use crate::policy::{test_util::specs, Policy};
    use crate::sim::simulate;
    use crate::workload::WorkloadJob;

    /// A scheduler written here: FCFS that thinks 0.5 s per request (its
    /// decisions are dated now + 0.5, as pybatsim's `consume_time` does),
    /// asks at SIMULATION_BEGINS to be called at Batsim time 3. It logs
    /// every request.
    struct Fcfs {
        free: Vec<bool>,
        queue: Vec<(String, usize)>,
        running: Vec<(String, Vec<usize>)>,
        log: Arc<Mutex<Vec<Value>>>,
    }

    impl Exchange for Fcfs {
        fn exchange(&mut self, request: &str) -> Result<String, String> {
            let msg: Value = serde_json::from_str(request).unwrap();
            self.log.lock().unwrap().push(msg.clone());
            let now = msg["now"].as_f64().unwrap();
            let t = now + 0.5;
            let mut out = Vec::new();
            for e in msg["events"].as_array().unwrap() {
                let d = &e["data"];
                match e["type"].as_str().unwrap() {
                    "SIMULATION_BEGINS" => {
                        let n = d["nb_compute_resources"].as_u64().unwrap() as usize;
                        self.free = vec![true; n];
                        out.push(json!({"timestamp": t, "type": "CALL_ME_LATER", "data": {"timestamp": 3.0}}));
                    }
                    "JOB_SUBMITTED" => self.queue.push((
                        d["job_id"].as_str().unwrap().to_string(),
                        d["job"]["res"].as_u64().unwrap() as usize,
                    )),
                    "JOB_COMPLETED" => {
                        let k = self
                            .running
                            .iter()
                            .position(|r| r.0 == d["job_id"])
                            .unwrap();
                        for n in self.running.remove(k).1 {
                            self.free[n] = true;
                        }
                    }
                    _ => {}
                }
            }
            while let Some((job, res)) = self.queue.first().cloned() {
                let free: Vec<usize> = (0..self.free.len()).filter(|&n| self.free[n]).collect();
                if free.len() < res {
                    break;
                }
                let alloc = free[..res].to_vec();
                for &n in &alloc {
                    self.free[n] = false;
                }
                out.push(json!({"timestamp": t, "type": "EXECUTE_JOB",
                    "data": {"job_id": job, "alloc": protocol::procset(&alloc)}}));
                self.running.push((job, alloc));
                self.queue.remove(0);
            }
            Ok(json!({"now": t, "events": out}).to_string())
        }

        fn failed(&mut self, why: &str) {
            panic!("the scheduler was given up: {why}");
        }
    }

    #[test]
    fn decisions_take_effect_at_their_timestamps() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let fcfs = Fcfs {
            free: Vec::new(),
            queue: Vec::new(),
            running: Vec::new(),
            log: log.clone(),
        };
        // Two nodes. Job 1: both nodes, runs 10 s, at 0. Job 2: one node,
        // runs 5 s, at 1.
        let jobs = vec![
            WorkloadJob {
                spec: JobSpec::new(1, 0.0, 20.0, 2, 1000.0, 1e9),
                actual_runtime: 10.0,
            },
            WorkloadJob {
                spec: JobSpec::new(2, 1.0, 8.0, 1, 1000.0, 1e9),
                actual_runtime: 5.0,
            },
        ];
        let q = BatsimQueue::new(Box::new(fcfs), 2, 2, "test", 1.0);
        let o = simulate(&jobs, &specs(2), Policy::Queue(Box::new(q)));
        // By hand (Batsim time = simulator time + 1): at 0 job 1 arrives;
        // SIMULATION_BEGINS goes first (now 1, answered at 1.5), then the
        // submission at the scheduler's 1.5 (now never goes back), answered
        // at 2: job 1 starts at simulator time 1 and ends at 11. Job 2
        // waits for both nodes; the completion at 11 (Batsim 12) is
        // answered at 12.5: job 2 runs from 11.5 to 16.5.
        let r1 = &o.records[0];
        let r2 = &o.records[1];
        assert_eq!((r1.start, r1.finish), (Some(1.0), Some(11.0)));
        assert_eq!((r2.start, r2.finish), (Some(11.5), Some(16.5)));
        let log = log.lock().unwrap();
        let types: Vec<Vec<&str>> = log
            .iter()
            .map(|m| {
                m["events"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|e| e["type"].as_str().unwrap())
                    .collect()
            })
            .collect();
        assert_eq!(
            types,
            vec![
                vec!["SIMULATION_BEGINS"],
                vec!["JOB_SUBMITTED"],
                vec!["JOB_SUBMITTED", "NOTIFY"],
                vec!["REQUESTED_CALL"],
                vec!["JOB_COMPLETED"],
                vec!["JOB_COMPLETED"],
                vec!["SIMULATION_ENDS"],
            ]
        );
        let nows: Vec<f64> = log.iter().map(|m| m["now"].as_f64().unwrap()).collect();
        // The CALL_ME_LATER (3) is called at 3 exactly; SIMULATION_ENDS
        // comes at the scheduler's last now (18), after the completion at
        // 17.5.
        assert_eq!(nows, vec![1.0, 1.5, 2.0, 3.0, 12.0, 17.5, 18.0]);
    }

    #[test]
    fn kill_job_ends_a_running_job_at_its_time() {
        let jobs = vec![WorkloadJob {
            spec: JobSpec::new(1, 0.0, 200.0, 1, 1000.0, 1e9),
            actual_runtime: 100.0,
        }];
        let (q, log, given_up) = scripted(6.0, &["w0!1"], 1, 1);
        let o = simulate(&jobs, &specs(1), Policy::Queue(Box::new(q)));
        assert!(given_up.lock().unwrap().is_empty(), "{given_up:?}");
        // Started at 0, killed at Batsim 6 = 5 instead of running 100 s.
        assert_eq!(
            (o.records[0].start, o.records[0].finish),
            (Some(0.0), Some(5.0))
        );
        let log = log.lock().unwrap();
        let after_kill: Vec<(&str, &Value)> = log
            .iter()
            .flat_map(|m| m["events"].as_array().unwrap())
            .filter(|e| e["timestamp"] == 6.0)
            .map(|e| (e["type"].as_str().unwrap(), &e["data"]))
            .collect();
        assert_eq!(after_kill[0].0, "REQUESTED_CALL");
        assert_eq!(after_kill[1].0, "JOB_COMPLETED");
        assert_eq!(after_kill[1].1["job_state"], "COMPLETED_KILLED");
        assert_eq!(after_kill[2].0, "JOB_KILLED");
        assert!(after_kill[2].1["job_progress"].get("w0!1").is_some());
    }

    /// Starts submitted job `w0!k` at once on node k - 1; at a requested
    /// call, kills the jobs `kills` names with one KILL_JOB; logs every request and
    /// keeps what it is told when given up. At SIMULATION_BEGINS it asks
    /// to be called at `call`.
    struct Scripted {
        call: f64,
        kills: &'static [&'static str],
        log: Arc<Mutex<Vec<Value>>>,
        given_up: Arc<Mutex<Vec<String>>>,
    }

    impl Exchange for Scripted {
        fn exchange(&mut self, request: &str) -> Result<String, String> {
            let msg: Value = serde_json::from_str(request).unwrap();
            self.log.lock().unwrap().push(msg.clone());
            let now = msg["now"].as_f64().unwrap();
            let mut out = Vec::new();
            for e in msg["events"].as_array().unwrap() {
                match e["type"].as_str().unwrap() {
                    "SIMULATION_BEGINS" => out.push(json!({"timestamp": now, "type": "CALL_ME_LATER", "data": {"timestamp": self.call}})),
                    "JOB_SUBMITTED" => {
                        let id = e["data"]["job_id"].as_str().unwrap();
                        let k: usize = id.trim_start_matches("w0!").parse().unwrap();
                        out.push(json!({"timestamp": now, "type": "EXECUTE_JOB",
                            "data": {"job_id": id, "alloc": (k - 1).to_string()}}));
                    }
                    "REQUESTED_CALL" => out.push(json!({"timestamp": now, "type": "KILL_JOB",
                        "data": {"job_ids": self.kills}})),
                    _ => {}
                }
            }
            Ok(json!({"now": now, "events": out}).to_string())
        }

        fn failed(&mut self, why: &str) {
            self.given_up.lock().unwrap().push(why.to_string());
        }
    }

    type Log = Arc<Mutex<Vec<Value>>>;

    fn scripted(
        call: f64,
        kills: &'static [&'static str],
        nodes: usize,
        jobs: usize,
    ) -> (BatsimQueue, Log, Arc<Mutex<Vec<String>>>) {
        let (log, given_up) = (Log::default(), Arc::new(Mutex::new(Vec::new())));
        let ex = Scripted {
            call,
            kills,
            log: log.clone(),
            given_up: given_up.clone(),
        };
        let q = BatsimQueue::new(Box::new(ex), nodes, jobs, "test", 1.0);
        (q, log, given_up)
    }

    fn events_of(log: &Log, kind: &str) -> Vec<(f64, Value)> {
        log.lock()
            .unwrap()
            .iter()
            .flat_map(|m| m["events"].as_array().unwrap().clone())
            .filter(|e| e["type"] == kind)
            .map(|e| (e["timestamp"].as_f64().unwrap(), e["data"].clone()))
            .collect()
    }

    /// One KILL_JOB of two running jobs is answered by one JOB_KILLED
    /// naming both, each with its progress: 5 s run of a 200 s estimate,
    /// 0.025 (Batsim's `job_progress`, a share in ]0, 1[).
    #[test]
    fn one_kill_job_is_answered_by_one_job_killed_with_progress() {
        let (q, log, given_up) = scripted(6.0, &["w0!1", "w0!2"], 2, 2);
        let jobs: Vec<WorkloadJob> = (1..=2)
            .map(|id| WorkloadJob {
                spec: JobSpec::new(id, 0.0, 200.0, 1, 1000.0, 1e9),
                actual_runtime: 100.0,
            })
            .collect();
        let o = simulate(&jobs, &specs(2), Policy::Queue(Box::new(q)));
        assert!(given_up.lock().unwrap().is_empty(), "{given_up:?}");
        assert_eq!(o.records[1].finish, Some(5.0));
        let killed = events_of(&log, "JOB_KILLED");
        assert_eq!(killed.len(), 1, "{killed:?}");
        let (t, d) = &killed[0];
        assert_eq!(*t, 6.0);
        assert_eq!(d["job_ids"], json!(["w0!1", "w0!2"]));
        for j in ["w0!1", "w0!2"] {
            assert_eq!(d["job_progress"][j]["progress"], json!(0.025), "{d}");
        }
    }

    /// A CALL_ME_LATER before the decision's own time is refused, as
    /// Batsim refuses it ("You asked to be awaken in the past!").
    #[test]
    fn a_call_me_later_in_the_past_gives_the_scheduler_up() {
        let (q, _, given_up) = scripted(0.25, &[], 1, 1);
        let jobs = vec![WorkloadJob {
            spec: JobSpec::new(1, 0.0, 200.0, 1, 1000.0, 1e9),
            actual_runtime: 100.0,
        }];
        simulate(&jobs, &specs(1), Policy::Queue(Box::new(q)));
        let why = given_up.lock().unwrap().join("; ");
        assert!(
            why.contains("CALL_ME_LATER at 0.25, before the decision's time 1"),
            "{why}"
        );
    }

    /// A job lost with its node ends COMPLETED_FAILED for the scheduler,
    /// and a node down or back is said with NOTIFY
    /// `event_machine_unavailable` / `event_machine_available`.
    #[test]
    fn lost_jobs_fail_and_nodes_going_down_are_told() {
        let (mut q, log, given_up) = scripted(1e6, &[], 2, 2);
        let mut out = Vec::new();
        assert!(q
            .submit(0.0, &JobSpec::new(1, 0.0, 200.0, 1, 1000.0, 1e9))
            .is_none());
        q.schedule(0.0, &mut out);
        assert!(
            matches!(out[..], [QueueAction::Start { job: 1, .. }]),
            "{out:?}"
        );
        q.set_node_available(0, false);
        q.failed(3.0, 1);
        q.schedule(3.0, &mut out);
        q.set_node_available(0, true);
        q.schedule(4.0, &mut out);
        assert!(given_up.lock().unwrap().is_empty(), "{given_up:?}");
        let done = events_of(&log, "JOB_COMPLETED");
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].1["job_state"], "COMPLETED_FAILED");
        assert_eq!(done[0].1["return_code"], 1);
        let told: Vec<(f64, String, String)> = events_of(&log, "NOTIFY")
            .into_iter()
            .filter(|(_, d)| d["resources"].is_string())
            .map(|(t, d)| {
                (
                    t,
                    d["type"].as_str().unwrap().into(),
                    d["resources"].as_str().unwrap().into(),
                )
            })
            .collect();
        assert_eq!(
            told,
            [
                (4.0, "event_machine_unavailable".into(), "0".into()),
                (5.0, "event_machine_available".into(), "0".into()),
            ]
        );
    }

    /// Starts each submitted job at once on node 0 and keeps what it is
    /// told when given up.
    struct OnNodeZero {
        given_up: Arc<Mutex<Vec<String>>>,
    }

    impl Exchange for OnNodeZero {
        fn exchange(&mut self, request: &str) -> Result<String, String> {
            let msg: Value = serde_json::from_str(request).unwrap();
            let now = msg["now"].as_f64().unwrap();
            let out: Vec<Value> = msg["events"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| e["type"] == "JOB_SUBMITTED")
                .map(|e| {
                    json!({"timestamp": now, "type": "EXECUTE_JOB",
                        "data": {"job_id": e["data"]["job_id"], "alloc": "0"}})
                })
                .collect();
            Ok(json!({"now": now, "events": out}).to_string())
        }

        fn failed(&mut self, why: &str) {
            self.given_up.lock().unwrap().push(why.to_string());
        }
    }

    /// A resumed live manager took over job 1, running on node 0: the
    /// external scheduler, which never started it, cannot be told (it has
    /// no message for it), so node 0 is down for it while the part runs.
    /// A scheduler that starts job 2 there is refused, naming the node,
    /// and job 2 does not share node 0 with job 1.
    #[test]
    fn an_adopted_jobs_node_is_down_for_the_scheduler() {
        use crate::admission::ManagerCore;
        use crate::metrics::JobRecord;
        use crate::protocol::NodeInfo;
        let given_up = Arc::new(Mutex::new(Vec::new()));
        let ex = OnNodeZero {
            given_up: given_up.clone(),
        };
        let q = BatsimQueue::new(Box::new(ex), 0, 2, "test", 1.0);
        let mut c = ManagerCore::new(Policy::Queue(Box::new(q)));
        let info = |local| NodeInfo {
            local,
            capacity: 1.0,
            speed: 1.0,
            memory_kb: 1 << 20,
            disk_mb: 1 << 10,
        };
        c.register(1, "a", &[info(0), info(1)]).unwrap();
        let j1 = WorkloadJob {
            spec: JobSpec::new(1, 0.0, 100.0, 1, 1000.0, 1e9),
            actual_runtime: 100.0,
        };
        let mut r = JobRecord::new(&j1);
        r.accept(0.0, vec![0], 0.0);
        c.adopt(j1, r).unwrap();
        let j2 = WorkloadJob {
            spec: JobSpec::new(2, 1.0, 10.0, 1, 1000.0, 1e9),
            actual_runtime: 10.0,
        };
        let mut out = Vec::new();
        c.submit(1.0, j2, &mut out).unwrap();
        assert_ne!(c.record(2).unwrap().nodes, [0]);
        let given_up = given_up.lock().unwrap();
        assert_eq!(given_up.len(), 1, "{given_up:?}");
        assert!(
            given_up[0].contains("EXECUTE_JOB of job 'w0!2' on resource 0, which is down"),
            "{given_up:?}"
        );
    }

    /// Once the adopted job's part completes, node 0 is the scheduler's
    /// again: job 2, started there, runs.
    #[test]
    fn an_adopted_jobs_node_comes_back_to_the_scheduler_at_its_end() {
        use crate::admission::ManagerCore;
        use crate::metrics::JobRecord;
        use crate::protocol::{NodeInfo, PartId};
        let given_up = Arc::new(Mutex::new(Vec::new()));
        let ex = OnNodeZero {
            given_up: given_up.clone(),
        };
        let q = BatsimQueue::new(Box::new(ex), 0, 2, "test", 1.0);
        let mut c = ManagerCore::new(Policy::Queue(Box::new(q)));
        let info = NodeInfo {
            local: 0,
            capacity: 1.0,
            speed: 1.0,
            memory_kb: 1 << 20,
            disk_mb: 1 << 10,
        };
        c.register(1, "a", &[info]).unwrap();
        let j1 = WorkloadJob {
            spec: JobSpec::new(1, 0.0, 100.0, 1, 1000.0, 1e9),
            actual_runtime: 100.0,
        };
        let mut r = JobRecord::new(&j1);
        r.accept(0.0, vec![0], 0.0);
        c.adopt(j1, r).unwrap();
        let mut out = Vec::new();
        c.completed(50.0, 1, PartId { job: 1, index: 0 }, 50.0, &mut out)
            .unwrap();
        let j2 = WorkloadJob {
            spec: JobSpec::new(2, 60.0, 10.0, 1, 1000.0, 1e9),
            actual_runtime: 10.0,
        };
        c.submit(60.0, j2, &mut out).unwrap();
        assert_eq!(c.record(2).unwrap().nodes, [0]);
        assert_eq!(c.record(2).unwrap().start, Some(60.0));
        assert!(given_up.lock().unwrap().is_empty());
    }

    /// Starts job 1 on resource 2 and job 2 (two resources) on 0-1, asks
    /// to be called at Batsim time 6, then kills job 2.
    struct KillSecond;

    impl Exchange for KillSecond {
        fn exchange(&mut self, request: &str) -> Result<String, String> {
            let msg: Value = serde_json::from_str(request).unwrap();
            let now = msg["now"].as_f64().unwrap();
            let mut out = Vec::new();
            for e in msg["events"].as_array().unwrap() {
                match e["type"].as_str().unwrap() {
                    "SIMULATION_BEGINS" => out.push(json!({"timestamp": now, "type": "CALL_ME_LATER", "data": {"timestamp": 6.0}})),
                    "JOB_SUBMITTED" => {
                        let id = e["data"]["job_id"].as_str().unwrap();
                        let alloc = if id == "w0!1" { "2" } else { "0-1" };
                        out.push(json!({"timestamp": now, "type": "EXECUTE_JOB",
                            "data": {"job_id": id, "alloc": alloc}}));
                    }
                    "REQUESTED_CALL" => out.push(json!({"timestamp": now, "type": "KILL_JOB",
                        "data": {"job_ids": ["w0!2"]}})),
                    _ => {}
                }
            }
            Ok(json!({"now": now, "events": out}).to_string())
        }

        fn failed(&mut self, why: &str) {
            panic!("the scheduler was given up: {why}");
        }
    }

    /// A live run's KILL_JOB (Batsim time 6 = 5 here) cancels the killed
    /// job's two parts on their nodes, takes them off the manager's view
    /// and ends the job killed at 5; job 1, whose part comes first in the
    /// part records, runs on and completes normally, whether it completes
    /// before the kill (at 4) or after (at 10).
    #[test]
    fn kill_job_in_a_live_run_cancels_the_jobs_parts() {
        use crate::admission::{ManagerCore, Output};
        use crate::protocol::{ManagerMsg, NodeInfo, PartId};
        for job1_ends in [4.0, 10.0] {
            let q = BatsimQueue::new(Box::new(KillSecond), 0, 2, "test", 1.0);
            let mut c = ManagerCore::new(Policy::Queue(Box::new(q)));
            let info = |local| NodeInfo {
                local,
                capacity: 1.0,
                speed: 1.0,
                memory_kb: 1 << 20,
                disk_mb: 1 << 10,
            };
            c.register(1, "a", &[info(0), info(1), info(2)]).unwrap();
            assert_eq!(c.policy_name(), "batsim");
            let job = |id, p| WorkloadJob {
                spec: JobSpec::new(id, 0.0, 100.0, p, 1000.0, 1e9),
                actual_runtime: 100.0,
            };
            let mut out = Vec::new();
            c.submit(0.0, job(1, 1), &mut out).unwrap();
            c.submit(0.0, job(2, 2), &mut out).unwrap();
            assert_eq!(c.record(1).unwrap().nodes, [2]);
            assert_eq!(c.record(2).unwrap().nodes, [0, 1]);
            assert_eq!(c.queue_wakeup(), Some(5.0));
            let p1 = PartId { job: 1, index: 0 };
            if job1_ends < 5.0 {
                c.completed(job1_ends, 1, p1, job1_ends, &mut out).unwrap();
            }
            out.clear();
            c.tick(5.0, &mut out);
            let cancels: Vec<(u64, PartId)> = out
                .iter()
                .filter_map(|o| match o {
                    Output::Send {
                        link,
                        msg: ManagerMsg::Cancel { part },
                    } => Some((*link, *part)),
                    _ => None,
                })
                .collect();
            let p = |index| PartId { job: 2, index };
            assert_eq!(cancels, [(1, p(0)), (1, p(1))], "job 1 ends at {job1_ends}");
            assert!(out.contains(&Output::Finished { job: 2 }));
            let r = c.record(2).unwrap();
            assert_eq!(r.finish, Some(5.0));
            assert_eq!(r.detail, "killed at 5.000 by the scheduler (KILL_JOB)");
            let (view, _) = c.snapshot(5.0);
            let held: Vec<usize> = view.iter().map(|n| n.parts.len()).collect();
            let job1_held = usize::from(job1_ends > 5.0);
            assert_eq!(held, [0, 0, job1_held], "job 1 ends at {job1_ends}");
            if job1_ends > 5.0 {
                out.clear();
                c.completed(job1_ends, 1, p1, job1_ends, &mut out).unwrap();
                assert_eq!(out, [Output::Finished { job: 1 }]);
            }
            let parts: Vec<(JobId, f64)> =
                c.part_records().iter().map(|p| (p.job, p.finish)).collect();
            assert_eq!(parts, [(1, job1_ends), (2, 5.0), (2, 5.0)]);
            assert_eq!(c.open_jobs(), 0);
        }
    }
}
