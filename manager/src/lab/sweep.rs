//! `libratory sweep`: one parameter over a list of values, times a set of
//! series (a policy, optionally with knobs of its own), times seeds, run in
//! parallel across cores; a tidy CSV (one row per value x series x seed with
//! every metric), the same aggregated over seeds, and one SVG per metric.
//!
//! The engine here ([`SweepSpec`], [`run_sweep`]) is also what `figures`
//! runs: a figure is a sweep described as data.
//!
//! Not here: the figure table (`figures`), drawing (`plot`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use common::experiment::Experiment;
use common::metrics::Summary;
use common::swf::{self, SwfRecord};
use common::workload::{self, Source, Workload};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;

use crate::batsim::{self, BatsimArgs};
use crate::lab::metric_table::{self, Metric, METRICS};
use crate::lab::simulate;
use crate::results::names;
use crate::results::plot::{self, Chart, Line, XAxis};
use crate::results::rundir::{self, Invocation, Log, Manifest, PolicyRun, Run, TraceFacts};

/// Arguments of `libratory sweep`.
#[derive(clap::Args, Debug)]
pub struct SweepArgs {
    /// Experiment preset (see `libratory presets`).
    #[arg(long, default_value = "libra")]
    pub preset: String,
    /// SWF trace for trace presets (default: the SDSC SP2 trace in
    /// ../shared/traces).
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// The parameter to vary: any key `--set` accepts.
    #[arg(long)]
    pub param: String,
    /// Its values, comma-separated.
    #[arg(long, value_delimiter = ',', required = true)]
    pub values: Vec<String>,
    /// Series, comma-separated: a policy name, or a policy with knobs of
    /// its own, `policy:key=value:key=value` (default: the preset's
    /// policies).
    #[arg(long, value_delimiter = ',')]
    pub policies: Option<Vec<String>>,
    /// Number of seeds: BASE, BASE+1, ... (BASE from --seed).
    #[arg(long, default_value_t = 1)]
    pub seeds: u64,
    /// First seed (default: the preset's).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Fixed overrides for every run: --set spread=0.1
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Metrics to plot, comma-separated (default: every metric).
    #[arg(long, value_delimiter = ',')]
    pub metrics: Option<Vec<String>>,
    /// Worker threads (default: the cores available).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Also write a full run directory per cell under OUT/runs/.
    #[arg(long)]
    pub run_dirs: bool,
    /// Output directory (default: runs/sweep-<param>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The external scheduler of the `batsim` policy.
    #[command(flatten)]
    pub batsim: BatsimArgs,
}

/// One series of a sweep: a policy, with knobs of its own.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Series {
    /// Legend and CSV label.
    pub label: String,
    /// Registered policy name.
    pub policy: String,
    /// `key=value` overrides for this series only.
    pub sets: Vec<String>,
}

impl Series {
    /// Parses `policy` or `policy:key=value:key=value`; the label is the
    /// spec as written.
    pub fn parse(spec: &str) -> Result<Series> {
        let mut parts = spec.split(':').map(str::trim);
        let policy = parts.next().unwrap_or_default().to_string();
        if policy.is_empty() {
            bail!("series '{spec}': expected POLICY or POLICY:key=value[:key=value...]");
        }
        let sets: Vec<String> = parts.map(str::to_string).collect();
        if let Some(bad) = sets.iter().find(|s| !s.contains('=')) {
            bail!("series '{spec}': expected key=value after the policy, got '{bad}'");
        }
        Ok(Series {
            label: spec.trim().to_string(),
            policy,
            sets,
        })
    }

    /// A plain policy.
    pub fn policy(name: &str) -> Series {
        Series {
            label: name.to_string(),
            policy: name.to_string(),
            sets: Vec::new(),
        }
    }
}

/// One value of the swept parameter (or one named case setting several).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepPoint {
    /// Label on the axis and in the CSV.
    pub label: String,
    /// Numeric position, when the value is a number.
    pub x: Option<f64>,
    /// `key=value` overrides of this point.
    pub sets: Vec<String>,
}

impl SweepPoint {
    /// `param=value`.
    pub fn value(param: &str, value: &str) -> SweepPoint {
        SweepPoint {
            label: value.to_string(),
            x: value.parse::<f64>().ok().filter(|x| x.is_finite()),
            sets: vec![format!("{param}={value}")],
        }
    }
}

/// A whole sweep.
#[derive(Debug, Clone, Serialize)]
pub struct SweepSpec {
    /// Preset every run starts from.
    pub preset: String,
    /// Trace, for trace presets (resolved before running).
    pub trace: Option<PathBuf>,
    /// Overrides for every run, applied first.
    pub fixed: Vec<String>,
    /// What varies (a key, or a name for named cases).
    pub param: String,
    /// The points.
    pub points: Vec<SweepPoint>,
    /// The series.
    pub series: Vec<Series>,
    /// The seeds.
    pub seeds: Vec<u64>,
}

impl SweepSpec {
    /// The experiment of one cell: preset, seed, fixed sets, the point's,
    /// the series'. Errors name the point and series.
    pub fn experiment(&self, point: usize, series: usize, seed: u64) -> Result<Experiment> {
        let (p, s) = (&self.points[point], &self.series[series]);
        let mut exp = Experiment::preset(&self.preset)?;
        exp.params.seed = seed;
        let all = self.fixed.iter().chain(&p.sets).chain(&s.sets);
        exp.set_all(all.map(String::as_str)).with_context(|| {
            format!(
                "sweep point {}={} with series '{}'",
                self.param, p.label, s.label
            )
        })?;
        exp.policies = vec![s.policy.clone()];
        Ok(exp)
    }

    /// With a run directory per cell: no two cells' directories are one
    /// (labels are cut to 60 characters and made file-safe, so two
    /// series with long labels alike, or a series given twice, would
    /// write over each other).
    pub fn check_run_dirs(&self) -> Result<()> {
        let mut seen: std::collections::HashMap<String, String> = Default::default();
        for p in &self.points {
            for s in &self.series {
                let dir = format!(
                    "{}-{}/{}",
                    names::file_safe(&self.param),
                    names::file_safe(&p.label),
                    names::file_safe(&s.label)
                );
                let cell = format!("point {}={} with series '{}'", self.param, p.label, s.label);
                if let Some(other) = seen.insert(dir.clone(), cell.clone()) {
                    bail!(
                        "--run-dirs: {cell} and {other} would both write {dir}/: give distinct values and series (series labels that differ in their first 60 characters)"
                    );
                }
            }
        }
        Ok(())
    }

    /// Checks everything before anything runs: every policy registered
    /// (all missing ones named at once), every key and value valid for
    /// every point and series, the workload parameters consistent.
    pub fn check(&self) -> Result<()> {
        if self.points.is_empty() || self.series.is_empty() || self.seeds.is_empty() {
            bail!("a sweep needs at least one value, one policy and one seed");
        }
        // The seeds are the sweep's own axis: a `seed` set anywhere would
        // run one seed under the labels of several.
        let sets_seed = |sets: &[String]| {
            sets.iter()
                .any(|kv| kv.split('=').next().map(str::trim) == Some("seed"))
        };
        if self.param == "seed"
            || sets_seed(&self.fixed)
            || self.points.iter().any(|p| sets_seed(&p.sets))
            || self.series.iter().any(|s| sets_seed(&s.sets))
        {
            bail!(
                "seed is the sweep's own axis: give the first with --seed and how many with --seeds (not --set seed=, --param seed or a series' seed=)"
            );
        }
        let mut missing: Vec<&str> = Vec::new();
        for s in &self.series {
            if common::policy::entry(&s.policy).is_err() && !missing.contains(&s.policy.as_str()) {
                missing.push(&s.policy);
            }
        }
        if !missing.is_empty() {
            bail!(
                "policies not registered: {} (registered: {})",
                missing.join(", "),
                registered()
            );
        }
        for p in 0..self.points.len() {
            for s in 0..self.series.len() {
                let exp = self.experiment(p, s, self.seeds[0])?;
                exp.params.validate().with_context(|| {
                    format!(
                        "sweep point {}={} with series '{}'",
                        self.param, self.points[p].label, self.series[s].label
                    )
                })?;
            }
        }
        Ok(())
    }

    /// The x axis: numeric when every point is a number.
    pub fn x_axis(&self) -> XAxis {
        if self.points.iter().all(|p| p.x.is_some()) {
            XAxis::Numeric
        } else {
            XAxis::Categories(self.points.iter().map(|p| p.label.clone()).collect())
        }
    }

    fn x_of(&self, point: usize) -> f64 {
        match self.x_axis() {
            XAxis::Numeric => self.points[point].x.unwrap_or(point as f64),
            XAxis::Categories(_) => point as f64,
        }
    }
}

/// The registered policy names, comma-separated.
pub fn registered() -> String {
    common::policy::REGISTRY
        .iter()
        .map(|e| e.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The result of one cell.
#[derive(Debug, Clone)]
pub struct Cell {
    /// Index of the point.
    pub point: usize,
    /// Index of the series.
    pub series: usize,
    /// The seed.
    pub seed: u64,
    /// Its metrics.
    pub summary: Summary,
}

/// A finished sweep: the cells in (point, series, seed) order.
#[derive(Debug)]
pub struct SweepResult {
    /// What ran.
    pub spec: SweepSpec,
    /// One per point x series x seed.
    pub cells: Vec<Cell>,
    /// Wall seconds of the simulations.
    pub seconds: f64,
}

/// The trace's last `max` records, read once for the whole sweep.
struct Records {
    path: PathBuf,
    records: Vec<SwfRecord>,
}

impl Records {
    fn workload(&self, exp: &Experiment) -> Result<Workload> {
        let n = exp.params.jobs.min(self.records.len());
        let window = &self.records[self.records.len() - n..];
        Ok(workload::from_records(&exp.params, &self.path, window)?)
    }
}

/// Options of a run of [`run_sweep`].
pub struct RunOptions<'a> {
    /// Worker threads.
    pub threads: usize,
    /// Show a progress bar (on stderr).
    pub progress: bool,
    /// Write a run directory per cell under this directory.
    pub run_dirs: Option<&'a Path>,
    /// The external scheduler of the `batsim` policy, if a series runs it.
    pub batsim: Option<&'a BatsimArgs>,
}

/// Runs every cell of `spec` on `threads` workers. The cells come back in
/// (point, series, seed) order whatever order they ran in, so the same spec
/// gives the same result byte for byte.
pub fn run_sweep(spec: SweepSpec, opts: &RunOptions) -> Result<SweepResult> {
    spec.check()?;
    if opts.run_dirs.is_some() {
        spec.check_run_dirs()?;
    }
    let t0 = Instant::now();
    // Read the trace once, as many records as the largest window needs.
    let mut max_jobs = 0;
    let mut needs_trace = false;
    for p in 0..spec.points.len() {
        for s in 0..spec.series.len() {
            let exp = spec.experiment(p, s, spec.seeds[0])?;
            if exp.params.source == Source::Trace {
                needs_trace = true;
                max_jobs = max_jobs.max(exp.params.jobs);
            }
        }
    }
    let records = if needs_trace {
        let path = spec
            .trace
            .clone()
            .ok_or_else(|| anyhow!("preset '{}' reads a trace: give --trace", spec.preset))?;
        let (_, records) = swf::read_last(&path, max_jobs)?;
        Some(Records { path, records })
    } else {
        None
    };

    let tasks: Vec<(usize, usize, u64)> = (0..spec.points.len())
        .flat_map(|p| {
            let seeds = &spec.seeds;
            (0..spec.series.len()).flat_map(move |s| seeds.iter().map(move |&seed| (p, s, seed)))
        })
        .collect();
    let bar = if opts.progress {
        ProgressBar::with_draw_target(Some(tasks.len() as u64), ProgressDrawTarget::stderr())
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} runs, ETA {eta} {msg}",
        )
        .expect("valid template"),
    );
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let results: Mutex<Vec<Option<Result<Cell>>>> =
        Mutex::new((0..tasks.len()).map(|_| None).collect());
    let threads = opts.threads.clamp(1, tasks.len().max(1));
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= tasks.len() || failed.load(Ordering::Relaxed) {
                    break;
                }
                let (p, s, seed) = tasks[i];
                // A cell that fails names itself (a value valid alone
                // may still make a job no policy takes, an infinite
                // deadline, say).
                let r = run_cell(&spec, records.as_ref(), p, s, seed, opts).with_context(|| {
                    format!(
                        "sweep point {}={} with series '{}', seed {seed}",
                        spec.param, spec.points[p].label, spec.series[s].label
                    )
                });
                if r.is_err() {
                    failed.store(true, Ordering::Relaxed);
                }
                bar.set_message(format!(
                    "{}={} {}",
                    spec.param, spec.points[p].label, spec.series[s].label
                ));
                bar.inc(1);
                results.lock().expect("no panics while holding the lock")[i] = Some(r);
            });
        }
    });
    bar.finish_and_clear();
    let mut cells = Vec::with_capacity(tasks.len());
    for r in results
        .into_inner()
        .expect("workers done")
        .into_iter()
        .flatten()
    {
        cells.push(r?);
    }
    if cells.len() != tasks.len() {
        bail!("sweep stopped early");
    }
    Ok(SweepResult {
        spec,
        cells,
        seconds: t0.elapsed().as_secs_f64(),
    })
}

/// One cell with the external scheduler. One at a time: the scheduler
/// listens on one endpoint (with `--batsim-cmd` each cell starts its own).
fn run_batsim_cell(
    exp: &Experiment,
    wl: &common::workload::Workload,
    args: Option<&BatsimArgs>,
) -> Result<(common::sim::SimOutcome, common::metrics::Summary)> {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let default = BatsimArgs::default();
    let (p, report) = batsim::policy(
        args.unwrap_or(&default),
        exp.params.nodes,
        wl.jobs.len(),
        &exp.params.preset,
        exp.policy.pbase,
    )?;
    let r = exp.run_built("batsim", wl, p);
    if let Some(f) = &report.lock().expect("not poisoned").fault {
        anyhow::bail!("the batsim scheduler failed: {f}");
    }
    Ok(r)
}

fn run_cell(
    spec: &SweepSpec,
    records: Option<&Records>,
    p: usize,
    s: usize,
    seed: u64,
    opts: &RunOptions,
) -> Result<Cell> {
    let run_dirs = opts.run_dirs;
    let exp = spec.experiment(p, s, seed)?;
    let wl = match (exp.params.source, records) {
        (Source::Trace, Some(r)) => r.workload(&exp)?,
        _ => workload::build(&exp.params, None)?,
    };
    let series = &spec.series[s];
    let (outcome, summary) = if series.policy == "batsim" {
        run_batsim_cell(&exp, &wl, opts.batsim)?
    } else {
        exp.run_policy(&series.policy, &wl)?
    };
    let mut summary = summary;
    if let Some(root) = run_dirs {
        let dir = root.join(format!(
            "{}-{}/{}/seed{seed}",
            names::file_safe(&spec.param),
            names::file_safe(&spec.points[p].label),
            names::file_safe(&series.label)
        ));
        let runs = [PolicyRun { outcome, summary }];
        rundir::write_run_files(
            &dir,
            &Run {
                experiment: &exp,
                workload: &wl,
                trace: records.map(|r| r.path.as_path()),
                policies: &[runs[0].result()],
                live: None,
            },
        )?;
        let [PolicyRun { summary: s, .. }] = runs;
        summary = s;
    }
    Ok(Cell {
        point: p,
        series: s,
        seed,
        summary,
    })
}

/// A CSV field: quoted when it holds a comma, quote or newline.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn num(v: Option<f64>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}

/// The tidy CSV: `param,value,x,series,policy,seed,` then every metric of
/// [`METRICS`]; one row per cell, empty where a metric is undefined.
pub fn tidy_csv(r: &SweepResult) -> String {
    let mut out = String::from("param,value,x,series,policy,seed");
    for m in METRICS {
        out.push(',');
        out.push_str(m.name);
    }
    out.push('\n');
    for c in &r.cells {
        let p = &r.spec.points[c.point];
        let s = &r.spec.series[c.series];
        let _ = write!(
            out,
            "{},{},{},{},{},{}",
            field(&r.spec.param),
            field(&p.label),
            num(p.x),
            field(&s.label),
            field(&s.policy),
            c.seed
        );
        for m in METRICS {
            out.push(',');
            out.push_str(&num((m.get)(&c.summary)));
        }
        out.push('\n');
    }
    out
}

/// Mean, min and max over seeds of one metric per (series, point); points
/// where the metric is undefined for every seed are left out.
pub fn aggregate(r: &SweepResult, metric: &Metric) -> Vec<Line> {
    let mut by: BTreeMap<(usize, usize), Vec<f64>> = BTreeMap::new();
    for c in &r.cells {
        if let Some(v) = (metric.get)(&c.summary).filter(|v| v.is_finite()) {
            by.entry((c.series, c.point)).or_default().push(v);
        }
    }
    lines_from(r, &by, |s| r.spec.series[s].label.clone())
}

/// The improvement of `series` over `baseline` in % (`100 (v - b) / |b|`),
/// per point and seed, then mean, min and max over seeds; undefined where
/// the baseline is 0.
pub fn improvement(r: &SweepResult, metric: &Metric, pairs: &[(usize, usize)]) -> Vec<Line> {
    let mut values: BTreeMap<(usize, usize, u64), f64> = BTreeMap::new();
    for c in &r.cells {
        if let Some(v) = (metric.get)(&c.summary) {
            values.insert((c.series, c.point, c.seed), v);
        }
    }
    let mut by: BTreeMap<(usize, usize), Vec<f64>> = BTreeMap::new();
    for (k, &(s, b)) in pairs.iter().enumerate() {
        for p in 0..r.spec.points.len() {
            for &seed in &r.spec.seeds {
                if let (Some(v), Some(base)) =
                    (values.get(&(s, p, seed)), values.get(&(b, p, seed)))
                {
                    if base.abs() > 1e-12 {
                        by.entry((k, p))
                            .or_default()
                            .push(100.0 * (v - base) / base.abs());
                    }
                }
            }
        }
    }
    lines_from(r, &by, |k| {
        let (s, b) = pairs[k];
        format!("{} vs {}", r.spec.series[s].label, r.spec.series[b].label)
    })
}

fn lines_from(
    r: &SweepResult,
    by: &BTreeMap<(usize, usize), Vec<f64>>,
    label: impl Fn(usize) -> String,
) -> Vec<Line> {
    let n_lines = by.keys().map(|k| k.0 + 1).max().unwrap_or(0);
    (0..n_lines)
        .filter(|&l| by.keys().any(|k| k.0 == l))
        .map(|l| Line {
            label: label(l),
            points: (0..r.spec.points.len())
                .filter_map(|p| {
                    let v = by.get(&(l, p))?;
                    let mean = v.iter().sum::<f64>() / v.len() as f64;
                    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
                    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    Some(plot::Point {
                        x: r.spec.x_of(p),
                        mean,
                        min,
                        max,
                    })
                })
                .collect(),
        })
        .collect()
}

/// The aggregated CSV of plotted lines: `metric,line,value,mean,min,max,n`.
pub fn lines_csv(r: &SweepResult, metric: &str, lines: &[Line], out: &mut String) {
    for l in lines {
        for p in &l.points {
            let label = match r.spec.x_axis() {
                XAxis::Numeric => r
                    .spec
                    .points
                    .iter()
                    .find(|q| q.x == Some(p.x))
                    .map_or_else(|| p.x.to_string(), |q| q.label.clone()),
                XAxis::Categories(c) => c[p.x as usize].clone(),
            };
            let _ = writeln!(
                out,
                "{},{},{},{},{},{}",
                field(metric),
                field(&l.label),
                field(&label),
                p.mean,
                p.min,
                p.max
            );
        }
    }
}

/// A subtitle saying what was run: preset, fixed sets, seeds, the band.
pub fn subtitle(r: &SweepResult) -> String {
    let seeds = &r.spec.seeds;
    let seeds = if seeds.len() == 1 {
        format!("seed {}", seeds[0])
    } else {
        format!(
            "{} seeds ({}..{}), {}",
            seeds.len(),
            seeds[0],
            seeds[seeds.len() - 1],
            match r.spec.x_axis() {
                XAxis::Numeric => "line = mean, band = min-max",
                XAxis::Categories(_) => "marker = mean, bar = min-max",
            }
        )
    };
    let fixed = if r.spec.fixed.is_empty() {
        String::new()
    } else {
        format!(", {}", r.spec.fixed.join(" "))
    };
    format!("preset {}{fixed}; {seeds}", r.spec.preset)
}

/// Writes `dir/<metric>.svg` for each metric, one line per series.
pub fn write_plots(dir: &Path, r: &SweepResult, metrics: &[&Metric]) -> Result<Vec<String>> {
    let mut files = Vec::new();
    for m in metrics {
        let lines = aggregate(r, m);
        let chart = Chart {
            title: format!("{} vs {}", short(m.label), r.spec.param),
            subtitle: subtitle(r),
            x_label: metric_table::param_label(&r.spec.param),
            y_label: m.label.to_string(),
            x_axis: r.spec.x_axis(),
            lines,
        };
        let f = format!("{}.svg", m.name);
        plot::write_svg(&dir.join(&f), &chart)?;
        files.push(f);
    }
    Ok(files)
}

/// The part of a label before its unit in parentheses.
pub fn short(label: &str) -> &str {
    label.split(" (").next().unwrap_or(label)
}

/// The series of a preset's own comparison.
pub fn preset_series(preset: &str) -> Result<Vec<Series>> {
    Ok(Experiment::preset(preset)?
        .policies
        .iter()
        .map(|p| Series::policy(p))
        .collect())
}

/// Worker threads: given, else the cores available.
pub fn threads(given: Option<usize>) -> usize {
    given.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Whether to draw a progress bar: only when stdout is a terminal.
pub fn show_progress() -> bool {
    std::io::stdout().is_terminal()
}

/// Runs `libratory sweep`.
pub fn run(a: SweepArgs) -> Result<ExitCode> {
    let inv = Invocation::capture();
    let probe = simulate::experiment(&a.preset, a.seed, &a.sets, None)?;
    let trace = simulate::resolve_trace(&probe, a.trace.clone())?;
    if a.seeds == 0 {
        bail!("--seeds must be at least 1");
    }
    let series = match &a.policies {
        Some(p) => p.iter().map(|s| Series::parse(s)).collect::<Result<_>>()?,
        None => preset_series(&a.preset)?,
    };
    let metrics: Vec<&Metric> = match &a.metrics {
        Some(names) => names
            .iter()
            .map(|n| metric_table::metric(n))
            .collect::<Result<_>>()?,
        None => METRICS.iter().collect(),
    };
    let base = probe.params.seed;
    let spec = SweepSpec {
        preset: a.preset.clone(),
        trace: trace.clone(),
        fixed: a.sets.clone(),
        param: a.param.clone(),
        points: a
            .values
            .iter()
            .map(|v| SweepPoint::value(&a.param, v.trim()))
            .collect(),
        series,
        seeds: (0..a.seeds).map(|k| base + k).collect(),
    };
    // Refuse a bad configuration before anything is written.
    spec.check()?;
    let out = rundir::out_dir(a.out, || {
        format!("runs/sweep-{}", names::file_safe(&a.param))
    });
    let mut log = Log::new();
    log.say(format_args!(
        "libratory sweep: preset {}, {} = {}, series {}, seeds {:?}; {} runs on {} threads",
        spec.preset,
        spec.param,
        a.values.join(", "),
        spec.series
            .iter()
            .map(|s| s.label.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        spec.seeds,
        spec.points.len() * spec.series.len() * spec.seeds.len(),
        threads(a.threads)
    ));
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let runs_dir = out.join("runs");
    let result = run_sweep(
        spec,
        &RunOptions {
            threads: threads(a.threads),
            progress: show_progress(),
            run_dirs: a.run_dirs.then_some(runs_dir.as_path()),
            batsim: Some(&a.batsim),
        },
    )?;
    log.say(format_args!("simulated in {:.1} s", result.seconds));
    let files = write_sweep_files(&out, &result, &metrics, &mut log)?;
    let trace_facts: Option<TraceFacts> = trace.as_deref().map(rundir::trace_facts).transpose()?;
    let files = rundir::with_manifest_and_log(files);
    let manifest = Manifest::new(
        "sweep",
        &inv,
        base,
        &result.spec,
        trace_facts.as_ref(),
        &files,
    );
    rundir::finish(
        &out,
        manifest,
        &mut log,
        format_args!(
            "\nresults in {} (sweep.csv, aggregate.csv, <metric>.svg, manifest.json, log.txt)",
            out.display()
        ),
    )?;
    Ok(ExitCode::SUCCESS)
}

/// Writes `sweep.csv`, `aggregate.csv` and the plots of a sweep, and prints
/// a table of the headline metrics' means.
pub fn write_sweep_files(
    out: &Path,
    r: &SweepResult,
    metrics: &[&Metric],
    log: &mut Log,
) -> Result<Vec<String>> {
    let mut files = Vec::new();
    let path = out.join("sweep.csv");
    std::fs::write(&path, tidy_csv(r)).with_context(|| format!("writing {}", path.display()))?;
    files.push("sweep.csv".to_string());
    let mut agg = String::from("metric,series,value,mean,min,max\n");
    for m in METRICS {
        lines_csv(r, m.name, &aggregate(r, m), &mut agg);
    }
    let path = out.join("aggregate.csv");
    std::fs::write(&path, agg).with_context(|| format!("writing {}", path.display()))?;
    files.push("aggregate.csv".to_string());
    files.extend(write_plots(out, r, metrics)?);
    log.say("");
    log.block(&headline_table(r));
    Ok(files)
}

/// Means over seeds of the headline metrics, one line per point and series.
pub fn headline_table(r: &SweepResult) -> String {
    let heads = [
        "qos_satisfaction",
        "profitability",
        "pct_deadlines_met",
        "avg_slowdown",
        "utility",
    ];
    let ms: Vec<&Metric> = heads
        .iter()
        .filter_map(|h| metric_table::metric(h).ok())
        .collect();
    let mut t = format!("{:<14} {:<28}", r.spec.param, "series");
    for m in &ms {
        let _ = write!(t, " {:>12}", truncate(m.name, 12));
    }
    t.push('\n');
    let lines: Vec<Vec<Line>> = ms.iter().map(|m| aggregate(r, m)).collect();
    for (pi, p) in r.spec.points.iter().enumerate() {
        for (si, s) in r.spec.series.iter().enumerate() {
            let _ = write!(
                t,
                "{:<14} {:<28}",
                truncate(&p.label, 14),
                truncate(&s.label, 28)
            );
            for l in &lines {
                let v = l
                    .iter()
                    .find(|l| l.label == s.label)
                    .and_then(|l| l.points.iter().find(|q| q.x == r.spec.x_of(pi)))
                    .map(|q| q.mean);
                let _ = write!(t, " {:>12}", v.map_or("-".into(), |v| format!("{v:.4}")));
            }
            let _ = si;
            t.push('\n');
        }
    }
    t
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        s.chars().take(n - 1).chain(std::iter::once('~')).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_specs() {
        assert_eq!(Series::parse("libra").unwrap(), Series::policy("libra"));
        let s = Series::parse("libra-plus-dollar:beta=0.5:alpha=2").unwrap();
        assert_eq!(s.policy, "libra-plus-dollar");
        assert_eq!(s.sets, vec!["beta=0.5", "alpha=2"]);
        assert!(Series::parse("libra:beta").is_err());
        assert!(Series::parse("").is_err());
    }

    #[test]
    fn unregistered_policies_are_named_together() {
        let spec = SweepSpec {
            preset: "libra".into(),
            trace: None,
            fixed: vec![],
            param: "jobs".into(),
            points: vec![SweepPoint::value("jobs", "10")],
            series: vec![
                Series::policy("libra"),
                Series::policy("nope-a"),
                Series::policy("nope-b"),
            ],
            seeds: vec![1],
        };
        let e = spec.check().unwrap_err().to_string();
        assert!(
            e.contains("nope-a, nope-b") && e.contains("libra-risk"),
            "{e}"
        );
    }

    /// Cells that would share a run directory are refused before any
    /// runs (a series given twice; labels alike in their first 60
    /// characters), and a `seed` set anywhere too.
    #[test]
    fn cells_sharing_a_run_directory_and_seed_sets_are_refused() {
        let long = "libra:high_urgency_fraction=0.2:deadline_high_low_ratio=4:placement";
        let spec = |series: Vec<Series>, fixed: Vec<String>| SweepSpec {
            preset: "libra".into(),
            trace: None,
            fixed,
            param: "beta".into(),
            points: vec![SweepPoint::value("beta", "0.1")],
            series,
            seeds: vec![1, 2],
        };
        let twice = spec(
            vec![Series::policy("libra"), Series::policy("libra")],
            vec![],
        );
        let e = twice.check_run_dirs().unwrap_err().to_string();
        assert!(e.contains("would both write beta-0.1/libra/"), "{e}");
        let alike = spec(
            vec![
                Series::parse(&format!("{long}=least-loaded")).unwrap(),
                Series::parse(&format!("{long}=best-fit")).unwrap(),
            ],
            vec![],
        );
        assert!(alike.check_run_dirs().is_err());
        assert!(
            spec(vec![Series::policy("libra"), Series::policy("edf")], vec![])
                .check_run_dirs()
                .is_ok()
        );
        let seeded = spec(vec![Series::policy("libra")], vec!["seed=5".into()]);
        let e = seeded.check().unwrap_err().to_string();
        assert!(e.contains("seed is the sweep's own axis"), "{e}");
    }

    #[test]
    fn bad_values_name_the_point() {
        let spec = SweepSpec {
            preset: "libra".into(),
            trace: None,
            fixed: vec![],
            param: "jobs".into(),
            points: vec![SweepPoint::value("jobs", "ten")],
            series: vec![Series::policy("libra")],
            seeds: vec![1],
        };
        let e = format!("{:#}", spec.check().unwrap_err());
        assert!(e.contains("jobs=ten") && e.contains("'jobs'"), "{e}");
    }

    #[test]
    fn a_small_synthetic_sweep_aggregates_over_seeds() {
        let spec = SweepSpec {
            preset: "libra".into(),
            trace: None,
            fixed: vec!["jobs=30".into()],
            param: "nodes".into(),
            points: vec![
                SweepPoint::value("nodes", "5"),
                SweepPoint::value("nodes", "10"),
            ],
            series: vec![Series::policy("libra"), Series::policy("fifo")],
            seeds: vec![1, 2],
        };
        let r = run_sweep(
            spec,
            &RunOptions {
                threads: 2,
                progress: false,
                run_dirs: None,
                batsim: None,
            },
        )
        .unwrap();
        assert_eq!(r.cells.len(), 8);
        let csv = tidy_csv(&r);
        assert_eq!(csv.lines().count(), 9);
        let m = metric_table::metric("deadlines_met").unwrap();
        let lines = aggregate(&r, m);
        assert_eq!(lines.len(), 2);
        for l in &lines {
            assert_eq!(l.points.len(), 2);
            for p in &l.points {
                assert!(p.min <= p.mean && p.mean <= p.max);
            }
        }
        // Improvement of a series over itself is 0.
        let imp = improvement(&r, m, &[(0, 0)]);
        assert_eq!(imp.len(), 1);
        assert_eq!(imp[0].points.len(), 2);
        assert!(imp[0].points.iter().all(|p| p.mean == 0.0));
    }
}
