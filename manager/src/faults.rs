//! `--faults FILE`: reading a fault scenario (the file I/O `common::faults`
//! leaves to its callers), expanding it for a cluster, and the facts the
//! run's manifest and log keep (the file, its SHA-256, the seed, every
//! fault as expanded).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use common::faults::{ClusterShape, Origin, Plan, Scenario, Target};
use serde_json::json;
use sha2::{Digest, Sha256};

/// A scenario file read and checked.
#[derive(Debug, Clone)]
pub struct ScenarioFile {
    /// Where it was read from.
    pub path: PathBuf,
    /// Its text (errors name lines in it).
    pub text: String,
    /// Parsed and checked.
    pub scenario: Scenario,
}

impl ScenarioFile {
    /// Reads and checks `path`; errors name the file, line and key.
    pub fn load(path: &Path) -> Result<ScenarioFile> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the fault scenario {}", path.display()))?;
        let scenario = Scenario::parse(&path.display().to_string(), &text)?;
        Ok(ScenarioFile {
            path: path.to_path_buf(),
            text,
            scenario,
        })
    }

    /// The scenario expanded for `shape`, random faults drawn over
    /// `horizon` trace seconds from the file's seed or `default_seed`.
    pub fn expand(&self, shape: &ClusterShape, horizon: f64, default_seed: u64) -> Result<Plan> {
        Ok(self.scenario.expand(
            &self.path.display().to_string(),
            &self.text,
            shape,
            horizon,
            default_seed,
        )?)
    }

    /// The manifest's `faults` entry.
    pub fn facts(&self, plan: &Plan, shape: &ClusterShape) -> serde_json::Value {
        let sha = Sha256::digest(self.text.as_bytes());
        let faults: Vec<_> = plan
            .faults
            .iter()
            .map(|f| {
                let (target, index) = match f.target {
                    Target::Process(p) => ("process", Some(p)),
                    Target::Node(n) => ("node", Some(n)),
                    Target::Manager => ("manager", None),
                };
                let (origin, line) = match f.origin {
                    Origin::Line(l) => ("fault", l),
                    Origin::Random(l) => ("random", l),
                };
                json!({
                    "id": f.id,
                    "at": f.at,
                    "kind": f.kind.name(),
                    "target": target,
                    "index": index,
                    "duration": f.duration,
                    "origin": origin,
                    "line": line,
                    "about": f.to_string(),
                })
            })
            .collect();
        json!({
            "file": self.path.display().to_string(),
            "sha256": format!("{sha:x}"),
            "seed": plan.seed,
            "link_timeout": plan.link_timeout,
            "random_left_out": plan.left_out,
            "processes": shape.processes.iter().map(|r| [r.start, r.end]).collect::<Vec<_>>(),
            "faults": faults,
        })
    }
}

/// One line per fault, for the log; `horizon` is the last arrival
/// (trace seconds after the first).
pub fn describe(plan: &Plan, horizon: f64) -> Vec<String> {
    let mut lines: Vec<String> = plan.faults.iter().map(|f| f.to_string()).collect();
    // A run ends with its last job: a fault due after the last arrival may
    // never come, and a scenario written for another workload would test
    // nothing without a word.
    let late: Vec<String> = plan
        .faults
        .iter()
        .filter(|f| f.at > horizon)
        .map(|f| format!("fault {} (+{} s)", f.id, f.at))
        .collect();
    if !late.is_empty() {
        lines.push(format!(
            "warning: {} come(s) after the last arrival (+{horizon} s): each happens only if \
             jobs still run then (a run ends with its last job)",
            late.join(", ")
        ));
    }
    if plan.left_out > 0 {
        lines.push(format!(
            "{} random draw(s) left out: each would overlap a fault already on its target",
            plan.left_out
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use common::faults::ClusterShape;

    /// A fault due after the last arrival is said: the run may end first.
    #[test]
    fn faults_after_the_last_arrival_are_warned() {
        let text = "link_timeout = 100.0\n\n[[fault]]\nat = 30.0\nkind = \"crash\"\nprocess = 1\nduration = 150.0\n\n[[fault]]\nat = 500.0\nkind = \"hang\"\nprocess = 0\nduration = 10.0\n";
        let sc = Scenario::parse("f.toml", text).unwrap();
        let shape = ClusterShape::uniform(8, 4);
        let plan = sc.expand("f.toml", text, &shape, 400.0, 1).unwrap();
        let lines = describe(&plan, 400.0);
        let warn: Vec<_> = lines.iter().filter(|l| l.starts_with("warning")).collect();
        assert_eq!(warn.len(), 1, "{lines:?}");
        assert!(
            warn[0].contains("fault 2 (+500 s)")
                && !warn[0].contains("fault 1")
                && warn[0].contains("+400 s"),
            "{}",
            warn[0]
        );
        // Every fault before it: nothing said.
        let lines = describe(&plan, 500.0);
        assert!(!lines.iter().any(|l| l.starts_with("warning")), "{lines:?}");
    }
}
