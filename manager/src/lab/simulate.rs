//! `libratory simulate`: one workload through several policies in virtual
//! time, a comparison table on stdout, and a run directory (see `rundir`).
//!
//! Also the set-up shared with `sweep` and `figures`: an experiment from a
//! preset, a seed and `--set` overrides, and where the trace is.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use common::experiment::Experiment;
use common::metrics::JobRecord;
use common::workload::Source;

use crate::batsim::{self, BatsimArgs, SchedulerReport};
use crate::environment::Environment;
use crate::lab::trace_cache::{self, CacheDir};
use crate::results::output;
use crate::results::rundir::{self, Invocation, Log, Manifest, PolicyRun, Run};

/// Arguments of `libratory simulate`.
#[derive(clap::Args, Debug)]
pub struct SimulateArgs {
    /// SWF trace (.swf or .swf.gz) for trace presets. Default: the SDSC SP2
    /// trace in ../shared/traces if it is there.
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Experiment preset (see `libratory presets`).
    #[arg(long, default_value = "libra")]
    pub preset: String,
    /// Policies to compare, comma-separated (default: the preset's).
    #[arg(long, value_delimiter = ',')]
    pub policies: Option<Vec<String>>,
    /// Seed of every random draw (default: the preset's, printed and
    /// stored in summary.json).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Override a parameter: --set beta=0.5 --set arrival_delay_factor=0.25
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Output directory (default: runs/<preset>-seed<seed>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Result files to write, comma-separated (default: all);
    /// manifest.json and log.txt are always written.
    #[arg(long, value_delimiter = ',', value_enum)]
    pub outputs: Option<Vec<rundir::OutputKind>>,
    /// A fault scenario (docs/faults.md): node crashes, hangs, slowdowns,
    /// partitions and manager crashes at trace times, modelled in virtual
    /// time. Its seed is printed and stored in manifest.json.
    #[arg(long, value_name = "FILE")]
    pub faults: Option<PathBuf>,
    /// The external scheduler of the `batsim` policy.
    #[command(flatten)]
    pub batsim: BatsimArgs,
    /// A Batsim JSON workload (nb_res, jobs, delay and
    /// parallel_homogeneous profiles) instead of the trace; `nb_res` sets
    /// the nodes and the preset annotates QoS (docs/batsim.md).
    #[arg(long, value_name = "FILE.json")]
    pub workload: Option<PathBuf>,
    /// The reference node's speed in flop/s, turning
    /// parallel_homogeneous profiles into seconds.
    #[arg(long, default_value_t = 1e9)]
    pub workload_flops: f64,
}

/// A Batsim JSON workload annotated by `exp`'s preset; its `nb_res` sets
/// the nodes.
pub fn batsim_workload(
    exp: &mut Experiment,
    file: &Path,
    flops: f64,
) -> Result<common::workload::Workload> {
    if !(flops.is_finite() && flops > 0.0) {
        bail!("--workload-flops must be > 0, got {flops}");
    }
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("reading the workload {}", file.display()))?;
    let w = common::workload::batsim_json::parse(&file.display().to_string(), &text, flops)?;
    exp.params.nodes = w.nb_res;
    Ok(common::workload::from_records(
        &exp.params,
        file,
        &w.records,
    )?)
}

/// Where the shared traces are when running from a checkout: beside the
/// project, as `../shared/traces`.
pub fn default_trace() -> Option<PathBuf> {
    let name = "SDSC-SP2-1998-4.2-cln.swf.gz";
    let candidates = [
        PathBuf::from("../shared/traces").join(name),
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/traces")
            .join(name),
    ];
    candidates.into_iter().find(|p| p.is_file())
}

/// The trace an experiment reads: the one given, else the default; `None`
/// for generated workloads. An error if a trace is needed and none exists,
/// if the one given is not a file, or if one is given to a preset that
/// generates its workload (it would be ignored, and the user would believe
/// the results came from their trace).
pub fn resolve_trace(exp: &Experiment, given: Option<PathBuf>) -> Result<Option<PathBuf>> {
    let preset = &exp.params.preset;
    match (exp.params.source, given) {
        (Source::Trace, Some(t)) if t.is_file() => Ok(Some(t)),
        (Source::Trace, Some(t)) => bail!(
            "--trace {}: no such file (preset '{preset}' reads an SWF trace, .swf or .swf.gz)",
            t.display()
        ),
        (Source::Trace, None) => Ok(Some(default_trace().with_context(|| {
            format!(
                "preset '{preset}' reads a trace and none was found at ../shared/traces: give --trace FILE.swf[.gz]"
            )
        })?)),
        (Source::SyntheticLibra, Some(t)) => bail!(
            "--trace {}: preset '{preset}' generates its workload (the Libra paper's synthetic batch) and reads no trace; drop --trace, or use a preset that reads one: {}",
            t.display(),
            trace_presets().join(", ")
        ),
        (Source::SyntheticLibra, None) => Ok(None),
    }
}

/// The presets whose workload comes from an SWF trace.
pub fn trace_presets() -> Vec<&'static str> {
    common::workload::PRESETS
        .iter()
        .map(|p| p.name)
        .filter(|&name| {
            common::workload::Params::preset(name).is_ok_and(|p| p.source == Source::Trace)
        })
        .collect()
}

/// The experiment of a preset with a seed, `key=value` overrides (applied
/// in order) and, if given, a policy list; policies are checked.
pub fn experiment(
    preset: &str,
    seed: Option<u64>,
    sets: &[String],
    policies: Option<Vec<String>>,
) -> Result<Experiment> {
    let mut exp = Experiment::configured(preset, seed, sets.iter().map(String::as_str), "--set")?;
    if let Some(p) = policies {
        exp.policies = p;
    }
    if exp.policies.is_empty() {
        bail!("no policies to run: give --policies");
    }
    exp.check_policies()?;
    Ok(exp)
}

/// Runs `libratory simulate`; the trace cache is where `env` says.
pub fn run(a: SimulateArgs, env: &Environment) -> Result<ExitCode> {
    let inv = Invocation::capture();
    let mut exp = experiment(&a.preset, a.seed, &a.sets, a.policies)?;
    if let (Some(w), Some(t)) = (&a.workload, &a.trace) {
        bail!(
            "give --workload ({}) or --trace ({}), not both",
            w.display(),
            t.display()
        );
    }
    let trace = match &a.workload {
        Some(w) => Some(w.clone()),
        None => resolve_trace(&exp, a.trace)?,
    };
    // Read before the workload: a bad scenario is refused at once.
    let scenario = a
        .faults
        .as_deref()
        .map(crate::faults::ScenarioFile::load)
        .transpose()?;
    let mut log = Log::new();
    let seed = exp.params.seed;
    log.say(format_args!(
        "libratory simulate: preset {}, seed {seed}{}",
        exp.params.preset,
        if a.seed.is_none() { " (default)" } else { "" }
    ));
    // The trace's SHA-256 goes into the manifest and checks the cache
    // entry; it is computed beside the entry's read when a hint names the
    // entry (see trace_cache).
    let t0 = Instant::now();
    let (wl, trace_facts, cache_use) = match &a.workload {
        Some(w) => (
            batsim_workload(&mut exp, w, a.workload_flops)?,
            Some(rundir::trace_facts(w)?),
            trace_cache::CacheUse::Off,
        ),
        None => {
            trace_cache::build_workload(&exp.params, trace.as_deref(), &CacheDir::from_env(env))?
        }
    };
    let exp = exp;
    let load_time = t0.elapsed();
    match &trace {
        // A Batsim workload is read whole and not cached.
        Some(t) if a.workload.is_some() => log.say(format_args!(
            "workload: {} jobs of the Batsim workload {} ({:.3} s to read), {} nodes",
            wl.jobs.len(),
            t.display(),
            load_time.as_secs_f64(),
            exp.params.nodes,
        )),
        Some(t) => log.say(format_args!(
            "workload: last {} jobs of {}{} ({:.3} s to read; trace cache: {cache_use}), {} nodes, arrival delay factor {}, inaccuracy {} ({:?})",
            wl.jobs.len(),
            t.display(),
            // Fewer than asked (neither dropped nor duplicated): the
            // trace has no more.
            if a.workload.is_none()
                && wl.jobs.len() < exp.params.jobs
                && !exp.params.drop_never_ran
                && exp.params.duplicate_fraction == 0.0
            {
                format!(" (of {} asked: the trace has no more)", exp.params.jobs)
            } else {
                String::new()
            },
            load_time.as_secs_f64(),
            exp.params.nodes,
            exp.params.arrival_delay_factor,
            exp.params.inaccuracy,
            exp.params.inaccuracy_form
        )),
        None => log.say(format_args!(
            "workload: the Libra paper's synthetic batch of {} jobs, {} nodes",
            wl.jobs.len(),
            exp.params.nodes
        )),
    }
    let o = &wl.odd;
    log.say(format_args!(
        "odd records (kept, see docs/workloads.md): never ran {}{}, no requested time {}, ran past request {}, procs from field 5 {}, procs unknown {}, procs over machine {}, estimate floored {}",
        o.never_ran,
        if exp.params.drop_never_ran {
            " (dropped: drop_never_ran)"
        } else {
            ""
        },
        o.no_requested_time,
        o.overran_request,
        o.procs_from_allocated,
        o.procs_unknown,
        o.procs_over_machine,
        o.estimate_floored
    ));
    log.say(format_args!(
        "class spread (sd/mean) {}; policies: {}",
        exp.params.spread,
        exp.policies.join(", ")
    ));

    let faults = match &scenario {
        Some(sf) => {
            let shape = common::faults::ClusterShape::uniform(
                exp.params.nodes,
                sf.scenario.nodes_per_process(),
            );
            let horizon = match (wl.jobs.first(), wl.jobs.last()) {
                (Some(f), Some(l)) => l.spec.details.submit_time - f.spec.details.submit_time,
                _ => 0.0,
            };
            let plan = sf.expand(&shape, horizon, seed)?;
            log.say(format_args!(
                "faults: {} (seed {}{}), {} node processes of up to {} nodes, link timeout {} s (trace), {} faults",
                sf.path.display(),
                plan.seed,
                if sf.scenario.seed.is_some() { "" } else { ", the workload's" },
                shape.processes.len(),
                sf.scenario.nodes_per_process(),
                plan.link_timeout,
                plan.faults.len()
            ));
            for line in crate::faults::describe(&plan, horizon) {
                log.say(format_args!("  {line}"));
            }
            let facts = sf.facts(&plan, &shape);
            Some((plan, shape, facts))
        }
        None => None,
    };

    // Policies are independent: run them side by side, the first on this
    // thread (its allocator arena is warm from reading the workload, where
    // a new thread's starts empty, and no thread is started for the usual
    // single policy).
    let batsim_reports = std::sync::Mutex::new(Vec::new());
    let run_one = |name: &String| -> Result<(PolicyRun, f64, Option<String>)> {
        let t = Instant::now();
        let (outcome, summary, note) = match &faults {
            None if name == "batsim" => {
                let (p, report) = batsim::policy(
                    &a.batsim,
                    exp.params.nodes,
                    wl.jobs.len(),
                    &exp.params.preset,
                    exp.policy.pbase,
                )?;
                let (o, s) = exp.run_built(name, &wl, p);
                batsim_reports.lock().expect("not poisoned").push(report);
                (o, s, None)
            }
            None => {
                let (o, s) = exp.run_policy(name, &wl)?;
                (o, s, None)
            }
            Some(_) if name == "batsim" => {
                bail!("--faults: the batsim policy runs without fault scenarios (docs/faults.md)")
            }
            Some((plan, shape, _)) => {
                let (f, summary) = exp.run_policy_with_faults(name, &wl, plan, shape)?;
                let lost = f.outcome.records.iter().filter(|r| r.lost).count();
                let note = format!(
                    "{name}: {} fault events applied, {lost} jobs lost",
                    f.notes.len()
                );
                (f.outcome, summary, Some(note))
            }
        };
        Ok((
            PolicyRun { outcome, summary },
            t.elapsed().as_secs_f64(),
            note,
        ))
    };
    let (first, rest) = exp
        .policies
        .split_first()
        .expect("experiment() checked there are policies");
    // Meanwhile the job rows' leading fields, which the workload fixes for
    // every policy, are formatted on another core (writing the files
    // after the runs is most of what is left of a short simulation).
    let kinds = a.outputs.as_deref().unwrap_or(&rundir::OutputKind::ALL);
    let need_heads = kinds.iter().any(|k| {
        matches!(
            k,
            rundir::OutputKind::JobsCsv | rundir::OutputKind::JobsJsonl
        )
    });
    // So are the host's facts for the manifest (and the core count the
    // writers ask for).
    let (results, (heads, host)) = std::thread::scope(|s| {
        let aside = s.spawn(|| {
            let heads = need_heads.then(|| {
                let records: Vec<JobRecord> = wl.jobs.iter().map(JobRecord::new).collect();
                output::JobHeads::of(records.iter())
            });
            (heads, rundir::host_facts())
        });
        let handles: Vec<_> = rest.iter().map(|name| s.spawn(|| run_one(name))).collect();
        let mut results: Vec<Result<(PolicyRun, f64, Option<String>)>> = vec![run_one(first)];
        results.extend(
            handles
                .into_iter()
                .map(|h| h.join().expect("simulation thread panicked")),
        );
        (results, aside.join().expect("formatting thread panicked"))
    });
    let mut runs = Vec::new();
    let mut secs = Vec::new();
    for r in results {
        let (run, s, note) = r?;
        if let Some(note) = note {
            log.say(format_args!("{note}"));
        }
        runs.push(run);
        secs.push(s);
    }
    let summaries: Vec<_> = runs.iter().map(|r| r.summary.clone()).collect();
    let mut table = Vec::new();
    output::print_table(&mut table, &summaries)?;
    log.say("");
    log.block(&String::from_utf8_lossy(&table));
    log.say("");
    for (r, secs) in runs.iter().zip(&secs) {
        let s = &r.summary;
        log.say(format_args!(
            "{:<18} {:.3} s, {:.0} jobs/s simulated ({} events); accepted with estimate > deadline: {} ({} met)",
            s.policy,
            secs,
            wl.jobs.len() as f64 / secs.max(1e-9),
            r.outcome.events,
            s.accepted_estimate_over_deadline,
            s.accepted_estimate_over_deadline_met
        ));
    }

    let mut fault = None;
    for r in batsim_reports.into_inner().expect("not poisoned") {
        let r: std::sync::MutexGuard<'_, SchedulerReport> = r.lock().expect("not poisoned");
        log.say(format_args!(
            "batsim scheduler: {} round trips, {:.3} s waiting for replies ({:.1} us each)",
            r.round_trips,
            r.waited.as_secs_f64(),
            1e6 * r.waited.as_secs_f64() / (r.round_trips.max(1) as f64)
        ));
        if let Some(f) = &r.fault {
            log.say(format_args!(
                "batsim scheduler FAILED: {f}; the jobs it had not decided are rejected with reason 'scheduler'"
            ));
            fault = Some(f.clone());
        }
    }

    let out = rundir::out_dir(a.out, || format!("runs/{}-seed{seed}", exp.params.preset));
    let files = rundir::write_chosen_run_files_with_heads(
        &out,
        &Run {
            experiment: &exp,
            workload: &wl,
            trace: trace.as_deref(),
            policies: &runs.iter().map(PolicyRun::result).collect::<Vec<_>>(),
            live: None,
        },
        kinds,
        heads.as_ref(),
    )?;
    let files = rundir::with_manifest_and_log(files);
    let manifest = Manifest::with_host(
        "simulate",
        &inv,
        seed,
        &exp,
        trace_facts.as_ref(),
        &files,
        host,
    );
    let manifest = match &faults {
        Some((_, _, facts)) => manifest.with_faults(facts),
        None => manifest,
    };
    let listed = if a.outputs.is_some() {
        files.join(", ")
    } else {
        "summary.json, jobs-<policy>.csv/.jsonl, out_jobs-<policy>.csv, schedule-<policy>.swf, parts-<policy>.csv, manifest.json, log.txt".to_string()
    };
    rundir::finish(
        &out,
        manifest,
        &mut log,
        format_args!("\nresults in {} ({listed})", out.display()),
    )?;
    // The process exits next: giving the records' and parts' memory back
    // buffer by buffer (munmap, page by page) took several percent of a
    // short run, and the exit reclaims it anyway.
    std::mem::forget(runs);
    std::mem::forget(wl);
    std::mem::forget(heads);
    if let Some(f) = fault {
        anyhow::bail!(
            "the batsim scheduler failed (results written to {}): {f}",
            out.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// One policy through one workload in virtual time, held in memory.
pub struct Simulated {
    /// The experiment (preset, seed, overrides, the one policy).
    pub experiment: Experiment,
    /// Its workload.
    pub workload: common::workload::Workload,
    /// The trace's facts (path, SHA-256) when it read one.
    pub trace_facts: Option<rundir::TraceFacts>,
    /// The simulator's outcome and its metrics.
    pub run: PolicyRun,
}

/// `policy` through the workload of `preset`, `seed` and `sets` (the
/// `trace` given, else the default one for presets that read one; read
/// through the trace cache where `env` says), in memory: what
/// `calibrate` compares live runs with. The same experiment, workload and
/// simulator as `libratory simulate --policies POLICY`.
pub fn simulate_policy(
    preset: &str,
    seed: Option<u64>,
    sets: &[String],
    trace: Option<PathBuf>,
    policy: &str,
    env: &Environment,
) -> Result<Simulated> {
    let exp = experiment(preset, seed, sets, Some(vec![policy.to_string()]))?;
    let trace = resolve_trace(&exp, trace)?;
    let (wl, trace_facts, _) =
        trace_cache::build_workload(&exp.params, trace.as_deref(), &CacheDir::from_env(env))?;
    let (outcome, summary) = if policy == "batsim" {
        let (p, _) = batsim::policy(
            &BatsimArgs::default(),
            exp.params.nodes,
            wl.jobs.len(),
            &exp.params.preset,
            exp.policy.pbase,
        )?;
        exp.run_built(policy, &wl, p)
    } else {
        exp.run_policy(policy, &wl)?
    };
    Ok(Simulated {
        experiment: exp,
        workload: wl,
        trace_facts,
        run: PolicyRun { outcome, summary },
    })
}

impl Simulated {
    /// Writes its run directory into `out`, as `simulate` does (the result
    /// files, manifest.json, log.txt with the summary table).
    pub fn write(&self, out: &Path) -> Result<()> {
        let inv = Invocation::capture();
        let exp = &self.experiment;
        let mut log = Log::new();
        log.say(format_args!(
            "simulation: preset {}, seed {}, policy {}, {} jobs, {} nodes",
            exp.params.preset,
            exp.params.seed,
            self.run.summary.policy,
            self.workload.jobs.len(),
            exp.params.nodes
        ));
        let mut table = Vec::new();
        output::print_table(&mut table, std::slice::from_ref(&self.run.summary))?;
        log.say("");
        log.block(&String::from_utf8_lossy(&table));
        let files = rundir::write_run_files(
            out,
            &Run {
                experiment: exp,
                workload: &self.workload,
                trace: self.workload.trace.as_deref(),
                policies: &[self.run.result()],
                live: None,
            },
        )?;
        let files = rundir::with_manifest_and_log(files);
        let manifest = Manifest::new(
            "simulate",
            &inv,
            exp.params.seed,
            exp,
            self.trace_facts.as_ref(),
            &files,
        );
        rundir::finish(
            out,
            manifest,
            &mut log,
            format_args!("\nresults in {}", out.display()),
        )
    }
}
