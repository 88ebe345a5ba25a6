//! The injector's reports to the manager: each fault applied goes to
//! whichever manager is current as `ClientMsg::FaultApplied`, over QUIC
//! with the `operator` identity, in order, and waits until one answers
//! `Noted`. While no manager answers (it crashed and is not restarted
//! yet) the reports wait and a connection is tried again every 50 ms
//! (each attempt given 500 ms);
//! each carries its age when sent, so the manager journals the fault at
//! the time it happened. A report the manager refuses (`Error`) is printed
//! and dropped: resending would not change the answer.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::protocol::{ClientMsg, ClientReply, FaultAct};

use crate::live::client::{self, ConnArgs};

/// One fault act applied, to report.
#[derive(Debug, Clone)]
pub struct Report {
    /// The fault's name.
    pub fault: String,
    /// Its kind's word.
    pub kind: String,
    /// The node process's label.
    pub process: String,
    /// What was done.
    pub act: FaultAct,
    /// What was done, for people.
    pub what: String,
    /// The one node (local index), if not the whole process.
    pub node: Option<u32>,
    /// `slow`: the capacity factor.
    pub factor: Option<f64>,
    /// When.
    pub at: Instant,
}

/// The reporting thread's handle.
pub struct Reporter {
    tx: mpsc::Sender<Report>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// Whether the injector prints each act itself (see [`Self::quiet`]).
    echo: bool,
}

/// How long the last reports may wait for a manager once the injector is
/// done (a run ending has no manager to take them).
const DRAIN: Duration = Duration::from_secs(3);

impl Reporter {
    /// Starts reporting to the manager at `manager`, with the operator
    /// identity of the certificates directory `certs`.
    pub fn start(manager: SocketAddr, certs: PathBuf) -> Reporter {
        let (tx, rx) = mpsc::channel();
        let conn = ConnArgs {
            manager,
            certs,
            identity: net::OPERATOR_NAME.into(),
        };
        let thread = std::thread::spawn(move || deliver(conn, rx));
        Reporter {
            tx,
            thread: Some(thread),
            echo: true,
        }
    }

    /// An injector whose manager prints to the same terminal (in the run's
    /// own process, or beside it under the supervisor) leaves each act's
    /// line to the manager, which prints it as it notes the report (with
    /// how late it came): printed by both, every line came twice.
    pub fn quiet(mut self) -> Reporter {
        self.echo = false;
        self
    }

    /// Whether the injector prints each act itself.
    pub fn echo(&self) -> bool {
        self.echo
    }

    /// Queues a report.
    pub fn send(&self, r: Report) {
        let _ = self.tx.send(r);
    }

    /// No more reports: waits until the queued ones are delivered, for at
    /// most a few seconds once `stop` is set (the run is over).
    pub fn finish(mut self, stop: &AtomicBool) {
        let (tx, _) = mpsc::channel();
        drop(std::mem::replace(&mut self.tx, tx));
        if let Some(t) = self.thread.take() {
            while !t.is_finished() && !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = t.join();
        }
    }
}

/// The reporting thread: delivers `rx`'s reports in order until it is
/// closed and the queue is empty (or, closed, the queue could not be
/// delivered for [`DRAIN`]).
fn deliver(conn: ConnArgs, rx: mpsc::Receiver<Report>) {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("fault reports: no runtime: {e}; the manager will not be told of faults");
            return;
        }
    };
    rt.block_on(async move {
        let mut queue: VecDeque<Report> = VecDeque::new();
        let mut open: Option<client::Connection> = None;
        let mut closed = false;
        let mut token = 0u64;
        let mut waiting_since: Option<Instant> = None;
        let mut said_unreachable = false;
        loop {
            loop {
                match rx.try_recv() {
                    Ok(r) => queue.push_back(r),
                    Err(mpsc::TryRecvError::Empty) => break,
                    Err(mpsc::TryRecvError::Disconnected) => {
                        closed = true;
                        break;
                    }
                }
            }
            let Some(r) = queue.front().cloned() else {
                // Each burst of reports gets a fresh connection: one kept
                // open across a manager crash would be found dead only
                // when the next burst is sent on it (the restarted
                // manager resets it then), costing that burst a retry.
                if let Some(c) = open.take() {
                    close(c).await;
                }
                if closed {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            };
            if closed && waiting_since.is_some_and(|s| s.elapsed() > DRAIN) {
                for r in &queue {
                    eprintln!(
                        "fault reports: not delivered (no manager answered): {}: {}",
                        r.fault, r.what
                    );
                }
                break;
            }
            if open.is_none() {
                // A manager that is down does not answer the handshake:
                // try again soon, so the next one gets the reports within
                // a fraction of a second of listening.
                match tokio::time::timeout(Duration::from_millis(500), client::connect(&conn)).await
                {
                    Ok(Ok(c)) => {
                        open = Some(c);
                        said_unreachable = false;
                    }
                    Ok(Err(e)) => {
                        if !said_unreachable {
                            eprintln!(
                                "fault reports: waiting for the manager at {} ({e:#})",
                                conn.manager
                            );
                            said_unreachable = true;
                        }
                        waiting_since.get_or_insert_with(Instant::now);
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                    Err(_) => {
                        waiting_since.get_or_insert_with(Instant::now);
                        continue;
                    }
                }
            }
            let c = open.as_mut().expect("opened above");
            token += 1;
            let msg = ClientMsg::FaultApplied {
                token,
                fault: r.fault.clone(),
                kind: r.kind.clone(),
                process: r.process.clone(),
                act: r.act,
                what: r.what.clone(),
                node: r.node,
                factor: r.factor,
                age_s: r.at.elapsed().as_secs_f64(),
            };
            let answer = async {
                c.stream.send(&msg).await?;
                c.stream.recv::<ClientReply>("client reply").await
            };
            match tokio::time::timeout(Duration::from_secs(5), answer).await {
                Ok(Ok(Some(ClientReply::Noted { token: t }))) if t == token => {
                    queue.pop_front();
                    waiting_since = None;
                }
                Ok(Ok(Some(ClientReply::Error { message, .. }))) => {
                    eprintln!(
                        "error: the manager refused the fault report ({}: {}): {message}",
                        r.fault, r.what
                    );
                    queue.pop_front();
                    open = None;
                }
                // Closed, timed out or garbled: the manager is gone (or
                // going); the report goes to the next one.
                _ => {
                    open = None;
                    waiting_since.get_or_insert_with(Instant::now);
                }
            }
        }
        if let Some(c) = open {
            close(c).await;
        }
    });
}

/// Closes a report connection and waits (a second at most) for the close
/// to leave: the thread's runtime ends right after the last one, and a
/// close never sent leaves the manager holding the connection until its
/// idle timeout, which it then logs as a connection lost.
async fn close(c: client::Connection) {
    c.conn.close(0u32.into(), b"done");
    let _ = tokio::time::timeout(Duration::from_secs(1), c.endpoint.wait_idle()).await;
}
