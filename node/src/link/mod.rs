//! The link to the manager: connects over QUIC with this host's client
//! certificate, registers the process's emulated nodes, and from the
//! manager's welcome on relays dispatches to the node actors and their
//! starts, progress and completions back, with heartbeats, round-trip
//! pongs and the histogram hand-over; when the manager goes away it keeps
//! the parts running for the grace period and reconnects.
//!
//! Every decision is [`machine::LinkMachine`]'s (a plain state machine,
//! unit-tested); this module only does its I/O: the connection and its
//! reader and writer tasks, the node actors, the timers, the fault
//! listener. The nodes' trace clock is set from the first welcome
//! (`trace_now` and `time_scale`), so host clocks never need to agree.

mod error;
pub mod machine;
mod silent;

use std::cell::RefCell;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::rc::Rc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use anyhow::{bail, Context as _, Result};
use common::protocol::{
    Hello, ManagerMsg, NodeInfo, NodeMsg, Role, Welcome, CLOSE_REFUSED, CLOSE_STILL_REGISTERED,
};
use futures_util::StreamExt;
use hdrhistogram::serialization::{Serializer, V2Serializer};
use hdrhistogram::Histogram;
use net::{self, FramedStream, NetError, Timeouts};
use rustc_hash::FxHashMap;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

use crate::actor::{
    GetTelemetry, NodeActor, NodeReport, PlaceReported, SetCondition, WithdrawPart,
};
use crate::host::NodeHost;
use crate::linkfault::{read_new_commands, LinkFaults};
use crate::nodefault::{Changes, Condition, NodeFaults};
use crate::spec::{EmulatedNodeSpec, PartSpec, SliceConfig};
use error::LinkError;
use machine::{Action, Backoff, LinkMachine, MachineConfig};
use net::TraceClock;

/// The first reconnection attempt waits this long (times the jitter);
/// each further one twice as long, up to [`BACKOFF_CAP`].
pub const BACKOFF_FIRST: Duration = Duration::from_millis(250);
/// The longest wait between reconnection attempts: a restarted manager is
/// found within this of listening again.
pub const BACKOFF_CAP: Duration = Duration::from_secs(5);

/// How long a process started while the manager still holds an earlier
/// registration of its label waits before asking again.
pub const STILL_REGISTERED_RETRY: Duration = Duration::from_millis(500);

/// The grace period's default (`--manager-grace-s`, cluster configs'
/// `manager_grace_s`), in seconds: see docs/node.md.
pub const DEFAULT_GRACE_S: f64 = 60.0;

/// How long a refused registration waits for the manager's close, whose
/// code tells a refusal for good from "still registered" (try again).
/// Ours closes at once after its `Reject`.
pub const REFUSAL_CLOSE_WAIT: Duration = Duration::from_secs(10);

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
    /// How long the parts keep running without a manager while the link
    /// reconnects (`--manager-grace-s`).
    pub grace: Duration,
    /// Reports by exception: the tolerance set by `LIBRATORY_REPORT_TOLERANCE_MS`
    /// (`None`: [`crate::exception::tolerance_for`] the nodes).
    pub report_tolerance: Option<Duration>,
    /// Seed of the reconnection backoff's jitter (printed at the start).
    pub reconnect_seed: u64,
    /// Link faults to apply on SIGUSR1 are read from here
    /// ([`crate::linkfault`]; `libratory run --faults`).
    pub fault_control: Option<PathBuf>,
}

/// A frame from the reader task, stamped when it arrived.
type Frame = (tokio::time::Instant, Result<Option<ManagerMsg>, NetError>);

/// One connection to the manager: frames in through a reader task, out
/// through a writer task.
struct Conn {
    ep: quinn::Endpoint,
    conn: quinn::Connection,
    frames: UnboundedReceiver<Frame>,
    out: UnboundedSender<NodeMsg>,
    reader: tokio::task::JoinHandle<()>,
    writer: tokio::task::JoinHandle<()>,
}

/// Connects, says hello, registers and waits for the welcome.
async fn open(
    cfg: LinkConfig,
    register: NodeMsg,
    faults: Rc<RefCell<LinkFaults>>,
) -> Result<(Conn, Welcome)> {
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
    s.send(&register).await?;
    let answer = s.recv::<ManagerMsg>("manager message").await;
    if !matches!(answer, Ok(Some(ManagerMsg::Welcome(_)))) {
        // A refusal (its `Reject`, then the close, or the close first):
        // the close's code says whether a later try may be taken. The
        // manager closes right after its `Reject`; the wait is long only
        // for one that does not.
        let closed = tokio::time::timeout(REFUSAL_CLOSE_WAIT, conn.closed()).await;
        if let Ok(quinn::ConnectionError::ApplicationClosed(c)) = &closed {
            if c.error_code == quinn::VarInt::from_u32(CLOSE_STILL_REGISTERED) {
                return Err(LinkError::StillRegistered {
                    manager: cfg.manager.to_string(),
                    reason: String::from_utf8_lossy(&c.reason).into_owned(),
                }
                .into());
            }
        }
    }
    let welcome = match answer? {
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
    let (mut tx, mut rx) = s.split();
    let (out, mut out_rx) = unbounded_channel::<NodeMsg>();
    // Writer: everything to the manager goes through one task, in order.
    // Messages queued together (the starts of one burst of dispatches,
    // completions of one tick) go out in one write.
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
            let due = faults.borrow_mut().due(tokio::time::Instant::now());
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
    // Frames from the manager are read as they come and stamped (a delay
    // of the link then counts from arrival and does not pile up).
    let (in_tx, frames) = unbounded_channel();
    let reader = actix::spawn(async move {
        loop {
            let r = rx.recv::<ManagerMsg>("manager message").await;
            let more = matches!(r, Ok(Some(_)));
            if in_tx.send((tokio::time::Instant::now(), r)).is_err() || !more {
                break;
            }
        }
    });
    Ok((
        Conn {
            ep,
            conn,
            frames,
            out,
            reader,
            writer,
        },
        welcome,
    ))
}

impl Conn {
    /// Drops a lost connection at once.
    fn abandon(self) {
        self.reader.abort();
        self.writer.abort();
        self.conn.close(0u32.into(), b"lost");
    }

    /// Ends the connection once what is queued (the goodbye) is out.
    async fn finish(self) {
        self.reader.abort();
        drop(self.out);
        let _ = tokio::time::timeout(Duration::from_secs(2), self.writer).await;
        self.conn.close(0u32.into(), b"bye");
        // The close is sent at once; a peer that is gone does not hold
        // the exit for a whole idle timeout.
        let _ = tokio::time::timeout(Duration::from_secs(1), self.ep.wait_idle()).await;
    }
}

/// Connects, serves until the manager says shut down (Ok), or until no
/// manager took the process back within the grace period after the link
/// was lost (Err naming the manager and why). Call inside an actix System.
pub async fn serve(cfg: LinkConfig) -> Result<()> {
    let infos: Vec<NodeInfo> = (0..cfg.nodes)
        .map(|k| NodeInfo {
            local: k as u32,
            capacity: cfg.node.capacity,
            speed: cfg.node.speed,
            memory_kb: cfg.node.memory_kb,
            disk_mb: cfg.node.disk_mb,
        })
        .collect();
    let machine = Rc::new(RefCell::new(LinkMachine::new(
        MachineConfig {
            manager: cfg.manager.to_string(),
            label: cfg.label.clone(),
            pid: std::process::id(),
            nodes: infos,
            grace: cfg.grace,
            backoff: Backoff::new(BACKOFF_FIRST, BACKOFF_CAP, cfg.reconnect_seed),
            report_tolerance: cfg.report_tolerance.unwrap_or_else(|| {
                crate::exception::tolerance_for(cfg.node.capacity, cfg.slice.min_slice)
            }),
            speed: cfg.node.speed,
        },
        Instant::now(),
    )));
    let register = machine.borrow().register();
    // (faults) Partitions and delays of this link, made here.
    let link_faults: Rc<RefCell<LinkFaults>> = Default::default();
    // (faults) SIGUSR1 is taken from here on, before the first connection:
    // its default action ends the process, and a fault may be signalled
    // while this process waits to register (started again after a crash,
    // it may wait a link timeout). A signal then is held and applied once
    // the nodes are up.
    let usr1 = match &cfg.fault_control {
        Some(_) => Some(
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::user_defined1())
                .context("listening for SIGUSR1 (--fault-control)")?,
        ),
        None => None,
    };
    // The first connection is not retried: a manager that is not there
    // at the start is a mistake to report, not a fault to ride out. But
    // one that still holds an earlier registration under this label live
    // (this process was started again after a crash, and the manager has
    // not given the dead one up yet: it does within its link timeout) is
    // asked again every half second, for up to the grace period, as the
    // simulator's model has it (a crashed process back at `t + max(d,
    // L)`).
    let first_try = Instant::now();
    let mut tries = 0u32;
    let (conn, welcome) = loop {
        match open(cfg.clone(), register.clone(), link_faults.clone()).await {
            Ok(x) => break x,
            Err(e) => match e.downcast_ref::<LinkError>() {
                Some(LinkError::StillRegistered { reason, .. })
                    if first_try.elapsed() < cfg.grace =>
                {
                    if tries == 0 {
                        eprintln!(
                            "libratory-node {}: the manager at {} still holds an earlier registration of this \
                             label as live; asking again every {STILL_REGISTERED_RETRY:?} for up to \
                             {:?} (the grace period): {reason}",
                            cfg.label, cfg.manager, cfg.grace
                        );
                    }
                    tries += 1;
                    tokio::time::sleep(STILL_REGISTERED_RETRY).await;
                }
                _ => return Err(e),
            },
        }
    };
    if tries > 0 {
        eprintln!(
            "libratory-node {}: registered after {tries} refusal(s) over {:.1} s",
            cfg.label,
            first_try.elapsed().as_secs_f64()
        );
    }
    // Admitted only now.
    eprintln!(
        "libratory-node {}: admitted by {} as {} (time scale {}; without a manager the parts \
         keep running {:?}, reconnection jitter seed {})",
        cfg.label,
        cfg.manager,
        id_ranges(&welcome.node_ids),
        welcome.time_scale,
        cfg.grace,
        cfg.reconnect_seed
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
    // (faults) Slow, hung and crashed nodes ([`crate::nodefault`]): the
    // listener hands their commands to the loop below, which owns the
    // nodes and the machine.
    let mut node_faults = NodeFaults::new(cfg.nodes);
    let (node_cmd_tx, mut node_cmds) = unbounded_channel::<String>();
    let fault_listener = match (&cfg.fault_control, usr1) {
        (Some(path), Some(mut usr1)) => {
            let (path, faults, label) = (path.clone(), link_faults.clone(), cfg.label.clone());
            Some(actix::spawn(async move {
                let mut applied = 0;
                while usr1.recv().await.is_some() {
                    let commands = match read_new_commands(&path, &mut applied) {
                        Ok(c) => c,
                        Err(e) => {
                            eprintln!("libratory-node {label}: fault command refused: {e}");
                            continue;
                        }
                    };
                    for c in commands {
                        if NodeFaults::is_node_command(&c) {
                            let _ = node_cmd_tx.send(c);
                            continue;
                        }
                        match faults.borrow_mut().apply(&c, tokio::time::Instant::now()) {
                            Ok(what) => eprintln!("libratory-node {label}: fault: {what}"),
                            Err(e) => {
                                eprintln!("libratory-node {label}: fault command refused: {e}")
                            }
                        }
                    }
                }
            }))
        }
        _ => None,
    };
    // Every node reports to the machine on this thread (the nodes call
    // the sink, `NodeHost::spawn_node_local`, rather than message it: two
    // reports a part, each an envelope otherwise) and wakes the loop
    // below, which sends what the machine then says to.
    let wake = Rc::new(tokio::sync::Notify::new());
    // The current connection's writer, for the nodes' hot path: what a
    // node event makes the machine send goes straight to the writer when
    // nothing else waits in the machine's queue (so the order holds), as
    // the starts and completions of a flood of parts did before the
    // machine; anything else wakes the loop.
    let direct: Rc<RefCell<Option<UnboundedSender<NodeMsg>>>> =
        Rc::new(RefCell::new(Some(conn.out.clone())));
    let mut nodes: Vec<Addr<NodeActor>> = Vec::new();
    for k in 0..cfg.nodes {
        let spec = EmulatedNodeSpec {
            id: k as u32,
            ..cfg.node
        };
        let (m, w, d) = (machine.clone(), wake.clone(), direct.clone());
        let sink: crate::actor::LocalSink = Rc::new(move |r: NodeReport| {
            let mut m = m.borrow_mut();
            let was_idle = !m.has_actions();
            m.node_event(r.node_id, r.event);
            if was_idle {
                if let Some(out) = &*d.borrow() {
                    while let Some(msg) = m.poll_send() {
                        let _ = out.send(msg);
                    }
                }
            }
            if m.has_actions() {
                w.notify_one();
            }
        });
        nodes.push(host.spawn_node_local(spec, sink)?);
    }
    machine
        .borrow_mut()
        .connected(Instant::now(), &welcome, clock.now());
    // Node faults' changes go to the nodes and the machine.
    let apply = |changes: Changes| {
        for (k, c) in changes {
            nodes[k as usize].do_send(SetCondition(c));
            let mut m = machine.borrow_mut();
            if c.condition == Condition::Crashed {
                m.node_crashed(Instant::now(), k);
            }
            eprintln!(
                "libratory-node {}: node {k} now {:?} at {} of its capacity",
                cfg.label, c.condition, c.rate
            );
        }
    };
    let mut places: FxHashMap<u32, Vec<PartSpec>> = FxHashMap::default();
    let hand_over = |places: &mut FxHashMap<u32, Vec<PartSpec>>| {
        for (node, specs) in places.drain() {
            match nodes.get(node as usize).filter(|n| n.connected()) {
                Some(n) => n.do_send(PlaceReported(specs)),
                None => {
                    let mut m = machine.borrow_mut();
                    for spec in specs {
                        m.place_failed(spec.part_id, format!("node {node} stopped"));
                    }
                }
            }
        }
    };
    let mut conn = Some(conn);
    // SIGTERM and SIGINT end the process through the machine (a Goodbye
    // first), not by their default action, which left the manager to find
    // out at its link timeout.
    let mut stop = stop_signals()?;
    type Opening = Pin<Box<dyn std::future::Future<Output = Result<(Conn, Welcome)>>>>;
    let mut opening: Option<Opening> = None;
    let result: Result<()> = 'serve: loop {
        // Do what the machine says (an action may await a node; the
        // machine is never borrowed across an await).
        loop {
            let Some(action) = machine.borrow_mut().poll_action() else {
                if places.is_empty() {
                    break;
                }
                // (A placement that fails queues actions of its own.)
                hand_over(&mut places);
                continue;
            };
            // A node's placements go to it as one message a burst (one
            // dispatch frame's), handed over before anything else for it.
            if let Action::Place { node, spec } = action {
                places.entry(node).or_default().push(spec);
                continue;
            }
            hand_over(&mut places);
            match action {
                Action::Send(m) => {
                    if let Some(c) = &conn {
                        let _ = c.out.send(m);
                    }
                }
                Action::Place { .. } => unreachable!("gathered above"),
                Action::Withdraw { node, local } => {
                    match nodes[node as usize].send(WithdrawPart(local)).await {
                        Ok(burned) => machine.borrow_mut().withdrawn(local, burned, clock.now()),
                        Err(e) => break 'serve Err(anyhow::anyhow!("node {node} stopped: {e}")),
                    }
                }
                Action::Drop { node, local } => nodes[node as usize].do_send(WithdrawPart(local)),
                Action::Histograms { last } => {
                    let histograms = collect_histograms(&nodes).await;
                    if let Some(c) = &conn {
                        let _ = c.out.send(NodeMsg::Histograms { last, histograms });
                    }
                }
                Action::Disconnect => {
                    direct.borrow_mut().take();
                    if let Some(c) = conn.take() {
                        c.abandon();
                    }
                }
                Action::Connect => {
                    eprintln!(
                        "libratory-node {}: reconnecting to {}",
                        cfg.label, cfg.manager
                    );
                    opening = Some(Box::pin(open(
                        cfg.clone(),
                        register.clone(),
                        link_faults.clone(),
                    )));
                }
                Action::NodeGivenUp { node } => {
                    apply(node_faults.given_up(node, Instant::now()));
                    machine
                        .borrow_mut()
                        .set_silent(Instant::now(), node_faults.silent());
                }
                Action::Log(line) => eprintln!("libratory-node {}: {line}", cfg.label),
                Action::Exit(r) => break 'serve r.map_err(anyhow::Error::new),
            }
        }
        let timeout = match (machine.borrow().poll_timeout(), node_faults.poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let timer = async {
            match timeout {
                Some(t) => tokio::time::sleep_until(t.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            frame = async { conn.as_mut().expect("guarded").frames.recv().await }, if conn.is_some() => {
                // Handled once a partition or delay of the link lets it
                // through.
                let due = frame.as_ref().and_then(|(at, _)| link_faults.borrow_mut().due(*at));
                if let Some(due) = due {
                    tokio::time::sleep_until(due).await;
                }
                let now = Instant::now();
                // Closed by the manager refusing us (a revoked identity)
                // is not a lost manager.
                let refusal = match (&frame, conn.as_ref().and_then(|c| c.conn.close_reason())) {
                    (Some((_, Ok(Some(_)))), _) => None,
                    (_, Some(quinn::ConnectionError::ApplicationClosed(c)))
                        if c.error_code == quinn::VarInt::from_u32(CLOSE_REFUSED) =>
                    {
                        Some(String::from_utf8_lossy(&c.reason).into_owned())
                    }
                    _ => None,
                };
                let mut m = machine.borrow_mut();
                if let Some(reason) = refusal {
                    m.refused(reason);
                    continue 'serve;
                }
                match frame {
                    Some((_, Ok(Some(msg)))) => m.frame(now, msg),
                    Some((_, Ok(None))) => m.link_lost(now, "the manager closed the link".into()),
                    Some((_, Err(e))) => m.link_lost(now, format!("link to the manager lost: {e}")),
                    None => m.link_lost(now, "the link reader stopped".into()),
                }
            }
            r = async { opening.as_mut().expect("guarded").await }, if opening.is_some() => {
                opening = None;
                let now = Instant::now();
                match r {
                    Ok((c, w)) => {
                        *direct.borrow_mut() = Some(c.out.clone());
                        conn = Some(c);
                        eprintln!(
                            "libratory-node {}: admitted again by {} as {}",
                            cfg.label, cfg.manager, id_ranges(&w.node_ids)
                        );
                        machine.borrow_mut().connected(now, &w, clock.now());
                    }
                    Err(e) => machine.borrow_mut().connect_failed(now, format!("{e:#}")),
                }
            }
            () = timer => {
                let now = Instant::now();
                machine.borrow_mut().handle_timeout(now);
                let changes = node_faults.handle_timeout(now);
                if !changes.is_empty() {
                    apply(changes);
                    machine.borrow_mut().set_silent(Instant::now(), node_faults.silent());
                }
            }
            Some(line) = node_cmds.recv() => {
                match node_faults.apply(&line, Instant::now()) {
                    Ok((what, changes)) => {
                        eprintln!("libratory-node {}: fault: {what}", cfg.label);
                        apply(changes);
                        machine.borrow_mut().set_silent(Instant::now(), node_faults.silent());
                    }
                    Err(e) => eprintln!("libratory-node {}: fault command refused: {e}", cfg.label),
                }
            }
            () = wake.notified() => {}
            signal = stop.recv() => {
                machine.borrow_mut().stop(signal.unwrap_or("a stop signal"));
            }
        }
    };
    if let Some(f) = fault_listener {
        f.abort();
    }
    // The writer ends once every sender is gone.
    direct.borrow_mut().take();
    if let Some(c) = conn.take() {
        c.finish().await;
    }
    result
}

/// The stop signals, as their names, on one channel.
fn stop_signals() -> Result<tokio::sync::mpsc::UnboundedReceiver<&'static str>> {
    use tokio::signal::unix::{signal, SignalKind};
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    for (kind, name) in [
        (SignalKind::terminate(), "SIGTERM"),
        (SignalKind::interrupt(), "SIGINT"),
    ] {
        let mut s = signal(kind).with_context(|| format!("listening for {name}"))?;
        let tx = tx.clone();
        actix::spawn(async move {
            while s.recv().await.is_some() {
                if tx.send(name).is_err() {
                    break;
                }
            }
        });
    }
    Ok(rx)
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

/// The process's histograms since the last hand-over (each node's telemetry
/// is reset), merged over its nodes and parts, V2-encoded.
/// How many nodes [`collect_histograms`] asks at once.
const ASKED: usize = 64;

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
    // Asked of up to ASKED nodes at once, each answer merged and dropped
    // as it comes. One after another, each answer waited for its node's
    // turn on the process's thread, and a busy process's loop (and the
    // heartbeats it sends) waited for all of them in a row. All at once,
    // every node's histograms (~10 KB once it has recorded anything) were
    // held together: ~200 MB of fresh pages every histogram period for a
    // process of 20,000 busy nodes, which at Fugaku scale raised the
    // node processes' CPU per job ~2x (up to 5x) in a step of 110,000
    // jobs a second.
    let mut answers = futures_util::stream::iter(nodes)
        .map(|n| n.send(GetTelemetry { reset: true }))
        .buffer_unordered(ASKED);
    while let Some(t) = answers.next().await {
        let Ok(t) = t else { continue };
        merge(&mut overrun, &t.slice_overrun_ns);
        merge(&mut jitter, &t.tick_jitter_ns);
        // As before the histogram moved to the node: an interval in which
        // a node held parts sends one, maybe empty.
        if !t.parts.is_empty() || !t.error_ppm.is_empty() {
            merge(&mut error, &t.error_ppm);
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
