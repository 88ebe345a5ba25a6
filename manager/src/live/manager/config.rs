//! What a live run is given ([`LiveConfig`]) and what it hands back
//! ([`LiveOutcome`]), with the names of the manager's histograms.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use common::metrics::JobRecord;
use common::policy::PolicyConfig;
use common::time::Time;
use hdrhistogram::Histogram;

/// Everything a live run needs.
#[derive(Debug, Clone)]
pub struct LiveConfig {
    /// Where to listen (UDP).
    pub listen: SocketAddr,
    /// Certificates directory (`libratory certs`).
    pub certs: PathBuf,
    /// Real seconds per trace second.
    pub time_scale: f64,
    /// Emulated nodes to wait for before the replay starts.
    pub expect_nodes: usize,
    /// How long to wait for them.
    pub start_timeout: Duration,
    /// The policy (registered name) and its knobs.
    pub policy: String,
    /// Policy knobs.
    pub policy_config: PolicyConfig,
    /// Nodes report progress this often (real ms).
    pub report_ms: u32,
    /// Nodes send heartbeats this often (real ms).
    pub heartbeat_ms: u32,
    /// Nodes hand their histograms over this often (real ms).
    pub histogram_ms: u32,
    /// A link silent this long is lost (and QUIC's idle timeout).
    pub link_timeout: Duration,
    /// How long to wait for the nodes' histograms at the end.
    pub histogram_timeout: Duration,
    /// Show a live progress bar on stderr.
    pub progress: bool,
    /// Keep serving (client submissions) after the workload is done, until
    /// the shutdown signal.
    pub serve: bool,
    /// Print a plain progress line on stderr this often, and one line per
    /// node process that registers (for logs, where a bar is unreadable).
    pub progress_lines: Option<Duration>,
    /// The run journal: every submission, decision, start and end of a job
    /// is appended to it as it happens (see [`crate::live::journal`]).
    pub journal: Option<crate::live::journal::Journal>,
    /// Publish the state here for the live web view (`--http`).
    pub view: Option<crate::live::liveview::Publisher>,
    /// How the work is spread over threads.
    pub threads: super::Threads,
    /// Told the instant and trace time (`offset`) the replay starts at:
    /// the fault injector (`--faults`) times its faults from it.
    pub replay_started: Option<std::sync::mpsc::Sender<(std::time::Instant, f64)>>,
    /// The external scheduler, when `policy` is `batsim`.
    pub batsim: crate::batsim::BatsimArgs,
    /// Take over an unfinished run from its journal (`libratory resume`).
    pub resume: Option<super::Takeover>,
}

/// Names of the manager's latency histograms (microseconds).
pub const MANAGER_HISTOGRAMS: &[&str] = &[
    "submit_to_decision_us",
    "policy_compute_us",
    "dispatch_to_start_us",
    "report_latency_us",
    "quic_rtt_us",
];

/// The histogram of an external scheduler's round trips (the `batsim`
/// policy's runs only).
pub const SCHEDULER_HISTOGRAM: &str = "scheduler_reply_us";

/// One histogram interval from a node process.
pub struct NodeHistogram {
    /// The node process.
    pub host: String,
    /// Which histogram (`slice_overrun_us`, `tick_jitter_us`,
    /// `share_error_ppm`).
    pub name: String,
    /// What it recorded in the interval.
    pub hist: Histogram<u64>,
    /// Interval start, seconds since the manager started.
    pub start_s: f64,
    /// Interval end (when it arrived), seconds since the manager started.
    pub end_s: f64,
}

/// What a live run produced.
pub struct LiveOutcome {
    /// One record per job, in job-id order, times on the workload's axis
    /// (trace time 0 = the replay start; see the module header).
    pub records: Vec<JobRecord>,
    /// Every part dispatched, in dispatch order, on the same time axis
    /// (finish: the node's completion time; infinite if it never came).
    pub parts: Vec<common::metrics::PartRecord>,
    /// Trace seconds between the first registration (the clock's start)
    /// and the replay start.
    pub replay_offset: Time,
    /// The manager's histograms by name.
    pub histograms: BTreeMap<String, Histogram<u64>>,
    /// Each node process's histograms: (host, name, histogram).
    pub node_histograms: Vec<NodeHistogram>,
    /// Node processes that took part: (host, emulated nodes).
    pub node_processes: Vec<(String, usize)>,
    /// Things the user should know (late starts, lost links...).
    pub warnings: Vec<String>,
    /// Real seconds from the first arrival to the end.
    pub wall_seconds: f64,
}

pub(super) fn new_hist() -> Histogram<u64> {
    Histogram::new(3).expect("3 significant figures is valid")
}
