//! The papers' evaluation figures as data: for each, the preset, the
//! swept parameter and its values, the series (policy and knobs), panels,
//! metrics, the improvement pairs and the paper's stated finding. Adding a
//! figure is one entry in [`FIGURES`]; `figures` (the parent module) runs
//! them.

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
