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

use crate::lab::metric_table::{self, Metric, METRICS};
use crate::results::names;
use crate::results::output;
use crate::results::plot::{self, Chart, Line, XAxis};
use crate::results::rundir::{self, Invocation, Log, Manifest};
use crate::results::schedule;

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
    #[serde(default)]
    workload: Option<WorkloadIn>,
}

/// The part of summary.json's `workload` a report reads.
#[derive(Debug, Deserialize)]
struct WorkloadIn {
    nodes: usize,
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
    /// Nodes of the cluster (0 when summary.json does not say).
    pub nodes: usize,
    /// The directory it was read from.
    pub dir: PathBuf,
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
        nodes: s.workload.map_or(0, |w| w.nodes),
        dir: dir.to_path_buf(),
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
        title: format!("{} by policy and run", crate::lab::sweep::short(m.label)),
        subtitle: format!("{} run directories", runs.len()),
        x_label: "Policy".into(),
        y_label: m.label.to_string(),
        x_axis: XAxis::Categories(policies),
        lines,
    }
}

/// Whether a policy time-shares nodes (an admission policy); for a name
/// this build does not know, whether any two parts overlapped on a node.
fn time_shared(policy: &str, records: &[common::metrics::JobRecord]) -> bool {
    let spec = [common::node_model::NodeSpec {
        id: 0,
        speed: 1.0,
        memory_kb: u64::MAX / 4,
        disk_mb: u64::MAX / 4,
    }];
    match common::policy::build(policy, &common::policy::PolicyConfig::default(), &spec) {
        Ok(p) => matches!(p, common::policy::Policy::Admission(_)),
        Err(_) => {
            let mut parts: Vec<(usize, f64, f64)> = records
                .iter()
                .filter_map(|r| Some((r.start?, r.finish?, &r.nodes)))
                .flat_map(|(s, f, ns)| ns.iter().map(move |&n| (n, s, f)))
                .collect();
            parts.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
            parts
                .windows(2)
                .any(|w| w[0].0 == w[1].0 && w[1].1 < w[0].2 - 1e-6)
        }
    }
}

/// Writes the Gantt, utilisation and queue charts of one policy of a run.
fn schedule_pictures(r: &RunIn, policy: &str, dir: &Path) -> Result<schedule::Written> {
    let jsonl = r.dir.join(format!("jobs-{policy}.jsonl"));
    let csv = r.dir.join(format!("jobs-{policy}.csv"));
    let records = if jsonl.is_file() {
        output::read_jobs_jsonl(&jsonl)?
    } else {
        output::read_jobs_csv(&csv)?
    };
    let nodes = if r.nodes > 0 {
        r.nodes
    } else {
        records
            .iter()
            .flat_map(|j| j.nodes.iter().map(|n| n + 1))
            .max()
            .unwrap_or(1)
    };
    let ts = time_shared(policy, &records);
    // Simulated runs record their parts; live runs are reconstructed.
    let ppath = r.dir.join(format!("parts-{policy}.csv"));
    let parts = if ppath.is_file() {
        Some(schedule::read_parts(&ppath)?)
    } else {
        None
    };
    schedule::write_all(
        dir,
        &format!("{} / {policy}", r.label),
        policy,
        &records,
        parts.as_deref(),
        nodes,
        ts,
    )
}

/// The pictures of one run and policy.
struct Pictures {
    run: usize,
    policy: String,
    dir: String,
    written: schedule::Written,
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// An SVG file as markup to inline in the page: any XML prolog dropped,
/// element ids prefixed so that several charts on one page stay unique.
fn inline_svg(path: &Path, id_prefix: &str) -> Result<String> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let body = match text.find("<svg") {
        Some(k) => &text[k..],
        None => anyhow::bail!("{} is not an SVG file", path.display()),
    };
    Ok(body.replace(" id=\"", &format!(" id=\"{id_prefix}-")))
}

/// The self-contained HTML page: the summary table, every metric chart,
/// and each run's schedule, all inline (no file or network reference).
fn html_page(
    runs: &[RunIn],
    metrics: &[&Metric],
    out: &Path,
    pictures: &[Pictures],
) -> Result<String> {
    let mut h = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>Libratory report</title>\n<style>\n\
         body{font-family:sans-serif;margin:1.5em;color:#222}\n\
         table{border-collapse:collapse;font-size:13px}th,td{border:1px solid #ccc;padding:3px 7px}\n\
         td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#eee}\n\
         figure{margin:1em 0}svg{max-width:100%;height:auto;display:block}\n\
         g.job:hover{opacity:.6}\n</style></head><body>\n<h1>Libratory report</h1>\n",
    );
    let _ = writeln!(
        h,
        "<p>{} run directories: {}</p>",
        runs.len(),
        runs.iter()
            .map(|r| format!("<code>{}</code>", esc(&r.dir.display().to_string())))
            .collect::<Vec<_>>()
            .join(", ")
    );
    h.push_str("<h2>Summary</h2>\n<table id=\"summary\"><tr><th>run</th><th>mode</th><th>preset</th><th>seed</th><th>policy</th>");
    for m in metrics {
        let _ = write!(h, "<th>{}</th>", esc(m.name));
    }
    h.push_str("</tr>\n");
    for r in runs {
        for p in &r.policies {
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td><td>{}</td>",
                esc(&r.label),
                esc(&r.mode),
                esc(&r.preset),
                r.seed,
                esc(&p.policy)
            );
            for m in metrics {
                let _ = write!(h, "<td class=\"n\">{}</td>", cell((m.get)(p)));
            }
            h.push_str("</tr>\n");
        }
    }
    h.push_str("</table>\n<h2>Metrics</h2>\n");
    for m in metrics {
        let f = format!("{}.svg", m.name);
        let _ = writeln!(
            h,
            "<figure>{}</figure>",
            inline_svg(&out.join(&f), &format!("m-{}", m.name))?
        );
    }
    for (k, r) in runs.iter().enumerate() {
        let _ = writeln!(
            h,
            "<h2>Schedule: {} ({}, seed {})</h2>",
            esc(&r.label),
            esc(&r.mode),
            r.seed
        );
        for p in pictures.iter().filter(|p| p.run == k) {
            let _ = writeln!(h, "<h3>{}</h3>", esc(&p.policy));
            for (what, f) in [
                ("gantt", &p.written.gantt),
                ("util", &p.written.utilisation),
                ("queue", &p.written.queue),
            ] {
                let prefix = format!("r{}-{}-{what}", k + 1, names::file_safe(&p.policy));
                let _ = writeln!(
                    h,
                    "<figure class=\"{what}\">{}</figure>",
                    inline_svg(&out.join(&p.dir).join(f), &prefix)?
                );
            }
        }
    }
    h.push_str("</body></html>\n");
    Ok(h)
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
    // The schedule of every run and policy, and the page holding it all.
    let mut pictures = Vec::new();
    for (k, r) in runs.iter().enumerate() {
        let sub = format!("run{}-{}", k + 1, names::file_safe(&r.label));
        let _ = writeln!(md, "## {}\n", r.label);
        for p in &r.policies {
            let w = schedule_pictures(r, &p.policy, &out.join(&sub))?;
            for f in [&w.gantt, &w.utilisation, &w.queue] {
                let _ = writeln!(md, "![{f}]({sub}/{f})\n");
                files.push(format!("{sub}/{f}"));
            }
            pictures.push(Pictures {
                run: k,
                policy: p.policy.clone(),
                dir: sub.clone(),
                written: w,
            });
        }
    }
    let page = html_page(&runs, &metrics, out, &pictures)?;
    let hpath = out.join("report.html");
    std::fs::write(&hpath, page).with_context(|| format!("writing {}", hpath.display()))?;
    std::fs::write(&path, md).with_context(|| format!("writing {}", path.display()))?;
    files.insert(0, "report.md".into());
    files.insert(1, "report.html".into());
    let path = out.join("report.csv");
    std::fs::write(&path, csv(&runs)).with_context(|| format!("writing {}", path.display()))?;
    files.insert(2, "report.csv".into());
    let files = rundir::with_manifest_and_log(files);
    let dirs: Vec<String> = a.runs.iter().map(|d| d.display().to_string()).collect();
    let seed = runs.first().map_or(0, |r| r.seed);
    let manifest = Manifest::new("report", &inv, seed, &dirs, None, &files);
    rundir::finish(
        out,
        manifest,
        &mut log,
        format_args!(
            "\nreport in {} (report.html: open it in a browser; report.md, report.csv, <metric>.svg, run<k>-<name>/gantt-<policy>.svg)",
            out.display()
        ),
    )?;
    Ok(ExitCode::SUCCESS)
}
