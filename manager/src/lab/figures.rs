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

/// A series of a figure: a legend label, a policy, its own knobs.
#[derive(Debug, Clone, Copy)]
pub struct FigSeries {
    /// Legend label.
    pub label: &'static str,
    /// Registered policy name.
    pub policy: &'static str,
    /// `key=value` overrides of this series.
    pub sets: &'static [&'static str],
}

const fn s(label: &'static str, policy: &'static str, sets: &'static [&'static str]) -> FigSeries {
    FigSeries {
        label,
        policy,
        sets,
    }
}

/// A panel: the same sweep under extra fixed sets (e.g. accurate vs trace
/// estimates).
#[derive(Debug, Clone, Copy)]
pub struct Panel {
    /// Name in titles and file names.
    pub name: &'static str,
    /// Extra fixed sets.
    pub sets: &'static [&'static str],
}

/// The points of a figure.
#[derive(Debug, Clone, Copy)]
pub enum Values {
    /// Values of the swept parameter.
    List(&'static [&'static str]),
    /// Named cases, each setting several keys (a table's rows).
    Cases(&'static [(&'static str, &'static [&'static str])]),
}

/// One figure or table of a paper, as data.
#[derive(Debug, Clone, Copy)]
pub struct Figure {
    /// Stable id: `<preset>-fig<N>` or `<preset>-table<N>`.
    pub id: &'static str,
    /// The paper's name (Libra, Libra+$, LibraRisk, LibraSLA, VQoPS;
    /// docs/papers.md).
    pub paper: &'static str,
    /// The figure's number and caption in the paper.
    pub title: &'static str,
    /// Preset every run starts from.
    pub preset: &'static str,
    /// Fixed sets for every run.
    pub fixed: &'static [&'static str],
    /// The swept parameter (a `--set` key, or a name for cases).
    pub param: &'static str,
    /// Its values.
    pub values: Values,
    /// The series.
    pub series: &'static [FigSeries],
    /// Panels (empty: one panel with no extra sets).
    pub panels: &'static [Panel],
    /// The metrics plotted, one subfigure each.
    pub metrics: &'static [&'static str],
    /// If not empty, plot the improvement (%) of a series over a baseline:
    /// (line label, series label, baseline label).
    pub improvement: &'static [(&'static str, &'static str, &'static str)],
    /// What the paper states this figure shows.
    pub finding: &'static str,
}

const PLUS_DOLLAR_ALL: &[FigSeries] = &[
    s("Libra+$", "libra-plus-dollar", &[]),
    s("Libra", "libra", &[]),
    s("FCFS-BF", "fcfs-bf", &[]),
    s("SJF-BF", "sjf-bf", &[]),
    s("EDF-BF", "edf-bf", &[]),
];
const PLUS_DOLLAR_BETAS: &[FigSeries] = &[
    s("Libra", "libra", &[]),
    s("Libra+$ beta=0.1", "libra-plus-dollar", &["beta=0.1"]),
    s("Libra+$ beta=0.5", "libra-plus-dollar", &["beta=0.5"]),
    s("Libra+$ beta=1.0", "libra-plus-dollar", &["beta=1.0"]),
];
const PLUS_DOLLAR_LOADS: Values = Values::List(&["0.1", "0.25", "0.5", "0.75", "1.0"]);
const PLUS_DOLLAR_METRICS: &[&str] = &["qos_satisfaction", "profitability"];

const RISK_ALL: &[FigSeries] = &[
    s("LibraRisk", "libra-risk", &[]),
    s("Libra", "libra", &[]),
    s("EDF", "edf", &[]),
];
const RISK_ESTIMATES: &[Panel] = &[
    Panel {
        name: "accurate estimates",
        sets: &["inaccuracy=0"],
    },
    Panel {
        name: "trace estimates",
        sets: &["inaccuracy=1"],
    },
];
const RISK_METRICS: &[&str] = &["pct_deadlines_met", "avg_slowdown"];

// The LibraSLA paper: LibraSLA against Libra for three values of one knob, and
// the improvement of each LibraSLA series over its Libra twin.
/// LibraSLA, share of hard-deadline jobs: LibraSLA and Libra per value.
const SLA_HARD: &[FigSeries] = &[
    s(
        "LibraSLA, 20% hard",
        "libra-sla",
        &["high_urgency_fraction=0.2"],
    ),
    s("Libra, 20% hard", "libra", &["high_urgency_fraction=0.2"]),
    s(
        "LibraSLA, 50% hard",
        "libra-sla",
        &["high_urgency_fraction=0.5"],
    ),
    s("Libra, 50% hard", "libra", &["high_urgency_fraction=0.5"]),
    s(
        "LibraSLA, 80% hard",
        "libra-sla",
        &["high_urgency_fraction=0.8"],
    ),
    s("Libra, 80% hard", "libra", &["high_urgency_fraction=0.8"]),
];
const SLA_HARD_GAINS: &[(&str, &str, &str)] = &[
    ("20% hard", "LibraSLA, 20% hard", "Libra, 20% hard"),
    ("50% hard", "LibraSLA, 50% hard", "Libra, 50% hard"),
    ("80% hard", "LibraSLA, 80% hard", "Libra, 80% hard"),
];
/// LibraSLA, deadline mean factor: LibraSLA and Libra per value.
const SLA_DEADLINE: &[FigSeries] = &[
    s(
        "LibraSLA, deadline factor 1",
        "libra-sla",
        &["deadline_low_mean=1"],
    ),
    s(
        "Libra, deadline factor 1",
        "libra",
        &["deadline_low_mean=1"],
    ),
    s(
        "LibraSLA, deadline factor 2",
        "libra-sla",
        &["deadline_low_mean=2"],
    ),
    s(
        "Libra, deadline factor 2",
        "libra",
        &["deadline_low_mean=2"],
    ),
    s(
        "LibraSLA, deadline factor 3",
        "libra-sla",
        &["deadline_low_mean=3"],
    ),
    s(
        "Libra, deadline factor 3",
        "libra",
        &["deadline_low_mean=3"],
    ),
];
const SLA_DEADLINE_GAINS: &[(&str, &str, &str)] = &[
    (
        "deadline factor 1",
        "LibraSLA, deadline factor 1",
        "Libra, deadline factor 1",
    ),
    (
        "deadline factor 2",
        "LibraSLA, deadline factor 2",
        "Libra, deadline factor 2",
    ),
    (
        "deadline factor 3",
        "LibraSLA, deadline factor 3",
        "Libra, deadline factor 3",
    ),
];
/// LibraSLA, budget mean factor: LibraSLA and Libra per value.
const SLA_BUDGET: &[FigSeries] = &[
    s(
        "LibraSLA, budget factor 1",
        "libra-sla",
        &["budget_low_mean=1"],
    ),
    s("Libra, budget factor 1", "libra", &["budget_low_mean=1"]),
    s(
        "LibraSLA, budget factor 2",
        "libra-sla",
        &["budget_low_mean=2"],
    ),
    s("Libra, budget factor 2", "libra", &["budget_low_mean=2"]),
    s(
        "LibraSLA, budget factor 3",
        "libra-sla",
        &["budget_low_mean=3"],
    ),
    s("Libra, budget factor 3", "libra", &["budget_low_mean=3"]),
];
const SLA_BUDGET_GAINS: &[(&str, &str, &str)] = &[
    (
        "budget factor 1",
        "LibraSLA, budget factor 1",
        "Libra, budget factor 1",
    ),
    (
        "budget factor 2",
        "LibraSLA, budget factor 2",
        "Libra, budget factor 2",
    ),
    (
        "budget factor 3",
        "LibraSLA, budget factor 3",
        "Libra, budget factor 3",
    ),
];
/// LibraSLA, penalty rate mean factor: LibraSLA and Libra per value.
const SLA_PENALTY: &[FigSeries] = &[
    s(
        "LibraSLA, penalty factor 1",
        "libra-sla",
        &["penalty_low_mean=1"],
    ),
    s("Libra, penalty factor 1", "libra", &["penalty_low_mean=1"]),
    s(
        "LibraSLA, penalty factor 2",
        "libra-sla",
        &["penalty_low_mean=2"],
    ),
    s("Libra, penalty factor 2", "libra", &["penalty_low_mean=2"]),
    s(
        "LibraSLA, penalty factor 3",
        "libra-sla",
        &["penalty_low_mean=3"],
    ),
    s("Libra, penalty factor 3", "libra", &["penalty_low_mean=3"]),
];
const SLA_PENALTY_GAINS: &[(&str, &str, &str)] = &[
    (
        "penalty factor 1",
        "LibraSLA, penalty factor 1",
        "Libra, penalty factor 1",
    ),
    (
        "penalty factor 2",
        "LibraSLA, penalty factor 2",
        "Libra, penalty factor 2",
    ),
    (
        "penalty factor 3",
        "LibraSLA, penalty factor 3",
        "Libra, penalty factor 3",
    ),
];
const SLA_LOADS: Values = Values::List(&["0.005", "0.01", "0.02", "0.03", "0.04"]);
const SLA_METRICS: &[&str] = &["completed", "utility"];

const VQOPS_SCHEMES: &[FigSeries] = &[
    s("QoPS", "qops", &[]),
    s("VQoPS OC=0", "vqops", &["oc_factor=0"]),
    s("VQoPS OC=0.05", "vqops", &["oc_factor=0.05"]),
    s("VQoPS OC=0.1", "vqops", &["oc_factor=0.1"]),
    s("VQoPS OC=0.4", "vqops", &["oc_factor=0.4"]),
    s("DVQoPS", "dvqops", &[]),
];
const VQOPS_VS_QOPS: &[(&str, &str, &str)] = &[
    ("VQoPS OC=0", "VQoPS OC=0", "QoPS"),
    ("VQoPS OC=0.05", "VQoPS OC=0.05", "QoPS"),
    ("VQoPS OC=0.1", "VQoPS OC=0.1", "QoPS"),
    ("VQoPS OC=0.4", "VQoPS OC=0.4", "QoPS"),
    ("DVQoPS", "DVQoPS", "QoPS"),
];

/// Every figure the project reproduces, in paper order.
pub const FIGURES: &[Figure] = &[
    Figure {
        id: "libra-plus-dollar-fig2",
        paper: "Libra+$",
        title: "Fig. 2: impact of decreasing workload",
        preset: "libra-plus-dollar",
        fixed: &[],
        param: "arrival_delay_factor",
        values: PLUS_DOLLAR_LOADS,
        series: PLUS_DOLLAR_ALL,
        panels: &[],
        metrics: PLUS_DOLLAR_METRICS,
        improvement: &[],
        finding: "Libra+$ earns higher Cluster Profitability than every other policy with similar or lower Job QoS Satisfaction (lower than Libra). Under heavy load SJF-BF and EDF-BF satisfy more jobs than Libra and Libra+$, which overtake them as the load falls. EDF-BF earns about the profitability of FCFS-BF despite a higher QoS satisfaction.",
    },
    Figure {
        id: "libra-plus-dollar-fig3",
        paper: "Libra+$",
        title: "Fig. 3: impact of increasing dynamic pricing factor beta",
        preset: "libra-plus-dollar",
        fixed: &[],
        param: "beta",
        values: Values::List(&["0.1", "0.2", "0.3", "0.5", "0.7", "1.0"]),
        series: PLUS_DOLLAR_ALL,
        panels: &[],
        metrics: PLUS_DOLLAR_METRICS,
        improvement: &[],
        finding: "A higher beta lowers Libra+$'s Job QoS Satisfaction (below EDF-BF and FCFS-BF if too high) and raises its Cluster Profitability, until beta is too high (1.0), where profitability falls again.",
    },
    Figure {
        id: "libra-plus-dollar-fig4",
        paper: "Libra+$",
        title: "Fig. 4: impact of decreasing workload with beta",
        preset: "libra-plus-dollar",
        fixed: &[],
        param: "arrival_delay_factor",
        values: PLUS_DOLLAR_LOADS,
        series: PLUS_DOLLAR_BETAS,
        panels: &[],
        metrics: PLUS_DOLLAR_METRICS,
        improvement: &[],
        finding: "Libra+$ always earns more than Libra. As the load falls profitability rises more for a higher beta (beta 0.5: 32% at f 0.25 to 57% at f 1.0; beta 0.1: 23% to 40%), but less again if beta is too high (beta 1.0: 31% to 44%).",
    },
    Figure {
        id: "libra-plus-dollar-fig5",
        paper: "Libra+$",
        title: "Fig. 5: impact of increasing share of high-urgency jobs with beta",
        preset: "libra-plus-dollar",
        fixed: &[],
        param: "high_urgency_fraction",
        values: Values::List(&["0", "0.2", "0.4", "0.6", "0.8", "1.0"]),
        series: PLUS_DOLLAR_BETAS,
        panels: &[],
        metrics: PLUS_DOLLAR_METRICS,
        improvement: &[],
        finding: "A high beta (1.0) earns more when there are more high-urgency jobs and less when there are few; its QoS satisfaction rises with the share of high-urgency jobs to about that of a low beta.",
    },
    Figure {
        id: "libra-plus-dollar-fig6",
        paper: "Libra+$",
        title: "Fig. 6: impact of increasing runtime under-estimates with beta",
        preset: "libra-plus-dollar",
        fixed: &[],
        param: "inaccuracy",
        values: Values::List(&["0", "0.1", "0.25", "0.5", "0.75", "0.9"]),
        series: PLUS_DOLLAR_BETAS,
        panels: &[],
        metrics: PLUS_DOLLAR_METRICS,
        improvement: &[],
        finding: "Without under-estimates a higher beta gives a much lower QoS satisfaction; as under-estimates grow a higher beta gives a higher QoS satisfaction and Libra the lowest, and a higher beta keeps a higher profitability.",
    },
    Figure {
        id: "libra-sla-fig2",
        paper: "LibraSLA",
        title: "Fig. 2: impact of deadline type (share of hard-deadline jobs)",
        preset: "libra-sla",
        fixed: &[],
        param: "arrival_delay_factor",
        values: SLA_LOADS,
        series: SLA_HARD,
        panels: &[],
        metrics: SLA_METRICS,
        improvement: SLA_HARD_GAINS,
        finding: "LibraSLA completes more jobs and earns more utility than Libra under heavy load, less so as the load falls; the improvement is lower with more hard-deadline jobs (about 20% more jobs and 10% more utility with 20% hard than with 80%).",
    },
    Figure {
        id: "libra-sla-fig3",
        paper: "LibraSLA",
        title: "Fig. 3: impact of deadline mean factor",
        preset: "libra-sla",
        fixed: &[],
        param: "arrival_delay_factor",
        values: SLA_LOADS,
        series: SLA_DEADLINE,
        panels: &[],
        metrics: SLA_METRICS,
        improvement: SLA_DEADLINE_GAINS,
        finding: "A large improvement over Libra for deadline mean factor 1 under heavy load (f 0.005-0.025); with factors 2 and 3 a lower, steadier improvement that falls as the load falls.",
    },
    Figure {
        id: "libra-sla-fig4",
        paper: "LibraSLA",
        title: "Fig. 4: impact of budget mean factor",
        preset: "libra-sla",
        fixed: &[],
        param: "arrival_delay_factor",
        values: SLA_LOADS,
        series: SLA_BUDGET,
        panels: &[],
        metrics: SLA_METRICS,
        improvement: SLA_BUDGET_GAINS,
        finding: "LibraSLA completes more jobs than Libra for higher budget factors and earns more utility; the improvement diminishes as the load falls (f 0.03-0.04).",
    },
    Figure {
        id: "libra-sla-fig5",
        paper: "LibraSLA",
        title: "Fig. 5: impact of penalty rate mean factor",
        preset: "libra-sla",
        fixed: &[],
        param: "arrival_delay_factor",
        values: SLA_LOADS,
        series: SLA_PENALTY,
        panels: &[],
        metrics: SLA_METRICS,
        improvement: SLA_PENALTY_GAINS,
        finding: "LibraSLA improves less over Libra as penalty rates rise (it accepts fewer jobs to preserve utility).",
    },
    Figure {
        id: "libra-risk-fig1",
        paper: "LibraRisk",
        title: "Fig. 1: impact of varying workload",
        preset: "libra-risk",
        fixed: &[],
        param: "arrival_delay_factor",
        values: PLUS_DOLLAR_LOADS,
        series: RISK_ALL,
        panels: RISK_ESTIMATES,
        metrics: RISK_METRICS,
        improvement: &[],
        finding: "More jobs meet their deadline as the load falls. Under heavy load (f < 0.3) EDF fulfils more deadlines than Libra and LibraRisk, fewer as the load falls. With trace estimates LibraRisk fulfils increasingly more deadlines than Libra (f > 0.5) with a lower slowdown; with accurate estimates about as many. EDF has the lowest slowdown.",
    },
    Figure {
        id: "libra-risk-fig2",
        paper: "LibraRisk",
        title: "Fig. 2: impact of varying deadline high:low ratio",
        preset: "libra-risk",
        fixed: &[],
        param: "deadline_high_low_ratio",
        values: Values::List(&["1", "2", "4", "6", "8", "10"]),
        series: RISK_ALL,
        panels: RISK_ESTIMATES,
        metrics: RISK_METRICS,
        improvement: &[],
        finding: "Longer low-urgency deadlines let more jobs meet their deadline but raise the slowdown; with trace estimates LibraRisk fulfils more deadlines than Libra, most of all for ratios < 4; EDF's slowdown rises only marginally.",
    },
    Figure {
        id: "libra-risk-fig3",
        paper: "LibraRisk",
        title: "Fig. 3: impact of varying share of high-urgency jobs",
        preset: "libra-risk",
        fixed: &[],
        param: "high_urgency_fraction",
        values: Values::List(&["0", "0.2", "0.4", "0.6", "0.8", "1.0"]),
        series: RISK_ALL,
        panels: RISK_ESTIMATES,
        metrics: RISK_METRICS,
        improvement: &[],
        finding: "More high-urgency jobs: fewer deadlines met and a lower slowdown. With trace estimates LibraRisk completes close to 40% more jobs than Libra at 100% high urgency (20% more at 0%), and meets more deadlines as the share grows while EDF and Libra meet fewer.",
    },
    Figure {
        id: "libra-risk-fig4",
        paper: "LibraRisk",
        title: "Fig. 4: impact of varying inaccurate runtime estimates",
        preset: "libra-risk",
        fixed: &[],
        param: "inaccuracy",
        values: Values::List(&["0", "0.25", "0.5", "0.75", "1.0"]),
        series: RISK_ALL,
        panels: &[
            Panel {
                name: "20% high urgency",
                sets: &["high_urgency_fraction=0.2"],
            },
            Panel {
                name: "80% high urgency",
                sets: &["high_urgency_fraction=0.8"],
            },
        ],
        metrics: RISK_METRICS,
        improvement: &[],
        finding: "Fewer deadlines are met as estimates get less accurate, but LibraRisk fulfils more than EDF and Libra and keeps about as many with 80% high-urgency jobs as with 20%; slowdown falls for Libra and LibraRisk as inaccuracy grows; EDF has the lowest.",
    },
    Figure {
        id: "libra-table1",
        paper: "Libra",
        title: "Table 1: jobs completed by their deadline, Libra vs PBS FIFO",
        preset: "libra",
        fixed: &[],
        param: "case",
        values: Values::Cases(&[
            ("100 jobs, 10 nodes", &["jobs=100", "nodes=10", "synthetic_arrival_max=102"]),
            ("100 jobs, 20 nodes", &["jobs=100", "nodes=20", "synthetic_arrival_max=102"]),
            ("200 jobs, 10 nodes", &["jobs=200", "nodes=10", "synthetic_arrival_max=208"]),
            ("200 jobs, 20 nodes", &["jobs=200", "nodes=20", "synthetic_arrival_max=208"]),
        ]),
        series: &[s("Libra", "libra", &[]), s("PBS FIFO", "fifo", &[])],
        panels: &[],
        metrics: &["deadlines_met"],
        improvement: &[],
        finding: "Libra completes more jobs by their deadline than PBS FIFO in all four cases (paper: 86 vs 77, 90 vs 86, 102 vs 95, 177 vs 165), and the gap grows with load.",
    },
    Figure {
        id: "vqops-table1",
        paper: "VQoPS",
        title: "Table 1: revenue improvement of VQoPS over QoPS for OC-Factors (original load)",
        preset: "vqops",
        fixed: &[],
        param: "oc_factor",
        values: Values::List(&["0", "0.05", "0.1", "0.4"]),
        series: &[
            s("VQoPS 10x 80%", "vqops", &["urgent_price_factor=10", "high_urgency_fraction=0.8"]),
            s("QoPS 10x 80%", "qops", &["urgent_price_factor=10", "high_urgency_fraction=0.8"]),
            s("VQoPS 5x 80%", "vqops", &["urgent_price_factor=5", "high_urgency_fraction=0.8"]),
            s("QoPS 5x 80%", "qops", &["urgent_price_factor=5", "high_urgency_fraction=0.8"]),
            s("VQoPS 2x 80%", "vqops", &["urgent_price_factor=2", "high_urgency_fraction=0.8"]),
            s("QoPS 2x 80%", "qops", &["urgent_price_factor=2", "high_urgency_fraction=0.8"]),
            s("VQoPS 10x 50%", "vqops", &["urgent_price_factor=10", "high_urgency_fraction=0.5"]),
            s("QoPS 10x 50%", "qops", &["urgent_price_factor=10", "high_urgency_fraction=0.5"]),
            s("VQoPS 10x 20%", "vqops", &["urgent_price_factor=10", "high_urgency_fraction=0.2"]),
            s("QoPS 10x 20%", "qops", &["urgent_price_factor=10", "high_urgency_fraction=0.2"]),
        ],
        panels: &[],
        metrics: &["revenue"],
        improvement: &[
            ("urgent cost 10x, 80% urgent", "VQoPS 10x 80%", "QoPS 10x 80%"),
            ("urgent cost 5x, 80% urgent", "VQoPS 5x 80%", "QoPS 5x 80%"),
            ("urgent cost 2x, 80% urgent", "VQoPS 2x 80%", "QoPS 2x 80%"),
            ("urgent cost 10x, 50% urgent", "VQoPS 10x 50%", "QoPS 10x 50%"),
            ("urgent cost 10x, 20% urgent", "VQoPS 10x 20%", "QoPS 10x 20%"),
        ],
        finding: "VQoPS earns 19-46% more revenue than QoPS at original load, and no single OC-Factor is best for every mix: smaller OC-Factors do better as urgent jobs get cheaper or fewer (10x 80%: 21/26/37/39%; 2x 80%: 19/26/27/-100%).",
    },
    Figure {
        id: "vqops-table1-high",
        paper: "VQoPS",
        title: "Table 1: revenue improvement of VQoPS over QoPS for OC-Factors (high offered load: about 40% of jobs duplicated)",
        preset: "vqops",
        fixed: &["duplicate_fraction=0.4"],
        param: "oc_factor",
        values: Values::List(&["0", "0.05", "0.1", "0.4"]),
        series: &[
            s("VQoPS 10x 80%", "vqops", &["urgent_price_factor=10", "high_urgency_fraction=0.8"]),
            s("QoPS 10x 80%", "qops", &["urgent_price_factor=10", "high_urgency_fraction=0.8"]),
        ],
        panels: &[],
        metrics: &["revenue"],
        improvement: &[("urgent cost 10x, 80% urgent, high load", "VQoPS 10x 80%", "QoPS 10x 80%")],
        finding: "At high offered load (about 40% of jobs duplicated) VQoPS gains far more over QoPS than at original load, for every OC-Factor (paper, 10x 80%: 63/90/135/160% against 21/26/37/39% at original load).",
    },
    Figure {
        id: "vqops-fig3a",
        paper: "VQoPS",
        title: "Fig. 3(a): revenue improvement over QoPS by share of urgent jobs (urgent cost 10x)",
        preset: "vqops",
        fixed: &["urgent_price_factor=10"],
        param: "high_urgency_fraction",
        values: Values::List(&["0.2", "0.5", "0.8"]),
        series: VQOPS_SCHEMES,
        panels: &[],
        metrics: &["revenue"],
        improvement: VQOPS_VS_QOPS,
        finding: "VQoPS improves revenue by about 20-45% over QoPS with a different best OC-Factor for each mix; DVQoPS stays within 5% of the best static OC-Factor.",
    },
    Figure {
        id: "vqops-fig3b",
        paper: "VQoPS",
        title: "Fig. 3(b): accepted jobs per class, 50% urgent, urgent cost 10x",
        preset: "vqops",
        fixed: &["urgent_price_factor=10"],
        param: "high_urgency_fraction",
        values: Values::Cases(&[("50% urgent", &["high_urgency_fraction=0.5"])]),
        series: VQOPS_SCHEMES,
        panels: &[],
        metrics: &["high_accepted", "low_accepted", "accepted"],
        improvement: &[],
        finding: "QoPS accepts the most jobs overall without telling urgent from normal; as the OC-Factor grows VQoPS rejects more normal jobs to accept urgent ones; DVQoPS adapts between the two.",
    },
    Figure {
        id: "vqops-fig4",
        paper: "VQoPS",
        title: "Fig. 4(a): revenue improvement over QoPS by cost of urgent jobs (50% urgent, original load)",
        preset: "vqops",
        fixed: &["high_urgency_fraction=0.5"],
        param: "urgent_price_factor",
        values: Values::List(&["2", "5", "10"]),
        series: VQOPS_SCHEMES,
        panels: &[],
        metrics: &["revenue"],
        improvement: VQOPS_VS_QOPS,
        finding: "When urgent jobs are cheap, high static OC-Factors do worse than QoPS; DVQoPS stays within 5% of the best static OC-Factor. (Fig. 4(b), high offered load, needs job duplication, which is not modelled.)",
    },
];

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
