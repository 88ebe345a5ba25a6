//! A node process for the harness: the real node engines
//! ([`node::NodeEngine`], one per emulated node) behind the same handling
//! of manager frames as `libratory-node`'s link (`node/src/link/`):
//! dispatches placed under a process-local part id and answered with
//! `Started` (or `Refused`), cancels withdrawn and answered `Withdrawn`,
//! progress gathered per node and sent as one `Reports` frame per report
//! period (flushed before a completion, as the relay does), pings answered,
//! histograms handed over, a shutdown answered with a goodbye.
//!
//! The executors are simulated: a slice of `ns` burns for `ns` of real
//! time (plus a seeded overshoot), at most `max_running` at once per node,
//! so a node never gets more processor than its capacity.

use std::collections::{HashMap, VecDeque};

use common::protocol::{self, Dispatch, ManagerMsg, NodeMsg, NodeProgress, PartId, Welcome};
use common::time::Time;
use node::{EmulatedNodeSpec, NodeEngine, NodeEvent, PartSpec, Slice, SliceConfig};

/// What a node process wants done by the harness.
pub(super) enum Out {
    /// Send this frame to the manager.
    Send(NodeMsg),
    /// A frame this process could not expect (a protocol violation).
    Unexpected(String),
    /// Wake node `node`'s engine at this trace time.
    Timer { node: usize, at: Time },
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
    /// Parts still on the process's nodes when the manager collected its
    /// histograms: every job was over then, and the cancels of a lost
    /// job's parts went out before that request on the same link.
    Leftover(Vec<PartId>),
    /// The process ends (shutdown, reject).
    Exit,
}

/// A dispatched part as the process knows it.
struct Wired {
    part: PartId,
    node: usize,
    exclusive: bool,
}

struct SimNode {
    engine: NodeEngine,
    /// Slices issued, waiting for a free executor lane.
    queued: VecDeque<Slice>,
    running: usize,
    /// The engine timer armed (trace s).
    armed: Option<Time>,
}

/// One incarnation of a node process, after its welcome.
pub(super) struct NodeProcess {
    nodes: Vec<SimNode>,
    parts: HashMap<u64, Wired>,
    next_part: u64,
    gathered: Vec<Option<NodeProgress>>,
    time_scale: f64,
    /// Extra ns a burn overshoots by, drawn per slice by the harness.
    pub(super) overshoot: Box<dyn FnMut() -> u64>,
}

/// The slicing knobs of the harness: coarse (a 1 s period of real time),
/// so that a part runs in a few slices and a run costs few events; the
/// engine's accounting is the same at any period.
pub(super) fn slice_config(w: &Welcome) -> SliceConfig {
    let tick = std::time::Duration::from_millis(500);
    SliceConfig {
        time_scale: w.time_scale,
        period: std::time::Duration::from_secs(1),
        tick,
        spare_rule: w.spare_rule,
        min_slice: std::time::Duration::from_millis(5),
        max_slice: std::time::Duration::from_secs(1),
        backlog_periods: 2.0,
        progress_ticks: ((f64::from(w.report_ms) / tick.as_secs_f64() / 1000.0).round() as u32)
            .max(1),
        share_events: false,
        inline_slice: std::time::Duration::ZERO,
    }
}

impl NodeProcess {
    /// The process once welcomed, with `infos` its nodes.
    pub(super) fn new(
        infos: &[protocol::NodeInfo],
        w: &Welcome,
        overshoot: Box<dyn FnMut() -> u64>,
    ) -> NodeProcess {
        let cfg = slice_config(w);
        let nodes = infos
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
            .collect::<Vec<_>>();
        NodeProcess {
            gathered: vec![None; nodes.len()],
            nodes,
            parts: HashMap::new(),
            next_part: 0,
            time_scale: w.time_scale,
            overshoot,
        }
    }

    /// Handles one frame from the manager at `now`.
    pub(super) fn on_msg(&mut self, now: Time, msg: ManagerMsg, out: &mut Vec<Out>) {
        match msg {
            ManagerMsg::Dispatch(d) => self.place(now, d, out),
            ManagerMsg::Dispatches(ds) => ds.into_iter().for_each(|d| self.place(now, d, out)),
            ManagerMsg::Cancel { part } => {
                let held = self
                    .parts
                    .iter()
                    .find(|(_, w)| w.part == part)
                    .map(|(&local, w)| (local, w.node));
                // Not held: it completed or was refused; nothing burns.
                if let Some((local, node)) = held {
                    if let Some(ns) = self.nodes[node].engine.withdraw(local, now) {
                        self.parts.remove(&local);
                        out.push(Out::Send(NodeMsg::Withdrawn {
                            part,
                            at: now,
                            cpu_seconds: ns as f64 * 1e-9,
                        }));
                    }
                    self.drive(now, node, out);
                }
            }
            ManagerMsg::Ping { nonce } => out.push(Out::Send(NodeMsg::Pong { nonce })),
            ManagerMsg::SendHistograms => {
                if !self.parts.is_empty() {
                    let mut left: Vec<PartId> = self.parts.values().map(|w| w.part).collect();
                    left.sort_unstable();
                    out.push(Out::Leftover(left));
                }
                out.push(Out::Send(NodeMsg::Histograms {
                    last: true,
                    histograms: Vec::new(),
                }));
            }
            ManagerMsg::Shutdown { .. } => {
                out.push(Out::Send(NodeMsg::Goodbye {
                    reason: "shutdown requested".into(),
                }));
                out.push(Out::Exit);
            }
            ManagerMsg::Reject { .. } | ManagerMsg::Welcome(_) => out.push(Out::Exit),
            // The harness's processes restart as new ones and never send a
            // rejoin.
            ManagerMsg::RejoinAnswer { .. } => out.push(Out::Unexpected(
                "a rejoin answer to a process that never rejoined".into(),
            )),
            // The harness's nodes never go silent alone.
            ManagerMsg::NodeLost { node, .. } => out.push(Out::Unexpected(format!(
                "node {node} given up, but no node of the harness goes silent alone"
            ))),
        }
    }

    fn place(&mut self, now: Time, d: Dispatch, out: &mut Vec<Out>) {
        let node = d.node as usize;
        if node >= self.nodes.len() {
            out.push(Out::Send(NodeMsg::Refused {
                part: d.part,
                reason: format!("no node {} in this process", d.node),
            }));
            return;
        }
        // A space-shared policy's part has its node to itself.
        let shared = self
            .parts
            .values()
            .any(|w| w.node == node && (w.exclusive || d.exclusive));
        if shared {
            out.push(Out::OverCapacity(format!(
                "node {node}: part {}/{} placed beside another where one is exclusive",
                d.part.job, d.part.index
            )));
        }
        self.next_part += 1;
        let local = self.next_part;
        let spec = PartSpec {
            part_id: local,
            job_id: d.part.job,
            estimate: d.estimate,
            actual: d.actual,
            deadline_abs: d.deadline,
            memory_kb: 0,
            disk_mb: 0,
            ret: d.ret,
            hard: d.hard,
        };
        match self.nodes[node].engine.place(spec, now) {
            Ok(()) => {
                self.parts.insert(
                    local,
                    Wired {
                        part: d.part,
                        node,
                        exclusive: d.exclusive,
                    },
                );
                out.push(Out::Placed { part: d.part, node });
                out.push(Out::Send(NodeMsg::Started {
                    part: d.part,
                    at: now,
                    dispatched_at: d.dispatched_at,
                }));
            }
            Err(e) => out.push(Out::Send(NodeMsg::Refused {
                part: d.part,
                reason: e.to_string(),
            })),
        }
        self.drive(now, node, out);
    }

    /// The engine of `node`'s timer fired at `at` (ignored if re-armed).
    pub(super) fn on_timer(&mut self, now: Time, node: usize, out: &mut Vec<Out>) {
        if self.nodes[node].armed == Some(now) {
            self.nodes[node].armed = None;
            self.drive(now, node, out);
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
        let n = &mut self.nodes[node];
        n.running -= 1;
        n.engine.on_burned(slice, burned, now);
        self.drive(now, node, out);
    }

    /// The relay's period: every node's latest progress in one frame.
    pub(super) fn flush(&mut self, out: &mut Vec<Out>) {
        let mut reports: Vec<NodeProgress> =
            self.gathered.iter_mut().flat_map(Option::take).collect();
        if !reports.is_empty() {
            reports.sort_by(|a, b| a.at.total_cmp(&b.at));
            out.push(Out::Send(NodeMsg::Reports { reports }));
        }
    }

    /// What `actor::NodeActor::drive_at` does: the engine's due work, its
    /// slices to executors, its events out, its timer re-armed.
    fn drive(&mut self, now: Time, node: usize, out: &mut Vec<Out>) {
        let n = &mut self.nodes[node];
        n.engine.handle_timeout(now);
        while let Some(s) = n.engine.poll_slice(now) {
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
            match ev {
                NodeEvent::Completed(c) => {
                    if let Some(w) = self.parts.remove(&c.part_id) {
                        out.push(Out::Completed { part: w.part });
                        // As the relay: progress first, then the completion.
                        let mut reports: Vec<NodeProgress> =
                            self.gathered.iter_mut().flat_map(Option::take).collect();
                        if !reports.is_empty() {
                            reports.sort_by(|a, b| a.at.total_cmp(&b.at));
                            out.push(Out::Send(NodeMsg::Reports { reports }));
                        }
                        out.push(Out::Send(NodeMsg::Completed {
                            part: w.part,
                            at: c.finished_at,
                            cpu_seconds: c.burned_ns as f64 * 1e-9,
                        }));
                    }
                }
                NodeEvent::Progress { at, parts } => {
                    let wire: Vec<protocol::PartProgress> = parts
                        .iter()
                        .filter_map(|p| {
                            self.parts.get(&p.part_id).map(|w| protocol::PartProgress {
                                part: w.part,
                                node: node as u32,
                                work_done: p.work_done,
                                share: p.share,
                            })
                        })
                        .collect();
                    if !wire.is_empty() {
                        self.gathered[node] = Some(NodeProgress { at, parts: wire });
                    }
                }
                NodeEvent::Placed { .. } | NodeEvent::Refused { .. } => {}
                NodeEvent::SharesChanged { .. } => {}
            }
        }
        let n = &mut self.nodes[node];
        let want = n.engine.poll_timeout().map(|t| t.max(now));
        if want != n.armed {
            n.armed = want;
            if let Some(at) = want {
                out.push(Out::Timer { node, at });
            }
        }
    }
}
