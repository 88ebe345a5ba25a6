//! The live view's nodes, summarised and paged: a cluster of 158,976
//! emulated nodes cannot be drawn or sent whole every half second, so the
//! page gets a summary of every node (how many hold parts, how their loads
//! spread) and one page of them, chosen by the query
//! (`?page=N&per=M&busy=1`).

use serde::Serialize;

/// One part on a node.
#[derive(Debug, Clone, Serialize)]
pub struct PartRow {
    /// The job.
    pub job: u64,
    /// The share it needs now to meet its deadline (Libra's share; 0 when
    /// overdue). Nodes hand spare capacity out on top.
    pub share: f64,
    /// Estimated processor time done (s).
    pub cpu_done: f64,
    /// Estimated processor time (s).
    pub est_cpu: f64,
    /// Absolute deadline (trace s).
    pub deadline: f64,
}

/// One emulated node.
#[derive(Debug, Clone, Serialize)]
pub struct NodeView {
    /// Cluster-wide node id.
    pub id: u32,
    /// Its node process.
    pub host: String,
    /// Sum of the required shares of its parts.
    pub load: f64,
    /// Its parts.
    pub parts: Vec<PartRow>,
}

/// Nodes per page when the query does not say.
pub const PER_PAGE: usize = 100;

/// The most nodes one page holds (a larger `per` is cut to it).
pub const MAX_PER_PAGE: usize = 1000;

/// Upper bounds of the load classes of [`NodeSummary::loads`]: a node of
/// load `l` counts in the first class whose bound is `>= l` (the last
/// class is "above 1": more promised than the node has).
pub const LOAD_CLASSES: [f64; 5] = [0.0, 0.25, 0.5, 0.75, 1.0];

/// Which page of nodes a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageQuery {
    /// 0-based page.
    pub page: usize,
    /// Nodes per page (1..=[`MAX_PER_PAGE`]).
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
    /// From a URL's query string (after `?`): `page`, `per` and `busy`
    /// (`1`/`true`); other keys (the token) and values that do not parse
    /// are ignored, so a bad query shows the first page rather than
    /// nothing.
    pub fn parse(query: &str) -> PageQuery {
        let mut q = PageQuery::default();
        for kv in query.split('&') {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            match k {
                "page" => q.page = v.parse().unwrap_or(0),
                "per" => q.per = v.parse().unwrap_or(PER_PAGE).clamp(1, MAX_PER_PAGE),
                "busy" => q.busy = matches!(v, "1" | "true"),
                _ => {}
            }
        }
        q
    }
}

/// Every node at a glance.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeSummary {
    /// Nodes in the view.
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

/// One page of nodes and where it stands.
#[derive(Debug, Clone, Serialize)]
pub struct NodePage<'a> {
    /// The page shown (the last one when the query asked past it).
    pub page: usize,
    /// Nodes per page.
    pub per: usize,
    /// Pages in all (at least 1).
    pub pages: usize,
    /// Only nodes holding parts.
    pub busy: bool,
    /// Nodes the filter keeps.
    pub matching: usize,
    /// The page's nodes, by id.
    pub nodes: Vec<&'a NodeView>,
}

/// The summary of `nodes`.
pub fn summary(nodes: &[NodeView]) -> NodeSummary {
    let mut s = NodeSummary {
        total: nodes.len(),
        busy: 0,
        parts: 0,
        loads: [0; 6],
        max_load: 0.0,
    };
    for n in nodes {
        if !n.parts.is_empty() {
            s.busy += 1;
        }
        s.parts += n.parts.len();
        let class = LOAD_CLASSES
            .iter()
            .position(|&b| n.load <= b)
            .unwrap_or(LOAD_CLASSES.len());
        s.loads[class] += 1;
        s.max_load = s.max_load.max(n.load);
    }
    s
}

/// Page `q` of `nodes`.
pub fn page<'a>(nodes: &'a [NodeView], q: PageQuery) -> NodePage<'a> {
    let keep = |n: &&NodeView| !q.busy || !n.parts.is_empty();
    let matching = if q.busy {
        nodes.iter().filter(keep).count()
    } else {
        nodes.len()
    };
    let per = q.per.clamp(1, MAX_PER_PAGE);
    let pages = matching.div_ceil(per).max(1);
    let page = q.page.min(pages - 1);
    let shown = nodes
        .iter()
        .filter(keep)
        .skip(page * per)
        .take(per)
        .collect();
    NodePage {
        page,
        per,
        pages,
        busy: q.busy,
        matching,
        nodes: shown,
    }
}

#[cfg(test)]
mod tests {
    use super::PartRow;
    use super::*;

    fn node(id: u32, loads: &[f64]) -> NodeView {
        NodeView {
            id,
            host: "h-0".into(),
            load: loads.iter().sum(),
            parts: loads
                .iter()
                .map(|&l| PartRow {
                    job: u64::from(id),
                    share: l,
                    cpu_done: 0.0,
                    est_cpu: 1.0,
                    deadline: 10.0,
                })
                .collect(),
        }
    }

    #[test]
    fn queries_parse_with_defaults_and_bounds() {
        assert_eq!(PageQuery::parse(""), PageQuery::default());
        assert_eq!(
            PageQuery::parse("token=abc&page=3&per=20&busy=1"),
            PageQuery {
                page: 3,
                per: 20,
                busy: true
            }
        );
        let q = PageQuery::parse("page=x&per=0");
        assert_eq!((q.page, q.per, q.busy), (0, 1, false));
        assert_eq!(PageQuery::parse("per=1000000").per, MAX_PER_PAGE);
    }

    #[test]
    fn pages_cover_every_node_once_and_busy_keeps_the_busy_ones() {
        // 25 nodes; every third (0, 3, ..., 24: 9 nodes) holds one part of
        // load 0.6, node 24 a second of 0.7 (load 1.3).
        let mut nodes: Vec<NodeView> = (0..25)
            .map(|i| node(i, if i % 3 == 0 { &[0.6] } else { &[] }))
            .collect();
        nodes[24] = node(24, &[0.6, 0.7]);
        let s = summary(&nodes);
        assert_eq!((s.total, s.busy, s.parts), (25, 9, 10));
        // 16 idle (load 0), 8 at 0.6 (the (0.5, 0.75] class), one above 1.
        assert_eq!(s.loads, [16, 0, 0, 8, 0, 1]);
        assert!((s.max_load - 1.3).abs() < 1e-12);
        let q = |page, busy| PageQuery {
            page,
            per: 10,
            busy,
        };
        let mut seen = Vec::new();
        for p in 0..3 {
            let pg = page(&nodes, q(p, false));
            assert_eq!((pg.pages, pg.matching), (3, 25));
            seen.extend(pg.nodes.iter().map(|n| n.id));
        }
        assert_eq!(seen, (0..25).collect::<Vec<_>>());
        // Past the end: the last page.
        let last = page(&nodes, q(9, false));
        assert_eq!((last.page, last.nodes.len()), (2, 5));
        let busy = page(&nodes, q(0, true));
        assert_eq!((busy.pages, busy.matching), (1, 9));
        let ids: Vec<u32> = busy.nodes.iter().map(|n| n.id).collect();
        assert_eq!(ids, vec![0, 3, 6, 9, 12, 15, 18, 21, 24]);
        // No node at all: one empty page.
        let none = page(&[], q(0, false));
        assert_eq!((none.pages, none.nodes.len()), (1, 0));
    }

    #[test]
    fn the_state_and_nodes_endpoints_send_one_page_and_the_summary() {
        use crate::live::liveview::{route, Snapshot};
        let snap = Snapshot {
            nodes: (0..250)
                .map(|i| node(i, if i < 7 { &[0.5] } else { &[] }))
                .collect(),
            ..Snapshot::default()
        };
        let get = |path: &str| -> serde_json::Value {
            serde_json::from_str(&route(path, &snap).expect("an endpoint").0).unwrap()
        };
        let st = get("/api/state?token=t&page=2&per=100");
        assert_eq!(st["nodes"].as_array().unwrap().len(), 50);
        assert_eq!(st["nodes"][0]["id"], 200);
        assert_eq!(st["node_summary"]["total"], 250);
        assert_eq!(st["node_summary"]["busy"], 7);
        assert_eq!(st["node_page"]["pages"], 3);
        // Without a query: the first page of the default size.
        assert_eq!(
            get("/api/state")["nodes"].as_array().unwrap().len(),
            PER_PAGE
        );
        let busy = get("/api/nodes?busy=1");
        assert_eq!(busy["nodes"].as_array().unwrap().len(), 7);
        assert_eq!(busy["summary"]["parts"], 7);
    }
}
