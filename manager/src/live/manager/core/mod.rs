//! What a live run decides, as a plain state machine: events in, actions
//! out, time as an argument. [`LiveCore`] wraps the admission core
//! ([`ManagerCore`]) with what is particular to a live run: its phases
//! (waiting for nodes, replaying, collecting the nodes' histograms, over),
//! the replay's pacing, the counters, the latency histograms, the journal
//! entries, the node processes' links and their loss, the clients waiting
//! for a decision, and when the run ends.
//!
//! It reads no clock, opens no socket and knows nothing of actix: every
//! [`LiveCore::handle`] takes a [`Now`] (trace time, the real seconds since
//! the manager started, the journal's clock) and pushes [`Action`]s that
//! the caller drains with [`LiveCore::poll_action`] and carries out (send a
//! frame to a link, answer a client, append to the journal, arm a timer,
//! end the run). The actor ([`super::actor`]) is that caller in a live
//! run; the unit tests below are another, and a harness running it with
//! node engines over an in-memory network in virtual time is a third.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::Duration;

use common::admission::{LinkId, ManagerCore, Output};
use common::batsim::Mailbox;
use common::job::JobId;
use common::metrics::JobRecord;
use common::protocol::{
    ClientMsg, ClientReply, ManagerMsg, NodeInfo, NodeMsg, ProcessUsage, RecentDecision,
    StatusQuery,
};
use common::share::SpareRule;
use common::time::Time;
use common::workload::WorkloadJob;
use hdrhistogram::Histogram;
use rustc_hash::FxHashMap;

use crate::live::journal::Entry;

use super::config::{new_hist, NodeHistogram, MANAGER_HISTOGRAMS, SCHEDULER_HISTOGRAM};

mod clients;
mod faults;
mod nodes;
mod rejoin;
mod resumed;
mod silent;
mod views;

use rejoin::RejoinPieces;

pub use faults::FaultKey;
pub(super) use faults::FaultReport;
pub use resumed::Takeover;

/// A client connection, as the caller names it (unique per connection).
pub(super) type ClientId = u64;

/// The time of an event, on every axis the core needs.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Now {
    /// Trace seconds on the run's clock (0 until the first node process
    /// registers, when the clock starts).
    pub(super) trace: Time,
    /// Real seconds since the manager started (histogram intervals,
    /// round trips, the run's wall time).
    pub(super) wall: f64,
    /// The journal's clock (its entries' `t`).
    pub(super) journal: f64,
}

/// What happened.
pub(super) enum Event {
    /// A node process registered on `link`.
    Connected {
        link: LinkId,
        host: String,
        pid: u32,
        nodes: Vec<NodeInfo>,
    },
    /// Frames from a node process, in the order received (one burst).
    FromNode { link: LinkId, msgs: Vec<NodeMsg> },
    /// A link ended, for `reason` (the core adds the fault the injector
    /// reported for the process, if one).
    LinkClosed { link: LinkId, reason: String },
    /// One request of a client's burst (answers that need no flush leave
    /// at once; decisions leave with [`Event::ClientBurstEnd`]).
    Client { client: ClientId, msg: ClientMsg },
    /// A status request; `manager` is the process's own resource use,
    /// which the caller reads (the core does no I/O).
    Status {
        client: ClientId,
        token: u64,
        query: StatusQuery,
        manager: ProcessUsage,
    },
    /// The client's burst is over: its decisions, dispatches and journal
    /// entries leave together, then "queued" for what is not decided.
    ClientBurstEnd { client: ClientId },
    /// A timer armed by [`Action::Arm`] fired.
    Timer(Timer),
    /// Stop the run now (Ctrl-C, or a test's shutdown): open jobs are lost
    /// with `reason`.
    Abort { reason: String },
    /// The external scheduler answered the request of the last
    /// [`Action::SchedulerRequest`] (or the transport failed), after
    /// `waited` of real time.
    SchedulerReplied {
        reply: Result<String, String>,
        waited: Duration,
    },
}

/// The core's timers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Timer {
    /// The next job of the replay is due: the caller submits the due jobs
    /// one [`Event::Timer`] each while [`LiveCore::replay_due`] says so
    /// (so it can time each decision).
    Replay,
    /// The heartbeat tick: queue wake-ups, pings, warnings to the journal.
    Tick,
    /// The nodes had their time to register.
    StartTimeout,
    /// The nodes had their time to hand over their histograms.
    Histograms,
    /// The queue policy asked to be called now (an external scheduler's
    /// CALL_ME_LATER, or events left to send).
    Queue,
    /// A resumed run's node processes had their time to come back with
    /// the parts they ran when the manager died.
    Carried,
}

/// When a timer fires.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum When {
    /// At this trace time.
    Trace(Time),
    /// After this much real time.
    After(Duration),
}

/// What the caller must do.
#[derive(Debug)]
pub(super) enum Action {
    /// Send a frame to a node process.
    Send { link: LinkId, msg: ManagerMsg },
    /// Answer a client.
    Reply {
        client: ClientId,
        reply: ClientReply,
    },
    /// A registration refused (the link is told why).
    Refused { link: LinkId, reason: String },
    /// Append these entries to the journal (one hand-over).
    Journal(Vec<Entry>),
    /// A fault report taken (`text`, for people, if it was new): append
    /// `entries` to the journal and answer the client `Noted` with `token`
    /// once they are written, not before (a manager killed in between
    /// gets the report again from the injector, and its successor knows
    /// from the journal whether it has it).
    Noted {
        client: ClientId,
        token: u64,
        entries: Vec<Entry>,
        text: Option<String>,
    },
    /// Fire [`Event::Timer`] at that time.
    Arm { timer: Timer, when: When },
    /// Send this request to the external scheduler; its reply comes back
    /// as [`Event::SchedulerReplied`] (one request is out at a time).
    SchedulerRequest(String),
    /// The replay started, `offset` trace seconds after the clock's start.
    ReplayStarted { offset: Time },
    /// The run is over: the shutdown frames are sent; hand the outcome
    /// over ([`LiveCore::outcome`]).
    Finish,
}

/// Where the run is. It only moves forward.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// Waiting for the expected nodes to register.
    Waiting,
    /// Replaying the workload (and serving clients).
    Replaying,
    /// Asked the node processes for their last histograms; `pending` have
    /// not answered.
    Collecting { pending: usize },
    /// Over.
    Over,
}

/// What the core needs to know of the run's configuration.
#[derive(Debug, Clone)]
pub(super) struct CoreConfig {
    pub(super) time_scale: f64,
    pub(super) expect_nodes: usize,
    pub(super) serve: bool,
    /// Whether the run has a journal (no entries are made otherwise).
    pub(super) journal: bool,
    pub(super) start_timeout: Duration,
    pub(super) histogram_timeout: Duration,
    pub(super) report_ms: u32,
    pub(super) heartbeat_ms: u32,
    pub(super) histogram_ms: u32,
    /// The spare rule configured (a policy may impose its own).
    pub(super) spare_rule: SpareRule,
    /// How long after the last loss of a node (or node process) a queued
    /// job wider than the nodes left still waits for one to come back
    /// before a built-in queue policy drops it (the run's link timeout: a
    /// process restarted by its launcher registers again well within it).
    pub(super) rejoin_wait: Duration,
}

impl CoreConfig {
    /// The heartbeat tick (at least 10 ms).
    pub(super) fn tick(&self) -> Duration {
        Duration::from_millis(u64::from(self.heartbeat_ms).max(10))
    }
}

/// A node process's link, as the core sees it.
pub(super) struct LinkInfo {
    pub(super) host: String,
    pub(super) pid: u32,
    pub(super) nodes: usize,
    pub(super) alive: bool,
    /// Its place in the order of registration (links are never removed):
    /// the results list node processes in it, as the journal does.
    pub(super) registered: usize,
}

/// Ids given to client-submitted jobs start above this (far above any
/// trace's).
const CLIENT_JOBS: JobId = 1 << 40;

/// How many recent decisions status answers and the live view show.
const RECENT: usize = 20;

/// The live run's state machine (see the module header).
pub(super) struct LiveCore {
    pub(super) core: ManagerCore,
    cfg: CoreConfig,
    phase: Phase,
    links: FxHashMap<LinkId, LinkInfo>,
    /// The workload's jobs not yet submitted, in submit order.
    jobs: VecDeque<WorkloadJob>,
    total_jobs: usize,
    submitted: usize,
    decided: usize,
    finished: usize,
    registered_nodes: usize,
    /// Clock time of the replay start (see `super`'s module header).
    offset: Time,
    hists: BTreeMap<String, Histogram<u64>>,
    node_hists: Vec<NodeHistogram>,
    /// Where each link's last histogram interval ended (wall s).
    hist_marks: HashMap<LinkId, f64>,
    /// The leading pieces of each link's rejoin so far
    /// ([`NodeMsg::RejoinPiece`](common::protocol::NodeMsg::RejoinPiece)).
    rejoin_pieces: FxHashMap<LinkId, RejoinPieces>,
    warnings: Vec<String>,
    /// Warnings already in the journal.
    warnings_journaled: usize,
    /// Journal entries of the current turn, not yet handed over.
    journal_buf: Vec<Entry>,
    /// The admission core's outputs of the current turn.
    out: Vec<Output>,
    actions: VecDeque<Action>,
    /// Clients waiting for the decision on a job they submitted.
    pending: FxHashMap<JobId, (ClientId, u64)>,
    /// How many decisions each client waits for (none: not listed).
    waiting: FxHashMap<ClientId, usize>,
    /// Jobs submitted in the current client burst (id, token).
    burst: Vec<(JobId, u64)>,
    next_client_job: JobId,
    recent: VecDeque<RecentDecision>,
    ping_sent: HashMap<u64, f64>,
    nonce: u64,
    /// Wall seconds of the replay start and of the end.
    replay_wall: Option<f64>,
    end_wall: Option<f64>,
    /// Reads real seconds for the policy's own time (`policy_compute_us`):
    /// the one measurement the core makes, around the policy's call and
    /// nothing else. None: not measured (tests, a virtual-time harness).
    meter: Option<Meter>,
    /// An external scheduler's requests and replies (the `batsim` policy).
    scheduler: Option<Mailbox>,
    /// When [`Timer::Queue`] is armed for.
    queue_timer: Option<Time>,
    /// The books of a run taken over from its journal (`resume`).
    resumed: Option<resumed::Resumed>,
    /// When (wall s) the histograms were last journaled.
    hists_journaled: f64,
    /// When (wall seconds) a node or node process was last lost: a queued
    /// job too wide for the nodes left waits `rejoin_wait` after it.
    last_loss_wall: Option<f64>,
    /// Single nodes that go silent ([`LiveCore::with_node_watch`]).
    watch: Option<silent::NodeWatch>,
    /// The fault injector's reports.
    faults: faults::FaultBook,
}

/// How often (real seconds) the manager journals its histograms, for a
/// manager that resumes the run after a crash: what it loses.
const HISTOGRAMS_EVERY_S: f64 = 2.0;

/// A monotonic source of real seconds, for [`LiveCore::with_meter`].
pub(super) type Meter = Box<dyn Fn() -> f64>;

impl LiveCore {
    /// A core for `jobs` (the workload, in submit order) under `core`'s
    /// policy. Arms the start timeout and the first tick.
    pub(super) fn new(core: ManagerCore, cfg: CoreConfig, jobs: Vec<WorkloadJob>) -> LiveCore {
        let hists = MANAGER_HISTOGRAMS
            .iter()
            .map(|n| (n.to_string(), new_hist()))
            .collect();
        let mut actions = VecDeque::new();
        actions.push_back(Action::Arm {
            timer: Timer::StartTimeout,
            when: When::After(cfg.start_timeout),
        });
        actions.push_back(Action::Arm {
            timer: Timer::Tick,
            when: When::After(cfg.tick()),
        });
        LiveCore {
            core,
            phase: Phase::Waiting,
            links: FxHashMap::default(),
            total_jobs: jobs.len(),
            jobs: jobs.into(),
            submitted: 0,
            decided: 0,
            finished: 0,
            registered_nodes: 0,
            offset: 0.0,
            hists,
            node_hists: Vec::new(),
            hist_marks: HashMap::new(),
            rejoin_pieces: FxHashMap::default(),
            warnings: Vec::new(),
            warnings_journaled: 0,
            journal_buf: Vec::new(),
            out: Vec::new(),
            actions,
            pending: FxHashMap::default(),
            waiting: FxHashMap::default(),
            burst: Vec::new(),
            next_client_job: CLIENT_JOBS,
            recent: VecDeque::new(),
            ping_sent: HashMap::new(),
            nonce: 0,
            replay_wall: None,
            end_wall: None,
            meter: None,
            scheduler: None,
            queue_timer: None,
            resumed: None,
            hists_journaled: 0.0,
            last_loss_wall: None,
            watch: None,
            faults: faults::FaultBook::default(),
            cfg,
        }
    }

    /// Times the policy's decisions with `meter`.
    pub(super) fn with_meter(mut self, meter: Meter) -> LiveCore {
        self.meter = Some(meter);
        self
    }

    /// Carries the requests of the `batsim` policy, which shares `mailbox`.
    pub(super) fn with_scheduler(mut self, mailbox: Mailbox) -> LiveCore {
        self.scheduler = Some(mailbox);
        self.hists
            .insert(SCHEDULER_HISTOGRAM.to_string(), new_hist());
        self
    }

    /// After each event: the external scheduler's request to send, if the
    /// policy made one, and a timer for when the queue policy wants a pass.
    fn scheduler_io(&mut self) {
        if let Some(m) = &self.scheduler {
            if let Some(request) = m.take_request() {
                self.actions.push_back(Action::SchedulerRequest(request));
            }
        }
        // Any queue policy's wake-up (an external scheduler's call, a
        // QoPS reservation between events), not only Batsim's.
        if self.phase != Phase::Replaying {
            return;
        }
        if let Some(t) = self.core.queue_wakeup() {
            if self.queue_timer.is_none_or(|armed| t < armed) {
                self.queue_timer = Some(t);
                self.actions.push_back(Action::Arm {
                    timer: Timer::Queue,
                    when: When::Trace(t),
                });
            }
        }
    }

    /// A scheduling pass of the queue policy at `now`.
    fn queue_pass(&mut self, now: Now) {
        if self.phase == Phase::Replaying {
            self.core.tick(now.trace, &mut self.out);
            self.flush(now);
            self.check_end(now);
        }
    }

    /// Hands `job` to the admission core, timing the policy.
    fn submit(&mut self, now: Time, job: WorkloadJob) -> Result<(), common::admission::CoreError> {
        let t0 = self.meter.as_ref().map(|m| m());
        let r = self.core.submit(now, job, &mut self.out);
        if let (Some(t0), Some(m)) = (t0, &self.meter) {
            let micros = (m() - t0) * 1e6;
            self.measured("policy_compute_us", micros);
        }
        r
    }

    /// The next action to carry out, in order.
    pub(super) fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// A vector for the next journal hand-over (the caller recycles the
    /// writer's spent ones, so entries are freed where allocated).
    pub(super) fn journal_buffer(&mut self, v: Vec<Entry>) {
        if self.journal_buf.is_empty() && self.journal_buf.capacity() == 0 {
            self.journal_buf = v;
        }
    }

    /// Where the run is.
    pub(super) fn phase(&self) -> Phase {
        self.phase
    }

    /// The run is ending or over: no more submissions or registrations.
    pub(super) fn ending(&self) -> bool {
        matches!(self.phase(), Phase::Collecting { .. } | Phase::Over)
    }

    /// (total, submitted, decided, finished) jobs.
    pub(super) fn counts(&self) -> (usize, usize, usize, usize) {
        (self.total_jobs, self.submitted, self.decided, self.finished)
    }

    /// Emulated nodes registered (and expected).
    pub(super) fn nodes(&self) -> (usize, usize) {
        (self.registered_nodes, self.cfg.expect_nodes)
    }

    /// A link's host label ("" if unknown).
    pub(super) fn host(&self, link: LinkId) -> &str {
        self.links.get(&link).map_or("", |l| l.host.as_str())
    }

    /// Trace time the next job of the replay is due at (clock axis).
    pub(super) fn next_due(&self) -> Option<Time> {
        if self.phase != Phase::Replaying {
            return None;
        }
        self.jobs
            .front()
            .map(|j| self.offset + j.spec.details.submit_time)
    }

    /// Whether the next job of the replay is due at `now`.
    pub(super) fn replay_due(&self, now: Time) -> bool {
        self.next_due().is_some_and(|t| t <= now)
    }

    /// Adds a sample to one of the manager's histograms (`name` from
    /// [`MANAGER_HISTOGRAMS`]); microseconds.
    pub(super) fn measured(&mut self, name: &str, micros: f64) {
        if let Some(h) = self.hists.get_mut(name) {
            let _ = h.record(micros.max(0.0).round() as u64);
        }
    }

    /// Handles one event.
    pub(super) fn handle(&mut self, now: Now, event: Event) {
        self.handle_event(now, event);
        self.scheduler_io();
    }

    fn handle_event(&mut self, now: Now, event: Event) {
        match event {
            Event::Connected {
                link,
                host,
                pid,
                nodes,
            } => self.connected(now, link, host, pid, &nodes),
            Event::FromNode { link, msgs } => {
                let host = self.host(link).to_string();
                for msg in msgs {
                    self.node_msg(now, link, &host, msg);
                }
                self.flush(now);
                self.check_end(now);
            }
            Event::LinkClosed { link, reason } => self.link_closed(now, link, &reason),
            Event::Client { client, msg } => self.client(now, client, msg),
            Event::Status {
                client,
                token,
                query,
                manager,
            } => {
                let reply = self.status(now.trace, token, query, manager);
                self.actions.push_back(Action::Reply { client, reply });
            }
            Event::ClientBurstEnd { client } => {
                self.flush(now);
                // Queue policies answer "queued" for what they did not
                // decide yet.
                let burst = std::mem::take(&mut self.burst);
                if self.core.queues() {
                    for &(job, token) in &burst {
                        if self.pending.contains_key(&job) {
                            self.actions.push_back(Action::Reply {
                                client,
                                reply: ClientReply::Queued { token, job },
                            });
                        }
                    }
                }
                self.burst = burst;
                self.burst.clear();
                self.check_end(now);
            }
            Event::Timer(Timer::Replay) => self.submit_due(now),
            Event::Timer(Timer::Tick) => self.tick(now),
            Event::Timer(Timer::Queue) => {
                self.queue_timer = None;
                self.queue_pass(now);
            }
            Event::SchedulerReplied { reply, waited } => {
                self.measured(SCHEDULER_HISTOGRAM, waited.as_secs_f64() * 1e6);
                if let Some(m) = &self.scheduler {
                    m.replied(reply);
                }
                self.queue_pass(now);
            }
            Event::Timer(Timer::StartTimeout) => self.start_timeout(now),
            Event::Timer(Timer::Carried) => self.sweep_carried(now),
            Event::Timer(Timer::Histograms) => {
                if let Phase::Collecting { pending } = self.phase {
                    if pending > 0 {
                        self.warnings.push(format!(
                            "{pending} node process(es) did not hand over histograms within {:?}",
                            self.cfg.histogram_timeout
                        ));
                    }
                    self.finish();
                }
            }
            Event::Abort { reason } => {
                self.warnings.push(format!("run stopped early: {reason}"));
                let mut links: Vec<LinkId> = self.links.keys().copied().collect();
                links.sort_unstable();
                for l in links {
                    self.core.link_lost(now.trace, l, &reason, &mut self.out);
                }
                self.abort_carried(now, &reason);
                self.flush(now);
                self.jobs.clear();
                self.begin_end(now);
            }
        }
    }

    pub(super) fn maybe_start(&mut self, now: Now) {
        if self.phase != Phase::Waiting || self.registered_nodes < self.cfg.expect_nodes {
            return;
        }
        if self.rejoins_pending() {
            return;
        }
        self.phase = Phase::Replaying;
        self.replay_wall = Some(now.wall);
        if self.resumed.is_some() {
            // The replay goes on where it stopped: the clock and the
            // offset are the run's own.
            self.actions.push_back(Action::ReplayStarted {
                offset: self.offset,
            });
            self.resume_replay(now);
            self.hand_journal();
            self.schedule_next(now);
            return;
        }
        self.offset = now.trace;
        self.actions.push_back(Action::ReplayStarted {
            offset: self.offset,
        });
        if self.cfg.journal {
            self.journal_buf.push(Entry::Replay {
                t: now.journal,
                offset: self.offset,
            });
            self.hand_journal();
        }
        self.schedule_next(now);
    }

    fn start_timeout(&mut self, now: Now) {
        if self.phase != Phase::Waiting {
            return;
        }
        let timeout = self.cfg.start_timeout;
        if self.registered_nodes == 0 {
            self.warnings
                .push(format!("no node registered within {timeout:?}"));
            // A resumed run's carried jobs end lost, with the reason, not
            // open in the results as if they ran on.
            self.abort_carried(
                now,
                &format!("no node process registered within {timeout:?} of the manager's restart"),
            );
            self.begin_end(now);
        } else {
            self.warnings.push(format!(
                "only {} of {} emulated nodes registered within {timeout:?}; starting with them",
                self.registered_nodes, self.cfg.expect_nodes
            ));
            self.cfg.expect_nodes = self.registered_nodes;
            self.waive_rejoins();
            self.maybe_start(now);
        }
    }

    fn schedule_next(&mut self, now: Now) {
        match self.next_due() {
            Some(at) => self.actions.push_back(Action::Arm {
                timer: Timer::Replay,
                when: When::Trace(at),
            }),
            None => self.check_end(now),
        }
    }

    /// Submits the next job of the replay if it is due; once none is due,
    /// arms the timer for the next (or ends the run).
    fn submit_due(&mut self, now: Now) {
        if self.replay_due(now.trace) {
            let mut j = self.jobs.pop_front().expect("due");
            j.spec.details.submit_time += self.offset;
            let id = j.spec.id;
            let mark = self.out.len();
            match self.submit(now.trace, j) {
                Err(e) => {
                    self.warnings.push(format!("job {id}: {e}"));
                    self.finished += 1;
                }
                Ok(()) => self.journal_submitted(id, mark, now, None),
            }
            self.submitted += 1;
            self.flush(now);
        }
        if !self.replay_due(now.trace) {
            self.schedule_next(now);
        }
    }

    fn tick(&mut self, now: Now) {
        self.actions.push_back(Action::Arm {
            timer: Timer::Tick,
            when: When::After(self.cfg.tick()),
        });
        self.watch_tick(now);
        if self.cfg.journal && self.warnings_journaled < self.warnings.len() {
            for text in &self.warnings[self.warnings_journaled..] {
                self.journal_buf.push(Entry::Warning {
                    t: now.journal,
                    text: text.clone(),
                });
            }
            self.warnings_journaled = self.warnings.len();
            self.hand_journal();
        }
        if self.cfg.journal && now.wall - self.hists_journaled >= HISTOGRAMS_EVERY_S {
            self.hists_journaled = now.wall;
            let manager = self
                .hists
                .iter()
                .map(|(k, h)| (k.clone(), crate::results::histograms::encode(h)))
                .collect();
            self.journal_buf.push(Entry::Histograms {
                t: now.journal,
                manager,
            });
            self.hand_journal();
        }
        if self.phase == Phase::Replaying {
            self.core.tick(now.trace, &mut self.out);
            self.flush(now);
            self.check_end(now);
        }
        // Application-level round trips, one ping per link per tick.
        let alive = self.alive_links();
        for link in alive {
            self.nonce += 1;
            let nonce = (link << 32) | (self.nonce & 0xffff_ffff);
            self.ping_sent.insert(nonce, now.wall);
            self.actions.push_back(Action::Send {
                link,
                msg: ManagerMsg::Ping { nonce },
            });
        }
    }

    /// The links alive now, in id order (each tick and the end send to
    /// every one in the same order).
    fn alive_links(&self) -> Vec<LinkId> {
        let mut alive: Vec<LinkId> = self
            .links
            .iter()
            .filter(|(_, l)| l.alive)
            .map(|(&id, _)| id)
            .collect();
        alive.sort_unstable();
        alive
    }

    fn check_end(&mut self, now: Now) {
        if self.phase != Phase::Replaying || self.cfg.serve || !self.jobs.is_empty() {
            return;
        }
        // Everything replayed, nothing running, jobs still queued: every
        // node is free, so those waiting need more nodes than are left
        // (the others lost). A built-in queue policy's last word drops
        // them, naming why, and starts what waited behind them, as in the
        // simulator; without it the run would wait for good. (An external
        // scheduler is told the run is over only in `begin_end`.)
        if self.scheduler.is_none()
            && self.core.open_jobs() > 0
            && self.core.open_jobs() == self.core.queued()
        {
            // Not while a node lost lately may still come back: the tick
            // asks again.
            if self
                .last_loss_wall
                .is_some_and(|lost| now.wall < lost + self.cfg.rejoin_wait.as_secs_f64())
            {
                return;
            }
            self.core.end_queue(now.trace, &mut self.out);
            self.flush(now);
        }
        if self.core.open_jobs() > 0 {
            return;
        }
        self.begin_end(now);
    }

    fn begin_end(&mut self, now: Now) {
        if self.ending() {
            return;
        }
        self.end_wall = Some(now.wall);
        if self.scheduler.is_some() {
            // The external scheduler is told the run is over
            // (SIMULATION_ENDS).
            self.core.end_queue(now.trace, &mut self.out);
            self.flush(now);
        }
        let alive = self.alive_links();
        for &link in &alive {
            self.actions.push_back(Action::Send {
                link,
                msg: ManagerMsg::SendHistograms,
            });
        }
        self.phase = Phase::Collecting {
            pending: alive.len(),
        };
        self.actions.push_back(Action::Arm {
            timer: Timer::Histograms,
            when: When::After(self.cfg.histogram_timeout),
        });
        if alive.is_empty() {
            self.finish();
        }
    }

    /// One node process fewer to wait for at the end.
    fn collected(&mut self) {
        if let Phase::Collecting { pending } = self.phase {
            if pending > 0 {
                self.phase = Phase::Collecting {
                    pending: pending - 1,
                };
                if pending == 1 {
                    self.finish();
                }
            }
        }
    }

    fn finish(&mut self) {
        if self.phase == Phase::Over {
            return;
        }
        self.phase = Phase::Over;
        let alive = self.alive_links();
        for link in alive {
            self.actions.push_back(Action::Send {
                link,
                msg: ManagerMsg::Shutdown {
                    reason: "run complete".into(),
                },
            });
        }
        self.actions.push_back(Action::Finish);
    }

    /// Journals a submission, unless the policy decided it at once: its
    /// `Decided` entry, in `self.out` since `mark`, follows in the same
    /// hand-over and carries the same record. `spec`: a client's job's
    /// specification (see [`Entry::Submitted`]).
    fn journal_submitted(
        &mut self,
        job: JobId,
        mark: usize,
        now: Now,
        spec: Option<Box<common::job::JobSpec>>,
    ) {
        let decided = self.out[mark..]
            .iter()
            .any(|o| matches!(o, Output::Decided { job: j, .. } if *j == job));
        if !decided {
            self.journal(job, now, |t, record| Entry::Submitted { t, record, spec });
        }
    }

    fn journal(&mut self, job: JobId, now: Now, entry: impl FnOnce(f64, JobRecord) -> Entry) {
        if !self.cfg.journal {
            return;
        }
        if let Some(r) = self.core.record(job) {
            let e = entry(now.journal, r.clone());
            self.journal_buf.push(e);
        }
    }

    /// Journals the end of `job`. One that completed after its `decided`
    /// entry is written as its id and finish (the rest of its final record
    /// is the decided one: only the finish changes in between); others,
    /// and any whose decision is not journaled yet (`whole`), with the
    /// whole record.
    fn journal_finished(&mut self, job: JobId, whole: bool, now: Now) {
        if !self.cfg.journal {
            return;
        }
        let Some(r) = self.core.record(job) else {
            return;
        };
        let t = now.journal;
        let e = match r.finish {
            Some(finish) if !whole && r.accepted && !r.lost => Entry::Finished {
                t,
                id: Some(job),
                finish: Some(finish),
                record: None,
            },
            _ => Entry::Finished {
                t,
                id: None,
                finish: None,
                record: Some(Box::new(r.clone())),
            },
        };
        self.journal_buf.push(e);
    }

    fn hand_journal(&mut self) {
        if !self.journal_buf.is_empty() {
            let entries = std::mem::take(&mut self.journal_buf);
            self.actions.push_back(Action::Journal(entries));
        }
    }

    /// Turns the admission core's outputs of this turn into actions:
    /// client answers first (they should not queue behind the dispatches),
    /// then the frames to nodes, then the turn's journal entries.
    fn flush(&mut self, now: Now) {
        let mut outs = std::mem::take(&mut self.out);
        outs.sort_by_key(|o| matches!(o, Output::Send { .. }));
        for o in outs.drain(..) {
            match o {
                Output::Send { link, msg } => {
                    if self.links.get(&link).is_some_and(|l| l.alive) {
                        self.actions.push_back(Action::Send { link, msg });
                    }
                }
                Output::Decided { job, decision } => {
                    self.journal(job, now, |t, record| Entry::Decided { t, record });
                    self.decided += 1;
                    let at = now.trace;
                    if let Some((client, token)) = self.answered(job) {
                        self.actions.push_back(Action::Reply {
                            client,
                            reply: ClientReply::Decided {
                                token,
                                job,
                                at,
                                decision: decision.clone(),
                            },
                        });
                    }
                    if self.recent.len() == RECENT {
                        self.recent.pop_front();
                    }
                    self.recent.push_back(RecentDecision { job, at, decision });
                }
                Output::Finished { job } => {
                    // A job rejected at its decision is over at once: its
                    // `finished` line carries the decision too, so the
                    // `decided` line just before it in this hand-over is
                    // dropped (one line per rejection, not two).
                    let whole = matches!(self.journal_buf.last(),
                        Some(Entry::Decided { record, .. }) if record.id == job);
                    if whole {
                        self.journal_buf.pop();
                    }
                    self.journal_finished(job, whole, now);
                    self.finished += 1;
                }
            }
        }
        // Keep the buffer's capacity for the next turn.
        self.out = outs;
        self.hand_journal();
    }
}

#[cfg(test)]
mod tests;
