//! The named presets: one per paper set-up, each the common base with the
//! paper's differences.

use super::params::{BudgetBasis, DeadlineBasis, InaccuracyForm, Params, Source};
use super::{WorkloadError, DEFAULT_SEED};
use crate::job::DeadlineType;

/// A named preset: one paper's set-up, as its differences from the
/// common base (`base`).
#[derive(Debug, Clone, Copy)]
pub struct Preset {
    /// The name `--preset` takes.
    pub name: &'static str,
    /// One line on what it is.
    pub about: &'static str,
    /// The common base with this paper's values.
    pub differs: fn(Params) -> Params,
}

/// The named presets, one per paper set-up, in listing order.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "libra",
        about: "Libra paper: synthetic batch of 100 jobs on 10 nodes; the others: --set nodes=20, --set jobs=200 --set synthetic_arrival_max=208",
        differs: |base| Params {
            source: Source::SyntheticLibra,
            jobs: 100,
            nodes: 10,
            arrival_delay_factor: 1.0,
            ..base
        },
    },
    Preset {
        name: "libra-plus-dollar",
        about: "Libra+$ paper: last 5000 SDSC SP2 jobs, 20% high urgency, deadline & budget high:low 4 low mean 2, f=0.5",
        differs: |base| base,
    },
    Preset {
        name: "libra-risk",
        about: "LibraRisk paper: last 3000 SDSC SP2 jobs, deadline high:low 4 low mean 4, f=1, trace estimates (inaccuracy 1)",
        differs: |base| Params {
            jobs: 3000,
            deadline_low_mean: 4.0,
            budgets: false,
            arrival_delay_factor: 1.0,
            inaccuracy: 1.0,
            inaccuracy_form: InaccuracyForm::TowardTrace,
            ..base
        },
    },
    Preset {
        name: "libra-sla",
        about: "LibraSLA paper: last 1000 SDSC SP2 jobs, 20% hard/80% soft, deadline & budget high:low 7, penalty 4, f=0.01",
        differs: |base| Params {
            jobs: 1000,
            deadline_high_low_ratio: 7.0,
            budget_high_low_ratio: 7.0,
            penalty_high_low_ratio: 4.0,
            low_deadline_type: DeadlineType::Soft,
            arrival_delay_factor: 0.01,
            ..base
        },
    },
    Preset {
        name: "vqops",
        about: "VQoPS paper (QoPS family): last 10000 SDSC SP2 jobs, deadline 5x estimate, 20% urgent at 10x the normal 0.1 per processor-second, exact estimates",
        differs: |base| Params {
            jobs: 10000,
            deadline_basis: DeadlineBasis::Estimate,
            arrival_delay_factor: 1.0,
            // Exact estimates, the paper's main set; inaccuracy=1 gives
            // the trace's own (its section 5.3).
            inaccuracy: 0.0,
            inaccuracy_form: InaccuracyForm::TowardTrace,
            budget_basis: BudgetBasis::ProcessorSeconds,
            pbase: 0.1,
            urgent_price_factor: 10.0,
            ..base
        },
    },
];

/// The parameters every preset starts from (the Libra+$ paper's set-up).
fn base(name: &str) -> Params {
    Params {
        preset: name.to_string(),
        seed: DEFAULT_SEED,
        source: Source::Trace,
        jobs: 5000,
        nodes: 128,
        node_speed: 1.0,
        node_memory_kb: 256 * 1024,
        node_disk_mb: 4096,
        pbase: 1.0,
        high_urgency_fraction: 0.2,
        deadline_low_mean: 2.0,
        deadline_high_low_ratio: 4.0,
        min_deadline_factor: 1.05,
        deadline_estimate_factor: 5.0,
        deadline_basis: DeadlineBasis::Actual,
        budgets: true,
        budget_basis: BudgetBasis::Runtime,
        urgent_price_factor: 10.0,
        duplicate_fraction: 0.0,
        budget_low_mean: 2.0,
        budget_high_low_ratio: 4.0,
        penalty_low_mean: 2.0,
        penalty_high_low_ratio: 4.0,
        spread: 0.25,
        high_deadline_type: DeadlineType::Hard,
        low_deadline_type: DeadlineType::Hard,
        arrival_delay_factor: 0.5,
        inaccuracy: 0.0,
        inaccuracy_form: InaccuracyForm::Under,
        drop_never_ran: false,
        synthetic_arrival_max: 102.0,
        synthetic_length_min_mi: 1000.0,
        synthetic_length_max_mi: 10900.0,
        synthetic_mips: 100.0,
        synthetic_deadline_min: 1.0,
        synthetic_deadline_max: 1200.0,
        synthetic_budget_base: 1000.0,
        synthetic_rich_fraction: 0.2,
        synthetic_budget_max: 12000.0,
    }
}

impl Params {
    /// The parameters of a named preset.
    pub fn preset(name: &str) -> Result<Params, WorkloadError> {
        let p = PRESETS.iter().find(|p| p.name == name).ok_or_else(|| {
            WorkloadError::UnknownPreset {
                name: name.to_string(),
                known: PRESETS
                    .iter()
                    .map(|p| p.name)
                    .collect::<Vec<_>>()
                    .join(", "),
            }
        })?;
        Ok((p.differs)(base(name)))
    }
}
