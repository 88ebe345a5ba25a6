//! Single emulated nodes that go silent while their node process stays
//! (a crash or hang of one node: docs/faults.md). A node process's
//! heartbeat vouches for each of its nodes but those it lists in a
//! `Silent` frame just before; a node the heartbeats that came did not
//! vouch for over more than the link timeout is lost as a whole process
//! would be on heartbeat silence (a process that sends nothing at all is
//! the link's loss, `link.rs`, not its nodes'): its
//! jobs are lost with the reason (naming the fault that caused it, when
//! the injector says), their other parts cancelled, the node leaves the
//! pool and the process is told (`NodeLost`: it drops the node's parts).
//! When a heartbeat vouches for it again it is back, idle, under its old
//! id.

use std::time::Duration;

use common::admission::LinkId;
use common::node_model::NodeSpec;
use common::protocol::{DownNode, ManagerMsg, NodeInfo};
use rustc_hash::FxHashMap;

use super::{Action, LiveCore, Now};

/// The watch over single nodes (see the module docs).
pub(super) struct NodeWatch {
    /// The link timeout, real seconds.
    timeout: f64,
    links: FxHashMap<LinkId, Watched>,
}

/// One link's nodes.
struct Watched {
    infos: Vec<NodeInfo>,
    ids: Vec<u32>,
    /// When a heartbeat last vouched for each (wall s).
    heard: Vec<f64>,
    /// When the last heartbeat came (wall s).
    beat: f64,
    lost: Vec<bool>,
    /// The nodes the last `Silent` frame listed (global ids), until the
    /// heartbeat after it.
    silent: Vec<u32>,
}

impl LiveCore {
    /// Watches single nodes: one the heartbeats did not vouch for over
    /// more than `timeout` is lost (the run's `link_timeout_s`), blamed on
    /// the fault the injector reported for it (`core/faults.rs`).
    pub(in crate::live::manager) fn with_node_watch(mut self, timeout: Duration) -> LiveCore {
        self.watch = Some(NodeWatch {
            timeout: timeout.as_secs_f64(),
            links: FxHashMap::default(),
        });
        self
    }

    /// A node process registered `ids` (its `infos`, in local order).
    pub(super) fn watch_registered(
        &mut self,
        now: Now,
        link: LinkId,
        ids: &[u32],
        infos: &[NodeInfo],
    ) {
        if let Some(w) = &mut self.watch {
            w.links.insert(
                link,
                Watched {
                    infos: infos.to_vec(),
                    ids: ids.to_vec(),
                    heard: vec![now.wall; ids.len()],
                    beat: now.wall,
                    lost: vec![false; ids.len()],
                    silent: Vec::new(),
                },
            );
        }
    }

    /// A rejoining process's nodes that send nothing (`down`, a [`Rejoin`]
    /// field): each counts as unheard since it went silent, so the
    /// silent-node rule gives it up a link timeout after that, not after
    /// the rejoin.
    ///
    /// [`Rejoin`]: common::protocol::Rejoin
    pub(super) fn watch_down(&mut self, now: Now, link: LinkId, down: &[DownNode]) {
        let Some(l) = self.watch.as_mut().and_then(|w| w.links.get_mut(&link)) else {
            return;
        };
        for d in down {
            if let Some(h) = l.heard.get_mut(d.node as usize) {
                *h = h.min(now.wall - d.silent_s.max(0.0));
            }
        }
    }

    /// A `Silent` frame: these nodes are not vouched for by the next
    /// heartbeat.
    pub(super) fn silent_frame(&mut self, link: LinkId, nodes: Vec<u32>) {
        if let Some(l) = self.watch.as_mut().and_then(|w| w.links.get_mut(&link)) {
            l.silent = nodes;
        }
    }

    /// A heartbeat: every node of the link not listed silent is heard; a
    /// lost one is back.
    pub(super) fn heartbeat(&mut self, now: Now, link: LinkId, host: &str) {
        let Some(l) = self.watch.as_mut().and_then(|w| w.links.get_mut(&link)) else {
            return;
        };
        let silent = std::mem::take(&mut l.silent);
        l.beat = now.wall;
        let mut back = Vec::new();
        for k in 0..l.ids.len() {
            if silent.contains(&l.ids[k]) {
                continue;
            }
            l.heard[k] = now.wall;
            if l.lost[k] {
                l.lost[k] = false;
                let i = &l.infos[k];
                back.push(NodeSpec {
                    id: l.ids[k] as usize,
                    speed: i.speed,
                    memory_kb: i.memory_kb,
                    disk_mb: i.disk_mb,
                });
            }
        }
        for spec in back {
            let g = spec.id;
            if self.core.node_back(now.trace, spec, &mut self.out) {
                self.warnings.push(format!(
                    "node {g} of node process {host} (link {link}) back at {:.3}, idle",
                    now.trace
                ));
            }
        }
    }

    /// At each tick: loses the nodes the process's heartbeats have not
    /// vouched for over more than the timeout, on links still up. Only
    /// heartbeats that came count: a whole process gone silent (a hang, a
    /// partition) is the link's loss, not its nodes'.
    pub(super) fn watch_tick(&mut self, now: Now) {
        let Some(w) = &mut self.watch else {
            return;
        };
        if self.phase != super::Phase::Replaying {
            return;
        }
        let timeout = w.timeout;
        let mut gone: Vec<(LinkId, u32, u32)> = Vec::new();
        for (&link, l) in &mut w.links {
            if !self.links.get(&link).is_some_and(|i| i.alive) {
                continue;
            }
            for k in 0..l.ids.len() {
                if !l.lost[k] && l.beat - l.heard[k] > timeout {
                    l.lost[k] = true;
                    gone.push((link, k as u32, l.ids[k]));
                }
            }
        }
        gone.sort_unstable();
        for (link, local, g) in gone {
            let host = self.host(link).to_string();
            let label = host.split(' ').next().unwrap_or_default();
            let mut reason = format!(
                "silent for more than {:?} (no heartbeat vouched for it)",
                Duration::from_secs_f64(timeout)
            );
            if let Some(fault) = self
                .faults
                .take_blame(&super::faults::note_key(label, Some(local)))
            {
                reason = format!("{reason}, after {fault}");
            }
            if !self.core.node_lost(now.trace, g, &reason, &mut self.out) {
                continue;
            }
            self.last_loss_wall = Some(now.wall);
            self.warnings.push(format!(
                "lost node {g} of node process {host} (link {link}) at {:.3}: {reason}",
                now.trace
            ));
            self.actions.push_back(Action::Send {
                link,
                msg: ManagerMsg::NodeLost { node: g, reason },
            });
        }
        self.flush(now);
        self.check_end(now);
    }
}
