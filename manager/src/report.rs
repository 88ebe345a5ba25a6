//! `libratory report RUN...`: run directories side by side. A table (one
//! row per run and policy, with the run's seed, mode and preset), the same
//! as CSV with every metric, and one SVG per metric with the policies on
//! the x axis and one marker series per run, so simulated and (later) real
//! runs, or runs of different seeds, can be compared at a glance.
//!
//! Not here: running anything; it only reads `summary.json` and
//! `manifest.json`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use common::metrics::Summary;
use serde::Deserialize;

use crate::metric_table::{self, Metric, METRICS};
use crate::plot::{self, Chart, Line, XAxis};
use crate::rundir::{self, Invocation, Log, Manifest};

/// Arguments of `libratory report`.
#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// Run directories (each with a summary.json).
    #[arg(required = true)]
    pub runs: Vec<PathBuf>,
    /// Metrics to plot, comma-separated (default: the headline metrics).
    #[arg(long, value_delimiter = ',')]
    pub metrics: Option<Vec<String>>,
    /// Output directory.
    #[arg(long, default_value = "runs/report")]
    pub out: PathBuf,
}

/// The part of summary.json a report reads.
#[derive(Debug, Deserialize)]
struct SummaryIn {
    seed: u64,
    preset: String,
    policies: Vec<Summary>,
}

/// The part of manifest.json a report reads (older runs have none).
#[derive(Debug, Deserialize, Default)]
struct ManifestIn {
    #[serde(default)]
    mode: Option<String>,
    #[serde(default)]
    started_utc: Option<String>,
}

/// One run directory, read.
#[derive(Debug)]
pub struct RunIn {
    /// Label: the directory's name, or its path when names repeat.
    pub label: String,
    /// Seed.
    pub seed: u64,
    /// Preset.
    pub preset: String,
    /// `simulated` or `real`.
    pub mode: String,
    /// When it started, if known.
    pub started: String,
    /// One summary per policy.
    pub policies: Vec<Summary>,
}

/// Reads a run directory.
pub fn read_run(dir: &Path) -> Result<RunIn> {
    let path = dir.join(rundir::SUMMARY);
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "reading {} (is {} a run directory?)",
            path.display(),
            dir.display()
        )
    })?;
    let s: SummaryIn =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    let mpath = dir.join(rundir::MANIFEST);
    let m: ManifestIn = match std::fs::read_to_string(&mpath) {
        Ok(t) => {
            serde_json::from_str(&t).with_context(|| format!("parsing {}", mpath.display()))?
        }
        Err(_) => ManifestIn::default(),
    };
    Ok(RunIn {
        label: dir.file_name().map_or_else(
            || dir.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        ),
        seed: s.seed,
        preset: s.preset,
        mode: m.mode.unwrap_or_else(|| "simulated".into()),
        started: m.started_utc.unwrap_or_default(),
        policies: s.policies,
    })
}

const HEADLINE: &[&str] = &[
    "qos_satisfaction",
    "profitability",
    "pct_deadlines_met",
    "avg_slowdown",
    "utility",
    "revenue",
    "accepted",
    "deadlines_met",
];

fn cell(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| {
        if v.abs() >= 1e5 {
            format!("{v:.4e}")
        } else if v == v.trunc() {
            format!("{v}")
        } else {
            format!("{v:.4}")
        }
    })
}

/// The side-by-side table (markdown): one row per run and policy.
pub fn table(runs: &[RunIn], metrics: &[&Metric]) -> String {
    let mut t = String::from("| run | mode | preset | seed | policy |");
    for m in metrics {
        let _ = write!(t, " {} |", m.name);
    }
    t.push_str("\n|---|---|---|---|---|");
    for _ in metrics {
        t.push_str("---:|");
    }
    t.push('\n');
    for r in runs {
        for p in &r.policies {
            let _ = write!(
                t,
                "| {} | {} | {} | {} | {} |",
                r.label, r.mode, r.preset, r.seed, p.policy
            );
            for m in metrics {
                let _ = write!(t, " {} |", cell((m.get)(p)));
            }
            t.push('\n');
        }
    }
    t
}

/// CSV with every metric: one row per run and policy.
pub fn csv(runs: &[RunIn]) -> String {
    let mut t = String::from("run,mode,preset,seed,started_utc,policy");
    for m in METRICS {
        let _ = write!(t, ",{}", m.name);
    }
    t.push('\n');
    for r in runs {
        for p in &r.policies {
            let _ = write!(
                t,
                "{},{},{},{},{},{}",
                r.label.replace(',', "_"),
                r.mode,
                r.preset,
                r.seed,
                r.started,
                p.policy
            );
            for m in METRICS {
                let _ = write!(
                    t,
                    ",{}",
                    (m.get)(p).map(|v| v.to_string()).unwrap_or_default()
                );
            }
            t.push('\n');
        }
    }
    t
}

/// The chart of one metric: policies on x, one series per run.
pub fn chart(runs: &[RunIn], m: &Metric) -> Chart {
    let mut policies: Vec<String> = Vec::new();
    for r in runs {
        for p in &r.policies {
            if !policies.contains(&p.policy) {
                policies.push(p.policy.clone());
            }
        }
    }
    let lines = runs
        .iter()
        .map(|r| Line {
            label: format!("{} ({}, seed {})", r.label, r.mode, r.seed),
            points: r
                .policies
                .iter()
                .filter_map(|p| {
                    let v = (m.get)(p)?;
                    let x = policies.iter().position(|q| *q == p.policy)? as f64;
                    Some(plot::Point {
                        x,
                        mean: v,
                        min: v,
                        max: v,
                    })
                })
                .collect(),
        })
        .collect();
    Chart {
        title: format!("{} by policy and run", crate::sweep::short(m.label)),
        subtitle: format!("{} run directories", runs.len()),
        x_label: "Policy".into(),
        y_label: m.label.to_string(),
        x_axis: XAxis::Categories(policies),
        lines,
    }
}

/// Runs `libratory report`.
pub fn run(a: ReportArgs) -> Result<ExitCode> {
    let inv = Invocation::capture();
    let mut runs = a
        .runs
        .iter()
        .map(|d| read_run(d))
        .collect::<Result<Vec<_>>>()?;
    // Same directory names (runs/a/x and runs/b/x): use the paths.
    let labels: Vec<String> = runs.iter().map(|r| r.label.clone()).collect();
    for (k, r) in runs.iter_mut().enumerate() {
        if labels.iter().filter(|l| **l == labels[k]).count() > 1 {
            r.label = a.runs[k].display().to_string();
        }
    }
    if runs.iter().all(|r| r.policies.is_empty()) {
        bail!("no policies in the run directories given");
    }
    let metrics: Vec<&Metric> = match &a.metrics {
        Some(n) => n
            .iter()
            .map(|n| metric_table::metric(n))
            .collect::<Result<_>>()?,
        None => HEADLINE
            .iter()
            .map(|n| metric_table::metric(n))
            .collect::<Result<_>>()?,
    };
    let out = &a.out;
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let mut log = Log::new();
    let table = table(&runs, &metrics);
    log.block(&table);
    let mut files = Vec::new();
    let path = out.join("report.md");
    let mut md = String::from("# Report\n\n");
    md.push_str(&table);
    md.push('\n');
    for m in &metrics {
        let f = format!("{}.svg", m.name);
        plot::write_svg(&out.join(&f), &chart(&runs, m))?;
        let _ = writeln!(md, "![{f}]({f})\n");
        files.push(f);
    }
    std::fs::write(&path, md).with_context(|| format!("writing {}", path.display()))?;
    files.insert(0, "report.md".into());
    let path = out.join("report.csv");
    std::fs::write(&path, csv(&runs)).with_context(|| format!("writing {}", path.display()))?;
    files.insert(1, "report.csv".into());
    let files = rundir::with_manifest_and_log(files);
    let dirs: Vec<String> = a.runs.iter().map(|d| d.display().to_string()).collect();
    let seed = runs.first().map_or(0, |r| r.seed);
    let manifest = Manifest::new("report", &inv, seed, &dirs, None, &files);
    rundir::finish(
        out,
        manifest,
        &mut log,
        format_args!(
            "\nreport in {} (report.md, report.csv, <metric>.svg)",
            out.display()
        ),
    )?;
    Ok(ExitCode::SUCCESS)
}
