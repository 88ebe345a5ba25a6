//! A node process for the harness: `libratory-node`'s own link logic
//! ([`node::link::machine::LinkMachine`], the state machine
//! `node/src/link/` drives over QUIC) in front of the real node engines
//! ([`node::NodeEngine`], one per emulated node). This module is the
//! harness's I/O side of the machine, as `node::link::serve` is the real
//! one's: it places, withdraws and drops parts on the engines, feeds the
//! engines' events back, hands the machine's frames, connections and
//! timers to the world, and reads the trace clock off the first welcome
//! (as `TraceClock` does), so everything the machine decides (the part
//! mapping, reports, heartbeats, reconnecting within the grace period,
//! the rejoin and its answer) is the product's.
//!
//! The executors are simulated: a slice of `ns` burns for `ns` of real
//! time (plus a seeded overshoot), at most `max_running` at once per node,
//! so a node never gets more processor than its capacity.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use common::protocol::{self, ManagerMsg, NodeMsg, PartId, Welcome};
use common::time::Time;
use node::link::machine::{Action, LinkError, LinkMachine, MachineConfig};
use node::{EmulatedNodeSpec, NodeEngine, NodeEvent, Slice, SliceConfig};

/// What a node process wants done by the harness.
pub(super) enum Out {
    /// Send this frame to the manager on the current connection.
    Send(NodeMsg),
    /// Open a connection and register with this frame.
    Connect(NodeMsg),
    /// Close the current connection (the link is lost).
    Disconnect,
    /// Wake node `node`'s engine at this trace time.
    Timer { node: usize, at: Time },
    /// Wake the link machine at this trace time.
    LinkTimer { at: Time },
    /// Slice `slice` of node `node` ends at `at`, having burned `burned` ns.
    Burn {
        node: usize,
        slice: Slice,
        burned: u64,
        at: Time,
    },
    /// A part was placed on an engine (the invariant checks count them).
    Placed { part: PartId, node: usize },
    /// A part finished its work on an engine.
    Completed { part: PartId },
    /// A node's shares add up to more than 1, or an exclusive part shares
    /// its node (the invariant), in words.
    OverCapacity(String),
    /// Something the harness's processes never cause happened, in words
    /// (a node given up alone: no node of the harness goes silent alone).
    Unexpected(String),
    /// Parts still on the process's nodes when the manager collected its
    /// histograms: every job was over then, and the cancels of a lost
    /// job's parts went out before that request on the same link.
    Leftover(Vec<PartId>),
    /// The process ends: `Ok` at the manager's shutdown.
    Exit(Result<(), LinkError>),
}

/// A part on an engine as the harness knows it (for the checks).
struct Wired {
    part: PartId,
    node: usize,
    exclusive: bool,
    /// Reported in a rejoin not answered yet: the manager that welcomed
    /// the process again may hold it or not (see `welcomed`).
    pending: bool,
}

struct SimNode {
    engine: NodeEngine,
    /// Slices issued, waiting for a free executor lane.
    queued: VecDeque<Slice>,
    running: usize,
    /// The engine timer armed: harness time, and the engine's own (the
    /// two clocks differ by the lag, and a sum rounds).
    armed: Option<(Time, Time)>,
}

/// One incarnation of a node process.
pub(super) struct NodeProcess {
    machine: LinkMachine,
    infos: Vec<protocol::NodeInfo>,
    /// Made at the first welcome (its time scale and spare rule).
    nodes: Vec<SimNode>,
    wired: HashMap<u64, Wired>,
    /// The instant of trace time 0 (the machine's clock is `Instant`s).
    base: Instant,
    time_scale: f64,
    /// Harness time minus the nodes' trace clock (set at the first
    /// welcome: the clock starts at its `trace_now` when it arrives).
    lag: Time,
    link_armed: Option<Instant>,
    /// Extra ns a burn overshoots by, drawn per slice by the harness.
    overshoot: Box<dyn FnMut() -> u64>,
}

/// The slicing knobs of the harness: coarse (a 1 s period of real time),
/// so that a part runs in a few slices and a run costs few events; the
/// engine's accounting is the same at any period.
pub(super) fn slice_config(w: &Welcome) -> SliceConfig {
    let tick = Duration::from_millis(500);
    SliceConfig {
        time_scale: w.time_scale,
        period: Duration::from_secs(1),
        tick,
        spare_rule: w.spare_rule,
        min_slice: Duration::from_millis(5),
        max_slice: Duration::from_secs(1),
        backlog_periods: 2.0,
        progress_ticks: ((f64::from(w.report_ms) / tick.as_secs_f64() / 1000.0).round() as u32)
            .max(1),
        share_events: false,
        inline_slice: Duration::ZERO,
    }
}

impl NodeProcess {
    /// A process starting at harness time `now` (it connects at once:
    /// see [`Self::register`]); `base` is the harness's instant of trace
    /// time 0, `time_scale` its real seconds per trace second.
    pub(super) fn new(
        cfg: MachineConfig,
        base: Instant,
        time_scale: f64,
        now: Time,
        overshoot: Box<dyn FnMut() -> u64>,
    ) -> NodeProcess {
        let infos = cfg.nodes.clone();
        let start = base + Duration::from_secs_f64((now * time_scale).max(0.0));
        NodeProcess {
            machine: LinkMachine::new(cfg, start),
            infos,
            nodes: Vec::new(),
            wired: HashMap::new(),
            base,
            time_scale,
            lag: 0.0,
            link_armed: None,
            overshoot,
        }
    }

    /// The registration the process sends on every connection.
    pub(super) fn register(&self) -> NodeMsg {
        self.machine.register()
    }

    fn instant(&self, t: Time) -> Instant {
        self.base + Duration::from_secs_f64((t * self.time_scale).max(0.0))
    }

    fn node_now(&self, now: Time) -> Time {
        now - self.lag
    }

    /// The current connection was welcomed at `now`.
    pub(super) fn welcomed(&mut self, now: Time, w: &Welcome, out: &mut Vec<Out>) {
        if self.nodes.is_empty() {
            // The nodes' clock starts here at the welcome's trace time.
            self.lag = now - w.trace_now;
            let cfg = slice_config(w);
            self.nodes = self
                .infos
                .iter()
                .map(|i| SimNode {
                    engine: NodeEngine::new(
                        EmulatedNodeSpec {
                            id: i.local,
                            speed: i.speed,
                            capacity: i.capacity,
                            memory_kb: i.memory_kb,
                            disk_mb: i.disk_mb,
                        },
                        cfg,
                    )
                    .expect("the harness's nodes are valid"),
                    queued: VecDeque::new(),
                    running: 0,
                    armed: None,
                })
                .collect();
        }
        let node_now = self.node_now(now);
        // Welcomed again: every part is reported in the rejoin and runs on
        // until the answer says whether this manager holds it, beside
        // whatever the manager dispatches to its new node ids meanwhile.
        for wired in self.wired.values_mut() {
            wired.pending = true;
        }
        self.machine.connected(self.instant(now), w, node_now);
        self.drain(now, None, out);
    }

    /// The connection attempt failed (no manager there, or a refusal).
    pub(super) fn connect_failed(&mut self, now: Time, why: String, out: &mut Vec<Out>) {
        self.machine.connect_failed(self.instant(now), why);
        self.drain(now, None, out);
    }

    /// The process noticed its link lost (a reset, or its idle timeout).
    pub(super) fn link_lost(&mut self, now: Time, why: String, out: &mut Vec<Out>) {
        self.machine.link_lost(self.instant(now), why);
        self.drain(now, None, out);
    }

    /// Whether the process has been welcomed once (the first connection
    /// is not retried: a process whose first attempt fails exits).
    pub(super) fn ever_welcomed(&self) -> bool {
        !self.nodes.is_empty()
    }

    /// Handles one frame from the manager at `now`.
    pub(super) fn on_msg(&mut self, now: Time, msg: ManagerMsg, out: &mut Vec<Out>) {
        let at = self.instant(now);
        match msg {
            // One dispatch at a time, as the machine takes a batch, so each
            // placement is matched with its dispatch (its exclusivity).
            ManagerMsg::Dispatches(ds) => {
                for d in ds {
                    let tag = (d.part, d.exclusive);
                    self.machine.frame(at, ManagerMsg::Dispatch(d));
                    self.drain(now, Some(tag), out);
                }
            }
            ManagerMsg::Dispatch(d) => {
                let tag = (d.part, d.exclusive);
                self.machine.frame(at, ManagerMsg::Dispatch(d));
                self.drain(now, Some(tag), out);
            }
            msg => {
                if matches!(msg, ManagerMsg::RejoinAnswer { .. }) {
                    for wired in self.wired.values_mut() {
                        wired.pending = false;
                    }
                }
                self.machine.frame(at, msg);
                self.drain(now, None, out);
            }
        }
    }

    /// The link machine's timer fired at `now`.
    pub(super) fn on_link_timer(&mut self, now: Time, out: &mut Vec<Out>) {
        // Within a microsecond: trace time and instants round differently.
        let at = self.instant(now) + Duration::from_micros(1);
        if let Some(t) = self.link_armed.filter(|&t| t <= at) {
            self.link_armed = None;
            self.machine.handle_timeout(t);
            self.drain(now, None, out);
        }
    }

    /// The engine of `node`'s timer fired at `now` (ignored if re-armed).
    pub(super) fn on_timer(&mut self, now: Time, node: usize, out: &mut Vec<Out>) {
        if let Some((_, due)) = self.nodes[node].armed.filter(|a| a.0 == now) {
            self.nodes[node].armed = None;
            self.drive_at(now, due.max(self.node_now(now)), node, out);
            self.drain(now, None, out);
        }
    }

    /// A slice of `node` ended at `now`.
    pub(super) fn on_burned(
        &mut self,
        now: Time,
        node: usize,
        slice: Slice,
        burned: u64,
        out: &mut Vec<Out>,
    ) {
        let node_now = self.node_now(now);
        let n = &mut self.nodes[node];
        n.running -= 1;
        n.engine.on_burned(slice, burned, node_now);
        self.drive(now, node, out);
        self.drain(now, None, out);
    }

    /// Carries out the machine's actions (what `node::link::serve` does),
    /// `tag` the dispatch a placement now is of.
    fn drain(&mut self, now: Time, mut tag: Option<(PartId, bool)>, out: &mut Vec<Out>) {
        let node_now = self.node_now(now);
        while let Some(a) = self.machine.poll_action() {
            match a {
                Action::Send(m) => out.push(Out::Send(m)),
                Action::Place { node, spec } => {
                    let (part, exclusive) = tag.take().unwrap_or((
                        PartId {
                            job: spec.job_id,
                            index: u32::MAX,
                        },
                        false,
                    ));
                    let n = node as usize;
                    let local = spec.part_id;
                    let ev = match self.nodes[n].engine.place(spec, node_now) {
                        Ok(()) => {
                            // A space-shared policy's part has its node to
                            // itself. Not counted: a part awaiting the
                            // rejoin's answer, which the new manager does
                            // not know of (it runs on for that round trip).
                            let shared = self
                                .wired
                                .values()
                                .any(|w| w.node == n && !w.pending && (w.exclusive || exclusive));
                            if shared {
                                out.push(Out::OverCapacity(format!(
                                    "node {n}: part {}/{} placed beside another where one is exclusive",
                                    part.job, part.index
                                )));
                            }
                            self.wired.insert(
                                local,
                                Wired {
                                    part,
                                    node: n,
                                    exclusive,
                                    pending: false,
                                },
                            );
                            out.push(Out::Placed { part, node: n });
                            NodeEvent::Placed {
                                part_id: local,
                                at: node_now,
                            }
                        }
                        Err(error) => NodeEvent::Refused {
                            part_id: local,
                            error,
                        },
                    };
                    self.machine.node_event(node, ev);
                    self.drive(now, n, out);
                }
                Action::Withdraw { node, local } => {
                    let n = node as usize;
                    let burned = self.nodes[n].engine.withdraw(local, node_now);
                    if burned.is_some() {
                        self.wired.remove(&local);
                    }
                    self.machine.withdrawn(local, burned, node_now);
                    self.drive(now, n, out);
                }
                Action::Drop { node, local } => {
                    let n = node as usize;
                    if self.nodes[n].engine.withdraw(local, node_now).is_some() {
                        self.wired.remove(&local);
                    }
                    self.drive(now, n, out);
                }
                Action::Histograms { last } => {
                    if last && !self.wired.is_empty() {
                        let mut left: Vec<PartId> = self.wired.values().map(|w| w.part).collect();
                        left.sort_unstable();
                        out.push(Out::Leftover(left));
                    }
                    out.push(Out::Send(NodeMsg::Histograms {
                        last,
                        histograms: Vec::new(),
                    }));
                }
                Action::Disconnect => out.push(Out::Disconnect),
                Action::Connect => out.push(Out::Connect(self.machine.register())),
                Action::Log(_) => {}
                Action::NodeGivenUp { node } => out.push(Out::Unexpected(format!(
                    "node {node} given up alone, but no node of the harness goes silent alone"
                ))),
                Action::Exit(r) => out.push(Out::Exit(r)),
            }
        }
        let want = self.machine.poll_timeout();
        if want != self.link_armed {
            self.link_armed = want;
            if let Some(t) = want {
                let at = t.duration_since(self.base).as_secs_f64() / self.time_scale;
                out.push(Out::LinkTimer { at: at.max(now) });
            }
        }
    }

    /// What `actor::NodeActor::drive_at` does: the engine's due work, its
    /// slices to executors, its events to the link machine, its timer
    /// re-armed.
    fn drive(&mut self, now: Time, node: usize, out: &mut Vec<Out>) {
        self.drive_at(now, self.node_now(now), node, out);
    }

    /// [`Self::drive`] at `node_now` on the nodes' clock.
    fn drive_at(&mut self, now: Time, node_now: Time, node: usize, out: &mut Vec<Out>) {
        let lag = self.lag;
        let n = &mut self.nodes[node];
        n.engine.handle_timeout(node_now);
        while let Some(s) = n.engine.poll_slice(node_now) {
            n.queued.push_back(s);
        }
        while n.running < n.engine.max_running() {
            let Some(slice) = n.queued.pop_front() else {
                break;
            };
            n.running += 1;
            let burned = slice.ns + (self.overshoot)();
            out.push(Out::Burn {
                node,
                slice,
                burned,
                at: now + burned as f64 * 1e-9 / self.time_scale,
            });
        }
        let total: f64 = n.engine.shares().iter().map(|s| s.1).sum();
        if total > 1.0 + 1e-9 {
            out.push(Out::OverCapacity(format!(
                "node {node}: shares add up to {total} > 1"
            )));
        }
        while let Some(ev) = n.engine.poll_event() {
            if let NodeEvent::Completed(c) = &ev {
                if let Some(w) = self.wired.remove(&c.part_id) {
                    out.push(Out::Completed { part: w.part });
                }
            }
            self.machine.node_event(node as u32, ev);
        }
        let want = n
            .engine
            .poll_timeout()
            .map(|t| t.max(node_now))
            .map(|t| ((t + lag).max(now), t));
        if want != n.armed {
            n.armed = want;
            if let Some((at, _)) = want {
                out.push(Out::Timer { node, at });
            }
        }
    }
}
