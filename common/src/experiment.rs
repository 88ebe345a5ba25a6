//! An experiment: a preset's workload parameters, the policy knobs and the
//! policies to compare, with every knob settable by name, and the code that
//! runs it in the simulator. The `libratory simulate` command is a thin
//! shell around this.

use serde::{Deserialize, Serialize};

use crate::metrics::Summary;
use crate::policy::{self, Placement, PolicyConfig, UnknownPolicy};
use crate::sim::{simulate, SimOutcome};
use crate::workload::{set_by_name, Params, Workload, WorkloadError};

/// What went wrong configuring an experiment ([`Experiment::configured`]).
#[derive(Debug, thiserror::Error)]
pub enum ConfigureError {
    /// The preset is unknown.
    #[error(transparent)]
    Preset(WorkloadError),
    /// A `key=value` override is wrong; `place` names where the overrides
    /// came from (`--set`, `[workload] set`).
    #[error("in {place}")]
    Set {
        /// Where the overrides came from.
        place: &'static str,
        /// What is wrong.
        #[source]
        source: WorkloadError,
    },
}

/// What to run: workload parameters, policy knobs, policies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Experiment {
    /// Workload and cluster.
    pub params: Params,
    /// Policy knobs (alpha, beta, placement, spare rule, ...).
    pub policy: PolicyConfig,
    /// Policies to compare, by registered name.
    pub policies: Vec<String>,
}

/// The policies each preset compares by default (the paper's own set,
/// restricted to what is implemented).
fn default_policies(preset: &str) -> &'static [&'static str] {
    match preset {
        "libra" => &["libra", "fifo"],
        "libra-plus-dollar" => &["libra-plus-dollar", "libra", "fcfs-bf", "sjf-bf", "edf-bf"],
        "libra-risk" => &["libra-risk", "libra", "edf"],
        "libra-sla" => &["libra-sla", "libra"],
        "vqops" => &["qops", "vqops", "dvqops"],
        _ => &["fcfs-bf", "edf-bf"],
    }
}

impl Experiment {
    /// The experiment of a named preset.
    pub fn preset(name: &str) -> Result<Experiment, WorkloadError> {
        let params = Params::preset(name)?;
        Ok(Experiment {
            policy: PolicyConfig {
                pbase: params.pbase,
                // Libra as its own paper has it sends a job to the least loaded node;
                // the later papers compare against a best-fit Libra.
                placement: if name == "libra" {
                    Placement::LeastLoaded
                } else {
                    Placement::BestFit
                },
                ..PolicyConfig::default()
            },
            params,
            policies: default_policies(name)
                .iter()
                .map(|s| s.to_string())
                .collect(),
        })
    }

    /// The experiment of preset `name`, with `seed` instead of the
    /// preset's when given, and the `key=value` overrides `sets` (from
    /// `place`) applied in order. What the command line and a cluster
    /// configuration both describe; each sets the policies itself.
    pub fn configured<'a>(
        name: &str,
        seed: Option<u64>,
        sets: impl IntoIterator<Item = &'a str>,
        place: &'static str,
    ) -> Result<Experiment, ConfigureError> {
        let mut exp = Experiment::preset(name).map_err(ConfigureError::Preset)?;
        if let Some(seed) = seed {
            exp.params.seed = seed;
        }
        exp.set_all(sets)
            .map_err(|source| ConfigureError::Set { place, source })?;
        Ok(exp)
    }

    /// Sets a workload parameter or a policy knob by name (`pbase` sets
    /// both, as it is the same price).
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), WorkloadError> {
        if key == "preset" {
            // A field of the parameters (the preset they started from),
            // which setting would only mislabel.
            return Err(WorkloadError::BadValue {
                key: key.to_string(),
                value: value.to_string(),
                why:
                    "the preset is chosen with --preset (or the configuration's `preset`), not set"
                        .into(),
            });
        }
        match set_by_name(&mut self.params, key, value) {
            Ok(()) => {
                if key == "pbase" {
                    self.policy.pbase = self.params.pbase;
                }
                Ok(())
            }
            Err(WorkloadError::UnknownParam { known, .. }) => {
                set_by_name(&mut self.policy, key, value).map_err(|e| match e {
                    WorkloadError::UnknownParam {
                        known: policy_known,
                        ..
                    } => {
                        // `pbase` is in both (one price): listed once.
                        let ours: Vec<&str> = known.split(", ").collect();
                        let theirs = policy_known.split(", ").filter(|k| !ours.contains(k));
                        WorkloadError::UnknownParam {
                            key: key.to_string(),
                            known: ours
                                .iter()
                                .copied()
                                .chain(theirs)
                                .collect::<Vec<_>>()
                                .join(", "),
                        }
                    }
                    e => e,
                })
            }
            Err(e) => Err(e),
        }
    }

    /// Applies `key=value` strings in order.
    pub fn set_all<'a>(
        &mut self,
        pairs: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), WorkloadError> {
        crate::workload::for_each_key_value(pairs, |k, v| self.set(k, v))?;
        // Checked once all are set: one range may depend on another
        // (`synthetic_budget_max` on `synthetic_budget_base`), set in
        // either order.
        self.params.validate()?;
        self.policy.validate()
    }

    /// Checks that every policy name is registered.
    pub fn check_policies(&self) -> Result<(), UnknownPolicy> {
        for p in &self.policies {
            policy::entry(p)?;
        }
        Ok(())
    }

    /// Runs one policy on the workload in virtual time.
    pub fn run_policy(
        &self,
        name: &str,
        workload: &Workload,
    ) -> Result<(SimOutcome, Summary), UnknownPolicy> {
        let specs = self.params.node_specs();
        let p = policy::build(name, &self.policy, &specs)?;
        Ok(self.run_built(name, workload, p))
    }

    /// Runs a policy built by the caller (the `batsim` policy with its
    /// scheduler connected) under `name`.
    pub fn run_built(
        &self,
        name: &str,
        workload: &Workload,
        p: policy::Policy,
    ) -> (SimOutcome, Summary) {
        let specs = self.params.node_specs();
        let outcome = simulate(&workload.jobs, &specs, p);
        let summary = Summary::compute(name, &outcome.records);
        (outcome, summary)
    }

    /// Runs one policy on the workload in virtual time with the faults of
    /// `plan` (expanded for `shape`, which covers the preset's nodes).
    pub fn run_policy_with_faults(
        &self,
        name: &str,
        workload: &Workload,
        plan: &crate::faults::Plan,
        shape: &crate::faults::ClusterShape,
    ) -> Result<(crate::sim_faults::FaultedOutcome, Summary), UnknownPolicy> {
        let specs = self.params.node_specs();
        let p = policy::build(name, &self.policy, &specs)?;
        let faulted =
            crate::sim_faults::simulate_with_faults(&workload.jobs, &specs, p, plan, shape);
        let summary = Summary::compute(name, &faulted.outcome.records);
        Ok((faulted, summary))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configured_takes_the_seed_and_the_sets_and_names_where_a_bad_set_came_from() {
        let e = Experiment::configured("libra", Some(7), ["jobs=30", "nodes=4"], "--set").unwrap();
        assert_eq!((e.params.seed, e.params.jobs, e.params.nodes), (7, 30, 4));
        assert_eq!(e.policies, ["libra", "fifo"]);
        let err = Experiment::configured("libra", None, ["jobs=x"], "[workload] set").unwrap_err();
        assert!(matches!(
            err,
            ConfigureError::Set {
                place: "[workload] set",
                ..
            }
        ));
        assert_eq!(err.to_string(), "in [workload] set");
        let source = std::error::Error::source(&err).unwrap().to_string();
        assert!(source.contains("jobs"), "{source}");
        assert!(matches!(
            Experiment::configured("no-such-preset", None, [], "--set"),
            Err(ConfigureError::Preset(_))
        ));
    }

    #[test]
    fn the_libra_papers_batch_reads_under_its_old_name_too() {
        let p: crate::workload::Source = serde_json::from_str("\"synthetic-libra\"").unwrap();
        assert_eq!(p, crate::workload::Source::SyntheticLibra);
        let old: crate::workload::Source = serde_json::from_str("\"synthetic003\"").unwrap();
        assert_eq!(old, p);
        assert_eq!(serde_json::to_string(&p).unwrap(), "\"synthetic-libra\"");
    }

    #[test]
    fn set_reaches_both_params_and_policy_knobs() {
        let mut e = Experiment::preset("libra-plus-dollar").unwrap();
        e.set_all([
            "beta=0.5",
            "arrival_delay_factor=0.25",
            "spare_rule=idle",
            "pbase=2",
        ])
        .unwrap();
        assert_eq!(e.policy.beta, 0.5);
        assert_eq!(e.params.arrival_delay_factor, 0.25);
        assert_eq!(e.policy.spare_rule, crate::share::SpareRule::Idle);
        assert_eq!((e.params.pbase, e.policy.pbase), (2.0, 2.0));
        let err = e.set("betta", "1").unwrap_err().to_string();
        assert!(
            err.contains("'betta'") && err.contains("beta") && err.contains("jobs"),
            "{err}"
        );
        let err = e.set("spare_rule", "greedy").unwrap_err().to_string();
        assert!(
            err.contains("spare_rule") && err.contains("proportional"),
            "{err}"
        );
    }

    #[test]
    fn qops_knobs_and_lists_are_settable() {
        let mut e = Experiment::preset("vqops").unwrap();
        assert_eq!(e.policies, ["qops", "vqops", "dvqops"]);
        e.set_all([
            "oc_factor=0.1",
            "oc_candidates=0, 0.1,0.4",
            "qops_k=3",
            "urgent_price_factor=5",
            "adapt_rollback_window=false",
        ])
        .unwrap();
        assert_eq!(e.policy.oc_factor, 0.1);
        assert_eq!(e.policy.oc_candidates, vec![0.0, 0.1, 0.4]);
        assert_eq!(e.policy.qops_k, 3);
        assert_eq!(e.params.urgent_price_factor, 5.0);
        assert!(!e.policy.adapt_rollback_window);
        let err = e.set("oc_candidates", "0,x").unwrap_err().to_string();
        assert!(err.contains("comma-separated"), "{err}");
    }

    #[test]
    fn settings_out_of_range_are_refused_naming_the_key() {
        for (set, key) in [
            ("beta=-3", "beta"),
            ("alpha=-5", "alpha"),
            ("gamma=-1", "gamma"),
            ("risk_tolerance=-1", "risk_tolerance"),
            ("oc_factor=-1", "oc_factor"),
            ("oc_candidates=0,-1", "oc_candidates"),
            ("qops_slack_factor=0.5", "qops_slack_factor"),
            ("rollback_window_hours=0", "rollback_window_hours"),
            ("node_memory_kb=0", "node_memory_kb"),
            ("synthetic_budget_base=-1000", "synthetic_budget_base"),
            ("synthetic_rich_fraction=1.5", "synthetic_rich_fraction"),
            ("preset=foo", "preset"),
        ] {
            let mut e = Experiment::preset("libra").unwrap();
            let err = e.set_all([set]).unwrap_err().to_string();
            assert!(err.contains(&format!("'{key}'")), "{set}: {err}");
        }
        // Ranges that depend on each other are checked once all are set,
        // in either order.
        let mut e = Experiment::preset("libra").unwrap();
        e.set_all(["synthetic_budget_base=20000", "synthetic_budget_max=30000"])
            .unwrap();
        // `pbase` is a workload parameter and a policy knob: listed once.
        let err = e.set("bogus", "1").unwrap_err().to_string();
        assert_eq!(err.matches("pbase").count(), 1, "{err}");
    }

    #[test]
    fn every_preset_names_registered_policies() {
        for p in crate::workload::PRESETS {
            let e = Experiment::preset(p.name).unwrap();
            e.check_policies().unwrap();
            e.params.validate().unwrap();
            e.policy.validate().unwrap();
        }
    }
}
