//! The QUIC side of a live run: accepting node processes and clients
//! (handshake, hello, registration) and [`run`], which starts everything
//! and returns the outcome.

use rustc_hash::FxHashMap;
use std::time::{Duration, Instant};

use actix::prelude::*;
use anyhow::{bail, Context as _, Result};
use common::policy::{self};
use common::protocol::{ClientMsg, ClientReply, Hello, ManagerMsg, NodeMsg, Role};
use common::workload::WorkloadJob;
use net::{self, FramedStream, Timeouts, TraceClock};
use tokio::sync::{mpsc, oneshot};

use common::admission::{LinkId, ManagerCore};

use std::sync::Arc;

use super::actor::*;
use super::config::*;
use super::core::{CoreConfig, LiveCore};
use super::gate::{self, Gate, Refusal};
use super::link::*;
use super::messages::*;

pub(super) async fn serve_connection(
    incoming: quinn::Incoming,
    link: LinkId,
    manager: Addr<ManagerActor>,
    links: ArbiterHandle,
    timeout: Duration,
    gate: Arc<Gate>,
) -> Result<(), Refusal> {
    let peer = incoming.remote_address();
    let conn = incoming
        .await
        .map_err(|e| format!("{peer}: handshake refused: {e}"))?;
    // Who the verified certificate says the peer is; a revoked identity
    // goes no further than this.
    let r: Result<(), Refusal> = match net::peer_identity(&conn) {
        Err(e) => Err(format!("{peer}: certificate refused: {e}").into()),
        Ok(id) => match gate.enter(link, &conn, &id) {
            Err(e) => Err(format!("{peer}: {e}").into()),
            Ok(()) => {
                let r = admit(
                    conn.clone(),
                    link,
                    manager,
                    links,
                    timeout,
                    id,
                    gate.clone(),
                )
                .await;
                if r.is_err() {
                    gate.leave(link);
                }
                r
            }
        },
    };
    if let Err(e) = &r {
        // Close with an error the peer can read, rather than letting the
        // dropped handles close it as if all were well.
        let mut reason = e.why.clone().into_bytes();
        reason.truncate(400);
        conn.close(e.code.into(), &reason);
    }
    r
}

pub(super) async fn admit(
    conn: quinn::Connection,
    link: LinkId,
    manager: Addr<ManagerActor>,
    links: ArbiterHandle,
    timeout: Duration,
    id: net::Identity,
    gate: Arc<Gate>,
) -> Result<(), Refusal> {
    let peer = conn.remote_address();
    let mut s = FramedStream::accept(&conn)
        .await
        .map_err(|e| e.to_string())?;
    let hello = Hello::new(
        Role::Manager,
        format!("libratory {}", env!("CARGO_PKG_VERSION")),
    );
    // A peer that connects and says nothing (or hello and then nothing)
    // is dropped after the link timeout, the silence a node is allowed,
    // rather than held for as long as its QUIC keep-alives last.
    let silent = |what: &str| format!("{peer}: {what} for {timeout:?}; dropped");
    let theirs = tokio::time::timeout(timeout, s.handshake(&hello))
        .await
        .map_err(|_| silent("no hello"))?
        .map_err(|e| e.to_string())?;
    if theirs.role == Role::Client {
        let r = serve_client(conn, s, manager, &id, link).await;
        gate.leave(link);
        return r.map_err(|e| format!("{peer}: {e}").into());
    }
    if theirs.role != Role::Node {
        let _ = s
            .send(&ManagerMsg::Reject {
                reason: format!("expected a node, got {:?}", theirs.role),
            })
            .await;
        return Err(format!("{peer}: not a node ({:?})", theirs.role).into());
    }
    let reg: Option<NodeMsg> = tokio::time::timeout(timeout, s.recv("node message"))
        .await
        .map_err(|_| silent("hello and then nothing"))?
        .map_err(|e| e.to_string())?;
    let Some(NodeMsg::Register { host, nodes, pid }) = reg else {
        let _ = s
            .send(&ManagerMsg::Reject {
                reason: "expected Register after hello".into(),
            })
            .await;
        return Err(format!("{peer}: did not register").into());
    };
    // A label is said back in refusals and kept in every record.
    if host.len() > common::protocol::MAX_PEER_STRING {
        let why = format!(
            "{peer}: a node process label of {} bytes (at most {})",
            host.len(),
            common::protocol::MAX_PEER_STRING
        );
        let _ = s
            .send(&ManagerMsg::Reject {
                reason: why.clone(),
            })
            .await;
        return Err(why.into());
    }
    // Only a node identity registers, under its own name, once.
    if let Err(refusal) = gate.register(link, &id, &host) {
        let _ = s
            .send(&ManagerMsg::Reject {
                reason: refusal.why.clone(),
            })
            .await;
        return Err(Refusal {
            why: format!("{peer}: {}", refusal.why),
            ..refusal
        });
    }
    let (tx, rx) = mpsc::unbounded_channel();
    let host_label = format!("{host} ({peer})");
    match manager
        .send(Connected {
            link,
            host: host_label,
            pid,
            nodes,
            tx: tx.clone(),
        })
        .await
    {
        // The manager actor queued the welcome itself.
        Ok(Ok(_)) => {}
        // Refused by the core (the run is over, nodes out of range): said
        // as every refusal is, the `Reject` and then the close with its
        // code, so that the process hears it at once rather than waiting
        // for a close on a connection nobody serves.
        Ok(Err(reason)) => {
            let _ = s
                .send(&ManagerMsg::Reject {
                    reason: reason.clone(),
                })
                .await;
            return Err(format!("{peer}: {reason}").into());
        }
        Err(e) => return Err(e.to_string().into()),
    }
    let (sender, receiver) = s.split();
    let manager2 = manager.clone();
    let tx2 = tx.clone();
    // The link actor (frame decoding, silence watch) runs on the links
    // thread, away from the admission path; the frames the process sent
    // meanwhile wait in the stream.
    let addr = LinkActor::start_in_arbiter(&links, move |ctx| {
        ctx.add_stream(frame_stream(receiver));
        LinkActor {
            link,
            manager: manager2,
            tx: tx2,
            last_heard: Instant::now(),
            timeout,
            closed: false,
        }
    });
    // The writer (frame encoding) runs on this thread, the endpoint's,
    // where the connection's driver runs: a dispatch goes from the
    // admission actor (on this thread too, by default) to the wire with no
    // hand-over between threads.
    actix::spawn(writer(sender, rx));
    gate.set_link(link, addr.clone());
    // Keep the connection alive as long as the link actor runs.
    actix::spawn(async move {
        let _conn = conn;
        while addr.connected() {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        gate.leave(link);
    });
    Ok(())
}

/// The most client requests handed to the admission thread as one message
/// (a bound, so a flood of submissions interleaves with node completions,
/// which free capacity and shrink the view every decision walks).
const CLIENT_BATCH: usize = 128;

/// A client connection: requests in, replies out, until it closes. Each
/// request is checked against the identity's role; a refused one ends the
/// connection with the reason (the requests before it are answered).
pub(super) async fn serve_client(
    conn: quinn::Connection,
    s: FramedStream,
    manager: Addr<ManagerActor>,
    id: &net::Identity,
    client: LinkId,
) -> Result<(), String> {
    let mut refused = None;
    let (mut tx, mut rx) = s.split();
    let (reply_tx, mut reply_rx) = mpsc::unbounded_channel::<ClientReply>();
    // Answers queued together (a burst's) go out in one write.
    let writer = actix::spawn(async move {
        let mut batch = Vec::new();
        while let Some(r) = reply_rx.recv().await {
            batch.push(r);
            while batch.len() < CLIENT_BATCH {
                match reply_rx.try_recv() {
                    Ok(r) => batch.push(r),
                    Err(_) => break,
                }
            }
            if tx.send_all(&batch).await.is_err() {
                break;
            }
            batch.clear();
        }
    });
    loop {
        // Every request that came in one read goes to the admission thread
        // as one message: a client submitting fast costs one hand-over per
        // burst, not one per job. Echoes are answered here.
        match rx
            .recv_batch::<ClientMsg>("client message", CLIENT_BATCH)
            .await
        {
            Ok(msgs) if msgs.is_empty() => break,
            Ok(mut msgs) => {
                let peer = conn.remote_address();
                if let Some(k) = msgs
                    .iter()
                    .position(|m| gate::permits(id, peer, m).is_err())
                {
                    let reason = gate::permits(id, peer, &msgs[k]).err().unwrap_or_default();
                    // Answered, then the connection closes with the same
                    // reason: a client reading either sees why.
                    let _ = reply_tx.send(ClientReply::Error {
                        token: gate::token_of(&msgs[k]),
                        message: reason.clone(),
                    });
                    refused = Some(reason);
                    msgs.truncate(k);
                }
                msgs.retain(|m| match m {
                    ClientMsg::Echo { token } => {
                        let _ = reply_tx.send(ClientReply::Echo { token: *token });
                        false
                    }
                    _ => true,
                });
                // The next burst is read only once the admission actor has
                // handled this one. Posted without waiting, a flood of
                // bursts would fill its mailbox, and an actor handles up to
                // 256 queued messages before its thread runs anything else:
                // the answers' and the dispatches' writers would wait for
                // the whole flood, parts would not start, their
                // completions would not come back, and every decision would
                // walk the parts piling up in the view. Waiting leaves the
                // flood in the connection (QUIC flow control pushes back on
                // the client) and lets each burst's frames leave before the
                // next is decided.
                if msgs.is_empty() {
                    if refused.is_some() {
                        break;
                    }
                    // Echoes only: answered here, nothing decided.
                    continue;
                }
                if manager
                    .send(FromClient {
                        client,
                        reply: reply_tx.clone(),
                        msgs,
                    })
                    .await
                    .is_err()
                {
                    break;
                }
                // Node reports before the next burst: tokio runs a yielded
                // task again only after its I/O driver has been polled, so
                // the node processes' starts and completions that arrived
                // meanwhile are read first. Without this, a flood kept the
                // thread on submissions while reports waited in the
                // socket; parts stayed in the view ~100-250 ms after they
                // ended, and every decision walked them (policy compute
                // 18-20 us against 4-5 us with it; docs/manager.md).
                tokio::task::yield_now().await;
                if refused.is_some() {
                    break;
                }
            }
            Err(e) => {
                // A client that closed with code 0 (`libratory submit`,
                // the fault injector: "done") ended as it should, maybe
                // before its stream's end reached us: not worth a warning.
                match conn.close_reason() {
                    Some(quinn::ConnectionError::ApplicationClosed(c))
                        if c.error_code == quinn::VarInt::from_u32(0) =>
                    {
                        tracing::debug!("client {}: {e}", rx.peer())
                    }
                    _ => tracing::warn!("client {}: {e}", rx.peer()),
                }
                break;
            }
        }
    }
    drop(reply_tx);
    // Let answers in flight go out before the connection drops.
    let _ = tokio::time::timeout(Duration::from_secs(5), writer).await;
    match refused {
        Some(reason) => {
            tracing::warn!("client {}: {reason}", conn.remote_address());
            Err(reason)
        }
        None => {
            drop(conn);
            Ok(())
        }
    }
}

/// How the manager's work is spread over threads
/// (`LIBRATORY_MANAGER_THREADS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Threads {
    /// Admission with the endpoint and the clients; node links apart.
    Split,
    /// Admission apart; endpoint, clients and node links together.
    Admission,
    /// Everything on one thread.
    One,
}

impl Threads {
    /// From `LIBRATORY_MANAGER_THREADS`'s value (unset: split).
    pub fn parse(value: Option<&str>) -> Result<Threads> {
        match value {
            None | Some("split") => Ok(Threads::Split),
            Some("admission") => Ok(Threads::Admission),
            Some("one") => Ok(Threads::One),
            Some(other) => bail!(
                "LIBRATORY_MANAGER_THREADS={other}: expected split (the default), admission or one"
            ),
        }
    }
}

/// Runs a live experiment: serves on `cfg.listen` until the workload is
/// done or `shutdown` resolves. Call inside an actix `System`.
pub async fn run(
    cfg: LiveConfig,
    jobs: Vec<WorkloadJob>,
    shutdown: impl std::future::Future<Output = String> + 'static,
) -> Result<LiveOutcome> {
    let nodes_hint: Vec<common::node_model::NodeSpec> = Vec::new();
    let (policy, mut batsim) = if cfg.policy == "batsim" {
        // Kept company every half wall second (in trace seconds).
        let keepalive = 0.5 / cfg.time_scale.max(1e-9);
        // A serving run takes clients' submissions until it ends: the
        // scheduler is told there are no more jobs only then.
        let total = (!cfg.serve).then_some(jobs.len());
        let (p, s) = crate::batsim::live_policy(&cfg.batsim, total, keepalive)?;
        (p, Some(s))
    } else {
        (
            policy::build(&cfg.policy, &cfg.policy_config, &nodes_hint)?,
            None,
        )
    };
    if cfg.time_scale <= 0.0 {
        bail!("time_scale must be > 0, got {}", cfg.time_scale);
    }
    let endpoint = net::server_endpoint(
        cfg.listen,
        &cfg.certs,
        Timeouts {
            idle: cfg.link_timeout,
        },
    )
    .with_context(|| format!("starting the QUIC server on {}", cfg.listen))?;
    if cfg.progress_lines.is_some() {
        // Launch scripts start the node processes once they read this.
        eprintln!(
            "manager listening on {} (UDP); waiting for {} emulated nodes",
            endpoint.local_addr().unwrap_or(cfg.listen),
            cfg.expect_nodes
        );
    }
    let gate = Arc::new(
        Gate::new(&cfg.certs)
            .with_context(|| "reading the revocation list at start".to_string())?,
    );
    let (done_tx, done_rx) = oneshot::channel();
    let timeout = cfg.link_timeout;
    // Threads (see docs/manager.md, "Threads"). By default the admission
    // actor runs on the thread of the QUIC endpoint, with the client
    // connections: a submission is read, decided and answered on one
    // thread, with no hand-over between threads on its way, like the echo.
    // The node links (frame decoding and encoding, silence watch) run on a
    // thread of their own, so a burst of reports or dispatches costs the
    // admission thread only the handling of already decoded messages.
    // LIBRATORY_MANAGER_THREADS=admission puts the admission actor on a
    // thread of its own instead (links, clients and endpoint together),
    // `one` everything on one thread: arrangements for benchmarks to
    // compare.
    let arrangement = cfg.threads;
    let links = (arrangement == Threads::Split).then(Arbiter::new);
    let admission = (arrangement == Threads::Admission).then(Arbiter::new);
    let core_cfg = CoreConfig {
        time_scale: cfg.time_scale,
        expect_nodes: cfg.expect_nodes,
        serve: cfg.serve,
        journal: cfg.journal.is_some(),
        start_timeout: cfg.start_timeout,
        histogram_timeout: cfg.histogram_timeout,
        report_ms: cfg.report_ms,
        heartbeat_ms: cfg.heartbeat_ms,
        histogram_ms: cfg.histogram_ms,
        spare_rule: cfg.policy_config.spare_rule,
        rejoin_wait: cfg.link_timeout,
    };
    // The scheduler's replies, forwarded to the actor as they come.
    let scheduler = batsim.as_mut().map(|s| {
        (
            s.transport.poster(),
            s.mailbox.clone(),
            std::mem::replace(&mut s.replies, mpsc::unbounded_channel().1),
        )
    });
    let mut cfg = cfg;
    let resume = cfg.resume.take();
    let make = move |ctx: &mut Context<ManagerActor>| {
        let born = Instant::now();
        let time_scale = cfg.time_scale;
        // A resumed run's clock goes on from where it stood, at once.
        let (mut core, clock) = match resume {
            Some(t) => {
                let clock = TraceClock::new(t.trace_now, time_scale);
                let core = LiveCore::resumed(ManagerCore::new(policy), core_cfg, jobs, t);
                (core, Some(clock))
            }
            None => (
                LiveCore::new(ManagerCore::new(policy), core_cfg, jobs),
                None,
            ),
        };
        core = core.with_meter(Box::new(move || born.elapsed().as_secs_f64()));
        // (faults) Losses name the faults the injector reported
        // (core/faults.rs).
        core = core.with_node_watch(timeout);
        let mut poster = None;
        if let Some((p, mailbox, mut replies)) = scheduler {
            core = core.with_scheduler(mailbox);
            poster = Some(p);
            let addr = ctx.address();
            actix::spawn(async move {
                while let Some(r) = replies.recv().await {
                    addr.do_send(SchedulerReplied(r));
                }
            });
        }
        ManagerActor {
            core,
            scheduler: poster,
            clock,
            cfg,
            links: FxHashMap::default(),
            clients: FxHashMap::default(),
            born,
            handover: Default::default(),
            done: Some(done_tx),
            bar: None,
            held_line: None,
        }
    };
    let manager = match &admission {
        Some(a) => ManagerActor::start_in_arbiter(&a.handle(), make),
        None => ManagerActor::create(make),
    };
    let links_handle = links
        .as_ref()
        .map_or_else(Arbiter::current, Arbiter::handle);
    let accept_manager = manager.clone();
    let ep = endpoint.clone();
    let accept_gate = gate.clone();
    let acceptor = actix::spawn(async move {
        let mut link: LinkId = 0;
        while let Some(incoming) = ep.accept().await {
            link += 1;
            let m = accept_manager.clone();
            let l = links_handle.clone();
            let g = accept_gate.clone();
            actix::spawn(async move {
                if let Err(e) = serve_connection(incoming, link, m, l, timeout, g).await {
                    if e.quiet {
                        tracing::debug!("connection refused: {}", e.why);
                    } else {
                        tracing::warn!("connection refused: {}", e.why);
                    }
                }
            });
        }
    });
    let reloader = actix::spawn(reload_on_sighup(gate));
    let abort = manager.clone();
    let stopper = actix::spawn(async move {
        let reason = shutdown.await;
        abort.do_send(Abort(reason));
    });
    let _ = done_rx.await;
    let outcome = manager
        .send(TakeOutcome)
        .await
        .context("the manager actor stopped before handing over its results")?;
    // Let the shutdown frames go out, then close.
    tokio::time::sleep(Duration::from_millis(300)).await;
    stopper.abort();
    reloader.abort();
    acceptor.abort();
    endpoint.close(0u32.into(), b"run complete");
    for a in [admission, links].into_iter().flatten() {
        a.stop();
    }
    let mut outcome = outcome.0;
    if let Some(s) = batsim {
        // Sends SIMULATION_ENDS (posted at the end of the run), reads its
        // reply, closes the socket and stops the scheduler's process.
        drop(s.transport);
        let r = s.report.lock().expect("not poisoned");
        outcome.warnings.push(format!(
            "batsim scheduler: {} round trips, {:.3} s waiting for replies",
            r.round_trips,
            r.waited.as_secs_f64()
        ));
        if let Some(f) = &r.fault {
            outcome.warnings.push(format!(
                "the batsim scheduler failed: {f}; the jobs it had not decided are rejected with reason 'scheduler'"
            ));
        }
    }
    Ok(outcome)
}

/// Re-reads the revocation list on every SIGHUP, closing the connections
/// of identities it now revokes. A list that cannot be read keeps the
/// previous one (and says so).
async fn reload_on_sighup(gate: Arc<Gate>) {
    use tokio::signal::unix::{signal, SignalKind};
    let mut hup = match signal(SignalKind::hangup()) {
        Ok(h) => h,
        Err(e) => {
            tracing::warn!("no SIGHUP handler, the revocation list is read at start only: {e}");
            return;
        }
    };
    while hup.recv().await.is_some() {
        match gate.reload() {
            Ok(closed) => {
                eprintln!(
                    "SIGHUP: revocation list re-read; {} live connection(s) closed",
                    closed.len()
                );
                for r in closed {
                    eprintln!("  {r}");
                }
            }
            Err(e) => {
                eprintln!("SIGHUP: revocation list not re-read, keeping the previous one: {e}")
            }
        }
    }
}
