//! The live core's dealings with node processes: registration, their
//! frames (progress, starts, completions, refusals, histograms, pongs) and
//! the loss of a link.

use common::admission::LinkId;
use common::protocol::{ManagerMsg, NodeInfo, NodeMsg, Welcome};

use crate::live::journal::Entry;

use super::{Action, LinkInfo, LiveCore, NodeHistogram, Now, Phase};

/// The most histograms one report of a node process is read for (it
/// sends three: slice overrun, tick jitter, share error).
const MAX_HISTOGRAMS: usize = 8;

impl LiveCore {
    pub(super) fn connected(
        &mut self,
        now: Now,
        link: LinkId,
        host: String,
        pid: u32,
        nodes: &[NodeInfo],
    ) {
        let refuse = |s: &mut Self, reason: String| {
            s.actions.push_back(Action::Refused { link, reason });
        };
        if self.ending() {
            return refuse(self, "the run is over".into());
        }
        if nodes.is_empty() {
            return refuse(self, "registered no nodes".into());
        }
        let joins_replay = self.phase == Phase::Replaying;
        let ids = match self.core.register(link, &host, nodes) {
            Ok(ids) => ids,
            Err(e) => {
                self.warnings.push(format!("refused a node process: {e}"));
                return refuse(self, e.to_string());
            }
        };
        self.registered_nodes += ids.len();
        if self.cfg.journal {
            self.journal_buf.push(Entry::Node {
                t: now.journal,
                host: host.clone(),
                nodes: ids.len(),
                pid: Some(pid),
            });
        }
        let n = ids.len();
        self.watch_registered(now, link, &ids, nodes);
        self.links.insert(
            link,
            LinkInfo {
                host,
                pid,
                nodes: n,
                alive: true,
                registered: self.links.len(),
            },
        );
        // The welcome first, before any dispatch to the link.
        self.actions.push_back(Action::Send {
            link,
            msg: ManagerMsg::Welcome(Welcome {
                node_ids: ids,
                time_scale: self.cfg.time_scale,
                trace_now: now.trace,
                spare_rule: self.core.spare_rule(self.cfg.spare_rule),
                report_ms: self.cfg.report_ms,
                heartbeat_ms: self.cfg.heartbeat_ms,
                histogram_ms: self.cfg.histogram_ms,
            }),
        });
        self.flush(now);
        self.maybe_start(now);
        // Nodes joining a running replay (a process restarted after a
        // loss) may be what a queued job waits for: a built-in policy's
        // scheduling pass now, not at the next tick. (An external
        // scheduler is asked on its own schedule.)
        if joins_replay && self.scheduler.is_none() {
            self.core.tick(now.trace, &mut self.out);
            self.flush(now);
        }
    }

    pub(super) fn link_closed(&mut self, now: Now, link: LinkId, reason: &str) {
        // A rejoin cut short by the loss is sent whole again on the next
        // link.
        self.rejoin_pieces.remove(&link);
        let Some(l) = self.links.get_mut(&link) else {
            return;
        };
        if !l.alive {
            return;
        }
        l.alive = false;
        let label = l.host.split(' ').next().unwrap_or_default().to_string();
        if self.ending() {
            self.collected();
            return;
        }
        // A loss the fault injector caused names the fault.
        let reason = match self.faults.take_blame(&label) {
            Some(fault) => format!("{reason}, after {fault}"),
            None => reason.to_string(),
        };
        let reason = reason.as_str();
        let host = &self.links[&link].host;
        let lost = format!("lost node process {host} (link {link}): {reason}");
        self.warnings.push(lost);
        self.last_loss_wall = Some(now.wall);
        self.core.link_lost(now.trace, link, reason, &mut self.out);
        self.flush(now);
        self.check_end(now);
    }

    pub(super) fn node_msg(&mut self, now: Now, link: LinkId, host: &str, msg: NodeMsg) {
        let scale = self.cfg.time_scale;
        let res = match msg {
            NodeMsg::Heartbeat { .. } => {
                self.heartbeat(now, link, host);
                Ok(())
            }
            NodeMsg::Silent { nodes } => {
                self.silent_frame(link, nodes);
                Ok(())
            }
            NodeMsg::Register { .. } => Ok(()),
            NodeMsg::Progress { at, parts } => {
                self.measured("report_latency_us", (now.trace - at) * scale * 1e6);
                self.core.progress(link, at, &parts)
            }
            NodeMsg::Reports { reports } => reports.iter().try_for_each(|r| {
                self.measured("report_latency_us", (now.trace - r.at) * scale * 1e6);
                self.core.progress(link, r.at, &r.parts)
            }),
            NodeMsg::RejoinPiece { running, finished } => {
                self.rejoin_piece(link, host, running, finished);
                Ok(())
            }
            NodeMsg::Rejoin(mut r) => {
                // With the parts of its leading pieces first, in order.
                if let Some(p) = self.rejoin_pieces.remove(&link) {
                    let (mut running, mut finished) = (p.running, p.finished);
                    running.append(&mut r.running);
                    finished.append(&mut r.finished);
                    (r.running, r.finished) = (running, finished);
                }
                // Its silent nodes count as silent since they went so.
                self.watch_down(now, link, &r.down);
                self.rejoin(now, link, host, r);
                Ok(())
            }
            NodeMsg::Started {
                part,
                at: _,
                dispatched_at,
            } => {
                if self.cfg.journal {
                    self.journal_buf.push(Entry::Started {
                        t: now.journal,
                        part: part.index,
                        id: Some(part.job),
                        record: None,
                    });
                }
                // Measured on the manager's clock, from sending the
                // dispatch to receiving the node's start: the node's own
                // clock is mapped from the welcome and off by the one-way
                // latency, which is the very thing to measure here.
                self.measured(
                    "dispatch_to_start_us",
                    (now.trace - dispatched_at) * scale * 1e6,
                );
                Ok(())
            }
            NodeMsg::Completed { part, at, .. } => {
                let r = self
                    .core
                    .completed(now.trace, link, part, at, &mut self.out);
                // A part's end with the job going on: a manager resuming
                // the run must know it over (the job's `finished` line
                // says the last one's).
                if r.is_ok() && self.cfg.journal && !self.core.job_over(part.job) {
                    self.journal_buf.push(Entry::Ended {
                        t: now.journal,
                        id: part.job,
                        part: part.index,
                        finish: at,
                    });
                }
                r
            }
            NodeMsg::Refused { part, reason } => {
                self.warnings.push(format!(
                    "{host} refused part {}/{}: {reason}",
                    part.job, part.index
                ));
                self.core
                    .refused(now.trace, link, part, &reason, &mut self.out)
            }
            NodeMsg::Withdrawn {
                part, cpu_seconds, ..
            } => {
                tracing::info!(
                    "{host} withdrew cancelled part {}/{} after {cpu_seconds:.3} CPU s",
                    part.job,
                    part.index
                );
                self.core.withdrawn(link, part)
            }
            NodeMsg::Histograms { last, histograms } => {
                let start = self.hist_marks.get(&link).copied().unwrap_or(0.0);
                // A node process sends three; more is not a node's doing.
                let many = histograms.len();
                if many > MAX_HISTOGRAMS {
                    self.warnings.push(format!(
                        "{host}: {many} histograms in one report, the first {MAX_HISTOGRAMS} kept"
                    ));
                }
                for (name, bytes) in histograms.into_iter().take(MAX_HISTOGRAMS) {
                    match crate::results::histograms::from_peer(&bytes) {
                        Ok(h) => self.node_hists.push(NodeHistogram {
                            host: host.to_string(),
                            name,
                            hist: h,
                            start_s: start,
                            end_s: now.wall,
                        }),
                        Err(e) => self
                            .warnings
                            .push(format!("{host}: histogram {name} unreadable: {e}")),
                    }
                }
                self.hist_marks.insert(link, now.wall);
                if last {
                    self.collected();
                }
                Ok(())
            }
            NodeMsg::Pong { nonce } => {
                if let Some(t) = self.ping_sent.remove(&nonce) {
                    self.measured("quic_rtt_us", (now.wall - t) * 1e6);
                }
                Ok(())
            }
            NodeMsg::Goodbye { reason } => {
                // The answer to our own `Shutdown` at the run's end is not
                // a warning (the run's summary is taken before it comes;
                // journaled, it made a recovered run's summary differ).
                if reason == common::protocol::GOODBYE_SHUTDOWN {
                    tracing::debug!("{host} left: {reason}");
                } else {
                    self.warnings.push(format!("{host} left: {reason}"));
                }
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
