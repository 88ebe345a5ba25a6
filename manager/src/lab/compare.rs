//! `libratory compare RUN_A RUN_B`: two run directories job by job. For
//! the same workload run on real nodes and in the simulator, or under two
//! policies, or with two seeds: the share of identical admission decisions
//! (by job id: accepted or rejected, the reason, and for accepted jobs the
//! nodes), the differences of every metric, and each job that differs with
//! the evidence of why (its response time against its deadline in both
//! runs, earlier decisions that already differed, the rejection details).
//!
//! The command reads only files: `summary.json` and `jobs-<policy>.jsonl`
//! (or, when there is none, `jobs-<policy>.csv`) of each directory.
//! [`compare`] takes runs read ([`read_run`]) or held in memory
//! ([`RunJobs::in_memory`]): the fidelity bench and `calibrate` call it
//! directly; the command prints [`render`] or the [`Comparison`] as JSON.
//!
//! Not here: running anything, plotting.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use common::job::JobId;
use common::metrics::{JobRecord, Summary};
use common::time::DEADLINE_TOLERANCE;
use serde::{Deserialize, Serialize};

use crate::lab::metric_table::METRICS;
use crate::results::output;

/// One policy of one run directory, read.
#[derive(Debug, Clone)]
pub struct RunJobs {
    /// The directory.
    pub dir: PathBuf,
    /// `simulated` or `live` (summary.json's or manifest.json's `mode`).
    pub mode: String,
    /// The seed.
    pub seed: u64,
    /// The preset.
    pub preset: String,
    /// Real seconds per trace second (live runs).
    pub time_scale: Option<f64>,
    /// Its summary in the run.
    pub summary: Summary,
    /// One record per job.
    pub records: Vec<JobRecord>,
    /// The file the records came from.
    pub jobs_file: PathBuf,
}

/// The part of summary.json compare reads.
#[derive(Debug, Deserialize)]
struct SummaryIn {
    seed: u64,
    preset: String,
    #[serde(default)]
    mode: Option<String>,
    #[serde(default)]
    time_scale: Option<f64>,
    policies: Vec<Summary>,
}

#[derive(Debug, Deserialize, Default)]
struct ManifestIn {
    #[serde(default)]
    mode: Option<String>,
}

impl RunJobs {
    /// A run held in memory (the records a simulation or a live run
    /// returned), compared without reading its files back; `dir` is
    /// where its files are, for the report only.
    pub fn in_memory(
        dir: &Path,
        mode: &str,
        preset: &str,
        seed: u64,
        time_scale: Option<f64>,
        summary: Summary,
        records: Vec<JobRecord>,
    ) -> RunJobs {
        RunJobs {
            dir: dir.to_path_buf(),
            mode: mode.into(),
            seed,
            preset: preset.into(),
            time_scale,
            summary,
            records,
            jobs_file: PathBuf::from("(in memory)"),
        }
    }
}

fn read_summary(dir: &Path) -> Result<SummaryIn> {
    let path = dir.join("summary.json");
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "reading {} (is {} a run directory?)",
            path.display(),
            dir.display()
        )
    })?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

/// Reads one policy of a run directory (`policy` may be left out when the
/// run has only one).
pub fn read_run(dir: &Path, policy: Option<&str>) -> Result<RunJobs> {
    let s = read_summary(dir)?;
    let names: Vec<&str> = s.policies.iter().map(|p| p.policy.as_str()).collect();
    let summary = match policy {
        Some(name) => s
            .policies
            .iter()
            .find(|p| p.policy == name)
            .with_context(|| {
                format!(
                    "{} has no policy '{name}' (it has: {})",
                    dir.join("summary.json").display(),
                    names.join(", ")
                )
            })?
            .clone(),
        None if s.policies.len() == 1 => s.policies[0].clone(),
        None => bail!(
            "{} holds several policies ({}): say which with --policy, --policy-a or --policy-b",
            dir.display(),
            names.join(", ")
        ),
    };
    let mode = match s.mode {
        Some(m) => m,
        None => {
            let m: ManifestIn = std::fs::read_to_string(dir.join("manifest.json"))
                .ok()
                .and_then(|t| serde_json::from_str(&t).ok())
                .unwrap_or_default();
            m.mode.unwrap_or_else(|| "simulated".into())
        }
    };
    let jsonl = dir.join(format!("jobs-{}.jsonl", summary.policy));
    let csv = dir.join(format!("jobs-{}.csv", summary.policy));
    let (records, jobs_file) = if jsonl.is_file() {
        (output::read_jobs_jsonl(&jsonl)?, jsonl)
    } else if csv.is_file() {
        (output::read_jobs_csv(&csv)?, csv)
    } else {
        bail!(
            "{} has neither {} nor {}",
            dir.display(),
            jsonl.file_name().unwrap_or_default().to_string_lossy(),
            csv.file_name().unwrap_or_default().to_string_lossy()
        );
    };
    Ok(RunJobs {
        dir: dir.to_path_buf(),
        mode,
        seed: s.seed,
        preset: s.preset,
        time_scale: s.time_scale,
        summary,
        records,
        jobs_file,
    })
}

/// How one job fared in one run, as compare shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobSide {
    /// `accepted`, or `rejected (<reason>)`.
    pub decision: String,
    /// Nodes of an accepted job, sorted.
    pub nodes: Vec<usize>,
    /// Decision time after arrival (trace s).
    pub decided_after: f64,
    /// Finish after arrival (trace s), if it finished.
    pub response: Option<f64>,
    /// Relative deadline (trace s).
    pub deadline: f64,
    /// Deadline less response (trace s): > 0 early, < 0 late.
    pub margin: Option<f64>,
    /// Deadline met.
    pub met: bool,
    /// QoS satisfied.
    pub qos_satisfied: bool,
    /// Lost to a node failure.
    pub lost: bool,
    /// The policy's or the run's explanation (rejections, losses).
    pub detail: String,
}

fn side(r: &JobRecord) -> JobSide {
    let mut nodes = r.nodes.clone();
    nodes.sort_unstable();
    let response = r.finish.map(|f| f - r.submit);
    JobSide {
        decision: decision_of(r),
        nodes,
        decided_after: r.decided_at - r.submit,
        response,
        deadline: r.deadline,
        margin: response.map(|x| r.deadline - x),
        met: r.met(),
        qos_satisfied: r.qos_satisfied(),
        lost: r.lost,
        detail: r.detail.clone(),
    }
}

fn decision_of(r: &JobRecord) -> String {
    match (r.accepted, r.reason) {
        (true, _) => "accepted".into(),
        (false, Some(reason)) => format!("rejected ({})", reason.name()),
        (false, None) => "not decided".into(),
    }
}

/// What differs for one job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Difference {
    /// Accepted in A, rejected in B.
    AcceptedOnlyInA,
    /// Accepted in B, rejected in A.
    AcceptedOnlyInB,
    /// Rejected in both, for different reasons.
    Reason,
    /// Accepted in both, on different nodes.
    Nodes,
    /// Same decision; met its deadline in A only.
    MetOnlyInA,
    /// Same decision; met its deadline in B only.
    MetOnlyInB,
    /// Same decision; lost to a node failure in one run.
    Lost,
}

impl Difference {
    /// Whether it is a difference of the admission decision (not of the
    /// outcome).
    pub fn is_decision(self) -> bool {
        matches!(
            self,
            Difference::AcceptedOnlyInA
                | Difference::AcceptedOnlyInB
                | Difference::Reason
                | Difference::Nodes
        )
    }
}

/// One job that differs.
#[derive(Debug, Clone, Serialize)]
pub struct JobDiff {
    /// The job.
    pub id: JobId,
    /// Arrival (trace s, run A).
    pub submit: f64,
    /// What differs.
    pub difference: Difference,
    /// In run A.
    pub a: JobSide,
    /// In run B.
    pub b: JobSide,
    /// The evidence of why, in words.
    pub why: String,
}

/// One metric in both runs.
#[derive(Debug, Clone, Serialize)]
pub struct MetricDiff {
    /// Column name (as in summary.json).
    pub name: &'static str,
    /// In run A (`None`: undefined there).
    pub a: Option<f64>,
    /// In run B.
    pub b: Option<f64>,
    /// B - A.
    pub diff: Option<f64>,
}

/// Which run, for the report.
#[derive(Debug, Clone, Serialize)]
pub struct RunFacts {
    /// The directory.
    pub dir: String,
    /// `simulated` or `live`.
    pub mode: String,
    /// Policy compared.
    pub policy: String,
    /// Seed.
    pub seed: u64,
    /// Preset.
    pub preset: String,
    /// Real seconds per trace second (live runs).
    pub time_scale: Option<f64>,
    /// Jobs in its records.
    pub jobs: usize,
    /// The file read.
    pub jobs_file: String,
}

/// The whole comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// Run A.
    pub a: RunFacts,
    /// Run B.
    pub b: RunFacts,
    /// Jobs present in both (by id).
    pub common_jobs: usize,
    /// Ids only in A.
    pub only_in_a: Vec<JobId>,
    /// Ids only in B.
    pub only_in_b: Vec<JobId>,
    /// Common jobs with the same decision (accepted on the same nodes, or
    /// rejected for the same reason).
    pub identical_decisions: usize,
    /// `identical_decisions / common_jobs` (1 when there are none).
    pub identical_share: f64,
    /// Common jobs accepted in both or rejected in both for the same
    /// reason, whatever the nodes (placement differences left out).
    pub identical_admissions: usize,
    /// `identical_admissions / common_jobs` (1 when there are none).
    pub identical_admission_share: f64,
    /// Common jobs with the same decision and the same outcome (deadline
    /// met or not, lost or not).
    pub identical_outcomes: usize,
    /// Count of each kind of difference.
    pub differences: BTreeMap<String, usize>,
    /// QoS satisfaction of B less A's, percentage points.
    pub qos_satisfaction_diff_pp: f64,
    /// Every metric in both runs.
    pub metrics: Vec<MetricDiff>,
    /// Each job that differs, in arrival order.
    pub jobs: Vec<JobDiff>,
}

fn facts(r: &RunJobs) -> RunFacts {
    RunFacts {
        dir: r.dir.display().to_string(),
        mode: r.mode.clone(),
        policy: r.summary.policy.clone(),
        seed: r.seed,
        preset: r.preset.clone(),
        time_scale: r.time_scale,
        jobs: r.records.len(),
        jobs_file: r.jobs_file.display().to_string(),
    }
}

fn same_decision(a: &JobRecord, b: &JobRecord) -> bool {
    if a.accepted != b.accepted {
        return false;
    }
    if a.accepted {
        side(a).nodes == side(b).nodes
    } else {
        a.reason == b.reason
    }
}

fn classify(a: &JobRecord, b: &JobRecord) -> Option<Difference> {
    match (a.accepted, b.accepted) {
        (true, false) => Some(Difference::AcceptedOnlyInA),
        (false, true) => Some(Difference::AcceptedOnlyInB),
        (false, false) if a.reason != b.reason => Some(Difference::Reason),
        (false, false) => None,
        (true, true) => {
            if side(a).nodes != side(b).nodes {
                Some(Difference::Nodes)
            } else if a.lost != b.lost {
                Some(Difference::Lost)
            } else if a.met() && !b.met() {
                Some(Difference::MetOnlyInA)
            } else if b.met() && !a.met() {
                Some(Difference::MetOnlyInB)
            } else {
                None
            }
        }
    }
}

/// Whether two records are of the same submitted job (same arrival and
/// request), as they are for one workload run twice.
fn same_job(a: &JobRecord, b: &JobRecord) -> bool {
    let close = |x: f64, y: f64| (x - y).abs() <= 1e-6 * x.abs().max(y.abs()).max(1.0);
    close(a.submit, b.submit)
        && close(a.estimate, b.estimate)
        && close(a.actual, b.actual)
        && close(a.deadline, b.deadline)
        && a.processors == b.processors
        && (a.budget == b.budget || close(a.budget, b.budget))
}

fn spec_text(r: &JobRecord) -> String {
    format!(
        "arrives {:.2}, RE {:.2}, D {:.2}, P {}",
        r.submit, r.estimate, r.deadline, r.processors
    )
}

/// Seconds in words with their real-time equivalent when the run is live.
fn secs(x: f64, scale: Option<f64>) -> String {
    match scale {
        Some(s) => format!("{x:.3} s ({:.1} ms real)", x * s * 1000.0),
        None => format!("{x:.3} s"),
    }
}

fn late_or_early(label: &str, s: &JobSide, scale: Option<f64>) -> String {
    match (s.margin, s.lost) {
        (_, true) => format!("{label} lost it ({})", s.detail),
        (Some(m), _) if m < -DEADLINE_TOLERANCE => {
            format!("{label} finished {} after its deadline", secs(-m, scale))
        }
        (Some(m), _) => format!("{label} finished {} before it", secs(m, scale)),
        (None, _) => format!("{label} did not finish"),
    }
}

/// Compares two runs of (normally) the same workload job by job.
pub fn compare(a: &RunJobs, b: &RunJobs) -> Comparison {
    let bmap: HashMap<JobId, &JobRecord> = b.records.iter().map(|r| (r.id, r)).collect();
    let amap: HashMap<JobId, &JobRecord> = a.records.iter().map(|r| (r.id, r)).collect();
    let mut common: Vec<(&JobRecord, &JobRecord)> = a
        .records
        .iter()
        .filter_map(|r| bmap.get(&r.id).map(|s| (r, *s)))
        .collect();
    common.sort_by(|x, y| x.0.submit.total_cmp(&y.0.submit).then(x.0.id.cmp(&y.0.id)));
    let only_in_a: Vec<JobId> = a
        .records
        .iter()
        .filter(|r| !bmap.contains_key(&r.id))
        .map(|r| r.id)
        .collect();
    let only_in_b: Vec<JobId> = b
        .records
        .iter()
        .filter(|r| !amap.contains_key(&r.id))
        .map(|r| r.id)
        .collect();
    let mut identical_decisions = 0;
    let mut identical_admissions = 0;
    let mut identical_outcomes = 0;
    let mut differences: BTreeMap<String, usize> = BTreeMap::new();
    let mut jobs = Vec::new();
    // Earlier decisions that already differed, and the first of them: a
    // decision taken on a cluster that holds other jobs decides on another
    // cluster view.
    let mut earlier_diff: Vec<JobId> = Vec::new();
    let mut earlier_outcome: Vec<JobId> = Vec::new();
    let (sa, sb) = (a.time_scale, b.time_scale);
    for (ra, rb) in &common {
        let same = same_decision(ra, rb);
        if same {
            identical_decisions += 1;
        }
        if ra.accepted == rb.accepted && (ra.accepted || ra.reason == rb.reason) {
            identical_admissions += 1;
        }
        let kind = classify(ra, rb);
        if kind.is_none() {
            identical_outcomes += 1;
        }
        let Some(kind) = kind else {
            continue;
        };
        let (ja, jb) = (side(ra), side(rb));
        let why = if !same_job(ra, rb) {
            format!(
                "not the same job under this id (another seed or workload): A {}; B {}",
                spec_text(ra),
                spec_text(rb)
            )
        } else if kind.is_decision() {
            let mut w = if let Some(first) = earlier_diff.first() {
                format!(
                    "the cluster view differed: {} earlier job(s) were decided differently (first: job {first})",
                    earlier_diff.len()
                )
            } else if let Some(first) = earlier_outcome.first() {
                format!(
                    "every earlier decision was the same, but {} earlier job(s) ran differently (first: job {first}), so the work left on the nodes differed",
                    earlier_outcome.len()
                )
            } else if a.summary.policy != b.summary.policy {
                "first divergence: every earlier job was decided and ran the same; the two policies decide differently on the same cluster".to_string()
            } else if a.mode == "simulated" && b.mode == "simulated" {
                "first divergence: every earlier job was decided and ran the same, so the policies' settings differ (their manifests' `config` says how), or the runs' files were changed".to_string()
            } else {
                "first divergence: every earlier job was decided and ran the same, so the cluster view at the decision differed (live: dead-reckoned from progress reports, decided ~1 ms after arrival, work reported in whole slices; on near-tied placements that small error picks another node; see docs/cli.md, fidelity)".to_string()
            };
            for (label, s) in [("A", &ja), ("B", &jb)] {
                if !s.detail.is_empty() {
                    let _ = write!(w, "; {label}: {}", s.detail);
                }
            }
            if (ja.decided_after - jb.decided_after).abs() > 1e-6 {
                let _ = write!(
                    w,
                    "; decided {} after arrival in A, {} in B",
                    secs(ja.decided_after, sa),
                    secs(jb.decided_after, sb)
                );
            }
            earlier_diff.push(ra.id);
            w
        } else {
            earlier_outcome.push(ra.id);
            let mut w = format!(
                "same decision; {}, {}",
                late_or_early("A", &ja, sa),
                late_or_early("B", &jb, sb)
            );
            let small = [(&ja, sa), (&jb, sb)].iter().any(|(s, scale)| {
                matches!((s.margin, scale), (Some(m), Some(sc)) if m < 0.0 && -m * sc < 0.05)
            });
            if small {
                w.push_str(
                    "; missed by a few slicing periods of real time: slicing or dispatch error on the node",
                );
            }
            w
        };
        *differences
            .entry(
                serde_json::to_value(kind)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
            )
            .or_default() += 1;
        jobs.push(JobDiff {
            id: ra.id,
            submit: ra.submit,
            difference: kind,
            a: ja,
            b: jb,
            why,
        });
    }
    let metrics = METRICS
        .iter()
        .map(|m| {
            let (x, y) = ((m.get)(&a.summary), (m.get)(&b.summary));
            MetricDiff {
                name: m.name,
                a: x,
                b: y,
                diff: x.zip(y).map(|(x, y)| y - x),
            }
        })
        .collect();
    let n = common.len();
    Comparison {
        a: facts(a),
        b: facts(b),
        common_jobs: n,
        only_in_a,
        only_in_b,
        identical_decisions,
        identical_share: if n == 0 {
            1.0
        } else {
            identical_decisions as f64 / n as f64
        },
        identical_admissions,
        identical_admission_share: if n == 0 {
            1.0
        } else {
            identical_admissions as f64 / n as f64
        },
        identical_outcomes,
        differences,
        qos_satisfaction_diff_pp: 100.0 * (b.summary.qos_satisfaction - a.summary.qos_satisfaction),
        metrics,
        jobs,
    }
}

fn cell(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| {
        if v == v.trunc() && v.abs() < 1e12 {
            format!("{v}")
        } else {
            format!("{v:.4}")
        }
    })
}

fn short(s: &JobSide) -> String {
    let mut t = s.decision.clone();
    if !s.nodes.is_empty() {
        let n: Vec<String> = s.nodes.iter().map(|n| n.to_string()).collect();
        let _ = write!(t, " on {}", n.join(" "));
    }
    match (s.response, s.lost) {
        (_, true) => t.push_str(", lost"),
        (Some(r), _) => {
            let _ = write!(
                t,
                ", done at +{r:.2} of {:.2}{}",
                s.deadline,
                if s.met { "" } else { " LATE" }
            );
        }
        (None, _) => {}
    }
    t
}

/// The comparison as text: the runs, the decision agreement, every metric
/// side by side, and up to `limit` differing jobs.
pub fn render(c: &Comparison, limit: usize) -> String {
    let mut t = String::new();
    for (k, r) in [("A", &c.a), ("B", &c.b)] {
        let _ = writeln!(
            t,
            "{k}: {} ({}, policy {}, preset {}, seed {}{}), {} jobs",
            r.dir,
            r.mode,
            r.policy,
            r.preset,
            r.seed,
            r.time_scale
                .map_or(String::new(), |s| format!(", time scale {s}")),
            r.jobs
        );
    }
    let _ = writeln!(
        t,
        "\nidentical admission decisions: {} of {} common jobs = {:.1}%  (same decision and outcome: {} = {:.1}%)",
        c.identical_decisions,
        c.common_jobs,
        100.0 * c.identical_share,
        c.identical_outcomes,
        if c.common_jobs == 0 {
            100.0
        } else {
            100.0 * c.identical_outcomes as f64 / c.common_jobs as f64
        }
    );
    let _ = writeln!(
        t,
        "identical accept/reject (and reason), nodes aside: {} = {:.1}%",
        c.identical_admissions,
        100.0 * c.identical_admission_share
    );
    if !c.only_in_a.is_empty() || !c.only_in_b.is_empty() {
        let _ = writeln!(
            t,
            "jobs in one run only: {} in A, {} in B (not compared)",
            c.only_in_a.len(),
            c.only_in_b.len()
        );
    }
    if !c.differences.is_empty() {
        let parts: Vec<String> = c
            .differences
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        let _ = writeln!(t, "differences: {}", parts.join(", "));
    }
    let _ = writeln!(
        t,
        "QoS satisfaction: B - A = {:+.2} percentage points\n",
        c.qos_satisfaction_diff_pp
    );
    let _ = writeln!(
        t,
        "{:<36} {:>14} {:>14} {:>14}",
        "metric", "A", "B", "B - A"
    );
    for m in &c.metrics {
        let _ = writeln!(
            t,
            "{:<36} {:>14} {:>14} {:>14}",
            m.name,
            cell(m.a),
            cell(m.b),
            cell(m.diff)
        );
    }
    if !c.jobs.is_empty() {
        let _ = writeln!(
            t,
            "\njobs that differ ({} of {}; times are trace seconds after arrival):",
            c.jobs.len().min(limit),
            c.jobs.len()
        );
        for j in c.jobs.iter().take(limit) {
            let kind = serde_json::to_value(j.difference)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            let _ = writeln!(
                t,
                "job {} (arrived {:.2}): {kind}\n  A: {}\n  B: {}\n  why: {}",
                j.id,
                j.submit,
                short(&j.a),
                short(&j.b),
                j.why
            );
        }
        if c.jobs.len() > limit {
            let _ = writeln!(
                t,
                "... {} more (--limit N, or --json for all)",
                c.jobs.len() - limit
            );
        }
    }
    t
}

/// Arguments of `libratory compare`.
#[derive(clap::Args, Debug)]
pub struct CompareArgs {
    /// First run directory (A).
    pub run_a: PathBuf,
    /// Second run directory (B).
    pub run_b: PathBuf,
    /// The policy to compare in both runs (needed when a run holds several).
    #[arg(long)]
    pub policy: Option<String>,
    /// The policy of run A (overrides --policy).
    #[arg(long)]
    pub policy_a: Option<String>,
    /// The policy of run B (overrides --policy).
    #[arg(long)]
    pub policy_b: Option<String>,
    /// Differing jobs to print (the JSON has them all).
    #[arg(long, default_value_t = 30)]
    pub limit: usize,
    /// Print the comparison as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `libratory compare`.
pub fn run(a: &CompareArgs) -> Result<std::process::ExitCode> {
    let pa = a.policy_a.as_deref().or(a.policy.as_deref());
    let pb = a.policy_b.as_deref().or(a.policy.as_deref());
    let ra = read_run(&a.run_a, pa)?;
    let rb = read_run(&a.run_b, pb)?;
    let c = compare(&ra, &rb);
    if a.json {
        println!("{}", serde_json::to_string_pretty(&c)?);
    } else {
        print!("{}", render(&c, a.limit));
    }
    Ok(std::process::ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use common::job::DeadlineType;
    use common::policy::RejectReason;

    fn rec(
        id: JobId,
        submit: f64,
        accepted: bool,
        nodes: &[usize],
        finish: Option<f64>,
    ) -> JobRecord {
        JobRecord {
            id,
            class: None,
            submit,
            estimate: 10.0,
            actual: 10.0,
            processors: nodes.len().max(1) as u32,
            deadline: 20.0,
            budget: f64::INFINITY,
            penalty_rate: 0.0,
            deadline_type: DeadlineType::Hard,
            accepted,
            reason: (!accepted).then_some(RejectReason::Deadline),
            detail: String::new(),
            decided_at: submit,
            nodes: nodes.to_vec(),
            start: accepted.then_some(submit),
            finish,
            cost: 0.0,
            lost: false,
        }
    }

    fn run(records: Vec<JobRecord>) -> RunJobs {
        RunJobs {
            dir: PathBuf::from("x"),
            mode: "simulated".into(),
            seed: 1,
            preset: "libra".into(),
            time_scale: None,
            summary: Summary::compute("libra", &records),
            records,
            jobs_file: PathBuf::from("x/jobs-libra.jsonl"),
        }
    }

    #[test]
    fn decisions_nodes_and_outcomes_are_told_apart() {
        let a = run(vec![
            rec(1, 0.0, true, &[0], Some(10.0)),
            rec(2, 1.0, true, &[1, 0], Some(15.0)),
            rec(3, 2.0, false, &[], None),
            rec(4, 3.0, true, &[2], Some(20.0)),
            rec(5, 4.0, true, &[3], Some(12.0)),
        ]);
        let b = run(vec![
            rec(1, 0.0, true, &[0], Some(10.0)),
            // Same nodes in another order: the same decision.
            rec(2, 1.0, true, &[0, 1], Some(15.0)),
            rec(3, 2.0, true, &[1], Some(12.0)),
            rec(4, 3.0, true, &[1], Some(20.0)),
            // Same decision, late by 0.5 s.
            rec(5, 4.0, true, &[3], Some(24.5)),
            rec(6, 5.0, false, &[], None),
        ]);
        let c = compare(&a, &b);
        assert_eq!(c.common_jobs, 5);
        assert_eq!(c.only_in_b, vec![6]);
        assert_eq!(c.identical_decisions, 3);
        assert_eq!(c.identical_admissions, 4);
        assert_eq!(c.identical_outcomes, 2);
        let kinds: Vec<(JobId, Difference)> = c.jobs.iter().map(|j| (j.id, j.difference)).collect();
        assert_eq!(
            kinds,
            vec![
                (3, Difference::AcceptedOnlyInB),
                (4, Difference::Nodes),
                (5, Difference::MetOnlyInA)
            ]
        );
        assert!(
            c.jobs[0].why.contains("first divergence"),
            "{}",
            c.jobs[0].why
        );
        assert!(c.jobs[1].why.contains("job 3"), "{}", c.jobs[1].why);
        assert!(
            c.jobs[2].why.contains("0.500 s after its deadline"),
            "{}",
            c.jobs[2].why
        );
        let text = render(&c, 10);
        assert!(text.contains("3 of 5 common jobs = 60.0%"), "{text}");
    }
}
