//! The nodes of a node process that send nothing now (a crash or hang of
//! one node: [`crate::nodefault`]), as the link reports them: listed (by
//! the manager's ids) in a `Silent` frame before each heartbeat, and in a
//! rejoin as what they are, crashed or held, and since when.

use std::time::Instant;

use common::protocol::DownNode;

/// A node that sends nothing now.
#[derive(Debug, Clone, Copy)]
struct Silent {
    /// Its local index.
    node: u32,
    /// Crashed (its parts dropped), else held still.
    crashed: bool,
    /// Since when it sends nothing.
    since: Instant,
}

/// The silent nodes, in local order.
#[derive(Debug, Clone, Default)]
pub(super) struct SilentNodes(Vec<Silent>);

impl SilentNodes {
    /// Exactly `nodes` (local indices) are silent as of `now`: those new
    /// to the list are so since `now`, held unless [`Self::crashed`] says.
    pub(super) fn set(&mut self, now: Instant, nodes: Vec<u32>) {
        self.0.retain(|s| nodes.contains(&s.node));
        for k in nodes {
            if !self.0.iter().any(|s| s.node == k) {
                self.add(now, k, false);
            }
        }
    }

    /// Node `node` crashed at `now` (silent since then, or since it was
    /// held).
    pub(super) fn crashed(&mut self, now: Instant, node: u32) {
        match self.0.iter_mut().find(|s| s.node == node) {
            Some(s) => s.crashed = true,
            None => self.add(now, node, true),
        }
    }

    fn add(&mut self, since: Instant, node: u32, crashed: bool) {
        self.0.push(Silent {
            node,
            crashed,
            since,
        });
        self.0.sort_by_key(|s| s.node);
    }

    /// Whether none is silent.
    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Their ids as the manager gave them (`ids`, in local order).
    pub(super) fn wire(&self, ids: &[u32]) -> Vec<u32> {
        self.0
            .iter()
            .filter_map(|s| ids.get(s.node as usize).copied())
            .collect()
    }

    /// What a rejoin at `now` says of them.
    pub(super) fn down(&self, now: Instant) -> Vec<DownNode> {
        self.0
            .iter()
            .map(|s| DownNode {
                node: s.node,
                crashed: s.crashed,
                silent_s: now.saturating_duration_since(s.since).as_secs_f64(),
            })
            .collect()
    }
}
