//! What a status answer holds when a cluster is too big to list: which
//! nodes a client asks for ([`StatusQuery`], [`PageQuery`]), where that
//! page stands among the nodes ([`PageWindow`]), and every node at a
//! glance ([`NodeSummary`], [`StatusSummary`]). At 158,976 emulated nodes
//! the whole node list takes 6.2 MB, over [`super::MAX_FRAME`]; a page of
//! at most [`MAX_PER_PAGE`] nodes and a summary of fixed size fit at any
//! cluster size. The manager's `Status` answer and the live view's page
//! (`manager/src/live/nodepage.rs`) page by these same rules.

use serde::{Deserialize, Serialize};

/// Nodes per page when a query does not say.
pub const PER_PAGE: usize = 100;

/// The most nodes one page holds (a larger `per` is cut to it).
pub const MAX_PER_PAGE: usize = 1000;

/// Upper bounds of the load classes of [`NodeSummary::loads`]: a node of
/// load `l` counts in the first class whose bound is `>= l` (the last
/// class is "above 1": more promised than the node has).
pub const LOAD_CLASSES: [f64; 5] = [0.0, 0.25, 0.5, 0.75, 1.0];

/// Which page of nodes a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageQuery {
    /// 0-based page.
    pub page: usize,
    /// Nodes per page (1..=[`MAX_PER_PAGE`]; others are cut to that).
    pub per: usize,
    /// Only nodes holding parts.
    pub busy: bool,
}

impl Default for PageQuery {
    fn default() -> Self {
        PageQuery {
            page: 0,
            per: PER_PAGE,
            busy: false,
        }
    }
}

impl PageQuery {
    /// Where this page stands among `matching` nodes (those the filter
    /// keeps): a page past the end is the last one, so a query always
    /// gets a page (empty only when no node matches).
    pub fn window(self, matching: usize) -> PageWindow {
        let per = self.per.clamp(1, MAX_PER_PAGE);
        let pages = matching.div_ceil(per).max(1);
        PageWindow {
            page: self.page.min(pages - 1),
            per,
            pages,
            busy: self.busy,
            matching,
        }
    }
}

/// One page of nodes and where it stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageWindow {
    /// The page shown, 0-based (the last one when the query asked past
    /// it).
    pub page: usize,
    /// Nodes per page.
    pub per: usize,
    /// Pages in all (at least 1).
    pub pages: usize,
    /// Only nodes holding parts.
    pub busy: bool,
    /// Nodes the filter keeps.
    pub matching: usize,
}

impl PageWindow {
    /// The page's positions among the matching nodes (in id order).
    pub fn range(&self) -> std::ops::Range<usize> {
        let start = (self.page * self.per).min(self.matching);
        start..(start + self.per).min(self.matching)
    }
}

/// What a `Status` request asks for besides the summary, which every
/// answer carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct StatusQuery {
    /// This page of nodes, with their parts; `None`: the summary only.
    pub nodes: Option<PageQuery>,
}

/// Every node at a glance.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct NodeSummary {
    /// Nodes counted (live ones).
    pub total: usize,
    /// Nodes holding at least one part.
    pub busy: usize,
    /// Parts on all nodes.
    pub parts: usize,
    /// Nodes per load class ([`LOAD_CLASSES`], then above 1).
    pub loads: [usize; 6],
    /// The largest load.
    pub max_load: f64,
}

impl NodeSummary {
    /// Counts one more node, of load `load` (the sum of its parts'
    /// required shares) holding `parts` parts.
    pub fn add(&mut self, load: f64, parts: usize) {
        self.total += 1;
        if parts > 0 {
            self.busy += 1;
        }
        self.parts += parts;
        let class = LOAD_CLASSES
            .iter()
            .position(|&b| load <= b)
            .unwrap_or(LOAD_CLASSES.len());
        self.loads[class] += 1;
        self.max_load = self.max_load.max(load);
    }
}

/// The cluster and its jobs in counts: the part of a status answer whose
/// size does not grow with the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct StatusSummary {
    /// The live nodes.
    pub nodes: NodeSummary,
    /// Node processes connected now.
    pub processes: usize,
    /// Emulated nodes registered since the run started (lost ones
    /// included).
    pub registered: usize,
    /// Emulated nodes the run waits for before its workload starts.
    pub expected: usize,
    /// Jobs submitted (the workload's and clients').
    pub submitted: u64,
    /// Jobs decided.
    pub decided: u64,
    /// Jobs finished.
    pub finished: u64,
    /// Jobs submitted and not yet over.
    pub open: u64,
    /// Jobs waiting in a queue policy.
    pub queued: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_cover_every_node_once_and_clamp_past_the_end() {
        // 158,976 nodes by 50: 3,180 pages, the last of 26.
        let q = |page, per| PageQuery {
            page,
            per,
            busy: false,
        };
        let w = q(0, 50).window(158_976);
        assert_eq!((w.pages, w.range()), (3180, 0..50));
        let last = q(3179, 50).window(158_976);
        assert_eq!(last.range(), 158_950..158_976);
        // Past the end: the last page, said so by its number.
        let past = q(5000, 50).window(158_976);
        assert_eq!((past.page, past.range()), (3179, 158_950..158_976));
        // 25 nodes by 10: 0..10, 10..20, 20..25 and nothing twice.
        let seen: Vec<usize> = (0..3).flat_map(|p| q(p, 10).window(25).range()).collect();
        assert_eq!(seen, (0..25).collect::<Vec<_>>());
        // No node: one empty page. `per` out of bounds is cut to them.
        let none = q(3, 10).window(0);
        assert_eq!((none.page, none.pages, none.range()), (0, 1, 0..0));
        assert_eq!(q(0, 0).window(5).per, 1);
        assert_eq!(q(0, 1_000_000).window(5000).range(), 0..MAX_PER_PAGE);
    }

    #[test]
    fn the_summary_counts_busy_nodes_parts_and_load_classes() {
        let mut s = NodeSummary::default();
        // Idle, 0.25 (its class's bound, counted in it), 0.6, 1.0, 1.3.
        for (load, parts) in [(0.0, 0), (0.25, 1), (0.6, 2), (1.0, 1), (1.3, 3)] {
            s.add(load, parts);
        }
        assert_eq!((s.total, s.busy, s.parts), (5, 4, 7));
        assert_eq!(s.loads, [1, 1, 0, 1, 1, 1]);
        assert_eq!(s.max_load, 1.3);
    }
}
