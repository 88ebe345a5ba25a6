//! The link's logic as a plain state machine, in the style of
//! quinn-proto's `Connection`: events in (a manager frame, a node event, a
//! link lost, a connection made or failed, a timer), actions out
//! ([`Action`]: frames to send, parts to place or withdraw, histograms to
//! collect, a connection to open, the end), time as an argument. No I/O,
//! no clock, no tasks: [`super::serve`] does those and unit tests drive it
//! with event sequences.
//!
//! What it decides:
//! - the mapping between the manager's part ids and the node-local ones,
//!   and between the manager's trace clock and the nodes' (the first
//!   welcome sets the nodes' clock; a later manager may run another, so
//!   times are shifted by the difference its welcome shows);
//! - when heartbeats, gathered progress reports and histograms are due;
//! - what happens when the manager goes away: the parts keep running for
//!   the grace period, connections are retried with capped exponential
//!   backoff (seeded jitter), and on a new welcome a [`Rejoin`] reports the
//!   parts still running (with progress) and those that finished meanwhile
//!   (with their CPU time). The manager's [`ManagerMsg::RejoinAnswer`]
//!   says which it keeps; the others are dropped, never counted twice.
//!   Past the grace period without a manager the node ends with an error.
//! - a manager that gave this process up (`Reject` after the welcome: its
//!   link was declared lost, its parts recorded lost) gets nothing more of
//!   those parts: they are dropped at once and the process rejoins as new.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use common::protocol::{
    Dispatch, FinishedPart, HeldPart, ManagerMsg, NodeInfo, NodeMsg, NodeProgress, PartId,
    PartProgress, Rejoin, Welcome,
};
use common::time::Time;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::core::NodeEvent;
use crate::exception::{retain_reports, ExceptionRule};
use crate::spec::PartSpec;

pub use super::error::LinkError;
use super::silent::SilentNodes;

/// What the I/O side must do.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Send this to the manager (in order).
    Send(NodeMsg),
    /// Place this part on node `node` (`PlaceReported`): the node answers
    /// through [`LinkMachine::node_event`].
    Place {
        /// Local node index.
        node: u32,
        /// The part, with its node-local id and times on the nodes' clock.
        spec: PartSpec,
    },
    /// Withdraw a cancelled part and tell [`LinkMachine::withdrawn`] what
    /// it had burned.
    Withdraw {
        /// Local node index.
        node: u32,
        /// Node-local part id.
        local: u64,
    },
    /// Withdraw a part that no manager holds any more; nothing is reported.
    Drop {
        /// Local node index.
        node: u32,
        /// Node-local part id.
        local: u64,
    },
    /// Collect the nodes' histograms and send them
    /// ([`NodeMsg::Histograms`] with this `last`).
    Histograms {
        /// Whether this is the final hand-over.
        last: bool,
    },
    /// Close the current connection, if any (the link is lost).
    Disconnect,
    /// Open a connection, register ([`LinkMachine::register`]) and report
    /// [`LinkMachine::connected`] or [`LinkMachine::connect_failed`].
    Connect,
    /// The manager gave node `node` (local index) up ([`ManagerMsg::NodeLost`]):
    /// its parts are off the books (each dropped); tell the node faults
    /// ([`crate::nodefault::NodeFaults::given_up`]).
    NodeGivenUp {
        /// Local node index.
        node: u32,
    },
    /// A line for the process's log.
    Log(String),
    /// The link is over: `Ok` on the manager's shutdown.
    Exit(Result<(), LinkError>),
}

/// Capped exponential backoff with seeded jitter: the `k`-th retry waits
/// `min(cap, first x 2^k)` times a factor drawn uniformly from [0.5, 1]
/// (so processes that lost one manager together do not all knock at once).
#[derive(Debug, Clone)]
pub struct Backoff {
    first: Duration,
    cap: Duration,
    rng: ChaCha8Rng,
}

impl Backoff {
    /// Backoff from `first` up to `cap`, jitter drawn from `seed`.
    pub fn new(first: Duration, cap: Duration, seed: u64) -> Backoff {
        Backoff {
            first,
            cap,
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    /// The wait before retry number `attempt` (0-based).
    pub fn delay(&mut self, attempt: u32) -> Duration {
        let base = self
            .first
            .saturating_mul(1u32 << attempt.min(20))
            .min(self.cap);
        base.mul_f64(self.rng.random_range(0.5..=1.0))
    }
}

/// The link's settings that do not come from the manager.
#[derive(Debug, Clone)]
pub struct MachineConfig {
    /// The manager's address, for messages.
    pub manager: String,
    /// This process's label (registered under it every time).
    pub label: String,
    /// The process id, registered.
    pub pid: u32,
    /// The nodes, in local order.
    pub nodes: Vec<NodeInfo>,
    /// How long parts keep running without a manager.
    pub grace: Duration,
    /// Reconnection backoff.
    pub backoff: Backoff,
    /// Reports by exception: how far (real time of a node's whole
    /// processor) a part may drift from the manager's extrapolation before
    /// its progress is sent ([`crate::exception`]).
    pub report_tolerance: Duration,
    /// The nodes' speed (the manager extrapolates work at share x speed).
    pub speed: f64,
}

/// A part on one of this process's nodes, as the manager knows it.
#[derive(Debug, Clone)]
struct Held {
    part: PartId,
    node: u32,
    /// The manager's dispatch time, echoed in `Started` (manager clock).
    dispatched_at: Time,
    /// When the node placed it (nodes' clock).
    started_at: Option<Time>,
    /// Its latest progress.
    work_done: f64,
    share: f64,
    /// Reported in a [`Rejoin`] the manager has not answered yet: nothing
    /// of it is sent until the answer says the manager keeps it.
    pending: bool,
}

#[derive(Debug, Clone)]
enum State {
    /// Welcomed: frames flow.
    Up,
    /// No manager since `since`; a connection attempt is in flight
    /// (`connecting`) or the next is due at `next_try`.
    Down {
        since: Instant,
        why: String,
        attempts: u32,
        last: String,
        next_try: Instant,
        connecting: bool,
    },
    /// Exit was returned.
    Over,
}

/// The periods the welcome set.
#[derive(Debug, Clone, Copy)]
struct Periods {
    report: Duration,
    heartbeat: Duration,
    histogram: Duration,
}

/// The link's state machine (see the module header).
#[derive(Debug)]
pub struct LinkMachine {
    cfg: MachineConfig,
    state: State,
    /// Node-local part id -> the part.
    parts: FxHashMap<u64, Held>,
    /// The manager's part id -> node-local id (a cancel's lookup).
    by_wire: FxHashMap<PartId, u64>,
    next_local: u64,
    /// Finished while no manager held them (reported in the next rejoin).
    /// All finished-part lists are on the nodes' clock.
    finished: Vec<FinishedPart>,
    /// Reported in the rejoin awaiting its answer.
    reported: Vec<FinishedPart>,
    /// Finished while their rejoin awaited its answer.
    finished_pending: Vec<FinishedPart>,
    /// The answer's leading pieces ([`ManagerMsg::RejoinKept`]) so far.
    kept: Vec<PartId>,
    /// Completions sent on the current link within the last one or two
    /// grace periods (`sent_before` the older period): a link does not
    /// say which frames its peer read, and a manager that died reads none
    /// of those sent between its death and the link's loss (up to the
    /// idle timeout). A lost link reports them again in the rejoin; a
    /// manager that resumed the run books the ones it carries and does
    /// not know over, and drops the others (nothing counted twice).
    sent: Vec<FinishedPart>,
    sent_before: Vec<FinishedPart>,
    /// When `sent` becomes `sent_before`.
    rotate_at: Instant,
    /// Each node's latest progress of this report period.
    gathered: FxHashMap<u32, NodeProgress>,
    /// What the current manager was last told of each part (reports by
    /// exception); new at each welcome, since a new manager knows nothing.
    exceptions: Option<ExceptionRule>,
    /// Manager trace time minus nodes' trace time.
    shift: Time,
    time_scale: Option<f64>,
    /// The cluster-wide ids of the current (or last) welcome.
    ids: Vec<u32>,
    periods: Periods,
    next_heartbeat: Instant,
    next_report: Instant,
    next_histogram: Instant,
    seq: u64,
    /// Nodes that send nothing now (a crash or hang of one node:
    /// [`crate::nodefault`]), listed before each heartbeat and reported
    /// in a [`Rejoin`] as what they are.
    silent: SilentNodes,
    out: VecDeque<Action>,
}

impl LinkMachine {
    /// A machine for a process about to register for the first time.
    pub fn new(cfg: MachineConfig, now: Instant) -> LinkMachine {
        let never = Duration::from_secs(3600);
        LinkMachine {
            cfg,
            state: State::Down {
                since: now,
                why: "not connected yet".into(),
                attempts: 0,
                last: String::new(),
                next_try: now,
                connecting: true,
            },
            parts: FxHashMap::default(),
            by_wire: FxHashMap::default(),
            next_local: 0,
            finished: Vec::new(),
            reported: Vec::new(),
            finished_pending: Vec::new(),
            kept: Vec::new(),
            sent: Vec::new(),
            sent_before: Vec::new(),
            rotate_at: now,
            gathered: FxHashMap::default(),
            exceptions: None,
            shift: 0.0,
            time_scale: None,
            ids: Vec::new(),
            periods: Periods {
                report: never,
                heartbeat: never,
                histogram: never,
            },
            next_heartbeat: now + never,
            next_report: now + never,
            next_histogram: now + never,
            seq: 0,
            silent: SilentNodes::default(),
            out: VecDeque::new(),
        }
    }

    /// The registration to send after the hello (the same every time).
    pub fn register(&self) -> NodeMsg {
        NodeMsg::Register {
            host: self.cfg.label.clone(),
            nodes: self.cfg.nodes.clone(),
            pid: self.cfg.pid,
        }
    }

    /// The next action, if any.
    pub fn poll_action(&mut self) -> Option<Action> {
        self.out.pop_front()
    }

    /// Whether actions wait.
    pub fn has_actions(&self) -> bool {
        !self.out.is_empty()
    }

    /// The next action if it is a [`Action::Send`] (the I/O side's fast
    /// path for node events); any other stays first in the queue.
    pub fn poll_send(&mut self) -> Option<NodeMsg> {
        match self.out.front() {
            Some(Action::Send(_)) => match self.out.pop_front() {
                Some(Action::Send(m)) => Some(m),
                _ => None,
            },
            _ => None,
        }
    }

    /// When [`Self::handle_timeout`] is next due.
    pub fn poll_timeout(&self) -> Option<Instant> {
        match &self.state {
            State::Up => Some(
                self.next_heartbeat
                    .min(self.next_report)
                    .min(self.next_histogram),
            ),
            State::Down {
                since,
                next_try,
                connecting,
                ..
            } => {
                let end = *since + self.cfg.grace;
                Some(if *connecting { end } else { end.min(*next_try) })
            }
            State::Over => None,
        }
    }

    /// Whether the link is up (welcomed).
    pub fn is_up(&self) -> bool {
        matches!(self.state, State::Up)
    }

    /// Parts on the nodes now.
    pub fn running(&self) -> usize {
        self.parts.len()
    }

    /// Timers due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        match &mut self.state {
            State::Up => {
                if now >= self.next_heartbeat {
                    self.seq += 1;
                    if !self.silent.is_empty() {
                        // The heartbeat vouches for every node but these.
                        let nodes = self.silent.wire(&self.ids);
                        self.out.push_back(Action::Send(NodeMsg::Silent { nodes }));
                    }
                    self.out
                        .push_back(Action::Send(NodeMsg::Heartbeat { seq: self.seq }));
                    self.next_heartbeat = now + self.periods.heartbeat;
                }
                if now >= self.next_report {
                    self.flush();
                    self.next_report = now + self.periods.report;
                }
                if now >= self.next_histogram {
                    self.out.push_back(Action::Histograms { last: false });
                    self.next_histogram = now + self.periods.histogram;
                }
                if now >= self.rotate_at {
                    self.sent_before = std::mem::take(&mut self.sent);
                    self.rotate_at = now + self.cfg.grace;
                }
            }
            State::Down {
                since,
                why,
                attempts,
                last,
                next_try,
                connecting,
            } => {
                if now >= *since + self.cfg.grace {
                    let e = LinkError::GraceOver {
                        manager: self.cfg.manager.clone(),
                        grace: self.cfg.grace,
                        why: why.clone(),
                        attempts: *attempts,
                        last: if last.is_empty() {
                            "none made".into()
                        } else {
                            last.clone()
                        },
                        running: self.parts.len(),
                    };
                    self.state = State::Over;
                    self.out.push_back(Action::Exit(Err(e)));
                } else if !*connecting && now >= *next_try {
                    *connecting = true;
                    *attempts += 1;
                    self.out.push_back(Action::Connect);
                }
            }
            State::Over => {}
        }
    }

    /// The link is gone (closed, timed out, reset) at `now`: the parts
    /// keep running and reconnection starts.
    pub fn link_lost(&mut self, now: Instant, why: String) {
        if !matches!(self.state, State::Up) {
            return;
        }
        let delay = self.cfg.backoff.delay(0);
        self.out.push_back(Action::Log(format!(
            "lost the manager at {} ({why}); {} part(s) keep running for up to {:?} \
             (the grace period) while reconnecting",
            self.cfg.manager,
            self.parts.len(),
            self.cfg.grace
        )));
        self.out.push_back(Action::Disconnect);
        self.go_down(now, why, delay);
    }

    /// The manager closed the link with its refusal code (`CLOSE_REFUSED`:
    /// the identity was revoked): the process ends, its parts with it.
    pub fn refused(&mut self, reason: String) {
        if matches!(self.state, State::Over) {
            return;
        }
        self.state = State::Over;
        self.out.push_back(Action::Exit(Err(LinkError::Refused {
            manager: self.cfg.manager.clone(),
            reason,
        })));
    }

    fn go_down(&mut self, now: Instant, why: String, delay: Duration) {
        // What was gathered for the lost link is stale by the next one.
        self.gathered.clear();
        // Parts of an unanswered rejoin are reported again next time.
        for h in self.parts.values_mut() {
            h.pending = false;
        }
        // Nor was what the rejoin reported, or what finished since.
        let mut again = std::mem::take(&mut self.sent_before);
        again.append(&mut self.sent);
        again.append(&mut self.reported);
        again.append(&mut self.finished_pending);
        again.append(&mut self.finished);
        self.finished = again;
        self.state = State::Down {
            since: now,
            why,
            attempts: 0,
            last: String::new(),
            next_try: now + delay,
            connecting: false,
        };
    }

    /// A connection attempt failed (no answer, refused, rejected at
    /// registration): the next one waits longer.
    pub fn connect_failed(&mut self, now: Instant, why: String) {
        if let State::Down {
            attempts,
            last,
            next_try,
            connecting,
            ..
        } = &mut self.state
        {
            let delay = self.cfg.backoff.delay(*attempts);
            *last = why;
            *connecting = false;
            *next_try = now + delay;
        }
    }

    /// Welcomed at `now`; `node_now` is the nodes' trace clock now (on the
    /// first welcome, the clock just set from it).
    pub fn connected(&mut self, now: Instant, w: &Welcome, node_now: Time) {
        let State::Down { since, why, .. } = &self.state else {
            self.state = State::Over;
            self.out
                .push_back(Action::Exit(Err(LinkError::SecondWelcome(
                    self.cfg.manager.clone(),
                ))));
            return;
        };
        let (since, why) = (*since, why.clone());
        if let Some(ours) = self.time_scale {
            if ours != w.time_scale {
                self.state = State::Over;
                self.out.push_back(Action::Exit(Err(LinkError::TimeScale {
                    manager: self.cfg.manager.clone(),
                    theirs: w.time_scale,
                    ours,
                })));
                return;
            }
        }
        let first = self.time_scale.is_none();
        self.time_scale = Some(w.time_scale);
        self.exceptions = Some(ExceptionRule::new(
            self.cfg.report_tolerance,
            w.time_scale,
            self.cfg.speed,
            Duration::from_millis(u64::from(w.report_ms).max(1)),
        ));
        self.shift = w.trace_now - node_now;
        self.periods = Periods {
            report: Duration::from_millis(u64::from(w.report_ms).max(1)),
            heartbeat: Duration::from_millis(u64::from(w.heartbeat_ms).max(10)),
            histogram: Duration::from_millis(u64::from(w.histogram_ms).max(100)),
        };
        self.next_heartbeat = now + self.periods.heartbeat;
        self.next_report = now + self.periods.report;
        self.next_histogram = now + self.periods.histogram;
        let was = std::mem::replace(&mut self.ids, w.node_ids.clone());
        self.state = State::Up;
        if first {
            return;
        }
        // Everything held and finished meanwhile, on the new manager's
        // clock; nothing more of it goes out until the answer.
        let shift = self.shift;
        let mut running: Vec<HeldPart> = self
            .parts
            .values_mut()
            .map(|h| {
                h.pending = true;
                HeldPart {
                    part: h.part,
                    node: h.node,
                    work_done: h.work_done,
                    share: h.share,
                    started_at: h.started_at.map_or(f64::NAN, |t| t + shift),
                }
            })
            .collect();
        running.sort_by_key(|h| h.part);
        self.reported = std::mem::take(&mut self.finished);
        let finished: Vec<FinishedPart> = self
            .reported
            .iter()
            .map(|f| FinishedPart {
                at: f.at + shift,
                ..*f
            })
            .collect();
        // Its silent nodes as what they are: a crashed one's parts are
        // gone (not in `running`), a held one's make no progress.
        let down = self.silent.down(now);
        self.out.push_back(Action::Log(format!(
            "back with the manager at {} after {:.1} s: reporting {} running and {} finished part(s), {} node(s) down",
            self.cfg.manager,
            now.duration_since(since).as_secs_f64(),
            running.len(),
            finished.len(),
            down.len()
        )));
        // In pieces when it holds more parts than one frame carries.
        self.kept.clear();
        let rejoin = Rejoin {
            was,
            away_s: now.duration_since(since).as_secs_f64(),
            why,
            running,
            finished,
            down,
        };
        for msg in rejoin.into_frames() {
            self.out.push_back(Action::Send(msg));
        }
    }

    /// A frame from the manager.
    pub fn frame(&mut self, now: Instant, msg: ManagerMsg) {
        if !matches!(self.state, State::Up) {
            return;
        }
        match msg {
            ManagerMsg::Dispatch(d) => self.dispatch(d),
            ManagerMsg::Dispatches(ds) => ds.into_iter().for_each(|d| self.dispatch(d)),
            ManagerMsg::Cancel { part } => {
                // Not held: it completed (its completion is on its way) or
                // was refused; nothing burns.
                if let Some(&local) = self.by_wire.get(&part) {
                    let node = self.parts[&local].node;
                    self.out.push_back(Action::Withdraw { node, local });
                }
            }
            ManagerMsg::Ping { nonce } => self.out.push_back(Action::Send(NodeMsg::Pong { nonce })),
            ManagerMsg::SendHistograms => self.out.push_back(Action::Histograms { last: true }),
            ManagerMsg::Shutdown { reason } => {
                self.out
                    .push_back(Action::Log(format!("shutting down: {reason}")));
                self.out.push_back(Action::Send(NodeMsg::Goodbye {
                    reason: common::protocol::GOODBYE_SHUTDOWN.into(),
                }));
                self.state = State::Over;
                self.out.push_back(Action::Exit(Ok(())));
            }
            ManagerMsg::Reject { reason } => {
                // Given up: the manager recorded this process's parts lost.
                // They must not be reported to anyone again.
                let n = self.drop_all();
                self.finished.clear();
                self.reported.clear();
                self.finished_pending.clear();
                self.out.push_back(Action::Log(format!(
                    "the manager at {} gave this process up ({reason}): dropped {n} part(s), \
                     rejoining as new",
                    self.cfg.manager
                )));
                self.out.push_back(Action::Disconnect);
                let delay = self.cfg.backoff.delay(0);
                self.go_down(now, format!("given up by the manager: {reason}"), delay);
            }
            ManagerMsg::Welcome(_) => {
                self.state = State::Over;
                self.out
                    .push_back(Action::Exit(Err(LinkError::SecondWelcome(
                        self.cfg.manager.clone(),
                    ))));
            }
            ManagerMsg::RejoinKept { keep } => self.kept.extend(keep),
            ManagerMsg::RejoinAnswer { keep, reason } => {
                let mut all = std::mem::take(&mut self.kept);
                all.extend(keep);
                self.rejoin_answer(all, &reason)
            }
            ManagerMsg::NodeLost { node, reason } => {
                let Some(k) = self.ids.iter().position(|&g| g == node) else {
                    self.out.push_back(Action::Log(format!(
                        "the manager gave up node {node}, not one of ours: {reason}"
                    )));
                    return;
                };
                let k = k as u32;
                let n = self.drop_node(k, true);
                self.out.push_back(Action::Log(format!(
                    "the manager gave node {node} (local {k}) up ({reason}): dropped {n} part(s)"
                )));
                self.out.push_back(Action::NodeGivenUp { node: k });
            }
        }
    }

    /// Nodes (local indices) that send nothing now (as of `now`), listed
    /// before each heartbeat from now on.
    pub fn set_silent(&mut self, now: Instant, nodes: Vec<u32>) {
        self.silent.set(now, nodes);
    }

    /// Node `node` (local) crashed at `now`: its parts are gone with it
    /// (the node dropped them itself) and nothing more of them is sent;
    /// it is silent until [`Self::set_silent`] no longer lists it.
    pub fn node_crashed(&mut self, now: Instant, node: u32) -> usize {
        self.silent.crashed(now, node);
        self.drop_node(node, false)
    }

    /// Every part of node `node` off the books (with a [`Action::Drop`]
    /// each if `withdraw`); how many.
    fn drop_node(&mut self, node: u32, withdraw: bool) -> usize {
        let mut on: Vec<u64> = self
            .parts
            .iter()
            .filter(|(_, h)| h.node == node)
            .map(|(&l, _)| l)
            .collect();
        on.sort_unstable();
        for &local in &on {
            self.forget(local);
            if withdraw {
                self.out.push_back(Action::Drop { node, local });
            }
        }
        self.gathered.remove(&node);
        on.len()
    }

    fn rejoin_answer(&mut self, keep: Vec<PartId>, reason: &str) {
        // A set: an answer may keep hundreds of thousands of parts.
        let keep: FxHashSet<PartId> = keep.into_iter().collect();
        let kept = |p: &PartId| keep.contains(p);
        let mut dropped = 0;
        let pending: Vec<u64> = self
            .parts
            .iter()
            .filter(|(_, h)| h.pending)
            .map(|(&l, _)| l)
            .collect();
        for local in pending {
            let h = self.parts.get_mut(&local).expect("listed");
            if kept(&h.part) {
                h.pending = false;
            } else {
                let node = h.node;
                self.forget(local);
                self.out.push_back(Action::Drop { node, local });
                dropped += 1;
            }
        }
        // Those the rejoin reported finished were counted from it if kept.
        dropped += self
            .reported
            .drain(..)
            .filter(|f| !keep.contains(&f.part))
            .count();
        // Finished while the rejoin was on its way: the manager counted
        // none of these from the rejoin, so a kept one is sent now.
        for f in std::mem::take(&mut self.finished_pending) {
            if kept(&f.part) {
                self.sent.push(f);
                self.out.push_back(Action::Send(NodeMsg::Completed {
                    part: f.part,
                    at: f.at + self.shift,
                    cpu_seconds: f.cpu_seconds,
                }));
            } else {
                dropped += 1;
            }
        }
        if dropped > 0 {
            self.out.push_back(Action::Log(format!(
                "the manager dropped {dropped} reported part(s): {reason}"
            )));
        }
    }

    /// Every part off the books (each withdrawn silently); how many.
    fn drop_all(&mut self) -> usize {
        let mut all: Vec<(u64, u32)> = self.parts.iter().map(|(&l, h)| (l, h.node)).collect();
        all.sort_unstable();
        for &(local, node) in &all {
            self.out.push_back(Action::Drop { node, local });
        }
        self.parts.clear();
        self.by_wire.clear();
        all.len()
    }

    fn forget(&mut self, local: u64) -> Option<Held> {
        let h = self.parts.remove(&local)?;
        self.by_wire.remove(&h.part);
        if let Some(e) = &mut self.exceptions {
            e.forget(h.part);
        }
        Some(h)
    }

    fn dispatch(&mut self, d: Dispatch) {
        let nodes = self.cfg.nodes.len();
        if d.node as usize >= nodes {
            self.out.push_back(Action::Send(NodeMsg::Refused {
                part: d.part,
                reason: format!("no node {} in this process ({nodes} nodes)", d.node),
            }));
            return;
        }
        // A part already held is not started twice: two copies would burn
        // twice, a cancel would reach one and the manager would hear two
        // completions. The first goes on; the second is said and dropped
        // (refusing it would end a job whose part runs).
        if self.by_wire.contains_key(&d.part) {
            self.out.push_back(Action::Log(format!(
                "part {}/{} dispatched again while held: the copy is ignored",
                d.part.job, d.part.index
            )));
            return;
        }
        self.next_local += 1;
        let local = self.next_local;
        self.parts.insert(
            local,
            Held {
                part: d.part,
                node: d.node,
                dispatched_at: d.dispatched_at,
                started_at: None,
                work_done: 0.0,
                share: 0.0,
                pending: false,
            },
        );
        self.by_wire.insert(d.part, local);
        self.out.push_back(Action::Place {
            node: d.node,
            spec: PartSpec {
                part_id: local,
                job_id: d.part.job,
                estimate: d.estimate,
                actual: d.actual,
                deadline_abs: d.deadline - self.shift,
                memory_kb: 0,
                disk_mb: 0,
                ret: d.ret,
                hard: d.hard,
            },
        });
    }

    /// The process was told to stop (`signal`): the manager hears why
    /// (a Goodbye, then the connection closes) rather than waiting out
    /// its link timeout, and the process ends with an error.
    pub fn stop(&mut self, signal: &'static str) {
        if matches!(self.state, State::Over) {
            return;
        }
        let running = self.parts.len();
        self.out.push_back(Action::Send(NodeMsg::Goodbye {
            reason: format!("stopped by {signal} with {running} running part(s)"),
        }));
        self.state = State::Over;
        self.out
            .push_back(Action::Exit(Err(LinkError::Stopped { signal, running })));
    }

    /// A node could not take a part the I/O side was asked to place (its
    /// actor stopped).
    pub fn place_failed(&mut self, local: u64, reason: String) {
        if let Some(h) = self.forget(local) {
            if self.is_up() && !h.pending {
                self.out.push_back(Action::Send(NodeMsg::Refused {
                    part: h.part,
                    reason,
                }));
            }
        }
    }

    /// The answer to an [`Action::Withdraw`]: the CPU ns the part had
    /// burned, `None` if it had already left the node (its completion is
    /// reported by its node).
    pub fn withdrawn(&mut self, local: u64, burned_ns: Option<u64>, node_now: Time) {
        let Some(ns) = burned_ns else { return };
        if let Some(h) = self.forget(local) {
            self.out.push_back(Action::Log(format!(
                "withdrew part {}/{} (cancelled by the manager)",
                h.part.job, h.part.index
            )));
            if self.is_up() && !h.pending {
                self.out.push_back(Action::Send(NodeMsg::Withdrawn {
                    part: h.part,
                    at: node_now + self.shift,
                    cpu_seconds: ns as f64 * 1e-9,
                }));
            }
        }
    }

    /// An event of node `node` (local index).
    pub fn node_event(&mut self, node: u32, ev: NodeEvent) {
        let up = self.is_up();
        let shift = self.shift;
        match ev {
            NodeEvent::Placed { part_id, at } => {
                if let Some(h) = self.parts.get_mut(&part_id) {
                    h.started_at = Some(at);
                    if up && !h.pending {
                        self.out.push_back(Action::Send(NodeMsg::Started {
                            part: h.part,
                            at: at + shift,
                            dispatched_at: h.dispatched_at,
                        }));
                    }
                }
            }
            NodeEvent::Refused { part_id, error } => {
                if let Some(h) = self.forget(part_id) {
                    if up && !h.pending {
                        self.out.push_back(Action::Send(NodeMsg::Refused {
                            part: h.part,
                            reason: error.to_string(),
                        }));
                    }
                }
            }
            NodeEvent::Completed(c) => {
                let Some(h) = self.forget(c.part_id) else {
                    return;
                };
                let f = FinishedPart {
                    part: h.part,
                    node: h.node,
                    at: c.finished_at,
                    cpu_seconds: c.burned_ns as f64 * 1e-9,
                };
                if !up {
                    self.finished.push(f);
                } else if h.pending {
                    self.finished_pending.push(f);
                } else {
                    // The manager never hears of a part's progress after
                    // its end.
                    self.flush();
                    self.sent.push(f);
                    self.out.push_back(Action::Send(NodeMsg::Completed {
                        part: f.part,
                        at: f.at + shift,
                        cpu_seconds: f.cpu_seconds,
                    }));
                }
            }
            NodeEvent::Progress { at, parts } => {
                let mut wire = Vec::new();
                for p in &parts {
                    if let Some(h) = self.parts.get_mut(&p.part_id) {
                        h.work_done = p.work_done;
                        h.share = p.share;
                        if !h.pending {
                            wire.push(PartProgress {
                                part: h.part,
                                node,
                                work_done: p.work_done,
                                share: p.share,
                            });
                        }
                    }
                }
                if up && !wire.is_empty() {
                    self.gathered.insert(
                        node,
                        NodeProgress {
                            at: at + shift,
                            parts: wire,
                        },
                    );
                }
            }
            NodeEvent::SharesChanged { .. } => {}
        }
    }

    /// Sends what was gathered this report period, in one frame.
    fn flush(&mut self) {
        if self.gathered.is_empty() {
            return;
        }
        let mut reports: Vec<NodeProgress> = self.gathered.drain().map(|(_, r)| r).collect();
        if let Some(e) = &mut self.exceptions {
            retain_reports(e, &mut reports);
            if reports.is_empty() {
                return;
            }
        }
        reports.sort_by(|a, b| a.at.total_cmp(&b.at));
        // In frames of at most REPORT_PARTS_PER_FRAME parts, a node's
        // report split where it must: each part's report stands alone.
        let mut frame = Vec::new();
        let mut room = REPORT_PARTS_PER_FRAME;
        for mut r in reports {
            while r.parts.len() > room {
                if room > 0 {
                    let rest = r.parts.split_off(room);
                    frame.push(NodeProgress {
                        at: r.at,
                        parts: std::mem::replace(&mut r.parts, rest),
                    });
                }
                self.out.push_back(Action::Send(NodeMsg::Reports {
                    reports: std::mem::take(&mut frame),
                }));
                room = REPORT_PARTS_PER_FRAME;
            }
            room -= r.parts.len();
            frame.push(r);
        }
        self.out
            .push_back(Action::Send(NodeMsg::Reports { reports: frame }));
    }
}

/// The most part reports one `Reports` frame carries. A part's report is
/// at most 35 bytes on the wire (bincode's varints: ~23 for job ids below
/// 2^32), so a frame stays under 1.8 MB of the 4 MiB a frame may hold,
/// whatever the parts the process holds (best fit piles hundreds of
/// thousands on a few nodes under a flood).
const REPORT_PARTS_PER_FRAME: usize = 50_000;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{PartCompletion, PartStanding};
    use common::share::SpareRule;

    const SEC: Duration = Duration::from_secs(1);

    fn info(local: u32) -> NodeInfo {
        NodeInfo {
            local,
            capacity: 0.5,
            speed: 1.0,
            memory_kb: 0,
            disk_mb: 0,
        }
    }

    fn machine(t0: Instant) -> LinkMachine {
        LinkMachine::new(
            MachineConfig {
                manager: "127.0.0.1:7".into(),
                label: "a@h".into(),
                pid: 42,
                nodes: vec![info(0), info(1)],
                grace: Duration::from_secs(60),
                backoff: Backoff::new(Duration::from_millis(250), Duration::from_secs(5), 7),
                report_tolerance: Duration::ZERO,
                speed: 1.0,
            },
            t0,
        )
    }

    fn welcome(ids: Vec<u32>, trace_now: Time) -> Welcome {
        Welcome {
            node_ids: ids,
            time_scale: 0.01,
            trace_now,
            spare_rule: SpareRule::Proportional,
            report_ms: 100,
            heartbeat_ms: 250,
            histogram_ms: 10_000,
        }
    }

    fn part(job: u64) -> PartId {
        PartId { job, index: 0 }
    }

    fn dispatch(job: u64, node: u32, deadline: Time) -> Dispatch {
        Dispatch {
            part: part(job),
            node,
            estimate: 10.0,
            actual: 10.0,
            deadline,
            dispatched_at: 1.0,
            exclusive: false,
            ret: 0.0,
            hard: false,
        }
    }

    fn drain(m: &mut LinkMachine) -> Vec<Action> {
        std::iter::from_fn(|| m.poll_action()).collect()
    }

    fn sends(actions: &[Action]) -> Vec<NodeMsg> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::Send(m) => Some(m.clone()),
                _ => None,
            })
            .collect()
    }

    fn completed(local: u64, at: Time, burned_ns: u64) -> NodeEvent {
        NodeEvent::Completed(PartCompletion {
            node_id: 0,
            part_id: local,
            job_id: 0,
            placed_at: 0.0,
            finished_at: at,
            deadline_abs: 100.0,
            met_deadline: true,
            burned_ns,
            assigned_ns: 0.0,
        })
    }

    fn progress(local: u64, at: Time, done: f64) -> NodeEvent {
        NodeEvent::Progress {
            at,
            parts: vec![PartStanding {
                part_id: local,
                job_id: 0,
                work_done: done,
                share: 0.5,
                on_track: true,
            }],
        }
    }

    /// Welcomed at t0 with nodes 4-5 and two parts placed (locals 1, 2).
    fn up_with_two_parts(t0: Instant) -> LinkMachine {
        let mut m = machine(t0);
        m.connected(t0, &welcome(vec![4, 5], 100.0), 100.0);
        m.frame(
            t0,
            ManagerMsg::Dispatches(vec![dispatch(1, 0, 50.0), dispatch(2, 1, 60.0)]),
        );
        drain(&mut m);
        m
    }

    /// A part dispatched again while held is placed once: a cancel then
    /// reaches the one copy, which completes once.
    #[test]
    fn a_part_dispatched_twice_is_placed_once() {
        let t0 = Instant::now();
        let mut m = machine(t0);
        m.connected(t0, &welcome(vec![4, 5], 100.0), 100.0);
        drain(&mut m);
        m.frame(
            t0,
            ManagerMsg::Dispatches(vec![dispatch(1, 0, 50.0), dispatch(1, 1, 50.0)]),
        );
        let a = drain(&mut m);
        let placed = a
            .iter()
            .filter(|x| matches!(x, Action::Place { .. }))
            .count();
        assert_eq!(placed, 1, "{a:?}");
        assert!(
            a.iter()
                .any(|x| matches!(x, Action::Log(l) if l.contains("dispatched again while held"))),
            "{a:?}"
        );
        assert!(sends(&a).is_empty(), "{a:?}");
    }

    #[test]
    fn dispatches_become_placements_and_events_become_frames() {
        let t0 = Instant::now();
        let mut m = machine(t0);
        m.connected(t0, &welcome(vec![4, 5], 100.0), 100.0);
        assert!(drain(&mut m).is_empty(), "a first welcome reports nothing");
        m.frame(
            t0,
            ManagerMsg::Dispatches(vec![dispatch(1, 0, 50.0), dispatch(2, 9, 60.0)]),
        );
        let a = drain(&mut m);
        assert_eq!(a.len(), 2, "{a:?}");
        let Action::Place { node: 0, spec } = &a[0] else {
            panic!("{a:?}")
        };
        assert_eq!((spec.part_id, spec.job_id, spec.deadline_abs), (1, 1, 50.0));
        let [NodeMsg::Refused { part: p, reason }] = &sends(&a)[..] else {
            panic!("{a:?}")
        };
        assert_eq!(*p, part(2));
        assert!(reason.contains("no node 9"), "{reason}");
        m.node_event(
            0,
            NodeEvent::Placed {
                part_id: 1,
                at: 100.5,
            },
        );
        assert_eq!(
            sends(&drain(&mut m)),
            vec![NodeMsg::Started {
                part: part(1),
                at: 100.5,
                dispatched_at: 1.0
            }]
        );
        m.node_event(0, progress(1, 101.0, 0.25));
        // Gathered, not sent, until the report period ends; a completion
        // flushes it first.
        assert!(drain(&mut m).is_empty());
        m.node_event(0, completed(1, 102.0, 2_000_000_000));
        assert_eq!(
            sends(&drain(&mut m)),
            vec![
                NodeMsg::Reports {
                    reports: vec![NodeProgress {
                        at: 101.0,
                        parts: vec![PartProgress {
                            part: part(1),
                            node: 0,
                            work_done: 0.25,
                            share: 0.5
                        }]
                    }]
                },
                NodeMsg::Completed {
                    part: part(1),
                    at: 102.0,
                    cpu_seconds: 2.0
                }
            ]
        );
        assert_eq!(m.running(), 0);
    }

    /// A node gone silent (a crash or hang of that node alone) is listed
    /// before each heartbeat by its cluster-wide id; the manager's
    /// `NodeLost` drops its parts, and only its.
    #[test]
    fn silent_nodes_are_listed_before_heartbeats_and_a_lost_one_drops_its_parts() {
        let t0 = Instant::now();
        let mut m = up_with_two_parts(t0);
        m.handle_timeout(t0 + SEC);
        assert_eq!(
            sends(&drain(&mut m)),
            vec![NodeMsg::Heartbeat { seq: 1 }],
            "nothing silent: the heartbeat alone"
        );
        m.set_silent(t0, vec![1]);
        m.handle_timeout(t0 + 2 * SEC);
        assert_eq!(
            sends(&drain(&mut m)),
            vec![
                NodeMsg::Silent { nodes: vec![5] },
                NodeMsg::Heartbeat { seq: 2 }
            ]
        );
        m.frame(
            t0 + 2 * SEC,
            ManagerMsg::NodeLost {
                node: 5,
                reason: "silent".into(),
            },
        );
        let a = drain(&mut m);
        assert!(a.contains(&Action::Drop { node: 1, local: 2 }), "{a:?}");
        assert!(a.contains(&Action::NodeGivenUp { node: 1 }), "{a:?}");
        assert_eq!(m.running(), 1, "node 0's part stays");
        // Nothing more of the dropped part is sent.
        m.node_event(1, completed(2, 103.0, 1));
        assert!(sends(&drain(&mut m)).is_empty());
        // A crashed node's parts leave the books without a withdrawal.
        assert_eq!(m.node_crashed(t0, 0), 1);
        assert_eq!(m.running(), 0);
        assert!(drain(&mut m).is_empty());
    }

    #[test]
    fn poll_send_takes_only_sends_from_the_front() {
        let t0 = Instant::now();
        let mut m = machine(t0);
        m.connected(t0, &welcome(vec![4, 5], 100.0), 100.0);
        m.frame(t0, ManagerMsg::Ping { nonce: 1 });
        m.frame(t0, ManagerMsg::SendHistograms);
        m.frame(t0, ManagerMsg::Ping { nonce: 2 });
        assert_eq!(m.poll_send(), Some(NodeMsg::Pong { nonce: 1 }));
        assert_eq!(m.poll_send(), None);
        assert!(m.has_actions());
        assert_eq!(m.poll_action(), Some(Action::Histograms { last: true }));
        assert_eq!(m.poll_send(), Some(NodeMsg::Pong { nonce: 2 }));
        assert!(!m.has_actions());
    }

    #[test]
    fn timers_send_heartbeats_reports_and_histograms() {
        let t0 = Instant::now();
        let mut m = up_with_two_parts(t0);
        assert_eq!(m.poll_timeout(), Some(t0 + Duration::from_millis(100)));
        m.node_event(0, progress(1, 100.1, 0.1));
        m.handle_timeout(t0 + Duration::from_millis(100));
        let a = sends(&drain(&mut m));
        assert!(matches!(&a[..], [NodeMsg::Reports { .. }]), "{a:?}");
        m.handle_timeout(t0 + Duration::from_millis(250));
        assert_eq!(sends(&drain(&mut m)), vec![NodeMsg::Heartbeat { seq: 1 }]);
        m.handle_timeout(t0 + 10 * SEC);
        let a = drain(&mut m);
        assert!(a.contains(&Action::Histograms { last: false }), "{a:?}");
        assert!(sends(&a).contains(&NodeMsg::Heartbeat { seq: 2 }));
    }

    /// A period's reports of more parts than a frame carries go out in
    /// several frames, in order, each within the bound and within
    /// `MAX_FRAME` encoded, every part once.
    #[test]
    fn reports_of_many_parts_are_split_into_frames() {
        let t0 = Instant::now();
        let mut m = machine(t0);
        m.connected(t0, &welcome(vec![4, 5], 100.0), 100.0);
        let n = 2 * REPORT_PARTS_PER_FRAME + 7;
        let mut ds: Vec<_> = (1..=n as u64).map(|j| dispatch(j, 0, 1e6)).collect();
        // A few on the other node, reported at another instant.
        ds.extend((n as u64 + 1..=n as u64 + 3).map(|j| dispatch(j, 1, 1e6)));
        m.frame(t0, ManagerMsg::Dispatches(ds));
        drain(&mut m);
        let standing = |local: u64| PartStanding {
            part_id: local,
            job_id: 0,
            work_done: 0.25,
            share: 0.5,
            on_track: true,
        };
        m.node_event(
            0,
            NodeEvent::Progress {
                at: 100.1,
                parts: (1..=n as u64).map(standing).collect(),
            },
        );
        m.node_event(
            1,
            NodeEvent::Progress {
                at: 100.05,
                parts: (n as u64 + 1..=n as u64 + 3).map(standing).collect(),
            },
        );
        m.handle_timeout(t0 + Duration::from_millis(100));
        let frames: Vec<_> = sends(&drain(&mut m))
            .into_iter()
            .filter_map(|f| match f {
                NodeMsg::Reports { reports } => Some(reports),
                _ => None,
            })
            .collect();
        assert_eq!(
            frames.len(),
            3,
            "{n} + 3 parts in frames of {REPORT_PARTS_PER_FRAME}"
        );
        let mut jobs = Vec::new();
        let mut ats = Vec::new();
        for f in &frames {
            let parts: usize = f.iter().map(|r| r.parts.len()).sum();
            assert!(parts <= REPORT_PARTS_PER_FRAME, "{parts}");
            let msg = NodeMsg::Reports { reports: f.clone() };
            assert!(common::protocol::payload_len(&msg) <= common::protocol::MAX_FRAME);
            for r in f {
                assert!(!r.parts.is_empty(), "no empty report");
                ats.push(r.at);
                jobs.extend(r.parts.iter().map(|p| p.part.job));
            }
        }
        jobs.sort_unstable();
        assert_eq!(jobs, (1..=n as u64 + 3).collect::<Vec<_>>());
        assert!(ats.is_sorted(), "oldest first: {ats:?}");
    }

    #[test]
    fn cancel_withdraws_and_reports_the_cpu_burned() {
        let t0 = Instant::now();
        let mut m = up_with_two_parts(t0);
        m.frame(t0, ManagerMsg::Cancel { part: part(2) });
        assert_eq!(drain(&mut m), vec![Action::Withdraw { node: 1, local: 2 }]);
        m.withdrawn(2, Some(500_000_000), 103.0);
        assert_eq!(
            sends(&drain(&mut m)),
            vec![NodeMsg::Withdrawn {
                part: part(2),
                at: 103.0,
                cpu_seconds: 0.5
            }]
        );
        // A cancel of a part no longer held does nothing.
        m.frame(t0, ManagerMsg::Cancel { part: part(2) });
        assert!(drain(&mut m).is_empty());
        // Finished while the cancel was on its way: nothing to report.
        m.frame(t0, ManagerMsg::Cancel { part: part(1) });
        drain(&mut m);
        m.withdrawn(1, None, 103.0);
        assert!(drain(&mut m).is_empty());
    }

    #[test]
    fn shutdown_says_goodbye_and_exits_ok() {
        let t0 = Instant::now();
        let mut m = up_with_two_parts(t0);
        m.frame(t0, ManagerMsg::Ping { nonce: 3 });
        m.frame(
            t0,
            ManagerMsg::Shutdown {
                reason: "run over".into(),
            },
        );
        let a = drain(&mut m);
        assert_eq!(
            sends(&a),
            vec![
                NodeMsg::Pong { nonce: 3 },
                NodeMsg::Goodbye {
                    reason: "shutdown requested".into()
                }
            ]
        );
        assert_eq!(a.last(), Some(&Action::Exit(Ok(()))));
        assert_eq!(m.poll_timeout(), None);
    }

    #[test]
    fn a_lost_manager_is_retried_with_growing_capped_waits_until_the_grace_ends() {
        let t0 = Instant::now();
        let mut m = up_with_two_parts(t0);
        let lost = t0 + SEC;
        m.link_lost(lost, "timed out".into());
        let a = drain(&mut m);
        assert!(a.contains(&Action::Disconnect), "{a:?}");
        assert!(
            !a.iter().any(|a| matches!(a, Action::Drop { .. })),
            "parts keep running"
        );
        assert_eq!(m.running(), 2);
        let mut at = m.poll_timeout().unwrap();
        // First wait: 250 ms x [0.5, 1].
        let first = at - lost;
        assert!(first >= Duration::from_millis(125) && first <= Duration::from_millis(250));
        let mut waits = vec![];
        let mut attempts = 0;
        loop {
            m.handle_timeout(at);
            let a = drain(&mut m);
            if let Some(Action::Exit(r)) = a.last() {
                let e = r.clone().unwrap_err();
                let text = e.to_string();
                assert!(
                    matches!(e, LinkError::GraceOver { attempts: n, running: 2, .. } if n == attempts),
                    "{text}"
                );
                assert!(
                    text.contains("refused") && text.contains("--manager-grace-s"),
                    "{text}"
                );
                assert!(at >= lost + Duration::from_secs(60));
                break;
            }
            assert_eq!(a, vec![Action::Connect]);
            attempts += 1;
            let next = at + Duration::from_millis(10);
            m.connect_failed(next, "refused".into());
            let t = m.poll_timeout().unwrap();
            waits.push(t - next);
            at = t;
        }
        // Waits grow (within jitter) and never pass the 5 s cap.
        assert!(
            waits.iter().all(|w| *w <= Duration::from_secs(5)),
            "{waits:?}"
        );
        assert!(waits[4] > waits[0], "{waits:?}");
        assert!(waits.len() > 10 && waits.len() < 30, "{waits:?}");
    }

    #[test]
    fn a_refusing_close_ends_the_link_without_retrying() {
        let t0 = Instant::now();
        let mut m = up_with_two_parts(t0);
        m.refused("identity node-a is revoked".into());
        let a = drain(&mut m);
        assert!(
            matches!(&a[..], [Action::Exit(Err(LinkError::Refused { reason, .. }))] if reason.contains("revoked")),
            "{a:?}"
        );
        assert_eq!(m.poll_timeout(), None);
    }

    #[test]
    fn jitter_is_reproducible_from_its_seed() {
        let w = |seed| {
            let mut b = Backoff::new(Duration::from_millis(100), SEC, seed);
            (0..8).map(|k| b.delay(k)).collect::<Vec<_>>()
        };
        assert_eq!(w(3), w(3));
        assert_ne!(w(3), w(4));
        assert!(w(3)[7] <= SEC && w(3)[7] >= SEC / 2);
    }

    /// Lost at t0 + 1 s with parts 1 (node 0) and 2 (node 1) placed;
    /// part 1 finished while away; welcomed again by a manager whose
    /// clock reads 10 trace s more than the nodes'.
    fn rejoined(t0: Instant) -> (LinkMachine, Rejoin) {
        let mut m = up_with_two_parts(t0);
        m.node_event(
            0,
            NodeEvent::Placed {
                part_id: 1,
                at: 100.0,
            },
        );
        m.node_event(
            1,
            NodeEvent::Placed {
                part_id: 2,
                at: 100.0,
            },
        );
        m.node_event(1, progress(2, 101.0, 0.75));
        m.link_lost(t0 + SEC, "closed".into());
        m.node_event(0, completed(1, 103.0, 1_500_000_000));
        m.node_event(1, progress(2, 104.0, 1.5));
        let a = drain(&mut m);
        let sent_while_down: Vec<_> = a
            .iter()
            .skip_while(|a| **a != Action::Disconnect)
            .filter(|a| matches!(a, Action::Send(_)))
            .collect();
        assert!(sent_while_down.is_empty(), "{a:?}");
        m.handle_timeout(m.poll_timeout().unwrap());
        assert_eq!(drain(&mut m), vec![Action::Connect]);
        m.connected(t0 + 3 * SEC, &welcome(vec![6, 7], 115.0), 105.0);
        let a = sends(&drain(&mut m));
        let [NodeMsg::Rejoin(r)] = &a[..] else {
            panic!("{a:?}")
        };
        (m, r.clone())
    }

    /// A process holding 100,002 parts (jobs 1 to 100,002 on node 0)
    /// when its link is lost rejoins in three frames: two pieces of
    /// 50,000 parts and the `Rejoin` with the last 2, every part once, in
    /// job order. The answer comes in pieces too: a `RejoinKept` of jobs
    /// 1 to 50,000, then the answer keeping the odd jobs above. The node
    /// keeps exactly those and drops the other 25,001 (the even jobs from
    /// 50,002): a cancel then withdraws job 1 and job 50,001, and finds no
    /// job 50,002.
    #[test]
    fn a_rejoin_and_its_answer_in_pieces_keep_what_the_pieces_name() {
        let t0 = Instant::now();
        let n: u64 = 100_002;
        let mut m = machine(t0);
        m.connected(t0, &welcome(vec![4, 5], 100.0), 100.0);
        m.frame(
            t0,
            ManagerMsg::Dispatches((1..=n).map(|j| dispatch(j, 0, 1e6)).collect()),
        );
        drain(&mut m);
        m.link_lost(t0 + SEC, "closed".into());
        drain(&mut m);
        m.handle_timeout(m.poll_timeout().unwrap());
        assert_eq!(drain(&mut m), vec![Action::Connect]);
        m.connected(t0 + 3 * SEC, &welcome(vec![6, 7], 115.0), 105.0);
        let frames = sends(&drain(&mut m));
        let mut jobs = Vec::new();
        let mut shape = Vec::new();
        for f in &frames {
            match f {
                NodeMsg::RejoinPiece { running, finished } => {
                    shape.push(("piece", running.len(), finished.len()));
                    jobs.extend(running.iter().map(|h| h.part.job));
                }
                NodeMsg::Rejoin(r) => {
                    shape.push(("rejoin", r.running.len(), r.finished.len()));
                    jobs.extend(r.running.iter().map(|h| h.part.job));
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(
            shape,
            [("piece", 50_000, 0), ("piece", 50_000, 0), ("rejoin", 2, 0)]
        );
        assert_eq!(jobs, (1..=n).collect::<Vec<_>>());
        m.frame(
            t0 + 3 * SEC,
            ManagerMsg::RejoinKept {
                keep: (1..=50_000).map(part).collect(),
            },
        );
        assert!(
            drain(&mut m).is_empty(),
            "nothing happens before the answer"
        );
        m.frame(
            t0 + 3 * SEC,
            ManagerMsg::RejoinAnswer {
                keep: (50_001..=n).step_by(2).map(part).collect(),
                reason: "unknown".into(),
            },
        );
        let mut dropped: Vec<u64> = Vec::new();
        let a = drain(&mut m);
        for x in &a {
            if let Action::Drop { node, local } = x {
                assert_eq!(*node, 0);
                // Locals are given in dispatch order from 1: job = local.
                dropped.push(*local);
            }
        }
        dropped.sort_unstable();
        assert_eq!(dropped, (50_002..=n).step_by(2).collect::<Vec<_>>());
        for (job, held) in [(1, true), (50_001, true), (50_002, false)] {
            m.frame(t0 + 4 * SEC, ManagerMsg::Cancel { part: part(job) });
            let a = drain(&mut m);
            let withdrawn = a.iter().any(|x| matches!(x, Action::Withdraw { .. }));
            assert_eq!(withdrawn, held, "job {job}: {a:?}");
        }
    }

    /// Nodes faulted while the link is down are reported as what they
    /// are. Lost at t0 + 1 s with part 1 on node 0 and part 2 on node 1;
    /// node 0 crashes at t0 + 1.5 s (it drops part 1) and node 1 is held
    /// from t0 + 2 s. The rejoin at t0 + 3 s reports part 2 alone running,
    /// node 0 crashed 1.5 s ago and node 1 held 1 s ago; once the answer
    /// keeps part 2, the heartbeats leave both nodes (new ids 6, 7)
    /// unvouched, and a node back up (the hang over) is no longer listed.
    #[test]
    fn a_rejoin_reports_nodes_crashed_or_held_while_the_link_was_down() {
        let t0 = Instant::now();
        let mut m = up_with_two_parts(t0);
        m.link_lost(t0 + SEC, "closed".into());
        assert_eq!(m.node_crashed(t0 + 3 * SEC / 2, 0), 1);
        m.set_silent(t0 + 3 * SEC / 2, vec![0]);
        m.set_silent(t0 + 2 * SEC, vec![0, 1]);
        drain(&mut m);
        m.handle_timeout(m.poll_timeout().unwrap());
        assert_eq!(drain(&mut m), vec![Action::Connect]);
        m.connected(t0 + 3 * SEC, &welcome(vec![6, 7], 115.0), 105.0);
        let a = sends(&drain(&mut m));
        let [NodeMsg::Rejoin(r)] = &a[..] else {
            panic!("{a:?}")
        };
        let running: Vec<(PartId, u32)> = r.running.iter().map(|h| (h.part, h.node)).collect();
        assert_eq!(
            running,
            vec![(part(2), 1)],
            "the crashed node's part is gone"
        );
        assert_eq!(
            r.down,
            vec![
                common::protocol::DownNode {
                    node: 0,
                    crashed: true,
                    silent_s: 1.5
                },
                common::protocol::DownNode {
                    node: 1,
                    crashed: false,
                    silent_s: 1.0
                },
            ]
        );
        m.frame(
            t0 + 3 * SEC,
            ManagerMsg::RejoinAnswer {
                keep: vec![part(2)],
                reason: String::new(),
            },
        );
        drain(&mut m);
        m.handle_timeout(t0 + 4 * SEC);
        let beat = sends(&drain(&mut m));
        assert_eq!(beat[0], NodeMsg::Silent { nodes: vec![6, 7] }, "{beat:?}");
        m.set_silent(t0 + 5 * SEC, vec![0]);
        m.handle_timeout(t0 + 5 * SEC);
        let beat = sends(&drain(&mut m));
        assert_eq!(beat[0], NodeMsg::Silent { nodes: vec![6] }, "{beat:?}");
    }

    /// A completion sent on a link that is then lost may never have been
    /// read (a manager that died reads nothing): the rejoin reports it
    /// again, on the new clock, if it was sent within the last one or
    /// two grace periods (60 s here). Part 2 completes at t0 and its frame
    /// is sent; two rotations later (t0 + 61 s, t0 + 122 s) it is
    /// forgotten. Part 1 completes and is sent at t0 + 122 s, the link is
    /// lost a second later, and a manager whose clock reads 10 trace s
    /// more than the nodes' welcomes the process: its rejoin reports part
    /// 1 finished at 150 + 10, and nothing of part 2.
    #[test]
    fn a_rejoin_reports_again_the_completions_a_lost_link_may_have_dropped() {
        let t0 = Instant::now();
        let mut m = up_with_two_parts(t0);
        m.handle_timeout(t0);
        m.node_event(1, completed(2, 101.0, 1_000_000_000));
        assert!(sends(&drain(&mut m))
            .iter()
            .any(|s| matches!(s, NodeMsg::Completed { part: p, .. } if *p == part(2))));
        m.handle_timeout(t0 + 61 * SEC);
        m.handle_timeout(t0 + 122 * SEC);
        m.node_event(0, completed(1, 150.0, 1_000_000_000));
        drain(&mut m);
        m.link_lost(t0 + 123 * SEC, "idle timeout".into());
        m.handle_timeout(m.poll_timeout().unwrap());
        assert_eq!(drain(&mut m).last(), Some(&Action::Connect));
        m.connected(t0 + 125 * SEC, &welcome(vec![6, 7], 160.0), 150.0);
        let a = sends(&drain(&mut m));
        let [NodeMsg::Rejoin(r)] = &a[..] else {
            panic!("{a:?}")
        };
        assert!(r.running.is_empty());
        assert_eq!(
            r.finished,
            vec![FinishedPart {
                part: part(1),
                node: 0,
                at: 160.0,
                cpu_seconds: 1.0
            }]
        );
    }

    #[test]
    fn a_rejoin_reports_running_and_finished_parts_on_the_new_clock() {
        let t0 = Instant::now();
        let (_, r) = rejoined(t0);
        assert_eq!(r.was, vec![4, 5]);
        assert_eq!(r.away_s, 2.0);
        assert_eq!(r.why, "closed");
        assert_eq!(
            r.running,
            vec![HeldPart {
                part: part(2),
                node: 1,
                work_done: 1.5,
                share: 0.5,
                started_at: 110.0
            }]
        );
        assert_eq!(
            r.finished,
            vec![FinishedPart {
                part: part(1),
                node: 0,
                at: 113.0,
                cpu_seconds: 1.5
            }]
        );
    }

    #[test]
    fn parts_the_manager_does_not_keep_are_dropped_and_never_reported_again() {
        let t0 = Instant::now();
        let (mut m, _) = rejoined(t0);
        // Until the answer, nothing of a reported part goes out.
        m.node_event(1, progress(2, 105.0, 1.6));
        m.handle_timeout(t0 + 3 * SEC + Duration::from_millis(100));
        assert!(sends(&drain(&mut m)).is_empty());
        m.frame(
            t0 + 3 * SEC,
            ManagerMsg::RejoinAnswer {
                keep: vec![],
                reason: "unknown here".into(),
            },
        );
        let a = drain(&mut m);
        assert_eq!(a[0], Action::Drop { node: 1, local: 2 });
        assert!(
            matches!(&a[1], Action::Log(l) if l.contains("dropped 2") && l.contains("unknown here")),
            "{a:?}"
        );
        assert_eq!(m.running(), 0);
        // Its completion racing the drop is not reported.
        m.node_event(1, completed(2, 106.0, 1));
        assert!(drain(&mut m).is_empty());
        // New work is placed on the new clock: deadline 150 (manager) is
        // 140 on the nodes'.
        m.frame(t0 + 4 * SEC, ManagerMsg::Dispatch(dispatch(9, 0, 150.0)));
        let a = drain(&mut m);
        assert!(
            matches!(&a[..], [Action::Place { node: 0, spec }] if spec.deadline_abs == 140.0),
            "{a:?}"
        );
        m.node_event(
            0,
            NodeEvent::Placed {
                part_id: 3,
                at: 106.0,
            },
        );
        assert_eq!(
            sends(&drain(&mut m)),
            vec![NodeMsg::Started {
                part: part(9),
                at: 116.0,
                dispatched_at: 1.0
            }]
        );
    }

    #[test]
    fn kept_parts_go_on_reporting_and_one_finished_meanwhile_is_sent() {
        let t0 = Instant::now();
        let (mut m, _) = rejoined(t0);
        m.node_event(1, completed(2, 105.5, 2_000_000_000));
        assert!(drain(&mut m).is_empty(), "held until the answer");
        m.frame(
            t0 + 3 * SEC,
            ManagerMsg::RejoinAnswer {
                keep: vec![part(1), part(2)],
                reason: String::new(),
            },
        );
        assert_eq!(
            sends(&drain(&mut m)),
            vec![NodeMsg::Completed {
                part: part(2),
                at: 115.5,
                cpu_seconds: 2.0
            }],
            "part 1 was counted from the rejoin itself"
        );
    }

    #[test]
    fn a_rejoin_unanswered_when_the_link_drops_again_is_made_again_in_full() {
        let t0 = Instant::now();
        let (mut m, first) = rejoined(t0);
        m.node_event(1, completed(2, 105.5, 2_000_000_000));
        m.link_lost(t0 + 4 * SEC, "closed again".into());
        m.handle_timeout(m.poll_timeout().unwrap());
        drain(&mut m);
        m.connected(t0 + 5 * SEC, &welcome(vec![6, 7], 116.0), 106.0);
        let a = sends(&drain(&mut m));
        let [NodeMsg::Rejoin(r)] = &a[..] else {
            panic!("{a:?}")
        };
        assert!(r.running.is_empty());
        let mut got: Vec<(u64, f64)> = r.finished.iter().map(|f| (f.part.job, f.at)).collect();
        got.sort_by_key(|g| g.0);
        assert_eq!(got, vec![(1, 113.0), (2, 115.5)]);
        assert_eq!(first.finished.len(), 1);
    }

    #[test]
    fn a_process_given_up_drops_its_parts_and_rejoins_as_new() {
        let t0 = Instant::now();
        let mut m = up_with_two_parts(t0);
        m.frame(
            t0 + SEC,
            ManagerMsg::Reject {
                reason: "this process was given up: silent".into(),
            },
        );
        let a = drain(&mut m);
        assert_eq!(
            a.iter()
                .filter(|a| matches!(a, Action::Drop { .. }))
                .count(),
            2,
            "{a:?}"
        );
        assert!(a.contains(&Action::Disconnect));
        assert_eq!(m.running(), 0);
        m.handle_timeout(m.poll_timeout().unwrap());
        assert_eq!(drain(&mut m), vec![Action::Connect]);
        m.connected(t0 + 2 * SEC, &welcome(vec![8, 9], 200.0), 101.0);
        let a = sends(&drain(&mut m));
        let [NodeMsg::Rejoin(r)] = &a[..] else {
            panic!("{a:?}")
        };
        assert!(r.running.is_empty() && r.finished.is_empty(), "{r:?}");
        assert!(r.why.contains("given up"), "{}", r.why);
    }

    #[test]
    fn a_later_manager_at_another_time_scale_ends_the_link() {
        let t0 = Instant::now();
        let mut m = up_with_two_parts(t0);
        m.link_lost(t0, "closed".into());
        m.handle_timeout(m.poll_timeout().unwrap());
        drain(&mut m);
        let mut w = welcome(vec![0, 1], 0.0);
        w.time_scale = 1.0;
        m.connected(t0 + SEC, &w, 100.0);
        let a = drain(&mut m);
        assert!(
            matches!(
                a.last(),
                Some(Action::Exit(Err(LinkError::TimeScale { .. })))
            ),
            "{a:?}"
        );
        // A second welcome on a live link is an error too.
        let mut m = up_with_two_parts(t0);
        m.frame(t0, ManagerMsg::Welcome(welcome(vec![0], 0.0)));
        assert!(matches!(
            drain(&mut m).last(),
            Some(Action::Exit(Err(LinkError::SecondWelcome(_))))
        ));
    }
}
