//! `libratory-node`: hosts emulated compute nodes.
//!
//! Thin entry point: parses the command line, calls the library, prints the
//! error chain. With `--manager ADDR --certs DIR` (no subcommand) the
//! process joins a manager over QUIC and serves its nodes until told to
//! shut down.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

mod bench;

use anyhow::{bail, Context as _};
use clap::{Args, Parser, Subcommand};
use common::share::SpareRule;
use node::standalone::{run_standalone, PartEntry, StandaloneConfig};
use node::{EmulatedNodeSpec, SliceConfig};

#[derive(Parser)]
#[command(
    name = "libratory-node",
    version = version(),
    about = "Emulated compute nodes that really burn CPU, time-sliced by Job Control shares",
    after_help = "Join a manager: libratory-node --manager 10.0.0.1:7878 --certs certs --name lab1 --nodes 8 --capacity 0.25\n\
                  Check a machine without a manager: libratory-node standalone --part estimate=10,actual=10,deadline=20"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Option<Cmd>,
    #[command(flatten)]
    link: LinkArgs,
}

/// Joining a manager (when no subcommand is given).
#[derive(Args)]
struct LinkArgs {
    /// The manager's address (ip:port, UDP).
    #[arg(long)]
    manager: Option<std::net::SocketAddr>,
    /// Certificates directory: ca.pem and node-NAME.pem/.key.
    #[arg(long)]
    certs: Option<PathBuf>,
    /// Certificate name: this process presents node-NAME.
    #[arg(long)]
    name: Option<String>,
    /// Label in the manager's logs and results (default: NAME@hostname).
    #[arg(long)]
    label: Option<String>,
    /// Seconds of silence after which the manager is considered gone.
    #[arg(long, default_value_t = 5.0)]
    link_timeout_s: f64,
    /// Seconds the parts keep running after the manager is lost, while
    /// the link reconnects to the same address (capped exponential
    /// backoff); past it the process stops its parts and exits 1. 60 s
    /// covers a manager restarted from its journal (a few seconds) with a
    /// wide margin, and bounds what an orphaned node process burns.
    #[arg(long, default_value_t = node::link::DEFAULT_GRACE_S)]
    manager_grace_s: f64,
    /// Seed of the reconnection backoff's jitter (default: from the
    /// process id and the clock; printed at the start either way).
    #[arg(long)]
    reconnect_seed: Option<u64>,
    /// Apply the link fault written in this file on SIGUSR1 (`partition
    /// SECONDS` or `delay MS JITTER_MS SECONDS SEED`; `libratory run
    /// --faults` writes it).
    #[arg(long, value_name = "FILE")]
    fault_control: Option<PathBuf>,
    #[command(flatten)]
    node: NodeArgs,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run nodes against a local list of parts and print the shares each
    /// part received (no manager needed).
    Standalone(StandaloneArgs),
    /// Host idle nodes (for measuring their cost) until the time is up.
    Host(HostArgs),
    /// Run the benchmarks: share fidelity against the kernel's CPU
    /// bandwidth control, overhead, and the cost of idle nodes.
    Bench(bench::BenchArgs),
    /// Check that this host reaches the manager's UDP port and that the
    /// manager takes its certificate (answered by `libratory probe-server`;
    /// scripts/preflight.sh runs both).
    Probe(ProbeArgs),
    /// Check that this host's certificates directory holds no key but its
    /// own (node-NAME.key, whose certificate is node NAME's): not the CA's,
    /// the client's or another node's (scripts/preflight.sh runs it on
    /// every host). Exit 1 naming each file otherwise.
    Keys(KeysArgs),
}

#[derive(Args)]
struct KeysArgs {
    /// Certificates directory.
    #[arg(long)]
    certs: PathBuf,
    /// This host's node name (its key is node-NAME.key).
    #[arg(long)]
    name: String,
}

#[derive(Args)]
struct ProbeArgs {
    /// The manager's address (ip:port, UDP).
    #[arg(long)]
    manager: std::net::SocketAddr,
    /// Certificates directory: ca.pem and node-NAME.pem/.key.
    #[arg(long)]
    certs: PathBuf,
    /// Certificate name: the probe presents node-NAME.
    #[arg(long)]
    name: String,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 5.0)]
    timeout_s: f64,
}

#[derive(Args, Clone)]
struct NodeArgs {
    /// Emulated nodes in this process.
    #[arg(long, default_value_t = 1)]
    nodes: usize,
    /// Processor speed relative to the reference node.
    #[arg(long, default_value_t = 1.0)]
    speed: f64,
    /// Fraction of one host core per node (sum over nodes <= executors).
    #[arg(long, default_value_t = 1.0)]
    capacity: f64,
    /// Node memory (MB).
    #[arg(long, default_value_t = 1 << 20)]
    memory_mb: u64,
    /// Node disk (MB).
    #[arg(long, default_value_t = 1 << 20)]
    disk_mb: u64,
    /// Real seconds per trace second.
    #[arg(long, default_value_t = 1e-3)]
    time_scale: f64,
    /// Slicing period (real ms).
    #[arg(long, default_value_t = 10.0)]
    period_ms: f64,
    /// Control tick (real ms).
    #[arg(long, default_value_t = 100.0)]
    tick_ms: f64,
    /// Spare-capacity rule: proportional (default), idle, highest-return.
    #[arg(long, default_value = "proportional", value_parser = parse_spare)]
    spare: SpareRule,
    /// Executor threads (0: one per host core).
    #[arg(long, default_value_t = 0)]
    executors: usize,
    /// Shortest slice (real us; the last bit of a part's work excepted).
    #[arg(long, default_value_t = 250)]
    min_slice_us: u64,
}

/// `--version`: the crate version and the wire protocol's, which is what
/// two node processes and a manager must agree on (pre-flight compares it
/// across hosts).
fn version() -> &'static str {
    static V: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    V.get_or_init(|| {
        format!(
            "{} (protocol {})",
            env!("CARGO_PKG_VERSION"),
            common::protocol::PROTOCOL_VERSION
        )
    })
}

/// A positive, finite number of seconds from the command line, or an error
/// naming the option (`Duration::from_secs_f64` would panic on a negative
/// or NaN value).
pub(crate) fn seconds(option: &str, s: f64) -> anyhow::Result<Duration> {
    // At most 10^9 s (31 years): instants that far on still exist.
    if !(s.is_finite() && s > 0.0 && s <= 1e9) {
        bail!("{option} must be a number of seconds > 0 and at most 1e9, got {s}");
    }
    Ok(Duration::from_secs_f64(s))
}

fn parse_spare(s: &str) -> Result<SpareRule, String> {
    SpareRule::parse(s)
        .ok_or_else(|| format!("unknown spare rule {s:?} (proportional, idle, highest-return)"))
}

impl NodeArgs {
    fn node(&self) -> EmulatedNodeSpec {
        EmulatedNodeSpec {
            id: 0,
            speed: self.speed,
            capacity: self.capacity,
            memory_kb: self.memory_mb.saturating_mul(1024),
            disk_mb: self.disk_mb,
        }
    }

    fn slice(&self) -> anyhow::Result<SliceConfig> {
        let ms = |name: &str, v: f64| {
            if v.is_finite() && v > 0.0 && v <= 1e6 {
                Ok(Duration::from_secs_f64(v / 1000.0))
            } else {
                bail!("--{name} must be > 0 and at most 1e6 (ms), got {v}")
            }
        };
        let period = ms("period-ms", self.period_ms)?;
        Ok(SliceConfig {
            time_scale: self.time_scale,
            period,
            tick: ms("tick-ms", self.tick_ms)?,
            spare_rule: self.spare,
            min_slice: Duration::from_micros(self.min_slice_us),
            max_slice: period.max(Duration::from_micros(self.min_slice_us)),
            ..SliceConfig::default()
        })
    }
}

#[derive(Args)]
struct StandaloneArgs {
    /// TOML file with one `[[part]]` table per part (estimate, actual,
    /// deadline; optional at, job, memory_mb, disk_mb, ret).
    #[arg(long)]
    parts: Option<PathBuf>,
    /// A part: `estimate=..,actual=..,deadline=..[,at=..][,job=..]` (trace
    /// seconds; deadline relative to arrival `at`). Repeatable.
    #[arg(long = "part")]
    part: Vec<String>,
    /// Give up after this many wall seconds.
    #[arg(long, default_value_t = 600.0)]
    limit_s: f64,
    #[command(flatten)]
    node: NodeArgs,
}

#[derive(Args)]
struct HostArgs {
    /// Wall seconds to stay up.
    #[arg(long = "for-s", default_value_t = 10.0)]
    for_s: f64,
    #[command(flatten)]
    node: NodeArgs,
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    match run(Cli::parse()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!(
                "libratory-node: error: {}",
                common::errors::said_once(e.as_ref())
            );
            ExitCode::FAILURE
        }
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown-host".into())
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let Some(cmd) = cli.cmd else {
        let l = cli.link;
        let (Some(manager), Some(certs)) = (l.manager, l.certs) else {
            bail!(
                "give --manager ADDR --certs DIR to join a manager, or a subcommand (see --help)"
            );
        };
        let name = l.name.unwrap_or_else(hostname);
        let label = l.label.unwrap_or_else(|| format!("{name}@{}", hostname()));
        node::link::run(node::link::LinkConfig {
            manager,
            certs,
            name,
            label,
            node: l.node.node(),
            nodes: l.node.nodes,
            slice: l.node.slice()?,
            executors: l.node.executors,
            link_timeout: seconds("--link-timeout-s", l.link_timeout_s)?,
            grace: seconds("--manager-grace-s", l.manager_grace_s)?,
            reconnect_seed: l.reconnect_seed.unwrap_or_else(|| {
                let nanos = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.subsec_nanos());
                (u64::from(std::process::id()) << 32) ^ u64::from(nanos)
            }),
            fault_control: l.fault_control,
            // Read once here (docs/cli.md's table of environment variables).
            report_tolerance: match std::env::var(node::exception::TOLERANCE_ENV) {
                Ok(v) => Some(node::exception::tolerance_override(&v).map_err(anyhow::Error::msg)?),
                Err(_) => None,
            },
        })?;
        return Ok(ExitCode::SUCCESS);
    };
    match cmd {
        Cmd::Standalone(a) => {
            let mut parts = Vec::new();
            if let Some(path) = &a.parts {
                parts.extend(PartEntry::load(path)?);
            }
            for p in &a.part {
                parts.push(PartEntry::parse(p)?);
            }
            let report = run_standalone(StandaloneConfig {
                node: a.node.node(),
                nodes: a.node.nodes,
                slice: a.node.slice()?,
                executors: a.node.executors,
                parts,
                limit: seconds("--limit-s", a.limit_s)?,
            })?;
            report
                .print(std::io::stdout().lock())
                .context("writing the report")?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Host(a) => {
            let r = bench::host_idle(
                a.node.node(),
                a.node.nodes,
                a.node.slice()?,
                a.node.executors,
                seconds("--for-s", a.for_s)?,
            )?;
            println!("{r}");
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Probe(p) => {
            if !(p.timeout_s > 0.0 && p.timeout_s.is_finite()) {
                bail!("--timeout-s must be > 0, got {}", p.timeout_s);
            }
            let rtt = node::probe::probe(
                p.manager,
                &p.certs,
                &p.name,
                Duration::from_secs_f64(p.timeout_s),
            )
            .with_context(|| format!("probing the manager at {} as node-{}", p.manager, p.name))?;
            println!(
                "probe: {} reached over UDP, certificate node-{} accepted ({:.1} ms)",
                p.manager,
                p.name,
                rtt.as_secs_f64() * 1e3
            );
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Keys(k) => {
            // A node host holds its own key only: the CA's key signs any
            // identity, a client's submits jobs, another node's
            // impersonates that node.
            let foreign = net::roles::foreign_keys(&k.certs, &k.name)
                .with_context(|| format!("listing the keys in {}", k.certs.display()))?;
            if !foreign.is_empty() {
                bail!(
                    "this host holds key(s) that are not its own (node-{}); remove them:\n  {}",
                    k.name,
                    foreign.join("\n  ")
                );
            }
            println!(
                "keys: {} holds node-{}'s own key only",
                k.certs.display(),
                k.name
            );
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Bench(b) => {
            bench::run(&b, &mut std::io::stdout().lock())?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
