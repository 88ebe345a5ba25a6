//! `libratory figures`: the papers' evaluation figures and tables, each
//! described as data ([`FIGURES`]: preset, swept parameter and values,
//! series, panels, metrics, fixed sets, the paper's stated finding) and run
//! as a sweep. A figure whose policies are not registered fails, naming
//! them, before anything runs.
//!
//! Output per figure: `DIR/<id>/sweep[-<panel>].csv` (every metric, every
//! seed), `figure.csv` (the plotted means, minima and maxima), one SVG per
//! plotted metric and panel; and `DIR/index.md` with each figure's finding,
//! tables of the plotted numbers and links to the plots.
//!
//! Not here: the sweep engine (`sweep`), drawing (`plot`).

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};

use crate::lab::metric_table::{self, Metric};
use crate::lab::simulate;
use crate::lab::sweep::{self, RunOptions, Series, SweepPoint, SweepResult, SweepSpec};
use crate::results::names;
use crate::results::plot::{self, Chart, Line};
use crate::results::rundir::{self, Invocation, Log, Manifest, TraceFacts};

mod catalogue;
pub use catalogue::{FigSeries, Figure, Panel, Values, FIGURES};

/// Arguments of `libratory figures`.
#[derive(clap::Args, Debug)]
pub struct FiguresArgs {
    /// Papers by their preset's name (libra, libra-plus-dollar,
    /// libra-risk, libra-sla, vqops), figure ids (libra-plus-dollar-fig3)
    /// or `all`.
    #[arg(required_unless_present = "list")]
    pub which: Vec<String>,
    /// List the figures and exit.
    #[arg(long)]
    pub list: bool,
    /// Output directory.
    #[arg(long, default_value = "runs/figures")]
    pub out: PathBuf,
    /// Seeds per point (BASE, BASE+1, ...).
    #[arg(long, default_value_t = 3)]
    pub seeds: u64,
    /// First seed (default: the presets' seed).
    #[arg(long)]
    pub seed: Option<u64>,
    /// SWF trace (default: the SDSC SP2 trace in ../shared/traces).
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Worker threads (default: the cores available).
    #[arg(long)]
    pub threads: Option<usize>,
}

/// The figures named by `which` (papers, ids or `all`), in table order.
pub fn select(which: &[String]) -> Result<Vec<&'static Figure>> {
    let mut out: Vec<&Figure> = Vec::new();
    for w in which {
        let w = w.trim();
        let found: Vec<&Figure> = FIGURES
            .iter()
            .filter(|f| w == "all" || f.preset == w || f.id == w)
            .collect();
        if found.is_empty() {
            bail!(
                "no figure '{w}'; give a paper's preset (libra, libra-plus-dollar, libra-risk, libra-sla, vqops), a figure id ({}) or all",
                FIGURES.iter().map(|f| f.id).collect::<Vec<_>>().join(", ")
            );
        }
        for f in found {
            if !out.iter().any(|g| g.id == f.id) {
                out.push(f);
            }
        }
    }
    out.sort_by_key(|f| FIGURES.iter().position(|g| g.id == f.id));
    Ok(out)
}

/// Policies a figure needs that are not registered.
pub fn missing_policies(f: &Figure) -> Vec<&'static str> {
    let mut m: Vec<&str> = Vec::new();
    for s in f.series {
        if common::policy::entry(s.policy).is_err() && !m.contains(&s.policy) {
            m.push(s.policy);
        }
    }
    m
}

/// The sweep of one panel of a figure.
pub fn spec(f: &Figure, panel: Option<&Panel>, seeds: &[u64], trace: Option<PathBuf>) -> SweepSpec {
    let points = match f.values {
        Values::List(v) => v.iter().map(|v| SweepPoint::value(f.param, v)).collect(),
        Values::Cases(c) => c
            .iter()
            .map(|(label, sets)| SweepPoint {
                label: label.to_string(),
                x: None,
                sets: sets.iter().map(|s| s.to_string()).collect(),
            })
            .collect(),
    };
    let mut fixed: Vec<String> = f.fixed.iter().map(|s| s.to_string()).collect();
    if let Some(p) = panel {
        fixed.extend(p.sets.iter().map(|s| s.to_string()));
    }
    SweepSpec {
        preset: f.preset.to_string(),
        trace,
        fixed,
        param: f.param.to_string(),
        points,
        series: f
            .series
            .iter()
            .map(|s| Series {
                label: s.label.to_string(),
                policy: s.policy.to_string(),
                sets: s.sets.iter().map(|x| x.to_string()).collect(),
            })
            .collect(),
        seeds: seeds.to_vec(),
    }
}

/// The lines a figure plots for one metric: per series, or the improvement
/// pairs.
pub fn figure_lines(f: &Figure, r: &SweepResult, m: &Metric) -> Result<Vec<Line>> {
    if f.improvement.is_empty() {
        return Ok(sweep::aggregate(r, m));
    }
    let idx = |label: &str| {
        r.spec
            .series
            .iter()
            .position(|s| s.label == label)
            .with_context(|| format!("figure {}: no series '{label}'", f.id))
    };
    let mut lines = Vec::new();
    for (name, a, b) in f.improvement {
        let mut l = sweep::improvement(r, m, &[(idx(a)?, idx(b)?)]);
        for line in &mut l {
            line.label = name.to_string();
        }
        lines.extend(l);
    }
    Ok(lines)
}

/// A markdown table of plotted lines: one row per point, one column per
/// line, `mean (min-max)`.
fn markdown_table(r: &SweepResult, lines: &[Line]) -> String {
    let mut t = format!("| {} |", r.spec.param);
    for l in lines {
        let _ = write!(t, " {} |", l.label);
    }
    t.push_str("\n|---|");
    for _ in lines {
        t.push_str("---|");
    }
    t.push('\n');
    let axis = r.spec.x_axis();
    for (pi, p) in r.spec.points.iter().enumerate() {
        let x = match axis {
            plot::XAxis::Numeric => p.x.unwrap_or(pi as f64),
            plot::XAxis::Categories(_) => pi as f64,
        };
        let _ = write!(t, "| {} |", p.label);
        for l in lines {
            let cell = l.points.iter().find(|q| q.x == x).map_or("-".into(), |q| {
                if r.spec.seeds.len() > 1 {
                    format!("{} ({}-{})", sig(q.mean), sig(q.min), sig(q.max))
                } else {
                    sig(q.mean)
                }
            });
            let _ = write!(t, " {cell} |");
        }
        t.push('\n');
    }
    t
}

/// Four significant figures, for tables.
fn sig(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let digits = (4 - 1 - v.abs().log10().floor() as i32).max(0) as usize;
    format!("{v:.digits$}")
}

/// Runs `libratory figures`.
pub fn run(a: FiguresArgs) -> Result<ExitCode> {
    if a.list {
        for f in FIGURES {
            let missing = missing_policies(f);
            println!(
                "{:<11} {}{}",
                f.id,
                f.title,
                if missing.is_empty() {
                    String::new()
                } else {
                    format!("  [needs: {}]", missing.join(", "))
                }
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let inv = Invocation::capture();
    let figures = select(&a.which)?;
    // Fail before running anything if a figure needs a policy that is not
    // registered.
    let blocked: Vec<String> = figures
        .iter()
        .filter_map(|f| {
            let m = missing_policies(f);
            (!m.is_empty()).then(|| format!("{} needs {}", f.id, m.join(", ")))
        })
        .collect();
    if !blocked.is_empty() {
        bail!(
            "policies not registered: {} (registered: {}); run the other figures by id, see `libratory figures --list`",
            blocked.join("; "),
            sweep::registered()
        );
    }
    if a.seeds == 0 {
        bail!("--seeds must be at least 1");
    }
    let needs_trace = figures
        .iter()
        .map(|f| simulate::experiment(f.preset, None, &[], None))
        .collect::<Result<Vec<_>>>()?;
    let mut trace = None;
    // Only the figures that read a trace take --trace; one given to a set
    // of figures that all generate their workload is an error, not ignored.
    for exp in needs_trace
        .iter()
        .filter(|e| e.params.source == common::workload::Source::Trace)
    {
        trace = simulate::resolve_trace(exp, a.trace.clone())?;
    }
    if let (Some(t), None) = (&a.trace, &trace) {
        bail!(
            "--trace {}: none of these figures reads a trace (they generate their workload)",
            t.display()
        );
    }
    let out = &a.out;
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let mut log = Log::new();
    let mut index = String::from(
        "# Figures\n\nGenerated by `libratory figures`. Each figure is a sweep (see `sweep*.csv` for every metric of every run); the tables give the plotted mean over seeds and, in parentheses, the minimum and maximum. docs/reproducing.md compares them with the papers.\n",
    );
    let mut files = vec!["index.md".to_string()];
    let threads = sweep::threads(a.threads);
    for f in &figures {
        let base = a.seed.unwrap_or_else(|| {
            common::experiment::Experiment::preset(f.preset)
                .map_or(common::workload::DEFAULT_SEED, |e| e.params.seed)
        });
        let seeds: Vec<u64> = (0..a.seeds).map(|k| base + k).collect();
        let dir = out.join(f.id);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let _ = write!(
            index,
            "\n## {} {} (`{}`)\n\nPaper: {}\n\n",
            f.paper, f.title, f.id, f.finding
        );
        let panels: Vec<Option<&Panel>> = if f.panels.is_empty() {
            vec![None]
        } else {
            f.panels.iter().map(Some).collect()
        };
        let mut figure_csv = String::from("panel,metric,line,value,mean,min,max\n");
        // Subfigures in letter order: (a), (b) ... whatever the loop order.
        let mut sections: Vec<(usize, String)> = Vec::new();
        let t0 = std::time::Instant::now();
        let mut runs = 0;
        for (pi, panel) in panels.iter().enumerate() {
            let spec = spec(f, *panel, &seeds, trace.clone());
            runs += spec.points.len() * spec.series.len() * spec.seeds.len();
            let r = sweep::run_sweep(
                spec,
                &RunOptions {
                    threads,
                    progress: sweep::show_progress(),
                    run_dirs: None,
                    batsim: None,
                },
            )
            .with_context(|| format!("figure {}", f.id))?;
            let suffix = panel.map_or(String::new(), |p| format!("-{}", names::kebab(p.name)));
            let csv = format!("{}/sweep{suffix}.csv", f.id);
            std::fs::write(out.join(&csv), sweep::tidy_csv(&r))
                .with_context(|| format!("writing {csv}"))?;
            files.push(csv);
            for (mi, name) in f.metrics.iter().enumerate() {
                let m = metric_table::metric(name)?;
                let lines = figure_lines(f, &r, m)?;
                let n_sub = f.metrics.len() * panels.len();
                let sub = mi * panels.len() + pi;
                let letter = if n_sub > 1 {
                    format!("({})", (b'a' + sub as u8) as char)
                } else {
                    String::new()
                };
                let what = match panel {
                    Some(p) => format!("{}, {}", sweep::short(m.label), p.name),
                    None => sweep::short(m.label).to_string(),
                };
                let y_label = if f.improvement.is_empty() {
                    m.label.to_string()
                } else {
                    format!(
                        "Improvement in {} (%)",
                        sweep::short(m.label).to_lowercase()
                    )
                };
                let fig_no = f.title.split(':').next().unwrap_or(f.title);
                let fig_no = fig_no.split('(').next().unwrap_or(fig_no).trim();
                let chart = Chart {
                    title: format!("{} {fig_no}{letter}: {what}", f.paper),
                    subtitle: sweep::subtitle(&r),
                    x_label: metric_table::param_label(f.param),
                    y_label,
                    x_axis: r.spec.x_axis(),
                    lines: lines.clone(),
                };
                let svg = format!("{}/{}{suffix}.svg", f.id, m.name);
                plot::write_svg(&out.join(&svg), &chart)?;
                let mut rows = String::new();
                sweep::lines_csv(&r, m.name, &lines, &mut rows);
                for row in rows.lines() {
                    let _ = writeln!(figure_csv, "{},{row}", panel.map_or("", |p| p.name));
                }
                sections.push((
                    sub,
                    format!(
                        "### {}{}\n\n![{svg}]({svg})\n\n{}\n",
                        if letter.is_empty() {
                            what.clone()
                        } else {
                            format!("{letter} {what}")
                        },
                        if f.improvement.is_empty() {
                            ""
                        } else {
                            " (improvement over the baseline, %)"
                        },
                        markdown_table(&r, &lines)
                    ),
                ));
                files.push(svg);
            }
        }
        sections.sort_by_key(|(k, _)| *k);
        for (_, text) in sections {
            index.push_str(&text);
        }
        let csv = format!("{}/figure.csv", f.id);
        std::fs::write(out.join(&csv), figure_csv).with_context(|| format!("writing {csv}"))?;
        files.push(csv);
        log.say(format_args!(
            "{:<11} {} runs in {:.1} s: {}",
            f.id,
            runs,
            t0.elapsed().as_secs_f64(),
            f.title
        ));
    }
    let path = out.join("index.md");
    std::fs::write(&path, index).with_context(|| format!("writing {}", path.display()))?;
    let trace_facts: Option<TraceFacts> = trace.as_deref().map(rundir::trace_facts).transpose()?;
    let files = rundir::with_manifest_and_log(files);
    let config: Vec<&str> = figures.iter().map(|f| f.id).collect();
    let manifest = Manifest::new(
        "figures",
        &inv,
        a.seed.unwrap_or(common::workload::DEFAULT_SEED),
        &config,
        trace_facts.as_ref(),
        &files,
    );
    rundir::finish(
        out,
        manifest,
        &mut log,
        format_args!("\nfigures in {} (index.md)", out.display()),
    )?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_series_labels_resolve() {
        let mut ids: Vec<_> = FIGURES.iter().map(|f| f.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), FIGURES.len());
        for f in FIGURES {
            for m in f.metrics {
                metric_table::metric(m).unwrap();
            }
            for (_, a, b) in f.improvement {
                for l in [a, b] {
                    assert!(
                        f.series.iter().any(|s| s.label == *l),
                        "{}: no series {l}",
                        f.id
                    );
                }
            }
        }
    }

    #[test]
    fn figures_with_registered_policies_check_out() {
        // Every key and value of every runnable figure is valid.
        for f in FIGURES.iter().filter(|f| missing_policies(f).is_empty()) {
            let panels: Vec<Option<&Panel>> = if f.panels.is_empty() {
                vec![None]
            } else {
                f.panels.iter().map(Some).collect()
            };
            for p in panels {
                spec(f, p, &[1], None)
                    .check()
                    .unwrap_or_else(|e| panic!("{}: {e:#}", f.id));
            }
        }
    }

    #[test]
    fn selection() {
        let f = select(&["libra-plus-dollar".into()]).unwrap();
        assert!(f.len() == 5 && f.iter().all(|f| f.paper == "Libra+$"));
        let f = select(&["libra-table1".into(), "libra-plus-dollar-fig2".into()]).unwrap();
        assert_eq!(f[0].id, "libra-plus-dollar-fig2");
        assert!(select(&["libra-nine".into()]).is_err());
    }
}
