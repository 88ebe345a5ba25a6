//! The calibration file `libratory calibrate` writes (`calibration.json`,
//! and a copy at host level), the fidelity targets it checks, and the
//! warning `libratory run` gives below the safe time scale it stored.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::environment::Environment;

/// Share of jobs with the same accept/reject decision, at least.
pub const TARGET_ADMISSION: f64 = 0.98;
/// Share of jobs with the same deadline outcome (met or not), at least.
pub const TARGET_OUTCOME: f64 = 0.95;
/// QoS satisfaction difference, at most (percentage points).
pub const TARGET_QOS_PP: f64 = 1.0;

/// One tested time scale.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScalePoint {
    /// Real seconds per trace second.
    pub time_scale: f64,
    /// Jobs in both runs.
    pub jobs: usize,
    /// Share of jobs accepted in both or rejected in both.
    pub admission_agreement: f64,
    /// Share of jobs whose deadline outcome (met, or not) is the same.
    pub outcome_agreement: f64,
    /// Live QoS satisfaction less the simulator's (percentage points).
    pub qos_diff_pp: f64,
    /// Share error the nodes measured (delivered vs assigned share, ppm):
    /// median and 99th percentile.
    pub share_error_ppm_p50: Option<f64>,
    /// See `share_error_ppm_p50`.
    pub share_error_ppm_p99: Option<f64>,
    /// Whether the three targets are met.
    pub meets_targets: bool,
    /// The live run's directory.
    pub run_dir: String,
}

/// What `calibrate` found, as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Calibration {
    /// Host name.
    pub host: String,
    /// Host cores.
    pub cores: usize,
    /// When (seconds since the Unix epoch).
    pub at_unix_s: u64,
    /// Preset, policy and seed of the workload.
    pub preset: String,
    /// Policy.
    pub policy: String,
    /// Seed.
    pub seed: u64,
    /// Emulated nodes.
    pub nodes: usize,
    /// The targets (admission share, outcome share, QoS pp).
    pub targets: (f64, f64, f64),
    /// Every tested scale, largest first.
    pub points: Vec<ScalePoint>,
    /// The smallest safe scale (None: no tested scale met the targets).
    pub safe_time_scale: Option<f64>,
    /// Where the full results are.
    pub out: String,
}

/// The host-level calibration file: the one given, else the
/// environment's ([`Environment::calibration_file`]).
pub fn host_file(given: Option<&Path>, env: &Environment) -> Option<PathBuf> {
    match given {
        Some(p) => Some(p.to_path_buf()),
        None => env.calibration_file(),
    }
}

/// For `libratory run`: a warning when `time_scale` is below the safe
/// scale this host measured (None when it is not, or nothing was measured).
pub fn below_safe_scale(time_scale: f64, env: &Environment) -> Option<String> {
    below_safe_scale_in(&host_file(None, env)?, time_scale)
}

/// [`below_safe_scale`] with the calibration file `path` (absent: None).
fn below_safe_scale_in(path: &Path, time_scale: f64) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let c: Calibration = match serde_json::from_str(&text) {
        Ok(c) => c,
        Err(e) => {
            return Some(format!(
                "{}: unreadable calibration ({e}); rerun libratory calibrate",
                path.display()
            ))
        }
    };
    match c.safe_time_scale {
        Some(safe) if time_scale < safe * (1.0 - 1e-9) => Some(format!(
            "time_scale {time_scale} is below {safe}, the smallest scale at which live runs matched \
             the simulator on this host ({}; preset {}, policy {}, {} nodes; {}): live results may \
             differ from the simulator's",
            c.host,
            c.preset,
            c.policy,
            c.nodes,
            path.display()
        )),
        None => Some(format!(
            "no tested time scale matched the simulator on this host ({}): live results may differ \
             from the simulator's",
            path.display()
        )),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(scale: f64, ok: bool) -> ScalePoint {
        ScalePoint {
            time_scale: scale,
            jobs: 10,
            admission_agreement: 1.0,
            outcome_agreement: 1.0,
            qos_diff_pp: 0.0,
            share_error_ppm_p50: None,
            share_error_ppm_p99: None,
            meets_targets: ok,
            run_dir: String::new(),
        }
    }

    #[test]
    fn run_warns_below_the_stored_safe_scale_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("calibration.json");
        assert_eq!(
            below_safe_scale_in(&path, 0.01),
            None,
            "no file, no warning"
        );
        let mut c = Calibration {
            host: "h".into(),
            cores: 2,
            at_unix_s: 0,
            preset: "libra".into(),
            policy: "libra".into(),
            seed: 1,
            nodes: 4,
            targets: (TARGET_ADMISSION, TARGET_OUTCOME, TARGET_QOS_PP),
            points: vec![p(0.05, true), p(0.02, false)],
            safe_time_scale: Some(0.05),
            out: String::new(),
        };
        std::fs::write(&path, serde_json::to_string(&c).unwrap()).unwrap();
        let w = below_safe_scale_in(&path, 0.02).expect("0.02 < 0.05 warns");
        assert!(w.contains("0.05") && w.contains("calibration.json"), "{w}");
        assert_eq!(below_safe_scale_in(&path, 0.05), None);
        assert_eq!(below_safe_scale_in(&path, 0.1), None);
        c.safe_time_scale = None;
        std::fs::write(&path, serde_json::to_string(&c).unwrap()).unwrap();
        assert!(below_safe_scale_in(&path, 1.0).is_some());
        std::fs::write(&path, "{").unwrap();
        assert!(below_safe_scale_in(&path, 1.0)
            .unwrap()
            .contains("unreadable"));
    }
}
