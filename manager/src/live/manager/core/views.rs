//! What the core shows of itself: a client's status answer, the live
//! view's snapshot and the run's outcome. Copies of its state, built with
//! the time given.

use common::protocol::{
    self, ClientReply, NodeProcess, NodeStatus, NodeSummary, PartStatus, ProcessUsage, StatusQuery,
    StatusSummary,
};
use common::time::Time;

use crate::live::liveview as lv;
use crate::live::manager::config::LiveOutcome;

use super::{LinkInfo, LiveCore, Now, Phase};

impl LiveCore {
    /// A status answer at trace time `now`: the summary, and the page of
    /// nodes `query` asks for. Only the page's nodes are copied out, so
    /// the answer's size follows the page, not the cluster.
    pub(super) fn status(
        &mut self,
        now: Time,
        token: u64,
        query: StatusQuery,
        manager: ProcessUsage,
    ) -> ClientReply {
        let policy = self.core.policy_name().to_string();
        let (view, ids) = self.core.snapshot(now);
        let mut nodes = NodeSummary::default();
        // (id, position in the view) of the nodes the page's filter keeps.
        let mut kept: Vec<(u32, usize)> = Vec::new();
        for (k, (st, &id)) in view.iter().zip(ids).enumerate() {
            nodes.add(st.required_share(now).max(0.0), st.parts.len());
            if query.nodes.is_some_and(|q| !q.busy || !st.parts.is_empty()) {
                kept.push((id, k));
            }
        }
        // Pages run in id order; the view's order changes as nodes are
        // lost and rejoin.
        kept.sort_unstable();
        let window = query.nodes.map(|q| q.window(kept.len()));
        let shown: Vec<(u32, Vec<PartStatus>, f64)> = window
            .map_or(&[][..], |w| &kept[w.range()])
            .iter()
            .map(|&(id, k)| {
                let st = &view[k];
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
        let shown: Vec<NodeStatus> = shown
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
        let summary = StatusSummary {
            nodes,
            processes: processes.len(),
            registered: self.registered_nodes,
            expected: self.cfg.expect_nodes,
            submitted: self.submitted as u64,
            decided: self.decided as u64,
            finished: self.finished as u64,
            open: self.core.open_jobs() as u64,
            queued: self.core.queued() as u64,
        };
        let n_shown = shown.len();
        let answer = ClientReply::Status {
            token,
            at: now,
            policy,
            summary: Box::new(summary),
            page: window,
            nodes: shown,
            recent: self.recent.iter().cloned().collect(),
            manager,
            processes,
        };
        // A page holds at most MAX_PER_PAGE nodes, which fits a frame
        // unless they hold thousands of parts between them (or tens of
        // thousands of node processes are connected): say so instead of
        // failing to send.
        let len = protocol::payload_len(&answer);
        if len > protocol::MAX_FRAME {
            return ClientReply::Error {
                token,
                message: format!(
                    "the status with a page of {n_shown} nodes takes {len} bytes, above the {} a \
                     frame holds; ask for fewer nodes a page (or the summary alone)",
                    protocol::MAX_FRAME
                ),
            };
        }
        answer
    }

    /// A snapshot for the live view (`--http`): counters, the node view,
    /// recent decisions and latency percentiles.
    pub(in crate::live::manager) fn view(&mut self, now: Now) -> lv::Snapshot {
        let t = now.trace;
        let progress = lv::Progress {
            total: self.total_jobs,
            submitted: self.submitted,
            decided: self.decided,
            finished: self.finished,
            queued: self.core.queued(),
            open: self.core.open_jobs(),
            registered_nodes: self.registered_nodes,
            expected_nodes: self.cfg.expect_nodes,
            started: self.phase != Phase::Waiting,
            done: self.ending(),
        };
        let policy = self.core.policy_name().to_string();
        let (states, ids) = self.core.snapshot(t);
        let pairs: Vec<(u32, lv::NodeView)> = states
            .iter()
            .zip(ids)
            .map(|(st, &id)| {
                let parts = st
                    .parts
                    .iter()
                    .map(|p| lv::PartRow {
                        job: p.job,
                        share: p.share_input(t).required(),
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
                        load: st.required_share(t).max(0.0),
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
        lv::Snapshot {
            seq: 0,
            policy,
            trace_time: t,
            wall_seconds: self.replay_wall.map_or(0.0, |w| now.wall - w),
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
        }
    }

    /// The run's outcome: records and parts on the workload's axis,
    /// histograms, node processes, warnings. Takes the histograms and
    /// warnings out.
    pub(in crate::live::manager) fn outcome(&mut self) -> LiveOutcome {
        let wall = match (self.replay_wall, self.end_wall) {
            (Some(a), Some(b)) => b - a,
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
        if let Some(r) = self.resumed.as_mut() {
            records.append(&mut r.done);
        }
        records.sort_by_key(|r| r.id);
        // Details a late fault report completed (core/faults.rs).
        for (job, detail) in std::mem::take(&mut self.faults.amended) {
            if let Ok(k) = records.binary_search_by_key(&job, |r| r.id) {
                records[k].detail = detail;
            }
        }
        for r in &mut records {
            r.submit -= off;
            r.decided_at -= off;
            r.start = r.start.map(|t| t - off);
            r.finish = r.finish.map(|t| t - off);
        }
        // In arrival order, as a simulated run's (ties by id).
        records.sort_by(|a, b| a.submit.total_cmp(&b.submit).then(a.id.cmp(&b.id)));
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
        let mut links: Vec<&LinkInfo> = self.links.values().collect();
        links.sort_by_key(|l| l.registered);
        LiveOutcome {
            records,
            parts,
            replay_offset: off,
            histograms: std::mem::take(&mut self.hists),
            node_histograms: std::mem::take(&mut self.node_hists),
            node_processes: links.iter().map(|l| (l.host.clone(), l.nodes)).collect(),
            warnings: std::mem::take(&mut self.warnings),
            wall_seconds: wall,
        }
    }
}
