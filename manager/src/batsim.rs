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
use common::batsim::{BatsimQueue, Exchange, Mailbox};
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

/// Where the socket's thread hands each reply (with the time the round
/// trip took): a channel the simulator waits on, or the live manager's
/// actor. Returns false when nobody listens any more.
type Deliver = Box<dyn FnMut(Result<String, String>, Duration) -> bool + Send>;

/// The scheduler's process, if this run started it, shared by the socket's
/// thread (which asks how it exited when the socket fails) and the
/// transport (which stops it at the end).
struct SchedulerProcess {
    child: Option<Child>,
    cmd: Option<String>,
}

impl SchedulerProcess {
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
}

/// One round trip on `socket` (connected at the first).
async fn round_trip(
    socket: &mut Option<zeromq::ReqSocket>,
    endpoint: &str,
    timeout: Duration,
    request: String,
) -> Result<String, String> {
    if socket.is_none() {
        let mut s = zeromq::ReqSocket::new();
        match tokio::time::timeout(timeout, s.connect(endpoint)).await {
            Ok(Ok(())) => *socket = Some(s),
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
}

/// The socket's thread: connects at the first request, then one request,
/// one reply, each bounded by `timeout`; stops at the first failure.
fn socket_thread(
    endpoint: String,
    timeout: Duration,
    requests: mpsc::Receiver<String>,
    mut deliver: Deliver,
    process: Arc<Mutex<SchedulerProcess>>,
    report: Arc<Mutex<SchedulerReport>>,
) {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            deliver(
                Err(format!("cannot start the transport's runtime: {e}")),
                Duration::ZERO,
            );
            return;
        }
    };
    let mut socket: Option<zeromq::ReqSocket> = None;
    while let Ok(request) = requests.recv() {
        let t = Instant::now();
        let r = rt.block_on(round_trip(&mut socket, &endpoint, timeout, request));
        let waited = t.elapsed();
        {
            let mut rep = report.lock().expect("not poisoned");
            if rep.round_trips == 0 {
                rep.first = waited;
            }
            rep.waited += waited;
            rep.round_trips += 1;
        }
        let failed = r.is_err();
        let r = r.map_err(|e| process.lock().expect("not poisoned").exited().unwrap_or(e));
        if !deliver(r, waited) || failed {
            break;
        }
    }
    // The socket closes here, in its runtime.
    drop(rt.block_on(async { socket.take() }));
}

/// A REQ socket to the scheduler on a thread of its own with its own
/// runtime, and the scheduler's process if this run started it. Dropping
/// it sends what was posted, closes the socket and stops the process.
pub struct Transport {
    /// Shared with the posters handed out; taken at the end so the
    /// socket's thread sees it.
    requests: Arc<Mutex<Option<mpsc::Sender<String>>>>,
    worker: Option<std::thread::JoinHandle<()>>,
    process: Arc<Mutex<SchedulerProcess>>,
}

/// Posts requests to a [`Transport`] (the live manager's actor holds one).
#[derive(Clone)]
pub struct Poster(Arc<Mutex<Option<mpsc::Sender<String>>>>);

impl Poster {
    /// Sends `request` without waiting; false if the transport is gone.
    pub fn post(&self, request: String) -> bool {
        self.0
            .lock()
            .expect("not poisoned")
            .as_ref()
            .is_some_and(|tx| tx.send(request).is_ok())
    }
}

impl Transport {
    /// Starts `args.batsim_cmd` (if any) and the socket's thread, which
    /// hands replies to `deliver`. A scheduler that is not there is not an
    /// error here: the first request fails and the run goes on without it
    /// (every job dropped with the reason), as any other scheduler failure.
    fn open(
        args: &BatsimArgs,
        deliver: Deliver,
    ) -> Result<(Transport, Arc<Mutex<SchedulerReport>>)> {
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
        let process = Arc::new(Mutex::new(SchedulerProcess {
            child,
            cmd: args.batsim_cmd.clone(),
        }));
        let (req_tx, req_rx) = mpsc::channel();
        let endpoint = args.batsim_endpoint.clone();
        let timeout = Duration::from_secs_f64(args.batsim_timeout.max(0.001));
        let report = Arc::new(Mutex::new(SchedulerReport::default()));
        let (p, r) = (process.clone(), report.clone());
        let worker = std::thread::Builder::new()
            .name("batsim-zmq".into())
            .spawn(move || socket_thread(endpoint, timeout, req_rx, deliver, p, r))
            .context("starting the Batsim transport's thread")?;
        Ok((
            Transport {
                requests: Arc::new(Mutex::new(Some(req_tx))),
                worker: Some(worker),
                process,
            },
            report,
        ))
    }

    /// A handle to post requests with.
    pub fn poster(&self) -> Poster {
        Poster(self.requests.clone())
    }
}

impl Drop for Transport {
    fn drop(&mut self) {
        // The requests' end goes first: the thread sends what was posted
        // (SIMULATION_ENDS), then closes the socket, so a scheduler waiting
        // on it sees the end.
        drop(self.requests.lock().expect("not poisoned").take());
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
        let Some(mut child) = self.process.lock().expect("not poisoned").child.take() else {
            return;
        };
        // A scheduler that received SIMULATION_ENDS exits by itself; give
        // it a moment, then stop it (it is this run's child).
        let until = Instant::now() + Duration::from_secs(2);
        while Instant::now() < until {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // SAFETY: kill(2) on the process group this run created for the
        // scheduler (its id is the child's, see `open`).
        unsafe {
            libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL);
        }
        let _ = child.wait();
    }
}

/// The simulator's exchange: each request waits for its reply.
pub struct ZmqExchange {
    // Held for its drop; declared first: dropped (SIMULATION_ENDS sent,
    // socket closed) before the replies' channel.
    _transport: Transport,
    poster: Poster,
    replies: mpsc::Receiver<Result<String, String>>,
    report: Arc<Mutex<SchedulerReport>>,
}

impl ZmqExchange {
    /// Starts the scheduler (`--batsim-cmd`) and the socket's thread.
    pub fn open(args: &BatsimArgs) -> Result<(ZmqExchange, Arc<Mutex<SchedulerReport>>)> {
        let (tx, replies) = mpsc::channel();
        let deliver: Deliver = Box::new(move |r, _| tx.send(r).is_ok());
        let (transport, report) = Transport::open(args, deliver)?;
        Ok((
            ZmqExchange {
                poster: transport.poster(),
                _transport: transport,
                replies,
                report: report.clone(),
            },
            report,
        ))
    }
}

impl Exchange for ZmqExchange {
    fn exchange(&mut self, request: &str) -> Result<String, String> {
        if !self.poster.post(request.to_string()) {
            return Err("the transport's thread stopped".into());
        }
        self.replies
            .recv()
            .unwrap_or_else(|_| Err("the transport's thread stopped".into()))
    }

    fn failed(&mut self, why: &str) {
        let mut rep = self.report.lock().expect("not poisoned");
        rep.fault.get_or_insert_with(|| why.to_string());
    }
}

/// The live run's exchange with the scheduler is asynchronous: the policy
/// posts requests to a [`Mailbox`] the live core carries to the transport,
/// and the replies come back as events. This only records a failure.
struct LiveFaults(Arc<Mutex<SchedulerReport>>);

impl Exchange for LiveFaults {
    fn exchange(&mut self, _request: &str) -> Result<String, String> {
        Err("a live run's scheduler is asked asynchronously".into())
    }

    fn failed(&mut self, why: &str) {
        let mut rep = self.0.lock().expect("not poisoned");
        rep.fault.get_or_insert_with(|| why.to_string());
    }
}

/// A reply from the scheduler to a live run, and how long the round trip
/// took.
pub type LiveReply = (Result<String, String>, Duration);

/// What a live run needs of its scheduler, beside the policy.
pub struct LiveScheduler {
    /// The policy's requests, and where its replies go.
    pub mailbox: Mailbox,
    /// The socket (dropped after the run: sends SIMULATION_ENDS).
    pub transport: Transport,
    /// Replies, to forward to the manager's actor.
    pub replies: tokio::sync::mpsc::UnboundedReceiver<LiveReply>,
    /// Read once the run is over.
    pub report: Arc<Mutex<SchedulerReport>>,
}

/// The `batsim` policy for a live run (nodes register later): `jobs`
/// jobs in all if known (none: a serving run, whose clients may submit
/// until it ends); decisions take effect on arrival, one request at a
/// time, an empty one after `keepalive` trace seconds of silence.
pub fn live_policy(
    args: &BatsimArgs,
    jobs: Option<usize>,
    keepalive: f64,
) -> Result<(Policy, LiveScheduler)> {
    let (tx, replies) = tokio::sync::mpsc::unbounded_channel();
    let deliver: Deliver = Box::new(move |r, waited| tx.send((r, waited)).is_ok());
    let (transport, report) = Transport::open(args, deliver)?;
    let mailbox = Mailbox::default();
    let q = BatsimQueue::new(
        Box::new(LiveFaults(report.clone())),
        0,
        jobs.unwrap_or(usize::MAX),
        "live",
        0.0,
    )
    .live(keepalive, mailbox.clone());
    Ok((
        Policy::Queue(Box::new(q)),
        LiveScheduler {
            mailbox,
            transport,
            replies,
            report,
        },
    ))
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
