//! The link to the manager: connects over QUIC with this host's client
//! certificate, registers the process's emulated nodes, and from the
//! manager's welcome on relays dispatches to the node actors and their
//! starts, progress and completions back, with heartbeats, round-trip
//! pongs and the histogram hand-over.
//!
//! It holds no policy: a dispatch becomes a [`PlaceReported`], a node event
//! becomes a message. The nodes' trace clock is set from the welcome
//! (`trace_now` and `time_scale`), so host clocks never need to agree.

use std::cell::RefCell;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::Duration;

use actix::prelude::*;
use anyhow::{bail, Context as _, Result};
use common::protocol::{self, Hello, ManagerMsg, NodeInfo, NodeMsg, PartId as WirePart, Role};
use hdrhistogram::serialization::{Serializer, V2Serializer};
use hdrhistogram::Histogram;
use net::{self, FramedStream, Timeouts};
use rustc_hash::FxHashMap;

use crate::actor::{GetTelemetry, NodeActor, NodeReport, PlaceReported, WithdrawPart};
use crate::core::NodeEvent;
use crate::host::NodeHost;
use crate::linkfault::{read_command, LinkFaults};
use crate::spec::{EmulatedNodeSpec, PartSpec, SliceConfig};
use net::TraceClock;

/// How to reach the manager and what to offer it.
#[derive(Debug, Clone)]
pub struct LinkConfig {
    /// The manager's address.
    pub manager: SocketAddr,
    /// Certificates directory (`ca.pem`, `node-NAME.pem/.key`).
    pub certs: PathBuf,
    /// Certificate name: this process presents `node-NAME`.
    pub name: String,
    /// Label for the manager's logs and results (host name by default).
    pub label: String,
    /// The nodes (ids are filled in here: 0..).
    pub node: EmulatedNodeSpec,
    /// How many.
    pub nodes: usize,
    /// Slicer knobs; the time scale and spare rule come from the manager.
    pub slice: SliceConfig,
    /// Executor threads (0: one per core).
    pub executors: usize,
    /// Silence after which the manager is considered gone.
    pub link_timeout: Duration,
    /// Link faults to apply on SIGUSR1 are read from here
    /// ([`crate::linkfault`]; `libratory run --faults`).
    pub fault_control: Option<PathBuf>,
}

/// Connects, serves until the manager says shut down (Ok) or the link is
/// lost (Err naming the manager and why). Call inside an actix System.
pub async fn serve(cfg: LinkConfig) -> Result<()> {
    let ep = net::client_endpoint(
        "0.0.0.0:0".parse().expect("valid"),
        &cfg.certs,
        &format!("node-{}", cfg.name),
        Timeouts {
            idle: cfg.link_timeout,
        },
    )?;
    let conn = net::connect(&ep, cfg.manager).await?;
    let mut s = FramedStream::open(&conn).await?;
    let hello = Hello::new(
        Role::Node,
        format!(
            "libratory-node {} ({})",
            env!("CARGO_PKG_VERSION"),
            cfg.label
        ),
    );
    let theirs = s.handshake(&hello).await?;
    if theirs.role != Role::Manager {
        bail!(
            "{}: expected the manager, got {:?}",
            cfg.manager,
            theirs.role
        );
    }
    let infos: Vec<NodeInfo> = (0..cfg.nodes)
        .map(|k| NodeInfo {
            local: k as u32,
            capacity: cfg.node.capacity,
            speed: cfg.node.speed,
            memory_kb: cfg.node.memory_kb,
            disk_mb: cfg.node.disk_mb,
        })
        .collect();
    s.send(&NodeMsg::Register {
        host: cfg.label.clone(),
        nodes: infos,
        pid: std::process::id(),
    })
    .await?;
    let welcome = match s.recv::<ManagerMsg>("manager message").await? {
        Some(ManagerMsg::Welcome(w)) => w,
        Some(ManagerMsg::Reject { reason }) => {
            bail!("the manager at {} refused us: {reason}", cfg.manager)
        }
        Some(other) => bail!(
            "the manager at {} sent {other:?} before welcoming us",
            cfg.manager
        ),
        None => bail!(
            "the manager at {} closed the connection before welcoming us",
            cfg.manager
        ),
    };
    // Admitted only now.
    eprintln!(
        "libratory-node {}: admitted by {} as {} (time scale {})",
        cfg.label,
        cfg.manager,
        id_ranges(&welcome.node_ids),
        welcome.time_scale
    );
    crate::host::batch_dispatch_or_warn();
    let clock = TraceClock::new(welcome.trace_now, welcome.time_scale);
    let mut slice = cfg.slice;
    slice.time_scale = welcome.time_scale;
    slice.spare_rule = welcome.spare_rule;
    let tick_ms = slice.tick.as_secs_f64() * 1000.0;
    slice.progress_ticks = ((f64::from(welcome.report_ms) / tick_ms).round() as u32).max(1);
    // The manager keeps its own view of shares: it never reads these.
    slice.share_events = false;
    let mut host = NodeHost::new(cfg.executors, slice, clock)?;
    let (mut tx, mut rx) = s.split();
    let (out_tx, mut out_rx) = tokio::sync::mpsc::unbounded_channel::<NodeMsg>();
    // (faults) Partitions and delays of this link, made here.
    let link_faults: Rc<RefCell<LinkFaults>> = Default::default();
    let fault_listener = match &cfg.fault_control {
        Some(path) => {
            let mut usr1 =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::user_defined1())
                    .context("listening for SIGUSR1 (--fault-control)")?;
            let (path, faults, label) = (path.clone(), link_faults.clone(), cfg.label.clone());
            Some(actix::spawn(async move {
                while usr1.recv().await.is_some() {
                    let r = read_command(&path)
                        .and_then(|c| faults.borrow_mut().apply(&c, tokio::time::Instant::now()));
                    match r {
                        Ok(what) => eprintln!("libratory-node {label}: fault: {what}"),
                        Err(e) => eprintln!("libratory-node {label}: fault command refused: {e}"),
                    }
                }
            }))
        }
        None => None,
    };
    // Node events to the manager, with node-local part ids mapped back
    // (local id -> wire id and the node holding it), by one relay that
    // every node of the process calls on this thread.
    // FxHash: the ids are this process's own counter, looked up twice per
    // part (start, completion) on the node thread's hot path.
    let parts: Rc<RefCell<FxHashMap<u64, Wired>>> = Default::default();
    let relay_state = Rc::new(RefCell::new(RelayState {
        parts: parts.clone(),
        out: Some(out_tx.clone()),
        gathered: HashMap::new(),
        exceptions: crate::exception::rule_for(
            welcome.time_scale,
            cfg.node.speed,
            cfg.node.capacity,
            cfg.slice.min_slice,
        ),
    }));
    let relay = Relay {
        state: relay_state.clone(),
        every: Duration::from_millis(u64::from(welcome.report_ms).max(1)),
    }
    .start();
    let mut nodes: Vec<Addr<NodeActor>> = Vec::new();
    for k in 0..cfg.nodes {
        let spec = EmulatedNodeSpec {
            id: k as u32,
            ..cfg.node
        };
        let state = relay_state.clone();
        let sink: crate::actor::LocalSink = Rc::new(move |r| state.borrow_mut().report(r));
        nodes.push(host.spawn_node_local(spec, sink)?);
    }
    // Writer: everything to the manager goes through one task, in order.
    // Messages queued together (the starts of one burst of dispatches,
    // completions of one tick) go out in one write.
    let w_faults = link_faults.clone();
    let writer = actix::spawn(async move {
        let mut batch = Vec::new();
        while let Some(m) = out_rx.recv().await {
            batch.push(m);
            while batch.len() < 1024 {
                match out_rx.try_recv() {
                    Ok(m) => batch.push(m),
                    Err(_) => break,
                }
            }
            // (faults) A partitioned or delayed link holds the frames.
            let due = w_faults.borrow_mut().due(tokio::time::Instant::now());
            if let Some(due) = due {
                tokio::time::sleep_until(due).await;
            }
            if tx.send_all(&batch).await.is_err() {
                break;
            }
            batch.clear();
        }
        tx.finish();
    });
    // Heartbeats.
    let hb_tx = out_tx.clone();
    let hb_every = Duration::from_millis(u64::from(welcome.heartbeat_ms).max(10));
    // Histograms at intervals (each covers the time since the last one:
    // the node's telemetry is reset at every hand-over), so a long run
    // leaves an interval log, not one lump.
    let h_tx = out_tx.clone();
    let h_nodes = nodes.clone();
    let h_every = Duration::from_millis(u64::from(welcome.histogram_ms).max(100));
    let histograms = actix::spawn(async move {
        loop {
            tokio::time::sleep(h_every).await;
            let hists = collect_histograms(&h_nodes).await;
            if h_tx
                .send(NodeMsg::Histograms {
                    last: false,
                    histograms: hists,
                })
                .is_err()
            {
                break;
            }
        }
    });
    let heartbeat = actix::spawn(async move {
        let mut seq = 0u64;
        loop {
            tokio::time::sleep(hb_every).await;
            seq += 1;
            if hb_tx.send(NodeMsg::Heartbeat { seq }).is_err() {
                break;
            }
        }
    });
    // A dispatch is placed without waiting for the node actor: the reading
    // loop goes on with the next frame, and each node reports `Placed` (or
    // `Refused`) through the relay, ahead of the part's completion.
    let mut next_part: u64 = 0;
    let mut place = |d: protocol::Dispatch| {
        let node = nodes.get(d.node as usize).filter(|n| n.connected());
        let Some(node) = node else {
            let reason = if (d.node as usize) < nodes.len() {
                format!("node {} stopped", d.node)
            } else {
                format!("no node {} in this process ({} nodes)", d.node, nodes.len())
            };
            let _ = out_tx.send(NodeMsg::Refused {
                part: d.part,
                reason,
            });
            return;
        };
        next_part += 1;
        let local = next_part;
        parts.borrow_mut().insert(
            local,
            Wired {
                part: d.part,
                node: d.node,
                dispatched_at: d.dispatched_at,
            },
        );
        node.do_send(PlaceReported(PartSpec {
            part_id: local,
            job_id: d.part.job,
            estimate: d.estimate,
            actual: d.actual,
            deadline_abs: d.deadline,
            memory_kb: 0,
            disk_mb: 0,
            ret: d.ret,
            hard: d.hard,
        }));
    };
    // Frames from the manager are read as they come, stamped, and handled
    // in order once a partition or delay of the link lets them through
    // (stamped on arrival, so a delay does not pile up frame after frame).
    let (in_tx, mut in_rx) = tokio::sync::mpsc::unbounded_channel();
    let reader = actix::spawn(async move {
        loop {
            let r = rx.recv::<ManagerMsg>("manager message").await;
            let more = matches!(r, Ok(Some(_)));
            if in_tx.send((tokio::time::Instant::now(), r)).is_err() || !more {
                break;
            }
        }
    });
    let result: Result<()> = loop {
        let Some((at, frame)) = in_rx.recv().await else {
            break Err(anyhow::anyhow!("the link reader stopped"));
        };
        let due = link_faults.borrow_mut().due(at);
        if let Some(due) = due {
            tokio::time::sleep_until(due).await;
        }
        let msg = match frame {
            Ok(Some(m)) => m,
            Ok(None) => {
                break Err(anyhow::anyhow!(
                    "the manager at {} closed the link",
                    cfg.manager
                ))
            }
            Err(e) => break Err(anyhow::Error::new(e).context("link to the manager lost")),
        };
        match msg {
            ManagerMsg::Dispatch(d) => place(d),
            ManagerMsg::Dispatches(ds) => ds.into_iter().for_each(&mut place),
            ManagerMsg::Cancel { part } => {
                let held = parts
                    .borrow()
                    .iter()
                    .find(|(_, w)| w.part == part)
                    .map(|(&local, w)| (local, w.node));
                // Not held: it completed (its completion is on its way) or
                // was refused; nothing burns.
                let Some((local, node)) = held else { continue };
                let Some(addr) = nodes.get(node as usize) else {
                    continue;
                };
                match addr.send(WithdrawPart(local)).await {
                    Ok(Some(burned_ns)) => {
                        parts.borrow_mut().remove(&local);
                        relay_state.borrow_mut().exceptions.forget(part);
                        eprintln!(
                            "libratory-node {}: withdrew part {}/{} (cancelled by the manager)",
                            cfg.label, part.job, part.index
                        );
                        let _ = out_tx.send(NodeMsg::Withdrawn {
                            part,
                            at: clock.now(),
                            cpu_seconds: burned_ns as f64 * 1e-9,
                        });
                    }
                    // It completed while the cancel was on its way.
                    Ok(None) => {}
                    Err(e) => break Err(anyhow::anyhow!("node {node} stopped: {e}")),
                }
            }
            ManagerMsg::Ping { nonce } => {
                let _ = out_tx.send(NodeMsg::Pong { nonce });
            }
            ManagerMsg::SendHistograms => {
                let hists = collect_histograms(&nodes).await;
                let _ = out_tx.send(NodeMsg::Histograms {
                    last: true,
                    histograms: hists,
                });
            }
            ManagerMsg::Shutdown { reason } => {
                eprintln!("libratory-node {}: shutting down: {reason}", cfg.label);
                let _ = out_tx.send(NodeMsg::Goodbye {
                    reason: "shutdown requested".into(),
                });
                break Ok(());
            }
            ManagerMsg::Reject { reason } => {
                break Err(anyhow::anyhow!(
                    "the manager at {} gave us up: {reason}",
                    cfg.manager
                ));
            }
            ManagerMsg::Welcome(_) => {
                break Err(anyhow::anyhow!("the manager sent a second welcome"));
            }
        }
    };
    heartbeat.abort();
    histograms.abort();
    reader.abort();
    if let Some(f) = fault_listener {
        f.abort();
    }
    // The relay holds a sender to the writer: stop it so that the writer
    // sees the channel end once the last messages (the goodbye) are out.
    let _ = relay.send(StopRelay).await;
    drop(out_tx);
    let _ = tokio::time::timeout(Duration::from_secs(2), writer).await;
    conn.close(0u32.into(), b"bye");
    ep.wait_idle().await;
    result
}

/// Node ids for a log line: runs of consecutive ids as ranges ("nodes
/// 0-2499", not 2,500 numbers).
fn id_ranges(ids: &[u32]) -> String {
    if ids.is_empty() {
        return "no nodes".into();
    }
    let mut runs: Vec<String> = Vec::new();
    let mut k = 0;
    while k < ids.len() {
        let mut j = k;
        while j + 1 < ids.len() && ids[j + 1] == ids[j] + 1 {
            j += 1;
        }
        runs.push(if j > k {
            format!("{}-{}", ids[k], ids[j])
        } else {
            ids[k].to_string()
        });
        k = j + 1;
    }
    let noun = if ids.len() == 1 { "node" } else { "nodes" };
    format!("{noun} {}", runs.join(", "))
}

/// A placed part as the manager knows it.
struct Wired {
    part: WirePart,
    /// The node holding it (in this process).
    node: u32,
    /// The manager's dispatch time, echoed in `Started`.
    dispatched_at: common::time::Time,
}

/// Turns node reports into messages to the manager (every node of the
/// process reports here). Progress reports are gathered (each node's
/// latest) and sent as one `Reports` frame per report period for the whole
/// process: with hundreds of nodes per process, one frame per node per
/// period was most of the manager's incoming traffic. A completion first
/// flushes what is gathered, so the manager never hears of a part's
/// progress after its end.
struct RelayState {
    /// Node-local part id -> what the manager calls it.
    parts: Rc<RefCell<FxHashMap<u64, Wired>>>,
    /// To the writer; taken at the link's end (the nodes, which hold
    /// this state, may outlive the link), so the writer sees its channel
    /// end once the goodbye is out.
    out: Option<tokio::sync::mpsc::UnboundedSender<NodeMsg>>,
    gathered: HashMap<u32, protocol::NodeProgress>,
    /// Reports by exception: which gathered parts the manager needs.
    exceptions: crate::exception::ExceptionRule,
}

/// The relay's timer: sends what is gathered every report period.
struct Relay {
    state: Rc<RefCell<RelayState>>,
    every: Duration,
}

impl RelayState {
    fn send(&self, m: NodeMsg) {
        if let Some(out) = &self.out {
            let _ = out.send(m);
        }
    }

    fn flush(&mut self) {
        if !self.gathered.is_empty() {
            let mut reports: Vec<protocol::NodeProgress> =
                self.gathered.drain().map(|(_, r)| r).collect();
            crate::exception::retain_reports(&mut self.exceptions, &mut reports);
            if reports.is_empty() {
                return;
            }
            reports.sort_by(|a, b| a.at.total_cmp(&b.at));
            self.send(NodeMsg::Reports { reports });
        }
    }
}

impl Actor for Relay {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.run_interval(self.every, |a, _| a.state.borrow_mut().flush());
    }
}

/// Stops the [`Relay`] (at the link's end), dropping the relay's sender.
#[derive(Message)]
#[rtype(result = "()")]
struct StopRelay;

impl Handler<StopRelay> for Relay {
    type Result = ();

    fn handle(&mut self, _: StopRelay, ctx: &mut Self::Context) {
        self.state.borrow_mut().out = None;
        ctx.stop();
    }
}

impl RelayState {
    fn report(&mut self, r: NodeReport) {
        match r.event {
            NodeEvent::Placed { part_id, at } => {
                if let Some(w) = self.parts.borrow().get(&part_id) {
                    self.send(NodeMsg::Started {
                        part: w.part,
                        at,
                        dispatched_at: w.dispatched_at,
                    });
                }
            }
            NodeEvent::Refused { part_id, error } => {
                if let Some(Wired { part, .. }) = self.parts.borrow_mut().remove(&part_id) {
                    self.exceptions.forget(part);
                    self.send(NodeMsg::Refused {
                        part,
                        reason: error.to_string(),
                    });
                }
            }
            NodeEvent::Completed(c) => {
                let wire = self.parts.borrow_mut().remove(&c.part_id);
                if let Some(Wired { part, .. }) = wire {
                    self.flush();
                    self.exceptions.forget(part);
                    self.send(NodeMsg::Completed {
                        part,
                        at: c.finished_at,
                        cpu_seconds: c.burned_ns as f64 * 1e-9,
                    });
                }
            }
            NodeEvent::Progress { at, parts } => {
                let map = self.parts.borrow();
                let wire: Vec<protocol::PartProgress> = parts
                    .iter()
                    .filter_map(|p| {
                        map.get(&p.part_id).map(|w| protocol::PartProgress {
                            part: w.part,
                            node: r.node_id,
                            work_done: p.done,
                            share: p.share,
                        })
                    })
                    .collect();
                drop(map);
                if !wire.is_empty() {
                    self.gathered
                        .insert(r.node_id, protocol::NodeProgress { at, parts: wire });
                }
            }
            NodeEvent::SharesChanged { .. } => {}
        }
    }
}

/// The process's histograms, merged over its nodes and parts, V2-encoded.
/// The process's histograms since the last hand-over (each node's telemetry
/// is reset), merged over its nodes and parts, V2-encoded.
async fn collect_histograms(nodes: &[Addr<NodeActor>]) -> Vec<(String, Vec<u8>)> {
    let mut overrun: Option<Histogram<u64>> = None;
    let mut jitter: Option<Histogram<u64>> = None;
    let mut error: Option<Histogram<u64>> = None;
    let merge = |acc: &mut Option<Histogram<u64>>, h: &Histogram<u64>| match acc {
        Some(a) => {
            let _ = a.add(h);
        }
        None => *acc = Some(h.clone()),
    };
    for n in nodes {
        if let Ok(t) = n.send(GetTelemetry { reset: true }).await {
            merge(&mut overrun, &t.slice_overrun_ns);
            merge(&mut jitter, &t.tick_jitter_ns);
            // As before the histogram moved to the node: an interval in
            // which a node held parts sends one, maybe empty.
            if !t.parts.is_empty() || !t.error_ppm.is_empty() {
                merge(&mut error, &t.error_ppm);
            }
        }
    }
    let mut out = Vec::new();
    let mut ser = V2Serializer::new();
    for (name, h) in [
        ("slice_overrun_us", overrun.map(|h| scale(&h, 1e-3))),
        ("tick_jitter_us", jitter.map(|h| scale(&h, 1e-3))),
        ("share_error_ppm", error),
    ] {
        if let Some(h) = h {
            let mut buf = Vec::new();
            if ser.serialize(&h, &mut buf).is_ok() {
                out.push((name.to_string(), buf));
            }
        }
    }
    out
}

/// A histogram with every value multiplied by `f` (ns to us), so the
/// manager's logs use one unit.
fn scale(h: &Histogram<u64>, f: f64) -> Histogram<u64> {
    let mut out = Histogram::<u64>::new(2).expect("valid");
    for v in h.iter_recorded() {
        let _ = out.record_n(
            (v.value_iterated_to() as f64 * f).round() as u64,
            v.count_at_value(),
        );
    }
    out
}

/// Runs [`serve`] in its own actix System (the binary's entry point).
pub fn run(cfg: LinkConfig) -> Result<()> {
    actix::System::new()
        .block_on(serve(cfg.clone()))
        .with_context(|| format!("libratory-node {} (manager {})", cfg.label, cfg.manager))
}

#[cfg(test)]
mod tests {
    use super::id_ranges;

    #[test]
    fn node_ids_print_as_ranges() {
        assert_eq!(id_ranges(&[0, 1, 2, 3]), "nodes 0-3");
        assert_eq!(id_ranges(&[7]), "node 7");
        assert_eq!(id_ranges(&[0, 1, 5, 8, 9]), "nodes 0-1, 5, 8-9");
        assert_eq!(id_ranges(&[]), "no nodes");
    }
}
