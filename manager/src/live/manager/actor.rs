//! The manager actor: owns the admission core and the trace clock, feeds
//! it node, client and timer events and forwards what it returns; the
//! workload replay, histograms, the run journal and the live view
//! snapshot.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, VecDeque};

use rustc_hash::FxHashMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use anyhow::Result;
use common::job::JobId;
use common::metrics::JobRecord;
use common::protocol::{
    ClientMsg, ClientReply, ManagerMsg, NodeMsg, NodeProcess, NodeStatus, PartStatus,
    RecentDecision, Welcome,
};
use common::time::Time;
use common::workload::WorkloadJob;
use hdrhistogram::Histogram;
use net::{self, TraceClock};
use tokio::sync::{mpsc, oneshot};

use common::admission::{LinkId, ManagerCore, Output};

use crate::live::journal;

use super::config::*;
use super::messages::*;

pub(super) struct LinkInfo {
    pub(super) tx: mpsc::UnboundedSender<ManagerMsg>,
    pub(super) host: String,
    pub(super) pid: u32,
    pub(super) nodes: usize,
    pub(super) alive: bool,
    /// Its place in the order of registration (links are never removed):
    /// the results list node processes in it, as the journal does.
    pub(super) registered: usize,
}

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
    pub(super) core: ManagerCore,
    pub(super) clock: Option<TraceClock>,
    pub(super) cfg: LiveConfig,
    pub(super) links: FxHashMap<LinkId, LinkInfo>,
    pub(super) jobs: VecDeque<WorkloadJob>,
    pub(super) total_jobs: usize,
    pub(super) submitted: usize,
    pub(super) decided: usize,
    pub(super) finished: usize,
    pub(super) started_replay: bool,
    /// Clock time of the replay start (see the module header).
    pub(super) offset: Time,
    pub(super) ending: bool,
    pub(super) hists: BTreeMap<String, Histogram<u64>>,
    pub(super) node_hists: Vec<NodeHistogram>,
    /// Where each link's last histogram interval ended (s since start).
    pub(super) hist_marks: HashMap<LinkId, f64>,
    /// When the manager started (histogram interval times count from it).
    pub(super) born: Instant,
    pub(super) hist_pending: usize,
    pub(super) warnings: Vec<String>,
    /// Warnings already in the journal.
    pub(super) warnings_journaled: usize,
    /// Journal entries of the current burst, not yet handed over.
    pub(super) journal_buf: Vec<journal::Entry>,
    /// The journal's clock for the entries of this turn (a burst of
    /// requests or node frames and its flush), read once for all of them;
    /// cleared when the turn's flush hands them over.
    pub(super) turn_t: Option<f64>,
    /// Node frames and journal entries waiting for a client's answer to
    /// leave first.
    pub(super) handover: Rc<RefCell<Handover>>,
    pub(super) done: Option<oneshot::Sender<()>>,
    pub(super) out: Vec<Output>,
    pub(super) ping_sent: HashMap<u64, Instant>,
    pub(super) nonce: u64,
    pub(super) registered_nodes: usize,
    pub(super) replay_started: Option<Instant>,
    pub(super) ended: Option<Instant>,
    pub(super) bar: Option<indicatif::ProgressBar>,
    /// Clients waiting for the decision on a job they submitted.
    pub(super) pending: FxHashMap<common::job::JobId, (mpsc::UnboundedSender<ClientReply>, u64)>,
    /// Ids given to client-submitted jobs (far above any trace's).
    pub(super) next_client_job: common::job::JobId,
    pub(super) recent: VecDeque<RecentDecision>,
}

impl ManagerActor {
    /// Appends `job`'s record as it stands to the run journal, if any (the
    /// writer thread serializes and writes it).
    /// The entries of one burst are handed over together by [`Self::flush`].
    pub(super) fn journal(
        &mut self,
        job: JobId,
        entry: impl FnOnce(f64, JobRecord) -> journal::Entry,
    ) {
        let Some(t) = self.journal_t() else { return };
        if let Some(r) = self.core.record(job) {
            let e = entry(t, r.clone());
            self.journal_buf.push(e);
        }
    }

    /// The journal's clock for this turn's entries (None: no journal).
    pub(super) fn journal_t(&mut self) -> Option<f64> {
        let j = self.cfg.journal.as_ref()?;
        Some(*self.turn_t.get_or_insert_with(|| j.t()))
    }

    /// Journals the end of `job`. One that completed after its `decided`
    /// entry is written as its id and finish (the rest of its final record
    /// is the decided one: only the finish changes in between); others,
    /// and any whose decision is not journaled yet (`whole`), with the
    /// whole record.
    fn journal_finished(&mut self, job: JobId, whole: bool) {
        let Some(t) = self.journal_t() else { return };
        let Some(r) = self.core.record(job) else {
            return;
        };
        let e = match r.finish {
            Some(finish) if !whole && r.accepted && !r.lost => journal::Entry::Finished {
                t,
                id: Some(job),
                finish: Some(finish),
                record: None,
            },
            _ => journal::Entry::Finished {
                t,
                id: None,
                finish: None,
                record: Some(Box::new(r.clone())),
            },
        };
        self.journal_buf.push(e);
    }

    /// Journals a submission, unless the policy decided it at once: its
    /// `Decided` entry, in `self.out` since `mark`, follows in the same
    /// hand-over and carries the same record.
    pub(super) fn journal_submitted(&mut self, job: JobId, mark: usize) {
        let decided = self.out[mark..]
            .iter()
            .any(|o| matches!(o, Output::Decided { job: j, .. } if *j == job));
        if !decided {
            self.journal(job, |t, record| journal::Entry::Submitted { t, record });
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

    pub(super) fn record(&mut self, name: &str, micros: f64) {
        if let Some(h) = self.hists.get_mut(name) {
            let _ = h.record(micros.max(0.0).round() as u64);
        }
    }

    pub(super) fn now(&self) -> Time {
        self.clock.map_or(0.0, |c| c.now())
    }

    /// Forwards the core's outputs.
    pub(super) fn flush(&mut self) {
        // Answer waiting clients before dispatching to nodes: both go out
        // at once, but the client's answer should not queue behind the
        // dispatches on this thread.
        let mut outs = std::mem::take(&mut self.out);
        outs.sort_by_key(|o| matches!(o, Output::Send { .. }));
        let mut sends = Vec::new();
        let mut answered_client = false;
        // One instant for the decisions of this flush (they were made in
        // one turn), read when the first is answered.
        let mut decided_at = None;
        for o in outs.drain(..) {
            match o {
                Output::Send { link, msg } => {
                    if let Some(l) = self.links.get(&link).filter(|l| l.alive) {
                        sends.push((l.tx.clone(), msg));
                    }
                }
                Output::Decided { job, decision } => {
                    self.journal(job, |t, record| journal::Entry::Decided { t, record });
                    self.decided += 1;
                    let at = *decided_at.get_or_insert_with(|| self.now());
                    if let Some((tx, token)) = self.pending.remove(&job) {
                        answered_client = true;
                        let _ = tx.send(ClientReply::Decided {
                            token,
                            job,
                            at,
                            decision: decision.clone(),
                        });
                    }
                    if self.recent.len() == 20 {
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
                        Some(journal::Entry::Decided { record, .. }) if record.id == job);
                    if whole {
                        self.journal_buf.pop();
                    }
                    self.journal_finished(job, whole);
                    self.finished += 1;
                }
            }
        }
        // Keep the buffer's capacity for the next burst.
        self.out = outs;
        let next = match &self.cfg.journal {
            Some(j) if !self.journal_buf.is_empty() => j.recycled(),
            _ => Vec::new(),
        };
        let entries = std::mem::replace(&mut self.journal_buf, next);
        self.turn_t = None;
        self.hand_over(sends, entries, answered_client);
        if let Some(b) = &self.bar {
            b.set_position(self.finished as u64);
            b.set_message(format!(
                "submitted {} decided {} queued {} nodes {}",
                self.submitted,
                self.decided,
                self.core.queued(),
                self.core.live_nodes()
            ));
        }
    }

    pub(super) fn maybe_start(&mut self, ctx: &mut Context<Self>) {
        if self.started_replay || self.registered_nodes < self.cfg.expect_nodes {
            return;
        }
        self.started_replay = true;
        self.replay_started = Some(Instant::now());
        self.offset = self.now();
        // (faults) The fault injector times its faults from here.
        if let Some(tx) = &self.cfg.replay_started {
            let _ = tx.send((Instant::now(), self.offset));
        }
        if let Some(j) = &self.cfg.journal {
            j.send(journal::Entry::Replay {
                t: j.t(),
                offset: self.offset,
            });
        }
        if self.cfg.progress {
            let b = indicatif::ProgressBar::new(self.total_jobs as u64);
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
            eprintln!("replay started: {} jobs", self.total_jobs);
            let started = Instant::now();
            ctx.run_interval(every, move |a, _| {
                if !a.ending {
                    eprintln!(
                        "progress {:>6.1}s: finished {}/{} submitted {} decided {} queued {} nodes {}",
                        started.elapsed().as_secs_f64(),
                        a.finished,
                        a.total_jobs,
                        a.submitted,
                        a.decided,
                        a.core.queued(),
                        a.core.live_nodes()
                    );
                }
            });
        }
        self.schedule_next(ctx);
    }

    pub(super) fn schedule_next(&mut self, ctx: &mut Context<Self>) {
        let Some(clock) = self.clock else { return };
        let Some(next) = self.jobs.front() else {
            self.check_end(ctx);
            return;
        };
        let at = clock.instant_of(self.offset + next.spec.details.submit_time);
        let wait = at.saturating_duration_since(Instant::now());
        ctx.run_later(wait, |a, ctx| a.submit_due(ctx));
    }

    pub(super) fn submit_due(&mut self, ctx: &mut Context<Self>) {
        let clock = self.clock.expect("clock set before replay");
        while let Some(j) = self.jobs.front() {
            let due = clock.instant_of(self.offset + j.spec.details.submit_time);
            if due > Instant::now() {
                break;
            }
            let mut j = self.jobs.pop_front().expect("peeked");
            j.spec.details.submit_time += self.offset;
            let id = j.spec.id;
            let t0 = Instant::now();
            let now = clock.now();
            let mark = self.out.len();
            let submitted = self.core.submit(now, j, &mut self.out);
            let t1 = Instant::now();
            // Journaled after the timing: the policy's time is its own.
            if let Err(e) = submitted {
                self.warnings.push(format!("job {id}: {e}"));
                self.finished += 1;
            } else {
                self.journal_submitted(id, mark);
            }
            self.record("policy_compute_us", (t1 - t0).as_secs_f64() * 1e6);
            self.record(
                "submit_to_decision_us",
                (t1.saturating_duration_since(due)).as_secs_f64() * 1e6,
            );
            self.submitted += 1;
            self.flush();
        }
        self.schedule_next(ctx);
    }

    pub(super) fn check_end(&mut self, ctx: &mut Context<Self>) {
        if self.ending
            || self.cfg.serve
            || !self.started_replay
            || !self.jobs.is_empty()
            || self.core.open_jobs() > 0
        {
            return;
        }
        self.begin_end(ctx);
    }

    pub(super) fn begin_end(&mut self, ctx: &mut Context<Self>) {
        if self.ending {
            return;
        }
        self.ending = true;
        self.ended = Some(Instant::now());
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
        self.hist_pending = 0;
        for l in self.links.values().filter(|l| l.alive) {
            let _ = l.tx.send(ManagerMsg::SendHistograms);
            self.hist_pending += 1;
        }
        let timeout = self.cfg.histogram_timeout;
        ctx.run_later(timeout, |a, ctx| {
            if a.hist_pending > 0 {
                a.warnings.push(format!(
                    "{} node process(es) did not hand over histograms within {:?}",
                    a.hist_pending, a.cfg.histogram_timeout
                ));
            }
            a.finish(ctx);
        });
        if self.hist_pending == 0 {
            self.finish(ctx);
        }
    }

    pub(super) fn finish(&mut self, ctx: &mut Context<Self>) {
        self.publish_view();
        for l in self.links.values().filter(|l| l.alive) {
            let _ = l.tx.send(ManagerMsg::Shutdown {
                reason: "run complete".into(),
            });
        }
        if let Some(tx) = self.done.take() {
            let _ = tx.send(());
        }
        // Give the writers a moment to flush the shutdown frames.
        ctx.run_later(Duration::from_millis(200), |_, ctx| ctx.stop());
    }
}

impl Actor for ManagerActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        if self.cfg.view.is_some() {
            self.publish_view();
            ctx.run_interval(VIEW_EVERY, |a, _| a.publish_view());
        }
        let tick = Duration::from_millis(u64::from(self.cfg.heartbeat_ms).max(10));
        ctx.run_interval(tick, |a, ctx| {
            if let Some(j) = &a.cfg.journal {
                for text in a.warnings.iter().skip(a.warnings_journaled) {
                    j.send(journal::Entry::Warning {
                        t: j.t(),
                        text: text.clone(),
                    });
                }
                a.warnings_journaled = a.warnings.len();
            }
            if a.started_replay && !a.ending {
                let now = a.now();
                a.core.tick(now, &mut a.out);
                a.flush();
                a.check_end(ctx);
            }
            // Application-level round trips, one ping per link per tick.
            for (id, l) in a.links.iter().filter(|(_, l)| l.alive) {
                a.nonce += 1;
                let nonce = (*id << 32) | (a.nonce & 0xffff_ffff);
                a.ping_sent.insert(nonce, Instant::now());
                let _ = l.tx.send(ManagerMsg::Ping { nonce });
            }
        });
        let timeout = self.cfg.start_timeout;
        ctx.run_later(timeout, move |a, ctx| {
            if !a.started_replay {
                if a.registered_nodes == 0 {
                    a.warnings.push(format!("no node registered within {timeout:?}"));
                    a.begin_end(ctx);
                } else {
                    a.warnings.push(format!(
                        "only {} of {} emulated nodes registered within {timeout:?}; starting with them",
                        a.registered_nodes, a.cfg.expect_nodes
                    ));
                    a.cfg.expect_nodes = a.registered_nodes;
                    a.maybe_start(ctx);
                }
            }
        });
    }
}

impl Handler<Connected> for ManagerActor {
    type Result = Result<Welcome, String>;

    fn handle(&mut self, m: Connected, ctx: &mut Self::Context) -> Self::Result {
        if self.ending {
            return Err("the run is over".into());
        }
        if m.nodes.is_empty() {
            return Err("registered no nodes".into());
        }
        if self.clock.is_none() {
            self.clock = Some(TraceClock::new(0.0, self.cfg.time_scale));
        }
        let ids = self.core.register(m.link, &m.host, &m.nodes).map_err(|e| {
            self.warnings.push(format!("refused a node process: {e}"));
            e.to_string()
        })?;
        self.registered_nodes += ids.len();
        if let Some(j) = &self.cfg.journal {
            j.send(journal::Entry::Node {
                t: j.t(),
                host: m.host.clone(),
                nodes: ids.len(),
            });
        }
        if self.cfg.progress_lines.is_some() {
            eprintln!(
                "registered {} ({} nodes): {} of {} emulated nodes",
                m.host,
                ids.len(),
                self.registered_nodes,
                self.cfg.expect_nodes
            );
        }
        self.links.insert(
            m.link,
            LinkInfo {
                tx: m.tx.clone(),
                host: m.host,
                pid: m.pid,
                nodes: ids.len(),
                alive: true,
                registered: self.links.len(),
            },
        );
        let welcome = Welcome {
            node_ids: ids,
            time_scale: self.cfg.time_scale,
            trace_now: self.now(),
            spare_rule: self.core.spare_rule(self.cfg.policy_config.spare_rule),
            report_ms: self.cfg.report_ms,
            heartbeat_ms: self.cfg.heartbeat_ms,
            histogram_ms: self.cfg.histogram_ms,
        };
        let w = welcome.clone();
        // Queued here, before any dispatch this actor may send the link.
        let _ = m.tx.send(ManagerMsg::Welcome(welcome));
        ctx.run_later(Duration::ZERO, |a, ctx| a.maybe_start(ctx));
        Ok(w)
    }
}

impl Handler<FromNode> for ManagerActor {
    type Result = ();

    fn handle(&mut self, m: FromNode, ctx: &mut Self::Context) {
        let host = self
            .links
            .get(&m.link)
            .map_or_else(String::new, |l| l.host.clone());
        // A burst of frames read together is handled together: one flush
        // (one hand-over of dispatches, replies and journal entries) for
        // all of it.
        let now = self.now();
        self.turn_t = None;
        for msg in m.msgs {
            self.node_msg(m.link, &host, msg, now, ctx);
        }
        self.flush();
        self.check_end(ctx);
    }
}

impl ManagerActor {
    fn node_msg(
        &mut self,
        link: LinkId,
        host: &str,
        msg: NodeMsg,
        now: Time,
        ctx: &mut Context<Self>,
    ) {
        let scale = self.cfg.time_scale;
        let m = FromNodeOne { link, msg };
        let res = match m.msg {
            NodeMsg::Heartbeat { .. } | NodeMsg::Register { .. } => Ok(()),
            NodeMsg::Progress { at, parts } => {
                self.record("report_latency_us", (now - at) * scale * 1e6);
                self.core.progress(m.link, at, &parts)
            }
            NodeMsg::Reports { reports } => reports.iter().try_for_each(|r| {
                self.record("report_latency_us", (now - r.at) * scale * 1e6);
                self.core.progress(m.link, r.at, &r.parts)
            }),
            NodeMsg::Started {
                part,
                at: _,
                dispatched_at,
            } => {
                if let Some(t) = self.journal_t() {
                    self.journal_buf.push(journal::Entry::Started {
                        t,
                        part: part.index,
                        id: Some(part.job),
                        record: None,
                    });
                }
                // Measured on the manager's clock, from sending the
                // dispatch to receiving the node's start: the node's own
                // clock is mapped from the welcome and off by the one-way
                // latency, which is the very thing to measure here.
                self.record("dispatch_to_start_us", (now - dispatched_at) * scale * 1e6);
                Ok(())
            }
            NodeMsg::Completed { part, at, .. } => {
                self.core.completed(now, m.link, part, at, &mut self.out)
            }
            NodeMsg::Refused { part, reason } => {
                self.warnings.push(format!(
                    "{host} refused part {}/{}: {reason}",
                    part.job, part.index
                ));
                self.core.refused(now, m.link, part, &reason, &mut self.out)
            }
            NodeMsg::Withdrawn {
                part, cpu_seconds, ..
            } => {
                tracing::info!(
                    "{host} withdrew cancelled part {}/{} after {cpu_seconds:.3} CPU s",
                    part.job,
                    part.index
                );
                self.core.withdrawn(m.link, part)
            }
            NodeMsg::Histograms { last, histograms } => {
                for (name, bytes) in histograms {
                    match hdrhistogram::serialization::Deserializer::new()
                        .deserialize::<u64, _>(&mut std::io::Cursor::new(&bytes))
                    {
                        Ok(h) => {
                            let end = self.born.elapsed().as_secs_f64();
                            let start = self.hist_marks.get(&m.link).copied().unwrap_or(0.0);
                            self.node_hists.push(NodeHistogram {
                                host: host.to_string(),
                                name,
                                hist: h,
                                start_s: start,
                                end_s: end,
                            });
                        }
                        Err(e) => self
                            .warnings
                            .push(format!("{host}: histogram {name} unreadable: {e:?}")),
                    }
                }
                let end = self.born.elapsed().as_secs_f64();
                self.hist_marks.insert(m.link, end);
                if self.ending && self.hist_pending > 0 && last {
                    self.hist_pending -= 1;
                    if self.hist_pending == 0 {
                        self.finish(ctx);
                    }
                }
                Ok(())
            }
            NodeMsg::Pong { nonce } => {
                if let Some(t) = self.ping_sent.remove(&nonce) {
                    self.record("quic_rtt_us", t.elapsed().as_secs_f64() * 1e6);
                }
                Ok(())
            }
            NodeMsg::Goodbye { reason } => {
                self.warnings.push(format!("{host} left: {reason}"));
                Ok(())
            }
            NodeMsg::Rejoin(r) => {
                self.rejoin(m.link, host, r);
                Ok(())
            }
        };
        if let Err(e) = res {
            // Core errors name the node process and link themselves.
            tracing::warn!("{e}");
            self.warnings.push(e.to_string());
        }
    }
}

/// One message of a [`FromNode`] burst.
struct FromNodeOne {
    link: LinkId,
    msg: NodeMsg,
}

impl Handler<LinkClosed> for ManagerActor {
    type Result = ();

    fn handle(&mut self, m: LinkClosed, ctx: &mut Self::Context) {
        let Some(l) = self.links.get_mut(&m.link) else {
            return;
        };
        if !l.alive {
            return;
        }
        l.alive = false;
        let host = l.host.clone();
        if self.ending {
            if self.hist_pending > 0 {
                self.hist_pending -= 1;
                if self.hist_pending == 0 {
                    self.finish(ctx);
                }
            }
            return;
        }
        // (faults) A loss the fault injector caused names the fault.
        let mut reason = m.reason.clone();
        if let Some(notes) = &self.cfg.fault_notes {
            let mut notes = notes.lock().unwrap_or_else(|e| e.into_inner());
            let label = host.split(' ').next().unwrap_or_default();
            if let Some(k) = notes.iter().position(|(l, _)| l == label) {
                let (_, fault) = notes.remove(k);
                reason = format!("{reason}, after {fault}");
            }
        }
        self.warnings.push(format!(
            "lost node process {host} (link {}): {reason}",
            m.link
        ));
        let now = self.now();
        self.core.link_lost(now, m.link, &reason, &mut self.out);
        self.flush();
        self.check_end(ctx);
    }
}

impl ManagerActor {
    /// One client request; a submission is pushed on `submitted` (job id,
    /// token), and its answer leaves with the caller's flush.
    pub(super) fn client(
        &mut self,
        reply: &mpsc::UnboundedSender<ClientReply>,
        msg: ClientMsg,
        now: Time,
        submitted: &mut Vec<(JobId, u64)>,
    ) {
        match msg {
            ClientMsg::Submit { token, job, actual } => {
                let mut job: common::job::JobSpec = job.into();
                if self.ending {
                    let _ = reply.send(ClientReply::Error {
                        token,
                        message: "the run is over".into(),
                    });
                    return;
                }
                self.next_client_job += 1;
                let id = self.next_client_job;
                job.id = id;
                job.details.submit_time = now;
                let actual = actual.unwrap_or(job.details.runtime_estimate);
                self.pending.insert(id, (reply.clone(), token));
                let t0 = Instant::now();
                let mark = self.out.len();
                let r = self.core.submit(
                    now,
                    WorkloadJob {
                        spec: job,
                        actual_runtime: actual,
                    },
                    &mut self.out,
                );
                self.record("policy_compute_us", t0.elapsed().as_secs_f64() * 1e6);
                self.total_jobs += 1;
                self.submitted += 1;
                if let Err(e) = r {
                    self.pending.remove(&id);
                    let _ = reply.send(ClientReply::Error {
                        token,
                        message: e.to_string(),
                    });
                    return;
                }
                self.journal_submitted(id, mark);
                submitted.push((id, token));
            }
            ClientMsg::Quote { token, job } => {
                let mut job: common::job::JobSpec = job.into();
                if let Err(e) = job.validate() {
                    let _ = reply.send(ClientReply::Error {
                        token,
                        message: e.to_string(),
                    });
                    return;
                }
                job.details.submit_time = now;
                let (quotes, answer) = self.core.quote(now, &job);
                let _ = reply.send(ClientReply::Quoted {
                    token,
                    policy: self.core.policy_name().to_string(),
                    quotes,
                    answer,
                });
            }
            ClientMsg::Echo { token } => {
                let _ = reply.send(ClientReply::Echo { token });
            }
            ClientMsg::Latency { token } => {
                let mut ser = hdrhistogram::serialization::V2Serializer::new();
                let mut histograms = Vec::new();
                for name in MANAGER_HISTOGRAMS {
                    let mut bytes = Vec::new();
                    if let Some(h) = self.hists.get(*name) {
                        if hdrhistogram::serialization::Serializer::serialize(
                            &mut ser, h, &mut bytes,
                        )
                        .is_ok()
                        {
                            histograms.push((name.to_string(), bytes));
                        }
                    }
                }
                let _ = reply.send(ClientReply::Latency { token, histograms });
            }
            ClientMsg::Status { token } => {
                let policy = self.core.policy_name().to_string();
                let counts = (
                    self.submitted as u64,
                    self.core.open_jobs() as u64,
                    self.core.queued() as u64,
                );
                let (view, ids) = self.core.snapshot(now);
                let nodes: Vec<(u32, Vec<PartStatus>, f64)> = view
                    .iter()
                    .zip(ids)
                    .map(|(st, &id)| {
                        let parts = st
                            .parts
                            .iter()
                            .map(|p| PartStatus {
                                job: p.job,
                                cpu_done: p.cpu_done,
                                est_cpu: p.est_cpu,
                                deadline: p.deadline,
                                required: p.share_input(now).required(),
                            })
                            .collect();
                        (id, parts, st.required_share(now).max(0.0))
                    })
                    .collect();
                let nodes = nodes
                    .into_iter()
                    .map(|(id, parts, load)| NodeStatus {
                        id,
                        host: self.core.host_of(id).to_string(),
                        parts,
                        load,
                    })
                    .collect();
                let mut processes: Vec<NodeProcess> = self
                    .links
                    .values()
                    .filter(|l| l.alive)
                    .map(|l| NodeProcess {
                        host: l.host.clone(),
                        pid: l.pid,
                        nodes: l.nodes as u32,
                    })
                    .collect();
                processes.sort_by(|a, b| a.host.cmp(&b.host));
                let _ = reply.send(ClientReply::Status {
                    token,
                    at: now,
                    policy,
                    nodes,
                    recent: self.recent.iter().cloned().collect(),
                    counts,
                    manager: crate::live::procstat::own_usage(),
                    processes,
                });
            }
        }
    }
}

impl Handler<FromClient> for ManagerActor {
    type Result = ();

    fn handle(&mut self, m: FromClient, ctx: &mut Self::Context) {
        // A burst of requests read together is decided together, at the
        // instant it was taken up (every job of it has that submit time),
        // and its answers, dispatches and journal entries leave in one
        // flush. One instant lets the core reuse the busy nodes' loads
        // from one decision to the next (see common::busy_index).
        let now = self.now();
        self.turn_t = None;
        let mut submitted = Vec::new();
        for msg in m.msgs {
            self.client(&m.reply, msg, now, &mut submitted);
        }
        self.flush();
        // Queue policies answer "queued" for what they did not decide yet.
        if self.core.queues() {
            for (id, token) in submitted {
                if self.pending.contains_key(&id) {
                    let _ = m.reply.send(ClientReply::Queued { token, job: id });
                }
            }
        }
        self.check_end(ctx);
    }
}

impl Handler<Abort> for ManagerActor {
    type Result = ();

    fn handle(&mut self, m: Abort, ctx: &mut Self::Context) {
        self.warnings.push(format!("run stopped early: {}", m.0));
        let now = self.now();
        let links: Vec<LinkId> = self.links.keys().copied().collect();
        for l in links {
            self.core.link_lost(now, l, &m.0, &mut self.out);
        }
        self.flush();
        self.jobs.clear();
        self.begin_end(ctx);
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
        let wall = match (self.replay_started, self.ended) {
            (Some(a), Some(b)) => (b - a).as_secs_f64(),
            _ => 0.0,
        };
        let dup = self.core.duplicate_completions();
        if dup > 0 {
            self.warnings.push(format!(
                "{dup} duplicate part completion(s) from node processes ignored"
            ));
        }
        let off = self.offset;
        let mut records: Vec<_> = self.core.records().cloned().collect();
        records.sort_by_key(|r| r.id);
        for r in &mut records {
            r.submit -= off;
            r.decided_at -= off;
            r.start = r.start.map(|t| t - off);
            r.finish = r.finish.map(|t| t - off);
        }
        let parts = self
            .core
            .part_records()
            .iter()
            .map(|p| common::metrics::PartRecord {
                start: p.start - off,
                finish: p.finish - off,
                ..*p
            })
            .collect();
        LiveOutcomeParts(LiveOutcome {
            records,
            parts,
            replay_offset: off,
            histograms: std::mem::take(&mut self.hists),
            node_histograms: std::mem::take(&mut self.node_hists),
            node_processes: {
                let mut links: Vec<&LinkInfo> = self.links.values().collect();
                links.sort_by_key(|l| l.registered);
                links.iter().map(|l| (l.host.clone(), l.nodes)).collect()
            },
            warnings: std::mem::take(&mut self.warnings),
            wall_seconds: wall,
        })
    }
}

/// How often the manager publishes its state for the live view.
pub(super) const VIEW_EVERY: Duration = Duration::from_millis(250);

impl ManagerActor {
    /// Publishes a snapshot for the live view (`--http`): counters, the
    /// node view, recent decisions and latency percentiles. A copy of
    /// what the actor holds; the HTTP thread serialises it.
    pub(super) fn publish_view(&mut self) {
        let Some(view) = self.cfg.view.clone() else {
            return;
        };
        use crate::live::liveview as lv;
        let now = self.now();
        let progress = lv::Progress {
            total: self.total_jobs,
            submitted: self.submitted,
            decided: self.decided,
            finished: self.finished,
            queued: self.core.queued(),
            open: self.core.open_jobs(),
            registered_nodes: self.registered_nodes,
            expected_nodes: self.cfg.expect_nodes,
            started: self.started_replay,
            done: self.ending,
        };
        let policy = self.core.policy_name().to_string();
        let (states, ids) = self.core.snapshot(now);
        let pairs: Vec<(u32, lv::NodeView)> = states
            .iter()
            .zip(ids)
            .map(|(st, &id)| {
                let parts = st
                    .parts
                    .iter()
                    .map(|p| lv::PartView {
                        job: p.job,
                        share: p.share_input(now).required(),
                        cpu_done: p.cpu_done,
                        est_cpu: p.est_cpu,
                        deadline: p.deadline,
                    })
                    .collect();
                (
                    id,
                    lv::NodeView {
                        id,
                        host: String::new(),
                        load: st.required_share(now).max(0.0),
                        parts,
                    },
                )
            })
            .collect();
        let mut nodes: Vec<lv::NodeView> = pairs
            .into_iter()
            .map(|(id, mut n)| {
                n.host = self.core.host_of(id).to_string();
                n
            })
            .collect();
        nodes.sort_by_key(|n| n.id);
        let mut processes: Vec<lv::ProcessView> = self
            .links
            .values()
            .map(|l| lv::ProcessView {
                host: l.host.clone(),
                nodes: l.nodes,
                alive: l.alive,
            })
            .collect();
        processes.sort_by(|a, b| a.host.cmp(&b.host));
        view.publish(lv::Snapshot {
            seq: 0,
            policy,
            trace_time: now,
            wall_seconds: self
                .replay_started
                .map_or(0.0, |t| t.elapsed().as_secs_f64()),
            progress,
            nodes,
            processes,
            recent: self
                .recent
                .iter()
                .map(|r| lv::DecisionView::of(r.job, r.at, &r.decision))
                .collect(),
            latency_us: self
                .hists
                .iter()
                .map(|(k, h)| (k.clone(), lv::Latency::of(h)))
                .collect(),
            warnings: self.warnings.clone(),
        });
    }
}
