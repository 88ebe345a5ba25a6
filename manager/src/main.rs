//! `libratory`: the user-facing command. Thin: it parses arguments, calls
//! the core in `common` and writes what it returns; errors are printed
//! with their whole chain and a non-zero exit code.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use common::experiment::Experiment;
use common::metrics::Summary;
use common::sim::SimOutcome;
use common::swf::{SwfReader, WindowStats};
use common::workload::{self, Source, PRESETS};
use serde::Serialize;

use libratory_manager::{config::ClusterConfig, output, runcmd};

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
    /// With no arguments: seed 003's synthetic batch (100 jobs, 10 nodes),
    /// Libra against PBS FIFO.
    Simulate(SimulateArgs),
    /// Run a live demo: make certificates, start local `libratory-node`
    /// processes, replay a built-in workload over QUIC, print the summary.
    Demo {
        /// Node processes to start.
        #[arg(long, default_value_t = 2)]
        processes: usize,
        /// Emulated nodes per process.
        #[arg(long, default_value_t = 4)]
        nodes: usize,
        /// Jobs of seed 003's batch to replay.
        #[arg(long, default_value_t = 40)]
        jobs: usize,
        /// UDP port of the manager (127.0.0.1).
        #[arg(long, default_value_t = 7878)]
        port: u16,
        /// Results directory (default runs/demo).
        #[arg(long, default_value = "runs/demo")]
        out: PathBuf,
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
    },
    /// Make the cluster's certificates: a CA, the manager's and one per
    /// node process name.
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
        /// Add node certificates to an existing CA in --out.
        #[arg(long)]
        add: bool,
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

#[derive(clap::Args)]
struct SimulateArgs {
    /// SWF trace (.swf or .swf.gz) for trace presets. Default: the SDSC SP2
    /// trace in ../shared/traces if it is there.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Experiment preset (see `libratory presets`).
    #[arg(long, default_value = "libra")]
    preset: String,
    /// Policies to compare, comma-separated (default: the preset's).
    #[arg(long, value_delimiter = ',')]
    policies: Option<Vec<String>>,
    /// Seed of every random draw (default: the preset's, printed and
    /// stored in summary.json).
    #[arg(long)]
    seed: Option<u64>,
    /// Override a parameter: --set beta=0.5 --set arrival_delay_factor=0.25
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Output directory (default: runs/<preset>-seed<seed>).
    #[arg(long)]
    out: Option<PathBuf>,
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("libratory: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Simulate(a) => simulate(a),
        Command::Certs {
            out,
            nodes,
            manager_names,
            add,
        } => {
            runcmd::certs(&out, &nodes, &manager_names, add)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Run {
            config,
            spawn_local,
            out,
        } => {
            let cfg = ClusterConfig::load(&config)?;
            let out = out.or_else(|| cfg.output.dir.clone()).unwrap_or_else(|| {
                let stem = config
                    .file_stem()
                    .map_or("run".into(), |s| s.to_string_lossy().to_string());
                PathBuf::from("runs").join(stem)
            });
            runcmd::run(&cfg, &out, spawn_local, std::io::stderr().is_terminal())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Demo {
            processes,
            nodes,
            jobs,
            port,
            out,
        } => {
            let certs = out.join("certs");
            if !certs.join("ca.key").exists() {
                runcmd::certs(&certs, &["local".to_string()], &[], false)?;
            }
            let cfg = runcmd::demo_config(
                &std::fs::canonicalize(&certs)?,
                port,
                processes,
                nodes,
                jobs,
            );
            runcmd::run(&cfg, &out, true, std::io::stderr().is_terminal())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Policies => {
            for e in common::policy::REGISTRY {
                println!("{:<18} {}", e.name, e.about);
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Presets { name } => {
            match name {
                None => {
                    for (n, about) in PRESETS {
                        println!("{n:<18} {about}");
                    }
                }
                Some(n) => {
                    let e = Experiment::preset(&n)?;
                    println!("{}", serde_json::to_string_pretty(&e)?);
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::TraceStats { trace, last } => {
            let reader = SwfReader::open(&trace)?;
            for (k, v) in &reader.header().fields {
                println!("; {k}: {v}");
            }
            let max = last.iter().copied().max().unwrap_or(0);
            let (_, records) = reader.into_last(max)?;
            for n in last {
                let window = &records[records.len().saturating_sub(n)..];
                println!(
                    "\nlast {n} jobs of {}:\n{}",
                    trace.display(),
                    WindowStats::compute(window)
                );
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Where the shared traces are when running from a checkout: beside the
/// project, as `../shared/traces`.
fn default_trace() -> Option<PathBuf> {
    let name = "SDSC-SP2-1998-4.2-cln.swf.gz";
    let candidates = [
        PathBuf::from("../shared/traces").join(name),
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/traces")
            .join(name),
    ];
    candidates.into_iter().find(|p| p.is_file())
}

#[derive(Serialize)]
struct SummaryFile<'a> {
    libratory_version: &'static str,
    seed: u64,
    preset: &'a str,
    trace: Option<String>,
    experiment: &'a Experiment,
    workload: WorkloadFacts<'a>,
    policies: &'a [Summary],
}

#[derive(Serialize)]
struct WorkloadFacts<'a> {
    jobs: usize,
    nodes: usize,
    first_arrival: f64,
    last_arrival: f64,
    odd_records: &'a workload::OddRecords,
}

fn simulate(a: SimulateArgs) -> Result<ExitCode> {
    let mut exp = Experiment::preset(&a.preset)?;
    if let Some(seed) = a.seed {
        exp.params.seed = seed;
    }
    exp.set_all(a.sets.iter().map(String::as_str))
        .context("in --set")?;
    if let Some(p) = a.policies {
        exp.policies = p;
    }
    if exp.policies.is_empty() {
        bail!("no policies to run: give --policies");
    }
    exp.check_policies()?;
    let trace = match exp.params.source {
        Source::Trace => Some(match a.trace {
            Some(t) => t,
            None => default_trace().with_context(|| {
                format!(
                    "preset '{}' reads a trace and none was found at ../shared/traces: give --trace FILE.swf[.gz]",
                    a.preset
                )
            })?,
        }),
        Source::Synthetic003 => None,
    };
    let seed = exp.params.seed;
    println!(
        "libratory simulate: preset {}, seed {seed}{}",
        exp.params.preset,
        if a.seed.is_none() { " (default)" } else { "" }
    );
    let t0 = Instant::now();
    let wl = workload::build(&exp.params, trace.as_deref())?;
    let load_time = t0.elapsed();
    let first = wl.jobs.first().map_or(0.0, |j| j.spec.details.submit_time);
    let last = wl.jobs.last().map_or(0.0, |j| j.spec.details.submit_time);
    match &trace {
        Some(t) => println!(
            "workload: last {} jobs of {} ({:.2} s to read), {} nodes, arrival delay factor {}, inaccuracy {} ({:?})",
            wl.jobs.len(),
            t.display(),
            load_time.as_secs_f64(),
            exp.params.nodes,
            exp.params.arrival_delay_factor,
            exp.params.inaccuracy,
            exp.params.inaccuracy_form
        ),
        None => println!(
            "workload: synthetic batch of {} jobs (seed 003), {} nodes",
            wl.jobs.len(),
            exp.params.nodes
        ),
    }
    let o = &wl.odd;
    println!(
        "odd records (kept, see docs/workloads.md): never ran {}, no requested time {}, ran past request {}, procs from field 5 {}, procs unknown {}, procs over machine {}, estimate floored {}",
        o.never_ran,
        o.no_requested_time,
        o.overran_request,
        o.procs_from_allocated,
        o.procs_unknown,
        o.procs_over_machine,
        o.estimate_floored
    );
    println!(
        "class spread (sd/mean) {}; policies: {}",
        exp.params.spread,
        exp.policies.join(", ")
    );

    // Policies are independent: run them side by side.
    let results: Vec<Result<(SimOutcome, Summary, f64)>> = std::thread::scope(|s| {
        let handles: Vec<_> = exp
            .policies
            .iter()
            .map(|name| {
                let (exp, wl) = (&exp, &wl);
                s.spawn(move || {
                    let t = Instant::now();
                    let (o, sum) = exp.run_policy(name, wl)?;
                    Ok((o, sum, t.elapsed().as_secs_f64()))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("simulation thread panicked"))
            .collect()
    });
    let mut outcomes = Vec::new();
    for r in results {
        outcomes.push(r?);
    }
    let summaries: Vec<Summary> = outcomes.iter().map(|o| o.1.clone()).collect();
    println!();
    output::print_table(&mut std::io::stdout(), &summaries)?;
    println!();
    for (o, s, secs) in &outcomes {
        println!(
            "{:<18} {:.3} s, {:.0} jobs/s simulated ({} events); accepted with estimate > deadline: {} ({} met)",
            s.policy,
            secs,
            wl.jobs.len() as f64 / secs.max(1e-9),
            o.events,
            s.accepted_estimate_over_deadline,
            s.accepted_estimate_over_deadline_met
        );
    }

    let out = a
        .out
        .unwrap_or_else(|| PathBuf::from(format!("runs/{}-seed{seed}", exp.params.preset)));
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let file = SummaryFile {
        libratory_version: env!("CARGO_PKG_VERSION"),
        seed,
        preset: &exp.params.preset,
        trace: trace.as_ref().map(|t| t.display().to_string()),
        experiment: &exp,
        workload: WorkloadFacts {
            jobs: wl.jobs.len(),
            nodes: exp.params.nodes,
            first_arrival: first,
            last_arrival: last,
            odd_records: &wl.odd,
        },
        policies: &summaries,
    };
    output::write_json(&out.join("summary.json"), &file)?;
    for (o, s, _) in &outcomes {
        output::write_jobs_csv(&out.join(format!("jobs-{}.csv", s.policy)), &o.records)?;
    }
    println!(
        "\nresults in {} (summary.json, jobs-<policy>.csv)",
        out.display()
    );
    std::io::stdout().flush()?;
    Ok(ExitCode::SUCCESS)
}
