//! The manager actor: carries messages and timers to and from the live
//! run's core ([`LiveCore`], which decides everything). It turns link,
//! client and timer messages into core events with the time read from the
//! trace clock, and carries out the actions the core returns: frames to
//! the links' writers, answers to clients, journal hand-overs, timers,
//! the progress display and the live view.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use common::admission::LinkId;
use common::protocol::{ClientMsg, ClientReply, ManagerMsg};
use net::TraceClock;
use rustc_hash::FxHashMap;
use tokio::sync::{mpsc, oneshot};

use crate::live::journal;

use super::config::*;
use super::core::{Action, ClientId, Event, LiveCore, Now, Phase, Timer, When};
use super::messages::*;

/// Frames for node links and journal entries from a burst that answered a
/// client, delivered just after the answer has left (see
/// [`ManagerActor::hand_over`]).
#[derive(Default)]
pub(super) struct Handover {
    sends: Vec<(mpsc::UnboundedSender<ManagerMsg>, ManagerMsg)>,
    journal: Vec<journal::Entry>,
    scheduled: bool,
}

impl Handover {
    fn deliver(
        sends: Vec<(mpsc::UnboundedSender<ManagerMsg>, ManagerMsg)>,
        entries: Vec<journal::Entry>,
        journal: Option<&journal::Journal>,
    ) {
        for (tx, msg) in sends {
            let _ = tx.send(msg);
        }
        if let Some(j) = journal {
            j.send_all(entries);
        }
    }
}

pub(super) struct ManagerActor {
    pub(super) core: LiveCore,
    /// Starts when the first node process registers.
    pub(super) clock: Option<TraceClock>,
    pub(super) cfg: LiveConfig,
    /// Each registered link's writer queue.
    pub(super) links: FxHashMap<LinkId, mpsc::UnboundedSender<ManagerMsg>>,
    /// Each client connection's answer queue.
    pub(super) clients: FxHashMap<ClientId, mpsc::UnboundedSender<ClientReply>>,
    /// When the manager started (the core's wall axis).
    pub(super) born: Instant,
    /// Node frames and journal entries waiting for a client's answer to
    /// leave first.
    pub(super) handover: Rc<RefCell<Handover>>,
    pub(super) done: Option<oneshot::Sender<()>>,
    pub(super) bar: Option<indicatif::ProgressBar>,
    /// While a registration is handled: `Some`, and the "replay started"
    /// line its event gave, printed after the "registered" line (the
    /// registration starts the replay, so it comes first in the log).
    pub(super) held_line: Option<Option<String>>,
    /// Posts requests to the external scheduler's transport (the `batsim`
    /// policy); its replies come back as [`SchedulerReplied`].
    pub(super) scheduler: Option<crate::batsim::Poster>,
}

impl ManagerActor {
    /// The time now on the core's axes.
    fn now(&self) -> Now {
        Now {
            trace: self.clock.map_or(0.0, |c| c.now()),
            wall: self.born.elapsed().as_secs_f64(),
            journal: self.cfg.journal.as_ref().map_or(0.0, |j| j.t()),
        }
    }

    /// Feeds one event to the core and carries out what it says.
    fn step(&mut self, ctx: &mut Context<Self>, event: Event) -> Option<String> {
        let now = self.now();
        self.core.handle(now, event);
        self.execute(ctx)
    }

    /// Carries out the core's actions; returns a refused registration's
    /// reason, if one was.
    fn execute(&mut self, ctx: &mut Context<Self>) -> Option<String> {
        let mut sends = Vec::new();
        let mut entries: Vec<journal::Entry> = Vec::new();
        let mut answered_client = false;
        let mut refused = None;
        let mut replied: Vec<ClientId> = Vec::new();
        while let Some(a) = self.core.poll_action() {
            match a {
                Action::Send { link, msg } => {
                    if let Some(tx) = self.links.get(&link) {
                        sends.push((tx.clone(), msg));
                    }
                }
                Action::Reply { client, reply } => {
                    if let Some(tx) = self.clients.get(&client) {
                        answered_client = true;
                        let _ = tx.send(reply);
                        if replied.last() != Some(&client) {
                            replied.push(client);
                        }
                    }
                }
                Action::Noted {
                    client,
                    token,
                    entries,
                    text,
                } => self.noted(client, token, entries, text),
                Action::Refused { link, reason } => {
                    self.links.remove(&link);
                    refused = Some(reason);
                }
                Action::Journal(v) => {
                    if entries.is_empty() {
                        entries = v;
                    } else {
                        entries.extend(v);
                    }
                    if let Some(j) = &self.cfg.journal {
                        self.core.journal_buffer(j.recycled());
                    }
                }
                Action::Arm { timer, when } => {
                    let wait = match (when, self.clock) {
                        (When::After(d), _) => d,
                        (When::Trace(at), Some(c)) => {
                            c.instant_of(at).saturating_duration_since(Instant::now())
                        }
                        (When::Trace(_), None) => Duration::ZERO,
                    };
                    ctx.run_later(wait, move |a, ctx| a.fire(ctx, timer));
                }
                Action::SchedulerRequest(request) => {
                    // Posted to the transport's thread: the actor goes on
                    // while the scheduler thinks. A transport that is gone
                    // already delivered the failure that ended it.
                    if let Some(p) = &self.scheduler {
                        p.post(request);
                    }
                }
                Action::ReplayStarted { offset } => self.replay_started(ctx, offset),
                Action::Finish => {
                    self.publish_view();
                    if let Some(tx) = self.done.take() {
                        let _ = tx.send(());
                    }
                    // Give the writers a moment to flush the shutdown frames.
                    ctx.run_later(Duration::from_millis(200), |_, ctx| ctx.stop());
                }
            }
        }
        // A client answered its last decision is let go: its connection's
        // writer ends when no sender is left, and the connection with it.
        for client in replied {
            if !self.core.waiting(client) {
                self.clients.remove(&client);
            }
        }
        self.hand_over(sends, entries, answered_client);
        if let Some(b) = &self.bar {
            if self.core.ending() {
                b.finish_and_clear();
                self.bar = None;
            } else {
                let (_, submitted, decided, finished) = self.core.counts();
                b.set_position(finished as u64);
                b.set_message(format!(
                    "submitted {submitted} decided {decided} queued {} nodes {}",
                    self.core.core.queued(),
                    self.core.core.live_nodes()
                ));
            }
        }
        refused
    }

    /// A timer the core armed fired.
    fn fire(&mut self, ctx: &mut Context<Self>, timer: Timer) {
        if timer != Timer::Replay {
            self.step(ctx, Event::Timer(timer));
            return;
        }
        // The due jobs one event each, so each submission's lateness is
        // measured; the core re-arms the timer once none is due.
        loop {
            let now = self.now();
            let due = self.core.next_due().filter(|&t| t <= now.trace);
            self.core.handle(now, Event::Timer(Timer::Replay));
            if let (Some(due), Some(clock)) = (due, self.clock) {
                let late = Instant::now().saturating_duration_since(clock.instant_of(due));
                self.core
                    .measured("submit_to_decision_us", late.as_secs_f64() * 1e6);
            }
            self.execute(ctx);
            if !self.core.replay_due(now.trace) {
                break;
            }
        }
    }

    /// Hands node frames to their links' writers and journal entries to
    /// the journal's thread. Each hand-over may wake another thread, which
    /// on a busy host can take the core from this one; when the burst
    /// answered a client, that answer goes first: the hand-over waits for
    /// the next turn of this thread's scheduler, after the answer's writer
    /// and the connection driver have put it on the wire. Later bursts join
    /// a waiting hand-over, so frames to a link keep their order.
    fn hand_over(
        &mut self,
        sends: Vec<(mpsc::UnboundedSender<ManagerMsg>, ManagerMsg)>,
        entries: Vec<journal::Entry>,
        answered_client: bool,
    ) {
        if sends.is_empty() && entries.is_empty() {
            return;
        }
        let mut h = self.handover.borrow_mut();
        if !answered_client && !h.scheduled {
            drop(h);
            Handover::deliver(sends, entries, self.cfg.journal.as_ref());
            return;
        }
        h.sends.extend(sends);
        h.journal.extend(entries);
        if !h.scheduled {
            h.scheduled = true;
            let shared = self.handover.clone();
            let journal = self.cfg.journal.clone();
            actix::spawn(async move {
                // Queued behind the answer's writer task; the yield puts
                // this behind the connection driver that writer woke.
                tokio::task::yield_now().await;
                let (sends, entries) = {
                    let mut h = shared.borrow_mut();
                    h.scheduled = false;
                    (std::mem::take(&mut h.sends), std::mem::take(&mut h.journal))
                };
                Handover::deliver(sends, entries, journal.as_ref());
            });
        }
    }

    /// The replay started: tell the fault injector, start the progress
    /// display.
    fn replay_started(&mut self, ctx: &mut Context<Self>, offset: f64) {
        // (faults) The fault injector times its faults from here.
        if let Some(tx) = &self.cfg.replay_started {
            let _ = tx.send((Instant::now(), offset));
        }
        let (total, ..) = self.core.counts();
        if self.cfg.progress {
            let b = indicatif::ProgressBar::new(total as u64);
            b.set_style(
                indicatif::ProgressStyle::with_template(
                    "{elapsed_precise} [{bar:30}] {pos}/{len} jobs over  {msg}",
                )
                .expect("valid template")
                .progress_chars("=> "),
            );
            self.bar = Some(b);
        }
        if let Some(every) = self.cfg.progress_lines {
            let line = format!("replay started: {total} jobs");
            match &mut self.held_line {
                Some(held) => *held = Some(line),
                None => eprintln!("{line}"),
            }
            let started = Instant::now();
            ctx.run_interval(every, move |a, _| {
                if !a.core.ending() {
                    let (total, submitted, decided, finished) = a.core.counts();
                    eprintln!(
                        "progress {:>6.1}s: finished {finished}/{total} submitted {submitted} decided {decided} queued {} nodes {}",
                        started.elapsed().as_secs_f64(),
                        a.core.core.queued(),
                        a.core.core.live_nodes()
                    );
                }
            });
        }
    }

    /// Publishes the core's snapshot for the live view (`--http`); the
    /// HTTP thread serialises it.
    pub(super) fn publish_view(&mut self) {
        let Some(view) = self.cfg.view.clone() else {
            return;
        };
        let now = self.now();
        view.publish(self.core.view(now));
    }
}

impl Actor for ManagerActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        if self.cfg.view.is_some() {
            self.publish_view();
            ctx.run_interval(VIEW_EVERY, |a, _| a.publish_view());
        }
        // The start timeout and the first tick.
        self.execute(ctx);
    }
}

impl Handler<Connected> for ManagerActor {
    type Result = Result<(), String>;

    fn handle(&mut self, m: Connected, ctx: &mut Self::Context) -> Self::Result {
        if self.clock.is_none() && !self.core.ending() && !m.nodes.is_empty() {
            self.clock = Some(TraceClock::new(0.0, self.cfg.time_scale));
        }
        self.links.insert(m.link, m.tx);
        let host = m.host.clone();
        let n = m.nodes.len();
        // Before the event: the last registration awaited starts the run.
        let awaited = self.core.phase() == Phase::Waiting;
        let event = Event::Connected {
            link: m.link,
            host: m.host,
            pid: m.pid,
            nodes: m.nodes,
        };
        self.held_line = Some(None);
        let refused = self.step(ctx, event);
        let held = self.held_line.take().flatten();
        if let Some(reason) = refused {
            if let Some(line) = held {
                eprintln!("{line}");
            }
            return Err(reason);
        }
        if self.cfg.progress_lines.is_some() {
            let (registered, expected) = self.core.nodes();
            if awaited {
                eprintln!(
                    "registered {host} ({n} nodes): {registered} of {expected} emulated nodes"
                );
            } else {
                // A process back after its loss, or one more: the nodes
                // registered over the run would count the lost ones too.
                eprintln!(
                    "registered {host} ({n} nodes) during the run: {} emulated nodes live",
                    self.core.core.live_nodes()
                );
            }
        }
        if let Some(line) = held {
            eprintln!("{line}");
        }
        Ok(())
    }
}

impl Handler<FromNode> for ManagerActor {
    type Result = ();

    fn handle(&mut self, m: FromNode, ctx: &mut Self::Context) {
        // A burst of frames read together is handled together: one
        // hand-over of dispatches, replies and journal entries for all.
        self.step(
            ctx,
            Event::FromNode {
                link: m.link,
                msgs: m.msgs,
            },
        );
    }
}

impl Handler<LinkClosed> for ManagerActor {
    type Result = ();

    fn handle(&mut self, m: LinkClosed, ctx: &mut Self::Context) {
        // The core names the fault that caused it, if the injector said.
        self.step(
            ctx,
            Event::LinkClosed {
                link: m.link,
                reason: m.reason,
            },
        );
    }
}

impl Handler<FromClient> for ManagerActor {
    type Result = ();

    fn handle(&mut self, m: FromClient, ctx: &mut Self::Context) {
        // A burst of requests read together is decided together, at the
        // instant it was taken up (every job of it has that submit time),
        // and its answers, dispatches and journal entries leave in one
        // hand-over. One instant lets the core reuse the busy nodes' loads
        // from one decision to the next (see common::busy_index).
        // The client's answer queue is held while the burst is handled and
        // then for as long as the client waits for a decision (the core
        // says), no longer: the connection's writer ends when no sender
        // is left, and the connection with it.
        let client = m.client;
        self.clients.insert(client, m.reply);
        let now = self.now();
        for msg in m.msgs {
            let event = match msg {
                ClientMsg::Status { token, query } => Event::Status {
                    client,
                    token,
                    query,
                    manager: crate::live::procstat::own_usage(),
                },
                msg => Event::Client { client, msg },
            };
            self.core.handle(now, event);
        }
        self.core.handle(now, Event::ClientBurstEnd { client });
        self.execute(ctx);
        if !self.core.waiting(client) {
            self.clients.remove(&client);
        }
    }
}

impl ManagerActor {
    /// A fault report taken: its entries go to the journal at once, and
    /// the answer once the journal has written them (see
    /// [`Action::Noted`]). Without a journal it is answered at once.
    fn noted(
        &mut self,
        client: ClientId,
        token: u64,
        entries: Vec<journal::Entry>,
        text: Option<String>,
    ) {
        if let Some(text) = text {
            eprintln!("{text}");
        }
        let Some(tx) = self.clients.get(&client).cloned() else {
            return;
        };
        let reply = ClientReply::Noted { token };
        match &self.cfg.journal {
            Some(j) => {
                j.send_all(entries);
                let written = j.written();
                actix::spawn(async move {
                    // A journal that failed never tells: no answer, so
                    // the injector tries the report again later.
                    if written.await.is_ok() {
                        let _ = tx.send(reply);
                    }
                });
            }
            None => {
                let _ = tx.send(reply);
            }
        }
    }
}

impl Handler<Abort> for ManagerActor {
    type Result = ();

    fn handle(&mut self, m: Abort, ctx: &mut Self::Context) {
        self.step(ctx, Event::Abort { reason: m.0 });
    }
}

/// The external scheduler's reply, forwarded from its transport.
#[derive(Message)]
#[rtype(result = "()")]
pub(super) struct SchedulerReplied(pub(super) crate::batsim::LiveReply);

impl Handler<SchedulerReplied> for ManagerActor {
    type Result = ();

    fn handle(&mut self, m: SchedulerReplied, ctx: &mut Self::Context) {
        let (reply, waited) = m.0;
        self.step(ctx, Event::SchedulerReplied { reply, waited });
    }
}

/// Results are read out of the actor at the end.
#[derive(Message)]
#[rtype(result = "LiveOutcomeParts")]
pub(super) struct TakeOutcome;

pub(super) struct LiveOutcomeParts(pub(super) LiveOutcome);

impl<A, M> actix::dev::MessageResponse<A, M> for LiveOutcomeParts
where
    A: Actor,
    M: Message<Result = LiveOutcomeParts>,
{
    fn handle(self, _: &mut A::Context, tx: Option<actix::dev::OneshotSender<M::Result>>) {
        if let Some(tx) = tx {
            let _ = tx.send(self);
        }
    }
}

impl Handler<TakeOutcome> for ManagerActor {
    type Result = LiveOutcomeParts;

    fn handle(&mut self, _: TakeOutcome, _: &mut Self::Context) -> LiveOutcomeParts {
        LiveOutcomeParts(self.core.outcome())
    }
}

/// How often the manager publishes its state for the live view.
pub(super) const VIEW_EVERY: Duration = Duration::from_millis(250);
