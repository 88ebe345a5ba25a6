//! `libratory`: the user-facing command. It only parses arguments and
//! hands each subcommand to its library module (`lab::*`, `live::*`,
//! `cluster`); errors are printed with their whole chain and a non-zero
//! exit code.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

use libratory_manager::batsim::BatsimArgs;
use libratory_manager::calibrate;
use libratory_manager::cluster::{self, launch};
use libratory_manager::environment::Environment;
use libratory_manager::lab::{compare, figures, info, report, simulate, sweep};
use libratory_manager::live::{certs, client, demo, liveview, loadtest, probe, recover};

/// `--http ADDR`: a port alone binds loopback.
fn parse_http(s: &str) -> Result<std::net::SocketAddr, String> {
    liveview::parse_addr(s).map_err(|e| e.to_string())
}

/// Deadline- and budget-aware cluster admission control: simulate the
/// Libra family of policies and their baselines on real traces.
#[derive(Parser)]
#[command(name = "libratory", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a workload through policies in virtual time and compare them.
    ///
    /// With no arguments: the Libra paper's synthetic batch (100 jobs, 10 nodes),
    /// Libra against PBS FIFO.
    Simulate(simulate::SimulateArgs),
    /// Vary one parameter over values, times policies, times seeds, in
    /// parallel; write a tidy CSV and one SVG plot per metric.
    ///
    /// Example: libratory sweep --preset libra-plus-dollar --param beta
    /// --values 0.1,0.3,0.5,0.7,1.0 --policies libra-plus-dollar,libra
    /// --seeds 3 --out runs/beta
    Sweep(sweep::SweepArgs),
    /// Regenerate a paper's evaluation figures (a paper by its preset's
    /// name: libra, libra-plus-dollar, libra-risk, libra-sla, vqops;
    /// a figure id, or all): sweeps, SVG plots and an index.md of tables.
    Figures(figures::FiguresArgs),
    /// See runs: one self-contained report.html with the summary table,
    /// every metric side by side, and per run and policy a Gantt chart of
    /// the executed schedule, utilisation and queue plots (also as SVGs).
    Report(report::ReportArgs),
    /// Compare two run directories job by job: the share of identical
    /// admission decisions, every metric side by side, and the jobs that
    /// differ with why (e.g. a live run against the simulator).
    ///
    /// Example: libratory compare runs/live runs/sim --policy libra
    Compare(compare::CompareArgs),
    /// Load a serving manager (`run --serve`) with submissions at stepped
    /// rates over QUIC: latency percentiles, throughput, an echo baseline,
    /// CPU and memory of the manager and local node processes, a
    /// saturation curve (SVG).
    ///
    /// Example: libratory loadtest --manager 127.0.0.1:7878 --certs certs
    /// --rates 100,1000,5000 --seconds 3
    Loadtest(loadtest::LoadtestArgs),
    /// Measure how far this host can compress trace time: run one
    /// preset's workload live at several time scales (local node
    /// processes) and compare each with the simulator; print and plot the
    /// agreement, recommend the smallest safe time scale and store it for
    /// `libratory run`'s warning.
    ///
    /// Example: libratory calibrate --scales 0.1,0.05,0.02 --out runs/calibrate
    Calibrate(calibrate::CalibrateArgs),
    /// Run a live demo: make certificates, start local `libratory-node`
    /// processes, replay a built-in workload over QUIC, print the summary.
    Demo {
        /// Node processes to start.
        #[arg(long, default_value_t = 2)]
        processes: usize,
        /// Emulated nodes per process.
        #[arg(long, default_value_t = 4)]
        nodes: usize,
        /// Jobs of the Libra paper's batch to replay.
        #[arg(long, default_value_t = 40)]
        jobs: usize,
        /// UDP port of the manager on 127.0.0.1 (0: any free port).
        #[arg(long, default_value_t = 0)]
        port: u16,
        /// Results directory.
        #[arg(long, default_value = "runs/demo")]
        out: PathBuf,
        /// Serve a read-only live view of the run at this address (PORT
        /// binds 127.0.0.1; see docs/cli.md).
        #[arg(long, value_name = "ADDR", value_parser = parse_http)]
        http: Option<std::net::SocketAddr>,
        /// The token the live view requires off loopback (default: a
        /// random one, printed with the view's address).
        #[arg(long, value_name = "TOKEN", requires = "http")]
        http_token: Option<String>,
        /// A fault scenario (docs/faults.md) executed on the node
        /// processes: crashes (SIGKILL, restart), hangs (SIGSTOP/SIGCONT),
        /// partitions and delays (their link layer), manager crashes.
        #[arg(long, value_name = "FILE")]
        faults: Option<PathBuf>,
        /// The policy (see `libratory policies`); `batsim` runs an
        /// external Batsim scheduler (--batsim-cmd).
        #[arg(long, default_value = "libra")]
        policy: String,
        /// The external scheduler of the `batsim` policy.
        #[command(flatten)]
        batsim: BatsimArgs,
    },
    /// Rebuild the result files of a live run from its journal (a manager
    /// that was killed, ran out of memory or lost power).
    Recover {
        /// The run directory (holding journal.jsonl).
        run: PathBuf,
        /// Rebuild even a run that ended and wrote its own results (which
        /// have the latency histograms a journal lacks).
        #[arg(long)]
        force: bool,
    },
    /// Continue an unfinished live run after its manager died: same
    /// address, books rebuilt from its journal, the node processes' running
    /// parts taken back, the replay going on where it stopped.
    Resume {
        /// The run directory (holding journal.jsonl).
        run: PathBuf,
        /// Print a progress line every this many seconds (instead of the
        /// bar).
        #[arg(long)]
        progress_every: Option<f64>,
        /// The fault that killed the manager (given by a run's supervisor
        /// executing a `manager-crash` fault), said in the journal.
        #[arg(long, hide = true)]
        after_fault: Option<String>,
    },
    /// Execute a fault scenario's node faults on the node processes the
    /// launch scripts started (through each host's agent, over ssh), timed
    /// from the run's replay start, and report each to the manager
    /// (docs/faults.md; scripts/launch.sh --faults runs it).
    Inject {
        /// The cluster configuration.
        #[arg(long)]
        config: PathBuf,
        /// The fault scenario (default: the configuration's [workload]
        /// faults).
        #[arg(long)]
        faults: Option<PathBuf>,
        /// The run directory the manager writes (its journal times the
        /// faults).
        #[arg(long)]
        run: PathBuf,
    },
    /// Simulate a live run with what its journal observed: the same
    /// arrivals, node processes joining, stopping and lost when they
    /// were, the same policy and settings; a run directory for `compare`
    /// and `report` (docs/faults.md, "Replay").
    Replay {
        /// The live run's directory (holding journal.jsonl).
        run: PathBuf,
        /// Output directory (default: RUN-replay beside it).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Run a workload live on a cluster described by a configuration file.
    Run {
        /// The cluster configuration (cluster-configs/*.toml).
        #[arg(long)]
        config: PathBuf,
        /// Also start the node processes of hosts without an ssh target
        /// on this machine.
        #[arg(long)]
        spawn_local: bool,
        /// Results directory (default: the config's [output] dir, else
        /// runs/<config name>).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Keep serving client submissions (`libratory submit`) after the
        /// workload, until Ctrl-C.
        #[arg(long)]
        serve: bool,
        /// Print a plain progress line every this many seconds (and one per
        /// node process that registers) instead of a progress bar.
        #[arg(long)]
        progress_every: Option<f64>,
        /// Serve a read-only live view of the run (web page and JSON) at
        /// this address: PORT or :PORT binds 127.0.0.1, IP:PORT as given.
        #[arg(long, value_name = "ADDR", value_parser = parse_http)]
        http: Option<std::net::SocketAddr>,
        /// The token the live view requires: off loopback always (default:
        /// a random one, printed with the view's address), on loopback
        /// when given.
        #[arg(long, value_name = "TOKEN", requires = "http")]
        http_token: Option<String>,
        /// A fault scenario (docs/faults.md; default: the configuration's
        /// [workload] faults): node faults executed on the node processes
        /// --spawn-local starts (others: `libratory inject`, which
        /// scripts/launch.sh --faults runs), manager crashes by a
        /// supervisor.
        #[arg(long, value_name = "FILE")]
        faults: Option<PathBuf>,
        /// The external scheduler, when the configuration's policy is
        /// `batsim`.
        #[command(flatten)]
        batsim: BatsimArgs,
    },
    /// Cluster configurations: check one, or print what the launch scripts
    /// need from it.
    Config {
        #[command(subcommand)]
        cmd: ConfigCmd,
    },
    /// Answer pre-flight probes (`libratory-node probe`) on the manager's
    /// address with the manager's certificate, then exit.
    ProbeServer {
        /// The cluster configuration: its [manager] listen and certs.
        #[arg(long)]
        config: PathBuf,
        /// Serve at most this many seconds.
        #[arg(long, default_value_t = 30.0)]
        for_s: f64,
        /// Exit as soon as this many probes succeeded (0: serve --for-s).
        #[arg(long, default_value_t = 0)]
        expect: usize,
    },
    /// Make the cluster's certificates: a CA, the manager's, a client's
    /// (submit, quote, look), a viewer's (look only) and one per node name;
    /// add node certificates; revoke identities.
    Certs {
        /// Directory to write them to.
        #[arg(long)]
        out: PathBuf,
        /// Node process names (each gets node-NAME.pem/.key).
        #[arg(long, value_delimiter = ',')]
        nodes: Vec<String>,
        /// Extra names for the manager certificate (host names).
        #[arg(long, value_delimiter = ',')]
        manager_names: Vec<String>,
        /// Add node certificates to an existing CA in --out (and the
        /// operator's, when it has none).
        #[arg(long)]
        add: bool,
        /// Revoke these identities (node-NAME or a node name, client,
        /// viewer) of the CA in --out: their serials go into ca.crl.pem,
        /// which a running manager re-reads on SIGHUP.
        #[arg(long, value_delimiter = ',', value_name = "NAME")]
        revoke: Vec<String>,
    },
    /// Submit a job to a running manager; answers at once: accepted (nodes,
    /// cost) or rejected with the reason. Exit code 3 when rejected.
    Submit {
        #[command(flatten)]
        conn: client::ConnArgs,
        #[command(flatten)]
        job: client::JobArgs,
        /// Print the answer as JSON.
        #[arg(long)]
        json: bool,
    },
    /// What the running policy would answer a job now (accept on which
    /// nodes at what cost, reject and why, or queue), with per-node prices
    /// under Libra+$; nothing is submitted.
    Quote {
        #[command(flatten)]
        conn: client::ConnArgs,
        #[command(flatten)]
        job: client::JobArgs,
        /// Print the answer as JSON.
        #[arg(long)]
        json: bool,
    },
    /// The running cluster: nodes, their jobs and shares, recent decisions.
    Status {
        #[command(flatten)]
        conn: client::ConnArgs,
        #[command(flatten)]
        view: client::StatusArgs,
        /// Print the answer as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List the registered policies.
    Policies,
    /// List the presets and their parameters.
    Presets {
        /// Show every parameter of this preset.
        name: Option<String>,
    },
    /// Statistics of the last N jobs of an SWF trace (as the papers count).
    TraceStats {
        /// The trace (.swf or .swf.gz).
        trace: PathBuf,
        /// Window sizes.
        #[arg(long, value_delimiter = ',', default_value = "5000,3000,1000")]
        last: Vec<usize>,
    },
}

#[derive(Subcommand)]
enum ConfigCmd {
    /// Parse and check a configuration; print a one-line summary.
    Check {
        /// The cluster configuration.
        #[arg(long)]
        config: PathBuf,
    },
    /// Print the resolved launch plan: hosts, ssh targets and arguments,
    /// work directories, node arguments, manager addresses, sbatch options.
    Show {
        /// The cluster configuration.
        #[arg(long)]
        config: PathBuf,
        /// shell (bash assignments to eval), json, or sbatch (options, one
        /// per line).
        #[arg(long, value_enum, default_value = "json")]
        format: launch::Format,
    },
}

// The system allocator (glibc's), at its defaults. mimalloc saved a short
// `simulate` process processor time (glibc took 1.42x its CPU on the
// 4,531-job EASY run with `--outputs summary`), but under the live
// manager it stalled admissions: `live_latency`'s 10,000/s step read
// 38-41x the echo p99 with it against 1.23x without, and the sustained
// step's p99 54-94 ms against 3.4 ms (same build otherwise, one run each,
// 2026-11-25). One allocator serves both, and the live path is the one
// measured against its targets.

fn main() -> ExitCode {
    // Warnings of the live runtime (a refused connection, naming the peer)
    // go to stderr; RUST_LOG changes the level.
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::builder()
                .with_default_directive(tracing::level_filters::LevelFilter::WARN.into())
                .from_env_lossy(),
        )
        .with_writer(std::io::stderr)
        .init();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let cli = simulate_alone(&args).unwrap_or_else(|| Cli::parse_from(args));
    // The environment variables the commands use, read here only.
    let env = Environment::from_process();
    match run(cli, &env) {
        Ok(code) => code,
        Err(e) => {
            eprintln!(
                "libratory: error: {}",
                common::errors::said_once(e.as_ref())
            );
            ExitCode::FAILURE
        }
    }
}

/// `libratory simulate ...` parsed by its own arguments alone. Building
/// the whole command line's parser (every subcommand's arguments) took
/// ~0.4 ms, several percent of a short simulation run from a sweep script.
/// Anything this parser does not accept (`--help`, a mistake) returns
/// `None`, and the full parser then answers as it always does, so help and
/// error messages are unchanged.
fn simulate_alone(args: &[std::ffi::OsString]) -> Option<Cli> {
    use clap::{Args, FromArgMatches};
    if args.get(1).is_none_or(|a| a != "simulate") {
        return None;
    }
    let matches = simulate::SimulateArgs::augment_args(clap::Command::new("simulate"))
        .try_get_matches_from(&args[1..])
        .ok()?;
    let a = simulate::SimulateArgs::from_arg_matches(&matches).ok()?;
    Some(Cli {
        command: Command::Simulate(a),
    })
}

/// The live view's address and token from `--http` and `--http-token`.
fn view(http: Option<std::net::SocketAddr>, token: Option<String>) -> Option<liveview::ViewAddr> {
    http.map(|addr| liveview::ViewAddr { addr, token })
}

fn run(cli: Cli, env: &Environment) -> Result<ExitCode> {
    // Commands that return an exit code of their own, then the rest.
    match cli.command {
        Command::Simulate(a) => return simulate::run(a, env),
        Command::Sweep(a) => return sweep::run(a),
        Command::Figures(a) => return figures::run(a),
        Command::Report(a) => return report::run(a),
        Command::Compare(a) => return compare::run(&a),
        Command::Loadtest(a) => return loadtest::run(a),
        Command::Calibrate(a) => return calibrate::run(a, env),
        Command::Submit { conn, job, json } => return client::submit(&conn, &job, json),
        Command::Quote { conn, job, json } => return client::quote(&conn, &job, json),
        Command::Status { conn, view, json } => return client::status(&conn, &view, json),
        Command::Certs {
            out,
            nodes,
            manager_names,
            add,
            revoke,
        } => certs::certs_or_revoke(&out, &nodes, &manager_names, add, &revoke)?,
        Command::Run {
            config,
            spawn_local,
            out,
            serve,
            progress_every,
            http,
            http_token,
            faults,
            batsim,
        } => libratory_manager::live::run::from_file(
            &config,
            spawn_local,
            out,
            serve,
            progress_every,
            view(http, http_token),
            faults.as_deref(),
            &batsim,
            env,
        )?,
        Command::Recover { run, force } => recover::recover(&run, force)?,
        Command::Resume {
            run,
            progress_every,
            after_fault,
        } => libratory_manager::live::resume::resume(
            &run,
            libratory_manager::live::progress::Progress::choose(
                progress_every,
                std::io::IsTerminal::is_terminal(&std::io::stderr()),
            )?,
            after_fault.as_deref(),
            env,
        )?,
        Command::Replay { run, out } => libratory_manager::replay::run(&run, out)?,
        Command::Inject {
            config,
            faults,
            run,
        } => libratory_manager::live::inject::cmd::inject(&config, faults.as_deref(), &run)?,
        Command::Config { cmd } => match cmd {
            ConfigCmd::Check { config } => libratory_manager::live::setup::config_check(&config)?,
            ConfigCmd::Show { config, format } => cluster::show(&config, format)?,
        },
        Command::ProbeServer {
            config,
            for_s,
            expect,
        } => probe::server(&config, for_s, expect)?,
        Command::Demo {
            processes,
            nodes,
            jobs,
            port,
            out,
            http,
            http_token,
            faults,
            policy,
            batsim,
        } => demo::demo(
            processes,
            nodes,
            jobs,
            port,
            &out,
            view(http, http_token),
            faults.as_deref(),
            &policy,
            &batsim,
            env,
        )?,
        Command::Policies => info::policies(),
        Command::Presets { name } => info::presets(name.as_deref())?,
        Command::TraceStats { trace, last } => info::trace_stats(&trace, &last)?,
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<std::ffi::OsString> {
        line.split_whitespace().map(Into::into).collect()
    }

    /// The short-cut parser gives what the full one gives, and leaves to
    /// the full one whatever it does not accept.
    #[test]
    fn simulate_alone_parses_as_the_full_parser() {
        for line in [
            "libratory simulate",
            "libratory simulate --preset libra-plus-dollar --policies fcfs-bf,libra --seed 7",
            "libratory simulate --set beta=0.5 --set nodes=64 --outputs summary,jobs-csv --out x",
            "libratory simulate --trace a.swf.gz --preset=libra-sla",
        ] {
            let fast = simulate_alone(&args(line)).unwrap_or_else(|| panic!("{line}"));
            let full = Cli::try_parse_from(args(line)).unwrap();
            let (Command::Simulate(a), Command::Simulate(b)) = (fast.command, full.command) else {
                panic!("{line}: not simulate");
            };
            assert_eq!(format!("{a:?}"), format!("{b:?}"), "{line}");
        }
        for line in [
            "libratory simulate --help",
            "libratory simulate --bogus",
            "libratory simulate --seed x",
            "libratory sweep --preset libra",
            "libratory",
        ] {
            assert!(simulate_alone(&args(line)).is_none(), "{line}");
        }
    }
}
