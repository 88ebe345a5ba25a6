//! The node actor: drives one [`NodeEngine`] with the real trace clock and
//! the process's executor pool. It holds no policy: every handler feeds the
//! core an event, then `NodeActor::drive` hands due slices to executors,
//! forwards the core's events, and re-arms the one timer the core asks for.
//!
//! Messages in: [`PlacePart`] (or [`PlaceReported`]), [`GetTelemetry`],
//! [`GetStatus`], [`SetReportSink`] (from whoever feeds parts: the
//! standalone runner, the manager link), and [`SliceDone`] (from
//! executors). Out:
//! [`NodeReport`] to the report sink (completions, share changes,
//! progress). A node with no parts has no timer and no slices in flight.

use std::rc::Rc;
use std::sync::Arc;

use actix::prelude::*;
use actix::WeakAddr;
use common::Time;

use crate::core::{NodeEngine, NodeEvent, PartStanding, PlaceError, Slice};
use crate::exec::{BurnJob, ExecutorPool};
use crate::nodefault::Condition;
use crate::spec::{EmulatedNodeSpec, NodeId, PartSpec};
use crate::telemetry::NodeTelemetry;
use net::TraceClock;

/// Place a part on the node now. Refusals (no room, duplicate id, invalid
/// numbers) come back as `Err`; the node is unchanged then.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<(), PlaceError>")]
pub struct PlacePart(pub PartSpec);

/// Place parts that arrived together on the node now, answering through
/// the report sink (a [`NodeEvent::Placed`] or [`NodeEvent::Refused`]
/// report each, in order with the part's later events) rather than to the
/// sender. Send it with `do_send`: a link that feeds a node tens of
/// thousands of parts a second then needs no task and no reply channel
/// per part, and the node recomputes its shares once a burst
/// ([`NodeEngine::place_batch`]).
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct PlaceReported(pub Vec<PartSpec>);

/// Withdraw a part before its end (its job was cancelled). Answers the CPU
/// ns it had burned, or `None` if it is not on the node (it completed).
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "Option<u64>")]
pub struct WithdrawPart(pub crate::spec::NodePartId);

/// An executor finished a slice (sent by the executor pool's callback).
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct SliceDone {
    /// The slice, as the node issued it.
    pub slice: Slice,
    /// What the executor burned (ns of thread CPU time).
    pub burned_ns: u64,
}

/// A fault of this node ([`crate::nodefault`]): run at `rate` of its
/// capacity; held, it also keeps its reports until released; crashed, it
/// drops its parts and takes and reports nothing until up again.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct SetCondition(pub crate::nodefault::NodeCondition);

/// Hand over the node's telemetry histograms; with `reset`, the node then
/// forgets finished parts and restarts its histograms.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "NodeTelemetry")]
pub struct GetTelemetry {
    /// Clear after taking.
    pub reset: bool,
}

/// Ask where the node stands.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "NodeSnapshot")]
pub struct GetStatus;

/// The answer to [`GetStatus`].
#[derive(Debug, Clone, PartialEq)]
pub struct NodeSnapshot {
    /// The node.
    pub spec: EmulatedNodeSpec,
    /// Trace time of the answer.
    pub now: Time,
    /// Every part on the node.
    pub parts: Vec<PartStanding>,
}

/// Where the node sends its [`NodeReport`]s (`None`: nowhere).
#[derive(Message)]
#[rtype(result = "()")]
pub struct SetReportSink(pub Option<Recipient<NodeReport>>);

/// One event from one node, for the report sink.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct NodeReport {
    /// The node it comes from.
    pub node_id: NodeId,
    /// What happened.
    pub event: NodeEvent,
}

/// A report handler on the node's own thread, called directly: the link's
/// relay. A managed node sends two reports per part (placed, completed);
/// as actor messages each was an envelope allocated, queued and polled,
/// for a handler on the same thread anyway.
pub type LocalSink = Rc<dyn Fn(NodeReport)>;

/// Where a node's reports go.
enum Reports {
    /// Nowhere.
    None,
    /// To an actor, as messages.
    Actor(Recipient<NodeReport>),
    /// To a handler on this thread, by a call.
    Local(LocalSink),
}

impl Reports {
    fn send(&self, r: NodeReport) {
        match self {
            Reports::None => {}
            Reports::Actor(a) => a.do_send(r),
            Reports::Local(f) => f(r),
        }
    }
}

/// One emulated node. Start it through [`crate::host::NodeHost`], which
/// checks the process has executor capacity for it.
pub struct NodeActor {
    core: NodeEngine,
    clock: TraceClock,
    pool: Arc<ExecutorPool>,
    reports: Reports,
    /// The armed timer and the trace instant it is for.
    timer: Option<(SpawnHandle, Time)>,
    me: Option<WeakAddr<NodeActor>>,
    /// This node's lane in the executor pool: at most ceil(capacity) of
    /// its slices burn at once; the one queued behind waits its turn.
    lane: u64,
    /// Up, held or crashed ([`SetCondition`]).
    condition: Condition,
    /// Reports made while held, sent when released.
    held: Vec<NodeEvent>,
    /// Parts handed over with [`PlaceReported`] and not placed yet: they
    /// are placed together once the mailbox is drained ([`PlaceIncoming`]),
    /// so the bursts that queued while the node was busy cost one
    /// recompute of its shares, not one each. A node that falls behind
    /// then catches up in larger steps, rather than in ever longer runs
    /// of recomputes that hold its whole process's thread (and with it
    /// the link's heartbeats) for seconds.
    incoming: Vec<PartSpec>,
}

/// The longest run of slices a node burns on its own thread at one go
/// (`SliceConfig::inline_slice`): beyond it, it lets the process's other
/// nodes and its link (heartbeats, QUIC) run first.
const INLINE_RUN: std::time::Duration = std::time::Duration::from_millis(2);

/// Place the parts in [`NodeActor::incoming`] (sent by the actor to
/// itself).
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
struct PlaceIncoming;

impl NodeActor {
    /// A node actor around `core` (not started).
    pub fn new(
        core: NodeEngine,
        clock: TraceClock,
        pool: Arc<ExecutorPool>,
        reports: Option<Recipient<NodeReport>>,
    ) -> Self {
        let lane = pool.new_lane();
        NodeActor {
            core,
            clock,
            pool,
            reports: reports.map_or(Reports::None, Reports::Actor),
            timer: None,
            me: None,
            lane,
            condition: Condition::Up,
            held: Vec::new(),
            incoming: Vec::new(),
        }
    }

    /// A node actor whose reports go to `sink`, called on its own thread.
    pub fn with_local_sink(
        core: NodeEngine,
        clock: TraceClock,
        pool: Arc<ExecutorPool>,
        sink: LocalSink,
    ) -> Self {
        let mut a = NodeActor::new(core, clock, pool, None);
        a.reports = Reports::Local(sink);
        a
    }

    /// Sends a report, or keeps it while the node is held (a crashed node
    /// reports nothing).
    fn report(&mut self, event: NodeEvent) {
        match self.condition {
            Condition::Up => self.reports.send(NodeReport {
                node_id: self.core.spec().id,
                event,
            }),
            Condition::Held => self.held.push(event),
            Condition::Crashed => {}
        }
    }

    /// Places the parts handed over and not yet placed, reporting each
    /// (before drive(): the placement is reported ahead of whatever the
    /// part does next, a completion for a tiny part).
    fn place_incoming(&mut self, now: Time) {
        if self.incoming.is_empty() {
            return;
        }
        let parts = std::mem::take(&mut self.incoming);
        let mut events = Vec::with_capacity(parts.len());
        self.core.place_batch(parts, now, |part_id, r| {
            events.push(match r {
                Ok(()) => NodeEvent::Placed { part_id, at: now },
                Err(error) => NodeEvent::Refused { part_id, error },
            })
        });
        for event in events {
            self.report(event);
        }
    }

    /// Places the parts handed over, if any, and drives the node on: for
    /// a question that must see them.
    fn settle_incoming(&mut self, ctx: &mut Context<Self>) {
        if !self.incoming.is_empty() {
            let now = self.clock.now();
            self.place_incoming(now);
            self.drive_at(now, ctx);
        }
    }

    /// After any input: do what is due, dispatch slices, forward events,
    /// re-arm the single timer.
    fn drive(&mut self, ctx: &mut Context<Self>) {
        let now = self.clock.now();
        self.drive_at(now, ctx);
    }

    /// [`Self::drive`] with the clock read by the caller just before (a
    /// handler that read it for its own input): one read less per part.
    fn drive_at(&mut self, mut now: Time, ctx: &mut Context<Self>) {
        self.core.handle_timeout(now);
        let inline = self.core.config().inline_slice.as_nanos() as u64;
        // (On the trace clock, read after each burn here anyway.)
        let stop = now + INLINE_RUN.as_secs_f64() / self.clock.time_scale();
        // Slices burned here must not hold the process's thread: a node
        // whose bookkeeping per part takes longer than the part's time
        // (thousands of tiny parts) earns credit faster than the run
        // spends it and would never leave this loop. Past INLINE_RUN the
        // timer the core asks for below (it has credit: due at once)
        // brings it back after the process's other tasks.
        while now <= stop {
            let Some(slice) = self.core.poll_slice(now) else {
                break;
            };
            if slice.ns <= inline && self.core.in_flight() == 1 {
                // Cheaper to burn here than to hand over (see
                // `SliceConfig::inline_slice`); the node still runs one
                // slice at a time, and the thread clock measures it the
                // same way.
                let burned = crate::exec::burn(slice.ns);
                self.pool.note_burned(burned);
                now = self.clock.now();
                self.core.on_burned(slice, burned, now);
                continue;
            }
            let me = self.me.clone();
            self.pool.submit(BurnJob {
                ns: slice.ns,
                lane: self.lane,
                lane_limit: self.core.max_running(),
                done: Box::new(move |r| {
                    if let Some(addr) = me.and_then(|m| m.upgrade()) {
                        addr.do_send(SliceDone {
                            slice,
                            burned_ns: r.burned_ns,
                        });
                    }
                }),
            });
        }
        while let Some(event) = self.core.poll_event() {
            self.report(event);
        }
        let want = self.core.poll_timeout();
        match (self.timer, want) {
            (Some((_, armed)), Some(t)) if armed == t => {}
            (armed, want) => {
                if let Some((h, _)) = armed {
                    ctx.cancel_future(h);
                }
                self.timer = want.map(|t| {
                    let h = ctx.run_later(self.clock.until(t), |a, ctx| {
                        a.timer = None;
                        a.drive(ctx);
                    });
                    (h, t)
                });
            }
        }
    }
}

impl Actor for NodeActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        // A weak address: executors must not keep a stopped node alive.
        self.me = Some(ctx.address().downgrade());
    }
}

impl Handler<PlacePart> for NodeActor {
    type Result = Result<(), PlaceError>;

    fn handle(&mut self, msg: PlacePart, ctx: &mut Self::Context) -> Self::Result {
        let now = self.clock.now();
        self.place_incoming(now);
        let r = self.core.place(msg.0, now);
        self.drive_at(now, ctx);
        r
    }
}

impl Handler<PlaceReported> for NodeActor {
    type Result = ();

    fn handle(&mut self, msg: PlaceReported, ctx: &mut Self::Context) {
        if self.condition == Condition::Crashed {
            // A dead node takes nothing and says nothing: the part is lost
            // when the manager gives the node up.
            return;
        }
        if self.incoming.is_empty() {
            // Handled after every message already queued.
            ctx.notify(PlaceIncoming);
        }
        self.incoming.extend(msg.0);
    }
}

impl Handler<PlaceIncoming> for NodeActor {
    type Result = ();

    fn handle(&mut self, _: PlaceIncoming, ctx: &mut Self::Context) {
        let now = self.clock.now();
        self.place_incoming(now);
        // drive() goes on from the placement's instant: what happened
        // since (the placement, its report) took well under a microsecond.
        self.drive_at(now, ctx);
    }
}

impl Handler<WithdrawPart> for NodeActor {
    type Result = Option<u64>;

    fn handle(&mut self, msg: WithdrawPart, ctx: &mut Self::Context) -> Self::Result {
        let now = self.clock.now();
        // A part handed over before is on the node before it is withdrawn.
        self.place_incoming(now);
        let r = self.core.withdraw(msg.0, now);
        self.drive_at(now, ctx);
        r
    }
}

impl Handler<SliceDone> for NodeActor {
    type Result = ();

    fn handle(&mut self, msg: SliceDone, ctx: &mut Self::Context) {
        let now = self.clock.now();
        self.core.on_burned(msg.slice, msg.burned_ns, now);
        self.drive_at(now, ctx);
    }
}

impl Handler<SetCondition> for NodeActor {
    type Result = ();

    fn handle(&mut self, msg: SetCondition, ctx: &mut Self::Context) {
        let now = self.clock.now();
        // What was handed over before the fault met the node before it.
        self.place_incoming(now);
        let was = self.condition;
        let c = msg.0.condition;
        if c == Condition::Crashed && was != Condition::Crashed {
            // Its parts die with it: nothing of them is reported.
            let parts: Vec<_> = self.core.progress().iter().map(|p| p.part_id).collect();
            for p in parts {
                self.core.withdraw(p, now);
            }
            while self.core.poll_event().is_some() {}
            self.held.clear();
        }
        self.condition = c;
        self.core.set_rate(msg.0.rate, now);
        if c == Condition::Up && was == Condition::Held {
            for event in std::mem::take(&mut self.held) {
                self.report(event);
            }
        }
        self.drive_at(now, ctx);
    }
}

impl Handler<GetTelemetry> for NodeActor {
    type Result = MessageResult<GetTelemetry>;

    fn handle(&mut self, msg: GetTelemetry, ctx: &mut Self::Context) -> Self::Result {
        self.settle_incoming(ctx);
        let t = self.core.telemetry();
        if msg.reset {
            self.core.reset_telemetry();
        }
        MessageResult(t)
    }
}

impl Handler<GetStatus> for NodeActor {
    type Result = MessageResult<GetStatus>;

    fn handle(&mut self, _: GetStatus, ctx: &mut Self::Context) -> Self::Result {
        self.settle_incoming(ctx);
        MessageResult(NodeSnapshot {
            spec: *self.core.spec(),
            now: self.clock.now(),
            parts: self.core.progress(),
        })
    }
}

impl Handler<SetReportSink> for NodeActor {
    type Result = ();

    fn handle(&mut self, msg: SetReportSink, _: &mut Self::Context) {
        self.reports = msg.0.map_or(Reports::None, Reports::Actor);
    }
}

/// An actor that forwards [`NodeReport`]s into a channel, for code that
/// would rather `await` reports than be an actor (the standalone runner,
/// tests). Must be called inside a running actix system.
pub fn report_channel() -> (
    Recipient<NodeReport>,
    tokio::sync::mpsc::UnboundedReceiver<NodeReport>,
) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let addr = ChannelSink(tx).start();
    (addr.recipient(), rx)
}

struct ChannelSink(tokio::sync::mpsc::UnboundedSender<NodeReport>);

impl Actor for ChannelSink {
    type Context = Context<Self>;
}

impl Handler<NodeReport> for ChannelSink {
    type Result = ();

    fn handle(&mut self, msg: NodeReport, _: &mut Self::Context) {
        // The receiver going away just means nobody listens any more.
        let _ = self.0.send(msg);
    }
}
