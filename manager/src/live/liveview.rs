//! The live view of a run (`libratory run --http ADDR`): a read-only web
//! page and JSON endpoints showing the cluster while the run goes.
//!
//! The manager actor publishes a [`Snapshot`] a few times a second (a
//! cheap copy of its counters and node view, see `live.rs`); an HTTP/1
//! server (hyper, on a runtime of its own thread) answers GET requests from
//! the latest one, so requests never wait on or slow the admission path.
//! Each connection is a task with a bounded life ([`CONNECTION_LIFE`]),
//! headers must come within [`HEADER_TIMEOUT`] and fit [`MAX_HEADER_BYTES`],
//! at most [`MAX_CONNECTIONS`] are served at once, and no request body is
//! ever read: no client, with or without the token, can hold the view or
//! make the manager allocate what it declares. The
//! page is plain HTML and JavaScript embedded in the binary (no build step,
//! no network). Nothing served is secret (no paths, no keys) and nothing
//! can be changed: every method but GET and HEAD gets 405.
//!
//! On loopback (the default) anyone on this machine may look. Bound to any
//! other address the view requires a token (`--http-token`, or one made
//! from the OS's random source and printed): the page and every JSON
//! endpoint answer 401 to a request without it, given as
//! `Authorization: Bearer TOKEN` or `?token=TOKEN` (the page passes its
//! own on to its JSON requests).
//!
//! Endpoints are described in docs/output-formats.md, the flag in
//! docs/cli.md.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Method, Request, Response, StatusCode};

use serde::Serialize;
use thiserror::Error;

use super::nodepage::{self, NodeSummary};
pub use super::nodepage::{NodeView, PartRow};

/// The page, served at `/`.
const PAGE: &str = include_str!("liveview.html");

/// The longest a connection is served (the page polls with new requests;
/// a client that stops reading its answers is let go after this).
pub const CONNECTION_LIFE: Duration = Duration::from_secs(30);

/// How long a request's headers may take to arrive.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(5);

/// The largest request head read.
pub const MAX_HEADER_BYTES: usize = 16 * 1024;

/// Connections served at once; more are closed as they come.
pub const MAX_CONNECTIONS: usize = 256;

/// Why the live view could not start.
#[derive(Debug, Error)]
pub enum ViewError {
    /// The address given to `--http` is not an address or a port.
    #[error("--http {given}: expected PORT, :PORT or IP:PORT (e.g. 8080 or 127.0.0.1:8080)")]
    BadAddress {
        /// What was given.
        given: String,
    },
    /// The HTTP server could not bind.
    #[error("live view: cannot listen on {addr}: {reason}")]
    Bind {
        /// Where.
        addr: SocketAddr,
        /// Why.
        reason: String,
    },
}

/// Parses `--http`: a bare port (or `:PORT`) binds to 127.0.0.1, so the
/// page is reachable from this machine only unless an address is given.
pub fn parse_addr(s: &str) -> Result<SocketAddr, ViewError> {
    let t = s.trim();
    let bad = || ViewError::BadAddress { given: s.into() };
    let port = t.strip_prefix(':').unwrap_or(t);
    if let Ok(p) = port.parse::<u16>() {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), p));
    }
    t.parse().map_err(|_| bad())
}

/// Where the live view listens, and the token it requires (None: decided
/// by [`Server::start`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewAddr {
    /// The address.
    pub addr: SocketAddr,
    /// The token given with `--http-token`.
    pub token: Option<String>,
}

/// The token a view on `addr` requires: none on loopback unless one is
/// given; off loopback the given one, else a new random one (128 bits,
/// hex).
pub fn token_for(addr: SocketAddr, given: Option<String>) -> Option<String> {
    if given.is_some() || addr.ip().is_loopback() {
        return given;
    }
    use rand::RngCore;
    let mut b = [0u8; 16];
    // Not an experiment's choice (no seed): a secret must not be
    // reproducible.
    rand::rng().fill_bytes(&mut b);
    Some(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// Progress of the run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Progress {
    /// Jobs in the workload.
    pub total: usize,
    /// Submitted so far.
    pub submitted: usize,
    /// Decided (accepted or rejected).
    pub decided: usize,
    /// Over (finished, rejected or lost).
    pub finished: usize,
    /// Waiting in the policy's queue.
    pub queued: usize,
    /// Accepted and not over.
    pub open: usize,
    /// Emulated nodes registered.
    pub registered_nodes: usize,
    /// Emulated nodes the replay waits for.
    pub expected_nodes: usize,
    /// Whether the replay has started.
    pub started: bool,
    /// Whether the run is over.
    pub done: bool,
}

/// A recent decision.
#[derive(Debug, Clone, Serialize)]
pub struct DecisionView {
    /// The job.
    pub job: u64,
    /// When (manager trace s).
    pub at: f64,
    /// `accept` or `reject`.
    pub decision: &'static str,
    /// Accepted: its nodes.
    pub nodes: Vec<usize>,
    /// Accepted: its cost.
    pub cost: Option<f64>,
    /// Rejected: the reason (`deadline`, `budget`, ...).
    pub reason: Option<String>,
    /// Rejected: the policy's explanation.
    pub detail: String,
}

/// Percentiles of one latency histogram (microseconds).
#[derive(Debug, Clone, Serialize)]
pub struct Latency {
    /// Samples.
    pub count: u64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// Largest.
    pub max: u64,
}

impl Latency {
    /// From a histogram.
    pub fn of(h: &hdrhistogram::Histogram<u64>) -> Latency {
        Latency {
            count: h.len(),
            p50: h.value_at_quantile(0.5),
            p90: h.value_at_quantile(0.9),
            p99: h.value_at_quantile(0.99),
            max: h.max(),
        }
    }
}

/// A node process.
#[derive(Debug, Clone, Serialize)]
pub struct ProcessView {
    /// Its label (`host (address)`).
    pub host: String,
    /// Emulated nodes.
    pub nodes: usize,
    /// Whether its link is up.
    pub alive: bool,
}

/// What the manager publishes: the whole state the page shows.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Snapshot {
    /// Increases with every publication.
    pub seq: u64,
    /// The policy.
    pub policy: String,
    /// Manager trace time (s since the first registration).
    pub trace_time: f64,
    /// Real seconds since the replay started.
    pub wall_seconds: f64,
    /// Progress.
    pub progress: Progress,
    /// Nodes, by id.
    pub nodes: Vec<NodeView>,
    /// Node processes.
    pub processes: Vec<ProcessView>,
    /// The last decisions, newest last.
    pub recent: Vec<DecisionView>,
    /// The manager's latency histograms by name.
    pub latency_us: BTreeMap<String, Latency>,
    /// Warnings so far (lost processes, late starts).
    pub warnings: Vec<String>,
}

impl DecisionView {
    /// From a decision.
    pub fn of(job: u64, at: f64, d: &common::policy::Decision) -> DecisionView {
        match d {
            common::policy::Decision::Accept(a) => DecisionView {
                job,
                at,
                decision: "accept",
                nodes: a.nodes.clone(),
                cost: Some(a.cost),
                reason: None,
                detail: String::new(),
            },
            common::policy::Decision::Reject(r) => DecisionView {
                job,
                at,
                decision: "reject",
                nodes: Vec::new(),
                cost: None,
                reason: Some(r.reason.name().to_string()),
                detail: r.detail.clone(),
            },
        }
    }
}

/// Where the manager publishes snapshots (cheap to clone).
#[derive(Debug, Clone, Default)]
pub struct Publisher {
    latest: Arc<Mutex<Arc<Snapshot>>>,
}

impl Publisher {
    /// Replaces the latest snapshot (numbering it).
    pub fn publish(&self, mut s: Snapshot) {
        let mut g = self.latest.lock().unwrap_or_else(|e| e.into_inner());
        s.seq = g.seq + 1;
        *g = Arc::new(s);
    }

    /// The latest snapshot.
    pub fn latest(&self) -> Arc<Snapshot> {
        self.latest
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// The running HTTP server; stops when dropped.
pub struct Server {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    addr: SocketAddr,
    /// Where the manager publishes.
    pub publisher: Publisher,
    token: Option<String>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "live view on http://{}/", self.addr)
    }
}

impl Server {
    /// Binds `view.addr` and serves from a thread of its own, requiring
    /// the token [`token_for`] gives (see [`Server::token`]).
    pub fn start(view: ViewAddr) -> Result<Server, ViewError> {
        let addr = view.addr;
        let token = token_for(addr, view.token);
        if token.as_deref() == Some("") {
            return Err(ViewError::Bind {
                addr,
                reason: "--http-token is empty".into(),
            });
        }
        let bind_err = |e: std::io::Error| ViewError::Bind {
            addr,
            reason: e.to_string(),
        };
        let listener = std::net::TcpListener::bind(addr).map_err(bind_err)?;
        listener.set_nonblocking(true).map_err(bind_err)?;
        let bound = listener.local_addr().map_err(bind_err)?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(bind_err)?;
        let publisher = Publisher::default();
        let (p, t) = (publisher.clone(), token.clone());
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let thread = std::thread::Builder::new()
            .name("live-view".into())
            .spawn(move || rt.block_on(serve(listener, p, t, stopped)))
            .map_err(bind_err)?;
        Ok(Server {
            stop: Some(stop),
            thread: Some(thread),
            addr: bound,
            publisher,
            token,
        })
    }

    /// The token requests must carry (None on loopback without one).
    pub fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// The page's address, with the token if one is required.
    pub fn url(&self) -> String {
        match &self.token {
            Some(t) => format!("http://{}/?token={t}", self.addr),
            None => format!("http://{}/", self.addr),
        }
    }

    /// The address it listens on (the port chosen when 0 was given).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Accepts connections until `stopped`, each served as its own task
/// within the module's bounds.
async fn serve(
    listener: std::net::TcpListener,
    p: Publisher,
    token: Option<String>,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let token: Option<Arc<str>> = token.map(Into::into);
    loop {
        let stream = tokio::select! {
            _ = &mut stopped => return,
            r = listener.accept() => match r {
                Ok((stream, _)) => stream,
                // Out of descriptors, say: wait and go on, rather than
                // stop serving for the rest of the run.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            continue;
        };
        let (p, token) = (p.clone(), token.clone());
        tokio::spawn(async move {
            let _slot = slot;
            let service = hyper::service::service_fn(move |req| {
                let r = respond(&req, &p, token.as_deref());
                async move { Ok::<_, std::convert::Infallible>(r) }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .max_buf_size(MAX_HEADER_BYTES)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            let _ = tokio::time::timeout(CONNECTION_LIFE, conn).await;
        });
    }
}

/// The body and content type of a GET of `path`, or None (404).
pub fn route(path: &str, s: &Snapshot) -> Option<(String, &'static str)> {
    let (path, query) = path.split_once('?').unwrap_or((path, ""));
    // Nodes come summarised and one page at a time (nodepage.rs).
    let q = nodepage::parse_query(query);
    let json = |v: serde_json::Result<String>| {
        Some((
            v.unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}")),
            "application/json",
        ))
    };
    match path {
        "/" | "/index.html" => Some((PAGE.to_string(), "text/html; charset=utf-8")),
        "/api/state" => {
            let page = nodepage::page(&s.nodes, q);
            json(serde_json::to_string(&StateView {
                seq: s.seq,
                policy: &s.policy,
                trace_time: s.trace_time,
                wall_seconds: s.wall_seconds,
                progress: &s.progress,
                node_summary: nodepage::summary(&s.nodes),
                nodes: &page.nodes,
                node_page: PageInfo::of(&page),
                processes: &s.processes,
                recent: &s.recent,
                latency_us: &s.latency_us,
                warnings: &s.warnings,
            }))
        }
        "/api/progress" => json(serde_json::to_string(&serde_json::json!({
            "seq": s.seq,
            "policy": s.policy,
            "trace_time": s.trace_time,
            "wall_seconds": s.wall_seconds,
            "progress": s.progress,
        }))),
        "/api/nodes" => {
            let page = nodepage::page(&s.nodes, q);
            json(serde_json::to_string(&serde_json::json!({
                "seq": s.seq,
                "summary": nodepage::summary(&s.nodes),
                "page": PageInfo::of(&page),
                "nodes": page.nodes,
                "processes": s.processes,
            })))
        }
        "/api/decisions" => json(serde_json::to_string(&serde_json::json!({
            "seq": s.seq,
            "recent": s.recent,
        }))),
        "/api/latency" => json(serde_json::to_string(&serde_json::json!({
            "seq": s.seq,
            "latency_us": s.latency_us,
        }))),
        _ => None,
    }
}

/// `/api/state`: the snapshot with its nodes summarised and paged.
#[derive(Serialize)]
struct StateView<'a> {
    seq: u64,
    policy: &'a str,
    trace_time: f64,
    wall_seconds: f64,
    progress: &'a Progress,
    node_summary: NodeSummary,
    nodes: &'a [&'a NodeView],
    node_page: PageInfo,
    processes: &'a [ProcessView],
    recent: &'a [DecisionView],
    latency_us: &'a BTreeMap<String, Latency>,
    warnings: &'a [String],
}

/// Where a page of nodes stands (its nodes apart).
#[derive(Serialize)]
struct PageInfo {
    page: usize,
    per: usize,
    pages: usize,
    busy: bool,
    matching: usize,
}

impl PageInfo {
    fn of(p: &nodepage::NodePage<'_>) -> PageInfo {
        PageInfo {
            page: p.page,
            per: p.per,
            pages: p.pages,
            busy: p.busy,
            matching: p.matching,
        }
    }
}

/// Whether `req` carries `token` (as a bearer token or `?token=`, the
/// query's value decoded as a browser encodes it), compared in constant
/// time.
fn authorized<B>(req: &Request<B>, token: &str) -> bool {
    let same = |given: &str| {
        given.len() == token.len()
            && given
                .bytes()
                .zip(token.bytes())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0
    };
    let bearer = req
        .headers()
        .get_all(hyper::header::AUTHORIZATION)
        .iter()
        .any(|v| {
            v.to_str()
                .ok()
                .and_then(|v| v.strip_prefix("Bearer "))
                .is_some_and(|t| same(t.trim()))
        });
    let query = req.uri().query().is_some_and(|q| {
        form_urlencoded::parse(q.as_bytes()).any(|(k, v)| k == "token" && same(&v))
    });
    bearer || query
}

/// A response of `status` with `body` (of `ctype`).
fn answer(status: u16, body: String, ctype: &str) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = StatusCode::from_u16(status).expect("a status code");
    let h = r.headers_mut();
    h.insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_str(ctype).expect("a content type"),
    );
    h.insert(
        hyper::header::CACHE_CONTROL,
        hyper::header::HeaderValue::from_static("no-store"),
    );
    r
}

fn respond<B>(req: &Request<B>, p: &Publisher, token: Option<&str>) -> Response<Full<Bytes>> {
    use hyper::header::{HeaderValue, ALLOW, CONTENT_SECURITY_POLICY, WWW_AUTHENTICATE};
    let text = "text/plain; charset=utf-8";
    if let Some(t) = token {
        if !authorized(req, t) {
            let mut r = answer(
                401,
                "401: this live view requires its token (Authorization: Bearer TOKEN, or ?token=TOKEN; printed by the manager at start)\n".into(),
                text,
            );
            r.headers_mut().insert(
                WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"libratory live view\""),
            );
            return r;
        }
    }
    let head = req.method() == Method::HEAD;
    if !matches!(*req.method(), Method::GET | Method::HEAD) {
        let mut r = answer(405, "read-only: GET only\n".into(), text);
        r.headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    let snap = p.latest();
    let path = req.uri().path_and_query().map_or("/", |pq| pq.as_str());
    let (status, body, ctype) = match route(path, &snap) {
        Some((b, t)) => (200, b, t),
        None => (404, "not found\n".to_string(), text),
    };
    let mut r = answer(status, if head { String::new() } else { body }, ctype);
    let h = r.headers_mut();
    h.insert(
        hyper::header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    if status == 200 && ctype.starts_with("text/html") {
        // The page loads nothing from anywhere but here.
        h.insert(
            CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(
                "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'",
            ),
        );
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_port_binds_loopback() {
        assert_eq!(parse_addr("8080").unwrap().to_string(), "127.0.0.1:8080");
        assert_eq!(parse_addr(":0").unwrap().to_string(), "127.0.0.1:0");
        assert_eq!(
            parse_addr("0.0.0.0:9000").unwrap().to_string(),
            "0.0.0.0:9000"
        );
        assert!(parse_addr("localhost").is_err());
    }

    #[test]
    fn serves_the_page_and_json_read_only() {
        use std::io::{Read, Write};
        let s = Server::start(ViewAddr {
            addr: parse_addr("0").unwrap(),
            token: None,
        })
        .unwrap();
        assert_eq!(s.token(), None, "loopback without --http-token: no token");
        s.publisher.publish(Snapshot {
            policy: "libra".into(),
            ..Snapshot::default()
        });
        let get = |req: &str| {
            let mut c = std::net::TcpStream::connect(s.addr()).unwrap();
            c.write_all(req.as_bytes()).unwrap();
            let mut out = String::new();
            c.read_to_string(&mut out).unwrap();
            out
        };
        let page = get("GET / HTTP/1.0\r\n\r\n");
        assert!(page.starts_with("HTTP/1.0 200"), "{page}");
        assert!(page.contains("<!DOCTYPE html>"));
        let state = get("GET /api/state HTTP/1.0\r\n\r\n");
        let body = &state[state.find("\r\n\r\n").unwrap() + 4..];
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["policy"], "libra");
        assert_eq!(v["seq"], 1);
        let post = get("POST /api/state HTTP/1.0\r\nContent-Length: 0\r\n\r\n");
        assert!(post.starts_with("HTTP/1.0 405"), "{post}");
        let missing = get("GET /certs/ca.key HTTP/1.0\r\n\r\n");
        assert!(missing.starts_with("HTTP/1.0 404"), "{missing}");
    }

    /// What a client could do to the view before it ran on hyper (tiny_http), none of which
    /// needs the token: declare a 10^14-byte body (the manager aborted
    /// allocating it), send half a request and wait, pipeline requests and
    /// never read, send a head with no end. Each is tried while a client
    /// with the token asks for the state: it is answered every time.
    #[test]
    fn no_client_holds_the_view_or_makes_it_allocate_what_it_declares() {
        use std::io::{Read, Write};
        use std::time::Instant;
        let s = Server::start(ViewAddr {
            addr: "0.0.0.0:0".parse().unwrap(),
            token: Some("abc/de=f".into()),
        })
        .unwrap();
        s.publisher.publish(Snapshot::default());
        let at = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), s.addr().port());
        // The page's own form of the token: percent-encoded.
        let ok = |why: &str| {
            let t0 = Instant::now();
            let r = get(at, "GET /api/state?token=abc%2Fde%3Df HTTP/1.0\r\n\r\n");
            assert!(r.starts_with("HTTP/1.0 200"), "{why}: {r}");
            assert!(
                t0.elapsed() < Duration::from_secs(3),
                "{why}: {:?}",
                t0.elapsed()
            );
        };
        ok("alone");
        let huge = get(
            at,
            "GET / HTTP/1.1\r\nContent-Length: 100000000000000\r\nConnection: close\r\n\r\n",
        );
        assert!(huge.starts_with("HTTP/1.1 401"), "{huge}");
        ok("after a 10^14-byte body was declared");
        let mut half = std::net::TcpStream::connect(at).unwrap();
        half.write_all(b"GET / HTTP/1.1\r\nContent-Length: 100000\r\n\r\n")
            .unwrap();
        let mut slow = std::net::TcpStream::connect(at).unwrap();
        slow.write_all(b"GET / HTTP/1.1\r\nHost: x").unwrap();
        let mut deaf = std::net::TcpStream::connect(at).unwrap();
        let pipelined = "GET /api/state HTTP/1.1\r\nHost: x\r\n\r\n".repeat(20_000);
        let _ = deaf.set_write_timeout(Some(Duration::from_secs(2)));
        let _ = deaf.write_all(pipelined.as_bytes());
        let mut endless = std::net::TcpStream::connect(at).unwrap();
        let _ = endless.set_write_timeout(Some(Duration::from_secs(2)));
        let mut sent = 0;
        while sent < 8 << 20 {
            if endless.write_all(&[b'a'; 64 * 1024]).is_err() {
                break;
            }
            sent += 64 * 1024;
        }
        ok("while four clients hold connections");
        // The endless head was refused (the connection closed) long before
        // 8 MB were taken in.
        let mut buf = [0u8; 256];
        let _ = endless.set_read_timeout(Some(Duration::from_secs(5)));
        let n = endless.read(&mut buf).unwrap_or(0);
        let said = String::from_utf8_lossy(&buf[..n]);
        assert!(
            sent < 8 << 20 || n == 0 || said.starts_with("HTTP/1.1 431"),
            "{said}"
        );
        drop((half, slow, deaf));
        ok("after");
    }

    fn get(addr: SocketAddr, req: &str) -> String {
        use std::io::{Read, Write};
        let mut c = std::net::TcpStream::connect(addr).unwrap();
        c.write_all(req.as_bytes()).unwrap();
        let mut out = String::new();
        c.read_to_string(&mut out).unwrap();
        out
    }

    /// Bound off loopback (every address), the view makes a token and
    /// refuses the page and every JSON endpoint without it (401), whether
    /// the token is missing, wrong, or a prefix of the right one.
    #[test]
    fn off_loopback_the_page_and_every_endpoint_need_the_token() {
        let s = Server::start(ViewAddr {
            addr: "0.0.0.0:0".parse().unwrap(),
            token: None,
        })
        .unwrap();
        let token = s.token().expect("a token off loopback").to_string();
        assert_eq!(token.len(), 32, "{token}");
        assert!(s.url().ends_with(&format!("/?token={token}")));
        s.publisher.publish(Snapshot::default());
        let at = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), s.addr().port());
        for path in [
            "/",
            "/index.html",
            "/api/state",
            "/api/progress",
            "/api/nodes",
            "/api/decisions",
            "/api/latency",
            "/nowhere",
        ] {
            for bad in [
                format!("GET {path} HTTP/1.0\r\n\r\n"),
                format!("GET {path}?token=wrong HTTP/1.0\r\n\r\n"),
                format!("GET {path}?token={} HTTP/1.0\r\n\r\n", &token[..31]),
                format!("GET {path} HTTP/1.0\r\nAuthorization: Bearer x{token}\r\n\r\n"),
                format!("HEAD {path} HTTP/1.0\r\n\r\n"),
            ] {
                let r = get(at, &bad);
                assert!(r.starts_with("HTTP/1.0 401"), "{bad:?}: {r}");
                assert!(!r.contains("\"seq\""), "{bad:?} leaked the state: {r}");
            }
            let want = if path == "/nowhere" { "404" } else { "200" };
            for good in [
                format!("GET {path}?token={token} HTTP/1.0\r\n\r\n"),
                format!("GET {path} HTTP/1.0\r\nAuthorization: Bearer {token}\r\n\r\n"),
            ] {
                let r = get(at, &good);
                assert!(r.starts_with(&format!("HTTP/1.0 {want}")), "{good:?}: {r}");
            }
        }
        // A token given is used as given, on loopback too.
        let s = Server::start(ViewAddr {
            addr: parse_addr("0").unwrap(),
            token: Some("sesame".into()),
        })
        .unwrap();
        assert_eq!(s.token(), Some("sesame"));
        assert!(get(s.addr(), "GET /api/state HTTP/1.0\r\n\r\n").starts_with("HTTP/1.0 401"));
        assert!(
            get(s.addr(), "GET /api/state?a=1&token=sesame HTTP/1.0\r\n\r\n")
                .starts_with("HTTP/1.0 200")
        );
        // Two views off loopback get different tokens.
        assert_ne!(
            token_for("0.0.0.0:1".parse().unwrap(), None),
            token_for("0.0.0.0:1".parse().unwrap(), None)
        );
    }
}
