//! Pictures of one policy's executed schedule, drawn from a run directory:
//! a Gantt chart (nodes x time, one SVG group per job) and the cluster's
//! utilisation, queue length and running jobs over time.
//!
//! A simulated run directory records every part (`parts-<policy>.csv`:
//! node, start, finish, processor time), so each part is drawn over its own
//! span, and on a time-shared node as a band as tall as its mean share
//! (processor time over span). Share changes within a part are not
//! recorded. A live run records, per job, its node set, start and finish
//! (`jobs-<policy>.jsonl`) only: its parts are drawn from the job's start
//! to the job's finish, with the mean share reconstructed as the actual
//! runtime on the reference node over that span (capped at 1).
//! Space-shared parts hold the whole node. docs/output-formats.md says the
//! same.
//!
//! The Gantt SVG is written by hand rather than with plotters, because each
//! job's element carries an id and data attributes (job, class, outcome)
//! that plotters cannot emit; the over-time plots use `plot`.
//!
//! Not here: reading or writing the HTML report (see `report`).

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use common::metrics::JobRecord;

use crate::results::plot::{self, Chart, Line, Point, XAxis};

/// Width of the Gantt chart, pixels.
const WIDTH: f64 = 1200.0;
/// Left margin (node labels).
const LEFT: f64 = 64.0;
/// Right margin.
const RIGHT: f64 = 16.0;
/// Title strip.
const TOP: f64 = 56.0;
/// The strip of rejected jobs above the nodes.
const REJECT_H: f64 = 18.0;
/// Bins of the over-time plots.
const BINS: usize = 300;

/// What happened to a job, as the charts colour it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Finished by its deadline.
    Met,
    /// Finished after it.
    Missed,
    /// Rejected or dropped: drawn as a tick in the rejected strip.
    Rejected,
    /// Parts lost to a node failure (live runs).
    Lost,
}

impl Outcome {
    /// Of a record.
    pub fn of(r: &JobRecord) -> Outcome {
        if r.lost {
            Outcome::Lost
        } else if r.start.is_none() {
            Outcome::Rejected
        } else if r.met() {
            Outcome::Met
        } else {
            Outcome::Missed
        }
    }

    /// Stable name (the `data-outcome` attribute).
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Met => "met",
            Outcome::Missed => "missed",
            Outcome::Rejected => "rejected",
            Outcome::Lost => "lost",
        }
    }
}

/// Fill colour by class and outcome: blues for high urgency, greens for
/// low (and purple for jobs without a class); a missed deadline is the
/// class's warm counterpart, a lost job black.
fn colour(class: Option<&str>, o: Outcome) -> &'static str {
    match (o, class) {
        (Outcome::Lost, _) => "#222222",
        (Outcome::Met | Outcome::Rejected, Some("high")) => "#1f77b4",
        (Outcome::Met | Outcome::Rejected, Some("low")) => "#2ca02c",
        (Outcome::Met | Outcome::Rejected, _) => "#9467bd",
        (Outcome::Missed, Some("high")) => "#d62728",
        (Outcome::Missed, Some("low")) => "#ff7f0e",
        (Outcome::Missed, _) => "#e377c2",
    }
}

/// One job's part on one node, as drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Band {
    /// Record index.
    pub job: usize,
    /// Node index.
    pub node: usize,
    /// Start (trace seconds).
    pub from: f64,
    /// End.
    pub to: f64,
    /// Share of the node, 0..=1 (1 for space-shared parts).
    pub share: f64,
    /// Offset of the band within the node's row, in shares (0 = bottom).
    pub offset: f64,
}

/// The end of a part that never finished (lost, or cut off): the run's end.
fn end_of(r: &JobRecord, run_end: f64) -> f64 {
    r.finish.unwrap_or(run_end)
}

/// The run's time span: first arrival to the last finish or decision.
pub fn span(records: &[JobRecord]) -> (f64, f64) {
    let t0 = records
        .iter()
        .map(|r| r.submit)
        .fold(f64::INFINITY, f64::min);
    let t1 = records
        .iter()
        .flat_map(|r| [Some(r.decided_at), r.start, r.finish])
        .flatten()
        .fold(f64::NEG_INFINITY, f64::max);
    if !t0.is_finite() || !t1.is_finite() {
        return (0.0, 1.0);
    }
    (t0, if t1 > t0 { t1 } else { t0 + 1.0 })
}

/// One part as `parts-<policy>.csv` records it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PartIn {
    /// The job.
    pub job: u64,
    /// The node.
    pub node: usize,
    /// Start (trace seconds).
    pub start: f64,
    /// Finish, if it finished.
    pub finish: Option<f64>,
    /// Processor seconds on that node.
    pub cpu: f64,
}

/// Reads `parts-<policy>.csv` (the parts file's reader: columns by name,
/// errors naming the file, line and column).
pub fn read_parts(path: &Path) -> Result<Vec<PartIn>> {
    Ok(crate::results::output::read_parts_csv(path)?
        .into_iter()
        .map(|p| PartIn {
            job: p.job,
            node: p.node,
            start: p.start,
            finish: p.finish.is_finite().then_some(p.finish),
            cpu: p.cpu,
        })
        .collect())
}

/// The parts of every started job, with their shares and their offsets in
/// the node's row. `time_shared`: bands are as tall as the part's mean
/// share and stacked first-fit; else every part holds the whole node.
/// With `parts` (recorded), each part has its own span and mean share;
/// without, they are reconstructed from the job records.
pub fn bands(
    records: &[JobRecord],
    nodes: usize,
    time_shared: bool,
    parts: Option<&[PartIn]>,
) -> Vec<Band> {
    let (_, run_end) = span(records);
    let mut per_node: Vec<Vec<Band>> = vec![Vec::new(); nodes.max(1)];
    if let Some(parts) = parts {
        let index: std::collections::HashMap<u64, usize> =
            records.iter().enumerate().map(|(k, r)| (r.id, k)).collect();
        for p in parts {
            let Some(&k) = index.get(&p.job) else {
                continue;
            };
            let end = p.finish.unwrap_or(run_end).max(p.start);
            let share = if !time_shared || end <= p.start {
                1.0
            } else {
                (p.cpu / (end - p.start)).clamp(0.0, 1.0)
            };
            if p.node >= per_node.len() {
                per_node.resize(p.node + 1, Vec::new());
            }
            per_node[p.node].push(Band {
                job: k,
                node: p.node,
                from: p.start,
                to: end,
                share,
                offset: 0.0,
            });
        }
    }
    for (k, r) in records.iter().enumerate() {
        if parts.is_some() {
            break;
        }
        let Some(start) = r.start else { continue };
        let end = end_of(r, run_end).max(start);
        let share = if !time_shared {
            1.0
        } else if end > start {
            (r.actual / (end - start)).clamp(0.0, 1.0)
        } else {
            1.0
        };
        for &n in &r.nodes {
            if n >= per_node.len() {
                per_node.resize(n + 1, Vec::new());
            }
            per_node[n].push(Band {
                job: k,
                node: n,
                from: start,
                to: end,
                share,
                offset: 0.0,
            });
        }
    }
    let mut out = Vec::new();
    for mut row in per_node {
        if time_shared {
            stack(&mut row);
        }
        out.extend(row);
    }
    out
}

/// First-fit stacking of one node's bands (in start order): each band goes
/// at the lowest offset where it overlaps no band still running; when none
/// is free it goes on top, clipped to the row (the sum of mean shares may
/// exceed 1 when parts ran unevenly).
fn stack(row: &mut [Band]) {
    row.sort_by(|a, b| a.from.total_cmp(&b.from));
    let mut active: Vec<(f64, f64, f64)> = Vec::new(); // (end, lo, hi)
    for b in row.iter_mut() {
        active.retain(|&(end, _, _)| end > b.from);
        let mut taken: Vec<(f64, f64)> = active.iter().map(|&(_, lo, hi)| (lo, hi)).collect();
        taken.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut at = 0.0;
        for &(lo, hi) in &taken {
            if lo - at >= b.share - 1e-9 {
                break;
            }
            at = f64::max(at, hi);
        }
        let at = at.min((1.0 - b.share).max(0.0));
        b.offset = at;
        active.push((b.to, at, at + b.share));
    }
}

/// What a Gantt chart is drawn from.
pub struct Gantt<'a> {
    /// Title (the run and policy).
    pub title: String,
    /// The records, in arrival order.
    pub records: &'a [JobRecord],
    /// Nodes of the cluster.
    pub nodes: usize,
    /// Whether the policy time-shares nodes.
    pub time_shared: bool,
    /// The recorded parts, if the run has them.
    pub parts: Option<&'a [PartIn]>,
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A coordinate, short: one decimal (a tenth of a pixel), no trailing
/// zeros.
fn c(v: f64) -> String {
    let s = format!("{v:.1}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

/// The Gantt chart as SVG text: one `<g class="job">` per job (id
/// `job-<id>`, `data-job`, `data-class`, `data-outcome`, a `<title>`
/// tooltip); started jobs hold one rectangle per run of adjacent nodes
/// sharing the same band, rejected jobs one tick in the strip on top.
/// Rectangles are at least 0.4 px wide so short jobs stay visible.
pub fn gantt_svg(g: &Gantt) -> String {
    let nodes = g.nodes.max(1);
    let row_h = (640.0 / nodes as f64).clamp(2.0, 24.0);
    let plot_h = row_h * nodes as f64;
    let nodes_top = TOP + REJECT_H + 6.0;
    let height = nodes_top + plot_h + 76.0;
    let (t0, t1) = span(g.records);
    let pw = WIDTH - LEFT - RIGHT;
    let x = |t: f64| LEFT + (t - t0) / (t1 - t0) * pw;
    let mut s = String::with_capacity(g.records.len() * 160 + 4096);
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" \
         font-family=\"sans-serif\" data-jobs=\"{n}\" data-nodes=\"{nodes}\">",
        w = WIDTH,
        h = c(height),
        n = g.records.len(),
    );
    let _ = writeln!(
        s,
        "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"20\" y=\"26\" font-size=\"20\" font-weight=\"bold\">{}</text>",
        esc(&g.title)
    );
    let (started, rejected) = g.records.iter().fold((0, 0), |(a, b), r| match r.start {
        Some(_) => (a + 1, b),
        None => (a, b + 1),
    });
    let _ = writeln!(
        s,
        "<text x=\"20\" y=\"46\" font-size=\"13\" fill=\"#444\">{} jobs: {started} ran, {rejected} rejected; {nodes} nodes; {}</text>",
        g.records.len(),
        match (g.time_shared, g.parts.is_some()) {
            (true, true) => "band height = the part's mean share (recorded parts)",
            (true, false) => "band height = the part's mean share (reconstructed from the jobs' start, finish and runtime)",
            _ => "space-shared: a part holds its node",
        }
    );
    // Frame, node rows (alternating shade) and labels.
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">rejected</text>",
        c(LEFT - 4.0),
        c(TOP + REJECT_H - 5.0)
    );
    let _ = writeln!(
        s,
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#f4f4f4\"/>",
        c(LEFT),
        c(TOP),
        c(pw),
        c(REJECT_H)
    );
    s.push_str("<g class=\"rows\">\n");
    for n in (0..nodes).step_by(2) {
        let _ = writeln!(
            s,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#f4f4f4\"/>",
            c(LEFT),
            c(nodes_top + n as f64 * row_h),
            c(pw),
            c(row_h)
        );
    }
    let label_every = ((12.0 / row_h).ceil() as usize).max(1);
    for n in (0..nodes).step_by(label_every) {
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{}\" font-size=\"{}\" text-anchor=\"end\" dominant-baseline=\"middle\">{n}</text>",
            c(LEFT - 4.0),
            c(nodes_top + (n as f64 + 0.5) * row_h),
            c(row_h.clamp(9.0, 12.0))
        );
    }
    s.push_str("</g>\n");
    // Jobs.
    let bands = bands(g.records, nodes, g.time_shared, g.parts);
    let mut by_job: Vec<Vec<&Band>> = vec![Vec::new(); g.records.len()];
    for b in &bands {
        by_job[b.job].push(b);
    }
    s.push_str("<g class=\"jobs\" stroke=\"none\">\n");
    for (k, r) in g.records.iter().enumerate() {
        let o = Outcome::of(r);
        let class = r.class.map(|c| c.name());
        let fill = colour(class, o);
        let _ = write!(
            s,
            "<g id=\"job-{id}\" class=\"job\" data-job=\"{id}\" data-class=\"{cl}\" data-outcome=\"{on}\" fill=\"{fill}\"",
            id = r.id,
            cl = class.unwrap_or("none"),
            on = o.name(),
        );
        if o == Outcome::Missed {
            s.push_str(" fill-opacity=\"0.85\"");
        }
        s.push('>');
        let tip = match (r.start, r.finish) {
            (Some(st), Some(f)) => format!(
                "job {} ({}): {} nodes, {:.0}-{:.0} s, deadline {:.0} s, {}",
                r.id,
                class.unwrap_or("-"),
                r.nodes.len(),
                st,
                f,
                r.deadline_abs(),
                o.name()
            ),
            (Some(st), None) => format!("job {}: started {:.0} s, {}", r.id, st, o.name()),
            _ => format!(
                "job {}: {} at {:.0} s{}",
                r.id,
                r.reason.map_or("rejected", |x| x.name()),
                r.decided_at,
                if r.detail.is_empty() {
                    String::new()
                } else {
                    format!(": {}", r.detail)
                }
            ),
        };
        let _ = write!(s, "<title>{}</title>", esc(&tip));
        let parts = &mut by_job[k];
        if parts.is_empty() {
            // A tick in the rejected strip at its decision.
            let _ = write!(
                s,
                "<rect x=\"{}\" y=\"{}\" width=\"1\" height=\"{}\" fill-opacity=\"0.5\"/>",
                c(x(r.decided_at)),
                c(TOP + 2.0),
                c(REJECT_H - 4.0)
            );
        } else {
            parts.sort_by_key(|b| b.node);
            // A sliver (under a pixel wide) shows no share: its parts on
            // adjacent nodes become one full-height rectangle, which keeps
            // large runs' files small.
            let sliver = x(parts[0].to) - x(parts[0].from) < 1.0;
            // Adjacent nodes with the same band: one rectangle.
            let mut i = 0;
            while i < parts.len() {
                let mut j = i;
                while j + 1 < parts.len()
                    && parts[j + 1].node == parts[j].node + 1
                    && (sliver || parts[j + 1].offset == parts[i].offset)
                {
                    j += 1;
                }
                let b = parts[i];
                let (share, offset) = if sliver {
                    (1.0, 0.0)
                } else {
                    (b.share, b.offset)
                };
                let x0 = x(b.from);
                let w = (x(b.to) - x0).max(0.4);
                let rows = (j - i + 1) as f64;
                // Row n spans [top, top + row_h); shares grow upwards.
                let y_bottom = nodes_top + (parts[j].node as f64 + 1.0) * row_h;
                let h = (share * row_h).max(1.2_f64.min(row_h));
                let y = if rows > 1.0 {
                    nodes_top + b.node as f64 * row_h + (1.0 - offset - share) * row_h
                } else {
                    y_bottom - (offset * row_h) - h
                };
                let height = if rows > 1.0 {
                    (rows - 1.0) * row_h + h
                } else {
                    h
                };
                // A hairline between neighbouring jobs where rows and the
                // rectangle are big enough for it to show; on thin bands
                // it would hide the fill, on dense charts the jobs.
                let edge = if row_h >= 6.0 && height >= 4.0 && w >= 4.0 {
                    " stroke=\"white\" stroke-width=\"0.5\""
                } else {
                    ""
                };
                let _ = write!(
                    s,
                    "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"{edge}/>",
                    c(x0),
                    c(y),
                    c(w),
                    c(height)
                );
                i = j + 1;
            }
        }
        s.push_str("</g>\n");
    }
    s.push_str("</g>\n");
    // Time axis.
    let axis_y = nodes_top + plot_h;
    let _ = writeln!(
        s,
        "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#333\"/>",
        c(LEFT),
        c(axis_y),
        c(LEFT + pw),
        c(axis_y)
    );
    for k in 0..=8 {
        let t = t0 + (t1 - t0) * k as f64 / 8.0;
        let anchor = match k {
            0 => "start",
            8 => "end",
            _ => "middle",
        };
        let _ = writeln!(
            s,
            "<line x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\" stroke=\"#333\"/>\
             <text x=\"{x}\" y=\"{}\" font-size=\"12\" text-anchor=\"{anchor}\">{}</text>",
            c(axis_y),
            c(axis_y + 5.0),
            c(axis_y + 18.0),
            plot::fmt_num(t),
            x = c(x(t)),
        );
    }
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"{}\" font-size=\"13\" text-anchor=\"middle\">Time (trace seconds)</text>\
         <text x=\"14\" y=\"{}\" font-size=\"13\" text-anchor=\"middle\" transform=\"rotate(-90 14 {})\">Node</text>",
        c(LEFT + pw / 2.0),
        c(axis_y + 36.0),
        c(nodes_top + plot_h / 2.0),
        c(nodes_top + plot_h / 2.0),
    );
    // Legend.
    let legend = [
        ("high, deadline met", colour(Some("high"), Outcome::Met)),
        ("high, missed", colour(Some("high"), Outcome::Missed)),
        ("low, deadline met", colour(Some("low"), Outcome::Met)),
        ("low, missed", colour(Some("low"), Outcome::Missed)),
        ("no class, met", colour(None, Outcome::Met)),
        ("lost", colour(None, Outcome::Lost)),
    ];
    let ly = axis_y + 52.0;
    for (k, (label, fill)) in legend.iter().enumerate() {
        let lx = 20.0 + k as f64 * 190.0;
        let _ = writeln!(
            s,
            "<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"12\" fill=\"{fill}\"/>\
             <text x=\"{}\" y=\"{}\" font-size=\"12\">{label}</text>",
            c(lx),
            c(ly),
            c(lx + 20.0),
            c(ly + 11.0)
        );
    }
    s.push_str("</svg>\n");
    s
}

/// Time-binned series of a run: busy share of the cluster (%), jobs
/// waiting (submitted, not yet started or rejected) and jobs running, each
/// averaged over its bin.
pub struct OverTime {
    /// Bin centres (trace seconds).
    pub t: Vec<f64>,
    /// Busy share of the cluster, percent.
    pub utilisation: Vec<f64>,
    /// Mean jobs waiting.
    pub waiting: Vec<f64>,
    /// Mean jobs running.
    pub running: Vec<f64>,
}

/// Adds `weight` x the overlap of [a, b) with each bin.
fn spread(bins: &mut [f64], t0: f64, w: f64, a: f64, b: f64, weight: f64) {
    if b <= a || bins.is_empty() {
        return;
    }
    let n = bins.len();
    let first = (((a - t0) / w).floor().max(0.0) as usize).min(n - 1);
    let last = (((b - t0) / w).floor().max(0.0) as usize).min(n - 1);
    for (k, bin) in bins.iter_mut().enumerate().take(last + 1).skip(first) {
        let lo = t0 + k as f64 * w;
        let overlap = (b.min(lo + w) - a.max(lo)).max(0.0);
        *bin += weight * overlap / w;
    }
}

/// The series of [`OverTime`] from the records and the bands.
pub fn over_time(records: &[JobRecord], bands: &[Band], nodes: usize) -> OverTime {
    let (t0, t1) = span(records);
    let w = (t1 - t0) / BINS as f64;
    let mut busy = vec![0.0; BINS];
    let mut waiting = vec![0.0; BINS];
    let mut running = vec![0.0; BINS];
    for b in bands {
        spread(&mut busy, t0, w, b.from, b.to, b.share);
    }
    for r in records {
        let left_queue = r.start.unwrap_or(r.decided_at);
        spread(&mut waiting, t0, w, r.submit, left_queue, 1.0);
        if let Some(st) = r.start {
            spread(&mut running, t0, w, st, end_of(r, t1), 1.0);
        }
    }
    let nodes = nodes.max(1) as f64;
    OverTime {
        t: (0..BINS).map(|k| t0 + (k as f64 + 0.5) * w).collect(),
        utilisation: busy.iter().map(|b| 100.0 * b / nodes).collect(),
        waiting,
        running,
    }
}

fn line(label: &str, t: &[f64], v: &[f64]) -> Line {
    Line {
        label: label.into(),
        points: t
            .iter()
            .zip(v)
            .map(|(&x, &y)| Point {
                x,
                mean: y,
                min: y,
                max: y,
            })
            .collect(),
    }
}

/// The utilisation chart and the queue chart of a run.
pub fn over_time_charts(title: &str, ot: &OverTime, time_shared: bool) -> (Chart, Chart) {
    let util = Chart {
        title: format!("{title}: cluster utilisation"),
        subtitle: if time_shared {
            "sum of the parts' mean shares over nodes, per time bin".into()
        } else {
            "busy nodes over nodes, per time bin".into()
        },
        x_label: "Time (trace seconds)".into(),
        y_label: "Utilisation (%)".into(),
        x_axis: XAxis::Numeric,
        lines: vec![line("utilisation", &ot.t, &ot.utilisation)],
    };
    let queue = Chart {
        title: format!("{title}: queue and running jobs"),
        subtitle: if time_shared {
            "mean over each time bin; admission decides at arrival, so nothing waits".into()
        } else {
            "mean over each time bin; waiting = submitted, not yet started or dropped".into()
        },
        x_label: "Time (trace seconds)".into(),
        y_label: "Jobs".into(),
        x_axis: XAxis::Numeric,
        lines: vec![
            line("waiting", &ot.t, &ot.waiting),
            line("running", &ot.t, &ot.running),
        ],
    };
    (util, queue)
}

/// The files written for one policy of one run, relative to their
/// directory.
pub struct Written {
    /// The Gantt chart.
    pub gantt: String,
    /// The utilisation chart.
    pub utilisation: String,
    /// The queue chart.
    pub queue: String,
}

/// Writes `gantt-<policy>.svg`, `utilisation-<policy>.svg` and
/// `queue-<policy>.svg` into `dir`.
pub fn write_all(
    dir: &Path,
    title: &str,
    policy: &str,
    records: &[JobRecord],
    parts: Option<&[PartIn]>,
    nodes: usize,
    time_shared: bool,
) -> Result<Written> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let w = Written {
        gantt: format!("gantt-{policy}.svg"),
        utilisation: format!("utilisation-{policy}.svg"),
        queue: format!("queue-{policy}.svg"),
    };
    let svg = gantt_svg(&Gantt {
        title: format!("{title}: executed schedule"),
        records,
        nodes,
        time_shared,
        parts,
    });
    let p = dir.join(&w.gantt);
    std::fs::write(&p, svg).with_context(|| format!("writing {}", p.display()))?;
    let b = bands(records, nodes, time_shared, parts);
    let ot = over_time(records, &b, nodes);
    let (u, q) = over_time_charts(title, &ot, time_shared);
    plot::write_svg(&dir.join(&w.utilisation), &u)?;
    plot::write_svg(&dir.join(&w.queue), &q)?;
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use common::job::{DeadlineType, Urgency};

    fn rec(
        id: u64,
        start: Option<f64>,
        finish: Option<f64>,
        nodes: Vec<usize>,
        actual: f64,
    ) -> JobRecord {
        JobRecord {
            id,
            class: Some(Urgency::High),
            submit: 0.0,
            estimate: actual,
            actual,
            processors: nodes.len().max(1) as u32,
            deadline: 100.0,
            budget: f64::INFINITY,
            penalty_rate: 0.0,
            deadline_type: DeadlineType::Hard,
            accepted: start.is_some(),
            reason: None,
            detail: String::new(),
            decided_at: 0.0,
            nodes,
            start,
            finish,
            cost: 0.0,
            lost: false,
        }
    }

    #[test]
    fn time_shared_parts_stack_by_mean_share() {
        // Two jobs on node 0 over [0, 10): runtimes 5 and 4, so mean
        // shares 0.5 and 0.4; the second goes on top of the first.
        let r = vec![
            rec(1, Some(0.0), Some(10.0), vec![0], 5.0),
            rec(2, Some(0.0), Some(10.0), vec![0], 4.0),
            // Starts after both ended: back at the bottom.
            rec(3, Some(10.0), Some(20.0), vec![0], 10.0),
        ];
        let b = bands(&r, 1, true, None);
        assert_eq!(b.len(), 3);
        assert!((b[0].share - 0.5).abs() < 1e-12 && b[0].offset == 0.0);
        assert!((b[1].share - 0.4).abs() < 1e-12 && (b[1].offset - 0.5).abs() < 1e-12);
        assert!((b[2].share - 1.0).abs() < 1e-12 && b[2].offset == 0.0);
        // Utilisation: 0.9 of one node over [0, 10), 1.0 over [10, 20).
        let ot = over_time(&r, &b, 1);
        assert!(
            (ot.utilisation[0] - 90.0).abs() < 1e-9,
            "{}",
            ot.utilisation[0]
        );
        assert!((ot.utilisation[BINS - 1] - 100.0).abs() < 1e-9);
    }

    #[test]
    fn recorded_parts_have_their_own_span_and_share() {
        // Job 1 on nodes 0 and 1: the part on node 0 ended at 5 after 2.5
        // processor seconds (share 0.5), the one on node 1 at 10 after 10.
        let r = vec![rec(1, Some(0.0), Some(10.0), vec![0, 1], 10.0)];
        let parts = [
            PartIn {
                job: 1,
                node: 0,
                start: 0.0,
                finish: Some(5.0),
                cpu: 2.5,
            },
            PartIn {
                job: 1,
                node: 1,
                start: 0.0,
                finish: Some(10.0),
                cpu: 10.0,
            },
        ];
        let b = bands(&r, 2, true, Some(&parts));
        assert_eq!(b.len(), 2);
        assert_eq!((b[0].node, b[0].to), (0, 5.0));
        assert!((b[0].share - 0.5).abs() < 1e-12);
        assert_eq!((b[1].node, b[1].to, b[1].share), (1, 10.0, 1.0));
        // Busy: 0.5 x 5 + 1 x 10 node-seconds over 2 nodes x 10 s.
        let ot = over_time(&r, &b, 2);
        let mean = ot.utilisation.iter().sum::<f64>() / BINS as f64;
        assert!((mean - 62.5).abs() < 1e-9, "{mean}");
    }

    #[test]
    fn a_band_that_does_not_fit_goes_on_top_clipped() {
        let r = vec![
            rec(1, Some(0.0), Some(10.0), vec![0], 8.0),
            rec(2, Some(0.0), Some(10.0), vec![0], 5.0),
        ];
        let b = bands(&r, 1, true, None);
        assert!((b[1].offset - 0.5).abs() < 1e-12, "{:?}", b[1]);
    }

    #[test]
    fn waiting_jobs_are_counted_until_they_start() {
        // Job 1 waits [0, 10) and runs [10, 20) on node 0.
        let mut a = rec(1, Some(10.0), Some(20.0), vec![0], 10.0);
        a.decided_at = 10.0;
        let r = vec![a];
        let b = bands(&r, 1, false, None);
        let ot = over_time(&r, &b, 1);
        assert!((ot.waiting[0] - 1.0).abs() < 1e-9);
        assert!(ot.running[0].abs() < 1e-9);
        assert!((ot.running[BINS - 1] - 1.0).abs() < 1e-9);
        assert!((ot.utilisation[BINS - 1] - 100.0).abs() < 1e-9);
    }
}
