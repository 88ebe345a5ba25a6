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

/// One line per fault, for the log.
pub fn describe(plan: &Plan) -> Vec<String> {
    let mut lines: Vec<String> = plan.faults.iter().map(|f| f.to_string()).collect();
    if plan.left_out > 0 {
        lines.push(format!(
            "{} random draw(s) left out: each would overlap a fault already on its target",
            plan.left_out
        ));
    }
    lines
}
