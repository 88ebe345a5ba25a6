//! An external Batsim scheduler over ZeroMQ (docs/batsim.md): the REQ
//! socket Libratory plays Batsim with, the scheduler process started with
//! the run (`--batsim-cmd`), and the `batsim` policy built on them.
//!
//! The protocol itself (messages, decisions, what the scheduler may do)
//! is `common::batsim`, which does no I/O; this module only moves its text.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use common::batsim::{BatsimQueue, Exchange};
use common::policy::Policy;
use thiserror::Error;
use zeromq::{Socket, SocketRecv, SocketSend};

/// Batsim's default endpoint (the scheduler binds it, Batsim connects).
pub const DEFAULT_ENDPOINT: &str = "tcp://127.0.0.1:28000";

/// The options every command that can run the `batsim` policy takes.
#[derive(clap::Args, Debug, Clone)]
pub struct BatsimArgs {
    /// Where the external scheduler of the `batsim` policy listens (its
    /// ZeroMQ REP socket; pybatsim's `-s`).
    #[arg(long, default_value = DEFAULT_ENDPOINT)]
    pub batsim_endpoint: String,
    /// A command starting the scheduler with the run (run by `sh -c`,
    /// stopped at the end), e.g. 'pybatsim fillerSched'.
    #[arg(long, value_name = "COMMAND")]
    pub batsim_cmd: Option<String>,
    /// Seconds to wait for the scheduler to connect and for each reply
    /// before giving it up.
    #[arg(long, default_value_t = 30.0)]
    pub batsim_timeout: f64,
}

impl Default for BatsimArgs {
    fn default() -> Self {
        BatsimArgs {
            batsim_endpoint: DEFAULT_ENDPOINT.into(),
            batsim_cmd: None,
            batsim_timeout: 30.0,
        }
    }
}

/// Why the scheduler could not be reached.
#[derive(Debug, Error)]
pub enum TransportError {
    /// The endpoint is not a ZeroMQ endpoint.
    #[error("--batsim-endpoint '{endpoint}': {error}")]
    Endpoint {
        /// What was given.
        endpoint: String,
        /// zeromq's word.
        error: String,
    },
    /// The scheduler command could not be started.
    #[error("--batsim-cmd '{cmd}' could not be started: {error}")]
    Spawn {
        /// The command.
        cmd: String,
        /// Why.
        error: std::io::Error,
    },
}

/// What a run's caller learns about its scheduler afterwards.
#[derive(Debug, Default)]
pub struct SchedulerReport {
    /// Why the scheduler was given up (jobs it had not decided were
    /// dropped with reason `scheduler`).
    pub fault: Option<String>,
    /// Round trips made.
    pub round_trips: u64,
    /// Total time spent waiting for replies.
    pub waited: Duration,
    /// The first of them (with `--batsim-cmd`, it includes the
    /// scheduler's start-up).
    pub first: Duration,
}

/// A REQ socket to the scheduler, and the scheduler's process if this run
/// started it. The socket lives on a thread of its own with its own
/// runtime, so a caller on any thread (the simulator's, or the live
/// manager's actor inside actix's runtime) just waits on a channel.
pub struct ZmqExchange {
    requests: Option<mpsc::Sender<String>>,
    replies: mpsc::Receiver<Result<String, String>>,
    worker: Option<std::thread::JoinHandle<()>>,
    child: Option<Child>,
    cmd: Option<String>,
    report: Arc<Mutex<SchedulerReport>>,
}

/// The socket's thread: connects at the first request, then one request,
/// one reply, each bounded by `timeout`.
fn socket_thread(
    endpoint: String,
    timeout: Duration,
    requests: mpsc::Receiver<String>,
    replies: mpsc::Sender<Result<String, String>>,
) {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = replies.send(Err(format!("cannot start the transport's runtime: {e}")));
            return;
        }
    };
    let mut socket: Option<zeromq::ReqSocket> = None;
    while let Ok(request) = requests.recv() {
        let r = rt.block_on(async {
            if socket.is_none() {
                let mut s = zeromq::ReqSocket::new();
                match tokio::time::timeout(timeout, s.connect(&endpoint)).await {
                    Ok(Ok(())) => socket = Some(s),
                    Ok(Err(e)) => return Err(format!("cannot connect to {endpoint}: {e}")),
                    Err(_) => {
                        return Err(format!(
                            "no scheduler at {endpoint} after {:.1} s (is it started? give --batsim-cmd or start it first)",
                            timeout.as_secs_f64()
                        ))
                    }
                }
            }
            let s = socket.as_mut().expect("connected above");
            let reply = tokio::time::timeout(timeout, async {
                s.send(zeromq::ZmqMessage::from(request)).await?;
                s.recv().await
            })
            .await;
            let reply = match reply {
                Ok(Ok(m)) => m,
                Ok(Err(e)) => return Err(format!("the scheduler at {endpoint} went away: {e}")),
                Err(_) => {
                    return Err(format!(
                        "the scheduler at {endpoint} did not answer within {:.1} s (--batsim-timeout)",
                        timeout.as_secs_f64()
                    ))
                }
            };
            if reply.len() != 1 {
                return Err(format!(
                    "the scheduler's reply has {} frames; Batsim messages have one",
                    reply.len()
                ));
            }
            String::from_utf8(reply.get(0).expect("one frame").to_vec())
                .map_err(|_| "the scheduler's reply is not UTF-8 text".to_string())
        });
        let failed = r.is_err();
        if replies.send(r).is_err() || failed {
            break;
        }
    }
    // The socket closes here, in its runtime.
    drop(rt.block_on(async { socket.take() }));
}

impl ZmqExchange {
    /// Starts `args.batsim_cmd` (if any) and the socket's thread. A
    /// scheduler that is not there is not an error here: the first
    /// request fails and the run goes on without it (every job dropped
    /// with the reason), as any other scheduler failure.
    pub fn open(args: &BatsimArgs) -> Result<(ZmqExchange, Arc<Mutex<SchedulerReport>>)> {
        // Checked first so a typo is not taken for an absent scheduler.
        args.batsim_endpoint
            .parse::<zeromq::Endpoint>()
            .map_err(|e| TransportError::Endpoint {
                endpoint: args.batsim_endpoint.clone(),
                error: e.to_string(),
            })?;
        let child = match &args.batsim_cmd {
            Some(cmd) => Some(
                Command::new("sh")
                    .arg("-c")
                    .arg(cmd)
                    // Its own process group, so the stop at the end reaches
                    // whatever `sh -c` started.
                    .process_group(0)
                    .stdin(Stdio::null())
                    // Its chatter (pybatsim logs every message) would
                    // drown the run's log; run it by hand to read it.
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .map_err(|error| TransportError::Spawn {
                        cmd: cmd.clone(),
                        error,
                    })?,
            ),
            None => None,
        };
        let (req_tx, req_rx) = mpsc::channel();
        let (rep_tx, rep_rx) = mpsc::channel();
        let endpoint = args.batsim_endpoint.clone();
        let timeout = Duration::from_secs_f64(args.batsim_timeout.max(0.001));
        let worker = std::thread::Builder::new()
            .name("batsim-zmq".into())
            .spawn(move || socket_thread(endpoint, timeout, req_rx, rep_tx))
            .context("starting the Batsim transport's thread")?;
        let report = Arc::new(Mutex::new(SchedulerReport::default()));
        Ok((
            ZmqExchange {
                requests: Some(req_tx),
                replies: rep_rx,
                worker: Some(worker),
                child,
                cmd: args.batsim_cmd.clone(),
                report: report.clone(),
            },
            report,
        ))
    }

    /// If the scheduler process this run started has exited: how. Asked
    /// when the socket failed, so it waits a moment for the exit the
    /// broken connection announced.
    fn exited(&mut self) -> Option<String> {
        let child = self.child.as_mut()?;
        let until = Instant::now() + Duration::from_millis(500);
        loop {
            match child.try_wait() {
                Ok(Some(status)) => {
                    return Some(format!(
                        "the scheduler process ('{}') exited ({status})",
                        self.cmd.as_deref().unwrap_or("")
                    ))
                }
                _ if Instant::now() >= until => return None,
                _ => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    }

    fn round_trip(&mut self, request: &str) -> Result<String, String> {
        let sent = self
            .requests
            .as_ref()
            .is_some_and(|tx| tx.send(request.to_string()).is_ok());
        let r = if sent {
            self.replies
                .recv()
                .unwrap_or_else(|_| Err("the transport's thread stopped".into()))
        } else {
            Err("the transport's thread stopped".into())
        };
        r.map_err(|e| self.exited().unwrap_or(e))
    }
}

impl Exchange for ZmqExchange {
    fn exchange(&mut self, request: &str) -> Result<String, String> {
        let t = Instant::now();
        let r = self.round_trip(request);
        let mut rep = self.report.lock().expect("not poisoned");
        if rep.round_trips == 0 {
            rep.first = t.elapsed();
        }
        rep.waited += t.elapsed();
        rep.round_trips += 1;
        r
    }

    fn failed(&mut self, why: &str) {
        let mut rep = self.report.lock().expect("not poisoned");
        rep.fault.get_or_insert_with(|| why.to_string());
    }
}

impl Drop for ZmqExchange {
    fn drop(&mut self) {
        // The socket goes first, so a scheduler waiting on it sees the end.
        drop(self.requests.take());
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
        if let Some(mut child) = self.child.take() {
            // A scheduler that received SIMULATION_ENDS exits by itself;
            // give it a moment, then stop it (it is this run's child).
            let until = Instant::now() + Duration::from_secs(2);
            while Instant::now() < until {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            // SAFETY: kill(2) on the process group this run created for
            // the scheduler (its id is the child's, see `open`).
            unsafe {
                libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL);
            }
            let _ = child.wait();
        }
    }
}

/// The `batsim` policy for a live run of `jobs` jobs (nodes register
/// later): decisions take effect on arrival, an empty request after
/// `keepalive` trace seconds of silence.
pub fn live_policy(
    args: &BatsimArgs,
    jobs: usize,
    keepalive: f64,
) -> Result<(Policy, Arc<Mutex<SchedulerReport>>)> {
    let (ex, report) = ZmqExchange::open(args)?;
    let q = BatsimQueue::new(Box::new(ex), 0, jobs, "live", 0.0).live(keepalive);
    Ok((Policy::Queue(Box::new(q)), report))
}

/// The `batsim` policy for a run of `jobs` jobs on `nodes` nodes, with
/// the report to read once it is over.
pub fn policy(
    args: &BatsimArgs,
    nodes: usize,
    jobs: usize,
    workload: &str,
    pbase: f64,
) -> Result<(Policy, Arc<Mutex<SchedulerReport>>)> {
    let (ex, report) = ZmqExchange::open(args)?;
    let q = BatsimQueue::new(Box::new(ex), nodes, jobs, workload, pbase);
    Ok((Policy::Queue(Box::new(q)), report))
}
