//! The live view's nodes, summarised and paged: a cluster of 158,976
//! emulated nodes cannot be drawn or sent whole every half second, so the
//! page gets a summary of every node (how many hold parts, how their loads
//! spread) and one page of them, chosen by the query
//! (`?page=N&per=M&busy=1`). The paging rules and the summary's counts
//! are `common::protocol::status`'s, which the manager's `Status` answer
//! follows too.

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

pub use common::protocol::{NodeSummary, PageQuery, LOAD_CLASSES, MAX_PER_PAGE, PER_PAGE};

/// The page a URL's query string (after `?`) asks for: `page`, `per` and
/// `busy` (`1`/`true`); other keys (the token) and values that do not
/// parse are ignored, so a bad query shows the first page rather than
/// nothing.
pub fn parse_query(query: &str) -> PageQuery {
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
    let mut s = NodeSummary::default();
    for n in nodes {
        s.add(n.load, n.parts.len());
    }
    s
}

/// Page `q` of `nodes` (the same window as the manager's status answer:
/// [`PageQuery::window`]).
pub fn page<'a>(nodes: &'a [NodeView], q: PageQuery) -> NodePage<'a> {
    let keep = |n: &&NodeView| !q.busy || !n.parts.is_empty();
    let matching = if q.busy {
        nodes.iter().filter(keep).count()
    } else {
        nodes.len()
    };
    let w = q.window(matching);
    let r = w.range();
    let shown = nodes
        .iter()
        .filter(keep)
        .skip(r.start)
        .take(r.len())
        .collect();
    NodePage {
        page: w.page,
        per: w.per,
        pages: w.pages,
        busy: w.busy,
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
        assert_eq!(parse_query(""), PageQuery::default());
        assert_eq!(
            parse_query("token=abc&page=3&per=20&busy=1"),
            PageQuery {
                page: 3,
                per: 20,
                busy: true
            }
        );
        let q = parse_query("page=x&per=0");
        assert_eq!((q.page, q.per, q.busy), (0, 1, false));
        assert_eq!(parse_query("per=1000000").per, MAX_PER_PAGE);
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
